#!/usr/bin/env bash
# The demo bench (bench/) is well formed and its rubrics really score.
#
# For every task class and case: the files follow docs/formats.md, format v2 (registration,
# case.yaml keys, names, digests.yaml's task-class pin = the task-class digest of
# docs/formats.md#digests, cassette_digest = BLAKE3 of cassette.json, pins = its case digest,
# case.yaml included, provenance.yaml excluded, computed here independently);
# expected/expected.json equals case.yaml's `expected` map (this bench writes each expected
# value as one line of JSON flow); the rubric, run as the runner runs it
# (docs/runner.md#how-one-case-runs: scrubbed env, `python3 -s`, a fresh cwd holding a
# read-only case/), exits 0 with exactly one strictly valid BenchScore whose codes are in the
# taxonomy, twice byte-identical; and the outcome (passed, score, codes) equals the curated
# table below. Then every taxonomy code must be exercised, each class must hold passes,
# failures, partial scores and negative cases, and every rubric must survive hostile stdin
# without crashing.
set -euo pipefail
BD_SOURCE_DIR=${BD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export BD_SOURCE_DIR
for tool in b3sum /usr/bin/python3 python3; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is required (scripts/setup installs it)"; exit 1; }
done
exec python3 - <<'PY'
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

SRC = os.environ["BD_SOURCE_DIR"]
BENCH = os.path.join(SRC, "bench")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
HEX_DIGEST = re.compile(r"^blake3:[0-9a-f]{64}$")
TIMESTAMP = re.compile(r'^"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"$')
BANNED = re.compile(r"confidence|llm|self_reported|model_says", re.I)
RUBRIC_ENV = ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONHASHSEED=0", "PYTHONIOENCODING=utf-8"]
BENCHSCORE_KEYS = {"passed", "score", "breakdown", "failure_modes", "cost_usd", "wall_clock_ms"}
# each rubric's documented pass threshold: passed == score >= threshold and no block
THRESHOLD = {"vuln-remediation": 0.75, "distroless-migration": 0.80, "incident-triage": 0.75}
PASS, FAIL = True, False

# The curated outcome of every demo case: (passed, score, failure-mode codes sorted).
TABLE = {
    "vuln-remediation": {
        "ghsa-demo-0001-axios-csrf-token-leak": (PASS, 1.0, []),
        "ghsa-demo-0002-lodash-prototype-pollution": (PASS, 1.0, ["cost.over_budget"]),
        "ghsa-demo-0003-jackson-databind-deep-nesting": (PASS, 1.0, []),
        "ghsa-demo-0004-pyyaml-full-load-rce": (PASS, 0.95, ["diff.too_broad"]),
        "ghsa-demo-0005-requests-proxy-auth-leak": (FAIL, 0.75, ["validator.failed"]),
        "ghsa-demo-0006-log4j-core-jndi-lookup": (PASS, 1.0, []),
        "ghsa-demo-0007-follow-redirects-header-leak": (FAIL, 0.6, ["cve.not_removed", "recipe.wrong"]),
        "ghsa-demo-0008-urllib3-cookie-redirect": (FAIL, 0.775, ["recipe.wrong"]),
        "ghsa-demo-0009-xmldom-no-fixed-release": (PASS, 1.0, []),
        "ghsa-demo-0010-spring-web-java11-pin": (FAIL, 0.0, ["decline.missed", "validator.failed"]),
        "ghsa-demo-0011-protobufjs-prototype-pollution": (PASS, 1.0, []),
        "ghsa-demo-0012-tar-path-traversal": (FAIL, 0.9, ["diff.not_applicable"]),
        "ghsa-demo-0013-netty-http-request-smuggling": (FAIL, 0.65, ["cve.introduced"]),
        "ghsa-demo-0014-node-fetch-header-forwarding": (FAIL, 0.1, ["decline.unwarranted"]),
        "ghsa-demo-0015-ws-redos": (FAIL, 0.75, ["output.incomplete"]),
        "ghsa-demo-0016-django-sql-injection": (PASS, 1.0, []),
        "ghsa-demo-0017-guava-temp-dir": (PASS, 1.0, []),
        "ghsa-demo-0018-semver-redos": (PASS, 1.0, []),
    },
    "distroless-migration": {
        "go-auth-proxy-healthcheck": (FAIL, 0.0, ["decline.unwarranted"]),
        "go-ledger-sync-alpine": (FAIL, 0.35, ["base.not_distroless", "entrypoint.shell_form", "shell.in_final_stage", "user.root"]),
        "go-notifier-migrations": (FAIL, 0.675, ["artifact.missing", "build.failed", "shell.in_final_stage"]),
        "go-orders-api-static": (PASS, 1.0, []),
        "go-rates-grpc-pinned": (PASS, 1.0, []),
        "go-reconciler-cronjob": (PASS, 1.0, []),
        "java-inventory-spring-boot": (PASS, 1.0, []),
        "java-metrics-exporter-no-build": (FAIL, 0.9, ["output.incomplete"]),
        "kotlin-ktor-billing-shadowjar": (FAIL, 0.9, ["build.failed"]),
        "node-checkout-metrics-port": (PASS, 0.95, ["port.lost"]),
        "node-express-catalog": (PASS, 1.0, []),
        "node-graphql-gateway-double-node": (FAIL, 0.925, ["entrypoint.wrong"]),
        "php-fpm-supervisord-decline": (PASS, 1.0, []),
        "python-fastapi-uvicorn": (PASS, 1.0, []),
        "python-flask-gunicorn-venv": (PASS, 1.0, ["base.unpinned"]),
        "python-pdf-renderer-wkhtmltopdf": (FAIL, 0.0, ["decline.missed"]),
        "rust-image-resizer-glibc": (FAIL, 0.9, ["base.wrong_variant"]),
    },
    "incident-triage": {
        "auth-latency-jwks-fetch": (PASS, 1.0, []),
        "checkout-5xx-after-deploy": (PASS, 1.0, []),
        "coredns-oom-cluster-dns": (FAIL, 0.65, ["severity.wrong"]),
        "es-logs-cluster-red-watermark": (PASS, 1.0, []),
        "events-ingest-s3-slowdown": (PASS, 1.0, []),
        "k8s-node-disk-pressure": (PASS, 0.8833, ["cause.partial"]),
        "kafka-consumer-lag-rebalance": (PASS, 0.825, ["severity.off_by_one"]),
        "ledger-writer-truncated-answer": (FAIL, 0.35, ["output.incomplete"]),
        "orders-db-failover-maintenance": (FAIL, 0.475, ["cause.partial", "severity.wrong"]),
        "payments-db-pool-exhausted": (PASS, 1.0, []),
        "search-api-oomkilled-leak": (FAIL, 0.65, ["cause.missed"]),
        "session-cache-evictions": (PASS, 1.0, []),
        "synthetic-probe-flap-single-region": (PASS, 1.0, []),
        "tls-cert-expired-ingress": (FAIL, 0.7, ["owner.wrong"]),
    }
}

problems = []


def bad(msg):
    problems.append(msg)
    print("FAIL: " + msg)


def b3_file(path):
    r = subprocess.run(["b3sum", "--no-names", path], capture_output=True, text=True, check=True)
    return "blake3:" + r.stdout.strip()


def b3_bytes(data):
    r = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True, check=True)
    return "blake3:" + r.stdout.decode().strip()


