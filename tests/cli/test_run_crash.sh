#!/usr/bin/env bash
# Crash safety of the history under `benchdesk run` (docs/history.md): SIGKILL a run at
# random moments, 50 times, with two jobs (several cases finishing at once share one
# group commit); after each the chain verifies, no partial record exists (at most a
# torn final line, which is not a record), and no rubric process or temp dir outlives it. Two runs started at once produce one
# linear chain holding every record of both.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
"$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --state "$STATE" \
    --python "$PY" --trivial 12 --only trivial >/dev/null
hist="$FX/.benchdesk/history"
# Whole records: newline-terminated lines of the segments (a torn final line is not one).
records() { cat "$hist"/segments/*.jsonl 2>/dev/null | wc -l; }

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
    # A partial record can only be a torn final line (verify reports it, the next append
    # removes it); nothing but segments, the lock and the verify memo may be there.
    stray=$(ls "$hist" 2>/dev/null | grep -v -e '^segments$' -e '^\.lock$' -e '^VERIFIED$' || true)
    [ -z "$stray" ] || { fail "kill $i: unexpected file in history: $stray"; bad=1; break; }
done
[ "$bad" = 0 ] && pass "50 SIGKILLs: the chain verified after each ($(records) records)"
# The kills must really land mid-run: most runs cut short, not all finished.
[ "$full" -lt 40 ] && pass "$((50 - full)) of 50 runs were cut short" || fail "only $((50 - full)) of 50 runs were cut short"
# The exec server and every rubric die with benchdesk (PR_SET_PDEATHSIG, subreaper).
sleep 0.5
[ "$(procs_left)" = 0 ] && pass "no rubric process left" || fail "$(procs_left) processes left"

# A run after all that appends cleanly and removes a torn final line.
before=$(records)
expect 0 - -- bd run trivial "${SUB[@]}" --drafts --jobs 2
[ "$(records)" = $((before + 12)) ] && pass "next run appended 12 records" || fail "records $before -> $(records)"
[ "$(tail -c1 "$(ls "$hist"/segments/*.jsonl | tail -1)" | od -An -c | tr -d ' ')" = '\n' ] &&
    pass "no torn line left after a clean append" || fail "torn line left"

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
