/*
 * bench.c — the bench on disk (DESIGN.md §1): finding it, listing it, and strict typed
 * loaders for its four YAML files.
 *
 * Loaders validate a bd_ydoc tree (ydoc.c already refused aliases, duplicates, deep or
 * huge input). Typing follows the YAML 1.2 core schema: a plain `1` is an integer, a
 * quoted "1" a string, so a field never means one thing to us and another to a second
 * reader of the same signed file.
 */
#include "bench.h"
#include "hash.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fsutil.h"
#include "strbuf.h"

/* ---- names, paths, enum strings ------------------------------------------------------- */

bool bd_env_name_valid(const char *s)
{
    static const char *const fixed[] = {"PATH", "LANG", "PYTHONHASHSEED", "PYTHONIOENCODING"};
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (strcmp(s, fixed[i]) == 0)
            return false;
    return true;
}

bool bd_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t len = strlen(name);
    if (len == 0 || len > 128)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
        if (i == 0 ? !(lower || digit) : !(lower || digit || c == '.' || c == '_' || c == '-'))
            return false;
    }
    /* No ".." anywhere: a name is never a path step, not even a confusing-looking one. */
    return strstr(name, "..") == NULL;
}

char *bd_path_join(const char *a, const char *b)
{
    if (!a || !b)
        return NULL;
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/')
        la--;
    bool slash = !(la > 0 && a[la - 1] == '/');
    char *p = malloc(la + (slash ? 1 : 0) + lb + 1);
    if (!p)
        return NULL;
    memcpy(p, a, la);
    size_t o = la;
    if (slash)
        p[o++] = '/';
    memcpy(p + o, b, lb);
    p[o + lb] = '\0';
    return p;
}

static const char *const tier_names[] = {"bronze", "silver", "gold"};
static const char *const severity_names[] = {"block", "warn", "info"};
static const char *const sut_names[] = {"cassette", "command"};
static const char *const disposition_names[] = {"positive", "negative", "ambiguous"};
static const char *const difficulty_names[] = {"easy", "medium", "hard"};
static const char *const source_names[] = {"curated", "outcome-ledger-derived",
                                           "regression-converted"};
static const char *const source_ref_names[] = {"ghsa", "ledger", "commit", "synthetic"};
static const char *const role_names[] = {"author", "reviewer"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *bd_tier_str(bd_tier t)
{
    return (unsigned)t < COUNT(tier_names) ? tier_names[t] : "?";
}

const char *bd_severity_str(bd_severity s)
{
    return (unsigned)s < COUNT(severity_names) ? severity_names[s] : "?";
}

int bd_severity_parse(const char *s, bd_severity *out)
{
    for (size_t i = 0; s && i < COUNT(severity_names); i++) {
        if (strcmp(s, severity_names[i]) == 0) {
            *out = (bd_severity)i;
            return 0;
        }
    }
    return -1;
}

const char *bd_sut_kind_str(bd_sut_kind k)
{
    return (unsigned)k < COUNT(sut_names) ? sut_names[k] : "?";
}

const char *bd_disposition_str(bd_disposition d)
{
    return (unsigned)d < COUNT(disposition_names) ? disposition_names[d] : "?";
}

const char *bd_difficulty_str(bd_difficulty d)
{
    return (unsigned)d < COUNT(difficulty_names) ? difficulty_names[d] : "?";
}

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

cJSON *bd_case_to_json(const bd_case *c)
{
    if (!c || !c->doc)
        return NULL;
    cJSON *root = bd_ynode_to_json(c->doc->root);
    if (!root)
        return NULL;
    return root;
}

/* ---- validation helpers --------------------------------------------------------------- */

typedef struct vctx {
    const char *file;
    bd_code code; /* this file kind's *.schema_invalid */
    bd_err *err;
} vctx;

/* Fail at node `at` (or the file when NULL) with `code`, or the file's schema code when
 * `code` is BD_OK. */
__attribute__((format(printf, 4, 5))) static int vfail(const vctx *v, bd_code code,
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

static int vnomem(const vctx *v)
{
    return vfail(v, BD_E_NOMEM, NULL, "out of memory; free memory and retry");
}

static int want_map(const vctx *v, const bd_ynode *n, const char *what)
{
    if (n && n->kind == BD_Y_MAP)
        return 0;
    return vfail(v, BD_OK, n, "%s must be a mapping, not %s; write it as key: value lines", what,
                 type_name(n));
}

static int want_seq(const vctx *v, const bd_ynode *n, const char *what)
{
    if (n && n->kind == BD_Y_SEQ)
        return 0;
    return vfail(v, BD_OK, n, "%s must be a list, not %s; write it as [a, b] or '- ' lines", what,
                 type_name(n));
}

/* Refuse any key of `map` not in `allowed` (NULL-terminated), naming key and line. */
static int check_keys(const vctx *v, const bd_ynode *map, const char *what,
                      const char *const *allowed)
{
    for (size_t i = 0; i < map->n; i++) {
        const bd_ynode *k = map->pairs[i].key;
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(k->str, *a) == 0;
        if (ok)
            continue;
        char shown[72], list[256];
        bd_ydoc_clip(shown, sizeof(shown), k->str);
        list[0] = '\0';
        for (const char *const *a = allowed; *a; a++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof(list) - l, "%s%s", l ? ", " : "", *a);
        }
        return vfail(v, BD_OK, k, "unknown key '%s' in %s; remove it (allowed: %s)", shown, what,
                     list);
    }
    return 0;
}

/* The value of required key `key`, or NULL after failing. */
static const bd_ynode *need(const vctx *v, const bd_ynode *map, const char *key, const char *what)
{
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->pairs[i].key->str, key) == 0)
            return map->pairs[i].value;
    vfail(v, BD_OK, map, "missing required key '%s' in %s; add it", key, what);
    return NULL;
}

/* A string (quoted, or plain text that is not null/boolean/number). */
static int want_str(const vctx *v, const bd_ynode *n, const char *what, bool allow_empty)
{
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_STR)
        return vfail(v, BD_OK, n, "%s must be a string, not %s; %s", what, type_name(n),
                     n && n->kind == BD_Y_SCALAR && !bd_ynode_is_null(n) ? "quote it"
                                                                         : "give it a text value");
    if (!allow_empty && n->len == 0)
        return vfail(v, BD_OK, n, "%s must not be empty; give it a value", what);
    return 0;
}

static int dup_str(const vctx *v, const bd_ynode *n, const char *what, bool allow_empty, char **out)
{
    if (want_str(v, n, what, allow_empty) < 0)
        return -1;
    *out = strdup(n->str);
    return *out ? 0 : vnomem(v);
}

static int get_int(const vctx *v, const bd_ynode *n, const char *what, long long lo, long long hi,
                   int *out)
{
    long long x;
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_INT)
        return vfail(v, BD_OK, n, "%s must be an integer, not %s; write digits without quotes",
                     what, type_name(n));
    if (!core_int_value(n->str, &x) || x < lo || x > hi)
        return vfail(v, BD_OK, n, "%s is out of range; use an integer from %lld to %lld", what, lo,
                     hi);
    *out = (int)x;
    return 0;
}

static int get_num(const vctx *v, const bd_ynode *n, const char *what, double lo, double hi,
                   double *out)
{
    double d = NAN;
    ytype t = n && n->kind == BD_Y_SCALAR ? scalar_type(n) : YT_STR;
    if (!n || n->kind != BD_Y_SCALAR || (t != YT_INT && t != YT_FLOAT))
        return vfail(v, BD_OK, n, "%s must be a number, not %s; write it without quotes", what,
                     type_name(n));
    if (t == YT_INT) {
        long long x;
        if (core_int_value(n->str, &x))
            d = (double)x;
    } else if (!strchr(n->str, 'n') && !strchr(n->str, 'N')) {
        d = strtod(n->str, NULL);
    }
    if (!(d >= lo && d <= hi)) /* NaN fails too */
        return vfail(v, BD_OK, n, "%s is out of range; use a number from %g to %g", what, lo, hi);
    *out = d;
    return 0;
}

static int get_enum(const vctx *v, const bd_ynode *n, const char *what, const char *const *names,
                    size_t count, int *out)
{
    if (want_str(v, n, what, false) < 0)
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
    return vfail(v, BD_OK, n, "%s '%s' is not one of %s; use one of them", what, shown, list);
}

/* A digest's 71 bytes at `s` (not NUL-terminated): "blake3:" and 64 lower-case hex
 * digits. Range tests without branches, which the compiler turns into vector compares: a
 * 100,000-pin digests.yaml checks 6.4 million digits. */
static inline bool digest_bytes_ok(const char *s)
{
    if (memcmp(s, "blake3:", 7) != 0)
        return false;
    const unsigned char *p = (const unsigned char *)s + 7;
    unsigned char bad = 0;
    for (int i = 0; i < BD_DIGEST_STR_LEN - 7; i++)
        bad |= (unsigned char)((unsigned char)(p[i] - '0') > 9) &
               (unsigned char)((unsigned char)(p[i] - 'a') > 5);
    return !bad;
}

