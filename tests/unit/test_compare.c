/*
 * test_compare.c — comparing two runs (src/analysis/compare.h): alignment by case id, every
 * status, the task-class and isolation rules, and the statistics.
 *
 * Known answers (the KAT_* and kat*_ literals, the mcnemar_kats table) come from
 * tests/kat/bca_reference.py (`paired`, `mcnemar`, `seed`), an independent Python
 * reference; tests/cli/test_compare_kat.sh reads them back out of this file and checks
 * them against the script.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "stats.h"
#include "trend.h"

#define KAT1_RUN_A "20261126T100000Z-aaaa1111"
#define KAT1_RUN_B "20261126T110000Z-bbbb2222"
#define KAT1_SEED  0xd2f96d74dd0835cfULL
#define KAT1_LO    -0.16666666666666666
#define KAT1_HI    -0.00833333333333334
/* The comparable pairs, in case-id order (case-00 .. case-11). */
static const double kat1_a[] = {1.0, 0.95, 0.75, 0.6, 0.775, 1.0, 0.0, 0.9, 0.65, 0.1, 1.0, 0.75};
static const double kat1_b[] = {0.9, 0.95, 0.8, 0.5, 0.7, 1.0, 0.0, 0.85, 0.7, 0.1, 0.6, 0.75};

static const struct {
    uint64_t b, c;
    double p;
} mcnemar_kats[] = {
    {3, 10, 0.09228515625},
    {0, 1, 1.0},
    {1, 1, 1.0},
    {5, 0, 0.0625},
    {12, 3, 0.03515625},
    {0, 30, 1.862645149230957e-09},
    {400, 520, 8.549170923883778e-05},
    {1500, 1400, 0.06598734966518381},
};

#define DIG_A "blake3:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DIG_B "blake3:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char ids[64][16];

/* A record of case `id` (static strings: never released). */
static bd_history_record rec(const char *run, const char *id, double score, bool passed,
                             const char *case_digest, const char *iso)
{
    bd_history_record r;
    memset(&r, 0, sizeof(r));
    r.run_id = (char *)run;
    r.task_class = (char *)"tc";
    r.case_id = (char *)id;
    r.case_digest = (char *)case_digest;
    r.task_class_digest = (char *)DIG_A;
    r.isolation_class = (char *)iso;
    r.run_scope = (char *)"full";
    r.started_at = (char *)"2026-11-26T10:00:00Z";
    r.finished_at = (char *)"2026-11-26T10:00:01Z";
    r.score.score = score;
    r.score.passed = passed;
    return r;
}

static bd_run run_of(bd_history_record *recs, size_t n)
{
    bd_run r;
    memset(&r, 0, sizeof(r));
    r.recs = recs;
    r.n_recs = n;
    r.run_id = recs[0].run_id;
    r.task_class = recs[0].task_class;
    r.full_scope = r.full = true;
    r.run_cases = n;
    r.started_at = recs[0].started_at;
    r.finished_at = recs[0].finished_at;
    return r;
}

static void test_mcnemar_known_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(mcnemar_kats) / sizeof(mcnemar_kats[0]); i++) {
        double p = bd_stats_mcnemar_exact(mcnemar_kats[i].b, mcnemar_kats[i].c);
        double want = mcnemar_kats[i].p;
        assert_true(fabs(p - want) <= 1e-10 * want);
        /* Symmetric in its two counts. */
        assert_true(p == bd_stats_mcnemar_exact(mcnemar_kats[i].c, mcnemar_kats[i].b));
    }
    assert_true(bd_stats_mcnemar_exact(0, 0) == 1.0);
    assert_true(bd_stats_mcnemar_exact(1000000, 1000000) == 1.0);
    double tiny = bd_stats_mcnemar_exact(0, 5000);
    assert_true(tiny >= 0.0 && tiny < 1e-300);
}

static void test_seed_known_answer(void **state)
{
    (void)state;
    assert_true(bd_compare_seed(KAT1_RUN_A, KAT1_RUN_B) == KAT1_SEED);
    assert_true(bd_compare_seed(KAT1_RUN_B, KAT1_RUN_A) != KAT1_SEED);
}

/* The KAT pairs plus one case of each non-comparable kind: the statistics must be those
 * of the pairs alone. */
