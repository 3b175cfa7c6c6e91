#!/usr/bin/env bash
# A torn final line (a crash during an append, docs/history.md) is removed by the next
# writer, and every command that appends says so: `run`, `promote` and `history import`
# print one warning line on stderr, and with --json carry it as "history_repaired". The
# chain verifies afterwards, the torn bytes are gone, and a command with nothing to
# repair says nothing.
. "$(dirname "$0")/lib.sh"
PY=$(command -v /usr/bin/python3 || command -v python3)
FX="$BD_TMP/fx"
RUNTMP="$BD_TMP/runtmp"
mkdir -p "$RUNTMP"
"$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --trivial 4 --only trivial \
    --python "$PY" >/dev/null
"$BD_BIN" -C "$FX" migrate >/dev/null 2>&1 || true
bd() { TMPDIR="$RUNTMP" "$BD_BIN" -C "$FX" "$@"; }
RUN=(run trivial --drafts --isolation subprocess --jobs 1)
seg="$FX/.benchdesk/history/segments/0000000001.jsonl"
WARN='^benchdesk: warning: history segment 0000000001\.jsonl: removed a torn final line of 19 bytes'
# tear: what a crash in the middle of writing a record leaves, 19 bytes without '\n'
tear() { printf '{"case_digest":"bla' >>"$seg"; }
records() { wc -l <"$seg"; }
# check WHAT ERRFILE: one warning line naming the repair, the torn bytes gone, the chain
# intact and without a torn tail.
check() {
    local what=$1 errf=$2 v
    [ "$(grep -c "$WARN" "$errf")" = 1 ] && [ "$(grep -c 'torn' "$errf")" = 1 ] &&
        pass "$what: one warning line says the torn line was removed" ||
        fail "$what: no (or more than one) warning: $(cat -v "$errf")"
    [ "$(tail -c1 "$seg" | od -An -c | tr -d ' ')" = '\n' ] && ! grep -q 'bla$' "$seg" &&
        pass "$what: the torn bytes are gone" || fail "$what: torn bytes left"
    v=$(bd history verify --json) || true
    "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["ok"] and not d["torn_tail"] else 1)' "$v" &&
        pass "$what: the chain verifies, no torn tail" || fail "$what: verify: $v"
}
# json_field FILE: the "history_repaired" of the first JSON line of FILE that has it.
json_field() {
    "$PY" -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "history_repaired" in d:
        print(d["history_repaired"]); break' "$1"
}

# A history to tear: one run.
bd "${RUN[@]}" >/dev/null 2>&1 || fail "first run"
[ "$(records)" = 4 ] && pass "a history of 4 records" || fail "records: $(records)"

# run: the warning comes before the run; the run's records follow the whole ones.
tear
bd history verify | grep -q "torn tail" && pass "verify sees the torn tail" || fail "no torn tail"
rc=0
bd "${RUN[@]}" >"$BD_TMP/run.out" 2>"$BD_TMP/run.err" || rc=$?
[ "$rc" = 0 ] && pass "run -> 0" || fail "run -> $rc: $(cat "$BD_TMP/run.err")"
check "run" "$BD_TMP/run.err"
[ "$(records)" = 8 ] && pass "run: 4 more records" || fail "run: records $(records)"
[ "$(head -1 "$BD_TMP/run.err" | grep -c "$WARN")" = 1 ] &&
    pass "run: the warning is the first line, before the run's own" ||
    fail "run: warning not first: $(head -2 "$BD_TMP/run.err")"

# run --json: the same line on stderr, and run.started carries it.
tear
bd "${RUN[@]}" --case case-0001 --json >"$BD_TMP/runj.out" 2>"$BD_TMP/runj.err" || fail "run --json"
check "run --json" "$BD_TMP/runj.err"
head -1 "$BD_TMP/runj.out" | grep -q '^{"event":"run.started",.*"history_repaired":"history segment 0000000001.jsonl: removed a torn final line of 19 bytes' &&
    pass "run --json: run.started has history_repaired" || fail "run --json: $(head -1 "$BD_TMP/runj.out")"

# promote (refused, exit 3, but its audit record is appended).
tear
rc=0
bd promote trivial gold >/dev/null 2>"$BD_TMP/pr.err" || rc=$?
[ "$rc" = 3 ] && pass "promote -> 3" || fail "promote -> $rc"
check "promote" "$BD_TMP/pr.err"
tear
bd promote trivial gold --json >"$BD_TMP/prj.out" 2>"$BD_TMP/prj.err" || true
check "promote --json" "$BD_TMP/prj.err"
json_field "$BD_TMP/prj.out" | grep -q "removed a torn final line of 19 bytes" &&
    pass "promote --json: history_repaired" || fail "promote --json: $(cat "$BD_TMP/prj.out")"

# history import: a one-shard bundle, imported onto a torn tail.
bd "${RUN[@]}" --shard 0/1 --run-id torn-import --out "$BD_TMP/b0" >/dev/null 2>&1 || fail "shard run"
tear
bd history import "$BD_TMP/b0" --json >"$BD_TMP/im.out" 2>"$BD_TMP/im.err" || fail "import: $(cat "$BD_TMP/im.err")"
check "history import" "$BD_TMP/im.err"
json_field "$BD_TMP/im.out" | grep -q "removed a torn final line of 19 bytes" &&
    pass "history import --json: history_repaired" || fail "import --json: $(cat "$BD_TMP/im.out")"
n=$(records)
bd "${RUN[@]}" --shard 0/1 --run-id torn-import2 --out "$BD_TMP/b1" >/dev/null 2>&1 || fail "shard run 2"
tear
bd history import "$BD_TMP/b1" >/dev/null 2>"$BD_TMP/im2.err" || fail "import 2"
check "history import (text)" "$BD_TMP/im2.err"
[ "$(records)" = $((n + 4)) ] && pass "history import: 4 records after the whole ones" ||
    fail "import: records $n -> $(records)"

# Nothing to repair: nothing said.
bd "${RUN[@]}" --case case-0001 >/dev/null 2>"$BD_TMP/clean.err" || fail "clean run"
bd promote trivial gold --json >"$BD_TMP/clean.out" 2>>"$BD_TMP/clean.err" || true
! grep -q "torn" "$BD_TMP/clean.err" && ! grep -q "history_repaired" "$BD_TMP/clean.out" &&
    pass "no torn line: no warning, no history_repaired" || fail "spurious: $(cat "$BD_TMP/clean.err")"
bd history verify >/dev/null && pass "the chain verifies at the end" || fail "final verify"
finish
