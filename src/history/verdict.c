/*
 * verdict.c — a verdict's formats: the words, score_id, the signed message, the file's path
 * and its strict parse (verdict.h, docs/formats.md#verdict-files). Checking and giving
 * verdicts is verdict_set.c's and verdict_give.c's.
 */
#include "verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/sha.h>

#include "canon.h"
#include "hash.h"
#include "path.h"
#include "text.h"

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory handling a verdict");
}

static const char *const kind_names[BD_VERDICT__COUNT] = {
#define BD_X(name, str) str,
    BD_VERDICT_KINDS(BD_X)
#undef BD_X
};

const char *bd_verdict_kind_str(bd_verdict_kind k)
{
    return (unsigned)k < BD_VERDICT__COUNT ? kind_names[k] : "?";
}

int bd_verdict_kind_parse(const char *s, bd_verdict_kind *out)
{
    for (int i = 0; s && i < BD_VERDICT__COUNT; i++)
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (bd_verdict_kind)i;
            return 0;
        }
    return -1;
}

bool bd_verdict_kind_removes(bd_verdict_kind k)
{
    return k == BD_VERDICT_RUBRIC_BUG || k == BD_VERDICT_CASE_BUG || k == BD_VERDICT_INFRA;
}

void bd_verdict_release(bd_verdict *v)
{
    if (!v)
        return;
    free(v->note);
    free(v->signature);
    memset(v, 0, sizeof(*v));
}

/* ---- score_id ------------------------------------------------------------------------ */

typedef struct cut {
    size_t a, b; /* [a, b) of the record's bytes */
} cut;

int bd_score_id(char out[BD_HASH_BUF], const char *rec, size_t len, bd_err *err)
{
    /* In canonical JSON every member is `"key":value`, keys sorted and unique: the bytes
     * without a member are the canonical JSON of the object without it. */
    static const char *const keys[3] = {"origin", "prev_hash", "seq"};
    const char *v[3];
    size_t vl[3];
    cut cuts[3];
    int nc = 0;
    out[0] = '\0';
    if (len < 2 || rec[0] != '{' || rec[len - 1] != '}')
        goto bad;
    bd_record_members(rec, len, keys, 3, v, vl);
    if (!v[1] || !v[2])
        goto bad;
    for (int i = 0; i < 3; i++) {
        if (!v[i])
            continue;
        size_t kl = strlen(keys[i]);
        if ((size_t)(v[i] - rec) < kl + 4)
            goto bad;
        const char *k = v[i] - kl - 3;
        if (k[0] != '"' || memcmp(k + 1, keys[i], kl) != 0 || k[kl + 1] != '"' || k[kl + 2] != ':')
            goto bad;
        size_t a = (size_t)(k - rec), b = (size_t)(v[i] + vl[i] - rec);
        if (rec[a - 1] == ',')
            a--;
        else if (b < len && rec[b] == ',')
            b++;
        cuts[nc++] = (cut){a, b};
    }
    uint8_t *buf = malloc(len);
    if (!buf)
        return nomem(err);
    size_t n = 0, at = 0;
    for (int i = 0; i < nc; i++) { /* the keys are in the record's (sorted) order */
        if (cuts[i].a > at) {
            memcpy(buf + n, rec + at, cuts[i].a - at);
            n += cuts[i].a - at;
        }
        if (cuts[i].b > at)
            at = cuts[i].b;
    }
    memcpy(buf + n, rec + at, len - at);
    n += len - at;
    uint8_t h[32];
    bd_blake3_raw(h, buf, n);
    free(buf);
    bd_hex(out, h, 32);
    return 0;
bad:
    return bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                      "not a canonical score record: no score_id can be taken of it");
}

bool bd_verdict_record_str(const char *rec, size_t len, const char *key, char *out, size_t cap)
{
    const char *const keys[1] = {key};
    const char *v;
    size_t vl;
    bd_record_members(rec, len, keys, 1, &v, &vl);
    if (!v || vl < 2 || v[0] != '"' || vl - 2 >= cap || memchr(v + 1, '\\', vl - 2))
        return false;
    memcpy(out, v + 1, vl - 2);
    out[vl - 2] = '\0';
    return true;
}

/* ---- the message and the path --------------------------------------------------------- */

static bool valid_at(const char *s)
{
    return s && strlen(s) == 20 && bd_history_time_valid(s);
}

