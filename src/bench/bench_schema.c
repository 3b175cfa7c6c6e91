/*
 * bench_schema.c — the YAML 1.2 core-schema typing of plain scalars, YAML as JSON, the
 * validation engine every bench loader uses, and reading a document as one of the
 * bench's files (bench_schema.h).
 *
 * Loaders validate a bd_ydoc tree (ydoc.c already refused aliases, duplicates, deep or
 * huge input).
 */
#include "bench_schema.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- YAML 1.2 core schema for plain scalars ------------------------------------------- */

typedef enum { YT_NULL, YT_BOOL, YT_INT, YT_FLOAT, YT_STR } ytype;

static bool all_in(const char *s, const char *set)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

#define DEC "0123456789"
#define HEX "0123456789abcdefABCDEF"

static bool is_core_int(const char *s)
{
    if (s[0] == '0' && s[1] == 'o')
        return all_in(s + 2, "01234567");
    if (s[0] == '0' && s[1] == 'x')
        return all_in(s + 2, HEX);
    if (*s == '-' || *s == '+')
        s++;
    return all_in(s, DEC);
}

static bool is_core_float(const char *s)
{
    if (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 || strcmp(s, ".NAN") == 0)
        return true;
    if (*s == '-' || *s == '+')
        s++;
    if (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 || strcmp(s, ".INF") == 0)
        return true;
    /* (\.[0-9]+ | [0-9]+(\.[0-9]*)?) ([eE][-+]?[0-9]+)? */
    size_t digits = 0;
    while (*s >= '0' && *s <= '9') {
        s++;
        digits++;
    }
    if (*s == '.') {
        s++;
        size_t frac = 0;
        while (*s >= '0' && *s <= '9') {
            s++;
            frac++;
        }
        if (digits == 0 && frac == 0)
            return false;
    } else if (digits == 0) {
        return false;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

static ytype scalar_type(const bd_ynode *n)
{
    if (!n->plain)
        return YT_STR;
    if (bd_ynode_is_null(n))
        return YT_NULL;
    const char *s = n->str;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE") || !strcmp(s, "false") ||
        !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return YT_BOOL;
    if (is_core_int(s))
        return YT_INT;
    if (is_core_float(s))
        return YT_FLOAT;
    return YT_STR;
}

/* Value of a core-schema integer; false when it does not fit in long long. */
static bool core_int_value(const char *s, long long *out)
{
    int base = 10;
    bool neg = false;
    if (s[0] == '0' && s[1] == 'o') {
        base = 8;
        s += 2;
    } else if (s[0] == '0' && s[1] == 'x') {
        base = 16;
        s += 2;
    } else if (*s == '-' || *s == '+') {
        neg = *s == '-';
        s++;
    }
    unsigned long long v = 0;
    unsigned long long limit = neg ? (unsigned long long)LLONG_MAX + 1ull : LLONG_MAX;
    for (; *s; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (*s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else
            d = (unsigned)(*s - 'A' + 10);
        if (v > (limit - d) / (unsigned)base)
            return false;
        v = v * (unsigned)base + d;
    }
    if (neg)
        *out = v == (unsigned long long)LLONG_MAX + 1ull ? LLONG_MIN : -(long long)v;
    else
        *out = (long long)v;
    return true;
}

static const char *type_name(const bd_ynode *n)
{
    if (!n)
        return "missing";
    if (n->kind == BD_Y_MAP)
        return "a mapping";
    if (n->kind == BD_Y_SEQ)
        return "a list";
    switch (scalar_type(n)) {
    case YT_NULL:
        return "null";
    case YT_BOOL:
        return "a boolean";
    case YT_INT:
        return "an integer";
    case YT_FLOAT:
        return "a number";
    case YT_STR:
        break;
    }
    return "a string";
}

/* ---- JSON ------------------------------------------------------------------------------ */

static cJSON *scalar_to_json(const bd_ynode *n)
{
    switch (scalar_type(n)) {
    case YT_NULL:
        return cJSON_CreateNull();
    case YT_BOOL:
        return cJSON_CreateBool(n->str[0] == 't' || n->str[0] == 'T');
    case YT_INT: {
        long long v;
        /* Past 2^53 a JSON number would silently change the value: keep the text. */
        if (core_int_value(n->str, &v) && v <= (1ll << 53) && v >= -(1ll << 53))
            return cJSON_CreateNumber((double)v);
        return cJSON_CreateString(n->str);
    }
    case YT_FLOAT: {
        char *end = NULL;
        double d = strtod(n->str, &end);
        /* .inf/.nan (and overflow) have no JSON form: keep the text. */
        if (strchr(n->str, 'n') || strchr(n->str, 'N') || !isfinite(d) || !end || *end)
            return cJSON_CreateString(n->str);
        return cJSON_CreateNumber(d);
    }
    case YT_STR:
        break;
    }
    return cJSON_CreateString(n->str);
}

cJSON *bd_ynode_to_json(const bd_ynode *node)
{
    if (!node)
        return cJSON_CreateNull();
    cJSON *j = NULL;
    switch (node->kind) {
    case BD_Y_SCALAR:
        return scalar_to_json(node);
    case BD_Y_MAP:
        j = cJSON_CreateObject();
        if (!j)
            return NULL;
        for (size_t i = 0; i < node->n; i++) {
            cJSON *v = bd_ynode_to_json(node->pairs[i].value);
            if (!v || !cJSON_AddItemToObject(j, node->pairs[i].key->str, v)) {
                cJSON_Delete(v);
                cJSON_Delete(j);
                return NULL;
            }
        }
        return j;
    case BD_Y_SEQ:
        j = cJSON_CreateArray();
        if (!j)
            return NULL;
        for (size_t i = 0; i < node->n; i++) {
            cJSON *v = bd_ynode_to_json(node->items[i]);
            if (!v || !cJSON_AddItemToArray(j, v)) {
                cJSON_Delete(v);
                cJSON_Delete(j);
                return NULL;
            }
        }
        return j;
    }
    return NULL;
}

/* ---- validation helpers --------------------------------------------------------------- */

/* Fail at node `at` (or the file when NULL) with `code`, or the file's schema code when
 * `code` is BD_OK. */
__attribute__((format(printf, 4, 5))) int bd_v_fail(const bd_vctx *v, bd_code code,
                                                    const bd_ynode *at, const char *fmt, ...)
{
    char msg[BD_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return bd_err_set(v->err, code == BD_OK ? v->code : code, v->file, at ? at->line : 0,
                      at ? at->col : 0, "%s", msg);
}

int bd_v_nomem(const bd_vctx *v)
{
    return bd_v_fail(v, BD_E_NOMEM, NULL, "out of memory; free memory and retry");
}

int bd_v_map(const bd_vctx *v, const bd_ynode *n, const char *what)
{
    if (n && n->kind == BD_Y_MAP)
        return 0;
    return bd_v_fail(v, BD_OK, n, "%s must be a mapping, not %s; write it as key: value lines",
                     what, type_name(n));
}

int bd_v_seq(const bd_vctx *v, const bd_ynode *n, const char *what)
{
    if (n && n->kind == BD_Y_SEQ)
        return 0;
    return bd_v_fail(v, BD_OK, n, "%s must be a list, not %s; write it as [a, b] or '- ' lines",
                     what, type_name(n));
}

/* Refuse any key of `map` not in `allowed` (NULL-terminated), naming key and line. */
int bd_v_keys(const bd_vctx *v, const bd_ynode *map, const char *what, const char *const *allowed)
{
    for (size_t i = 0; i < map->n; i++) {
        const bd_ynode *k = map->pairs[i].key;
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++) /* first byte, then the rest */
            ok = (*a)[0] == k->str[0] && strcmp(k->str, *a) == 0;
        if (ok)
            continue;
        char shown[72], list[256];
        bd_ydoc_clip(shown, sizeof(shown), k->str);
        list[0] = '\0';
        for (const char *const *a = allowed; *a; a++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof(list) - l, "%s%s", l ? ", " : "", *a);
        }
        return bd_v_fail(v, BD_OK, k, "unknown key '%s' in %s; remove it (allowed: %s)", shown,
                         what, list);
    }
    return 0;
}

/* The value of required key `key`, or NULL after failing. */
const bd_ynode *bd_v_need(const bd_vctx *v, const bd_ynode *map, const char *key, const char *what)
{
    const bd_ynode *n = bd_ynode_get(map, key); /* by length, then bytes */
    if (n)
        return n;
    bd_v_fail(v, BD_OK, map, "missing required key '%s' in %s; add it", key, what);
    return NULL;
}

/* A string (quoted, or plain text that is not null/boolean/number). */
int bd_v_str(const bd_vctx *v, const bd_ynode *n, const char *what, bool allow_empty)
{
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_STR)
        return bd_v_fail(v, BD_OK, n, "%s must be a string, not %s; %s", what, type_name(n),
                         n && n->kind == BD_Y_SCALAR && !bd_ynode_is_null(n)
                             ? "quote it"
                             : "give it a text value");
    if (!allow_empty && n->len == 0)
        return bd_v_fail(v, BD_OK, n, "%s must not be empty; give it a value", what);
    return 0;
}

int bd_v_dup_str(const bd_vctx *v, const bd_ynode *n, const char *what, bool allow_empty,
                 char **out)
{
    if (bd_v_str(v, n, what, allow_empty) < 0)
        return -1;
    *out = strdup(n->str);
    return *out ? 0 : bd_v_nomem(v);
}

int bd_v_int(const bd_vctx *v, const bd_ynode *n, const char *what, long long lo, long long hi,
             int *out)
{
    long long x;
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_INT)
        return bd_v_fail(v, BD_OK, n, "%s must be an integer, not %s; write digits without quotes",
                         what, type_name(n));
    if (!core_int_value(n->str, &x) || x < lo || x > hi)
        return bd_v_fail(v, BD_OK, n, "%s is out of range; use an integer from %lld to %lld", what,
                         lo, hi);
    *out = (int)x;
    return 0;
}

