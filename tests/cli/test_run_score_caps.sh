#!/usr/bin/env bash
# Score caps (docs/formats.md#benchscore): a BenchScore past a cap — 60,000 bare failure-mode codes
# (under the 1 MiB stdout cap), cost_usd 1.7e308 (twice: the sum would be infinite), a
# 2 KB detail, 100 breakdown keys — fails its case with rubric.malformed_output; the run
# goes on, every case is recorded, and the summary stays finite.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
. "$(dirname "$0")/jail_lib.sh"

jail_class score-many-modes score-huge-cost score-huge-cost2 score-long-detail score-many-keys
printf 'score-huge-cost\n' >"$FX/bench/jailprobe/cases/score-huge-cost2/expected/behavior.txt"
bd pin jailprobe >/dev/null
ev=$BD_TMP/ev
rc=0
bd run jailprobe "${SUB[@]}" --drafts --jobs 2 --json >"$ev" 2>"$BD_TMP/err" || rc=$?
[ "$rc" = 0 ] && pass "run completes -> 0" || fail "run -> $rc: $(cat "$BD_TMP/err")"
"$PY" - "$ev" <<'PY' && pass "each capped score: rubric.malformed_output, recorded; summary finite" || fail "score caps"
import json, math, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
fin = {e["case_id"]: e for e in ev if e["event"] == "case.finished"}
assert len(fin) == 5, sorted(fin)
for cid, e in fin.items():
    fm = e["score"]["failure_modes"]
    assert fm and fm[0]["code"] == "rubric.malformed_output", (cid, fm)
    assert e.get("record_hash"), (cid, "not recorded")
    print(cid, "->", fm[0]["detail"][:70])
s = ev[-1]["summary"]
assert s["cases"] == 5 and isinstance(s["cost_usd"], (int, float)) and math.isfinite(s["cost_usd"]), s
PY
bd history verify >/dev/null 2>&1 && pass "history verifies" || fail "history verify"
finish
