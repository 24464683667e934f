#!/usr/bin/env bash
# eventd-forward and resumed streams, measured on real daemons (docs/PERFORMANCE.md §11):
#   1. a store of N events (kmes-emit, batches of 256, one ring), then
#   2. eventctl over the whole store, side by side in one run: a plain `EVENTS` query and a
#      resumed one (`--cursor-file`, from the oldest record: store order, a cursor saved and
#      fsync'd after every frame), each -o msgpack into a file, best of 3;
#   3. eventd-forward from an empty cursor into a fresh JetStream stream (nats-server on
#      loopback, file storage): seconds until the stream holds every record → records/s, and
#      the CPU seconds eventd-forward and nats-server spent on it (which of them is the limit);
#   4. the same after a SIGKILL halfway: records JetStream reported as duplicates (replays).
# The forwarders publish one record per message (MaxRecordsPerMessage 1): the stream's message
# count is its record count. Packed messages are measured by bench/fleet.sh (§12).
#
#   bench/forward_throughput.sh [N]          N events (default 200000)
#   BUILD_DIR=build                          the binaries (a debugoptimized build: say so)
#   BENCH_STORE_DIR=/var/tmp                 where the store and JetStream live (a real disk)
#   COMPARE_WITH=/path/to/eventd-forward     5. also: this build's forwarder and that one, taking
#                                            turns (2 runs each) over the same store, each into a
#                                            fresh stream — an optimisation's side-by-side proof
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
BIN=${BUILD_DIR:-build}
NATS_SERVER=$(command -v nats-server || echo /usr/sbin/nats-server)
DIR=$(mktemp -d "${BENCH_STORE_DIR:-/var/tmp}/forward-bench.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
mkdir -p "$DIR"/{etc,run,lib,log}
python3 - "$DIR" <<'PY'
import json, sys
d = sys.argv[1]
json.dump({"SocketPath": f"{d}/run/kmes.sock", "BufferCapacity": 67108864}, open(f"{d}/etc/kmes.json", "w"))
json.dump({"EventStorePath": f"{d}/lib/events", "QuerySocketPath": f"{d}/run/query.sock",
           "KmesSocketPath": f"{d}/run/kmes.sock", "EventRetentionDays": 3650, "QueryTimeoutMs": 300000},
          open(f"{d}/etc/eventd.json", "w"))
PY
wait_for() { for _ in $(seq 200); do [[ -S $1 ]] && return 0; sleep 0.05; done; echo "no $1" >&2; exit 1; }
"$BIN/kmes-shim/kmes-shimd" --config "$DIR/etc/kmes.json" > "$DIR/log/shim.log" 2>&1 & pids+=($!)
wait_for "$DIR/run/kmes.sock"
"$BIN/eventd/eventd" --config "$DIR/etc/eventd.json" > "$DIR/log/eventd.log" 2>&1 & pids+=($!)
wait_for "$DIR/run/query.sock"
export KMES_SOCKET=$DIR/run/kmes.sock EVENTD_SOCKET=$DIR/run/query.sock
taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t bench.fwd -j '{"user":"alice","n":12345,"note":"forward benchmark"}' \
  -n "$N" -b 256 --retry-eagain --rate 50000
count() { "$BIN/eventctl/eventctl" -o jsonl "$1 COUNT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'; }
for _ in $(seq 600); do [[ $(count "EVENTS bench.fwd") -ge $N ]] && break; sleep 0.2; done
[[ $(count "EVENTS bench.fwd") -ge $N ]] || { echo "eventd stored fewer than $N events (ring overrun?); see $DIR/log" >&2; exit 1; }
TOTAL=$(count EVENTS)
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }

echo "## eventd-forward and resumed streams ($(date -u +%F), $(git rev-parse --short HEAD), $BIN, $(nproc) CPUs)"
echo
echo "Store: $TOTAL records ($N emitted + eventd's own)."
echo
echo "| eventctl over the whole store, -o msgpack to a file (best of 3) | seconds | records/s |"
echo "|---|---|---|"
for mode in plain resumed; do
  best=999999
  for _ in 1 2 3; do
    rm -f "$DIR/out" "$DIR/cursor"
    t0=$(now)
    if [[ $mode == plain ]]; then "$BIN/eventctl/eventctl" -o msgpack EVENTS > "$DIR/out"
    else "$BIN/eventctl/eventctl" -o msgpack --cursor-file "$DIR/cursor" EVENTS > "$DIR/out"; fi
    t=$(secs "$t0" "$(now)")
    best=$(python3 -c "print(min($best, $t))")
  done
  echo "| $mode | $best | $(python3 -c "print(int($TOTAL / $best))") |"
done
echo

"$NATS_SERVER" -js -a 127.0.0.1 -p 14333 -m 18333 -sd "$DIR/js" > "$DIR/log/nats.log" 2>&1 & pids+=($!)
nats_pid=$!
sleep 1
msgs() { curl -s 'http://127.0.0.1:18333/jsz?streams=1' |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(s["state"]["messages"] for a in d.get("account_details",[]) for s in a.get("stream_detail",[])))'; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }  # user + system seconds of a process
forward() {  # $1: state dir, $2: stream [, $3: the eventd-forward binary]
  cat > "$DIR/etc/fwd-$2.json" <<JSON
{"NatsUrl": "nats://127.0.0.1:14333", "EventdSocketPath": "$DIR/run/query.sock", "StateDirectory": "$1",
 "Stream": "$2", "SubjectPrefix": "$2", "HostName": "bench", "MaxRecordsPerMessage": 1}
JSON
  "${3:-$BIN/forward/eventd-forward}" --config "$DIR/etc/fwd-$2.json" > "$DIR/log/fwd-$2.log" 2>&1 &
  echo $!
}
echo "| eventd-forward, empty cursor → fresh stream | seconds | records/s | CPU s: eventd-forward | CPU s: nats-server |"
echo "|---|---|---|---|---|"
nats_cpu0=$(cpu_s "$nats_pid")
t0=$(now)
p=$(forward "$DIR/fwd1" FWDONE); pids+=("$p")
wait_msgs() {  # until the streams hold $1 messages (10 minutes at most); one poller, every 0.1 s
  /usr/bin/python3 - "$1" <<'PY' || { echo "the stream did not reach $1 messages; see $DIR/log" >&2; exit 1; }
import json, sys, time, urllib.request
want, deadline = int(sys.argv[1]), time.time() + 600
while time.time() < deadline:
    d = json.load(urllib.request.urlopen("http://127.0.0.1:18333/jsz?streams=1", timeout=5))
    if sum(s["state"]["messages"] for a in d.get("account_details", []) for s in a.get("stream_detail", [])) >= want:
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY
}
wait_msgs "$TOTAL"
t=$(secs "$t0" "$(now)")
fwd_cpu=$(cpu_s "$p") nats_cpu=$(python3 -c "print(f'{$(cpu_s "$nats_pid") - $nats_cpu0:.2f}')")
echo "| all $TOTAL records stored and acknowledged | $t | $(python3 -c "print(int($TOTAL / $t))") | $fwd_cpu | $nats_cpu |"
kill -TERM "$p"; wait "$p" 2>/dev/null || true
before=$(msgs)
t0=$(now)
p=$(forward "$DIR/fwd2" FWDTWO)
sleep "$(python3 -c "print($t / 2)")"
kill -KILL "$p"; wait "$p" 2>/dev/null || true
p=$(forward "$DIR/fwd2" FWDTWO); pids+=("$p")
wait_msgs $(( before + TOTAL ))
t=$(secs "$t0" "$(now)")
dups=$("$BIN/forward/eventd-forward" --config "$DIR/etc/fwd-FWDTWO.json" --status | awk '/^duplicates/ {print $2}')
echo "| the same, SIGKILLed halfway and restarted | $t | $(python3 -c "print(int($TOTAL / $t))") | | |"
echo
echo "Stream after the kill: $(( $(msgs) - before )) messages for $TOTAL records; the restarted forwarder's acks reported $dups duplicate(s) (replays JetStream dropped)."

if [[ -n ${COMPARE_WITH:-} ]]; then
  echo
  echo "| side by side, empty cursor → fresh stream | seconds | records/s | CPU s: eventd-forward | CPU s: nats-server |"
  echo "|---|---|---|---|---|"
  have=$(msgs)
  for run in 1 2; do
    for which in this other; do
      bin=$BIN/forward/eventd-forward
      [[ $which == other ]] && bin=$COMPARE_WITH
      nats_cpu0=$(cpu_s "$nats_pid")
      t0=$(now)
      p=$(forward "$DIR/cmp-$which-$run" "CMP${which^^}$run" "$bin")
      wait_msgs $(( have + TOTAL ))
      t=$(secs "$t0" "$(now)")
      fwd_cpu=$(cpu_s "$p") nats_cpu=$(python3 -c "print(f'{$(cpu_s "$nats_pid") - $nats_cpu0:.2f}')")
      kill -TERM "$p"; wait "$p" 2>/dev/null || true
      have=$(( have + TOTAL ))
      echo "| $which ($bin) | $t | $(python3 -c "print(int($TOTAL / $t))") | $fwd_cpu | $nats_cpu |"
    done
  done
fi
