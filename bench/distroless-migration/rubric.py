"""Rubric for distroless-migration: score one proposed Dockerfile.

Input (stdin, docs/formats.md#benchscore):
  {"case": {...}, "expected": {...}, "harness_output": {...}, "case_dir": "case"}
Output (stdout): exactly one BenchScore JSON object; exit status 0.

The system under test is given a service's Dockerfile (case/input/Dockerfile) and
answers with a decision ("migrate" or "decline"), the proposed Dockerfile, and the
result of building it (build.status "succeeded" | "failed").

`expected` (from case.yaml) holds the ground truth:
  decision             "migrate" (default) or "decline" (the service needs a shell or
                       package manager at run time, so distroless is the wrong target)
  base_families        distroless variants that can run the artifact, without the
                       -debianNN suffix (static, base, cc, java17, python3, nodejs20...)
  artifacts            paths the final stage must contain (copied from a build stage)
  exposed_ports        ports the service serves; the original Dockerfile's EXPOSE
                       ports are added to these
  entrypoint_mentions  a string one element of ENTRYPOINT + CMD must contain
  require_digest_pin   optional: the final base should be pinned by @sha256 (info only)
  decline_reason       for a "decline" case: why distroless is wrong (quoted in details)

Checks on the final stage of the proposed Dockerfile, as breakdown values in [0, 1]:
  base_image 0.20  FROM gcr.io/distroless/<family>; 0.5 for a distroless variant that
                   cannot run the artifact (base.wrong_variant); 0 otherwise
  no_shell   0.15  no RUN or SHELL instruction and no :debug tag (distroless has no shell)
  nonroot    0.15  USER nonroot / 65532, or a :nonroot tag without a later USER
  entrypoint 0.15  ENTRYPOINT and CMD in exec (JSON) form, not through /bin/sh, naming
                   the artifact; 0.5 when exec form but wrong target (e.g. CMD ["node",
                   ...] on a nodejs base, whose entrypoint already is node)
  ports      0.10  share of the expected ports still EXPOSEd (port.lost is a warning)
  artifacts  0.15  share of the expected artifacts copied into the final stage, and at
                   least one COPY --from a build stage
  build      0.10  1 when the proposed Dockerfile built
Declining a case whose right answer is "decline" scores 1 on every key; migrating it
anyway, or declining a migratable service, scores 0 (decline.missed / .unwarranted).

passed = score >= 0.80 and no failure mode of severity "block".
`checks` lists what was compared, each under one name with the expected and the actual
value: decision, build_status, base_image, shell_in_final_stage, final_user, entrypoint,
exposed_ports and artifacts (those the answer reached).
Missing or mistyped fields give output.incomplete, never a crash. Deterministic.
"""

import json
import math
import os
import re
import sys

WEIGHTS = {
    "base_image": 0.20,
    "no_shell": 0.15,
    "nonroot": 0.15,
    "entrypoint": 0.15,
    "ports": 0.10,
    "artifacts": 0.15,
    "build": 0.10,
}
PASS_THRESHOLD = 0.80
SEVERITY = {
    "base.not_distroless": "block",
    "base.wrong_variant": "block",
    "base.unpinned": "info",
    "shell.in_final_stage": "block",
    "user.root": "block",
    "entrypoint.shell_form": "block",
    "entrypoint.wrong": "block",
    "port.lost": "warn",
    "artifact.missing": "block",
    "build.failed": "block",
    "decline.missed": "block",
    "decline.unwarranted": "block",
    "output.incomplete": "block",
}
SHELLS = {"sh", "bash", "ash", "dash", "zsh", "busybox"}
INTERPRETERS = {"node", "nodejs", "python", "python3", "java"}

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


def str_list(v):
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def parse_dockerfile(src):
    """Stages of a Dockerfile: [{"image", "name", "instrs": [(KEYWORD, args)]}]."""
    logical, buf = [], ""
    for raw in src.splitlines():
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if buf and line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append((buf + line).strip())
        buf = ""
    if buf.strip():
        logical.append(buf.strip())
    stages = []
    for line in logical:
        parts = line.split(None, 1)
        kw, args = parts[0].upper(), (parts[1] if len(parts) > 1 else "")
        if kw == "FROM":
            toks = [t for t in args.split() if not t.startswith("--")]
            image = toks[0] if toks else ""
            name = toks[2].lower() if len(toks) >= 3 and toks[1].lower() == "as" else None
            stages.append({"image": image, "name": name, "instrs": []})
        elif stages:
            stages[-1]["instrs"].append((kw, args))
    return stages


def exec_form(args):
    try:
        v = json.loads(args)
    except ValueError:
        return None
    return v if isinstance(v, list) and all(isinstance(x, str) for x in v) else None


