#include "recscan.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "text.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef unsigned __int128 u128;

#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Whether any byte of x is '"', '\\', below 0x20 or above 0x7f (the usual zero-byte
 * tests: a byte below k sets its high bit in x - k*ONES unless x's high bit was set). */
static inline bool special8(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    uint64_t t = ((q - ONES) & ~q) | ((b - ONES) & ~b) | (x - ONES * 0x20) | x;
    return (t & HIGHS) != 0;
}

bool bd_rs_string(bd_rscan *s, char *dec, size_t cap, size_t *n)
{
    const unsigned char *p = (const unsigned char *)s->p, *end = (const unsigned char *)s->end;
    if (p == end || *p != '"' || cap == 0)
        return false;
    const unsigned char *start = ++p;
    size_t o = 0;
    unsigned char high = 0;
    for (;;) {
#ifdef __SSE2__
        /* Sixteen plain bytes at a time: none of '"', '\\', below 0x20 or above 0x7f (as
         * signed bytes, both ranges are below 0x20). */
        while (end - p >= 16 && cap - o > 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
            __m128i sp = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)),
                                      _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                                   _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))));
            unsigned mask = (unsigned)_mm_movemask_epi8(sp);
            if (mask) {
                unsigned k = (unsigned)__builtin_ctz(mask); /* plain bytes before it */
                memcpy(dec + o, p, k);
                o += k;
                p += k;
                break;
            }
            _mm_storeu_si128((__m128i *)(void *)(dec + o), x);
            o += 16;
            p += 16;
        }
#endif
        /* Eight plain bytes at a time: none of '"', '\\', below 0x20 or above 0x7f. */
        while (end - p >= 8 && cap - o > 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (special8(x))
                break;
            memcpy(dec + o, p, 8);
            o += 8;
            p += 8;
        }
        if (p == end)
            return false;
        unsigned char c = *p, out;
        if (c == '"')
            break;
        if (c == '\\') {
            if (end - p < 2)
                return false;
            switch (p[1]) {
            case '"':
                out = '"';
                break;
            case '\\':
                out = '\\';
                break;
            case 'b':
                out = '\b';
                break;
            case 'f':
                out = '\f';
                break;
            case 'n':
                out = '\n';
                break;
            case 'r':
                out = '\r';
                break;
            case 't':
                out = '\t';
                break;
            case 'u': {
                /* canon.c writes \u00xx, lower-case, for the bytes 0x01..0x1f that have
                 * no short escape; every other \u escape is some other writer's. */
                if (end - p < 6 || p[2] != '0' || p[3] != '0' || (p[4] != '0' && p[4] != '1'))
                    return false;
                unsigned lo = p[5];
                if (lo >= '0' && lo <= '9')
                    lo -= '0';
                else if (lo >= 'a' && lo <= 'f')
                    lo = lo - 'a' + 10;
                else
                    return false;
                out = (unsigned char)((p[4] - '0') << 4 | lo);
                if (out == 0 || out == '\b' || out == '\f' || out == '\n' || out == '\r' ||
                    out == '\t')
                    return false;
                p += 4; /* + the 2 below */
                break;
            }
            default: /* \/ and anything else */
                return false;
            }
            p += 2;
        } else {
            if (c < 0x20)
                return false; /* canon.c escapes every control byte */
            high |= c;
            out = c;
            p++;
        }
        if (o + 1 >= cap)
            return false;
        dec[o++] = (char)out;
    }
    /* Escapes are ASCII: the raw bytes are valid UTF-8 exactly when the decoded ones are. */
    if ((high & 0x80) && !bd_utf8_valid((const char *)start, (size_t)(p - start)))
        return false;
    dec[o] = '\0';
    *n = o;
    s->p = (const char *)p + 1;
    return true;
}

bool bd_rs_bool(bd_rscan *s, bool *v)
{
    if (bd_rs_lit(s, "true", 4)) {
        *v = true;
        return true;
    }
    if (bd_rs_lit(s, "false", 5)) {
        *v = false;
        return true;
    }
    return false;
}

