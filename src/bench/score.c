#include "score.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* Structural limits of the strict scanner. 64 levels is far beyond any BenchScore
 * (depth 3) and keeps the recursion bounded whatever the rubric prints. */
#define SCAN_MAX_DEPTH 64
/* cJSON copies at most 63 characters of a number; a longer one would be cut and then
 * misread, so the scanner refuses it first. */
#define SCAN_MAX_NUMBER 63
/* A detail never repeats more than this many bytes of rubric output. */
#define ECHO_MAX 64

static const char *const mode_strings[] = {
#define BD_X(name, str) str,
    BD_HARNESS_MODES(BD_X)
#undef BD_X
};

const char *bd_harness_mode_str(bd_harness_mode m)
{
    if ((int)m < 0 || m >= BD_HM__COUNT)
        return "";
    return mode_strings[m];
}

/* ---- UTF-8 --------------------------------------------------------------------------- */

/* ---- details --------------------------------------------------------------------------- */

/* The one-line detail under construction. Rubric bytes enter only through d_echo, which
 * sanitizes them and counts them against ECHO_MAX. */
typedef struct dbuf {
    char *p; /* BD_SCORE_DETAIL_MAX bytes */
    size_t len;
    size_t echoed;
} dbuf;

static void d_reset(dbuf *d)
{
    d->len = 0;
    d->echoed = 0;
    d->p[0] = '\0';
}

