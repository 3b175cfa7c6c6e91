/*
 * stats.h — the mean of a set of scores and its 95% BCa bootstrap interval, made
 * deterministic by a seeded PRNG, so anyone recomputing from the same scores and seed
 * gets the same bits (run summaries, promotion recommendations:
 * docs/history.md#promotion-recommend-never-apply).
 *
 * The PRNG is xoshiro256** seeded through splitmix64; indices are drawn without modulo
 * bias (Lemire's multiply-and-reject). The interval is Efron's bias-corrected and
 * accelerated percentile interval:
 *   theta      = mean(x)
 *   boot[b]    = mean of n draws from x with replacement, b = 1..B   (draws in order)
 *   z0         = Phi^-1( (#{boot < theta} + #{boot == theta}/2) / B ), with the
 *                proportion clamped to [1/(2B), 1 - 1/(2B)]
 *   a          = sum(d^3) / (6 * sum(d^2)^1.5), d_i = mean_j(theta_(j)) - theta_(i),
 *                theta_(i) the jackknife mean without x_i (a = 0 when the sum is 0)
 *   alpha_k    = Phi( z0 + (z0 + z_k) / (1 - a (z0 + z_k)) ), z_k = Phi^-1(0.025), Phi^-1(0.975)
 *   lo, hi     = boot sorted ascending, read at alpha_k * (B - 1) with linear interpolation
 * When every x is equal the interval is [x, x]. The order of x matters (it fixes which
 * draw picks which value): callers pass scores sorted by case id.
 */
#ifndef BD_STATS_H
#define BD_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define BD_STATS_RESAMPLES 10000
/* The resampling seed of run summaries: "benchdsk" as a big-endian integer. */
#define BD_STATS_RUN_SEED 0x62656E636864736BULL

typedef struct bd_rng {
    uint64_t s[4];
} bd_rng;

/* Seed the generator (any seed, including 0, is valid). */
void bd_rng_seed(bd_rng *rng, uint64_t seed);

/* Next 64 random bits. */
uint64_t bd_rng_next(bd_rng *rng);

/* Uniform integer in [0, n), n > 0 (0 when n == 0). */
uint64_t bd_rng_below(bd_rng *rng, uint64_t n);

/* A seed from bytes: the first 8 bytes of their BLAKE3, little-endian (e.g. a chain
 * head, so a recommendation's interval can be recomputed). */
uint64_t bd_stats_seed_from(const void *data, size_t len);

/* Arithmetic mean; 0 when n == 0. */
double bd_stats_mean(const double *x, size_t n);

/* Standard normal CDF and its inverse (p in (0, 1); ±INFINITY at 0 and 1). */
double bd_stats_norm_cdf(double z);
double bd_stats_norm_ppf(double p);

/* The BCa interval of the mean of x[0..n) at confidence `level` (e.g. 0.95) with
 * `resamples` bootstrap resamples (0 means BD_STATS_RESAMPLES) from `seed`. Returns 0
 * with *lo <= *hi (both within [min x, max x]), or -1: usage.bad_args for n == 0, a
 * level outside (0, 1) or a non-finite x; env.out_of_memory. */
int bd_stats_bca(const double *x, size_t n, double level, size_t resamples, uint64_t seed,
                 double *lo, double *hi, bd_err *err);

/* McNemar's exact test: the two-sided binomial p-value of `b` discordant pairs one way
 * and `c` the other under H0 p = 1/2, min(1, 2 * P(X <= min(b, c))) with X ~ Bin(b + c,
 * 1/2); 1 when b + c == 0. Summed in log space, so any count is finite (relative error
 * below 1e-10). */
double bd_stats_mcnemar_exact(uint64_t b, uint64_t c);

/* Cohen's kappa of a 2x2 agreement table: a = both pass, b = first passes and the second
 * fails, c = the other way, d = both fail. kappa = (po - pe) / (1 - pe) with po = (a + d)
 * / n and pe = ((a + b)(a + c) + (c + d)(b + d)) / n^2. Returns 0 with *kappa, or -1 when
 * it is undefined (n == 0, or pe == 1: every pair in one cell of one margin). */
int bd_stats_kappa(uint64_t a, uint64_t b, uint64_t c, uint64_t d, double *kappa);

/* The percentile bootstrap interval of Cohen's kappa over the n pairs (x[i], y[i]) (true =
 * pass) at confidence `level`, `resamples` resamples (0: BD_STATS_RESAMPLES) of n pairs
 * drawn with replacement from `seed` (in order: resample b draws its n indices before
 * resample b + 1); resamples where kappa is undefined are left out. Returns 0 with
 * *lo <= *hi, or -1: usage.bad_args (n == 0, a level outside (0, 1), no resample with a
 * defined kappa), env.out_of_memory. */
int bd_stats_kappa_ci(const unsigned char *x, const unsigned char *y, size_t n, double level,
                      size_t resamples, uint64_t seed, double *lo, double *hi, bd_err *err);

#endif