/* A digest "blake3:<64 lower-case hex>"; with `nullable`, null gives "" and *has=false. */
static int get_digest(const vctx *v, const bd_ynode *n, const char *what, bool nullable,
                      char out[BD_DIGEST_STR_LEN + 1], bool *has)
{
    out[0] = '\0';
    if (has)
        *has = false;
    if (nullable && (!n || bd_ynode_is_null(n)))
        return 0;
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_STR || !bd_digest_str_valid(n->str))
        return vfail(v, BD_OK, n,
                     "%s must be a digest 'blake3:' + 64 lower-case hex digits%s; "
                     "run `benchdesk pin` to write it",
                     what, nullable ? " or null" : "");
    memcpy(out, n->str, BD_DIGEST_STR_LEN + 1);
    if (has)
        *has = true;
    return 0;
}

static int get_fpr(const vctx *v, const bd_ynode *n, const char *what, char out[BD_FPR_LEN + 1])
{
    /* Judged by its text alone: a digits-only fingerprint reads as a plain integer. Either
     * case is taken; it is kept in upper case. */
    out[0] = '\0';
    if (n && n->kind == BD_Y_SCALAR && n->len == BD_FPR_LEN) {
        for (size_t i = 0; i < BD_FPR_LEN; i++) {
            char c = n->str[i];
            out[i] = (c >= 'a' && c <= 'f') ? (char)(c - 'a' + 'A') : c;
        }
        out[BD_FPR_LEN] = '\0';
    }
    if (!bd_fpr_valid(out)) {
        out[0] = '\0';
        return vfail(v, BD_OK, n,
                     "%s must be a 40-hex-digit OpenPGP primary key fingerprint without "
                     "spaces; copy it from `gpg --with-colons --fingerprint`",
                     what);
    }
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

static int get_timestamp(const vctx *v, const bd_ynode *n, const char *what, char **out)
{
    if (!n || n->kind != BD_Y_SCALAR || scalar_type(n) != YT_STR || !timestamp_ok(n->str))
        return vfail(v, BD_OK, n,
                     "%s must be a UTC time \"YYYY-MM-DDTHH:MM:SSZ\" with a real date; "
                     "e.g. \"2026-05-12T14:00:00Z\"",
                     what);
    *out = strdup(n->str);
    return *out ? 0 : vnomem(v);
}

/* The root must be a mapping whose schema_version is `version`. A format-v1 file where
 * v2 is wanted is bench.format_v1 with the one command that converts it. */
static int check_root(const vctx *v, const bd_ydoc *doc, int version)
{
    const bd_ynode *root = doc->root;
    if (!root || root->kind != BD_Y_MAP)
        return vfail(v, BD_OK, root,
                     "the document must be a mapping, not %s; write its keys as "
                     "'key: value' lines, starting with 'schema_version: %d'",
                     root ? type_name(root) : "empty", version);
    const bd_ynode *sv = need(v, root, "schema_version", "the document");
    if (!sv)
        return -1;
    if (sv->kind != BD_Y_SCALAR || scalar_type(sv) != YT_INT)
        return vfail(v, BD_OK, sv, "schema_version must be the integer %d, not %s; write %d",
                     version, type_name(sv), version);
    long long x;
    if (core_int_value(sv->str, &x) && x == 1 && version == 2)
        return vfail(v, BD_E_FORMAT_V1, sv,
                     "this file is bench format v1; convert the bench with `benchdesk migrate` "
                     "(every signature must then be made again)");
    if (!core_int_value(sv->str, &x) || x != version)
        return vfail(v, BD_OK, sv,
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
static int find_dup(const char *const *strs, size_t n, long *dup)
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

static bool is_lower_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* ^[a-z0-9_]+(\.[a-z0-9_]+)+$ */
static bool failure_code_ok(const char *s)
{
    size_t seg = 0, dots = 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (seg == 0)
                return false;
            dots++;
            seg = 0;
        } else if (is_lower_ident_char(*s)) {
            seg++;
        } else {
            return false;
        }
    }
    return dots > 0 && seg > 0;
}

static bool breakdown_key_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!is_lower_ident_char(*s))
            return false;
    return true;
}

#define NAME_MAX_CODE 128

/* ---- registration.yaml ---------------------------------------------------------------- */

void bd_registration_free(bd_registration *reg)
{
    if (!reg)
        return;
    free(reg->name);
    free(reg->description);
    for (size_t i = 0; i < reg->n_breakdown_keys; i++)
        free(reg->breakdown_keys[i]);
    free(reg->breakdown_keys);
    for (size_t i = 0; i < reg->n_failure_modes; i++) {
        free(reg->failure_modes[i].code);
        free(reg->failure_modes[i].description);
    }
    free(reg->failure_modes);
    if (reg->sut_argv)
        for (size_t i = 0; i < reg->sut_argc; i++)
            free(reg->sut_argv[i]);
    free(reg->sut_argv);
    for (size_t i = 0; i < reg->n_sut_env_pass; i++)
        free(reg->sut_env_pass[i]);
    free(reg->sut_env_pass);
    free(reg);
}

static int reg_breakdown(const vctx *v, bd_registration *r, const bd_ynode *n)
{
    if (want_seq(v, n, "breakdown_keys") < 0)
        return -1;
    if (n->n) {
        r->breakdown_keys = calloc(n->n, sizeof(char *));
        if (!r->breakdown_keys)
            return vnomem(v);
    }
    for (size_t i = 0; i < n->n; i++) {
        const bd_ynode *it = n->items[i];
        char what[48];
        snprintf(what, sizeof(what), "breakdown_keys[%zu]", i);
        if (want_str(v, it, what, false) < 0)
            return -1;
        if (!breakdown_key_ok(it->str) || it->len > NAME_MAX_CODE) {
            char shown[72];
            bd_ydoc_clip(shown, sizeof(shown), it->str);
            return vfail(v, BD_OK, it,
                         "breakdown key '%s' must match ^[a-z0-9_]+$ (at most %d characters); "
                         "rename it",
                         shown, NAME_MAX_CODE);
        }
        if (!(r->breakdown_keys[i] = strdup(it->str)))
            return vnomem(v);
        r->n_breakdown_keys = i + 1;
    }
    long dup;
    if (find_dup((const char *const *)r->breakdown_keys, r->n_breakdown_keys, &dup) < 0)
        return vnomem(v);
    if (dup >= 0)
        return vfail(v, BD_OK, n->items[dup], "breakdown key '%s' is listed twice; keep one",
                     r->breakdown_keys[dup]);
    return 0;
}

static int reg_failure_modes(const vctx *v, bd_registration *r, const bd_ynode *n)
{
    static const char *const keys[] = {"code", "severity", "description", NULL};
    if (want_seq(v, n, "failure_modes") < 0)
        return -1;
    if (n->n) {
        r->failure_modes = calloc(n->n, sizeof(*r->failure_modes));
        if (!r->failure_modes)
            return vnomem(v);
    }
    for (size_t i = 0; i < n->n; i++) {
        const bd_ynode *it = n->items[i];
        bd_failure_mode_def *fm = &r->failure_modes[i];
        r->n_failure_modes = i + 1;
        char what[64];
        snprintf(what, sizeof(what), "failure_modes[%zu]", i);
        if (want_map(v, it, what) < 0 || check_keys(v, it, what, keys) < 0)
            return -1;
        const bd_ynode *code = need(v, it, "code", what);
        if (!code)
            return -1;
        snprintf(what, sizeof(what), "failure_modes[%zu].code", i);
        if (want_str(v, code, what, false) < 0)
            return -1;
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), code->str);
        if (!failure_code_ok(code->str) || code->len > NAME_MAX_CODE)
            return vfail(v, BD_OK, code,
                         "failure-mode code '%s' must be dotted lower case "
                         "(^[a-z0-9_]+(\\.[a-z0-9_]+)+$, at most %d characters); rename it",
                         shown, NAME_MAX_CODE);
        if (strncmp(code->str, "rubric.", 7) == 0 || strncmp(code->str, "sut.", 4) == 0)
            return vfail(v, BD_OK, code,
                         "failure-mode code '%s' uses a prefix reserved for the harness "
                         "(rubric., sut.); choose another prefix",
                         shown);
        if (!(fm->code = strdup(code->str)))
            return vnomem(v);
        const bd_ynode *sev = need(v, it, "severity", what);
        if (!sev)
            return -1;
        int s;
        snprintf(what, sizeof(what), "failure_modes[%zu].severity", i);
        if (get_enum(v, sev, what, severity_names, COUNT(severity_names), &s) < 0)
            return -1;
        fm->severity = (bd_severity)s;
        const bd_ynode *desc = bd_ynode_get(it, "description");
        snprintf(what, sizeof(what), "failure_modes[%zu].description", i);
        if (desc) {
            if (dup_str(v, desc, what, true, &fm->description) < 0)
                return -1;
        } else if (!(fm->description = strdup(""))) {
            return vnomem(v);
        }
    }
    const char **codes = NULL;
    if (r->n_failure_modes && !(codes = malloc(r->n_failure_modes * sizeof(*codes))))
        return vnomem(v);
    for (size_t i = 0; i < r->n_failure_modes; i++)
        codes[i] = r->failure_modes[i].code;
    long dup;
    int rc = find_dup(codes, r->n_failure_modes, &dup);
    free(codes);
    if (rc < 0)
        return vnomem(v);
    if (dup >= 0)
        return vfail(v, BD_OK, bd_ynode_get(n->items[dup], "code"),
                     "failure-mode code '%s' is listed twice; keep one",
                     r->failure_modes[dup].code);
    return 0;
}

