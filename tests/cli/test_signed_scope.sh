#!/usr/bin/env bash
# The signed scope (docs/formats.md, docs/formats.md#digests, docs/runner.md, docs/provenance.md): every byte that can move a score is inside a
# digest two people signed. A tamper matrix on a copy of the demo bench — case.yaml's
# `expected:`, `rubric_limits` and title, any file under a case, registration.yaml and
# rubric.py — each caught by `verify` with its exact code and refused by `run` before
# anything runs; re-pinning does not launder an edit (the signatures are superseded: the
# subject is a draft, never scored as signed; a hand-rewritten pin leaves them superseded
# too, and rewriting the digest the blocks name as well makes them bad);
# signatures moved between subjects, roles swapped, a review replayed from another
# case, an untrusted signer, one key in both roles: each its own code. Then, on a small
# bench with throwaway keys: every registration field (threshold, tier, taxonomy, SUT
# argv) and the rubric, and what `sign` refuses before it signs.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { TMPDIR="$BD_TMP" "$BD_BIN" "$@"; }
TC=vuln-remediation

# verify_codes ROOT TC: "<subject> <code>" per failure of `verify TC --json`, subject
# being the case id or "-" for the task class.
verify_codes() {
    { bd -C "$1" verify "$2" --json 2>/dev/null || true; } | python3 -c '
import json, sys
d = json.load(sys.stdin)
for t in d["task_classes"]:
    for f in t["failures"]:
        print(f.get("case_id") or "-", f["code"])'
}
# has_code ROOT TC SUBJECT CODE WHAT
has_code() {
    local got
    got=$(verify_codes "$1" "$2")
    grep -qxF -- "$3 $4" <<<"$got" && pass "$5: verify says $4" || fail "$5: wanted '$3 $4', verify said: $got"
}
# run_refused ROOT TC CODE WHAT: `run` exits 1 with CODE and records nothing.
run_refused() {
    local before after
    before=$( (find "$1/.benchdesk/history" -type f 2>/dev/null || true) | wc -l)
    expect 1 "$3" -- bd -C "$1" run "$2" --isolation subprocess
    after=$( (find "$1/.benchdesk/history" -type f 2>/dev/null || true) | wc -l)
    [ "$before" = "$after" ] && pass "$4: nothing recorded" || fail "$4: the history grew"
}

