#!/usr/bin/env bash
# The case memo (docs/provenance.md#the-case-memo): `verify` and the run gate remember the
# verdict of each case whose whole check passed, keyed by the bytes just read, and take it
# back without parsing or judging the case again; every byte is still read and hashed.
# Anything a verdict depends on changed — a case file, provenance.yaml, its pin, a key, a
# trusted signer, the program — and the case is judged again; entries altered, forged or
# another user's are not believed; `verify --full` neither reads nor writes it.
. "$(dirname "$0")/lib.sh"
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state"
mkdir -p "$HOME"
root=$(demo_copy)
bd() { TMPDIR="$BD_TMP" "$BD_BIN" -C "$root" "$@"; }
entries="$XDG_STATE_HOME/benchdesk/sig-memo/entries"
# count KIND: the memo's records of one kind, case verdicts ("case") or signatures ("sig").
count() { memo_records "$entries" "$1"; }
# verdicts: the provenance counts and the outcome of each task class, as --json gives them.
verdicts() {
    pj '[(t["name"], t["provenance"], t["ok"], t["failures"]) for t in d["task_classes"]]'
}

expect 0 - -- bd verify --full
[ "$(count case)" = 0 ] && pass "verify --full remembers no case" || fail "verify --full wrote $(count case) case records"
full=$(bd verify --full --json | verdicts)

total=$(bd verify --json | pj 'sum(t["cases"] for t in d["task_classes"])')
cases=$(count case)
sigs=$(count sig)
if [ "$cases" = "$total" ] && [ "$total" -gt 40 ]; then
    pass "verify remembered each of the $total cases (drafts and those awaiting review too)"
else
    fail "case records after verify: $cases, cases: $total"
fi
first_text=$(bd verify)
warm=$(bd verify --json | verdicts)
# A case judged again would be remembered again: nothing new means the memo answered all.
[ "$(count case)" = "$cases" ] && pass "a warm verify judged no case again" || fail "a warm verify added $(($(count case) - cases)) case records"
[ "$warm" = "$full" ] && pass "the memo's verdicts are those of verify --full" || fail "warm: $warm; full: $full"
[ "$(bd verify)" = "$first_text" ] && pass "the output is the same warm" || fail "warm output differs"

tc=incident-triage
cdir=$root/bench/$tc/cases
signed_case=$(ls "$cdir" | grep -v digests.yaml | while read -r c; do
    grep -q '^reviewer:' "$cdir/$c/provenance.yaml" 2>/dev/null && { echo "$c"; break; }
done)
other_case=$(ls "$cdir" | grep -v digests.yaml | grep -vx "$signed_case" | head -1)
orig="$BD_SOURCE_DIR/bench/$tc/cases/$signed_case"

# The bytes moved under a remembered verdict: judged again, never answered from the memo.
sed -i 's/^title: .*/title: "edited after signing"/' "$cdir/$signed_case/case.yaml"
out=$(bd verify "$tc" 2>&1) && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q 'case.digest_mismatch' <<<"$out" && pass "an edited case.yaml fails its pin with a warm memo" ||
    fail "edited case.yaml: exit $rc: $out"
cp "$orig/case.yaml" "$cdir/$signed_case/case.yaml"
cp "$cdir/$other_case/provenance.yaml" "$cdir/$signed_case/provenance.yaml"
out=$(bd verify "$tc" 2>&1) && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q 'provenance.bad_signature' <<<"$out" &&
    pass "another case's provenance.yaml is a bad signature with a warm memo" || fail "moved provenance.yaml: exit $rc: $out"
cp "$orig/provenance.yaml" "$cdir/$signed_case/provenance.yaml"

# Who is trusted changed: every case is judged again under the new trusted signers.
reviewer=$(sed -n 's/^  fingerprint: //p' "$cdir/$signed_case/provenance.yaml" | tail -1)
cp "$root/bench/trusted-signers.yaml" "$BD_TMP/signers.orig"
sed -i "/$reviewer/s/roles: \[author, reviewer\]/roles: [author]/" "$root/bench/trusted-signers.yaml"
out=$(bd verify "$tc" 2>&1) && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q 'provenance.untrusted_signer' <<<"$out" &&
    pass "a reviewer no longer trusted as reviewer fails with a warm memo" || fail "reviewer role dropped: exit $rc: $out"
cp "$BD_TMP/signers.orig" "$root/bench/trusted-signers.yaml"
expect 0 - -- bd verify
now=$(count case)

# Every case record's tag broken: none believed; each case judged again (its signatures
# still from the memo) and remembered anew.
python3 - "$entries" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
for o in range(0, len(b) - 175, 176):
    if b[o:o + 8] == b"bdcm0002":
        b[o + 41] ^= 1
open(p, "wb").write(b)
PY
sigs_before=$(count sig)
expect 0 - -- bd verify
[ "$(count case)" = $((now + total)) ] && [ "$(count sig)" = "$sigs_before" ] &&
    pass "altered case records were not believed (every case judged again, no signature)" ||
    fail "after altering: $(count case) case records (wanted $((now + total))), $(count sig) signatures (had $sigs_before)"