static const char *field_problem(const bd_verdict *v)
{
    if (!bd_name_valid(v->task_class))
        return "a task class name";
    if (!bd_history_run_id_valid(v->run_id))
        return "a run id";
    if (!bd_name_valid(v->case_id))
        return "a case id";
    if (!bd_hex_lower_str(v->score_id, BD_HASH_HEX_LEN))
        return "a score_id of 64 lower-case hex";
    if ((unsigned)v->verdict >= BD_VERDICT__COUNT)
        return "a verdict word";
    if (!bd_fpr_valid(v->reviewer))
        return "a reviewer_fingerprint of 40 upper-case hex";
    if (!valid_at(v->at))
        return "an `at` of the form YYYY-MM-DDTHH:MM:SSZ";
    const char *note = v->note ? v->note : "";
    size_t nl = strlen(note);
    if (nl > BD_VERDICT_NOTE_MAX || !bd_utf8_valid(note, nl))
        return "a note of at most 1024 bytes of UTF-8";
    return NULL;
}

int bd_verdict_message(char **out, size_t *len, const bd_verdict *v, bd_err *err)
{
    *out = NULL;
    const char *bad = field_problem(v);
    if (bad)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "a verdict needs %s", bad);
    const char *note = v->note ? v->note : "";
    uint8_t d[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)note, strlen(note), d);
    char nh[65];
    bd_hex(nh, d, 32);
    size_t cap = 1024;
    char *m = malloc(cap);
    if (!m)
        return nomem(err);
    int n = snprintf(m, cap,
                     BD_VERDICT_MAGIC "\ntask_class:%s\nrun_id:%s\ncase_id:%s\nscore_id:%s\n"
                                      "verdict:%s\nnote_sha256:%s\nat:%s\n",
                     v->task_class, v->run_id, v->case_id, v->score_id,
                     bd_verdict_kind_str(v->verdict), nh, v->at);
    if (n < 0 || (size_t)n >= cap) {
        free(m);
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "verdict message too long");
    }
    *out = m;
    if (len)
        *len = (size_t)n;
    return 0;
}

char *bd_verdict_rel_path(const bd_verdict *v)
{
    char stamp[17] = ""; /* 2026-11-28T08:11:25Z -> 20261128T081125Z */
    size_t k = 0;
    for (const char *p = v->at; *p && k < sizeof(stamp) - 1; p++)
        if (*p != '-' && *p != ':')
            stamp[k++] = *p;
    stamp[k] = '\0';
    size_t n = strlen(BD_VERDICT_DIR) + strlen(v->task_class) + strlen(v->run_id) +
               strlen(v->case_id) + strlen(v->reviewer) + strlen(stamp) + 16;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s/%s/%s/%s-%s.json", BD_VERDICT_DIR, v->task_class, v->run_id,
                 v->case_id, v->reviewer, stamp);
    return p;
}

/* ---- the file -------------------------------------------------------------------------- */

static cJSON *verdict_json(const bd_verdict *v)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "at", v->at) ||
        !cJSON_AddStringToObject(o, "case_id", v->case_id) ||
        !cJSON_AddStringToObject(o, "note", v->note ? v->note : "") ||
        !cJSON_AddStringToObject(o, "reviewer_fingerprint", v->reviewer) ||
        !cJSON_AddStringToObject(o, "run_id", v->run_id) ||
        !cJSON_AddNumberToObject(o, "schema_version", 1) ||
        !cJSON_AddStringToObject(o, "score_id", v->score_id) ||
        !cJSON_AddStringToObject(o, "signature", v->signature ? v->signature : "") ||
        !cJSON_AddStringToObject(o, "task_class", v->task_class) ||
        !cJSON_AddStringToObject(o, "verdict", bd_verdict_kind_str(v->verdict))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int bd_verdict_serialize(char **out, size_t *len, const bd_verdict *v, bd_err *err)
{
    *out = NULL;
    cJSON *j = verdict_json(v);
    size_t jl = 0;
    char *canon = j ? bd_canon_json(j, &jl) : NULL;
    cJSON_Delete(j);
    char *b = canon ? malloc(jl + 2) : NULL;
    if (!b) {
        free(canon);
        return nomem(err);
    }
    memcpy(b, canon, jl);
    b[jl] = '\n';
    b[jl + 1] = '\0';
    free(canon);
    *out = b;
    *len = jl + 1;
    return 0;
}

enum {
    K_AT,
    K_CASE,
    K_NOTE,
    K_REVIEWER,
    K_RUN,
    K_SCHEMA,
    K_SCORE_ID,
    K_SIG,
    K_TC,
    K_VERDICT,
    K__N
};

