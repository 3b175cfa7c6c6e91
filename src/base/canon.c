#include "canon.h"

#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* 2^53: below it every integer is exactly representable, so the integer form is exact. */
#define CANON_INT_LIMIT 9007199254740992.0

typedef struct sbuf {
    char *p;
    size_t len;
    size_t cap;
} sbuf;

static bool sb_reserve(sbuf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return false;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p)
        return false;
    b->p = p;
    b->cap = cap;
    return true;
}

static bool sb_put(sbuf *b, const char *s, size_t n)
{
    if (!sb_reserve(b, n))
        return false;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

static bool sb_putc(sbuf *b, char c)
{
    return sb_put(b, &c, 1);
}

/* Format a finite double into buf (at least 32 bytes). Returns false for NaN/Infinity
 * or when the C locale is unavailable. */
static bool format_number(char *buf, size_t size, double d)
{
    if (!isfinite(d))
        return false;
    if (d == 0) {
        /* Both zeros: "-0" would hash differently from "0" for the same value. */
        snprintf(buf, size, "0");
        return true;
    }
    if (fabs(d) < CANON_INT_LIMIT && d == trunc(d)) {
        snprintf(buf, size, "%lld", (long long)d);
        return true;
    }
    locale_t loc = bd_text_c_locale();
    if (loc == (locale_t)0)
        return false;
    /* %g in the C locale: '.' as the decimal point, exponents as "e+20" / "e-07", which
     * are valid JSON numbers. */
    locale_t old = uselocale(loc);
    bool ok = false;
    for (int prec = 15; prec <= 17 && !ok; prec++) {
        snprintf(buf, size, "%.*g", prec, d);
        ok = strtod(buf, NULL) == d;
    }
    uselocale(old);
    return ok; /* %.17g always round-trips a finite double */
}

/* How the bytes are written: canonical (sorted, strict), or as the tree is (bd_json_print). */
typedef struct mode {
    bool canonical;
} mode;

static bool put_string(sbuf *b, const char *s, const mode *m)
{
    if (!s)
        return false;
    size_t n = strlen(s);
    if (m->canonical && !bd_utf8_valid(s, n))
        return false;
    if (!sb_putc(b, '"'))
        return false;
    size_t run = 0; /* start of the current run of bytes copied raw */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[8];
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        default:
            if (c < 0x20) {
                snprintf(ubuf, sizeof(ubuf), "\\u%04x", c);
                esc = ubuf;
            }
            break;
        }
        if (!esc)
            continue;
        if (!sb_put(b, s + run, i - run) || !sb_put(b, esc, strlen(esc)))
            return false;
        run = i + 1;
    }
    return sb_put(b, s + run, n - run) && sb_putc(b, '"');
}

static int cmp_members(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a;
    const cJSON *y = *(const cJSON *const *)b;
    /* strcmp compares as unsigned char: bytewise order of the UTF-8 keys. */
    return strcmp(x->string, y->string);
}

static bool put_value(sbuf *b, const cJSON *item, int depth, const mode *m);

static bool put_object(sbuf *b, const cJSON *obj, int depth, const mode *m)
{
    bool ok = false;
    size_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        n++;
    const cJSON **members = NULL;
    if (n > 0) {
        members = calloc(n, sizeof(*members));
        if (!members)
            goto out;
    }
    size_t i = 0;
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!c->string)
            goto out;
        members[i++] = c;
    }
    if (n > 1 && m->canonical)
        qsort(members, n, sizeof(*members), cmp_members);
    if (!sb_putc(b, '{'))
        goto out;
    for (i = 0; i < n; i++) {
        if (m->canonical && i > 0 && strcmp(members[i - 1]->string, members[i]->string) == 0)
            goto out; /* duplicate key: two readers could see two different values */
        if (i > 0 && !sb_putc(b, ','))
            goto out;
        if (!put_string(b, members[i]->string, m) || !sb_putc(b, ':') ||
            !put_value(b, members[i], depth + 1, m))
            goto out;
    }
    ok = sb_putc(b, '}');
out:
    free(members);
    return ok;
}

static bool put_value(sbuf *b, const cJSON *item, int depth, const mode *m)
{
    if (!item || depth > BD_CANON_MAX_DEPTH)
        return false;
    switch (item->type & 0xFF) {
    case cJSON_False:
        return sb_put(b, "false", 5);
    case cJSON_True:
        return sb_put(b, "true", 4);
    case cJSON_NULL:
        return sb_put(b, "null", 4);
    case cJSON_Number: {
        char num[40];
        if (!format_number(num, sizeof(num), item->valuedouble)) {
            if (m->canonical || isfinite(item->valuedouble))
                return false;
            snprintf(num, sizeof(num), "null"); /* as cJSON prints NaN and Infinity */
        }
        return sb_put(b, num, strlen(num));
    }
    case cJSON_String:
        return put_string(b, item->valuestring, m);
    case cJSON_Array:
        if (!sb_putc(b, '['))
            return false;
        for (const cJSON *c = item->child; c; c = c->next) {
            if (c != item->child && !sb_putc(b, ','))
                return false;
            if (!put_value(b, c, depth + 1, m))
                return false;
        }
        return sb_putc(b, ']');
    case cJSON_Object:
        return put_object(b, item, depth, m);
    default: /* cJSON_Raw, cJSON_Invalid: not canonical JSON */
        return false;
    }
}

/* `item` written in mode `m`. */
static char *serialize(const cJSON *item, size_t *len, const mode *m)
{
    sbuf b = {NULL, 0, 0};
    if (len)
        *len = 0;
    if (!sb_reserve(&b, 64) || !put_value(&b, item, 0, m)) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.p;
}

char *bd_canon_json(const cJSON *item, size_t *len)
{
    static const mode canonical = {true};
    return serialize(item, len, &canonical);
}

char *bd_json_print(const cJSON *item, size_t *len)
{
    static const mode as_is = {false};
    return serialize(item, len, &as_is);
}