static void test_compare_statuses_and_paired_interval(void **state)
{
    (void)state;
    size_t n = sizeof(kat1_a) / sizeof(kat1_a[0]);
    bd_history_record ra[16], rb[16];
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "case-%02zu", i);
        ra[i] = rec(KAT1_RUN_A, ids[i], kat1_a[i], kat1_a[i] >= 0.75, DIG_A, "subprocess");
        rb[i] = rec(KAT1_RUN_B, ids[i], kat1_b[i], kat1_b[i] >= 0.75, DIG_A, "subprocess");
    }
    /* zz-changed: a new case digest; zz-gone only in A; zz-new only in B. */
    ra[n] = rec(KAT1_RUN_A, "zz-changed", 1.0, true, DIG_A, "subprocess");
    rb[n] = rec(KAT1_RUN_B, "zz-changed", 0.0, false, DIG_B, "subprocess");
    ra[n + 1] = rec(KAT1_RUN_A, "zz-gone", 0.5, false, DIG_A, "subprocess");
    rb[n + 1] = rec(KAT1_RUN_B, "zz-new", 0.5, false, DIG_A, "subprocess");
    bd_run a = run_of(ra, n + 2), b = run_of(rb, n + 2);

    bd_compare c;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_compare_runs(&c, &a, &b, &err), 0);
    assert_false(c.task_class_changed);
    assert_int_equal(c.comparable, n);
    assert_int_equal(c.counts[BD_CMP_CHANGED], 1);
    assert_int_equal(c.counts[BD_CMP_REMOVED], 1);
    assert_int_equal(c.counts[BD_CMP_NEW], 1);
    /* 1.0->0.9 (pass both), 0.6->0.5, 0.775->0.7 (pass->fail), 0.9->0.85, 1.0->0.6
     * (pass->fail) regressed; 0.75->0.8, 0.65->0.7 improved; the rest unchanged. */
    assert_int_equal(c.counts[BD_CMP_REGRESSED], 5);
    assert_int_equal(c.counts[BD_CMP_IMPROVED], 2);
    assert_int_equal(c.counts[BD_CMP_UNCHANGED], 5);
    assert_int_equal(c.n_cases, n + 3);
    /* Regressions first, the worst first. */
    assert_int_equal(c.cases[0].status, BD_CMP_REGRESSED);
    assert_string_equal(c.cases[0].case_id, "case-10");
    assert_true(fabs(c.cases[0].delta + 0.4) < 1e-12);
    assert_int_equal(c.pass_to_fail, 2);
    assert_int_equal(c.fail_to_pass, 0);
    assert_true(c.p_value == 0.5);
    assert_true(fabs(c.mean_a - bd_stats_mean(kat1_a, n)) < 1e-15);
    assert_true(fabs(c.mean_b - bd_stats_mean(kat1_b, n)) < 1e-15);
    assert_true(fabs(c.ci_lo - KAT1_LO) < 1e-12);
    assert_true(fabs(c.ci_hi - KAT1_HI) < 1e-12);
    assert_true(c.ci_lo <= c.mean_delta && c.mean_delta <= c.ci_hi);
    bd_compare_release(&c);
}

