#!/usr/bin/env bash
# `benchdesk commit` refuses any tree that would not verify (docs/provenance.md#staging-and-committing):
# a pin staged without its case (case.pin_orphaned), a case staged without its pin
# (case.digest_missing), a staged case off its staged pin (case.digest_mismatch) — the
# index is judged, whatever the working tree holds — and the refused commit writes
# nothing; a tree that verifies commits.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { "$BD_BIN" "$@"; }
gpg_keys
export HOME="$BD_TMP" XDG_CONFIG_HOME="$BD_TMP" GIT_CONFIG_NOSYSTEM=1

root="$BD_TMP/repo"
mini_bench "$root" alice bob
git init -q -b main "$root"
git -C "$root" config user.name Curator
git -C "$root" config user.email curator@bench.example
expect 0 - -- bd -C "$root" stage bench
expect 0 - -- bd -C "$root" commit -m "the bench"
head0=$(git -C "$root" rev-parse HEAD)

# A new case pinned, but only digests.yaml staged: the pin names a case the commit lacks.
expect 0 - -- bd -C "$root" case new tc c4
echo "the input" >"$root/bench/tc/cases/c4/input/prompt.txt"
bd -C "$root" pin tc c4 >/dev/null
expect 0 - -- bd -C "$root" stage bench/tc/cases/digests.yaml
expect 1 case.pin_orphaned -- bd -C "$root" commit -m "a pin without its case"
[ "$(git -C "$root" rev-parse HEAD)" = "$head0" ] && pass "the refused commit wrote nothing" || fail "HEAD moved"
# The case staged too: it commits, and the committed tree verifies.
expect 0 - -- bd -C "$root" stage bench/tc/cases/c4
expect 0 - -- bd -C "$root" commit -m "c4"
rm -rf "$BD_TMP/clone" && git clone -q "$root" "$BD_TMP/clone"
expect 0 - -- bd -C "$BD_TMP/clone" verify tc

# A case removed from the index while its pin stays: orphaned.
git -C "$root" rm -q -r --cached bench/tc/cases/c2
expect 1 case.pin_orphaned -- bd -C "$root" commit -m "c2 without its pin dropped"
git -C "$root" reset -q
# A new case staged without its pin.
expect 0 - -- bd -C "$root" case new tc c5
expect 0 - -- bd -C "$root" stage bench/tc/cases/c5
expect 1 case.digest_missing -- bd -C "$root" commit -m "c5 unpinned"
git -C "$root" reset -q
rm -rf "$root/bench/tc/cases/c5"
# A staged case edited after its pin, the working tree fixed again: the index is judged.
sed -i 's/^title: .*/title: "edited"/' "$root/bench/tc/cases/c1/case.yaml"
expect 0 - -- bd -C "$root" stage bench/tc/cases/c1
git -C "$root" show HEAD:bench/tc/cases/c1/case.yaml >"$root/bench/tc/cases/c1/case.yaml"
expect 0 - -- bd -C "$root" verify tc
expect 1 case.digest_mismatch -- bd -C "$root" commit -m "staged edit off its pin"
[ "$(git -C "$root" log --oneline | wc -l)" = 2 ] && pass "only the two good commits exist" || fail "$(git -C "$root" log --oneline)"
finish
