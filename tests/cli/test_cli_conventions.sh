#!/usr/bin/env bash
# Command-line conventions (docs/benchdesk.1), for every command: --help prints usage on
# stdout and exits 0; a bad option is one error line "benchdesk: <code>: <message>" on
# stderr with exit 2; --json errors are {"error":{"code","message"}}; a misspelt command
# or task class gets a "did you mean"; an unknown task class exits 2.
. "$(dirname "$0")/lib.sh"

root=$(demo_copy)
cmds=$("$BD_BIN" --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
[ -n "$cmds" ] && pass "commands listed by --help: $(echo $cmds)" || fail "no commands in --help"

for c in $cmds; do
    rc=0
    out=$("$BD_BIN" -C "$root" "$c" --help 2>"$BD_TMP/err") || rc=$?
    if [ "$rc" = 0 ] && grep -q "usage: benchdesk $c" <<<"$out" && [ ! -s "$BD_TMP/err" ]; then
        pass "$c --help: usage on stdout, exit 0"
    else
        fail "$c --help: exit $rc, stdout: $(head -c 200 <<<"$out"), stderr: $(head -c 200 "$BD_TMP/err")"
    fi
    rc=0
    "$BD_BIN" -C "$root" "$c" --no-such-option >/dev/null 2>"$BD_TMP/err" || rc=$?
    lines=$(wc -l <"$BD_TMP/err")
    if [ "$rc" = 2 ] && [ "$lines" = 1 ] && grep -qE '^benchdesk: [a-z_]+\.[a-z_]+: .+' "$BD_TMP/err"; then
        pass "$c --no-such-option: one error line, exit 2"
    else
        fail "$c --no-such-option: exit $rc, $lines line(s): $(head -c 300 "$BD_TMP/err")"
    fi
done

expect 2 usage.unknown_command -- "$BD_BIN" -C "$root" lsit
msg=$("$BD_BIN" -C "$root" lsit 2>&1 || true)
grep -q "did you mean 'list'" <<<"$msg" && pass "lsit suggests list" || fail "no suggestion for lsit"
expect 2 bench.unknown_task_class -- "$BD_BIN" -C "$root" list vuln-remedation
msg=$("$BD_BIN" -C "$root" list vuln-remedation 2>&1 || true)
grep -q "did you mean 'vuln-remediation'" <<<"$msg" &&
    pass "a misspelt task class suggests the real one" || fail "no suggestion for vuln-remedation"
expect 2 bench.unknown_task_class -- "$BD_BIN" -C "$root" history log --task-class nope
json=$("$BD_BIN" -C "$root" list nope --json 2>/dev/null || true)
python3 -c 'import json,sys; e=json.loads(sys.argv[1])["error"]; assert e["code"]=="bench.unknown_task_class" and e["message"]' "$json" &&
    pass "--json error is {\"error\":{code,message}}" || fail "--json error: $json"
# getopt_long spellings: --jobs=N, -j N and -jN reach the same check as --jobs N.
for spelling in "--jobs=0" "-j 0" "-j0" "--jobs 0"; do
    msg=$("$BD_BIN" -C "$root" run vuln-remediation $spelling 2>&1 >/dev/null || true)
    grep -q -- "--jobs wants a number from 1 to 1024, not '0'" <<<"$msg" &&
        pass "run $spelling is read as --jobs 0" || fail "run $spelling: $msg"
done
finish
