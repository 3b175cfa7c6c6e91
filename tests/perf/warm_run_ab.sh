#!/usr/bin/env bash
# warm_run_ab.sh — warm runs of the trivial fixture, two or more benchdesk binaries taking
# turns, so a change to the warm path is measured against the build before it on the same
# machine at the same load (docs/runner.md#warm-starts).
#
#   tests/perf/warm_run_ab.sh BIN... [-- ROUNDS [N_CASES [JOBS]]]
#
# Each round runs `benchdesk run trivial --isolation namespaces --drafts --start warm
# --jobs JOBS` on the same bench of N_CASES trivial cases (tests/fixtures/rubrics/trivial.py)
# once with each BIN in turn, each from no .benchdesk (the chain made anew, so every run
# appends to an empty history). Defaults: 5 rounds, 1,000 cases, --jobs 2. Every run must
# pass every case and say `start warm`.
#
# The table: for each BIN the median wall time a case over the rounds (and each round's),
# and the machine's busy CPU a case (/proc/stat: every CPU's time not idle during the run,
# which counts the warm servers and their cases, never reaped into benchdesk's tree, and
# whatever else ran); as root, also the CPU a case of the run's own cpuacct cgroup (every
# process the run started, whoever reaps it, and nothing else: the steadier measure), "-"
# where no cgroup can be made; for each BIN after the first, the mean of its paired
# differences from the first BIN's wall time, round by round (negative: faster), and of
# its cgroup CPU. The load average is
# printed before and after. A BIN is a benchdesk binary with benchdesk-warm and
# benchdesk-supervisor beside it (a build's src/ directory).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
bins=() rounds=5 n=1000 jobs=2
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    bins+=("$1")
    shift
done
if [ $# -gt 0 ]; then
    shift
    rounds=${1:-5} n=${2:-1000} jobs=${3:-2}
fi
[ ${#bins[@]} -ge 1 ] || {
    echo "usage: $0 BIN... [-- ROUNDS [N_CASES [JOBS]]]" >&2
    exit 2
}
for b in "${bins[@]}"; do
    [ -x "$b" ] && [ -x "$b-warm" ] || {
        echo "warm_run_ab: $b (and $b-warm beside it) must be executables" >&2
        exit 2
    }
done
PY=/usr/bin/python3
BD_BIN=${bins[0]}
work=$(mktemp -d "${TMPDIR:-/tmp}/benchdesk-perf-ab.XXXXXX")
cg=/sys/fs/cgroup/cpuacct/bd-perf-ab-$$
mkdir "$cg" 2>/dev/null || cg=
trap 'rm -rf "$work"; [ -z "$cg" ] || rmdir "$cg" 2>/dev/null' EXIT
. "$src/tests/perf/trivial_lib.sh"
trivial_setup "$work" "$n"

echo "warm_run_ab: $n trivial cases, --jobs $jobs, $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# run BIN: one warm run from no .benchdesk (run.sh: it must pass every case warm), timed
# by trivial_lib.sh's timer.py (one round); prints "<wall ms> <busy ms>".
cat >"$work/run.sh" <<SH
[ -z "\${2:-}" ] || echo "\$\$" >"\$2/cgroup.procs"
out=\$("\$1" -C "$work/fx" run trivial --isolation namespaces --drafts --jobs $jobs --start warm 2>&1) || { echo "\$out" >&2; exit 1; }
grep -qE "^  passed +$n\\\$" <<<"\$out" && grep -qE "^  start +warm\\\$" <<<"\$out" || { echo "\$out" >&2; exit 1; }
SH
run() {
    local w c b u=-
    rm -rf "$work/fx/.benchdesk"
    [ -z "$cg" ] || echo 0 >"$cg/cpuacct.usage"
    read -r w c b < <("$PY" "$work/timer.py" 1 bash "$work/run.sh" "$1" "$cg") || true
    [ -n "${b:-}" ] || {
        echo "warm_run_ab: $1: not a passing warm run" >&2
        exit 1
    }
    [ -z "$cg" ] || u=$(($(cat "$cg/cpuacct.usage") / 1000000))
    echo "$w $b $u"
}
results=$work/results
: >"$results"
for r in $(seq "$rounds"); do
    for i in "${!bins[@]}"; do
        row=$(run "${bins[$i]}") # a failed run ends the script (set -e)
        echo "$r $i $row" >>"$results"
    done
done
echo "warm_run_ab: load after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$PY" - "$results" "$n" "${bins[@]}" <<'PY'
import statistics as st, sys
path, n, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
wall, busy, cgcpu = {}, {}, {}
for line in open(path):
    r, i, w, b, u = line.split()
    r, i = int(r), int(i)
    wall.setdefault(i, {})[r] = int(w) / n
    busy.setdefault(i, {})[r] = int(b) / n
    if u != "-":
        cgcpu.setdefault(i, {})[r] = int(u) / n
def med(m, i):
    return "%.2f" % st.median(m[i].values()) if i in m else "-"
print("%-48s %10s %10s %10s  %s" % ("binary", "ms/case", "busy ms", "cgroup ms", "each round's ms/case"))
for i, b in enumerate(bins):
    print("%-48s %10.2f %10s %10s  %s" % (b[-48:], st.median(wall[i].values()), med(busy, i), med(cgcpu, i),
                                          " ".join("%.2f" % wall[i][r] for r in sorted(wall[i]))))
for i, b in enumerate(bins[1:], 1):
    d = [(wall[i][r] - wall[0][r]) / wall[0][r] * 100 for r in sorted(wall[0])]
    print("%s against %s: mean of the paired differences %+.1f %% (each round: %s)"
          % (b, bins[0], st.mean(d), " ".join("%+.1f" % x for x in d)))
    if i in cgcpu and 0 in cgcpu:
        d = [(cgcpu[i][r] - cgcpu[0][r]) / cgcpu[0][r] * 100 for r in sorted(cgcpu[0])]
        print("  its cgroup CPU: mean of the paired differences %+.1f %% (each round: %s)"
              % (st.mean(d), " ".join("%+.1f" % x for x in d)))
PY
