#!/usr/bin/env bash
# The prepared spare (docs/runner.md#how-a-warm-case-runs): a warm server's spare starts its
# case's init ahead of the request, in fresh namespaces with its maps written.
#   - while a case runs, the next case's init is already there (PID 1 of a PID namespace
#     three levels down, its rubric's process not yet running the rubric), and it is the
#     init the next case then runs under (the same pid, now with the rubric running; the
#     test runs a private copy of the binaries, so other tests' inits do not count);
#   - every init is this build's benchdesk-supervisor (the init program), no copy of the
#     interpreter: only the rubric's process is one;
#   - the inits a run prepares and does not use — the first spare's, dropped when the
#     first case's rubric is compiled, and the last one's, dropped when the warm server
#     exits — are killed and reaped: none of the pids seen is left in /proc (same pid and
#     start time), and no process of this build's benchdesk-warm is left at all;
#   - the cases still see their start as a cold start's: at --jobs 1 (every case after the
#     first on a prepared init) the probe rubric sees pid 2 under its init 1, its own cwd
#     listing and everything else test_run_warm.sh compares, as cold;
#   - an init running its rubric holds none of the case's pipes (fds 0-2): the case's
#     EOF and its answer do not wait for the init's exit (docs/isolation.md, step 6);
#   - the adversarial cases give the same failure modes on prepared inits as cold;
#   - a prepared init killed before its case comes (SIGKILL from the host) is found dead
#     and reaped, and the case runs on a freshly cloned init with the result it would have;
#   - a probe case whose prepared init was killed runs on an init the supervisor program
#     clones, under the seccomp filter its warm server handed it (the program compiles
#     none): it sees what a cold start sees, and its netlink socket is killed by SIGSYS;
#   - as an unprivileged user (setpriv, when the test runs as root) the probe runs warm on
#     prepared inits too: pid 2 under 1, uid 1000, its own cwd;
#   - benchdesk-supervisor is built against musl where musl-gcc is installed;
#   - each prepared init's parent, its case's supervisor, is benchdesk-supervisor, not a
#     copy of the interpreter; without benchdesk-supervisor beside benchdesk-warm the
#     spares are forks of the warm server again, and the probe still sees a cold start's
#     view on prepared inits.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
private_binaries
require_warm
WARM_EXE="$BD_BIN-warm"
INIT_EXES="$BD_BIN-supervisor:$WARM_EXE" # the init program, or an init forked with its spare

# Where musl-gcc is (scripts/setup installs it), the program is built against musl: glibc's
# start asks the CPU about itself some fifty times, each a trap where the machine is a guest.
if command -v musl-gcc >/dev/null; then
    grep -qa GLIBC_TUNABLES "$BD_BIN-supervisor" && fail "benchdesk-supervisor is built against glibc" ||
        pass "benchdesk-supervisor is built against musl"
fi

# The poller: every few ms, each process of this build's benchdesk-supervisor (the init
# program) or benchdesk-warm (an init forked with its spare) that is PID 1 of a namespace
# three levels down (a case's init): pid, start time, whether its rubric runs (a child no
# longer named benchdesk-warm: the init program's child waits for its case under that name
# from the start), which of the descriptors 0-2 it holds, its parent's and its own program.
cat >"$BD_TMP/poll.py" <<'PY'
import json, os, sys, time
exes, stop, out = sys.argv[1].split(":"), sys.argv[2], open(sys.argv[3], "w")
def comm(p):
    return open("/proc/%s/comm" % p).read().strip()
