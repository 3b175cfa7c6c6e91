#!/usr/bin/env bash
# Hostile failure details in reports (docs/formats.md#reports): a failure detail that
# carries <script>, <img onerror>, a javascript: link, </style>, ESC and U+FFFE. JUnit
# (Python's XML parser), the HTML page (Python's HTML parser) and the Markdown rendered by
# GitHub's renderer (cmark-gfm with raw HTML allowed: only our escaping keeps markup out)
# hold it as text, with no element, attribute or link made from it and no raw control byte.
. "$(dirname "$0")/lib.sh"
for tool in python3 cmark-gfm; do
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

# ---- hostile failure details stay text ----------------------------------------------------------
# A draft case (edited and pinned: no signature to break) whose expected recipe the
# rubric quotes in its failure detail ("applied X, expected <recipe_id>", 200 characters
# kept): hostile text in a record, as a rubric or a bench file could put it there.
draft=$(ls "$root/bench/$TC/cases" | grep -v '\.yaml$' | tail -1)
python3 - "$root/bench/$TC/cases/$draft/case.yaml" <<'PY'
import json, re, sys
hostile = ('<script>document.title="pwned"</script><img src=x onerror="alert(2)">'
           '[x](javascript:alert(1)) </style><style>b{}</style> \x1b[31mred | ]]> \ufffe & end')
assert len(hostile) < 160
p = sys.argv[1]; s = open(p).read()
# A JSON string is a YAML double-quoted scalar: ESC and U+FFFE travel as \u escapes.
s, n = re.subn(r"(?m)^  recipe_id: .*$", lambda m: "  recipe_id: " + json.dumps(hostile), s)
assert n == 1
open(p, "w").write(s)
PY
bd pin $TC "$draft" >/dev/null 2>"$BD_TMP/pin.err" || fail "pin the draft: $(cat "$BD_TMP/pin.err")"
rh=$(runit $TC --drafts --junit "$BD_TMP/h.xml")
grep -q 'document.title' "$root"/.benchdesk/history/segments/*.jsonl && pass "the hostile detail is in the records" || fail "no hostile detail recorded"
for f in markdown junit html; do bd report "$rh" --format $f >"$BD_TMP/h.$f" || fail "report hostile $f"; done
if grep -qP '[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]' "$BD_TMP"/h.markdown "$BD_TMP"/h.junit "$BD_TMP"/h.html; then
    fail "a raw control byte in a report"
else
    pass "no raw control byte in any report (ESC made visible)"
fi
grep -q '\\x1b\[31mred' "$BD_TMP/h.junit" && pass "ESC shown as \\x1b" || fail "ESC not visible in JUnit"
python3 -c 'import sys, xml.etree.ElementTree as ET
t = "".join(f.text + f.get("message") for f in ET.parse(sys.argv[1]).getroot().iter("failure"))
assert "<U+FFFE>" in t and "\ufffe" not in t' "$BD_TMP/h.junit" &&
    pass "U+FFFE shown as <U+FFFE> (XML 1.0 cannot carry it)" || fail "U+FFFE in JUnit"
cmark-gfm --unsafe -e table -e autolink -e strikethrough "$BD_TMP/h.markdown" >"$BD_TMP/h.md.html"
python3 - "$BD_TMP/h.junit" "$BD_TMP/h.html" "$BD_TMP/h.md.html" <<'PY' && pass "hostile text: parsed JUnit, HTML and rendered Markdown hold it as text, with no element or link made from it" || fail "hostile checks"
import sys, xml.etree.ElementTree as ET
from html.parser import HTMLParser
junit, page, md = sys.argv[1:]
t = ET.parse(junit).getroot()
fails = [f for f in t.iter("failure") if "pwned" in f.get("message")]
assert len(fails) == 1, len(fails)
assert all('<script>document.title="pwned"</script>' in f.get("message") for f in fails)
assert all("</style>" in f.text and "javascript:alert(1)" in f.text for f in fails)
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = []; s.attrs = []; s.text = ""; s.cur = []
    def handle_starttag(s, tag, a):
        s.tags.append(tag); s.attrs += [(tag, k, v) for k, v in a]
    def handle_data(s, d): s.text += d
for name, path, styles in (("page", page, 1), ("markdown", md, 0)):
    p = P(); p.feed(open(path).read())
    for bad in ("script", "img", "a", "iframe", "object"):
        assert bad not in p.tags, (name, bad)
    assert p.tags.count("style") == styles, (name, p.tags.count("style"))
    assert not any(k.startswith("on") for _, k, _ in p.attrs), name
    assert not any(v and "javascript" in v for _, _, v in p.attrs), name
    assert '<script>document.title="pwned"</script>' in p.text, name
    assert '<img src=x onerror="alert(2)">' in p.text, name
    assert "</style><style>b{}</style>" in p.text, name
    assert "[x](javascript:alert(1))" in p.text, name
PY

finish
