#!/usr/bin/env bash
# What the reviewer reads at 80x24 (docs/user-guide.md): a refusal is never cut before the part
# that says what to do — a run refused for an unsigned task class, a BAD signature's
# reason in the case view and in a refused run, a commit refused by the pin check — and
# the TUI names its own keys, never command-line options it cannot take
# (`benchdesk sign`, `--allow-weaker-isolation`); `W` is the TUI's consent to a weaker
# isolation class. Task-class names and the result title's score and case id are whole
# at 80x24, and the light theme's cursor row is drawn unlike its heading row.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

# cut_line PATTERN: a line of the pane matching PATTERN that ends in the ellipsis.
no_cut() {
    local pat=$1 what=$2
    if grep -E -- "$pat" <<<"$TUI_LAST" | grep -q '…'; then
        fail "$what: cut with …:
$TUI_LAST"
    else
        pass "$what: not cut"
    fi
}
no_cli_advice() {
    if grep -qE 'benchdesk (sign|stage)|--allow-weaker-isolation|--role|--key' <<<"$TUI_LAST"; then
        fail "$1: command-line advice on the TUI's screen:
$TUI_LAST"
    else
        pass "$1: no command-line advice"
    fi
}

root=$(demo_pinned)
tc=vuln-remediation
ids=$(case_ids "$root" "$tc")
read -r id1 id2 _ <<<"$ids"
longest=$(tr ' ' '\n' <<<"$ids" | awk '{ print length, $0 }' | sort -rn | head -1 | cut -d' ' -f2)

# The bench in git, so the stage view can be refused a commit.
git -C "$root" init -q -b main
git -C "$root" config user.name "Tess Tester"
git -C "$root" config user.email tess@bench.example
git -C "$root" add -A && git -C "$root" commit -q -m "demo bench" || fail "cannot commit the bench"

tui_start 80 24

# ---- 80x24: names whole ------------------------------------------------------------
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens at 80x24"
expect_screen "✓ ok" "the pins are checked"
for n in distroless-migration incident-triage vuln-remediation; do
    grep -qE "^ . $n +bronze" <<<"$TUI_LAST" && pass "task class $n is whole at 80x24" ||
        fail "task class $n is cut at 80x24:
$TUI_LAST"
done

# The result of the longest case id: the score and the whole id in the title.
tui_keys G Enter
expect_screen "[$tc]" "the cases view"
expect_screen "${longest:0:30}" "the longest case id is listed"
tui_keys /
tui_type "$longest"
tui_keys Enter
expect_screen "1/1 (of 18)" "filtered to $longest"
tui_keys r
expect_screen_re "run $tc" "r runs it"
tui_wait_re " finished( |$)|REFUSED" 60 || true
tui_keys Enter
expect_screen_re "(PASSED|FAILED)  score [0-9.]+  $longest" "result title at 80x24: the score and the whole case id"
tui_keys h
expect_screen "SEQ" "the history at 80x24"
tui_wait "(end of the history)" 90 || true
grep -qE " $tc +${longest:0:20}" <<<"$TUI_LAST" && pass "history at 80x24: the task class is whole" ||
    fail "history at 80x24 cuts the task class:
$TUI_LAST"
tui_keys q q q q
expect_screen "TASK CLASS" "back to the task classes view"

# ---- a BAD signature: its reason wrapped whole in the case view and in the refused run --
# An edit to the case, its pin and the digest its signature blocks name rewritten by hand:
# the signatures verify over neither.
tui_keys Q
tui_expect_exit 0 "Q"
f=$(find "$root/bench/$tc/cases/$id1/expected" -type f | head -1)
printf '\n# edited\n' >>"$f"
old=$(sed -n "s|^  $id1: ||p" "$root/bench/$tc/cases/digests.yaml")
new=$("$BD_BIN" digest "$root/bench/$tc/cases/$id1")
sed -i "s|^  $id1: .*|  $id1: $new|" "$root/bench/$tc/cases/digests.yaml"
sed -i "s|$old|$new|" "$root/bench/$tc/cases/$id1/provenance.yaml"
tui_open -C "$root"
expect_screen "TASK CLASS" "reopened on the edited bench"
tui_keys G Enter
expect_screen "${id1:0:20}" "the cases view"
tui_keys g Enter
expect_screen_re "^ $id1 " "the case view of the edited case"
expect_screen "provenance BAD" "the signatures are checked"
# The reason is wrapped over the rows of the case's document: walk down to its end, a
# row at a time, each once the pane has moved.
for _ in $(seq 1 24); do
    before=$(tui_cap)
    pane_has_joined "$before" "sign it again" && break
    tui_keys j
    tui_changed "$before" 2 || break