def inits():
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            exe = os.readlink("/proc/%s/exe" % p)
            if exe not in exes:
                continue
            st = open("/proc/%s/status" % p).read()
            ns = [l.split()[1:] for l in st.splitlines() if l.startswith("NSpid:")][0]
            if len(ns) != 3 or ns[-1] != "1":
                continue
            start = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[19]
            kids = open("/proc/%s/task/%s/children" % (p, p)).read().split()
            running = any(comm(k) != "benchdesk-warm" for k in kids)
            stdio = sorted(f for f in os.listdir("/proc/%s/fd" % p) if f in ("0", "1", "2"))
            ppid = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[1]
            parent = os.path.basename(os.readlink("/proc/%s/exe" % ppid))
            # The reads above are not one snapshot: an init forked with its spare that
            # executed the init program and started its rubric between the first read and
            # now would look like a copy of the interpreter running a rubric. Such a sample
            # is dropped (the next poll sees the init as it is).
            if os.readlink("/proc/%s/exe" % p) != exe:
                continue
            yield int(p), start, running, stdio, parent, os.path.basename(exe)
        except (OSError, IndexError):
            continue
while not os.path.exists(stop):
    now = round(time.monotonic(), 4)
    for pid, start, running, stdio, parent, exe in inits():
        out.write(json.dumps([pid, start, running, stdio, now, parent, exe]) + "\n")
    out.flush()
    time.sleep(0.003)
PY

# ---- the adversarial cases on prepared inits, polled ----------------------------------
# (each behaviour once; the slow ones leave the next case's spare time to prepare)
rm -f "$BD_TMP/stop"
"$PY" "$BD_TMP/poll.py" "$INIT_EXES" "$BD_TMP/stop" "$BD_TMP/seen" &
poller=$!
for m in warm cold; do
    run_adversarial "$m" 1
    [ "$m" = warm ] && { touch "$BD_TMP/stop"; wait "$poller"; }
done
"$PY" - "$BD_TMP/seen" "$WARM_EXE" <<'PY' >"$BD_TMP/report" || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report"
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["BD_SOURCE_DIR"], "tests/cli"))
from warm_procs import report_left  # noqa: E402
seen = {}
running = {}  # (pid, start) -> (when, the stdio) of each poll while the init had its rubric
parents = set()  # the executables of the parents (supervisors) of inits running their rubric
programs = set()  # the executables of the inits running their rubric
for l in open(sys.argv[1]):
    pid, start, kids, stdio, when, parent, exe = json.loads(l)
    if kids:  # (a new spare's init runs in the server's memory until it executes its program)
        parents.add(parent)
        programs.add(exe)
    s = seen.setdefault((pid, start), [False, False])
    s[0 if not kids else 1] = True
    if kids:
        running.setdefault((pid, start), []).append((when, stdio))
# An init closes 0-2 right after handing its rubric its case (its exit then delays no EOF). Polls may
# fall between the two, for as long as the init waits for a CPU on a loaded machine; an init
# that keeps them is seen holding them across its rubric's life (the slow cases run 1 s).
def held_for(polls):
    t = [when for when, stdio in polls if stdio]
    return max(t) - min(t) if t else 0.0
held = [(k, round(held_for(p), 3)) for k, p in running.items() if held_for(p) >= 0.2]
print(("ok  " if running and not held else "FAIL")
      + " an init with its rubric holds none of the case's pipes (0-2): %d seen, holding: %s"
      % (len(running), held))
prepared = [k for k, (bare, used) in seen.items() if bare]
used = [k for k in prepared if seen[k][1]]
unused = [k for k in prepared if not seen[k][1]]
print(("ok  " if prepared else "FAIL") + " inits prepared ahead of their case were seen: %d" % len(prepared))
print(("ok  " if used else "FAIL") + " a prepared init then ran its case (the same pid with the rubric): %d" % len(used))
print(("ok  " if unused else "FAIL") + " a prepared init was dropped unused (the last spare's at least): %d" % len(unused))
print(("ok  " if parents == {"benchdesk-supervisor"} else "FAIL")
      + " every init's supervisor is benchdesk-supervisor, no copy of the interpreter: %s"
      % sorted(parents))
print(("ok  " if programs == {"benchdesk-supervisor"} else "FAIL")
      + " every init is the init program, no copy of the interpreter: %s" % sorted(programs))
report_left(seen, sys.argv[2], "no init seen is left in /proc")
PY
report_lines "$BD_TMP/report"
"$PY" "$BD_SOURCE_DIR/tests/cli/warm_modes.py" "$BD_TMP/adv.cold" "$BD_TMP/adv.warm" \
    "$BD_SOURCE_DIR/tests/fixtures/rubrics" "at --jobs 1" >"$BD_TMP/report1" || true
