#!/usr/bin/env bash
# benchdesk run: usage, exit statuses, JSON events, the summary file and table,
# startup integrity (nothing runs on any pin mismatch), isolation consent.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"

# ---- a clean run ------------------------------------------------------------------------
out=$(bd run trivial "${SUB[@]}" --drafts --jobs 2 2>"$BD_TMP/err") && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "run trivial -> 0" || fail "run trivial -> $rc: $(cat "$BD_TMP/err")"
grep -qE '^  passed +3$' <<<"$out" && pass "table: passed 3" || fail "table: $out"
grep -qE '^  mean score +1\.000  \(95% BCa interval 1\.000 \.\. 1\.000\)$' <<<"$out" \
    && pass "table: mean and interval" || fail "table mean: $out"
grep -q 'isolation: subprocess' <<<"$out" && pass "table: isolation class" || fail "table: $out"
summary=$(sed -n 's/^  summary  *//p' <<<"$out")
[ -f "$summary" ] && pass "summary file written" || fail "no summary file ($summary)"
[ "$(stat -c %a "$summary")" = 600 ] && pass "summary mode 0600" || fail "summary mode"
"$PY" - "$summary" <<'PY' && pass "summary file content" || fail "summary file content"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["cases"] == 3 and s["passed"] == 3 and s["failed"] == 0, s
assert s["isolation_class"] == "subprocess" and s["task_class"] == "trivial"
assert s["ci95"] == [1, 1] and s["mean_score"] == 1 and s["pass_rate"] == 1
assert s["ci"]["method"] == "bca" and s["ci"]["seed"] == "0x62656e636864736b"
assert [r["case_id"] for r in s["results"]] == ["case-0000", "case-0001", "case-0002"]
assert all(len(r["record_hash"]) == 64 for r in s["results"]), s["results"]
assert s["chain_head"] == s["results"][-1]["record_hash"] or s["chain_head"] in [r["record_hash"] for r in s["results"]]
assert s["provenance_verified"] is False
assert s["task_class_digest"].startswith("blake3:") and "rubric_digest" not in s
PY
grep -qE '^\[[0-9]/3\] case-000[0-2]: pass 1\.000 \([0-9]+ ms\)$' "$BD_TMP/err" \
    && pass "plain progress lines on a non-terminal" || fail "stderr: $(cat "$BD_TMP/err")"
