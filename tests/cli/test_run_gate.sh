#!/usr/bin/env bash
# What gets run (docs/runner.md), on a small bench signed with throwaway keys: an unsigned
# task class is refused (exit 3, provenance.missing) unless --drafts; a signed one runs its
# signed cases by default and says how many it skipped and how to include them; --drafts
# includes them and each record's provenance_verified says whether that case and its task
# class were signed; a bad signature refuses the run (exit 1), --drafts or not, and is
# never downgraded to "unsigned".
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
bd() { TMPDIR="$BD_TMP" "$BD_BIN" "$@"; }
gpg_keys

root="$BD_TMP/bench"
mini_bench "$root" alice bob carol
tcd="$root/bench/tc"
RUN=(--isolation subprocess --jobs 2)
nrec() { (find "$root/.benchdesk/history" -type f -name '*.json*' 2>/dev/null || true) | wc -l; }

# records RUN_ID: "case_id provenance_verified" of that run, sorted.
records() {
    bd -C "$root" history log --json --limit 200 | python3 -c '
import json, sys
for r in sorted(json.load(sys.stdin)["records"], key=lambda r: r.get("case_id") or ""):
    if r.get("run_id") == sys.argv[1]:
        print(r["case_id"], str(r["provenance_verified"]).lower())' "$1"
}
run_id_of() { python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["run_id"])' <"$1"; }

# ---- an unsigned task class: refused unless --drafts -------------------------------------
expect 3 provenance.missing -- bd -C "$root" run tc "${RUN[@]}"
[ "$(nrec)" = 0 ] && pass "the refused run recorded nothing" || fail "records after a refused run"
# Refused on the task class alone: not one case file is opened first (a bench of 100,000
# cases is refused as fast as one of three).
if command -v strace >/dev/null; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -e trace=openat,open \
        -o "$BD_TMP/trace.refused" "$BD_BIN" -C "$root" run tc "${RUN[@]}" >/dev/null 2>&1 || true
    # A case is opened by path or relative to the cases directory: its folder, case.yaml.
    case_open='"([^"]*/)?(c[0-9]+|case\.yaml)"'
    opened=$(grep -cE "$case_open" "$BD_TMP/trace.refused" || true)
    [ "$opened" = 0 ] && pass "the unsigned task class is refused before any case is read" ||
        fail "the refused run opened $opened case files first: $(grep -E "$case_open" "$BD_TMP/trace.refused" | head -3)"
else
    fail "strace is not installed: cannot check what a refused run reads"
fi
bd -C "$root" run tc "${RUN[@]}" --drafts --json >"$BD_TMP/ev" 2>"$BD_TMP/err" && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "--drafts runs an unsigned task class" || fail "--drafts -> $rc: $(cat "$BD_TMP/err")"
got=$(records "$(run_id_of "$BD_TMP/ev")" | tr '\n' ' ')
[ "$got" = "c1 false c2 false c3 false " ] && pass "unsigned task class: every record provenance_verified false" ||
    fail "records: $got"

# ---- sign the task class, c1 fully, c2 by its author only ----------------------------------
for s in "$tcd" "$tcd/cases/c1"; do
    bd sign "$s" --role author --key "$ALICE_FPR" >/dev/null && bd sign "$s" --role reviewer --key "$BOB_FPR" >/dev/null ||
        fail "cannot sign $s"
done
bd sign "$tcd/cases/c2" --role author --key "$ALICE_FPR" >/dev/null || fail "cannot sign c2 as author"

# The default run: the signed cases only, and it says what it skipped and how to include it.
bd -C "$root" run tc "${RUN[@]}" >"$BD_TMP/out" 2>"$BD_TMP/err" && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "a signed task class runs by default" || fail "default run -> $rc: $(cat "$BD_TMP/err")"
grep -q "skipping 2 unsigned cases of tc (1 draft, 1 awaiting review)" "$BD_TMP/err" && grep -q -- "--drafts" "$BD_TMP/err" &&
    pass "it says how many it skipped and how to include them" || fail "no skip notice: $(cat "$BD_TMP/err")"
