#!/usr/bin/env bash
# The TUI's keys (docs/user-guide.md), driven through tmux with TERM=xterm-256color inside it
# (the terminfo entry does not know tmux's Home/End): Esc and Left never quit, Esc drops
# a kept filter before it goes back, raw Home/End/PgDn sequences work, an unknown escape
# sequence is ignored (never taken as Esc), `m` keeps every message whole, `h` on a
# result opened from the history keeps its scope (a use-after-free once) and `q` goes
# back one view, Ctrl-R keeps the views open, `q` on the first view quits cleanly.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
# One record in the history, so the history view has a row to open.
"$BD_BIN" -C "$root" run vuln-remediation --drafts --case "$("$BD_BIN" -C "$root" list vuln-remediation --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["cases"][0]["case_id"])')" >/dev/null 2>"$BD_TMP/run.err" ||
    fail "headless run for the history fixture failed: $(head -c 600 "$BD_TMP/run.err")"

TUI_ENV="TERM=xterm-256color"
tui_start 100 30
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"

tui_keys Escape
expect_screen "Esc never quits" "Esc on the first view says it never quits"
tui_keys Left
expect_screen "first view: q or Q quits" "Left on the first view does not quit"
expect_screen "TASK CLASS" "still in the task classes view"

# Raw sequences, whatever terminfo says: ESC [ 4 ~ (End), ESC [ 1 ~ (Home).
tui_keys G
expect_screen "3/3" "G goes to the last row"
tmux -L "$TUI_SOCK" send-keys -H 1b 5b 31 7e
expect_screen "1/3" "raw ESC [ 1 ~ is Home"
tmux -L "$TUI_SOCK" send-keys -H 1b 5b 34 7e
expect_screen "3/3" "raw ESC [ 4 ~ is End"
tmux -L "$TUI_SOCK" send-keys -H 1b 4f 48
expect_screen "1/3" "raw ESC O H is Home"
# An unknown sequence and an Alt-key are ignored: nothing is popped, nothing quits.
tmux -L "$TUI_SOCK" send-keys -H 1b 5b 39 39 3b 39 7a
tmux -L "$TUI_SOCK" send-keys -H 1b 78
sleep 0.3
tui_keys '?'
expect_screen "Keys of the task classes view" "after unknown sequences the TUI still answers keys"
tui_keys q
expect_screen "[task classes]" "q leaves the help"

# A kept filter: Esc drops it first, then goes back.
tui_keys /
tui_type vuln
tui_keys Enter
expect_screen "1/1 (of 3)" "the filter is kept"
tui_keys Enter
expect_screen "[vuln-remediation]" "Enter opens the cases view"
tui_keys /
tui_type zzzz-no-such
tui_keys Enter
expect_screen "(of " "a filter kept in the cases view"
tui_keys Escape
expect_screen "filter cleared" "Esc drops the kept filter"
expect_screen "CASE▲" "and stays in the cases view"
tui_keys Escape
expect_screen "[task classes]" "a second Esc goes back"
expect_screen "1/1 (of 3)" "where the task classes' own filter is still kept"
tui_keys Escape
expect_screen "filter cleared" "Esc drops that filter too"
expect_screen "TASK CLASS" "and does not quit"

# History -> record -> result -> h: the scope is the case's, q goes back one view.
tui_keys /
tui_type vuln
tui_keys Enter Enter
expect_screen "CASE▲" "back in the cases view"
tui_keys h
expect_screen "scope: vuln-remediation" "h opens the task class's history"
# The scope shows before the records are read: Enter only opens a row that is listed.
expect_screen "ghsa-demo-0001" "the history lists the record"
tui_keys Enter
expect_screen_re "Rubric stderr|score" "Enter opens the record's result"
tui_keys h
expect_screen_re "scope: [a-z0-9]" "h on the result opens a history with a real scope"
if grep -qE 'scope: [^ -~]' <<<"$TUI_LAST"; then fail "garbage in the history scope: $TUI_LAST"; else pass "the scope is text, not freed memory"; fi
tui_keys q
expect_screen_re "Rubric stderr|score" "q goes back one view, to the result"
tui_keys q
expect_screen "scope: vuln-remediation" "q goes back to the first history"
tui_keys q
expect_screen "CASE▲" "and then to the cases view"

# `m`: every message whole, however long.
tui_keys m
expect_screen "Messages, newest first" "m opens the message log"
expect_screen "filter cleared" "the log keeps earlier notices"
expect_screen "Esc never quits" "and the first one"
tui_keys q
expect_screen "CASE▲" "q leaves the message log"

# Ctrl-R keeps the open views (tests/cli/test_tui_reload.sh checks it deeper).
tui_keys C-r
expect_screen "re-read the bench from disk" "Ctrl-R re-reads the bench"
expect_screen "CASE▲" "Ctrl-R keeps the cases view open"

tui_keys q
expect_screen "TASK CLASS" "q goes back"
tui_keys q
tui_expect_exit 0 "q on the first view"
tui_expect_clean_stderr "keys"
tui_stop
finish
