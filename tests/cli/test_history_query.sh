#!/usr/bin/env bash
# What the history answers (docs/history.md, docs/history.md#promotion-recommend-never-apply): `history log` filters (--run,
# with the run's audit records,
# --failure-mode, --failed, --stale with STALE marks) and `recommend` on current records
# of a task class signed today — stale, unsigned, other-isolation, old and superseded
# records counted and excluded; an unsigned task class recommends nothing (null, with the
# reason); promote still refuses. Records are generated with correct hashes by an
# independent helper (tests/cli/history_seg.py) on a copy of the signed demo bench.
. "$(dirname "$0")/lib.sh"
root=$(demo_copy)
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
tc=vuln-remediation
pins="$root/bench/$tc/cases/digests.yaml"
T=$(awk '$1 == "task_class:" {print $2}' "$pins")
pin() { awk -v c="$1:" '$1 == c {print $2}' "$pins"; }
OLD=blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
c() { printf 'ghsa-demo-%04d' "$1"; }
case_dir() { ls -d "$root/bench/$tc/cases/$(c "$1")"-* | xargs basename; }
gen() { # case-number key=value... (JSON values)
    local n=$1; shift
    local id; id=$(case_dir "$n")
    local fields="\"task_class\":\"$tc\",\"case_id\":\"$id\",\"case_digest\":\"$(pin "$id")\",\"task_class_digest\":\"$T\""
    local kv
    for kv in "$@"; do fields="$fields,\"${kv%%=*}\":${kv#*=}"; done
    python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$hist" "{$fields}"
}
[ -n "$T" ] && [ -n "$(pin "$(case_dir 1)")" ] || { fail "demo pins not found"; finish; }

# one full run (gen-1: 7 cases selected, 7 records), a subset re-run, an older run and a
# cancelled one (docs/history.md#promotion-recommend-never-apply: the latest full run)
R='run_cases=7'
gen 1 score=0.9 age_days=3 $R                                     # superseded by the next
gen 1 score=0.5 passed=false age_days=2 $R                        # evidence
gen 2 "case_digest=\"$OLD\"" $R                                   # stale: the case changed
gen 3 "task_class_digest=\"$OLD\"" $R                             # stale: rubric/registration
gen 14 $R                                                         # case awaiting review
gen 4 provenance_verified=false $R                                # an unsigned run
gen 5 'isolation_class="subprocess"' $R                           # weaker isolation
gen 6 age_days=40 'run_id="gen-0"'                                # outside the window
gen 7 score=0.25 passed=false 'failure_mode="cve.not_removed"' 'run_id="gen-2"' \
    'run_scope="subset"'                                          # a subset run: never counted
gen 8 'run_id="gen-3"' run_cases=5                                # a cancelled run: not full
bd history verify >/dev/null && pass "generated history verifies" || fail "generated history"

# recommend: the latest full run's current records of signed cases, counted exclusions
out=$(bd recommend "$tc" --json) && rc=0 || rc=$?
got=$(pj 'd["task_class_signed"], d["cases"], d["excluded_records"]["stale"], d["excluded_records"]["unsigned"], d["excluded_records"]["other_isolation"], d["excluded_records"]["outside_window"], d["excluded_records"]["superseded"], d["excluded_records"]["subset_runs"], d["excluded_records"]["other_runs"], d["run"]["run_id"]' <<<"$out")
[ "$rc" = 0 ] && [ "$got" = "true 1 2 2 1 1 1 1 1 gen-1" ] &&
    pass "recommend: run gen-1, 1 current signed case; 2 stale, 2 unsigned, 1 isolation, 1 old, 1 superseded, 1 subset, 1 other run" ||
    fail "recommend counts: rc=$rc $got"