int bd_v_num(const bd_vctx *v, const bd_ynode *n, const char *what, double lo, double hi,
             double *out)
{
    double d = NAN;
    ytype t = n && n->kind == BD_Y_SCALAR ? scalar_type(n) : YT_STR;
    if (!n || n->kind != BD_Y_SCALAR || (t != YT_INT && t != YT_FLOAT))
        return bd_v_fail(v, BD_OK, n, "%s must be a number, not %s; write it without quotes", what,
                         type_name(n));
    if (t == YT_INT) {
        long long x;
        if (core_int_value(n->str, &x))
            d = (double)x;
    } else if (!strchr(n->str, 'n') && !strchr(n->str, 'N')) {
        d = strtod(n->str, NULL);
    }
    if (!(d >= lo && d <= hi)) /* NaN fails too */
        return bd_v_fail(v, BD_OK, n, "%s is out of range; use a number from %g to %g", what, lo,
                         hi);
    *out = d;
    return 0;
}

int bd_v_bool(const bd_vctx *v, const bd_ynode *n, const char *what, bool *out)
{
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_BOOL)
        return bd_v_fail(v, BD_OK, n, "%s must be true or false, not %s; write it without quotes",
                         what, type_name(n));
    *out = n->str[0] == 't' || n->str[0] == 'T';
    return 0;
}

