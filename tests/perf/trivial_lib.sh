# Shared by run_overhead.sh and warm_bench.sh (source it; it defines functions only).
# Both time `benchdesk run` on the trivial fixture against bare python over the same
# cases; these are the pieces they share.
#
# trivial_setup WORK N: in WORK (which must exist), the trivial fixture bench of N cases
# (fx/, format v2), the document benchdesk writes to a rubric's stdin (doc.json, for the
# bare loop), the scratch dirs tmp/ and cwd/ (TMPDIR is set to tmp/), and timer.py: runs
# its command ROUNDS times in a child and prints "<wall ms> <cpu ms> <busy ms>" of the best
# round by wall time: the CPU of the process tree (RUSAGE_CHILDREN: what each level reaped,
# so rubrics count too; the fairer number on a busy machine), and the whole machine's busy
# CPU in that round (/proc/stat: counts also what left the tree unreaped — a warm server
# and its cases — and whatever else ran). Sets $rubric.
#
# measure NAME COMMAND...: timer.py over COMMAND, $rounds rounds; "$wall_ms $cpu_ms" in $best,
# the machine's busy ms in $busy, one line on stderr. Needs $work, $rounds and die.
# Needs $PY, $src and $BD_BIN.
trivial_setup() {
    local work=$1 n=$2
    mkdir -p "$work/tmp" "$work/cwd"
    export TMPDIR="$work/tmp"
    "$PY" -s "$src/tests/fixtures/rubrics/mkbench.py" "$work/fx" --only trivial --trivial "$n" \
        --manifest "$work/manifest.json" >/dev/null
    # The fixture may be written in format v1; converting an already-v2 bench is a no-op.
    "$BD_BIN" -C "$work/fx" migrate >/dev/null 2>&1 || true
    rubric="$work/fx/bench/trivial/rubric.py"
    "$PY" - "$work/manifest.json" >"$work/doc.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))[0]
json.dump({"case": c["case"], "expected": c["case"]["expected"],
           "harness_output": c["harness_output"], "case_dir": "case"}, sys.stdout)
PY
    cat >"$work/timer.py" <<'PY'
import os, resource, subprocess, sys, time
def busy():  # seconds the machine's CPUs were not idle (user, nice, system, irq, softirq)
    with open("/proc/stat") as f:
        t = [int(x) for x in f.readline().split()[1:8]]
    return (t[0] + t[1] + t[2] + t[5] + t[6]) / os.sysconf("SC_CLK_TCK")
rounds = int(sys.argv[1])
best = None
for _ in range(rounds):
    before, b0 = resource.getrusage(resource.RUSAGE_CHILDREN), busy()
    t0 = time.monotonic()
    subprocess.run(sys.argv[2:], check=True)
    wall = time.monotonic() - t0
    after, b1 = resource.getrusage(resource.RUSAGE_CHILDREN), busy()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if best is None or wall < best[0]:
        best = (wall, cpu, b1 - b0)
print("%d %d %d" % (best[0] * 1000, best[1] * 1000, best[2] * 1000))
PY
}

measure() {
    local name=$1 out w c
    shift
    out=$("$PY" "$work/timer.py" "$rounds" "$@") || die "$name failed"
    read -r w c busy <<<"$out"
    best="$w $c"
    printf '  %-22s wall %6d ms  cpu %6d ms  busy %6d ms\n' "$name" "$w" "$c" "$busy" >&2
}
