#!/usr/bin/env bash
# Bash completion (completion/benchdesk.bash): every command of `benchdesk --help` and
# every option of `benchdesk CMD --help` completes, so a command or an option added
# without its completion fails here; option values; task-class names and case ids of the
# bench in use (the working directory's, or -C DIR).
source "$(dirname "$0")/lib.sh"
script="$BD_SOURCE_DIR/completion/benchdesk.bash"
root=$(demo_copy)

# complete WORDS...: the completions bash offers for the last word (run in a clean bash
# subshell from the demo copy), one per line, sorted.
complete_words() {
    (cd "$root" && bash --noprofile --norc -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
        fn=$(complete -p benchdesk | sed -n "s/.*-F \([^ ]*\) benchdesk$/\1/p")
        "$fn" benchdesk "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}"' _ "$script" "$@") | sort
}
# offers WHAT WORDS...: pass when the completions of WORDS include WHAT.
offers() {
    local what=$1; shift
    if complete_words "$@" | grep -qxF -- "$what"; then
        pass "'$*' offers $what"
    else
        fail "'$*' does not offer $what (got: $(complete_words "$@" | tr '\n' ' '))"
    fi
}

# ---- the script registers itself ------------------------------------------------------
reg=$(bash --noprofile --norc -c 'source "$1" && complete -p benchdesk' _ "$script" 2>&1) || true
grep -q -- "-F _benchdesk benchdesk" <<<"$reg" && pass "complete -p benchdesk: $reg" ||
    fail "the script does not register a completion for benchdesk: $reg"

# ---- every command and every option, from the binary's own help -----------------------
commands=$("$BD_BIN" --help | awk '/^Commands:/ {f = 1; next} /^$/ {f = 0} f {print $1}')
[ "$(wc -w <<<"$commands")" -ge 10 ] && pass "commands from --help: $(echo $commands)" ||
    fail "could not read the command list from benchdesk --help"
all=$(complete_words benchdesk "")
for c in $commands; do
    grep -qxF "$c" <<<"$all" && pass "command $c completes" || fail "command $c has no completion"
    offers "$c" benchdesk "${c:0:2}"
    # Options: the tokens of the usage block and of the indented option list.
    opts=$("$BD_BIN" "$c" --help |
        awk '/^usage:/ {u = 1} u && /^$/ {u = 0} u || /^  +-/ {print}' |
        grep -oE '(^|[][ |])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[][ |]//' | sort -u)
    for o in $opts --help; do
        [ "$o" = "-C" ] && continue
        offers "$o" benchdesk "$c" -
    done
done
for o in -C --theme --version --help; do
    offers "$o" benchdesk -
done
# No stray command: everything offered at the top is a real command.
for c in $all; do
    grep -qxF "$c" <<<"$commands" && continue
    fail "completion offers '$c', which is not a benchdesk command"
done

# ---- option values and subcommand words ------------------------------------------------
offers author benchdesk sign bench/vuln-remediation --role ""
offers reviewer benchdesk sign bench/vuln-remediation --role r
offers namespaces benchdesk run vuln-remediation --isolation ""
offers light benchdesk --theme ""
offers log benchdesk history ""
offers import benchdesk history ""
offers auto benchdesk run vuln-remediation --shard ""
offers publish benchdesk anchor ""
offers new benchdesk case ""
offers silver benchdesk promote vuln-remediation ""

# ---- task classes and case ids of the bench in use -------------------------------------
for tc in "$root"/bench/*/registration.yaml; do
    tc=${tc%/registration.yaml}
    offers "${tc##*/}" benchdesk run ""
done
offers vuln-remediation benchdesk list vuln
offers incident-triage benchdesk verify vuln-remediation ""
offers ghsa-demo-0002-lodash-prototype-pollution benchdesk run vuln-remediation --case ghsa-demo-0002
offers ghsa-demo-0002-lodash-prototype-pollution benchdesk pin vuln-remediation ghsa
offers ghsa-demo-0002-lodash-prototype-pollution \
    benchdesk history log --task-class vuln-remediation --case ghsa
offers vuln-remediation benchdesk history log --task-class ""
offers bench/vuln-remediation benchdesk sign bench/vuln
# A case folder added to the bench is offered at once.
mkdir "$root/bench/vuln-remediation/cases/zz-new-case"
offers zz-new-case benchdesk run vuln-remediation --case zz
# -C DIR selects the bench from anywhere.
other=$(cd "$BD_TMP" && bash --noprofile --norc -c '
    source "$1"; COMP_WORDS=(benchdesk -C "$2" list ""); COMP_CWORD=4; _benchdesk
    printf "%s\n" "${COMPREPLY[@]}"' _ "$script" "$root")
grep -qxF vuln-remediation <<<"$other" && pass "-C DIR: task classes of that bench" ||
    fail "-C DIR: no task classes offered (got: $other)"
# Outside any bench: nothing to offer, and no error.
none=$(cd / && bash --noprofile --norc -c '
    source "$1"; COMP_WORDS=(benchdesk run ""); COMP_CWORD=2; _benchdesk
    printf "%s\n" "${COMPREPLY[@]}"' _ "$script" 2>&1)
[ -z "$(tr -d '\n' <<<"$none")" ] && pass "outside a bench: no task classes, no error" ||
    fail "outside a bench: got '$none'"

finish
