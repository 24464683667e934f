# Helpers of the shell benchmarks that start real daemons (bench/access_oracle.sh,
# bench/audit_bench.sh). Sourced, not run.

# snapshot_binaries SRC DEST NAME…: copies the build's files NAME… (paths under the build
# directory SRC, e.g. eventd/eventd, kmes-shim/libkmes.so.0) into DEST with the same layout, so
# that their RUNPATHs ($ORIGIN/.., $ORIGIN/../kmes-shim) find the copied libkmes. The tree may
# be rebuilt while a benchmark runs: a relink in the middle must neither break the run nor mix
# two builds into one table. During a build a binary is briefly missing, or linked against a
# libkmes newer than the one beside it: copy again until every program (not the .so files)
# resolves all its symbols against the copied library (LD_BIND_NOW, `--version`), up to 10 min.
snapshot_binaries() {
  local src=$1 dest=$2 name try
  shift 2
  _snapshot_once() {
    for name in "$@"; do
      mkdir -p "$dest/$(dirname "$name")" && cp -L --preserve=timestamps "$src/$name" "$dest/$name" || return 1
    done
    for name in "$@"; do
      [[ $name == *.so* ]] || LD_BIND_NOW=1 "$dest/$name" --version > /dev/null || return 1
    done
  }
  for try in $(seq 120); do
    _snapshot_once "$@" 2>/dev/null && return 0
    ((try == 1)) && echo "$(basename "$0"): $src/ is being rebuilt; waiting for consistent binaries" >&2
    sleep 5
  done
  echo "$(basename "$0"): no consistent binaries in $src/ after 10 minutes" >&2
  return 1
}

# commit_line: the commit, and how many tracked files differ from it.
commit_line() {
  local dirty
  dirty=$(git status --porcelain --untracked-files=no | wc -l)
  echo "$(git rev-parse --short HEAD)$( ((dirty)) && echo " + $dirty uncommitted file(s)")"
}
