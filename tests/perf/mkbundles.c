/*
 * mkbundles.c — write the shard bundles of one synthetic run for tests/perf/import_bench.sh.
 *
 *   bd_perf_mkbundles BENCH_ROOT TASK_CLASS SHARDS OUT_DIR RUN_ID
 *
 * Partitions the task class's pinned cases with bd_shard_of and writes OUT_DIR/<k> for
 * k = 0..SHARDS-1 through the same writer a shard run uses (bd_bundle_create, records
 * appended with bd_history_append_score, bd_bundle_seal's manifest via bd_bundle_finish).
 * Only the rubric is skipped: each case gets a deterministic score. Not a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "fsutil.h"
#include "history.h"
#include "shard.h"

static int fail(const bd_err *e)
{
    fprintf(stderr, "mkbundles: %s: %s\n", bd_code_str(e->code), e->msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: bd_perf_mkbundles BENCH_ROOT TASK_CLASS SHARDS OUT_DIR RUN_ID\n");
        return 2;
    }
    bd_err err = BD_ERR_INIT;
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    uint32_t n = (uint32_t)strtoul(argv[3], NULL, 10);
    if (n < 1 || n > BD_SHARDS_MAX)
        return 2;
    if (bd_bench_open(&bench, argv[1], &err) != 0 ||
        bd_task_class_load(&tc, bench, argv[2], &err) != 0)
        return fail(&err);
    if (!tc->digests)
        return fprintf(stderr, "mkbundles: the task class has no pins\n"), 1;
    char now[21];
    bd_utc_now(now);
    for (uint32_t k = 0; k < n; k++) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/%u", argv[4], k);
        bd_bundle_writer w;
        if (bd_bundle_create(&w, dir, &err) != 0)
            return fail(&err);
        bd_bundle_manifest m;
        memset(&m, 0, sizeof(m));
        m.cases = calloc(tc->digests->n_pins + 1, sizeof(*m.cases));
        for (size_t i = 0; i < tc->digests->n_pins; i++) {
            const bd_pin *p = &tc->digests->pins[i];
            if (bd_shard_of(p->case_id, n) != k)
                continue;
            bd_score s = {0};
            s.passed = i % 3 != 0;
            s.score = s.passed ? 1.0 : 0.25;
            s.cost_usd = 0.001;
            s.wall_clock_ms = (int64_t)(i % 97);
            bd_history_score_fields f = {0};
            f.run_id = argv[5];
            f.run_full = true;
            f.run_cases = tc->digests->n_pins;
            f.task_class = tc->name;
            f.case_id = p->case_id;
            f.case_digest = p->digest;
            f.task_class_digest = tc->digests->task_class;
            f.isolation_class = "subprocess";
            f.started_at = now;
            f.finished_at = now;
            if (bd_history_append_score(w.records, &f, &s, NULL, NULL, &err) != 0)
                return fail(&err);
            m.cases[m.n_cases].id = p->case_id; /* borrowed: not released below */
            snprintf(m.cases[m.n_cases].digest, sizeof(m.cases[0].digest), "%s", p->digest);
            m.n_cases++;
        }
        snprintf(m.run_id, sizeof(m.run_id), "%s", argv[5]);
        snprintf(m.task_class, sizeof(m.task_class), "%s", tc->name);
        snprintf(m.task_class_digest, sizeof(m.task_class_digest), "%s", tc->digests->task_class);
        m.shard = k;
        m.shards = n;
        snprintf(m.isolation_class, sizeof(m.isolation_class), "subprocess");
        snprintf(m.started_at, sizeof(m.started_at), "%s", now);
        snprintf(m.finished_at, sizeof(m.finished_at), "%s", now);
        bd_bundle_manifest_fill_env(&m, NULL);
        if (bd_bundle_finish(&w, &m, &err) != 0)
            return fail(&err);
        free(m.cases);
        bd_bundle_writer_release(&w);
    }
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return 0;
}
