#!/usr/bin/env bash
# Crash safety of the history under `benchdesk run` (DESIGN.md §5): SIGKILL a run at
# random moments, 50 times; after each the chain verifies, no partial record exists,
# and no rubric process or temp dir outlives it. Two runs started at once produce one
# linear chain holding every record of both.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
"$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --state "$STATE" \
    --python "$PY" --trivial 12 --only trivial >/dev/null
hist="$FX/.benchdesk/history"
records() { ls "$hist" 2>/dev/null | grep -c '^[0-9]\{10\}\.json$' || true; }

# How long one whole run takes here: kill moments are spread over it.
t0=$(date +%s%N)
bd run trivial "${SUB[@]}" --drafts --jobs 2 >/dev/null 2>&1
span_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$span_ms" -ge 20 ] || span_ms=20
RANDOM=42 # the same kill moments on every run of this test
bad=0
full=0
for i in $(seq 50); do
    bd run trivial "${SUB[@]}" --drafts --jobs 2 >/dev/null 2>&1 &
    pid=$!
    # Anywhere in the run: before the first spawn, mid-case, mid-append, at the end.
    before_kill=$(records)
    ms=$((RANDOM % span_ms))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ "$(( $(records) - before_kill ))" = 12 ] && full=$((full + 1))
    if ! out=$(bd history verify 2>&1 >/dev/null); then
        fail "kill $i: history verify: $out"; bad=1; break
    fi
    # A partial record would be a *.json that does not parse or a leftover the next
    # append must clean; verify already refuses the first, the second must be a .tmp.
    stray=$(ls "$hist" 2>/dev/null | grep -v -e '^[0-9]\{10\}\.json$' -e '^\.lock$' -e '^HEAD$' -e '\.json\.tmp$' || true)
    [ -z "$stray" ] || { fail "kill $i: unexpected file in history: $stray"; bad=1; break; }
done
[ "$bad" = 0 ] && pass "50 SIGKILLs: the chain verified after each ($(records) records)"
# The kills must really land mid-run: most runs cut short, not all finished.
[ "$full" -lt 40 ] && pass "$((50 - full)) of 50 runs were cut short" || fail "only $((50 - full)) of 50 runs were cut short"
# The exec server and every rubric die with benchdesk (PR_SET_PDEATHSIG, subreaper).
sleep 0.5
[ "$(procs_left)" = 0 ] && pass "no rubric process left" || fail "$(procs_left) processes left"

# A run after all that appends cleanly and removes stray temp files.
before=$(records)
expect 0 - -- bd run trivial "${SUB[@]}" --drafts --jobs 2
[ "$(records)" = $((before + 12)) ] && pass "next run appended 12 records" || fail "records $before -> $(records)"
[ -z "$(ls "$hist" | grep '\.tmp$' || true)" ] && pass "no .tmp left after a clean append" || fail "stray .tmp"

# Two runs at once: one linear chain with both runs' records.
before=$(records)
bd run trivial "${SUB[@]}" --drafts --jobs 1 >"$BD_TMP/a.out" 2>&1 &
a=$!
bd run trivial "${SUB[@]}" --drafts --jobs 1 >"$BD_TMP/b.out" 2>&1 &
b=$!
ra=0; rb=0
wait "$a" || ra=$?
wait "$b" || rb=$?
[ "$ra" = 0 ] && [ "$rb" = 0 ] && pass "both concurrent runs finished" || fail "concurrent runs exit $ra/$rb"
[ "$(records)" = $((before + 24)) ] && pass "24 records from two concurrent runs" || fail "records $before -> $(records)"
expect 0 - -- bd history verify
finish