def ports_of(stage):
    ports = set()
    for kw, args in stage["instrs"] if stage else []:
        if kw == "EXPOSE":
            for tok in args.split():
                m = re.match(r"(\d+)(/tcp)?$", tok)
                if m:
                    ports.add(int(m.group(1)))
                elif re.match(r"\d+/udp$", tok):
                    ports.add(tok)
    return ports


def copy_dest(args):
    """(from_stage_or_None, [sources], dest) of a COPY/ADD instruction."""
    frm = None
    toks = args.split()
    flags = [t for t in toks if t.startswith("--")]
    for f in flags:
        if f.startswith("--from="):
            frm = f[len("--from="):].lower()
    rest = args
    for f in flags:
        rest = rest.replace(f, "", 1)
    ef = exec_form(rest.strip())
    paths = ef if ef is not None else rest.split()
    if len(paths) < 2:
        return frm, [], None
    return frm, paths[:-1], paths[-1]


def has_artifact(copies, path):
    for _, srcs, dest in copies:
        if dest is None:
            continue
        d = dest.rstrip("/") or "/"
        if d == path.rstrip("/"):
            return True
        if path.startswith(d + "/") or d == "/":
            rel = path[len(d):].lstrip("/")
            if any(os.path.basename(s.rstrip("/")) == rel.split("/")[0] for s in srcs):
                return True
            # a mirrored directory copy (COPY --from=build /app /app) brings everything under it
            if any(s.rstrip("/") == d for s in srcs):
                return True
            if dest.endswith("/") and "/" not in rel and any(os.path.basename(s) == rel for s in srcs):
                return True
    return False


