#!/usr/bin/env bash
# A BenchScore's `checks` (docs/formats.md#what-the-rubric-compared), end to end through
# `benchdesk run`: a valid list is kept in the record exactly (multi-line strings and the
# rubric's data with banned words included) and the chain verifies; an entry without
# `passed`, a name with an ESC byte, 65 entries, a 5,000-byte value or a banned member
# name fail their case with rubric.malformed_output and the run goes on; hostile bytes in
# the values never reach the terminal raw (the human output has no ESC; --json escapes
# them); 64 entries of almost 4 KiB each fit one record.
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
