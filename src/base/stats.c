#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void bd_rng_seed(bd_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* The generator and the index draw are inlined into the resampling loops (ten million
 * draws for a BCa interval of 1,000 pairs): as calls they cost more than the draws. */
static inline __attribute__((always_inline)) uint64_t rng_next(bd_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static inline __attribute__((always_inline)) uint64_t rng_below(bd_rng *rng, uint64_t n)
{
    if (n == 0)
        return 0;
    /* Lemire: the high half of x * n is uniform once the biased low range is rejected. */
    uint64_t x = rng_next(rng);
    unsigned __int128 m = (unsigned __int128)x * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
        uint64_t t = (0 - n) % n;
        while (l < t) {
            x = rng_next(rng);
            m = (unsigned __int128)x * n;
            l = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

uint64_t bd_rng_next(bd_rng *rng)
{
    return rng_next(rng);
}

uint64_t bd_rng_below(bd_rng *rng, uint64_t n)
{
    return rng_below(rng, n);
}

uint64_t bd_stats_seed_from(const void *data, size_t len)
{
    uint8_t h[32];
    bd_blake3_raw(h, data, len);
    uint64_t seed = 0;
    for (int i = 7; i >= 0; i--)
        seed = (seed << 8) | h[i];
    return seed;
}

double bd_stats_mean(const double *x, size_t n)
{
    if (n == 0)
        return 0.0;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return sum / (double)n;
}

double bd_stats_norm_cdf(double z)
{
    return 0.5 * erfc(-z / sqrt(2.0));
}

double bd_stats_norm_ppf(double p)
{
    if (!(p > 0.0))
        return p == 0.0 ? -INFINITY : NAN;
    if (!(p < 1.0))
        return p == 1.0 ? INFINITY : NAN;
    /* Acklam's rational approximation, then one Halley step on erfc. */
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    const double plow = 0.02425;
    double q, r, x;
    if (p < plow) {
        q = sqrt(-2 * log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    } else if (p <= 1 - plow) {
        q = p - 0.5;
        r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    } else {
        q = sqrt(-2 * log(1 - p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    double e = 0.5 * erfc(-x / sqrt(2.0)) - p;
    double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile_sorted(const double *v, size_t n, double q)
{
    if (q <= 0.0)
        return v[0];
    if (q >= 1.0)
        return v[n - 1];
    double pos = q * (double)(n - 1);
    size_t i = (size_t)floor(pos);
    if (i >= n - 1)
        return v[n - 1];
    double frac = pos - (double)i;
    return v[i] + (v[i + 1] - v[i]) * frac;
}

/* Adjusted percentile for the normal quantile z. */
static double bca_alpha(double z0, double a, double z)
{
    double s = z0 + z;
    double den = 1.0 - a * s;
    if (den <= 0.0)
        return z > 0 ? 1.0 : 0.0;
    return bd_stats_norm_cdf(z0 + s / den);
}

int bd_stats_bca(const double *x, size_t n, double level, size_t resamples, uint64_t seed,
                 double *lo, double *hi, bd_err *err)
{
    if (n == 0)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "no scores to summarise");
    if (!(level > 0.0 && level < 1.0))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "confidence level %g is not in (0, 1)",
                          level);
    double mn = x[0], mx = x[0];
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "score %zu is not a finite number", i);
        if (x[i] < mn)
            mn = x[i];
        if (x[i] > mx)
            mx = x[i];
    }
    double theta = bd_stats_mean(x, n);
    if (mn == mx) {
        *lo = *hi = theta;
        return 0;
    }
    size_t B = resamples ? resamples : BD_STATS_RESAMPLES;
    double *boot = malloc(B * sizeof(double));
    double *jack = malloc(n * sizeof(double));
    if (!boot || !jack) {
        free(boot);
        free(jack);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    bd_rng rng;
    bd_rng_seed(&rng, seed);
    size_t below = 0, equal = 0;
    for (size_t b = 0; b < B; b++) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            sum += x[rng_below(&rng, n)];
        boot[b] = sum / (double)n;
        if (boot[b] < theta)
            below++;
        else if (boot[b] == theta)
            equal++;
    }
    double prop = ((double)below + 0.5 * (double)equal) / (double)B;
    double pmin = 0.5 / (double)B;
    if (prop < pmin)
        prop = pmin;
    if (prop > 1.0 - pmin)
        prop = 1.0 - pmin;
    double z0 = bd_stats_norm_ppf(prop);

    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total += x[i];
    double jmean = 0.0;
    for (size_t i = 0; i < n; i++) {
        jack[i] = (total - x[i]) / (double)(n - 1);
        jmean += jack[i];
    }
    jmean /= (double)n;
    double num = 0.0, sq = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = jmean - jack[i];
        num += d * d * d;
        sq += d * d;
    }
    double acc = sq > 0.0 ? num / (6.0 * pow(sq, 1.5)) : 0.0;

    double tail = (1.0 - level) / 2.0;
    double a1 = bca_alpha(z0, acc, bd_stats_norm_ppf(tail));
    double a2 = bca_alpha(z0, acc, bd_stats_norm_ppf(1.0 - tail));
    qsort(boot, B, sizeof(double), cmp_double);
    *lo = quantile_sorted(boot, B, a1);
    *hi = quantile_sorted(boot, B, a2);
    if (*lo > *hi) {
        double t = *lo;
        *lo = *hi;
        *hi = t;
    }
    free(boot);
    free(jack);
    return 0;
}

double bd_stats_mcnemar_exact(uint64_t b, uint64_t c)
{
    uint64_t n = b + c;
    uint64_t m = b < c ? b : c;
    if (n == 0 || 2 * m == n)
        return 1.0;
    double tail;
    if (n <= 1000) {
        /* pmf(0) = 2^-n is a normal double here; each step multiplies by an exact ratio,
         * so the error grows only by one rounding per term. */
        double t = ldexp(1.0, -(int)n);
        tail = t;
        for (uint64_t k = 0; k < m; k++) {
            t = t * (double)(n - k) / (double)(k + 1);
            tail += t;
        }
    } else {
        /* pmf(m) in log space, the smaller terms by the same ratios downwards (relative
         * to pmf(m), so nothing underflows before it is negligible). */
        double log_top = lgamma((double)n + 1) - lgamma((double)m + 1) -
                         lgamma((double)(n - m) + 1) - (double)n * M_LN2;
        double rel = 1.0, sum = 1.0;
        for (uint64_t k = m; k > 0 && rel > 1e-300; k--) {
            rel = rel * (double)k / (double)(n - k + 1);
            sum += rel;
        }
        tail = exp(log_top + log(sum));
    }
    double p = 2.0 * tail;
    return p < 1.0 ? p : 1.0;
}

int bd_stats_kappa(uint64_t a, uint64_t b, uint64_t c, uint64_t d, double *kappa)
{
    double n = (double)a + (double)b + (double)c + (double)d;
    if (n == 0)
        return -1;
    double po = ((double)a + (double)d) / n;
    double pe = (((double)a + (double)b) * ((double)a + (double)c) +
                 ((double)c + (double)d) * ((double)b + (double)d)) /
                (n * n);
    if (1.0 - pe <= 0.0)
        return -1;
    *kappa = (po - pe) / (1.0 - pe);
    return 0;
}

/* Sorted v[0..n) read at p * (n - 1) with linear interpolation. */
static double quantile(const double *v, size_t n, double p)
{
    double pos = p * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

int bd_stats_kappa_ci(const unsigned char *x, const unsigned char *y, size_t n, double level,
                      size_t resamples, uint64_t seed, double *lo, double *hi, bd_err *err)
{
    if (n == 0 || !(level > 0 && level < 1))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "a kappa interval needs pairs and a level in (0, 1)");
    if (resamples == 0)
        resamples = BD_STATS_RESAMPLES;
    double *k = malloc(resamples * sizeof(*k));
    if (!k)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory resampling kappa");
    bd_rng rng;
    bd_rng_seed(&rng, seed);
    size_t m = 0;
    for (size_t r = 0; r < resamples; r++) {
        uint64_t cell[4] = {0, 0, 0, 0}; /* a, b, c, d */
        for (size_t i = 0; i < n; i++) {
            size_t j = (size_t)rng_below(&rng, n);
            cell[(x[j] ? 0 : 2) + (y[j] ? 0 : 1)]++;
        }
        if (bd_stats_kappa(cell[0], cell[1], cell[2], cell[3], &k[m]) == 0)
            m++;
    }
    if (m == 0) {
        free(k);
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "kappa is undefined in every resample (one outcome only)");
    }
    qsort(k, m, sizeof(*k), cmp_double);
    *lo = quantile(k, m, (1 - level) / 2);
    *hi = quantile(k, m, 1 - (1 - level) / 2);
    free(k);
    return 0;
}
