#!/usr/bin/env bash
# eventctl's bash completion (eventctl/completion/eventctl.bash), called as bash calls it
# (COMP_WORDS, COMP_CWORD, then the function), against a real kmes-shimd and eventd for the
# event types it asks eventd about. Prints "N passed, N failed"; exits non-zero on a failure.
#   test_completion.sh COMPLETION_SCRIPT   ($KMES_SHIMD, $EVENTD, $EVENTCTL, $KMES_EMIT)
set -uo pipefail
script=$1
# shellcheck source=../stack.sh
source "$(dirname "$0")/../stack.sh"
stack_start
"$KMES_EMIT" -t kacs.access_denied -n 2
"$KMES_EMIT" -t kacs.access_check -n 1
"$KMES_EMIT" -t app.login -n 1
unset EVENTD_SOCKET  # the completion must find the socket from --socket on the line
for _ in $(seq 100); do
  [[ $("$EVENTCTL" --socket "$dir/run/query.sock" -o jsonl 'EVENTS COUNT') == '{"count":5}' ]] && break
  sleep 0.05
done

# shellcheck disable=SC1090
source "$script"
_eventctl_command=$EVENTCTL
passed=0 failed=0
# expect "what the user typed (words; the last is completed)" "the replies, one per line"
# (inside a quoted query a reply is the whole word, opening quote included: readline replaces
# it all — checked by hand in bash 5.2 under tmux)
expect() {
  local line=$1 want=$2
  eval "COMP_WORDS=($line)"
  [[ $line == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _eventctl
  local got
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sort)
  want=$(printf '%s\n' "$want" | sort)
  if [[ $got == "$want" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAILED: eventctl completion of [%s]\n  want: %s\n  got:  %s\n' "$line" "${want//$'\n'/ | }" "${got//$'\n'/ | }"
  fi
}

S="--socket $dir/run/query.sock"
expect "eventctl --fo" "--format"
expect "eventctl -o j" $'json\njsonl'
expect "eventctl --format " $'pretty\njsonl\njson\nmsgpack'
expect "eventctl st" "status"
expect "eventctl se" "seal"
expect "eventctl verify --k" "--key"
expect "eventctl ru" "rules"
expect "eventctl rules ch" "check"
expect "eventctl seal --" $'--setup\n--store\n--epoch-seconds\n--years\n--help'
expect "eventctl $S \"'EVENTS ka\"" $'\'EVENTS kacs.access_check \n\'EVENTS kacs.access_denied '
expect "eventctl $S \"'EVENTS kacs.access_d\"" "'EVENTS kacs.access_denied "
expect "eventctl $S \"'EVENTS app.login WH\"" "'EVENTS app.login WHERE "
expect "eventctl $S \"'EVENTS COUNT B\"" "'EVENTS COUNT BY "
expect "eventctl $S \"'EV\"" "'EVENTS "
# eventd gone: keywords still complete, no event types (and no long wait).
kill "${pids[1]}"; wait "${pids[1]}" 2>/dev/null
expect "eventctl $S \"'EVENTS S\"" $'\'EVENTS SINCE \n\'EVENTS SELECT \n\'EVENTS SORT \n\'EVENTS SKIP \n\'EVENTS STREAM \n\'EVENTS STARTS_WITH \n\'EVENTS SUM '
expect "eventctl $S \"'EVENTS ka\"" ""

echo "completion: $passed passed, $failed failed"
((failed == 0))
