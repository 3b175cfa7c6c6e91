#!/usr/bin/env bash
# Benchmark: `benchdesk pin TC CASE` (one case) on a large task class, repeated, both when
# the case's pin does not change and when it does (its line in digests.yaml set to a
# digest no case has first, and that change synced so it does not weigh on the pin's own
# fsync). Prints wall time (min and median), CPU time (user + system, median) and peak
# RSS (max) for this build ("after") and, side by side, another ("before", when given).
# Not a timed test. The aim (docs/formats.md, "Large benches"): 50 ms at 100,000 cases.
#
#   tests/perf/pin_one.sh ROOT [AFTER_BINARY] [BEFORE_BINARY]
#       ROOT: a bench made by tests/perf/make_big_bench.sh (task class "bulk"); its
#       digests.yaml is written to. Default after: build/release/src/benchdesk.
#   REPEAT=21   runs of each kind
#   CASE=ID     the case (default: the 500th, or the last when there are fewer)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
root=${1:?usage: pin_one.sh ROOT [AFTER_BINARY] [BEFORE_BINARY]}
after=${2:-$src/build/release/src/benchdesk}
before=${3:-}
repeat=${REPEAT:-21}
cases="$root/bench/bulk/cases"
[ -f "$cases/digests.yaml" ] || { echo "pin_one: no $cases/digests.yaml" >&2; exit 2; }
[ -x "$after" ] || { echo "pin_one: no benchmark binary $after" >&2; exit 2; }
one=${CASE:-$(ls "$cases" | awk '$0 != "digests.yaml" { ids[++n] = $0 } END { k = n < 500 ? n : 500; print ids[k] }')}
echo "pin_one: $(grep -c '^  ' "$cases/digests.yaml") pins, case $one, $repeat runs of each kind"

python3 - "$root" "$one" "$repeat" "$after" ${before:+"$before"} <<'PY'
import os, statistics, subprocess, sys, time

root, case, repeat, bins = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
path = os.path.join(root, "bench", "bulk", "cases", "digests.yaml")
key = ("\n  %s: blake3:" % case).encode()

def spoil():
    with open(path, "rb") as f:
        data = f.read()
    i = data.index(key) + len(key)
    with open(path, "r+b") as f:
        f.seek(i)
        f.write(b"0" * 64)
        f.flush()
        os.fsync(f.fileno())

def run(binary):
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "-C", root, "pin", "bulk", case], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace").strip()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("pin_one: %s failed: %s" % (binary, err))
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss / 1024

rows = []
for who, binary in zip(("after", "before"), bins):
    run(binary)  # the file as this build writes it
    for kind in ("unchanged", "changing"):
        w, c, m = [], [], []
        for _ in range(repeat):
            if kind == "changing":
                spoil()
            wall, cpu, rss = run(binary)
            w.append(wall); c.append(cpu); m.append(rss)
        rows.append((who, kind, min(w), statistics.median(w), statistics.median(c), max(m)))
print("%-7s %-10s %12s %12s %12s %9s" % ("build", "pin", "wall min", "wall median",
                                           "cpu median", "peak RSS"))
for who, kind, wmin, wmed, cmed, mmax in rows:
    print("%-7s %-10s %9.1f ms %9.1f ms %9.1f ms %6.0f MB" % (who, kind, wmin, wmed, cmed, mmax))
with open("/proc/loadavg") as f:
    print("load average: " + " ".join(f.read().split()[:3]))
PY
