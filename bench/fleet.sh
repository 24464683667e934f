#!/usr/bin/env bash
# The fleet, measured on real daemons (issue 12; docs/PERFORMANCE.md §12): one host (kmes-shimd,
# eventd, eventd-forward) → a nats-server with JetStream on loopback → an eventd in collector
# mode. Three parts, each printing a Markdown table:
#   1. throughput: N events emitted as fast as the shim takes them (kmes-emit, batches of 256);
#      the seconds until the host's store, the stream and the collector's store hold all N,
#      side by side in one run → each stage's rate and the forwarder's ratio to the ingest;
#   2. latency: 1000 events/s for T seconds; a live `EVENTS … STREAM` on the collector
#      reports, per record, now − its emit timestamp (the shim's stamp) → p50, p99, max;
#   3. crashes: M events arrive while eventd-forward is stopped (a backlog); it starts again
#      and is SIGKILLed every 0.5-1.5 s while it catches up (the collector every other time),
#      restarted 1.2 s later. Beside it, on the same host and the
#      same kill schedule, an at-least-once anchor: a second forwarder into a stream whose
#      duplicate window (1 s) has passed when it replays — what journal-upload-style resending
#      from a saved cursor delivers. Counted: records, duplicates and losses of each.
#
#   bench/fleet.sh [--quick]       --quick: N 20000, 5 s of latency, M 100000 with 4 kills
#   BUILD_DIR=build-bench          the binaries (scripts/bench fleet builds them)
#   BENCH_STORE_DIR=/var/tmp       where the stores and JetStream live (a real disk)
set -euo pipefail
cd "$(dirname "$0")/.."
N=200000 LAT_S=20 M=300000 KILLS=8
[[ ${1:-} == --quick ]] && { N=20000 LAT_S=5 M=100000 KILLS=4; }
BIN=${BUILD_DIR:-build-bench}
NATS_SERVER=$(command -v nats-server || echo /usr/sbin/nats-server)
DIR=$(mktemp -d "${BENCH_STORE_DIR:-/var/tmp}/fleet-bench.XXXXXX")
PORT=$((20000 + RANDOM % 20000)) MPORT=$((PORT + 1))
declare -A pid
cleanup() {
  for p in "${pid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
[[ -n ${KEEP:-} ]] && cleanup() { for p in "${pid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; echo "kept $DIR" >&2; }
trap cleanup EXIT
mkdir -p "$DIR"/{etc,run,log}

python3 - "$DIR" "$PORT" <<'PY'
import json, sys
d, port = sys.argv[1], sys.argv[2]
w = lambda name, doc: json.dump(doc, open(f"{d}/etc/{name}.json", "w"), indent=1)
w("kmes", {"SocketPath": f"{d}/run/kmes.sock", "BufferCapacity": 67108864})
w("host", {"EventStorePath": f"{d}/host", "QuerySocketPath": f"{d}/run/host.sock",
           "KmesSocketPath": f"{d}/run/kmes.sock", "EventRetentionDays": 3650})
w("collector", {"EventStorePath": f"{d}/collector", "QuerySocketPath": f"{d}/run/collector.sock",
                "EventRetentionDays": 3650, "StorageShards": 2,
                "CollectorSource": {"NatsUrl": f"nats://127.0.0.1:{port}", "AckWaitSeconds": 2,
                                    "MaxBackoffMs": 500}})
fwd = {"NatsUrl": f"nats://127.0.0.1:{port}", "EventdSocketPath": f"{d}/run/host.sock",
       "HostName": "bench-host", "MaxBackoffMs": 500}
w("forward", dict(fwd, StateDirectory=f"{d}/forward"))
# The anchor: the same forwarder into a stream whose duplicate window has passed when it replays.
w("anchor", dict(fwd, StateDirectory=f"{d}/anchor", Stream="ANCHOR", SubjectPrefix="anchor",
                 DuplicateWindowSeconds=1))
PY

wait_socket() { for _ in $(seq 400); do [[ -S $1 ]] && return 0; sleep 0.05; done; echo "fleet: no $1" >&2; exit 1; }
start() {  # name, command...
  local name=$1; shift
  "$@" >> "$DIR/log/$name.log" 2>&1 &
  pid[$name]=$!
}
stop() { kill "-${2:-TERM}" "${pid[$1]}" 2>/dev/null || true; wait "${pid[$1]}" 2>/dev/null || true; unset "pid[$1]"; }
start_forward() { start "$1" "$BIN/forward/eventd-forward" --config "$DIR/etc/$1.json"; }
start_collector() { start collector "$BIN/eventd/eventd" --config "$DIR/etc/collector.json"; wait_socket "$DIR/run/collector.sock"; }

start nats "$NATS_SERVER" -js -a 127.0.0.1 -p "$PORT" -m "$MPORT" -sd "$DIR/js"
start shim "$BIN/kmes-shim/kmes-shimd" --config "$DIR/etc/kmes.json"
wait_socket "$DIR/run/kmes.sock"
start host "$BIN/eventd/eventd" --config "$DIR/etc/host.json"
wait_socket "$DIR/run/host.sock"
start_forward forward
for _ in $(seq 100); do grep -q "stream EVENTD" "$DIR/log/forward.log" 2>/dev/null && break; sleep 0.1; done
start_collector
export KMES_SOCKET=$DIR/run/kmes.sock

count() {  # socket, query → its COUNT (-1 when it cannot be asked)
  "$BIN/eventctl/eventctl" --socket "$DIR/run/$1.sock" -o jsonl "$2 COUNT" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])' 2>/dev/null || echo -1
}
messages() {  # stream → its message count (monitoring endpoint)
  python3 - "$MPORT" "$1" <<'PY'
import json, sys, urllib.request
try:
    d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/jsz?streams=1", timeout=5))
    print(sum(s["state"]["messages"] for a in d.get("account_details", []) for s in a.get("stream_detail", [])
              if s["name"] == sys.argv[2]))
except Exception:
    print(-1)
PY
}
now() { date +%s.%N; }
rate() { python3 -c "print(f'{$1 / ($3 - $2):,.0f}')"; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }

