#include "score_checks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "score_rules.h"

__attribute__((format(printf, 3, 4))) static int fail(char *why, size_t whylen, const char *fmt,
                                                      ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void bd_score_checks_free(bd_score_check *c, size_t n)
{
    if (!c)
        return;
    for (size_t i = 0; i < n; i++) {
        free(c[i].name);
        free(c[i].expected);
        free(c[i].actual);
    }
    free(c);
}

/* The canonical JSON of value `v` within BD_SR_CHECK_VALUE into *out (may be NULL: only
 * checked). Returns 0, -1 (reason set) or -2. */
static int read_value(char **out, const cJSON *v, int version, const char *where, size_t i,
                      const char *member, char *why, size_t whylen)
{
    size_t len = 0;
    char *text = bd_canon_json(v, &len);
    if (!text) /* the readers refuse NaN, duplicate keys and bad UTF-8 before this */
        return fail(why, whylen, "%s[%zu].%s is not canonical JSON (or out of memory)", where, i,
                    member);
    if (!bd_score_rule_ok(BD_SR_CHECK_VALUE, (double)len, version)) {
        free(text);
        return fail(why, whylen, "%s[%zu].%s is %zu bytes in canonical JSON, more than %.0f", where,
                    i, member, len, bd_score_rules[BD_SR_CHECK_VALUE].max);
    }
    if (out)
        *out = text;
    else
        free(text);
    return 0;
}

/* Entry `i`, `e`, into *c (may be NULL). Returns 0, -1 or -2. */
static int read_entry(bd_score_check *c, const cJSON *e, size_t i, int version, const char *where,
                      char *why, size_t whylen)
{
    if (!cJSON_IsObject(e))
        return fail(why, whylen, "%s[%zu] is not an object", where, i);
    const cJSON *m[BD_SCK__COUNT] = {0};
    for (const cJSON *k = e->child; k; k = k->next) {
        int f = k->string ? bd_score_check_member_lookup(k->string) : -1;
        if (f < 0 || m[f])
            return fail(why, whylen, "%s[%zu] has an unexpected or duplicate member", where, i);
        m[f] = k;
    }
    for (int f = 0; f < BD_SCK__COUNT; f++)
        if (!m[f])
            return fail(why, whylen, "%s[%zu] has no member '%s'", where, i,
                        bd_score_check_member_name((bd_score_check_member)f));
    const cJSON *name = m[BD_SCK_NAME];
    size_t nl = cJSON_IsString(name) ? strlen(name->valuestring) : 0;
    if (!cJSON_IsString(name) || !bd_score_rule_ok(BD_SR_CHECK_NAME, (double)nl, version) ||
        !bd_score_check_name_chars_ok(name->valuestring, nl))
        return fail(why, whylen, "%s[%zu].name is not 1 to %.0f characters of [a-z0-9_]", where, i,
                    bd_score_rules[BD_SR_CHECK_NAME].max);
    const char *word = bd_score_banned_word(name->valuestring, nl);
    if (word)
        return fail(why, whylen, "%s[%zu].name contains '%s'", where, i, word);
    if (!cJSON_IsBool(m[BD_SCK_PASSED]))
        return fail(why, whylen, "%s[%zu].passed is not a boolean", where, i);
    int rc = read_value(c ? &c->expected : NULL, m[BD_SCK_EXPECTED], version, where, i, "expected",
                        why, whylen);
    if (rc == 0)
        rc = read_value(c ? &c->actual : NULL, m[BD_SCK_ACTUAL], version, where, i, "actual", why,
                        whylen);
    if (rc != 0 || !c)
        return rc;
    c->passed = cJSON_IsTrue(m[BD_SCK_PASSED]);
    c->name = strdup(name->valuestring);
    return c->name ? 0 : -2;
}

int bd_score_checks_read(bd_score_check **out, size_t *n, const cJSON *arr, int version,
                         const char *where, char *why, size_t whylen)
{
    if (out)
        *out = NULL;
    *n = 0;
    if (!cJSON_IsArray(arr))
        return fail(why, whylen, "%s is not an array", where);
    size_t count = (size_t)cJSON_GetArraySize(arr);
    if (!bd_score_rule_ok(BD_SR_CHECK_COUNT, (double)count, version))
        return fail(why, whylen, "%s has %zu entries, more than %.0f", where, count,
                    bd_score_rules[BD_SR_CHECK_COUNT].max);
    if (count == 0)
        return version <= 1 ? fail(why, whylen, "%s in a version-1 record", where) : 0;
    bd_score_check *c = calloc(count, sizeof(*c));
    if (!c)
        return -2;
    int rc = 0;
    size_t i = 0;
    for (const cJSON *e = arr->child; e && rc == 0; e = e->next, i++)
        rc = read_entry(&c[i], e, i, version, where, why, whylen);
    /* names are unique: the reviewer's table reads one row per thing compared */
    for (size_t a = 0; rc == 0 && a < count; a++)
        for (size_t b = a + 1; rc == 0 && b < count; b++)
            if (strcmp(c[a].name, c[b].name) == 0)
                rc = fail(why, whylen, "%s[%zu].name '%.32s' repeats %s[%zu].name", where, b,
                          c[b].name, where, a);
    if (rc == 0 && version <= 1) /* checked last: a bad list reads the same in any version */
        rc = fail(why, whylen, "%s in a version-1 record", where);
    if (rc != 0) {
        bd_score_checks_free(c, count);
        return rc;
    }
    if (out)
        *out = c;
    else
        bd_score_checks_free(c, count);
    *n = count;
    return 0;
}

/* Add the JSON `text` to `obj` as `key`; false on out-of-memory (nothing leaks). */
static bool add_parsed(cJSON *obj, const char *key, const char *text)
{
    cJSON *v = cJSON_Parse(text ? text : "null");
    if (v && cJSON_AddItemToObject(obj, key, v))
        return true;
    cJSON_Delete(v);
    return false;
}

cJSON *bd_score_checks_to_json(const bd_score_check *c, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(arr, e)) {
            cJSON_Delete(e);
            goto fail;
        }
        if (!add_parsed(e, "actual", c[i].actual) || !add_parsed(e, "expected", c[i].expected) ||
            !cJSON_AddStringToObject(e, "name", c[i].name ? c[i].name : "") ||
            !cJSON_AddBoolToObject(e, "passed", c[i].passed))
            goto fail;
    }
    return arr;
fail:
    cJSON_Delete(arr);
    return NULL;
}

const bd_score_check *bd_score_checks_first_failed(const bd_score_check *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!c[i].passed)
            return &c[i];
    return NULL;
}