static int reg_sut(const vctx *v, bd_registration *r, const bd_ynode *n)
{
    static const char *const cassette_keys[] = {"kind", NULL};
    static const char *const command_keys[] = {"kind",    "argv",     "wall_clock_seconds",
                                               "network", "env_pass", NULL};
    if (want_map(v, n, "sut") < 0)
        return -1;
    const bd_ynode *kind = need(v, n, "kind", "sut");
    int k;
    if (!kind || get_enum(v, kind, "sut.kind", sut_names, COUNT(sut_names), &k) < 0)
        return -1;
    r->sut_kind = (bd_sut_kind)k;
    if (r->sut_kind == BD_SUT_CASSETTE)
        return check_keys(v, n, "sut (kind cassette)", cassette_keys);
    if (check_keys(v, n, "sut (kind command)", command_keys) < 0)
        return -1;
    const bd_ynode *argv = need(v, n, "argv", "sut (kind command)");
    if (!argv || want_seq(v, argv, "sut.argv") < 0)
        return -1;
    if (argv->n == 0 || argv->n > 256)
        return vfail(v, BD_OK, argv,
                     "sut.argv must hold 1 to 256 strings, the first an absolute path; fix it");
    r->sut_argv = calloc(argv->n + 1, sizeof(char *));
    if (!r->sut_argv)
        return vnomem(v);
    for (size_t i = 0; i < argv->n; i++) {
        char what[48];
        snprintf(what, sizeof(what), "sut.argv[%zu]", i);
        if (want_str(v, argv->items[i], what, i > 0) < 0)
            return -1;
        if (i == 0 && argv->items[0]->str[0] != '/')
            return vfail(v, BD_OK, argv->items[0],
                         "sut.argv[0] must be an absolute path (no PATH lookup, no shell); "
                         "write the program's full path");
        if (!(r->sut_argv[i] = strdup(argv->items[i]->str)))
            return vnomem(v);
        r->sut_argc = i + 1;
    }
    r->sut_wall_clock_s = 120;
    const bd_ynode *wc = bd_ynode_get(n, "wall_clock_seconds");
    if (wc &&
        get_int(v, wc, "sut.wall_clock_seconds", 1, BD_RUBRIC_MAX_WALL_S, &r->sut_wall_clock_s) < 0)
        return -1;
    const bd_ynode *net = bd_ynode_get(n, "network");
    if (net && !(net->kind == BD_Y_SCALAR && scalar_type(net) == YT_BOOL &&
                 (net->str[0] == 'f' || net->str[0] == 'F')))
        return vfail(v, BD_OK, net,
                     "sut.network must be false: a run's SUT never has the network (a curator "
                     "records with `benchdesk record --unsafe-network`)");
    const bd_ynode *ep = bd_ynode_get(n, "env_pass");
    if (ep && !bd_ynode_is_null(ep)) {
        if (want_seq(v, ep, "sut.env_pass") < 0)
            return -1;
        if (ep->n > 64)
            return vfail(v, BD_OK, ep, "sut.env_pass names more than 64 variables; name fewer");
        r->sut_env_pass = calloc(ep->n + 1, sizeof(char *));
        if (!r->sut_env_pass)
            return vnomem(v);
        for (size_t i = 0; i < ep->n; i++) {
            char what[48];
            snprintf(what, sizeof(what), "sut.env_pass[%zu]", i);
            const bd_ynode *it = ep->items[i];
            if (want_str(v, it, what, false) < 0)
                return -1;
            if (!bd_env_name_valid(it->str))
                return vfail(v, BD_OK, it,
                             "%s must be an environment variable name (^[A-Z_][A-Z0-9_]{0,127}$) "
                             "other than PATH, LANG, PYTHONHASHSEED and PYTHONIOENCODING",
                             what);
            for (size_t j = 0; j < i; j++)
                if (strcmp(r->sut_env_pass[j], it->str) == 0)
                    return vfail(v, BD_OK, it, "%s repeats '%s'; name each variable once", what,
                                 it->str);
            if (!(r->sut_env_pass[i] = strdup(it->str)))
                return vnomem(v);
            r->n_sut_env_pass = i + 1;
        }
    }
    return 0;
}

static int registration_from_doc(bd_registration **out, const bd_ydoc *doc, const char *expect_name,
                                 bd_err *err)
{
    static const char *const keys[] = {"schema_version",
                                       "name",
                                       "description",
                                       "current_tier",
                                       "min_cases_for_promotion",
                                       "promotion_threshold",
                                       "breakdown_keys",
                                       "failure_modes",
                                       "rubric",
                                       "sut",
                                       NULL};
    static const char *const min_keys[] = {"bronze", "silver", "gold", NULL};
    static const char *const thr_keys[] = {"silver", "gold", NULL};
    static const char *const rubric_keys[] = {"wall_clock_seconds", "memory_mb", NULL};
    vctx v = {doc->name, BD_E_REGISTRATION_SCHEMA, err};
    int rc = -1;
    const bd_ynode *n, *root = doc->root;
    bd_registration *r = calloc(1, sizeof(*r));

    *out = NULL;
    if (!r) {
        vnomem(&v);
        goto out;
    }
    if (check_root(&v, doc, 2) < 0 || check_keys(&v, root, "registration.yaml", keys) < 0)
        goto out;
    r->schema_version = 2;

    if (!(n = need(&v, root, "name", "registration.yaml")) ||
        dup_str(&v, n, "name", false, &r->name) < 0)
        goto out;
    if (!bd_name_valid(r->name)) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), r->name);
        vfail(&v, BD_E_BAD_ID, n,
              "task-class name '%s' must match ^[a-z0-9][a-z0-9._-]{0,127}$ without '..'; "
              "rename it",
              shown);
        goto out;
    }
    if (expect_name && strcmp(r->name, expect_name) != 0) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), expect_name);
        vfail(&v, BD_OK, n, "name '%s' differs from its directory '%s'; make them equal", r->name,
              shown);
        goto out;
    }
    if (!(n = need(&v, root, "description", "registration.yaml")) ||
        dup_str(&v, n, "description", true, &r->description) < 0)
        goto out;
    int t;
    if (!(n = need(&v, root, "current_tier", "registration.yaml")) ||
        get_enum(&v, n, "current_tier", tier_names, COUNT(tier_names), &t) < 0)
        goto out;
    r->current_tier = (bd_tier)t;

    const bd_ynode *mc = need(&v, root, "min_cases_for_promotion", "registration.yaml");
    if (!mc || want_map(&v, mc, "min_cases_for_promotion") < 0 ||
        check_keys(&v, mc, "min_cases_for_promotion", min_keys) < 0)
        goto out;
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof(what), "min_cases_for_promotion.%s", tier_names[i]);
        if (!(n = need(&v, mc, tier_names[i], "min_cases_for_promotion")) ||
            get_int(&v, n, what, 1, INT_MAX, &r->min_cases[i]) < 0)
            goto out;
    }
    const bd_ynode *th = need(&v, root, "promotion_threshold", "registration.yaml");
    if (!th || want_map(&v, th, "promotion_threshold") < 0 ||
        check_keys(&v, th, "promotion_threshold", thr_keys) < 0)
        goto out;
    r->threshold[BD_TIER_BRONZE] = 0.0;
    for (int i = 1; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof(what), "promotion_threshold.%s", tier_names[i]);
        if (!(n = need(&v, th, tier_names[i], "promotion_threshold")) ||
            get_num(&v, n, what, 0.0, 1.0, &r->threshold[i]) < 0)
            goto out;
    }
    if (!(n = need(&v, root, "breakdown_keys", "registration.yaml")) || reg_breakdown(&v, r, n) < 0)
        goto out;
    if (!(n = need(&v, root, "failure_modes", "registration.yaml")) ||
        reg_failure_modes(&v, r, n) < 0)
        goto out;

    r->rubric_wall_clock_s = BD_RUBRIC_DEFAULT_WALL_S;
    r->rubric_memory_mb = BD_RUBRIC_DEFAULT_MEMORY_MB;
    if ((n = bd_ynode_get(root, "rubric"))) {
        const bd_ynode *x;
        if (want_map(&v, n, "rubric") < 0 || check_keys(&v, n, "rubric", rubric_keys) < 0)
            goto out;
        if ((x = bd_ynode_get(n, "wall_clock_seconds")) &&
            get_int(&v, x, "rubric.wall_clock_seconds", 1, BD_RUBRIC_MAX_WALL_S,
                    &r->rubric_wall_clock_s) < 0)
            goto out;
        if ((x = bd_ynode_get(n, "memory_mb")) &&
            get_int(&v, x, "rubric.memory_mb", 16, BD_RUBRIC_MAX_MEMORY_MB, &r->rubric_memory_mb) <
                0)
            goto out;
    }
    if (!(n = need(&v, root, "sut", "registration.yaml")) || reg_sut(&v, r, n) < 0)
        goto out;
    *out = r;
    r = NULL;
    rc = 0;
out:
    bd_registration_free(r);
    return rc;
}

/* ---- reading a document as one of the files above ------------------------------------ */

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

/* Which validator a document goes through. */
typedef enum { DOC_REGISTRATION, DOC_CASE, DOC_DIGESTS, DOC_SIGNERS, DOC_PROVENANCE } doc_kind;

/* The schema code of a kind of file. */
static bd_code schema_code_of(doc_kind kind)
{
    switch (kind) {
    case DOC_REGISTRATION:
        return BD_E_REGISTRATION_SCHEMA;
    case DOC_DIGESTS:
        return BD_E_DIGESTS_SCHEMA;
    case DOC_SIGNERS:
        return BD_E_SIGNERS_SCHEMA;
    case DOC_PROVENANCE:
        return BD_E_PROVENANCE_SCHEMA;
    case DOC_CASE:
        break;
    }
    return BD_E_CASE_SCHEMA;
}

