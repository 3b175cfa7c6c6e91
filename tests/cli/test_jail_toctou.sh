#!/usr/bin/env bash
# Use-time integrity (docs/formats.md#digests): a case changed after the run's startup check but
# before it is handed to its rubric is not run. The run aborts with
# case.digest_mismatch (exit 1) and records nothing for that case; the rubric never sees
# the swapped bytes. Run under both isolation classes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
# The fixture may still be written in format v1; converting an already-v2 bench is a no-op.
bd migrate >/dev/null 2>&1 || true

CASES=$FX/bench/adversarial/cases
for iso in subprocess namespaces; do
    if [ "$iso" = namespaces ] && ! bd run adversarial --isolation namespaces --drafts --case pass >/dev/null 2>&1; then
        if [ "${BD_REQUIRE_NAMESPACES:-0}" = 1 ]; then fail "namespaces: the jail cannot be built here"; continue; fi
        echo "skip namespaces: the jail is unavailable here"; continue
    fi
    victim=$CASES/unknown-failure-mode/expected/answer.json
    cp "$victim" "$BD_TMP/answer.orig"
    before=$(bd history --json 2>/dev/null | grep -c unknown-failure-mode || true)
    ev=$BD_TMP/ev.$iso
    rm -f "$ev"
    rc=0
    # --jobs 1: sleep-forever holds the only slot for ~1 s; the next case is handed over
    # then, the one after (the victim) only when that slot frees.
    bd run adversarial --isolation "$iso" --drafts --jobs 1 --json --case sleep-forever \
        --case two-json --case unknown-failure-mode >"$ev" 2>"$BD_TMP/err.$iso" &
    pid=$!
    for _ in $(seq 200); do
        grep -q '"case.started".*sleep-forever\|sleep-forever.*"case.started"' "$ev" 2>/dev/null && break
        sleep 0.02
    done
    # The swap: same size, different bytes (a ground truth "fixed" mid-run).
    printf '{"answer": 41}\n' >"$victim"
    wait "$pid" || rc=$?
    cp "$BD_TMP/answer.orig" "$victim"
    [ "$rc" = 1 ] && pass "$iso: content swapped mid-run -> exit 1" ||
        fail "$iso: swap -> exit $rc: $(cat "$BD_TMP/err.$iso")"
    cat "$ev" "$BD_TMP/err.$iso" | grep -q "case.digest_mismatch" && pass "$iso: case.digest_mismatch reported" ||
        fail "$iso: no case.digest_mismatch: $(cat "$BD_TMP/err.$iso")"
    grep -q '"case.finished".*unknown-failure-mode\|unknown-failure-mode.*"case.finished"' "$ev" &&
        fail "$iso: the swapped case was reported finished" || pass "$iso: the swapped case was not reported"
    after=$(bd history --json 2>/dev/null | grep -c unknown-failure-mode || true)
    [ "$before" = "$after" ] && pass "$iso: nothing recorded for the swapped case" ||
        fail "$iso: history grew for the swapped case ($before -> $after)"
    [ "$(tmp_left)" = 0 ] && pass "$iso: no temp dir left" || fail "$iso: temp dirs left: $(ls "$RUNTMP")"
    # Restored: the same run goes through.
    rc=0
    bd run adversarial --isolation "$iso" --drafts --jobs 1 --case unknown-failure-mode >/dev/null 2>&1 || rc=$?
    [ "$rc" = 0 ] && pass "$iso: restored case runs" || fail "$iso: restored case -> $rc"
done
finish