[ "$(pj '",".join(e["case_id"][:14] + ":" + str(e["score"]) for e in d["evidence"])' <<<"$out")" = \
    "ghsa-demo-0001:0.5" ] && pass "evidence: the run's latest current record per case; the subset run's never" ||
    fail "evidence: $(pj 'd["evidence"]' <<<"$out")"
[ "$(pj 'd["verdicts"]["unreviewed"]' <<<"$out")" = "[2]" ] &&
    pass "recommend lists the run's unreviewed failure" || fail "unreviewed: $(pj 'd["verdicts"]' <<<"$out")"
[ "$(pj 'd["recommended_tier"]' <<<"$out")" = null ] &&
    pass "1 case: not even bronze (min 10)" || fail "tier: $out"
bd recommend "$tc" | grep -q "excluded      2 stale, 2 unsigned" && pass "recommend text counts" ||
    fail "recommend text"

# a task class not signed today recommends nothing, with the reason (exit 0)
cp "$root/bench/$tc/provenance.yaml" "$BD_TMP/prov"
sed -i '/^reviewer:/,$d' "$root/bench/$tc/provenance.yaml"
out=$(bd recommend "$tc" --json) && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$(pj 'd["task_class_signed"], d["recommended_tier"]' <<<"$out")" = "false null" ] &&
    pj 'd["reason"]' <<<"$out" | grep -q "not signed today" &&
    pass "unsigned task class: recommended_tier null with the reason" || fail "unsigned tc: rc=$rc $out"
bd recommend "$tc" | grep -q "recommended   none: task class '$tc' is not signed today" &&
    pass "unsigned task class: text says why" || fail "unsigned tc text"
cp "$BD_TMP/prov" "$root/bench/$tc/provenance.yaml"
expect 3 promotion.requires_human -- bd promote "$tc" silver

# log filters
n() { bd history log "$@" --json | pj 'len(d["records"])'; }
[ "$(n --run gen-2)" = 1 ] && pass "log --run" || fail "log --run: $(n --run gen-2)"
[ "$(n --failure-mode cve.not_removed)" = 1 ] && pass "log --failure-mode" || fail "log --failure-mode"
[ "$(n --failed)" = 2 ] && pass "log --failed" || fail "log --failed: $(n --failed)"
[ "$(n --stale)" = 2 ] && pass "log --stale (bd_record_stale)" || fail "log --stale: $(n --stale)"
[ "$(n --stale --failed)" = 0 ] && pass "filters combine" || fail "log --stale --failed"
[ "$(n --task-class "$tc" --case "$(case_dir 1)")" = 2 ] && pass "log --case" || fail "log --case"
out=$(bd history log --json)
[ "$(pj '[r["seq"] for r in d["records"] if r.get("stale")]' <<<"$out")" = "[4, 3]" ] &&
    pass "JSON marks stale records" || fail "stale marks: $out"
bd history log | grep "ghsa-demo-0002" | grep -q "STALE: case changed" && pass "text marks STALE" ||
    fail "text STALE"
bd history log | grep "ghsa-demo-0003" | grep -q "STALE: rubric or registration changed" &&
    pass "text names what changed" || fail "text STALE task class"
expect 2 usage.bad_args -- bd history log --run

