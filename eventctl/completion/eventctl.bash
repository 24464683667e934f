# bash completion for eventctl (installed as share/bash-completion/completions/eventctl).
# Completes options, the values of --format and --width, files for
# --file/--cursor-file/--socket, the commands (status, help, version, rules check; seal and verify with their
# own options, directories for --store, files for --key) and, inside the query
# argument, the query language's keywords and the event types eventd stores (`EVENTS DISTINCT
# event_type`, asked on the socket eventctl would use, within 2 s; nothing when it does not
# answer). The query is one argument: quote it, `eventctl 'EVENTS kacs.<TAB>`.

_eventctl_event_types() {
    local socket=$1
    local -a args=(-o jsonl)
    [[ -n $socket ]] && args+=(--socket "$socket")
    timeout 2 "${_eventctl_command:-eventctl}" "${args[@]}" 'EVENTS DISTINCT event_type' 2>/dev/null |
        sed -n 's/^{"event_type":"\([^"\\]*\)"}$/\1/p'
}

_eventctl() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD-1]}
    local options="--file --socket --format --cursor-file --allow-gap --utc --local --all-fields --width --version --help"
    # The store-directory commands have options of their own (eventctl seal --help, verify --help).
    # `eventctl rules check FILE|DIR…` / `rules list`: the action, then rule files and directories.
    if ((COMP_CWORD > 1)) && [[ ${COMP_WORDS[1]} == rules ]]; then
        if ((COMP_CWORD == 2)); then COMPREPLY=($(compgen -W "check list --help" -- "$cur")); else
            COMPREPLY=($(compgen -f -- "$cur")); fi
        return
    fi
    if ((COMP_CWORD > 1)) && [[ ${COMP_WORDS[1]} == seal || ${COMP_WORDS[1]} == verify ]]; then
        case $prev in
            --store) COMPREPLY=($(compgen -d -- "$cur")); return ;;
            --key) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            --epoch-seconds|--years) return ;;
        esac
        local own="--store --key --help"
        [[ ${COMP_WORDS[1]} == seal ]] && own="--setup --store --epoch-seconds --years --help"
        COMPREPLY=($(compgen -W "$own" -- "$cur"))
        return
    fi
    case $prev in
        -o|--format)
            COMPREPLY=($(compgen -W "pretty jsonl json msgpack" -- "$cur"))
            return ;;
        -f|--file|--cursor-file|-s|--socket)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --width)
            COMPREPLY=($(compgen -W "0 80 120 160" -- "$cur"))  # 0: one line per record
            return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$options -o -f -s -V -h" -- "$cur"))
        return
    fi
    # The socket eventctl would use, for the event types.
    local socket="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == -s || ${COMP_WORDS[i]} == --socket ]] && socket=${COMP_WORDS[i+1]}
    done
    # Inside the query: complete its last token, keep what comes before it.
    local quote="" text=$cur
    if [[ $text == \'* || $text == \"* ]]; then
        quote=${text:0:1}
        text=${text:1}
    fi
    local head="" token=$text
    if [[ $text == *" "* ]]; then
        head=${text% *}" "
        token=${text##* }
    fi
    local words
    if [[ -z $head ]]; then
        if [[ -n $quote ]]; then
            words="EVENTS"
        else
            words="EVENTS status help version seal verify rules"
        fi
    else
        local keywords="SINCE UNTIL WHERE SELECT SORT DESC SKIP TAKE COUNT BY TOP DISTINCT GROUP SUM AVG MIN MAX STREAM
                        AND OR IN NOT_IN IS NOT NULL HAS STARTS_WITH ENDS_WITH CONTAINS ago hence today yesterday"
        words=$keywords
        # Right after EVENTS comes the type pattern.
        if [[ ${head% } =~ (^|[[:space:]])[Ee][Vv][Ee][Nn][Tt][Ss]$ ]]; then
            words="$(_eventctl_event_types "$socket") $keywords"
        fi
    fi
    local list
    list=$(printf '%s\n' $words)  # one word a line (split on blanks here, on lines below)
    local IFS=$'\n'
    local -a matches=($(compgen -W "$list" -- "$token"))
    COMPREPLY=()
    # A query goes on after a completed word (a space, inside the quotes); a bare command ends.
    local m space=""
    [[ -n $quote || -n $head ]] && space=" " && compopt -o nospace 2>/dev/null
    # With the opening quote: readline replaces the whole word, quote included.
    for m in "${matches[@]}"; do COMPREPLY+=("$quote$head$m$space"); done
    return 0
}

complete -F _eventctl eventctl