done
expect_joined "sign it again" "the BAD signature's reason ends with what to do"
no_cut "BAD|verifies over neither|forged|sign it again" "the BAD signature's reason in the case view"
tui_keys q
expect_screen "CASE▲" "back to the cases view"
tui_keys r
expect_screen "REFUSED" "the run of a case with a BAD signature is refused"
expect_joined "sign it again" "the refused run says what to do"
no_cut "provenance|verifies|forged|sign it again" "the refused run's reason"
tui_keys m
expect_screen "Messages, newest first" "m opens the message log"
expect_joined "sign it again" "the message log holds the whole reason"
tui_keys q q
git -C "$root" checkout -q -- bench

# ---- an unsigned task class: the refusal names P and d, never `benchdesk sign` --------
tui_keys Q
tui_expect_exit 0 "Q"
printf 'schema_version: 2\n' >"$root/bench/$tc/provenance.yaml"
tui_open -C "$root"
expect_screen "TASK CLASS" "reopened with $tc unsigned"
tui_keys G
expect_screen "3/3" "cursor on $tc"
tui_keys r
expect_screen "REFUSED" "a run of an unsigned task class is refused"
expect_joined "P on it in the task classes view" "the refusal names the TUI's key to sign"
expect_joined "or run with drafts allowed (d)" "and ends with d, whole"
no_cli_advice "the refusal of an unsigned task class"
no_cut "provenance.missing|vouched|drafts allowed" "the refusal of an unsigned task class"
tui_keys q
git -C "$root" checkout -q -- bench

# ---- a commit refused by the pin check: whole, with the TUI's key --------------------
f=$(find "$root/bench/$tc/cases/$id2/expected" -type f | head -1)
printf '\n# staged alone\n' >>"$f"
"$BD_BIN" -C "$root" pin "$tc" "$id2" >/dev/null 2>&1 || true
git -C "$root" add -- "$f"
tui_keys w
expect_screen "git status of bench/ and audit/" "w opens the stage view"
expect_screen "1 staged" "the edited file is staged alone"
tui_keys C
expect_screen "Enter commit" "C opens the commit message editor"
tui_type "an edit without its pin"
tui_keys Enter
expect_screen "case.digest_mismatch" "the commit is refused by the pin check"
expect_joined "or re-pin deliberately" "the refusal is shown whole, to its end"
expect_joined "(u on bench/$tc in this view)" "the refusal names the TUI's key"
no_cli_advice "the commit refusal"
no_cut "staged case|digests.yaml|re-pin" "the commit refusal"
tui_keys Escape
sleep 0.3
tui_keys Q
tui_expect_exit 0 "Q"
git -C "$root" reset -q --hard

# ---- no user namespaces: W, not --allow-weaker-isolation -----------------------------
if unshare -Ur true 2>/dev/null; then
    wrap="$BD_TMP/no-userns.sh"
    cat >"$wrap" <<SH
#!/bin/sh
exec unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec "\$0" "\$@"' "$BD_BIN" "\$@"
SH
    chmod +x "$wrap"
    real_bin=$BD_BIN
    BD_BIN=$wrap
    tui_open -C "$root"
    BD_BIN=$real_bin
    expect_screen "TASK CLASS" "opened without user namespaces"
    tui_keys G Enter
    expect_screen "${id1:0:20}" "the cases view"
    tui_keys r
    expect_screen "isolation.unavailable" "the run is refused: no namespaces"
    expect_joined "W in the run view runs it under 'subprocess' instead" "the refusal names W"
    no_cli_advice "the isolation refusal"
    tui_keys W
    expect_screen "weaker isolation class" "W asks first"
    tui_keys y
    expect_screen_re "run $tc .* subprocess" "y runs it under subprocess, and says so"
    tui_wait_re " finished( |$)" 60 || true
    tui_keys Q
    tui_expect_exit 0 "Q without user namespaces"
else
    echo "note: unshare -Ur is not permitted here: the W consent is checked by test_isolation's CLI twin only"
fi

# ---- the light theme: the cursor row is not drawn like the heading row ---------------
TUI_ENV="LANG=C.UTF-8"
tui_open -C "$root" --theme light
expect_screen "TASK CLASS" "light theme"
expect_screen "✓ ok" "loaded"
esc=$(tmux -L "$TUI_SOCK" capture-pane -p -e)
head_sgr=$(sed -n 2p <<<"$esc" | grep -oE $'\e\\[[0-9;]*m' | head -1)
cur_sgr=$(sed -n 3p <<<"$esc" | grep -oE $'\e\\[[0-9;]*m' | head -1)
if [ -n "$head_sgr" ] && [ "$head_sgr" != "$cur_sgr" ]; then
    pass "light theme: the cursor row ($(printf %q "$cur_sgr")) differs from the heading ($(printf %q "$head_sgr"))"
else
    fail "light theme: the cursor row is drawn like the heading ($(printf %q "$head_sgr") / $(printf %q "$cur_sgr"))"
fi
tui_keys Q
tui_expect_exit 0 "Q"
tui_expect_clean_stderr "messages"
tui_stop
finish
