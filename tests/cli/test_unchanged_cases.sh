#!/usr/bin/env bash
# Unchanged cases (docs/provenance.md#unchanged-cases): once a passing check has read a
# case whose files had settled, `verify` and the run gate stat its entries and take the
# verdict back without reading a byte. Any write, mode change or entry made or removed
# moves a change time no user can set back, so each of these is read and judged again:
# content rewritten at the same size with its mtime restored, an execute bit, a new file,
# another case's provenance.yaml, a new pin, a trusted signer's dropped role, another
# build. A case changed within the settle window is read and not stamped; altered
# records are not believed; `verify --full` neither reads nor writes them.
. "$(dirname "$0")/lib.sh"
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state"
mkdir -p "$HOME"
root=$(demo_copy)
bd() { TMPDIR="$BD_TMP" "$BD_BIN" -C "$root" "$@"; }
entries="$XDG_STATE_HOME/benchdesk/sig-memo/entries"
# count KIND: the memo's records of one kind.
count() { memo_records "$entries" "$1"; }
# alter MAGIC OFFSET: flip a bit at OFFSET of every record of that magic.
alter() {
    python3 - "$entries" "$1" "$2" <<'PY'
import sys
p, magic, off = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
b = bytearray(open(p, "rb").read())
for o in range(0, len(b) - 175, 176):
    if b[o:o + 8] == magic:
        b[o + off] ^= 1
open(p, "wb").write(b)
PY
}
verdicts() {
    pj '[(t["name"], t["provenance"], t["ok"], t["failures"]) for t in d["task_classes"]]'
}
# settle: wait out the window in which a change time may still move within one tick.
settle() { sleep 2.2; }

# Copied just now: nothing has settled, so every case is read and none is stamped.
expect 0 - -- bd verify
[ "$(count stamp)" = 0 ] && [ "$(count case)" -gt 40 ] &&
    pass "cases written within the settle window are read and judged, never stamped" ||
    fail "fresh copy: $(count stamp) stamp records, $(count case) case records"

settle
total=$(bd verify --json | pj 'sum(t["cases"] for t in d["task_classes"])')
stamps=$(count stamp)
[ "$stamps" = "$total" ] && [ "$(count shape)" -ge "$total" ] &&
    pass "a settled check stamped each of its $total cases and kept their shapes" ||
    fail "after settling: $stamps stamp records, $(count shape) shape records, $total cases"
cases=$(count case)
shapes=$(count shape)
full=$(bd verify --full --json | verdicts)
text=$(bd verify)
warm=$(bd verify --json | verdicts)
# A case read again would be stamped again: nothing new means every case was answered
# from its stamps.
[ "$(count stamp)" = "$stamps" ] && [ "$(count case)" = "$cases" ] && [ "$(count shape)" = "$shapes" ] &&
    pass "a warm verify read no case" || fail "a warm verify wrote $(($(count stamp) - stamps)) stamp records"
[ "$warm" = "$full" ] && pass "its verdicts are those of verify --full" || fail "warm: $warm; full: $full"
[ "$(bd verify)" = "$text" ] && pass "its output is the same" || fail "output differs"

tc=incident-triage
cdir=$root/bench/$tc/cases
signed_case=$(ls "$cdir" | grep -v digests.yaml | while read -r c; do
    grep -q '^reviewer:' "$cdir/$c/provenance.yaml" 2>/dev/null && { echo "$c"; break; }
done)
other_case=$(ls "$cdir" | grep -v digests.yaml | grep -vx "$signed_case" | head -1)
orig="$BD_SOURCE_DIR/bench/$tc/cases/$signed_case"
sc="$cdir/$signed_case"

