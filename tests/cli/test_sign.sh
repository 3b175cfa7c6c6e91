#!/usr/bin/env bash
# `benchdesk sign` (docs/provenance.md) end to end: the curator's and the reviewer's loop with
# throwaway keys, the exact signed bytes checked by gpg itself, and every refusal with
# its code and exit status.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { "$BD_BIN" "$@"; }
gpg_keys

root="$BD_TMP/bench"
mini_bench "$root" alice bob carol mallory
expect 0 - -- bd digest "$root/bench/tc"
c1="$root/bench/tc/cases/c1"
c2="$root/bench/tc/cases/c2"

bd sign --help | grep -q '^usage: benchdesk sign' && pass "sign --help" || fail "sign --help"
expect 2 usage.bad_args -- bd sign "$c1"
expect 2 usage.bad_args -- bd sign "$c1" --role owner
expect 2 usage.bad_args -- bd sign --role author
expect 2 usage.bad_args -- bd sign "$c1" --role author --key 1234
expect 2 bench.unknown_case -- bd sign "$root/nope" --role author
expect 2 bench.unknown_case -- bd sign "$root/bench/tc/cases" --role author

# The curator signs as author: provenance.yaml is written, the signed files are not.
before=$(cat "$c1/case.yaml")
digest_before=$(bd digest "$c1")
out=$(bd sign "$c1" --role author --key "$ALICE_FPR" --json)
python3 - "$out" "$ALICE_FPR" "$digest_before" <<'PY' && pass "sign --json" || fail "sign --json: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["role"] == "author" and d["fingerprint"] == sys.argv[2], d
assert d["identity"] == "alice@bench.example" and d["case_id"] == "c1", d
assert d["subject"] == "case" and d["task_class"] == "tc" and d["digest"] == sys.argv[3], d
assert d["provenance_yaml"].endswith("/bench/tc/cases/c1/provenance.yaml"), d
assert d["message"] == ("benchdesk-provenance-v2\nrole: author\nsubject: case\ntask_class: tc\n"
                        "case_id: c1\ndigest: %s\n" % sys.argv[3]), d
PY
[ "$(cat "$c1/case.yaml")" = "$before" ] && pass "case.yaml untouched by signing" || fail "case.yaml changed"
[ "$(bd digest "$c1")" = "$digest_before" ] && pass "the case digest is unchanged" || fail "digest moved"
grep -q '^author:$' "$c1/provenance.yaml" && pass "author block in provenance.yaml" || fail "no author block"
grep -q '^schema_version: 2$' "$c1/provenance.yaml" && pass "provenance.yaml is v2" || fail "provenance.yaml schema"

# The signature is over exactly the bytes of docs/provenance.md#the-signed-message, each
# line ending in "\n": gpg agrees.
digest=$(awk '$1 == "c1:" {print $2}' "$root/bench/tc/cases/digests.yaml")
[ "$digest" = "$digest_before" ] && pass "the pin is the digest" || fail "pin $digest vs $digest_before"
printf 'benchdesk-provenance-v2\nrole: author\nsubject: case\ntask_class: tc\ncase_id: c1\ndigest: %s\n' \
    "$digest" >"$BD_TMP/msg"
signature_of "$c1/provenance.yaml" author >"$BD_TMP/sig.asc"
grep -q 'BEGIN PGP SIGNATURE' "$BD_TMP/sig.asc" || fail "no signature extracted"
if gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg" 2>/dev/null; then pass "gpg verifies the exact message"
else fail "gpg does not verify the exact message"; fi
printf 'x' >>"$BD_TMP/msg"
if ! gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg" 2>/dev/null; then pass "one byte more: gpg refuses"
else fail "gpg verified an altered message"; fi

# The reviewer: never the same key, never before the author.
expect 1 provenance.same_signer -- bd sign "$c1" --role reviewer --key "$ALICE_FPR"
expect 3 provenance.missing -- bd sign "$c2" --role reviewer --key "$BOB_FPR"
expect 0 - -- bd sign "$c1" --role reviewer --key "$BOB_FPR"
grep -q '^reviewer:$' "$c1/provenance.yaml" && pass "reviewer block written" || fail "no reviewer block"
# The reviewer's key may not take the author role on the same case (two-person rule),
# and the refusal writes nothing.
cp "$c1/provenance.yaml" "$BD_TMP/c1.prov"
expect 1 provenance.same_signer -- bd sign "$c1" --role author --key "$BOB_FPR"
cmp -s "$c1/provenance.yaml" "$BD_TMP/c1.prov" && pass "same-signer refusal wrote nothing" || fail "provenance.yaml changed"

# Keys the bench does not trust for the role.
expect 1 provenance.untrusted_signer -- bd sign "$c2" --role author --key "$MALLORY_FPR"
expect 1 provenance.untrusted_signer -- bd sign "$c2" --role author --key "$CAROL_FPR"
expect 2 gpg.key_not_found -- bd sign "$c2" --role author --key "$DAVE_FPR"

# A case off its pin is never signed.
echo edited >"$c2/input/prompt.txt"
expect 1 case.digest_mismatch -- bd sign "$c2" --role author --key "$ALICE_FPR"
[ ! -e "$c2/provenance.yaml" ] && pass "refused sign wrote nothing" || fail "refused sign wrote"
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
# ...and so is an edit of case.yaml's expected: (inside the digest in format v2).
sed -i 's/answer: 42/answer: 43/' "$c2/case.yaml"
expect 1 case.digest_mismatch -- bd sign "$c2" --role reviewer --key "$ALICE_FPR"

