#!/usr/bin/env bash
# Two reviewers on two clones of the bench exchange verdicts through git, and a run made
# elsewhere (CI) reaches both through a bundle (docs/provenance.md#verdicts): the two-person
# rule holds on both machines — one reviewer's rubric_bug leaves the record in the evidence
# (awaiting a second reviewer), a second key with the same identity changes nothing, a second
# reviewer removes it (its case drops out, never an older record); the other marks are in
# test_verdict_marks.sh.
# Real GnuPG keys made by the test; the demo bench's own signatures.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
. "$BD_SOURCE_DIR/tests/cli/verdict_lib.sh"
has() { pj "[e['case_id'][:14] for e in d['evidence']].count('ghsa-demo-0007')" <<<"$1"; }

# alice on A: rubric_bug, committed and pushed
bd "$A" verdict "$sa" --verdict rubric_bug --note "expected names the field differently" \
    --key "$ALICE_FPR" >/dev/null || fail "alice's verdict"
bd "$A" stage audit/verdicts >/dev/null && bd "$A" commit -m "alice's verdict" >/dev/null ||
    fail "stage and commit on A"
git -C "$A" push -q origin main
r=$(rec "$A")
[ "$(pj 'd["cases"], [x["reviewers"][0]["reviewer"] for x in d["verdicts"]["awaiting_second"]]' <<<"$r")" = \
    "$n0 [\"rev-alice@bench.example\"]" ] && [ "$(has "$r")" = 1 ] &&
    pass "A: one reviewer: the record stays, awaiting a second reviewer" || fail "A after alice: $r"
[ "$(pj 'len(d["verdicts"]["unreviewed"])' <<<"$r")" = $((u0 - 1)) ] &&
    pass "A: one failure fewer unreviewed" || fail "unreviewed after alice"

# B pulls: the same on B, where the record has another seq
git -C "$B" pull -q
# a second key under the same identity is not a second person
bd "$B" verdict "$sb" --verdict rubric_bug --key "$MALLORY_FPR" >/dev/null || fail "mallory's verdict"
r=$(rec "$B")
[ "$(pj 'd["cases"], len(d["verdicts"]["removed"])' <<<"$r")" = "$n0 0" ] &&
    pass "B: two keys, one identity: still in the evidence" || fail "same identity removed: $r"
# bob: a second reviewer removes it; its case drops out
bd "$B" verdict "$sb" --verdict rubric_bug --note "agreed" --key "$BOB_FPR" >/dev/null ||
    fail "bob's verdict"
r=$(rec "$B")
[ "$(pj 'd["cases"], d["excluded_records"]["removed"], [sorted(w["reviewer"] for w in x["reviewers"]) for x in d["verdicts"]["removed"]]' <<<"$r")" = \
    "$((n0 - 1)) 1 [[\"rev-alice@bench.example\", \"rev-bob@bench.example\"]]" ] && [ "$(has "$r")" = 0 ] &&
    pass "B: two reviewers: removed (who, why), its case drops out" || fail "B after bob: $r"
bd "$B" recommend $tc | grep -q "removed       #$sb ghsa-demo-0007.*rubric_bug by rev-" &&
    pass "B: recommend's text lists the removed record" || fail "B text: $(bd "$B" recommend $tc)"
bd "$B" stage audit/verdicts >/dev/null && bd "$B" commit -m "bob's verdicts" >/dev/null &&
    git -C "$B" push -q origin main || fail "commit and push on B"

# A pulls: the rule holds on A too
git -C "$A" pull -q
r=$(rec "$A")
[ "$(pj 'd["cases"], len(d["verdicts"]["removed"])' <<<"$r")" = "$((n0 - 1)) 1" ] && [ "$(has "$r")" = 0 ] &&
    pass "A: removed by two reviewers on this machine too" || fail "A after pull: $r"
out=$(bd "$A" verify --json) && [ "$(pj 'd["verdicts"]["counting"]' <<<"$out")" = 3 ] &&
    pass "verify on A: three counting verdicts" || fail "verify on A: $out"

finish
