#!/usr/bin/env bash
# The timing side channel of issue 23 ("Query time reveals hidden values"), measured on real
# daemons. A caller who may not read `secret.*` asks questions about a field of those hidden
# records; the answers are the same (the records are absent for it), but if the time to answer
# depended on the hidden values, the time would be an oracle for them.
#
#   1. kmes-shimd and eventd on a temporary directory, eventd's policy: every type readable by
#      everyone, `secret` (and every secret.… type) by nobody but root (root reads everything);
#   2. as root: ROWS events `secret.bulk` {"pin": 1234} and VISIBLE events `public.thing`
#      {"pin": 1} (kmes-emit, batches of 256, one ring), until eventd has stored all of them;
#   3. as `nobody` and as root, eventctl over the query socket, RUNS rounds; in each round every
#      pair runs A then B (B then A every other round), so drift and cache warmth hit both sides:
#        pin > 1233  vs  pin > 1234   (every hidden row passes A, none passes B)
#        pin == 1234 vs  pin == 5555  (the same with equality)
#      A and B differ only in whether the *hidden* rows match; for nobody both answers are the
#      visible count (0: the visible events have pin 1), so any time difference is the leak;
#   4. a Markdown table: medians of the wall time from spawning eventctl to its exit, B/A, the
#      answers, and a check that nobody's answers are the visible counts only.
#
#   bench/access_oracle.sh
#   ROWS=400000        hidden events (issue 23's acceptance number)
#   RUNS=15            timed rounds (after one untimed warm-up round)
#   VISIBLE=5000       visible events
#   BUILD_DIR=build    the binaries (copied once at the start; see below)
#   BENCH_STORE_DIR=/var/tmp   where the store lives (a real disk, like the other benchmarks)
#   KEEP=1             keep the temporary directory (logs, store) instead of removing it
#
# Run as root: the hidden events are emitted as root (no per-process rate limit) and the
# nobody side needs setuid. Nothing outside the temporary directory is written.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROWS=${ROWS:-400000} RUNS=${RUNS:-15} VISIBLE=${VISIBLE:-5000}
SRC=${BUILD_DIR:-build}
[[ $(id -u) -eq 0 ]] || { echo "access_oracle: run as root (the nobody side needs setuid)" >&2; exit 1; }
getent passwd nobody > /dev/null || { echo "access_oracle: no user nobody" >&2; exit 1; }

