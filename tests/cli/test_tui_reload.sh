#!/usr/bin/env bash
# Ctrl-R re-reads the bench and keeps the view stack (docs/user-guide.md): the same views open
# again on the reloaded model with their cursors where they were — a case view, a result
# opened from the history and one opened from the live run — and a view whose case is
# gone from the bench closes, with a message naming it, leaving the views below it.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
tc=vuln-remediation
ids=$(case_ids "$root" "$tc")
read -r id1 id2 id3 _ <<<"$ids"
# One record in the history, so the history view has a result to open.
"$BD_BIN" -C "$root" run "$tc" --drafts --case "$id1" >/dev/null 2>"$BD_TMP/run.err" ||
    fail "headless run for the history fixture failed: $(head -c 600 "$BD_TMP/run.err")"

tui_start 100 30
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
tui_keys G
expect_screen "3/3" "cursor on $tc"
tui_keys Enter
expect_screen "[$tc]" "the cases view of $tc"
expect_screen "$id3" "its cases are listed"
tui_keys j j
expect_screen "3/18" "cursor on the third case"
tui_keys Enter
expect_screen_re "^ $id3 " "the case view of $id3"

# 1. Ctrl-R on a case view: the case view again, then the cases view under it with its
#    cursor on the same row, and the task classes view under that.
tui_keys C-r
expect_screen "re-read the bench from disk" "Ctrl-R re-reads the bench"
expect_screen_re "^ $id3 " "the case view is open again on the same case"
if grep -q "closes the" <<<"$TUI_LAST"; then fail "Ctrl-R asked to close views"; else pass "Ctrl-R did not ask to close views"; fi
tui_keys q
expect_screen "CASE▲" "q goes back to the cases view"
expect_screen "3/18" "the cases view keeps its cursor on the third case"
tui_keys q
expect_screen "3/3" "and the task classes view its cursor on $tc"

# 2. A result opened from the history: Ctrl-R opens the history and the result again.
tui_keys h
expect_screen "SEQ" "h opens the history"
expect_screen "$id1" "the record of the headless run is listed"
tui_keys Enter
expect_screen_re "score [0-9.]+ +$id1" "Enter opens the record's result"
tui_keys C-r
expect_screen "re-read the bench from disk" "Ctrl-R over a result from the history"
expect_screen_re "score [0-9.]+ +$id1" "the result is open again"
tui_keys q
expect_screen "SEQ" "q goes back to the history under it"
tui_keys q
expect_screen "TASK CLASS" "and to the task classes view"

# 3. A result opened from the live run.
tui_keys Enter
expect_screen "[$tc]" "the cases view again"
expect_screen "$id2" "its cases are read again"
tui_keys g j
expect_screen "2/18" "cursor on the second case"
tui_keys r d
expect_screen_re "finished|REFUSED" "the run of $id2 ends"
tui_wait_re " finished( |$)" 60 || true
tui_keys Enter
expect_screen_re "score [0-9.]+ +$id2" "Enter opens the run's result"
tui_keys C-r
expect_screen "re-read the bench from disk" "Ctrl-R over a result from the run"
expect_screen_re "score [0-9.]+ +$id2" "the run's result is open again"
tui_keys q
expect_screen_re "run $tc " "q goes back to the run view"
tui_keys q
expect_screen "CASE▲" "and to the cases view"

# 4. The case is gone: its view closes with a message, the cases view stays.
tui_keys g Enter
expect_screen_re "^ $id1 " "the case view of $id1"
mv "$root/bench/$tc/cases/$id1" "$BD_TMP/gone"
tui_keys C-r
expect_screen "reload: case '$id1' is no longer in $tc" "a case gone from the bench: said so"
expect_screen "CASE▲" "the cases view under it stays open"
mv "$BD_TMP/gone" "$root/bench/$tc/cases/$id1"

tui_keys Q
tui_expect_exit 0 "Q after the reloads"
tui_expect_clean_stderr "reload"
tui_stop
finish
