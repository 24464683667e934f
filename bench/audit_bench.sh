#!/usr/bin/env bash
# Kernel audit events: kmes-shimd + eventd against Debian's auditd 3.0.9, on real daemons and
# the real kernel (issue 24, "Performance"; docs/PERFORMANCE.md §14). Three parts, each
# printing Markdown tables:
#   1. CPU per audit event. The rule `-a always,exit -F arch=b64 -S execve -k kmesbench`;
#      kmes-bench-audit-load execs /bin/true MARKER at each rate of RATES (0 = as fast as the
#      machine allows: one closed spawn-and-wait loop per CPU) for SEG_S seconds under each of
#        kmes      kmes-shimd (Audit.Mode daemon, RulesFile with the rule) + eventd, a fresh
#                  store under BENCH_STORE_DIR, default indexing (only the timestamp index)
#        raw       auditd -n, log_format RAW, flush INCREMENTAL_ASYNC, freq 50, the rule by auditctl
#        enriched  the same with log_format ENRICHED
#        kmes-gc   kmes with eventd's CommitDelayMs GROUP_COMMIT_MS (default 20): group commit,
#                  a trickle of events shares one fsync as auditd's freq 50 shares one
#      All three see BacklogLimit 8192 and backlog_wait_time 0 (the kernel drops and counts rather
#      than stalling the execs). Each segment starts the daemons afresh; the configurations
#      alternate (ROUNDS rounds, each in a rotated order) and every ratio is taken between
#      segments of one round. CPU = utime+stime deltas of /proc/<pid>/stat of the daemons
#      (all threads), kauditd's too, from 1 s after the start until the daemons are idle again
#      after the last exec (at least 1 s).
#   2. Loss at each rate: the kernel's `lost` (auditctl -s) before/after, kmes-shimd's audit.lost
#      records, and the execs of the segment's MARKER found (eventd: stored events; auditd:
#      EXECVE records in its log) vs the execs run → the highest rate with zero loss. Two CPUs
#      run out of execs before any daemon loses, so the same again with cheaper events: uname(2)
#      in a loop at EVENT_RATES (`-S uname -F exe=` the generator), one round.
#   3. ausearch vs eventctl on the same EVENTS audit events: auditd (log RAW) registered and
#      kmes-shimd (Audit.Mode multicast, ReceiveBufferBytes 256 MiB) + eventd beside it capture
#      uname(2) calls of kmes-bench-audit-load (`-F exe=` it, key kmesbulk, BULK_RATE a second)
#      and 300 execs of a copy of /bin/true (`-F exe=`, key kmesmark), spawned every
#      EVENTS/300 calls — by uid 65534 (setpriv) in the first 49 % and last 49 % of the calls,
#      by root in the middle 2 %, which quiet gaps of 2-3 s fence: the time window. Four
#      selective queries: a key, a uid (-ua), the time window (-ts/-te), an executable (-x);
#      eventctl RUNS times each (after a warm-up), ausearch -if LOG once among them (it reads
#      the whole log: minutes for a million events); then EVENTS INDEX on the fields and
#      eventctl again. Both tools must return the same number of events for every query (exit 1
#      if not), and both captures must hold every call and exec. Last, ausearch on the log's
#      first 100 000 events as logged and re-spaced in time: its cost grows with events a second.
#
#   bench/audit_bench.sh [--quick]   --quick: 1 round of 4 s, EVENT_RATES 20000, 50 000 events, 2 runs
#   RATES="1000 0" ROUNDS=2 SEG_S=6 EVENT_RATES="5000 15000 40000"      parts 1 and 2
#   EVENTS=1000000 BULK_RATE=3000 RUNS=3                                part 3
#   KMES_AUDIT='{"ReceiveBufferBytes": 268435456}'   more keys of kmes-shimd's Audit object, parts 1-2
#   GROUP_COMMIT_MS=20               eventd's CommitDelayMs in the kmes-gc configuration
#   CONFIGS="kmes kmes-gc raw enriched"   the configurations of parts 1-2
#   PARTS="cpu search"               cpu: parts 1 and 2; search: part 3
#   BUILD_DIR=build-bench            the binaries (./scripts/bench audit builds them; copied at start)
#   BENCH_STORE_DIR=/var/tmp         where stores and logs live (a real disk)
#   KEEP=1                           keep the temporary directory
#   PERF=DIR                         perf record (dwarf stacks) the daemons in every exec segment
#                                    (their CPU then includes perf's); DIR/CONFIG-execs-RATE-roundN.*
#
# The kernel's audit state is machine-wide: it is recorded first (enabled, backlog_limit,
# backlog_wait_time, the rules) and restored at exit whatever happens; every segment first
# waits until no audit daemon is registered (the kmes-audit tests may be running). Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
PARTS=${PARTS:-"cpu search"} RATES=${RATES-"1000 0"} ROUNDS=${ROUNDS:-2} SEG_S=${SEG_S:-6}
EVENT_RATES=${EVENT_RATES-"5000 15000 40000"} KMES_AUDIT=${KMES_AUDIT:-"{}"}
GROUP_COMMIT_MS=${GROUP_COMMIT_MS:-20} CONFIGS=${CONFIGS:-"kmes kmes-gc raw enriched"}
EVENTS=${EVENTS:-1000000} BULK_RATE=${BULK_RATE:-3000} RUNS=${RUNS:-3}
if [[ ${1:-} == --quick ]]; then
  RATES="1000 0" ROUNDS=1 SEG_S=4 EVENT_RATES=20000 EVENTS=50000 RUNS=2
elif [[ -n ${1:-} ]]; then
  echo "audit_bench: unknown argument '$1' (--quick or nothing)" >&2
  exit 2