/* Where a document comes from: the file `path` (from_file), else buf/len shown as `name`. */
typedef struct doc_src {
    bool from_file;
    const char *path;
    const char *buf;
    size_t len;
    const char *name;
} doc_src;

static int case_from_doc(bd_case **out, bd_ydoc *doc, const char *expect_id, bd_err *err);
static int digests_from_doc(bd_digests **out, const bd_ydoc *doc, bd_err *err);
static int signers_from_doc(bd_signers **out, const bd_ydoc *doc, bd_err *err);
static int provfile_from_doc(bd_provfile **out, const bd_ydoc *doc, bd_err *err);

/* Read `src` and validate it as `kind` into `out` (a bd_<kind> **, set to NULL first by the
 * caller); `expect` is the expected name or case id where the kind has one. The parse and load
 * entry points differ only in where the text comes from, so they all come through here. */
static int doc_read(doc_kind kind, void *out, const doc_src *src, const char *expect, bd_err *err)
{
    bd_ydoc *doc = NULL;
    size_t max = bd_yaml_max_bytes(kind == DOC_DIGESTS   ? BD_YKIND_DIGESTS
                                   : kind == DOC_SIGNERS ? BD_YKIND_SIGNERS
                                                         : BD_YKIND_OTHER);
    const char *what = kind == DOC_DIGESTS   ? "digests.yaml files"
                       : kind == DOC_SIGNERS ? "trusted-signers.yaml"
                                             : NULL;
    int rc = src->from_file
                 ? bd_ydoc_load_max(&doc, src->path, max, what, err)
                 : bd_ydoc_parse_max(&doc, src->buf, src->len, src->name, max, what, err);
    if (rc < 0) {
        /* A directory where the file belongs is invalid input (exit 2), not an I/O
         * failure of the machine: it takes the file's own schema code. */
        struct stat st;
        if (src->from_file && err && err->code == BD_E_IO && lstat(src->path, &st) == 0 &&
            S_ISDIR(st.st_mode))
            bd_err_set(err, schema_code_of(kind), src->path, 0, 0,
                       "is a directory; it must be a regular YAML file: move the directory "
                       "away and restore the file");
        return -1;
    }
    switch (kind) {
    case DOC_REGISTRATION:
        rc = registration_from_doc(out, doc, expect, err);
        break;
    case DOC_CASE:
        return case_from_doc(out, doc, expect, err); /* it keeps the document */
    case DOC_DIGESTS:
        rc = digests_from_doc(out, doc, err);
        break;
    case DOC_SIGNERS:
        rc = signers_from_doc(out, doc, err);
        break;
    case DOC_PROVENANCE:
        rc = provfile_from_doc(out, doc, err);
        break;
    }
    bd_ydoc_free(doc);
    return rc;
}

int bd_registration_parse(bd_registration **out, const char *buf, size_t len, const char *name,
                          const char *expect_name, bd_err *err)
{
    doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return doc_read(DOC_REGISTRATION, out, &src, expect_name, err);
}

int bd_registration_load(bd_registration **out, const char *path, const char *expect_name,
                         bd_err *err)
{
    doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    return doc_read(DOC_REGISTRATION, out, &src, expect_name, err);
}

const bd_failure_mode_def *bd_registration_failure_mode(const bd_registration *reg,
                                                        const char *code)
{
    for (size_t i = 0; reg && code && i < reg->n_failure_modes; i++)
        if (strcmp(reg->failure_modes[i].code, code) == 0)
            return &reg->failure_modes[i];
    return NULL;
}

bool bd_registration_has_breakdown_key(const bd_registration *reg, const char *key)
{
    for (size_t i = 0; reg && key && i < reg->n_breakdown_keys; i++)
        if (strcmp(reg->breakdown_keys[i], key) == 0)
            return true;
    return false;
}

/* ---- case.yaml ------------------------------------------------------------------------ */

void bd_case_free(bd_case *c)
{
    if (!c)
        return;
    free(c->case_id);
    free(c->title);
    free(c->source);
    free(c->source_ref_type);
    free(c->source_ref_value);
    free(c->added_at);
    free(c->path);
    bd_ydoc_free(c->doc);
    free(c);
}

static int case_origin(const vctx *v, bd_case *c, const bd_ynode *p)
{
    static const char *const keys[] = {"source", "source_ref", "added_at", NULL};
    static const char *const ref_keys[] = {"type", "value", NULL};
    const bd_ynode *n;
    int e;
    if (want_map(v, p, "origin") < 0 || check_keys(v, p, "origin", keys) < 0)
        return -1;
    if (!(n = need(v, p, "source", "origin")) ||
        get_enum(v, n, "origin.source", source_names, COUNT(source_names), &e) < 0)
        return -1;
    if (!(c->source = strdup(source_names[e])))
        return vnomem(v);
    const bd_ynode *ref = need(v, p, "source_ref", "origin");
    if (!ref || want_map(v, ref, "origin.source_ref") < 0 ||
        check_keys(v, ref, "origin.source_ref", ref_keys) < 0)
        return -1;
    if (!(n = need(v, ref, "type", "origin.source_ref")) ||
        get_enum(v, n, "origin.source_ref.type", source_ref_names, COUNT(source_ref_names), &e) < 0)
        return -1;
    if (!(c->source_ref_type = strdup(source_ref_names[e])))
        return vnomem(v);
    if (!(n = need(v, ref, "value", "origin.source_ref")) ||
        dup_str(v, n, "origin.source_ref.value", false, &c->source_ref_value) < 0)
        return -1;
    if (!(n = need(v, p, "added_at", "origin")) ||
        get_timestamp(v, n, "origin.added_at", &c->added_at) < 0)
        return -1;
    return 0;
}

/* Validate `doc` as a case.yaml; takes ownership of `doc` whatever happens. */
static int case_from_doc(bd_case **out, bd_ydoc *doc, const char *expect_id, bd_err *err)
{
    static const char *const keys[] = {"schema_version",  "case_id", "title",    "disposition",
                                       "difficulty",      "origin",  "expected", "rubric_limits",
                                       "cassette_digest", NULL};
    static const char *const limit_keys[] = {"wall_clock_seconds", "memory_mb", NULL};
    vctx v = {doc->name, BD_E_CASE_SCHEMA, err};
    int rc = -1, e;
    const bd_ynode *n, *root = doc->root;
    bd_case *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c) {
        vnomem(&v);
        bd_ydoc_free(doc);
        goto out;
    }
    c->doc = doc;
    if (!(c->path = strdup(doc->name))) {
        vnomem(&v);
        goto out;
    }
    if (check_root(&v, doc, 2) < 0)
        goto out;
    /* A v1 case that says schema_version 2 still carries its v1 members: name the format
     * rather than an unknown key. */
    if ((n = bd_ynode_get(root, "provenance")) || (n = bd_ynode_get(root, "case_digest"))) {
        vfail(&v, BD_E_FORMAT_V1, n,
              "'%s' belongs to bench format v1 (signatures now live in provenance.yaml, pins in "
              "digests.yaml); convert the bench with `benchdesk migrate`",
              n == bd_ynode_get(root, "provenance") ? "provenance" : "case_digest");
        goto out;
    }
    if (check_keys(&v, root, "case.yaml", keys) < 0)
        goto out;
    c->schema_version = 2;
    if (!(n = need(&v, root, "case_id", "case.yaml")) ||
        dup_str(&v, n, "case_id", false, &c->case_id) < 0)
        goto out;
    if (!bd_name_valid(c->case_id)) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), c->case_id);
        vfail(&v, BD_E_BAD_ID, n,
              "case_id '%s' must match ^[a-z0-9][a-z0-9._-]{0,127}$ without '..'; rename it",
              shown);
        goto out;
    }
    if (expect_id && strcmp(c->case_id, expect_id) != 0) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), expect_id);
        vfail(&v, BD_E_CASE_ID_MISMATCH, n,
              "case_id '%s' differs from its directory '%s'; make them equal", c->case_id, shown);
        goto out;
    }
    if (!(n = need(&v, root, "title", "case.yaml")) ||
        dup_str(&v, n, "title", false, &c->title) < 0)
        goto out;
    if (!(n = need(&v, root, "disposition", "case.yaml")) ||
        get_enum(&v, n, "disposition", disposition_names, COUNT(disposition_names), &e) < 0)
        goto out;
    c->disposition = (bd_disposition)e;
    if (!(n = need(&v, root, "difficulty", "case.yaml")) ||
        get_enum(&v, n, "difficulty", difficulty_names, COUNT(difficulty_names), &e) < 0)
        goto out;
    c->difficulty = (bd_difficulty)e;
    if (!(n = need(&v, root, "origin", "case.yaml")) || case_origin(&v, c, n) < 0)
        goto out;
    if (!(n = need(&v, root, "expected", "case.yaml")) || want_map(&v, n, "expected") < 0)
        goto out;
    c->expected = (bd_ynode *)n;
    if ((n = bd_ynode_get(root, "rubric_limits")) && !bd_ynode_is_null(n)) {
        const bd_ynode *x;
        if (want_map(&v, n, "rubric_limits") < 0 ||
            check_keys(&v, n, "rubric_limits", limit_keys) < 0)
            goto out;
        if ((x = bd_ynode_get(n, "wall_clock_seconds")) &&
            get_int(&v, x, "rubric_limits.wall_clock_seconds", 1, BD_RUBRIC_MAX_WALL_S,
                    &c->wall_clock_s) < 0)
            goto out;
        if ((x = bd_ynode_get(n, "memory_mb")) &&
            get_int(&v, x, "rubric_limits.memory_mb", 16, BD_RUBRIC_MAX_MEMORY_MB, &c->memory_mb) <
                0)
            goto out;
    }
    if (get_digest(&v, bd_ynode_get(root, "cassette_digest"), "cassette_digest", true,
                   c->cassette_digest, &c->has_cassette_digest) < 0)
        goto out;
    *out = c;
    c = NULL;
    rc = 0;
