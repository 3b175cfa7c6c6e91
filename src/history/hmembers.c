/*
 * hmembers.c — members of canonical record bytes read without a parse (history.h:
 * bd_record_members, bd_record_score), for the views and the index, which read many
 * records already verified.
 */
#include <stdlib.h>
#include <string.h>

#include "history_internal.h"

bool bd_record_score(const char *rec, size_t len, bool *passed, double *score)
{
    /* Inside score the members are sorted: "passed" is followed by "score". */
    static const char t[] = "\"passed\":true,\"score\":", f[] = "\"passed\":false,\"score\":";
    const char *m = memmem(rec, len, t, sizeof(t) - 1);
    const char *v;
    if (m) {
        *passed = true;
        v = m + sizeof(t) - 1;
    } else if ((m = memmem(rec, len, f, sizeof(f) - 1)) != NULL) {
        *passed = false;
        v = m + sizeof(f) - 1;
    } else {
        return false;
    }
    char num[40];
    size_t i = 0;
    while (v + i < rec + len && i < sizeof(num) - 1 && strchr("0123456789.eE+-", v[i]))
        i++;
    memcpy(num, v, i);
    num[i] = '\0';
    /* cJSON reads numbers the way verify did, whatever the locale. */
    cJSON *j = i > 0 ? cJSON_ParseWithLength(num, i) : NULL;
    bool ok = cJSON_IsNumber(j);
    if (ok)
        *score = j->valuedouble;
    cJSON_Delete(j);
    return ok;
}

/* The end of the JSON string starting at p (its opening quote), or NULL. */
const char *hist_skip_string(const char *p, const char *end)
{
    /* memchr to each quote; it closes the string unless an odd run of backslashes
     * escapes it. */
    for (p++; p < end;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return NULL;
        size_t bs = 0;
        while (q - bs > p && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            return q + 1;
        p = q + 1;
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

size_t bd_record_members(const char *rec, size_t len, const char *const *keys, size_t n,
                         const char **vals, size_t *vlens)
{
    const char *p = rec, *end = rec + len;
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        vlens[i] = 0;
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
        for (size_t i = 0; i < n; i++) {
            if (!vals[i] && keys[i][0] == *k && strlen(keys[i]) == kl &&
                memcmp(keys[i], k, kl) == 0) {
                vals[i] = v;
                vlens[i] = (size_t)(ve - v);
                found++;
                break;
            }
        }
        if (found == n || ve >= end || *ve != ',')
            return found;
        p = ve + 1;
    }
    return found;
}
