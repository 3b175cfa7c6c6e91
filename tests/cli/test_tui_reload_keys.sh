#!/usr/bin/env bash
# Keys typed while the bench is re-read (docs/user-guide.md, "Re-reading the bench"):
# Ctrl-R closes the views down to the first and opens them again as the model loads, and
# keys typed meanwhile wait until the views are open again, then reach the view they were
# typed at, in order. Each task-class load is slowed (BENCHDESK_MODEL_SLOW_MS) so the
# re-opening is still going when the keys arrive:
#   - `R` on a case view right after Ctrl-R is the case view's record (here it says the
#     SUT replays cassettes), not the first view's "run all";
#   - `q` `q` after Ctrl-R close the case view, then the cases view: the TUI is left on
#     the task classes view, not quit;
#   - a re-opening slower than 3 s hands the keys to whatever is open by then (the cases
#     view, which opens at once and waits for its rows) and stops there.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
tc=vuln-remediation
read -r id _ <<<"$(case_ids "$root" "$tc")"
[ -n "$id" ] && pass "case $id" || { fail "no case in $tc"; finish; }

# open_case: from the task classes view to the case view of $id.
open_case() {
    tui_open_cases vuln
    tui_keys /
    tui_type "$id"
    tui_keys Enter
    expect_screen "1/1 (of " "$id is the only row left"
    tui_keys Enter
    expect_screen_re "^ $id " "the case view of $id"
}

tui_start 100 30
TUI_ENV="BENCHDESK_MODEL_SLOW_MS=700"
tui_open -C "$root"
open_case

# 1. R typed with Ctrl-R (one read of the terminal: the re-opening has just begun).
tui_keys C-r R
expect_screen "replays cassettes" "R typed during the re-read reaches the case view (record)"
expect_screen_re "^ $id " "the case view is open again, on top"
if grep -q "still loading" <<<"$TUI_LAST"; then
    fail "R went to a view passed on the way: $(grep "still loading" <<<"$TUI_LAST")"
else
    pass "nothing said a task class was still loading"
fi
if grep -Eq "^ *run $tc|cases running" <<<"$TUI_LAST"; then fail "a run started"; else
    pass "no run started"; fi

# 2. Order: q q after Ctrl-R leave the case view, then the cases view (on the first view,
#    q would quit).
tui_keys C-r q q
sleep 3 # the re-opening (slowed to 0.7 s a task class) and the held keys are done
pane=$(tui_cap)
if grep -q "^EXIT$TUI_N=" <<<"$pane"; then fail "q q typed during the re-read quit the TUI"; else
    pass "the TUI is still running"; fi
grep -q "TASK CLASS" <<<"$pane" && ! grep -q "CASE▲" <<<"$pane" &&
    pass "q q typed during the re-read: back on the task classes view" ||
    fail "not on the task classes view; the pane was:
$pane"
tui_keys q
tui_expect_exit 0 "q from the first view"

# 3. A re-opening slower than the wait: the keys go to what is open by then.
TUI_ENV="BENCHDESK_MODEL_SLOW_MS=3800"
tui_open -C "$root"
open_case
tui_keys C-r
sleep 3.3
tui_keys m
expect_screen "Messages, newest first" "after 3 s a key goes to what is open (m: messages)"
sleep 6 # the task class loads meanwhile: the re-opening must not cover the messages view
expect_screen "Messages, newest first" "the re-opening stopped under the messages view"
tui_keys q
# Under it: the cases view, opened on the way (it waits for its rows), not the case view.
expect_screen "CASE▲" "q goes back to the view the re-opening had reached (the cases view)"
expect_screen "1/18" "its rows loaded meanwhile"
if grep -q "^ $id .*digest" <<<"$TUI_LAST"; then fail "the case view was opened after all"; else
    pass "the case view was not opened after the keys went on"; fi
tui_keys q
expect_screen "TASK CLASS" "q goes back to the first view"
tui_keys q
tui_expect_exit 0 "q from the first view"
finish
