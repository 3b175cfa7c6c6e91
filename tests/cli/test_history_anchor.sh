#!/usr/bin/env bash
# `benchdesk anchor publish | verify` (docs/history.md) with throwaway ed25519 keys: the exact
# signed bytes checked by gpg itself, truncation and rewrites below an anchor
# (anchor.mismatch), replaced signatures (anchor.bad_signature), untrusted signers
# (anchor.untrusted_signer), and verification that never uses the user's keyring.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
# pj EXPR [FILE]: evaluate the Python expression EXPR over the JSON document d (stdin, or
# FILE); strings print raw, other values as JSON, the items of a tuple space-separated.
gpg_keys

root="$BD_TMP/bench"
mini_bench "$root" alice bob mallory
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
hs() { python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" "$1" "$hist" "${@:2}"; }
adir="$root/audit/anchors/bench"
today=$(date -u +%Y-%m-%d)
export TMPDIR="$BD_TMP/tmp"
mkdir -p "$TMPDIR"

"$BD_BIN" anchor --help | grep -q '^usage: benchdesk anchor publish' && pass "anchor --help" ||
    fail "anchor --help"
expect 2 usage.bad_args -- bd anchor
expect 2 usage.bad_args -- bd anchor sign
expect 2 usage.bad_args -- bd anchor verify extra
expect 2 usage.bad_args -- bd anchor publish --key

# nothing to anchor yet; nothing to verify is fine
expect 2 usage.bad_args -- bd anchor publish --key "$ALICE_FPR"
out=$(bd anchor verify --json)
[ "$(pj 'd["ok"], len(d["anchors"])' <<<"$out")" = "true 0" ] &&
    pass "no anchors verifies" || fail "no anchors: $out"

for i in 1 2 3 4 5; do bd promote tc gold >/dev/null 2>&1 || true; done
head5=$(bd history verify --json | pj 'd["head"]')

# publish: signed by alice, 5 records, the head
out=$(bd anchor publish --key "$ALICE_FPR" --json)
[ "$(pj 'd["date"], d["count"], d["chain_head"], d["signer"]' <<<"$out")" = \
    "$today 5 $head5 $ALICE_FPR" ] && pass "publish --json" || fail "publish: $out"
f="$adir/$today.json"
[ -f "$f" ] && pass "anchor written to audit/anchors/bench/$today.json" || fail "no anchor file"
[ "$(pj '",".join(sorted(d))' "$f")" = "chain_head,count,date,schema_version,signature,signer" ] &&
    pass "anchor file members" || fail "anchor members: $(cat "$f")"
# the exact signed bytes, checked by gpg itself
printf 'benchdesk-anchor-v1\ndate: %s\ncount: %s\nchain_head: %s\n' "$today" 5 "$head5" >"$BD_TMP/msg"
pj 'd["signature"]' "$f" >"$BD_TMP/sig.asc"
gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg" 2>/dev/null && pass "gpg verifies the exact message" ||
    fail "gpg does not verify the exact message"
printf 'x' >>"$BD_TMP/msg"
! gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg" 2>/dev/null && pass "one byte more: gpg refuses" ||
    fail "gpg verified an altered message"

# verify: never the user's keyring (an empty GNUPGHOME), no private home left behind
out=$(GNUPGHOME="$BD_TMP/empty-home" bd anchor verify --json)
[ "$(pj 'd["ok"], d["anchors"][0]["ok"], d["anchors"][0]["identity"]' <<<"$out")" = \
    "true true alice@bench.example" ] && pass "verify without the user's keyring" ||
    fail "verify: $out"
[ -z "$(ls "$TMPDIR")" ] && pass "private GnuPG home removed" || fail "left: $(ls "$TMPDIR")"
bd anchor verify | grep -q "anchor $today: 5 records, signed by $ALICE_FPR (alice@bench.example): ok" &&
    pass "verify text" || fail "verify text"

# the chain grows past the anchor: still fine
bd promote tc silver >/dev/null 2>&1 || true
bd promote tc silver >/dev/null 2>&1 || true
expect 0 - -- bd anchor verify

cp -a "$hist" "$BD_TMP/hist.pristine"
restore() { rm -rf "$hist"; cp -a "$BD_TMP/hist.pristine" "$hist"; }

# truncation below the anchor: invisible to the chain, caught by the anchor
hs del 7 && hs del 6 && hs del 5 && rm -f "$hist/VERIFIED"
expect 0 - -- bd history verify
expect 1 anchor.mismatch -- bd anchor verify
msg=$(bd anchor verify 2>&1 >/dev/null || true)
grep -q "truncated" <<<"$msg" && pass "mismatch says truncated" ||
    fail "truncation message"
restore

# a rewrite below the anchor with every hash recomputed: the chain verifies, the anchor
# does not
python3 - "$hist/segments/0000000001.jsonl" <<'PY'
import hashlib, json, subprocess, sys
path = sys.argv[1]
out, prev = [], "0" * 64
for line in open(path, "rb").read().split(b"\n")[:-1]:
    o = json.loads(line)
    if o["seq"] == 2:
        o["detail"] = "nothing to see here"
    o["prev_hash"] = prev
    data = json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    out.append(data)
    b3 = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True).stdout.split()[0]
    prev = hashlib.sha256(b"benchdesk-chain-v1\0" + bytes.fromhex(o["prev_hash"]) + bytes.fromhex(b3.decode())).hexdigest()
