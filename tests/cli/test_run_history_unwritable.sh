#!/usr/bin/env bash
# Append before publish (docs/runner.md, docs/history.md): with a history that cannot be written (here a
# read-only mount of it), `run` refuses before the first spawn with exit 4 — no case is
# started, none is reported finished, nothing is counted; `promote`, whose refusal cannot
# be put on record, exits 4 too (not 3).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
bd migrate >/dev/null 2>&1 || true
bd run adversarial "${SUB[@]}" --drafts --case pass >/dev/null 2>&1 || fail "first run -> $?"
hist=$FX/.benchdesk/history
[ -d "$hist" ] || { fail "no history dir at $hist"; finish; }

if [ "$(id -u)" = 0 ]; then
    # Root ignores modes: make it a read-only mount in a private mount namespace.
    command -v unshare >/dev/null || { echo "SKIP: no unshare"; exit 77; }
    ro() { unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' \
        sh "$hist" env TMPDIR="$RUNTMP" "$BD_BIN" -C "$FX" "$@"; }
else
    chmod 500 "$hist"
    ro() { bd "$@"; }
fi
# promote: the refusal's audit record cannot be written -> exit 4 (not 3), and it says so.
rc=0
ro promote adversarial silver >/dev/null 2>"$BD_TMP/perr" || rc=$?
[ "$rc" = 4 ] && pass "promote with an unwritable history -> exit 4" || fail "promote -> $rc: $(cat "$BD_TMP/perr")"
grep -q 'could not be recorded' "$BD_TMP/perr" && pass "promote says the refusal was not recorded" ||
    fail "promote stderr: $(cat "$BD_TMP/perr")"
rc=0
ro run adversarial "${SUB[@]}" --drafts --json --case pass --case two-json >"$BD_TMP/ev" 2>"$BD_TMP/err" || rc=$?
[ "$(id -u)" = 0 ] || chmod 700 "$hist"
[ "$rc" = 4 ] && pass "unwritable history -> exit 4" || fail "unwritable history -> $rc: $(cat "$BD_TMP/err" "$BD_TMP/ev")"
cat "$BD_TMP/ev" "$BD_TMP/err" | grep -q 'io.error' && pass "io.error named" || fail "no io.error: $(cat "$BD_TMP/err")"
grep -q '"case.started"' "$BD_TMP/ev" && fail "a case was started" || pass "no case was started"
grep -q '"case.finished"' "$BD_TMP/ev" && fail "a case was reported finished" || pass "no case reported finished"
[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"
bd history verify >/dev/null 2>&1 && pass "history still verifies" || fail "history verify"
finish
