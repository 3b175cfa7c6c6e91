#!/usr/bin/env bash
# On a terminal, run draws a live progress line on stderr (done/total, passed, failed,
# running, elapsed, ETA), redrawn in place; failures still get their own line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"

if ! command -v script >/dev/null; then
    echo "SKIP: util-linux 'script' is not installed, so no pseudo-terminal can be made"
    finish
    exit 0
fi
log="$BD_TMP/tty"
TMPDIR="$RUNTMP" script -qec "$BD_BIN -C $FX run adversarial --isolation subprocess --drafts --jobs 2 --case pass --case exit-nonzero --case sleep-forever" "$log" >/dev/null 2>&1 || true
grep -q $'\r\033\[K' "$log" && pass "progress redrawn in place" || fail "no redraw: $(head -c 400 "$log")"
grep -q $'\033\[32m' "$log" && pass "colour on a terminal" || fail "no colour"
# Compare text without colours and redraw codes.
plain="$BD_TMP/plain"
sed -e $'s/\033\[[0-9;]*[mK]//g' -e $'s/\r/\\n/g' "$log" | sed 's/\\n/\n/g' >"$plain"
log="$plain"
grep -qE '[0-9]+/3 done  .*passed  .*failed  [0-9]+ running  [0-9.]+s elapsed  ETA ' "$log" \
    && pass "progress: done/total, passed, failed, running, elapsed, ETA" || fail "progress fields: $(head -c 600 "$log" | cat -v)"
grep -q 'exit-nonzero: .*FAIL' "$log" && pass "a failure gets its own line" || fail "no failure line"
grep -q '^run .*isolation: subprocess' "$log" && pass "summary table after the run" || fail "no table"
NO_COLOR=1 TMPDIR="$RUNTMP" script -qec "$BD_BIN -C $FX run adversarial --isolation subprocess --drafts --case pass" "$BD_TMP/nc" >/dev/null 2>&1 || true
grep -q $'\033\[3[12]m' "$BD_TMP/nc" && fail "NO_COLOR ignored" || pass "NO_COLOR honoured"
grep -q $'\r\033\[K' "$BD_TMP/nc" && pass "NO_COLOR still redraws the line" || fail "NO_COLOR: no progress line"
finish