def case_digest(d):
    """docs/formats.md#digests: BLAKE3 over the case dir's files except the top-level provenance.yaml."""
    entries = []
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                bad("%s: not a regular file or directory (case.unsupported_entry)" % p)
                continue
            rel = os.path.relpath(p, d).replace(os.sep, "/")
            if rel == "provenance.yaml":
                continue
            entries.append((rel.encode(), p, st))
    stream = bytearray(b"benchdesk-case-v2\n")
    for rel, p, st in sorted(entries):
        with open(p, "rb") as f:
            data = f.read()
        t = b"x" if st.st_mode & 0o111 else b"f"
        stream += t + b"\0" + rel + b"\0" + str(len(data)).encode() + b"\0" + data
    return b3_bytes(bytes(stream))


def task_class_digest(tc_dir):
    """docs/formats.md#digests: BLAKE3 over registration.yaml and rubric.py, under their own header."""
    stream = bytearray(b"benchdesk-task-class-v2\n")
    for rel in ("registration.yaml", "rubric.py"):
        p = os.path.join(tc_dir, rel)
        st = os.lstat(p)
        with open(p, "rb") as f:
            data = f.read()
        t = b"x" if st.st_mode & 0o111 else b"f"
        stream += t + b"\0" + rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data
    return b3_bytes(bytes(stream))