static const uint64_t pow10_64[20] = {1u,
                                      10u,
                                      100u,
                                      1000u,
                                      10000u,
                                      100000u,
                                      1000000u,
                                      10000000u,
                                      100000000u,
                                      1000000000u,
                                      10000000000u,
                                      100000000000u,
                                      1000000000000u,
                                      10000000000000u,
                                      100000000000000u,
                                      1000000000000000u,
                                      10000000000000000u,
                                      100000000000000000u,
                                      1000000000000000000u,
                                      10000000000000000000u};

static u128 pow10_128(int k)
{
    return k < 20 ? (u128)pow10_64[k] : (u128)pow10_64[19] * pow10_64[k - 19];
}

static int floor_log2(u128 x)
{
    uint64_t hi = (uint64_t)(x >> 64);
    return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll((uint64_t)x);
}

#define TWO52 ((uint64_t)1 << 52)
#define TWO53 ((uint64_t)1 << 53)

/* The decimal M / 10^f, M of n (16 or 17) significant digits, its value in [1e-4, 1e15):
 * its double in *v when canon.c prints that double as exactly these digits.
 *
 * Exact integer arithmetic. The double nearest M / 10^f is m / 2^t, m in [2^52, 2^53)
 * (t <= 66 at 1e-4, so M * 2^t < 2^124). Scaled by W = 2^(t+2) * 10^f every quantity is an
 * integer below 2^125: the double is D = 4m * 10^f, the half gaps to its neighbours are
 * 2 * 10^f (10^f below a power of two), and a P-digit decimal is a multiple of
 * U_P = 10^(n-P) * 2^(t+2). "%.Pg" prints D rounded to the nearest multiple of U_P (the
 * double's decimal exponent is checked to be the text's, so the digit positions agree),
 * and that reads back as the double when it lies inside the half gaps. Ties go to the
 * even neighbour, as glibc's strtod and printf round (to nearest, ties to even). */
static bool long_decimal(uint64_t M, int n, int f, double *v)
{
    u128 den = pow10_128(f);
    int t = 52 - (floor_log2(M) - floor_log2(den));
    u128 num, q;
    for (int tries = 0;; tries++) {
        if (t < 1 || t > 68 || tries > 2)
            return false;
        num = (u128)M << t;
        q = num / den;
        if (q >= TWO53)
            t--;
        else if (q < TWO52)
            t++;
        else
            break;
    }
    u128 rem = num - q * den;
    if (2 * rem > den || (2 * rem == den && (q & 1))) /* strtod: to nearest, ties to even */
        q++;
    if (q == TWO53) {
        q = TWO52;
        t--;
    }
    uint64_t m = (uint64_t)q;
    /* An integral double is printed as an integer: not this text. */
    if (t <= 52 && (m & (((uint64_t)1 << t) - 1)) == 0)
        return false;
    u128 W2 = (u128)1 << (t + 2);
    u128 D = (u128)m * 4 * den;
    if (D < pow10_128(n - 1) * W2 || D >= pow10_128(n) * W2)
        return false; /* the double's decimal exponent is not the text's */
    u128 lo = D - (m == TWO52 ? 1 : 2) * den, hi = D + 2 * den;
    for (int P = 15; P <= n; P++) {
        u128 U = pow10_128(n - P) * W2;
        u128 qp = D / U, r = D - qp * U;
        if (2 * r > U || (2 * r == U && (qp & 1))) /* printf: to nearest, ties to even */
            qp++;
        if (P == n) {
            if (qp != M)
                return false;
            break;
        }
        u128 R = qp * U;
        /* strtod reads R back as this double when R is nearer to it than to a neighbour,
         * or exactly halfway and this double's significand is the even one */
        if ((R > lo && R < hi) || ((R == lo || R == hi) && (m & 1) == 0))
            return false; /* "%.Pg" already reads back: canon.c prints that shorter form */
    }
    *v = ldexp((double)m, -t);
    return true;
}