static void test_compare_refusals_and_labels(void **state)
{
    (void)state;
    bd_history_record ra[2], rb[2];
    ra[0] = rec("run-a", "c1", 1.0, true, DIG_A, "subprocess");
    ra[1] = rec("run-a", "c2", 1.0, true, DIG_A, "subprocess");
    rb[0] = rec("run-b", "c1", 1.0, true, DIG_A, "namespaces");
    rb[1] = rec("run-b", "c2", 1.0, true, DIG_A, "namespaces");
    bd_run a = run_of(ra, 2), b = run_of(rb, 2);
    bd_compare c;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_compare_runs(&c, &a, &b, &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_ISOLATION_MISMATCH);
    assert_int_equal(bd_compare_runs(&c, &a, &a, &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_SAME_RUN);

    rb[0].isolation_class = rb[1].isolation_class = (char *)"subprocess";
    rb[1].task_class_digest = (char *)DIG_B;
    assert_int_equal(bd_compare_runs(&c, &a, &b, &err), 0);
    assert_true(c.task_class_changed);
    bd_compare_release(&c);

    rb[0].task_class = rb[1].task_class = (char *)"other";
    b = run_of(rb, 2);
    assert_int_equal(bd_compare_runs(&c, &a, &b, &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_TASK_CLASS_MISMATCH);

    /* Empty overlap: no error, no statistics. */
    rb[0] = rec("run-b", "d1", 1.0, true, DIG_A, "subprocess");
    rb[1] = rec("run-b", "d2", 0.0, false, DIG_A, "subprocess");
    b = run_of(rb, 2);
    assert_int_equal(bd_compare_runs(&c, &a, &b, &err), 0);
    assert_int_equal(c.comparable, 0);
    assert_false(c.have_stats);
    assert_int_equal(c.counts[BD_CMP_NEW], 2);
    assert_int_equal(c.counts[BD_CMP_REMOVED], 2);
    bd_compare_release(&c);
}

static void test_pick_and_find(void **state)
{
    (void)state;
    bd_history_record r1[1], r2[1], r3[1], r4[1];
    r1[0] = rec("20261126T100000Z-aaaa", "c1", 1.0, true, DIG_A, "subprocess");
    r2[0] = rec("20261126T110000Z-bbbb", "c1", 0.5, false, DIG_A, "subprocess");
    r3[0] = rec("20261126T120000Z-cccc", "c1", 0.5, false, DIG_A, "subprocess");
    r4[0] = rec("20261126T130000Z-dddd", "c1", 0.5, false, DIG_A, "subprocess");
    bd_run runs[4] = {run_of(r1, 1), run_of(r2, 1), run_of(r3, 1), run_of(r4, 1)};
    runs[3].full = false; /* a partial run is never picked by default */
    for (int i = 0; i < 4; i++)
        runs[i].last_seq = (uint64_t)i + 1;
    bd_runs all = {.runs = runs, .n = 4, .count = 4};
    const bd_run *a, *b;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_compare_pick(&all, NULL, NULL, NULL, &a, &b, &err), 0);
    assert_ptr_equal(a, &runs[1]);
    assert_ptr_equal(b, &runs[2]);
    assert_int_equal(bd_compare_pick(&all, "tc", "20261126T13", NULL, &a, &b, &err), 0);
    assert_ptr_equal(a, &runs[2]);
    assert_ptr_equal(b, &runs[3]);
    assert_int_equal(bd_compare_pick(&all, NULL, "2026", "2026", &a, &b, &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_AMBIGUOUS_RUN);
    assert_int_equal(bd_compare_pick(&all, NULL, "nope", NULL, &a, &b, &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_UNKNOWN_RUN);
    assert_int_equal(bd_compare_pick(&all, NULL, "20261126T100000Z-aaaa", NULL, &a, &b, &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_NO_RUNS);
    assert_int_equal(bd_compare_pick(&all, "other", NULL, NULL, &a, &b, &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_NO_RUNS);
    assert_int_equal(bd_compare_pick(&all, "other", "20261126T1000", "20261126T1100", &a, &b, &err),
                     -1);
    assert_int_equal(err.code, BD_E_COMPARE_TASK_CLASS_MISMATCH);

    bd_trend_point *p;
    size_t n;
    assert_int_equal(bd_trend(&all, "tc", 0, &p, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_ptr_equal(p[0].run, &runs[0]);
    assert_true(p[0].mean == 1.0 && p[1].mean == 0.5);
    char buf[64];
    assert_string_equal(bd_trend_sparkline(p, n, false, buf, sizeof(buf)), "955");
    assert_string_equal(bd_trend_sparkline(p, n, true, buf, sizeof(buf)), "\u2588\u2585\u2585");
    assert_string_equal(bd_trend_sparkline(p, n, true, buf, 5), "\u2588");
    free(p);
    assert_int_equal(bd_trend(&all, "tc", 2, &p, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_ptr_equal(p[0].run, &runs[1]);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mcnemar_known_answers),
        cmocka_unit_test(test_seed_known_answer),
        cmocka_unit_test(test_compare_statuses_and_paired_interval),
        cmocka_unit_test(test_compare_refusals_and_labels),
        cmocka_unit_test(test_pick_and_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
