#!/usr/bin/env bash
# Nothing is left behind after a SIGKILL (docs/runner.md): temp dirs carry their owner's
# pid and start time; the next run sweeps those whose owner is dead, and never one whose
# owner is alive. Also: a run SIGKILLed mid-case leaves dirs that the next run removes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
bd migrate >/dev/null 2>&1 || true

# A dead owner: a pid that exited (its start time cannot match any live process).
sh -c 'exit 0' & dead=$!; wait "$dead"
mkdir -p "$RUNTMP/benchdesk-run-p${dead}s1-pass-AAAAAA/case/input" "$RUNTMP/benchdesk-gnupg-p${dead}s1-BBBBBB"
chmod 000 "$RUNTMP/benchdesk-run-p${dead}s1-pass-AAAAAA/case"
# A live owner: this shell, with its real start time.
live_start=$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' /proc/$$/stat)
mkdir -p "$RUNTMP/benchdesk-run-p$$s${live_start}-pass-CCCCCC"
# Not ours to judge: no owner tag.
mkdir -p "$RUNTMP/benchdesk-something-else"

bd run adversarial "${SUB[@]}" --drafts --case pass >/dev/null 2>&1 || fail "run -> $?"
[ ! -e "$RUNTMP/benchdesk-run-p${dead}s1-pass-AAAAAA" ] && pass "a dead run's case dir is swept" || fail "dead run's dir left"
[ ! -e "$RUNTMP/benchdesk-gnupg-p${dead}s1-BBBBBB" ] && pass "a dead process's GnuPG home is swept" || fail "dead GnuPG home left"
[ -e "$RUNTMP/benchdesk-run-p$$s${live_start}-pass-CCCCCC" ] && pass "a live owner's dir is kept" || fail "a live owner's dir was removed"
[ -e "$RUNTMP/benchdesk-something-else" ] && pass "an untagged dir is kept" || fail "an untagged dir was removed"
rm -rf "$RUNTMP"/benchdesk-*

# SIGKILL of a run mid-case, then a new run.
bd run adversarial "${SUB[@]}" --drafts --case sleep-forever >/dev/null 2>&1 &
pid=$!
for _ in $(seq 500); do [ "$(tmp_left)" -gt 0 ] && break; sleep 0.02; done
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
sleep 1.2
n=$(tmp_left)
[ "$n" -gt 0 ] && pass "SIGKILL mid-case left $n dir(s) (nothing can remove them then)" || pass "SIGKILL mid-case left nothing"
bd run adversarial "${SUB[@]}" --drafts --case pass >/dev/null 2>&1 || fail "run after kill -> $?"
[ "$(tmp_left)" = 0 ] && pass "the next run swept them" || fail "left after the next run: $(ls "$RUNTMP")"
finish
