#!/usr/bin/env bash
# The reviewer's verdicts in the TUI (docs/user-guide.md#reviewing-in-the-tui), through tmux
# at 80x24 with real GnuPG keys made by the test: `t` opens the review queue of the task
# class; Space marks a record and V a range; `t` then `r` gives rubric_bug to each marked
# record, signed with reviewer A's key exactly as `benchdesk verdict` signs (verify
# accepts the files); the result and history views badge the records "rubric_bug 1/2".
# A second reviewer, whose key has a passphrase typed into benchdesk's masked line, gives
# the same verdict on one of them: its badge becomes "removed" and recommend lists it as
# removed. A later run's record of the same failure shows the suggestion, which is never
# applied by itself and is taken into the prompt with `a`.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
gpg_keys
trap 'gpgconf --homedir "$BD_TMP/k/gnupg" --kill all >/dev/null 2>&1 || true
      gpgconf --homedir "$BD_TMP/k/revoke" --kill all >/dev/null 2>&1 || true; _tui_cleanup' EXIT
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state"
mkdir -p "$HOME"
pj() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

root="$BD_TMP/bench"
mini_bench "$root" alice bob
# Signed by an author and a reviewer, so recommend takes its records as evidence.
for sj in "$root/bench/tc" "$root"/bench/tc/cases/c?; do
    "$BD_BIN" -C "$root" sign "$sj" --role author --key "$ALICE_FPR" >/dev/null &&
        "$BD_BIN" -C "$root" sign "$sj" --role reviewer --key "$BOB_FPR" >/dev/null ||
        fail "cannot sign $sj"
done
# Reviewer B: a key with a passphrase, asked by benchdesk itself (loopback).
gpg --batch --no-tty --quiet --pinentry-mode loopback --passphrase 's3cret' \
    --quick-gen-key "Rex Reviewer <rex@bench.example>" ed25519 sign 1y 2>/dev/null ||
    { fail "gpg could not generate reviewer B's key"; finish; }
REX_FPR=$(gpg --batch --with-colons --fingerprint rex@bench.example | awk -F: '$1=="fpr" {print $10; exit}')
gpg --batch --armor --export "$REX_FPR" >"$root/bench/keys/rex.asc"
printf '  - {fingerprint: %s, identity: rex@bench.example, roles: [reviewer]}\n' "$REX_FPR" \
    >>"$root/bench/trusted-signers.yaml"