out:
    bd_case_free(c);
    return rc;
}

int bd_case_parse(bd_case **out, const char *buf, size_t len, const char *name,
                  const char *expect_id, bd_err *err)
{
    doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return doc_read(DOC_CASE, out, &src, expect_id, err);
}

int bd_case_load(bd_case **out, const char *path, const char *expect_id, bd_err *err)
{
    doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    return doc_read(DOC_CASE, out, &src, expect_id, err);
}

/* ---- digests.yaml --------------------------------------------------------------------- */

void bd_digests_free(bd_digests *d)
{
    if (!d)
        return;
    if (d->ids)
        free(d->ids);
    else
        for (size_t i = 0; i < d->n_pins; i++)
            free(d->pins[i].case_id);
    free(d->pins);
    free(d->raw);
    free(d);
}

static int pin_cmp(const void *a, const void *b)
{
    return strcmp(((const bd_pin *)a)->case_id, ((const bd_pin *)b)->case_id);
}

static int digests_from_doc(bd_digests **out, const bd_ydoc *doc, bd_err *err)
{
    static const char *const keys[] = {"schema_version", "task_class", "cases", NULL};
    vctx v = {doc->name, BD_E_DIGESTS_SCHEMA, err};
    int rc = -1;
    const bd_ynode *n, *root = doc->root;
    bd_digests *d = calloc(1, sizeof(*d));

    *out = NULL;
    if (!d) {
        vnomem(&v);
        goto out;
    }
    if (check_root(&v, doc, 2) < 0)
        goto out;
    if (bd_ynode_get(root, "rubric"))
        goto v1;
    if (check_keys(&v, root, "digests.yaml", keys) < 0)
        goto out;
    d->schema_version = 2;
    if (!(n = need(&v, root, "task_class", "digests.yaml")) ||
        get_digest(&v, n, "task_class", false, d->task_class, NULL) < 0)
        goto out;
    const bd_ynode *cases = need(&v, root, "cases", "digests.yaml");
    if (!cases)
        goto out;
    if (!bd_ynode_is_null(cases)) {
        if (want_map(&v, cases, "cases") < 0)
            goto out;
        if (cases->n && !(d->pins = calloc(cases->n, sizeof(*d->pins)))) {
            vnomem(&v);
            goto out;
        }
        for (size_t i = 0; i < cases->n; i++) {
            const bd_ynode *k = cases->pairs[i].key;
            if (!bd_name_valid(k->str)) {
                char shown[72];
                bd_ydoc_clip(shown, sizeof(shown), k->str);
                vfail(&v, BD_E_BAD_ID, k,
                      "case id '%s' must match ^[a-z0-9][a-z0-9._-]{0,127}$ without '..'; "
                      "fix the pin",
                      shown);
                goto out;
            }
            char what[160];
            snprintf(what, sizeof(what), "the pin of case '%s'", k->str);
            bd_pin *p = &d->pins[i];
            if (get_digest(&v, cases->pairs[i].value, what, false, p->digest, NULL) < 0)
                goto out;
            p->line = k->line;
            if (!(p->case_id = strdup(k->str))) {
                vnomem(&v);
                goto out;
            }
            d->n_pins = i + 1;
        }
        /* Duplicate ids were refused by ydoc (yaml.duplicate_key). */
        if (d->n_pins > 1)
            qsort(d->pins, d->n_pins, sizeof(*d->pins), pin_cmp);
    }
    *out = d;
    d = NULL;
    rc = 0;
    goto out;
v1:
    vfail(&v, BD_E_FORMAT_V1, bd_ynode_get(root, "rubric"),
          "this file pins the rubric alone (bench format v1); convert the bench with "
          "`benchdesk migrate` (every signature must then be made again)");
out:
    bd_digests_free(d);
    return rc;
}

/* A block for one of the tables of a large digests.yaml (ids, pins: 10 MB at 100,000
 * cases), which are written once from start to end. From 4 MiB on it is aligned to 2 MiB
 * and the kernel is asked for huge pages: a command reading 100,000 pins then takes a
 * handful of page faults instead of thousands, the largest part of its time (the advice
 * may be ignored; the memory is the same). Free with free(). */
static void *table_alloc(size_t n)
{
    enum { HUGE = 2 << 20 };
    void *p = NULL;
    if (n < 2 * HUGE)
        return malloc(n);
    if (posix_memalign(&p, HUGE, n) != 0)
        return NULL;
    (void)madvise(p, n & ~(size_t)(HUGE - 1), MADV_HUGEPAGE);
    return p;
}

/* What may stand in a case id (bd_name_valid): 1 first and later, 2 later only. A
 * table, not range tests: a 100,000-pin digests.yaml checks over a million of them. */
#define ID_L(c) [c] = 3
static const unsigned char id_class[256] = {
    ID_L('a'), ID_L('b'), ID_L('c'), ID_L('d'), ID_L('e'), ID_L('f'), ID_L('g'), ID_L('h'),
    ID_L('i'), ID_L('j'), ID_L('k'), ID_L('l'), ID_L('m'), ID_L('n'), ID_L('o'), ID_L('p'),
    ID_L('q'), ID_L('r'), ID_L('s'), ID_L('t'), ID_L('u'), ID_L('v'), ID_L('w'), ID_L('x'),
    ID_L('y'), ID_L('z'), ID_L('0'), ID_L('1'), ID_L('2'), ID_L('3'), ID_L('4'), ID_L('5'),
    ID_L('6'), ID_L('7'), ID_L('8'), ID_L('9'), ['.'] = 2, ['_'] = 2, ['-'] = 2};
#undef ID_L

/* The exact layout `benchdesk pin` writes, read without a YAML parser: comment lines of
 * printable ASCII, "schema_version: 2", "task_class: <digest>", "cases:" (or "cases: {}")
 * and one "  <id>: <digest>" line per case, ids valid and strictly increasing, every
 * line ending in "\n". Within this subset YAML has one reading, the one below, so the
 * result equals what libyaml and digests_from_doc make of the same bytes (a unit test
 * and the fuzz target compare both). One pass over the bytes, each id checked by table
 * and against the one before (the order and the absence of duplicates in the same
 * compare, no sort), the ids in one block: a 100,000-case file is read in a few
 * milliseconds. Any other text, however valid, returns 1 and goes through the YAML
 * parser. With `keep` the result takes `buf` (a malloc'd buffer of the caller's) as its
 * raw bytes on success; with `out` NULL the bytes are only judged (nothing is allocated,
 * nothing copied). Returns 0 with *out, 1 when the text is not in the subset, -1 when out
 * of memory. */
