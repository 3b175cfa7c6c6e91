#!/usr/bin/env bash
# One shared misbehaviour suite under both isolation classes (docs/formats.md#benchscore): the whole
# adversarial fixture (tests/fixtures/rubrics/adversarial.py, one case per misbehaviour)
# runs under `subprocess` and under `namespaces`, and every case must get the same
# failure mode in both, except the documented differences (docs/isolation.md):
#   kill-supervisor  the rubric SIGKILLs its parent: under subprocess that is its
#                    supervisor (rubric.crashed, a hole of the class); under namespaces
#                    its parent is the jail's init, which a signal from inside cannot
#                    kill, so it sleeps into rubric.timeout;
#   fork-outlive, setsid-escape, write-cwd
#                    the fixture reports pids and its cwd to a host directory that the
#                    jail does not show (their guarantees under namespaces are proved by
#                    test_jail_limits and test_run_litter), so they are not compared;
#   cpu-rlimit       a rubric that lowers its own CPU limit to 1 s within a 4 s wall
#                    clock: rubric.cpu_limit, or rubric.timeout when a loaded machine
#                    gives it less than a quarter of a CPU — either, in either class.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
. "$(dirname "$0")/jail_lib.sh"
namespaces_or_skip_adv() {
    local why
    if why=$(bd run adversarial --isolation namespaces --drafts --case pass 2>&1 >/dev/null); then return 0; fi
    if [ "${BD_REQUIRE_NAMESPACES:-0}" = 1 ]; then
        echo "FAIL: BD_REQUIRE_NAMESPACES=1 and the jail cannot be built: $why"; exit 1
    fi
    echo "SKIP: the namespaces jail is unavailable here: $why"; exit 77
}
namespaces_or_skip_adv
for iso in subprocess namespaces; do
    rc=0
    bd run adversarial --isolation "$iso" --drafts --jobs 2 --json >"$BD_TMP/ev.$iso" 2>"$BD_TMP/err.$iso" || rc=$?
    [ "$rc" = 0 ] && pass "$iso: the adversarial run completes" || fail "$iso run -> $rc: $(cat "$BD_TMP/err.$iso")"
done
"$PY" - "$BD_TMP/ev.subprocess" "$BD_TMP/ev.namespaces" "$BD_SOURCE_DIR/tests/fixtures/rubrics" >"$BD_TMP/report" <<'PY' || true
import json, sys
sys.path.insert(0, sys.argv[3])
from mkbench import ADVERSARIAL
def modes(path):
    out = {}
    for l in open(path):
        e = json.loads(l)
        if e.get("event") == "case.finished":
            fm = e["score"]["failure_modes"]
            out[e["case_id"]] = fm[0]["code"] if fm else None
    return out
sub, ns = modes(sys.argv[1]), modes(sys.argv[2])
expected_diff = {"kill-supervisor": ("rubric.crashed", "rubric.timeout")}
not_compared = {"fork-outlive", "setsid-escape", "write-cwd"}
either = {"cpu-rlimit": {"rubric.cpu_limit", "rubric.timeout"}}
for case in sorted(ADVERSARIAL):
    a, b = sub.get(case, "missing"), ns.get(case, "missing")
    if case in not_compared:
        print("ok   %s: not compared (reports to a host path the jail hides); subprocess %s, namespaces %s" % (case, a, b))
    elif case in expected_diff:
        want = expected_diff[case]
        ok = (a, b) == want
        print("%s %s: documented difference, subprocess %s, namespaces %s" % ("ok  " if ok else "FAIL", case, a, b))
    elif case in either:
        ok = a in either[case] and b in either[case]
        print("%s %s: subprocess %s, namespaces %s (either of %s)" % ("ok  " if ok else "FAIL", case, a, b, sorted(either[case])))
    else:
        ok = a == b and a != "missing"
        print("%s %s: %s under both classes%s" % ("ok  " if ok else "FAIL", case, a, "" if ok else " (namespaces: %s)" % b))
PY
report_lines "$BD_TMP/report"
[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"
finish
