#!/usr/bin/env bash
# Tamper evidence (issue 28; docs/PERFORMANCE.md §16), measured on real daemons. Three parts,
# each printing a Markdown table:
#   1. ingest: eventd draining the same backlog into a fresh store, four variants alternating
#      round by round (the order rotates every round), each ratio against the round's own
#      "without" run:
#        without         eventd of BASE_COMMIT (820776b, the parent of the chain's commit: no
#                        chain), built once from `git archive` with build-bench's options and
#                        cached under CACHE;
#        chain           eventd of BUILD_DIR, no sealing key: every row hashed into the chain;
#        sealed, 60 s    the same with a sealing key (the default CheckpointIntervalSeconds);
#        sealed, 1 s     CheckpointIntervalSeconds 1, the worst case.
#      Per run: a fresh kmes-shimd (128 MiB rings), N events emitted with eventd stopped
#      (`taskset -c 0 kmes-emit --batch 256`: one ring, one shard), then eventd (StorageShards 1)
#      on a fresh store; a reader polls the shard's max(id) every 10 ms (read-only SQLite, the
#      writer is never blocked) until all N events are stored. Rate = the 10 %→90 % stretch
#      (docs/PERFORMANCE.md §5's method), and N / (last row − spawn) with eventd's start;
#      eventd's CPU time per event (/proc: user + system) at the end, and its busiest thread's
#      (the shard's writer, which bounds the drain): CPU ratios hold on a shared machine where
#      the wall-clock rates scatter;
#   2. the chain per row in process (kmes-bench-chain), 100 and 300 B payloads: the drain's
#      row digest, the writer's share (a segment's running SHA-256 and a tag), the verifier's
#      step, against the earlier designs' writer: v2's per-row link and v1's one BLAKE2b over
#      the whole row; run with and without sodium_init() (libsodium picks its BLAKE2b
#      implementation there);
#   3. verify: a sealed store of VROWS events made by eventd (CheckpointIntervalSeconds 1,
#      emitted in chunks while it runs), stopped; then `eventctl verify` against `journalctl
#      --verify` on journal files of the same number of entries, written by
#      systemd-journal-remote from export-format input: one set sealed with FSS (journalctl
#      --setup-keys inside a private mount namespace whose /var/log/journal is a tmpfs: the
#      machine's journal and its keys are never touched), one set unsealed. Rounds alternate
#      the three (rotating order) after one untimed warm-up round; wall time and the child's
#      CPU time (wait4 rusage). The journals are cached under CACHE (writing them takes
#      minutes: journal-remote makes about ten syscalls per entry), reused while VROWS holds.
#
#   bench/seal.sh [--quick|--help] --quick: N 100000, 3 rounds, VROWS 200000, 2 timed runs
#   BUILD_DIR=build-bench          the "with" binaries (./scripts/bench seal builds them; copied at start)
#   WITH_COMMIT=REV                instead: build REV the same way as the base (cached), with the
#                                  working tree's bench/ over it (for the micro benchmark)
#   BASE_COMMIT=820776b            the "without" commit
#   BENCH_STORE_DIR=/var/tmp       stores (a real disk)
#   CACHE=/var/tmp/eventd-seal-bench   the base build, the journals (about 1.5 GB for 2 M entries)
#   N=…, ROUNDS=…, VROWS=…, VRUNS=…    override the sizes (defaults 400000, 6, 2000000, 3)
#   PARTS="ingest chain verify"    the parts to run
#   PROFILE=1                      also `perf record` one more drain of without and of sealed (1 s), and one more
#                                  eventctl verify (neither in the tables) and print where the
#                                  time goes
#   KEEP=1                         keep the temporary directory (logs, stores)
#
# Run as root (emission without the per-process rate limit; unshare for the journal's keys).
# Needs systemd-journal-remote (scripts/setup installs it) for part 3's journal side.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
QUICK=
case ${1:-} in
  --quick) QUICK=1 ;;
  -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") ;;
  *) echo "seal: unknown argument '$1' (--quick, --help or nothing)" >&2; exit 2 ;;