__attribute__((format(printf, 2, 3))) static void d_add(dbuf *d, const char *fmt, ...)
{
    if (d->len >= BD_SCORE_DETAIL_MAX - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->p + d->len, BD_SCORE_DETAIL_MAX - d->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    d->len += (size_t)n;
    if (d->len > BD_SCORE_DETAIL_MAX - 1)
        d->len = BD_SCORE_DETAIL_MAX - 1;
}

/* Append at most `max` bytes of untrusted `s` (and never more than the remaining echo
 * budget), printable ASCII only: everything else becomes '?', so a detail can hold no
 * control character, escape sequence or newline. "..." marks a cut. */
static void d_echo(dbuf *d, const char *s, size_t n, size_t max)
{
    size_t budget = ECHO_MAX - d->echoed;
    if (max > budget)
        max = budget;
    size_t take = n < max ? n : max;
    for (size_t i = 0; i < take && d->len < BD_SCORE_DETAIL_MAX - 1; i++) {
        unsigned char c = (unsigned char)s[i];
        d->p[d->len++] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
    }
    d->echoed += take;
    d->p[d->len] = '\0';
    if (take < n)
        d_add(d, "...");
}

/* ---- strict scanner --------------------------------------------------------------------- */

typedef struct seg {
    const char *key; /* NULL for an array index */
    size_t klen;
    size_t idx;
} seg;

typedef struct scanner {
    const unsigned char *s;
    size_t len;
    size_t pos;
    int depth;
    seg path[SCAN_MAX_DEPTH + 1];
    size_t npath;
    dbuf *d;
} scanner;

typedef struct keyent {
    char *s;
    size_t n;
} keyent;

__attribute__((format(printf, 2, 3))) static int sc_fail(scanner *sc, const char *fmt, ...)
{
    char tmp[BD_SCORE_DETAIL_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    d_reset(sc->d);
    d_add(sc->d, "%s", tmp);
    return -1;
}

/* "$.a.b[3]" for the value currently being scanned; keys cut to 24 bytes each. */
static void d_path(dbuf *d, const scanner *sc)
{
    d_add(d, "$");
    for (size_t i = 0; i < sc->npath; i++) {
        if (sc->path[i].key) {
            d_add(d, ".");
            d_echo(d, sc->path[i].key, sc->path[i].klen, 24);
        } else {
            d_add(d, "[%zu]", sc->path[i].idx);
        }
    }
}

static void skip_ws(scanner *sc)
{
    while (sc->pos < sc->len) {
        unsigned char c = sc->s[sc->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        sc->pos++;
    }
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Scan the string at sc->pos (a '"'). When `out` is non-NULL, the decoded bytes are
 * returned there (malloc'd, NUL-terminated, caller frees) with their length in *outlen.
 * Returns 0, -1 on a JSON error (detail set), -2 on out-of-memory. */
static int scan_string(scanner *sc, char **out, size_t *outlen)
{
    size_t start = sc->pos;
    size_t end = start + 1;
    /* First pass: find the closing quote, so the decode buffer can be sized exactly
     * (decoding never lengthens: every escape is at least as long as its bytes). */
    while (end < sc->len && sc->s[end] != '"')
        end += sc->s[end] == '\\' ? 2 : 1;
    if (end >= sc->len)
        return sc_fail(sc, "unterminated string starting at byte %zu", start);
    char *buf = NULL;
    size_t n = 0;
    if (out) {
        buf = malloc(end - start);
        if (!buf)
            return -2;
    }
    size_t i = start + 1;
    while (i < end) {
        unsigned char c = sc->s[i];
        if (c < 0x20) {
            free(buf);
            return sc_fail(sc, "raw control character in a string at byte %zu", i);
        }
        if (c != '\\') {
            if (buf)
                buf[n++] = (char)c;
            i++;
            continue;
        }
        unsigned char e = sc->s[i + 1]; /* i + 1 < end: the first pass skipped it */
        char simple = 0;
        switch (e) {
        case '"':
            simple = '"';
            break;
        case '\\':
            simple = '\\';
            break;
        case '/':
            simple = '/';
            break;
        case 'b':
            simple = '\b';
            break;
        case 'f':
            simple = '\f';
            break;
        case 'n':
            simple = '\n';
            break;
        case 'r':
            simple = '\r';
            break;
        case 't':
            simple = '\t';
            break;
        case 'u':
            break;
        default:
            free(buf);
            return sc_fail(sc, "invalid escape in a string at byte %zu", i);
        }
        if (simple) {
            if (buf)
                buf[n++] = simple;
            i += 2;
            continue;
        }
        unsigned cp;
        if (end - i < 6 || hex4(sc->s + i + 2, &cp) != 0) {
            free(buf);
            return sc_fail(sc, "invalid \\u escape at byte %zu", i);
        }
        if (cp == 0) {
            free(buf);
            return sc_fail(sc, "\\u0000 in a string at byte %zu", i);
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            free(buf);
            return sc_fail(sc, "lone surrogate escape at byte %zu", i);
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (end - i < 12 || sc->s[i + 6] != '\\' || sc->s[i + 7] != 'u' ||
                hex4(sc->s + i + 8, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
                free(buf);
                return sc_fail(sc, "lone surrogate escape at byte %zu", i);
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
        if (buf)
            n += put_utf8(buf + n, cp);
        i += 6;
    }
    sc->pos = end + 1;
    if (out) {
        buf[n] = '\0';
        *out = buf;
        *outlen = n;
    }
    return 0;
}

static int scan_value(scanner *sc);

static int scan_literal(scanner *sc, const char *lit)
{
    size_t m = strlen(lit);
    if (sc->len - sc->pos < m || memcmp(sc->s + sc->pos, lit, m) != 0)
        return sc_fail(sc, "invalid literal at byte %zu", sc->pos);
    sc->pos += m;
    return 0;
}

static bool is_digit(const scanner *sc, size_t i)
{
    return i < sc->len && sc->s[i] >= '0' && sc->s[i] <= '9';
}

static int scan_number(scanner *sc)
{
    size_t start = sc->pos;
    size_t i = start;
    if (sc->s[i] == '-')
        i++;
    if (!is_digit(sc, i))
        return sc_fail(sc, "invalid number at byte %zu", start);
    if (sc->s[i] == '0') {
        i++;
        if (is_digit(sc, i))
            return sc_fail(sc, "number with a leading zero at byte %zu", start);
    } else {
        while (is_digit(sc, i))
            i++;
    }
    if (i < sc->len && sc->s[i] == '.') {
        i++;
        if (!is_digit(sc, i))
            return sc_fail(sc, "invalid number at byte %zu", start);
        while (is_digit(sc, i))
            i++;
    }
    if (i < sc->len && (sc->s[i] == 'e' || sc->s[i] == 'E')) {
        i++;
        if (i < sc->len && (sc->s[i] == '+' || sc->s[i] == '-'))
            i++;
        if (!is_digit(sc, i))
            return sc_fail(sc, "invalid number at byte %zu", start);
        while (is_digit(sc, i))
            i++;
    }
    size_t n = i - start;
    if (n > SCAN_MAX_NUMBER)
        return sc_fail(sc, "number longer than %d characters at byte %zu", SCAN_MAX_NUMBER, start);
    char tmp[SCAN_MAX_NUMBER + 1]; /* read in the C locale, see bd_score_parse */
    memcpy(tmp, sc->s + start, n);
    tmp[n] = '\0';
    if (!isfinite(strtod(tmp, NULL)))
        return sc_fail(sc, "number too large for a double at byte %zu", start);
    sc->pos = i;
    return 0;
}

static int cmp_keys(const void *a, const void *b)
{
    const keyent *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, m);
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* True inside $.checks[i].expected or $.checks[i].actual: the rubric's data, where the
 * banned member names do not apply (docs/formats.md#what-the-rubric-compared). */
static bool in_check_value(const scanner *sc)
{
    const seg *p = sc->path;
    return sc->npath >= 3 && p[0].key && p[0].klen == 6 && memcmp(p[0].key, "checks", 6) == 0 &&
           !p[1].key && p[2].key &&
           ((p[2].klen == 8 && memcmp(p[2].key, "expected", 8) == 0) ||
            (p[2].klen == 6 && memcmp(p[2].key, "actual", 6) == 0));
}

static int scan_object(scanner *sc)
{
    int rc = -1;
    keyent *keys = NULL;
    size_t nkeys = 0, cap = 0;
    sc->pos++; /* '{' */
    skip_ws(sc);
    if (sc->pos < sc->len && sc->s[sc->pos] == '}') {
        sc->pos++;
        rc = 0;
        goto out;
    }
    for (;;) {
        skip_ws(sc);
        if (sc->pos >= sc->len || sc->s[sc->pos] != '"') {
            rc = sc_fail(sc, "expected a string key at byte %zu", sc->pos);
            goto out;
        }
        if (nkeys == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            keyent *k = realloc(keys, ncap * sizeof(*k));
            if (!k) {
                rc = -2;
                goto out;
            }
            keys = k;
            cap = ncap;
        }
        char *key;
        size_t klen;
        rc = scan_string(sc, &key, &klen);
        if (rc != 0)
            goto out;
        keys[nkeys].s = key;
        keys[nkeys].n = klen;
        nkeys++;
        const char *word = in_check_value(sc) ? NULL : bd_score_banned_word(key, klen);
        if (word) {
            d_reset(sc->d);
            d_add(sc->d, "banned key '");
            d_echo(sc->d, key, klen, 32);
            d_add(sc->d, "' (contains '%s') at ", word);
            d_path(sc->d, sc);
            rc = -1;
            goto out;
        }
        skip_ws(sc);
        if (sc->pos >= sc->len || sc->s[sc->pos] != ':') {
            rc = sc_fail(sc, "expected ':' at byte %zu", sc->pos);
            goto out;
        }
        sc->pos++;
        skip_ws(sc);
        sc->path[sc->npath++] = (seg){key, klen, 0};
        rc = scan_value(sc);
        sc->npath--;
        if (rc != 0)
            goto out;
        skip_ws(sc);
        if (sc->pos < sc->len && sc->s[sc->pos] == ',') {
            sc->pos++;
            continue;
        }
        if (sc->pos < sc->len && sc->s[sc->pos] == '}') {
            sc->pos++;
            break;
        }
        rc = sc_fail(sc, "expected ',' or '}' at byte %zu", sc->pos);
        goto out;
    }
    /* Duplicate keys are refused: cJSON would keep both and two readers could see two
     * different values. Compared after unescaping, so "a" and "\u0061" collide. */
    qsort(keys, nkeys, sizeof(*keys), cmp_keys);
    for (size_t i = 1; i < nkeys; i++) {
        if (cmp_keys(&keys[i - 1], &keys[i]) == 0) {
            d_reset(sc->d);
            d_add(sc->d, "duplicate key '");
            d_echo(sc->d, keys[i].s, keys[i].n, 32);
            d_add(sc->d, "' at ");
            d_path(sc->d, sc);
            rc = -1;
            goto out;
        }
    }
    rc = 0;
out:
    for (size_t i = 0; i < nkeys; i++)
        free(keys[i].s);
    free(keys);
    return rc;
}

static int scan_array(scanner *sc)
{
    sc->pos++; /* '[' */
    skip_ws(sc);
    if (sc->pos < sc->len && sc->s[sc->pos] == ']') {
        sc->pos++;
        return 0;
    }
    for (size_t idx = 0;; idx++) {
        skip_ws(sc);
        sc->path[sc->npath++] = (seg){NULL, 0, idx};
        int rc = scan_value(sc);
        sc->npath--;
        if (rc != 0)
            return rc;
        skip_ws(sc);
        if (sc->pos < sc->len && sc->s[sc->pos] == ',') {
            sc->pos++;
            continue;
        }
        if (sc->pos < sc->len && sc->s[sc->pos] == ']') {
            sc->pos++;
            return 0;
        }
        return sc_fail(sc, "expected ',' or ']' at byte %zu", sc->pos);
    }
}

static int scan_value(scanner *sc)
{
    if (sc->pos >= sc->len)
        return sc_fail(sc, "unexpected end of output at byte %zu", sc->pos);
    unsigned char c = sc->s[sc->pos];
    switch (c) {
    case '{':
    case '[': {
        /* Checked before descending: the recursion never goes deeper than the limit. */
        if (sc->depth >= SCAN_MAX_DEPTH)
            return sc_fail(sc, "nesting deeper than %d at byte %zu", SCAN_MAX_DEPTH, sc->pos);
        sc->depth++;
        int rc = c == '{' ? scan_object(sc) : scan_array(sc);
        sc->depth--;
        return rc;
    }
    case '"':
        return scan_string(sc, NULL, NULL);
    case 't':
        return scan_literal(sc, "true");
    case 'f':
        return scan_literal(sc, "false");
    case 'n':
        return scan_literal(sc, "null");
    case 'N':
    case 'I':
        return sc_fail(sc, "NaN/Infinity is not JSON (byte %zu)", sc->pos);
    case '-':
        if (sc->pos + 1 < sc->len && sc->s[sc->pos + 1] == 'I')
            return sc_fail(sc, "NaN/Infinity is not JSON (byte %zu)", sc->pos);
        return scan_number(sc);
    default:
        if (c >= '0' && c <= '9')
            return scan_number(sc);
        return sc_fail(sc, "unexpected character at byte %zu", sc->pos);
    }
}

/* Whole-document strict check: exactly one JSON value, then only whitespace. */
static int scan_document(scanner *sc)
{
    skip_ws(sc);
    if (sc->pos >= sc->len)
        return sc_fail(sc, "no JSON value (output is only whitespace)");
    int rc = scan_value(sc);
    if (rc != 0)
        return rc;
    skip_ws(sc);
    if (sc->pos != sc->len)
        return sc_fail(sc, "trailing bytes after the JSON value at byte %zu", sc->pos);
    return 0;
}

/* ---- schema ------------------------------------------------------------------------------ */

static bool reg_has_breakdown_key(const bd_registration *reg, const char *key)
{
    for (size_t i = 0; i < reg->n_breakdown_keys; i++)
        if (reg->breakdown_keys[i] && strcmp(reg->breakdown_keys[i], key) == 0)
            return true;
    return false;
}

static const bd_failure_mode_def *reg_failure_mode(const bd_registration *reg, const char *code)
{
    for (size_t i = 0; i < reg->n_failure_modes; i++)
        if (reg->failure_modes[i].code && strcmp(reg->failure_modes[i].code, code) == 0)
            return &reg->failure_modes[i];
    return NULL;
}

/* `v` within rule `r` as it holds for a rubric's output (score_rules.h). */
static bool rule_ok(bd_score_rule r, double v)
{
    return bd_score_rule_ok(r, v, BD_SCORE_RULES_CURRENT);
}

/* Detail helpers for the schema phase (keys are already known to be valid UTF-8). */
static void d_key(dbuf *d, const char *k)
{
    d_echo(d, k, strlen(k), 32);
}

static int check_breakdown(bd_score *s, const cJSON *obj, dbuf *d)
{
    if (!cJSON_IsObject(obj)) {
        d_add(d, "breakdown is not an object");
        return -1;
    }
    size_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        n++;
    if (n == 0)
        return 0;
    if (!rule_ok(BD_SR_BREAKDOWN_COUNT, (double)n)) {
        d_add(d, "breakdown has %zu keys, more than %.0f", n,
              bd_score_rules[BD_SR_BREAKDOWN_COUNT].max);
        return -1;
    }
    s->breakdown = calloc(n, sizeof(*s->breakdown));
    if (!s->breakdown)
        return -2;
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            d_add(d, "nested breakdown at $.breakdown.");
            d_key(d, c->string);
            return -1;
        }
        if (!cJSON_IsNumber(c)) {
            d_add(d, "$.breakdown.");
            d_key(d, c->string);
            d_add(d, " is not a number");
            return -1;
        }
        if (!rule_ok(BD_SR_BREAKDOWN_KEY, (double)strlen(c->string))) {
            d_add(d, "breakdown key '");
            d_key(d, c->string);
            d_add(d, "' is not %.0f to %.0f bytes long", bd_score_rules[BD_SR_BREAKDOWN_KEY].min,
                  bd_score_rules[BD_SR_BREAKDOWN_KEY].max);
            return -1;
        }
        if (!rule_ok(BD_SR_BREAKDOWN_VALUE, c->valuedouble)) {
            d_add(d, "$.breakdown.");
            d_key(d, c->string);
            d_add(d, " = %.6g outside [0,1]", c->valuedouble);
            return -1;
        }
        bd_score_breakdown *b = &s->breakdown[s->n_breakdown];
        b->key = strdup(c->string);
        if (!b->key)
            return -2;
        b->value = c->valuedouble;
        s->n_breakdown++;
    }
    return 0;
}

static int check_fm_object(bd_score_fm *fm, const cJSON *obj, size_t idx, dbuf *d)
{
    const cJSON *m[BD_SFM__COUNT] = {0};
    for (const cJSON *c = obj->child; c; c = c->next) {
        int f = bd_score_fm_member_lookup(c->string);
        if (f < 0) {
            d_add(d, "unexpected key '");
            d_key(d, c->string);
            d_add(d, "' at $.failure_modes[%zu]", idx);
            return -1;
        }
        m[f] = c; /* the scanner has refused duplicate keys */
    }
    const cJSON *code = m[BD_SFM_CODE], *sev = m[BD_SFM_SEVERITY], *det = m[BD_SFM_DETAIL];
    if (!code || !sev) {
        d_add(d, "missing key '%s' at $.failure_modes[%zu]",
              bd_score_fm_member_name(code ? BD_SFM_SEVERITY : BD_SFM_CODE), idx);
        return -1;
    }
    if (!cJSON_IsString(code) || code->valuestring[0] == '\0') {
        d_add(d, "$.failure_modes[%zu].code is not a non-empty string", idx);
        return -1;
    }
    if (!rule_ok(BD_SR_FM_CODE, (double)strlen(code->valuestring))) {
        d_add(d, "$.failure_modes[%zu].code is over %.0f bytes", idx,
              bd_score_rules[BD_SR_FM_CODE].max);
        return -1;
    }
    if (!cJSON_IsString(sev) || bd_severity_parse(sev->valuestring, &fm->severity) != 0) {
        d_add(d, "$.failure_modes[%zu].severity is not block|warn|info", idx);
        return -1;
    }
    if (det && !cJSON_IsString(det)) {
        d_add(d, "$.failure_modes[%zu].detail is not a string", idx);
        return -1;
    }
    if (det && !rule_ok(BD_SR_FM_DETAIL, (double)strlen(det->valuestring))) {
        d_add(d, "$.failure_modes[%zu].detail is over %.0f bytes", idx,
              bd_score_rules[BD_SR_FM_DETAIL].max);
        return -1;
    }
    fm->code = strdup(code->valuestring);
    if (!fm->code)
        return -2;
    if (det) {
        fm->detail = strdup(det->valuestring);
        if (!fm->detail)
            return -2;
    }
    return 0;
}

static int check_failure_modes(bd_score *s, const cJSON *arr, const bd_registration *reg, dbuf *d)
{
    if (!cJSON_IsArray(arr)) {
        d_add(d, "failure_modes is not an array");
        return -1;
    }
    size_t n = 0;
    for (const cJSON *c = arr->child; c; c = c->next)
        n++;
    if (n == 0)
        return 0;
    if (!rule_ok(BD_SR_FM_COUNT, (double)n)) {
        d_add(d, "failure_modes has %zu entries, more than %.0f", n,
              bd_score_rules[BD_SR_FM_COUNT].max);
        return -1;
    }
    s->failure_modes = calloc(n, sizeof(*s->failure_modes));
    if (!s->failure_modes)
        return -2;
    size_t idx = 0;
    for (const cJSON *c = arr->child; c; c = c->next, idx++) {
        bd_score_fm *fm = &s->failure_modes[s->n_failure_modes];
        if (cJSON_IsString(c)) {
            if (c->valuestring[0] == '\0') {
                d_add(d, "$.failure_modes[%zu] is an empty code", idx);
                return -1;
            }
            if (!rule_ok(BD_SR_FM_CODE, (double)strlen(c->valuestring))) {
                d_add(d, "$.failure_modes[%zu] is a code over %.0f bytes", idx,
                      bd_score_rules[BD_SR_FM_CODE].max);
                return -1;
            }
            fm->code = strdup(c->valuestring);
            if (!fm->code)
                return -2;
            /* A bare code takes the taxonomy's severity; an unknown code (reported later
             * as unknown_failure_mode) or no registration at all: block, the safe side. */
            const bd_failure_mode_def *def = reg ? reg_failure_mode(reg, fm->code) : NULL;
            fm->severity = def ? def->severity : BD_SEV_BLOCK;
        } else if (cJSON_IsObject(c)) {
            int rc = check_fm_object(fm, c, idx, d);
            if (rc != 0) {
                s->n_failure_modes++; /* so bd_score_free releases what was copied */
                return rc;
            }
        } else {
            d_add(d, "$.failure_modes[%zu] is neither a string nor an object", idx);
            return -1;
        }
        s->n_failure_modes++;
    }
    return 0;
}

/* $.checks by score_checks.h. Returns 0, -1 (malformed, detail set) or -2. */
static int check_checks(bd_score *s, const cJSON *arr, dbuf *d)
{
    char why[BD_SCORE_DETAIL_MAX];
    int rc = bd_score_checks_read(&s->checks, &s->n_checks, arr, BD_SCORE_RULES_CURRENT, "$.checks",
                                  why, sizeof(why));
    if (rc == -1)
        d_add(d, "%s", why); /* indices and valid names only: printable ASCII */
    return rc;
}

/* Returns 0, -1 (malformed, detail set) or -2 (out of memory). */
static int check_schema(bd_score *s, const cJSON *root, const bd_registration *reg, dbuf *d)
{
    if (!cJSON_IsObject(root)) {
        d_add(d, "top-level value is not an object");
        return -1;
    }
    unsigned seen = 0;
    for (const cJSON *c = root->child; c; c = c->next) {
        int f = bd_score_member_lookup(c->string);
        int rc = 0;
        double v = c->valuedouble;
        if (f >= 0)
            seen |= 1u << f; /* the scanner has refused duplicate keys */
        switch (f) {
        case BD_SM_PASSED:
            if (!cJSON_IsBool(c)) {
                d_add(d, "passed is not a boolean");
                return -1;
            }
            s->passed = cJSON_IsTrue(c);
            break;
        case BD_SM_SCORE:
            if (!cJSON_IsNumber(c)) {
                d_add(d, "score is not a number");
                return -1;
            }
            if (!rule_ok(BD_SR_SCORE, v)) {
                d_add(d, "score %.6g outside [0,1]", v);
                return -1;
            }
            s->score = v;
            break;
        case BD_SM_BREAKDOWN:
            rc = check_breakdown(s, c, d);
            break;
        case BD_SM_FAILURE_MODES:
            rc = check_failure_modes(s, c, reg, d);
            break;
        case BD_SM_COST:
            if (!cJSON_IsNumber(c)) {
                d_add(d, "cost_usd is not a number");
                return -1;
            }
            if (!(v >= bd_score_rules[BD_SR_COST].min)) {
                d_add(d, "cost_usd %.6g is negative", v);
                return -1;
            }
            if (!rule_ok(BD_SR_COST, v)) {
                d_add(d, "cost_usd %.6g is over %.0e", v, bd_score_rules[BD_SR_COST].max);
                return -1;
            }
            s->cost_usd = v;
            break;
        case BD_SM_WALL:
            if (!cJSON_IsNumber(c) || !rule_ok(BD_SR_WALL, v)) {
                d_add(d, "wall_clock_ms is not a non-negative integer");
                return -1;
            }
            s->wall_clock_ms = (int64_t)v;
            break;
        case BD_SM_CHECKS:
            rc = check_checks(s, c, d);
            break;
        default:
            d_add(d, "unexpected key '");
            d_key(d, c->string);
            d_add(d, "' at $");
            return -1;
        }
        if (rc != 0)
            return rc;
    }
    for (int f = 0; f < BD_SM__COUNT; f++) {
        if (!(seen & (1u << f)) && !bd_score_member_optional((bd_score_member)f)) {
            d_add(d, "missing key '%s'", bd_score_member_name((bd_score_member)f));
            return -1;
        }
    }
    return 0;
}

static int cmp_breakdown(const void *a, const void *b)
{
    const bd_score_breakdown *x = a, *y = b;
    return strcmp(x->key, y->key);
}

bd_harness_mode bd_score_parse(bd_score *out, const char *buf, size_t len,
                               const bd_registration *reg, char detail[BD_SCORE_DETAIL_MAX])
{
    char scratch[BD_SCORE_DETAIL_MAX];
    dbuf d = {detail ? detail : scratch, 0, 0};
    d_reset(&d);
    bd_harness_mode mode = BD_HM_MALFORMED;
    bd_score s;
    memset(&s, 0, sizeof(s));
    char *copy = NULL;
    cJSON *root = NULL;
    locale_t old_loc = (locale_t)0;
    if (out)
        memset(out, 0, sizeof(*out));
    if (!out) {
        d_add(&d, "internal: no output score");
        goto out;
    }
    if (len == 0 || !buf) {
        d_add(&d, "empty output");
        goto out;
    }
    size_t bad = bd_utf8_invalid_at((const unsigned char *)buf, len);
    if (bad != len) {
        if (buf[bad] == '\0')
            d_add(&d, "NUL byte at byte %zu", bad);
        else
            d_add(&d, "invalid UTF-8 at byte %zu", bad);
        goto out;
    }
    locale_t cloc = bd_text_c_locale();
    if (cloc == (locale_t)0) {
        d_add(&d, "out of memory while validating the output");
        goto out;
    }
    /* Everything below runs in the C locale: numbers are read (strtod, cJSON) and
     * printed into details the same way whatever the process's LC_NUMERIC is. */
    old_loc = uselocale(cloc);
    scanner *sc = calloc(1, sizeof(*sc));
    if (!sc) {
        d_add(&d, "out of memory while validating the output");
        goto out;
    }
    sc->s = (const unsigned char *)buf;
    sc->len = len;
    sc->d = &d;
    int rc = scan_document(sc);
    free(sc);
    if (rc == -2) {
        d_reset(&d);
        d_add(&d, "out of memory while validating the output");
    }
    if (rc != 0)
        goto out;

    /* The scanner accepted exactly one strict JSON value; cJSON builds the tree. It gets a
     * NUL-terminated copy so no cJSON path can read past the end, and runs in the C
     * locale so numbers read the same whatever the process locale is. */
    copy = malloc(len + 1);
    if (!copy) {
        d_add(&d, "out of memory while validating the output");
        goto out;
    }
    memcpy(copy, buf, len);
    copy[len] = '\0';
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(copy, len, &end, false);
    if (!root) {
        /* The scanner already proved the syntax; cJSON fails here only when it runs out
         * of memory. */
        d_add(&d, "JSON parser failed (out of memory?)");
        goto out;
    }
    while (end && end < copy + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end != copy + len) {
        d_add(&d, "trailing bytes after the JSON value");
        goto out;
    }

    rc = check_schema(&s, root, reg, &d);
    if (rc == -2) {
        d_reset(&d);
        d_add(&d, "out of memory while validating the output");
    }
    if (rc != 0)
        goto out;

    if (reg) {
        for (size_t i = 0; i < s.n_breakdown; i++) {
            if (!reg_has_breakdown_key(reg, s.breakdown[i].key)) {
                d_add(&d, "breakdown key '");
                d_key(&d, s.breakdown[i].key);
                d_add(&d, "' is not in the registration's breakdown_keys");
                mode = BD_HM_UNKNOWN_BREAKDOWN_KEY;
                goto out;
            }
        }
        for (size_t i = 0; i < s.n_failure_modes; i++) {
            if (!reg_failure_mode(reg, s.failure_modes[i].code)) {
                d_add(&d, "failure-mode code '");
                d_key(&d, s.failure_modes[i].code);
                d_add(&d, "' is not in the registration's taxonomy");
                mode = BD_HM_UNKNOWN_FAILURE_MODE;
                goto out;
            }
        }
    }
    if (s.n_breakdown > 1)
        qsort(s.breakdown, s.n_breakdown, sizeof(*s.breakdown), cmp_breakdown);
    *out = s;
    memset(&s, 0, sizeof(s));
    mode = BD_HM_NONE;
out:
    if (old_loc != (locale_t)0)
        uselocale(old_loc);
    cJSON_Delete(root);
    free(copy);
    bd_score_free(&s);
    return mode;
}

/* ---- building and freeing ------------------------------------------------------------------ */

/* A copy of `src` that is valid UTF-8 and holds no control character other than \n and
 * \t: the harness's own details (e.g. the first bytes of a rubric's stderr) may hold
 * anything, and the record must still be canonical JSON and safe to show. */
static char *sanitize_detail(const char *src)
{
    size_t n = strlen(src);
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0, k = 0;
    while (i < n) {
        size_t bad = bd_utf8_invalid_at(s + i, n - i);
        for (size_t j = 0; j < bad; j++) {
            unsigned char c = s[i + j];
            o[k++] = ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) ? '?' : (char)c;
        }
        i += bad;
        if (i < n) {
            o[k++] = '?';
            i++;
        }
    }
    o[k] = '\0';
    return o;
}

int bd_score_harness_failure(bd_score *out, bd_harness_mode mode, const char *detail,
                             int64_t wall_clock_ms)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof(*out));
    if (mode <= BD_HM_NONE || mode >= BD_HM__COUNT)
        return -1;
    out->failure_modes = calloc(1, sizeof(*out->failure_modes));
    if (!out->failure_modes)
        goto fail;
    out->n_failure_modes = 1;
    out->failure_modes[0].severity = BD_SEV_BLOCK;
    out->failure_modes[0].code = strdup(bd_harness_mode_str(mode));
    if (!out->failure_modes[0].code)
        goto fail;
    if (detail) {
        out->failure_modes[0].detail = sanitize_detail(detail);
        if (!out->failure_modes[0].detail)
            goto fail;
    }
    out->passed = false;
    out->score = 0;
    out->cost_usd = 0;
    out->wall_clock_ms = wall_clock_ms < 0 ? 0 : wall_clock_ms;
    return 0;
fail:
    bd_score_free(out);
    return -1;
}

void bd_score_free(bd_score *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_breakdown; i++)
        free(s->breakdown[i].key);
    free(s->breakdown);
    for (size_t i = 0; i < s->n_failure_modes; i++) {
        free(s->failure_modes[i].code);
        free(s->failure_modes[i].detail);
    }
    free(s->failure_modes);
    bd_score_checks_free(s->checks, s->n_checks);
    memset(s, 0, sizeof(*s));
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *oom = true;
    return d;
}

int bd_score_copy(bd_score *dst, const bd_score *src)
{
    memset(dst, 0, sizeof(*dst));
    bool oom = false;
    dst->passed = src->passed;
    dst->score = src->score;
    dst->cost_usd = src->cost_usd;
    dst->wall_clock_ms = src->wall_clock_ms;
    if (src->n_breakdown && !(dst->breakdown = calloc(src->n_breakdown, sizeof(*dst->breakdown))))
        goto oom;
    for (size_t i = 0; i < src->n_breakdown; i++, dst->n_breakdown++) {
        dst->breakdown[i].value = src->breakdown[i].value;
        dst->breakdown[i].key = dup_or_null(src->breakdown[i].key, &oom);
    }
    if (src->n_failure_modes &&
        !(dst->failure_modes = calloc(src->n_failure_modes, sizeof(*dst->failure_modes))))
        goto oom;
    for (size_t i = 0; i < src->n_failure_modes; i++, dst->n_failure_modes++) {
        dst->failure_modes[i].severity = src->failure_modes[i].severity;
        dst->failure_modes[i].code = dup_or_null(src->failure_modes[i].code, &oom);
        dst->failure_modes[i].detail = dup_or_null(src->failure_modes[i].detail, &oom);
    }
    if (src->n_checks && !(dst->checks = calloc(src->n_checks, sizeof(*dst->checks))))
        goto oom;
    for (size_t i = 0; i < src->n_checks; i++, dst->n_checks++) {
        dst->checks[i].passed = src->checks[i].passed;
        dst->checks[i].name = dup_or_null(src->checks[i].name, &oom);
        dst->checks[i].expected = dup_or_null(src->checks[i].expected, &oom);
        dst->checks[i].actual = dup_or_null(src->checks[i].actual, &oom);
    }
    if (!oom)
        return 0;
oom:
    bd_score_free(dst);
    return -1;
}

static bool add(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return false;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

cJSON *bd_score_to_json(const bd_score *s)
{
    if (!s)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON *bd = cJSON_CreateObject();
    if (!add(o, "breakdown", bd))
        goto fail;
    for (size_t i = 0; i < s->n_breakdown; i++)
        if (!add(bd, s->breakdown[i].key, cJSON_CreateNumber(s->breakdown[i].value)))
            goto fail;
    cJSON *fms = cJSON_CreateArray();
    if (!add(o, "failure_modes", fms))
        goto fail;
    for (size_t i = 0; i < s->n_failure_modes; i++) {
        const bd_score_fm *fm = &s->failure_modes[i];
        cJSON *f = cJSON_CreateObject();
        if (!f)
            goto fail;
        if (!cJSON_AddItemToArray(fms, f)) {
            cJSON_Delete(f);
            goto fail;
        }
        if (!add(f, "code", cJSON_CreateString(fm->code ? fm->code : "")) ||
            !add(f, "severity", cJSON_CreateString(bd_severity_str(fm->severity))))
            goto fail;
        if (fm->detail && !add(f, "detail", cJSON_CreateString(fm->detail)))
            goto fail;
    }
    if (!add(o, "passed", cJSON_CreateBool(s->passed)) ||
        !add(o, "score", cJSON_CreateNumber(s->score)) ||
        !add(o, "cost_usd", cJSON_CreateNumber(s->cost_usd)) ||
        !add(o, "wall_clock_ms", cJSON_CreateNumber((double)s->wall_clock_ms)))
        goto fail;
    /* Left out when empty: a score without checks keeps the bytes it always had. */
    if (s->n_checks > 0 && !add(o, "checks", bd_score_checks_to_json(s->checks, s->n_checks)))
        goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}
