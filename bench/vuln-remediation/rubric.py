"""Rubric for vuln-remediation: score one recorded dependency bump.

Input (stdin, docs/formats.md#benchscore):
  {"case": {...}, "expected": {...}, "harness_output": {...}, "case_dir": "case"}
Output (stdout): exactly one BenchScore JSON object; exit status 0.

The system under test is given a manifest (case/input/<manifest>) and an advisory, and
answers with a decision ("bump" or "decline"), the recipe it applied, a unified diff of
the manifest, the advisories it claims the bump removes and introduces (cve_delta), and
its validator's verdict (build + tests).

`expected` (from case.yaml) holds the ground truth:
  decision             "bump" (default) or "decline" (no safe bump exists)
  ecosystem            npm | pypi | maven
  manifest             file name under case/input/ the diff must apply to
  package              the vulnerable package (npm name, PyPI name or Maven artifactId)
  vulnerable_version   the version pinned before the bump
  fixed_in             the lowest version that removes every advisory
  fixed_in_by_advisory optional: {advisory: lowest fixing version} when they differ
  recipe_id            the recipe a curator would apply
  acceptable_recipes   optional: other recipes that are just as right (ambiguous cases)
  advisories           the advisory ids the bump must remove
  cve_delta            expected net change of known advisories (e.g. -1)
  validator_verdict    "pass"
  allowed_files        files the diff may touch (by base name)
  version_property     optional (maven): a <properties> entry that holds the version
  max_cost_usd         optional: budget for the system under test (cost.over_budget warns)
  decline_reason       for a "decline" case: why no bump is safe (quoted in details)

Scoring: a weighted sum of four breakdown values, each in [0, 1]:
  recipe_match 0.30  1 for the expected (or an acceptable) recipe; 0.25 for another
                     recipe of the same package; else 0
  cve_delta    0.35  share of the expected advisories removed; 0 if any advisory is
                     introduced. The claim is not trusted: the version the diff actually
                     writes must reach the advisory's fixed version, or it stays open
  validator    0.25  1 when the validator passed, else 0
  diff_scope   0.10  1 when the diff touches only allowed files and only the package;
                     minus 0.5 per extra file or package (floor 0); 0 when a hunk does
                     not apply to case/input/<manifest>
For a case whose right answer is "decline", declining scores 1 on every key; bumping
anyway scores 0 (decline.missed). Declining a case that has a safe bump scores only
diff_scope (decline.unwarranted).

passed = score >= 0.75 and no failure mode of severity "block".
`checks` lists what was compared, each under one name with the expected and the actual
value: decision, cost_usd (with a budget), recipe_id, diff_applies,
diff_extra_changes, bumped_version, advisories_left_open, advisories_introduced
and validator_verdict (those the answer reached).
Missing or mistyped fields in the system's output give output.incomplete, never a crash.
The rubric reads nothing but stdin and case/input/; it is deterministic.
"""

import json
import math
import os
import re
import sys

WEIGHTS = {"recipe_match": 0.30, "cve_delta": 0.35, "validator": 0.25, "diff_scope": 0.10}
PASS_THRESHOLD = 0.75
SEVERITY = {
    "recipe.wrong": "block",
    "cve.not_removed": "block",
    "cve.introduced": "block",
    "validator.failed": "block",
    "diff.too_broad": "warn",
    "diff.not_applicable": "block",
    "decline.missed": "block",
    "decline.unwarranted": "block",
    "output.incomplete": "block",
    "cost.over_budget": "warn",
}

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


def text(d, key):
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, str) else None


def str_list(v):
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def version_key(v):
    """Order versions like 2.13.4.2, 32.0.0-jre, 1.26.18: numbers numerically."""
    parts = re.findall(r"\d+|[A-Za-z]+", v or "")
    return [(0, int(p)) if p.isdigit() else (-1, p.lower()) for p in parts]


def version_ge(a, b):
    ka, kb = version_key(a), version_key(b)
    n = max(len(ka), len(kb))
    ka += [(0, 0)] * (n - len(ka))
    kb += [(0, 0)] * (n - len(kb))
    return ka >= kb


def norm_pkg(name):
    return re.sub(r"[-_.]+", "-", name.lower())


def parse_diff(diff):
    """Files and hunks of a unified diff: {path: [[(tag, line), ...], ...]}."""
    files, cur, hunk = {}, None, None
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            path = raw[4:].split("\t")[0].strip()
            path = path[2:] if path.startswith(("a/", "b/")) else path
            cur = files.setdefault(path, [])
            hunk = None
        elif raw.startswith("--- ") or raw.startswith("diff ") or raw.startswith("index "):
            continue
        elif raw.startswith("@@"):
            if cur is None:
                continue
            hunk = []
            cur.append(hunk)
        elif hunk is not None and raw[:1] in (" ", "-", "+"):
            hunk.append((raw[0], raw[1:]))
        elif hunk is not None and raw == "":
            hunk.append((" ", ""))
    return files