gpgconf --homedir "$GNUPGHOME" --kill gpg-agent # no cached passphrase
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
pins="$root/bench/tc/cases/digests.yaml"
T=$(awk '$1 == "task_class:" {print $2}' "$pins")
gen() { # run case passed
    local fm=""
    [ "$3" = false ] && fm=',"failure_mode":"x.wrong"'
    python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$hist" \
        "{\"task_class\":\"tc\",\"case_id\":\"$2\",\"case_digest\":\"$(awk -v c="$2:" '$1 == c {print $2}' "$pins")\",\"task_class_digest\":\"$T\",\"passed\":$3,\"score\":0.1,\"run_id\":\"$1\",\"run_cases\":3$fm}"
}
gen r1 c1 false && gen r1 c2 false && gen r1 c3 false
mkdir -p "$root/.benchdesk"
reviewer() { printf 'signing_key: %s\n' "$1" >"$root/.benchdesk/config.yaml"; }
reviewer "$ALICE_FPR"
# BD_TUI_SHOTS=DIR keeps the screens the user guide shows (docs/user-guide.md).
shot() { if [ -n "${BD_TUI_SHOTS:-}" ]; then tui_cap >"$BD_TUI_SHOTS/$1.txt"; fi; }

# ---- reviewer A: the queue, marks, a signed rubric_bug on three records -----------------
tui_start 80 24
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
tui_keys t
expect_screen "VERDICTS / SUGGESTION" "t opens the review view"
tui_wait_re "#3 +FAIL +unreviewed +c3" 30 && pass "the queue lists the unreviewed failures" ||
    fail "no queue: $TUI_LAST"
expect_screen_re "t verdict +Space mark +a accept" "the hints name the new keys"
hints=$(tail -1 <<<"$TUI_LAST")
grep -q "? help" <<<"$hints" && pass "the hints row fits at 80 columns" || fail "hints cut: $hints"
tui_keys '?'
expect_screen "In the verdict prompt (t)" "? lists the verdict prompt's keys"
expect_screen_re "Space +mark or unmark the record under the cursor" "? lists Space"
expect_screen_re "V +mark every record from the last one marked" "? lists V"
tui_keys q
tui_keys g Space
expect_screen "1 marked" "Space marks a record"
tui_keys j V
expect_screen "3 marked" "V marks the range from the last mark to the cursor"
shot review-marked
tui_keys t
expect_screen "verdict on 3 records" "t asks the verdict for the marked records"
shot review-choose
expect_screen "c confirmed  r rubric_bug  k case_bug  f flaky  i infra  w withdrawn" \
    "one key per verdict"
tui_keys r
expect_screen "rubric_bug   Enter signs and writes" "r chooses rubric_bug"
tui_type "expected is off by one"
expect_screen "note: expected is off by one" "the note is typed on the prompt's line"
shot review-note
tui_keys Enter
tui_wait "rubric_bug on 3 records: wrote" 30 && pass "the verdicts are signed and written" ||
    fail "not written: $TUI_LAST"
n=$(ls "$root"/audit/verdicts/tc/r1/c*/"$ALICE_FPR"-*.json 2>/dev/null | wc -l)
[ "$n" = 3 ] && pass "three verdict files by reviewer A" || fail "$n verdict files"
out=$(bd verify --json)
[ "$(pj 'd["ok"], d["verdicts"]["counting"]' <<<"$out")" = "(True, 3)" ] &&
    pass "benchdesk verify accepts them, all three counting" || fail "verify: $out"
grep -q '"note":"expected is off by one"' "$root"/audit/verdicts/tc/r1/c1/*.json &&
    pass "the note is in the file" || fail "note missing"
tui_wait "nothing to review in tc" 30 && pass "the queue is read again: nothing left for A" ||
    fail "queue not reloaded: $TUI_LAST"
tui_keys q h
tui_wait_re "#1 .*rubric_bug 1/2" 30 && pass "the history view badges the records rubric_bug 1/2" ||
    fail "no badge in history: $TUI_LAST"
shot history-badges
tui_keys Enter
tui_wait_re "verdicts +rubric_bug 1/2" 30 && pass "the result view badges the record rubric_bug 1/2" ||
    fail "no badge in result: $TUI_LAST"
shot result-badge
tui_keys Q
tui_expect_exit "0" "A leaves"
tui_expect_clean_stderr "A leaves"
tui_stop

# ---- a key without the reviewer role: refused, nothing written ------------------------------
# (and bench text stays inert: A's identity, for this part only, carries an OSC 52 sequence)
reviewer "$MALLORY_FPR"
signers="$root/bench/trusted-signers.yaml"
cp "$signers" "$BD_TMP/signers.yaml"
sed -i 's|identity: alice@bench.example|identity: "alice\\e]52;c;SGVsbG8=\\a@bench.example"|' "$signers"
tui_start 80 24
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens for mallory"
tui_keys t
tui_wait_re "#1 +FAIL +2nd review" 30 || fail "mallory's queue: $TUI_LAST"
tui_wait 'rubric_bug by alice\x1b]52;c;SGVsbG8=\x07@bench.example' 30 &&
    pass "a reviewer's identity is drawn with its controls made visible" ||
    fail "identity not sanitized: $TUI_LAST"
tui_keys t c Enter
tui_wait "verdict.not_reviewer" 30 && pass "a key without the reviewer role is refused (verdict.not_reviewer)" ||
    fail "not refused: $TUI_LAST"
ls "$root"/audit/verdicts/tc/r1/c1/"$MALLORY_FPR"-*.json >/dev/null 2>&1 &&
    fail "mallory's verdict was written" || pass "nothing written by the refused key"
expect_screen "sign with a reviewer's key" "the refusal says what to do, whole"
tui_keys Escape
expect_screen "no verdict given" "Esc gives no verdict"
tui_keys C-c
tui_expect_exit "130" "mallory leaves with Ctrl-C"
tui_expect_clean_stderr "mallory leaves with Ctrl-C"
tui_stop
cp "$BD_TMP/signers.yaml" "$signers"

# ---- reviewer B: the second verdict, passphrase on the masked line -----------------------
reviewer "$REX_FPR"
tui_start 80 24
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens for B"
tui_keys Enter
expect_screen "CASE" "the cases view"
tui_keys t
tui_wait_re "#1 +FAIL +2nd review +c1 +rubric_bug 1/2" 30 &&
    pass "B's queue: awaiting a second reviewer, with the first verdict" || fail "B's queue: $TUI_LAST"
shot review-second
tui_keys g Enter
expect_screen_re "verdicts +rubric_bug 1/2" "Enter opens the record's result"
tui_keys t
expect_screen "verdict on 1 record" "t in the result view asks a verdict on it"
tui_keys r Enter
tui_wait "Passphrase" 30 && pass "GnuPG's passphrase is asked on benchdesk's masked line" ||
    fail "no passphrase prompt: $TUI_LAST"
tui_type "wrong"
tui_keys Enter
tui_wait "gpg.sign_failed" 30 && pass "a wrong passphrase fails with its code" ||
    fail "no failure: $TUI_LAST"
ls "$root"/audit/verdicts/tc/r1/c1/"$REX_FPR"-*.json >/dev/null 2>&1 &&
    fail "a file was written with a wrong passphrase" || pass "nothing written on a wrong passphrase"
tui_keys Enter # dismisses the message and, the note still open, signs again
tui_wait "Passphrase for" 30 && pass "Enter tries again" || fail "no second try: $TUI_LAST"
tui_type "s3cret"
expect_screen "******" "the passphrase line is masked"
shot review-passphrase
grep -q s3cret <<<"$(tui_cap)" && fail "the passphrase shows" || pass "the passphrase never shows"
tui_keys Enter
tui_wait "rubric_bug on 1 record: wrote" 30 && pass "B's verdict is written" || fail "B: $TUI_LAST"
[ "$(ls "$root"/audit/verdicts/tc/r1/c1/"$REX_FPR"-*.json | wc -l)" = 1 ] &&
    pass "B's verdict file" || fail "no file by B"
tui_keys q
tui_wait_re "verdicts +removed" 30 && pass "the result view badges the record removed" ||
    fail "not removed in result: $TUI_LAST"
out=$(bd recommend tc --json)
[ "$(pj '[x["seq"] for x in d["verdicts"]["removed"]]' <<<"$out")" = "[1]" ] &&
    pass "recommend: record 1 removed by two reviewers" || fail "recommend: $out"
[ "$(pj '[e["case_id"] for e in d["evidence"]]' <<<"$out" | grep -c c1)" = 0 ] &&
    pass "recommend's evidence drops it" || fail "evidence keeps c1: $out"
tui_keys Q
tui_expect_exit "0" "B leaves"
tui_expect_clean_stderr "B leaves"
tui_stop

# ---- a later run: the same failure gets a suggestion, taken with one key --------------------
gen r2 c1 false && gen r2 c2 true && gen r2 c3 true
bd verdict 5 --verdict confirmed --key "$ALICE_FPR" >/dev/null || fail "alice confirms record 5"
tui_start 80 24
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens again"
tui_keys t
tui_wait_re "#4 +FAIL +unreviewed +c1 +suggest: rubric_bug \(by [a-z]+\)" 30 &&
    pass "the later record shows the suggestion" || fail "no suggestion: $TUI_LAST"
expect_screen_re "#6 +pass +sample +c3" "a passing record without a verdict is sampled, after the failures"
[ ! -e "$root/audit/verdicts/tc/r2/c1" ] && pass "the suggestion is not applied by itself" ||
    fail "a verdict on r2 exists without a person"
screen=$(tui_cap)
shot review-suggestion
tui_keys a
expect_screen "rubric_bug   Enter signs and writes" "a takes the suggestion into the prompt"
[ ! -e "$root/audit/verdicts/tc/r2/c1" ] && pass "a alone writes nothing" || fail "a wrote a verdict"
tui_keys Enter
if tui_wait_re "Passphrase|rubric_bug on 1 record: wrote" 30 && grep -q Passphrase <<<"$TUI_LAST"; then
    tui_type "s3cret"
    tui_keys Enter
fi
tui_wait "rubric_bug on 1 record: wrote" 30 && pass "the accepted suggestion is signed by B" ||
    fail "not given: $TUI_LAST"
ls "$root"/audit/verdicts/tc/r2/c1/"$REX_FPR"-*.json >/dev/null 2>&1 &&
    pass "a verdict file for the later record" || fail "no file for record 4"
grep -q '"note":"same as #1"' "$root"/audit/verdicts/tc/r2/c1/*.json && pass "its note names the record suggested from" ||
    fail "note: $(cat "$root"/audit/verdicts/tc/r2/c1/*.json)"
# The old rows stay until the queue is read again: wait for #4 to go, then look.
tui_gone "#4 " 30 && grep -qE "#6 +pass +sample" <<<"$TUI_LAST" &&
    pass "after B's verdict, the sampled pass is left" || fail "queue: $TUI_LAST"
bd verdict 6 --verdict flaky --key "$ALICE_FPR" >/dev/null || fail "alice: record 6 flaky"
tui_keys C-r
tui_wait "re-read the bench from disk" 30 && tui_wait "nothing to review in tc" 30 &&
    pass "Ctrl-R opens the review view again on the re-read bench" || fail "reload: $TUI_LAST"
tui_keys q h
tui_wait_re "#5 .*✓confirmed" 30 && pass "the history view badges a confirmed record" ||
    fail "no confirmed badge: $TUI_LAST"
expect_screen_re "#6 .*flaky" "and a flaky one"
expect_screen_re "#4 .*rubric_bug 1/2" "and the accepted suggestion, awaiting a second reviewer"
expect_screen_re "#1 .*removed" "and the removed record"
shot history-badges-all
# the compare view (r1 against r2) badges the later run's records
tui_keys g =
tui_wait_re "regressed|improved|unchanged" 30 || fail "no compare view: $TUI_LAST"
tui_wait_re "c2 .*✓confirmed" 30 && pass "the compare view badges B's records" ||
    fail "no badge in compare: $TUI_LAST"
expect_screen_re "c1 .*rubric_bug 1/2" "the compare view badges the regression's verdict"
shot compare-badges
tui_keys Q
tui_expect_exit "0" "leaving"
tui_expect_clean_stderr "leaving"
tui_stop
# ---- a live run: a verdict from its result, the badge on the run view's row ------------------
tui_start 80 24
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens for a run"
tui_keys r
tui_wait " finished" 60 && pass "a run of the task class finishes" || fail "run: $TUI_LAST"
tui_keys g Enter
expect_screen "rubric.malformed_output" "Enter opens the first case's result"
tui_keys t
expect_screen "verdict on 1 record" "t on the live run's result asks a verdict"
tui_keys f Enter
if tui_wait_re "Passphrase|flaky on 1 record: wrote" 30 && grep -q Passphrase <<<"$TUI_LAST"; then
    tui_type "s3cret"
    tui_keys Enter
fi
tui_wait "flaky on 1 record: wrote" 30 && pass "the verdict on the run's record is written" ||
    fail "not written: $TUI_LAST"
tui_keys v
tui_wait_re "c1 +failed .*flaky +rubric\.malform" 30 &&
    pass "the run view badges the case's record flaky, before its failure mode" ||
    fail "no badge in the run view: $TUI_LAST"
shot run-badge
tui_keys Q
tui_expect_exit "0" "leaving after the run"
tui_expect_clean_stderr "leaving after the run"
tui_stop

# at 80x24, the review view's row keeps the case, the verdict and the suggestion whole
row=$(grep -E "^ *#4 " <<<"$screen")
for w in c1 unreviewed "suggest: rubric_bug (by"; do
    grep -qF "$w" <<<"$row" && pass "80x24: '$w' on the row" || fail "80x24 cuts '$w': $row"
done
finish
