#!/usr/bin/env bash
# What to do about an error is data (docs/architecture.md#errors-what-to-do-is-data): the
# CLI words the action as the command to type, in the same one line as before, and a
# --json error names it as {"kind", "arg"}.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { "$BD_BIN" "$@"; }
gpg_keys
export HOME="$BD_TMP" XDG_CONFIG_HOME="$BD_TMP" GIT_CONFIG_NOSYSTEM=1

root="$BD_TMP/repo"
mini_bench "$root" alice bob
git init -q -b main "$root"

# line WANT CMD...: the one stderr line, byte for byte.
line() {
    local want=$1 got
    shift
    got=$("$@" 2>&1 >/dev/null) || true
    [ "$got" = "$want" ] && pass "line: $want" || fail "$*: got '$got', wanted '$want'"
}
# action KIND ARG CMD...: the --json error's action.
action() {
    local kind=$1 arg=$2 out
    shift 2
    out=$("$@" 2>/dev/null) || true
    python3 - "$out" "$kind" "$arg" <<'PY' && pass "--json action $kind '$arg'" || fail "$*: $out"
import json, sys
e = json.loads(sys.argv[1])["error"]
assert e["action"] == {"kind": sys.argv[2], "arg": sys.argv[3]}, e
assert "\n" not in e["message"]
PY
}

line 'benchdesk: git.nothing_to_commit: nothing is staged; stage changes with `benchdesk stage PATH...`' \
    bd -C "$root" commit -m empty
action stage "" bd -C "$root" commit -m empty --json

# Advice in the middle of the message: the words after it stay after it.
out=$(bd -C "$root" run tc 2>&1 >/dev/null) || true
grep -qF "sign it (\`benchdesk sign bench/tc --role author\`, then a second person as reviewer), or " <<<"$out" &&
    pass "run: the signing advice in its place" || fail "run: $out"
action sign_task_class tc bd -C "$root" run tc --json

# Words after the advice, and an action with no argument.
line 'benchdesk: compare.no_runs: the history holds no runs yet; `benchdesk run TASK_CLASS` makes one' \
    bd -C "$root" compare
action run "" bd -C "$root" compare --json
line "benchdesk: bench.unknown_case: $root/bench/tc/cases: no case 'nosuch' in task class 'tc'; \`benchdesk list tc\` shows the cases" \
    bd -C "$root" pin tc nosuch
action list_cases tc bd -C "$root" pin tc nosuch --json
line "benchdesk: bench.unknown_task_class: $root/bench: no task class 'nope' here (no nope/registration.yaml); \`benchdesk list\` shows the task classes" \
    bd -C "$root" run nope
action list_task_classes "" bd -C "$root" run nope --json

# An error without an action has no "action" member.
out=$(bd -C "$BD_TMP/none" list --json 2>/dev/null) || true
python3 -c 'import json,sys; e=json.loads(sys.argv[1])["error"]; assert "action" not in e, e' "$out" &&
    pass "no action, no member" || fail "list in no bench --json: $out"

# A bench format v1 file: convert it with migrate.
sed -i 's/^schema_version: 2/schema_version: 1/' "$root/bench/tc/cases/c1/case.yaml"
line "benchdesk: bench.format_v1: $root/bench/tc/cases/c1/case.yaml:1:17: this file is bench format v1; convert the bench with \`benchdesk migrate\` (every signature must then be made again)" \
    bd -C "$root" pin tc
action migrate "" bd -C "$root" pin tc --json
# No message of the core names a command to type: the advice is an action, which each front
# end words. Every string literal given to bd_err_set, bd_err_errno, bd_err_append and
# bd_err_wrap under src/ (the CLI aside) is read; "benchdesk CMD" in one, CMD one of the
# commands --help lists, is a failure.
cmds=$(bd --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}' | paste -sd'|')
[ -n "$cmds" ] || fail "--help lists no commands"
python3 - "$BD_SOURCE_DIR/src" "$cmds" <<'PY' && pass "no core message names a command" || fail "core messages name commands (above)"
import pathlib, re, sys
calls = re.compile(r"\bbd_err_(?:set|errno|append|wrap)\s*\(")
lit = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
bad = []
for f in sorted(pathlib.Path(sys.argv[1]).rglob("*.c")):
    if f.parts[-2] == "cli":
        continue
    src = f.read_text()
    for m in calls.finditer(src):
        depth, i = 1, m.end()
        while depth and i < len(src):      # to the call's closing parenthesis, strings skipped
            c = src[i]
            if c == '"':
                i = lit.match(src, i).end()
                continue
            depth += (c == "(") - (c == ")")
            i += 1
        text = "".join(lit.findall(src[m.end():i]))
        if re.search(r"benchdesk (?:%s)\b" % sys.argv[2], text):
            bad.append(f"{f}:{src.count(chr(10), 0, m.start()) + 1}: {text[:100]}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
finish
