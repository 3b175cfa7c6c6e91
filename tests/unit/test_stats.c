/*
 * test_stats.c — the seeded PRNG and the BCa interval.
 *
 * Known answers come from tests/kat/bca_reference.py, an independent Python (stdlib)
 * implementation of the algorithm written in stats.h (xoshiro256** seeded by
 * splitmix64, Lemire draws, mid-rank z0, jackknife acceleration, linear-interpolated
 * percentiles); regenerate them with `python3 tests/kat/bca_reference.py` (JSON).
 * tests/cli/test_stats_kat.sh reads the inputs and literals below back out of this file
 * and checks them against the script. splitmix64(0)'s first output 0xe220a8397b1dcdaf
 * is the published reference value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "stats.h"

static void test_rng_known_answers(void **state)
{
    (void)state;
    bd_rng r;
    bd_rng_seed(&r, 0);
    assert_true(bd_rng_next(&r) == 0x99ec5f36cb75f2b4ULL);
    assert_true(bd_rng_next(&r) == 0xbf6e1f784956452aULL);
    assert_true(bd_rng_next(&r) == 0x1a5f849d4933e6e0ULL);
    bd_rng_seed(&r, 42);
    const uint64_t want[] = {0, 3, 6, 9, 9, 7, 7, 8, 7, 5};
    for (int i = 0; i < 10; i++)
        assert_true(bd_rng_below(&r, 10) == want[i]);
    assert_true(bd_rng_below(&r, 0) == 0);
    assert_true(bd_rng_below(&r, 1) == 0);
}

static void test_rng_below_is_uniform(void **state)
{
    (void)state;
    bd_rng r;
    bd_rng_seed(&r, 7);
    /* n = 3 is the worst case for modulo bias on small ranges; chi-square, 2 d.o.f. */
    long count[3] = {0, 0, 0};
    const long N = 300000;
    for (long i = 0; i < N; i++)
        count[bd_rng_below(&r, 3)]++;
    double chi = 0;
    for (int i = 0; i < 3; i++) {
        double e = N / 3.0;
        chi += (count[i] - e) * (count[i] - e) / e;
    }
    assert_true(chi < 13.8); /* p = 0.001 */
    /* A huge range that is not a power of two stays in range. */
    uint64_t n = (UINT64_MAX / 3) * 2;
    for (int i = 0; i < 1000; i++)
        assert_true(bd_rng_below(&r, n) < n);
}

static void test_normal(void **state)
{
    (void)state;
    assert_true(fabs(bd_stats_norm_cdf(0.0) - 0.5) < 1e-15);
    assert_true(fabs(bd_stats_norm_cdf(1.959963984540054) - 0.975) < 1e-12);
    assert_true(fabs(bd_stats_norm_ppf(0.975) - 1.959963984540054) < 1e-12);
    assert_true(fabs(bd_stats_norm_ppf(0.025) + 1.959963984540054) < 1e-12);
    assert_true(fabs(bd_stats_norm_ppf(1e-10) + 6.361340902404056) < 1e-9);
    for (double p = 0.001; p < 1.0; p += 0.0137)
        assert_true(fabs(bd_stats_norm_cdf(bd_stats_norm_ppf(p)) - p) < 1e-13);
    assert_true(isinf(bd_stats_norm_ppf(0.0)) && bd_stats_norm_ppf(0.0) < 0);
    assert_true(isinf(bd_stats_norm_ppf(1.0)) && bd_stats_norm_ppf(1.0) > 0);
    assert_true(isnan(bd_stats_norm_ppf(-0.1)));
}