# same_size_rewrite FILE: one byte changed, the size kept and the mtime put back, so only
# the change time tells.
same_size_rewrite() {
    python3 - "$1" <<'PY'
import os, sys
p = sys.argv[1]
st = os.stat(p)
b = bytearray(open(p, "rb").read())
# A letter of the title (case.yaml) or of the first string value: still well formed.
start = b.find(b"title:") if b"title:" in b else b.find(b'": "')
i = next(j for j in range(start + 8, len(b)) if chr(b[j]).isalpha())
b[i] = ord("b") if b[i] != ord("b") else ord("c")
open(p, "wb").write(b)
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
st2 = os.stat(p)
assert (st2.st_size, st2.st_mtime_ns, st2.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
PY
}
# refused CODE WHAT: `verify TC` fails with CODE.
refused() {
    local out rc
    out=$(bd verify "$tc" 2>&1) && rc=0 || rc=$?
    [ "$rc" = 1 ] && grep -q "$1" <<<"$out" && pass "$2" || fail "$2: exit $rc: $out"
}

same_size_rewrite "$sc/case.yaml"
refused case.digest_mismatch "case.yaml rewritten at its size with its mtime put back fails its pin"
cp "$orig/case.yaml" "$sc/case.yaml"
same_size_rewrite "$sc/cassette.json"
refused case.digest_mismatch "the cassette rewritten the same way fails its pin"
cp "$orig/cassette.json" "$sc/cassette.json"
in_file=$(ls "$sc/input" | head -1)
chmod +x "$sc/input/$in_file"
refused case.digest_mismatch "an execute bit set on an input fails its pin"
chmod -x "$sc/input/$in_file"
echo extra >"$sc/input/zz-extra.txt"
refused case.digest_mismatch "a new input file fails its pin"
rm "$sc/input/zz-extra.txt"
cp "$cdir/$other_case/provenance.yaml" "$sc/provenance.yaml"
refused provenance.bad_signature "another case's provenance.yaml is a bad signature"
cp "$orig/provenance.yaml" "$sc/provenance.yaml"
# The pin changed: the stamps stand for the pin they were judged against.
cp "$cdir/digests.yaml" "$BD_TMP/digests.orig"
other_pin=$(sed -n "s/^  $other_case: //p" "$cdir/digests.yaml")
sed -i "s|^  $signed_case: .*|  $signed_case: $other_pin|" "$cdir/digests.yaml"
refused case.digest_mismatch "another pin is checked against the bytes, not the stamps"
cp "$BD_TMP/digests.orig" "$cdir/digests.yaml"
# Who is trusted changed: the stamps stand for one set of keys and trusted signers.
reviewer=$(sed -n 's/^  fingerprint: //p' "$sc/provenance.yaml" | tail -1)
cp "$root/bench/trusted-signers.yaml" "$BD_TMP/signers.orig"
sed -i "/$reviewer/s/roles: \[author, reviewer\]/roles: [author]/" "$root/bench/trusted-signers.yaml"
refused provenance.untrusted_signer "a reviewer no longer trusted as reviewer fails"
cp "$BD_TMP/signers.orig" "$root/bench/trusted-signers.yaml"

# Put back, the case passes, read: changed within the window, it is not stamped.
before=$(count stamp)
expect 0 - -- bd verify
[ "$(count stamp)" = "$before" ] && pass "a case changed just now is read, not stamped" ||
    fail "a case changed just now was stamped ($(($(count stamp) - before)) records)"
settle
expect 0 - -- bd verify
[ "$(count stamp)" = $((before + 1)) ] && pass "once settled it is stamped again" ||
    fail "after settling: $(($(count stamp) - before)) new stamp records, wanted 1"

# Records altered: not believed; every case is read again and stamped anew.
before=$(count stamp)
alter bdcu0002 50
expect 0 - -- bd verify
[ "$(count stamp)" = $((before + total)) ] && pass "altered stamp records are not believed" ||
    fail "after altering stamps: $(($(count stamp) - before)) new, wanted $total"
before=$(count stamp)
shapes=$(count shape)
alter bdcs0001 50
expect 0 - -- bd verify
[ "$(count stamp)" = "$before" ] && [ "$(count shape)" = $((2 * shapes)) ] &&
    pass "altered shapes are not believed: each case is read and its shape kept anew" ||
    fail "after altering shapes: $(($(count shape) - shapes)) new shapes, $(($(count stamp) - before)) new stamps"

# --full: reads everything, writes nothing.
before=$(stat -c %s "$entries")
[ "$(bd verify --full --json | verdicts)" = "$full" ] && pass "verify --full agrees" || fail "verify --full differs"
[ "$(stat -c %s "$entries")" = "$before" ] && pass "verify --full left the memo alone" || fail "verify --full changed the memo"

# Another build stamps for itself, and this one still takes its own.
cp "$BD_BIN" "$BD_TMP/benchdesk-other"
printf 'x' >>"$BD_TMP/benchdesk-other"
before=$(count stamp)
TMPDIR="$BD_TMP" "$BD_TMP/benchdesk-other" -C "$root" verify >/dev/null 2>&1 && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$(count stamp)" = $((before + total)) ] &&
    pass "another build reads every case itself" || fail "another build: exit $rc, $(($(count stamp) - before)) new stamps"
expect 0 - -- bd verify
[ "$(count stamp)" = $((before + total)) ] && pass "and this build still takes its stamps" ||
    fail "this build wrote $(($(count stamp) - before - total)) stamp records"

# The run gate takes the stamps too; each case's bytes are still hashed against its pin
# when it starts, so a rewrite the stamps would not show could not be scored.
before=$(count stamp)
cases=$(count case)
RUN=(--isolation subprocess --jobs 2)
expect 0 - -- bd run "$tc" "${RUN[@]}"
[ "$(count stamp)" = "$before" ] && [ "$(count case)" = "$cases" ] &&
    pass "the run gate read no case" || fail "the run gate wrote $(($(count stamp) - before)) stamp records"
signed=$(bd verify "$tc" --json | pj 'd["task_classes"][0]["provenance"]["signed"]')
bd history log --json --limit 500 | records_at_pins "$tc" "$cdir/digests.yaml" >"$BD_TMP/recs"
read -r nrecs nbad <"$BD_TMP/recs"
[ "$nrecs" = "$signed" ] && [ "$nbad" = 0 ] && pass "the run recorded its $signed signed cases at their pins" ||
    fail "run records: $nrecs (wanted $signed), $nbad not at their pin or unverified"
same_size_rewrite "$sc/cassette.json"
expect 1 case.digest_mismatch -- bd run "$tc" "${RUN[@]}"
cp "$orig/cassette.json" "$sc/cassette.json"
finish
