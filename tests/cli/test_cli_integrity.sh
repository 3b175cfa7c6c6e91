#!/usr/bin/env bash
# The headless commands of docs/benchdesk.1 over a copy of the demo bench: exit statuses,
# one-line errors with stable codes, --json, --help, and every integrity failure that
# `verify` must catch.
. "$(dirname "$0")/lib.sh"
bd() { "$BD_BIN" "$@"; }

root=$(demo_copy)
# The first task class and its first case, without a pipe into head (under pipefail a
# writer that outlives head dies of SIGPIPE and fails the script at random).
tc=
for d in "$root"/bench/*/; do
    d=${d%/}
    if [ -f "$d/registration.yaml" ]; then tc=${d##*/}; break; fi
done
case1=
for d in "$root/bench/$tc/cases"/*/; do
    d=${d%/}
    case1=${d##*/}
    break
done
cdir="$root/bench/$tc/cases/$case1"

# The shipped demo bench verifies.
expect 0 - -- bd -C "$BD_SOURCE_DIR" verify
expect 0 - -- bd -C "$root" verify
expect 0 - -- bd -C "$root" list
expect 0 - -- bd -C "$root" list "$tc"

# --help on every command, exit 0, text on stdout.
for c in list verify digest pin case run history anchor recommend promote; do
    if bd "$c" --help | grep -q "^usage: benchdesk $c"; then pass "$c --help"; else fail "$c --help"; fi
done
bd --help | grep -q "^usage: benchdesk" && pass "--help" || fail "--help"

# Bad usage and invalid input: exit 2 with their codes.
expect 2 usage.unknown_command -- bd -C "$root" frobnicate
expect 2 usage.bad_args -- bd -C "$root" list a b
expect 2 usage.bad_args -- bd -C "$root" digest
expect 2 bench.unknown_task_class -- bd -C "$root" list no-such-class
expect 2 case.bad_id -- bd -C "$root" list ../etc
expect 2 case.bad_id -- bd -C "$root" list 'a/b'
expect 2 case.bad_id -- bd -C "$root" case new "$tc" ../../escape
expect 2 case.bad_id -- bd -C "$root" case new "$tc" Upper
expect 2 bench.not_found -- bd -C "$BD_TMP" list
expect 2 case.exists -- bd -C "$root" case new "$tc" "$case1"
[ ! -e "$root/escape" ] && pass "bad id created nothing" || fail "bad id created a file"

# --json errors are one object on stdout.
out=$(bd -C "$root" list no-such-class --json || true)
python3 -c 'import json,sys; e=json.loads(sys.argv[1])["error"]; assert e["code"]=="bench.unknown_task_class" and e["message"]' "$out" \
    && pass "--json error object" || fail "--json error object: $out"
out=$(bd -C "$root" verify --json)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["ok"] is True and d["task_classes"]' "$out" \
    && pass "verify --json" || fail "verify --json: $out"
out=$(bd -C "$root" list --json)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["task_classes"])>=3 and all(t["pins_ok"] for t in d["task_classes"])' "$out" \
    && pass "list --json" || fail "list --json: $out"

# digest of a case equals its pin.
pinned=$(awk -v id="$case1" '$1==id":" {print $2}' "$root/bench/$tc/cases/digests.yaml")
[ "$(bd digest "$cdir")" = "$pinned" ] && pass "digest = pin" || fail "digest != pin"

# Tampering, each caught with its own code, exit 1; then restored.
cp -a "$root/bench" "$BD_TMP/pristine"
restore() { rm -rf "$root/bench"; cp -a "$BD_TMP/pristine" "$root/bench"; }

f=$(find "$cdir/input" -type f | head -1)
printf 'x' >>"$f"
expect 1 case.digest_mismatch -- bd -C "$root" verify "$tc"
restore
chmod +x "$(find "$cdir/expected" -type f | head -1)"
expect 1 case.digest_mismatch -- bd -C "$root" verify "$tc"
restore
printf '\n# tampered\n' >>"$root/bench/$tc/rubric.py"
expect 1 task_class.digest_mismatch -- bd -C "$root" verify "$tc"
restore
sed -i 's/^promotion_threshold: .*/promotion_threshold: {silver: 0.10, gold: 0.20}/' "$root/bench/$tc/registration.yaml"
expect 1 task_class.digest_mismatch -- bd -C "$root" verify "$tc"
restore
# case.yaml is inside the case digest (format v2): editing its cassette_digest is first
# a case.digest_mismatch; with the pin forged to match (the independent reference
# computes it), the cassette check still catches it.
sed -i "s/^cassette_digest: .*/cassette_digest: blake3:$(printf '0%.0s' $(seq 64))/" "$cdir/case.yaml"
expect 1 case.digest_mismatch -- bd -C "$root" verify "$tc"
forged=$(python3 "$BD_SOURCE_DIR/tests/kat/case_digest.py" "$cdir")
sed -i "s|^  $case1: .*|  $case1: $forged|" "$root/bench/$tc/cases/digests.yaml"
expect 1 cassette.digest_mismatch -- bd -C "$root" verify "$tc"
restore
sed -i "/^  $case1:/d" "$root/bench/$tc/cases/digests.yaml"
expect 1 case.digest_missing -- bd -C "$root" verify "$tc"
restore
mv "$cdir" "$root/bench/$tc/cases/zz-moved-away"
expect 1 case.pin_orphaned -- bd -C "$root" verify "$tc"
restore
ln -s /etc/passwd "$cdir/input/link"
expect 1 case.unsupported_entry -- bd -C "$root" verify "$tc"
restore
mkfifo "$cdir/input/fifo"
expect 1 case.unsupported_entry -- bd -C "$root" verify "$tc"
restore
printf 'surprise: 1\n' >>"$cdir/case.yaml"
expect 2 case.schema_invalid -- bd -C "$root" verify "$tc"
restore
# Every failure is reported, not just the first.
printf 'x' >>"$(find "$cdir/input" -type f | head -1)"
printf '\n# tampered\n' >>"$root/bench/$tc/rubric.py"
n=$(bd -C "$root" verify "$tc" 2>&1 >/dev/null | grep -c '^benchdesk: ' || true)
[ "$n" -ge 2 ] && pass "verify reports every failure ($n)" || fail "verify reported $n failures"