fi
SRC=${BUILD_DIR:-build-bench}
[[ $(id -u) -eq 0 ]] || { echo "audit_bench: run as root (audit control, setpriv)" >&2; exit 1; }
for tool in auditctl auditd ausearch setpriv; do
  command -v "$tool" > /dev/null || { echo "audit_bench: no $tool (package auditd / util-linux)" >&2; exit 1; }
done
TICK=$(getconf CLK_TCK)
EXEC_KEY=kmesbench BULK_KEY=kmesbulk MARK_KEY=kmesmark

# --- the kernel's audit state: recorded before anything, restored at exit ----------------------
audit_status() { auditctl -s | awk -v k="$1" '$1 == k { print $2 }'; }
orig_enabled=$(audit_status enabled) orig_backlog=$(audit_status backlog_limit)
orig_wait=$(audit_status backlog_wait_time) orig_rules=$(auditctl -l)
[[ $orig_enabled != 2 ]] || { echo "audit_bench: the audit configuration is locked (enabled 2)" >&2; exit 1; }

umask 022
DIR=$(mktemp -d "${BENCH_STORE_DIR:-/var/tmp}/audit-bench.XXXXXX")
chmod 0711 "$DIR"  # uid 65534 executes $DIR/mark/kmes-audit-mark
declare -A pid=()  # running daemons by name
shim_pids=()       # every kmes-shimd started: a rule with pid=<one of them> is ours
stop() {  # name [signal]
  [[ -n ${pid[$1]:-} ]] || return 0
  kill "-${2:-TERM}" "${pid[$1]}" 2>/dev/null || true
  wait "${pid[$1]}" 2>/dev/null || true
  unset "pid[$1]"
}
# Our rules: those with one of our keys or a kmes-shimd's self-exclusion. Deleted by their line
# in `auditctl -l` (which lists -A rules as -a too); no rule of anyone else is touched.
delete_our_rules() {
  local line p ours
  while IFS= read -r line; do
    [[ $line == -a* ]] || continue
    ours=""
    [[ $line =~ key=($EXEC_KEY|$BULK_KEY|$MARK_KEY)$ ]] && ours=1
    for p in "${shim_pids[@]}"; do [[ $line == *" pid=$p "* || $line == *" pid=$p" ]] && ours=1; done
    [[ -n $ours ]] && auditctl -d ${line#-a } > /dev/null 2>&1 || true  # words of the rule: unquoted
  done < <(auditctl -l)
}
cleanup() {
  local status=$?
  stop eventd
  stop shim
  stop auditd
  for name in "${!pid[@]}"; do stop "$name"; done
  delete_our_rules
  auditctl -b "$orig_backlog" > /dev/null || true
  auditctl --backlog_wait_time "$orig_wait" > /dev/null || true
  auditctl -e "$orig_enabled" > /dev/null || true
  if [[ $(auditctl -l) != "$orig_rules" ]]; then
    echo "audit_bench: WARNING: the audit rules differ from those at the start (another test running?):" >&2
    diff <(echo "$orig_rules") <(auditctl -l) >&2 || true
  fi
  if [[ -n ${KEEP:-} ]]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- binaries and files --------------------------------------------------------------------------
BIN=$DIR/bin
snapshot_binaries "$SRC" "$BIN" kmes-shim/kmes-shimd kmes-shim/libkmes.so.0 eventd/eventd eventctl/eventctl \
  bench/kmes-bench-audit-load || exit 1
chmod -R go+rX "$BIN"
LOAD=$BIN/bench/kmes-bench-audit-load EVENTCTL=$BIN/eventctl/eventctl
MARK=$DIR/mark/kmes-audit-mark  # the distinct executable of part 3
mkdir -p "$DIR/mark" "$DIR/etc"
cp /bin/true "$MARK"
chmod 0755 "$DIR/mark" "$MARK"
echo "-a always,exit -F arch=b64 -S execve -k $EXEC_KEY" > "$DIR/etc/execs.rules"
echo "-a always,exit -F arch=b64 -S uname -F exe=$LOAD -k $EXEC_KEY" > "$DIR/etc/uname.rules"
KAUDITD=$(pgrep -x kauditd | head -n1 || true)

# --- helpers ---------------------------------------------------------------------------------------
# utime+stime (clock ticks) of the processes given, all their threads (0 for a missing one).
ticks() {
  local total=0 p s f
  for p in "$@"; do
    s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    s=${s##*) }
    read -ra f <<< "$s"
    total=$((total + f[11] + f[12]))
  done
  echo "$total"
}
thread_ticks() {  # pid → "tid<TAB>name<TAB>ticks" per thread
  local t s comm f
  for t in /proc/"$1"/task/*; do
    s=$(cat "$t/stat" 2>/dev/null) || continue
    comm=${s#*(}
    comm=${comm%)*}
    s=${s##*) }
    read -ra f <<< "$s"
    [[ ${t##*/} == "$1" ]] && comm+=" (main thread)"
    printf '%s\t%s\t%s\n' "${t##*/}" "$comm" $((f[11] + f[12]))
  done
}
# daemons… → their CPU, the first one's, kauditd's (ticks), the kernel's lost, the machine's busy
# and all jiffies (/proc/stat: user nice system irq softirq steal; + idle iowait).
sample() {
  echo "$(ticks "$@") $(ticks "$1") $(ticks $KAUDITD) $(audit_status lost)" \
    "$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)"
}
wait_daemon_free() {
  local holder i
  for i in $(seq 900); do
    holder=$(audit_status pid)
    [[ $holder == 0 ]] && return 0
    ((i == 1)) && echo "audit_bench: pid $holder is the audit daemon (the kmes-audit tests?); waiting for it to go" >&2
    sleep 1
  done
  echo "audit_bench: the audit daemon role is still taken after 15 minutes" >&2
  exit 1
}
wait_for() {  # a condition (a command), what it is, seconds; on failure the logs
  local i
  for i in $(seq $(($3 * 20))); do eval "$1" && return 0; sleep 0.05; done
  echo "audit_bench: $2 did not happen within $3 s" >&2
  tail -n 20 "$DIR"/*/log/*.log "$DIR"/*/auditd/auditd.out 2>/dev/null >&2 || true
  exit 1
}
ctl() { "$EVENTCTL" --socket "$SEG/run/query.sock" -o jsonl "$@"; }
count() { ctl "$1 COUNT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'; }

# kmes-shimd (the Audit object given) + eventd (more keys given, optional) on a fresh store in $SEG.
start_kmes() {
  mkdir -p "$SEG"/{run,log}
  python3 - "$SEG" "$1" "${2:-{\}}" <<'PY'
import json, sys
d, audit, more = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
json.dump({"SocketPath": f"{d}/run/kmes.sock", "BufferCapacity": 134217728, "Audit": audit},
          open(f"{d}/kmes.json", "w"), indent=1)
json.dump({"EventStorePath": f"{d}/store", "QuerySocketPath": f"{d}/run/query.sock",
           "KmesSocketPath": f"{d}/run/kmes.sock", "EventRetentionDays": 3650, "QueryTimeoutMs": 300000, **more},
          open(f"{d}/eventd.json", "w"), indent=1)
PY
  "$BIN/kmes-shim/kmes-shimd" --config "$SEG/kmes.json" > "$SEG/log/shim.log" 2>&1 &
  pid[shim]=$!
  shim_pids+=("${pid[shim]}")
  wait_for "grep -Eq 'audit: (daemon|multicast) mode|audit source not started' $SEG/log/shim.log" \
    "kmes-shimd's audit source" 10
  if grep -q "audit source not started" "$SEG/log/shim.log"; then
    echo "audit_bench: kmes-shimd: $(grep "audit source not started" "$SEG/log/shim.log")" >&2
    exit 1
  fi
  "$BIN/eventd/eventd" --config "$SEG/eventd.json" > "$SEG/log/eventd.log" 2>&1 &
  pid[eventd]=$!
  wait_for "test -S $SEG/run/query.sock" "eventd's query socket" 20
}
stop_kmes() { stop eventd; stop shim; }

# auditd -n on $SEG/auditd with the log format given, as the audit daemon.
start_auditd() {
  local d=$SEG/auditd
  mkdir -p "$d/plugins" "$SEG/log"
  cat > "$d/auditd.conf" <<EOF
local_events = yes
write_logs = yes
log_file = $d/audit.log
log_group = root
log_format = $1
flush = INCREMENTAL_ASYNC
freq = 50
max_log_file = 100000
max_log_file_action = IGNORE
space_left = 2
space_left_action = IGNORE
admin_space_left = 1
admin_space_left_action = IGNORE
disk_full_action = IGNORE
disk_error_action = IGNORE
plugin_dir = $d/plugins
q_depth = 2000
overflow_action = IGNORE
end_of_event_timeout = 2
EOF
  chmod 0640 "$d/auditd.conf"  # auditd refuses a configuration others may write
  /usr/sbin/auditd -n -c "$d" > "$d/auditd.out" 2>&1 &
  pid[auditd]=$!
  wait_for "test \"\$(audit_status pid)\" = ${pid[auditd]}" "auditd's registration" 10
}
stop_auditd() { delete_our_rules; stop auditd; }

# --- part 1 and 2: one segment = one configuration at one rate --------------------------------------
SEGS=$DIR/segments.tsv THREADS=$DIR/threads.tsv
: > "$SEGS"
seg_no=0
run_segment() {  # config load (execs | uname) rate round
  local cfg=$1 load=$2 rate=$3 round=$4 marker daemons t0 t1 c0 c1 k0 k1 l0 l1 a0 a1 b0 b1 out handled found lost_kmes=0
  local batches="0 0" s0=0 s1=0
  seg_no=$((seg_no + 1))
  SEG=$DIR/seg$seg_no
  marker="kb$$-$seg_no"
  wait_daemon_free
  case $cfg in
    kmes | kmes-gc)
          local more='{}'
          [[ $cfg == kmes-gc ]] && more="{\"CommitDelayMs\": $GROUP_COMMIT_MS}"
          start_kmes "$(python3 -c 'import json, sys
print(json.dumps({**json.loads(sys.argv[1]), "Mode": "daemon", "RulesFile": sys.argv[2]}))' "$KMES_AUDIT" "$DIR/etc/$load.rules")" "$more"
          daemons="${pid[shim]} ${pid[eventd]}" ;;
    raw | enriched)
      start_auditd "$([[ $cfg == raw ]] && echo RAW || echo ENRICHED)"
      auditctl -b 8192 > /dev/null
      auditctl --backlog_wait_time 0 > /dev/null
      auditctl $(cat "$DIR/etc/$load.rules") > /dev/null  # the rule's words: unquoted
      daemons=${pid[auditd]} ;;
  esac
  sleep 1  # the start's own work is not measured
  local highest=""  # the highest exec rate: threads (kmes) and, with PERF, a profile
  [[ $load == execs && $rate == 0 ]] && highest=1
  # shellcheck disable=SC2086
  read -r c0 s0 k0 l0 b0 a0 < <(sample $daemons)
  t0=$(date +%s.%N)
  [[ $cfg == kmes* && -n $highest ]] && { thread_ticks "${pid[shim]}"; thread_ticks "${pid[eventd]}"; } > "$SEG.threads0"
  local perf_pid=""
  local profile="${PERF:-}/$cfg-$load-$rate-round$round"
  if [[ -n ${PERF:-} && $load == execs ]]; then
    mkdir -p "$PERF"
    perf record -q -F 499 --call-graph dwarf,16384 -p "${daemons// /,}" -o "$profile.data" > /dev/null 2>&1 &
    perf_pid=$!
  fi
  if [[ $load == execs ]]; then
    out=$("$LOAD" execs --rate "$rate" --seconds "$SEG_S" --arg "$marker")
  else
    out=$("$LOAD" syscalls --rate "$rate" --count $((rate * SEG_S)))
  fi
  settle $daemons  # what the daemons still do for the last events
  if [[ -n $perf_pid ]]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    perf report -i "$profile.data" --no-children --sort comm,dso,symbol --percent-limit 0.5 \
      --stdio 2> /dev/null > "$profile.txt" || true
  fi
  # shellcheck disable=SC2086
  read -r c1 s1 k1 l1 b1 a1 < <(sample $daemons)
  t1=$(date +%s.%N)
  if [[ $cfg == kmes* && -n $highest ]]; then
    { thread_ticks "${pid[shim]}" | sed 's/^/kmes-shimd\t/'; thread_ticks "${pid[eventd]}" | sed 's/^/eventd\t/'; } |
      awk -v r="$round" -v s="$seg_no" 'BEGIN { FS = OFS = "\t" } { print s, r, $0 }' > "$SEG.threads1"
    join_threads "$SEG.threads0" "$SEG.threads1" >> "$THREADS"
  fi
  local execs last=-1
  execs=$(python3 -c 'import json,sys; d = json.loads(sys.argv[1]); print(d.get("execs", d.get("calls")))' "$out")
  if [[ $cfg == kmes* ]]; then
    # eventd's commits (all shards) and the rows they held: the batch size its writers chose.
    batches=$(ctl STATUS | python3 -c 'import json,sys
s = [r for r in map(json.loads, sys.stdin) if r.get("kind") == "shard"]
print(sum(r.get("batches") or 0 for r in s), sum(r.get("rows_written") or 0 for r in s))')
    # Stored: this segment's events (execs by their marker), all events of the rule, audit.lost
    # records. Asked again while the number grows (eventd may still be committing).
    local found_query="EVENTS audit.syscall WHERE key == \"$EXEC_KEY\""
    [[ $load == execs ]] && found_query="EVENTS audit.syscall WHERE proctitle == \"/bin/true $marker\""
    for _ in $(seq 50); do
      found=$(count "$found_query")
      ((found >= execs || found == last)) && break
      last=$found
      sleep 0.5
    done
    handled=$(count "EVENTS audit.syscall WHERE key == \"$EXEC_KEY\"")
    lost_kmes=$(ctl "EVENTS audit.lost SELECT records" |
      python3 -c 'import json,sys; print(sum(json.loads(l).get("records", 0) for l in sys.stdin))')
    stop_kmes
  else
    stop_auditd
    local log=$SEG/auditd/audit.log
    handled=$(grep -c "^type=SYSCALL .* key=\"$EXEC_KEY\"" "$log" || true)
    found=$handled
    [[ $load == execs ]] && found=$(grep -c "^type=EXECVE .* a1=\"$marker\"" "$log" || true)
  fi
  printf '%s\t' "$seg_no" "$round" "$cfg" "$load:$rate" "$out" "$execs" "$found" "$handled" $((c1 - c0)) $((k1 - k0)) \
    $((l1 - l0)) "$lost_kmes" $((b1 - b0)) $((a1 - a0)) "$batches" $((s1 - s0)) >> "$SEGS"
  python3 -c "print(f'{$t1 - $t0:.3f}')" >> "$SEGS"
  echo "audit_bench: segment $seg_no: $cfg, $load at ${rate}/s (round $round): $out; found $found, handled $handled," \
    "CPU $(((c1 - c0) * 1000 / TICK)) ms, kernel lost $((l1 - l0)), audit.lost $lost_kmes" >&2
  [[ -n ${KEEP:-} ]] || rm -rf "$SEG"
}
settle() {  # pids → waits until they are idle (≤ 1 tick in 0.5 s), at most 15 s
  local before after
  sleep 1
  for _ in $(seq 30); do
    before=$(ticks "$@")
    sleep 0.5
    after=$(ticks "$@")
    ((after - before <= 1)) && return 0
  done
}
join_threads() {  # start snapshot, end snapshot → per thread: seg round daemon tid name ticks-delta
  awk 'BEGIN { FS = OFS = "\t" } NR == FNR { start[$1] = $3; next } { print $1, $2, $3, $4, $5, $6 - start[$4] }' "$1" "$2"
}

