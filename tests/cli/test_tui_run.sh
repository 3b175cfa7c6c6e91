#!/usr/bin/env bash
# The TUI, running (docs/user-guide.md): start a run of a demo task class and see it finish with
# the counts the headless `benchdesk run` gives; walk the failed cases with n/p in the
# result view; open the history; resize the window in the middle of a run; cancel a run
# (nothing left behind, nothing recorded for unfinished cases); Ctrl-C during a run
# restores the terminal.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

export TMPDIR="$BD_TMP/tmp" # the runner's per-case temp dirs land here: we check them
mkdir -p "$TMPDIR"

# What the headless runner says about vuln-remediation, on a copy of its own.
ref=$(demo_pinned)
# The default run: the signed cases of the signed task class (docs/runner.md), as `r` runs.
summary=$("$BD_BIN" -C "$ref" run vuln-remediation --json 2>"$BD_TMP/run.err" | tail -1)
read -r P F N < <(python3 -c '
import json, sys
e = json.loads(sys.argv[1])
s = e["summary"]
print(s["passed"], s["failed"], s["cases"])' "$summary" 2>/dev/null) || true
if [ -z "${P:-}" ]; then
    fail "headless run gave no summary: $(head -c 600 "$BD_TMP/run.err")"
    finish
fi
pass "headless run: $P passed, $F failed"

root=$(demo_pinned)
add_slow_class "$root" slow-sleepers 8 0.6
# One case at a time: the history's order (and so its dump) is the cases' order.
mkdir -p "$root/.benchdesk"
printf 'jobs: 1\n' >"$root/.benchdesk/config.yaml"

tui_start 100 30
tui_open -C "$root"
expect_screen "slow-sleepers" "the task classes view lists the slow task class"
tui_keys /
tui_type vuln
tui_keys Enter
expect_screen "1/1 (of 4)" "filtered to vuln-remediation"

# run_selected WHAT: r runs the selected task class. A task class with unsigned cases is
# refused (docs/provenance.md); then d runs it again allowing drafts, as --drafts did above.
run_selected() {
    tui_keys r
    if tui_allow_drafts "REFUSED|running [1-9]|finished|ABORTED" 60; then
        pass "$1: refused for unsigned cases, d allows drafts"
    fi
}

run_selected "vuln-remediation"
expect_screen "run vuln-remediation" "r opens the run view"
expect_screen_re "passed $P +failed $F +running 0 +queued 0" "the run finishes with the headless counts ($P passed, $F failed)"
expect_screen " finished" "the run view says finished"
expect_screen "$N/$N 100%" "the progress bar is full"
expect_screen_re "mean [0-9.]+ \\[" "the summary line shows the mean and its interval"
tui_dump run "$root"

# The reviewer's walk: n/p through the failed cases.
tui_keys n
expect_screen "failed 1 of $F" "n opens the first failed case"
expect_screen "Failure modes" "the result view shows failure modes"
expect_screen "Breakdown" "and the breakdown"
expect_screen "What the rubric compared:" "what the rubric compared comes first"
tui_dump result "$root"
tui_keys /
tui_type "HARNESS OUTPUT"
tui_keys Enter
expect_screen_re "FIELD +EXPECTED +│ HARNESS OUTPUT" "and expected beside the harness output, field by field"
tui_keys Escape
expect_screen "search ended" "Esc ends the search"
tui_keys g
first=$(grep -oE 'FAILED +score [0-9.]+ +[a-z0-9.-]+' <<<"$TUI_LAST" | awk '{print $4}')
tui_keys n
expect_screen "failed 2 of $F" "n walks to the next failed case"
grep -q "$first" <<<"$(tui_cap | sed -n 2p)" && fail "n did not change the case" || pass "n shows another case"
tui_keys p
expect_screen "failed 1 of $F" "p walks back"
expect_screen "$first" "to the same case"

# The history: every case of the run landed in the chain.
tui_keys h
expect_screen "scope: $first" "h opens the history of the case"
tui_keys a
expect_screen "chain verified: $N records" "the chain holds one record per case and verifies"
tui_dump history "$root"
tui_keys Enter
expect_screen "record" "Enter opens a record"
expect_screen_re "record +#[0-9]+" "the record view shows its seq"
tui_keys q q q
expect_screen "[run vuln-remediation]" "q goes back to the run view"
tui_keys q
expect_screen "[task classes]" "and to the task classes"

# A slow run: resize in the middle, twice, and it still ends with the right counts.
tui_keys / C-u
tui_type slow
tui_keys Enter
run_selected "slow-sleepers"
expect_screen_re "running [1-9]" "the slow run is running"
tmux -L "$TUI_SOCK" resize-window -x 80 -y 24
expect_screen_re "running [0-9]+ +queued" "the run view redraws at 80x24 mid-run"
tmux -L "$TUI_SOCK" resize-window -x 132 -y 40
expect_screen_re "passed 4 +failed 4 +running 0 +queued 0" "the resized run finishes with 4 passed, 4 failed"
expect_screen " finished" "and says finished"
tmux -L "$TUI_SOCK" resize-window -x 100 -y 30

# A rubric's stderr is untrusted: escape sequences are shown as text, never obeyed.
tui_keys n
expect_screen "Rubric stderr" "n opens the first failed slow case"
expect_screen '\x1b[2J\x1b]0;pwned\x07 EVIL' "control characters of the rubric's stderr are drawn visibly (\\x1b)"
title=$(tmux -L "$TUI_SOCK" display-message -p '#{pane_title}')
[ "$title" != pwned ] && pass "the rubric could not retitle the terminal" ||
    fail "the rubric's escape sequence reached the terminal (title: $title)"
tui_keys q

# Cancel: running cases are killed, the rest are not run, nothing is left behind.
tui_keys r
expect_screen_re "running [1-9]" "a second slow run is running"
tui_keys c
expect_screen " cancelled" "c cancels the run"
expect_screen "not run" "unfinished cases are marked not run"
run_id=$(grep -oE '[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}' <<<"$TUI_LAST" | head -1)
done_n=$(grep -oE 'passed [0-9]+ +failed [0-9]+' <<<"$TUI_LAST" | awk '{print $2 + $4}')
left=$(ls -d "$TMPDIR"/benchdesk-"$run_id"-* 2>/dev/null || true)
[ -z "$left" ] && pass "no temp dir left by the cancelled run" || fail "temp dirs left: $left"
tui_keys h
want=$((N + 8 + done_n))
expect_screen "chain verified: $want records" "only finished cases were recorded ($want records)"
tui_keys q

# Ctrl-C during a run cancels it and restores the terminal.
tui_keys r
expect_screen_re "running [1-9]" "a third slow run is running"
tui_keys C-c
tui_expect_exit 130 "Ctrl-C during a run"
tui_expect_clean_stderr "running"
tui_stop
finish
