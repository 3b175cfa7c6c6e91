#!/usr/bin/env bash
# Warm starts per worker slot (docs/runner.md#warm-starts): a warm run has one warm
# interpreter per `--jobs` slot, each in its own jail.
#   - `--jobs 1` starts one warm interpreter, `--jobs 2` two (counted by pid among the
#     run's own children, never by name);
#   - two cases running at once through two warm interpreters each have a jail of their
#     own (user namespace) and, as root, host uids of their own, from different slots' shares;
#   - results at `--jobs 2` are the cold start's;
#   - killing one warm interpreter mid-run fails at most the case it was running; the run
#     goes on (the slot's interpreter is started again) and finishes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
private_binaries
# The test watches the slow cases' processes from outside while they run: a deadline of
# 4 s, not 1, so a loaded machine still gives it time to see them.
FX="$BD_TMP/fx-slow"
"$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --state "$BD_TMP/state-slow" \
    --python "$PY" --only adversarial --slow-seconds 4 >/dev/null
case "$RUNTMP" in /tmp/*) ;; *) echo "SKIP: warm starts need TMPDIR under /tmp ($RUNTMP)"; exit 77 ;; esac
bd run adversarial --isolation namespaces --drafts --case pass --json >"$BD_TMP/w0" 2>"$BD_TMP/w0.err" || true
warm_or_skip "$BD_TMP/w0" "$BD_TMP/w0.err"

# The children of pid $1 (by pid, from /proc).
kids() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . || true; }
is_warm() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$BD_BIN-warm" ]; }
# benchdesk itself: $1 (a subshell running `bd`) or its child.
bd_pid() {
    local c
    for c in "$1" $(kids "$1"); do
        [ "$(readlink "/proc/$c/exe" 2>/dev/null)" = "$BD_BIN" ] && { echo "$c"; return; }
    done
}
# The warm interpreters' launchers of run $1: benchdesk's children that are benchdesk-warm.
launchers() {
    local c b
    b=$(bd_pid "$1")
    [ -n "$b" ] || return 0
    for c in $(kids "$b"); do is_warm "$c" && echo "$c"; done
    true
}
# The jailed warm server under launcher $1.
server_of() { local c; for c in $(kids "$1"); do is_warm "$c" && echo "$c"; done; true; }
# Every descendant of $1.
tree() { local c; for c in $(kids "$1"); do echo "$c"; tree "$c"; done; }
# One process (seccomp filter on) per case jail under pid $1.
rubrics() {
    local p ns seen=" "
    for p in $(tree "$1"); do
        grep -q '^Seccomp:.*2' "/proc/$p/status" 2>/dev/null && is_warm "$p" || continue
        ns=$(readlink "/proc/$p/ns/user" 2>/dev/null) || continue
        case "$seen" in *" $ns "*) continue ;; esac
        seen="$seen$ns "
        echo "$p"
    done
    true
}
# Empty (never a failure) when the process has just exited: the test polls live processes,
# and under load one may go between two reads.
uid_of() { awk '/^Uid:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }
ns_of() { readlink "/proc/$1/ns/user" 2>/dev/null || true; }

# ---- how many warm interpreters: --jobs 1 and --jobs 2 ----------------------------------
# (sleep-forever and ignore-sigterm each sleep into their 4 s deadline)
SLOW=(--case sleep-forever --case ignore-sigterm)
for jobs in 1 2; do
    bd run adversarial --isolation namespaces --drafts "${SLOW[@]}" --jobs "$jobs" --start warm \
        >/dev/null 2>&1 &
    run=$!
    most=0 L=() R=()
    declare -A seen=()
    for _ in $(seq 1 400); do
        mapfile -t L < <(launchers "$run")
        [ "${#L[@]}" -gt "$most" ] && most=${#L[@]}
        if [ "${#L[@]}" -ge "$jobs" ]; then
            # A snapshot while the cases run: the warm servers, then the cases. A process
            # that went while it was read makes the snapshot incomplete: take another.
            seen=() cu=() cn=()
            whole=1
            for l in "${L[@]}"; do
                s=$(server_of "$l") n="" u=""
                [ -n "$s" ] && n=$(ns_of "$s") && u=$(uid_of "$s")
                if [ -n "$n" ] && [ -n "$u" ]; then seen[$n]=$u; else whole=0; fi
            done
            mapfile -t R < <(rubrics "$run")
            for p in "${R[@]}"; do
                u=$(uid_of "$p") n=$(ns_of "$p")
                [ -n "$u" ] && [ -n "$n" ] || whole=0
                cu+=("$u") cn+=("$n")
            done
            [ "$whole" = 1 ] && [ "${#R[@]}" -ge "$jobs" ] && break
        fi
        kill -0 "$run" 2>/dev/null || break
        sleep 0.02
    done
    if [ "$jobs" = 2 ]; then
        # Two cases at once, one through each warm interpreter.
        [ "${#seen[@]}" = 2 ] && pass "each warm interpreter has a user namespace of its own" \
            || fail "warm interpreters' namespaces: ${!seen[*]}"
        if [ "${#R[@]}" -ge 2 ] && [ "$whole" = 1 ]; then
            [ "${cn[0]}" != "${cn[1]}" ] && [ -z "${seen[${cn[0]}]:-}" ] && [ -z "${seen[${cn[1]}]:-}" ] \
                && pass "two cases at once: two fresh jails, neither a warm interpreter's" \
                || fail "case namespaces ${cn[*]} (warm: ${!seen[*]})"
            if [ "$(id -u)" = 0 ]; then
                w=$(printf '%s\n' "${seen[@]}" | sort -u)
                [ "$(wc -l <<<"$w")" = 1 ] && pass "the run's warm jails share its uid block ($w)" \
                    || fail "warm uids: $w"
                a=$((cu[0] - w - 1)) b=$((cu[1] - w - 1))
                [ "${cu[0]}" != "${cu[1]}" ] && [ $((a % 2)) != $((b % 2)) ] \
                    && pass "the two cases run as host uids of their own, one per slot (${cu[*]})" \
                    || fail "case uids ${cu[*]} (warm $w)"
            fi
        else
            fail "did not see two cases running at once, each read whole (${R[*]})"
        fi
    fi
    wait "$run" || fail "--jobs $jobs run failed"
    [ "$most" = "$jobs" ] && pass "--jobs $jobs: $jobs warm interpreter(s)" \
        || fail "--jobs $jobs: $most warm interpreters"
done

# ---- results at --jobs 2 are the cold start's; one killed warm interpreter ------------------
CASES=(--case sleep-forever --case ignore-sigterm --case pass --case fail-taxonomy --case nan
    --case two-json --case empty-output --case exit-nonzero --case die-by-signal --case close-stdin)
modes() { "$PY" -c 'import json, re, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "case.finished":
        fm = e["score"]["failure_modes"]
        d = re.sub(r"\d+", "N", re.sub(r"/tmp/\S*", "<path>", fm[0].get("detail", "") if fm else ""))
        print(e["case_id"], fm[0]["code"] if fm else None, d, e["score"]["passed"])' "$1" | sort; }
for m in cold warm; do
    bd run adversarial --isolation namespaces --drafts "${CASES[@]}" --jobs 2 --start "$m" --json \
        >"$BD_TMP/r.$m" 2>/dev/null || fail "$m run"
done
modes "$BD_TMP/r.cold" >"$BD_TMP/m.cold"
modes "$BD_TMP/r.warm" >"$BD_TMP/m.warm"
[ "$(wc -l <"$BD_TMP/m.cold")" = 10 ] && cmp -s "$BD_TMP/m.cold" "$BD_TMP/m.warm" \
    && pass "--jobs 2: warm results are the cold start's, case by case" \
    || fail "warm vs cold: $(diff "$BD_TMP/m.cold" "$BD_TMP/m.warm" | head -5)"

bd run adversarial --isolation namespaces --drafts "${CASES[@]}" --jobs 2 --start warm --json \
    >"$BD_TMP/r.kill" 2>"$BD_TMP/r.kill.err" &
run=$!
victim="" victim_case="" first=""
for _ in $(seq 1 100); do
    mapfile -t L < <(launchers "$run")
    if [ "${#L[@]}" = 2 ]; then
        for l in "${L[@]}"; do
            s=$(server_of "$l")
            [ -n "$s" ] || continue
            r=$(rubrics "$s" | head -1)
            [ -n "$r" ] || continue
            # The case's dir: $TMPDIR/benchdesk-run-<tag>-<case>-XXXXXX
            cwd=$(readlink "/proc/$r/cwd" 2>/dev/null) || continue
            for c in sleep-forever ignore-sigterm; do
                case "$cwd" in *-"$c"-*) victim=$s victim_case=$c first="${L[*]}" ;; esac
            done
            [ -n "$victim" ] && break
        done
    fi
    [ -n "$victim" ] && break
    sleep 0.05
done
if [ -n "$victim" ]; then
    kill -KILL "$victim"
    restarted=""
    for _ in $(seq 1 100); do
        for l in $(launchers "$run"); do
            case " $first " in *" $l "*) ;; *) restarted=$l ;; esac
        done
        [ -n "$restarted" ] && break
        kill -0 "$run" 2>/dev/null || break
        sleep 0.05
    done
    rc=0
    wait "$run" || rc=$?
    [ "$rc" = 0 ] && pass "a run with a killed warm interpreter finishes" \
        || fail "killed warm interpreter: run -> $rc: $(head -c 300 "$BD_TMP/r.kill.err")"
    [ -n "$restarted" ] && pass "the killed slot's warm interpreter is started again ($restarted)" \
        || fail "no new warm interpreter after the kill"
    modes "$BD_TMP/r.kill" >"$BD_TMP/m.kill"
    differ=$( (diff "$BD_TMP/m.cold" "$BD_TMP/m.kill" || true) | awk '/^>/ {print $2}')
    [ "$(wc -l <"$BD_TMP/m.kill")" = 10 ] && { [ -z "$differ" ] || [ "$differ" = "$victim_case" ]; } \
        && pass "only the killed slot's case ($victim_case) may differ from cold: '${differ}'" \
        || fail "after the kill, differing cases: '$differ' (killed $victim_case)"
else
    wait "$run" || true
    fail "did not find a warm interpreter running a slow case to kill"
fi

[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"
finish
