#!/usr/bin/env bash
# benchdesk compare and history log --trend on real runs of the demo bench (docs/compare.md):
# identical runs, a rubric change and a case change that cause regressions (every status,
# the task-class label, exit 5 under --fail-on-regression, stale records), the JSON shape
# and its statistics against the independent reference, run ids by prefix (unique,
# ambiguous, unknown), a run of another task class, a subset run, an empty overlap, mixed
# isolation classes, and a tampered chain.
. "$(dirname "$0")/lib.sh"
for tool in b3sum gpg python3; do
    command -v "$tool" >/dev/null || { fail "$tool is required (scripts/setup installs it)"; finish; }
done
root=$(demo_copy)
RUNTMP="$BD_TMP/runtmp"
mkdir -p "$RUNTMP"
bd() { TMPDIR="$RUNTMP" "$BD_BIN" -C "$root" "$@"; }
TC=vuln-remediation
run_id() { # the run id of the newest run (from its summary file name)
    basename "$(ls -t "$root/.benchdesk/runs/"*.json | head -1)" .json
}
runit() { bd run "$@" --isolation subprocess >/dev/null 2>"$BD_TMP/run.err" || { fail "run $*: $(cat "$BD_TMP/run.err")"; finish; }; run_id; }

expect 2 compare.no_runs -- bd compare
r1=$(runit $TC)
expect 2 compare.no_runs -- bd compare
r2=$(runit $TC)

# ---- two identical runs -------------------------------------------------------------------
out=$(bd compare) && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "compare (defaults) -> 0" || fail "compare -> $rc"
grep -q "^  A  $r1 " <<<"$out" && grep -q "^  B  $r2 " <<<"$out" \
    && pass "defaults: the two latest full runs, older as A" || fail "defaults: $out"
grep -q "^  0 regressed, 0 improved, 13 unchanged, 0 new, 0 removed, 0 changed" <<<"$out" \
    && pass "identical runs: all unchanged" || fail "identical: $out"
expect 0 - -- bd compare --fail-on-regression
expect 0 - -- bd compare "${r1:0:22}" "$r2" --task-class $TC

# ---- prefixes, unknown and ambiguous ids, usage ----------------------------------------------
expect 2 compare.ambiguous_run -- bd compare 2 "$r2"
expect 2 compare.unknown_run -- bd compare nosuchrun "$r2"
expect 2 compare.same_run -- bd compare "$r2" "$r2"
expect 2 usage.bad_args -- bd compare a b c
expect 2 usage.bad_args -- bd compare --frobnicate
expect 2 case.bad_id -- bd compare --task-class 'Bad/Name'
bd compare --help | grep -q '^usage: benchdesk compare' && pass "compare --help" || fail "compare --help"
j=$(bd compare nosuchrun --json) || true
python3 -c 'import json,sys; e=json.loads(sys.argv[1])["error"]; assert e["code"]=="compare.unknown_run"' "$j" \
    && pass "--json error object" || fail "--json error: $j"

# ---- a run of another task class, a subset run, an empty overlap -----------------------------
other=$(runit incident-triage)
expect 2 compare.task_class_mismatch -- bd compare "$r2" "$other"
expect 2 compare.task_class_mismatch -- bd compare "$r1" "$r2" --task-class incident-triage
expect 2 compare.no_runs -- bd compare   # runs of two task classes and no --task-class
cases=($(ls "$root/bench/$TC/cases" | grep -v '\.yaml$'))
s1=$(runit $TC --case "${cases[0]}")
s2=$(runit $TC --case "${cases[1]}")
out=$(bd compare --task-class $TC) || fail "compare --task-class after subset runs"
grep -q "^  B  $r2 " <<<"$out" && pass "subset runs are not picked by default" || fail "default with subsets: $out"
out=$(bd compare "$s1") || fail "compare SUBSET_RUN"
grep -q "^  A  $r2 " <<<"$out" && grep -q "subset (1 of 1 cases)" <<<"$out" \
    && pass "one run: against the previous full run, marked subset" || fail "one run: $out"
j=$(bd compare "$s1" "$s2" --json) && rc=0 || rc=$?
python3 - "$j" <<'PY' && pass "empty overlap: exit 0, no statistics, new 1 removed 1" || fail "empty overlap ($rc): $j"
import json, sys
o = json.loads(sys.argv[1])
assert o["comparable"] == 0 and o["counts"]["new"] == 1 and o["counts"]["removed"] == 1, o
assert o["mean_delta"] is None and o["ci95"] is None and o["mcnemar"]["p_value"] is None, o
PY

# ---- a rubric change and a case change: regressions --------------------------------------------
sed -i 's/^PASS_THRESHOLD = 0.75/PASS_THRESHOLD = 0.96/; s/total = round(min(1.0, max(0.0, total)), 4)/total = round(min(1.0, max(0.0, total * 0.9)), 4)/' \
    "$root/bench/$TC/rubric.py"