static void test_bca_known_answers(void **state)
{
    (void)state;
    double lo, hi;
    bd_err err = BD_ERR_INIT;
    const double d1[] = {0.75, 1.0, 0.0, 0.5, 1.0, 1.0, 0.25, 0.9, 1.0, 0.6};
    assert_int_equal(bd_stats_bca(d1, 10, 0.95, 2000, BD_STATS_RUN_SEED, &lo, &hi, &err), 0);
    assert_true(fabs(lo - 0.425) < 1e-12 && fabs(hi - 0.875) < 1e-12);
    assert_int_equal(bd_stats_bca(d1, 10, 0.95, 0, BD_STATS_RUN_SEED, &lo, &hi, &err), 0);
    assert_true(fabs(lo - 0.44) < 1e-12 && fabs(hi - 0.875) < 1e-12);

    double d2[20];
    const int bits[] = {1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0};
    for (int i = 0; i < 20; i++)
        d2[i] = bits[i];
    assert_int_equal(bd_stats_bca(d2, 20, 0.95, 1000, 7, &lo, &hi, &err), 0);
    assert_true(fabs(lo - 0.55) < 1e-12 && fabs(hi - 0.95) < 1e-12);

    const double d3[] = {0.01, 0.02, 0.02, 0.03, 0.05, 0.08, 0.13, 0.21, 0.34, 0.55, 0.89};
    assert_int_equal(bd_stats_bca(d3, 11, 0.90, 1500, 123456789, &lo, &hi, &err), 0);
    assert_true(fabs(lo - 0.11039253994893757) < 1e-12);
    assert_true(fabs(hi - 0.3936363636363636) < 1e-12);
}

static void test_bca_deterministic_and_seeded(void **state)
{
    (void)state;
    const double d[] = {0.1, 0.9, 0.4, 0.4, 0.7, 1.0, 0.0, 0.3, 0.8, 0.65, 0.2, 0.55};
    double l1, h1, l2, h2, l3, h3;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_stats_bca(d, 12, 0.95, 3000, 99, &l1, &h1, &err), 0);
    assert_int_equal(bd_stats_bca(d, 12, 0.95, 3000, 99, &l2, &h2, &err), 0);
    assert_memory_equal(&l1, &l2, sizeof(double));
    assert_memory_equal(&h1, &h2, sizeof(double));
    assert_int_equal(bd_stats_bca(d, 12, 0.95, 3000, 100, &l3, &h3, &err), 0);
    assert_true(l1 != l3 || h1 != h3);
    double m = bd_stats_mean(d, 12);
    assert_true(l1 < m && m < h1);
    /* A seed from bytes is stable and depends on every byte. */
    assert_true(bd_stats_seed_from("abc", 3) == bd_stats_seed_from("abc", 3));
    assert_true(bd_stats_seed_from("abc", 3) != bd_stats_seed_from("abd", 3));
}

