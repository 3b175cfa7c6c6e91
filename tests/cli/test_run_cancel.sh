#!/usr/bin/env bash
# Cancelling a run (SIGINT, SIGTERM) kills running cases, removes their temp dirs,
# reports what finished and exits 130; killing benchdesk outright (SIGKILL) still takes
# every rubric process down with it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"

slow=(--isolation subprocess --case sleep-forever --case ignore-sigterm --case spin-cpu --case cpu-rlimit)

wait_started() { # file count
    for _ in $(seq 100); do
        [ "$(grep -c '"event":"case.started"' "$1" 2>/dev/null)" -ge "$2" ] && return 0
        sleep 0.05
    done
    return 1
}

for sig in INT TERM; do
    : >"$BD_TMP/ev"
    TMPDIR="$RUNTMP" "$BD_BIN" -C "$FX" run adversarial --drafts --jobs 4 --json "${slow[@]}" >"$BD_TMP/ev" 2>"$BD_TMP/err" &
    pid=$!
    wait_started "$BD_TMP/ev" 4 && pass "SIG$sig: 4 cases running" || fail "SIG$sig: cases did not start"
    sleep 0.2
    kill -"$sig" "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" = 130 ] && pass "SIG$sig -> exit 130" || fail "SIG$sig -> exit $rc: $(cat "$BD_TMP/err")"
    tail -n 1 "$BD_TMP/ev" | grep -q '"event":"run.finished"' && pass "SIG$sig: run.finished reported" \
        || fail "SIG$sig: no run.finished: $(tail -n 2 "$BD_TMP/ev")"
    [ "$(grep -c '"event":"case.finished"' "$BD_TMP/ev")" = 0 ] && pass "SIG$sig: nothing recorded for unfinished cases" \
        || fail "SIG$sig: unfinished cases reported"
    [ "$(tmp_left)" = 0 ] && pass "SIG$sig: no temp dir left" || fail "SIG$sig: temp dirs left: $(ls "$RUNTMP")"
    [ "$(procs_left)" = 0 ] && pass "SIG$sig: no rubric process left" || fail "SIG$sig: processes left"
    pgrep -f "__exec-server v1 $pid\$" >/dev/null && fail "SIG$sig: exec server left" || pass "SIG$sig: exec server gone"
done

# SIGKILL: no chance to clean temp dirs, but no process survives (PR_SET_PDEATHSIG chain).
TMPDIR="$RUNTMP" "$BD_BIN" -C "$FX" run adversarial --drafts --jobs 4 --json "${slow[@]}" >"$BD_TMP/ev" 2>/dev/null &
pid=$!
wait_started "$BD_TMP/ev" 4 && pass "SIGKILL: 4 cases running" || fail "SIGKILL: cases did not start"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
for _ in $(seq 40); do [ "$(procs_left)" = 0 ] && break; sleep 0.05; done
[ "$(procs_left)" = 0 ] && pass "SIGKILL: every rubric process died with benchdesk" || fail "SIGKILL: processes left"
pgrep -f "__exec-server v1 $pid\$" >/dev/null && fail "SIGKILL: exec server left" || pass "SIGKILL: exec server gone"
finish
