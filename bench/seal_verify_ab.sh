#!/usr/bin/env bash
# eventctl verify, one build against another, side by side (issue 28; docs/PERFORMANCE.md §16,
# "Since these runs"): a sealed store made by build-bench's eventd (one shard, checkpoints every
# second, 8 bursts of 250 000 events from one CPU — what the rings keep of them is stored), then
# `eventctl verify` of OLD and of NEW alternating, ROUNDS pairs, each run's user + system CPU.
#   bench/seal_verify_ab.sh OLD_EVENTCTL [NEW_EVENTCTL]
#   NEW_EVENTCTL   default build-bench/eventctl/eventctl;  ROUNDS=4;  BENCH_STORE_DIR=/var/tmp
# OLD is typically bench/seal.sh's cached build of an earlier commit
# (/var/tmp/eventd-seal-build-<rev>/build/eventctl/eventctl).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2034  # old and new are read through ${!which} below
old=${1:?usage: bench/seal_verify_ab.sh OLD_EVENTCTL [NEW_EVENTCTL]}
new=${2:-build-bench/eventctl/eventctl}
B=build-bench
dir=$(mktemp -d "${BENCH_STORE_DIR:-/var/tmp}/seal-verify-ab.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/run" "$dir/events"
chmod 700 "$dir/events"
echo "{\"SocketPath\": \"$dir/run/kmes.sock\", \"Cpus\": 2}" > "$dir/kmes.json"
echo "{\"EventStorePath\": \"$dir/events\", \"QuerySocketPath\": \"$dir/run/query.sock\",
      \"KmesSocketPath\": \"$dir/run/kmes.sock\", \"StorageShards\": 1, \"CheckpointIntervalSeconds\": 1}" > "$dir/eventd.json"
key=$("$B/eventctl/eventctl" seal --setup --store "$dir/events" --epoch-seconds 900 --years 0.1 | tail -1)
"$B/kmes-shim/kmes-shimd" --config "$dir/kmes.json" > "$dir/shim.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do [[ -S $dir/run/kmes.sock ]] && break; sleep 0.05; done
"$B/eventd/eventd" --config "$dir/eventd.json" > "$dir/eventd.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do [[ -S $dir/run/query.sock ]] && break; sleep 0.05; done
export KMES_SOCKET=$dir/run/kmes.sock
for _ in $(seq 8); do
  taskset -c 0 "$B/kmes-shim/tools/kmes-emit" -t bench.seal -n 250000 -b 256 \
    -j '{"user":"alice","path":"/var/lib/something/file.txt","pid":12345,"ok":true,"bytes":4096}'
  sleep 2  # what the bursts leave behind is not the point: every stored row is verified
done
sleep 3
kill "${pids[1]}"; wait "${pids[1]}" || true
"$new" verify --store "$dir/events" --key "$key" | tail -1
for _ in $(seq "${ROUNDS:-4}"); do
  for which in old new; do
    /usr/bin/time -f "$which: CPU %U + %S s, wall %e s" "${!which}" verify --store "$dir/events" --key "$key" > /dev/null
  done
done
