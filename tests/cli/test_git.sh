#!/usr/bin/env bash
# `benchdesk status`, `stage`, `commit` (docs/provenance.md#staging-and-committing) end to end in a scratch git
# repository: an unborn branch, refusals with their codes, a staged case off its pin, and
# a signed commit that `git verify-commit` accepts.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { "$BD_BIN" "$@"; }
gpg_keys
# No user or system git config: the identity comes from the repository alone.
export HOME="$BD_TMP" XDG_CONFIG_HOME="$BD_TMP" GIT_CONFIG_NOSYSTEM=1

root="$BD_TMP/repo"
mini_bench "$root" alice bob
echo "outside the bench" >"$root/README"
git init -q -b main "$root"

for c in status stage commit; do
    bd "$c" --help | grep -q "^usage: benchdesk $c" && pass "$c --help" || fail "$c --help"
done

out=$(bd -C "$root" status)
grep -q '^## main (no commits yet)$' <<<"$out" && pass "status: unborn branch" || fail "status: $out"
grep -q '^?? bench/tc/cases/c1/case.yaml$' <<<"$out" && pass "status: untracked" || fail "status: $out"
grep -q 'README' <<<"$out" && fail "status shows README" || pass "status: only bench/ and audit/"

expect 2 git.path_outside -- bd -C "$root" stage README
expect 2 git.path_outside -- bd -C "$root" stage /etc/passwd
expect 2 git.path_outside -- bd -C "$root" stage bench/../README
expect 2 git.path_unknown -- bd -C "$root" stage bench/nope
expect 2 usage.bad_args -- bd -C "$root" stage
expect 2 usage.bad_args -- bd -C "$root" commit
expect 2 git.nothing_to_commit -- bd -C "$root" commit -m empty
mkdir -p "$BD_TMP/plain/bench"
expect 2 git.not_a_repository -- bd -C "$BD_TMP/plain" status

# Relative paths are the shell's when -C is not given.
(cd "$root/bench/tc" && bd stage cases >/dev/null) && pass "stage from a sub-directory" || fail "stage cases"
expect 0 - -- bd -C "$root" stage bench
out=$(bd -C "$root" status --json)
python3 - "$out" <<'PY' && pass "status --json" || fail "status --json: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["branch"] == "main" and d["unborn"] is True, d
paths = {e["path"]: e["change"] for e in d["staged"]}
assert paths["bench/tc/cases/c1/case.yaml"] == "A", paths
assert not d["untracked"] and not d["unstaged"], d
PY

# Who commits is git config's business; without it, a clear refusal.
expect 2 git.no_identity -- bd -C "$root" commit -m "Add the bench"
git -C "$root" config user.name "Test Curator"
git -C "$root" config user.email curator@bench.example
out=$(bd -C "$root" commit -m "Add the bench")
grep -q '^\[main (root-commit) [0-9a-f]\{12\}\] Add the bench$' <<<"$out" && pass "commit into an unborn repository" \
    || fail "commit: $out"
[ "$(git -C "$root" log --format='%an|%s')" = "Test Curator|Add the bench" ] && pass "git log agrees" || fail "git log"
[ -z "$(git -C "$root" status --porcelain -- bench)" ] && pass "bench committed whole" || fail "bench not clean"

# A staged case whose pin does not match is refused; pinned and staged, it commits.
echo edited >"$root/bench/tc/cases/c1/input/prompt.txt"
out=$(bd -C "$root" status)
grep -q '^ M bench/tc/cases/c1/input/prompt.txt$' <<<"$out" && pass "status: unstaged edit" || fail "status: $out"
expect 0 - -- bd -C "$root" stage bench/tc/cases/c1
expect 1 case.digest_mismatch -- bd -C "$root" commit -m "Edit c1"
bd -C "$root" pin tc c1 >/dev/null
expect 1 case.digest_mismatch -- bd -C "$root" commit -m "Edit c1"
expect 0 - -- bd -C "$root" stage bench/tc
out=$(bd -C "$root" commit -m "Edit c1" --sign --key "$ALICE_FPR" --json)
python3 - "$out" "$ALICE_FPR" <<'PY' && pass "commit --sign --json" || fail "commit --sign: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["signed"] is True and d["signer"] == sys.argv[2] and d["initial"] is False, d
PY
git -C "$root" verify-commit HEAD 2>/dev/null && pass "git verify-commit accepts the signed commit" \
    || fail "git verify-commit refused the signed commit"
git -C "$root" verify-commit HEAD~1 2>/dev/null && fail "unsigned commit verified" \
    || pass "git verify-commit refuses the unsigned one"
[ "$(git -C "$root" log -1 --format=%G?)" = G ] && pass "good signature" || fail "log %G?"

expect 2 git.nothing_to_commit -- bd -C "$root" commit -m again
expect 2 usage.bad_args -- bd -C "$root" commit -m x --key "$ALICE_FPR"

# Unstage takes a change back out of the index.
echo more >"$root/bench/tc/cases/c2/input/extra.txt"
expect 0 - -- bd -C "$root" stage bench/tc/cases/c2
expect 0 - -- bd -C "$root" stage --unstage bench/tc/cases/c2
out=$(bd -C "$root" status)
grep -q '^?? bench/tc/cases/c2/input/extra.txt$' <<<"$out" && pass "unstage" || fail "unstage: $out"

finish