static bool copy_str(char *dst, size_t cap, const cJSON *c)
{
    if (!cJSON_IsString(c) || strlen(c->valuestring) >= cap)
        return false;
    memcpy(dst, c->valuestring, strlen(c->valuestring) + 1);
    return true;
}

/* The members into *out; NULL or what is wrong. */
static const char *take_members(bd_verdict *out, const cJSON *root)
{
    static const char *const keys[K__N] = {
        "at",         "case_id",        "note",     "reviewer_fingerprint",
        "run_id",     "schema_version", "score_id", "signature",
        "task_class", "verdict"};
    const cJSON *v[K__N] = {0};
    for (const cJSON *c = root->child; c; c = c->next) {
        int k = -1;
        for (int i = 0; i < K__N; i++)
            if (c->string && strcmp(c->string, keys[i]) == 0)
                k = i;
        if (k < 0)
            return "has an unexpected member";
        if (v[k])
            return "has a duplicate member";
        v[k] = c;
    }
    for (int i = 0; i < K__N; i++)
        if (!v[i])
            return "lacks a member (at, case_id, note, reviewer_fingerprint, run_id, "
                   "schema_version, score_id, signature, task_class, verdict)";
    if (!cJSON_IsNumber(v[K_SCHEMA]) || v[K_SCHEMA]->valuedouble != 1)
        return "has a schema_version other than 1";
    if (!copy_str(out->at, sizeof(out->at), v[K_AT]) ||
        !copy_str(out->case_id, sizeof(out->case_id), v[K_CASE]) ||
        !copy_str(out->reviewer, sizeof(out->reviewer), v[K_REVIEWER]) ||
        !copy_str(out->run_id, sizeof(out->run_id), v[K_RUN]) ||
        !copy_str(out->score_id, sizeof(out->score_id), v[K_SCORE_ID]) ||
        !copy_str(out->task_class, sizeof(out->task_class), v[K_TC]) ||
        !cJSON_IsString(v[K_NOTE]) || !cJSON_IsString(v[K_SIG]) || !cJSON_IsString(v[K_VERDICT]))
        return "has a member of the wrong type or length";
    if (bd_verdict_kind_parse(v[K_VERDICT]->valuestring, &out->verdict) != 0)
        return "has a verdict that is not confirmed, rubric_bug, case_bug, flaky, infra or "
               "withdrawn";
    if (v[K_SIG]->valuestring[0] == '\0')
        return "has no signature";
    if (!(out->note = strdup(v[K_NOTE]->valuestring)) ||
        !(out->signature = strdup(v[K_SIG]->valuestring)))
        return "could not be read (out of memory)";
    return NULL;
}

int bd_verdict_parse(bd_verdict *out, const char *buf, size_t len, const char *rel_path,
                     bd_err *err)
{
    cJSON *root = NULL;
    char *canon = NULL, *want = NULL;
    const char *bad = NULL;
    memset(out, 0, sizeof(*out));
    if (len == 0 || buf[len - 1] != '\n') {
        bad = "does not end with a newline";
        goto out;
    }
    if (!bd_utf8_valid(buf, len)) {
        bad = "is not UTF-8";
        goto out;
    }
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(buf, len - 1, &end, 0);
    if (!root || (size_t)(end - buf) != len - 1 || !cJSON_IsObject(root)) {
        bad = "is not one JSON object";
        goto out;
    }
    if ((bad = take_members(out, root)) != NULL)
        goto out;
    if (field_problem(out)) {
        bad = "has a member out of format (names, run id, score_id, fingerprint, at, or a "
              "note over 1024 bytes)";
        goto out;
    }
    size_t clen;
    canon = bd_canon_json(root, &clen);
    if (!canon || clen != len - 1 || memcmp(canon, buf, clen) != 0) {
        bad = "is not in canonical form";
        goto out;
    }
    if (rel_path) {
        if (!(want = bd_verdict_rel_path(out))) {
            bad = "could not be named (out of memory)";
            goto out;
        }
        if (strcmp(want, rel_path) != 0)
            bad = "does not sit at the path its content names "
                  "(<task_class>/<run_id>/<case_id>/<reviewer>-<at>.json)";
    }
out:
    if (bad) {
        bd_err_set(err, BD_E_VERDICT_INVALID, rel_path, 0, 0,
                   "not a valid verdict: this verdict file %s; restore it from git or remove "
                   "it (`git checkout -- %s`)",
                   bad, rel_path ? rel_path : "the file");
        bd_verdict_release(out);
    }
    free(want);
    free(canon);
    cJSON_Delete(root);
    return bad ? -1 : 0;
}
