#!/usr/bin/env bash
# compare_bench.sh — what `benchdesk compare` costs (docs/compare.md), side by side with the
# peers issue 13 names, in one run, on the same data.
#
#   tests/perf/compare_bench.sh [MAX_CASES]      (default 10000: sizes 100, 1000, 10000)
#
# For each size N, two full runs of N cases are appended to a fresh history (a real chain:
# every record fsynced) and compared:
#   benchdesk compare   the whole command, `compare A B --json`: verify the whole chain,
#                       read every record, align, paired BCa (10,000 resamples), McNemar
#   benchdesk stats     the statistics alone (core: bd_compare_runs on runs in memory)
#   scipy (Inspect AI)  Inspect AI has no compare (its issues #1327, #2176 ask for it); the
#                       recipe #2176 points to: scipy.stats.bootstrap(paired=True,
#                       method="BCa", 10,000 resamples, vectorized) on the per-case scores
#                       of the two logs, plus scipy.stats.binomtest on the discordant pairs
#                       (Debian's python3-scipy; "n/a" when it is not installed). The logs
#                       are not read: only the statistics are timed, so it is a lower bound
#   python reference    tests/kat/bca_reference.py (pure Python, the known-answer oracle),
#                       N <= 1000 only
#   ci95 agreement      the largest difference between benchdesk's and scipy's interval
#                       ends (different resampling streams: equal up to Monte Carlo noise)
# promptfoo compares runs without statistics: there is nothing of it to time here.
# Builds the release flavour into build/perf (or $BD_PERF_BUILD). Best of 3 for each cell
# (scipy above 1000 cases: one try; the python reference: one try).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BD_PERF_BUILD:-$here/build/perf}
max=${1:-10000}
PY=/usr/bin/python3

cmake -S "$here" -B "$build" -DBD_FLAVOUR=release >/dev/null
cmake --build "$build" -j2 --target benchdesk >/dev/null
bin="$build/src/benchdesk"

work=$(mktemp -d "${TMPDIR:-/tmp}/bd-cmpbench-XXXXXX")
trap 'rm -rf "$work"' EXIT

cat >"$work/driver.c" <<'C'
/* driver ROOT N: append two full runs of N cases to ROOT's history, or, with "stats",
 * time bd_compare_runs on them (best of 3, ms). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compare.h"
#include "stats.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const bd_err *e)
{
    fprintf(stderr, "compare_bench: %s: %s\n", bd_code_str(e->code), e->msg);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *root = argv[1];
    long n = atol(argv[2]);
    bool stats = argc > 3 && strcmp(argv[3], "stats") == 0;
    bd_history *h;
    bd_err e = BD_ERR_INIT;
    if (bd_history_open(&h, root, BD_HISTORY_CREATE, &e) != 0)
        die(&e);
    if (stats) {
        bd_runs runs;
        if (bd_runs_load(&runs, h, &e) != 0 || runs.n != 2)
            die(&e);
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            bd_compare c;
            double t0 = now();
            if (bd_compare_runs(&c, &runs.runs[0], &runs.runs[1], &e) != 0)
                die(&e);
            double t = now() - t0;
            best = t < best ? t : best;
            bd_compare_release(&c);
        }
        printf("%.1f\n", best * 1e3);
        bd_runs_release(&runs);
        bd_history_free(h);
        return 0;
    }
    const char *dg = "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const char *ids[2] = {"20261126T100000Z-aaaa0001", "20261126T110000Z-bbbb0002"};
    char cid[64];
    bd_rng rng;
    bd_rng_seed(&rng, 1);
    double *base = malloc((size_t)n * sizeof(double));
    for (long i = 0; i < n; i++)
        base[i] = (double)bd_rng_below(&rng, 1001) / 1000.0;
    for (int r = 0; r < 2; r++) {
        for (long i = 0; i < n; i++) {
            /* Run B: most cases unchanged, some a little worse, a few better. */
            double s = base[i];
            if (r == 1) {
                long k = (long)bd_rng_below(&rng, 10);
                s += k < 3 ? -0.1 : k == 9 ? 0.05 : 0.0;
                s = s < 0 ? 0 : s > 1 ? 1 : s;
            }
            bd_score sc = {.passed = s >= 0.75, .score = s, .wall_clock_ms = 10};
            snprintf(cid, sizeof(cid), "case-%06ld", i);
            bd_history_score_fields f = {ids[r], true, (uint64_t)n, "tc", cid, dg, dg, NULL,
                                         "0.1.0", "subprocess", true, NULL,
                                         "2026-11-26T10:00:00Z", "2026-11-26T10:00:01Z", NULL};
            if (bd_history_append_score(h, &f, &sc, NULL, NULL, &e) != 0)
                die(&e);
        }
    }
    free(base);
    bd_history_free(h);
    return 0;
}
C