# The demo's cases by provenance status (the shipped bench: most signed, some awaiting
# review, some drafts).
pristine=$(demo_copy)
ids() { bd -C "$pristine" list "$TC" --json | python3 -c '
import json, sys
print(" ".join(c["case_id"] for c in json.load(sys.stdin)["cases"] if c["provenance"] == sys.argv[1]))' "$1"; }
read -r -a SIGNED <<<"$(ids signed)"
read -r -a AWAITING <<<"$(ids awaiting_review)"
read -r -a DRAFTS <<<"$(ids draft)"
[ "${#SIGNED[@]}" -ge 8 ] && [ "${#AWAITING[@]}" -ge 1 ] && [ "${#DRAFTS[@]}" -ge 1 ] &&
    pass "demo $TC: ${#SIGNED[@]} signed, ${#AWAITING[@]} awaiting review, ${#DRAFTS[@]} drafts" ||
    fail "demo $TC statuses: ${#SIGNED[@]} / ${#AWAITING[@]} / ${#DRAFTS[@]}"
fresh() { local d; d="$BD_TMP/demo.$RANDOM$RANDOM"; mkdir -p "$d"; cp -a "$pristine/bench" "$d/bench"; echo "$d"; }
cases() { echo "$1/bench/$TC/cases"; }

# ---- the tamper matrix: every edit inside a signed case, caught by verify --------------
root=$(fresh)
c=$(cases "$root")
s0=${SIGNED[0]} s1=${SIGNED[1]} s2=${SIGNED[2]} s3=${SIGNED[3]} s4=${SIGNED[4]} s5=${SIGNED[5]}
python3 - "$c/$s0/case.yaml" <<'PY'
import re, sys
p = sys.argv[1]
t = open(p).read()
n = re.sub(r'(?m)^(  decision: )"(bump|decline)"', lambda m: m.group(1) + ('"decline"' if m.group(2) == "bump" else '"bump"'), t, count=1)
if n == t:
    n = t.replace("expected:\n", "expected:\n  injected: true\n", 1)
assert n != t
open(p, "w").write(n)
PY
sed -i 's/^cassette_digest:/rubric_limits: {wall_clock_seconds: 5}\ncassette_digest:/' "$c/$s1/case.yaml"
sed -i 's/^title: "/title: "(edited) /' "$c/$s2/case.yaml"
f=$(find "$c/$s3/input" -type f | head -1); printf ' ' >>"$f"
echo '{"extra": true}' >"$c/$s4/expected/extra.json"
chmod +x "$(find "$c/$s5" -name cassette.json)"
has_code "$root" "$TC" "$s0" case.digest_mismatch "expected: edited"
has_code "$root" "$TC" "$s1" case.digest_mismatch "rubric_limits added"
has_code "$root" "$TC" "$s2" case.digest_mismatch "title edited"
has_code "$root" "$TC" "$s3" case.digest_mismatch "an input byte"
has_code "$root" "$TC" "$s3" provenance.stale_digest "an input byte (the signatures hold over the pin)"
has_code "$root" "$TC" "$s4" case.digest_mismatch "a new file under expected/"
has_code "$root" "$TC" "$s5" case.digest_mismatch "an execute bit"
run_refused "$root" "$TC" case.digest_mismatch "tampered cases"

# Re-pinning does not launder the edit: `pin` supersedes the signatures made over the old
# digest and says whose; the case is a draft (it blocks nothing but itself, and is never
# scored as signed).
out=$(bd -C "$root" pin "$TC" "$s0" 2>&1)
grep -q "superseded the signatures of .*(author), .*(reviewer)" <<<"$out" &&
    pass "pin names whose signatures it superseded" ||
    fail "pin did not say whose signatures it superseded: $out"
bd -C "$root" list "$TC" --json | python3 -c '
import json, sys
c = next(c for c in json.load(sys.stdin)["cases"] if c["case_id"] == sys.argv[1])
assert c["provenance"] == "draft", c' "$s0" && pass "list shows the re-pinned case as a draft" ||
    fail "list: the re-pinned case is not a draft"
# A pin rewritten by hand (no `pin`): the signatures name the digest they signed
# (docs/provenance.md#editing-is-not-tampering), so they sign an earlier version —
# superseded, the case a draft, never scored as signed by a default run.
root=$(fresh)
c=$(cases "$root")
sed -i 's/^title: "/title: "(edited) /' "$c/$s0/case.yaml"
new=$(bd digest "$c/$s0")
sed -i "s|^  $s0: .*|  $s0: $new|" "$c/digests.yaml"
bd -C "$root" list "$TC" --json | python3 -c '
import json, sys
c = next(c for c in json.load(sys.stdin)["cases"] if c["case_id"] == sys.argv[1])
assert c["provenance"] == "draft", c' "$s0" && pass "a pin rewritten by hand: the case is a draft" ||
    fail "a pin rewritten by hand: the case is not a draft"
bd -C "$root" run "$TC" --isolation subprocess --json 2>/dev/null | python3 -c '
import json, sys
done = [e["case_id"] for e in map(json.loads, sys.stdin) if e.get("event") == "case.finished"]
assert done and sys.argv[1] not in done, done' "$s0" &&
    pass "a pin rewritten by hand: a default run does not score the case" ||
    fail "a pin rewritten by hand: a default run scored the case"
# The pin and the digest the blocks name, both rewritten by hand: the signatures then
# verify over neither: bad.
old=$(sed -n "s|^  $s0: ||p" "$pristine/bench/$TC/cases/digests.yaml")
sed -i "s|$old|$new|" "$c/$s0/provenance.yaml"
has_code "$root" "$TC" "$s0" provenance.bad_signature "a pin and the signed digest rewritten by hand"
run_refused "$root" "$TC" provenance.bad_signature "a pin and the signed digest rewritten by hand"

# ---- the task class: registration.yaml and rubric.py are signed too --------------------
root=$(fresh)
printf '\n# one person makes it pass everything\n' >>"$root/bench/$TC/rubric.py"
has_code "$root" "$TC" - task_class.digest_mismatch "rubric.py edited"
run_refused "$root" "$TC" task_class.digest_mismatch "edited rubric"
bd -C "$root" pin "$TC" >/dev/null
# Re-pinned: the task class is a draft again: refused as unsigned (exit 3), never as bad.
expect 3 provenance.missing -- bd -C "$root" run "$TC" --isolation subprocess
root=$(fresh)
sed -i 's/^current_tier: .*/current_tier: gold/' "$root/bench/$TC/registration.yaml"
has_code "$root" "$TC" - task_class.digest_mismatch "tier moved to gold"

# ---- signatures moved, swapped, replayed ------------------------------------------------
# prov_edit OP ARGS: rewrite provenance.yaml blocks (as a forger with a text editor would).
prov_edit() {
    python3 - "$@" <<'PY'
import re, sys
def blocks(path):
    out, cur = {}, None
    for line in open(path).read().splitlines(keepends=True):
        m = re.match(r"^([a-z_]+):", line)
        if m:
            cur = m.group(1)
            out[cur] = ""
        if cur:
            out[cur] += line
    return out
def write(path, b):
    open(path, "w").write("".join(b[k] for k in ("schema_version", "author", "reviewer", "last_validated_at") if k in b))
op = sys.argv[1]
if op == "swap":
    b = blocks(sys.argv[2])
    a, r = b["author"], b["reviewer"]
    b["author"], b["reviewer"] = "author:" + r[len("reviewer:"):], "reviewer:" + a[len("author:"):]
    write(sys.argv[2], b)
elif op == "copy":  # copy SRC ROLE DST ROLE2
    src, role, dst, role2 = sys.argv[2:6]
    s, d = blocks(src), blocks(dst)
    d[role2] = role2 + ":" + s[role][len(role) + 1:]
    write(dst, d)
PY
}
root=$(fresh)
c=$(cases "$root")
prov_edit swap "$c/${SIGNED[0]}/provenance.yaml"
prov_edit copy "$c/${SIGNED[2]}/provenance.yaml" reviewer "$c/${SIGNED[1]}/provenance.yaml" reviewer
cp "$c/${SIGNED[3]}/provenance.yaml" "$root/bench/$TC/provenance.yaml"
has_code "$root" "$TC" "${SIGNED[0]}" provenance.bad_signature "author and reviewer swapped"
has_code "$root" "$TC" "${SIGNED[1]}" provenance.bad_signature "a review replayed from another case"
has_code "$root" "$TC" - provenance.bad_signature "a case's signatures placed on the task class"
run_refused "$root" "$TC" provenance.bad_signature "moved signatures"

# A case moved to another id, and a signed case copied into another task class.
root=$(fresh)
c=$(cases "$root")
mv "$c/${SIGNED[4]}" "$c/${SIGNED[4]}-moved"
sed -i "s/^case_id: .*/case_id: ${SIGNED[4]}-moved/" "$c/${SIGNED[4]}-moved/case.yaml"
other=incident-triage
cp -a "$c/${SIGNED[5]}" "$root/bench/$other/cases/${SIGNED[5]}"
bd -C "$root" pin "$TC" >/dev/null 2>&1 || true
bd -C "$root" pin "$other" >/dev/null 2>&1 || true
has_code "$root" "$TC" "${SIGNED[4]}-moved" provenance.bad_signature "a case moved to another id"
has_code "$root" "$other" "${SIGNED[5]}" provenance.bad_signature "a case copied into another task class"

# An untrusted signer: the reviewer of a signed case dropped from trusted-signers.yaml.
root=$(fresh)
c=$(cases "$root")
rfpr=$(awk '/^reviewer:/ {r=1} r && /fingerprint:/ {print $2; exit}' "$c/${SIGNED[0]}/provenance.yaml")
grep -v "$rfpr" "$root/bench/trusted-signers.yaml" >"$BD_TMP/ts" && cp "$BD_TMP/ts" "$root/bench/trusted-signers.yaml"
has_code "$root" "$TC" "${SIGNED[0]}" provenance.untrusted_signer "a reviewer no longer trusted"

# ---- records carry provenance_verified per case ------------------------------------------
root=$(fresh)
out=$(bd -C "$root" run "$TC" --isolation subprocess --jobs 2 2>"$BD_TMP/err") && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "the default run on the signed demo exits 0" || fail "run -> $rc: $(cat "$BD_TMP/err")"
bd -C "$root" run "$TC" --isolation subprocess --jobs 2 --drafts >/dev/null 2>&1 ||
    fail "run --drafts failed"
bd -C "$root" history log --json --task-class "$TC" --limit 200 >"$BD_TMP/log.json" 2>/dev/null ||
    fail "history log --json failed"
python3 - "$BD_TMP/log.json" "${SIGNED[*]}" "${AWAITING[*]} ${DRAFTS[*]}" <<'PY' &&
import json, sys
text = open(sys.argv[1]).read().strip()
try:
    recs = json.loads(text)
    recs = recs.get("records", recs) if isinstance(recs, dict) else recs
except ValueError:
    recs = [json.loads(l) for l in text.splitlines() if l.strip()]
signed, unsigned = set(sys.argv[2].split()), set(sys.argv[3].split())
runs = sorted({r["run_id"] for r in recs})
assert len(runs) == 2, runs
by_run = {}
for r in recs:
    by_run.setdefault(r["run_id"], []).append(r)
first, second = sorted(by_run.values(), key=len)
# the default run: exactly the signed cases, every record verified
assert {r["case_id"] for r in first} == signed, sorted({r["case_id"] for r in first} ^ signed)
assert all(r["provenance_verified"] is True for r in first)
# --drafts: every case, verified exactly for the signed ones
assert {r["case_id"] for r in second} == signed | unsigned
for r in second:
    assert r["provenance_verified"] is (r["case_id"] in signed), r["case_id"]
PY
    pass "records: provenance_verified is true exactly for signed cases" ||
    fail "provenance_verified in the records: $(head -c 800 "$BD_TMP/log.json")"

# ---- a small bench with throwaway keys: the registration fields, and sign's refusals ----
gpg_keys
mb="$BD_TMP/mini"
mini_bench "$mb" alice bob carol mallory
tcd="$mb/bench/tc"
for sub in "$tcd" "$tcd/cases/c1"; do
    bd -C "$mb" sign "$sub" --role author --key "$ALICE_FPR" >/dev/null &&
        bd -C "$mb" sign "$sub" --role reviewer --key "$BOB_FPR" >/dev/null ||
        fail "cannot sign $sub"
done
expect 0 - -- bd -C "$mb" verify tc
cp -a "$mb/bench" "$BD_TMP/mini.pristine"
mini_restore() { rm -rf "$mb/bench" "$mb/.benchdesk"; cp -a "$BD_TMP/mini.pristine" "$mb/bench"; }
reg_tamper() { # WHAT SED-EXPR
    mini_restore
    sed -i "$2" "$tcd/registration.yaml"
    cmp -s "$tcd/registration.yaml" "$BD_TMP/mini.pristine/tc/registration.yaml" && { fail "$1: the edit changed nothing"; return; }
    has_code "$mb" tc - task_class.digest_mismatch "$1"
    run_refused "$mb" tc task_class.digest_mismatch "$1"
    bd -C "$mb" pin tc >/dev/null
    expect 3 provenance.missing -- bd -C "$mb" run tc --isolation subprocess
}
reg_tamper "registration threshold" 's/silver: 0.80/silver: 0.10/'
reg_tamper "registration tier" 's/^current_tier: bronze/current_tier: gold/'
reg_tamper "failure-mode taxonomy" 's/^failure_modes:/failure_modes:\n  - {code: y.free_pass, severity: info, description: New}/'
reg_tamper "sut argv" 's|^sut: .*|sut: {kind: command, argv: [/usr/bin/true]}|'
mini_restore
printf 'print("{}")\n' >"$tcd/rubric.py"
has_code "$mb" tc - task_class.digest_mismatch "rubric.py rewritten"
mini_restore
sed -i 's/answer: 42/answer: 43/' "$tcd/cases/c1/case.yaml"
has_code "$mb" tc c1 case.digest_mismatch "c1 expected: edited"

# One key in both roles, forged by hand: the reviewer message signed with the author's key.
mini_restore
digest=$(awk '$1 == "c1:" {print $2}' "$tcd/cases/digests.yaml")
printf 'benchdesk-provenance-v2\nrole: reviewer\nsubject: case\ntask_class: tc\ncase_id: c1\ndigest: %s\n' \
    "$digest" >"$BD_TMP/msg"
gpg --batch --yes --quiet -u "$ALICE_FPR" --armor --detach-sign -o "$BD_TMP/msg.asc" "$BD_TMP/msg"
python3 - "$tcd/cases/c1/provenance.yaml" "$ALICE_FPR" "$BD_TMP/msg.asc" <<'PY'
import sys
p, fpr, sig = sys.argv[1:4]
t = open(p).read()
head = t[:t.index("reviewer:")]
sig_lines = "".join("    " + l if l.strip() else l for l in open(sig).read().splitlines(True))
open(p, "w").write(head + "reviewer:\n  identity: \"alice@bench.example\"\n  fingerprint: %s\n"
                   "  signed_at: \"2026-11-01T00:00:00Z\"\n  signature: |\n%s" % (fpr, sig_lines))
PY
has_code "$mb" tc c1 provenance.same_signer "one key in both roles"

# sign refuses before signing: an untrusted key, the other role's key, an unpinned subject.
mini_restore
c2="$tcd/cases/c2"
expect 1 provenance.untrusted_signer -- bd -C "$mb" sign "$c2" --role author --key "$MALLORY_FPR"
expect 1 provenance.untrusted_signer -- bd -C "$mb" sign "$c2" --role author --key "$CAROL_FPR"
[ ! -e "$c2/provenance.yaml" ] && pass "untrusted: nothing written" || fail "untrusted: provenance.yaml written"
expect 0 - -- bd -C "$mb" sign "$c2" --role author --key "$ALICE_FPR"
cp "$c2/provenance.yaml" "$BD_TMP/c2.prov"
expect 1 provenance.same_signer -- bd -C "$mb" sign "$c2" --role reviewer --key "$ALICE_FPR"
expect 0 - -- bd -C "$mb" sign "$c2" --role reviewer --key "$BOB_FPR"
cp "$c2/provenance.yaml" "$BD_TMP/c2.prov"
expect 1 provenance.same_signer -- bd -C "$mb" sign "$c2" --role author --key "$BOB_FPR"
cmp -s "$c2/provenance.yaml" "$BD_TMP/c2.prov" && pass "same signer: nothing written" || fail "same signer wrote"
expect 1 provenance.same_signer -- bd -C "$mb" sign "$tcd" --role author --key "$BOB_FPR"
bd -C "$mb" case new tc c9 >/dev/null
expect 1 case.digest_missing -- bd -C "$mb" sign "$tcd/cases/c9" --role author --key "$ALICE_FPR"
[ ! -e "$tcd/cases/c9/provenance.yaml" ] && pass "unpinned: nothing written" || fail "unpinned: written"
sed -i '/^task_class:/d' "$tcd/cases/digests.yaml"
rm -f "$tcd/provenance.yaml"
out=$(bd -C "$mb" sign "$tcd" --role author --key "$ALICE_FPR" 2>&1 >/dev/null) && rc=0 || rc=$?
[ "$rc" != 0 ] && [ ! -e "$tcd/provenance.yaml" ] && pass "an unpinned task class is not signed ($rc)" ||
    fail "unpinned task class: rc $rc, $out"
finish
