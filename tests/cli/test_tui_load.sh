#!/usr/bin/env bash
# How the TUI's model loads a bench (ui/model.h), counted by the model itself
# (BENCHDESK_MODEL_STATS=<file>, written when the TUI exits):
#   - every case is read once: one check per case gives its digest, its signatures and
#     the row's metadata; no case.yaml is read a second time for the rows, and the task
#     class's own pin and signatures are checked once, not with every chunk;
#   - the row under the cursor gets its metadata on its own, before any check: with the
#     checks held back (BENCHDESK_MODEL_HOLD=digests) the cases view still shows each
#     row's disposition and difficulty, and the sign view opens on a draft row as author;
#   - the sign view waits for no row: with nothing read at all (BENCHDESK_MODEL_HOLD=all,
#     what the first moments of a re-read look like) it still opens, and picks the role
#     still missing from the case's provenance.yaml (author on a draft, reviewer on a case
#     only an author signed).
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

# A GnuPG home of our own, empty: the sign view lists no key, the user's is never read.
export GNUPGHOME="$BD_TMP/gnupg"
mkdir -m 700 -p "$GNUPGHOME"
trap 'gpgconf --homedir "$GNUPGHOME" --kill all >/dev/null 2>&1 || true; _tui_cleanup' EXIT

root=$(demo_pinned)
json=$("$BD_BIN" -C "$root" list --json)
n_cases=$(python3 -c 'import json,sys; print(sum(t["cases"] for t in json.load(sys.stdin)["task_classes"]))' <<<"$json")
n_tcs=$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["task_classes"]))' <<<"$json")
draft=$("$BD_BIN" -C "$root" list vuln-remediation --json | python3 -c '
import json, sys
print(next(c["case_id"] for c in json.load(sys.stdin)["cases"] if c["provenance"] == "draft"))')
authored=$("$BD_BIN" -C "$root" list vuln-remediation --json | python3 -c '
import json, sys
print(next(c["case_id"] for c in json.load(sys.stdin)["cases"] if c["provenance"] == "awaiting_review"))')
[ "$n_cases" -gt 0 ] && [ -n "$draft" ] && [ -n "$authored" ] &&
    pass "demo bench: $n_cases cases in $n_tcs task classes, draft $draft, authored $authored" ||
    { fail "demo bench: no cases, no draft or no authored case"; finish; }
stat_of() { sed -n "s/^$1=//p" "$2"; }

tui_start 120 40

# ---- 1. Loaded to the end: each case read once ---------------------------------------
stats="$BD_TMP/model.1"
TUI_ENV="BENCHDESK_MODEL_STATS=$stats BENCHDESK_TUI_EXIT_AFTER=loaded"
tui_open -C "$root"
tui_expect_exit 0 "the TUI quits once everything is loaded"
tui_expect_clean_stderr "full load"
if [ -s "$stats" ]; then
    pass "the model wrote its counts"
    [ "$(stat_of cases "$stats")" = "$n_cases" ] && pass "the model lists every case ($n_cases)" ||
        fail "the model lists $(stat_of cases "$stats") cases, list says $n_cases"
    [ "$(stat_of case_checks "$stats")" = "$n_cases" ] &&
        pass "every case checked exactly once ($n_cases checks)" ||
        fail "$(stat_of case_checks "$stats") case checks for $n_cases cases"
    [ "$(stat_of meta_reads "$stats")" = 0 ] &&
        pass "no case.yaml read a second time for the rows (no cursor asked first)" ||
        fail "$(stat_of meta_reads "$stats") case.yaml files read besides the checks"
    [ "$(stat_of tc_checks "$stats")" = "$n_tcs" ] &&
        pass "each task class's own pin and signatures checked once ($n_tcs)" ||
        fail "$(stat_of tc_checks "$stats") task-class checks for $n_tcs task classes"
else
    fail "no model counts in $stats"
fi

# ---- 2. Checks held back: the cursor's rows still get their metadata -----------------
stats="$BD_TMP/model.2"
TUI_ENV="BENCHDESK_MODEL_STATS=$stats BENCHDESK_MODEL_HOLD=digests"
tui_open -C "$root"
tui_open_cases vuln
expect_screen_re "ghsa-demo-0001[^ ]* +positive +easy" \
    "a row shows its disposition and difficulty before any check"
expect_screen "1/" "the cases view counts its rows"
tui_keys /
tui_type "$draft"
tui_keys Enter
expect_screen "1/1 (of " "the draft case is the only row left"
tui_keys Enter
expect_screen "Provenance" "the case view opens"
tui_keys P
expect_screen "message to be signed" "the sign view opens on a row whose signatures are not checked"
expect_screen "sign as author" "the row's metadata (a draft) makes it an author's signature"
expect_screen "vuln-remediation / $draft" "the sign view names the case"
if grep -q "still loading" <<<"$(tui_cap)"; then fail "the sign view said still loading"; else
    pass "nothing waits for the checks"; fi
# Esc alone (an Esc followed at once by q would be Alt-q).
tui_keys Escape
sleep 0.3
tui_keys q q q q
tui_expect_exit 0 "q from the first view"
if [ -s "$stats" ]; then
    [ "$(stat_of case_checks "$stats")" = 0 ] && pass "no case was checked (held back)" ||
        fail "$(stat_of case_checks "$stats") cases checked while held back"
    m=$(stat_of meta_reads "$stats")
    [ "${m:-0}" -gt 0 ] && [ "$m" -le 256 ] && pass "the cursor's chunk alone was read ($m case.yaml)" ||
        fail "$m case.yaml files read for the cursor (wanted 1..256)"
else
    fail "no model counts in $stats"
fi
# ---- 3. Nothing read at all: the sign view reads the signatures itself -----------------
stats="$BD_TMP/model.3"
TUI_ENV="BENCHDESK_MODEL_STATS=$stats BENCHDESK_MODEL_HOLD=all"
tui_open -C "$root"
tui_open_cases vuln
for pick in "$draft:author" "$authored:reviewer"; do
    id=${pick%%:*} role=${pick#*:}
    tui_keys /
    tui_type "$id"
    tui_keys Enter
    expect_screen "1/1 (of " "$id is the only row left"
    tui_keys Enter
    expect_screen "Provenance" "the case view of $id opens"
    tui_keys P
    expect_screen "sign as $role" "with no row read, P on $id opens the sign view as $role"
    if grep -q "still loading" <<<"$(tui_cap)"; then fail "the sign view said still loading"; else
        pass "the sign view of $id waits for no row"; fi
    tui_keys Escape
    sleep 0.3
    tui_keys q
    expect_screen "1/1 (of " "back in the filtered cases view"
    tui_keys Escape
    sleep 0.3
done
tui_keys q q q q
tui_expect_exit 0 "q from the first view"
if [ -s "$stats" ]; then
    [ "$(stat_of case_checks "$stats")" = 0 ] && [ "$(stat_of meta_reads "$stats")" = 0 ] &&
        pass "no row was read (held back)" ||
        fail "rows were read while held back: $(tr '\n' ' ' <"$stats")"
else
    fail "no model counts in $stats"
fi
finish
