#!/usr/bin/env bash
# The cost cap (docs/runner.md#the-cost-cap): `run --cost-cap USD`, `cost_cap_usd` in
# .benchdesk/config.yaml and `run: {cost_cap_usd}` in the registration, the smallest
# winning. Once the finished cases' cost_usd adds up to the cap no case starts, running
# ones are cancelled as by Ctrl-C, run.finished says "stopped": "cost_cap" with the cases
# not run, the exit status is 0 and the run is never a full run. A cap of 0 runs nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
bd migrate >/dev/null 2>&1 || true

# costly_class NAME SPEC...: a task class of draft cases c1, c2, ... whose rubric
# (tests/fixtures/rubrics/costly.py) sleeps and reports a cost: SPEC is "COST SLEEP".
costly_class() {
    local name=$1 src=$FX/bench/adversarial dst=$FX/bench/$1 i=0 spec
    shift
    rm -rf "$dst"
    mkdir -p "$dst/cases"
    sed "s/^name: adversarial\$/name: $name/; s/wall_clock_seconds: [0-9]*/wall_clock_seconds: 60/" \
        "$src/registration.yaml" >"$dst/registration.yaml"
    cp "$BD_SOURCE_DIR/tests/fixtures/rubrics/costly.py" "$dst/rubric.py"
    for spec in "$@"; do
        i=$((i + 1))
        cp -a "$src/cases/pass" "$dst/cases/c$i"
        rm -f "$dst/cases/c$i/provenance.yaml"
        sed -i "s/^case_id: pass\$/case_id: c$i/; s/^title: \"pass\"\$/title: \"c$i\"/" "$dst/cases/c$i/case.yaml"
        printf '%s\n' "$spec" >"$dst/cases/c$i/expected/behavior.txt"
    done
    bd pin "$name" >/dev/null 2>&1
}

# check_run EVENTS WANT_CASES WANT_NOT_RUN CAP: the run.finished summary of a --json run.
# WANT_CASES and WANT_NOT_RUN are space-separated ids ("" for none); CAP "-" for none.
check_run() {
    "$PY" - "$@" <<'PY'
import json, sys
path, want, want_nr, cap = sys.argv[1:5]
ev = [json.loads(l) for l in open(path)]
fin = sorted(e["case_id"] for e in ev if e["event"] == "case.finished")
assert fin == sorted(want.split()), ("finished", fin, want)
s = ev[-1]["summary"]
assert ev[-1]["event"] == "run.finished", ev[-1]
if cap == "-":
    assert "cost_cap_usd" not in s and "stopped" not in s, s
else:
    assert s["cost_cap_usd"] == float(cap), s
    if want_nr:
        assert s["stopped"] == "cost_cap", s
        assert s["not_run"] == sorted(want_nr.split()), s
    else:
        assert "stopped" not in s and "not_run" not in s, s
assert s["cases"] == len(fin), s
PY
}

ev=$BD_TMP/ev
# Five fast cases, $0.25 each, one at a time: the order is the cases' order.
costly_class costly "0.25 0" "0.25 0" "0.25 0" "0.25 0" "0.25 0"
run() { # run EXTRA... -> $rc, events in $ev
    rc=0
    bd run costly "${SUB[@]}" --drafts --jobs 1 --json "$@" >"$ev" 2>"$BD_TMP/err" || rc=$?
}
seq_head() { bd history verify --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["count"])'; }

# One full run to compare with.
run
[ "$rc" = 0 ] && check_run "$ev" "c1 c2 c3 c4 c5" "" - && pass "uncapped run scores all five" \
    || fail "uncapped run -> $rc: $(cat "$BD_TMP/err")"

# --cost-cap at one case's worth: c1 runs, the rest do not.
n0=$(seq_head)
run --cost-cap 0.25
[ "$rc" = 0 ] && pass "--cost-cap 0.25 -> exit 0" || fail "--cost-cap 0.25 -> $rc: $(cat "$BD_TMP/err")"
check_run "$ev" "c1" "c2 c3 c4 c5" 0.25 && pass "cap at one case: c1 ran; not_run c2..c5; stopped cost_cap" \
    || fail "cap at one case: $(tail -n 1 "$ev")"
