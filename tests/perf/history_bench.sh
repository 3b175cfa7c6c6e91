#!/usr/bin/env bash
# History at scale (DESIGN.md §5, issue "history at a million records"): generates valid
# histories of 10k, 100k and 1M records in a copy of the demo bench (records of
# vuln-remediation's cases, 90% current, 10% scored on an older case digest, all within
# recommend's 30-day window) through the group-commit batch API, and prints one table:
#   append/s     single appends (one fsync each) and group commit (100 records a batch)
#   verify       `history verify` warm: re-hashes every record (records up to the head a
#                previous verify saw are not re-parsed); verify --full re-parses all;
#                cold: after `echo 3 > /proc/sys/vm/drop_caches` when permitted (root)
#   gate         the run gate's bd_history_verify_since: nothing new / one 500-record run
#   recommend    the history's part (verify, anchors, the streamed selection; signatures
#                taken as verified) and the whole `benchdesk recommend vuln-remediation`
#                (which also checks the task class's and 18 cases' GnuPG signatures)
#   log          `benchdesk history log --task-class vuln-remediation --limit 20`
# next to the numbers measured before segments (one file per record; from the issue).
# Not a timed test. Usage: tests/perf/history_bench.sh [MAX] (default 1000000; 10k..MAX).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BD_PERF_BUILD:-$here/build/perf}
max=${1:-1000000}

