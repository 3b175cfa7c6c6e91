#!/usr/bin/env bash
# Editing is not tampering (docs/provenance.md#editing-is-not-tampering), and a run checks
# what it runs (docs/user-guide.md#what-gets-run), on a small bench signed with throwaway keys:
# each signature block names the digest it signed; an edit plus `pin` supersedes the
# signatures (the case is a draft, blocking nothing but itself; pin says whose); signing
# again replaces a superseded signature silently and a valid one only with --replace;
# a block whose digest is edited to the new pin is bad and refuses the run; a pin
# rewritten by hand never gets a case scored as signed; problems in cases a run does not
# select are one line, never a refusal.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { TMPDIR="$BD_TMP" "$BD_BIN" "$@"; }
gpg_keys

root="$BD_TMP/bench"
mini_bench "$root" alice bob carol
tcd="$root/bench/tc"
RUN=(--isolation subprocess --jobs 2)
pin_of() { awk -v k="$1:" '$1 == k {print $2}' "$tcd/cases/digests.yaml"; }
status_of() { bd -C "$root" list tc --json | python3 -c '
import json, sys
print(next(c["provenance"] for c in json.load(sys.stdin)["cases"] if c["case_id"] == sys.argv[1]))' "$1"; }
is_status() { local got; got=$(status_of "$1"); [ "$got" = "$2" ] && pass "$3: $1 is $2" || fail "$3: $1 is $got, wanted $2"; }
sign2() { bd sign "$1" --role author --key "$ALICE_FPR" >/dev/null && bd sign "$1" --role reviewer --key "$BOB_FPR" >/dev/null || fail "cannot sign $1"; }
for s in "$tcd" "$tcd/cases/c1" "$tcd/cases/c2" "$tcd/cases/c3"; do sign2 "$s"; done

# Each block names the digest it signed: the pin.
n=$(grep -c "^  digest: \"$(pin_of c1)\"$" "$tcd/cases/c1/provenance.yaml")
[ "$n" = 2 ] && pass "both blocks name the pin they signed" || fail "digest lines: $n in $(cat "$tcd/cases/c1/provenance.yaml")"
expect 0 - -- bd -C "$root" verify tc

# ---- an edit plus pin: the signatures are superseded, the case is a draft -----------------
sed -i 's/^title: .*/title: "Case c1, clearer"/' "$tcd/cases/c1/case.yaml"
out=$(bd -C "$root" pin tc c1)
grep -q "superseded the signatures of alice@bench.example (author), bob@bench.example (reviewer)" <<<"$out" &&
    pass "pin says whose signatures it superseded" || fail "pin: $out"
is_status c1 draft "edited and re-pinned"
expect 0 - -- bd -C "$root" verify tc
bd -C "$root" verify tc --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = [(e["case_id"], e["role"], e["identity"]) for t in d["task_classes"] for e in t["superseded"]]
assert s == [("c1", "author", "alice@bench.example"), ("c1", "reviewer", "bob@bench.example")], s' && pass "verify --json shows both as superseded" ||
    fail "verify --json: $(bd -C "$root" verify tc --json | head -c 1500)"
# It blocks nothing but itself: the run scores the other signed cases; --drafts runs it.
bd -C "$root" run tc "${RUN[@]}" >"$BD_TMP/out" 2>"$BD_TMP/err" && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "the task class still runs" || fail "run -> $rc: $(cat "$BD_TMP/err")"
grep -q "skipping 1 unsigned case of tc (1 draft" "$BD_TMP/err" && pass "the edited case is skipped as a draft" ||
    fail "skip notice: $(cat "$BD_TMP/err")"
expect 0 - -- bd -C "$root" run tc "${RUN[@]}" --drafts
expect 0 - -- bd -C "$root" run tc "${RUN[@]}" --drafts --case c1

# ---- signing again: superseded replaced silently, valid only with --replace --------------
out=$(bd sign "$tcd/cases/c1" --role author --key "$ALICE_FPR")
grep -q "replaced the superseded author signature of alice@bench.example" <<<"$out" &&
    grep -q "next: a second person signs it with .*--role reviewer" <<<"$out" &&
    pass "a superseded signature is replaced without asking" || fail "sign: $out"
is_status c1 awaiting_review "author signed again"
expect 0 - -- bd sign "$tcd/cases/c1" --role reviewer --key "$BOB_FPR"
is_status c1 signed "signed again by two people"
expect 3 provenance.signature_exists -- bd sign "$tcd/cases/c1" --role reviewer --key "$CAROL_FPR"
err=$(bd sign "$tcd/cases/c1" --role reviewer --key "$CAROL_FPR" 2>&1 >/dev/null || true)
grep -q "valid reviewer signature by bob@bench.example" <<<"$err" && grep -q -- "--replace" <<<"$err" &&
    pass "the refusal names whose signature it would replace" || fail "refusal: $err"
out=$(bd sign "$tcd/cases/c1" --role reviewer --key "$CAROL_FPR" --replace)
grep -q "replaced the valid reviewer signature of bob@bench.example" <<<"$out" &&
    pass "--replace names whose signature it replaced" || fail "sign --replace: $out"
is_status c1 signed "carol reviews instead"

# ---- tampering is still caught ------------------------------------------------------------
# A block's digest edited to the new pin, with no new signature: bad, and the run refuses.
cp -a "$root/bench" "$BD_TMP/saved"
sed -i 's/^title: .*/title: "Case c2, edited"/' "$tcd/cases/c2/case.yaml"
bd -C "$root" pin tc c2 >/dev/null
is_status c2 draft "c2 edited and re-pinned"
sed -i "s|^  digest: \".*\"$|  digest: \"$(pin_of c2)\"|" "$tcd/cases/c2/provenance.yaml"
is_status c2 bad "the digests edited to the new pin"
expect 1 provenance.bad_signature -- bd -C "$root" verify tc
expect 1 provenance.bad_signature -- bd -C "$root" run tc "${RUN[@]}"
expect 1 provenance.bad_signature -- bd -C "$root" run tc "${RUN[@]}" --drafts
# ... a run that does not select it is told in one line, and runs.
bd -C "$root" run tc "${RUN[@]}" --case c3 >/dev/null 2>"$BD_TMP/err" && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "--case c3 runs beside a bad c2" || fail "--case c3 -> $rc: $(cat "$BD_TMP/err")"
rm -rf "$root/bench" && cp -a "$BD_TMP/saved" "$root/bench"

# A pin rewritten by hand (no `pin`): the blocks name the old pin: superseded, a draft,
# never scored as signed; and with the content edited after the pin, bad.
sed -i 's/^title: .*/title: "Case c2, edited"/' "$tcd/cases/c2/case.yaml"
new=$(bd digest "$tcd/cases/c2")
sed -i "s|^  c2: .*|  c2: $new|" "$tcd/cases/digests.yaml"
is_status c2 draft "a pin rewritten by hand"
bd -C "$root" run tc "${RUN[@]}" --json >"$BD_TMP/ev" 2>/dev/null || fail "run after a hand-written pin"
python3 - "$BD_TMP/ev" <<'PY' && pass "the hand-pinned case is not scored as signed" || fail "events: $(head -c 600 "$BD_TMP/ev")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ids = sorted(e.get("case_id") for e in ev if e.get("event", e.get("type")) == "case.finished")
assert ids == ["c1", "c3"], ids
PY
rm -rf "$root/bench" && cp -a "$BD_TMP/saved" "$root/bench"
printf ' ' >>"$tcd/cases/c2/input/prompt.txt"
is_status c2 bad "c2 edited, not re-pinned (its signatures claim the pin)"
expect 1 case.digest_mismatch -- bd -C "$root" run tc "${RUN[@]}"
expect 1 case.digest_mismatch -- bd -C "$root" run tc "${RUN[@]}" --case c2
bd -C "$root" run tc "${RUN[@]}" --case c3 >/dev/null 2>&1 && pass "--case c3 runs beside an edited c2" ||
    fail "--case c3 refused beside an edited c2"
rm -rf "$root/bench" && cp -a "$BD_TMP/saved" "$root/bench"

# ---- what gets run: problems outside the selection are one line ---------------------------
expect 0 - -- bd -C "$root" case new tc fresh
bd -C "$root" run tc "${RUN[@]}" >/dev/null 2>"$BD_TMP/err" && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "a fresh scaffold does not block the run" || fail "run with a scaffold -> $rc: $(cat "$BD_TMP/err")"
[ "$(grep -c 'not in this run' "$BD_TMP/err")" = 1 ] && grep -q 'case.digest_missing' "$BD_TMP/err" &&
    pass "the scaffold is one warning line" || fail "warning: $(cat "$BD_TMP/err")"
grep -qF 'to see them: `benchdesk verify tc`' "$BD_TMP/err" &&
    pass "the warning says where to see them, in the CLI's words" || fail "warning: $(cat "$BD_TMP/err")"
expect 0 - -- bd -C "$root" run tc "${RUN[@]}" --drafts
expect 1 case.digest_missing -- bd -C "$root" run tc "${RUN[@]}" --case fresh
expect 1 case.digest_missing -- bd -C "$root" verify tc

# ---- the task class: a rubric edit plus pin makes it unsigned, never bad -----------------
rm -rf "$tcd/cases/fresh"
printf '# clearer\n' >>"$tcd/rubric.py"
expect 1 task_class.digest_mismatch -- bd -C "$root" run tc "${RUN[@]}"
out=$(bd -C "$root" pin tc)
grep -q "(task class)" <<<"$out" && grep -q "superseded the signatures of" <<<"$out" &&
    pass "pin says the task class's signatures are superseded" || fail "pin: $out"
expect 3 provenance.missing -- bd -C "$root" run tc "${RUN[@]}"
expect 0 - -- bd -C "$root" run tc "${RUN[@]}" --drafts
sign2 "$tcd"
expect 0 - -- bd -C "$root" run tc "${RUN[@]}"
finish