def top_level(path):
    """Top-level keys of a YAML file this bench writes: {key: (value, [indented lines])}."""
    out = {}
    cur = None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] != " ":
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?$", line)
            if not m:
                bad("%s:%d: not a `key: value` line" % (path, n))
                continue
            if m.group(1) in out:
                bad("%s:%d: duplicate key %s" % (path, n, m.group(1)))
            cur = m.group(1)
            out[cur] = ((m.group(2) or "").strip(), [])
        elif cur is None:
            bad("%s:%d: indented line before any key" % (path, n))
        else:
            out[cur][1].append(line)
    return out


def flow_map(s):
    """A one-line flow mapping of plain scalars: {a: 1, b: x}."""
    m = re.match(r"^\{(.*)\}$", s.strip())
    if not m:
        return None
    out = {}
    for part in [p for p in m.group(1).split(",") if p.strip()]:
        k, _, v = part.partition(":")
        out[k.strip()] = v.strip()
    return out


def flow_list(s):
    m = re.match(r"^\[(.*)\]$", s.strip())
    return [x.strip() for x in m.group(1).split(",") if x.strip()] if m else None


def load_registration(tc):
    path = os.path.join(BENCH, tc, "registration.yaml")
    top = top_level(path)
    want = ["schema_version", "name", "description", "current_tier", "min_cases_for_promotion",
            "promotion_threshold", "breakdown_keys", "failure_modes", "rubric", "sut"]
    if sorted(top) != sorted(want):
        bad("%s: keys %s, want %s" % (path, sorted(top), sorted(want)))
    g = lambda k: top.get(k, ("", []))[0]
    if g("schema_version") != "2":
        bad("%s: schema_version must be 2" % path)
    if g("name") != tc:
        bad("%s: name %r must equal the directory name" % (path, g("name")))
    if g("current_tier") not in ("bronze", "silver", "gold"):
        bad("%s: current_tier %r" % (path, g("current_tier")))
    if flow_map(g("min_cases_for_promotion")) != {"bronze": "10", "silver": "30", "gold": "100"}:
        bad("%s: min_cases_for_promotion" % path)
    if flow_map(g("promotion_threshold")) != {"silver": "0.80", "gold": "0.90"}:
        bad("%s: promotion_threshold" % path)
    keys = flow_list(g("breakdown_keys")) or []
    if not keys or len(set(keys)) != len(keys):
        bad("%s: breakdown_keys" % path)
    taxonomy = {}
    for line in top.get("failure_modes", ("", []))[1]:
        m = re.match(r'^  - \{code: ([a-z0-9_]+\.[a-z0-9_.]+), severity: (block|warn|info), description: "([^"]+)"\}$', line)
        if not m or m.group(1) in taxonomy:
            bad("%s: bad or duplicate failure mode line %r" % (path, line))
            continue
        taxonomy[m.group(1)] = m.group(2)
    if not taxonomy:
        bad("%s: empty taxonomy" % path)
    r = flow_map(g("rubric")) or {}
    if r != {"wall_clock_seconds": "30", "memory_mb": "512"}:
        bad("%s: rubric limits %r" % (path, r))
    # {kind: cassette}, or an offline command SUT written as a block (docs/recording.md)
    sut_lines = top.get("sut", ("", []))[1]
    if flow_map(g("sut")) != {"kind": "cassette"} and not (
            g("sut") == "" and "  kind: command" in sut_lines and "  network: false" in sut_lines):
        bad("%s: sut must be {kind: cassette} or an offline command" % path)
    return keys, taxonomy, int(flow_map(g("min_cases_for_promotion") or "{}").get("bronze", "0") or 0)


