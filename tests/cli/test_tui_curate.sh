#!/usr/bin/env bash
# The curator's loop never leaves the TUI (docs/user-guide.md#the-curators-loop-in-the-tui):
# `A` scaffolds a case, `E` opens a file of a case in $EDITOR (the TUI suspends and
# resumes), `I` pins and says whose signatures it superseded; the views re-read what
# changed; the sign view picks the role still missing and asks before replacing a valid
# signature, and shows a task class's rubric and registration diff against its last
# signed commit (`D` in $PAGER). Real GnuPG keys, a real git repository, a real TUI in tmux.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"
bd() { TMPDIR="$BD_TMP" "$BD_BIN" "$@"; }
gpg_keys
trap 'gpgconf --homedir "$BD_TMP/k/gnupg" --kill all >/dev/null 2>&1 || true; _tui_cleanup' EXIT

root="$BD_TMP/bench"
mini_bench "$root" alice bob
tcd="$root/bench/tc"
for s in "$tcd" "$tcd/cases/c1" "$tcd/cases/c2" "$tcd/cases/c3"; do
    bd sign "$s" --role author --key "$ALICE_FPR" >/dev/null &&
        bd sign "$s" --role reviewer --key "$BOB_FPR" >/dev/null || fail "cannot sign $s"
done
# The "editor": rewrites the title of the case.yaml it is given, and says it ran.
cat >"$BD_TMP/ed.sh" <<'SH'
#!/bin/sh
sed -i 's/^title: .*/title: "Edited in the TUI"/' "$1"
echo "$1" >>"$(dirname "$0")/ed.log"
SH
chmod +x "$BD_TMP/ed.sh"
printf '#!/bin/sh\ncp "$1" "%s/diff.txt"\n' "$BD_TMP" >"$BD_TMP/pager.sh"
chmod +x "$BD_TMP/pager.sh"
export HOME="$BD_TMP" XDG_CONFIG_HOME="$BD_TMP" GIT_CONFIG_NOSYSTEM=1
git init -q -b main "$root"
git -C "$root" -c user.name=C -c user.email=c@bench.example add -A
git -C "$root" -c user.name=C -c user.email=c@bench.example commit -q -m "signed bench"
TUI_ENV="EDITOR=$BD_TMP/ed.sh VISUAL= PAGER=$BD_TMP/pager.sh"

tui_start 120 30
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
tui_wait_re 'tc +bronze +3 +3 +0 +0' 60 || fail "tc row: $TUI_LAST"

# A: a new case, scaffolded; the view re-reads it.
tui_keys A
sleep 0.5
tui_type "fresh"
tui_keys Enter
tui_wait "created draft case fresh in tc" 20 && pass "A scaffolded the case" || fail "A: $TUI_LAST"
[ -f "$tcd/cases/fresh/case.yaml" ] && pass "fresh/case.yaml exists" || fail "no fresh/case.yaml"
tui_wait_re 'tc +bronze +4 +3 +0 +1' 30 && pass "the new draft is counted" || fail "tc row: $TUI_LAST"

# E on c1 in the cases view: $EDITOR runs on its case.yaml; I pins it.
tui_keys Enter
expect_screen "CASE" "the cases view"
tui_keys / C-u
tui_type "c1"
tui_keys Enter
tui_keys E
expect_screen "case.yaml" "E asks which file, case.yaml first"
tui_keys Enter
tui_wait "edited case.yaml" 20 && pass "E ran the editor and came back" || fail "E: $TUI_LAST"
grep -q "cases/c1/case.yaml" "$BD_TMP/ed.log" 2>/dev/null && grep -q 'Edited in the TUI' "$tcd/cases/c1/case.yaml" &&
    pass "the editor got c1/case.yaml" || fail "editor log: $(cat "$BD_TMP/ed.log" 2>/dev/null)"
sleep 1
tui_keys I
tui_wait_joined "superseded 2 signatures (alice@bench.example, bob@bench.example)" 20 &&
    pass "I pinned c1 and said whose signatures it superseded" || fail "I: $TUI_LAST"
# The pin's writes re-read the bench within a second (the watch settles 0.3 s, ticks every
# 0.5 s); the status line keeps what the pin said, and never says anything over it.
if tui_wait "re-read the bench" 3; then
    fail "the re-read after the TUI's own pin replaced its message: $TUI_LAST"
else
    tui_wait_joined "superseded 2 signatures" 1 && pass "after the re-read the pin's message stays" ||
        fail "the pin's message is gone: $TUI_LAST"
fi
expect_0=$(bd -C "$root" verify tc >/dev/null 2>&1; echo $?)
[ "$expect_0" = 1 ] && pass "verify still reports fresh (unpinned)" || fail "verify -> $expect_0"
tui_keys q
tui_wait_re 'tc +bronze +4 +2 +0 +2' 30 && pass "c1 is a draft now" || fail "tc row: $TUI_LAST"

# P on a signed case: both roles valid, so the sign view asks before replacing.
tui_keys Enter
expect_screen "CASE" "the cases view again"
tui_keys / C-u
tui_type "c2"
tui_keys Enter
tui_keys P
tui_wait "replace that author signature" 30 && pass "a signed case: Enter would replace, and says so" ||
    fail "sign view on a signed case: $TUI_LAST"
tui_keys Enter
tui_wait "replace the valid author signature by alice@bench.example" 20 &&
    pass "Enter asks before replacing, naming whose" || fail "no question: $TUI_LAST"
tui_keys n
tui_wait "cancelled: nothing was done" 10 && pass "n: nothing replaced" || fail "n: $TUI_LAST"
tui_keys q q
# P on c1 (a draft after the pin): the role still missing, author.
tui_keys Enter
tui_keys / C-u
tui_type "c1"
tui_keys Enter
tui_keys P
tui_wait_re "Enter: sign c1 as author" 30 && pass "a draft: the sign view picks author" || fail "$TUI_LAST"
tui_keys q q

# The task class's rubric changed outside and pinned: its sign view shows the change
# against the last signed commit, and D pages the diff.
printf '# a clearer rubric\n' >>"$tcd/rubric.py"
bd -C "$root" pin tc >/dev/null
tui_wait "re-read the bench" 20 || fail "no reload after the rubric pin"
sleep 1
tui_keys P
tui_wait_re "since signed commit [0-9a-f]{7}: registration.yaml \+0 -0, rubric.py \+1 -0" 30 &&
    pass "the sign view shows the change since the last signed commit" || fail "sign view: $TUI_LAST"
tui_keys D
for _ in $(seq 1 100); do [ -s "$BD_TMP/diff.txt" ] && break; sleep 0.1; done
grep -q '^+ # a clearer rubric$' "$BD_TMP/diff.txt" 2>/dev/null && grep -q '^=== rubric.py$' "$BD_TMP/diff.txt" &&
    pass "D pages the diff of rubric.py" || fail "diff: $(cat "$BD_TMP/diff.txt" 2>/dev/null)"
tui_keys q Q
tui_wait "EXIT1=" 20 || fail "the TUI did not quit"
tui_stop
finish
