#!/usr/bin/env bash
# Bash completion (completion/benchdesk.bash): every command of `benchdesk --help` and
# every option of `benchdesk CMD --help` completes, so a command or an option added
# without its completion fails here; option values; task-class names and case ids of the
# bench in use (the working directory's, or -C DIR); run ids after compare, report and
# history log --run; formats after report --format; commands after help; case and task-class directories after sign. Nothing from the bench is ever
# evaluated: folders named `$(id>PWNED)`, `touch PWNED2` in backquotes, `*`, with a space,
# a newline or a `;` run nothing and are not offered, whatever the user's shell options.
source "$(dirname "$0")/lib.sh"
script="$BD_SOURCE_DIR/completion/benchdesk.bash"
root=$(demo_copy)
# The completion runs `benchdesk` (the command being completed) for run ids.
mkdir "$BD_TMP/bin"
ln -s "$BD_BIN" "$BD_TMP/bin/benchdesk"

# complete_at DIR WORDS...: the completions bash offers for the last word (run in a clean
# bash from DIR, with the shell options of $COMP_SHOPTS: "hostile" sets the ones that
# change globbing and matching), one per line in printf %q form (a name with a newline or
# a quote shows as $'...'), sorted. What the function writes to stderr goes to
# $BD_TMP/complete.err; a completion function that fails offers what it had so far.
complete_at() {
    local dir=$1; shift
    (cd "$dir" && PATH="$BD_TMP/bin:$PATH" bash --noprofile --norc -c '
        source "$1"; shift
        if [ "${COMP_SHOPTS-}" = hostile ]; then
            shopt -s nullglob failglob dotglob nocaseglob nocasematch extglob; set -u
        fi
        COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
        fn=$(complete -p benchdesk | sed -n "s/.*-F \([^ ]*\) benchdesk$/\1/p")
        "$fn" benchdesk "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        for w in "${COMPREPLY[@]}"; do printf "%q\n" "$w"; done' _ "$script" "$@" \
        2>"$BD_TMP/complete.err" || true) | sort
}
complete_words() { complete_at "$root" "$@"; }
# offers WHAT WORDS...: pass when the completions of WORDS include WHAT.
offers() {
    local what=$1; shift
    if complete_words "$@" | grep -qxF -- "$what"; then
        pass "'$*' offers $what"
    else
        fail "'$*' does not offer $what (got: $(complete_words "$@" | tr '\n' ' '))"
    fi
}
# offers_not WHAT WORDS...: pass when the completions of WORDS do not include WHAT.
offers_not() {
    local what=$1; shift
    if complete_words "$@" | grep -qxF -- "$what"; then
        fail "'$*' offers $what"
    else
        pass "'$*' does not offer $what"
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
    # One completion per command, every option looked up in it.
    offered=$(complete_words benchdesk "$c" -)
    for o in $opts --help; do
        [ "$o" = "-C" ] && continue
        grep -qxF -- "$o" <<<"$offered" && pass "'benchdesk $c -' offers $o" ||
            fail "'benchdesk $c -' does not offer $o (got: $(tr '\n' ' ' <<<"$offered"))"
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


# ---- sign: case and task-class directories ---------------------------------------------
flat() { tr '\n' ' ' <<<"$1"; } # lines -> one line, for a message
mkdir "$root/.git"
offers bench/vuln-remediation benchdesk sign ""
offers bench/incident-triage benchdesk sign b
offers bench/vuln-remediation/cases/ghsa-demo-0002-lodash-prototype-pollution \
    benchdesk sign bench/vuln-remediation/
offers bench/vuln-remediation/cases/ghsa-demo-0002-lodash-prototype-pollution \
    benchdesk sign bench/vuln-remediation/cases/ghsa-demo-0002
bad=$( (complete_words benchdesk sign ""; complete_words benchdesk sign bench/;
    complete_words benchdesk sign bench/vuln-remediation/) |
    LC_ALL=C grep -vxE 'bench/[a-z0-9][a-z0-9._-]*(/cases/[a-z0-9][a-z0-9._-]*)?' || true)
[ -z "$bad" ] && pass "sign offers only case and task-class directories" ||
    fail "sign offers what is not a case or task-class directory: $(flat "$bad")"
# sign takes several DIRs: the second and later are offered too.
offers bench/incident-triage benchdesk sign bench/vuln-remediation b
offers bench/vuln-remediation/cases/ghsa-demo-0002-lodash-prototype-pollution \
    benchdesk sign bench/incident-triage --role author bench/vuln-remediation/
offers_not bench/trusted-signers.yaml benchdesk sign bench/
offers_not bench/keys benchdesk sign bench/
offers_not .git benchdesk sign .
offers_not bench/vuln-remediation/rubric.py benchdesk sign bench/vuln-remediation/
# From inside the bench, paths from the working directory; with -C DIR, under DIR.
got=$(complete_at "$root/bench/vuln-remediation" benchdesk sign "")
grep -qxF . <<<"$got" && grep -qxF cases/ghsa-demo-0002-lodash-prototype-pollution <<<"$got" &&
    grep -qxF ../incident-triage <<<"$got" && pass "sign from a task-class directory" ||
    fail "sign from a task-class directory: $(flat "$got")"
got=$(complete_at "$root/bench/vuln-remediation/cases/ghsa-demo-0002-lodash-prototype-pollution" \
    benchdesk sign "")
grep -qxF . <<<"$got" && grep -qxF ../ghsa-demo-0001-axios-csrf-token-leak <<<"$got" &&
    pass "sign from a case directory" || fail "sign from a case directory: $(flat "$got")"
got=$(complete_at "$BD_TMP" benchdesk -C "${root##*/}" sign "")
grep -qxF "${root##*/}/bench/vuln-remediation" <<<"$got" &&
    pass "sign with -C DIR: paths under DIR" || fail "sign with -C DIR: $(flat "$got")"
got=$(complete_at "$BD_TMP" benchdesk -C "$root" sign "$root/bench/vuln-remediation/cases/ghsa-demo-0002")
grep -qxF "$root/bench/vuln-remediation/cases/ghsa-demo-0002-lodash-prototype-pollution" <<<"$got" &&
    pass "sign: an absolute path" || fail "sign: an absolute path: $(flat "$got")"

# ---- compare and history log --run: run ids from the history ---------------------------
offers_none() { # WORDS...: pass when nothing is offered
    local got
    got=$(complete_words "$@")
    [ -z "$got" ] && pass "'$*' offers nothing" || fail "'$*' offers $(flat "$got")"
}
offers_none benchdesk compare ""   # no history yet
bd() { "$BD_BIN" -C "$root" "$@"; }
newest_run() { basename "$(ls -t "$root/.benchdesk/runs/"*.json | head -1)" .json; }
bd run incident-triage --case kafka-consumer-lag-rebalance --isolation subprocess \
    >/dev/null 2>"$BD_TMP/run.err" || fail "run incident-triage: $(cat "$BD_TMP/run.err")"
r1=$(newest_run)
bd run vuln-remediation --case ghsa-demo-0002-lodash-prototype-pollution --isolation subprocess \
    >/dev/null 2>"$BD_TMP/run.err" || fail "run vuln-remediation: $(cat "$BD_TMP/run.err")"
r2=$(newest_run)
# A run id with ':' (a shard run's --run-id), merged from its bundle.
bd run incident-triage --shard 0/4 --run-id ci:7 --out "$BD_TMP/bundle" --isolation subprocess \
    >/dev/null 2>"$BD_TMP/run.err" || fail "shard run: $(cat "$BD_TMP/run.err")"
bd history import "$BD_TMP/bundle" --partial >/dev/null 2>&1 || fail "history import of the shard"
[ "$r1" != "$r2" ] && pass "two runs: $r1 $r2" || fail "two runs: $r1 $r2"
offers "$r1" benchdesk compare ""
offers "$r2" benchdesk compare ""
offers ci:7 benchdesk compare ""
offers "$r1" benchdesk compare "${r1:0:12}"
offers "$r2" benchdesk compare "$r1" ""
offers_none benchdesk compare "$r1" "$r2" ""
offers "$r2" benchdesk compare --task-class vuln-remediation ""
offers_not "$r1" benchdesk compare --task-class vuln-remediation ""
offers "$r1" benchdesk history log --run ""
offers "$r2" benchdesk history log --task-class vuln-remediation --run ""
# Readline breaks words at ':': what is offered is the rest of the word after it, and a
# run id with ':' counts as one argument.
offers 7 benchdesk compare ci :
offers 7 benchdesk compare ci : ""
offers "$r1" benchdesk compare ci : 7 ""
offers 7 benchdesk history log --run ci :
bad=$(complete_words benchdesk compare "" |
    LC_ALL=C grep -vxE '[A-Za-z0-9][A-Za-z0-9._:-]{0,127}' || true)
[ -z "$bad" ] && pass "compare offers only run ids" || fail "compare offers $(flat "$bad")"
# report [RUN]: run ids too; its formats; help: the commands.
offers "$r1" benchdesk report ""
offers "$r2" benchdesk report "${r2:0:12}"
offers_none benchdesk report "$r1" ""
offers markdown benchdesk report --format ""
offers junit benchdesk report --format j
offers report benchdesk help ""
offers compare benchdesk help co
offers_none benchdesk help run ""
offers --stale benchdesk run vuln-remediation --st
offers --junit benchdesk run vuln-remediation --ju

# ---- nothing from the bench is evaluated ----------------------------------------------
# A second bench whose folder names are shell code, globs and separators (anyone can
# commit one, even as a draft case). Completing over it must run none of it, and offer
# only the names that match the id pattern.
hroot=$(demo_copy)
hostile=('$(id>PWNED)' '`touch PWNED2`' '*' 'two words' $'new\nline' 'semi;touch PWNED3'
    '$(touch PWNED4)' '${HOME}' 'Upper-Case' '.hidden' '-n' 'a\b')
for n in "${hostile[@]}"; do
    mkdir -- "$hroot/bench/incident-triage/cases/$n"
    mkdir -p -- "$hroot/bench/$n"
    cp "$hroot/bench/incident-triage/registration.yaml" "$hroot/bench/$n/"
done
mkdir "$hroot/bench/incident-triage/cases/zz-legit_1.0"
hcomp() { complete_at "$hroot" "$@"; }
# only_valid WORDS...: the completions of WORDS over that bench, under $opts, are valid
# names or case and task-class paths, and nothing went to stderr.
only_valid() {
    local got err bad
    got=$(COMP_SHOPTS=$opts hcomp "$@")
    err=$(cat "$BD_TMP/complete.err")
    [ -z "$err" ] || fail "[$opts] '$*' wrote to stderr: $err"
    bad=$(LC_ALL=C grep -vxE '(bench/)?[a-z0-9][a-z0-9._-]*(/cases/[a-z0-9][a-z0-9._-]*)?' <<<"$got" || true)
    [ -z "$bad" ] && pass "[$opts] '$*' offers only valid names" || fail "[$opts] '$*' offers $(flat "$bad")"
}
for opts in default hostile; do
    only_valid benchdesk run ""
    only_valid benchdesk list ""
    only_valid benchdesk verify ""
    only_valid benchdesk --theme light run ""
    only_valid benchdesk pin incident-triage ""
    only_valid benchdesk record incident-triage ""
    only_valid benchdesk run incident-triage --case ""
    only_valid benchdesk history log --task-class incident-triage --case ""
    only_valid benchdesk history log --task-class ""
    only_valid benchdesk compare ""
    only_valid benchdesk sign ""
    only_valid benchdesk sign bench/
    only_valid benchdesk sign bench/incident-triage/
    only_valid benchdesk sign bench/incident-triage/cases/
    got=$(COMP_SHOPTS=$opts hcomp benchdesk pin incident-triage "")
    grep -qxF zz-legit_1.0 <<<"$got" && grep -qxF kafka-consumer-lag-rebalance <<<"$got" &&
        pass "[$opts] legitimate case ids are offered beside the hostile ones" ||
        fail "[$opts] legitimate case ids missing: $(flat "$got")"
    got=$(COMP_SHOPTS=$opts hcomp benchdesk run "")
    grep -qxF incident-triage <<<"$got" && pass "[$opts] legitimate task classes are offered" ||
        fail "[$opts] legitimate task classes missing: $(flat "$got")"
    got=$(COMP_SHOPTS=$opts hcomp benchdesk sign bench/incident-triage/)
    grep -qxF bench/incident-triage/cases/zz-legit_1.0 <<<"$got" &&
        pass "[$opts] sign offers the legitimate case directories" ||
        fail "[$opts] sign: $(flat "$got")"
    # What the user types is matched as text, not as a pattern.
    got=$(COMP_SHOPTS=$opts hcomp benchdesk pin incident-triage '*')
    [ -z "$got" ] && pass "[$opts] a typed '*' matches nothing" || fail "[$opts] '*' offers $(flat "$got")"
done
ran=$(find "$BD_TMP" "$root" "$hroot" -name 'PWNED*' 2>/dev/null)
[ -z "$ran" ] && pass "no folder name was run (no PWNED file anywhere)" ||
    fail "completion ran bench data: $ran"
# A history tampered to hold a run id that is shell code: benchdesk refuses it, and the
# completion offers nothing and runs nothing.
seg=$(ls "$root/.benchdesk/history/segments/"* | tail -1)
sed -i "s/\"run_id\":\"$r2\"/\"run_id\":\"\$(touch PWNED5)\"/" "$seg"
grep -qF 'PWNED5' "$seg" && pass "history tampered" || fail "could not tamper the history"
got=$(complete_words benchdesk compare "")
[ -z "$(grep -F PWNED5 <<<"$got")" ] && [ ! -e "$root/PWNED5" ] &&
    pass "a tampered history: no shell code offered or run" || fail "tampered history: $got"

finish
