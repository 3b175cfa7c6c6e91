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

/* ---- a score record read from both ends (bd_record_members_scored) ------------------ */

/* A byte of a JSON number, true or false. */
static inline bool scalar_byte(char c)
{
    return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' ||
           c == 't' || c == 'r' || c == 'u' || c == 'f' || c == 'a' || c == 'l' || c == 's';
}

static inline uint64_t load8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Whether the n bytes at p (9 <= n <= 24, all there to read) are pat's: three words that
 * cover them, the last ending at the n-th byte. */
static inline bool same_bytes(const char *p, const char *pat, size_t n)
{
    return load8(p) == load8(pat) && load8(p + n - 8) == load8(pat + n - 8) &&
           (n <= 16 || load8(p + 8) == load8(pat + 8));
}

/* Going backwards from `end` (one past a member's value): the member `,"key":value` whose
 * value is a string with no quote inside (string) or a run of number or literal bytes.
 * Returns where its comma is, with its value in *v and *vl; NULL when the bytes are not so. */
static inline __attribute__((always_inline)) const char *
member_back(const char *lo, const char *end, const char *pat, size_t n, bool string, const char **v,
            size_t *vl)
{
    const char *vs = end;
    if (string) {
        if (end - lo < 2 || end[-1] != '"')
            return NULL;
        vs = memrchr(lo, '"', (size_t)(end - 1 - lo));
        if (!vs)
            return NULL;
    } else {
        while (vs > lo && scalar_byte(vs[-1]))
            vs--;
        if (vs == end)
            return NULL;
    }
    /* An unescaped quote right after `,"key":` (pat, n bytes) opens the value: the bytes
     * between hold no quote, so this is the whole string. */
    if ((size_t)(vs - lo) < n)
        return NULL;
    const char *m = vs - n;
    if (n >= 9 ? !same_bytes(m, pat, n) : memcmp(m, pat, n) != 0)
        return NULL;
    *v = vs;
    *vl = (size_t)(end - vs);
    return m;
}

/* member_back of the member named `key` (a literal: its bytes and length known when
 * compiling, so the compare is inlined). */
#define MEMBER_BACK(lo, end, key, ...)                                                             \
    member_back(lo, end, ",\"" key "\":", sizeof(key) + 3, __VA_ARGS__)

enum { TAIL_SEQ, TAIL_STARTED, TAIL_TC, TAIL_TCD, TAIL_SCORE, TAIL__N };

/* The members after `score`, read from the record's end (the last byte closes the top
 * level and these hold no brace, so they are top-level members), and the span of score's
 * value ending where they start. False when the record does not end so. */
static bool scored_tail(const char *rec, size_t len, const char *tv[TAIL__N], size_t tl[TAIL__N],
                        const char **score_end)
{
    if (len < 2 || rec[len - 1] != '}')
        return false;
    const char *m = rec + len - 1;
    if (!(m = MEMBER_BACK(rec, m, "task_class_digest", true, &tv[TAIL_TCD], &tl[TAIL_TCD])) ||
        !(m = MEMBER_BACK(rec, m, "task_class", true, &tv[TAIL_TC], &tl[TAIL_TC])) ||
        !(m = MEMBER_BACK(rec, m, "started_at", true, &tv[TAIL_STARTED], &tl[TAIL_STARTED])) ||
        !(m = MEMBER_BACK(rec, m, "seq", false, &tv[TAIL_SEQ], &tl[TAIL_SEQ])))
        return false;
    *score_end = m;
    return m > rec && m[-1] == '}';
}

/* score's passed and score from the end of its BenchScore object [sv, se): they are its
 * last members but wall_clock_ms, all scalars (so at the object's own level). */
static bool scored_score(const char *sv, const char *se, bool *passed, double *score)
{
    const char *v, *m;
    size_t vl;
    if (!(m = MEMBER_BACK(sv, se - 1, "wall_clock_ms", false, &v, &vl)) ||
        !(m = MEMBER_BACK(sv, m, "score", false, &v, &vl)) || !bd_record_number(v, vl, score))
        return false;
    if (!(m = MEMBER_BACK(sv, m, "passed", false, &v, &vl)))
        return false;
    if (vl == 4 && memcmp(v, "true", 4) == 0)
        *passed = true;
    else if (vl == 5 && memcmp(v, "false", 5) == 0)
        *passed = false;
    else
        return false;
    return true;
}

/* The members a version-2 score record may hold before `score`, in canonical (sorted)
 * order (docs/formats.md#history-records-format-v2), each as its first bytes `"name":`
 * (at most 23 of them), and the length of each name. */