def hunk_applies(hunk, lines):
    old = [l.rstrip() for tag, l in hunk if tag in (" ", "-")]
    if not old:
        return True
    stripped = [l.rstrip() for l in lines]
    for i in range(len(stripped) - len(old) + 1):
        if stripped[i : i + len(old)] == old:
            return True
    return False


def changed_versions(ecosystem, hunks, exp):
    """{package: (old_version, new_version)} for every package the hunks change."""
    out = {}
    prop = exp.get("version_property") if isinstance(exp.get("version_property"), str) else None
    for hunk in hunks:
        artifact = None
        for tag, line in hunk:
            name = ver = None
            if ecosystem == "npm":
                m = re.match(r'\s*"([^"]+)"\s*:\s*"[\^~>=<\s]*([0-9][^"]*)"', line)
                if m:
                    name, ver = m.group(1), m.group(2)
            elif ecosystem == "pypi":
                m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(==|>=|~=)\s*([0-9][^\s;,#]*)", line)
                if m:
                    name, ver = m.group(1), m.group(4)
            elif ecosystem == "maven":
                m = re.search(r"<artifactId>\s*([^<\s]+)\s*</artifactId>", line)
                if m:
                    artifact = m.group(1)
                m = re.search(r"<version>\s*([^<\s]+)\s*</version>", line)
                if m and artifact:
                    name, ver = artifact, m.group(1)
                if prop:
                    m = re.search(r"<%s>\s*([^<\s]+)\s*</%s>" % (re.escape(prop), re.escape(prop)), line)
                    if m:
                        name, ver = str(exp.get("package", "")), m.group(1)
            if name is None or tag == " ":
                continue
            old, new = out.get(norm_pkg(name), (None, None))
            if tag == "-":
                old = ver
            else:
                new = ver
            out[norm_pkg(name)] = (old, new)
    return {k: v for k, v in out.items() if v[0] != v[1]}


def read_input(case_dir, name):
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        return None
    if not isinstance(case_dir, str) or ".." in case_dir.split("/") or case_dir.startswith("/"):
        return None
    try:
        with open(os.path.join(case_dir, "input", name), encoding="utf-8") as f:
            return f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None


def score_bump(s, exp, out, case_dir):
    pkg = norm_pkg(str(exp.get("package", "")))
    ecosystem = exp.get("ecosystem")
    fixed_in = str(exp.get("fixed_in", ""))
    advisories = str_list(exp.get("advisories"))

    # recipe
    recipe = text(out, "recipe_id")
    good = [exp.get("recipe_id")] + str_list(exp.get("acceptable_recipes"))
    s.check("recipe_id", good[0] if len(good) == 1 else good, recipe, recipe in good)
    if recipe is None:
        s.fail("output.incomplete", "harness_output.recipe_id is missing or not a string")
    elif recipe in good:
        s.breakdown["recipe_match"] = 1.0
    else:
        if norm_pkg(recipe).startswith(pkg + "-"):
            s.breakdown["recipe_match"] = 0.25
        s.fail("recipe.wrong", "applied %s, expected %s" % (recipe, " or ".join(str(g) for g in good)))

    # the diff: does it apply, what does it touch, which version does it write
    diff = text(out, "diff")
    new_version = None
    if diff is None or not diff.strip():
        s.fail("output.incomplete", "harness_output.diff is missing or empty")
    else:
        files = parse_diff(diff)
        if not files:
            s.fail("output.incomplete", "harness_output.diff holds no file hunks")
        allowed = set(str_list(exp.get("allowed_files")))
        extra = sorted(p for p in files if os.path.basename(p) not in allowed)
        changed = {}
        applies = True
        for path, hunks in sorted(files.items()):
            lines = read_input(case_dir, os.path.basename(path))
            if lines is not None:
                for hunk in hunks:
                    if not hunk_applies(hunk, lines):
                        applies = False
                        s.fail("diff.not_applicable", "a hunk for %s does not match input/%s" % (path, os.path.basename(path)))
            changed.update(changed_versions(ecosystem, hunks, exp))
        if pkg in changed:
            new_version = changed[pkg][1]
        extra_pkgs = sorted(p for p in changed if p != pkg)
        n_extra = len(extra) + len(extra_pkgs)
        s.check("diff_applies", True, applies, applies)
        s.check("diff_extra_changes", [], extra + extra_pkgs, n_extra == 0)
        s.breakdown["diff_scope"] = max(0.0, 1.0 - 0.5 * n_extra) if applies else 0.0
        if n_extra:
            s.fail("diff.too_broad", "beyond %s: files %s; packages %s"
                   % (pkg, ", ".join(extra) or "none", ", ".join(extra_pkgs) or "none"))

    # advisories: the claim, checked against the version the diff writes
    delta = out.get("cve_delta")
    if not isinstance(delta, dict) or not isinstance(delta.get("removed"), list):
        s.fail("output.incomplete", "harness_output.cve_delta.removed is missing")
    else:
        claimed = set(str_list(delta.get("removed")))
        introduced = str_list(delta.get("introduced"))
        per = exp.get("fixed_in_by_advisory") if isinstance(exp.get("fixed_in_by_advisory"), dict) else {}
        if new_version is None:
            s.fail("cve.not_removed", "the diff does not bump %s" % pkg)
        still_open = []
        for a in advisories:
            need = per.get(a) if isinstance(per.get(a), str) else fixed_in
            if a not in claimed or new_version is None or not version_ge(new_version, need):
                still_open.append("%s (fixed in %s)" % (a, need))
        share = 1.0 - len(still_open) / len(advisories) if advisories else 1.0
        s.check("bumped_version", ">= " + fixed_in, new_version,
                new_version is not None and version_ge(new_version, fixed_in))
        s.check("advisories_left_open", [], still_open, not still_open)
        s.check("advisories_introduced", [], introduced, not introduced)
        if still_open and new_version is not None:
            s.fail("cve.not_removed", "%s %s leaves open: %s" % (pkg, new_version, ", ".join(still_open)))
        if introduced:
            share = 0.0
            s.fail("cve.introduced", "the bump introduces %s" % ", ".join(introduced[:5]))
        s.breakdown["cve_delta"] = share

    # validator
    verdict = text(out, "validator_verdict")
    s.check("validator_verdict", exp.get("validator_verdict", "pass"), verdict,
            verdict == exp.get("validator_verdict", "pass"))
    if verdict is None:
        s.fail("output.incomplete", "harness_output.validator_verdict is missing")
    elif verdict == exp.get("validator_verdict", "pass"):
        s.breakdown["validator"] = 1.0
    else:
        log = text(out, "validator_log") or ""
        s.fail("validator.failed", "validator said %s: %s" % (verdict, log.splitlines()[0] if log else "no log"))


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
    case_dir = doc.get("case_dir", "case")
    if not isinstance(out, dict):
        s.fail("output.incomplete", "harness_output is not a JSON object")
        s.emit(cost)
        return

    c = out.get("cost_usd")
    if isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c >= 0:
        cost = float(c)
        budget = exp.get("max_cost_usd")
        if isinstance(budget, (int, float)) and not isinstance(budget, bool):
            s.check("cost_usd", "<= %s" % budget, cost, cost <= budget)
        if isinstance(budget, (int, float)) and cost > budget:
            s.fail("cost.over_budget", "spent $%.4f, budget $%.4f" % (cost, budget))

    want = exp.get("decision", "bump")
    got = text(out, "decision")
    if got is None:
        got = "bump" if text(out, "diff") else None
    s.check("decision", want, got, got == want)
    if got not in ("bump", "decline"):
        s.fail("output.incomplete", "harness_output.decision is missing or not bump|decline")
    elif want == "decline" and got == "decline":
        s.breakdown = {k: 1.0 for k in WEIGHTS}
        if (text(out, "diff") or "").strip():
            s.breakdown["diff_scope"] = 0.5
            s.fail("diff.too_broad", "declined but still proposed a diff")
    elif want == "decline":
        s.fail("decline.missed", "no safe bump exists (%s); the system bumped with %s"
               % (exp.get("decline_reason", "see case"), text(out, "recipe_id") or "no recipe"))
        verdict = text(out, "validator_verdict")
        if verdict is not None and verdict != "pass":
            s.fail("validator.failed", "validator said %s" % verdict)
    elif got == "decline":
        s.breakdown["diff_scope"] = 1.0
        s.fail("decline.unwarranted", "%s %s fixes it; the system declined: %s"
               % (exp.get("package"), exp.get("fixed_in"), (text(out, "rationale") or "no rationale")[:120]))
    else:
        score_bump(s, exp, out, case_dir)
    s.emit(cost)


if __name__ == "__main__":
    main()
