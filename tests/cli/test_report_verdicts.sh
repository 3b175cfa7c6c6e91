#!/usr/bin/env bash
# Verdicts in reports (docs/formats.md#reports, docs/provenance.md#verdicts), with keys made
# by the test: a trusted reviewer's verdict in all three formats, each parsed by a real
# parser (Python's XML parser; cmark-gfm, raw HTML allowed, then Python's HTML parser;
# Python's HTML parser for the page); a hostile note that stays text; an unreviewed
# failure that leaves the Markdown list once a trusted reviewer judges it (the same rule
# as `review`), an untrusted key's verdict that does not, and a forged file shown as
# counting for nothing; the same bytes from two calls.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
for tool in gpg python3 cmark-gfm; do
    command -v "$tool" >/dev/null ||
        { fail "$tool is required (./scripts/setup --test-deps installs it)"; finish; }
done
gpg_keys
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state" TMPDIR="$BD_TMP/tmp"
mkdir -p "$HOME" "$TMPDIR"

# a bench whose tc has three cases; mallory's key is in bench/keys but has no role
root="$BD_TMP/bench"
mini_bench "$root" alice bob mallory
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
pins="$root/bench/tc/cases/digests.yaml"
T=$(awk '$1 == "task_class:" {print $2}' "$pins")
gen() { # case passed [failure_mode]
    local fm=${3:+,\"failure_mode\":\"$3\"}
    python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$hist" \
        "{\"task_class\":\"tc\",\"case_id\":\"$1\",\"case_digest\":\"$(awk -v c="$1:" '$1 == c {print $2}' "$pins")\",\"task_class_digest\":\"$T\",\"passed\":$2,\"score\":0.5,\"run_id\":\"run-a\",\"run_cases\":3$fm}"
}
gen c1 false x.wrong
gen c2 true
gen c3 false x.wrong

# reports: R FORMAT writes $BD_TMP/FORMAT; unrev [SECTION] prints the cases of the
# Markdown's table under SECTION (default: "Unreviewed failures")
R() { bd report run-a --format "$1" >"$BD_TMP/$1" || { fail "report --format $1"; finish; }; }
unrev() {
    R markdown
    cmark-gfm --unsafe -e table "$BD_TMP/markdown" >"$BD_TMP/md.html" || fail "cmark-gfm"
    python3 - "$BD_TMP/md.html" "${1:-Unreviewed failures}" <<'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.sec = ""; s.h = False; s.cell = None; s.row = []; s.rows = {}
    def handle_starttag(s, t, a):
        if t == "h3": s.h = True; s.sec = ""
        if t == "tr": s.row = []
        if t in ("td", "th"): s.cell = ""
    def handle_endtag(s, t):
        if t == "h3": s.h = False
        if t in ("td", "th"): s.row.append(s.cell); s.cell = None
        if t == "tr" and s.row and s.row[0] != "case": s.rows.setdefault(s.sec, []).append(s.row[0])
    def handle_data(s, d):
        if s.h: s.sec += d
        if s.cell is not None: s.cell += d
p = P(); p.feed(open(sys.argv[1]).read())
print(" ".join(p.rows.get(sys.argv[2], [])))
PY
}
[ "$(unrev)" = "c1 c3" ] && pass "no verdict: both failures are unreviewed" || fail "unreviewed: $(unrev)"
grep -q '^| unreviewed failures | 2 |$' "$BD_TMP/markdown" && pass "summary: 2 unreviewed" ||
    fail "summary: $(grep unreviewed "$BD_TMP/markdown")"

# alice (trusted reviewer) judges c1, with a hostile note
note=$'<script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3)) | </style>\e[31m'
bd verdict 1 --verdict rubric_bug --note "$note" --key "$ALICE_FPR" >/dev/null ||
    { fail "alice's verdict"; finish; }
# bob marks the passing c2 confirmed
bd verdict 2 --verdict confirmed --key "$BOB_FPR" >/dev/null || { fail "bob's verdict"; finish; }
# mallory (no role) gives one on c3, written by hand: `verdict` refuses a key without the role
sid3=$(bd review --run run-a --json | python3 -c '
import json, sys
print([x["score_id"] for x in json.load(sys.stdin)["queue"] if x["case_id"] == "c3"][0])')
at=2026-01-02T00:00:00Z
msg=$(printf 'benchdesk-verdict-v1\ntask_class:tc\nrun_id:run-a\ncase_id:c3\nscore_id:%s\nverdict:confirmed\nnote_sha256:%s\nat:%s\n' \
    "$sid3" "$(printf 'mallory says' | sha256sum | cut -d' ' -f1)" $at)
sig=$(printf '%s\n' "$msg" | gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
    -u "$MALLORY_FPR" --armor --detach-sign)
mfile="$root/audit/verdicts/tc/run-a/c3/$MALLORY_FPR-20260102T000000Z.json"
SIG=$sig python3 - "$mfile" "$MALLORY_FPR" "$sid3" $at <<'PY'
import json, os, sys
f, fpr, sid, at = sys.argv[1:]
d = {"at": at, "case_id": "c3", "note": "mallory says", "reviewer_fingerprint": fpr,
     "run_id": "run-a", "schema_version": 1, "score_id": sid, "signature": os.environ["SIG"],
     "task_class": "tc", "verdict": "confirmed"}
os.makedirs(os.path.dirname(f), exist_ok=True)
open(f, "w").write(json.dumps(d, sort_keys=True, separators=(",", ":")) + "\n")
PY
out=$(bd verify --json) && pass "verify passes (mallory's verdict: untrusted)" || fail "verify: $out"

[ "$(unrev)" = "c3" ] &&
    pass "a trusted verdict takes c1 off the list; an untrusted one leaves c3 on it" ||
    fail "unreviewed now: $(unrev)"
[ "$(unrev "Cases with verdicts")" = "c1 c2" ] &&
    pass "Markdown: the cases judged listed with their verdicts" ||
    fail "cases with verdicts: $(unrev "Cases with verdicts")"
q=$(bd review --run run-a --json | python3 -c '
import json, sys
print(" ".join(x["case_id"] for x in json.load(sys.stdin)["queue"] if x["why"] == "unreviewed"))')
[ "$q" = "c3" ] && pass "review's queue agrees" || fail "review: $q"
grep -q '^| unreviewed failures | 1 |$' "$BD_TMP/markdown" && pass "summary: 1 unreviewed" ||
    fail "summary: $(grep unreviewed "$BD_TMP/markdown")"

# Markdown: rendered with raw HTML allowed, the note stays text; verdicts beside the cases
python3 - "$BD_TMP/md.html" "$ALICE_FPR" "$MALLORY_FPR" <<'PY' && pass "Markdown: verdicts beside cases, hostile note is text" || fail "Markdown: $(cat "$BD_TMP/markdown")"
import sys
from html.parser import HTMLParser
html, alice, mallory = sys.argv[1:]
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = set(); s.text = ""
    def handle_starttag(s, t, a):
        s.tags.add(t)
        for k, v in a:
            assert not k.startswith("on") and "javascript" not in (v or ""), (t, k, v)
    def handle_data(s, d): s.text += d
p = P(); p.feed(open(html).read())
assert not p.tags & {"script", "img", "a", "style"}, p.tags
t = p.text
assert "Cases with verdicts" in t, t
assert f"rubric_bug by alice@bench.example ({alice})" in t, t
assert "<script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3)) | </style>\\x1b[31m" in t, t
assert f"confirmed by {mallory}" in t and "counts for nothing (untrusted" in t, t
PY

# JUnit: the verdicts in the failure's body
R junit
python3 - "$BD_TMP/junit" "$ALICE_FPR" "$MALLORY_FPR" <<'PY' && pass "JUnit: parses; verdicts in the failures' bodies, the note made visible" || fail "JUnit: $(cat "$BD_TMP/junit")"
import sys, xml.etree.ElementTree as ET
f, alice, mallory = sys.argv[1:]
t = ET.parse(f).getroot()
body = {c.get("name"): (c.find("failure").text if c.find("failure") is not None else None)
        for c in t.iter("testcase")}
assert body["c2"] is None  # a passed case has no failure body
b1 = body["c1"]
assert "verdicts:\n  rubric_bug by alice@bench.example (" + alice + ") at " in b1, b1
assert b1.rstrip("\n").endswith(": <script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3)) | </style>\\x1b[31m"), b1
assert "\x1b" not in open(f).read()
b3 = body["c3"]
assert f"confirmed by {mallory} at 2026-01-02T00:00:00Z, counts for nothing (untrusted" in b3, b3
assert b3.rstrip("\n").endswith(": mallory says"), b3
PY

# HTML: badges in the case table, a row per verdict in the failed cases' details
R html
python3 - "$BD_TMP/html" "$ALICE_FPR" <<'PY' && pass "HTML: verdict badges and rows; the note is text" || fail "HTML checks"
import sys
from html.parser import HTMLParser
f, alice = sys.argv[1:]
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = set(); s.stack = []; s.badges = []; s.cells = []; s.cell = None
    def handle_starttag(s, t, a):
        s.tags.add(t); a = dict(a)
        for k, v in a.items():
            assert not k.startswith("on"), (t, k)
        s.stack.append((t, a.get("class", "")))
        if t == "td": s.cell = ""
    def handle_endtag(s, t):
        tag, cls = s.stack.pop()
        if tag == "td": s.cells.append(s.cell); s.cell = None
    def handle_data(s, d):
        if s.stack and s.stack[-1][0] == "span" and s.stack[-1][1].startswith("verdict"):
            s.badges.append((s.stack[-1][1], d))
        if s.cell is not None: s.cell += d
p = P(); p.feed(open(f).read())
assert not p.tags & {"script", "img", "a", "iframe", "object"}, p.tags
# each verdict twice: a badge in "Every case" and one in the failed case's row
assert p.badges.count(("verdict", "rubric_bug")) == 2, p.badges
assert p.badges.count(("verdict nocount", "confirmed")) == 2, p.badges
assert p.badges.count(("verdict", "confirmed")) == 1, p.badges  # bob's, on the passed c2
assert f"alice@bench.example ({alice})" in p.cells, p.cells
assert "<script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3)) | </style>\\x1b[31m" in p.cells, p.cells
PY

for f in markdown junit html; do
    bd report run-a --format $f >"$BD_TMP/again" && cmp -s "$BD_TMP/again" "$BD_TMP/$f" &&
        pass "$f: the same bytes twice" || fail "$f differs between calls"
done
GNUPGHOME="$BD_TMP/empty" bd report run-a --format junit | cmp -s - "$BD_TMP/junit" &&
    pass "the user's keyring plays no part" || fail "report depends on GNUPGHOME"

# a forged file: alice's verdict word edited, her signature kept. verify refuses it; the
# report, like review, counts it for nothing and says why.
afile=$(ls "$root/audit/verdicts/tc/run-a/c1/$ALICE_FPR-"*.json)
sed -i 's/"verdict":"rubric_bug"/"verdict":"case_bug"/' "$afile"
expect 1 verdict.invalid -- bd verify
[ "$(unrev)" = "c1 c3" ] && pass "a forged verdict does not count: c1 is unreviewed again" ||
    fail "forged: $(unrev)"
R junit
python3 - "$BD_TMP/junit" <<'PY' && pass "JUnit: the forged verdict shown as invalid, counting for nothing" || fail "forged JUnit: $(cat "$BD_TMP/junit")"
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot()
b1 = [c.find("failure").text for c in t.iter("testcase") if c.get("name") == "c1"][0]
assert "counts for nothing (invalid" in b1, b1
PY
finish