static const char known_pat[][24] = {"\"case_digest\":",
                                     "\"case_id\":",
                                     "\"cassette_digest\":",
                                     "\"finished_at\":",
                                     "\"harness_version\":",
                                     "\"isolation_class\":",
                                     "\"operator_fingerprint\":",
                                     "\"origin\":",
                                     "\"prev_hash\":",
                                     "\"provenance_verified\":",
                                     "\"run_cases\":",
                                     "\"run_id\":",
                                     "\"run_scope\":",
                                     "\"schema_version\":"};
#define N_KNOWN (sizeof(known_pat) / sizeof(known_pat[0]))
static const uint8_t known_len[N_KNOWN] = {11, 7, 15, 11, 15, 15, 20, 6, 9, 19, 9, 6, 9, 14};

static bool members_known = true;

void bd_record_test_members_known(bool on)
{
    members_known = on;
}

/* The members read from the record's end, in the order of the TAIL_ enum. */
static const char *const tail_keys[TAIL__N] = {"seq", "started_at", "task_class",
                                               "task_class_digest", "score"};

/* The first key of ks named name/len (ks->n: none), as key_take finds it when none of
 * that name was taken before. */
static uint8_t first_named(const bd_record_keys *ks, const char *name, size_t len)
{
    for (size_t i = 0; i < ks->n; i++)
        if (ks->len[i] == len && memcmp(ks->keys[i], name, len) == 0)
            return (uint8_t)i;
    return (uint8_t)ks->n;
}

void bd_record_keys_init(bd_record_keys *ks, const char *const *keys, size_t n)
{
    memset(ks, 0, sizeof(*ks));
    ks->keys = keys;
    ks->n = n < 64 ? n : 64;
    for (size_t i = 0; i < ks->n; i++) {
        ks->len[i] = strlen(keys[i]);
        ks->slot[((unsigned char)keys[i][0] + ks->len[i]) % 32] |= (uint64_t)1 << i;
    }
    _Static_assert(N_KNOWN <= sizeof(ks->known), "room for the known members");
    _Static_assert(TAIL__N <= sizeof(ks->tail), "room for the members read from the end");
    for (size_t k = 0; k < N_KNOWN; k++)
        ks->known[k] = first_named(ks, known_pat[k] + 1, known_len[k]);
    for (size_t t = 0; t < TAIL__N; t++)
        ks->tail[t] = first_named(ks, tail_keys[t], strlen(tail_keys[t]));
}

/* The key of ks named k/kl not found yet (bit set in *left), or ks->n; its bit cleared. */
static size_t key_take(const bd_record_keys *ks, uint64_t *left, const char *k, size_t kl)
{
    for (uint64_t c = ks->slot[((unsigned char)*k + kl) % 32] & *left; c; c &= c - 1) {
        size_t i = (size_t)__builtin_ctzll(c);
        if (ks->len[i] == kl && memcmp(ks->keys[i], k, kl) == 0) {
            *left &= ~((uint64_t)1 << i);
            return i;
        }
    }
    return ks->n;
}

/* The member whose key's opening quote is at p: its key [*k, *k + *kl) and where its
 * value starts (*v). False when the bytes there are not a key and a colon. */
static bool member_key(const char *p, const char *end, const char **k, size_t *kl, const char **v)
{
    const char *ke = hist_skip_string(p, end);
    if (!ke || ke >= end || *ke != ':')
        return false;
    *k = p + 1;
    *kl = (size_t)(ke - 1 - *k);
    *v = ke + 1;
    return true;
}

/* Every key of ks, as the bits of the keys not found yet. */
static uint64_t keys_left(const bd_record_keys *ks)
{
    return ks->n == 64 ? ~(uint64_t)0 : ((uint64_t)1 << ks->n) - 1;
}

size_t bd_record_members(const char *rec, size_t len, const char *const *keys, size_t n,
                         const char **vals, size_t *vlens)
{
    bd_record_keys ks;
    bd_record_keys_init(&ks, keys, n);
    uint64_t left = keys_left(&ks);
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        vlens[i] = 0;
    }
    const char *end = rec + len;
    if (len == 0 || *rec != '{')
        return 0;
    for (const char *p = rec + 1; p < end && *p == '"';) {
        const char *k, *v, *ve;
        size_t kl;
        if (!member_key(p, end, &k, &kl, &v) || !(ve = skip_value(v, end)))
            return found;
        size_t i = key_take(&ks, &left, k, kl);
        if (i < ks.n) {
            vals[i] = v;
            vlens[i] = (size_t)(ve - v);
            found++;
        }
        if (found == ks.n || ve >= end || *ve != ',')
            return found;
        p = ve + 1;
    }
    return found;
}

/* The members before `score` read by their known names (known_pat, in that order; no
 * key is scanned for its end or looked up): true with vals/vlens filled and *score_at at
 * score's value, exactly as the general loop below fills them; false for any other member
 * or shape (the general loop then reads the record). */
