#!/usr/bin/env bash
# One user's heavy queries against root's small one (issue 40 item 6; docs/PERFORMANCE.md §17).
# For each setting in SETTINGS, side by side in one run — UserQueryNice/MaxRunningQueriesPerUser/
# MaxQueryGroupBytes (default "0/16/68719476736 19/16/68719476736 19/2/67108864": as before issue
# 40, nice alone, and today's defaults; 16 running is MaxQueriesPerUser, i.e. no cap; 64 GiB no
# budget) — a fresh kmes-shimd and eventd (BUILD_DIR, default build) on a store of ~500,000
# events (the shim's generator, 50,000/s on each of 2 rings for 5 s); root's `EVENTS app.a TAKE
# 10` (eventctl, process start included) RUNS times idle, then RUNS times while HOSTILE (default
# 16) loops of `EVENTS GROUP msg, path, user, sequence COUNT` of one user who may read
# everything but is no administrator (eventd-auditor, created by the query tests; `useradd
# --system eventd-auditor` otherwise) run — each loop asks again as soon as its query ends or is
# refused, so the load lasts whatever the limits do to one query; medians, their ratio, eventd's
# RSS idle and its peak (VmHWM) under load, and how the hostile queries ended. Needs root (setpriv).
#   BUILD_DIR=build RUNS=9 HOSTILE=16 SETTINGS="19/2/67108864" bench/query_fairness.sh
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}; B=$(realpath "$B")
RUNS=${RUNS:-9}; HOSTILE=${HOSTILE:-16}
SETTINGS=${SETTINGS:-"0/16/68719476736 19/16/68719476736 19/2/67108864"}
USER_=${FAIR_USER:-eventd-auditor}
id "$USER_" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_"
WORK=$(mktemp -d /tmp/eventd-fairness.XXXXXX); chmod 755 "$WORK"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pkill -f "$WORK/eventctl" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
small() {  # seconds of one root query
  local t0 t1; t0=$(date +%s%N)
  "$D/eventctl" --socket "$D/query.sock" --format jsonl 'EVENTS app.a TAKE 10' >/dev/null
  t1=$(date +%s%N); echo "scale=4; ($t1 - $t0) / 1000000000" | bc
}
rss_mb() { awk -v k="$2:" '$1 == k {printf "%d", $2 / 1024}' "/proc/$1/status"; }
echo "| nice / running / group bytes | root's query idle (median of $RUNS) | with $HOSTILE hostile loops | ratio | eventd RSS idle → peak loaded | hostile queries: ended / refused by the group budget / waited |"
echo "|---|---|---|---|---|---|"
for setting in $SETTINGS; do
  IFS=/ read -r nice running group_bytes <<<"$setting"
  D=$WORK/s${setting//\//-}; mkdir -p "$D"; chmod 755 "$D"
  echo '{"Audit": {"Mode": "off"}}' > "$D/kmes.json"
  cat > "$D/eventd.json" <<J
{"EventStorePath": "$D/events", "QuerySocketPath": "$D/query.sock", "KmesSocketPath": "$D/kmes.sock",
 "QueryTimeoutMs": 300000, "UserQueryNice": $nice, "MaxRunningQueriesPerUser": $running,
 "MaxQueryGroupBytes": $group_bytes,
 "Security": {"Events": {"*": [{"allow": ["group:adm", "user:$USER_"]}]}}}
J
  "$B/kmes-shim/kmes-shimd" --config "$D/kmes.json" --socket "$D/kmes.sock" --cpus 2 \
    --generate "rate=50000,payload=32,count=250000,types=app.a:1" > "$D/shim.log" 2>&1 & shim=$!; pids+=("$shim")
  for _ in $(seq 50); do [ -S "$D/kmes.sock" ] && break; sleep 0.1; done
  "$B/eventd/eventd" --config "$D/eventd.json" > "$D/eventd.log" 2>&1 & ev=$!; pids+=("$ev")
  cp "$B/eventctl/eventctl" "$D/eventctl"; chmod 755 "$D/eventctl"
  last=-1
  for _ in $(seq 120); do  # until the count stands still for 2 s
    sleep 2
    n=$("$D/eventctl" --socket "$D/query.sock" --format jsonl 'EVENTS COUNT' 2>/dev/null | grep -o '[0-9]\+' | head -1 || echo 0)
    [ "$n" = "$last" ] && break; last=$n
  done
  idle=$(for _ in $(seq "$RUNS"); do small; done | median); rss_idle=$(rss_mb "$ev" VmRSS)
  echo 5 > "/proc/$ev/clear_refs"  # VmHWM from here: the peak under load
  hostile=()
  for i in $(seq "$HOSTILE"); do
    ( while :; do
        setpriv --reuid "$USER_" --regid "$USER_" --init-groups "$D/eventctl" --socket "$D/query.sock" --format jsonl \
          'EVENTS GROUP msg, path, user, sequence COUNT' >/dev/null 2>>"$D/hostile.$i.err" || true
        echo . >> "$D/hostile.$i.ended"
      done ) & hostile+=($!)
  done
  sleep 3  # the hostile queries under way
  loaded=$(for _ in $(seq "$RUNS"); do small; done | median); rss_peak=$(rss_mb "$ev" VmHWM)
  for p in "${hostile[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait "${hostile[@]}" 2>/dev/null || true
  ended=$(cat "$D"/hostile.*.ended 2>/dev/null | wc -l)
  budget=$(cat "$D"/hostile.*.err 2>/dev/null | grep -c MaxQueryGroupBytes || true)
  waited=$("$D/eventctl" --socket "$D/query.sock" --format jsonl STATUS 2>/dev/null \
           | grep -o '"waited_running_per_user":[0-9]*' | cut -d: -f2 || true)
  echo "| $nice / $running / $group_bytes ($n events) | ${idle} s | ${loaded} s | $(echo "scale=1; $loaded / $idle" | bc)× | $rss_idle → $rss_peak MB | $ended / $budget / ${waited:-?} |"
  kill "$ev" "$shim" 2>/dev/null || true; wait "$ev" "$shim" 2>/dev/null || true
done
