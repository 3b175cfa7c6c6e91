#!/usr/bin/env bash
# The TUI's stage view lists verdict files in a section of their own and flags a deleted
# one (docs/provenance.md#verdicts, docs/security.md#a-deleted-verdict-file), driven through
# tmux; `u` stages a verdict file and unstages a staged one. The result view marks a record
# of a run with drafts allowed as unverified; the recommend view names its full run and the
# unreviewed failures. Keys made by the test.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
command -v tmux >/dev/null || { echo "skipped: tmux is not installed"; exit 77; }
gpg_keys
trap 'gpgconf --homedir "$BD_TMP/k/gnupg" --kill all >/dev/null 2>&1 || true
      gpgconf --homedir "$BD_TMP/k/revoke" --kill all >/dev/null 2>&1 || true; _tui_cleanup' EXIT
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state"
mkdir -p "$HOME"
root="$BD_TMP/bench"
mini_bench "$root" alice bob
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
pins="$root/bench/tc/cases/digests.yaml"
T=$(awk '$1 == "task_class:" {print $2}' "$pins")
for c in c1 c2; do
    python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$hist" \
        "{\"task_class\":\"tc\",\"case_id\":\"$c\",\"case_digest\":\"$(awk -v c="$c:" '$1 == c {print $2}' "$pins")\",\"task_class_digest\":\"$T\",\"passed\":false,\"score\":0.1,\"run_id\":\"r1\",\"run_cases\":2}"
done
python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$hist" \
    "{\"task_class\":\"tc\",\"case_id\":\"c3\",\"case_digest\":\"$(awk '$1 == "c3:" {print $2}' "$pins")\",\"task_class_digest\":\"$T\",\"passed\":true,\"score\":1,\"run_id\":\"r2\",\"provenance_verified\":false}"
printf '.benchdesk/\n' >"$root/.gitignore"
git -C "$root" init -q && git -C "$root" config user.name t && git -C "$root" config user.email t@x.org
bd verdict 1 --verdict flaky --key "$ALICE_FPR" >/dev/null || fail "alice's verdict"
git -C "$root" add -A && git -C "$root" commit -qm bench
old=$(cd "$root" && ls audit/verdicts/tc/r1/c1/*.json)
rm "$root/$old"                                                        # deleted
bd verdict 2 --verdict confirmed --key "$BOB_FPR" >/dev/null || fail "bob's verdict" # new

tui_start 160 30
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
tui_keys w
expect_screen "Verdict files (audit/verdicts/, staged or not):" "the stage view has a verdict section"
expect_screen "!! a verdict deleted" "a deleted verdict file is flagged"
expect_screen_re "\? +audit/verdicts/tc/r1/c2/$BOB_FPR-" "the new verdict file is in the section"
if sed -n '/Untracked files:/,/Verdict files/p' <<<"$TUI_LAST" | grep -q 'audit/verdicts/tc'; then
    fail "a verdict file is listed among the untracked files too"
else
    pass "verdict files only in their own section"
fi
# u on a verdict file stages it, u again unstages it
for _ in $(seq 1 12); do tui_keys Down; done # the last row: bob's new verdict file
tui_keys u
tui_wait_re "1 staged, 1 unstaged" 10 >/dev/null && pass "u stages the verdict file" ||
    fail "not staged: $(tui_cap)"
tui_keys u
tui_wait_re "0 staged, 1 unstaged, 1 untracked" 10 >/dev/null && pass "u again unstages it" ||
    fail "not unstaged: $(tui_cap)"
# the result of a run with drafts allowed is marked unverified (from the history view)
tui_keys Escape
expect_screen "TASK CLASS" "back to the task classes view"
tui_keys h
expect_screen "c3" "the history view lists record 3"
tui_keys Enter
expect_screen "NOT verified: a draft or unsigned case" "the result view marks a --drafts record unverified"
tui_stop
# the recommend view names the evidence's full run and what reviewers left unreviewed
tui_start 160 40
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens again"
tui_keys M
expect_screen "Evidence: full run r2" "the recommend view names the latest full run"
expect_screen_re "unreviewed +0 failures without a verdict" "the recommend view says what is unreviewed"
tui_stop
finish