static bool scored_known(const char *rec, const char *end, const bd_record_keys *ks,
                         const char **vals, size_t *vlens, const char **score_at)
{
    const char *p = rec + 1;
    size_t j = 0;
    while (p < end && *p == '"') {
        /* the next known name this member can be (names are sorted, each at most once) */
        for (; j < N_KNOWN; j++) {
            size_t n = (size_t)known_len[j] + 3; /* the quotes and the colon */
            if ((size_t)(end - p) >= n && p[1] == known_pat[j][1] && same_bytes(p, known_pat[j], n))
                break;
        }
        if (j == N_KNOWN) {
            if ((size_t)(end - p) > 8 && memcmp(p, "\"score\":", 8) == 0) {
                *score_at = p + 8;
                return true;
            }
            return false;
        }
        const char *v = p + known_len[j] + 3, *ve = skip_value(v, end);
        if (!ve || ve >= end || *ve != ',')
            return false;
        size_t i = ks->known[j];
        if (i < ks->n) {
            vals[i] = v;
            vlens[i] = (size_t)(ve - v);
        }
        j++;
        p = ve + 1;
    }
    return false;
}

bool bd_record_members_scored(const char *rec, size_t len, const bd_record_keys *ks,
                              const char **vals, size_t *vlens, bool *passed, double *score)
{
    const char *tv[TAIL__N];
    size_t tl[TAIL__N];
    const char *score_end = NULL;
    if (!scored_tail(rec, len, tv, tl, &score_end))
        return false;
    size_t n = ks->n;
    uint64_t left = keys_left(ks);
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        vlens[i] = 0;
    }
    /* forwards over the members before score (sorted: the first at or past "score" ends
     * them); those are short scalars and an import's origin */
    const char *p = rec + 1, *end = rec + len, *score_at = NULL;
    if (*rec != '{')
        return false;
    if (members_known && scored_known(rec, end, ks, vals, vlens, &score_at)) {
        p = end; /* the loop below is done */
    } else {
        score_at = NULL;
        for (size_t i = 0; i < n; i++) {
            vals[i] = NULL;
            vlens[i] = 0;
        }
    }
    while (p < end && *p == '"') {
        const char *k, *v, *ve;
        size_t kl;
        if (!member_key(p, end, &k, &kl, &v))
            return false;
        int c = *k != 's' ? (*k < 's' ? -1 : 1) : memcmp(k, "score", kl < 5 ? kl : 5);
        if (c > 0 || (c == 0 && kl > 5))
            return false; /* past score without it: not a score record */
        if (c == 0 && kl == 5) {
            score_at = v;
            break;
        }
        if (!(ve = skip_value(v, end)) || ve >= end || *ve != ',')
            return false;
        size_t i = key_take(ks, &left, k, kl);
        if (i < n) {
            vals[i] = v;
            vlens[i] = (size_t)(ve - v);
        }
        p = ve + 1;
    }
    if (!score_at || score_at >= score_end || *score_at != '{' ||
        !scored_score(score_at, score_end, passed, score))
        return false;
    tv[TAIL_SCORE] = score_at;
    tl[TAIL_SCORE] = (size_t)(score_end - score_at);
    /* no member before score bears their names (those sort before "score") */
    for (size_t t = 0; t < TAIL__N; t++) {
        size_t i = ks->tail[t];
        if (i < n) {
            vals[i] = tv[t];
            vlens[i] = tl[t];
        }
    }
    return true;
}

/* Numbers are read as verify read them: JSON's grammar, a '.' whatever the locale. */
static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void c_numeric_init(void)
{
    c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* A plain decimal (-?digits[.digits], at most 15 digits): the integer of its digits over a
 * power of ten, both exact doubles, so the quotient is the correctly rounded value strtod
 * gives (Clinger's fast path) without strtod's cost. False for anything else. */
static bool plain_decimal(const char *v, size_t vl, double *out)
{
    static const double pow10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    size_t i = v[0] == '-', digits = 0, frac = 0;
    bool dot = false;
    uint64_t m = 0;
    if (i == vl)
        return false;
    for (; i < vl; i++) {
        if (v[i] >= '0' && v[i] <= '9') {
            m = m * 10 + (uint64_t)(v[i] - '0');
            digits++;
            frac += dot;
        } else if (v[i] == '.' && !dot && digits > 0) {
            dot = true;
        } else {
            return false;
        }
    }
    if (digits == 0 || digits > 15 || (dot && frac == 0))
        return false;
    double d = (double)m / pow10[frac];
    *out = v[0] == '-' ? -d : d;
    return true;
}

bool bd_record_number(const char *v, size_t vl, double *out)
{
    if (vl > 0 && plain_decimal(v, vl, out))
        return true;
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