static int digests_canonical(bd_digests **out, char *buf, size_t len, bool keep)
{
    const char *p = buf, *end = buf + len;
    if (out)
        *out = NULL;
    /* A NUL anywhere fails one of the tests below (comment characters, the fixed text,
     * the id characters, the digest digits): no scan of its own. */
    if (len == 0 || buf[len - 1] != '\n')
        return 1;
    int line = 1;
    while (p < end && *p == '#') {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        for (const char *q = p; q < eol; q++)
            if (!((*q >= 0x20 && *q <= 0x7e) || *q == '\t'))
                return 1;
        p = eol + 1;
        line++;
    }
    static const char head[] = "schema_version: 2\ntask_class: ";
    if ((size_t)(end - p) < sizeof(head) - 1 + BD_DIGEST_STR_LEN + 1 ||
        memcmp(p, head, sizeof(head) - 1) != 0)
        return 1;
    p += sizeof(head) - 1;
    if (!digest_bytes_ok(p) || p[BD_DIGEST_STR_LEN] != '\n')
        return 1;
    const char *tcd = p;
    p += BD_DIGEST_STR_LEN + 1;
    line += 2;
    bool empty = false;
    if ((size_t)(end - p) >= 10 && memcmp(p, "cases: {}\n", 10) == 0) {
        empty = true;
        p += 10;
    } else if ((size_t)(end - p) >= 7 && memcmp(p, "cases:\n", 7) == 0) {
        p += 7;
    } else {
        return 1;
    }
    line++;
    if (empty && p != end)
        return 1;
    if (!empty && p == end)
        return 1; /* "cases:" with nothing below is null: the YAML parser's to judge */
    /* Each pin line is at least "  x: " + a digest + "\n"; the ids take fewer bytes than
     * their lines (pages of the block never written are never touched). */
    size_t max_pins = (size_t)(end - p) / (5 + BD_DIGEST_STR_LEN + 1), n_pins = 0;
    bd_digests *d = NULL;
    char *ids = NULL;
    if (out) {
        if (!(d = calloc(1, sizeof(*d))) ||
            (max_pins && !(d->pins = table_alloc(max_pins * sizeof(*d->pins)))) ||
            (max_pins && !(d->ids = table_alloc((size_t)(end - p))))) {
            if (d)
                free(d->pins);
            free(d);
            return -1;
        }
        d->schema_version = 2;
        memcpy(d->task_class, tcd, BD_DIGEST_STR_LEN);
        d->task_class[BD_DIGEST_STR_LEN] = '\0';
        ids = d->ids;
    }
    const char *prev = NULL;
    size_t prev_len = 0;
    while (p < end) {
        /* The buffer ends in '\n' (class 0), so every scan below stops inside it. */
        if (p[0] != ' ' || p[1] != ' ')
            goto odd;
        const unsigned char *id = (const unsigned char *)p + 2, *q = id;
        if (!(id_class[*q] & 1))
            goto odd;
        for (q++; id_class[*q]; q++)
            if (*q == '.' && q[-1] == '.') /* no ".." anywhere (bd_name_valid) */
                goto odd;
        size_t id_len = (size_t)(q - id);
        const char *colon = (const char *)q;
        if (id_len > 128 || *colon != ':' || (size_t)(end - colon) < 2 + BD_DIGEST_STR_LEN + 1 ||
            colon[1] != ' ' || colon[2 + BD_DIGEST_STR_LEN] != '\n' ||
            !digest_bytes_ok(colon + 2) || n_pins >= max_pins)
            goto odd;
        if (prev) {
            /* strcmp's order for ids (no NUL inside): strictly increasing. */
            int c = memcmp(prev, id, prev_len < id_len ? prev_len : id_len);
            if (c > 0 || (c == 0 && prev_len >= id_len))
                goto odd;
        }
        if (d) {
            bd_pin *pin = &d->pins[d->n_pins++];
            memcpy(ids, id, id_len);
            ids[id_len] = '\0';
            pin->case_id = ids;
            ids += id_len + 1;
            /* 72 bytes (the digest and its '\n'), a size the compiler copies in words. */
            memcpy(pin->digest, colon + 2, BD_DIGEST_STR_LEN + 1);
            pin->digest[BD_DIGEST_STR_LEN] = '\0';
            pin->line = line;
            pin->off = (unsigned)(p - buf); /* len <= BD_DIGESTS_MAX_BYTES */
        }
        n_pins++;
        line++;
        prev = (const char *)id;
        prev_len = id_len;
        p = colon + 2 + BD_DIGEST_STR_LEN + 1;
    }
    if (d && keep) {
        d->raw = buf;
        d->raw_len = len;
    }
    if (out)
        *out = d;
    return 0;
odd:
    bd_digests_free(d);
    return 1;
}

int bd_digests_parse(bd_digests **out, const char *buf, size_t len, const char *name, bd_err *err)
{
    doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    if (len <= BD_DIGESTS_MAX_BYTES) {
        /* Read only: without `keep` the line reader never writes to the buffer. */
        int c = digests_canonical(out, (char *)buf, len, false);
        if (c <= 0)
            return c == 0 ? 0 : bd_err_set(err, BD_E_NOMEM, name, 0, 0, "out of memory");
    }
    return doc_read(DOC_DIGESTS, out, &src, NULL, err);
}

bool bd_digests_canonical_ok(const char *buf, size_t len)
{
    return len <= BD_DIGESTS_MAX_BYTES && digests_canonical(NULL, (char *)buf, len, false) == 0;
}

/* The YAML parser alone, for the test that compares it with the canonical reader. */
int bd_digests_parse_yaml(bd_digests **out, const char *buf, size_t len, const char *name,
                          bd_err *err)
{
    doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return doc_read(DOC_DIGESTS, out, &src, NULL, err);
}

int bd_digests_load(bd_digests **out, const char *path, bd_err *err)
{
    doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    /* The file as pin writes it is read without the YAML parser, and its bytes are kept;
     * anything else (a read error, a link, over the limit, another layout) goes the YAML
     * way, which reports it. */
    char *buf = NULL;
    size_t len = 0;
    if (bd_read_file(&buf, &len, path, BD_DIGESTS_MAX_BYTES, BD_E_YAML_TOO_LARGE, NULL) == 0) {
        int c = digests_canonical(out, buf, len, true);
        if (c == 0)
            return 0;
        free(buf);
        if (c < 0)
            return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    }
    return doc_read(DOC_DIGESTS, out, &src, NULL, err);
}

const bd_pin *bd_digests_find(const bd_digests *d, const char *case_id)
{
    if (!d || !case_id || d->n_pins == 0)
        return NULL;
    bd_pin key = {.case_id = (char *)case_id};
    return bsearch(&key, d->pins, d->n_pins, sizeof(*d->pins), pin_cmp);
}

/* ---- provenance.yaml ------------------------------------------------------------------ */

void bd_provfile_free(bd_provfile *p)
{
    if (!p)
        return;
    bd_signature_block *b[] = {&p->author, &p->reviewer};
    for (size_t i = 0; i < 2; i++) {
        free(b[i]->identity);
        free(b[i]->signed_at);
        free(b[i]->signature);
    }
    free(p->last_validated_at);
    free(p->path);
    free(p);
}

static int sig_block(const vctx *v, const bd_ynode *n, const char *what, bd_signature_block *b)
{
    static const char *const keys[] = {"identity", "fingerprint", "signed_at", "signature", NULL};
    memset(b, 0, sizeof(*b));
    if (!n || bd_ynode_is_null(n))
        return 0;
    char w[64];
    if (want_map(v, n, what) < 0 || check_keys(v, n, what, keys) < 0)
        return -1;
    b->line = n->line;
    const bd_ynode *x;
    snprintf(w, sizeof(w), "%s.identity", what);
    if (!(x = need(v, n, "identity", what)) || dup_str(v, x, w, false, &b->identity) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.fingerprint", what);
    if (!(x = need(v, n, "fingerprint", what)) || get_fpr(v, x, w, b->fingerprint) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.signed_at", what);
    if (!(x = need(v, n, "signed_at", what)) || get_timestamp(v, x, w, &b->signed_at) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.signature", what);
    if (!(x = need(v, n, "signature", what)) || dup_str(v, x, w, false, &b->signature) < 0)
        return -1;
    b->present = true;
    return 0;
}

static int provfile_from_doc(bd_provfile **out, const bd_ydoc *doc, bd_err *err)
{
    static const char *const keys[] = {"schema_version", "author", "reviewer", "last_validated_at",
                                       NULL};
    vctx v = {doc->name, BD_E_PROVENANCE_SCHEMA, err};
    int rc = -1;
    const bd_ynode *n, *root = doc->root;
    bd_provfile *p = calloc(1, sizeof(*p));
    *out = NULL;
    if (!p || !(p->path = strdup(doc->name))) {
        vnomem(&v);
        goto out;
    }
    if (check_root(&v, doc, 2) < 0 || check_keys(&v, root, "provenance.yaml", keys) < 0)
        goto out;
    p->schema_version = 2;
    if (sig_block(&v, bd_ynode_get(root, "author"), "author", &p->author) < 0 ||
        sig_block(&v, bd_ynode_get(root, "reviewer"), "reviewer", &p->reviewer) < 0)
        goto out;
    if ((n = bd_ynode_get(root, "last_validated_at")) && !bd_ynode_is_null(n) &&
        get_timestamp(&v, n, "last_validated_at", &p->last_validated_at) < 0)
        goto out;
    *out = p;
    p = NULL;
    rc = 0;
out:
    bd_provfile_free(p);
    return rc;
}

int bd_provfile_parse(bd_provfile **out, const char *buf, size_t len, const char *name, bd_err *err)
{
    doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return doc_read(DOC_PROVENANCE, out, &src, NULL, err);
}

int bd_provfile_load(bd_provfile **out, const char *path, bd_err *err)
{
    struct stat st;
    *out = NULL;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return bd_err_errno(err, BD_E_IO, errno, path, "cannot stat");
        /* No file: signed in neither role. */
        bd_provfile *p = calloc(1, sizeof(*p));
        if (!p || !(p->path = strdup(path))) {
            free(p);
            return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
        }
        p->schema_version = 2;
        *out = p;
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, path, 0, 0,
                          "is not a regular file (a link?); refused (never followed): make it "
                          "a regular file or remove it");
    doc_src src = {.from_file = true, .path = path};
    return doc_read(DOC_PROVENANCE, out, &src, NULL, err);
}

/* ---- trusted-signers.yaml ------------------------------------------------------------- */

void bd_signers_free(bd_signers *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->signers[i].identity);
    free(s->signers);
    free(s);
}

static int signer_entry(const vctx *v, const bd_ynode *it, size_t i, bd_signer *sg)
{
    static const char *const keys[] = {"fingerprint", "identity", "roles", NULL};
    char what[48], w[96];
    const bd_ynode *n;
    snprintf(what, sizeof(what), "signers[%zu]", i);
    if (want_map(v, it, what) < 0 || check_keys(v, it, what, keys) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.fingerprint", what);
    if (!(n = need(v, it, "fingerprint", what)) || get_fpr(v, n, w, sg->fingerprint) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.identity", what);
    if (!(n = need(v, it, "identity", what)) || dup_str(v, n, w, false, &sg->identity) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.roles", what);
    const bd_ynode *roles = need(v, it, "roles", what);
    if (!roles || want_seq(v, roles, w) < 0)
        return -1;
    if (roles->n == 0)
        return vfail(v, BD_OK, roles, "%s must list at least one of author, reviewer; add one", w);
    for (size_t j = 0; j < roles->n; j++) {
        int r;
        snprintf(w, sizeof(w), "%s.roles[%zu]", what, j);
        if (get_enum(v, roles->items[j], w, role_names, COUNT(role_names), &r) < 0)
            return -1;
        int bit = r == 0 ? BD_ROLE_AUTHOR : BD_ROLE_REVIEWER;
        if (sg->roles & bit)
            return vfail(v, BD_OK, roles->items[j],
                         "role '%s' is listed twice in %s.roles; "
                         "keep one",
                         role_names[r], what);
        sg->roles |= bit;
    }
    return 0;
}

static int signers_from_doc(bd_signers **out, const bd_ydoc *doc, bd_err *err)
{
    static const char *const keys[] = {"schema_version", "signers", NULL};
    vctx v = {doc->name, BD_E_SIGNERS_SCHEMA, err};
    int rc = -1;
    const bd_ynode *root = doc->root;
    const char **fprs = NULL;
    bd_signers *s = calloc(1, sizeof(*s));

    *out = NULL;
    if (!s) {
        vnomem(&v);
        goto out;
    }
    if (check_root(&v, doc, 1) < 0 || check_keys(&v, root, "trusted-signers.yaml", keys) < 0)
        goto out;
    s->schema_version = 1;
    const bd_ynode *list = need(&v, root, "signers", "trusted-signers.yaml");
    if (!list || want_seq(&v, list, "signers") < 0)
        goto out;
    if (list->n && (!(s->signers = calloc(list->n, sizeof(*s->signers))) ||
                    !(fprs = malloc(list->n * sizeof(*fprs))))) {
        vnomem(&v);
        goto out;
    }
    for (size_t i = 0; i < list->n; i++) {
        s->n = i + 1;
        if (signer_entry(&v, list->items[i], i, &s->signers[i]) < 0)
            goto out;
        fprs[i] = s->signers[i].fingerprint;
    }
    long dup;
    if (find_dup(fprs, s->n, &dup) < 0) {
        vnomem(&v);
        goto out;
    }
    if (dup >= 0) {
        vfail(&v, BD_OK, bd_ynode_get(list->items[dup], "fingerprint"),
              "fingerprint %s is listed twice; merge the entries into one with both roles",
              s->signers[dup].fingerprint);
        goto out;
    }
    *out = s;
    s = NULL;
    rc = 0;
out:
    free(fprs);
    bd_signers_free(s);
    return rc;
}

int bd_signers_parse(bd_signers **out, const char *buf, size_t len, const char *name, bd_err *err)
{
    doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return doc_read(DOC_SIGNERS, out, &src, NULL, err);
}

int bd_signers_load(bd_signers **out, const char *path, bd_err *err)
{
    doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    return doc_read(DOC_SIGNERS, out, &src, NULL, err);
}

const bd_signer *bd_signers_find(const bd_signers *s, const char *fingerprint)
{
    if (!s || !fingerprint || strlen(fingerprint) != BD_FPR_LEN)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (strcasecmp(s->signers[i].fingerprint, fingerprint) == 0)
            return &s->signers[i];
    return NULL;
}

/* ---- the bench on disk ---------------------------------------------------------------- */

/* A growable, sorted-later list of names. */
typedef struct namelist {
    char **v;
    size_t n, cap;
} namelist;

static int namelist_add(namelist *l, const char *s)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->v, ncap * sizeof(*nv));
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = ncap;
    }
    if (!(l->v[l->n] = strdup(s)))
        return -1;
    l->n++;
    return 0;
}

static void namelist_free(namelist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Sort the names and hand them over: *v and *n take the array, and `l` is left empty. */
static void namelist_take_sorted(namelist *l, char ***v, size_t *n)
{
    if (l->n)
        qsort(l->v, l->n, sizeof(*l->v), bd_str_ptr_cmp);
    *v = l->v;
    *n = l->n;
    memset(l, 0, sizeof(*l));
}

/* The next entry of `d` other than "." and "..": *name is its name, or NULL at the end.
 * Returns 0, or -1 with errno set when the directory cannot be read. */
static int next_entry(DIR *d, const char **name)
{
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            *name = NULL;
            return errno ? -1 : 0;
        }
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            *name = de->d_name;
            return 0;
        }
    }
}

