#!/usr/bin/env bash
# Hostile failure details in reports (docs/formats.md#reports): a rubric whose every
# failure detail carries <script>, <img onerror>, a javascript: link, </style>, ESC and
# U+FFFE, pinned and signed as a real rubric change would be. JUnit (Python's XML parser),
# the HTML page (Python's HTML parser) and the Markdown rendered by GitHub's renderer
# (cmark-gfm with raw HTML allowed: only our escaping keeps markup out) hold it as text,
# with no element, attribute or link made from it and no raw control byte.
. "$(dirname "$0")/lib.sh"
for tool in b3sum gpg python3 cmark-gfm; do
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
python3 - "$root/bench/$TC/rubric.py" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
hostile = ('<script>document.title="pwned"</script><img src=x onerror="document.body.dataset.p=1">'
           '[x](javascript:alert(1)) </style><style>body{display:none}</style> \x1b[31mred | ]]> \ufffe & end')
assert len(hostile) < 200
s = s.replace('"detail": str(detail)[:200]}', '"detail": HOSTILE + str(detail)[:200]}', 1)
s = s.replace('\nimport json\n', '\nHOSTILE = ' + repr(hostile) + '\nimport json\n', 1)
assert "HOSTILE +" in s and "HOSTILE = " in s
open(p, "w").write(s)
PY
bd pin $TC >/dev/null 2>&1 || fail "pin after the rubric change"
rm -f "$root"/bench/*/provenance.yaml "$root"/bench/*/cases/*/provenance.yaml
bash "$BD_SOURCE_DIR/tests/fixtures/gpg/sign-demo-bench.sh" "$root" "$BD_BIN" >"$BD_TMP/sign.log" 2>&1 ||
    { fail "re-signing the demo bench: $(tail -3 "$BD_TMP/sign.log")"; finish; }
rh=$(runit $TC --junit "$BD_TMP/h.xml")
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
fails = [f for f in t.iter("failure")]
assert fails and all('<script>document.title="pwned"</script>' in f.get("message") for f in fails)
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
    assert '<img src=x onerror="document.body.dataset.p=1">' in p.text, name
    assert "</style><style>body{display:none}</style>" in p.text, name
    assert "[x](javascript:alert(1))" in p.text, name
PY

finish