capped_id=$(head -n 1 "$ev" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
[ "$(($(seq_head) - n0))" = 2 ] && pass "cap at one case: one score record and the run.stopped audit record" \
    || fail "cap at one case: $(($(seq_head) - n0)) records"
bd history log --task-class costly --limit 1 --json | "$PY" -c '
import json, sys
recs = json.load(sys.stdin)
recs = recs["records"] if isinstance(recs, dict) else recs
r = recs[0]
assert r["kind"] == "audit" and r["event"] == "run.stopped", r
d = json.loads(r["detail"])
assert d == {"cost_cap_usd": 0.25, "cost_usd": 0.25, "not_run": 4, "run_id": "'"$capped_id"'",
             "stopped": "cost_cap"}, d' && pass "history log shows the run.stopped audit record with the cap" \
    || fail "history log: no run.stopped record"
"$PY" - "$FX/.benchdesk/runs/$capped_id.json" <<'PY' && pass "the summary file says stopped cost_cap, not cancelled" || fail "summary file"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["stopped"] == "cost_cap" and s["cost_cap_usd"] == 0.25 and s["cancelled"] is False, s
assert s["not_run"] == ["c2", "c3", "c4", "c5"] and len(s["results"]) == 1, s
PY

# 2.5 cases' worth: c1..c3 run ($0.75 >= $0.625), c4 and c5 do not.
run --cost-cap 0.625
[ "$rc" = 0 ] && check_run "$ev" "c1 c2 c3" "c4 c5" 0.625 && pass "cap at 2.5 cases: c1..c3 ran; c4 c5 not run" \
    || fail "cap at 2.5 cases -> $rc: $(tail -n 1 "$ev")"
# A cap above the run's cost: every case runs, the cap is shown, nothing stopped.
run --cost-cap 100
[ "$rc" = 0 ] && check_run "$ev" "c1 c2 c3 c4 c5" "" 100 && pass "cap never reached: a full run, the cap shown" \
    || fail "cap 100 -> $rc: $(tail -n 1 "$ev")"
# The cap reached by the last case: every case ran, so the cap stopped nothing.
run --cost-cap 1.25
[ "$rc" = 0 ] && check_run "$ev" "c1 c2 c3 c4 c5" "" 1.25 && pass "cap reached by the last case: nothing stopped" \
    || fail "cap 1.25 -> $rc: $(tail -n 1 "$ev")"

# Cap 0: no case starts, nothing is recorded, and the run says so; exit 0.
n0=$(seq_head)
run --cost-cap 0
[ "$rc" = 0 ] && check_run "$ev" "" "c1 c2 c3 c4 c5" 0 && pass "cap 0: nothing runs; all five not run" \
    || fail "cap 0 -> $rc: $(tail -n 1 "$ev") $(cat "$BD_TMP/err")"
[ "$(seq_head)" = "$n0" ] && pass "cap 0: nothing recorded" || fail "cap 0: records appended"
rc=0
out=$(bd run costly "${SUB[@]}" --drafts --jobs 1 --cost-cap 0 2>&1) || rc=$?
[ "$rc" = 0 ] && grep -q "stopped by the cost cap" <<<"$out" &&
    grep -Eq "not run +5 cases: the cost cap stopped the run before any case started; nothing was recorded" <<<"$out" &&
    grep -Eq 'cost +\$0\.00 of \$0\.00 \(cost cap\)' <<<"$out" \
    && pass "cap 0: the table says nothing was recorded" || fail "cap 0 table -> $rc: $out"
rc=0
out=$(bd run costly "${SUB[@]}" --drafts --jobs 1 --cost-cap 0.5 2>&1) || rc=$?
[ "$rc" = 0 ] && grep -Eq 'cost +\$0\.50 of \$0\.50 \(cost cap\)' <<<"$out" && grep -Eq "not run +3 cases" <<<"$out" \
    && pass "the table shows the cost beside the cap and the not-run count" || fail "table -> $rc: $out"

# A capped run is never a full run: compare's two latest full runs and the trend skip it.
bd history verify >/dev/null 2>&1 && pass "history verifies" || fail "history verify"
"$PY" - "$capped_id" <<PY && pass "the capped run is partial in history log --trend and compare" || fail "capped run counted as full"
import json, subprocess, sys
def bd(*a):
    return subprocess.run(["$BD_BIN", "-C", "$FX", *a], capture_output=True, text=True)
capped = sys.argv[1]
t = bd("history", "log", "--trend", "--task-class", "costly", "--json")
assert t.returncode == 0, t.stderr
assert capped not in t.stdout, "the trend holds the capped run"
c = bd("compare", "--task-class", "costly", "--json")
assert c.returncode == 0, c.stderr
assert capped not in c.stdout, "compare picked the capped run"
c = bd("compare", capped, "--json")
assert c.returncode == 0, c.stderr
j = json.loads(c.stdout)
assert j["run_b"] == capped and j["run_a"] != capped, j
c = bd("compare", capped)
assert c.returncode == 0 and "partial (1 of 5 cases, stopped by the cost cap)" in c.stdout, c.stdout
r = bd("report", capped, "--format", "markdown")
assert r.returncode == 0 and "partial \\(1 of 5 cases, stopped by the cost cap\\)" in r.stdout, r.stdout
PY

# Smallest wins: registration 0.75, config 0.5, flag 1.0 -> 0.5; flag 0.25 -> 0.25.
sed -i 's/^sut: {kind: cassette}$/sut: {kind: cassette}\nrun: {cost_cap_usd: 0.75}/' "$FX/bench/costly/registration.yaml"
grep -q "^run: {cost_cap_usd: 0.75}" "$FX/bench/costly/registration.yaml" || fail "registration edit"
bd pin costly >/dev/null
run
check_run "$ev" "c1 c2 c3" "c4 c5" 0.75 && pass "registration's run.cost_cap_usd applies" || fail "registration cap: $(tail -n 1 "$ev")"
mkdir -p "$FX/.benchdesk"
printf 'cost_cap_usd: 0.5\n' >>"$FX/.benchdesk/config.yaml"
run --cost-cap 1.0
check_run "$ev" "c1 c2" "c3 c4 c5" 0.5 && pass "config 0.5 beats registration 0.75 and --cost-cap 1.0" \
    || fail "config cap: $(tail -n 1 "$ev")"
run --cost-cap 0.25
check_run "$ev" "c1" "c2 c3 c4 c5" 0.25 && pass "--cost-cap 0.25 beats both" || fail "flag cap: $(tail -n 1 "$ev")"

# Invalid values are refused before anything runs.
for bad in -1 abc 1e3 '$5' 1.2.3 '' 0x10 1000000001 inf nan; do
    expect 2 usage.bad_args -- bd run costly "${SUB[@]}" --drafts --cost-cap "$bad"
done
expect 2 usage.bad_args -- bd run costly "${SUB[@]}" --drafts --cost-cap
sed -i 's/^cost_cap_usd: 0.5$/cost_cap_usd: -3/' "$FX/.benchdesk/config.yaml"
expect 2 config.schema_invalid -- bd run costly "${SUB[@]}" --drafts
sed -i 's/^cost_cap_usd: -3$/cost_cap_usd: "0.5"/' "$FX/.benchdesk/config.yaml"
expect 2 config.schema_invalid -- bd run costly "${SUB[@]}" --drafts
sed -i '/^cost_cap_usd:/d' "$FX/.benchdesk/config.yaml"
sed -i 's/^run: {cost_cap_usd: 0.75}$/run: {cost_cap_usd: -0.75}/' "$FX/bench/costly/registration.yaml"
expect 2 registration.schema_invalid -- bd run costly "${SUB[@]}" --drafts

# A shard run applies the cap to its shard; the bundle's manifest names the cases not run,
# and the shards import as one partial run.
sed -i '/^run: {cost_cap_usd: -0.75}$/d' "$FX/bench/costly/registration.yaml"
bd pin costly >/dev/null 2>&1
for k in 0 1; do
    rc=0
    bd run costly "${SUB[@]}" --drafts --jobs 1 --shard "$k/2" --run-id capped-shards \
        --out "$BD_TMP/shard$k" --cost-cap 0.25 --json >"$ev" 2>"$BD_TMP/err" || rc=$?
    [ "$rc" = 0 ] && "$PY" - "$ev" "$BD_TMP/shard$k/manifest.json" <<'PY' && pass "shard $k/2: one case, the rest named not run in its manifest" || fail "shard $k/2 -> $rc: $(cat "$BD_TMP/err")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
s = ev[-1]["summary"]
m = json.load(open(sys.argv[2]))
assert s["cases"] == 1 and s["stopped"] == "cost_cap" and s["cost_cap_usd"] == 0.25, s
assert m["not_run"] == s["not_run"] and len(m["cases"]) == 1 + len(s["not_run"]) and m["count"] == 1, m
assert m["cost_cap_usd"] == 0.25, m
PY
done
bd history import "$BD_TMP/shard0" "$BD_TMP/shard1" >/dev/null 2>"$BD_TMP/err" && pass "the capped shards import" \
    || fail "import of capped shards: $(cat "$BD_TMP/err")"
out=$(bd compare capped-shards 2>&1) && grep -q "partial (2 of 5 cases, stopped by the cost cap)" <<<"$out" \
    && pass "the merged run is partial (2 of 5 cases), stopped by the cost cap" || fail "merged run: $out"
# The merged run carries the run.stopped record a local capped run leaves, once, after
# its records; its summary says stopped by the cap. Importing again adds nothing.
stops() { bd history log --run capped-shards --json | "$PY" -c '
import json, sys
recs = json.load(sys.stdin)["records"]
st = [r for r in recs if r.get("event") == "run.stopped"]
sc = [r for r in recs if r.get("kind") != "audit"]
assert len(sc) == 2 and all(s["seq"] < st[0]["seq"] for s in sc), recs
d = json.loads(st[0]["detail"])
assert d["run_id"] == "capped-shards" and d["stopped"] == "cost_cap" and d["cost_cap_usd"] == 0.25, d
assert d["not_run"] == 3 and set(d) == {"cost_cap_usd", "cost_usd", "not_run", "run_id", "stopped"}, d
print(len(st))'; }
[ "$(stops)" = 1 ] && pass "the merged run has one run.stopped record after its records" || fail "run.stopped of the merged run: $(stops 2>&1)"
"$PY" - "$FX/.benchdesk/runs/capped-shards.json" <<'PY' && pass "the merged run's summary: stopped by the cap, 3 not run" || fail "merged summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["stopped"] == "cost_cap" and s["cost_cap_usd"] == 0.25 and len(s["not_run"]) == 3, s
PY
bd history import "$BD_TMP/shard0" "$BD_TMP/shard1" >/dev/null 2>&1
[ "$(stops)" = 1 ] && pass "importing the shards again adds no second run.stopped" || fail "re-import: $(stops 2>&1)"
bd history verify >/dev/null && pass "the chain verifies with the merged run's run.stopped" || fail "verify after merge"
# A manifest that names a cap without cases not run is not one benchdesk wrote.
cp -a "$BD_TMP/shard0" "$BD_TMP/shard0cap"
"$PY" - "$BD_TMP/shard0cap/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["not_run"]
open(sys.argv[1], "w").write(json.dumps(m, sort_keys=True, separators=(",", ":")))
PY
expect 2 bundle.invalid -- bd history import "$BD_TMP/shard0cap"
# A bundle that names a case not run is refused when that case has a record after all.
"$PY" - "$BD_TMP/shard0/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["not_run"] = sorted(m["cases"])
open(sys.argv[1], "w").write(json.dumps(m, sort_keys=True, separators=(",", ":")))
PY
expect 1 bundle.tampered -- bd history import "$BD_TMP/shard0"

# A cap reached while slow cases run: they are cancelled as by Ctrl-C (no record, no
# temp dir, no process left) and named in not_run with the cases never started.
costly_class slowcap "1 0" "0 30" "0 30" "0 30" "0 30"
t0=$(date +%s)
rc=0
bd run slowcap "${SUB[@]}" --drafts --jobs 3 --json --cost-cap 1 >"$ev" 2>"$BD_TMP/err" || rc=$?
took=$(($(date +%s) - t0))
[ "$rc" = 0 ] && pass "slow cases, cap reached -> exit 0" || fail "slow cap -> $rc: $(cat "$BD_TMP/err")"
[ "$took" -lt 25 ] && pass "the running slow cases were cancelled (${took}s)" || fail "the run took ${took}s"
check_run "$ev" "c1" "c2 c3 c4 c5" 1 && pass "only c1 finished; the cancelled and unstarted cases are not_run" \
    || fail "slow cap: $(tail -n 1 "$ev")"
[ "$(grep -c '"event":"case.started"' "$ev")" = 3 ] && pass "three cases had started (c4, c5 never did)" \
    || fail "case.started count: $(grep -c '"event":"case.started"' "$ev")"
[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"
[ "$(procs_left)" = 0 ] && pass "no rubric process left" || fail "processes left"
bd history log --task-class slowcap --json | "$PY" -c '
import json, sys
recs = json.load(sys.stdin)
recs = recs["records"] if isinstance(recs, dict) else recs
ids = sorted(r["case_id"] for r in recs if r.get("kind") != "audit")
assert ids == ["c1"], ids' && pass "the history holds c1 only" || fail "history of slowcap"
finish
