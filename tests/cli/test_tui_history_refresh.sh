#!/usr/bin/env bash
# The history view while the chain grows (docs/user-guide.md, the history view): a run
# appends records while the view is open with its cursor on the fourth record; when the
# run's records land, the first page is read again, the rows stay on screen meanwhile, and
# the cursor stays on the same record (now three rows further down, below the run's three
# new records) — it is not thrown back to the top, and keys typed meanwhile are not lost.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
add_slow_class "$root" slow-sleepers 3 1.5
mkdir -p "$root/.benchdesk"
printf 'jobs: 1\n' >"$root/.benchdesk/config.yaml"
"$BD_BIN" -C "$root" run vuln-remediation --drafts >/dev/null 2>&1 || true
n=$("$BD_BIN" -C "$root" history log --json --limit 1000 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["records"]))')
[ "$n" -ge 10 ] && pass "the history holds $n records" || { fail "history: $n records"; finish; }

tui_start 100 30
tui_open -C "$root"
expect_screen "slow-sleepers" "the task classes view lists the slow class"
tui_keys /
tui_type slow
tui_keys Enter
expect_screen "1/1 (of 4)" "filtered to slow-sleepers"
tui_keys r
tui_allow_drafts "REFUSED|running [1-9]" 60 || true
expect_screen_re "running [1-9]" "the slow run is running"
# The whole history, cursor on its fourth record, while the run goes on.
tui_keys h
expect_screen "SEQ" "h opens the history"
tui_keys a
tui_wait "(end of the history)" 30 || true
expect_screen "1/$n" "every record, cursor on the newest"
tui_keys j j j
expect_screen "4/$n" "the cursor on the fourth record"
# The run lands three records; the view reads its first page again.
after=$((n + 3))
if tui_wait "/$after" 60; then
    pass "the view read the chain again: $after records"
else
    fail "the view never showed the run's records: $TUI_LAST"
fi
sleep 1
TUI_LAST=$(tui_cap)
if grep -q "7/$after" <<<"$TUI_LAST"; then
    pass "the cursor stayed on its record (7/$after)"
else
    fail "the cursor moved off its record (wanted 7/$after):
$TUI_LAST"
fi
tui_keys j
expect_screen "8/$after" "a key after the refresh moves from there"
tui_keys Q
tui_expect_exit 0 "Q"
tui_expect_clean_stderr "history refresh"
tui_stop
finish