static inline bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* 10^0 .. 10^22: exact doubles. */
static const double pow10_dbl[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* M / 10^f for M < 10^15 (below 2^53) and f <= 22: both are exact doubles, so the one
 * division is correctly rounded, the double strtod reads (Clinger). */
static double short_decimal(uint64_t M, int f)
{
    return (double)M / pow10_dbl[f];
}

bool bd_rs_number(bd_rscan *s, double *v)
{
    const char *p = s->p, *end = s->end;
    bool neg = p < end && *p == '-';
    if (neg)
        p++;
    const char *ip = p;
    if (p == end || !is_digit(*p))
        return false;
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit(*p))
            p++;
    size_t il = (size_t)(p - ip);
    if (p < end && is_digit(*p))
        return false; /* a leading zero */
    const char *fp = p;
    size_t fl = 0;
    if (p < end && *p == '.') {
        fp = ++p;
        while (p < end && is_digit(*p))
            p++;
        fl = (size_t)(p - fp);
        if (fl == 0 || fp[fl - 1] == '0')
            return false; /* "1." or a trailing zero: %g never prints one */
    }
    uint64_t M = 0;
    int n, f;
    if (p < end && (*p == 'e' || *p == 'E')) {
        /* %g's exponent form below 1e-4: "d[.ddd]e-XX", one digit before the point, two
         * exponent digits (e-05 to e-99 here) */
        if (il != 1 || *ip == '0' || end - p < 4 || p[1] != '-' || !is_digit(p[2]) ||
            !is_digit(p[3]) || *p != 'e')
            return false;
        int x = (p[2] - '0') * 10 + (p[3] - '0');
        n = (int)(1 + fl);
        f = n - 1 + x;
        if (x < 5 || n > 15)
            return false;
        M = (uint64_t)(*ip - '0');
        for (size_t i = 0; i < fl; i++)
            M = M * 10 + (uint64_t)(fp[i] - '0');
        /* any decimal of at most 15 significant digits survives a round trip through a
         * double (DBL_DIG; 1e-99 is far from the subnormals), so "%.15g" prints exactly
         * this text */
        double d;
        if (f <= 22) {
            d = short_decimal(M, f);
        } else {
            char t[32]; /* "d.<14 digits>e-XX" */
            size_t tl = (size_t)(p + 4 - ip);
            locale_t loc = bd_text_c_locale();
            if (tl >= sizeof(t) || loc == (locale_t)0)
                return false;
            memcpy(t, ip, tl);
            t[tl] = '\0';
            d = strtod_l(t, NULL, loc);
        }
        *v = neg ? -d : d;
        s->p = p + 4;
        return true;
    }
    if (fl == 0) {
        if (il > 15 || (neg && *ip == '0'))
            return false; /* past 2^53 (left to the full parser), or "-0" */
        for (size_t i = 0; i < il; i++)
            M = M * 10 + (uint64_t)(ip[i] - '0');
        *v = neg ? -(double)M : (double)M;
        s->p = p;
        return true;
    }
    if (*ip == '0') {
        size_t z = 0;
        while (fp[z] == '0')
            z++; /* stops: the last digit is not 0 */
        if (z > 3)
            return false; /* below 1e-4 %g switches to an exponent */
        n = (int)(fl - z);
        if (n > 17)
            return false;
        for (size_t i = z; i < fl; i++)
            M = M * 10 + (uint64_t)(fp[i] - '0');
    } else {
        if (il > 15)
            return false; /* 1e15 and up: a double there has at most one fraction bit */
        n = (int)(il + fl);
        if (n > 17)
            return false;
        for (size_t i = 0; i < il; i++)
            M = M * 10 + (uint64_t)(ip[i] - '0');
        for (size_t i = 0; i < fl; i++)
            M = M * 10 + (uint64_t)(fp[i] - '0');
    }
    f = (int)fl; /* <= 3 + 17 */
    double d;
    if (n <= 15) {
        /* f <= 18; printed with %.15g the double gives back these digits (DBL_DIG), so
         * canon.c writes exactly this text */
        d = short_decimal(M, f);
    } else if (!long_decimal(M, n, f, &d)) {
        return false;
    }
    *v = neg ? -d : d;
    s->p = p;
    return true;
}