# pin: deliberate re-pin fixes both, and case.yaml keeps every other byte.
before=$(grep -v -e '^case_digest:' -e '^cassette_digest:' "$cdir/case.yaml" | sha256sum)
expect 0 - -- bd -C "$root" pin "$tc"
after=$(grep -v -e '^case_digest:' -e '^cassette_digest:' "$cdir/case.yaml" | sha256sum)
[ "$before" = "$after" ] && pass "pin keeps case.yaml bytes" || fail "pin changed other bytes"
# Re-pinning changed content does not launder it: the signatures were over the old
# digest, so they are superseded and the case must be signed again
# (docs/provenance.md#editing-is-not-tampering).
superseded() {
    bd -C "$root" verify "$tc" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted({e["case_id"] or "-" for t in d["task_classes"] for e in t["superseded"]})))'
}
expect 0 - -- bd -C "$root" verify "$tc"
[ "$(superseded)" = "- $case1" ] && pass "re-pinned: the case's and the task class's signatures are superseded" ||
    fail "superseded after re-pin: $(superseded)"
restore
# pin of one case leaves the other pins alone.
printf 'y' >>"$(find "$cdir/input" -type f | head -1)"
cp "$root/bench/$tc/cases/digests.yaml" "$BD_TMP/d1"
expect 0 - -- bd -C "$root" pin "$tc" "$case1"
[ "$(diff "$BD_TMP/d1" "$root/bench/$tc/cases/digests.yaml" | grep -c '^[<>]')" = 2 ] \
    && pass "pin one case changes one line" || fail "pin one case changed more"
[ "$(superseded)" = "$case1" ] && pass "pin of one case supersedes its signatures only" ||
    fail "superseded after pin of one case: $(superseded)"
expect 2 bench.unknown_case -- bd -C "$root" pin "$tc" no-such-case
# pin refuses a case it cannot digest and writes nothing.
ln -s /etc/passwd "$cdir/input/link"
cp "$root/bench/$tc/cases/digests.yaml" "$BD_TMP/d2"
expect 1 case.unsupported_entry -- bd -C "$root" pin "$tc"
cmp -s "$BD_TMP/d2" "$root/bench/$tc/cases/digests.yaml" && pass "failed pin wrote nothing" || fail "failed pin wrote"
restore

# case new: a draft that verify reports as unpinned until pinned.
expect 0 - -- bd -C "$root" case new "$tc" brand-new-case
[ -f "$root/bench/$tc/cases/brand-new-case/case.yaml" ] && pass "scaffolded" || fail "no case.yaml"
expect 1 case.digest_missing -- bd -C "$root" verify "$tc"
echo "hello" >"$root/bench/$tc/cases/brand-new-case/input/prompt.txt"
expect 0 - -- bd -C "$root" pin "$tc" brand-new-case
expect 0 - -- bd -C "$root" verify "$tc"
bd -C "$root" list "$tc" | grep -q '^brand-new-case .* draft' && pass "new case listed as draft" || fail "draft not listed"

# verify walks the history chain too: promote's refusals are audit records in it.
restore
expect 3 promotion.requires_human -- bd -C "$root" promote "$tc" silver
expect 3 promotion.requires_human -- bd -C "$root" promote "$tc" gold
expect 0 - -- bd -C "$root" verify
rec="$root/.benchdesk/history/segments/0000000001.jsonl"
[ "$(grep -c '"promotion.refused"' "$rec" 2>/dev/null)" = 2 ] && pass "refusals recorded" ||
    fail "no audit records in $rec"
chmod u+w "$rec"; sed -i '1s/silver/SILVR/' "$rec"
expect 1 chain.tampered -- bd -C "$root" verify "$tc"
out=$(bd -C "$root" verify --json || true)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["ok"] is False and d["history"]["failures"][0]["code"]=="chain.tampered"' "$out" \
    && pass "verify --json names the tampered chain" || fail "verify --json chain: $out"

# The bench root is found from a subdirectory.
rm -rf "$root/.benchdesk"
(cd "$cdir/input" && "$BD_BIN" verify >/dev/null) && pass "root from subdirectory" || fail "root from subdirectory"
finish