def check_case(tc, cid, d, pins):
    """The files of one case; returns (disposition, expected map)."""
    path = os.path.join(d, "case.yaml")
    if not NAME_RE.match(cid):
        bad("%s: case id does not match %s" % (d, NAME_RE.pattern))
    for f in ("case.yaml", "cassette.json", "expected/expected.json"):
        if not os.path.isfile(os.path.join(d, f)) or os.path.islink(os.path.join(d, f)):
            bad("%s: missing %s" % (d, f))
            return None, None
    if not os.path.isdir(os.path.join(d, "input")) or not os.listdir(os.path.join(d, "input")):
        bad("%s: input/ is missing or empty" % d)
    if os.path.getsize(path) > 8192:
        bad("%s: larger than 8 KiB" % path)
    top = top_level(path)
    required = ["schema_version", "case_id", "title", "disposition", "difficulty", "origin", "expected",
                "cassette_digest"]
    for k in top:
        if k not in required + ["rubric_limits"]:
            bad("%s: unknown key %s (case.schema_invalid)" % (path, k))
    for k in required:
        if k not in top:
            bad("%s: missing key %s" % (path, k))
            return None, None
    g = lambda k: top[k][0].strip('"')
    if g("schema_version") != "2":
        bad("%s: schema_version" % path)
    if g("case_id") != cid:
        bad("%s: case_id %r must equal the directory name" % (path, g("case_id")))
    try:
        title = json.loads(top["title"][0])
        if not isinstance(title, str) or not title.strip():
            raise ValueError
    except ValueError:
        bad("%s: title must be a non-empty quoted string" % path)
    disp = g("disposition")
    if disp not in ("positive", "negative", "ambiguous"):
        bad("%s: disposition %r" % (path, disp))
    if g("difficulty") not in ("easy", "medium", "hard"):
        bad("%s: difficulty %r" % (path, g("difficulty")))

    prov = {}
    for line in top["origin"][1]:
        m = re.match(r"^  ([a-z_]+):(?: (.*))?$", line)
        if m:
            prov[m.group(1)] = (m.group(2) or "").strip()
    for k in prov:
        if k not in ("source", "source_ref", "added_at"):
            bad("%s: unknown origin key %s" % (path, k))
    if prov.get("source") not in ("curated", "outcome-ledger-derived", "regression-converted"):
        bad("%s: provenance.source %r" % (path, prov.get("source")))
    m = re.match(r'^\{type: (ghsa|ledger|commit|synthetic), value: ("[^"]+")\}$', prov.get("source_ref", ""))
    if not m:
        bad("%s: provenance.source_ref %r" % (path, prov.get("source_ref")))
    else:
        value = json.loads(m.group(2))
        shapes = {"ghsa": r"^GHSA-demo-\d{4}-\d{4}$", "ledger": r"^ledger:[a-z]{2}-\d{4}-\d{2}-\d{4}$",
                  "commit": r"^[0-9a-f]{40}$", "synthetic": r"^demo-[a-z]+-\d{4}$"}
        # the demo bench carries only obviously synthetic advisory ids, never real ones
        if not re.match(shapes[m.group(1)], value):
            bad("%s: source_ref value %r does not have the demo %s shape" % (path, value, m.group(1)))
    if not TIMESTAMP.match(prov.get("added_at", "")):
        bad("%s: origin.added_at must be a quoted YYYY-MM-DDTHH:MM:SSZ" % path)
    # provenance.yaml (signatures, never hashed): v2 keys only, when present.
    ppath = os.path.join(d, "provenance.yaml")
    if os.path.exists(ppath):
        ptop = top_level(ppath)
        for k in ptop:
            if k not in ("schema_version", "author", "reviewer", "last_validated_at"):
                bad("%s: unknown key %s" % (ppath, k))
        if ptop.get("schema_version", ("", []))[0] != "2":
            bad("%s: schema_version must be 2" % ppath)

    expected = {}
    for line in top["expected"][1]:
        m = re.match(r"^  ([a-z_][a-z0-9_]*): (.+)$", line)
        if not m:
            bad("%s: expected line %r is not `  key: <one-line JSON>`" % (path, line))
            continue
        try:
            expected[m.group(1)] = json.loads(m.group(2))
        except ValueError:
            bad("%s: expected.%s is not one line of JSON flow" % (path, m.group(1)))
    with open(os.path.join(d, "expected", "expected.json"), encoding="utf-8") as f:
        mirror = json.load(f)
    if mirror != expected:
        bad("%s: expected/expected.json differs from case.yaml's expected map" % d)
    if "rubric_limits" in top:
        lim = flow_map(g("rubric_limits")) or {}
        if not lim or any(k not in ("wall_clock_seconds", "memory_mb") for k in lim) or \
                int(lim.get("wall_clock_seconds", 1)) > 300 or int(lim.get("memory_mb", 16)) > 4096:
            bad("%s: rubric_limits %r" % (path, g("rubric_limits")))

    cd = g("cassette_digest")
    if not HEX_DIGEST.match(cd) or cd != b3_file(os.path.join(d, "cassette.json")):
        bad("%s: cassette_digest %s != BLAKE3 of cassette.json" % (path, cd))
    digest = case_digest(d)
    pin = pins.get(cid)
    if "case_digest" in top:
        bad("%s: a v1 case_digest key (format v2 pins live only in digests.yaml)" % path)
    if pin is not None and pin != digest:
        bad("%s: pin %s != digest %s" % (d, pin, digest))
    return disp, expected


