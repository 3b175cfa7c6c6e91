#!/usr/bin/env bash
# The reviewer's walk in the TUI (docs/user-guide.md), through tmux: a run of the demo task
# class, `b` the breakdown panel (failure modes by count, breakdown-key means), Enter on a
# failure mode shows only its cases and Esc all again; a failed case's result shows the
# field-aligned diff of expected and harness output; `/` searches it with n/N and Esc
# ends the search; `e` hands the whole result, uncut, to $PAGER; `Q` during a run asks.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
mkdir -p "$BD_TMP/pager"
# A pager that keeps a copy of what it was given and leaves at once.
printf '#!/bin/sh\ncp "$1" "%s/pager/shown.txt"\n' "$BD_TMP" >"$BD_TMP/pager.sh"
chmod +x "$BD_TMP/pager.sh"
TUI_ENV="PAGER=$BD_TMP/pager.sh"

tui_start 120 40
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
tui_keys /
tui_type vuln
tui_keys Enter
tui_keys r
tui_allow_drafts "REFUSED|running [1-9]|finished" 120 || true
tui_wait " finished" 180 && pass "the run finishes" || fail "the run did not finish: $TUI_LAST"

tui_keys b
expect_screen "What is dragging this run down" "b opens the breakdown panel"
expect_screen_re "Failure modes \(cases reporting each, of [0-9]+ finished\)" "with the failure-mode histogram"
expect_screen "Breakdown keys (mean over the cases reporting each)" "and the breakdown-key means"
mode=$(grep -oE '^▸ [a-z0-9_.]+' <<<"$TUI_LAST" | head -1 | sed 's/^▸ //')
[ -n "$mode" ] && pass "the cursor is on the most frequent failure mode ($mode)" || fail "no failure mode row: $TUI_LAST"
tui_keys Enter
expect_screen "reported $mode; Esc shows every case" "Enter shows only the cases reporting it"
expect_screen_re "[0-9]+/[0-9]+ \(of [0-9]+\)" "the run view's list is narrowed"
tui_keys Escape
expect_screen "showing every case again" "Esc shows every case again"

# The first failed case: the diff, a search, the pager.
tui_keys n
expect_screen "Expected vs harness output:" "n opens a failed case's result with the structural diff"
expect_screen_re "FIELD +EXPECTED +│ HARNESS OUTPUT" "expected and harness output in aligned columns"
tui_keys /
tui_type decision
tui_keys Enter
expect_screen_re "[0-9]+ matching lines?: n next, N previous, Esc ends" "/ searches the result"
tui_keys n
tui_keys N
tui_keys Escape
expect_screen "search ended" "Esc ends the search"
tui_keys e
i=0; while [ ! -s "$BD_TMP/pager/shown.txt" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
if [ -s "$BD_TMP/pager/shown.txt" ] && grep -q "^Expected vs harness output" "$BD_TMP/pager/shown.txt" &&
    grep -q "^Harness output" "$BD_TMP/pager/shown.txt"; then
    pass "e gives the whole result to \$PAGER"
else
    fail "the pager did not get the result: $(head -c 400 "$BD_TMP/pager/shown.txt" 2>/dev/null)"
fi
expect_screen "Expected vs harness output:" "the result view is back after the pager"
tui_keys q
expect_screen_re "passed [0-9]+ +failed" "q goes back to the run view"

# Q while a run is going asks first; n keeps it.
tui_keys r
tui_keys Q
if tui_wait "quit and cancel it? (y/n)" 20; then
    pass "Q during a run asks first"
    tui_keys n
    expect_screen "cancelled: nothing was done" "n keeps the run and the TUI"
else
    # The run finished before the key reached it: Q then quits at once, as it should.
    pass "the run had finished before Q (nothing to ask)"
fi
tui_keys C-c
tui_expect_exit "0|130" "leaving"
tui_stop
finish
