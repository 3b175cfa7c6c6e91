#!/usr/bin/env bash
# run_overhead.sh — what `benchdesk run` costs per case, against bare python and the
# seeds' Python design, on the same trivial rubric (tests/fixtures/rubrics/trivial.py).
#
#   tests/perf/run_overhead.sh [N_CASES]        (default 200 cases, best of 3 rounds)
#
# Side by side, in one run:
#   bare python         `python3 -s rubric.py < doc.json` in a shell loop, N times: the floor
#   benchdesk --jobs 1  the whole command: open the bench, verify N pins, run N cases
#                       through the chokepoint (temp dir, copies, scrubbed env, rlimits,
#                       supervisor), write the summary
#   benchdesk --jobs 2  the same, two at a time
#   peer --jobs 1/2     tests/perf/peer_asyncio_runner.py: story S3-03's asyncio runner
#                       (create_subprocess_exec + TemporaryDirectory + wait_for) with
#                       S3-02's semaphore fan-out
# Aims (reported, not enforced): benchdesk --jobs 1 per case <= 1.05x bare python;
# --jobs 2 throughput >= 1.85x --jobs 1 (needs 2 CPUs); faster than the peer at both job
# counts, by >= 1.15x at --jobs 2. benchdesk runs under BD_ISOLATION (default namespaces)
# with the history on; bwrap and firejail are compared in isolation_cost.sh.
#
# Uses BD_BIN if set, else the release build in build/release (configured and built here).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-200}
# The class benchdesk runs under (history on, fsync'd, in both): namespaces by default.
iso=${BD_ISOLATION:-namespaces}
rounds=3
die() {
    echo "run_overhead: $*" >&2
    exit 1
}
PY=${BENCHDESK_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || die "no python at $PY (set BENCHDESK_PYTHON)"

if [ -z "${BD_BIN:-}" ]; then
    rel="$src/build/release"
    [ -f "$rel/CMakeCache.txt" ] || cmake -S "$src" -B "$rel" -DBD_FLAVOUR=release >/dev/null
    cmake --build "$rel" -j"$(nproc)" --target benchdesk >/dev/null || die "release build failed"
    BD_BIN="$rel/src/benchdesk"
fi
[ -x "$BD_BIN" ] || die "no benchdesk binary at $BD_BIN"
grep -q -- "-fsanitize" "$(dirname "$BD_BIN")/../CMakeCache.txt" 2>/dev/null &&
    echo "warning: $BD_BIN looks like a sanitizer build; numbers will be high" >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/benchdesk-perf-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$src/tests/perf/trivial_lib.sh"
trivial_setup "$work" "$n"

cat >"$work/bare.sh" <<SH
cd "$work/cwd" && for _ in \$(seq $n); do "$PY" -s "$rubric" <"$work/doc.json" >/dev/null; done
SH
cat >"$work/bench.sh" <<SH
out=\$("$BD_BIN" -C "$work/fx" run trivial --isolation "$iso" --drafts --jobs "\$1" 2>/dev/null) || exit 1
grep -qE "^  passed +$n\\\$" <<<"\$out"
SH
cat >"$work/peer.sh" <<SH
out=\$("$PY" "$src/tests/perf/peer_asyncio_runner.py" "$work/manifest.json" "$work/fx/bench" --jobs "\$1")
grep -q "^cases $n passed $n " <<<"\$out"
SH

echo "run_overhead: $n cases, best of $rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
    "$("$PY" --version 2>&1), isolation $iso, $BD_BIN" >&2
measure "bare python" bash "$work/bare.sh"
r_bare=$best
measure "benchdesk --jobs 1" bash "$work/bench.sh" 1
r_j1=$best
measure "benchdesk --jobs 2" bash "$work/bench.sh" 2
r_j2=$best
measure "peer --jobs 1" bash "$work/peer.sh" 1
r_p1=$best
measure "peer --jobs 2" bash "$work/peer.sh" 2
r_p2=$best

"$PY" - "$n" $r_bare $r_j1 $r_j2 $r_p1 $r_p2 <<'PY'
import sys
n = int(sys.argv[1])
v = [int(x) for x in sys.argv[2:]]
names = ["bare python3 rubric.py", "benchdesk --jobs 1", "benchdesk --jobs 2",
         "python peer --jobs 1", "python peer --jobs 2"]
rows = [(names[i], v[2 * i], v[2 * i + 1]) for i in range(5)]
bare_w, bare_c = rows[0][1], rows[0][2]
print("%-24s %9s %9s %11s %9s %9s %9s" % ("variant", "wall ms", "ms/case", "cases/s", "wall/bare",
                                          "cpu ms", "cpu/bare"))
for name, w, c in rows:
    print("%-24s %9d %9.2f %11.1f %8.2fx %9d %8.2fx" % (name, w, w / n, n * 1000.0 / w, w / bare_w,
                                                         c, c / bare_c))
(_, j1, j1c), (_, j2, j2c), (_, p1, p1c), (_, p2, p2c) = rows[1:]
def aim(ok, text):
    print("%-6s %s" % ("met" if ok else "MISSED", text))
print()
aim(j1 <= 1.05 * bare_w, "benchdesk --jobs 1 per case <= 1.05x bare python: wall %.2fx (cpu %.2fx)"
    % (j1 / bare_w, j1c / bare_c))
aim(j1 / j2 >= 1.85, "benchdesk --jobs 2 throughput >= 1.85x --jobs 1: %.2fx" % (j1 / j2))
aim(j1 < p1 and p2 >= 1.15 * j2, "faster than the peer at both job counts, >= 1.15x at --jobs 2: "
    "peer/benchdesk wall %.2fx / %.2fx (cpu %.2fx / %.2fx)" % (p1 / j1, p2 / j2, p1c / j1c, p2c / j2c))
PY