report_lines "$BD_TMP/report1"

# ---- a prepared init killed before its case: the case takes the ordinary path ------------
# While a slow case runs (sleep-forever: 1 s), the killer SIGKILLs the next case's prepared
# init; the spare finds it dead on the request, reaps it, and clones a fresh one.
cat >"$BD_TMP/killer.py" <<'PY'
import os, signal, sys, time
exes, stop, out = sys.argv[1].split(":"), sys.argv[2], open(sys.argv[3], "w")
running = {}  # init pid -> when first seen running its rubric
killed = set()
def inits():
    for p in os.listdir("/proc"):
        try:
            if not p.isdigit() or os.readlink("/proc/%s/exe" % p) not in exes:
                continue
            ns = [l.split()[1:] for l in open("/proc/%s/status" % p).read().splitlines()
                  if l.startswith("NSpid:")][0]
            if len(ns) != 3 or ns[-1] != "1":
                continue
            kids = open("/proc/%s/task/%s/children" % (p, p)).read().split()
            yield int(p), any(open("/proc/%s/comm" % k).read().strip() != "benchdesk-warm"
                              for k in kids)
        except (OSError, IndexError):
            continue
while not os.path.exists(stop):
    now = time.monotonic()
    seen = list(inits())
    for pid, kids in seen:
        if kids:
            running.setdefault(pid, now)
    slow = any(kids and now - running[pid] > 0.1 for pid, kids in seen)
    for pid, kids in seen:
        if not kids and slow and pid not in killed:
            start = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19]
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
            out.write("%d %s\n" % (pid, start))
            out.flush()
    time.sleep(0.005)
PY
rm -f "$BD_TMP/stop2"
"$PY" "$BD_TMP/killer.py" "$INIT_EXES" "$BD_TMP/stop2" "$BD_TMP/killed" &
killer=$!
rc=0
bd run adversarial --isolation namespaces --drafts --jobs 1 --start warm --json \
    --case sleep-forever --case pass --case ignore-sigterm --case fail-taxonomy \
    >"$BD_TMP/kill.warm" 2>"$BD_TMP/kill.err" || rc=$?
touch "$BD_TMP/stop2"
wait "$killer"
[ "$rc" = 0 ] && pass "the run with prepared inits killed completes" || fail "run -> $rc: $(cat "$BD_TMP/kill.err")"
"$PY" - "$BD_TMP/kill.warm" "$BD_TMP/killed" "$WARM_EXE" >"$BD_TMP/report3" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report3"
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["BD_SOURCE_DIR"], "tests/cli"))
from warm_procs import report_left  # noqa: E402
want = {"sleep-forever": "rubric.timeout", "pass": None, "ignore-sigterm": "rubric.timeout",
        "fail-taxonomy": "answer.wrong"}
got = {}
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "case.finished":
        fm = e["score"]["failure_modes"]
        got[e["case_id"]] = fm[0]["code"] if fm else None
print(("ok  " if got == want else "FAIL") + " each case's result as without the kill: %s" % got)
killed = [l.split() for l in open(sys.argv[2])]
print(("ok  " if killed else "FAIL") + " prepared inits killed before their case: %d" % len(killed))
report_left([tuple(k) for k in killed], sys.argv[3], "the killed inits are reaped")
PY
report_lines "$BD_TMP/report3"

# ---- the probe at --jobs 1: pid 2, parent 1, its own cwd, as cold ------------------------
for m in cold warm; do
    bd run probe --isolation namespaces --drafts --jobs 1 --start "$m" --json \
        >"$BD_TMP/probe.$m" 2>/dev/null || fail "probe run $m"