model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)
echo "## The fleet: host → JetStream → collector ($(date -u '+%F %H:%M UTC'), $(git rev-parse --short HEAD), $BIN, $(nproc) × ${model:-CPU})"
echo

# 1. Throughput. One poller looks at the three stages every 50 ms (eventctl COUNT on each
# store, the stream's message count from the monitoring endpoint).
cat > "$DIR/poll.py" <<'PY'
import json, subprocess, sys, time, urllib.request
eventctl, run, mport = sys.argv[1], sys.argv[2], sys.argv[3]
def count(sock, query):
    r = subprocess.run([eventctl, "--socket", f"{run}/{sock}.sock", "-o", "jsonl", query + " COUNT"],
                       capture_output=True, text=True)
    try: return json.loads(r.stdout)["count"]
    except Exception: return -1
def messages(stream):
    try:
        d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{mport}/jsz?streams=1", timeout=5))
        return sum(s["state"]["messages"] for a in d.get("account_details", []) for s in a.get("stream_detail", [])
                   if s["name"] == stream)
    except Exception: return -1
PY
poll() { python3 -c "exec(open('$DIR/poll.py').read()); $2" "$BIN/eventctl/eventctl" "$DIR/run" "$MPORT" "${@:3}"; }
# The stream first holds what the host stored so far (its own records): the baseline.
for _ in $(seq 100); do
  base=$(poll x 'print(count("host", "EVENTS"))')
  [[ $(poll x 'print(messages("EVENTD"))') -eq $base && $(poll x 'print(count("collector", "EVENTS WHERE host IS NOT NULL"))') -eq $base ]] && break
  sleep 0.2
done
t0=$(now)
taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t bench.fleet -j '{"user":"alice","n":12345,"note":"fleet benchmark"}' \
  -n "$N" -b 256 --retry-eagain &
emitter=$!
poll x '
n, base, t0 = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
stages = {"host eventd: stored": lambda: count("host", "EVENTS bench.fleet") >= n,
          "eventd-forward: in the stream, acknowledged": lambda: messages("EVENTD") >= base + n,
          "collector eventd: stored": lambda: count("collector", "EVENTS bench.fleet") >= n}
done = {}
while len(done) < len(stages) and time.time() - t0 < 600:
    for name, there in stages.items():
        if name not in done and there(): done[name] = time.time() - t0
    time.sleep(0.05)
if len(done) < len(stages): sys.exit(f"fleet: {n} events did not reach every stage in 10 minutes")
print(f"| {n} events emitted at once (batches of 256) | all there after, s | records/s |")
print("|---|---|---|")
for name, t in done.items(): print(f"| {name} | {t:.2f} | {n / t:,.0f} |")
keys = list(done)
print(f"\nForwarder vs ingest, same run: {done[keys[0]] / done[keys[1]]:.2f}x (1.0 = keeps up; the poller looks every ~0.1 s).\n")
' "$N" "$base" "$t0"
wait $emitter

