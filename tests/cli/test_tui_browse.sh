#!/usr/bin/env bash
# The TUI, browsing (docs/user-guide.md), driven through tmux: the task classes of the demo
# bench, a task class's cases, a filter, a case, help, the cursor kept when going back,
# a terminal too small and back, and q restoring the terminal. Screen dumps of the views
# are compared with tests/tui/expected/ (tests/tui/refresh-dumps.sh regenerates them).
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
json=$("$BD_BIN" -C "$root" list --json)
names=$(python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.loads(sys.argv[1])["task_classes"]))' "$json")
n_vr=$("$BD_BIN" -C "$root" list vuln-remediation --json |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["cases"]))')

tui_start 100 30
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
for n in $names; do
    expect_screen "$n" "task class $n listed"
done
# Every task class verified: no spinner left in the PINS column.
expect_screen_re "vuln-remediation +bronze +$n_vr .*(ok|bad)" "vuln-remediation's cases counted and its pins checked"
expect_screen "[task classes]" "the status line names the view"
tui_dump tclasses "$root"

# `/` filters the list, Enter keeps the filter, Enter opens the one row left.
tui_keys /
expect_screen "Enter keep" "/ opens the filter line"
tui_type "vuln"
expect_screen "1/1 (of 3)" "typing narrows the list"
tui_keys Enter
tui_keys Enter
expect_screen "CASE▲" "Enter opens the cases view"
expect_screen "1/$n_vr" "every case of vuln-remediation is listed"
expect_screen "[vuln-remediation]" "the status line names the task class"
tui_dump cases "$root"

# Move down three rows, open a case, come back: the cursor is where it was.
tui_keys Down Down Down
expect_screen "4/$n_vr" "the cursor moves"
tui_keys Enter
expect_screen "Provenance" "Enter opens the case view"
expect_screen "case.yaml (" "the preview pane shows case.yaml"
tui_dump case "$root"
tui_keys End
expect_screen "cassette.json" "the case view lists the case's files"
tui_keys Up
expect_screen_re "── (expected|input)/" "moving onto a file previews it"
tui_keys Home
tui_keys Tab
expect_screen "preview 1/" "Tab moves to the preview pane"
tui_keys Tab

tui_keys '?'
expect_screen "Keys of the case view" "? shows the keys of the current view"
expect_screen "move the cursor between the list and the preview pane" "help text comes from the action table"
expect_screen "Everywhere" "help lists the keys that work everywhere"
tui_dump help "$root"
tui_keys q
expect_screen "Provenance" "q leaves the help"
tui_keys q
expect_screen "4/$n_vr" "back in the cases view, the cursor is where it was left"

# Filter the cases; Esc in the filter line drops it.
tui_keys /
tui_type "lodash"
expect_screen "1/1 (of $n_vr)" "the cases view filters"
tui_keys Escape
expect_screen "/$n_vr" "Esc drops the filter"

# Sorting by another column changes the heading.
tui_keys s
expect_screen "DISP▲" "s sorts by the next column"

# Too small: a clear message, and everything back when the terminal grows again.
tmux -L "$TUI_SOCK" resize-window -x 60 -y 20
expect_screen "Terminal too small" "below 80x24 the TUI says so"
expect_screen "60x20, needs at least 80x24" "and says how big it must be"
tui_dump too-small "$root"
tmux -L "$TUI_SOCK" resize-window -x 80 -y 24
expect_screen "DISP▲" "at 80x24 the view is back"
tui_gone "Terminal too small" 10 && pass "the message is gone" || fail "the too-small message stayed"
tmux -L "$TUI_SOCK" resize-window -x 100 -y 30

# q goes back, q on the first view quits, and the terminal is as it was.
tui_keys q
expect_screen "[task classes]" "q goes back to the task classes"
tui_keys q
tui_expect_exit 0 "q on the first view"
tui_expect_clean_stderr "browsing"
tui_stop
finish
