/*
 * hmembers.c — members of canonical record bytes read without a parse (history.h:
 * bd_record_members, bd_record_score), for the views and the index, which read many
 * records already verified.
 */
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "history_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The end of the JSON string starting at p (its opening quote), or NULL. A backslash
 * escapes the byte after it (\uXXXX's digits are never quotes). Sixteen bytes at a time
 * where they are there to read: most of a record is strings. */
const char *hist_skip_string(const char *p, const char *end)
{
    p++;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)));
        if (!m) {
            p += 16;
            continue;
        }
        p += __builtin_ctz(m);
        if (*p == '"')
            return p + 1;
        p += 2;
    }
#endif
    while (p < end) {
        if (*p == '"')
            return p + 1;
        p += *p == '\\' ? 2 : 1;
    }
    return NULL;
}

/* The end of the JSON value starting at p, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return hist_skip_string(p, end);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            if (*p == '"') {
                p = hist_skip_string(p, end);
                if (!p)
                    return NULL;
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    while (p < end && *p != ',' && *p != '}')
        p++;
    return p;
}

/* The first key not yet found (bit i of `left` set for key i < 64) named k/kl, or n. */
static size_t key_index(const char *const *keys, size_t n, const size_t *klen, const char *kc,
                        uint64_t left, const char **vals, const char *k, size_t kl)
{
    for (uint64_t m = left; m; m &= m - 1) {
        size_t i = (size_t)__builtin_ctzll(m);
        if (kc[i] == *k && klen[i] == kl && memcmp(keys[i], k, kl) == 0)
            return i;
    }
    for (size_t i = 64; i < n; i++)
        if (!vals[i] && keys[i][0] == *k && strlen(keys[i]) == kl && memcmp(keys[i], k, kl) == 0)
            return i;
    return n;
}

size_t bd_record_members(const char *rec, size_t len, const char *const *keys, size_t n,
                         const char **vals, size_t *vlens)
{
    const char *p = rec, *end = rec + len;
    size_t found = 0;
    /* Each key's length and first byte once, and the keys not found yet as bits: a record
     * has some twenty members, each looked up among the keys still wanted. */
    size_t klen[64];
    char kc[64];
    uint64_t left = n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        vlens[i] = 0;
        if (i < 64) {
            klen[i] = strlen(keys[i]);
            kc[i] = keys[i][0];
        }
    }
    if (p >= end || *p != '{')
        return 0;
    p++;
    while (p < end && *p == '"') {
        const char *k = p + 1, *ke = hist_skip_string(p, end);
        if (!ke || ke >= end || *ke != ':')
            return found;
        size_t kl = (size_t)(ke - 1 - k);
        const char *v = ke + 1, *ve = skip_value(v, end);
        if (!ve)
            return found;
        size_t i = key_index(keys, n, klen, kc, left, vals, k, kl);
        if (i < n) {
            vals[i] = v;
            vlens[i] = (size_t)(ve - v);
            found++;
            if (i < 64)
                left &= ~((uint64_t)1 << i);
        }
        if (found == n || ve >= end || *ve != ',')
            return found;
        p = ve + 1;
    }
    return found;
}

/* Numbers are read as verify read them: JSON's grammar, a '.' whatever the locale. */
static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void c_numeric_init(void)
{
    c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

bool bd_record_number(const char *v, size_t vl, double *out)
{
    char num[40];
    size_t i = 0;
    while (i < vl && i < sizeof(num) - 1 && strchr("0123456789.eE+-", v[i]) && v[i])
        i++;
    if (i == 0 || i != vl)
        return false;
    memcpy(num, v, i);
    num[i] = '\0';
    pthread_once(&c_numeric_once, c_numeric_init);
    if (!c_numeric)
        return false;
    char *end = NULL;
    double d = strtod_l(num, &end, c_numeric);
    if (end != num + i)
        return false;
    *out = d;
    return true;
}

bool bd_record_score_of(const char *sv, size_t sl, bool *passed, double *score)
{
    static const char *const keys[2] = {"passed", "score"};
    const char *v[2];
    size_t vl[2];
    if (!sv || sl == 0 || sv[0] != '{' || bd_record_members(sv, sl, keys, 2, v, vl) != 2)
        return false;
    if (vl[0] == 4 && memcmp(v[0], "true", 4) == 0)
        *passed = true;
    else if (vl[0] == 5 && memcmp(v[0], "false", 5) == 0)
        *passed = false;
    else
        return false;
    return bd_record_number(v[1], vl[1], score);
}

bool bd_record_score(const char *rec, size_t len, bool *passed, double *score)
{
    static const char *const key[1] = {"score"};
    const char *v;
    size_t vl;
    return bd_record_members(rec, len, key, 1, &v, &vl) == 1 &&
           bd_record_score_of(v, vl, passed, score);
}