# A new case that was never pinned: pin first.
bd -C "$root" case new tc fresh >/dev/null
expect 1 case.digest_missing -- bd sign "$root/bench/tc/cases/fresh" --role author --key "$ALICE_FPR"

# The task class itself: sign TASK_CLASS_DIR as author, then as a different reviewer.
tcdir="$root/bench/tc"
expect 3 provenance.missing -- bd sign "$tcdir" --role reviewer --key "$BOB_FPR"
out=$(bd sign "$tcdir" --role author --key "$ALICE_FPR" --json)
python3 - "$out" <<'PY' && pass "sign TASK_CLASS_DIR --json" || fail "sign task class: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["subject"] == "task-class" and d["case_id"] is None and d["task_class"] == "tc", d
assert d["message"].startswith("benchdesk-provenance-v2\nrole: author\nsubject: task-class\n"
                               "task_class: tc\ndigest: blake3:"), d
assert "case_id" not in d["message"], d
PY
expect 1 provenance.same_signer -- bd sign "$tcdir" --role reviewer --key "$ALICE_FPR"
expect 1 provenance.untrusted_signer -- bd sign "$tcdir" --role reviewer --key "$MALLORY_FPR"
expect 0 - -- bd sign "$tcdir" --role reviewer --key "$BOB_FPR"
grep -q '^reviewer:$' "$tcdir/provenance.yaml" && pass "task-class reviewer written" || fail "no tc reviewer"
bd -C "$root" verify tc --json >"$BD_TMP/v.json" 2>/dev/null || true
python3 - "$BD_TMP/v.json" <<'PY' && pass "verify sees the task class signed" || fail "verify: $(cat "$BD_TMP/v.json")"
import json, sys
tc = json.load(open(sys.argv[1]))["task_classes"][0]
assert tc["name"] == "tc" and tc["task_class_provenance"] == "signed", tc
PY
# A registration edit (a threshold) after signing: refused until re-pinned.
sed -i 's/silver: 0.80/silver: 0.10/' "$tcdir/registration.yaml"
expect 1 task_class.digest_mismatch -- bd sign "$tcdir" --role author --key "$ALICE_FPR"

# Several subjects in one command: each signed or refused on its own, in the order given.
for id in m1 m2 m3; do bd -C "$root" case new tc "$id" >/dev/null; done
bd -C "$root" pin tc >/dev/null 2>&1 || fail "pin tc"
cases="$root/bench/tc/cases"
out=$(bd sign "$cases/m1" "$cases/m2" "$cases/m3" --role author --key "$ALICE_FPR" --json) && rc=0 || rc=$?
python3 - "$out" "$rc" <<'PY' && pass "sign DIR DIR DIR --json: one object a line, in order" || fail "sign several ($rc): $out"
import json, sys
lines = sys.argv[1].split("\n")
assert sys.argv[2] == "0" and len(lines) == 3, lines
got = [json.loads(l) for l in lines]
assert [d["case_id"] for d in got] == ["m1", "m2", "m3"], got
assert all(d["role"] == "author" and d["status"] == "awaiting_review" for d in got), got
PY
# A subject refused in the middle: its error, the others signed, the refusal's exit status.
printf '\n# edited after the pin\n' >>"$cases/m2/case.yaml"
cp "$cases/m2/provenance.yaml" "$BD_TMP/m2.prov"
bd sign "$cases/m1" "$cases/m2" "$cases/m3" --role reviewer --key "$BOB_FPR" >"$BD_TMP/out" 2>"$BD_TMP/err" && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q 'case.digest_mismatch' "$BD_TMP/err" && grep -q 'm2' "$BD_TMP/err" &&
    pass "a refused subject among three: its error and exit 1" || fail "refusal among three ($rc): $(cat "$BD_TMP/err")"
grep -q '^reviewer:$' "$cases/m1/provenance.yaml" && grep -q '^reviewer:$' "$cases/m3/provenance.yaml" &&
    cmp -s "$cases/m2/provenance.yaml" "$BD_TMP/m2.prov" && pass "the two others reviewed, the refused one untouched" ||
    fail "after a refusal among three: m1/m3 not reviewed or m2 changed"
grep -q '^signed 2 of 3 subjects as reviewer' "$BD_TMP/out" && pass "the summary counts 2 of 3" ||
    fail "summary: $(cat "$BD_TMP/out")"
# Subjects that are not all of one known bench: refused before any is signed.
mini_bench "$BD_TMP/other" alice bob
expect 0 - -- bd digest "$BD_TMP/other/bench/tc"
cp "$cases/m3/provenance.yaml" "$BD_TMP/m3.prov"
expect 2 usage.bad_args -- bd sign "$cases/m3" "$BD_TMP/other/bench/tc/cases/c1" --role author --key "$ALICE_FPR" --replace
expect 2 bench.unknown_case -- bd sign "$cases/m3" "$cases/nope" --role author --key "$ALICE_FPR" --replace
cmp -s "$cases/m3/provenance.yaml" "$BD_TMP/m3.prov" && [ ! -e "$BD_TMP/other/bench/tc/cases/c1/provenance.yaml" ] &&
    pass "two benches or an unknown dir: nothing signed" || fail "a refused list signed something"

finish