umask 077
DIR=$(mktemp -d "${BENCH_STORE_DIR:-/var/tmp}/access-oracle.XXXXXX")
pids=()
cleanup() {
  # eventd first (it drains from the shim), then the shim; reversed start order.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  if [[ -n ${KEEP:-} ]]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
mkdir -p "$DIR"/{etc,run,log,lib}

# nobody must reach the query socket (mode 0666) and run eventctl, and nothing else: the
# directories it passes through are searchable but not listable, the store stays private
# (eventd makes everything it creates private itself, issue 23).
chmod 0711 "$DIR" "$DIR/run"

# A snapshot of the binaries: the tree may be rebuilt while this runs (bench/lib.sh).
BIN=$DIR/bin
snapshot_binaries "$SRC" "$BIN" kmes-shim/kmes-shimd kmes-shim/libkmes.so.0 kmes-shim/tools/kmes-emit \
  eventd/eventd eventctl/eventctl || exit 1
chmod -R go+rX "$BIN"
built=$(date -u -r "$BIN/eventd/eventd" '+%F %H:%M UTC')

# Configs as scripts/run writes them, with local paths. Rings of 128 MiB: ROWS events on one
# ring must not wrap before eventd has read them (a wrap would be a gap, not a store of ROWS).
# A long retention and query timeout: nothing ages out, no query is cut short.
python3 - "$DIR" <<'PY'
import json, sys
d = sys.argv[1]
json.dump({"SocketPath": f"{d}/run/kmes.sock", "BufferCapacity": 134217728},
          open(f"{d}/etc/kmes.json", "w"), indent=1)
json.dump({"EventStorePath": f"{d}/lib/events", "QuerySocketPath": f"{d}/run/query.sock",
           "KmesSocketPath": f"{d}/run/kmes.sock", "EventRetentionDays": 3650,
           "QueryTimeoutMs": 300000,
           # docs/ACCESS-CONTROL.md: `secret` governs secret and every secret.… type and does
           # not inherit "*"; a deny of everyone hides its records from every caller but root.
           "Security": {"Events": {"*": [{"allow": ["everyone"]}],
                                   "secret": [{"deny": ["everyone"]}]}}},
          open(f"{d}/etc/eventd.json", "w"), indent=1)
PY

wait_for() {  # a socket; on failure the daemons' logs, before cleanup removes them
  for _ in $(seq 200); do [[ -S $1 ]] && return 0; sleep 0.05; done
  echo "access_oracle: no $1" >&2; tail -n 20 "$DIR"/log/*.log >&2; exit 1
}
"$BIN/kmes-shim/kmes-shimd" --config "$DIR/etc/kmes.json" > "$DIR/log/shim.log" 2>&1 & pids+=($!)
wait_for "$DIR/run/kmes.sock"
"$BIN/eventd/eventd" --config "$DIR/etc/eventd.json" > "$DIR/log/eventd.log" 2>&1 & pids+=($!)
wait_for "$DIR/run/query.sock"
export KMES_SOCKET=$DIR/run/kmes.sock EVENTD_SOCKET=$DIR/run/query.sock
if grep -qi "Security" "$DIR/log/eventd.log"; then  # a policy error would mean deny-all: say so
  echo "access_oracle: eventd said something about the policy:" >&2; grep -i "Security" "$DIR/log/eventd.log" >&2
fi

count() { "$BIN/eventctl/eventctl" -o jsonl "$1 COUNT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'; }
t_emit=$(date +%s)
taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t public.thing -j '{"pin": 1}' -n "$VISIBLE" -b 256 --retry-eagain
taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t secret.bulk -j '{"pin": 1234}' -n "$ROWS" -b 256 --retry-eagain
for _ in $(seq 3000); do  # up to 10 minutes for the store to hold all of them
  [[ $(count "EVENTS secret.bulk") -ge $ROWS && $(count "EVENTS public.thing") -ge $VISIBLE ]] && break
  sleep 0.2
done
stored=$(count "EVENTS secret.bulk") public=$(count "EVENTS public.thing")
[[ $stored -eq $ROWS && $public -eq $VISIBLE ]] ||
  { echo "access_oracle: stored $stored/$ROWS secret.bulk, $public/$VISIBLE public.thing (a ring overrun?); see $DIR/log" >&2; exit 1; }
t_store=$(( $(date +%s) - t_emit ))
total=$(count EVENTS)
sleep 2  # the last commit's checkpoint and the writers settle before anything is timed

model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)
echo "## Issue 23: does query time reveal hidden values? ($(date -u '+%F %H:%M UTC'))"
echo
echo "- kernel $(uname -r), $(nproc) × ${model:-CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- commit $(commit_line), binaries $SRC/ ($(python3 -c "import json; print(next(o['value'] for o in json.load(open('$SRC/meson-info/intro-buildoptions.json')) if o['name'] == 'buildtype'))" 2>/dev/null || echo '?'), eventd linked $built)"
echo "- store: $ROWS \`secret.bulk\` {\"pin\": 1234} (hidden from nobody), $VISIBLE \`public.thing\` {\"pin\": 1}, $((total - ROWS - VISIBLE)) of eventd's own; $total in all, stored in ${t_store} s; $(df -T "$DIR" | awk 'NR == 2 {print $2}') under ${BENCH_STORE_DIR:-/var/tmp}"
echo "- policy: {\"*\": [{\"allow\": [\"everyone\"]}], \"secret\": [{\"deny\": [\"everyone\"]}]}"
echo "- $RUNS rounds after one untimed warm-up; time = spawn of \`eventctl -o jsonl\` to its exit (perf_counter_ns), nobody's and root's alike (setuid in the child, no wrapper)"
echo

# The timing itself: one Python process (root) spawns every eventctl; for nobody the child
# drops to nobody's uid, gid and no supplementary groups before exec (subprocess user=/group=/
# extra_groups=). Root's children take the same path, so both callers pay the same spawn.
python3 - "$BIN/eventctl/eventctl" "$EVENTD_SOCKET" "$RUNS" "$ROWS" "$VISIBLE" <<'PY'
import json, pwd, statistics, subprocess, sys, time
eventctl, sock, runs, rows, visible = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
nobody = pwd.getpwnam("nobody")
callers = {"nobody": dict(user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[]),
           "root": dict(user=0, group=0, extra_groups=[])}
pairs = [("pin > 1233 vs pin > 1234", "EVENTS WHERE pin > 1233 COUNT", "EVENTS WHERE pin > 1234 COUNT"),
         ("pin == 1234 vs pin == 5555", "EVENTS WHERE pin == 1234 COUNT", "EVENTS WHERE pin == 5555 COUNT")]
# What each caller must get: nobody only the visible rows (pin 1: none of these), root all.
expected = {("nobody", q): 0 for _, a, b in pairs for q in (a, b)}
expected.update({("root", pairs[0][1]): rows, ("root", pairs[0][2]): 0,
                 ("root", pairs[1][1]): rows, ("root", pairs[1][2]): 0})

def run(caller, query):
    t0 = time.perf_counter_ns()
    r = subprocess.run([eventctl, "--socket", sock, "-o", "jsonl", query], capture_output=True,
                       text=True, cwd="/", **callers[caller])
    ms = (time.perf_counter_ns() - t0) / 1e6
    if r.returncode != 0:
        sys.exit(f"access_oracle: {caller}: {query}: {r.stderr.strip()}")
    return ms, json.loads(r.stdout)["count"]

times = {(c, q): [] for c in callers for _, a, b in pairs for q in (a, b)}
answers = {k: set() for k in times}
for rnd in range(runs + 1):  # round 0 warms the page cache and eventd up; not counted
    for _, a, b in pairs:
        for caller in callers:
            for q in ((a, b) if rnd % 2 == 0 else (b, a)):
                ms, n = run(caller, q)
                answers[(caller, q)].add(n)
                if rnd: times[(caller, q)].append(ms)

med = lambda xs: statistics.median(xs)
print("| pair (A vs B) | caller | median ms A | median ms B | ratio B/A | per-round B/A: median (min–max) | answer A | answer B |")
print("|---|---|---|---|---|---|---|---|")
leaks, noise = [], []
for name, a, b in pairs:
    for caller in callers:
        ta, tb = times[(caller, a)], times[(caller, b)]
        paired = sorted(y / x for x, y in zip(ta, tb))  # A and B of one round ran back to back
        ratio = med(tb) / med(ta)
        ans = lambda q: "/".join(str(n) for n in sorted(answers[(caller, q)]))
        print(f"| {name} | {caller} | {med(ta):.1f} | {med(tb):.1f} | {ratio:.3f} | "
              f"{med(paired):.3f} ({paired[0]:.3f}–{paired[-1]:.3f}) | {ans(a)} | {ans(b)} |")
        # Two readings of B/A: the ratio of the medians (the table's column) and the median of
        # the per-round ratios (docs/PERFORMANCE.md's method: neighbours share the drift).
        # Both beyond 5 % on the same side is a difference; one alone is noise of this run.
        if caller == "nobody":
            off = [r for r in (ratio, med(paired)) if abs(r - 1) > 0.05]
            if len(off) == 2 and (off[0] - 1) * (off[1] - 1) > 0:
                leaks.append(f"{name}: nobody's B/A is {ratio:.3f}, per-round median {med(paired):.3f}")
            elif off:
                noise.append(f"{name}: B/A {ratio:.3f} but per-round median {med(paired):.3f}")

print()
wrong = [f"{c} {q}: got {sorted(answers[(c, q)])}, expected {want}" for (c, q), want in expected.items()
         if answers[(c, q)] != {want}]
# The visible rows are there for nobody: its zeros above mean "no visible row matches",
# not "nothing readable at all".
_, seen = run("nobody", "EVENTS WHERE pin == 1 COUNT")
_, seen_all = run("nobody", "EVENTS COUNT")
_, hidden = run("nobody", "EVENTS secret.* COUNT")
print(f"nobody's answers: {'as expected (0 everywhere: the hidden rows are absent)' if not wrong else 'WRONG'}; "
      f"nobody's `EVENTS WHERE pin == 1 COUNT` = {seen} (expected {visible}), `EVENTS COUNT` = {seen_all}, "
      f"`EVENTS secret.* COUNT` = {hidden} (expected 0).")
for w in wrong:
    print(f"- {w}")
if seen != visible or hidden != 0:
    wrong.append("visible/hidden counts")
print()
if leaks:
    print("Timing: " + "; ".join(leaks) + " — more than 5 % apart in both readings: nobody's time"
          " depends on whether hidden rows match (the issue-23 oracle).")
else:
    print("Timing: no pair of nobody's is more than 5 % apart in both readings" +
          (f" (one reading only: {'; '.join(noise)} — noise of this run)" if noise else "") + ".")
sys.exit(1 if wrong else 0)
PY