def read_input(case_dir, name):
    if not isinstance(case_dir, str) or ".." in case_dir.split("/") or case_dir.startswith("/"):
        return None
    try:
        with open(os.path.join(case_dir, "input", name), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def score_migration(s, exp, out, case_dir):
    build = out.get("build")
    status = build.get("status") if isinstance(build, dict) else None
    s.check("build_status", "succeeded", status, status == "succeeded")
    if status == "succeeded":
        s.breakdown["build"] = 1.0
    elif isinstance(status, str):
        log = build.get("log") if isinstance(build.get("log"), str) else ""
        s.fail("build.failed", "build %s: %s" % (status, log.strip().splitlines()[-1] if log.strip() else "no log"))
    else:
        s.fail("output.incomplete", "harness_output.build.status is missing")

    src = out.get("dockerfile")
    stages = parse_dockerfile(src) if isinstance(src, str) else []
    if not stages:
        s.fail("output.incomplete", "harness_output.dockerfile is missing or has no FROM")
        return
    final = stages[-1]
    names = {st["name"]: st for st in stages[:-1] if st["name"]}

    # follow FROM <stage> chains to the real base image
    image, seen = final["image"], set()
    while image.lower() in names and image.lower() not in seen:
        seen.add(image.lower())
        image = names[image.lower()]["image"]
    m = re.match(r"^gcr\.io/distroless/([a-z0-9.-]+?)(-debian\d+)?(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$", image)
    tag = (m.group(3) or ":latest")[1:] if m else ""
    allowed = str_list(exp.get("base_families"))
    s.check("base_image", ["gcr.io/distroless/" + f for f in allowed] or "gcr.io/distroless/*", image,
            bool(m) and (not allowed or m.group(1) in allowed))
    if not m:
        s.fail("base.not_distroless", "final stage runs on %s" % (image or "nothing"))
    else:
        family = m.group(1)
        allowed = str_list(exp.get("base_families"))
        if allowed and family not in allowed:
            s.breakdown["base_image"] = 0.5
            s.fail("base.wrong_variant", "distroless/%s cannot run this artifact; use %s" % (family, " or ".join(allowed)))
        else:
            s.breakdown["base_image"] = 1.0
        if exp.get("require_digest_pin") is True and not m.group(4):
            s.fail("base.unpinned", "%s is not pinned by @sha256 digest" % image)

    instrs = final["instrs"]
    shelly = [kw for kw, _ in instrs if kw in ("RUN", "SHELL")]
    s.check("shell_in_final_stage", [], sorted(set(shelly)) + ([":" + tag] if "debug" in tag else []),
            not shelly and "debug" not in tag)
    if shelly:
        s.fail("shell.in_final_stage", "final stage has %s; distroless has no /bin/sh" % ", ".join(sorted(set(shelly))))
    elif "debug" in tag:
        s.fail("shell.in_final_stage", "the :%s tag ships a busybox shell" % tag)
    else:
        s.breakdown["no_shell"] = 1.0

    users = [args.strip() for kw, args in instrs if kw == "USER"]
    user = users[-1] if users else None
    if user is None:
        ok = "nonroot" in tag
    else:
        ok = user.split(":")[0] in ("nonroot", "65532")
    s.check("final_user", "nonroot", user if user is not None else "(none, tag :%s)" % tag, ok)
    if ok:
        s.breakdown["nonroot"] = 1.0
    else:
        s.fail("user.root", "final stage runs as %s" % (user or ("root (no USER, tag :%s)" % tag if tag else "root (no USER)")))

    ep = [args for kw, args in instrs if kw == "ENTRYPOINT"]
    cmd = [args for kw, args in instrs if kw == "CMD"]
    forms = [(kw, a, exec_form(a)) for kw, a in (("ENTRYPOINT", ep[-1] if ep else None), ("CMD", cmd[-1] if cmd else None)) if a is not None]
    argv = []
    shell_form = None
    for kw, a, ef in forms:
        if ef is None:
            shell_form = "%s %s is shell form" % (kw, a[:60])
        else:
            if ef and os.path.basename(ef[0]) in SHELLS:
                shell_form = "%s runs through %s" % (kw, ef[0])
            argv += ef
    if shell_form:
        s.fail("entrypoint.shell_form", shell_form)
    elif not forms:
        s.fail("entrypoint.wrong", "final stage has neither ENTRYPOINT nor CMD")
    else:
        want = exp.get("entrypoint_mentions")
        family = m.group(1) if m else ""
        if not ep and cmd and argv and os.path.basename(argv[0]) in INTERPRETERS and \
                re.match(r"(java|python|nodejs)", family):
            s.breakdown["entrypoint"] = 0.5
            s.fail("entrypoint.wrong", "distroless/%s already runs %s; CMD %s would run it twice" % (family, argv[0], json.dumps(argv)[:80]))
        elif isinstance(want, str) and not any(want in a for a in argv):
            s.breakdown["entrypoint"] = 0.5
            s.fail("entrypoint.wrong", "ENTRYPOINT/CMD %s does not run %s" % (json.dumps(argv)[:80], want))
        else:
            s.breakdown["entrypoint"] = 1.0
    want_ep = exp.get("entrypoint_mentions")
    s.check("entrypoint", "exec form running %s once" % want_ep if isinstance(want_ep, str) else "exec form",
            shell_form or argv or None, s.breakdown["entrypoint"] == 1.0)

    want_ports = set(p for p in exp.get("exposed_ports", []) if isinstance(p, int) and not isinstance(p, bool)) \
        if isinstance(exp.get("exposed_ports"), list) else set()
    original = read_input(case_dir, "Dockerfile")
    if original:
        ostages = parse_dockerfile(original)
        want_ports |= ports_of(ostages[-1] if ostages else None)
    have = ports_of(final)
    s.check("exposed_ports", sorted(want_ports, key=str), sorted(have, key=str), want_ports <= have)
    if want_ports:
        kept = [p for p in want_ports if p in have]
        s.breakdown["ports"] = len(kept) / len(want_ports)
        lost = sorted(str(p) for p in want_ports if p not in have)
        if lost:
            s.fail("port.lost", "no longer EXPOSEd: %s" % ", ".join(lost))
    else:
        s.breakdown["ports"] = 1.0

    copies = [copy_dest(args) for kw, args in instrs if kw in ("COPY", "ADD")]
    artifacts = str_list(exp.get("artifacts"))
    found = [a for a in artifacts if has_artifact(copies, a)]
    share = len(found) / len(artifacts) if artifacts else 1.0
    s.check("artifacts", artifacts, found, share >= 1.0 and any(frm for frm, _, _ in copies))
    if share < 1.0:
        s.fail("artifact.missing", "final stage lacks %s" % ", ".join(a for a in artifacts if a not in found))
    if not any(frm for frm, _, _ in copies):
        share = 0.0
        s.fail("artifact.missing", "final stage copies nothing from a build stage")
    s.breakdown["artifacts"] = share


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

    want = exp.get("decision", "migrate")
    got = out.get("decision")
    if got is None and isinstance(out.get("dockerfile"), str):
        got = "migrate"
    s.check("decision", want, got, got == want)
    if got not in ("migrate", "decline"):
        s.fail("output.incomplete", "harness_output.decision is missing or not migrate|decline")
    elif want == "decline" and got == "decline":
        s.breakdown = {k: 1.0 for k in WEIGHTS}
    elif want == "decline":
        s.fail("decline.missed", "the right answer is to decline (%s); migrated anyway"
               % exp.get("decline_reason", "see case"))
    elif got == "decline":
        reason = out.get("reason") if isinstance(out.get("reason"), str) else "no reason"
        s.fail("decline.unwarranted", "the service runs fine on distroless; declined: %s" % reason[:120])
    else:
        score_migration(s, exp, out, doc.get("case_dir", "case"))
    s.emit(cost)


if __name__ == "__main__":
    main()
