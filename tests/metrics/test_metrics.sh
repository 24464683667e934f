#!/usr/bin/env bash
# eventd's metrics (issue 13): `eventctl status --format openmetrics` on a real kmes-shimd and
# eventd is valid for `promtool check metrics`, holds the families operators chart with values
# that match what was stored, and ends with # EOF; the textfile writer of eventd-metrics.service
# replaces its file whole and says what is wrong when it cannot. Prints "N passed, N failed".
#   test_metrics.sh TEXTFILE_SCRIPT DASHBOARD  ($KMES_SHIMD, $EVENTD, $EVENTCTL, $KMES_EMIT; promtool)
# DASHBOARD (contrib/grafana/eventd.json): every eventd_* name its queries use is one eventctl emits.
set -uo pipefail
script=$1 dashboard=$2
# shellcheck source=../stack.sh
source "$(dirname "$0")/../stack.sh"
stack_start
mkdir -p "$dir/textfile" "$dir/bin"
taskset -c 0 "$KMES_EMIT" -t app.login -n 40
for _ in $(seq 100); do
  [[ $("$EVENTCTL" -o jsonl 'EVENTS COUNT') == '{"count":41}' ]] && break  # + synthetic.startup
  sleep 0.05
done

passed=0 failed=0
check() {  # description, then a command that must succeed
  local what=$1; shift
  if "$@" > "$dir/out" 2>&1; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAILED: $what"; sed 's/^/  /' "$dir/out" | head -20
  fi
}

"$EVENTCTL" status --format openmetrics > "$dir/metrics.prom"
check "eventctl status --format openmetrics exits 0 with text" test -s "$dir/metrics.prom"
check "promtool check metrics accepts it" promtool check metrics < "$dir/metrics.prom"
check "it ends with # EOF" test "$(tail -n 1 "$dir/metrics.prom")" = "# EOF"
for family in eventd_events_stored_total eventd_events_lost_total eventd_ring_fill_ratio eventd_shard_rows \
              eventd_commit_duration_seconds eventd_queries_refused_total eventd_index_builds_started_total \
              eventd_retention_runs_total eventd_retention_deleted_rows_total; do
  check "$family has # HELP" grep -q "^# HELP $family " "$dir/metrics.prom"
  check "$family has # TYPE" grep -q "^# TYPE $family " "$dir/metrics.prom"
done
stored=$(awk '/^eventd_events_stored_total\{/ {s += $2} END {print s}' "$dir/metrics.prom")
check "eventd_events_stored_total adds up to the 41 records stored (got $stored)" test "$stored" = 41
check "a series per ring: eventd_events_lost_total{cpu=\"1\"} 0" grep -qx 'eventd_events_lost_total{cpu="1"} 0' "$dir/metrics.prom"
check "one refusal series per reason" test "$(grep -c '^eventd_queries_refused_total{reason=' "$dir/metrics.prom")" = 4
check "commit summary count per shard" grep -q '^eventd_commit_duration_seconds_count{shard="0"} [1-9]' "$dir/metrics.prom"

# The Grafana dashboard charts what exists (a renamed metric would leave a panel empty).
python3 - "$dashboard" "$dir/metrics.prom" > "$dir/unknown" <<'PY'
import json, re, sys
exprs = [t["expr"] for p in json.load(open(sys.argv[1]))["panels"] for t in p["targets"]]
emitted = set(re.findall(r"^([a-z_]+)[{ ]", open(sys.argv[2]).read(), re.M))
used = {n for e in exprs for n in re.findall(r"\b(eventd_[a-z_]+)", e)}
if not used:
    sys.exit("the dashboard names no eventd_ metric: nothing would be checked")
unknown = sorted(used - emitted)
if unknown:
    print(" ".join(unknown))
PY
dashboard_status=$?
# The step itself must have worked: an exception (or no python3) prints nothing, which would
# otherwise read as "no unknown metric".
check "the dashboard check ran (python3 exit $dashboard_status)" test "$dashboard_status" = 0
check "the dashboard's metrics all exist (unknown: $(cat "$dir/unknown"))" test ! -s "$dir/unknown"

"$EVENTCTL" --format openmetrics 'EVENTS' > "$dir/out" 2> "$dir/err"
check "openmetrics for a query is a usage error (exit 2) naming status" \
  sh -c "test $? = 2 && grep -q 'openmetrics is for .eventctl status.' '$dir/err'"

# The textfile writer: eventctl from PATH, as systemd runs it.
ln -s "$EVENTCTL" "$dir/bin/eventctl"
check "the textfile writer writes the file" env PATH="$dir/bin:$PATH" EVENTD_METRICS_FILE="$dir/textfile/eventd.prom" sh "$script"
check "what it wrote passes promtool" promtool check metrics < "$dir/textfile/eventd.prom"
check "and leaves no temporary file" test "$(ls -A "$dir/textfile")" = "eventd.prom"
env PATH="$dir/bin:$PATH" EVENTD_METRICS_FILE="$dir/nowhere/eventd.prom" sh "$script" 2> "$dir/err"
check "a missing directory is an error naming it" sh -c "test $? != 0 && grep -q 'directory $dir/nowhere does not exist' '$dir/err'"
kill "${pids[1]}"; wait "${pids[1]}" 2>/dev/null
cp "$dir/textfile/eventd.prom" "$dir/before"
env PATH="$dir/bin:$PATH" EVENTD_METRICS_FILE="$dir/textfile/eventd.prom" sh "$script" 2> "$dir/err"
check "eventd down: the writer fails and the last good file stays whole" \
  sh -c "test $? != 0 && cmp -s '$dir/before' '$dir/textfile/eventd.prom' && test \"\$(ls -A '$dir/textfile')\" = eventd.prom"

echo "metrics: $passed passed, $failed failed"
((failed == 0))