open(path, "wb").write(b"".join(d + b"\n" for d in out))
PY
rm -f "$hist/VERIFIED"
expect 0 - -- bd history verify
expect 1 anchor.mismatch -- bd anchor verify
msg=$(bd anchor verify 2>&1 >/dev/null || true)
grep -q "rewritten" <<<"$msg" && pass "mismatch says rewritten" ||
    fail "rewrite message"
restore

# a broken chain is reported as such, and never anchored
hs set 3 junk
expect 1 chain.tampered -- bd anchor verify
expect 1 chain.tampered -- bd anchor publish --key "$ALICE_FPR"
restore

cp "$f" "$BD_TMP/anchor.pristine"
rewrite_anchor() { # Python statements over the pristine anchor d; $SIG is at hand
    python3 - "$BD_TMP/anchor.pristine" "$1" >"$f" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[2], {"d": d, "os": os})
sys.stdout.write(json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
PY
}
sign_as() { # FPR message-count -> armored signature over the anchor message
    printf 'benchdesk-anchor-v1\ndate: %s\ncount: %s\nchain_head: %s\n' "$today" "$2" \
        "$(pj 'd["chain_head"]' "$BD_TMP/anchor.pristine")" |
        gpg --batch --quiet --pinentry-mode loopback --passphrase '' -u "$1" --armor --detach-sign
}

# the count edited without a new signature
rewrite_anchor 'd["count"] = 4'
expect 1 anchor.bad_signature -- bd anchor verify
# the signature replaced by alice's signature of another message (count 4)
SIG=$(sign_as "$ALICE_FPR" 4) rewrite_anchor 'd["signature"] = os.environ["SIG"] + "\n"' 
expect 1 anchor.bad_signature -- bd anchor verify
# garbage in place of the signature
rewrite_anchor 'd["signature"] = "-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n"'
expect 1 anchor.bad_signature -- bd anchor verify
# a good signature by bob, but the file names alice as signer
export SIG
SIG=$(sign_as "$BOB_FPR" 5)
rewrite_anchor 'd["signature"] = os.environ["SIG"] + "\n"'
expect 1 anchor.bad_signature -- bd anchor verify
rewrite_anchor "d['signature'] = os.environ['SIG'] + '\\n'; d['signer'] = '$BOB_FPR'"
expect 0 - -- bd anchor verify
# mallory: key in bench/keys, not a trusted signer
SIG=$(sign_as "$MALLORY_FPR" 5)
rewrite_anchor "d['signature'] = os.environ['SIG'] + '\\n'; d['signer'] = '$MALLORY_FPR'"
expect 1 anchor.untrusted_signer -- bd anchor verify
# carol: trusted, but her public key is not in bench/keys
SIG=$(sign_as "$CAROL_FPR" 5)
rewrite_anchor "d['signature'] = os.environ['SIG'] + '\\n'; d['signer'] = '$CAROL_FPR'"
expect 1 anchor.untrusted_signer -- bd anchor verify
# malformed files
printf '{"count":5}\n' >"$f"
expect 1 anchor.mismatch -- bd anchor verify
cp "$BD_TMP/anchor.pristine" "$adir/not-a-date.json"
cp "$BD_TMP/anchor.pristine" "$f"
expect 1 anchor.mismatch -- bd anchor verify
rm "$adir/not-a-date.json"
cp "$BD_TMP/anchor.pristine" "$adir/2020-01-01.json"
expect 1 anchor.mismatch -- bd anchor verify # its date field is not its name
rm "$adir/2020-01-01.json"
expect 0 - -- bd anchor verify
out=$(bd anchor verify --json)
[ "$(pj 'd["anchors"][0]["file"]' <<<"$out")" = "$f" ] && pass "verify --json lists anchors" ||
    fail "verify json: $out"

# publishing: untrusted or unknown keys are refused before anything is written
expect 1 anchor.untrusted_signer -- bd anchor publish --key "$MALLORY_FPR"
expect 1 anchor.untrusted_signer -- bd anchor publish --key "$CAROL_FPR"
cmp -s "$f" "$BD_TMP/anchor.pristine" && pass "refused publishes wrote nothing" || fail "anchor changed"
expect 2 gpg.key_not_found -- bd anchor publish --key 0000000000000000000000000000000000000000
# publishing again the same day replaces the anchor with the longer chain
expect 0 - -- bd anchor publish --key "$BOB_FPR"
[ "$(pj 'd["count"], d["signer"]' "$f")" = "7 $BOB_FPR" ] && pass "same-day anchor replaced" ||
    fail "republish: $(cat "$f")"
# a broken existing anchor blocks publishing
rewrite_anchor 'd["count"] = 4'
cp "$f" "$adir/2020-01-02.json"
sed -i 's/"date":"[0-9-]*"/"date":"2020-01-02"/' "$adir/2020-01-02.json"
expect 1 anchor.bad_signature -- bd anchor publish --key "$ALICE_FPR"
rm "$adir/2020-01-02.json"

finish
