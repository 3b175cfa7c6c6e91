#!/usr/bin/python3 -s
"""fork_size.py — what each module the warm interpreter imports costs every case
(docs/runner.md#the-allowlist-a-rubric-names): a case's rubric process is a fork of the
warm interpreter, so `fork` copies the page tables of all its memory and the case's exit
tears them down, whether the rubric uses a module or not.

    python3 -s tests/perf/fork_size.py [N]      (default 2000 forks a variant)

For each variant, a fresh interpreter imports the modules, freezes its objects as the warm
interpreter does (gc.freeze) and then N times forks a child that only calls os._exit(0);
the parent waits for each. Variants: nothing imported; json (what the warm interpreter
imports at its start); the whole allowlist of src/run/warm.h (read from it, so the two
cannot drift: what the warm interpreter imported at its start before it imported only
what a rubric names). The variants take turns, three rounds; the table has each
variant's anonymous resident memory and the median over the rounds of, per fork: wall
time, the parent's CPU (fork, wait) and the child's (its exit), and their sum."""
import statistics
import subprocess
import sys

from warm_allowlist import allowlist

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000

CHILD = r"""
import gc, os, resource, sys, time
for name in sys.argv[2:]:
    __import__(name)
gc.freeze()
anon = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("RssAnon"))
n = int(sys.argv[1])
r0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
t1, r1, c1 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
us = lambda a, b: (b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime) / n * 1e6
print(anon, (t1 - t0) / n * 1e6, us(r0, r1), us(c0, c1))
"""


def main():
    allow = allowlist()  # (warm_allowlist.py)
    variants = [("nothing imported", []), ("json (the start)", allow[:1]),
                ("the whole allowlist", allow)]
    seen = {name: [] for name, _ in variants}
    for _ in range(3):
        for name, mods in variants:
            out = subprocess.run([sys.executable, "-s", "-c", CHILD, str(N)] + mods,
                                 check=True, capture_output=True, text=True).stdout.split()
            seen[name].append([float(x) for x in out])
    print("fork_size: %d forks a variant, 3 rounds, load %s" % (
        N, " ".join(open("/proc/loadavg").read().split()[:3])))
    print("%-22s %9s %9s %11s %10s %9s" % ("variant", "anon MB", "wall µs", "parent µs",
                                            "child µs", "CPU µs"))
    base = None
    for name, _ in variants:
        rows = seen[name]
        med = [statistics.median(r[i] for r in rows) for i in range(4)]
        cpu = med[2] + med[3]
        base = cpu if base is None else base
        print("%-22s %9.1f %9.0f %11.0f %10.0f %9.0f" % (name, med[0] / 1024, med[1], med[2],
                                                          med[3], cpu))
    big = [statistics.median(r[i] for r in seen["the whole allowlist"]) for i in range(4)]
    small = [statistics.median(r[i] for r in seen["nothing imported"]) for i in range(4)]
    mb = (big[0] - small[0]) / 1024
    if mb > 0:
        print("CPU a fork per MB of anonymous memory: %.0f µs" % (
            ((big[2] + big[3]) - (small[2] + small[3])) / mb))


main()