static void test_bca_degenerate_and_refusals(void **state)
{
    (void)state;
    double lo = -1, hi = -1;
    bd_err err = BD_ERR_INIT;
    const double ones[] = {1, 1, 1, 1};
    assert_int_equal(bd_stats_bca(ones, 4, 0.95, 0, 1, &lo, &hi, &err), 0);
    assert_true(lo == 1.0 && hi == 1.0);
    const double one[] = {0.3};
    assert_int_equal(bd_stats_bca(one, 1, 0.95, 0, 1, &lo, &hi, &err), 0);
    assert_true(lo == 0.3 && hi == 0.3);
    assert_int_equal(bd_stats_bca(one, 0, 0.95, 0, 1, &lo, &hi, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    bd_err_clear(&err);
    assert_int_equal(bd_stats_bca(one, 1, 1.0, 0, 1, &lo, &hi, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    bd_err_clear(&err);
    const double bad[] = {0.5, NAN};
    assert_int_equal(bd_stats_bca(bad, 2, 0.95, 0, 1, &lo, &hi, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    assert_true(bd_stats_mean(NULL, 0) == 0.0);
    /* Two points: the interval stays inside [min, max]. */
    const double two[] = {0.0, 1.0};
    assert_int_equal(bd_stats_bca(two, 2, 0.95, 0, 5, &lo, &hi, &err), 0);
    assert_true(lo >= 0.0 && hi <= 1.0 && lo <= hi);
}

static void test_bca_large_symmetric_matches_normal(void **state)
{
    (void)state;
    /* 400 values evenly spread on [0, 1]: the BCa interval ~ mean ± 1.96 sd / sqrt(n). */
    double x[400];
    bd_rng r;
    bd_rng_seed(&r, 3);
    for (int i = 0; i < 400; i++)
        x[i] = (double)((i * 37) % 400) / 399.0;
    double lo, hi;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_stats_bca(x, 400, 0.95, 0, 11, &lo, &hi, &err), 0);
    double m = bd_stats_mean(x, 400), var = 0;
    for (int i = 0; i < 400; i++)
        var += (x[i] - m) * (x[i] - m);
    double se = sqrt(var / 400) / sqrt(400);
    assert_true(fabs((m - lo) - 1.96 * se) < 0.1 * 1.96 * se);
    assert_true(fabs((hi - m) - 1.96 * se) < 0.1 * 1.96 * se);
}

static void test_bca_skewed_shifts_right(void **state)
{
    (void)state;
    /* Right-skewed scores: the upper arm is longer than the lower. */
    double x[60];
    for (int i = 0; i < 60; i++)
        x[i] = i < 50 ? 0.05 * (i % 3) : 0.9 + 0.01 * (i - 50);
    double lo, hi;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_stats_bca(x, 60, 0.95, 0, 21, &lo, &hi, &err), 0);
    double m = bd_stats_mean(x, 60);
    assert_true(hi - m > m - lo);
}

static void test_bca_coverage(void **state)
{
    (void)state;
    /* 300 samples of 40 Bernoulli(0.7) scores: the 95% interval covers 0.7 in roughly
     * 95% of them (bounds for 300 trials, generous for the discrete case). */
    bd_rng r;
    bd_rng_seed(&r, 2024);
    int covered = 0;
    const int trials = 300;
    for (int t = 0; t < trials; t++) {
        double x[40];
        for (int i = 0; i < 40; i++)
            x[i] = bd_rng_below(&r, 10) < 7 ? 1.0 : 0.0;
        double lo, hi;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_stats_bca(x, 40, 0.95, 1000, (uint64_t)t, &lo, &hi, &err), 0);
        if (lo <= 0.7 && 0.7 <= hi)
            covered++;
    }
    assert_true(covered >= (int)(0.88 * trials));
    assert_true(covered <= (int)(0.995 * trials));
}

/* Cohen's kappa: a textbook table (Cohen 1960 style: 20/5/10/15 -> po 0.7, pe 0.5,
 * kappa 0.4), perfect agreement, undefined tables, and a seeded interval around it. */
static void test_kappa(void **state)
{
    (void)state;
    double k = 0;
    assert_int_equal(bd_stats_kappa(20, 5, 10, 15, &k), 0);
    assert_true(fabs(k - 0.4) < 1e-12);
    assert_int_equal(bd_stats_kappa(10, 0, 0, 10, &k), 0);
    assert_true(fabs(k - 1.0) < 1e-12);
    assert_int_equal(bd_stats_kappa(0, 0, 0, 0, &k), -1);
    assert_int_equal(bd_stats_kappa(7, 0, 0, 0, &k), -1); /* one cell: pe == 1 */
    unsigned char x[50], y[50];
    for (int i = 0; i < 50; i++) {
        x[i] = i < 25;            /* 25 rubric passes */
        y[i] = i < 20 || i >= 40; /* 20 agree on pass, 5 + 10 disagree, 15 agree on fail */
    }
    double lo, hi, lo2, hi2;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_stats_kappa_ci(x, y, 50, 0.95, 2000, 7, &lo, &hi, &err), 0);
    assert_true(lo < 0.4 && 0.4 < hi && lo >= -1 && hi <= 1);
    assert_int_equal(bd_stats_kappa_ci(x, y, 50, 0.95, 2000, 7, &lo2, &hi2, &err), 0);
    assert_true(lo == lo2 && hi == hi2); /* seeded: the same bits */
    assert_int_equal(bd_stats_kappa_ci(x, y, 0, 0.95, 0, 7, &lo, &hi, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_known_answers),
        cmocka_unit_test(test_rng_below_is_uniform),
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_bca_known_answers),
        cmocka_unit_test(test_bca_deterministic_and_seeded),
        cmocka_unit_test(test_bca_degenerate_and_refusals),
        cmocka_unit_test(test_bca_large_symmetric_matches_normal),
        cmocka_unit_test(test_bca_skewed_shifts_right),
        cmocka_unit_test(test_bca_coverage),
        cmocka_unit_test(test_kappa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
