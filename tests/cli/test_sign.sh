#!/usr/bin/env bash
# `benchdesk sign` (DESIGN.md §6) end to end: the curator's and the reviewer's loop with
# throwaway keys, the exact signed bytes checked by gpg itself, and every refusal with
# its code and exit status.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { "$BD_BIN" "$@"; }
gpg_keys

root="$BD_TMP/bench"
mini_bench "$root" alice bob carol mallory
c1="$root/bench/tc/cases/c1"
c2="$root/bench/tc/cases/c2"

bd sign --help | grep -q '^usage: benchdesk sign' && pass "sign --help" || fail "sign --help"
expect 2 usage.bad_args -- bd sign "$c1"
expect 2 usage.bad_args -- bd sign "$c1" --role owner
expect 2 usage.bad_args -- bd sign --role author
expect 2 usage.bad_args -- bd sign "$c1" --role author --key 1234
expect 2 bench.unknown_case -- bd sign "$root/bench/tc" --role author
expect 2 bench.unknown_case -- bd sign "$root/nope" --role author

# The curator signs as author.
before=$(cat "$c1/case.yaml")
out=$(bd sign "$c1" --role author --key "$ALICE_FPR" --json)
python3 - "$out" "$ALICE_FPR" <<'PY' && pass "sign --json" || fail "sign --json: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["role"] == "author" and d["fingerprint"] == sys.argv[2], d
assert d["identity"] == "alice@bench.example" and d["case_id"] == "c1", d
assert d["message"].startswith("benchdesk-provenance-v1\nrole: author\ncase_id: c1\n"), d
PY
grep -q 'a comment that must survive' "$c1/case.yaml" && pass "comments kept" || fail "comments lost"
# Everything but the new block is byte for byte what it was.
python3 - "$c1/case.yaml" "$before" <<'PY' && pass "only the block was added" || fail "case.yaml disturbed"
import sys
after = open(sys.argv[1]).read()
s = after.index("  added_by:\n"); e = after.index("  # validated by hand\n")
assert after[:s] + after[e:] == sys.argv[2] + "\n", (after[:s] + after[e:])
PY

# The signature is over exactly the §6 bytes, each line ending in "\n": gpg agrees.
digest=$(awk '$1 == "case_digest:" {print $2}' "$c1/case.yaml")
printf 'benchdesk-provenance-v1\nrole: author\ncase_id: c1\nadded_at: 2026-05-12T14:00:00Z\ncase_digest: %s\n' \
    "$digest" >"$BD_TMP/msg"
signature_of "$c1/case.yaml" added_by >"$BD_TMP/sig.asc"
if gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg" 2>/dev/null; then pass "gpg verifies the exact message"
else fail "gpg does not verify the exact message"; fi
printf 'x' >>"$BD_TMP/msg"
if ! gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg" 2>/dev/null; then pass "one byte more: gpg refuses"
else fail "gpg verified an altered message"; fi

# The reviewer: never the same key, never before the author.
expect 1 provenance.same_signer -- bd sign "$c1" --role reviewer --key "$ALICE_FPR"
expect 3 provenance.missing -- bd sign "$c2" --role reviewer --key "$BOB_FPR"
expect 0 - -- bd sign "$c1" --role reviewer --key "$BOB_FPR"
grep -q '^  reviewed_by:$' "$c1/case.yaml" && pass "reviewed_by written" || fail "no reviewed_by"

# Keys the bench does not trust for the role.
expect 1 provenance.untrusted_signer -- bd sign "$c2" --role author --key "$MALLORY_FPR"
expect 1 provenance.untrusted_signer -- bd sign "$c2" --role author --key "$CAROL_FPR"
expect 2 gpg.key_not_found -- bd sign "$c2" --role author --key "$DAVE_FPR"

# A case off its pin is never signed.
echo edited >"$c2/input/prompt.txt"
cp "$c2/case.yaml" "$BD_TMP/c2.before"
expect 1 case.digest_mismatch -- bd sign "$c2" --role author --key "$ALICE_FPR"
cmp -s "$c2/case.yaml" "$BD_TMP/c2.before" && pass "refused sign wrote nothing" || fail "refused sign wrote"
bd -C "$root" pin tc c2 >/dev/null

# Without --key: gpg.conf's default-key decides.
echo "default-key $BOB_FPR" >"$GNUPGHOME/gpg.conf"
out=$(cd "$root" && bd sign bench/tc/cases/c2 --role author --json)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["fingerprint"]==sys.argv[2], d' "$out" "$BOB_FPR" \
    && pass "default key from gpg.conf" || fail "default key: $out"
rm -f "$GNUPGHOME/gpg.conf"

# .benchdesk/config.yaml's signing_key is the default when --key is absent; --key wins.
mkdir -p "$root/.benchdesk"
echo "signing_key: $DAVE_FPR" >"$root/.benchdesk/config.yaml"
expect 2 gpg.key_not_found -- bd sign "$c2" --role author
echo "signing_kee: $DAVE_FPR" >"$root/.benchdesk/config.yaml"
expect 2 config.schema_invalid -- bd sign "$c2" --role author
rm -f "$root/.benchdesk/config.yaml"

# An edited case after signing: signing again is refused until it is re-pinned.
echo changed >"$c1/expected/answer.txt"
expect 1 case.digest_mismatch -- bd sign "$c1" --role author --key "$ALICE_FPR"

finish
