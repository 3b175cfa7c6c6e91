#!/usr/bin/env bash
# Append before publish when the history becomes unwritable mid-run (docs/runner.md, docs/history.md):
# the first case is recorded and reported; then the history's mount turns read-only while
# the second case runs. Its append fails: the run ends with exit 4 (io.error), that case
# gets `case.not_recorded` (never `case.finished`), nothing after it is reported, the
# summary counts only the recorded case, and the chain still verifies with exactly the
# records that were appended.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v nsenter >/dev/null; then
    echo "SKIP: needs root, unshare and nsenter to turn the history read-only mid-run"
    exit 77
fi
bd run adversarial "${SUB[@]}" --drafts --case pass >/dev/null 2>&1 || fail "first run -> $?"
hist=$FX/.benchdesk/history
before=$(bd history verify --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["count"])')

# benchdesk in a private mount namespace where the history is its own (bind) mount.
TMPDIR="$RUNTMP" unshare -m sh -c 'mount --make-rprivate / && mount --bind "$1" "$1" && shift && exec "$@"' \
    sh "$hist" "$BD_BIN" -C "$FX" run adversarial "${SUB[@]}" --drafts --json --jobs 1 \
    --case pass --case sleep-forever --case spin-cpu >"$BD_TMP/ev" 2>"$BD_TMP/err" &
pid=$!
# Once `pass` is reported (its record is durable), make the history read-only; the
# next case (sleep-forever) runs a second more.
for _ in $(seq 1 200); do
    grep -q '"case.finished","case_id":"pass"' "$BD_TMP/ev" 2>/dev/null && break
    sleep 0.05
done
grep -q '"case.finished","case_id":"pass"' "$BD_TMP/ev" && pass "first case reported" ||
    fail "first case not reported: $(cat "$BD_TMP/ev" "$BD_TMP/err")"
nsenter -t "$pid" -m mount -o remount,bind,ro "$hist" && pass "history read-only mid-run" ||
    fail "cannot remount the history read-only"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 4 ] && pass "append failure -> exit 4" || fail "exit $rc: $(cat "$BD_TMP/err" "$BD_TMP/ev")"
cat "$BD_TMP/ev" "$BD_TMP/err" | grep -q 'io.error' && pass "io.error named" || fail "no io.error"
grep -q '"case.not_recorded","case_id":"sleep-forever"' "$BD_TMP/ev" &&
    pass "the unrecorded case is reported as not recorded" || fail "no case.not_recorded: $(cat "$BD_TMP/ev")"
n=$(grep -c '"case.finished"' "$BD_TMP/ev" || true)
[ "$n" = 1 ] && pass "only the recorded case is reported finished" || fail "$n case.finished: $(cat "$BD_TMP/ev")"
grep -q '"event":"run.finished"' "$BD_TMP/ev" && {
    "$PY" - "$BD_TMP/ev" <<'PY' && pass "summary counts the recorded case only" || fail "summary: $(tail -1 "$BD_TMP/ev")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"event"')]
s = ev[-1]["summary"]
assert ev[-1]["event"] == "run.finished" and s["cases"] == 1 and s["not_recorded"] == 1, s
kinds = [e["event"] for e in ev]
# causal order: the not-recorded case was started before it was reported
assert kinds.index("case.not_recorded") > [i for i, e in enumerate(ev) if e.get("case_id") == "sleep-forever"][0]
PY
} || fail "no run.finished event"
after=$(bd history verify --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["count"])')
[ "$after" = $((before + 1)) ] && pass "history verifies with exactly the appended record" ||
    fail "history count $before -> $after"
[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"
finish
