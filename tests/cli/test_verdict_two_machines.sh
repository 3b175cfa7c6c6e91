#!/usr/bin/env bash
# Two reviewers on two clones of the bench exchange verdicts through git, and a run made
# elsewhere (CI) reaches both through a bundle (docs/provenance.md#verdicts): the two-person
# rule holds on both machines — one reviewer's rubric_bug leaves the record in the evidence
# (awaiting a second reviewer), a second key with the same identity changes nothing, a second
# reviewer removes it (its case drops out, never an older record), flaky is a mark only, a
# subset re-run of the failing case changes nothing, withdrawn takes a verdict back.
# Real GnuPG keys made by the test; the demo bench's own signatures.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
pj() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1], {"d": d})
for i, x in enumerate(v if isinstance(v, tuple) else (v,)):
    sys.stdout.write((" " if i else "") + (x if isinstance(x, str) else json.dumps(x)))
print()' "$@"
}
command -v git >/dev/null || { echo "skipped: git is not installed"; exit 77; }
gpg_keys
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state" TMPDIR="$BD_TMP/tmp"
mkdir -p "$HOME" "$TMPDIR"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@bench.example GIT_COMMITTER_NAME=t \
    GIT_COMMITTER_EMAIL=t@bench.example
tc=vuln-remediation

# the bench: the demo, plus three reviewers' keys (mallory under alice's identity)
seed="$BD_TMP/seed"
mkdir -p "$seed"
cp -a "$BD_SOURCE_DIR/bench" "$seed/bench"
for k in alice bob mallory; do cp "$BD_TMP/k/keys/$k.asc" "$seed/bench/keys/rev-$k.asc"; done
cat >>"$seed/bench/trusted-signers.yaml" <<YAML
  - {fingerprint: $ALICE_FPR, identity: rev-alice@bench.example, roles: [reviewer]}
  - {fingerprint: $BOB_FPR, identity: rev-bob@bench.example, roles: [reviewer]}
  - {fingerprint: $MALLORY_FPR, identity: rev-alice@bench.example, roles: [reviewer]}
YAML
printf '.benchdesk/\n' >"$seed/.gitignore"
git -C "$seed" init -q -b main && git -C "$seed" add -A && git -C "$seed" commit -qm bench
git clone -q --bare "$seed" "$BD_TMP/origin.git"
A="$BD_TMP/a" B="$BD_TMP/b"
git clone -q "$BD_TMP/origin.git" "$A" && git clone -q "$BD_TMP/origin.git" "$B"
for m in "$A" "$B"; do git -C "$m" config user.name t && git -C "$m" config user.email t@bench.example; done
bd() { local m=$1; shift; "$BD_BIN" -C "$m" "$@"; }

# CI runs the task class elsewhere and ships the run as a bundle; both machines import it
bd "$seed" run $tc --shard 0/1 --run-id ci-1 --out "$BD_TMP/bundle" >/dev/null 2>&1 ||
    { fail "the CI run"; finish; }
bd "$B" promote $tc gold >/dev/null 2>&1 || true # B's chain has a record before: other seqs
for m in "$A" "$B"; do bd "$m" history import "$BD_TMP/bundle" >/dev/null || fail "import on $m"; done
seq_of() { # machine case-prefix -> the seq of its record in run ci-1
    bd "$1" history log --run ci-1 --limit 100 --json |
        pj "[r['seq'] for r in d['records'] if r['case_id'].startswith('$2')][0]"
}
sa=$(seq_of "$A" ghsa-demo-0007) sb=$(seq_of "$B" ghsa-demo-0007)
[ "$sa" != "$sb" ] && pass "the failing record sits at $sa on A and $sb on B" ||
    fail "seqs: $sa $sb"
rec() { bd "$1" recommend $tc --json; }
base=$(rec "$A")
n0=$(pj 'd["cases"]' <<<"$base")
[ "$(pj 'd["run"]["run_id"]' <<<"$base")" = ci-1 ] && [ "$n0" -ge 10 ] &&
    pass "evidence: run ci-1, $n0 cases" || fail "base: $base"
u0=$(pj 'len(d["verdicts"]["unreviewed"])' <<<"$base")
[ "$u0" -ge 2 ] && pass "recommend: $u0 unreviewed failures" || fail "unreviewed: $u0"
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
r=$(rec "$B")
[ "$(pj 'd["cases"], len(d["verdicts"]["awaiting_second"])' <<<"$r")" = "$n0 1" ] &&
    pass "B: alice's verdict names the record by score_id: awaiting a second reviewer" ||
    fail "B after pull: $r"
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
for m in "$A" "$B"; do
    out=$(bd "$m" verify --json) && [ "$(pj 'd["verdicts"]["counting"]' <<<"$out")" = 3 ] &&
        pass "verify on $(basename "$m"): three counting verdicts" || fail "verify on $m: $out"
done

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
git -C "$B" pull -q
bd "$B" verdict "$sb" --verdict withdrawn --key "$BOB_FPR" >/dev/null || fail "withdrawn"
r=$(rec "$B")
[ "$(pj 'd["cases"], len(d["verdicts"]["removed"]), len(d["verdicts"]["awaiting_second"])' <<<"$r")" = "$n0 0 1" ] &&
    pass "B: withdrawn: the record is back, awaiting a second reviewer" || fail "withdrawn: $r"

# compare shows each record's verdicts (run B's side)
bd "$B" run $tc >/dev/null 2>&1 || true
local_run=$(bd "$B" history log --limit 1 --json | pj 'd["records"][0]["run_id"]')
out=$(bd "$B" compare "$local_run" ci-1 --json) || true
[ "$(pj "sorted(set(v['verdict'] + ':' + v['reviewer'] for c in d['cases'] if c['case_id'].startswith('ghsa-demo-0007') for v in c['verdicts']))" <<<"$out")" = \
    '["rubric_bug:rev-alice@bench.example"]' ] && pass "compare --json: the record's verdicts" ||
    fail "compare verdicts: $(pj '[c for c in d["cases"] if c["verdicts"]]' <<<"$out")"
bd "$B" compare "$local_run" ci-1 | grep ghsa-demo-0007 | grep -q '\[rubric_bug by rev-alice@bench.example, awaiting a second reviewer' &&
    pass "compare: a verdict badge on the row" || fail "compare text: $(bd "$B" compare "$local_run" ci-1 | grep ghsa-demo-0007)"
finish
