/*
 * jsondiff.c — field-aligned structural diff of two JSON documents (jsondiff.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsondiff.h"
#include "strbuf.h"

typedef struct leaf {
    char *path, *value;
} leaf;

typedef struct leaves {
    leaf *v;
    size_t n, cap;
    bool oom;
} leaves;

static void push(leaves *l, char *path, char *value)
{
    if (l->oom || !path || !value) {
        free(path);
        free(value);
        l->oom = true;
        return;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 32;
        leaf *g = realloc(l->v, nc * sizeof(*g));
        if (!g) {
            free(path);
            free(value);
            l->oom = true;
            return;
        }
        l->v = g;
        l->cap = nc;
    }
    l->v[l->n].path = path;
    l->v[l->n].value = value;
    l->n++;
}

static char *join(const char *base, const char *key, long index)
{
    bd_strbuf b = BD_STRBUF_INIT;
    bd_strbuf_str(&b, base);
    char tmp[32];
    if (key) {
        if (base[0])
            bd_strbuf_str(&b, ".");
        bd_strbuf_str(&b, key);
    } else {
        snprintf(tmp, sizeof(tmp), "[%ld]", index);
        bd_strbuf_str(&b, tmp);
    }
    return bd_strbuf_take(&b);
}

/* Depth is bounded by cJSON's own nesting limit (CJSON_NESTING_LIMIT). */
static void flatten(leaves *l, const cJSON *j, const char *path)
{
    bool obj = cJSON_IsObject(j), arr = cJSON_IsArray(j);
    if ((obj || arr) && j->child) {
        long i = 0;
        for (const cJSON *c = j->child; c && !l->oom; c = c->next, i++) {
            char *p = join(path, obj ? (c->string ? c->string : "") : NULL, i);
            if (!p) {
                l->oom = true;
                return;
            }
            flatten(l, c, p);
            free(p);
        }
        return;
    }
    push(l, strdup(path), cJSON_PrintUnformatted(j));
}

static void side(leaves *l, const char *text, size_t len)
{
    if (!text)
        return;
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (j) {
        flatten(l, j, "");
        cJSON_Delete(j);
        return;
    }
    /* Not JSON: one string, shown as it is (JSON-quoted, like the other leaves). */
    char *s = strndup(text, len);
    cJSON *str = s ? cJSON_CreateString(s) : NULL;
    free(s);
    push(l, strdup(""), str ? cJSON_PrintUnformatted(str) : NULL);
    cJSON_Delete(str);
}

static void leaves_free(leaves *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].path);
        free(l->v[i].value);
    }
    free(l->v);
}

int bd_jd_diff(bd_jd *out, const char *expected, size_t elen, const char *actual, size_t alen)
{
    memset(out, 0, sizeof(*out));
    leaves e = {0}, a = {0};
    side(&e, expected, elen);
    side(&a, actual, alen);
    bool *used = a.n ? calloc(a.n, sizeof(bool)) : NULL;
    out->rows = calloc(e.n + a.n + 1, sizeof(bd_jd_row));
    if (e.oom || a.oom || (a.n && !used) || !out->rows)
        goto oom;
    for (size_t i = 0; i < e.n; i++) {
        bd_jd_row *r = &out->rows[out->n++];
        r->path = e.v[i].path;
        r->expected = e.v[i].value;
        e.v[i].path = e.v[i].value = NULL;
        r->status = BD_JD_ONLY_EXPECTED;
        for (size_t k = 0; k < a.n; k++) {
            if (used[k] || strcmp(a.v[k].path, r->path) != 0)
                continue;
            used[k] = true;
            r->actual = a.v[k].value;
            a.v[k].value = NULL;
            r->status = strcmp(r->expected, r->actual) == 0 ? BD_JD_SAME : BD_JD_CHANGED;
            break;
        }
    }
    for (size_t k = 0; k < a.n; k++) {
        if (used[k])
            continue;
        bd_jd_row *r = &out->rows[out->n++];
        r->path = a.v[k].path;
        r->actual = a.v[k].value;
        a.v[k].path = a.v[k].value = NULL;
        r->status = BD_JD_ONLY_ACTUAL;
    }
    for (size_t i = 0; i < out->n; i++)
        out->n_diff += out->rows[i].status != BD_JD_SAME;
    free(used);
    leaves_free(&e);
    leaves_free(&a);
    return 0;
oom:
    free(used);
    leaves_free(&e);
    leaves_free(&a);
    bd_jd_release(out);
    return -1;
}

void bd_jd_release(bd_jd *d)
{
    for (size_t i = 0; d->rows && i < d->n; i++) {
        free(d->rows[i].path);
        free(d->rows[i].expected);
        free(d->rows[i].actual);
    }
    free(d->rows);
    memset(d, 0, sizeof(*d));
}