done
"$PY" - "$FX/.benchdesk/runs" >"$BD_TMP/report2" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report2"
import os, sys
sys.path.insert(0, os.path.join(os.environ["BD_SOURCE_DIR"], "tests/cli"))
from warm_probe import probe_runs, same_as_cold  # noqa: E402
cold, warm = probe_runs(sys.argv[1])
for case in sorted(cold):
    c, w = cold[case], warm[case]
    print(("ok  " if w["pid"] == 2 and w["ppid"] == 1 else "FAIL")
          + " %s: the rubric is PID 2 under its init (%s, %s)" % (case, w["pid"], w["ppid"]))
    print(("ok  " if "rubric.py" in w["listing"] and w["listing"] == c["listing"] else "FAIL")
          + " %s: its own cwd listing %s" % (case, w["listing"]))
    same_as_cold(cold, warm, case)
PY
report_lines "$BD_TMP/report2"

# ---- the ordinary path loads the filter its warm server handed over -----------------------
# The supervisor program compiles no seccomp filter: it takes its server's on its command
# line (jail_seccomp_handed.c). A case whose prepared init was killed (here probe-03, while
# probe-02's thread sleeps 0.2 s) starts on an init the program clones, under that filter:
# its probe must still see what a cold start sees, its netlink socket killed by SIGSYS.
bd run probe --isolation namespaces --drafts --jobs 1 --start cold >/dev/null 2>&1 || fail "probe run cold"
rm -f "$BD_TMP/stop3"
"$PY" "$BD_TMP/killer.py" "$INIT_EXES" "$BD_TMP/stop3" "$BD_TMP/killed3" &
killer=$!
bd run probe --isolation namespaces --drafts --jobs 1 --start warm >/dev/null 2>"$BD_TMP/kill3.err" ||
    fail "probe run with a prepared init killed: $(cat "$BD_TMP/kill3.err")"
touch "$BD_TMP/stop3"
wait "$killer"
"$PY" - "$FX/.benchdesk/runs" "$BD_TMP/killed3" >"$BD_TMP/report4" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report4"
import os, signal, sys
sys.path.insert(0, os.path.join(os.environ["BD_SOURCE_DIR"], "tests/cli"))
from warm_probe import probe_runs, same_as_cold  # noqa: E402
cold, warm = probe_runs(sys.argv[1])
killed = open(sys.argv[2]).read().split("\n")
print(("ok  " if killed[0] else "FAIL") + " a prepared init killed before its probe case: %d" % (len(killed) - 1))
for case in sorted(cold):
    same_as_cold(cold, warm, case)
    print(("ok  " if warm[case]["denied_call"] == "signal %d" % signal.SIGSYS else "FAIL")
          + " %s: a netlink socket is killed by the seccomp filter: %s" % (case, warm[case]["denied_call"]))
PY
report_lines "$BD_TMP/report4"
[ "$(procs_left)" = 0 ] && pass "no process left in the run's TMPDIR" || fail "processes left: $(procs_left)"

# ---- without benchdesk-supervisor: the spares are forks of the warm server -----------------
bd run probe --isolation namespaces --drafts --jobs 1 --start cold --json >/dev/null 2>&1 ||
    fail "probe run cold"
mv "$BD_BIN-supervisor" "$BD_TMP/supervisor.away"
rm -f "$BD_TMP/stop5" "$BD_TMP/seen5"
"$PY" "$BD_TMP/poll.py" "$INIT_EXES" "$BD_TMP/stop5" "$BD_TMP/seen5" &
poller=$!
bd run probe --isolation namespaces --drafts --jobs 1 --start warm --json \
    >"$BD_TMP/probe.fork" 2>"$BD_TMP/probe.fork.err" || fail "probe run without benchdesk-supervisor: $(cat "$BD_TMP/probe.fork.err")"
