#!/usr/bin/env bash
# Verdicts that are marks, and what never changes the evidence (docs/provenance.md#verdicts):
# flaky is listed and changes nothing, a subset re-run of a failing case is shown and never
# counted, withdrawn takes a removing verdict back (the record awaits a second reviewer
# again). One machine of verdict_lib.sh's two; real GnuPG keys made by the test.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
. "$BD_SOURCE_DIR/tests/cli/verdict_lib.sh"

# two reviewers remove the failing record on A
bd "$A" verdict "$sa" --verdict rubric_bug --key "$ALICE_FPR" >/dev/null || fail "alice's verdict"
bd "$A" verdict "$sa" --verdict rubric_bug --key "$BOB_FPR" >/dev/null || fail "bob's verdict"
# flaky is a mark: the evidence does not change
s5=$(seq_of "$A" ghsa-demo-0005)
bd "$A" verdict "$s5" --verdict flaky --key "$ALICE_FPR" >/dev/null || fail "flaky"
r=$(rec "$A")
[ "$(pj 'd["cases"], [x["case_id"][:14] for x in d["verdicts"]["flaky"]]' <<<"$r")" = \
    "$((n0 - 1)) [\"ghsa-demo-0005\"]" ] && pass "A: flaky is listed, the evidence unchanged" ||
    fail "flaky: $r"
# re-running the failing case until it passes changes nothing: a subset run is never counted
rate=$(pj 'd["pass_rate"]' <<<"$r")
c5=$(bd "$A" list $tc --json | pj "[c['case_id'] for c in d['cases'] if c['case_id'].startswith('ghsa-demo-0005')][0]")
bd "$A" run $tc --case "$c5" >/dev/null 2>&1 || true
r=$(rec "$A")
[ "$(pj 'd["run"]["run_id"], d["pass_rate"], d["excluded_records"]["subset_runs"]' <<<"$r")" = "ci-1 $rate 1" ] &&
    pass "A: a subset re-run is shown, never counted" || fail "subset: $r"
# withdrawn: bob takes his verdict back; the record is awaiting a second reviewer again
bd "$A" verdict "$sa" --verdict withdrawn --key "$BOB_FPR" >/dev/null || fail "withdrawn"
r=$(rec "$A")
[ "$(pj 'd["cases"], len(d["verdicts"]["removed"]), len(d["verdicts"]["awaiting_second"])' <<<"$r")" = "$n0 0 1" ] &&
    pass "withdrawn: the record is back, awaiting a second reviewer" || fail "withdrawn: $r"

finish