esac
N=${N:-$([[ -n $QUICK ]] && echo 100000 || echo 400000)}
ROUNDS=${ROUNDS:-$([[ -n $QUICK ]] && echo 3 || echo 6)}
VROWS=${VROWS:-$([[ -n $QUICK ]] && echo 200000 || echo 2000000)}
VRUNS=${VRUNS:-$([[ -n $QUICK ]] && echo 2 || echo 3)}
PARTS=${PARTS:-ingest chain verify}
SRC=${BUILD_DIR:-build-bench}
BASE_COMMIT=${BASE_COMMIT:-820776b}
CACHE=${CACHE:-/var/tmp/eventd-seal-bench}
JOURNAL_REMOTE=/lib/systemd/systemd-journal-remote
# Debian's Python, not a version manager's shim (pyenv's costs a bash and a few forks per call).
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)
# The events of every part: a payload of about 100 bytes of msgpack.
TYPE=bench.seal
PAYLOAD='{"user":"alice","n":12345,"note":"seal benchmark","path":"/usr/lib/x86_64-linux-gnu/libexample.so.1","pid":4242}'
[[ $(id -u) -eq 0 ]] || { echo "seal: run as root" >&2; exit 1; }
((N * 170 < 134217728)) || { echo "seal: N=$N does not fit a 128 MiB ring" >&2; exit 2; }

