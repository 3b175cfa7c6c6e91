"""Compare the failure modes of the adversarial fixture run cold and warm, case by case.

    warm_modes.py COLD.jsonl WARM.jsonl FIXTURES_DIR [LABEL]

Reads the `case.finished` events of two `benchdesk run adversarial --json` outputs and
prints one line per case of the fixture: "ok  " when the first failure mode (code, detail
with paths and numbers masked, passed) is the same cold and warm, "FAIL" otherwise. A case
whose limit may be hit either as the CPU limit or as the timeout accepts both. LABEL (for
instance "at --jobs 1") is printed after each case id. Used by test_run_warm.sh and
test_run_warm_prepared.sh through report_lines (lib.sh); test_run_warm.sh's other checkers
import modes() (sys.path gets $BD_SOURCE_DIR/tests/cli)."""
import json
import re
import sys


def modes(path):
    """{case id: (first failure mode's code, its detail with paths and numbers masked,
    passed)} from the `case.finished` events of a `benchdesk run --json` output."""
    out = {}
    for line in open(path):
        e = json.loads(line)
        if e.get("event") == "case.finished":
            fm = e["score"]["failure_modes"]
            detail = fm[0].get("detail", "") if fm else ""
            # paths and measured numbers masked: what is left must be equal
            detail = re.sub(r"/tmp/\S*", "<path>", detail)
            detail = re.sub(r"\d+", "N", detail)
            out[e["case_id"]] = (fm[0]["code"] if fm else None, detail, e["score"]["passed"])
    return out


def main():
    sys.path.insert(0, sys.argv[3])
    from mkbench import ADVERSARIAL  # noqa: E402

    label = (" " + sys.argv[4]) if len(sys.argv) > 4 else ""
    cold, warm = modes(sys.argv[1]), modes(sys.argv[2])
    either = {"cpu-rlimit": {"rubric.cpu_limit", "rubric.timeout"}}
    for case in sorted(ADVERSARIAL):
        a, b = cold.get(case, ("missing",)), warm.get(case, ("missing",))
        if case in either:
            ok = a[0] in either[case] and b[0] in either[case]
        else:
            ok = a == b and a[0] != "missing"
        print("%s %s%s: cold %s, warm %s" % ("ok  " if ok else "FAIL", case, label, a, b))


if __name__ == "__main__":
    main()
