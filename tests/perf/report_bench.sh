#!/usr/bin/env bash
# Reports at scale (docs/formats.md#reports): a history of R full runs of 100 cases each
# (10k, 100k records), then, side by side in one run, what any reader of the verified
# chain pays (the verify walk grouping records into runs, as `compare` does) and what a
# report adds on top of it per format (the model: interval, comparison, trend; and the
# writer), with CPU time beside wall time (the machine may be shared) and the bytes.
# Not a timed test. Usage: tests/perf/report_bench.sh [MAX_RECORDS] (default 100000).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BD_PERF_BUILD:-$here/build/perf}
max=${1:-100000}

cmake -S "$here" -B "$build" -DBD_FLAVOUR=release >/dev/null
cmake --build "$build" -j2 --target bd_analysis >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/bd-reportbench-XXXXXX")
trap 'rm -rf "$work"' EXIT

cat >"$work/driver.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "history.h"
#include "report.h"

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const bd_err *e)
{
    fprintf(stderr, "report_bench: %s: %s\n", bd_code_str(e->code), e->msg);
    exit(1);
}

/* driver DIR gen RUNS | load | FORMAT */
int main(int argc, char **argv)
{
    bd_err e = BD_ERR_INIT;
    bd_history *h;
    if (argc < 3 || bd_history_open_dir(&h, argv[1], BD_HISTORY_CREATE, &e) != 0)
        die(&e);
    if (strcmp(argv[2], "gen") == 0) {
        enum { CASES = 100 };
        int runs = atoi(argv[3]);
        static bd_history_score_fields f[CASES];
        static bd_score s[CASES];
        static const bd_score *sp[CASES];
        static char ids[CASES][32], run[64];
        static bd_score_fm fm = {(char *)"recipe.wrong", BD_SEV_BLOCK, (char *)"a detail"};
        for (int r = 0; r < runs; r++) {
            snprintf(run, sizeof(run), "20260101T%06dZ-bench", r);
            for (int c = 0; c < CASES; c++) {
                snprintf(ids[c], sizeof(ids[c]), "case-%04d", c);
                f[c] = (bd_history_score_fields){
                    .run_id = run, .run_full = true, .run_cases = CASES, .task_class = "tc",
                    .case_id = ids[c],
                    .case_digest = "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                    .task_class_digest = "blake3:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
                    .harness_version = "0.1.0", .isolation_class = "subprocess",
                    .provenance_verified = true, .started_at = "2026-01-01T00:00:00Z",
                    .finished_at = "2026-01-01T00:00:01Z"};
                s[c] = (bd_score){.passed = (c + r) % 4 != 0, .score = ((c * 7 + r) % 11) / 10.0,
                                  .wall_clock_ms = 100 + c};
                if (!s[c].passed) {
                    s[c].failure_modes = &fm;
                    s[c].n_failure_modes = 1;
                }
                sp[c] = &s[c];
            }
            if (bd_history_append_batch(h, f, sp, CASES, NULL, NULL, &e) != 0)
                die(&e);
        }
        bd_history_free(h);
        return 0;
    }
    double w0 = wall(), c0 = cpu();
    size_t bytes = 0;
    if (strcmp(argv[2], "load") == 0) {
        bd_runs runs;
        if (bd_runs_load(&runs, h, &e) != 0)
            die(&e);
        bd_runs_release(&runs);
    } else {
        bd_report_format fmt;
        bd_report r;
        char *out = NULL;
        if (bd_report_format_parse(&fmt, argv[2], &e) != 0 || bd_report_load(&r, h, NULL, NULL, &e) != 0 ||
            bd_report_write(&r, fmt, &out, &bytes, &e) != 0)
            die(&e);
        free(out);
        bd_report_release(&r);
    }
    printf("%.3f %.3f %zu\n", wall() - w0, cpu() - c0, bytes);
    bd_history_free(h);
    return 0;
}
C

incs=()
for d in base bench provenance history run analysis; do incs+=(-I"$here/src/$d"); done
libs=()
for d in analysis run history provenance bench base; do libs+=("$build/src/libbd_$d.a"); done
# shellcheck disable=SC2046
cc -O2 -std=c11 -D_GNU_SOURCE "${incs[@]}" -I"$build/generated" "$work/driver.c" "${libs[@]}" \
    "$build/libbd_blake3.a" $(pkg-config --libs libxml-2.0 libcjson yaml-0.1 libcrypto sqlite3 \
    gpgme libgit2 libuv libseccomp) -lm -lpthread -o "$work/driver"

printf '%-9s | %-22s | %-22s | %-22s | %-22s\n' records "verified runs (peer)" "report junit" \
    "report markdown" "report html"
printf '%s\n' "----------|------------------------|------------------------|------------------------|-----------------------"
for n in 10000 100000; do
    [ "$n" -le "$max" ] || continue
    dir="$work/h$n"
    "$work/driver" "$dir" gen $((n / 100))
    row=$(printf '%-9s' "$n")
    for what in load junit markdown html; do
        read -r w c b < <("$work/driver" "$dir" "$what")
        cell=$(printf '%.2f s (cpu %.2f)' "$w" "$c")
        [ "$what" = load ] || cell="$cell $((b / 1024)) KiB"
        row+=$(printf ' | %-22s' "$cell")
    done
    echo "$row"
done