# Another program (this one with a byte appended): its own verdicts, none taken from ours.
cp "$BD_BIN" "$BD_TMP/benchdesk-other"
printf 'x' >>"$BD_TMP/benchdesk-other"
before=$(count case)
TMPDIR="$BD_TMP" "$BD_TMP/benchdesk-other" -C "$root" verify >/dev/null 2>&1 && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$(count case)" = $((before + total)) ] &&
    pass "another build judges every case itself" || fail "another build: exit $rc, $(count case) case records (had $before)"
expect 0 - -- bd verify
[ "$(count case)" = $((before + total)) ] && pass "and this build still takes its own" || fail "this build added $(($(count case) - before - total)) records"

# A third program: for it, the other build wrote last, and this build's records are older
# (docs/provenance.md#the-memo-file), as are 100 case records of the layout before build
# tags (an older benchdesk's, appended here). Together 256 or more and a quarter of the
# file or more, the third build's close rewrites the file without them; this build then
# judges every case again. The other build's records stay.
python3 - "$entries" <<'PY'
import os, sys
with open(sys.argv[1], "ab") as f:
    for i in range(100):
        f.write(b"bdcm0001" + os.urandom(168))
PY
memo_builds "$entries" >"$BD_TMP/builds.before"
read -r ours_tag ours_n <"$BD_TMP/builds.before"
read -r other_tag other_n < <(sed -n 2p "$BD_TMP/builds.before")
file_n=$(awk '$1=="total"{print $2}' "$BD_TMP/builds.before")
older=$((ours_n + 100))
[ "$(wc -l <"$BD_TMP/builds.before")" = 3 ] && [ "$older" -ge 256 ] && [ $((4 * older)) -ge "$file_n" ] &&
    pass "this build's $ours_n records and 100 of the old layout are older, of $file_n records" ||
    fail "the builds before the third: $(tr '\n' ' ' <"$BD_TMP/builds.before")"
cp "$BD_BIN" "$BD_TMP/benchdesk-third"
printf 'y' >>"$BD_TMP/benchdesk-third"
TMPDIR="$BD_TMP" "$BD_TMP/benchdesk-third" -C "$root" verify >/dev/null 2>&1 && rc=0 || rc=$?
memo_builds "$entries" >"$BD_TMP/builds.after"
[ "$rc" = 0 ] && ! grep -q "^$ours_tag " "$BD_TMP/builds.after" &&
    grep -qx "$other_tag $other_n" "$BD_TMP/builds.after" && [ "$(memo_records "$entries" old)" = 0 ] &&
    pass "a third build's close dropped this build's records and kept the other's" ||
    fail "third build: exit $rc; before: $(tr '\n' ' ' <"$BD_TMP/builds.before"); after: $(tr '\n' ' ' <"$BD_TMP/builds.after")"
before=$(count case)
expect 0 - -- bd verify
[ "$(count case)" = $((before + total)) ] && pass "this build then judged every case again" ||
    fail "after the third build: this build added $(($(count case) - before)) case records, wanted $total"
[ "$(bd verify --json | verdicts)" = "$full" ] && pass "and its verdicts are still those of verify --full" ||
    fail "verdicts after the rewrite differ"

# Another user's memo file under this user's secret: nothing in it is believed.
other="$BD_TMP/other-state"
XDG_STATE_HOME="$other" TMPDIR="$BD_TMP" "$BD_BIN" -C "$root" verify >/dev/null
cp "$other/benchdesk/sig-memo/entries" "$entries"
expect 0 - -- bd verify
[ "$(count case)" = $((2 * total)) ] && pass "another user's case records are not believed" ||
    fail "with another user's entries: $(count case) case records, wanted $((2 * total))"

# --full: judged by GnuPG alone, the memo left as it is.
before=$(stat -c %s "$entries")
[ "$(bd verify --full --json | verdicts)" = "$full" ] && pass "verify --full agrees" || fail "verify --full differs"
[ "$(stat -c %s "$entries")" = "$before" ] && pass "verify --full left the memo alone" || fail "verify --full changed the memo"

# The run gate takes the memo's verdicts (the runner keeps each case's digests, and parses
# case.yaml when the case starts): the run records the signed cases with their digests,
# and the gate judges nothing again.
before=$(count case)
RUN=(--isolation subprocess --jobs 2)
expect 0 - -- bd run "$tc" "${RUN[@]}"
[ "$(count case)" = "$before" ] && pass "the run gate judged no case again" || fail "the run gate added $(($(count case) - before)) case records"
signed=$(bd verify "$tc" --json | pj 'd["task_classes"][0]["provenance"]["signed"]')
bd history log --json --limit 500 | records_at_pins "$tc" "$cdir/digests.yaml" >"$BD_TMP/recs"
read -r nrecs nbad <"$BD_TMP/recs"
[ "$nrecs" = "$signed" ] && [ "$nbad" = 0 ] && pass "the run recorded its $signed signed cases at their pins" ||
    fail "run records: $nrecs (wanted $signed), $nbad not at their pin or unverified"
# A cassette changed after the memo's verdict: the gate refuses, memo or not.
cas=$(ls "$cdir/$signed_case"/cassette.json)
printf ' ' >>"$cas"
expect 1 case.digest_mismatch -- bd run "$tc" "${RUN[@]}"
cp "$orig/cassette.json" "$cas"
finish
