#!/usr/bin/env bash
# Warm starts (docs/runner.md#warm-starts): a rubric forked from the jailed warm
# interpreter gets the same results as a cold start, case by case, and sees the same start:
#   - the whole adversarial fixture (30 misbehaviours) gives the same failure mode warm and
#     cold (cpu-rlimit: rubric.cpu_limit, or rubric.timeout on a starved machine, in either);
#   - a probe rubric sees the same pid (2), parent, argv, __name__, flags, sys.path, stdio,
#     signals, capabilities, limits, environment (os.environ and /proc/self/environ, with
#     nothing of benchdesk's own), cwd listing, descriptors and processes — each case its
#     own random state; of the modules imported before its first line, a warm rubric has
#     json and what its code names of the allowlist, nothing else;
#   - what the compiler warns (compiled once, warm) is on each case's stderr, warm as cold;
#   - the C stack: a rubric recursing in C a third of RLIMIT_STACK deep passes warm as cold,
#     and one recursing past it crashes (SIGSEGV) warm as cold;
#   - each case's rubric process asks for the learned pages, before its case comes;
#   - the warm interpreter itself is jailed: its own user namespace and an unprivileged
#     host uid, and each case runs as a host uid of its own;
#   - the run says which start it used (summary, --json, the table) and why not warm.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
private_binaries
require_warm

# ---- the adversarial fixture, warm and cold -------------------------------------------
for m in cold warm; do
    run_adversarial "$m" 2
done
"$PY" "$BD_SOURCE_DIR/tests/cli/warm_modes.py" "$BD_TMP/adv.cold" "$BD_TMP/adv.warm" \
    "$BD_SOURCE_DIR/tests/fixtures/rubrics" >"$BD_TMP/report" || true
report_lines "$BD_TMP/report"

# ---- the probe: what a rubric sees of its start ------------------------------------------

for m in cold warm; do
    BENCHDESK_TEST_SECRET=hunter2 bd run probe --isolation namespaces --drafts --jobs 2 \
        --start "$m" --json >"$BD_TMP/probe.$m" 2>/dev/null || fail "probe run $m"
done
"$PY" - "$FX/.benchdesk/runs" "$BD_TMP/probe.cold" "$BD_TMP/probe.warm" >"$BD_TMP/report2" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report2"
import json, os, signal, sys
sys.path.insert(0, os.path.join(os.environ["BD_SOURCE_DIR"], "tests/cli"))
from warm_probe import probe_runs, same_as_cold  # noqa: E402
cold, warm = probe_runs(sys.argv[1])
for case in sorted(cold):
    same_as_cold(cold, warm, case)
for p in sys.argv[2:]:
    fin = [json.loads(l) for l in open(p)]
    fin = {e["case_id"]: e["score"]["passed"] for e in fin if e["event"] == "case.finished"}
    ok = len(fin) == 4 and all(fin.values())
    print(("ok  " if ok else "FAIL") + " %s: the score leaves plainly, from atexit, from a thread, before sys.exit: %s" % (os.path.basename(p), fin))
w = warm["probe-00"]
print(("ok  " if w["pid"] == 2 and w["ppid"] == 1 else "FAIL") + " the warm rubric is PID 2 under its init (%s, %s)" % (w["pid"], w["ppid"]))
print(("ok  " if w["name"] == "__main__" and w["argv"] == ["rubric.py"] else "FAIL") + " __name__ and argv: %s %s" % (w["name"], w["argv"]))
keys = [k for k, _ in w["environ"]]
print(("ok  " if keys == ["LANG", "PATH", "PYTHONHASHSEED", "PYTHONIOENCODING"] else "FAIL") + " os.environ holds the four scrubbed keys: %s" % keys)
bad = [m for m in (cold, warm) for c in m.values() if "hunter2" in json.dumps(c) or "BENCHDESK" in c["proc_environ"]]
print(("ok  " if not bad else "FAIL") + " nothing of benchdesk's environment in os.environ or /proc/self/environ")
print(("ok  " if w["sig_status"]["CapEff"] == "0000000000000000" and w["sig_status"]["Seccomp"] == "2" else "FAIL")
      + " no capabilities, the seccomp filter: %s" % w["sig_status"])
