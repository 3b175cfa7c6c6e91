#!/usr/bin/env bash
# benchdesk report and run --junit / --stale on real runs of the demo bench
# (docs/formats.md#reports): JUnit XML and the HTML page parsed by Python's XML and HTML
# parsers, Markdown rendered by GitHub's own renderer (cmark-gfm, raw HTML allowed, so
# only our escaping keeps it out) and parsed; the same bytes from two calls and from -o;
# run ids by prefix; a shard run's --junit; --json numbers; CLI tables sized to their
# content; a tampered chain that gives no report; `run --stale` with nothing stale, after
# an edit and after a new case; `help`. Hostile details: test_report_hostile.sh.
. "$(dirname "$0")/lib.sh"
for tool in gpg python3 cmark-gfm; do
    command -v "$tool" >/dev/null ||
        { fail "$tool is required (./scripts/setup --test-deps installs it)"; finish; }
done
root=$(demo_copy)
RUNTMP="$BD_TMP/runtmp"
mkdir -p "$RUNTMP"
bd() { TMPDIR="$RUNTMP" "$BD_BIN" -C "$root" "$@"; }
TC=vuln-remediation
run_id() { basename "$(ls -t "$root/.benchdesk/runs/"*.json | head -1)" .json; }
runit() { bd run "$@" --isolation subprocess >"$BD_TMP/run.out" 2>"$BD_TMP/run.err" || { fail "run $*: $(cat "$BD_TMP/run.err")"; finish; }; run_id; }
records() { cat "$root"/.benchdesk/history/segments/*.jsonl 2>/dev/null | wc -l; }

# ---- usage and an empty history -------------------------------------------------------------
expect 2 report.no_runs -- bd report
expect 2 usage.bad_args -- bd report --format pdf
expect 2 usage.bad_args -- bd report a b
expect 2 usage.bad_args -- bd report --frobnicate
bd report --help | grep -q '^usage: benchdesk report' && pass "report --help" || fail "report --help"

# ---- help CMD is CMD --help ---------------------------------------------------------------------
for c in run report compare history; do
    [ "$(bd help $c)" = "$(bd $c --help)" ] && pass "help $c = $c --help" || fail "help $c differs"
done
[ "$(bd help)" = "$(bd --help)" ] && pass "help = --help" || fail "help alone differs"
bd --help | grep -qE '^  report +a run as JUnit' && pass "--help lists report" || fail "--help: no report"
expect 2 usage.unknown_command -- bd help nosuchcmd
expect 2 usage.bad_args -- bd help run extra

# ---- reports of clean runs ------------------------------------------------------------------------
r1=$(runit $TC)
r2=$(runit $TC --junit "$BD_TMP/run.xml")
grep -q "^  junit  *$BD_TMP/run.xml" "$BD_TMP/run.out" && pass "run --junit says where" || fail "run --junit: $(cat "$BD_TMP/run.out")"
it=$(runit incident-triage) # a report of a run does not change when later runs are recorded
for f in markdown junit html; do
    bd report --format $f >"$BD_TMP/a.$f" && bd report --format $f >"$BD_TMP/b.$f" ||
        fail "report --format $f"
    cmp -s "$BD_TMP/a.$f" "$BD_TMP/b.$f" && pass "$f: two calls give the same bytes" || fail "$f differs between calls"
    bd report --format $f -o "$BD_TMP/o.$f" && cmp -s "$BD_TMP/a.$f" "$BD_TMP/o.$f" &&
        pass "$f: -o FILE holds the same bytes" || fail "$f: -o differs"
done
cmp -s "$BD_TMP/a.markdown" <(bd report) && pass "markdown is the default format" || fail "default format"
bd report "${r2:0:22}" --format junit >"$BD_TMP/r2.xml" || fail "report RUN-PREFIX"
# run --junit adds how the run just done started its rubrics (the history does not say);
# apart from that line it is the report of that run.
grep -Eq '<property name="start_mode" value="(warm|cold)"/>' "$BD_TMP/run.xml" &&
    pass "run --junit names the start mode" || fail "run --junit: no start_mode property"
! grep -q 'start_mode' "$BD_TMP/r2.xml" && pass "report from the chain names no start mode" ||
    fail "report RUN claims a start mode"
cmp -s "$BD_TMP/r2.xml" <(grep -v '<property name="start_mode"' "$BD_TMP/run.xml") &&
    pass "run --junit = report RUN --format junit (but the start mode)" || fail "run --junit differs from report"
expect 2 compare.unknown_run -- bd report nosuchrun
expect 2 compare.ambiguous_run -- bd report 2

python3 - "$BD_TMP/a.junit" "$BD_TMP/r2.xml" "$r2" "$it" "$root" <<'PY' && pass "JUnit: parses; a suite per task class's latest full run; cases, failures, properties" || fail "JUnit checks"
import json, sys, glob, xml.etree.ElementTree as ET
allx, one, r2, it, root = sys.argv[1:]
t = ET.parse(allx).getroot()
assert t.tag == "testsuites", t.tag
suites = t.findall("testsuite")
assert [s.get("name") for s in suites] == ["incident-triage", "vuln-remediation"], [s.get("name") for s in suites]
props = {s.get("name"): {p.get("name"): p.get("value") for p in s.find("properties")} for s in suites}
assert props["vuln-remediation"]["run_id"] == r2 and props["incident-triage"]["run_id"] == it
recs = [json.loads(l) for f in sorted(glob.glob(root + "/.benchdesk/history/segments/*.jsonl")) for l in open(f)]
runrecs = [r for r in recs if r.get("run_id") == r2]
s = ET.parse(one).getroot().find("testsuite")
cases = s.findall("testcase")
assert len(cases) == len(runrecs) == int(s.get("tests")), (len(cases), len(runrecs))
failed = {r["case_id"]: r["score"] for r in runrecs if not r["score"]["passed"]}
assert int(s.get("failures")) == len(failed) > 0
for c in cases:
    assert c.get("classname") == "vuln-remediation"
    f = c.find("failure")
    assert (f is not None) == (c.get("name") in failed), c.get("name")
    if f is not None:
        sc = failed[c.get("name")]
        want = sc["failure_modes"][0]["code"] if sc["failure_modes"] else "failed"
        assert f.get("type") == want, (f.get("type"), want)
        for m in sc["failure_modes"]:
            assert m["code"] in f.text, (m, f.text)
        for k in sc["breakdown"]:
            assert k in f.text
p = {x.get("name"): x.get("value") for x in s.find("properties")}
assert p["isolation_class"] == "subprocess" and p["task_class_digest"] == runrecs[0]["task_class_digest"]
assert len(p["chain_head"]) == 64 and p["run_kind"] == "full"
PY

python3 - "$BD_TMP/a.html" "$r1" "$r2" <<'PY' && pass "HTML: parses; CSP, no script, no link, SVG charts, every case, the comparison and trend" || fail "HTML checks"
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = []; s.text = []; s.attrs = []; s.style = ""; s.cur = None
    def handle_starttag(s, t, a):
        s.tags.append(t); s.attrs.append((t, dict(a))); s.cur = t
    def handle_data(s, d):
        if s.cur == "style": s.style += d
        else: s.text.append(d)
    def handle_endtag(s, t): s.cur = None
p = P(); p.feed(open(sys.argv[1]).read()); text = " ".join(p.text)
assert "script" not in p.tags and "a" not in p.tags and "img" not in p.tags and "link" not in p.tags
csp = [a["content"] for t, a in p.attrs if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
assert csp and "default-src 'none'" in csp[0] and "script-src 'none'" in csp[0], csp
assert p.tags.count("svg") >= 5, p.tags.count("svg")   # 2 runs x (modes, scores, trend)
assert not any(k.startswith("on") for t, a in p.attrs for k in a), "an event attribute"
assert not any(v and ("http" in v or "url(" in v) for t, a in p.attrs for v in a.values() if t not in ("svg",)), "an external resource"
assert "url(" not in p.style and "@import" not in p.style
assert sys.argv[2] in text and sys.argv[3] in text        # trend rows and the comparison
for s in ("Compared with the previous full run", "Trend of the last full runs", "Every case", "Failed cases", "Breakdown means"):
    assert s in text, s
assert text.count("ghsa-demo-00") >= 13
PY

cmark-gfm --unsafe -e table -e autolink -e strikethrough "$BD_TMP/a.markdown" >"$BD_TMP/a.md.html" || fail "cmark-gfm"
grep -q '<table>' "$BD_TMP/a.md.html" && grep -q "$r2" "$BD_TMP/a.md.html" &&
    pass "Markdown renders with tables (cmark-gfm)" || fail "Markdown render: $(head -20 "$BD_TMP/a.md.html")"

# ---- CLI tables: columns sized to the content, never a cut id ------------------------------------
bd history log --limit 40 >"$BD_TMP/log.txt"
bd compare "$r1" "$r2" >"$BD_TMP/cmp.txt"
python3 - "$BD_TMP/log.txt" "$BD_TMP/cmp.txt" <<'PY' && pass "history log and compare: full ids, columns in line" || fail "tables: $(head -5 "$BD_TMP/log.txt"; tail -3 "$BD_TMP/cmp.txt")"
import re, sys
log = open(sys.argv[1]).read().splitlines()
head = log[0]; at = head.index("HASH")
rows = [l for l in log[1:] if re.match(r" *\d+  ", l)]
assert rows and all(re.fullmatch(r"[0-9a-f]{12}", l[at:at + 12]) for l in rows), "HASH column out of line"
assert any("ghsa-demo-0003-jackson-databind-deep-nesting " in l for l in rows), "a case id was cut"
cmp = open(sys.argv[2]).read().splitlines()
i = next(k for k, l in enumerate(cmp) if l.startswith("STATUS"))
at = cmp[i].index(" A ") + 1
rows = cmp[i + 1:]
assert len(rows) == 13, rows
assert all(re.match(r" ?[0-9]\.[0-9]{3} (pass|FAIL)", r[at:at + 11]) for r in rows), [r[at:at + 11] for r in rows]
PY

# ---- a shard run's --junit: its shard, from the bundle's own chain --------------------------------
bd run incident-triage --shard 0/2 --run-id ci-7 --out "$BD_TMP/bundle" --junit "$BD_TMP/shard.xml" \
    --isolation subprocess >/dev/null 2>"$BD_TMP/err" || fail "shard run --junit: $(cat "$BD_TMP/err")"
python3 - "$BD_TMP/shard.xml" "$BD_TMP/bundle/manifest.json" <<'PY' && pass "shard run --junit: a suite of exactly the shard's cases" || fail "shard --junit"
import json, sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot(); m = json.load(open(sys.argv[2]))
names = sorted(c.get("name") for c in t.iter("testcase"))
assert names == sorted(m["cases"]) and names, (names, m["cases"])
p = {x.get("name"): x.get("value") for x in t.iter("property")}
assert p["run_id"] == "ci-7" and p["run_kind"].startswith("partial"), p
PY

# ---- --json numbers: the shortest form that reads back as the same double --------------------
bd history log --trend --task-class $TC --json >"$BD_TMP/trend.json"
python3 - "$BD_TMP/trend.json" <<'PY' && pass "--json prints each double in its shortest round-trip form" || fail "--json numbers: $(cat "$BD_TMP/trend.json")"
import re, sys
text = open(sys.argv[1]).read()
toks = re.findall(r'(?<=[:\[,])-?\d+\.\d+(?:e[-+]?\d+)?', text)
assert toks, text
for t in toks:
    assert repr(float(t)) == t, (t, repr(float(t)))
PY

# ---- run --stale ---------------------------------------------------------------------------------
n0=$(records)
out=$(bd run $TC --stale --isolation subprocess 2>"$BD_TMP/err") || fail "run --stale with nothing stale"
grep -q "^nothing to score: every case of $TC has a current score" <<<"$out" &&
    [ "$(records)" = "$n0" ] && pass "--stale, nothing stale: says so, scores nothing" || fail "--stale nothing: $out"
grep -q "leaving out 5 unsigned cases" "$BD_TMP/err" && pass "--stale names the unsigned cases it leaves out" || fail "--stale stderr: $(cat "$BD_TMP/err")"
dr=$(runit $TC --drafts)
out=$(bd run $TC --stale --drafts --isolation subprocess 2>&1) || fail "--stale --drafts after a --drafts run"
grep -q "^nothing to score" <<<"$out" && pass "--stale --drafts after a full --drafts run: nothing" || fail "$out"
draft=$(ls "$root/bench/$TC/cases" | grep -v '\.yaml$' | tail -1)
printf '\n# edited\n' >>"$root/bench/$TC/cases/$draft/case.yaml"
bd pin $TC "$draft" >/dev/null 2>&1 || bd pin $TC >/dev/null 2>&1 || fail "pin after an edit"
bd case new $TC zz-new-case >/dev/null 2>&1 || fail "case new"
bd pin $TC >/dev/null 2>&1 || fail "pin the new case"
n1=$(records)
bd run $TC --stale --drafts --isolation subprocess --json >"$BD_TMP/stale.jsonl" 2>"$BD_TMP/err" || true
st=$(run_id)
python3 - "$root" "$st" "$draft" <<'PY' && pass "--stale after an edit and a new case: exactly those two, as a subset run" || fail "--stale selection: $(cat "$BD_TMP/err")"
import glob, json, sys
root, run, draft = sys.argv[1:]
recs = [json.loads(l) for f in sorted(glob.glob(root + "/.benchdesk/history/segments/*.jsonl")) for l in open(f)]
got = sorted(r["case_id"] for r in recs if r.get("run_id") == run)
assert got == sorted([draft, "zz-new-case"]), got
assert all(r["run_scope"] == "subset" for r in recs if r.get("run_id") == run)
PY
[ "$(records)" = "$((n1 + 2))" ] && pass "--stale appended two records" || fail "records $n1 -> $(records)"
expect 2 usage.bad_args -- bd run $TC --stale --case "$draft"

# ---- a tampered chain gives no report ------------------------------------------------------------
f=$(ls "$root"/.benchdesk/history/segments/*.jsonl | head -1)
sed -i '0,/"score":/s//"score" :/' "$f"
for fmt in markdown junit html; do
    expect 1 chain.tampered -- bd report --format $fmt
done
expect 1 chain.tampered -- bd report "$r2" -o "$BD_TMP/never.xml"
[ ! -e "$BD_TMP/never.xml" ] && pass "nothing written from a tampered chain" || fail "a report from a tampered chain"
expect 1 chain.tampered -- bd run $TC --stale
finish