# --- header ------------------------------------------------------------------------------------------
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "## Kernel audit: kmes-shimd + eventd vs auditd 3.0.9 ($(date -u '+%F %H:%M UTC'))"
echo
echo "- $(nproc) × ${model:-CPU}, kernel $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- commit $(commit_line), binaries $SRC/ (eventd linked $(date -u -r "$BIN/eventd/eventd" '+%F %H:%M UTC')); $(dpkg-query -W -f='auditd ${Version}' auditd 2>/dev/null)"
echo "- kernel audit state at start: enabled $orig_enabled, backlog_limit $orig_backlog, backlog_wait_time $orig_wait, $(echo "$orig_rules" | grep -c '^-' || true) rule(s); restored at exit"
echo "- stores and logs under ${BENCH_STORE_DIR:-/var/tmp} ($(df -T "$DIR" | awk 'NR == 2 {print $2}')); kauditd pid ${KAUDITD:-not found}"
echo

# --- part 1 and 2 ----------------------------------------------------------------------------------
if [[ " $PARTS " == *" cpu "* ]]; then
read -r -a configs <<< "$CONFIGS"
n=${#configs[@]}
for round in $(seq "$ROUNDS"); do
  for rate in $RATES; do
    for i in $(seq 0 $((n - 1))); do  # each round in another order: no configuration always runs first
      run_segment "${configs[(i + round - 1) % n]}" execs "$rate" "$round"
    done
  done
done
for rate in $EVENT_RATES; do  # one round: where does each lose?
  for i in $(seq 0 $((n - 1))); do run_segment "${configs[i]}" uname "$rate" 1; done
done
python3 - "$SEGS" "$THREADS" "$TICK" "$SEG_S" "$ROUNDS" "$CONFIGS" "$GROUP_COMMIT_MS" <<'PY'
import json, statistics, sys
segs_path, threads_path, tick, seg_s, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
all_names = {"kmes": "kmes-shimd + eventd", "kmes-gc": f"kmes-shimd + eventd, CommitDelayMs {sys.argv[7]}",
             "raw": "auditd RAW", "enriched": "auditd ENRICHED"}
names = {cfg: all_names[cfg] for cfg in sys.argv[6].split()}
segs = []
for line in open(segs_path):
    f = line.rstrip("\n").split("\t")
    out = json.loads(f[4])
    load, rate = f[3].split(":")
    segs.append(dict(seg=int(f[0]), round=int(f[1]), cfg=f[2], load=load, rate=int(rate), achieved=out["rate"],
                     busy_s=out["seconds"], execs=int(f[5]), found=int(f[6]), handled=int(f[7]), cpu=int(f[8]) / tick,
                     kauditd=int(f[9]) / tick, lost=int(f[10]), lost_kmes=int(f[11]),
                     busy=int(f[12]) / max(1, int(f[13])), commits=int(f[14].split()[0]),
                     rows=int(f[14].split()[1]), first=int(f[15]) / tick, wall=float(f[16])))
med = statistics.median
label = lambda r: "highest" if r == 0 else f"{r:,}/s"
per_event = lambda s: s["cpu"] / max(1, s["handled"]) * 1e6
clean = lambda s: s["found"] == s["execs"] and s["lost"] == 0 and s["lost_kmes"] == 0

def ratio_to_raw(s):
    raw = [r for r in segs if (r["load"], r["rate"], r["round"], r["cfg"]) == (s["load"], s["rate"], s["round"], "raw")]
    return per_event(s) / per_event(raw[0]) if raw and per_event(raw[0]) > 0 else None

def cpu_table(load, what):
    rates = list(dict.fromkeys(s["rate"] for s in segs if s["load"] == load))
    print(f"| target {what} rate | daemon(s) | achieved {what}s/s | audit events handled | daemon CPU, % of one CPU | "
          "CPU µs per event | vs auditd RAW, same round | kauditd µs per event | machine busy | eventd rows per commit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rate in rates:
        for cfg in names:
            mine = [s for s in segs if (s["load"], s["rate"], s["cfg"]) == (load, rate, cfg)]
            if not mine: continue
            ratios = [r for r in map(ratio_to_raw, mine) if r is not None]
            ratio = (f"{med(ratios):.2f}×" + (f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else "")) if ratios else "—"
            split = (f" ({med(s['first'] / max(1, s['handled']) * 1e6 for s in mine):.0f} + "
                     f"{med((s['cpu'] - s['first']) / max(1, s['handled']) * 1e6 for s in mine):.0f})") if cfg.startswith("kmes") else ""
            rows = f"{med(s['rows'] / max(1, s['commits']) for s in mine):.1f}" if cfg.startswith("kmes") else "—"
            print(f"| {label(rate)} | {names[cfg]} | {med(s['achieved'] for s in mine):,.0f} | {med(s['handled'] for s in mine):,.0f} | "
                  f"{med(100 * s['cpu'] / s['busy_s'] for s in mine):.1f} % | {med(per_event(s) for s in mine):.0f}{split} | {ratio} | "
                  f"{med(s['kauditd'] / max(1, s['handled']) * 1e6 for s in mine):.1f} | {med(100 * s['busy'] for s in mine):.0f} % | {rows} |")

def loss_table(load, what):
    rates = list(dict.fromkeys(s["rate"] for s in segs if s["load"] == load))
    print(f"| target {what} rate | daemon(s) | round | achieved {what}s/s | {what}s run | found (stored / in the log) | kernel lost | audit.lost records | missing, no lost record covers them |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rate in rates:
        for cfg in names:
            for s in [s for s in segs if (s["load"], s["rate"], s["cfg"]) == (load, rate, cfg)]:
                lost_kmes = f"{s['lost_kmes']:,}" if cfg.startswith("kmes") else "—"
                # Each lost event took at least one lost record with it: what no count covers vanished.
                silent = max(0, s["execs"] - s["found"] - (s["lost_kmes"] if cfg.startswith("kmes") else s["lost"]))
                print(f"| {label(rate)} | {names[cfg]} | {s['round']} | {s['achieved']:,.0f} | {s['execs']:,} | {s['found']:,} | "
                      f"{s['lost']:,} | {lost_kmes} | {f'**{silent:,}**' if silent else 0} |")

def zero_loss(load):
    rates = sorted(dict.fromkeys(s["rate"] for s in segs if s["load"] == load), key=lambda r: (r == 0, r))
    result = {}
    for cfg in names:
        best, first_loss = None, None
        for rate in rates:
            mine = [s for s in segs if (s["load"], s["rate"], s["cfg"]) == (load, rate, cfg)]
            if not mine or first_loss: continue
            if all(map(clean, mine)):
                best = min(s["achieved"] for s in mine)
            else:
                first_loss = f"{label(rate)} (achieved {min(s['achieved'] for s in mine):,.0f}/s)"
        result[cfg] = (f"{best:,.0f}/s" if best else "none", first_loss or "none up to the highest rate")
    return result if rates else {cfg: ("—", "—") for cfg in names}

print(f"### CPU per audit event: execs of /bin/true ({rounds} round(s) of {seg_s} s segments, configurations alternating; medians)\n")
cpu_table("execs", "exec")
print("\nCPU: utime+stime of the daemons' processes (kmes-shimd + eventd, in brackets each; auditd with its threads) from 1 s "
      "after their start until they are idle again after the last exec; per event: divided by the audit events of the rule they handled "
      "(every exec on the machine, not only the generator's); % of one CPU: divided by the seconds of load. "
      "Machine busy: all CPUs over the segment, from /proc/stat. Rows per commit: eventd's batches (all shards).\n")
print("### Loss at each exec rate (every segment)\n")
loss_table("execs", "exec")
if any(s["load"] == "uname" for s in segs):
    print(f"\n### Beyond what execs can reach: uname(2) events (one round of {seg_s} s each; the rule `-S uname -F exe=` the generator)\n")
    cpu_table("uname", "event")
    print()
    loss_table("uname", "event")
execs, events = zero_loss("execs"), zero_loss("uname")
print("\n| daemon(s) | highest exec rate with zero loss (achieved, every round) | first exec loss | highest uname(2) event rate with zero loss | first event loss |")
print("|---|---|---|---|---|")
for cfg in names:
    print(f"| {names[cfg]} | {execs[cfg][0]} | {execs[cfg][1]} | {events[cfg][0]} | {events[cfg][1]} |")

threads = {}
try:
    for line in open(threads_path):
        seg, rnd, daemon, tid, name, dt = line.rstrip("\n").split("\t")
        threads.setdefault(int(seg), []).append((daemon, name, int(dt) / tick))
except FileNotFoundError:
    pass
if threads:
    last = max(threads)
    s = next(x for x in segs if x["seg"] == last)
    total = sum(t[2] for t in threads[last]) or 1
    print(f"\n### {names[s['cfg']]} per thread, highest exec rate, round {s['round']} ({s['handled']:,} events)\n")
    print("| process | thread | CPU s | share | µs per event |")
    print("|---|---|---|---|---|")
    for daemon, name, cpu in sorted(threads[last], key=lambda t: -t[2]):
        if cpu > 0:
            print(f"| {daemon} | {name} | {cpu:.2f} | {100 * cpu / total:.0f} % | {cpu / max(1, s['handled']) * 1e6:.1f} |")
print()
PY
fi

# --- part 3: ausearch vs eventctl on the same events -----------------------------------------------------
[[ " $PARTS " == *" search "* ]] || exit 0
wait_daemon_free
SEG=$DIR/capture
start_auditd RAW
auditctl -b 65536 > /dev/null
auditctl --backlog_wait_time 60000 > /dev/null  # the calls wait for auditd instead of being lost
start_kmes '{"Mode": "multicast", "ReceiveBufferBytes": 268435456}'
auditctl -a always,exit -F arch=b64 -S uname -F exe="$LOAD" -k "$BULK_KEY" > /dev/null
auditctl -a always,exit -F arch=b64 -S execve -F exe="$MARK" -k "$MARK_KEY" > /dev/null
LOG=$SEG/auditd/audit.log
every=$((EVENTS / 300)) n1=$((EVENTS * 49 / 100)) n2=$((EVENTS / 50))
n3=$((EVENTS - n1 - n2))
nobody_mark=(setpriv --reuid=65534 --regid=65534 --clear-groups "$MARK" mark)
rows_written() {  # rows eventd committed since it started, all shards (STATUS: cheap, unlike a COUNT)
  ctl STATUS | python3 -c 'import json,sys; print(sum(r.get("rows_written") or 0 for r in map(json.loads, sys.stdin) if r.get("kind") == "shard"))'
}
stored_until() {  # n → waits until eventd has committed n rows (at most 10 minutes)
  for _ in $(seq 1200); do [[ $(rows_written) -ge $1 ]] && return 0; sleep 0.5; done
  echo "audit_bench: eventd did not commit $1 rows within 10 minutes" >&2
  exit 1
}
now() { date +%s.%N; }
sleep_until() { python3 -c "import time; time.sleep(max(0, $1 - time.time()))"; }
cpu_capture0=$(ticks "${pid[auditd]}") cpu_kmes0=$(ticks "${pid[shim]}" "${pid[eventd]}") lost0=$(audit_status lost)
t_start=$(now)
out1=$("$LOAD" syscalls --count "$n1" --rate "$BULK_RATE" --spawn-every "$every" -- "${nobody_mark[@]}")
# The time window: whole seconds, from 1 s after part 1 ended to 1 s after part 2 ended; the next
# part starts 0.5 s past a boundary, once eventd holds what came before (the shim's write time,
# which EVENTS SINCE/UNTIL compare, is then on the same side of the boundary as the kernel's).
win_start=$(python3 -c "import math,time; print(math.ceil(time.time()) + 1)")
stored_until "$n1"
sleep_until "$win_start.5"
out2=$("$LOAD" syscalls --count "$n2" --rate "$BULK_RATE" --spawn-every "$every" -- "$MARK" mark)
win_end=$(python3 -c "import math,time; print(math.ceil(time.time()) + 1)")  # exclusive
stored_until $((n1 + n2))
sleep_until "$win_end.5"
out3=$("$LOAD" syscalls --count "$n3" --rate "$BULK_RATE" --spawn-every "$every" -- "${nobody_mark[@]}")
t_gen=$(python3 -c "print(f'{$(now) - $t_start:.1f}')")
stored_until "$EVENTS"
sleep 3  # the last marks, eventd's last commit, auditd's last flush
cpu_capture1=$(ticks "${pid[auditd]}") cpu_kmes1=$(ticks "${pid[shim]}" "${pid[eventd]}") lost1=$(audit_status lost)
t_capture=$(python3 -c "print(f'{$(now) - $t_start:.1f}')")
# auditd and the rules stay until the end: removing a rule is a CONFIG_CHANGE event with its key,
# which only one of the two might see. Nothing else is audited meanwhile.
marks=$(python3 -c 'import json,sys; print(sum(json.loads(a)["spawned"] for a in sys.argv[1:]))' "$out1" "$out2" "$out3")
marks_root=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["spawned"])' "$out2")

python3 - "$EVENTCTL" "$SEG/run/query.sock" "$LOG" "$RUNS" "$EVENTS" "$marks" "$marks_root" "$win_start" "$win_end" \
  "$MARK" "$BULK_KEY" "$MARK_KEY" "$BULK_RATE" "$t_gen" "$t_capture" "$((lost1 - lost0))" \
  "$(((cpu_capture1 - cpu_capture0) * 1000 / TICK))" "$(((cpu_kmes1 - cpu_kmes0) * 1000 / TICK))" "$SEG/store" "$n2" <<'PY'
import json, os, statistics, subprocess, sys, time
(eventctl, sock, log, runs, events, marks, marks_root, win_start, win_end, mark, bulk_key, mark_key, bulk_rate,
 t_gen, t_capture, kernel_lost, cpu_auditd_ms, cpu_kmes_ms, store, n2) = sys.argv[1:]
runs, events, marks, marks_root, win_start, win_end, n2 = map(int, (runs, events, marks, marks_root, win_start, win_end, n2))
env = dict(os.environ, LC_ALL="C", TZ="UTC")  # ausearch reads -ts/-te in the locale's %x and local time

def ctl(query):
    r = subprocess.run([eventctl, "--socket", sock, "-o", "jsonl", query], capture_output=True, text=True)
    if r.returncode != 0: sys.exit(f"audit_bench: eventctl {query}: {r.stderr.strip()}")
    return [json.loads(l) for l in r.stdout.splitlines()]
def grep_count(pattern):
    return int(subprocess.run(["grep", "-c", pattern, log], capture_output=True, text=True).stdout or 0)

# Both captures hold everything, or nothing below means anything.
stored_bulk = ctl(f'EVENTS audit.syscall WHERE key == "{bulk_key}" COUNT')[0]["count"]
stored_marks = ctl(f'EVENTS audit.syscall WHERE key == "{mark_key}" COUNT')[0]["count"]
lost = sum(e.get("records", 0) for e in ctl("EVENTS audit.lost SELECT records"))
log_bulk = grep_count(f'^type=SYSCALL .* key="{bulk_key}"')
log_marks = grep_count(f'^type=SYSCALL .* key="{mark_key}"')
store_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(store) for f in fs) / 1e6
print(f"### ausearch vs eventctl: the same {events:,} audit events\n")
print(f"| capture | uname(2) calls (key {bulk_key}) | execs (key {mark_key}) | lost | size on disk | CPU during the capture |")
print("|---|---|---|---|---|---|")
print(f"| generated ({bulk_rate}/s asked; {t_gen} s with the two gaps) | {events:,} | {marks} ({marks - marks_root} by uid 65534, "
      f"{marks_root} by root) | kernel: {kernel_lost} | — | — |")
print(f"| auditd -n, log RAW (the audit daemon) | {log_bulk:,} | {log_marks} | — | {os.path.getsize(log) / 1e6:,.0f} MB | "
      f"{int(cpu_auditd_ms) / 1000:.1f} s |")
print(f"| kmes-shimd (multicast) + eventd | {stored_bulk:,} | {stored_marks} | audit.lost: {lost} | {store_mb:,.0f} MB | "
      f"{int(cpu_kmes_ms) / 1000:.1f} s |")
print(f"\nCPU over the {t_capture} s from the first call until eventd held every event (+3 s).\n", flush=True)
if (stored_bulk, stored_marks, log_bulk, log_marks) != (events, marks, events, marks):
    sys.exit("audit_bench: the two captures do not both hold every event (see the table): no comparison")

fmt = lambda t: time.strftime("%m/%d/%y %H:%M:%S", time.gmtime(t))
# (name, ausearch arguments, EVENTS query, the events generated for it). The key also matches
# the CONFIG_CHANGE event that added its rule.
queries = [
    ("a key", ["-k", mark_key], f'EVENTS audit.* WHERE key == "{mark_key}"', marks + 1),
    ("a uid", ["-ua", "65534"], "EVENTS audit.* WHERE uid == 65534 OR euid == 65534 OR auid == 65534", marks - marks_root),
    (f"a time window ({win_end - win_start} s)", ["-ts", *fmt(win_start).split(), "-te", *fmt(win_end - 1).split()],
     f"EVENTS audit.* SINCE {win_start * 10**9} UNTIL {win_end * 10**9 - 1}", n2 + marks_root),
    ("an executable", ["-x", mark], f'EVENTS audit.* WHERE exe == "{mark}"', marks),
]

def timed(argv, counter, env=None):
    t0 = time.perf_counter_ns()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate()
    ms = (time.perf_counter_ns() - t0) / 1e6
    if p.returncode not in (0, 1) or (p.returncode == 1 and "no matches" not in err):
        sys.exit(f"audit_bench: {' '.join(argv)} exited {p.returncode}: {err.strip()}")
    return ms, counter(out)
ausearch = lambda a: timed(["ausearch", "-if", log, *a], lambda o: sum(1 for l in o.splitlines() if l == "----"), env)
events_q = lambda q: timed([eventctl, "--socket", sock, "-o", "jsonl", q], lambda o: len(o.splitlines()))

# ausearch reads the whole log each time (minutes for a million events) and eventd's indexes
# change nothing for it: it runs once per query, amid eventctl's runs before the indexes.
# eventctl runs `runs` times per phase after one untimed run.
times, counts = {}, {}
def phase(name, with_ausearch):
    for qname, aargs, query, _ in queries:
        events_q(query)  # warm-up
        for r in range(runs):
            sides = [("eventctl", lambda: events_q(query))]
            if with_ausearch and r == runs // 2: sides.insert(0, ("ausearch", lambda: ausearch(aargs)))
            for side, run in sides:
                ms, n = run()
                times.setdefault((name, side, qname), []).append(ms)
                counts.setdefault((side, qname), set()).add(n)
        print(f"audit_bench: {name} the indexes: {qname}: eventctl {statistics.median(times[(name, 'eventctl', qname)]):,.0f} ms"
              + (f", ausearch {times[(name, 'ausearch', qname)][0]:,.0f} ms" if with_ausearch else ""), file=sys.stderr)
phase("before", True)
# Administrator-asked indexes on the queried payload fields (the adaptive policy adds a field
# after AdaptiveIndexCreateThreshold queries, at its next run: hourly at the shortest), built by
# eventd's writers when they are idle.
fields = ["key", "uid", "euid", "auid", "exe"]
for f in fields: ctl(f"EVENTS INDEX {f}")
t0 = time.time()
while True:
    shards = [r for r in ctl("STATUS") if r.get("kind") == "shard_indexes"]
    if shards and all(all(f"idx_events_payload_{f}" in str(r.get("indexes", "")) for f in fields) for r in shards): break
    if time.time() - t0 > 900: sys.exit("audit_bench: the indexes were not built within 15 minutes")
    time.sleep(0.5)
built = time.time() - t0
phase("after", False)

med = statistics.median
print("| query | ausearch -if LOG … | EVENTS … | events | ausearch ms | eventctl ms, no index | × faster | eventctl ms, index | × faster |")
print("|---|---|---|---|---|---|---|---|---|")
wrong, unexpected = [], []
for name, aargs, query, expected in queries:
    a = times[("before", "ausearch", name)]
    e0, e1 = times[("before", "eventctl", name)], times[("after", "eventctl", name)]
    got = counts[("ausearch", name)] | counts[("eventctl", name)]
    if len(got) != 1:
        wrong.append(f"{name}: ausearch {sorted(counts[('ausearch', name)])}, eventctl {sorted(counts[('eventctl', name)])}")
    elif got != {expected}:
        unexpected.append(f"{name}: {next(iter(got))} instead of {expected}")
    shown = " ".join(aargs).replace(mark, "MARK")
    print(f"| {name} | `{shown}` | `{query.replace(mark, 'MARK')}` | {'/'.join(map(str, sorted(got)))} | {med(a):,.0f} | "
          f"{med(e0):,.0f} | {med(a) / med(e0):,.0f}× | {med(e1):,.0f} | {med(a) / med(e1):,.0f}× |")
print(f"\nausearch: one run per query (its time does not depend on eventd's indexes); eventctl: median of {runs} runs "
      f"per phase after a warm-up. Wall time from spawn to exit with all output read. MARK = {mark}. "
      f"EVENTS INDEX {', '.join(fields)}: built in every shard {built:.0f} s after asking.")
# ausearch's cost per event grows with the log's event rate: auditd does not log EOE, so an event
# led by a SYSCALL record stays open until a record 3 s newer arrives, and every record is
# compared with every open event (ausearch-lol.c). The same first 100,000 events, as logged and
# with their timestamps re-spaced to fewer events a second, show how much.
excerpt, spread, excerpt_n = os.path.join(os.path.dirname(log), "excerpt"), [], min(100000, events)
with open(log) as f, open(excerpt + ".log", "w") as out:
    serials = set()
    for line in f:
        at = line.find("msg=audit(")
        if at >= 0:
            serials.add(line[at + 10:line.index(")", at)].split(":")[1])
            if len(serials) > excerpt_n: break
        out.write(line)
for rate in (1000, 100):
    seen, base = {}, win_start
    with open(excerpt + ".log") as f, open(f"{excerpt}-{rate}.log", "w") as out:
        for line in f:
            at = line.find("msg=audit(")
            if at >= 0:
                end = line.index(")", at)
                serial = line[at + 10:end].split(":")[1]
                t = seen.setdefault(serial, base + len(seen) / rate)
                line = f"{line[:at]}msg=audit({int(t)}.{int(t * 1000) % 1000:03d}:{serial}{line[end:]}"
            out.write(line)
    spread.append((f"the same, re-spaced to {rate} events/s", f"{excerpt}-{rate}.log"))
print(f"\nausearch -k {mark_key} and the log's event rate (the first {excerpt_n:,} events of the log above):\n")
print("| log | ausearch s | µs per event |")
print("|---|---|---|")
for what, path in [(f"as logged ({bulk_rate}/s asked)", excerpt + ".log")] + spread:
    t0 = time.perf_counter()
    subprocess.run(["ausearch", "-if", path, "-k", mark_key], capture_output=True, env=env)
    took = time.perf_counter() - t0
    print(f"| {what} | {took:.1f} | {took * 1e6 / excerpt_n:.0f} |")
if unexpected:
    print("\nBoth tools agree, on another number than generated (other audit events of the machine matched): "
          + "; ".join(unexpected) + ".")
if wrong:
    print("\n**COUNTS DIFFER** — " + "; ".join(wrong))
    sys.exit("audit_bench: ausearch and eventctl disagree on the number of events (see above)")
PY