[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"

# ---- --json: exactly the events of docs/runner.md#fan-out-events-cancel -------------------
bd run trivial "${SUB[@]}" --drafts --json >"$BD_TMP/ev" 2>"$BD_TMP/err" && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "run --json -> 0" || fail "run --json -> $rc"
[ ! -s "$BD_TMP/err" ] && pass "--json: nothing on stderr off a terminal" || fail "stderr: $(cat "$BD_TMP/err")"
"$PY" - "$BD_TMP/ev" <<'PY' && pass "--json events" || fail "--json events: $(cat "$BD_TMP/ev")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
kinds = [e["event"] for e in ev]
assert kinds[0] == "run.started" and kinds[-1] == "run.finished", kinds
assert kinds.count("case.started") == 3 and kinds.count("case.finished") == 3, kinds
s = ev[0]
assert set(s) - {"start_reason"} == {"event", "run_id", "task_class", "cases", "isolation_class",
                                     "start"}, s
assert s["start"] == "cold" and s["start_reason"], s  # subprocess: never warm
assert s["cases"] == 3 and s["task_class"] == "trivial" and s["isolation_class"] == "subprocess"
for e in ev:
    if e["event"] == "case.started":
        assert set(e) == {"event", "case_id"}, e
    if e["event"] == "case.finished":
        assert set(e) == {"event", "case_id", "score", "record_hash"}, e
        assert len(e["record_hash"]) == 64 and int(e["record_hash"], 16) >= 0, e
        assert set(e["score"]) == {"passed", "score", "breakdown", "failure_modes", "cost_usd",
                                   "wall_clock_ms"}, e
started = [e["case_id"] for e in ev if e["event"] == "case.started"]
finished = [e["case_id"] for e in ev if e["event"] == "case.finished"]
for c in finished:
    assert started.index(c) <= kinds.index("case.finished") + finished.index(c)
f = ev[-1]
assert set(f) == {"event", "summary"}
assert set(f["summary"]) == {"cases", "passed", "failed", "mean_score", "ci95", "failure_modes",
                             "cost_usd", "wall_ms", "not_recorded", "skipped_unsigned",
                             "chain_head"}, f
assert f["summary"]["skipped_unsigned"] == {"draft": 0, "awaiting_review": 0}, f
assert f["summary"]["cases"] == 3 and f["summary"]["ci95"] == [1, 1]
last = [e for e in ev if e["event"] == "case.finished"][-1]
assert f["summary"]["chain_head"] == last["record_hash"], (f, last)
PY
# Every finished case is in the chained history, which still verifies.
"$BD_BIN" -C "$FX" history verify >/dev/null 2>&1 && pass "history verifies after the runs" \
    || fail "history verify: $("$BD_BIN" -C "$FX" history verify 2>&1)"
n_rec=$(cat "$FX"/.benchdesk/history/segments/*.jsonl | wc -l)
[ "$n_rec" = 6 ] && pass "one history record per finished case" || fail "$n_rec history records, wanted 6"
"$PY" - "$FX/.benchdesk/history/segments/0000000001.jsonl" <<'PY' && pass "records: run id, isolation class, provenance_verified false" || fail "record content"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[5])
assert r["isolation_class"] == "subprocess" and r["provenance_verified"] is False
assert r["task_class"] == "trivial" and r["run_id"] and r["score"]["passed"] is True
PY

# ---- usage and policy ----------------------------------------------------------------------
expect 0 - -- bd run --help
expect 2 usage.bad_args -- bd run
expect 2 usage.bad_args -- bd run trivial extra
expect 2 usage.bad_args -- bd run trivial --bogus
expect 2 usage.bad_args -- bd run trivial --jobs 0
expect 2 usage.bad_args -- bd run trivial --jobs lots
expect 2 usage.bad_args -- bd run trivial --case
expect 2 bench.unknown_task_class -- bd run no-such-class
expect 2 case.bad_id -- bd run ../etc
expect 2 bench.unknown_case -- bd run trivial --case case-9999 --drafts
# --case ids are looked up among the task class's sorted ids: a prefix or an extension of an
# id, or one sorting before the first or after the last, is no case of it.
for id in case-000 case-00010 case-0003 case-- case-0000a; do
    expect 2 bench.unknown_case -- bd run trivial --case "$id" --drafts
done
expect 2 case.bad_id -- bd run trivial --case ../../x --drafts
expect 2 usage.bad_args -- bd run trivial --isolation chroot
BENCHDESK_PYTHON=/nonexistent/python3 expect 4 env.interpreter_missing -- bd run trivial --drafts
# namespaces: used when the machine has it, else refused (exit 3) unless the operator
# consents, and then the class actually used is reported.
rc=0
out=$(bd run trivial --isolation namespaces --drafts --json --case case-0001 2>"$BD_TMP/err") || rc=$?
if [ "$rc" = 0 ]; then
    grep -q '"isolation_class":"namespaces"' <<<"$out" && pass "namespaces available: used and reported" \
        || fail "namespaces run: $out"
else
    [ "$rc" = 3 ] && grep -q '^benchdesk: isolation.unavailable: ' "$BD_TMP/err" \
        && pass "namespaces unavailable: refused with exit 3" || fail "namespaces -> $rc: $(cat "$BD_TMP/err")"
    out=$(bd run trivial --isolation namespaces --allow-weaker-isolation --drafts --json --case case-0001)
    grep -q '"isolation_class":"subprocess"' <<<"$out" && pass "weaker isolation with consent, reported" \
        || fail "consent run: $out"
fi
out=$(bd run trivial "${SUB[@]}" --drafts --json --case case-0001)
grep -q '"isolation_class":"subprocess"' <<<"$out" && pass "--isolation subprocess used and reported" \
    || fail "subprocess run: $out"
out=$(bd run trivial "${SUB[@]}" --drafts --json --case case-0001 --case case-0001)
[ "$(grep -c '"event":"case.finished"' <<<"$out")" = 1 ] && pass "--case given twice runs once" \
    || fail "dup case: $out"
out=$(bd run no-such-class --json 2>/dev/null) || true
grep -q '^{"error":{"code":"bench.unknown_task_class"' <<<"$out" && pass "--json error object" \
    || fail "json error: $out"

# ---- .benchdesk/config.yaml: the interpreter and the default jobs ----------------------------
unset BENCHDESK_PYTHON
mkdir -p "$FX/.benchdesk"
printf 'python: /nonexistent/python3\n' >"$FX/.benchdesk/config.yaml"
expect 4 env.interpreter_missing -- bd run trivial "${SUB[@]}" --drafts
printf 'python: %s\njobs: 1\n' "$PY" >"$FX/.benchdesk/config.yaml"
expect 0 - -- bd run trivial "${SUB[@]}" --drafts --case case-0000
expect 0 - -- bd run trivial "${SUB[@]}" --drafts --case case-0002 --case case-0000
printf 'pyhton: %s\n' "$PY" >"$FX/.benchdesk/config.yaml"
expect 2 config.schema_invalid -- bd run trivial "${SUB[@]}" --drafts
rm "$FX/.benchdesk/config.yaml"

# ---- provenance: unsigned cases need --drafts; signed ones run without -------------------
before=$(cat "$FX"/.benchdesk/history/segments/*.jsonl | wc -l)
expect 3 provenance.missing -- bd run trivial "${SUB[@]}"
[ "$(cat "$FX"/.benchdesk/history/segments/*.jsonl | wc -l)" = "$before" ] && pass "refused run recorded nothing" \
    || fail "a refused run wrote history"
[ "$(tmp_left)" = 0 ] && pass "refused run made no temp dir" || fail "temp dirs: $(ls "$RUNTMP")"
demo=$(demo_copy)
signed=$("$BD_BIN" -C "$demo" list vuln-remediation 2>/dev/null | awk '$5 == "signed" {print $1; exit}')
waiting=$("$BD_BIN" -C "$demo" list vuln-remediation 2>/dev/null | awk '$5 == "awaiting_review" {print $1; exit}')
if [ -n "$signed" ]; then
    rc=0
    out=$(TMPDIR="$RUNTMP" "$BD_BIN" -C "$demo" run vuln-remediation "${SUB[@]}" --case "$signed" --json 2>"$BD_TMP/err") || rc=$?
    [ "$rc" = 0 ] && pass "a signed case runs without --drafts" || fail "signed case -> $rc: $(cat "$BD_TMP/err")"
    "$PY" - "$demo/.benchdesk/history/segments/0000000001.jsonl" <<'PY' && pass "its record says provenance_verified true" || fail "signed record"
import json, sys
assert json.loads(open(sys.argv[1]).readline())["provenance_verified"] is True
PY
else
    fail "the demo bench has no signed case to run"
fi
[ -n "$waiting" ] || fail "the demo bench has no case awaiting review"
# The table's failed cases: ids of any length whole, the scores in one column.
rc=0
out=$(TMPDIR="$RUNTMP" "$BD_BIN" -C "$demo" run vuln-remediation "${SUB[@]}" 2>"$BD_TMP/err") || rc=$?
failed_rows=$(sed -n '/^  failed cases$/,/^  [a-z]/p' <<<"$out" | grep '^    ' || true)
score_cols=$(awk '{ print index($0, $2) }' <<<"$failed_rows" | sort -u)
[ "$rc" = 0 ] && [ "$(wc -l <<<"$failed_rows")" -ge 2 ] && [ "$(wc -l <<<"$score_cols")" = 1 ] &&
    grep -q '^    ghsa-demo-0007-follow-redirects-header-leak  0\.600  ' <<<"$failed_rows" &&
    pass "failed cases: whole ids, scores in one column" ||
    fail "failed cases table (exit $rc): $out"
TMPDIR="$RUNTMP" expect 3 provenance.missing -- "$BD_BIN" -C "$demo" run vuln-remediation "${SUB[@]}" --case "$waiting"

# ---- a tampered history: the run refuses before anything runs ------------------------------
cp -a "$FX/.benchdesk/history" "$BD_TMP/history.bak"
sed -i '2s/"passed":true/"passed":false/' "$FX/.benchdesk/history/segments/0000000001.jsonl"
expect 1 chain.tampered -- bd run trivial "${SUB[@]}" --drafts
[ "$(tmp_left)" = 0 ] && pass "tampered chain: no temp dir was made" || fail "temp dirs: $(ls "$RUNTMP")"
rm -rf "$FX/.benchdesk/history" && cp -a "$BD_TMP/history.bak" "$FX/.benchdesk/history"

# ---- startup integrity: any mismatch aborts before the first spawn -------------------------
tamper() { # what code -- command
    local what=$1 code=$2; shift 3
    rm -rf "$FX" && "$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --only trivial >/dev/null
    "$@"
    local before; before=$( (ls "$FX/.benchdesk/runs" 2>/dev/null || true) | wc -l)
    expect 1 "$code" -- bd run trivial "${SUB[@]}" --drafts
    [ "$(tmp_left)" = 0 ] && pass "$what: no temp dir was made" || fail "$what: temp dirs: $(ls "$RUNTMP")"
    [ "$( (ls "$FX/.benchdesk/runs" 2>/dev/null || true) | wc -l)" = "$before" ] && pass "$what: no run recorded" \
        || fail "$what: a run summary was written"
}
tamper "edited input" case.digest_mismatch -- sh -c "echo x >> '$FX/bench/trivial/cases/case-0001/input/prompt.txt'"
tamper "edited rubric" task_class.digest_mismatch -- sh -c "echo '# x' >> '$FX/bench/trivial/rubric.py'"
tamper "edited threshold" task_class.digest_mismatch -- sed -i 's/silver: 0.80/silver: 0.10/' "$FX/bench/trivial/registration.yaml"
tamper "edited expected" case.digest_mismatch -- sed -i 's/^expected: .*/expected: {"answer": 43}/' "$FX/bench/trivial/cases/case-0001/case.yaml"
# case.yaml is hashed: a cassette_digest that no longer fits its cassette gets past the
# pin only with a hand-forged pin (computed by the independent reference).
forge_cassette() {
    local c="$FX/bench/trivial/cases/case-0002" d
    sed -i 's/^cassette_digest: blake3:./cassette_digest: blake3:0/' "$c/case.yaml"
    d=$("$PY" "$BD_SOURCE_DIR/tests/kat/case_digest.py" "$c")
    sed -i "s|^  case-0002: .*|  case-0002: $d|" "$FX/bench/trivial/cases/digests.yaml"
}
tamper "re-recorded cassette" cassette.digest_mismatch -- forge_cassette
# An unpinned case is not selected (a scaffold being made blocks nothing but itself,
# docs/runner.md): one warning line naming it, the others run, it gets no record.
rm -rf "$FX" && "$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --only trivial >/dev/null
sed -i '/case-0001/d' "$FX/bench/trivial/cases/digests.yaml"
rc=0; out=$(bd run trivial "${SUB[@]}" --drafts --json 2>"$BD_TMP/unpinned.err") || rc=$?
[ "$rc" = 0 ] && grep -q '^benchdesk: warning: .*case.digest_missing.*case-0001' "$BD_TMP/unpinned.err" &&
    pass "unpinned case: one warning line, the run goes on" || fail "unpinned case: exit $rc: $(cat "$BD_TMP/unpinned.err")"
! grep -q '"case_id":"case-0001"' <<<"$out" && grep -q '"case_id":"case-0002"' <<<"$out" &&
    pass "unpinned case: not run, the others are" || fail "unpinned case: $out"
finish
