/*
 * hrecord.c — one history record (hrecord.h): the full check (cJSON, the schema, canonical
 * form; every verdict and reason), the fast check verify runs first (recscan.h,
 * hrecord_internal.h), the record hash that links the chain, and the validators of the
 * fields, with the run an audit record's detail names (docs/history.md).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "hrecord.h"
#include "hrecord_internal.h"

#include "history.h" /* bd_record_number */

#include "bench.h"
#include "canon.h"
#include "hash.h"
#include "recscan.h"
#include "text.h"

/* The longest detail an audit record holds. */
#define DETAIL_MAX 4096

static const char *const reason_strings[] = {
#define BD_X(name, str) str,
    BD_CHAIN_REASONS(BD_X)
#undef BD_X
};

const char *bd_chain_reason_str(bd_chain_reason r)
{
    if ((int)r < 0 || r >= BD_CHAIN__COUNT)
        return "unknown";
    return reason_strings[r];
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* hex digit -> value + 1, 0 for anything else (a table: verify unhexes a million). */
static uint8_t hex_table[256];
static pthread_once_t hex_once = PTHREAD_ONCE_INIT;

static void hex_table_fill(void)
{
    for (int c = 0; c < 256; c++)
        hex_table[c] = (uint8_t)(hexval((char)c) + 1);
}

int bd_hash_unhex(uint8_t out[32], const char *hex)
{
    if (!hex)
        return -1;
    pthread_once(&hex_once, hex_table_fill);
    const unsigned char *u = (const unsigned char *)hex;
    unsigned bad = 0;
    for (size_t i = 0; i < 32; i++) {
        unsigned hi = hex_table[u[2 * i]], lo = hex_table[u[2 * i + 1]];
        bad |= (hi == 0) | (lo == 0);
        if (bad)
            return -1; /* also stops at a NUL before the 64th digit */
        out[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
    }
    return hex[64] == '\0' ? 0 : -1;
}

/* SHA-256 through an implementation fetched once: the one-shot SHA256() looks it up on
 * every call, behind a lock, which showed in verify's profile. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* One digest context per thread, reused: EVP_Digest allocates and frees one per call,
 * which showed in verify's profile at a million records. */
static pthread_key_t sha256_key;
static bool sha256_key_ok;

static void sha256_ctx_free(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    sha256_key_ok = pthread_key_create(&sha256_key, sha256_ctx_free) == 0;
}

static void sha256(const uint8_t *msg, size_t len, uint8_t out[32])
{
    pthread_once(&sha256_once, sha256_fetch);
    EVP_MD_CTX *ctx = sha256_key_ok ? pthread_getspecific(sha256_key) : NULL;
    if (!ctx && sha256_key_ok && (ctx = EVP_MD_CTX_new()) != NULL &&
        pthread_setspecific(sha256_key, ctx) != 0) {
        EVP_MD_CTX_free(ctx);
        ctx = NULL;
    }
    if (ctx && sha256_md && EVP_DigestInit_ex2(ctx, sha256_md, NULL) &&
        EVP_DigestUpdate(ctx, msg, len) && EVP_DigestFinal_ex(ctx, out, NULL))
        return;
    if (!sha256_md || !EVP_Digest(msg, len, out, NULL, sha256_md, NULL))
        SHA256(msg, len, out);
}

void bd_history_record_hash(uint8_t out[32], const uint8_t prev[32], const void *buf, size_t len)
{
    uint8_t msg[CHAIN_TAG_LEN + 64];
    memcpy(msg, CHAIN_TAG, CHAIN_TAG_LEN); /* includes the NUL */
    memcpy(msg + CHAIN_TAG_LEN, prev, 32);
    bd_blake3_raw(msg + CHAIN_TAG_LEN + 32, buf, len);
    sha256(msg, sizeof(msg), out);
}

static bool valid_run_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != ':' && c != '-')))
            return false;
    }
    return true;
}

static bool valid_event(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
            return false;
    }
    return true;
}

/* 1..`max` printable ASCII characters, no spaces. */
static bool printable_token(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return false;
    return true;
}

static bool valid_host(const char *s)
{
    return printable_token(s, 255);
}

static bool valid_version(const char *s)
{
    return printable_token(s, 64);
}

static bool digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

/* "YYYY-MM-DDTHH:MM:SS[.1-9 digits]Z", a real calendar date. */
static bool valid_time(const char *s)
{
    int y, mo, d, hh, mi, ss;
    if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || s[10] != 'T' || !digits(s + 11, 2, &hh) ||
        s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &ss))
        return false;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || hh > 23 || mi > 59 || ss > 60)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap ? 1 : 0))
        return false;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        int n = 0;
        while (p[n] >= '0' && p[n] <= '9')
            n++;
        if (n < 1 || n > 9)
            return false;
        p += n;
    }
    return strcmp(p, "Z") == 0;
}

