#!/usr/bin/env bash
# The review queue and what shows verdicts (docs/provenance.md#the-review-queue): a run made
# by CI reaches two clones through a bundle; one reviewer's rubric_bug, shared through git,
# puts the record on the other reviewer's queue as awaiting a second reviewer (not on its
# author's); unreviewed failures come first with the JSON members the queue promises;
# --sample draws the same passes each time; a clone without the run says so; a new run's
# same failure gets the earlier verdict as a suggestion, never applied; compare shows each
# record's verdicts. Real GnuPG keys made by the test.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
. "$BD_SOURCE_DIR/tests/cli/verdict_lib.sh"

bd "$A" verdict "$sa" --verdict rubric_bug --key "$ALICE_FPR" >/dev/null || fail "alice's verdict"
bd "$A" stage audit/verdicts >/dev/null && bd "$A" commit -m "alice's verdict" >/dev/null &&
    git -C "$A" push -q origin main || fail "commit and push on A"
git -C "$B" pull -q
# the review queue: alice's record awaits a second reviewer — shown to bob, not to alice
q=$(bd "$B" review $tc --key "$BOB_FPR" --json)
[ "$(pj "[(x['seq'], x['why'], [v['verdict'] for v in x['verdicts']]) for x in d['queue'] if x['why'] == 'awaiting_second']" <<<"$q")" = \
    "[[$sb, \"awaiting_second\", [\"rubric_bug\"]]]" ] && pass "review: awaiting a second reviewer, with the first verdict" ||
    fail "review for bob: $q"
[ "$(pj "len([x for x in d['queue'] if x['why'] == 'unreviewed']), sorted(set(d['queue'][0]) )" <<<"$q")" = \
    "$((u0 - 1)) [\"case_id\", \"failure_modes\", \"passed\", \"run_id\", \"score_id\", \"seq\", \"suggestion\", \"verdicts\", \"why\"]" ] &&
    pass "review: the unreviewed failures first, the JSON members" || fail "review shape: $q"
[ "$(bd "$B" review $tc --key "$ALICE_FPR" --json | pj "len([x for x in d['queue'] if x['why'] == 'awaiting_second'])")" = 0 ] &&
    pass "review: not shown to the verdict's own author" || fail "review for alice"
s1=$(bd "$B" review --run ci-1 --sample 2 --json | pj "[x['seq'] for x in d['queue'] if x['why'] == 'sample']")
s2=$(bd "$B" review --run ci-1 --sample 2 --json | pj "[x['seq'] for x in d['queue'] if x['why'] == 'sample']")
[ "$s1" = "$s2" ] && [ "$(pj 'len(d)' <<<"$s1")" = 2 ] && pass "review --sample 2: the same two passes each time ($s1)" ||
    fail "sample: $s1 / $s2"
# a clone that has not imported the run: review says so
C="$BD_TMP/c"
git clone -q "$BD_TMP/origin.git" "$C"
[ "$(bd "$C" review --json | pj 'd["runs_missing"]')" = '["ci-1"]' ] &&
    pass "review: a verdict names a run this history lacks" || fail "missing run: $(bd "$C" review --json)"
bd "$C" review | grep -q "note: verdicts name run ci-1, which this history lacks" &&
    pass "review text: import its bundle" || fail "missing run text"
r=$(rec "$B")
[ "$(pj 'd["cases"], len(d["verdicts"]["awaiting_second"])' <<<"$r")" = "$n0 1" ] &&
    pass "B: alice's verdict names the record by score_id: awaiting a second reviewer" ||
    fail "B after pull: $r"
# compare shows each record's verdicts (run B's side)
bd "$B" run $tc >/dev/null 2>&1 || true
local_run=$(bd "$B" history log --limit 1 --json | pj 'd["records"][0]["run_id"]')
# the same failure in the new run: a suggestion from the earlier verdict, never applied
q=$(bd "$B" review $tc --key "$BOB_FPR" --json)
[ "$(pj "[(x['run_id'] == '$local_run', x['suggestion']['verdict'], x['suggestion']['from_seq']) for x in d['queue'] if x['case_id'].startswith('ghsa-demo-0007')]" <<<"$q")" = \
    "[[true, \"rubric_bug\", $sb]]" ] && pass "review: the same failure suggests the earlier verdict" ||
    fail "suggestion: $q"
[ "$(pj "[x['verdicts'] for x in d['queue'] if x['case_id'].startswith('ghsa-demo-0007')]" <<<"$q")" = "[[]]" ] &&
    pass "review: a suggestion gives no verdict by itself" || fail "suggestion applied: $q"
out=$(bd "$B" compare "$local_run" ci-1 --json) || true
[ "$(pj "sorted(set(v['verdict'] + ':' + v['reviewer'] for c in d['cases'] if c['case_id'].startswith('ghsa-demo-0007') for v in c['verdicts']))" <<<"$out")" = \
    '["rubric_bug:rev-alice@bench.example"]' ] && pass "compare --json: the record's verdicts" ||
    fail "compare verdicts: $(pj '[c for c in d["cases"] if c["verdicts"]]' <<<"$out")"
bd "$B" compare "$local_run" ci-1 | grep ghsa-demo-0007 | grep -q '\[rubric_bug by rev-alice@bench.example, awaiting a second reviewer' &&
    pass "compare: a verdict badge on the row" || fail "compare text: $(bd "$B" compare "$local_run" ci-1 | grep ghsa-demo-0007)"
finish
