"""Rubric for incident-triage: score one triage answer for an alert.

Input (stdin, docs/formats.md#benchscore):
  {"case": {...}, "expected": {...}, "harness_output": {...}, "case_dir": "case"}
Output (stdout): exactly one BenchScore JSON object; exit status 0.

The system under test is given an alert (case/input/alert.json) and a log excerpt
(case/input/logs.txt) and answers with:
  severity              sev1 | sev2 | sev3 | sev4 | noise (also accepted: SEV-2, P2, ...)
  owner                 the owning team's slug
  root_cause_keywords   a short list of keywords naming the cause
  summary               free text for the human on call (not scored)

`expected` (from case.yaml) holds the ground truth:
  severity        the right severity ("noise" for an alert that is not an incident)
  owner           the owning team; owner_aliases optional other accepted slugs
  cause_keywords  groups of synonyms; a group is matched when any of its phrases occurs
                  in the answer's keywords as whole words (case-insensitive, punctuation
                  read as spaces)
  max_keywords    optional (default 8): only that many answer keywords are read, so
                  listing every word of the log cannot buy recall

Scoring: a weighted sum of three breakdown values, each in [0, 1]:
  severity      0.35  1 exact; 0.5 one step off (severity.off_by_one, warn); else 0
                      (severity.wrong)
  owner         0.30  1 when the owner or an alias matches; else 0 (owner.wrong)
  cause_recall  0.35  matched groups / all groups; below 0.5 is cause.missed (block),
                      below 1 cause.partial (warn)

passed = score >= 0.75 and no failure mode of severity "block".
`checks` lists what was compared, each under one name with the expected and the actual
value: severity, owner and root_causes_found.
Missing or mistyped fields give output.incomplete, never a crash. Deterministic.
"""

import json
import math
import re
import sys

WEIGHTS = {"severity": 0.35, "owner": 0.30, "cause_recall": 0.35}
PASS_THRESHOLD = 0.75
SEVERITY = {
    "severity.wrong": "block",
    "severity.off_by_one": "warn",
    "owner.wrong": "block",
    "cause.missed": "block",
    "cause.partial": "warn",
    "output.incomplete": "block",
}
RANK = {"sev1": 1, "sev2": 2, "sev3": 3, "sev4": 4, "noise": 5}

CHECK_VALUE_MAX = 4000  # bytes of JSON; the contract allows 4096 in canonical form