calls = {(name, case): c["denied_call"] for name, m in (("cold", cold), ("warm", warm))
         for case, c in m.items()}
print(("ok  " if set(calls.values()) == {"signal %d" % signal.SIGSYS} else "FAIL")
      + " a netlink socket kills its process with SIGSYS, cold and warm: %s" % sorted(set(calls.values())))
pre = {name: sorted(set(tuple(c["preloaded"]) for c in m.values()))
       for name, m in (("cold", cold), ("warm", warm))}
print(("ok  " if pre == {"cold": [()], "warm": [("json", "statistics")]} else "FAIL")
      + " imported before the first line: cold nothing, warm json and the allowlisted module"
      " the code names, never one it does not name nor one off the list: %s" % pre)
for name, m in (("cold", cold), ("warm", warm)):
    r = [c["random"] for c in m.values()]
    print(("ok  " if len(set(r)) == len(r) else "FAIL") + " %s: each case its own random state" % name)
PY
report_lines "$BD_TMP/report2"

# ---- the warm interpreter is jailed; each case has a host uid of its own ------------------
# (kill-supervisor sleeps into its 5 s deadline under namespaces)
bd run adversarial --isolation namespaces --drafts --case kill-supervisor --start warm >/dev/null 2>&1 &
runner=$!
warm_uid="" case_uid="" host_ns=$(readlink /proc/self/ns/user) warm_ns="" warm_stdio=""
for _ in $(seq 1 100); do
    for p in $(pgrep -x benchdesk-warm) $(pgrep -f '^/usr/bin/python3.* -s rubric.py$'); do
        [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$BD_BIN-warm" ] || continue
        st=$(cat "/proc/$p/status" 2>/dev/null) || continue
        ns=$(readlink "/proc/$p/ns/user" 2>/dev/null) || continue
        [ "$ns" = "$host_ns" ] && continue
        u=$(awk '/^Uid:/ {print $2}' <<<"$st")
        # (a case's init prepared ahead, three PID namespaces down, has no filter yet)
        if grep -q '^Seccomp:.*2' <<<"$st"; then case_uid=$u
        elif [ "$(awk '/^NSpid:/ {print NF}' <<<"$st")" = 3 ]; then
            warm_uid=$u warm_ns=$ns
            # (the warm server itself: PID 1 of its namespace; its spares are there too)
            [ "$(awk '/^NSpid:/ {print $NF}' <<<"$st")" = 1 ] &&
                warm_stdio=$(std_fds "$p")
        fi
    done
    [ -n "$warm_uid" ] && [ -n "$case_uid" ] && break
    sleep 0.05
done
wait "$runner" || true
if [ "$(id -u)" = 0 ]; then
    [ -n "$warm_uid" ] && [ "$warm_uid" -ge 1883242496 ] && pass "the warm interpreter runs as an unprivileged host uid of its own ($warm_uid)" \
        || fail "warm interpreter uid: '$warm_uid'"
    [ -n "$case_uid" ] && [ "$case_uid" != "$warm_uid" ] && [ "$case_uid" -gt "$warm_uid" ] && pass "its case runs as another host uid ($case_uid)" \
        || fail "case uid '$case_uid' (warm '$warm_uid')"
else
    [ "$warm_uid" = "$(id -u)" ] && pass "the warm interpreter runs as the invoking user" || fail "warm uid '$warm_uid'"
fi
[ -n "$warm_ns" ] && pass "the warm interpreter has a user namespace of its own" || fail "no jailed warm interpreter found"
# Its own streams are /dev/null, never the socket to its launcher (where anything Python
# printed, a compiler's warning, would be read as a reply).
[ "$warm_stdio" = "/dev/null " ] && pass "the warm interpreter's fds 0-2 are /dev/null" ||
    fail "the warm interpreter's fds 0-2: '$warm_stdio'"

# ---- which start, and why not warm ----------------------------------------------------------
bd run probe --isolation subprocess --drafts --case probe-00 --json >"$BD_TMP/sub" 2>/dev/null
grep -q '"start":"cold","start_reason":"warm starts need the namespaces isolation class"' "$BD_TMP/sub" \
    && pass "subprocess runs cold and says why" || fail "subprocess: $(head -1 "$BD_TMP/sub")"
out=$(bd run probe --isolation namespaces --drafts --case probe-00 --start cold 2>/dev/null)
grep -q '^  start *cold$' <<<"$out" && pass "the table says: start cold" || fail "table: $out"
out=$(bd run probe --isolation namespaces --drafts --case probe-00 2>/dev/null)
grep -q '^  start *warm$' <<<"$out" && pass "the table says: start warm" || fail "table: $out"
latest=$(ls -t "$FX"/.benchdesk/runs/*.json | head -1)
grep -q '"start":"warm"' "$latest" && pass "the summary file says start warm" || fail "summary: $latest"
mkdir -p "$FX/.benchdesk"
printf 'runner:\n  start: cold\n' >"$FX/.benchdesk/config.yaml"
bd run probe --isolation namespaces --drafts --case probe-00 --json >"$BD_TMP/cfg" 2>/dev/null
[ "$(started "$BD_TMP/cfg")" = "cold " ] && pass "runner.start: cold in the config" || fail "config cold: $(started "$BD_TMP/cfg")"
bd run probe --isolation namespaces --drafts --case probe-00 --start warm --json >"$BD_TMP/cfg2" 2>/dev/null
[ "$(started "$BD_TMP/cfg2")" = "warm " ] && pass "--start warm overrides the config" || fail "override: $(started "$BD_TMP/cfg2")"
printf 'runner:\n  start: tepid\n' >"$FX/.benchdesk/config.yaml"
expect 2 config.schema_invalid -- bd run probe --drafts --case probe-00
rm -f "$FX/.benchdesk/config.yaml"
expect 2 usage.bad_args -- bd run probe --drafts --start lukewarm

# ---- cancel (SIGINT: exit 130) and SIGKILL of benchdesk: no warm process is left ------
warm_left() {
    local p n=0
    for p in $(pgrep -x benchdesk-warm) $(pgrep -x benchdesk-super) \
        $(pgrep -f '^/usr/bin/python3.* -s rubric.py$'); do
        case "$(readlink "/proc/$p/exe" 2>/dev/null)" in
        "$BD_BIN-warm" | "$BD_BIN-supervisor") n=$((n + 1)) ;;
        esac
    done
    echo "$n"
}
for sig in INT KILL; do
    TMPDIR="$RUNTMP" "$BD_BIN" -C "$FX" run adversarial --isolation namespaces --drafts \
        --case kill-supervisor --case sleep-forever --jobs 2 --start warm >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
        [ "$(warm_left)" -ge 3 ] && break
        sleep 0.05
    done
    sleep 0.3
    kill -"$sig" "$pid"
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
    want=130
    [ "$sig" = KILL ] && want=137
    [ "$rc" = "$want" ] && pass "SIG$sig of a warm run: exit $rc" || fail "SIG$sig of a warm run -> $rc"
    for _ in $(seq 1 40); do
        [ "$(warm_left)" = 0 ] && break
        sleep 0.05
    done
    [ "$(warm_left)" = 0 ] && pass "SIG$sig: no warm process left" || fail "SIG$sig: $(warm_left) warm processes left"
done
# What SIGKILL leaves (the staging dir) the next run sweeps.
bd run probe --isolation namespaces --drafts --case probe-00 >/dev/null 2>&1 || fail "run after SIGKILL"

# ---- what the compiler warns reaches each case's stderr, warm as cold ----------------------
# The warm interpreter compiles the rubric once and records what the compiler warned; each
# case shows it again on its own stderr, under its own path, as a cold start's compile does.
printf 'if len(sys.argv) is 1:\n    pass\n' >>"$FX/bench/trivial/rubric.py"
bd pin trivial >/dev/null 2>&1 || fail "pin trivial"
for m in cold warm; do
    bd run trivial --isolation namespaces --drafts --jobs 2 --start "$m" --json \
        >"$BD_TMP/sw.$m" 2>/dev/null || fail "the run with a compile-time warning, $m"
    rid=$(sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p' "$BD_TMP/sw.$m" | head -1)
    # the case's path masked: its jail shows its own temp dir
    for e in "$FX/.benchdesk/runs/$rid/"*.stderr; do
        [ -e "$e" ] && sed 's|^/[^:]*/rubric\.py:|rubric.py:|' "$e"
    done >"$BD_TMP/sw.$m.err"
done
n=$(grep -c '^rubric.py:[0-9]*: SyntaxWarning: "is" with a literal' "$BD_TMP/sw.cold.err" || :)
[ "$n" = 3 ] && pass "cold: each of the 3 cases' stderr shows the compiler's SyntaxWarning" ||
    fail "cold stderr: $(head -5 "$BD_TMP/sw.cold.err")"
cmp -s "$BD_TMP/sw.cold.err" "$BD_TMP/sw.warm.err" &&
    pass "warm: the same stderr, case by case, paths masked" ||
    fail "warm stderr differs: $(diff "$BD_TMP/sw.cold.err" "$BD_TMP/sw.warm.err" | head -8)"

# ---- the C stack: as deep as cold, and its overflow ends as it does cold --------------------
# A warm rubric runs on the warm server's main stack, below the frames of the server and of
# its case's init (docs/runner.md#how-a-warm-case-runs), which grows under RLIMIT_STACK as a
# cold start's does. A repr of a nested list recurses in C, about 160 bytes a level here:
# case-0000 nests a third of RLIMIT_STACK's worth and must pass (a small stack of its own
# would crash), the other cases nest a million deep until the stack is gone (with a finite
# RLIMIT_STACK, as here: SIGSEGV, rubric.crashed) — warm as cold.
stack_kib=$(ulimit -s)
depth=20000
[ "$stack_kib" = unlimited ] || depth=$((stack_kib * 1024 / 160 / 3))
cat >"$FX/bench/trivial/rubric.py" <<RUBRIC
import json, sys
doc = json.load(sys.stdin)
sys.setrecursionlimit(10 ** 8)
x = []
for _ in range($depth if doc["case"]["case_id"] == "case-0000" else 1000000):
    x = [x]
repr(x)
sys.stdout.write(json.dumps({"passed": True, "score": 1.0, "breakdown": {},
                             "failure_modes": [], "cost_usd": 0.0, "wall_clock_ms": 0}))
RUBRIC
bd pin trivial >/dev/null 2>&1 || fail "pin trivial (the C stack)"
for m in cold warm; do
    bd run trivial --isolation namespaces --drafts --jobs 1 --start "$m" --json \
        >"$BD_TMP/so.$m" 2>/dev/null || :
done
"$PY" - "$BD_TMP/so.cold" "$BD_TMP/so.warm" "$stack_kib" "$depth" >"$BD_TMP/report_so" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report_so"
import os, sys
sys.path.insert(0, os.path.join(os.environ["BD_SOURCE_DIR"], "tests/cli"))
from warm_modes import modes  # noqa: E402
cold, warm = modes(sys.argv[1]), modes(sys.argv[2])
for run, got in (("cold", cold), ("warm", warm)):
    print(("ok  " if got.get("case-0000", (0, 0, False))[2] else "FAIL")
          + " %s: a list nested %s deep (a third of the stack) is printed: %s"
          % (run, sys.argv[4], got.get("case-0000")))
print(("ok  " if len(cold) == 3 and cold == warm else "FAIL")
      + " a million deep: the same failure mode and detail warm as cold, case by case: cold %s, warm %s"
      % (sorted(cold.items()), sorted(warm.items())))
if sys.argv[3] != "unlimited":
    deep = [v for k, v in cold.items() if k != "case-0000"]
    crashed = all(c == "rubric.crashed" and "SIGSEGV" in d for c, d, _ in deep)
    print(("ok  " if deep and crashed else "FAIL")
          + " (with RLIMIT_STACK %s KiB the overflow is a crash by SIGSEGV: %s)"
          % (sys.argv[3], sorted(set(deep))))
PY
report_lines "$BD_TMP/report_so"

# ---- the pages a case writes, asked for at once (docs/runner.md) ---------------------------
# Each case's rubric process (the one that names itself python3.11) asks for the pages the
# warm server learned from its stand-in (MADV_POPULATE_WRITE: in process_madvise calls on
# itself where the kernel takes that advice there, else a madvise a run), at most 4,096 of
# them, and asks for nothing else that way — once, while it waits for its case (so the
# process prepared for a case that never comes asks too).
# (LeakSanitizer cannot run under a tracer: off for this one run.)
if command -v strace >/dev/null; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" TMPDIR="$RUNTMP" \
        strace -f -qq -e trace=madvise,process_madvise,prctl,recvmsg -o "$BD_TMP/madvise" \
        "$BD_BIN" -C "$FX" run probe --isolation namespaces --drafts --start warm \
        >"$BD_TMP/madvise.out" 2>&1 || fail "the probe run under strace: $(tail -3 "$BD_TMP/madvise.out")"
    "$PY" - "$BD_TMP/madvise" >"$BD_TMP/report_pop" <<'PY' || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/report_pop"
import re, sys
pages, ran, before = {}, set(), set()
received = set()  # processes that received something (a rubric's process: its case)
vector = {}  # pid -> a process_madvise call of MADV_POPULATE_WRITE whose result is pending
def asked(pid, n):
    pages[pid] = pages.get(pid, 0) + n // 4096
    if pid not in received:
        before.add(pid)
for l in open(sys.argv[1]):
    # (a call another process's line interrupts ends "<unfinished ...>": counted too)
    m = re.match(r"(\d+) +madvise\(0x[0-9a-f]+, (\d+), MADV_POPULATE_WRITE", l)
    if m:
        asked(m.group(1), int(m.group(2)))
    # process_madvise: the pages it copied are its result (bytes), maybe on a resumed line.
    m = re.match(r"(\d+) +process_madvise\(.*MADV_POPULATE_WRITE", l)
    if m:
        vector[m.group(1)] = True
    m = re.match(r"(\d+) +(?:process_madvise\(|<\.\.\. process_madvise resumed>).*\) += (\d+)", l)
    if m and vector.pop(m.group(1), False):
        asked(m.group(1), int(m.group(2)))
    m = re.match(r"(\d+) +prctl\(PR_SET_NAME, \"python3", l)
    if m:
        ran.add(m.group(1))
    m = re.match(r"(\d+) +recvmsg\(", l)
    if m:
        received.add(m.group(1))
n = sorted(pages.get(p, 0) for p in ran)
print(("ok  " if len(n) == 4 and min(n) > 0 else "FAIL")
      + " each of the 4 cases' rubric processes asks for the learned pages at once: %s" % n)
print(("ok  " if n and min(n) > 0 and max(n) <= 4096 else "FAIL")
      + " between 1 and 4,096 pages each: %s" % n)
print(("ok  " if ran and ran <= before else "FAIL")
      + " each asks before it receives its case: %d of %d" % (len(ran & before), len(ran)))
PY
    report_lines "$BD_TMP/report_pop"
else
    fail "strace is missing (scripts/setup --test-deps installs it)"
fi

[ "$(tmp_left)" = 0 ] && pass "no temp dir left" || fail "temp dirs left: $(ls "$RUNTMP")"
finish
