# Shared helpers for the command-line tests. Source it; it sets -euo pipefail.
set -euo pipefail
: "${BD_SOURCE_DIR:?run through ctest}" "${BD_BIN:?run through ctest}"
BD_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bd-clitest.XXXXXX")
trap 'rm -rf "$BD_TMP"' EXIT
fails=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; fails=$((fails + 1)); }

# expect STATUS CODE -- cmd...: run cmd, check exit status and (if CODE != -) that
# stderr's error line carries CODE.
expect() {
    local want=$1 code=$2; shift 3
    local out rc=0
    out=$("$@" 2>&1 >/dev/null) || rc=$?
    if [ "$rc" != "$want" ]; then fail "$* -> exit $rc, wanted $want ($out)"; return; fi
    if [ "$code" != "-" ] && ! grep -q "^benchdesk: $code: " <<<"$out"; then
        fail "$* -> wanted error code $code, got: $out"; return
    fi
    pass "$* -> $want ${code}"
}

# case_ids ROOT TC: the case ids of task class TC of the bench at ROOT, as `list` gives
# them, on one line separated by spaces.
case_ids() {
    "$BD_BIN" -C "$1" list "$2" --json |
        python3 -c 'import json,sys; print(" ".join(c["case_id"] for c in json.load(sys.stdin)["cases"]))'
}

# A copy of the demo bench in a scratch dir; prints its root.
demo_copy() {
    local d="$BD_TMP/demo.$RANDOM"
    mkdir -p "$d"
    cp -a "$BD_SOURCE_DIR/bench" "$d/bench"
    printf '%s\n' "$d"
}

# report_lines FILE: a checker's report, one "ok   what" or "FAIL what" per line, as
# pass/fail lines; an empty report fails.
report_lines() {
    local line
    while IFS= read -r line; do
        case $line in
        "ok   "*) pass "${line#ok   }" ;;
        *) fail "${line#FAIL }" ;;
        esac
    done <"$1"
    [ -s "$1" ] || fail "the checker reported nothing"
}

# pj EXPR [FILE]: evaluate the Python expression EXPR over the JSON document `d` (FILE, else
# stdin) and print the result: strings as they are, anything else as JSON; a tuple's items
# on one line, space-separated.
pj() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[2]) if len(sys.argv) > 2 else sys.stdin)
v = eval(sys.argv[1], {"d": d})
for i, x in enumerate(v if isinstance(v, tuple) else (v,)):
    sys.stdout.write((" " if i else "") + (x if isinstance(x, str) else json.dumps(x)))
print()' "$@"
}

# memo_records ENTRIES KIND...: how many records of the given kinds this user's memo file
# ENTRIES holds (docs/provenance.md#verifying-many-signatures): "sig" signatures, "case"
# case verdicts, "stamp" unchanged cases' stamps, "shape" their shapes, "old" case verdicts
# of the layout before build tags; 0 when no file.
memo_records() {
    python3 - "$@" <<'PY'
import os, sys
path, kinds = sys.argv[1], sys.argv[2:]
magics = {"sig": b"bdsm0001", "case": b"bdcm0002", "stamp": b"bdcu0002", "shape": b"bdcs0001",
          "old": b"bdcm0001"}
want = {magics[k] for k in kinds}
b = open(path, "rb").read() if os.path.exists(path) else b""
print(sum(1 for o in range(0, len(b) - 175, 176) if b[o:o + 8] in want))
PY
}

# memo_builds ENTRIES: the case verdicts and stamps of each build in this user's memo file
# ENTRIES (docs/provenance.md#the-memo-file), one line per build in the order each last
# wrote: its build tag in hex and its record count; then "total N", every record.
memo_builds() {
    python3 - "$@" <<'PY'
import os, sys
b = open(sys.argv[1], "rb").read() if os.path.exists(sys.argv[1]) else b""
at = {b"bdcm0002": 136, b"bdcu0002": 72}
count, last = {}, {}
for i, o in enumerate(range(0, len(b) - 175, 176)):
    if b[o:o + 8] in at:
        tag = b[o + at[b[o:o + 8]]:o + at[b[o:o + 8]] + 8].hex()
        count[tag] = count.get(tag, 0) + 1
        last[tag] = i
for tag in sorted(count, key=last.get):
    print(tag, count[tag])
print("total", len(b) // 176)
PY
}

# records_at_pins TC DIGESTS_YAML: reads `history log --json` on stdin and prints the
# task class's record count and how many of them are not at their case's pin in
# DIGESTS_YAML or not provenance-verified, space-separated.
records_at_pins() {
    python3 -c '
import json, sys
recs = [r for r in json.load(sys.stdin)["records"] if r.get("task_class") == sys.argv[1]]
pins = {}
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) == 2 and parts[1].startswith("blake3:"):
        pins[parts[0].rstrip(":")] = parts[1]
bad = [r["case_id"] for r in recs if pins.get(r["case_id"]) != r["case_digest"] or not r["provenance_verified"]]
print(len(recs), len(bad))' "$@"
}

finish() {
    if [ "$fails" -gt 0 ]; then echo "$fails failure(s)"; exit 1; fi
    echo "all passed"
}
