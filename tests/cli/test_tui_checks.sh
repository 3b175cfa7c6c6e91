#!/usr/bin/env bash
# The reviewer's result view at 80x24 (docs/user-guide.md#result-the-reviewers-walk), through
# tmux: a failed case shows what the rubric compared first (the checks table, above the breakdown
# and the field diff); a multi-line harness value (a unified diff) is shown as its lines,
# never \n-escaped, in the pane and in the pager; `?` says `/` searches; `c` opens the
# case, `R` shows the rubric in $PAGER; "? help" stays on the hints row at 80 columns; a
# draft case's result from a run with drafts allowed is marked unverified; and a record
# scored on a case edited since carries the stale mark in the history view.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
mkdir -p "$BD_TMP/pager"
# A pager that keeps a copy of what it was given (one file per call) and leaves at once.
printf '#!/bin/sh\ncp "$1" "%s/pager/shown.$$.txt"\n' "$BD_TMP" >"$BD_TMP/pager.sh"
chmod +x "$BD_TMP/pager.sh"
TUI_ENV="PAGER=$BD_TMP/pager.sh"

# wait_pager PATTERN: the newest pager copy holding PATTERN (grep -E), or fail.
wait_pager() {
    local i=0 f
    while [ $i -lt 200 ]; do
        for f in "$BD_TMP"/pager/shown.*.txt; do
            [ -s "$f" ] && grep -qE "$1" "$f" && { printf '%s\n' "$f"; return 0; }
        done
        sleep 0.05; i=$((i + 1))
    done
    return 1
}

tui_start 80 24
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
tui_keys /
tui_type vuln
tui_keys Enter
tui_keys r
tui_allow_drafts "REFUSED|running [1-9]|finished" 120 || true
tui_wait " finished" 180 || fail "the run did not finish: $TUI_LAST"
# The signed cases ran (the others were skipped); `d` runs again with the drafts too.
tui_keys d
tui_wait "18/18 100%" 180 && tui_wait " finished" 60 && pass "the run with drafts allowed finishes" ||
    fail "the run with drafts did not finish: $TUI_LAST"

# The last case of the class is a draft: its result says so.
tui_keys G Enter
expect_screen "NOT verified" "a draft case's result from the live run is marked unverified"
# The run's end is announced on that row for a moment first: wait for the hints.
for _ in $(seq $((BD_TUI_TIMEOUT * 20))); do
    last=$(tui_cap | tail -1)
    grep -q "? help" <<<"$last" && break
    sleep 0.05
done
grep -q "? help" <<<"$last" && pass "\"? help\" is on the hints row at 80 columns" || fail "hints row: $last"
tui_keys q

# The first failed case: the checks first.
tui_keys n
expect_screen "What the rubric compared:" "the result view opens with what the rubric compared"
screen=$(tui_cap)
crow=$(grep -n "What the rubric compared" <<<"$screen" | head -1 | cut -d: -f1 || true)
brow=$(grep -n "^ Breakdown" <<<"$screen" | head -1 | cut -d: -f1 || true)
drow=$(grep -n "Expected vs harness output" <<<"$screen" | head -1 | cut -d: -f1 || true)
if [ -n "$crow" ] && { [ -z "$brow" ] || [ "$crow" -lt "$brow" ]; } && { [ -z "$drow" ] || [ "$crow" -lt "$drow" ]; }; then
    pass "the checks table comes before the breakdown and the field diff"
else
    fail "order (checks $crow, breakdown $brow, diff $drow): $screen"
fi
expect_screen_re "✗ validator_verdict +\"pass\" +│ \"fail\"" "the failed check is a row: name, expected, actual"
expect_screen_re "CHECK +EXPECTED +│ ACTUAL" "under the columns check, expected, actual"

# The harness output's unified diff is shown as its lines.
tui_keys /
tui_type "+++ b/requirements"
tui_keys Enter
expect_screen_re "[0-9]+ matching lines?" "the diff's +++ line is a line of its own to search"
screen=$(tui_cap)
if grep -qE '^ diff +.*│ --- a/requirements.txt *$' <<<"$screen" && grep -qE '│ \+\+\+ b/requirements.txt *$' <<<"$screen" &&
    ! grep -qF '\n' <<<"$screen"; then
    pass "a multi-line value is shown as lines, not \\n-escaped"
else
    fail "multi-line value: $screen"
fi
tui_keys Escape
expect_screen "search ended" "Esc ends the search"
tui_keys e
if f=$(wait_pager '^ *\+\+\+ b/requirements.txt'); then
    # The rows (before the two documents, which are JSON as written) show the value as lines.
    rows=$(sed '/^Expected (case.yaml)$/,$d' "$f")
    grep -F '\n' <<<"$rows" | grep -q -- '--- a/' && fail "the pager has a \\n-escaped diff" ||
        pass "the pager shows the multi-line value as lines"
    grep -q "^What the rubric compared" "$f" && pass "and what the rubric compared" || fail "no checks in the pager"
else
    fail "the pager did not get the result as lines: $(cat "$BD_TMP"/pager/shown.*.txt 2>/dev/null | head -c 600)"
fi
rm -f "$BD_TMP"/pager/shown.*.txt

# Help names the search for what it is.
tui_keys '?'
expect_screen "search the view" "? says / searches the result view"
screen=$(tui_cap)
grep -q "/ .*filter the list" <<<"$screen" && fail "help still says / filters: $screen" || pass "and not that it filters"
tui_keys q

# R: the rubric in the pager; c: the case.
tui_keys R
wait_pager 'Rubric for vuln-remediation' >/dev/null && pass "R shows the task class's rubric in \$PAGER" ||
    fail "R: the pager did not get the rubric"
tui_keys c
expect_screen_re "ghsa-demo-0005" "c opens the case view of the result's case"
# "Provenance" heads the signatures' section; the title's "provenance ..." badge lasts
# only while they are checked, which may be over before the pane is read.
expect_screen "Provenance" "the case view shows the case"
tui_keys q
expect_screen_re "FAILED +score 0\.75 +ghsa-demo-0005" "q comes back to the result"
tui_keys C-c
tui_expect_exit "0|130" "leaving"

# Edit a scored case and pin it: its records are stale, and the history view says so.
c1=$(ls "$root/bench/vuln-remediation/cases" | grep '^ghsa-demo-0001')
sed -i 's/^title: "\(.*\)"$/title: "\1 (edited)"/' "$root/bench/vuln-remediation/cases/$c1/case.yaml"
"$BD_BIN" -C "$root" pin vuln-remediation "$c1" >/dev/null 2>&1 || true
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens again"
tui_keys h
expect_screen "chain verified" "h opens the history"
tui_keys a
expect_screen_re "ghsa-demo-0001.*[✓✗] [01]\.[0-9]{2}\*" "a stale record carries the mark"
screen=$(tui_cap)
other=$(grep -E "ghsa-demo-000[2-9].*[✓✗] [01]\.[0-9]{2}" <<<"$screen" | head -1 || true)
grep -q '\*' <<<"$other" && fail "a current record is marked stale: $other" || pass "a current record is not marked"
tui_keys /
tui_type "$c1"
tui_keys Enter
expect_screen "* stale (case changed" "the footer names why the selected record is stale"
tui_keys C-c
tui_expect_exit "0|130" "leaving"
tui_stop
finish
