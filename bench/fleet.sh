#!/usr/bin/env bash
# The fleet, measured on real daemons (issues 12 and 27; docs/PERFORMANCE.md §12): one host
# (kmes-shimd, eventd, eventd-forward) → a nats-server with JetStream on loopback → an eventd in
# collector mode. First the collector's conversion alone (kmes-bench-collector-convert: a packed
# message into rows, against one msgpack walk over it). Then three parts, each printing a
# Markdown table:
#   1. throughput, each stage alone on the machine, for both message formats side by side:
#      packed (the default) and one record per message (MaxRecordsPerMessage 1, as before
#      issue 27). Per format: N events emitted as fast as the shim takes them (kmes-emit, batches
#      of 256) into the host with no forwarder running → the host's ingest rate; then a
#      forwarder on that backlog into a fresh stream → its rate (until its saved cursor covers
#      the last event: status.json's cursor_saved_ns) and nats-server's CPU per record; then a
#      collector on that stream → its rate (until its store holds all N). The ratios are to the
#      ingest rate of the same format's round;
#   2. latency: 1000 events/s for T seconds; a live `EVENTS … STREAM` on the collector
#      reports, per record, now − its emit timestamp (the shim's stamp) → p50, p99, max;
#   3. crashes: M events arrive while eventd-forward is stopped (a backlog); it starts again
#      and is SIGKILLed every 0.5-1.5 s while it catches up (the collector every other time),
#      restarted 1.2 s later. Beside it, on the same host and the
#      same kill schedule, an at-least-once anchor: a second forwarder, one record per message,
#      into a stream whose duplicate window (1 s) has passed when it replays — what
#      journal-upload-style resending from a saved cursor delivers. Counted: records, duplicates
#      and losses of each.
# The last line: `fleet: forwarder X.XX× of ingest, collector Y.YY× of ingest` (packed).
#
#   bench/fleet.sh [--quick]       --quick: N 50000, 5 s of latency, M 100000 with 4 kills
#   BUILD_DIR=build-bench          the binaries (scripts/bench fleet builds them)
#   BENCH_STORE_DIR=/var/tmp       where the stores and JetStream live (a real disk)
#   FORWARD_EXTRA='{"MaxRecordsPerMessage": 100}'   more keys for every packed forwarder
set -euo pipefail
cd "$(dirname "$0")/.."
N=400000 LAT_S=20 M=300000 KILLS=8
QUICK=
[[ ${1:-} == --quick ]] && { N=50000 LAT_S=5 M=100000 KILLS=4 QUICK=1; }
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

python3 - "$DIR" "$PORT" "${FORWARD_EXTRA:-{\}}" <<'PY'
import json, sys
d, port, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
w = lambda name, doc: json.dump(doc, open(f"{d}/etc/{name}.json", "w"), indent=1)
w("kmes", {"SocketPath": f"{d}/run/kmes.sock", "BufferCapacity": 67108864})
w("host", {"EventStorePath": f"{d}/host", "QuerySocketPath": f"{d}/run/host.sock",
           "KmesSocketPath": f"{d}/run/kmes.sock", "EventRetentionDays": 3650})
def collector(name, stream="EVENTD", prefix="eventd"):
    w(name, {"EventStorePath": f"{d}/{name}", "QuerySocketPath": f"{d}/run/{name}.sock",
             "EventRetentionDays": 3650, "StorageShards": 2,
             "CollectorSource": {"NatsUrl": f"nats://127.0.0.1:{port}", "AckWaitSeconds": 2,
                                 "MaxBackoffMs": 500, "Stream": stream, "SubjectPrefix": prefix}})
fwd = {"NatsUrl": f"nats://127.0.0.1:{port}", "EventdSocketPath": f"{d}/run/host.sock",
       "HostName": "bench-host", "MaxBackoffMs": 500}
packed = dict(fwd, **extra)
single = dict(fwd, MaxRecordsPerMessage=1)
# Part 1: one forwarder and one collector per format, each on its own stream and event type.
for name, conf in (("single", single), ("packed", packed)):
    w(f"fwd-{name}", dict(conf, StateDirectory=f"{d}/fwd-{name}", Stream=name.upper(), SubjectPrefix=name,
                          Query=f"EVENTS bench.fleet.{name}"))
    collector(f"coll-{name}", name.upper(), name)