int bd_v_enum(const bd_vctx *v, const bd_ynode *n, const char *what, const char *const *names,
              size_t count, int *out)
{
    if (bd_v_str(v, n, what, false) < 0)
        return -1;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(n->str, names[i]) == 0) {
            *out = (int)i;
            return 0;
        }
    }
    char shown[72], list[256];
    bd_ydoc_clip(shown, sizeof(shown), n->str);
    list[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s%s", l ? " | " : "", names[i]);
    }
    return bd_v_fail(v, BD_OK, n, "%s '%s' is not one of %s; use one of them", what, shown, list);
}
/* A digest "blake3:<64 lower-case hex>"; with `nullable`, null gives "" and *has=false. */
int bd_v_digest(const bd_vctx *v, const bd_ynode *n, const char *what, bool nullable,
                char out[BD_DIGEST_STR_LEN + 1], bool *has)
{
    out[0] = '\0';
    if (has)
        *has = false;
    if (nullable && (!n || bd_ynode_is_null(n)))
        return 0;
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_STR || !bd_v_digest_ok(n->str)) {
        bd_v_fail(v, BD_OK, n, "%s must be a digest 'blake3:' + 64 lower-case hex digits%s; run ",
                  what, nullable ? " or null" : "");
        bd_err_advise(v->err, BD_ACT_PIN_ALL, NULL);
        return bd_err_append(v->err, " to write it");
    }
    memcpy(out, n->str, BD_DIGEST_STR_LEN + 1);
    if (has)
        *has = true;
    return 0;
}