touch "$BD_TMP/stop5"
wait "$poller"
# The warm server's own fds 0-2 are /dev/null here too, where the launcher's descriptors
# leave fd 3 free for it to open /dev/null at (never the socket to the launcher, into
# which anything Python printed would go as a reply).
bd run adversarial --isolation namespaces --drafts --case sleep-forever --start warm >/dev/null 2>&1 &
slow=$!
stdio=""
for _ in $(seq 1 100); do
    for p in $(pgrep -x benchdesk-warm); do
        [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$WARM_EXE" ] || continue
        # the warm server: PID 1 of the warm jail's PID namespace
        [ "$(awk '/^NSpid:/ {print NF, $NF}' "/proc/$p/status" 2>/dev/null)" = "3 1" ] || continue
        stdio=$(std_fds "$p")
    done
    [ -n "$stdio" ] && break
    sleep 0.05
done
wait "$slow" || true
[ "$stdio" = "/dev/null " ] && pass "without benchdesk-supervisor the warm server's fds 0-2 are /dev/null" ||
    fail "without benchdesk-supervisor the warm server's fds 0-2: '$stdio'"
mv "$BD_TMP/supervisor.away" "$BD_BIN-supervisor"
[ "$(started "$BD_TMP/probe.fork")" = "warm " ] && pass "without benchdesk-supervisor the run still starts warm" ||
    fail "without benchdesk-supervisor: started '$(started "$BD_TMP/probe.fork")'"
"$PY" - "$FX/.benchdesk/runs" "$BD_TMP/seen5" >"$BD_TMP/report5" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report5"
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["BD_SOURCE_DIR"], "tests/cli"))
from warm_probe import probe_runs, same_as_cold  # noqa: E402
seen = list(map(json.loads, open(sys.argv[2])))
parents = {p[5] for p in seen if p[2]}
print(("ok  " if parents == {"benchdesk-warm"} else "FAIL")
      + " without benchdesk-supervisor the inits' supervisors are forks of the warm server: %s"
      % sorted(parents))
programs = {p[6] for p in seen if p[2]}
print(("ok  " if programs == {"benchdesk-warm"} else "FAIL")
      + " without benchdesk-supervisor the inits are forks of the warm server: %s" % sorted(programs))
cold, warm = probe_runs(sys.argv[1])
for case in sorted(cold):
    same_as_cold(cold, warm, case)
PY
report_lines "$BD_TMP/report5"

# ---- unprivileged: no hand-over, the case's uid is the invoking user's --------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    nb="$BD_TMP/nobody"
    mkdir -p "$nb/tmp"
    "$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$nb/fx" --state "$nb/state" \
        --python "$PY" --only probe >/dev/null
    chmod 755 "$BD_TMP"
    chown -R 65534:65534 "$nb"
    rc=0
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        env -i PATH=/usr/bin:/bin HOME=/nonexistent TMPDIR="$nb/tmp" ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
        UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" "$BD_BIN" -C "$nb/fx" run probe --isolation namespaces \
        --drafts --jobs 1 --start warm --json >"$BD_TMP/nb.out" 2>"$BD_TMP/nb.err" || rc=$?
    [ "$rc" = 0 ] && pass "as uid 65534: the warm probe run completes" || fail "as uid 65534 -> $rc: $(cat "$BD_TMP/nb.err")"
    "$PY" - "$BD_TMP/nb.out" "$nb/fx/.benchdesk/runs" >"$BD_TMP/report4" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report4"
import glob, json, os, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
start = [e.get("start") for e in ev if e["event"] == "run.started"]
fin = {e["case_id"]: e["score"]["passed"] for e in ev if e["event"] == "case.finished"}
print(("ok  " if start == ["warm"] and len(fin) == 4 and all(fin.values()) else "FAIL")
      + " as uid 65534: started warm, four cases passed: %s %s" % (start, fin))
d = sorted(glob.glob(os.path.join(sys.argv[2], "*.json")))[-1][:-5]
for c in sorted(fin):
    w = json.load(open(os.path.join(d, c + ".stderr")))
    ok = w["pid"] == 2 and w["ppid"] == 1 and w["ids"] == [1000, 1000, 1000, []] \
        and w["listing"] == ["case", "rubric.py"]
    print(("ok  " if ok else "FAIL") + " as uid 65534, %s: pid %s under %s, ids %s, cwd %s"
          % (c, w["pid"], w["ppid"], w["ids"], w["listing"]))
PY
    report_lines "$BD_TMP/report4"
fi
finish