# Parts 2 and 3: the packed forwarder of everything, its collector, and the anchor: the same
# forwarder, one record per message, into a stream whose duplicate window has passed when it replays.
w("forward", dict(packed, StateDirectory=f"{d}/forward"))
collector("collector")
w("anchor", dict(single, StateDirectory=f"{d}/anchor", Stream="ANCHOR", SubjectPrefix="anchor",
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
start_collector() {  # name (default collector)
  local name=${1:-collector}
  start "$name" "$BIN/eventd/eventd" --config "$DIR/etc/$name.json"; wait_socket "$DIR/run/$name.sock"
}

start nats "$NATS_SERVER" -js -a 127.0.0.1 -p "$PORT" -m "$MPORT" -sd "$DIR/js"
start shim "$BIN/kmes-shim/kmes-shimd" --config "$DIR/etc/kmes.json"
wait_socket "$DIR/run/kmes.sock"
start host "$BIN/eventd/eventd" --config "$DIR/etc/host.json"
wait_socket "$DIR/run/host.sock"
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

model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)
echo "## The fleet: host → JetStream → collector ($(date -u '+%F %H:%M UTC'), $(git rev-parse --short HEAD), $BIN, $(nproc) × ${model:-CPU})"
echo
# 0. The collector's conversion alone, in-process: what a record costs before any NATS or SQLite.
"$BIN/bench/kmes-bench-collector-convert" ${QUICK:+--quick}
echo

# 1. Throughput, stage by stage, both formats. The stages are timed in Python (poll.py), without
# loading the daemons measured: STATUS every 0.5 s (the shards' row counts) says when a store
# holds N more rows, one COUNT then that all N are the stage's records, and the stage ended at
# its newest commit (STATUS: the shards' last_commit_ns; nothing else writes then) — a COUNT
# every 0.5 s instead scanned the growing table: 11 % of the collector's CPU samples (perf); the
# forwarder's status.json (read every 20 ms) says when its saved cursor covers the newest event,
# and since when (cursor_saved_ns).
cat > "$DIR/poll.py" <<'PY'
import json, os, subprocess, sys, time
eventctl, run = sys.argv[1], sys.argv[2]
def count(sock, query):
    r = subprocess.run([eventctl, "--socket", f"{run}/{sock}.sock", "-o", "jsonl", query + " COUNT"],
                       capture_output=True, text=True)
    try: return json.loads(r.stdout)["count"]
    except Exception: return -1
def newest(sock, query):  # the newest event time of a query's records
    r = subprocess.run([eventctl, "--socket", f"{run}/{sock}.sock", "-o", "jsonl", query + " SORT timestamp DESC TAKE 1"],
                       capture_output=True, text=True)
    return json.loads(r.stdout)["timestamp"]
def cpu(pid):  # user + system seconds of a process so far
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def last_commit(sock):  # wall clock of the newest commit of any shard (STATUS), in seconds
    return max((s.get("last_commit_ns") or 0) for s in status(sock) if s.get("kind") == "shard") / 1e9
def status(sock):
    r = subprocess.run([eventctl, "--socket", f"{run}/{sock}.sock", "-o", "jsonl", "STATUS"], capture_output=True, text=True)
    return [json.loads(l) for l in r.stdout.splitlines()]
def rows(sock):  # rows in all shards (STATUS), -1 when it cannot be asked
    try: return sum(s.get("rows") or 0 for s in status(sock) if s.get("kind") == "shard")
    except Exception: return -1
def stored(sock, query, n, base):  # until the store holds n rows more than base, and n of the query
    until(lambda: rows(sock) >= base + n)
    until(lambda: count(sock, query) >= n)
def until(what, every=0.5, timeout=600):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = what()
        if v: return v
        time.sleep(every)
    sys.exit("fleet: a stage did not finish in 10 minutes")
PY
poll() { python3 -c "exec(open('$DIR/poll.py').read()); $1" "$BIN/eventctl/eventctl" "$DIR/run" "${@:2}"; }

throughput() {  # format (single | packed) → one line of results in $DIR/throughput
  local f=$1 type=bench.fleet.$1 t0 t_host t_fwd t_coll
  local rows_before; rows_before=$(poll 'print(rows("host"))')
  t0=$(date +%s.%N)
  taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t "$type" -j '{"user":"alice","n":12345,"note":"fleet benchmark"}' \
    -n "$N" -b 256 --retry-eagain
  t_host=$(poll 'n, t0 = int(sys.argv[3]), float(sys.argv[4]); stored("host", sys.argv[5], n, int(sys.argv[6])); print(last_commit("host") - t0)' \
    "$N" "$t0" "EVENTS $type" "$rows_before")
  # The forwarder on the backlog: done when its saved cursor covers the newest event.
  local nats_before fwd_pid
  nats_before=$(poll 'print(cpu(sys.argv[3]))' "${pid[nats]}")
  t0=$(date +%s.%N)
  start_forward "fwd-$f"
  fwd_pid=${pid[fwd-$f]}
  read -r t_fwd fwd_cpu nats_fwd < <(poll '
last, t0, status, fpid, npid, nats0 = newest("host", sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7], float(sys.argv[8])
def done():
    try: s = json.load(open(status))
    except Exception: return None
    return s["cursor_saved_ns"] / 1e9 if s.get("last_acked_timestamp_ns", 0) >= last else None
saved = until(done, 0.02)
print(saved - t0, cpu(fpid), cpu(npid) - nats0)' "EVENTS $type" "$t0" "$DIR/fwd-$f/status.json" "$fwd_pid" "${pid[nats]}" "$nats_before")
  stop "fwd-$f"
  local msgs; msgs=$(messages "${f^^}")
  # The collector on the stream.
  nats_before=$(poll 'print(cpu(sys.argv[3]))' "${pid[nats]}")
  start_collector "coll-$f"
  t0=$(date +%s.%N)
  read -r t_coll coll_cpu nats_coll < <(poll '
n, t0, cpid, npid, nats0 = int(sys.argv[3]), float(sys.argv[4]), sys.argv[6], sys.argv[7], float(sys.argv[8])
stored(sys.argv[9], sys.argv[5], n, 0)
print(last_commit(sys.argv[9]) - t0, cpu(cpid), cpu(npid) - nats0)' "$N" "$t0" "EVENTS $type" "${pid[coll-$f]}" "${pid[nats]}" "$nats_before" "coll-$f")
  stop "coll-$f"
  echo "$f $t_host $t_fwd $fwd_cpu $nats_fwd $t_coll $coll_cpu $nats_coll $msgs" >> "$DIR/throughput"
}
throughput single
throughput packed
python3 - "$N" "$DIR/throughput" "${FORWARD_EXTRA:-{\}}" <<'PY'
import json, sys
n, extra = int(sys.argv[1]), json.loads(sys.argv[3])
rows = {l.split()[0]: [float(x) for x in l.split()[1:]] for l in open(sys.argv[2])}
names = {"single": "one record per message (MaxRecordsPerMessage 1)",
         "packed": "packed (" + (", ".join(f"{k} {v}" for k, v in extra.items()) or "the defaults") + ")"}
print(f"| {n} events, each stage alone | host ingest, records/s | forwarder, records/s | × ingest | "
      "collector, records/s | × ingest | records per message | nats-server CPU µs/record: forwarding, collecting | "
      "eventd-forward CPU µs/record | collector eventd CPU µs/record |")
print("|---|---|---|---|---|---|---|---|---|---|")
for f in ("single", "packed"):
    host, fwd, fwd_cpu, nats_fwd, coll, coll_cpu, nats_coll, msgs = rows[f]
    print(f"| {names[f]} | {n / host:,.0f} | {n / fwd:,.0f} | {host / fwd:.2f} | {n / coll:,.0f} | {host / coll:.2f} | "
          f"{n / max(msgs, 1):.0f} | {nats_fwd / n * 1e6:.1f}, {nats_coll / n * 1e6:.1f} | {fwd_cpu / n * 1e6:.1f} | "
          f"{coll_cpu / n * 1e6:.1f} |")
s, p = rows["single"], rows["packed"]
print(f"\nPacked against one record per message, same run: forwarder {s[1] / p[1]:.2f}×, collector {s[4] / p[4]:.2f}× "
      "the rate.\n")
PY

# Parts 2 and 3 use the packed forwarder of every record and its collector: they first catch up
# with everything the host stores (part 1's events too).
start_forward forward
start_collector
for _ in $(seq 1200); do
  base=$(count host EVENTS)
  [[ $(count collector "EVENTS WHERE host IS NOT NULL") -ge $base ]] && break
  sleep 0.2
done

# 2. Latency, emit → visible in the collector (its live stream delivers after its commit).
poll '
want = int(sys.argv[3])
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
  [[ $(count collector "EVENTS bench.crash") -ge $hosts && $(messages ANCHOR) -ge $(count host EVENTS) ]] && break
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
python3 - "$DIR/throughput" <<'PY'
import sys
rows = {l.split()[0]: [float(x) for x in l.split()[1:]] for l in open(sys.argv[1])}
host, fwd, _, _, coll = rows["packed"][:5]
print(f"\nfleet: forwarder {host / fwd:.2f}× of ingest, collector {host / coll:.2f}× of ingest")
PY
