# For the shell tests (tests/completion, tests/metrics): a real kmes-shimd (2 rings) and eventd
# on a temporary directory, stopped and removed at exit. Source it, then call stack_start.
#   stack_start    sets $dir (the directory), exports KMES_SOCKET and EVENTD_SOCKET, and
#                  fills pids=(shim eventd); needs $KMES_SHIMD and $EVENTD
dir=$(mktemp -d)
pids=()
stack_cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap stack_cleanup EXIT

stack_start() {
  mkdir -p "$dir/run"
  echo "{\"SocketPath\": \"$dir/run/kmes.sock\", \"Cpus\": 2}" > "$dir/kmes.json"
  echo "{\"EventStorePath\": \"$dir/events\", \"QuerySocketPath\": \"$dir/run/query.sock\",
        \"KmesSocketPath\": \"$dir/run/kmes.sock\", \"MaxBatchLatencyMs\": 20}" > "$dir/eventd.json"
  "$KMES_SHIMD" --config "$dir/kmes.json" > "$dir/shim.log" 2>&1 & pids+=($!)
  for _ in $(seq 100); do [[ -S $dir/run/kmes.sock ]] && break; sleep 0.05; done
  "$EVENTD" --config "$dir/eventd.json" > "$dir/eventd.log" 2>&1 & pids+=($!)
  for _ in $(seq 100); do [[ -S $dir/run/query.sock ]] && break; sleep 0.05; done
  export KMES_SOCKET=$dir/run/kmes.sock EVENTD_SOCKET=$dir/run/query.sock
}
