#!/usr/bin/env bash
# `list TASK_CLASS` keeps its columns with long ids and titles: at 80 columns ($COLUMNS)
# no row is wider than 80 display columns (the title is cut with "…", an id longer than
# its column goes on a line of its own), and in a pipe nothing is cut while every field
# still starts at the header's column (an id is cut only when it alone is wider than the
# terminal). A failing case says FAIL in its row and its code
# and message on the next line.
. "$(dirname "$0")/lib.sh"
bd() { "$BD_BIN" "$@"; }
root=$(demo_copy)
tc=vuln-remediation
cases="$root/bench/$tc/cases"
first=
for d in "$cases"/*/; do
    d=${d%/}
    first=${d##*/}
    break
done
# A case with the longest id there is (128 bytes) and a long title, pinned.
long=$(printf 'x%.0s' $(seq 1 124))
long="l-${long}-z"
cp -r "$cases/$first" "$cases/$long"
rm -f "$cases/$long/provenance.yaml"
python3 - "$cases/$long/case.yaml" "$long" <<'PY'
import re, sys
p, cid = sys.argv[1], sys.argv[2]
s = open(p).read()
s = re.sub(r"(?m)^case_id: .*$", "case_id: " + cid, s)
s = re.sub(r"(?m)^title: .*$", 'title: "' + "A very long title " * 12 + 'END"', s)
open(p, "w").write(s)
PY
expect 0 - -- bd -C "$root" pin "$tc" "$long"
[ ${#long} = 128 ] || fail "the long id is ${#long} bytes"
# Display width of each line (UTF-8 aware: "…" is one column).
widest() { python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$1"; }


COLUMNS=80 bd -C "$root" list "$tc" >"$BD_TMP/w80" || fail "list at 80 columns failed"
w=$(widest "$BD_TMP/w80")
[ "$w" -le 80 ] && pass "at 80 columns no line is wider than 80 ($w)" || fail "a line is $w columns wide at 80: $(cat "$BD_TMP/w80")"
grep -q "^${long:0:70}.*…\$" "$BD_TMP/w80" && pass "the 128-byte id is on a line of its own, cut at 80" ||
    fail "long id not on its own line"
COLUMNS=200 bd -C "$root" list "$tc" >"$BD_TMP/w200"
grep -q "^$long .* ok " "$BD_TMP/w200" && [ "$(widest "$BD_TMP/w200")" -le 200 ] &&
    pass "at 200 columns the 128-byte id fits its row, whole" || fail "long id at 200 columns"
grep -q '…$' "$BD_TMP/w80" && pass "the long title is cut with …" || fail "title not cut"

COLUMNS=60 bd -C "$root" list "$tc" >"$BD_TMP/w60" || fail "list at 60 columns failed"
w=$(widest "$BD_TMP/w60")
[ "$w" -le 60 ] && pass "at 60 columns no line is wider than 60 ($w)" || fail "a line is $w columns wide at 60"

# In a pipe (no $COLUMNS): nothing cut, each row one line, the fields under the header's.
env -u COLUMNS "$BD_BIN" -C "$root" list "$tc" >"$BD_TMP/pipe" || fail "list in a pipe failed"
grep -q "A very long title .*END\$" "$BD_TMP/pipe" && pass "in a pipe the title is whole" ||
    fail "title cut in a pipe"
python3 - "$BD_TMP/pipe" "$long" <<'PY' && pass "in a pipe every field starts under its header" || fail "columns do not line up in a pipe: $(head -3 "$BD_TMP/pipe")"
import sys
lines = [l.rstrip("\n") for l in open(sys.argv[1], encoding="utf-8")]
head = lines[0]
cols = [head.index(h) for h in ("DISP", "DIFF", "PIN", "PROVENANCE", "LAST", "TITLE")]
rows = [l for l in lines[1:] if l and not l.startswith(" ") and not l.startswith("task class")]
assert any(r.startswith(sys.argv[2] + " ") for r in rows), "long id row missing"
for r in rows:
    for c in cols:
        assert r[c - 1] == " " and r[c] != " ", (r, c)
PY

# A failing case: FAIL in the row, the code and what to do below it.
printf 'tampered\n' >>"$cases/$first/input/$(ls "$cases/$first/input" | sed -n 1p)"
env -u COLUMNS "$BD_BIN" -C "$root" list "$tc" >"$BD_TMP/fail" || true
grep -q "^$first .* FAIL " "$BD_TMP/fail" && grep -q '^  case.digest_mismatch: ' "$BD_TMP/fail" &&
    pass "a failing case: FAIL and its code below" || fail "failing row: $(grep -A1 "^$first" "$BD_TMP/fail")"
finish