cmake -S "$here" -B "$build" -DBD_FLAVOUR=release >/dev/null
cmake --build "$build" -j2 --target benchdesk benchdesk_core >/dev/null
bd=$build/src/benchdesk
[ -x "$bd" ] || bd=$(find "$build" -name benchdesk -type f -perm -u+x | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/bd-histbench-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/b"
cp -r "$here/bench" "$work/b/bench"

cat >"$work/driver.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "history.h"
#include "promote.h"

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

/* driver ROOT gen N BATCH | single K | verify [full] | gate | recommend */
int main(int argc, char **argv)
{
    const char *root = argv[1], *mode = argv[2];
    bd_err e = BD_ERR_INIT;
    bd_bench *bench;
    bd_task_class *tc;
    bd_history *h;
    if (bd_bench_open(&bench, root, &e) != 0 ||
        bd_task_class_load(&tc, bench, "vuln-remediation", &e) != 0 ||
        bd_history_open(&h, root, BD_HISTORY_CREATE, &e) != 0)
        die(&e);
    if (strcmp(mode, "recommend") == 0) {
        /* The history's part of recommend: verify + anchors + the streamed selection,
         * with every signature taken as verified (GnuPG's part is timed by the CLI). */
        bool *all = calloc(tc->n_cases, sizeof(bool));
        for (size_t i = 0; i < tc->n_cases; i++)
            all[i] = true;
        bd_signed_today st = {true, "signed", all};
        bd_recommendation r;
        double t0 = now();
        if (bd_recommend_given(&r, bench, tc, time(NULL), &st, &e) != 0)
            die(&e);
        printf("%.4f %zu\n", now() - t0, r.cases);
        bd_recommendation_release(&r);
        free(all);
        return 0;
    }
    if (strcmp(mode, "verify") == 0 || strcmp(mode, "gate") == 0) {
        bd_history_verify_result r;
        double t0 = now();
        int rc = strcmp(mode, "gate") == 0 ? bd_history_verify_since(h, &r, &e)
                                           : bd_history_verify(h, argc > 3 ? BD_VERIFY_FULL : 0,
                                                               &r, &e);
        if (rc != 0)
            die(&e);
        printf("%.4f %llu\n", now() - t0, (unsigned long long)r.count);
        bd_history_verify_result_release(&r);
        return 0;
    }
    long n = atol(argv[3]);
    long batch = strcmp(mode, "single") == 0 ? 1 : atol(argv[4]);
    bd_score_breakdown bd[2] = {{"cve_delta", 0.5}, {"recipe_match", 1.0}};
    bd_score_fm fm = {"cve.not_removed", BD_SEV_BLOCK, "the CVE is still reachable via axios"};
    const char *old = "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    bd_history_score_fields *f = calloc((size_t)batch, sizeof(*f));
    bd_score *s = calloc((size_t)batch, sizeof(*s));
    const bd_score **sp = calloc((size_t)batch, sizeof(*sp));
    char (*times)[32] = calloc((size_t)batch, 32);
    uint64_t head;
    if (bd_history_head(h, &head, NULL, &e) != 0)
        die(&e);
    time_t t = time(NULL);
    double t0 = now();
    for (long done = 0; done < n;) {
        long k = n - done < batch ? n - done : batch;
        for (long i = 0; i < k; i++) {
            uint64_t seq = head + (uint64_t)done + (uint64_t)i + 1;
            size_t ci = seq % tc->n_cases;
            const bd_pin *pin = bd_digests_find(tc->digests, tc->case_ids[ci]);
            time_t ft = t - (time_t)(seq % 20) * 86400;
            struct tm tm;
            gmtime_r(&ft, &tm);
            strftime(times[i], 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
            f[i] = (bd_history_score_fields){0};
            f[i].run_id = "20260512T140000Z-ab12";
            f[i].run_full = true;
            f[i].run_cases = tc->n_cases;
            f[i].task_class = tc->name;
            f[i].case_id = tc->case_ids[ci];
            f[i].case_digest = seq % 10 == 0 || !pin ? old : pin->digest;
            f[i].task_class_digest = tc->digests->task_class;
            f[i].harness_version = "0.1.0";
            f[i].isolation_class = "namespaces";
            f[i].provenance_verified = true;
            f[i].operator_fingerprint = "0123456789ABCDEF0123456789ABCDEF01234567";
            f[i].started_at = times[i];
            f[i].finished_at = times[i];
            s[i] = (bd_score){seq % 3 != 0, (double)(seq % 100) / 100.0, bd, 2, &fm, 1, 0.0125, 1234};
            sp[i] = &s[i];
        }
        int rc = batch == 1 ? bd_history_append_score(h, &f[0], &s[0], NULL, NULL, &e)
                            : bd_history_append_batch(h, f, sp, (size_t)k, NULL, NULL, &e);
        if (rc != 0)
            die(&e);
        done += k;
    }
    printf("%.0f\n", (double)n / (now() - t0));
    bd_history_free(h);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return 0;
}
C

# shellcheck disable=SC2046
cc -O2 -std=c11 -D_GNU_SOURCE -I"$here/src" -I"$build/generated" "$work/driver.c" -o "$work/driver" \
    "$build/src/libbenchdesk_core.a" "$build/libbd_blake3.a" \
    $(pkg-config --libs libcjson libcrypto libuv yaml-0.1 libgit2 gpgme libseccomp sqlite3) -lm -lpthread

drv() { "$work/driver" "$work/b" "$@"; }
drv_timed() { # the driver's own seconds and its peak RSS (MB)
    /usr/bin/time -f '%M' -o "$work/t" "$work/driver" "$work/b" "$@" >"$work/o"
    awk -v rss="$(cat "$work/t")" '{printf "%.2f s %d MB", $1, rss / 1024}' "$work/o"
}
timed() { # seconds and peak RSS (MB) of a benchdesk command
    /usr/bin/time -f '%e %M' -o "$work/t" "$bd" -C "$work/b" "$@" >/dev/null 2>"$work/err" ||
        { cat "$work/err" >&2; echo "fail"; return; }
    awk '{printf "%.2f s %d MB", $1, $2/1024}' "$work/t"
}
cold() {
    if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
        drv verify | awk '{printf "%.2f", $1}'
    else
        echo "n/a"
    fi
}

printf '%s\n' "benchdesk history at scale — $(nproc) cores, disk $(df -PT "$work" | awk 'NR==2 {print $2}'), $(date -u +%Y-%m-%d)"
printf '%-8s %-10s %-9s %-7s %-7s %-6s %-8s %-9s %-14s %-14s %-13s %s\n' records "append 1/s" \
    "group/s" "verify" "--full" cold "gate" "gate+500" "recommend hist" "recommend all" "log -t -l 20" "before"
have=0
declare -A before=([10000]="verify 0.08 s, gate 0.16 s, recommend 0.8 s/58 MB"
                   [100000]="verify 0.75 s (4.5 s cold), gate 0.92 s, recommend 6.4 s/467 MB"
                   [1000000]="verify 7.7 s (47 s cold), gate 8-47 s, recommend grows linearly")
for target in 10000 100000 1000000; do
    [ "$target" -le "$max" ] || break
    drv gen $((target - have - 2100)) 1000 >/dev/null
    single=$(drv single 100)
    group=$(drv gen 2000 500)
    have=$target
    full=$(drv verify full | awk '{printf "%.3f", $1}')
    best=9
    for _ in 1 2 3; do
        v=$(drv verify | awk '{print $1}')
        best=$(awk -v a="$best" -v b="$v" 'BEGIN {print (b < a ? b : a)}')
    done
    c=$(cold)
    gate=$(drv gate | awk '{printf "%.1f ms", $1 * 1000}')
    drv gen 500 500 >/dev/null
    gate2=$(drv gate | awk '{printf "%.1f ms", $1 * 1000}')
    have=$((have + 500))
    rech=$(drv_timed recommend)
    rec=$(timed recommend vuln-remediation --json)
    log=$(timed history log --task-class vuln-remediation --limit 20 | awk '{print $1, $2}')
    printf '%-8s %-10s %-9s %-7s %-7s %-6s %-8s %-9s %-14s %-14s %-13s %s\n' "$target" "$single" "$group" \
        "$(printf '%.3f' "$best")" "$full" "$c" "$gate" "$gate2" "$rech" "$rec" "$log" "${before[$target]}"
done
echo "append 1/s: single appends, one fsync each; group/s: batches of 500 (one fsync each)."
echo "verify: best of three, warm; --full parses every record again; cold: after drop_caches"
echo "(n/a when not permitted). before: one file per record, as measured in the issue."
echo "Not measured here: the TUI history's first rows and filter, and a derived index (none yet)."
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared)."
