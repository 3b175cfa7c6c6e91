#!/usr/bin/env bash
# The TUI notices changes made outside it (docs/user-guide.md#changes-made-outside): a case
# edited and re-pinned in another shell shows as a draft within seconds, without Ctrl-R;
# `r` on a task class whose rubric was changed and pinned outside is refused as unsigned
# (provenance.missing, exit-3 semantics), never as a bad signature; the rescan that stands
# in where no watch can be had notices the same. Real GnuPG keys, a real TUI in tmux.
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
list_row() { tr -s ' ' <<<"$TUI_LAST" | grep -E '^ *[^ ]* ?tc ' | head -1; }

tui_start 120 30
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
tui_wait_re 'tc +bronze +3 +3 +0 +0' 60 && pass "tc: 3 signed cases" || fail "tc row: $(list_row) / $TUI_LAST"

# An edit and a pin in another shell: seen without Ctrl-R.
sed -i 's/^title: .*/title: "Case c1, clearer"/' "$tcd/cases/c1/case.yaml"
bd -C "$root" pin tc c1 >/dev/null
tui_wait "re-read the bench: it changed outside benchdesk" 20 && pass "the outside change was noticed" ||
    fail "no reload after an outside pin: $TUI_LAST"
tui_wait_re 'tc +bronze +3 +2 +0 +1' 30 && pass "the re-pinned case shows as a draft" || fail "tc row: $TUI_LAST"

# The rubric changed and pinned outside: r is refused as unsigned, never as bad.
printf '# clearer\n' >>"$tcd/rubric.py"
bd -C "$root" pin tc >/dev/null
tui_wait "re-read the bench" 20 || fail "no reload after the rubric pin"
sleep 1
tui_keys r
tui_wait "provenance.missing" 30 && pass "r: refused as unsigned (provenance.missing)" ||
    fail "r after an outside rubric pin: $TUI_LAST"
grep -q "bad_signature" <<<"$TUI_LAST" && fail "r said bad_signature" || pass "never bad_signature"
tui_keys Q
tui_wait "EXIT1=" 20 || fail "the TUI did not quit"

# The rescan where no watch can be had.
TUI_ENV="BENCHDESK_WATCH_RESCAN=1"
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens again (rescan)"
tui_wait_re 'tc +bronze +3 +2 +0 +1' 60 || fail "tc row before: $TUI_LAST"
sed -i 's/^title: .*/title: "Case c2, clearer"/' "$tcd/cases/c2/case.yaml"
bd -C "$root" pin tc c2 >/dev/null
tui_wait "re-read the bench: it changed outside benchdesk" 30 && pass "the rescan noticed the change" ||
    fail "no reload by rescan: $TUI_LAST"
tui_wait_re 'tc +bronze +3 +1 +0 +2' 30 && pass "the rescan re-read the case as a draft" || fail "tc row: $TUI_LAST"
tui_keys Q
tui_wait "EXIT2=" 20 || fail "the TUI did not quit (rescan)"
tui_stop
finish