static bool has_bench_dir(const char *dir)
{
    char *p = bd_path_join(dir, "bench");
    struct stat st;
    bool ok = p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
    free(p);
    return ok;
}

int bd_bench_find_root(char **out, const char *dir, bool explicit_dir, bd_err *err)
{
    int rc = -1;
    char *cur = NULL;

    *out = NULL;
    if (!dir || !(cur = realpath(dir, NULL))) {
        int e = errno;
        bd_err_set(err, BD_E_BENCH_NOT_FOUND, dir, 0, 0,
                   "cannot open this directory (%s); pass an existing bench root with -C",
                   dir ? strerror(e) : "no directory given");
        goto out;
    }
    if (explicit_dir) {
        if (!has_bench_dir(cur)) {
            bd_err_set(err, BD_E_BENCH_NOT_FOUND, cur, 0, 0,
                       "holds no bench/ directory; pass the root of a bench with -C");
            goto out;
        }
    } else {
        for (;;) {
            if (has_bench_dir(cur))
                break;
            if (strcmp(cur, "/") == 0) {
                bd_err_set(err, BD_E_BENCH_NOT_FOUND, dir, 0, 0,
                           "neither this directory nor any parent holds a bench/ directory; "
                           "cd into a bench or pass -C DIR");
                goto out;
            }
            char *slash = strrchr(cur, '/');
            if (slash == cur)
                cur[1] = '\0';
            else
                *slash = '\0';
        }
    }
    *out = cur;
    cur = NULL;
    rc = 0;
out:
    free(cur);
    return rc;
}

void bd_bench_free(bd_bench *b)
{
    if (!b)
        return;
    free(b->root);
    free(b->bench_dir);
    for (size_t i = 0; i < b->n_task_classes; i++)
        free(b->task_classes[i]);
    free(b->task_classes);
    free(b);
}

/* True when `dirfd`/`name`/registration.yaml exists (of any type; the loader judges it). */
static bool has_registration(int dirfd, const char *name, int flags)
{
    char *p = bd_path_join(name, "registration.yaml");
    struct stat st;
    bool ok = p && fstatat(dirfd, p, &st, flags) == 0;
    free(p);
    return ok;
}

int bd_bench_open(bd_bench **out, const char *root, bd_err *err)
{
    int rc = -1;
    DIR *d = NULL;
    namelist names = {0};
    bd_bench *b = calloc(1, sizeof(*b));

    *out = NULL;
    if (!b) {
        bd_err_set(err, BD_E_NOMEM, root, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    if (!root || !(b->root = realpath(root, NULL))) {
        bd_err_set(err, BD_E_BENCH_NOT_FOUND, root, 0, 0,
                   "cannot open the bench root (%s); pass an existing bench with -C",
                   root ? strerror(errno) : "none given");
        goto out;
    }
    if (!(b->bench_dir = bd_path_join(b->root, "bench"))) {
        bd_err_set(err, BD_E_NOMEM, root, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    d = opendir(b->bench_dir);
    if (!d) {
        bd_err_set(err, BD_E_BENCH_NOT_FOUND, b->bench_dir, 0, 0,
                   "cannot open the bench directory (%s); pass a bench root with -C",
                   strerror(errno));
        goto out;
    }
    int dfd = dirfd(d);
    for (;;) {
        const char *name;
        if (next_entry(d, &name) < 0) {
            bd_err_errno(err, BD_E_IO, errno, b->bench_dir, "cannot list");
            goto out;
        }
        if (!name)
            break;
        if (!strcmp(name, "keys"))
            continue;
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* vanished while listing */
        if (S_ISLNK(st.st_mode)) {
            if (has_registration(dfd, name, 0)) {
                char shown[72];
                bd_ydoc_clip(shown, sizeof(shown), name);
                bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, b->bench_dir, 0, 0,
                           "task class '%s' is a symbolic link; refused (never followed): "
                           "make it a real directory",
                           shown);
                goto out;
            }
            continue;
        }
        if (!S_ISDIR(st.st_mode) || !has_registration(dfd, name, AT_SYMLINK_NOFOLLOW))
            continue; /* not a task class: trusted-signers.yaml, README, .git, ... */
        if (!bd_name_valid(name)) {
            char shown[72];
            bd_ydoc_clip(shown, sizeof(shown), name);
            bd_err_set(err, BD_E_BAD_ID, b->bench_dir, 0, 0,
                       "task class directory '%s' is not a valid name "
                       "(^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); rename it",
                       shown);
            goto out;
        }
        if (namelist_add(&names, name) < 0) {
            bd_err_set(err, BD_E_NOMEM, root, 0, 0, "out of memory; free memory and retry");
            goto out;
        }
    }
    namelist_take_sorted(&names, &b->task_classes, &b->n_task_classes);
    *out = b;
    b = NULL;
    rc = 0;
out:
    if (d)
        closedir(d);
    namelist_free(&names);
    bd_bench_free(b);
    return rc;
}

void bd_task_class_free(bd_task_class *tc)
{
    if (!tc)
        return;
    free(tc->name);
    free(tc->dir);
    free(tc->cases_dir);
    free(tc->rubric_path);
    free(tc->prov_path);
    bd_provfile_free(tc->prov);
    bd_registration_free(tc->reg);
    bd_digests_free(tc->digests);
    for (size_t i = 0; i < tc->n_cases; i++)
        free(tc->case_ids[i]);
    free(tc->case_ids);
    free(tc);
}

int bd_list_case_dirs(char ***ids, size_t *n, const char *cases_dir, bd_err *err)
{
    int rc = -1;
    namelist names = {0};
    *ids = NULL;
    *n = 0;
    DIR *d = opendir(cases_dir);
    if (!d) {
        if (errno == ENOENT)
            return 0; /* a task class without cases yet */
        bd_err_errno(err, BD_E_IO, errno, cases_dir, "cannot list the cases");
        return -1;
    }
    int dfd = dirfd(d);
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                bd_err_errno(err, BD_E_IO, errno, cases_dir, "cannot list the cases");
                goto out;
            }
            break;
        }
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        /* The type from the directory record (no lstat per case: 100,000 of them); only
         * a file system that does not report it costs an fstatat. */
        mode_t mode = de->d_type == DT_DIR ? S_IFDIR : de->d_type == DT_REG ? S_IFREG : 0;
        if (!mode && de->d_type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue; /* vanished while listing */
            mode = st.st_mode;
        }
        if (S_ISREG(mode))
            continue; /* digests.yaml, a README: not cases */
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), name);
        if (!S_ISDIR(mode)) {
            bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, cases_dir, 0, 0,
                       "'%s' is a symbolic link or special file; refused (never followed): "
                       "replace it with a real case directory or remove it",
                       shown);
            goto out;
        }
        if (!bd_name_valid(name)) {
            bd_err_set(err, BD_E_BAD_ID, cases_dir, 0, 0,
                       "case directory '%s' is not a valid case id "
                       "(^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); rename it",
                       shown);
            goto out;
        }
        if (namelist_add(&names, name) < 0) {
            bd_err_set(err, BD_E_NOMEM, cases_dir, 0, 0, "out of memory; free memory and retry");
            goto out;
        }
    }
    namelist_take_sorted(&names, ids, n);
    rc = 0;