int bd_v_fpr(const bd_vctx *v, const bd_ynode *n, const char *what, char out[BD_FPR_LEN + 1])
{
    /* Judged by its text alone: a digits-only fingerprint reads as a plain integer. */
    bool ok = n && n->kind == BD_Y_SCALAR && n->len == BD_FPR_LEN;
    for (size_t i = 0; ok && i < BD_FPR_LEN; i++) {
        char c = n->str[i];
        ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
    if (!ok)
        return bd_v_fail(v, BD_OK, n,
                         "%s must be a 40-hex-digit OpenPGP primary key fingerprint without "
                         "spaces; copy it from `gpg --with-colons --fingerprint`",
                         what);
    for (size_t i = 0; i < BD_FPR_LEN; i++) {
        char c = n->str[i];
        out[i] = (c >= 'a' && c <= 'f') ? (char)(c - 'a' + 'A') : c;
    }
    out[BD_FPR_LEN] = '\0';
    return 0;
}

static bool timestamp_ok(const char *s)
{
    /* YYYY-MM-DDTHH:MM:SSZ */
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    if (strlen(s) != sizeof(shape) - 1)
        return false;
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
            return false;
    }
#define NUM2(o) ((s[o] - '0') * 10 + (s[(o) + 1] - '0'))
    int year = NUM2(0) * 100 + NUM2(2), mon = NUM2(5), day = NUM2(8);
    int hh = NUM2(11), mm = NUM2(14), ss = NUM2(17);
#undef NUM2
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (year < 1 || mon < 1 || mon > 12 || day < 1 || hh > 23 || mm > 59 || ss > 59)
        return false;
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    int dim = mdays[mon - 1] + (mon == 2 && leap ? 1 : 0);
    return day <= dim;
}

int bd_v_timestamp(const bd_vctx *v, const bd_ynode *n, const char *what, char **out)
{
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_STR || !timestamp_ok(n->str))
        return bd_v_fail(v, BD_OK, n,
                         "%s must be a UTC time \"YYYY-MM-DDTHH:MM:SSZ\" with a real date; "
                         "e.g. \"2026-05-12T14:00:00Z\"",
                         what);
    *out = strdup(n->str);
    return *out ? 0 : bd_v_nomem(v);
}

/* The root must be a mapping whose schema_version is `version`. A format-v1 file where
 * v2 is wanted is bench.format_v1 with the one command that converts it. */