grep -qE '^  cases +1 of 1$' "$BD_TMP/out" && pass "the table counts the 1 signed case" || fail "table: $(cat "$BD_TMP/out")"
bd -C "$root" run tc "${RUN[@]}" --json >"$BD_TMP/ev" 2>"$BD_TMP/err" || fail "run --json failed"
python3 -c 'import json,sys; e=json.loads(open(sys.argv[1]).readline()); assert e["cases"]==1, e' "$BD_TMP/ev" &&
    pass "run.started counts 1 case" || fail "run.started: $(head -1 "$BD_TMP/ev")"
got=$(records "$(run_id_of "$BD_TMP/ev")" | tr '\n' ' ')
[ "$got" = "c1 true " ] && pass "the signed case's record says provenance_verified true" || fail "records: $got"

# --drafts: every case; provenance_verified per record.
bd -C "$root" run tc "${RUN[@]}" --drafts --json >"$BD_TMP/ev" 2>"$BD_TMP/err" || fail "--drafts run failed"
got=$(records "$(run_id_of "$BD_TMP/ev")" | tr '\n' ' ')
[ "$got" = "c1 true c2 false c3 false " ] && pass "--drafts: provenance_verified true exactly for the signed case" ||
    fail "--drafts records: $got"
# An unsigned case asked for by name, without --drafts: refused.
expect 3 provenance.missing -- bd -C "$root" run tc "${RUN[@]}" --case c2

# ---- a bad signature refuses the run, --drafts or not ----------------------------------------
n=$(nrec)
signature_of "$tcd/cases/c1/provenance.yaml" reviewer >"$BD_TMP/good.asc"
python3 "$BD_SOURCE_DIR/tests/fixtures/gpg/forge.py" "$BD_TMP/good.asc" "$BD_TMP/forged.asc"
python3 - "$tcd/cases/c1/provenance.yaml" "$BD_TMP/good.asc" "$BD_TMP/forged.asc" <<'PY'
import sys
p, good, forged = sys.argv[1:4]
ind = lambda t: "".join("    " + l if l.strip() else l for l in t.splitlines(True))
t = open(p).read()
g, f = ind(open(good).read()), ind(open(forged).read())
assert g in t
open(p, "w").write(t.replace(g, f))
PY
expect 1 provenance.bad_signature -- bd -C "$root" run tc "${RUN[@]}"
expect 1 provenance.bad_signature -- bd -C "$root" run tc "${RUN[@]}" --drafts
expect 1 provenance.bad_signature -- bd -C "$root" run tc "${RUN[@]}" --drafts --case c1
[ "$(nrec)" = "$n" ] && pass "bad signature: nothing recorded" || fail "records after a bad signature"
# A case that is not selected does not stop a run of the others (docs/runner.md).
expect 0 - -- bd -C "$root" run tc "${RUN[@]}" --drafts --case c3
bd -C "$root" list tc --json | python3 -c '
import json, sys
c = {c["case_id"]: c["provenance"] for c in json.load(sys.stdin)["cases"]}
assert c["c1"] == "bad" and c["c2"] == "awaiting_review" and c["c3"] == "draft", c' &&
    pass "list: bad, awaiting_review, draft" || fail "list statuses"

# A bad task-class signature refuses too.
python3 - "$tcd/cases/c1/provenance.yaml" "$BD_TMP/forged.asc" "$BD_TMP/good.asc" <<'PY'
import sys
p, forged, good = sys.argv[1:4]
ind = lambda t: "".join("    " + l if l.strip() else l for l in t.splitlines(True))
t = open(p).read()
open(p, "w").write(t.replace(ind(open(forged).read()), ind(open(good).read())))
PY
expect 0 - -- bd -C "$root" verify tc
sed -i 's/^  identity: .*/  identity: "someone else"/' "$tcd/provenance.yaml"
expect 0 - -- bd -C "$root" verify tc
cp "$tcd/cases/c1/provenance.yaml" "$tcd/provenance.yaml"
expect 1 provenance.bad_signature -- bd -C "$root" run tc "${RUN[@]}"
expect 1 provenance.bad_signature -- bd -C "$root" run tc "${RUN[@]}" --drafts
finish