static bool integral_in_v(double v, double lo, double hi, double *out)
{
    if (!isfinite(v) || v != trunc(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool integral_in(const cJSON *c, double lo, double hi, double *out)
{
    return cJSON_IsNumber(c) && integral_in_v(c->valuedouble, lo, hi, out);
}

/* ---- parsing and validating one record --------------------------------------------- */

enum field {
    F_AT,
    F_CASE_DIGEST,
    F_CASE_ID,
    F_CASSETTE_DIGEST,
    F_DETAIL,
    F_EVENT,
    F_FINISHED_AT,
    F_HARNESS_VERSION,
    F_ISOLATION_CLASS,
    F_KIND,
    F_OPERATOR_FINGERPRINT,
    F_ORIGIN,
    F_PREV_HASH,
    F_PROVENANCE_VERIFIED,
    F_RUBRIC_DIGEST,
    F_RUN_CASES,
    F_RUN_ID,
    F_RUN_SCOPE,
    F_SCHEMA_VERSION,
    F_SCORE,
    F_SEQ,
    F_STARTED_AT,
    F_TASK_CLASS,
    F_TASK_CLASS_DIGEST,
    F__COUNT
};

static const char *const field_names[F__COUNT] = {
    "at",
    "case_digest",
    "case_id",
    "cassette_digest",
    "detail",
    "event",
    "finished_at",
    "harness_version",
    "isolation_class",
    "kind",
    "operator_fingerprint",
    "origin",
    "prev_hash",
    "provenance_verified",
    "rubric_digest",
    "run_cases",
    "run_id",
    "run_scope",
    "schema_version",
    "score",
    "seq",
    "started_at",
    "task_class",
    "task_class_digest",
};

#define BIT(f) (1u << (f))
#define COMMON_FIELDS                                                                              \
    (BIT(F_SCHEMA_VERSION) | BIT(F_SEQ) | BIT(F_TASK_CLASS) | BIT(F_HARNESS_VERSION) |             \
     BIT(F_OPERATOR_FINGERPRINT) | BIT(F_PREV_HASH))
#define SCORE_FIELDS_ANY                                                                           \
    (COMMON_FIELDS | BIT(F_RUN_ID) | BIT(F_CASE_ID) | BIT(F_CASE_DIGEST) |                         \
     BIT(F_CASSETTE_DIGEST) | BIT(F_ISOLATION_CLASS) | BIT(F_PROVENANCE_VERIFIED) |                \
     BIT(F_STARTED_AT) | BIT(F_FINISHED_AT) | BIT(F_SCORE))
/* Version 1 pinned the rubric alone; version 2 pins the task class (registration + rubric)
 * and says which run selection the record belongs to (docs/history.md). */
#define SCORE_FIELDS_V1 (SCORE_FIELDS_ANY | BIT(F_RUBRIC_DIGEST))
#define SCORE_FIELDS_V2                                                                            \
    (SCORE_FIELDS_ANY | BIT(F_TASK_CLASS_DIGEST) | BIT(F_RUN_SCOPE) | BIT(F_RUN_CASES))
/* Members a version-2 score record may carry or not (imported shard records,
 * docs/history.md#score-records). */
#define SCORE_OPTIONAL_V2 BIT(F_ORIGIN)
#define AUDIT_FIELDS      (COMMON_FIELDS | BIT(F_KIND) | BIT(F_EVENT) | BIT(F_DETAIL) | BIT(F_AT))

static int field_lookup(const char *k)
{
    /* field_names is sorted: binary search. */
    int lo = 0, hi = F__COUNT - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(k, field_names[mid]);
        if (c == 0)
            return mid;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return -1;
}

/* score.breakdown `c` by the rules of score_rules.h; fills s->breakdown when `s` is
 * non-NULL. True when valid; on false `*oom` tells out-of-memory apart from invalid. */
static bool check_breakdown(const cJSON *c, int version, bd_score *s, bool *oom, char *why)
{
    const bd_score_rule_def *R = bd_score_rules;
    if (!cJSON_IsObject(c)) {
        WHY("score.breakdown: not an object");
        return false;
    }
    size_t n = 0;
    for (const cJSON *b = c->child; b; b = b->next) {
        size_t kl = strlen(b->string);
        if (!bd_score_rule_ok(BD_SR_BREAKDOWN_KEY, (double)kl, version)) {
            WHY("score.breakdown: a key is empty or longer than %.0f bytes",
                R[BD_SR_BREAKDOWN_KEY].max);
            return false;
        }
        const char *word = bd_score_banned_word(b->string, kl);
        if (word) {
            WHY("score.breakdown: a key contains \"%s\"", word);
            return false;
        }
        if (!cJSON_IsNumber(b) ||
            !bd_score_rule_ok(BD_SR_BREAKDOWN_VALUE, b->valuedouble, version)) {
            WHY("score.breakdown.%.64s: not a number in [0,1]", b->string);
            return false;
        }
        n++;
    }
    if (!bd_score_rule_ok(BD_SR_BREAKDOWN_COUNT, (double)n, version)) {
        WHY("score.breakdown: %zu keys, more than %.0f", n, R[BD_SR_BREAKDOWN_COUNT].max);
        return false;
    }
    if (!s || n == 0)
        return true;
    s->breakdown = calloc(n, sizeof(*s->breakdown));
    if (!s->breakdown) {
        *oom = true;
        return false;
    }
    for (const cJSON *b = c->child; b; b = b->next) {
        s->breakdown[s->n_breakdown].key = strdup(b->string);
        if (!s->breakdown[s->n_breakdown].key) {
            *oom = true;
            return false;
        }
        s->breakdown[s->n_breakdown++].value = b->valuedouble;
    }
    return true;
}

/* Entry `i` of score.failure_modes, `fm`; appended to s->failure_modes (allocated by the
 * caller) when `s` is non-NULL. True when valid; on false `*oom` as check_breakdown. */
static bool check_failure_mode(const cJSON *fm, size_t i, int version, bd_score *s, bool *oom,
                               char *why)
{
    const bd_score_rule_def *R = bd_score_rules;
    const cJSON *m[BD_SFM__COUNT] = {0};
    if (!cJSON_IsObject(fm)) {
        WHY("score.failure_modes[%zu]: not an object", i);
        return false;
    }
    for (const cJSON *e = fm->child; e; e = e->next) {
        int k = bd_score_fm_member_lookup(e->string);
        if (k < 0 || m[k]) {
            WHY("score.failure_modes[%zu]: unexpected or duplicate member "
                "\"%.64s\"",
                i, e->string);
            return false;
        }
        m[k] = e;
    }
    const cJSON *code = m[BD_SFM_CODE], *sev = m[BD_SFM_SEVERITY];
    const cJSON *det = m[BD_SFM_DETAIL];
    bd_severity sv;
    if (!cJSON_IsString(code) ||
        !bd_score_rule_ok(BD_SR_FM_CODE, (double)strlen(code->valuestring), version)) {
        WHY("score.failure_modes[%zu].code: not a non-empty string of at most %.0f "
            "bytes",
            i, R[BD_SR_FM_CODE].max);
        return false;
    }
    if (!cJSON_IsString(sev) || bd_severity_parse(sev->valuestring, &sv) != 0) {
        WHY("score.failure_modes[%zu].severity: not block, warn or info", i);
        return false;
    }
    if (det && !cJSON_IsString(det)) {
        WHY("score.failure_modes[%zu].detail: not a string", i);
        return false;
    }
    if (det && !bd_score_rule_ok(BD_SR_FM_DETAIL, (double)strlen(det->valuestring), version)) {
        WHY("score.failure_modes[%zu].detail: longer than %.0f bytes", i, R[BD_SR_FM_DETAIL].max);
        return false;
    }
    if (!s)
        return true;
    bd_score_fm *d = &s->failure_modes[s->n_failure_modes++];
    d->severity = sv;
    d->code = strdup(code->valuestring);
    d->detail = det ? strdup(det->valuestring) : NULL;
    if (!d->code || (det && !d->detail)) {
        *oom = true;
        return false;
    }
    return true;
}

/* score.failure_modes `c`; fills s->failure_modes when `s` is non-NULL. True when valid;
 * on false `*oom` as check_breakdown. */
static bool check_failure_modes(const cJSON *c, int version, bd_score *s, bool *oom, char *why)
{
    const bd_score_rule_def *R = bd_score_rules;
    if (!cJSON_IsArray(c)) {
        WHY("score.failure_modes: not an array");
        return false;
    }
    size_t n = (size_t)cJSON_GetArraySize(c), i = 0;
    if (!bd_score_rule_ok(BD_SR_FM_COUNT, (double)n, version)) {
        WHY("score.failure_modes: %zu entries, more than %.0f", n, R[BD_SR_FM_COUNT].max);
        return false;
    }
    if (s && n > 0) {
        s->failure_modes = calloc(n, sizeof(*s->failure_modes));
        if (!s->failure_modes) {
            *oom = true;
            return false;
        }
    }
    for (const cJSON *fm = c->child; fm; fm = fm->next, i++)
        if (!check_failure_mode(fm, i, version, s, oom, why))
            return false;
    return true;
}

/* One member `c` of the score object, known to be member `f`, by the rules of
 * score_rules.h; fills its part of `s` when non-NULL. As check_score. */
static bool check_score_member(const cJSON *c, bd_score_member f, int version, bd_score *s,
                               bool *oom, char *why)
{
    const bd_score_rule_def *R = bd_score_rules;
    double v = c->valuedouble;
    switch (f) {
    case BD_SM_PASSED:
        if (!cJSON_IsBool(c)) {
            WHY("score.passed: not a boolean");
            return false;
        }
        if (s)
            s->passed = cJSON_IsTrue(c);
        return true;
    case BD_SM_SCORE:
        if (!cJSON_IsNumber(c) || !bd_score_rule_ok(BD_SR_SCORE, v, version)) {
            WHY("score.score: not a number in [0,1]");
            return false;
        }
        if (s)
            s->score = v;
        return true;
    case BD_SM_COST:
        if (!cJSON_IsNumber(c) || !isfinite(v) || v < R[BD_SR_COST].min) {
            WHY("score.cost_usd: not a finite number >= 0");
            return false;
        }
        if (!bd_score_rule_ok(BD_SR_COST, v, version)) {
            WHY("score.cost_usd: %.17g is over %.0e", v, R[BD_SR_COST].max);
            return false;
        }
        if (s)
            s->cost_usd = v;
        return true;
    case BD_SM_WALL:
        if (!cJSON_IsNumber(c) || !bd_score_rule_ok(BD_SR_WALL, v, version)) {
            WHY("score.wall_clock_ms: not an integer >= 0");
            return false;
        }
        if (s)
            s->wall_clock_ms = (int64_t)v;
        return true;
    case BD_SM_BREAKDOWN:
        return check_breakdown(c, version, s, oom, why);
    case BD_SM_FAILURE_MODES:
        return check_failure_modes(c, version, s, oom, why);
    case BD_SM_CHECKS: {
        size_t n;
        int rc = bd_score_checks_read(s ? &s->checks : NULL, s ? &s->n_checks : &n, c, version,
                                      "score.checks", why, why ? 256 : 0);
        if (rc == -2)
            *oom = true;
        return rc == 0;
    }
    default:
        return true;
    }
}

/* Validate the BenchScore object `o` of a record of schema `version` by the rules of
 * score_rules.h, the table score.c's parser applies too; fill `s` when non-NULL. Returns
 * true when valid. On false `*oom` tells out-of-memory apart from invalid. */
static bool check_score(const cJSON *o, int version, bd_score *s, bool *oom, char *why)
{
    if (!cJSON_IsObject(o)) {
        WHY("score: not an object");
        return false;
    }
    unsigned seen = 0;
    for (const cJSON *c = o->child; c; c = c->next) {
        int f = bd_score_member_lookup(c->string);
        if (f < 0) {
            WHY("score: unexpected member \"%.64s\"", c->string);
            return false;
        }
        if (seen & (1u << f)) {
            WHY("score: duplicate member \"%s\"", bd_score_member_name((bd_score_member)f));
            return false;
        }
        seen |= 1u << f;
        if (!check_score_member(c, (bd_score_member)f, version, s, oom, why))
            return false;
    }
    if ((seen | (1u << BD_SM_CHECKS)) != (1u << BD_SM__COUNT) - 1) {
        for (int i = 0; i < BD_SM__COUNT; i++)
            if (!(seen & (1u << i)) && !bd_score_member_optional((bd_score_member)i)) {
                WHY("score: member \"%s\" is missing", bd_score_member_name((bd_score_member)i));
                break;
            }
        return false;
    }
    return true;
}

/* The `origin` object of a record imported from a shard bundle (docs/scale.md):
 * exactly run_id, shard, shards, bundle_record_hash, host. Fills `o` when non-NULL. */
static bool check_origin(const cJSON *c, bd_history_origin *o, bool *oom, char *why)
{
    enum { O_HASH, O_HOST, O_RUN_ID, O_SHARD, O_SHARDS, O__COUNT };
    static const char *const names[O__COUNT] = {"bundle_record_hash", "host", "run_id", "shard",
                                                "shards"};
    const cJSON *m[O__COUNT] = {0};
    if (!cJSON_IsObject(c)) {
        WHY("origin: not an object");
        return false;
    }
    for (const cJSON *e = c->child; e; e = e->next) {
        int f = -1;
        for (int i = 0; i < O__COUNT; i++)
            if (strcmp(e->string, names[i]) == 0)
                f = i;
        if (f < 0 || m[f]) {
            WHY("origin: unexpected or duplicate member \"%.64s\"", e->string);
            return false;
        }
        m[f] = e;
    }
    for (int i = 0; i < O__COUNT; i++)
        if (!m[i]) {
            WHY("origin: member \"%s\" is missing", names[i]);
            return false;
        }
    double shard, shards;
    if (!integral_in(m[O_SHARDS], 1, BD_SHARDS_MAX, &shards) ||
        !integral_in(m[O_SHARD], 0, shards - 1, &shard)) {
        WHY("origin: shard/shards not integers with 0 <= shard < shards <= %d", BD_SHARDS_MAX);
        return false;
    }
    if (!cJSON_IsString(m[O_RUN_ID]) || !valid_run_id(m[O_RUN_ID]->valuestring)) {
        WHY("origin.run_id: not a run id");
        return false;
    }
    if (!cJSON_IsString(m[O_HASH]) || !bd_hex_lower_str(m[O_HASH]->valuestring, BD_HASH_HEX_LEN)) {
        WHY("origin.bundle_record_hash: not 64 lower-case hex digits");
        return false;
    }
    if (!cJSON_IsString(m[O_HOST]) || !valid_host(m[O_HOST]->valuestring)) {
        WHY("origin.host: not 1..255 printable ASCII characters without spaces");
        return false;
    }
    if (!o)
        return true;
    o->present = true;
    o->shard = (uint32_t)shard;
    o->shards = (uint32_t)shards;
    memcpy(o->bundle_record_hash, m[O_HASH]->valuestring, BD_HASH_BUF);
    o->run_id = strdup(m[O_RUN_ID]->valuestring);
    o->host = strdup(m[O_HOST]->valuestring);
    if (!o->run_id || !o->host) {
        *oom = true;
        return false;
    }
    return true;
}

/* Whether string field `f` may be null. */
static bool nullable_field(int f, bool is_audit)
{
    return f == F_CASSETTE_DIGEST || f == F_OPERATOR_FINGERPRINT || (f == F_TASK_CLASS && is_audit);
}

/* Validate the string `s` of field `f` by format. Returns NULL when fine, else the reason. */
static const char *check_string_value(int f, const char *s)
{
    switch (f) {
    case F_RUN_ID:
        return valid_run_id(s) ? NULL : "is not a run id ([A-Za-z0-9][A-Za-z0-9._:-]{0,127})";
    case F_TASK_CLASS:
    case F_CASE_ID:
        return bd_name_valid(s) ? NULL : "is not a valid name ([a-z0-9][a-z0-9._-]{0,127})";
    case F_CASE_DIGEST:
    case F_RUBRIC_DIGEST:
    case F_TASK_CLASS_DIGEST:
    case F_CASSETTE_DIGEST:
        return bd_digest_str_valid(s) ? NULL : "is not \"blake3:\" + 64 lower-case hex";
    case F_HARNESS_VERSION:
        return valid_version(s) ? NULL : "is not 1..64 printable characters";
    case F_ISOLATION_CLASS:
        return strcmp(s, "namespaces") == 0 || strcmp(s, "subprocess") == 0
                   ? NULL
                   : "is not \"namespaces\" or \"subprocess\"";
    case F_OPERATOR_FINGERPRINT:
        return bd_fpr_valid(s) ? NULL : "is not 40 upper-case hex digits";
    case F_STARTED_AT:
    case F_FINISHED_AT:
    case F_AT:
        return valid_time(s) ? NULL : "is not a UTC time YYYY-MM-DDTHH:MM:SS[.f]Z";
    case F_PREV_HASH:
        return bd_hex_lower_str(s, BD_HASH_HEX_LEN) ? NULL : "is not 64 lower-case hex digits";
    case F_EVENT:
        return valid_event(s) ? NULL : "is not an event name ([a-z0-9][a-z0-9._-]{0,127})";
    case F_DETAIL:
        return strlen(s) <= DETAIL_MAX ? NULL : "is longer than 4096 bytes";
    case F_KIND:
        return strcmp(s, "audit") == 0 ? NULL : "is not \"audit\"";
    case F_RUN_SCOPE:
        return strcmp(s, "full") == 0 || strcmp(s, "subset") == 0 ? NULL
                                                                  : "is not \"full\" or \"subset\"";
    default:
        return "is not expected";
    }
}

/* Validate string-or-null fields by format. Returns NULL when fine, else the reason. */
static const char *check_string_field(int f, const cJSON *c, bool is_audit)
{
    if (cJSON_IsNull(c))
        return nullable_field(f, is_audit) ? NULL : "is null";
    if (!cJSON_IsString(c))
        return "is not a string";
    return check_string_value(f, c->valuestring);
}

static bool fill_string(char **dst, const cJSON *c, bool *oom)
{
    if (!cJSON_IsString(c))
        return true; /* null stays NULL */
    *dst = strdup(c->valuestring);
    if (!*dst)
        *oom = true;
    return *dst != NULL;
}

/* Where the string (or null) field `f` of a record goes in *out; NULL for a field that is
 * not a string of the record (kind, prev_hash and the numbers, objects and booleans). */
static char **string_dst(bd_history_record *out, int f)
{
    switch (f) {
    case F_HARNESS_VERSION:
        return &out->harness_version;
    case F_OPERATOR_FINGERPRINT:
        return &out->operator_fingerprint;
    case F_TASK_CLASS:
        return &out->task_class;
    case F_RUN_ID:
        return &out->run_id;
    case F_CASE_ID:
        return &out->case_id;
    case F_CASE_DIGEST:
        return &out->case_digest;
    case F_RUBRIC_DIGEST:
        return &out->rubric_digest;
    case F_TASK_CLASS_DIGEST:
        return &out->task_class_digest;
    case F_RUN_SCOPE:
        return &out->run_scope;
    case F_CASSETTE_DIGEST:
        return &out->cassette_digest;
    case F_ISOLATION_CLASS:
        return &out->isolation_class;
    case F_STARTED_AT:
        return &out->started_at;
    case F_FINISHED_AT:
        return &out->finished_at;
    case F_EVENT:
        return &out->event;
    case F_DETAIL:
        return &out->detail;
    case F_AT:
        return &out->at;
    default:
        return NULL;
    }
}

/* The members of a checked record (`by_field`, core) into *out. False: out of memory. */
static bool fill_record(bd_history_record *out, const cJSON *const *by_field, const rec_core *core,
                        int version, bool is_audit, bool *oom)
{
    out->seq = core->seq;
    out->schema_version = version;
    out->is_audit = is_audit;
    memcpy(out->prev_hash, by_field[F_PREV_HASH]->valuestring, BD_HASH_BUF);
    if (!is_audit)
        out->provenance_verified = cJSON_IsTrue(by_field[F_PROVENANCE_VERIFIED]);
    for (int f = 0; f < F__COUNT; f++) {
        char **dst = string_dst(out, f);
        if (dst && by_field[f] && !fill_string(dst, by_field[f], oom))
            return false;
    }
    return true;
}

/* Schema of the parsed object `root`. Fills core always, `out` when non-NULL. */
static bd_chain_reason check_schema(const cJSON *root, rec_core *core, bd_history_record *out,
                                    bool *oom, char *why)
{
    const cJSON *by_field[F__COUNT] = {0};
    unsigned seen = 0;
    for (const cJSON *c = root->child; c; c = c->next) {
        int f = field_lookup(c->string);
        if (f < 0) {
            WHY("unexpected member \"%.64s\"", c->string);
            return BD_CHAIN_SCHEMA_INVALID;
        }
        if (seen & BIT(f)) {
            WHY("duplicate member \"%s\"", field_names[f]);
            return BD_CHAIN_SCHEMA_INVALID;
        }
        seen |= BIT(f);
        by_field[f] = c;
    }
    bool is_audit = (seen & BIT(F_KIND)) != 0;
    double v;
    /* The version decides the member set, so it is read first. */
    if (!(seen & BIT(F_SCHEMA_VERSION)) ||
        !integral_in(by_field[F_SCHEMA_VERSION], 1, BD_HISTORY_SCHEMA_VERSION, &v)) {
        WHY("schema_version: not 1 or %d", BD_HISTORY_SCHEMA_VERSION);
        return BD_CHAIN_SCHEMA_INVALID;
    }
    int version = (int)v;
    unsigned want = is_audit ? AUDIT_FIELDS : version == 1 ? SCORE_FIELDS_V1 : SCORE_FIELDS_V2;
    unsigned optional = !is_audit && version >= 2 ? SCORE_OPTIONAL_V2 : 0;
    if (seen & ~(want | optional)) {
        for (int f = 0; f < F__COUNT; f++)
            if (seen & ~(want | optional) & BIT(f)) {
                WHY("member \"%s\" does not belong in a%s version-%d record", field_names[f],
                    is_audit ? "n audit" : " score", version);
                break;
            }
        return BD_CHAIN_SCHEMA_INVALID;
    }
    if (want & ~seen) {
        for (int f = 0; f < F__COUNT; f++)
            if (want & ~seen & BIT(f)) {
                WHY("member \"%s\" is missing", field_names[f]);
                break;
            }
        return BD_CHAIN_SCHEMA_INVALID;
    }
    want |= seen & optional;
    if (!integral_in(by_field[F_SEQ], 1, (double)BD_HISTORY_SEQ_MAX, &v)) {
        WHY("seq: not an integer in 1..9999999999");
        return BD_CHAIN_SCHEMA_INVALID;
    }
    core->seq = (uint64_t)v;
    core->is_audit = is_audit;
    for (int f = 0; f < F__COUNT; f++) {
        if (!(want & BIT(f)) || f == F_SCHEMA_VERSION || f == F_SEQ)
            continue;
        const cJSON *c = by_field[f];
        if (f == F_PROVENANCE_VERIFIED) {
            if (!cJSON_IsBool(c)) {
                WHY("provenance_verified: not a boolean");
                return BD_CHAIN_SCHEMA_INVALID;
            }
            continue;
        }
        if (f == F_RUN_CASES) {
            if (!integral_in(c, 1, (double)BD_HISTORY_SEQ_MAX, &v)) {
                WHY("run_cases: not an integer in 1..9999999999");
                return BD_CHAIN_SCHEMA_INVALID;
            }
            if (out)
                out->run_cases = (uint64_t)v;
            continue;
        }
        if (f == F_ORIGIN) {
            if (!check_origin(c, out ? &out->origin : NULL, oom, why))
                return *oom ? BD_CHAIN_UNPARSEABLE : BD_CHAIN_SCHEMA_INVALID;
            continue;
        }
        if (f == F_SCORE) {
            if (!check_score(c, version, out ? &out->score : NULL, oom, why))
                return *oom ? BD_CHAIN_UNPARSEABLE : BD_CHAIN_SCHEMA_INVALID;
            continue;
        }
        const char *bad = check_string_field(f, c, is_audit);
        if (bad) {
            WHY("%s %s", field_names[f], bad);
            return BD_CHAIN_SCHEMA_INVALID;
        }
    }
    bd_hash_unhex(core->prev, by_field[F_PREV_HASH]->valuestring);
    if (out && !fill_record(out, by_field, core, version, is_audit, oom))
        return BD_CHAIN_UNPARSEABLE;
    return BD_CHAIN_OK;
}

/* True when every byte is 0x01..0x7f: then the UTF-8 check has nothing to do. Records
 * are mostly ASCII, and verify reads 100k of them. */
static bool ascii_no_nul(const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    unsigned char any_high = 0, all_nonzero = 1;
    for (size_t i = 0; i < len; i++) {
        any_high |= p[i];
        all_nonzero &= p[i] != 0;
    }
    return !(any_high & 0x80) && all_nonzero;
}

/* ---- the fast check (hrecord_internal.h, recscan.h) ---------------------------------- */

/* A string of a record the fast check decodes at once: the longest any rule allows
 * (detail); a longer one is left to the full check. */
#define FAST_STR_CAP (DETAIL_MAX + 1)

/* A number, as bd_rs_number; when `exact`, its value read again the way the full check's
 * parser reads it (bd_record_number: strtod in the C locale), for a record being filled. */
static bool fast_number(bd_rscan *s, double *v, bool exact)
{
    const char *from = s->p;
    return bd_rs_number(s, v) && (!exact || bd_record_number(from, (size_t)(s->p - from), v));
}

/* A copy of the decoded string `tmp`; false when out of memory (*oom). */
static bool fast_dup(char **dst, const char *tmp, bool *oom)
{
    *dst = strdup(tmp);
    if (!*dst)
        *oom = true;
    return *dst != NULL;
}

/* Room for entry `n` of an array the fast fill grows (*cap entries of `size`). */
static bool fast_room(void **arr, size_t n, size_t *cap, size_t size, bool *oom)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 4;
    void *p = realloc(*arr, nc * size);
    if (!p) {
        *oom = true;
        return false;
    }
    memset((char *)p + *cap * size, 0, (nc - *cap) * size);
    *arr = p;
    *cap = nc;
    return true;
}

/* The `score` object, members in canonical order, by check_score's rules; filled into
 * `fill` when non-NULL (as check_score fills it: false with *oom when out of memory). */
static bool fast_score(bd_rscan *s, int version, char *tmp, bd_score *fill, bool *oom)
{
    const bd_score_rule_def *R = bd_score_rules;
    double v;
    size_t n, count = 0, cap = 0;
    bool b, exact = fill != NULL;
    if (!bd_rs_lit(s, "{\"breakdown\":{", 14))
        return false;
    if (!bd_rs_byte(s, '}')) {
        /* keys decoded in turn into two buffers, each compared with the one before (canon.c
         * sorts by strcmp of the decoded bytes; a key longer than these fails its rule) */
        char keys[2][BD_SCORE_MAX_NAME + 2];
        int cur = 0;
        for (;;) {
            char *key = keys[cur];
            if (!bd_rs_string(s, key, sizeof(keys[0]), &n))
                return false;
            if (count > 0 && strcmp(keys[!cur], key) >= 0)
                return false; /* out of order or repeated */
            cur = !cur;
            if (!bd_score_rule_ok(BD_SR_BREAKDOWN_KEY, (double)n, version) ||
                bd_score_banned_word(key, n) || !bd_rs_byte(s, ':') || !fast_number(s, &v, exact) ||
                !bd_score_rule_ok(BD_SR_BREAKDOWN_VALUE, v, version))
                return false;
            if (fill) {
                if (!fast_room((void **)&fill->breakdown, count, &cap, sizeof(*fill->breakdown),
                               oom) ||
                    !fast_dup(&fill->breakdown[count].key, key, oom))
                    return false;
                fill->breakdown[count].value = v;
                fill->n_breakdown = count + 1;
            }
            count++;
            if (bd_rs_byte(s, '}'))
                break;
            if (!bd_rs_byte(s, ','))
                return false;
        }
    }
    if (!bd_score_rule_ok(BD_SR_BREAKDOWN_COUNT, (double)count, version))
        return false;
    if (!bd_rs_lit(s, ",\"cost_usd\":", 12) || !fast_number(s, &v, exact) || !isfinite(v) ||
        v < R[BD_SR_COST].min || !bd_score_rule_ok(BD_SR_COST, v, version))
        return false;
    if (fill)
        fill->cost_usd = v;
    if (!bd_rs_lit(s, ",\"failure_modes\":[", 18))
        return false;
    count = cap = 0;
    if (!bd_rs_byte(s, ']')) {
        for (;;) {
            bd_severity sv;
            bd_score_fm *fm = NULL;
            if (fill) {
                if (!fast_room((void **)&fill->failure_modes, count, &cap,
                               sizeof(*fill->failure_modes), oom))
                    return false;
                fm = &fill->failure_modes[count];
                fill->n_failure_modes = count + 1;
            }
            if (!bd_rs_lit(s, "{\"code\":", 8) || !bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
                !bd_score_rule_ok(BD_SR_FM_CODE, (double)n, version) ||
                (fm && !fast_dup(&fm->code, tmp, oom)))
                return false;
            if (bd_rs_lit(s, ",\"detail\":", 10) &&
                (!bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
                 !bd_score_rule_ok(BD_SR_FM_DETAIL, (double)n, version) ||
                 (fm && !fast_dup(&fm->detail, tmp, oom))))
                return false;
            if (!bd_rs_lit(s, ",\"severity\":", 12) || !bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
                bd_severity_parse(tmp, &sv) != 0 || !bd_rs_byte(s, '}'))
                return false;
            if (fm)
                fm->severity = sv;
            count++;
            if (bd_rs_byte(s, ']'))
                break;
            if (!bd_rs_byte(s, ','))
                return false;
        }
    }
    if (!bd_score_rule_ok(BD_SR_FM_COUNT, (double)count, version))
        return false;
    if (!bd_rs_lit(s, ",\"passed\":", 10) || !bd_rs_bool(s, &b))
        return false;
    if (fill)
        fill->passed = b;
    if (!bd_rs_lit(s, ",\"score\":", 9) || !fast_number(s, &v, exact) ||
        !bd_score_rule_ok(BD_SR_SCORE, v, version))
        return false;
    if (fill)
        fill->score = v;
    if (!bd_rs_lit(s, ",\"wall_clock_ms\":", 17) || !fast_number(s, &v, exact) ||
        !bd_score_rule_ok(BD_SR_WALL, v, version) || !bd_rs_byte(s, '}'))
        return false;
    if (fill)
        fill->wall_clock_ms = (int64_t)v;
    return true;
}

/* The `origin` object, members in canonical order, by check_origin's rules; filled into
 * `fill` when non-NULL (false with *oom when out of memory). */
static bool fast_origin(bd_rscan *s, char *tmp, bd_history_origin *fill, bool *oom)
{
    size_t n;
    double shard, shards;
    bool exact = fill != NULL;
    if (!bd_rs_lit(s, "{\"bundle_record_hash\":", 22) || !bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
        !bd_hex_lower_str(tmp, BD_HASH_HEX_LEN))
        return false;
    if (fill)
        memcpy(fill->bundle_record_hash, tmp, BD_HASH_BUF);
    if (!bd_rs_lit(s, ",\"host\":", 8) || !bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
        !valid_host(tmp) || (fill && !fast_dup(&fill->host, tmp, oom)))
        return false;
    if (!bd_rs_lit(s, ",\"run_id\":", 10) || !bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
        !valid_run_id(tmp) || (fill && !fast_dup(&fill->run_id, tmp, oom)))
        return false;
    if (!bd_rs_lit(s, ",\"shard\":", 9) || !fast_number(s, &shard, exact) ||
        !bd_rs_lit(s, ",\"shards\":", 10) || !fast_number(s, &shards, exact) ||
        !bd_rs_byte(s, '}') || !integral_in_v(shards, 1, BD_SHARDS_MAX, &shards) ||
        !integral_in_v(shard, 0, shards - 1, &shard))
        return false;
    if (fill) {
        fill->present = true;
        fill->shard = (uint32_t)shard;
        fill->shards = (uint32_t)shards;
    }
    return true;
}

/* The next top-level key, `"name":`, for a field after `*last` (field_names is sorted, so
 * keys in canonical order are fields in increasing order). */
static bool fast_key(bd_rscan *s, int *last)
{
    if (!bd_rs_byte(s, '"'))
        return false;
    /* strlen of field_names (a wrong entry would only make the fast check decline). */
    static const unsigned char field_len[F__COUNT] = {2, 11, 7,  15, 6, 5, 11, 15, 15, 4,  20, 6,
                                                      9, 19, 13, 9,  6, 9, 14, 5,  3,  10, 10, 17};
    size_t left = (size_t)(s->end - s->p);
    for (int f = *last + 1; f < F__COUNT; f++) {
        size_t n = field_len[f];
        if (n < left && s->p[n] == '"' && memcmp(s->p, field_names[f], n) == 0) {
            *last = f;
            s->p += n + 1;
            return bd_rs_byte(s, ':');
        }
    }
    return false;
}

/* One pass over the bytes: canonical form (recscan.h) and check_schema's rules at once.
 * Accepts exactly what hist_parse_full accepts, or less. With `out`, fills it as
 * check_schema would (a record with `checks` in its score is declined: the full check
 * reads those); on false *out is released and zeroed, and *oom says whether memory ran
 * out. */
static bool fast_scan(const char *buf, size_t len, bd_rec_core *core, bd_history_record *out,
                      bool *oom)
{
    if (out)
        memset(out, 0, sizeof(*out));
    if (!buf || len == 0 || len > BD_HISTORY_RECORD_MAX)
        return false;
    bd_rscan s = {buf, buf + len};
    char tmp[FAST_STR_CAP];
    uint8_t prev[32];
    unsigned seen = 0;
    int last = -1, version = 0;
    double v, seq = 0;
    bool b;
    if (!bd_rs_byte(&s, '{'))
        return false;
    for (;;) {
        if (!fast_key(&s, &last))
            goto declined;
        int f = last;
        bool ok;
        switch (f) {
        case F_SCHEMA_VERSION:
            ok = fast_number(&s, &v, out) && integral_in_v(v, 1, BD_HISTORY_SCHEMA_VERSION, &v);
            if (ok)
                version = (int)v;
            break;
        case F_SEQ:
            ok = fast_number(&s, &v, out) && integral_in_v(v, 1, (double)BD_HISTORY_SEQ_MAX, &seq);
            break;
        case F_RUN_CASES:
            ok = fast_number(&s, &v, out) && integral_in_v(v, 1, (double)BD_HISTORY_SEQ_MAX, &v);
            if (ok && out)
                out->run_cases = (uint64_t)v;
            break;
        case F_PROVENANCE_VERIFIED:
            ok = bd_rs_bool(&s, &b);
            if (ok && out)
                out->provenance_verified = b;
            break;
        case F_ORIGIN:
            ok = fast_origin(&s, tmp, out ? &out->origin : NULL, oom);
            break;
        case F_SCORE:
            /* schema_version sorts before score: the version is known here or missing */
            ok = version != 0 && fast_score(&s, version, tmp, out ? &out->score : NULL, oom);
            break;
        default: {
            size_t n;
            /* kind sorts before task_class, the one field whose null depends on it */
            if (bd_rs_lit(&s, "null", 4)) {
                ok = nullable_field(f, (seen & BIT(F_KIND)) != 0);
                break;
            }
            ok = bd_rs_string(&s, tmp, FAST_STR_CAP, &n) && check_string_value(f, tmp) == NULL;
            if (ok && f == F_PREV_HASH) {
                bd_hash_unhex(prev, tmp);
                if (out)
                    memcpy(out->prev_hash, tmp, BD_HASH_BUF);
            }
            char **dst = out ? string_dst(out, f) : NULL;
            if (ok && dst)
                ok = fast_dup(dst, tmp, oom);
            break;
        }
        }
        if (!ok)
            goto declined;
        seen |= BIT(f);
        if (bd_rs_byte(&s, '}'))
            break;
        if (!bd_rs_byte(&s, ','))
            goto declined;
    }
    if (s.p != s.end || !(seen & BIT(F_SCHEMA_VERSION)))
        goto declined;
    bool is_audit = (seen & BIT(F_KIND)) != 0;
    unsigned want = is_audit ? AUDIT_FIELDS : version == 1 ? SCORE_FIELDS_V1 : SCORE_FIELDS_V2;
    unsigned optional = !is_audit && version >= 2 ? SCORE_OPTIONAL_V2 : 0;
    if ((seen & ~(want | optional)) || (want & ~seen))
        goto declined;
    core->seq = (uint64_t)seq;
    core->is_audit = is_audit;
    memcpy(core->prev, prev, 32);
    if (out) {
        out->seq = core->seq;
        out->schema_version = version;
        out->is_audit = is_audit;
    }
    return true;
declined:
    if (out)
        bd_history_record_release(out);
    return false;
}

bool bd_history_record_fast(const char *buf, size_t len, bd_rec_core *core)
{
    bool oom = false;
    return fast_scan(buf, len, core, NULL, &oom);
}

/* Parse `len` bytes of one record. Fills core on BD_CHAIN_OK; fills *out (zeroed first)
 * when non-NULL. `linked`: the record hash of bytes a verified walk linked, which are a
 * valid record already; their encoding and canonical form are then not checked again, the
 * hash is taken as it is, and out->json is not kept. */
static bd_chain_reason parse_full(const char *buf, size_t len, rec_core *core,
                                  bd_history_record *out, char *why, const uint8_t *linked)
{
    bd_chain_reason r = BD_CHAIN_UNPARSEABLE;
    cJSON *root = NULL;
    char *canon = NULL;
    bool oom = false;
    if (out)
        memset(out, 0, sizeof(*out));
    if (why)
        why[0] = '\0';
    if (len == 0) {
        WHY("the file is empty");
        goto out;
    }
    if (len > BD_HISTORY_RECORD_MAX) {
        WHY("the file is larger than %u bytes", BD_HISTORY_RECORD_MAX);
        goto out;
    }
    if (!linked && !ascii_no_nul(buf, len) && !bd_utf8_valid(buf, len)) {
        WHY("not valid UTF-8 (or holds a NUL byte)");
        goto out;
    }
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!root) {
        WHY("not JSON (syntax error at byte %td)", end ? end - buf : (ptrdiff_t)0);
        goto out;
    }
    if ((size_t)(end - buf) != len) {
        WHY("trailing bytes after the JSON object");
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        WHY("not a JSON object");
        goto out;
    }
    r = check_schema(root, core, out, &oom, why);
    if (r != BD_CHAIN_OK)
        goto out;
    if (linked) {
        if (out)
            bd_hex(out->hash, linked, 32);
        goto out;
    }
    /* Only the canonical bytes are a record: anything else was not written by append,
     * and two tools could read two different documents from it. */
    size_t clen = 0;
    canon = bd_canon_json(root, &clen);
    if (!canon || clen != len || memcmp(canon, buf, len) != 0) {
        r = BD_CHAIN_SCHEMA_INVALID;
        WHY("not in canonical form (sorted keys, no whitespace, canonical numbers)");
        goto out;
    }
    if (out) {
        uint8_t h[32];
        bd_history_record_hash(h, core->prev, buf, len);
        bd_hex(out->hash, h, 32);
        out->json = root;
        root = NULL;
    }
out:
    if (oom) {
        r = BD_CHAIN_UNPARSEABLE;
        WHY("out of memory");
    }
    if (r != BD_CHAIN_OK && out)
        bd_history_record_release(out);
    free(canon);
    cJSON_Delete(root);
    return r;
}

bd_chain_reason hist_parse_full(const char *buf, size_t len, rec_core *core, bd_history_record *out,
                                char *why)
{
    return parse_full(buf, len, core, out, why, NULL);
}

bd_chain_reason bd_history_record_full(const char *buf, size_t len, bd_rec_core *core,
                                       char why[256])
{
    if (!buf) {
        WHY("no bytes");
        return BD_CHAIN_UNPARSEABLE;
    }
    return hist_parse_full(buf, len, core, NULL, why);
}

bd_chain_reason bd_history_record_check(const char *buf, size_t len, bd_rec_core *core,
                                        char why[256])
{
    if (!buf)
        return bd_history_record_full(buf, len, core, why);
    return parse_record(buf, len, core, NULL, why);
}

bd_chain_reason bd_history_record_parse(bd_history_record *out, const char *buf, size_t len,
                                        char why[256])
{
    rec_core core;
    if (!buf) {
        if (out)
            memset(out, 0, sizeof(*out));
        if (why)
            snprintf(why, 256, "no bytes");
        return BD_CHAIN_UNPARSEABLE;
    }
    return parse_record(buf, len, &core, out, why);
}

/* The error of record `seq` that does not parse. Returns -1. */
static int parse_seq_failed(uint64_t seq, const char *why, bd_err *err)
{
    if (strcmp(why, "out of memory") == 0)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    bd_err_set(err, BD_E_CHAIN_TAMPERED, NULL, 0, 0,
               "history record %llu is not a valid record (%s); run ", (unsigned long long)seq,
               why);
    return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
}

int bd_history_record_parse_linked(bd_history_record *out, uint64_t seq, const char *buf,
                                   size_t len, const uint8_t hash[32], bd_err *err)
{
    char why[256];
    rec_core core;
    bool oom = false;
    /* The one-pass scan fills what it reads; what it declines, cJSON reads (the same
     * record either way: unit.test_history_parse and fuzz_history_record compare them). */
    if (fast_scan(buf, len, &core, out, &oom)) {
        bd_hex(out->hash, hash, 32);
        return 0;
    }
    if (oom)
        return parse_seq_failed(seq, "out of memory", err);
    if (parse_full(buf, len, &core, out, why, hash) == BD_CHAIN_OK)
        return 0;
    return parse_seq_failed(seq, why, err);
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether two doubles are the same value, bit for bit. */
static bool same_num(double a, double b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static bool same_score(const bd_score *a, const bd_score *b)
{
    if (a->passed != b->passed || !same_num(a->score, b->score) ||
        !same_num(a->cost_usd, b->cost_usd) || a->wall_clock_ms != b->wall_clock_ms ||
        a->n_breakdown != b->n_breakdown || a->n_failure_modes != b->n_failure_modes ||
        a->n_checks != b->n_checks)
        return false;
    for (size_t i = 0; i < a->n_breakdown; i++)
        if (!same_str(a->breakdown[i].key, b->breakdown[i].key) ||
            !same_num(a->breakdown[i].value, b->breakdown[i].value))
            return false;
    for (size_t i = 0; i < a->n_failure_modes; i++)
        if (!same_str(a->failure_modes[i].code, b->failure_modes[i].code) ||
            !same_str(a->failure_modes[i].detail, b->failure_modes[i].detail) ||
            a->failure_modes[i].severity != b->failure_modes[i].severity)
            return false;
    for (size_t i = 0; i < a->n_checks; i++)
        if (!same_str(a->checks[i].name, b->checks[i].name) ||
            !same_str(a->checks[i].expected, b->checks[i].expected) ||
            !same_str(a->checks[i].actual, b->checks[i].actual) ||
            a->checks[i].passed != b->checks[i].passed)
            return false;
    return true;
}

bool bd_history_record_same(const bd_history_record *a, const bd_history_record *b)
{
    if (a->seq != b->seq || a->schema_version != b->schema_version || a->is_audit != b->is_audit ||
        strcmp(a->hash, b->hash) != 0 || strcmp(a->prev_hash, b->prev_hash) != 0 ||
        a->run_cases != b->run_cases || a->provenance_verified != b->provenance_verified)
        return false;
    const bd_history_origin *oa = &a->origin, *ob = &b->origin;
    if (oa->present != ob->present || oa->shard != ob->shard || oa->shards != ob->shards ||
        !same_str(oa->run_id, ob->run_id) || !same_str(oa->host, ob->host) ||
        strcmp(oa->bundle_record_hash, ob->bundle_record_hash) != 0)
        return false;
    for (int f = 0; f < F__COUNT; f++) {
        char **da = string_dst((bd_history_record *)a, f),
             **db = string_dst((bd_history_record *)b, f);
        if (da && !same_str(*da, *db))
            return false;
    }
    return same_score(&a->score, &b->score);
}

void bd_history_record_release(bd_history_record *r)
{
    if (!r)
        return;
    char **strs[] = {&r->harness_version, &r->operator_fingerprint,
                     &r->task_class,      &r->run_id,
                     &r->case_id,         &r->case_digest,
                     &r->rubric_digest,   &r->task_class_digest,
                     &r->run_scope,       &r->origin.run_id,
                     &r->origin.host,     &r->cassette_digest,
                     &r->isolation_class, &r->started_at,
                     &r->finished_at,     &r->event,
                     &r->detail,          &r->at};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        free(*strs[i]);
    bd_score_free(&r->score);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof(*r));
}

void bd_history_records_free(bd_history_record *recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++)
        bd_history_record_release(&recs[i]);
    free(recs);
}

bool bd_history_run_id_valid(const char *s)
{
    return s && valid_run_id(s);
}

bool bd_history_host_valid(const char *s)
{
    return s && valid_host(s);
}

bool bd_history_time_valid(const char *s)
{
    return s && valid_time(s);
}

bool bd_history_audit_run(const char *detail, char run_id[BD_HISTORY_AUDIT_RUN_BUF])
{
    run_id[0] = '\0';
    if (!detail || detail[0] != '{')
        return false;
    size_t len = strlen(detail), cl = 0;
    cJSON *o = cJSON_ParseWithLength(detail, len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "run_id");
    bool ok = cJSON_IsObject(o) && cJSON_IsString(id) && bd_history_run_id_valid(id->valuestring) &&
              strlen(id->valuestring) < BD_HISTORY_AUDIT_RUN_BUF;
    char *canon = ok ? bd_canon_json(o, &cl) : NULL;
    ok = ok && canon && cl == len && memcmp(canon, detail, len) == 0;
    if (ok)
        snprintf(run_id, BD_HISTORY_AUDIT_RUN_BUF, "%s", id->valuestring);
    free(canon);
    cJSON_Delete(o);
    return ok;
}

int bd_history_score_fields_of(bd_history_score_fields *f, const bd_history_record *r)
{
    memset(f, 0, sizeof(*f));
    if (!r || r->is_audit || r->schema_version != 2 || !r->run_scope)
        return -1;
    f->run_id = r->run_id;
    f->run_full = strcmp(r->run_scope, "full") == 0;
    f->run_cases = r->run_cases;
    f->task_class = r->task_class;
    f->case_id = r->case_id;
    f->case_digest = r->case_digest;
    f->task_class_digest = r->task_class_digest;
    f->cassette_digest = r->cassette_digest;
    f->harness_version = r->harness_version;
    f->isolation_class = r->isolation_class;
    f->provenance_verified = r->provenance_verified;
    f->operator_fingerprint = r->operator_fingerprint;
    f->started_at = r->started_at;
    f->finished_at = r->finished_at;
    f->origin = r->origin.present ? &r->origin : NULL;
    return 0;
}