changed=${cases[2]}
printf '\n# edited after the first runs\n' >>"$root/bench/$TC/cases/$changed/case.yaml"
bd pin $TC >/dev/null 2>&1 || { fail "pin after the rubric change"; finish; }
rm -f "$root"/bench/*/provenance.yaml "$root"/bench/*/cases/*/provenance.yaml
bash "$BD_SOURCE_DIR/tests/fixtures/gpg/sign-demo-bench.sh" "$root" "$BD_BIN" >"$BD_TMP/sign.log" 2>&1 \
    || { fail "re-signing the demo bench: $(tail -3 "$BD_TMP/sign.log")"; finish; }
r3=$(runit $TC)
out=$(bd compare --task-class $TC --fail-on-regression 2>"$BD_TMP/err") && rc=0 || rc=$?
[ "$rc" = 5 ] && pass "--fail-on-regression with regressions -> 5" || fail "--fail-on-regression -> $rc"
grep -q 'regressed (--fail-on-regression)' "$BD_TMP/err" && pass "exit 5 says why" || fail "stderr: $(cat "$BD_TMP/err")"
grep -q "NOTE: rubric or registration changed between runs" <<<"$out" \
    && pass "changed task-class digest labels the comparison" || fail "label: $out"
grep -q "^  stale: 13 of 13 records of A (case, rubric or registration changed since)" <<<"$out" \
    && pass "stale records of A counted and explained" || fail "stale: $out"
grep -q "^regressed " <<<"$(sed -n '/^STATUS/{n;p}' <<<"$out")" \
    && pass "regressions listed first" || fail "order: $out"
grep -qE "^changed +$changed " <<<"$out" && pass "case with a new digest: changed" || fail "changed: $out"
bd compare "$r2" "$r3" --json >"$BD_TMP/cmp.json" && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "--json without --fail-on-regression -> 0" || fail "--json -> $rc"
seed=$(python3 "$BD_SOURCE_DIR/tests/kat/bca_reference.py" seed "$r2" "$r3")
python3 - "$BD_TMP/cmp.json" "$BD_SOURCE_DIR" "$seed" "$changed" <<'PY' && pass "JSON shape, statuses and statistics match the reference" || fail "JSON: $(cat "$BD_TMP/cmp.json")"
import json, sys
o = json.load(open(sys.argv[1]))
sys.path.insert(0, sys.argv[2] + "/tests/kat")
import bca_reference as ref
seed, changed = int(sys.argv[3], 16), sys.argv[4]
keys = {"task_class", "run_a", "run_b", "task_class_changed", "isolation_class", "counts",
        "comparable", "mean_a", "mean_b", "mean_delta", "ci95", "pass_rate_a", "pass_rate_b",
        "mcnemar", "failure_modes", "cases", "stale_records", "operator_a", "operator_b",
        "signed_run_records", "records"}
assert set(o) == keys, set(o) ^ keys
assert o["task_class_changed"] is True and o["isolation_class"] == "subprocess"
assert (o["operator_a"], o["operator_b"], o["signed_run_records"]) == ("unsigned", "unsigned", 0)
assert set(o["counts"]) == {"regressed", "improved", "unchanged", "new", "removed", "changed"}
assert o["counts"]["changed"] == 1 and o["counts"]["regressed"] >= 5, o["counts"]
assert sum(o["counts"].values()) == len(o["cases"]) == 13
st = {c["case_id"]: c for c in o["cases"]}
assert st[changed]["status"] == "changed"
pairs = sorted((c["case_id"], c["score_a"], c["score_b"]) for c in o["cases"]
               if c["status"] in ("regressed", "improved", "unchanged"))
assert o["comparable"] == len(pairs) == 12
a = [p[1] for p in pairs]; b = [p[2] for p in pairs]
for c in o["cases"]:
    if c["status"] == "regressed":
        assert (c["passed_a"] and not c["passed_b"]) or c["delta"] < 0, c
    assert set(c) == {"case_id", "status", "passed_a", "passed_b", "score_a", "score_b", "delta",
                      "verdicts"}
assert abs(o["mean_a"] - ref.mean(a)) < 1e-12 and abs(o["mean_b"] - ref.mean(b)) < 1e-12
lo, hi = ref.paired_bca(a, b, 0.95, 0, seed)
assert abs(o["ci95"][0] - lo) < 1e-12 and abs(o["ci95"][1] - hi) < 1e-12, (o["ci95"], lo, hi)
assert o["ci95"][1] < 0, "the rubric change lowers every score: the interval is below 0"
comp = [c for c in o["cases"] if c["status"] in ("regressed", "improved", "unchanged")]
p2f = sum(1 for c in comp if c["passed_a"] and not c["passed_b"])
f2p = sum(1 for c in comp if not c["passed_a"] and c["passed_b"])
m = o["mcnemar"]
assert (m["pass_to_fail"], m["fail_to_pass"]) == (p2f, f2p) and p2f > 0
assert abs(m["p_value"] - ref.mcnemar(p2f, f2p)) <= 1e-12
assert all(len(v) == 2 for v in o["failure_modes"].values()) and o["failure_modes"]
assert o["stale_records"] == {"a": 13, "b": 0}, o["stale_records"]
PY

# ---- the trend -------------------------------------------------------------------------------
out=$(LANG=C bd history log --trend --task-class $TC) || fail "history log --trend"
grep -qE "^$TC: mean over the last 3 full runs  [0-9]{3}$" <<<"$out" \
    && pass "trend: 3 full runs, ASCII sparkline under LANG=C" || fail "trend: $out"
grep -q "^$r3 " <<<"$out" && ! grep -q "^$s1 " <<<"$out" && pass "trend rows: full runs only" || fail "trend rows: $out"
out=$(LANG=C.UTF-8 bd history log --trend --task-class $TC) || true
grep -q "$(printf '\xe2\x96')" <<<"$out" && pass "trend: block sparkline under UTF-8" || fail "utf8 trend: $out"
j=$(bd history log --trend --task-class $TC --json)
python3 -c 'import json,sys; o=json.loads(sys.argv[1]); r=o["runs"]; assert len(r)==3 and set(r[0])=={"run_id","finished_at","cases","pass_rate","mean","ci95"}' "$j" \
    && pass "trend --json" || fail "trend --json: $j"
expect 2 usage.bad_args -- bd history log --trend

# ---- mixed isolation: refused ------------------------------------------------------------------
if bd run $TC --isolation namespaces >/dev/null 2>&1; then
    ns=$(run_id)
    expect 3 compare.isolation_mismatch -- bd compare "$r3" "$ns"
else
    fail "a namespaces run is needed to check mixed isolation (the jail is required here)"
fi

# ---- a case scored twice in a run, and run and case ids that spell the same pair -----------
# Records made by an independent generator. A run keeps each case's newest record (the walk
# replaces an older one as it meets the newer); the run and case ids are kept apart, so
# run ...-cc with case dcase and run ...-ccd with case case stay two runs.
G=$(demo_copy)
gh="$G/.benchdesk/history"
gpins="$G/bench/$TC/cases/digests.yaml"
GT=$(awk '$1 == "task_class:" {print $2}' "$gpins")
GA=$(awk '$1 ~ /^ghsa-/ {sub(":", "", $1); print $1; exit}' "$gpins")
GD=$(awk -v c="$GA:" '$1 == c {print $2}' "$gpins")
grec() { # run case score passed run_cases
    python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$gh" \
        "{\"task_class\":\"$TC\",\"run_id\":\"$1\",\"case_id\":\"$2\",\"case_digest\":\"$GD\",\"task_class_digest\":\"$GT\",\"score\":$3,\"passed\":$4,\"run_cases\":$5,\"age_days\":0}"
}
grec 20261120T100000Z-aa "$GA" 0.2 false 1
grec 20261120T100000Z-aa "$GA" 0.9 true 1
grec 20261121T100000Z-bb "$GA" 0.9 true 1
out=$("$BD_BIN" -C "$G" compare 20261120T100000Z-aa 20261121T100000Z-bb 2>&1) || true
grep -q "^  0 regressed, 0 improved, 1 unchanged, 0 new, 0 removed, 0 changed" <<<"$out" \
    && pass "a case scored twice in a run: its newest record is compared" || fail "scored twice: $out"
grec 20261122T100000Z-cc dcase 0.5 false 1
grec 20261122T100000Z-ccd case 0.25 false 1
out=$("$BD_BIN" -C "$G" history log --trend --task-class $TC --json 2>&1) || true
python3 -c 'import json,sys; r=json.loads(sys.argv[1])["runs"]; ids=[x["run_id"] for x in r]
assert ids==["20261120T100000Z-aa","20261121T100000Z-bb","20261122T100000Z-cc","20261122T100000Z-ccd"], ids
assert [x["mean"] for x in r]==[0.9,0.9,0.5,0.25], r' "$out" \
    && pass "run and case ids that concatenate alike stay apart; trend means from the newest records" \
    || fail "id pairs: $out"

# ---- a tampered chain: nothing is compared ----------------------------------------------------
hist="$root/.benchdesk/history"
# One file per record, or segments of records (history v2): edit one record's bytes.
f=$( (ls "$hist"/0*.json "$hist"/segments/*.jsonl 2>/dev/null || true) | head -3 | tail -1)
if [ -n "$f" ]; then
    sed -i '0,/"score":/s//"score" :/' "$f"
    expect 1 chain.tampered -- bd compare "$r1" "$r2"
    expect 1 chain.tampered -- bd history log --trend --task-class $TC
else
    fail "no record file found to tamper with in $hist"
fi
finish
