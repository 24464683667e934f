#!/bin/sh
# The man pages render without a single groff warning (groff -ww, tables through tbl), and each
# says what it must: a NAME, the program's options or the file's keys.
#   check_pages.sh PAGE...
set -u
failed=0 passed=0
for page in "$@"; do
  warnings=$(groff -ww -t -man -Tutf8 "$page" 2>&1 >/dev/null)
  text=$(groff -t -man -Tutf8 "$page" 2>/dev/null | col -b)
  problem=""
  [ -n "$warnings" ] && problem="groff warns: $warnings"
  echo "$text" | grep -q '^NAME' || problem="$problem; no NAME section"
  case $(basename "$page") in
    eventctl.1) want="--cursor-file" ;;
    kmes-emit.1) want="--retry-eagain" ;;
    kmes-tail.1) want="--from-start" ;;
    eventd.8|kmes-shimd.8|eventd-forward.8) want="--config" ;;
    eventd.json.5) want="CollectorSource" ;;
    kmes.json.5) want="BufferCapacity" ;;
    *) want="" ;;
  esac
  [ -n "$want" ] && ! echo "$text" | grep -q -- "$want" && problem="$problem; '$want' not in the page"
  if [ -n "$problem" ]; then
    echo "FAILED: $page: $problem"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
done
echo "man pages: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