# 2. Latency, emit → visible in the collector (its live stream delivers after its commit).
poll x '
want = int(sys.argv[4])
p = subprocess.Popen([eventctl, "--socket", f"{run}/collector.sock", "-o", "jsonl", "EVENTS bench.latency STREAM"],
                     stdout=subprocess.PIPE, text=True)
lat = []
for line in p.stdout:
    lat.append(time.time_ns() - json.loads(line)["timestamp"])
    if len(lat) == want: break
p.kill()
lat.sort()
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] / 1e6
print("| emit → visible in the collector | p50 ms | p99 ms | max ms |")
print("|---|---|---|---|")
print(f"| {len(lat)} events at 1000/s, one at a time | {pick(0.5):.0f} | {pick(0.99):.0f} | {lat[-1] / 1e6:.0f} |\n")
' $((LAT_S * 1000)) > "$DIR/latency" &
reader=$!
sleep 1
taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t bench.latency -j '{"user":"alice"}' -n $((LAT_S * 1000)) -r 1000
timeout 60 tail --pid=$reader -f /dev/null || true
cat "$DIR/latency"

# 3. Crashes: exactly once vs at least once, on one kill schedule. The anchor first catches up;
# then both forwarders stop while M events arrive (an outage: a backlog), start again, and are
# SIGKILLed at the same moments while they catch up — when most records are in flight.
start_forward anchor
for _ in $(seq 1200); do [[ $(messages ANCHOR) -ge $(count host EVENTS) ]] && break; sleep 0.1; done
stop forward
stop anchor
taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t bench.crash -j '{"user":"alice"}' -n "$M" -b 256 --retry-eagain
for _ in $(seq 600); do [[ $(count host "EVENTS bench.crash") -ge $M ]] && break; sleep 0.2; done
start_forward forward
start_forward anchor
RANDOM=12  # the same schedule every run
for k in $(seq "$KILLS"); do
  sleep "$(python3 -c "print(0.5 + $RANDOM / 32768)")"
  stop forward KILL
  stop anchor KILL
  ((k % 2)) && stop collector KILL
  sleep 1.2  # past the anchor stream's duplicate window (1 s)
  start_forward forward
  start_forward anchor
  [[ -n ${pid[collector]:-} ]] || start_collector
done
hosts=$(count host "EVENTS bench.crash")
for _ in $(seq 600); do
  [[ $(count collector "EVENTS bench.crash") -ge $hosts && $(messages ANCHOR) -ge $(messages EVENTD) ]] && break
  sleep 0.2
done
sleep 3  # late redeliveries would show now
# The anchor's stream as an at-least-once receiver would store it, and the collector's store.
anchor_msgs=$(python3 - "$MPORT" <<'PY'
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/jsz?streams=1&config=1", timeout=5))
print(sum(s["state"]["messages"] for a in d["account_details"] for s in a["stream_detail"] if s["name"] == "ANCHOR"))
PY
)
distinct() {  # socket → "stored distinct" of bench.crash by (boot, cpu, sequence)
  "$BIN/eventctl/eventctl" --socket "$DIR/run/$1.sock" -o jsonl 'EVENTS bench.crash SELECT boot_id, cpu_id, sequence' |
    python3 -c '
import json, sys
keys = [tuple(json.loads(l).values()) for l in sys.stdin]
print(len(keys), len(set(keys)))'
}
read -r host_n host_distinct < <(distinct host)
read -r coll_n coll_distinct < <(distinct collector)
# The anchor stream holds every record of the host (bench.crash and the rest): its excess over
# the host's own count of what it forwarded is what at-least-once resending doubled.
host_all=$(count host EVENTS)
echo "| a backlog of $M events, forwarders SIGKILLed $KILLS times while catching up ($(( (KILLS + 1) / 2 )) of the collector too) | records on the host | delivered centrally | duplicates | lost |"
echo "|---|---|---|---|---|"
echo "| eventd-forward → JetStream (Nats-Msg-Id) → collector | $host_n | $coll_n | $((coll_n - coll_distinct)) | $((host_distinct - coll_distinct)) |"
echo "| at least once: the anchor's stream (all $host_all host records) | $host_all | $anchor_msgs | $((anchor_msgs > host_all ? anchor_msgs - host_all : 0)) | $((anchor_msgs < host_all ? host_all - anchor_msgs : 0)) |"
