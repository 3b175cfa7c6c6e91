#!/usr/bin/env bash
# A rubric that leaves 20,000 empty directories in its working directory (docs/runner.md):
# the dir is removed off the event loop — the case is reported at once, the other cases
# go on meanwhile, the run ends only when the removal is done, and nothing is left. The
# removal time is printed. Both isolation classes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
. "$(dirname "$0")/jail_lib.sh"
jail_class litter-20k exit-3 memfd
for iso in subprocess namespaces; do
    if [ "$iso" = namespaces ]; then namespaces_or_skip exit-3; fi
    ev=$BD_TMP/ev.$iso
    # Each event line stamped with the time it arrived.
    bd run jailprobe --isolation "$iso" --drafts --jobs 2 --json 2>"$BD_TMP/err" |
        "$PY" -c 'import sys, time
for l in sys.stdin: print("%.3f %s" % (time.monotonic(), l.rstrip()), flush=True)' >"$ev" ||
        fail "$iso: run: $(cat "$BD_TMP/err")"
    "$PY" - "$ev" "$iso" <<'PY' && pass "$iso: the littered case was reported at once; the removal ran off the loop" || fail "$iso: $(cat "$ev" | cut -c1-150)"
import json, sys
rows = []
for l in open(sys.argv[1]):
    t, j = l.split(" ", 1)
    e = json.loads(j)
    rows.append((float(t), e["event"], e.get("case_id")))
fin = {c: t for t, k, c in rows if k == "case.finished"}
end = [t for t, k, c in rows if k == "run.finished"]
assert len(fin) == 3 and end, rows
t_lit, t_end = fin["litter-20k"], end[0]
print("%s: removal of 20,000 dirs after the case was reported: %.2f s (run.finished waits for it)"
      % (sys.argv[2], t_end - t_lit))
# The loop was free: every other case was reported before the removal ended.
assert all(t <= t_end for t in fin.values())
PY
    [ "$(tmp_left)" = 0 ] && pass "$iso: nothing left" || fail "$iso: left: $(ls "$RUNTMP" | head)"
done
finish