def fit(v):
    """`v`, or a shortened string of it, small enough for a check's expected/actual."""
    enc = json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(enc.encode("utf-8")) <= CHECK_VALUE_MAX:
        return v
    t = v if isinstance(v, str) else enc
    while len(json.dumps(t, ensure_ascii=False).encode("utf-8")) > CHECK_VALUE_MAX - 16:
        t = t[: len(t) * 3 // 4]
    return t + " [cut]"


class Score:
    def __init__(self):
        self.breakdown = {k: 0.0 for k in WEIGHTS}
        self.modes = []
        self.checks = []

    def fail(self, code, detail):
        """Record a failure mode once per code; later details of the same code are appended."""
        for m in self.modes:
            if m["code"] == code:
                m["detail"] = (m["detail"] + "; " + str(detail))[:200]
                return
        self.modes.append({"code": code, "severity": SEVERITY[code], "detail": str(detail)[:200]})

    def check(self, name, expected, actual, passed):
        """Record what was compared, under one name on both sides (the reviewer's table)."""
        self.checks.append({"name": name, "expected": fit(expected), "actual": fit(actual),
                            "passed": bool(passed)})

    def emit(self, cost):
        total = sum(WEIGHTS[k] * self.breakdown[k] for k in WEIGHTS)
        total = round(min(1.0, max(0.0, total)), 4)
        blocked = any(m["severity"] == "block" for m in self.modes)
        doc = {
            "passed": bool(total >= PASS_THRESHOLD and not blocked),
            "score": total,
            "breakdown": {k: round(v, 4) for k, v in self.breakdown.items()},
            "failure_modes": self.modes,
            "cost_usd": cost,
            "wall_clock_ms": 0,
        }
        if self.checks:
            doc["checks"] = self.checks[:64]
        sys.stdout.write(json.dumps(doc, sort_keys=True) + "\n")


def norm_severity(v):
    if not isinstance(v, str):
        return None
    t = re.sub(r"[^a-z0-9]", "", v.lower())
    m = re.fullmatch(r"(?:sev|p|s)([1-4])", t)
    if m:
        return "sev" + m.group(1)
    if t in ("noise", "none", "notanincident", "nonactionable", "ignore"):
        return "noise"
    return None


def norm_slug(v):
    return re.sub(r"[\s_]+", "-", v.strip().lower()) if isinstance(v, str) else ""


def norm_text(v):
    """Lower case, punctuation read as spaces, padded so phrases match whole words."""
    return " " + re.sub(r"[^a-z0-9|]+", " ", v.lower()).strip() + " "


def main():
    s = Score()
    cost = 0.0
    try:
        doc = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        doc = None
    if not isinstance(doc, dict):
        s.fail("output.incomplete", "the rubric's stdin is not a JSON object")
        s.emit(cost)
        return
    exp = doc.get("expected") if isinstance(doc.get("expected"), dict) else {}
    out = doc.get("harness_output")
    if not isinstance(out, dict):
        s.fail("output.incomplete", "harness_output is not a JSON object")
        s.emit(cost)
        return
    c = out.get("cost_usd")
    if isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c >= 0:
        cost = float(c)

    want, got = norm_severity(exp.get("severity")), norm_severity(out.get("severity"))
    s.check("severity", want, got, got is not None and got == want)
    if got is None:
        s.fail("output.incomplete", "harness_output.severity is missing or not sev1-4|noise")
    elif want is not None:
        step = abs(RANK[want] - RANK[got])
        if step == 0:
            s.breakdown["severity"] = 1.0
        elif step == 1:
            s.breakdown["severity"] = 0.5
            s.fail("severity.off_by_one", "answered %s, expected %s" % (got, want))
        else:
            s.fail("severity.wrong", "answered %s, expected %s" % (got, want))

    owner = out.get("owner")
    if not isinstance(owner, str) or not owner.strip():
        s.check("owner", norm_slug(exp.get("owner")), None, False)
        s.fail("output.incomplete", "harness_output.owner is missing")
    else:
        accepted = [norm_slug(exp.get("owner"))] + [norm_slug(a) for a in exp.get("owner_aliases", []) or [] if isinstance(a, str)]
        s.check("owner", accepted[0] if len(accepted) == 1 else accepted, norm_slug(owner),
                norm_slug(owner) in accepted)
        if norm_slug(owner) in accepted:
            s.breakdown["owner"] = 1.0
        else:
            s.fail("owner.wrong", "routed to %s, owned by %s" % (owner.strip()[:60], exp.get("owner")))

    kws = out.get("root_cause_keywords")
    if not isinstance(kws, list) or not any(isinstance(k, str) for k in kws):
        s.fail("output.incomplete", "harness_output.root_cause_keywords is missing or empty")
    else:
        cap = exp.get("max_keywords", 8)
        cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else 8
        hay = norm_text(" | ".join([k for k in kws if isinstance(k, str)][:cap]))
        groups = []
        for g in exp.get("cause_keywords", []) or []:
            syn = [g] if isinstance(g, str) else [x for x in g if isinstance(x, str)] if isinstance(g, list) else []
            if syn:
                groups.append(syn)
        hit = [g for g in groups if any(norm_text(p) in hay for p in g)]
        recall = len(hit) / len(groups) if groups else 1.0
        s.check("root_causes_found", [g[0] for g in groups], [g[0] for g in hit], recall >= 1.0)
        s.breakdown["cause_recall"] = recall
        missed = ", ".join(g[0] for g in groups if g not in hit)
        if recall < 0.5:
            s.fail("cause.missed", "recall %.2f; missed: %s" % (recall, missed))
        elif recall < 1.0:
            s.fail("cause.partial", "recall %.2f; missed: %s" % (recall, missed))
    s.emit(cost)


if __name__ == "__main__":
    main()
