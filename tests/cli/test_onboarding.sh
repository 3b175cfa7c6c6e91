#!/usr/bin/env bash
# A newcomer's first signature (docs/user-guide.md#your-first-signature): `signer add`
# exports the public key (never the secret one) into bench/keys/ and adds the
# trusted-signers.yaml entry, keeping the file's comments; the new signer can then sign
# and verify; refusals (unknown key, several keys, already listed, bad roles). Then
# `case check` lints scaffold leftovers and `pin` warns about an untouched scaffold.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { TMPDIR="$BD_TMP" "$BD_BIN" "$@"; }
gpg_keys

root="$BD_TMP/bench"
mini_bench "$root" alice bob
ts="$root/bench/trusted-signers.yaml"
sed -i '1i # Who may sign: reviewed like code.' "$ts"

# mallory is in the keyring but not trusted: sign is refused until she is added.
expect 1 provenance.untrusted_signer -- bd sign "$root/bench/tc/cases/c1" --role author --key "$MALLORY_FPR"
expect 2 usage.bad_args -- bd -C "$root" signer add mallory@bench.example
expect 2 usage.bad_args -- bd -C "$root" signer add mallory@bench.example --roles owner
expect 2 usage.bad_args -- bd -C "$root" signer add bench.example --roles author
expect 2 gpg.key_not_found -- bd -C "$root" signer add nobody@nowhere.example --roles author
expect 2 usage.bad_args -- bd -C "$root" signer add "$ALICE_FPR" --roles author
out=$(bd -C "$root" signer add mallory@bench.example --roles author,reviewer) ||
    fail "signer add: $out"
grep -q "added $MALLORY_FPR (mallory@bench.example) as author, reviewer" <<<"$out" &&
    grep -q "have the change reviewed" <<<"$out" && pass "signer add says what it did and that it needs review" ||
    fail "signer add said: $out"
key="$root/bench/keys/mallory.asc"
grep -q 'BEGIN PGP PUBLIC KEY BLOCK' "$key" && ! grep -q 'PRIVATE' "$key" &&
    pass "the public key, and only it, is in bench/keys/mallory.asc" || fail "key file: $(head -3 "$key")"
head -1 "$ts" | grep -q '^# Who may sign' && grep -q "fingerprint: $MALLORY_FPR, identity: \"mallory@bench.example\", roles: \[author, reviewer\]" "$ts" &&
    pass "trusted-signers.yaml: comment kept, entry appended" || fail "trusted-signers.yaml: $(cat "$ts")"
expect 2 usage.bad_args -- bd -C "$root" signer add mallory@bench.example --roles author
expect 0 - -- bd sign "$root/bench/tc/cases/c1" --role author --key "$MALLORY_FPR"
expect 0 - -- bd sign "$root/bench/tc/cases/c1" --role reviewer --key "$BOB_FPR"
expect 0 - -- bd -C "$root" verify tc
git init -q -b main "$root"
bd -C "$root" status | grep -q '!!.*trusted-signers.yaml\|trusted-signers.yaml.*!!\|changes who may sign' &&
    pass "status flags the change to who may sign" || fail "status: $(bd -C "$root" status)"

# A bench without trusted-signers.yaml: created.
rm "$ts"
expect 0 - -- bd -C "$root" signer add carol@bench.example --roles reviewer
grep -q "fingerprint: $CAROL_FPR, identity: \"carol@bench.example\", roles: \[reviewer\]" "$ts" &&
    pass "trusted-signers.yaml created" || fail "$(cat "$ts")"

# ---- case check and pin's scaffold warning -----------------------------------------------
expect 0 - -- bd -C "$root" case new tc fresh
bd -C "$root" case check tc fresh --json >"$BD_TMP/lint.json" && rc=0 || rc=$?
[ "$rc" = 1 ] && pass "case check on a scaffold exits 1" || fail "case check -> $rc"
python3 - "$BD_TMP/lint.json" <<'PY' && pass "case check names every scaffold leftover" || fail "findings: $(cat "$BD_TMP/lint.json")"
import json, sys
d = json.load(open(sys.argv[1]))
msgs = " | ".join(f["message"] for f in d["findings"])
assert all(f["code"] == "case.lint" and f["scaffold"] for f in d["findings"]), d
for want in ("expected is empty", "the title is still the case id", "input/ is empty", "is {}"):
    assert want in msgs, (want, msgs)
PY
out=$(bd -C "$root" pin tc fresh 2>&1)
grep -q "warning: fresh looks like an untouched scaffold: .*expected is empty" <<<"$out" &&
    pass "pin warns about the untouched scaffold" || fail "pin: $out"
expect 0 - -- bd -C "$root" case check tc c1 c2
# Filled in: no finding, and pin says nothing more.
f="$root/bench/tc/cases/fresh"
sed -i 's/^title: .*/title: "A real case"/; s/^expected: {}.*/expected: {answer: 42}/' "$f/case.yaml"
echo "the input" >"$f/input/prompt.txt"
echo '{"output": 42}' >"$f/cassette.json"
expect 0 - -- bd -C "$root" case check tc
out=$(bd -C "$root" pin tc fresh 2>&1)
grep -q "scaffold" <<<"$out" && fail "pin still warns: $out" || pass "a filled-in case: no warning"
rm "$f/cassette.json"
expect 1 - -- bd -C "$root" case check tc fresh
sed -i 's/^title: .*/title: [broken/' "$f/case.yaml"
out=$(bd -C "$root" case check tc fresh 2>&1 || true)
grep -q 'case.schema_invalid\|yaml.syntax' <<<"$out" &&
    pass "case check reports a case.yaml that does not load" || fail "case check on broken yaml"

# Every case re-pinned at once (read again on several threads): one warning per scaffold,
# in case order, none for the filled-in cases and none lost.
rm -rf "$f"
expect 0 - -- bd -C "$root" case new tc s-0042
copy() {
    rm -rf "$root/bench/tc/cases/$2"
    cp -r "$root/bench/tc/cases/$1" "$root/bench/tc/cases/$2"
    sed -i "s/^case_id: .*/case_id: $2/" "$root/bench/tc/cases/$2/case.yaml"
}
for i in $(seq -w 0 299); do
    [ "$i" = 042 ] || copy c1 "s-0$i"
done
copy s-0042 s-0117
copy s-0042 s-0299
out=$(bd -C "$root" pin tc 2>&1 || true)
got=$(grep -o 'warning: [a-z0-9-]* looks like an untouched scaffold' <<<"$out" | awk '{print $2}' | paste -sd' ') || true
[ "$got" = "s-0042 s-0117 s-0299" ] && pass "pin of 300 cases warns about exactly its 3 scaffolds, in order" ||
    fail "scaffold warnings: '$got' in: $(head -c 800 <<<"$out")"
finish