out:
    closedir(d);
    namelist_free(&names);
    return rc;
}

static int list_cases(bd_task_class *tc, bd_err *err)
{
    return bd_list_case_dirs(&tc->case_ids, &tc->n_cases, tc->cases_dir, err);
}

static int task_class_load(bd_task_class **out, const bd_bench *bench, const char *name, bool list,
                           bd_err *err);

int bd_task_class_load(bd_task_class **out, const bd_bench *bench, const char *name, bd_err *err)
{
    return task_class_load(out, bench, name, true, err);
}

int bd_task_class_load_unlisted(bd_task_class **out, const bd_bench *bench, const char *name,
                                bd_err *err)
{
    return task_class_load(out, bench, name, false, err);
}

static int task_class_load(bd_task_class **out, const bd_bench *bench, const char *name, bool list,
                           bd_err *err)
{
    int rc = -1;
    char *reg_path = NULL, *dig_path = NULL;
    bd_task_class *tc = NULL;
    struct stat st;
    char shown[72];

    *out = NULL;
    bd_ydoc_clip(shown, sizeof(shown), name);
    if (!bd_name_valid(name)) {
        bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                   "'%s' is not a valid task-class name (^[a-z0-9][a-z0-9._-]{0,127}$, no "
                   "'..'); check the name",
                   shown);
        goto out;
    }
    if (!(tc = calloc(1, sizeof(*tc))) || !(tc->name = strdup(name)) ||
        !(tc->dir = bd_path_join(bench->bench_dir, name)) ||
        !(tc->cases_dir = bd_path_join(tc->dir, "cases")) ||
        !(tc->rubric_path = bd_path_join(tc->dir, "rubric.py")) ||
        !(tc->prov_path = bd_path_join(tc->dir, "provenance.yaml")) ||
        !(reg_path = bd_path_join(tc->dir, "registration.yaml")) ||
        !(dig_path = bd_path_join(tc->cases_dir, "digests.yaml"))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    if (lstat(tc->dir, &st) == 0 && S_ISLNK(st.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, tc->dir, 0, 0,
                   "is a symbolic link; refused (never followed): make it a real directory");
        goto out;
    }
    if (lstat(tc->dir, &st) < 0 || !S_ISDIR(st.st_mode) || lstat(reg_path, &st) < 0) {
        char hint[192];
        bd_text_did_you_mean(hint, sizeof(hint), name, (const char *const *)bench->task_classes,
                             bench->n_task_classes);
        bd_err_set(err, BD_E_UNKNOWN_TASK_CLASS, bench->bench_dir, 0, 0,
                   "no task class '%s' here (no %s/registration.yaml);%s `benchdesk list` "
                   "shows the task classes",
                   name, name, hint);
        goto out;
    }
    if (bd_registration_load(&tc->reg, reg_path, name, err) < 0 ||
        bd_provfile_load(&tc->prov, tc->prov_path, err) < 0)
        goto out;
    if (lstat(dig_path, &st) == 0) {
        if (bd_digests_load(&tc->digests, dig_path, err) < 0)
            goto out;
    } else if (errno != ENOENT) {
        bd_err_errno(err, BD_E_IO, errno, dig_path, "cannot stat");
        goto out;
    }
    if (!list)
        tc->cases_unlisted = true;
    else if (list_cases(tc, err) < 0)
        goto out;
    *out = tc;
    tc = NULL;
    rc = 0;
out:
    free(reg_path);
    free(dig_path);
    bd_task_class_free(tc);
    return rc;
}

int bd_task_class_case(bd_case **out, const bd_task_class *tc, const char *case_id, bd_err *err)
{
    int rc = -1;
    char *dir = NULL, *path = NULL;
    char shown[72];

    *out = NULL;
    bd_ydoc_clip(shown, sizeof(shown), case_id);
    if (!bd_name_valid(case_id)) {
        bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                   "'%s' is not a valid case id (^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); "
                   "check the id",
                   shown);
        goto out;
    }
    char case_dir_check[4096];
    struct stat cst;
    int cn = snprintf(case_dir_check, sizeof(case_dir_check), "%s/%s", tc->cases_dir, case_id);
    bool exists = tc->cases_unlisted ? cn > 0 && (size_t)cn < sizeof(case_dir_check) &&
                                           lstat(case_dir_check, &cst) == 0 && !S_ISREG(cst.st_mode)
                                     : tc->n_cases && bsearch(&case_id, tc->case_ids, tc->n_cases,
                                                              sizeof(char *), bd_str_ptr_cmp);
    if (!exists) {
        char hint[192];
        char **ids = tc->case_ids;
        size_t n_ids = tc->n_cases;
        if (tc->cases_unlisted && bd_list_case_dirs(&ids, &n_ids, tc->cases_dir, NULL) != 0) {
            ids = NULL;
            n_ids = 0;
        }
        bd_text_did_you_mean(hint, sizeof(hint), case_id, (const char *const *)ids, n_ids);
        if (tc->cases_unlisted) {
            for (size_t i = 0; i < n_ids; i++)
                free(ids[i]);
            free(ids);
        }
        bd_err_set(err, BD_E_UNKNOWN_CASE, tc->cases_dir, 0, 0,
                   "no case '%s' in task class '%s';%s `benchdesk list %s` shows the cases",
                   case_id, tc->name, hint, tc->name);
        goto out;
    }
    if (!(dir = bd_path_join(tc->cases_dir, case_id)) || !(path = bd_path_join(dir, "case.yaml"))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    /* Listed as a real directory, but it may have been swapped since: look again. */
    struct stat st;
    if (lstat(dir, &st) < 0) {
        if (errno == ENOENT)
            bd_err_set(err, BD_E_UNKNOWN_CASE, tc->cases_dir, 0, 0,
                       "case '%s' is gone from task class '%s'; `benchdesk list %s` shows the "
                       "cases",
                       case_id, tc->name, tc->name);
        else
            bd_err_errno(err, BD_E_IO, errno, dir, "cannot stat");
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, dir, 0, 0,
                   "is not a real directory (a symbolic link?); refused (never followed)");
        goto out;
    }
    rc = bd_case_load(out, path, case_id, err);
out:
    free(dir);
    free(path);
    return rc;
}

int bd_task_class_case_prov(bd_provfile **out, const bd_task_class *tc, const char *case_id,
                            bd_err *err)
{
    *out = NULL;
    if (!bd_name_valid(case_id)) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), case_id ? case_id : "");
        return bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                          "'%s' is not a valid case id (^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); "
                          "check the id",
                          shown);
    }
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s/provenance.yaml", tc->cases_dir, case_id);
    if (n < 0 || (size_t)n >= sizeof(path))
        return bd_err_set(err, BD_E_IO, tc->cases_dir, 0, 0, "path too long");
    return bd_provfile_load(out, path, err);
}

int bd_case_leftover_check(const char *case_dir, bd_err *err)
{
    DIR *d = opendir(case_dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!bd_tmp_is_leftover(de->d_name))
            continue;
        char shown[160];
        bd_ydoc_clip(shown, sizeof(shown), de->d_name);
        bd_err_set(err, BD_E_LEFTOVER_TEMP, case_dir, 0, 0,
                   "'%s' is a temporary file left by an interrupted write (a crash or kill "
                   "during pin, sign or migrate); it is not part of the case and is not hashed: "
                   "check that case.yaml and provenance.yaml are whole, delete it, then run the "
                   "command again",
                   shown);
        found = 1;
        break;
    }
    closedir(d);
    return found;
}
