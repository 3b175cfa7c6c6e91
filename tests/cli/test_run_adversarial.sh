#!/usr/bin/env bash
# benchdesk run over the adversarial fixture, isolation class `subprocess`: every
# misbehaving rubric gets its exact failure mode, the run goes on, the parent's secret
# appears nowhere, and no process or temp dir is left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"

SECRET="sk-bd-cli-secret-$RANDOM$RANDOM"
export BENCHDESK_TEST_SECRET="$SECRET" ANTHROPIC_API_KEY="$SECRET" AWS_SECRET_ACCESS_KEY="$SECRET"
rc=0
bd run adversarial "${SUB[@]}" --drafts --jobs 2 --json >"$BD_TMP/ev" 2>"$BD_TMP/err" || rc=$?
[ "$rc" = 0 ] && pass "adversarial run completes -> 0" || fail "adversarial run -> $rc: $(cat "$BD_TMP/err")"

"$PY" - "$BD_TMP/ev" "$BD_SOURCE_DIR/tests/fixtures/rubrics" <<'PY' && pass "every case: its exact failure mode" || fail "failure modes"
import json, sys
sys.path.insert(0, sys.argv[2])
from mkbench import ADVERSARIAL
ev = [json.loads(l) for l in open(sys.argv[1])]
fin = {e["case_id"]: e["score"] for e in ev if e["event"] == "case.finished"}
assert set(fin) == set(ADVERSARIAL), sorted(set(ADVERSARIAL) ^ set(fin))
bad = []
for case, (_, mode) in ADVERSARIAL.items():
    s = fin[case]
    got = s["failure_modes"][0]["code"] if s["failure_modes"] else None
    if mode is None and not s["passed"]:
        bad.append("%s: wanted a pass, got %s %s" % (case, got, s["failure_modes"]))
    elif mode is not None and (got != mode or s["passed"]):
        bad.append("%s: wanted %s, got %s %s" % (case, mode, got, s["failure_modes"]))
for b in bad:
    print(b)
summary = ev[-1]["summary"]
assert summary["cases"] == len(ADVERSARIAL), summary
assert summary["failure_modes"]["rubric.timeout"] == 3, summary
assert not bad
PY

for f in "$BD_TMP/ev" "$BD_TMP/err"; do
    grep -q "$SECRET" "$f" && fail "secret in $(basename "$f")" || pass "secret absent from $(basename "$f")"
done
grep -rq "$SECRET" "$FX/.benchdesk" && fail "secret in .benchdesk/" || pass "secret absent from .benchdesk/ (summary, stderr files)"
grep -q '"leak\\": null' "$BD_TMP/ev" && pass "secret-env: the rubric saw no secret" || fail "secret-env detail"

for id in fork-outlive setsid-escape; do
    pid=$(cat "$STATE/$id.pid" 2>/dev/null || echo 0)
    if [ "$pid" -gt 0 ] && [ ! -e "/proc/$pid" ]; then pass "$id: descendant $pid is gone"
    else fail "$id: descendant $pid still exists"; fi
done
cwd=$(cat "$STATE/write-cwd.cwd")
case "$cwd" in "$RUNTMP"/benchdesk-*-write-cwd-*) pass "write-cwd ran in a per-case temp dir" ;;
    *) fail "write-cwd cwd was $cwd" ;; esac
[ ! -e "$cwd" ] && pass "write-cwd: its littered cwd is gone" || fail "cwd $cwd still exists"
[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"
[ "$(procs_left)" = 0 ] && pass "no process left in the temp root" || fail "processes left"

# Human output: the table counts failure modes, the failures are listed.
out=$(bd run adversarial "${SUB[@]}" --drafts --jobs 2 --case pass --case die-by-signal --case sleep-forever 2>"$BD_TMP/err")
grep -qE '^    rubric\.crashed +1$' <<<"$out" && pass "table: failure-mode counts" || fail "table: $out"
grep -qE '^    die-by-signal +0\.000  rubric\.crashed$' <<<"$out" && pass "table: failed cases" || fail "table: $out"
grep -qE '^\[[0-9]/3\] die-by-signal: FAIL 0\.000 \([0-9]+ ms\) rubric\.crashed: killed by SIGSEGV' "$BD_TMP/err" \
    && pass "plain line for a failure" || fail "stderr: $(cat "$BD_TMP/err")"
finish
