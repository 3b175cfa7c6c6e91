#!/usr/bin/env bash
# The HTML report in a real browser (docs/formats.md#html-page): headless Chromium renders
# a page whose failure details are hostile (a <script> that would retitle the page, an
# <img onerror> that would mark the body, a javascript: link, a </style> breaking out of
# the stylesheet) to a PNG and dumps its DOM after load: no script ran, no element or link
# came from a record, the text is all there, and the picture is a real page.
# BD_REPORT_SHOT=FILE also keeps a screenshot of the demo bench's page (docs/report-page.png).
. "$(dirname "$0")/lib.sh"
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
    echo "SKIP: chromium is not installed (./scripts/setup --test-deps installs it)"
    exit 77
fi
root=$(demo_copy)
RUNTMP="$BD_TMP/runtmp"
mkdir -p "$RUNTMP"
bd() { TMPDIR="$RUNTMP" "$BD_BIN" -C "$root" "$@"; }
TC=vuln-remediation
# Chromium's own flags for a throwaway profile in the test's directory (the sandbox needs
# user namespaces a root test process may not have; the page runs no code either way).
browse() {
    timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$BD_TMP/profile" --hide-scrollbars "$@" 2>>"$BD_TMP/chrome.log"
}

# The demo page first (the user guide's picture), before any hostile text.
bd run $TC --isolation subprocess >/dev/null 2>&1 || { fail "first run"; finish; }
bd run $TC --isolation subprocess >/dev/null 2>&1 || { fail "second run"; finish; }
bd report --format html -o "$BD_TMP/demo.html" || fail "report of the demo runs"
browse --screenshot="$BD_TMP/demo.png" --window-size=1100,1900 "file://$BD_TMP/demo.html" >/dev/null
[ -s "$BD_TMP/demo.png" ] && pass "Chromium renders the demo page" || fail "no screenshot: $(tail -3 "$BD_TMP/chrome.log")"
[ -n "${BD_REPORT_SHOT:-}" ] && cp "$BD_TMP/demo.png" "$BD_REPORT_SHOT"

# A draft case (edited and pinned without new signatures) whose expected recipe the
# rubric quotes in its failure detail: hostile text in the record.
draft=$(ls "$root/bench/$TC/cases" | grep -v '\.yaml$' | tail -1)
python3 - "$root/bench/$TC/cases/$draft/case.yaml" <<'PY'
import re, sys
hostile = ('<script>document.title="p"</script><img src=x onerror="document.body.dataset.p=1">'
           '<a href="javascript:x()">x</a></style><style>body{display:none}</style>')
assert len(hostile) < 160  # the rubric keeps 200 characters of a detail
p = sys.argv[1]; s = open(p).read()
s, n = re.subn(r"(?m)^  recipe_id: .*$", "  recipe_id: '" + hostile + "'", s)
assert n == 1
open(p, "w").write(s)
PY
bd pin $TC "$draft" >/dev/null 2>"$BD_TMP/pin.err" || fail "pin the draft: $(cat "$BD_TMP/pin.err")"
bd run $TC --drafts --isolation subprocess >/dev/null 2>"$BD_TMP/run.err" || fail "run --drafts: $(cat "$BD_TMP/run.err")"
grep -q 'document.title' "$root"/.benchdesk/history/segments/*.jsonl &&
    pass "the hostile detail is in the record" || fail "the rubric did not quote the hostile text"
bd report --format html -o "$BD_TMP/page.html" || fail "report"
browse --dump-dom "file://$BD_TMP/page.html" >"$BD_TMP/dom.html" || fail "chromium --dump-dom: $(tail -3 "$BD_TMP/chrome.log")"
browse --screenshot="$BD_TMP/page.png" --window-size=1280,4000 "file://$BD_TMP/page.html" >/dev/null ||
    fail "chromium --screenshot"

python3 - "$BD_TMP/dom.html" "$BD_TMP/page.png" <<'PY' && pass "in Chromium: no script ran, no element or link from a record, the hostile text shown as text, a real picture" || fail "browser checks"
import struct, sys, zlib
from html.parser import HTMLParser
dom, png = sys.argv[1:]
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = []; s.attrs = []; s.text = ""; s.title = ""; s.stack = []
    def handle_starttag(s, t, a):
        s.tags.append(t); s.attrs += [(t, k, v) for k, v in a]; s.stack.append(t)
    def handle_endtag(s, t):
        if s.stack: s.stack.pop()
    def handle_data(s, d):
        if s.stack and s.stack[-1] == "title": s.title += d
        s.text += d
p = P(); p.feed(open(dom).read())
assert p.title == "benchdesk report", "the page title changed: " + p.title
for bad in ("script", "img", "a", "iframe"):
    assert bad not in p.tags, bad + " element in the live DOM"
assert p.tags.count("style") == 1
assert not any(k == "data-p" for _, k, _ in p.attrs), "the onerror handler ran"
assert not any(k.startswith("on") for _, k, _ in p.attrs)
assert '<script>document.title="p"</script>' in p.text
assert '<a href="javascript:x()">x</a>' in p.text
assert "</style><style>body{display:none}</style>" in p.text
assert p.tags.count("svg") >= 3
b = open(png, "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR"
w, h = struct.unpack(">II", b[16:24])
assert (w, h) == (1280, 4000), (w, h)
assert len(b) > 20000, len(b)   # a blank page compresses to a few kB
PY
finish
