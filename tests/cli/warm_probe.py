"""The probe fixture's last two runs, one cold and one warm, as the warm tests compare them.
Imported by the scripts test_run_warm.sh and test_run_warm_prepared.sh embed (sys.path gets
$BD_SOURCE_DIR/tests/cli); prints "ok  " or "FAIL" lines for report_lines (lib.sh).

Each run is {case id: what the probe rubric reported of itself (its stderr, JSON)}."""
import glob
import json
import os
import sys

CASES = ("probe-00", "probe-01", "probe-02", "probe-03")


def probe_runs(runs_dir):
    """(cold, warm) from the two newest run summaries of the probe task class in
    `runs_dir`; a FAIL line and the end of the script when they are not one cold and one
    warm run."""
    runs = sorted(glob.glob(os.path.join(runs_dir, "*.json")), key=os.path.getmtime)
    runs = [p for p in runs if json.load(open(p)).get("task_class") == "probe"]
    by = {}
    for p in runs[-2:]:
        s = json.load(open(p))
        by[s["start"]] = {c: json.load(open(os.path.join(p[:-5], c + ".stderr"))) for c in CASES}
    cold, warm = by.get("cold"), by.get("warm")
    if not cold or not warm:
        print("FAIL the two probe runs are not one cold and one warm: %s" % sorted(by))
        sys.exit()
    return cold, warm


def same_as_cold(cold, warm, case):
    """One line: whether the warm rubric of `case` saw everything the cold one saw (its
    random state and the modules imported before its first line aside, which differ by
    design)."""
    c, w = cold[case], warm[case]
    diff = sorted(k for k in c if k not in ("random", "preloaded") and c[k] != w.get(k))
    print("%s %s: warm sees what cold sees%s" % (
        "ok  " if not diff else "FAIL", case,
        "" if not diff else " except " + "; ".join("%s: cold %r warm %r" % (k, c[k], w.get(k)) for k in diff)))
