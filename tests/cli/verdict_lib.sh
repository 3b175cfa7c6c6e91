# Shared by tests/cli/test_verdict_two_machines.sh and test_review.sh (source after lib.sh
# and the gpg fixtures' lib.sh): a demo bench with three reviewers' keys (mallory under
# alice's identity) pushed to a bare origin and cloned twice ($A, $B), a CI run of the demo
# (`run --run-id ci-1 --out`: the whole run as a bundle) imported on both, B's chain one
# record longer so the seqs differ. Sets tc, A, B, sa/sb (the failing ghsa-demo-0007's seq on A and B), n0 and
# u0 (recommend's cases and unreviewed failures), and the helpers bd, seq_of, rec.
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
bd "$seed" run $tc --run-id ci-1 --out "$BD_TMP/bundle" >/dev/null 2>&1 ||
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