# shellcheck disable=SC2046
. "$here/tests/perf/core_flags.sh"
# shellcheck disable=SC2046
cc -O2 -std=c11 -D_GNU_SOURCE $(bd_core_cflags "$here" "$build") "$work/driver.c" -o "$work/driver" \
    $(bd_core_libs "$build") \
    $(pkg-config --libs libcjson libcrypto libuv yaml-0.1 libgit2 gpgme libseccomp sqlite3) -lm -lpthread

cat >"$work/peer.py" <<'PY'
import json, sys, time
o = json.load(open(sys.argv[1]))
cases = sorted((c["case_id"], c["score_a"], c["score_b"], c["passed_a"], c["passed_b"])
               for c in o["cases"] if c["score_a"] is not None and c["score_b"] is not None)
a = [c[1] for c in cases]; b = [c[2] for c in cases]
out = {"scipy_ms": None, "agree": None, "ref_ms": None}
try:
    import numpy as np
    from scipy import stats
    best = 1e9
    for _ in range(3 if len(a) <= 1000 else 1):  # scipy's BCa jackknife is O(n^2)
        t0 = time.perf_counter()
        res = stats.bootstrap((np.array(a), np.array(b)), lambda x, y, axis: np.mean(y - x, axis=axis),
                              paired=True, vectorized=True, n_resamples=10000, method="BCa",
                              random_state=np.random.default_rng(1))
        p2f = sum(1 for c in cases if c[3] and not c[4]); f2p = sum(1 for c in cases if not c[3] and c[4])
        p = stats.binomtest(min(p2f, f2p), p2f + f2p, 0.5).pvalue if p2f + f2p else 1.0
        best = min(best, time.perf_counter() - t0)
    out["scipy_ms"] = best * 1e3
    ci = res.confidence_interval
    out["agree"] = max(abs(ci.low - o["ci95"][0]), abs(ci.high - o["ci95"][1]))
    out["p_diff"] = abs(p - o["mcnemar"]["p_value"])
except ImportError:
    pass
if len(a) <= 1000:
    sys.path.insert(0, sys.argv[2])
    import bca_reference as ref
    t0 = time.perf_counter()
    ref.paired_bca(a, b, 0.95, 0, 1)
    ref.mcnemar(sum(1 for c in cases if c[3] and not c[4]), sum(1 for c in cases if not c[3] and c[4]))
    out["ref_ms"] = (time.perf_counter() - t0) * 1e3
print(json.dumps(out))
PY

fmt() { [ "$1" = None ] && printf '%s' "n/a" || printf '%.1f' "$1"; }
have_scipy=yes
"$PY" -c 'import scipy' 2>/dev/null || have_scipy="no (apt-get install python3-scipy)"
echo "benchdesk compare vs the peers' recipe; scipy: $have_scipy; $(nproc) CPUs"
printf '%8s %14s %12s %14s %14s %12s %10s\n' "cases" "compare ms" "stats ms" "scipy ms" "python ref ms" "ci95 diff" "p diff"
for n in 100 1000 10000 100000; do
    [ "$n" -le "$max" ] || break
    root="$work/b$n"
    mkdir -p "$root/bench"
    "$work/driver" "$root" "$n"
    best=0
    for _ in 1 2 3; do
        t0=$(date +%s%N)
        "$bin" -C "$root" compare --json >"$work/out.json"
        t=$(($(date +%s%N) - t0))
        [ "$best" = 0 ] || [ "$t" -lt "$best" ] && best=$t
    done
    stats=$("$work/driver" "$root" "$n" stats)
    peer=$("$PY" "$work/peer.py" "$work/out.json" "$here/tests/kat")
    read -r sc ag pd rf < <("$PY" -c 'import json,sys; o=json.loads(sys.argv[1]); print(o["scipy_ms"], o["agree"], o.get("p_diff"), o["ref_ms"])' "$peer")
    printf '%8d %14s %12s %14s %14s %12s %10s\n' "$n" "$(printf '%d.%d' $((best / 1000000)) $((best / 100000 % 10)))" "$stats" \
        "$(fmt "$sc")" "$(fmt "$rf")" "$([ "$ag" = None ] && echo n/a || printf '%.4f' "$ag")" \
        "$([ "$pd" = None ] && echo n/a || printf '%.1e' "$pd")"
done
