#!/usr/bin/env bash
# History benchmark (DESIGN.md §12): append throughput (records/s, every record fsynced
# and its directory fsynced) and verify time at 1k, 10k and 100k records, plus the
# newest `log` page and the head lookup at each size — printed as one table so the growth
# is visible. Not a timed test; the one target is verify(100k) < 2 s on the dev machine.
#
# Usage: tests/perf/history_bench.sh [MAX_RECORDS]   (default 100000)
# Builds the release flavour into build/perf (or $BD_PERF_BUILD) and a small driver that
# calls the core API directly; the history goes to a temp dir under ${TMPDIR:-/tmp}.
# "verify 1st" runs right after the appends (records possibly still being written back);
# "verify" is the best of three. 100k appends take a minute or more: two fsyncs each.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BD_PERF_BUILD:-$here/build/perf}
max=${1:-100000}

cmake -S "$here" -B "$build" -DBD_FLAVOUR=release >/dev/null
cmake --build "$build" -j"$(nproc)" --target benchdesk_core >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/bd-histbench-XXXXXX")
trap 'rm -rf "$work"' EXIT

cat >"$work/driver.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "history.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const bd_err *e)
{
    fprintf(stderr, "history_bench: %s: %s\n", bd_code_str(e->code), e->msg);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *dir = argv[1];
    long max = atol(argv[2]);
    bd_history *h;
    bd_err e = BD_ERR_INIT;
    if (bd_history_open_dir(&h, dir, BD_HISTORY_CREATE, &e) != 0)
        die(&e);
    bd_score_breakdown bd[2] = {{"cve_delta", 0.5}, {"recipe_match", 1.0}};
    bd_score_fm fm = {"cve.not_removed", BD_SEV_BLOCK, "the CVE is still reachable via axios"};
    bd_score s = {false, 0.75, bd, 2, &fm, 1, 0.0125, 1234};
    const char *dg = "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char cid[64];
    bd_history_score_fields f = {"20260512T140000Z-ab12", "vuln-remediation", cid, dg, dg, dg,
                                 "0.1.0", "namespaces", true,
                                 "0123456789ABCDEF0123456789ABCDEF01234567",
                                 "2026-05-12T14:00:00Z", "2026-05-12T14:00:01Z"};
    printf("%10s %14s %14s %12s %14s %12s %10s\n", "records", "append rec/s", "verify 1st s",
           "verify s", "verify rec/s", "log page ms", "head ms");
    long have = 0;
    for (long target = 1000; target <= max; target *= 10) {
        double t0 = now();
        long n = target - have;
        for (; have < target; have++) {
            snprintf(cid, sizeof(cid), "ghsa-2024-%06ld-axios-ssrf", have % 5000);
            if (bd_history_append_score(h, &f, &s, NULL, NULL, &e) != 0)
                die(&e);
        }
        double ta = now() - t0;
        /* Three verifies: the first right after the appends, then the best of three
         * (what a later `history verify` costs with the records in the page cache). */
        double tv = 0, tv_first = 0;
        for (int rep = 0; rep < 3; rep++) {
            bd_history_verify_result r;
            t0 = now();
            if (bd_history_verify(h, 0, &r, &e) != 0)
                die(&e);
            double t = now() - t0;
            if (rep == 0)
                tv_first = tv = t;
            else if (t < tv)
                tv = t;
            if ((long)r.count != target) {
                fprintf(stderr, "history_bench: verify counted %llu, expected %ld\n",
                        (unsigned long long)r.count, target);
                return 1;
            }
            bd_history_verify_result_release(&r);
        }
        bd_history_record *recs;
        size_t cnt;
        t0 = now();
        if (bd_history_log(h, NULL, &recs, &cnt, NULL, &e) != 0)
            die(&e);
        double tl = now() - t0;
        bd_history_records_free(recs, cnt);
        uint64_t seq;
        t0 = now();
        if (bd_history_head(h, &seq, NULL, &e) != 0)
            die(&e);
        double th = now() - t0;
        printf("%10ld %14.0f %14.3f %12.3f %14.0f %12.2f %10.3f\n", target, n / ta, tv_first, tv,
               target / tv, tl * 1e3, th * 1e3);
        fflush(stdout);
    }
    bd_history_free(h);
    return 0;
}
C

# shellcheck disable=SC2046
cc -O2 -std=c11 -D_GNU_SOURCE -I"$here/src" "$work/driver.c" -o "$work/driver" \
    "$build/src/libbenchdesk_core.a" "$build/libbd_blake3.a" \
    $(pkg-config --libs libcjson libcrypto libuv yaml-0.1 libgit2 gpgme) -lm -lpthread

echo "benchdesk history: append (fsync included) and verify; disk: $(df -PT "$work" | awk 'NR==2 {print $2}')"
"$work/driver" "$work/history" "$max"