def no_dup_pairs(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def refuse_constant(c):
    raise ValueError("non-finite number " + c)


def banned_keys(v):
    if isinstance(v, dict):
        return [k for k in v if BANNED.search(k)] + [b for x in v.values() for b in banned_keys(x)]
    if isinstance(v, list):
        return [b for x in v for b in banned_keys(x)]
    return []


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


CHECK_NAME = re.compile(r"^[a-z0-9_]{1,128}$")


def valid_checks(label, checks):
    """What the rubric compared (docs/formats.md#what-the-rubric-compared): every demo rubric
    emits it. At most 64 entries {name, expected, actual, passed}, names unique identifiers
    without a banned word, each value at most 4 KiB of canonical JSON."""
    if not isinstance(checks, list) or not checks or len(checks) > 64:
        bad("%s: checks is not a list of 1 to 64 entries: %r" % (label, checks))
        return False
    names = []
    for c in checks:
        if not isinstance(c, dict) or set(c) != {"name", "expected", "actual", "passed"} or \
                not isinstance(c["name"], str) or not CHECK_NAME.match(c["name"]) or \
                BANNED.search(c["name"]) or not isinstance(c["passed"], bool):
            bad("%s: check %r is not {name, expected, actual, passed}" % (label, c))
            return False
        for k in ("expected", "actual"):
            canon = json.dumps(c[k], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            if len(canon.encode("utf-8")) > 4096:
                bad("%s: check %s.%s is over 4 KiB" % (label, c["name"], k))
                return False
        names.append(c["name"])
    if len(names) != len(set(names)):
        bad("%s: a check name repeats: %s" % (label, names))
        return False
    return True


def validate(tc, label, proc, keys, taxonomy, hostile=False):
    """Strict BenchScore validation (docs/formats.md#benchscore); returns it or None."""
    if proc.returncode != 0:
        bad("%s: rubric exited %d: %s" % (label, proc.returncode, proc.stderr[:300]))
        return None
    if proc.stderr:
        bad("%s: rubric wrote to stderr: %s" % (label, proc.stderr[:300]))
    try:
        s = json.loads(proc.stdout.decode("utf-8"), object_pairs_hook=no_dup_pairs, parse_constant=refuse_constant)
    except (ValueError, UnicodeDecodeError) as e:
        bad("%s: stdout is not exactly one JSON document (%s): %r" % (label, e, proc.stdout[:200]))
        return None
    if not isinstance(s, dict) or set(s) - {"checks"} != BENCHSCORE_KEYS:
        bad("%s: BenchScore keys %r" % (label, sorted(s) if isinstance(s, dict) else type(s).__name__))
        return None
    ok = True
    if not isinstance(s["passed"], bool):
        ok = False
    if not number(s["score"]) or not 0.0 <= s["score"] <= 1.0:
        ok = False
    if not number(s["cost_usd"]) or s["cost_usd"] < 0:
        ok = False
    if not isinstance(s["wall_clock_ms"], int) or isinstance(s["wall_clock_ms"], bool) or s["wall_clock_ms"] < 0:
        ok = False
    if not isinstance(s["breakdown"], dict) or not all(number(v) and 0.0 <= v <= 1.0 for v in s["breakdown"].values()):
        ok = False
    if not ok:
        bad("%s: wrong types or ranges: %s" % (label, json.dumps(s)[:300]))
        return None
    for k in s["breakdown"]:
        if k not in keys:
            bad("%s: breakdown key %s is not in breakdown_keys (rubric.unknown_breakdown_key)" % (label, k))
    if not isinstance(s["failure_modes"], list):
        bad("%s: failure_modes is not a list" % label)
        return None
    for fm in s["failure_modes"]:
        if not isinstance(fm, dict) or set(fm) != {"code", "severity", "detail"} or \
                not all(isinstance(fm[k], str) for k in fm):
            bad("%s: failure mode %r is not {code, severity, detail} strings" % (label, fm))
            return None
        if fm["code"] not in taxonomy:
            bad("%s: code %s is not in the taxonomy (rubric.unknown_failure_mode)" % (label, fm["code"]))
        elif fm["severity"] != taxonomy[fm["code"]]:
            bad("%s: %s has severity %s, the taxonomy says %s" % (label, fm["code"], fm["severity"], taxonomy[fm["code"]]))
        if len(fm["detail"]) > 256:
            bad("%s: %s detail longer than 256 characters" % (label, fm["code"]))
    codes = [fm["code"] for fm in s["failure_modes"]]
    if len(codes) != len(set(codes)):
        bad("%s: a code appears twice: %s" % (label, codes))
    if banned_keys({k: v for k, v in s.items() if k != "checks"}):
        bad("%s: banned key names %s" % (label, banned_keys(s)))
    if not (hostile and "checks" not in s) and not valid_checks(label, s.get("checks")):
        return None
    blocked = any(taxonomy.get(c) == "block" for c in codes)
    if not hostile and blocked and all(c["passed"] for c in s["checks"]):
        bad("%s: blocked by %s but every check passed: the reviewer would not see why" % (label, codes))
    if s["passed"] != (s["score"] >= THRESHOLD[tc] and not blocked):
        bad("%s: passed=%s disagrees with score %.4f and codes %s" % (label, s["passed"], s["score"], codes))
    return s


def run_rubric(tc, stdin, case_src):
    """Run the rubric as the runner does: scrubbed env, -s, fresh cwd with a read-only case/."""
    rubric = os.path.join(BENCH, tc, "rubric.py")
    work = tempfile.mkdtemp(prefix="bd-demo-")
    try:
        os.chmod(work, 0o700)
        case = os.path.join(work, "case")
        os.mkdir(case)
        for sub in ("input", "expected"):
            if case_src and os.path.isdir(os.path.join(case_src, sub)):
                shutil.copytree(os.path.join(case_src, sub), os.path.join(case, sub), symlinks=True)
        for root, dirs, files in os.walk(case, topdown=False):
            for n in files:
                os.chmod(os.path.join(root, n), 0o444)
            for n in dirs:
                os.chmod(os.path.join(root, n), 0o555)
        os.chmod(case, 0o555)
        argv = ["/usr/bin/env", "-i"] + RUBRIC_ENV + ["python3", "-s", rubric]
        try:
            return subprocess.run(argv, input=stdin, cwd=work, capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, -9, b"", b"timed out after 30 s")
    finally:
        for root, dirs, files in os.walk(work):
            for n in dirs:
                os.chmod(os.path.join(root, n), 0o700)
        os.chmod(work, 0o700)
        shutil.rmtree(work)


def main():
    classes = sorted(n for n in os.listdir(BENCH) if os.path.isfile(os.path.join(BENCH, n, "registration.yaml")))
    if classes != sorted(TABLE):
        bad("task classes on disk %s != table %s" % (classes, sorted(TABLE)))
    signers = top_level(os.path.join(BENCH, "trusted-signers.yaml"))
    if sorted(signers) != ["schema_version", "signers"] or signers["schema_version"][0] != "1":
        bad("trusted-signers.yaml: want schema_version: 1 and signers")
    size = 0
    for root, dirs, files in os.walk(BENCH):
        dirs[:] = [n for n in dirs if not n.startswith(".")]  # local state is not the bench
        for n in files:
            size += os.lstat(os.path.join(root, n)).st_size
    if size >= 1 << 20:
        bad("the demo bench holds %d bytes; keep it well under 1 MiB" % size)

    total = runs = 0
    for tc in classes:
        if not NAME_RE.match(tc):
            bad("task class name %r" % tc)
        keys, taxonomy, min_bronze = load_registration(tc)
        dig = top_level(os.path.join(BENCH, tc, "cases", "digests.yaml"))
        if sorted(dig) != ["cases", "schema_version", "task_class"] or dig["schema_version"][0] != "2":
            bad("%s/cases/digests.yaml: want schema_version (2), task_class, cases" % tc)
        if dig.get("task_class", ("", []))[0] != task_class_digest(os.path.join(BENCH, tc)):
            bad("%s: digests.yaml task_class pin != task-class digest of registration.yaml + "
                "rubric.py (re-pin after editing them)" % tc)
        pins = {}
        cases_v, cases_l = dig.get("cases", ("", []))
        if cases_v not in ("", "{}"):
            bad("%s: digests.yaml cases: %r" % (tc, cases_v))
        for line in cases_l:
            m = re.match(r'^  "?([a-z0-9][a-z0-9._-]*)"?: "?(blake3:[0-9a-f]{64})"?$', line)
            if not m:
                bad("%s: digests.yaml pin line %r" % (tc, line))
            else:
                pins[m.group(1)] = m.group(2)
        cases_dir = os.path.join(BENCH, tc, "cases")
        ids = sorted(n for n in os.listdir(cases_dir) if n != "digests.yaml")
        for p in pins:
            if p not in ids:
                bad("%s: digests.yaml pins %s, which has no case dir" % (tc, p))
        table = TABLE.get(tc, {})
        if ids != sorted(table):
            bad("%s: cases on disk and in the table differ: %s" % (tc, sorted(set(ids) ^ set(table))))
        seen, outcomes, negatives = set(), [], 0
        for cid in ids:
            d = os.path.join(cases_dir, cid)
            if os.path.islink(d) or not os.path.isdir(d):
                bad("%s: not a directory" % d)
                continue
            disp, expected = check_case(tc, cid, d, pins)
            if expected is None:
                continue
            total += 1
            negatives += disp == "negative"
            with open(os.path.join(d, "cassette.json"), "rb") as f:
                cassette = json.loads(f.read().decode("utf-8"))
            if not isinstance(cassette, dict):
                bad("%s: cassette.json is not a JSON object" % d)
            doc = json.dumps({"case": {"case_id": cid, "disposition": disp}, "expected": expected,
                              "harness_output": cassette, "case_dir": "case"}).encode()
            label = "%s/%s" % (tc, cid)
            first = run_rubric(tc, doc, d)
            second = run_rubric(tc, doc, d)
            runs += 2
            s = validate(tc, label, first, keys, taxonomy)
            if s is None:
                continue
            if first.stdout != second.stdout:
                bad("%s: two runs differ; the rubric is not deterministic" % label)
            codes = sorted(fm["code"] for fm in s["failure_modes"])
            seen.update(codes)
            outcomes.append((s["passed"], s["score"]))
            want = table.get(cid)
            if want is not None and (s["passed"] != want[0] or abs(s["score"] - want[1]) > 1e-4 or codes != sorted(want[2])):
                bad("%s: got (%s, %.4f, %s), the table says (%s, %.4f, %s)"
                    % (label, s["passed"], s["score"], codes, want[0], want[1], sorted(want[2])))
        for code in sorted(set(taxonomy) - seen):
            bad("%s: failure mode %s is never exercised by a case" % (tc, code))
        if len(ids) < min_bronze:
            bad("%s: %d cases, fewer than min_cases_for_promotion.bronze" % (tc, len(ids)))
        if not any(p for p, _ in outcomes) or all(p for p, _ in outcomes):
            bad("%s: needs both passing and failing cases" % tc)
        if sum(1 for p, _ in outcomes if p) * 2 <= len(outcomes):
            bad("%s: most cases should pass" % tc)
        if not any(p and 0.0 < sc < 1.0 for p, sc in outcomes) or not any(not p and 0.0 < sc < 1.0 for p, sc in outcomes):
            bad("%s: needs a passing and a failing case with a partial score" % tc)
        if negatives == 0:
            bad("%s: needs a negative case" % tc)

        # hostile or broken input: still one valid BenchScore, exit 0, and never a pass
        sample = os.path.join(cases_dir, ids[0]) if ids else None
        with open(os.path.join(sample, "expected", "expected.json"), encoding="utf-8") as f:
            exp0 = json.load(f)
        with open(os.path.join(sample, "cassette.json"), encoding="utf-8") as f:
            cas0 = json.load(f)
        wrong = {"decision": 5, "recipe_id": 7, "diff": ["x"], "cve_delta": "x", "validator_verdict": 1,
                 "dockerfile": 7, "build": "x", "severity": {}, "owner": [], "root_cause_keywords": "x",
                 "cost_usd": "free"}
        hostile = [b"", b"not json", b"[]", b"\xff\xfe\x00", b'{"expected": 1, "harness_output": 2}',
                   b'{"harness_output": ' + b"[" * 100000 + b"]" * 100000 + b"}"]
        hostile += [json.dumps({"case": {}, "expected": exp0, "harness_output": h, "case_dir": "case"}).encode()
                    for h in (None, [], "text", 42, True, {}, wrong, {"cost_usd": -5},
                              {"diff": "@@ -1 +1 @@\n" * 20000, "dockerfile": "FROM\n" * 20000})]
        tolerant = [json.dumps({"case": {}, "expected": {}, "harness_output": cas0, "case_dir": "case"}).encode(),
                    json.dumps({"case": {}, "expected": exp0, "harness_output": cas0, "case_dir": "../../.."}).encode(),
                    json.dumps({"case": {}, "expected": exp0, "harness_output": cas0}).encode()]
        for i, stdin in enumerate(hostile + tolerant):
            label = "%s/hostile-%d" % (tc, i)
            s = validate(tc, label, run_rubric(tc, stdin, sample), keys, taxonomy, hostile=True)
            runs += 1
            if s is not None and i < len(hostile) and (s["passed"] or not s["failure_modes"]):
                bad("%s: broken input must fail with a failure mode, got %s" % (label, json.dumps(s)[:200]))

    if total < 30:
        bad("only %d cases in the demo bench; want 30 or more" % total)
    if problems:
        print("%d problem(s)" % len(problems))
        sys.exit(1)
    print("ok: %d task classes, %d cases, %d rubric runs" % (len(classes), total, runs))


main()
PY