int bd_v_root(const bd_vctx *v, const bd_ydoc *doc, int version)
{
    const bd_ynode *root = doc->root;
    if (!root || root->kind != BD_Y_MAP)
        return bd_v_fail(v, BD_OK, root,
                         "the document must be a mapping, not %s; write its keys as "
                         "'key: value' lines, starting with 'schema_version: %d'",
                         root ? type_name(root) : "empty", version);
    const bd_ynode *sv = bd_v_need(v, root, "schema_version", "the document");
    if (!sv)
        return -1;
    if (sv->kind != BD_Y_SCALAR || scalar_type(sv) != YT_INT)
        return bd_v_fail(v, BD_OK, sv, "schema_version must be the integer %d, not %s; write %d",
                         version, type_name(sv), version);
    long long x;
    if (core_int_value(sv->str, &x) && x == 1 && version == 2) {
        bd_v_fail(v, BD_E_FORMAT_V1, sv, "this file is bench format v1; convert the bench with ");
        bd_err_advise(v->err, BD_ACT_MIGRATE, NULL);
        return bd_err_append(v->err, " (every signature must then be made again)");
    }
    if (!core_int_value(sv->str, &x) || x != version)
        return bd_v_fail(v, BD_OK, sv,
                         "schema_version %.24s is not supported (only %d); upgrade benchdesk or "
                         "write %d",
                         sv->str, version, version);
    return 0;
}

/* Index of the first string (in input order) equal to an earlier one, or -1. Sorting keeps
 * this O(n log n) on hostile input. */
typedef struct sref {
    const char *s;
    size_t i;
} sref;

static int sref_cmp(const void *a, const void *b)
{
    const sref *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    if (c)
        return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Returns 0 and *dup = index or -1; -1 on out-of-memory. */
int bd_v_find_dup(const char *const *strs, size_t n, long *dup)
{
    *dup = -1;
    if (n < 2)
        return 0;
    sref *r = malloc(n * sizeof(*r));
    if (!r)
        return -1;
    for (size_t i = 0; i < n; i++) {
        r[i].s = strs[i];
        r[i].i = i;
    }
    qsort(r, n, sizeof(*r), sref_cmp);
    for (size_t i = 1; i < n; i++)
        if (strcmp(r[i].s, r[i - 1].s) == 0 && (*dup < 0 || (long)r[i].i < *dup))
            *dup = (long)r[i].i;
    free(r);
    return 0;
}

bool bd_v_is_false(const bd_ynode *n)
{
    return n && n->kind == BD_Y_SCALAR && scalar_type(n) == YT_BOOL &&
           (n->str[0] == 'f' || n->str[0] == 'F');
}

/* ---- reading a document as one of the bench's files ------------------------------------ */

size_t bd_yaml_max_bytes(bd_ykind_limit kind)
{
    switch (kind) {
    case BD_YKIND_DIGESTS:
        return BD_DIGESTS_MAX_BYTES;
    case BD_YKIND_SIGNERS:
        return BD_SIGNERS_MAX_BYTES;
    case BD_YKIND_OTHER:
        break;
    }
    return BD_YAML_MAX_BYTES;
}

int bd_doc_read(const bd_doc_kind *kind, void *out, const bd_doc_src *src, const char *expect,
                bd_err *err)
{
    bd_ydoc *doc = NULL;
    size_t max = bd_yaml_max_bytes(kind->limit);
    int rc = src->from_file
                 ? bd_ydoc_load_max(&doc, src->path, max, kind->what, err)
                 : bd_ydoc_parse_max(&doc, src->buf, src->len, src->name, max, kind->what, err);
    if (rc < 0) {
        /* A directory where the file belongs is invalid input (exit 2), not an I/O
         * failure of the machine: it takes the file's own schema code. */
        struct stat st;
        if (src->from_file && err && err->code == BD_E_IO && lstat(src->path, &st) == 0 &&
            S_ISDIR(st.st_mode))
            bd_err_set(err, kind->schema_code, src->path, 0, 0,
                       "is a directory; it must be a regular YAML file: move the directory "
                       "away and restore the file");
        return -1;
    }
    rc = kind->check(out, doc, expect, err);
    if (!kind->keeps_doc)
        bd_ydoc_free(doc);
    return rc;
}
