#!/usr/bin/env bash
# A BenchScore's `checks` (docs/formats.md#what-the-rubric-compared), end to end through
# `benchdesk run`: a valid list is kept in the record exactly (multi-line strings and the
# rubric's data with banned words included) and the chain verifies; an entry without
# `passed`, a name with an ESC byte, 65 entries, a 5,000-byte value or a banned member
# name fail their case with rubric.malformed_output and the run goes on; hostile bytes in
# the values never reach the terminal raw (the human output has no ESC; --json escapes
# them); 64 entries of almost 4 KiB each fit one record; the JUnit report lists a failed
# case's failed checks, made visible.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
. "$(dirname "$0")/jail_lib.sh"

jail_class valid missing badname many oversized hostile huge banned
cp "$BD_SOURCE_DIR/tests/fixtures/checks/checks_rubric.py" "$FX/bench/jailprobe/rubric.py"
bd pin jailprobe >/dev/null
ev=$BD_TMP/ev
rc=0
bd run jailprobe "${SUB[@]}" --drafts --jobs 2 --json >"$ev" 2>"$BD_TMP/err" || rc=$?
[ "$rc" = 0 ] && pass "the run completes -> 0" || fail "run -> $rc: $(cat "$BD_TMP/err")"
if LC_ALL=C grep -q $'\x1b' "$ev" "$BD_TMP/err"; then
    fail "a raw ESC byte reached the output"
else
    pass "no raw ESC byte in --json output or stderr"
fi

"$PY" - "$ev" "$FX/.benchdesk/history/segments" <<'PY' && pass "valid lists recorded exactly; bad ones malformed with their reason" || fail "checks through the runner"
import glob, json, os, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
fin = {e["case_id"]: e for e in ev if e["event"] == "case.finished"}
assert len(fin) == 8, sorted(fin)
def fm(cid):
    f = fin[cid]["score"]["failure_modes"]
    return (f[0]["code"], f[0].get("detail", "")) if f else (None, "")
want = {
    "missing": "$.checks[0] has no member 'passed'",
    "badname": "$.checks[0].name is not 1 to 128 characters of [a-z0-9_]",
    "many": "$.checks has 65 entries, more than 64",
    "oversized": "$.checks[0].actual is 5002 bytes in canonical JSON, more than 4096",
    "banned": "banned key 'confidence' (contains 'confidence') at $.checks[0]",
}
for cid, detail in want.items():
    code, d = fm(cid)
    assert code == "rubric.malformed_output", (cid, code, d)
    assert detail in d, (cid, d)
    assert "checks" not in fin[cid]["score"], cid
    print(cid, "->", d)
v = fin["valid"]["score"]
assert fm("valid")[0] is None, fm("valid")
names = [c["name"] for c in v["checks"]]
assert names == ["decision", "validator_log", "diff", "data_words"], names
assert v["checks"][2]["expected"].count("\n") == 5, v["checks"][2]
assert v["checks"][3]["expected"] == {"confidence": 1, "llm": [1]}, v["checks"][3]
h = fin["hostile"]["score"]["checks"][0]
assert h["expected"].startswith("\x1b]0;owned\x07"), h
assert len(fin["huge"]["score"]["checks"]) == 64
# the records hold the same lists, byte for byte as canonical JSON
recs = {}
for seg in sorted(glob.glob(os.path.join(sys.argv[2], "*.jsonl"))):
    for line in open(seg, encoding="utf-8"):
        r = json.loads(line)
        if r.get("case_id"):
            recs[r["case_id"]] = r
for cid in ("valid", "hostile", "huge"):
    assert recs[cid]["score"]["checks"] == fin[cid]["score"]["checks"], cid
assert "\\u001b" in open(glob.glob(os.path.join(sys.argv[2], "*.jsonl"))[0], encoding="utf-8").read()
PY

out=$(bd history verify 2>&1) && pass "history verifies with checks in its records" || fail "history verify: $out"
# The JUnit report lists a failed case's failed checks in its <failure> body, each value
# made visible (no control byte, parsed by an XML parser), in the same bytes every time.
rid=$("$PY" -c 'import json,sys
print(next(json.loads(l)["run_id"] for l in open(sys.argv[1]) if "run_id" in json.loads(l)))' "$ev")
bd report "$rid" --format junit >"$BD_TMP/j1.xml" 2>"$BD_TMP/err" && bd report "$rid" --format junit >"$BD_TMP/j2.xml" &&
    cmp -s "$BD_TMP/j1.xml" "$BD_TMP/j2.xml" && pass "JUnit with checks: two calls give the same bytes" ||
    fail "report --format junit: $(cat "$BD_TMP/err")"
"$PY" - "$BD_TMP/j1.xml" <<'PY' && pass "JUnit: a failed case's body lists its failed checks, made visible" || fail "JUnit failed checks"
import sys, xml.etree.ElementTree as ET
raw = open(sys.argv[1], "rb").read()
assert not any(b < 0x20 and b not in (0x09, 0x0a, 0x0d) for b in raw), "a raw control byte"
assert b"\x1b" not in raw and "\u202e".encode() not in raw and "\u0085".encode() not in raw
cases = {tc.get("name"): tc for tc in ET.parse(sys.argv[1]).getroot().iter("testcase")}
def body(cid):
    f = cases[cid].find("failure")
    assert f is not None, cid
    return f.text
b = body("valid")
want = ("failed checks:\n  validator_log\n"
        '    expected: "pass"\n'
        '    actual:   "FAILED tests/test_tls.py::test_ciphers\\nE   ssl.SSLError\\n1 failed"\n')
assert want in b, b
for passed in ("decision", "diff", "data_words"):   # only the failed ones
    assert "  " + passed + "\n" not in b, (passed, b)
assert b.index("failed checks:") < b.index("breakdown:"), b
h = body("hostile")
assert "failed checks:\n  title\n    expected: " in h, h
line = [l for l in h.split("\n") if l.startswith("    expected: ")][0]
assert "owned" in line and "red" in line and "tail" in line, line
assert not any(ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0 or ch in "\u202e\u200b" for ch in line), repr(line)
hb = body("huge")
assert hb.count("    expected: ") == 32 and "  c01\n" in hb and "  c00\n" not in hb, hb[:200]
assert "failed checks:" not in body("missing")   # malformed: no checks recorded
print(want)
PY
# The human output of a run never shows the values raw.
rc=0
bd run jailprobe "${SUB[@]}" --drafts --case hostile >"$BD_TMP/human" 2>&1 || rc=$?
[ "$rc" = 0 ] && pass "a human-readable run of the hostile case -> 0" || fail "human run -> $rc"
if LC_ALL=C grep -q $'\x1b\|\x07' "$BD_TMP/human"; then fail "raw control bytes in the human output"; else pass "no raw control byte in the human output"; fi
# A record whose checks were edited by hand breaks the chain like any other edit.
seg=$(ls "$FX/.benchdesk/history/segments/"*.jsonl | head -1)
sed -i 's/"name":"decision","passed":true/"name":"decision","passed":false/' "$seg"
rc=0
bd history verify >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] && pass "a hand-edited check breaks the chain -> 1" || fail "verify after editing a check -> $rc"
finish