# --run shows the run's audit records too: those whose detail is canonical JSON naming
# the run (run.stopped), newest first among its records; not a detail that only
# mentions it, is not canonical, or names another run. The index and the walk agree.
seg() { python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" "$@"; }
seg audit "$hist" run.stopped '{"cost_cap_usd":1,"cost_usd":1.5,"not_run":3,"run_id":"gen-2","stopped":"cost_cap"}' "$tc"
seg audit "$hist" run.stopped '{"run_id": "gen-2"}' "$tc"                 # not canonical
seg audit "$hist" note.text 'run_id "gen-2" was slow'                     # not JSON
seg audit "$hist" run.stopped '{"run_id":"gen-3","stopped":"cost_cap"}'   # another run
seg audit "$hist" run.stopped '{"run_id":["gen-2"]}'                      # not a string
seg audit "$hist" other.event '{"detail":{"run_id":"gen-2"}}'             # not at the top
bd history verify >/dev/null && pass "history with audit records verifies" || fail "audit records"
seqs() { bd history log "$@" --json | pj '[(r["seq"], r.get("event", "score")) for r in d["records"]]'; }
want='[[12, "run.stopped"], [9, "score"]]'
[ "$(seqs --run gen-2)" = "$want" ] && pass "log --run lists the run's audit record" ||
    fail "log --run with audits: $(seqs --run gen-2)"
[ "$(BENCHDESK_NO_INDEX=1 seqs --run gen-2)" = "$want" ] && pass "log --run: the walk agrees with the index" ||
    fail "log --run without the index: $(BENCHDESK_NO_INDEX=1 seqs --run gen-2)"
[ "$(seqs --run gen-3)" = '[[15, "run.stopped"], [10, "score"]]' ] &&
    [ "$(BENCHDESK_NO_INDEX=1 seqs --run gen-3)" = '[[15, "run.stopped"], [10, "score"]]' ] &&
    pass "log --run: another run's audit record is its own" || fail "log --run gen-3: $(seqs --run gen-3)"
[ "$(seqs --run gen-2 --task-class "$tc")" = "$want" ] && [ "$(seqs --run gen-2 --failed)" = '[[9, "score"]]' ] &&
    [ "$(BENCHDESK_NO_INDEX=1 seqs --run gen-2 --failed)" = '[[9, "score"]]' ] &&
    pass "log --run combines: --task-class keeps it, --failed (scores only) drops it" ||
    fail "log --run combined: $(seqs --run gen-2 --task-class "$tc") / $(seqs --run gen-2 --failed)"
[ "$(seqs --run gen-2 --limit 1)" = '[[12, "run.stopped"]]' ] && [ "$(bd history log --run gen-2 --limit 1 --before 12 --json | pj '[r["seq"] for r in d["records"]]')" = "[9]" ] &&
    pass "log --run pages over audit and score records" || fail "log --run paging"
bd history log --run gen-2 | grep -q "run.stopped" && pass "text log --run shows run.stopped" ||
    fail "text log --run: $(bd history log --run gen-2)"

# list marks each case's newest score, current or stale (the same rule, stale.c).
lst=$(bd list "$tc")
grep "^$(case_dir 1) " <<<"$lst" | grep -q ' 0\.50  ' && pass "list: newest score of case 1 (superseded one hidden)" ||
    fail "list case 1: $(grep "^$(case_dir 1) " <<<"$lst")"
grep "^$(case_dir 2) " <<<"$lst" | grep -q ' [0-9.]*\* ' && grep "^$(case_dir 3) " <<<"$lst" | grep -q ' [0-9.]*\* ' &&
    pass "list: stale scores starred" || fail "list stale: $(grep -E "^$(case_dir 2) |^$(case_dir 3) " <<<"$lst")"
grep "^$(case_dir 5) " <<<"$lst" | grep -qv '\* ' && pass "list: a current score is not starred" || fail "list current"
grep "^$(case_dir 15) " <<<"$lst" | grep -q ' -     ' && pass "list: never scored is -" || fail "list never scored"
grep -q '^\* 2 cases. newest scores are stale' <<<"$lst" && pass "list: the stale legend" || fail "list legend: $lst"
out=$(bd list "$tc" --json)
[ "$(pj '";".join(c["case_id"][:14] + "=" + c["last_score"]["stale_reason"] for c in d["cases"] if c["last_score"] and c["last_score"]["stale"])' <<<"$out")" = \
  "ghsa-demo-0002=case changed;ghsa-demo-0003=rubric or registration changed" ] &&
    pass "list --json: last_score with stale_reason" || fail "list --json stale: $(pj '[c.get("last_score") for c in d["cases"]]' <<<"$out")"
finish