umask 022
mkdir -p "$CACHE"
DIR=$(mktemp -d "${BENCH_STORE_DIR:-/var/tmp}/seal-bench.XXXXXX")
pids=()
cleanup() {
  local p
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [[ -n ${KEEP:-} ]]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
log() { echo "seal: $*" >&2; }

# build_commit REV TARGET… → the build directory of REV's tree (git archive) under CACHE,
# configured with SRC's options (buildtype, sync points, tests, …) and SRC's compiler, TARGETs
# built. Cached: a second call only runs ninja (a no-op when nothing changed). With
# OVERLAY_BENCH=1 the working tree's bench/ is copied over the archive's first.
build_commit() {
  local rev=$1 sha dir cxx opts
  shift
  sha=$(git rev-parse --short=12 "$rev^{commit}")
  dir=$CACHE/build-$sha${OVERLAY_BENCH:+-bench}
  exec 9> "$CACHE/lock"
  flock 9
  if [[ ! -f $dir/build/build.ninja ]]; then
    rm -rf "$dir"
    mkdir -p "$dir/src"
    git archive "$sha" | tar -x -C "$dir/src"
    # The compiler and options of SRC (scripts/bench's release build); the options the old
    # tree knows, no others. Without SRC: scripts/bench's options.
    cxx=$(sed -n 's/^C++ compiler for the host machine: \([^ ]*\) .*/\1/p' "$SRC/meson-logs/meson-log.txt" 2>/dev/null | head -n1)
    opts="--buildtype=release -Dsync_points=disabled -Dtests=false -Dbenchmarks=true -Dman_pages=disabled"
    [[ ! -d $SRC/meson-info ]] || opts=$(meson introspect --buildoptions "$SRC" | "$PY" -c '
import json, re, sys
known = set(re.findall(r"option\(\s*.([a-z_]+).", open(sys.argv[1]).read()))
core = {"buildtype", "optimization", "debug", "b_ndebug", "b_lto", "b_pie", "default_library", "cpp_args", "cpp_link_args"}
out = []
for o in json.load(sys.stdin):
    if o["name"] in core or (o["section"] == "user" and o["name"] in known):
        v = o["value"]
        if isinstance(v, list):
            if not v: continue
            v = ",".join(v)
        elif isinstance(v, bool):
            v = str(v).lower()
        name = o["name"]
        out.append(f"-D{name}={v}")
print(" ".join(out))' "$dir/src/meson_options.txt")
    log "configuring $rev ($sha) in $dir: CXX=${cxx:-c++} $opts"
    # shellcheck disable=SC2086
    CXX=${cxx:-c++} meson setup "$dir/build" "$dir/src" $opts > "$dir/setup.log" 2>&1 ||
      { cat "$dir/setup.log" >&2; rm -rf "$dir"; return 1; }
  fi
  [[ -z ${OVERLAY_BENCH:-} ]] || cp -a bench/. "$dir/src/bench/"
  log "building $rev ($sha): $* (cached in $dir; the first time takes minutes)"
  ninja -C "$dir/build" "$@" > "$dir/build.log" 2>&1 || { tail -n 30 "$dir/build.log" >&2; return 1; }
  flock -u 9
  echo "$dir/build"
}

WITH_TARGETS=(eventd/eventd eventctl/eventctl kmes-shim/kmes-shimd kmes-shim/tools/kmes-emit bench/kmes-bench-chain)
BASE_BUILD=$(build_commit "$BASE_COMMIT" eventd/eventd)
if [[ -n ${WITH_COMMIT:-} ]]; then
  SRC_WITH=$(OVERLAY_BENCH=1 build_commit "$WITH_COMMIT" "${WITH_TARGETS[@]}")
  with_label="$(git rev-parse --short "$WITH_COMMIT^{commit}") (git archive, bench/ of the working tree)"
else
  SRC_WITH=$SRC
  with_label="$(commit_line), $SRC"
fi
# Snapshots: the trees may be rebuilt while this runs (bench/lib.sh).
BIN=$DIR/bin OLD=$DIR/base
snapshot_binaries "$SRC_WITH" "$BIN" "${WITH_TARGETS[@]}" kmes-shim/libkmes.so.0
snapshot_binaries "$BASE_BUILD" "$OLD" eventd/eventd kmes-shim/libkmes.so.0

# One sealing key set for every sealed store of the run (15-minute epochs, a year of them);
# each store gets a fresh copy, so every run starts from the same epoch key.
mkdir -p "$DIR/keys"
"$BIN/eventctl/eventctl" seal --setup --store "$DIR/keys" --epoch-seconds 900 --years 1 > "$DIR/keys/setup.out"
KEY=$(tail -n 1 "$DIR/keys/setup.out")

model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)
echo "## Tamper evidence: chains, checkpoints and verify ($(date -u '+%F %H:%M UTC'))"
echo
echo "- machine: $(nproc) × ${model:-CPU}, kernel $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- with: $with_label (eventd linked $(date -u -r "$BIN/eventd/eventd" '+%F %H:%M UTC')); without: $BASE_COMMIT ($BASE_BUILD)"
echo "- stores under ${BENCH_STORE_DIR:-/var/tmp} ($(df -T "$DIR" | awk 'NR == 2 {print $2}')); events \`$TYPE\`, payload $PAYLOAD"
echo

wait_socket() { for _ in $(seq 400); do [[ -S $1 ]] && return 0; sleep 0.05; done; log "no $1"; exit 1; }
start_shim() {  # dir → a shim with 128 MiB rings on DIR/kmes.sock; its pid in pids
  "$PY" -c 'import json, sys; json.dump({"SocketPath": sys.argv[1] + "/kmes.sock", "BufferCapacity": 134217728}, open(sys.argv[1] + "/kmes.json", "w"))' "$1"
  "$BIN/kmes-shim/kmes-shimd" --config "$1/kmes.json" > "$1/shim.log" 2>&1 &
  pids+=($!)
  wait_socket "$1/kmes.sock"
}
stop_last() {  # the newest daemon in pids
  local p=${pids[-1]}
  kill -TERM "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  unset 'pids[-1]'
}
emit() {  # socket, count: on CPU 0 (one ring), batches of 256
  KMES_SOCKET=$1 taskset -c 0 "$BIN/kmes-shim/tools/kmes-emit" -t "$TYPE" -j "$PAYLOAD" -n "$2" -b 256 --retry-eagain
}
eventd_config() {  # dir, extra JSON keys → DIR/eventd.json
  "$PY" -c '
import json, sys
d = sys.argv[1]
c = {"EventStorePath": d + "/store", "QuerySocketPath": d + "/query.sock", "KmesSocketPath": d + "/kmes.sock",
     "EventRetentionDays": 3650, "StorageShards": 1}
c.update(json.loads(sys.argv[2]))
json.dump(c, open(d + "/eventd.json", "w"))' "$1" "$2"
}

# perf's flat profile: the top LINES rows (by comm, shared object, symbol) of a recording.
top_of() { perf report -i "$1" --no-children --sort "$2" --stdio 2>/dev/null | grep '%' | grep -v '^#' | head -n "$3" || true; }

# The drain of one backlog: spawns eventd, polls the shard, stops eventd once all N events are
# in; prints "rate_10_90 rate_with_start eventd_cpu_s writer_cpu_s".
cat > "$DIR/drain.py" <<'PY'
import glob, os, signal, sqlite3, subprocess, sys, time
eventd, config, store, n, log = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
def cpu(path):  # user + system seconds of a process or thread
    f = open(f"{path}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
t0 = time.perf_counter()
p = subprocess.Popen([eventd, "--config", config], stdout=open(log, "w"), stderr=subprocess.STDOUT)
try:
    db, seen, last = None, [], None
    while time.perf_counter() < t0 + 600:
        time.sleep(0.01)
        if p.poll() is not None: sys.exit(f"seal: eventd exited ({p.returncode}); see {log}")
        if db is None:
            files = glob.glob(store + "/shard-*.db")
            if not files: continue
            db = sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True, timeout=1)
        try: top = db.execute("SELECT max(id) FROM events").fetchone()[0] or 0
        except sqlite3.Error: continue
        seen.append((time.perf_counter(), top))
        # ids count eventd's own rows too (its start, checkpoints): confirm with the events.
        if top >= n and db.execute("SELECT count(*) FROM events WHERE event_type = 'bench.seal'").fetchone()[0] >= n:
            last = db.execute("SELECT max(id) FROM events WHERE event_type = 'bench.seal'").fetchone()[0]
            # A commit may have landed between the two reads: the last row is seen now.
            if last > top: seen.append((time.perf_counter(), last))
            break
    if last is None: sys.exit("seal: eventd did not store the backlog in 10 minutes")
    used = cpu(f"/proc/{p.pid}")
    # The shard's writer: the busiest thread by far (docs/PERFORMANCE.md §5), the one whose CPU
    # time per row bounds the drain when the machine is not shared.
    writer = max(cpu(t) for t in glob.glob(f"/proc/{p.pid}/task/*"))
finally:
    p.send_signal(signal.SIGTERM)
    p.wait(60)
first = lambda k: next(t for t, top in seen if top >= k)
t10, t90, t_end = first(n // 10), first(n * 9 // 10), first(last)
print(f"{0.8 * n / (t90 - t10):.0f} {n / (t_end - t0):.0f} {used:.3f} {writer:.3f}")
PY

# 1. Ingest.
if [[ " $PARTS " == *" ingest "* ]]; then
log "part 1: ingest, $ROUNDS rounds of 4 variants, $N events each"
variants=(without chain sealed60 sealed1)
declare -A vconf=([without]='{}' [chain]='{}' [sealed60]='{}' [sealed1]='{"CheckpointIntervalSeconds": 1}')
ingest_run() {  # variant round → a line in DIR/ingest
  local v=$1 r=$2 d=$DIR/ingest-$1-$2 exe=$BIN/eventd/eventd result
  mkdir -p "$d/store"
  [[ $v == without ]] && exe=$OLD/eventd/eventd
  [[ $v == sealed* ]] && cp "$DIR/keys/sealing.key" "$DIR/keys/sealing.certs" "$d/store/"
  eventd_config "$d" "${vconf[$v]}"
  start_shim "$d"
  emit "$d/kmes.sock" "$N"
  local profile=()  # round "profile": an extra run under perf, not in the table
  [[ $r != profile ]] || profile=(perf record -q -F 2000 -o "$DIR/ingest-$v.perf" --)
  result=$("${profile[@]}" "$PY" "$DIR/drain.py" "$exe" "$d/eventd.json" "$d/store" "$N" "$d/eventd.log")
  stop_last
  local bytes checkpoints
  bytes=$(du -cb "$d"/store/shard-*.db* | tail -n1 | cut -f1)
  checkpoints=$("$PY" -c '
import glob, sqlite3, sys
db = sqlite3.connect("file:" + glob.glob(sys.argv[1] + "/shard-*.db")[0] + "?mode=ro", uri=True)
print(db.execute("SELECT count(*) FROM events WHERE event_type = ?", ("synthetic.checkpoint",)).fetchone()[0])' "$d/store")
  [[ $r == profile ]] || echo "$v $r $result $bytes $checkpoints" >> "$DIR/ingest"
  [[ -n ${KEEP:-} ]] || rm -rf "$d"
}
for r in $(seq "$ROUNDS"); do
  for k in 0 1 2 3; do
    ingest_run "${variants[$(( (k + r - 1) % 4 ))]}" "$r"
  done
  log "round $r: $(grep -c " $r " "$DIR/ingest") runs"
done
if [[ -n ${PROFILE:-} ]]; then
  ingest_run without profile
  ingest_run sealed1 profile
fi
"$PY" - "$DIR/ingest" "$N" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n = int(sys.argv[2])
by = {}
for v, r, rate, rate_all, cpu, writer, size, cps in rows:
    by.setdefault(v, {})[int(r)] = (float(rate), float(rate_all), float(cpu), int(size), int(cps), float(writer))
names = {"without": "without: 820776b (no chain)", "chain": "chain, no sealing key",
         "sealed60": "chain + checkpoints every 60 s", "sealed1": "chain + checkpoints every 1 s"}
med = statistics.median
spread = lambda xs: f"{med(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})"
base = by["without"]
print(f"### Ingest: eventd draining a backlog of {n:,} events into a fresh store, StorageShards 1 "
      f"({len(base)} rounds, variants alternating)\n")
print("| variant | events/s, 10→90 % (median, min–max) | × without, per round: median (min–max) | events/s with start | "
      "× without | eventd CPU µs/event | × without | writer thread CPU µs/event | × without | store B/row | checkpoints |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for v in ("without", "chain", "sealed60", "sealed1"):
    if v not in by: continue
    runs = by[v]
    rate = [runs[r][0] for r in runs]
    ratio = [runs[r][0] / base[r][0] for r in runs if r in base]
    ratio_all = [runs[r][1] / base[r][1] for r in runs if r in base]
    ratio_cpu = [runs[r][2] / base[r][2] for r in runs if r in base]
    ratio_writer = [runs[r][5] / base[r][5] for r in runs if r in base]
    print(f"| {names[v]} | {med(rate):,.0f} ({min(rate):,.0f}–{max(rate):,.0f}) | {spread(ratio)} | "
          f"{med([runs[r][1] for r in runs]):,.0f} | {spread(ratio_all)} | "
          f"{med([runs[r][2] for r in runs]) / n * 1e6:.2f} | {spread(ratio_cpu)} | "
          f"{med([runs[r][5] for r in runs]) / n * 1e6:.2f} | {spread(ratio_writer)} | "
          f"{med([runs[r][3] for r in runs]) / n:.0f} | {med([runs[r][4] for r in runs]):.0f} |")
s1 = [by["sealed1"][r][0] / base[r][0] for r in by["sealed1"] if r in base]
s60 = [by["sealed60"][r][0] / base[r][0] for r in by["sealed60"] if r in base]
w60 = [base[r][5] / by["sealed60"][r][5] for r in by["sealed60"] if r in base]
w1 = [base[r][5] / by["sealed1"][r][5] for r in by["sealed1"] if r in base]
print(f"\ngoal ≥ 0.95× without: checkpoints every 60 s {med(s60):.2f}×, every 1 s {med(s1):.2f}× "
      f"({'reached' if min(med(s60), med(s1)) >= 0.95 else 'MISSED'}); the writer's capacity (without's writer "
      f"CPU per event ÷ this one's): {med(w60):.2f}× and {med(w1):.2f}×\n")
PY
if [[ -f $DIR/ingest-sealed1.perf ]]; then
  # The writer is eventd's busiest thread (its threads have no names: by tid). Samples at 2000 Hz
  # turned into µs of CPU per event, so the two sides compare symbol by symbol.
  for v in without sealed1; do
    echo "#### Profile: eventd's drain, $v, perf record -F 2000: by process; then the writer thread by symbol, µs per event"
    echo '```'
    top_of "$DIR/ingest-$v.perf" comm,dso 6
    echo
    read -r samples writer_tid < <(perf script -i "$DIR/ingest-$v.perf" --comm eventd -F tid 2>/dev/null | sort | uniq -c | sort -rn | head -n1)
    echo "writer thread $writer_tid: $samples samples = $("$PY" -c "print(f'{$samples / 2000 / $N * 1e6:.2f}')") µs of CPU per event"
    perf report -i "$DIR/ingest-$v.perf" --no-children --tid "$writer_tid" --sort dso,sym --stdio 2>/dev/null | grep '%' | grep -v '^#' | head -n 25 || true
    echo '```'
  done
fi

fi

# 2. The chain per row, in process.
if [[ " $PARTS " == *" chain "* ]]; then
  log "part 2: chain_next per row"
  "$BIN/bench/kmes-bench-chain" ${QUICK:+--quick}
  "$BIN/bench/kmes-bench-chain" ${QUICK:+--quick} --no-sodium-init
  echo
fi

# 3. Verify. First eventd's sealed store of VROWS events.
[[ " $PARTS " == *" verify "* ]] || exit 0
log "part 3: a sealed store of $VROWS events"
V=$DIR/verify
mkdir -p "$V/store"
cp "$DIR/keys/sealing.key" "$DIR/keys/sealing.certs" "$V/store/"
eventd_config "$V" '{"CheckpointIntervalSeconds": 1}'
start_shim "$V"
"$BIN/eventd/eventd" --config "$V/eventd.json" > "$V/eventd.log" 2>&1 &
pids+=($!)
wait_socket "$V/query.sock"
t_build=$(date +%s)
max_id() {
  "$PY" -c '
import glob, sqlite3, sys
f = glob.glob(sys.argv[1] + "/shard-*.db")
print(sqlite3.connect(f"file:{f[0]}?mode=ro", uri=True, timeout=5).execute("SELECT max(id) FROM events").fetchone()[0] or 0 if f else 0)' "$V/store"
}
emitted=0
chunk=250000
while ((emitted < VROWS)); do
  c=$((VROWS - emitted < chunk ? VROWS - emitted : chunk))
  emit "$V/kmes.sock" "$c"
  emitted=$((emitted + c))
  for _ in $(seq 3000); do (($(max_id) >= emitted)) && break; sleep 0.2; done
done
sleep 1.5  # a checkpoint after the last rows, then the shutdown's
stop_last  # eventd: its final checkpoint
stop_last  # the shim
store_bytes=$(du -cb "$V"/store/shard-*.db* | tail -n1 | cut -f1)
read -r stored total checkpoints < <("$PY" -c '
import glob, sqlite3, sys
db = sqlite3.connect("file:" + glob.glob(sys.argv[1] + "/shard-*.db")[0] + "?mode=ro", uri=True)
q = lambda sql: db.execute(sql).fetchone()[0]
print(q("SELECT count(*) FROM events WHERE event_type = \"bench.seal\""), q("SELECT count(*) FROM events"),
      q("SELECT count(*) FROM events WHERE event_type = \"synthetic.checkpoint\""))' "$V/store")
((stored == VROWS)) || { log "the store holds $stored of $VROWS events (a ring overrun?)"; exit 1; }
log "store: $total rows ($stored events, $checkpoints checkpoints) in $(( $(date +%s) - t_build )) s"

# The journals: VROWS entries of the same content as the events, export format → journal-remote.
journal_ok=
if [[ ! -x $JOURNAL_REMOTE ]]; then
  log "no $JOURNAL_REMOTE (apt-get install systemd-journal-remote; scripts/setup does): eventctl verify only"
else
  J=$CACHE/journal-$VROWS-v1
  if [[ ! -f $J/complete ]]; then
    rm -rf "$J"
    mkdir -p "$J/sealed" "$J/plain"
    cat > "$J/gen.py" <<'PY'
# Export format (systemd.io/JOURNAL_EXPORT_FORMATS): COUNT entries of part PART, timestamps from T0 µs.
import sys, uuid
count, part, t0 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
boot = uuid.UUID(int=0x5ea1_0000 + part).hex
out, buf = sys.stdout.buffer, []
for i in range(count):
    buf.append(f"__REALTIME_TIMESTAMP={t0 + i}\n__MONOTONIC_TIMESTAMP={1_000_000 + i}\n_BOOT_ID={boot}\n"
               f"_TRANSPORT=journal\nPRIORITY=6\nSYSLOG_IDENTIFIER=bench.seal\n_PID=4242\n_UID=0\n"
               f"MESSAGE=user=alice n=12345 note=seal benchmark path=/usr/lib/x86_64-linux-gnu/libexample.so.1 "
               f"seq={part * count + i}\n\n")
    if len(buf) == 4096:
        out.write("".join(buf).encode()); buf.clear()
out.write("".join(buf).encode())
PY
    log "writing two journals of $VROWS entries (FSS-sealed and not) into $J: minutes, once"
    t_j=$(date +%s)
    # FSS keys in a private mount namespace: journalctl --setup-keys writes
    # /var/log/journal/<machine-id>/fss, journal-remote --seal reads it there. Both see a tmpfs
    # there (over /var/log if the machine has no /var/log/journal: creating that directory would
    # make journald persistent), gone when the namespace ends.
    unshare -m --propagation private bash -s "$J" "$VROWS" "$JOURNAL_REMOTE" "$PY" <<'SH'
set -euo pipefail
J=$1 ROWS=$2 REMOTE=$3 PY=$4 PARTS=2
if [[ -d /var/log/journal ]]; then mount -t tmpfs tmpfs /var/log/journal; else mount -t tmpfs tmpfs /var/log; fi
mkdir -p "/var/log/journal/$(cat /etc/machine-id)"
journalctl --setup-keys --interval=15min > "$J/key" 2> "$J/setup-keys.log"
t0=$(( $(date +%s) * 1000000 + 1000000 ))
for k in $(seq 0 $((PARTS - 1))); do
  "$PY" "$J/gen.py" $((ROWS / PARTS)) "$k" "$t0" | "$REMOTE" --seal=yes --split-mode=none -o "$J/sealed/part$k.journal" - 2>> "$J/remote.log" &
  "$PY" "$J/gen.py" $((ROWS / PARTS)) "$k" "$t0" | "$REMOTE" --seal=no --split-mode=none -o "$J/plain/part$k.journal" - 2>> "$J/remote.log" &
done
wait
SH
    touch "$J/complete"
    log "journals written in $(( $(date +%s) - t_j )) s"
  fi
  entries() { journalctl -D "$1" --header 2>/dev/null | awk '/^Entry objects:/ {n += $3} END {print n + 0}'; }
  sealed_n=$(entries "$J/sealed") plain_n=$(entries "$J/plain")
  if ((sealed_n == VROWS && plain_n == VROWS)); then
    journal_ok=1
  else
    log "the journals hold $sealed_n and $plain_n entries, not $VROWS: journal side skipped (rm -rf $J to rebuild)"
  fi
fi

cat > "$DIR/time.py" <<'PY'
# Runs each command of a round (rotating order), VRUNS rounds after an untimed warm-up; prints
# per tool: wall s and CPU s (user + system, the child's rusage) of each timed run.
import json, os, subprocess, sys, time
runs, cmds = int(sys.argv[1]), json.loads(sys.argv[2])
names = list(cmds)
res = {n: [] for n in names}
for rnd in range(runs + 1):
    order = names[rnd % len(names):] + names[:rnd % len(names)]
    for name in order:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmds[name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"seal: {name} failed ({os.waitstatus_to_exitcode(status)}):\n{out.decode()[-2000:]}")
        if rnd: res[name].append((wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
        if rnd == 0: print(f"{name}: {out.decode().strip().splitlines()[-1]}", file=sys.stderr)
json.dump(res, sys.stdout)
PY
declare -A cmds=([eventctl]="[\"$BIN/eventctl/eventctl\", \"verify\", \"--store\", \"$V/store\", \"--key\", \"$KEY\"]")
if [[ -n $journal_ok ]]; then
  cmds[journal_sealed]="[\"journalctl\", \"--verify\", \"--verify-key=$(cat "$J/key")\", \"-D\", \"$J/sealed\"]"
  cmds[journal_plain]="[\"journalctl\", \"--verify\", \"-D\", \"$J/plain\"]"
fi
cmd_json=$(for k in "${!cmds[@]}"; do echo "\"$k\": ${cmds[$k]}"; done | paste -sd, | sed 's/^/{/; s/$/}/')
log "timing: $VRUNS rounds after a warm-up"
"$PY" "$DIR/time.py" "$VRUNS" "$cmd_json" > "$DIR/verify.json"
"$PY" - "$DIR/verify.json" "$VROWS" "$total" "$checkpoints" "$store_bytes" "${J:-}" "$journal_ok" <<'PY'
import glob, json, os, statistics, sys
res, n, total, cps, store_bytes, jdir, jok = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
med = statistics.median
size = lambda d: sum(os.path.getsize(f) for f in glob.glob(d + "/*.journal"))
files = lambda d: len(glob.glob(d + "/*.journal"))
rows = {"eventctl": (f"`eventctl verify` (sealed store: {total:,} rows, {cps} checkpoints)", total, store_bytes, 1)}
if jok:
    rows["journal_sealed"] = (f"`journalctl --verify --verify-key` (FSS-sealed journal)", n, size(jdir + "/sealed"), files(jdir + "/sealed"))
    rows["journal_plain"] = (f"`journalctl --verify` (unsealed journal)", n, size(jdir + "/plain"), files(jdir + "/plain"))
ev = res["eventctl"]
print(f"### Verify: {n:,} events, one CPU ({len(ev)} timed runs each after a warm-up, alternating)\n")
print("| verifier | wall s (median, min–max) | rows/s | CPU s | rows per CPU-second | CPU × eventctl verify | "
      "MB on disk | files | max RSS MiB |")
print("|---|---|---|---|---|---|---|---|---|")
for k, (label, count, nbytes, nfiles) in rows.items():
    runs = res[k]
    wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
    ratio = [c / e[1] for c, e in zip(cpu, ev)]
    print(f"| {label} | {med(wall):.2f} ({min(wall):.2f}–{max(wall):.2f}) | {count / med(wall):,.0f} | {med(cpu):.2f} | "
          f"{count / med(cpu):,.0f} | {med(ratio):.2f} ({min(ratio):.2f}–{max(ratio):.2f}) | {nbytes / 1e6:.0f} | {nfiles} | "
          f"{max(r[2] for r in runs) / 1024:.0f} |")
rate = total / med([r[1] for r in ev])
print(f"\ngoal ≥ 1,000,000 rows/s per core: eventctl verify {rate:,.0f} rows per CPU-second "
      f"({'reached' if rate >= 1e6 else 'MISSED'})\n")
PY
if [[ -n ${PROFILE:-} ]]; then
  perf record -q -F 2000 -o "$DIR/verify.perf" "$BIN/eventctl/eventctl" verify --store "$V/store" --key "$KEY" > /dev/null 2>&1 || true
  echo "#### Profile: eventctl verify, perf record -F 2000: by shared object, then by symbol"
  echo '```'
  top_of "$DIR/verify.perf" dso 6
  echo
  top_of "$DIR/verify.perf" dso,sym 25
  echo '```'
fi
