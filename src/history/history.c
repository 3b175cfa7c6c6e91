/*
 * history.c — the append-only, hash-chained score history (docs/history.md, history.h).
 *
 * Every file operation is relative to one directory descriptor opened with O_NOFOLLOW, so
 * a symlink swapped in for the directory after open cannot redirect writes.
 */
#include "history.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "bench.h"
#include "canon.h"
#include "reccheck.h"
#include "recscan.h"
#include "text.h"
#include "digest.h"
#include "fsutil.h"
#include "b3many.h"
#include "sha256many.h"
#include "hindex.h"
#include "segment.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#define CHAIN_TAG "benchdesk-chain-v1"
/* The tag is hashed with its terminating NUL: "benchdesk-chain-v1\0" is 19 bytes. */
#define CHAIN_TAG_LEN (sizeof(CHAIN_TAG))
#define HEAD_NAME     "HEAD"
#define VERIFIED_NAME "VERIFIED"
#define SEGTMP_NAME   "segments.tmp"
#define LOCK_NAME     ".lock"
/* How far past a stale HEAD hint append walks before it scans the directory instead. */
#define HEAD_PROBE_MAX 64
/* verify: records per parallel window, per work item, and the most threads it uses. */
#define VERIFY_WINDOW      8192
#define VERIFY_BATCH       64
#define VERIFY_MAX_THREADS 8
#define DETAIL_MAX         4096
/* Two prev_hash values that differ in at most this many hex digits are one hand edit of
 * the other: two unrelated SHA-256 values agree in ~4 of 64 digits, so 56 or more equal
 * digits never happen by chance. */
#define EDIT_DISTANCE_MAX 8

struct bd_history {
    char *dir;
    char *segdir;                 /* <dir>/segments */
    int dirfd;                    /* -1 while the directory does not exist (read-only handle) */
    int segfd;                    /* -1 while the history is in the version-1 layout (or empty) */
    char repair[256];             /* what the last append repaired (a torn tail), "" when nothing */
    char ix_note[PATH_MAX + 160]; /* the index was found edited / disagreeing, "" if not */
    char *ixdir;                  /* <bench root>/.benchdesk/index, NULL: no derived index */
    pthread_mutex_t mu; /* guards segfd, set once by whichever thread sees segments first */
};

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

/* ---- small helpers ------------------------------------------------------------------ */

void bd_history_file_name(char out[16], uint64_t seq)
{
    /* Written by hand: verify formats 100k names and snprintf shows up in profiles. */
    for (int i = 9; i >= 0; i--) {
        out[i] = (char)('0' + seq % 10);
        seq /= 10;
    }
    memcpy(out + 10, ".json", 6);
}

/* Seq of a record file name "<10 digits>.json", or -1 for any other name. */
static int64_t parse_record_name(const char *name)
{
    int64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return strcmp(name + 10, ".json") == 0 ? v : -1;
}

/* True for "<10 digits>.json.tmp": a temp file an interrupted append left behind. */
static bool is_record_tmp_name(const char *name)
{
    for (int i = 0; i < 10; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    return strcmp(name + 10, ".json.tmp") == 0;
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

static bool lower_hex(const char *s, size_t n)
{
    if (strnlen(s, n + 1) != n)
        return false;
    unsigned bad = 0; /* no early exit: the loop vectorises */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bad |= (unsigned)((unsigned char)(c - '0') > 9 && (unsigned char)(c - 'a') > 5);
    }
    return bad == 0;
}

static bool valid_fpr(const char *s)
{
    for (size_t i = 0; i < BD_FPR_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return s[BD_FPR_LEN] == '\0';
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
/* Members a version-2 score record may carry or not (imported shard records, §14). */
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

/* What verify needs from every record (reccheck.h). */
typedef bd_rec_core rec_core;

#define WHY(...) (why ? (void)snprintf(why, 256, __VA_ARGS__) : (void)0)

/* Validate the BenchScore object `o` of a record of schema `version` by the rules of
 * score_rules.h, the table score.c's parser applies too; fill `s` when non-NULL. Returns
 * true when valid. On false `*oom` tells out-of-memory apart from invalid. */
static bool check_score(const cJSON *o, int version, bd_score *s, bool *oom, char *why)
{
    const bd_score_rule_def *R = bd_score_rules;
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
        double v = c->valuedouble;
        switch ((bd_score_member)f) {
        case BD_SM_PASSED:
            if (!cJSON_IsBool(c)) {
                WHY("score.passed: not a boolean");
                return false;
            }
            if (s)
                s->passed = cJSON_IsTrue(c);
            break;
        case BD_SM_SCORE:
            if (!cJSON_IsNumber(c) || !bd_score_rule_ok(BD_SR_SCORE, v, version)) {
                WHY("score.score: not a number in [0,1]");
                return false;
            }
            if (s)
                s->score = v;
            break;
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
            break;
        case BD_SM_WALL:
            if (!cJSON_IsNumber(c) || !bd_score_rule_ok(BD_SR_WALL, v, version)) {
                WHY("score.wall_clock_ms: not an integer >= 0");
                return false;
            }
            if (s)
                s->wall_clock_ms = (int64_t)v;
            break;
        case BD_SM_BREAKDOWN: {
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
            if (s && n > 0) {
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
            }
            break;
        }
        case BD_SM_FAILURE_MODES: {
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
            for (const cJSON *fm = c->child; fm; fm = fm->next, i++) {
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
                if (det &&
                    !bd_score_rule_ok(BD_SR_FM_DETAIL, (double)strlen(det->valuestring), version)) {
                    WHY("score.failure_modes[%zu].detail: longer than %.0f bytes", i,
                        R[BD_SR_FM_DETAIL].max);
                    return false;
                }
                if (s) {
                    bd_score_fm *d = &s->failure_modes[s->n_failure_modes++];
                    d->severity = sv;
                    d->code = strdup(code->valuestring);
                    d->detail = det ? strdup(det->valuestring) : NULL;
                    if (!d->code || (det && !d->detail)) {
                        *oom = true;
                        return false;
                    }
                }
            }
            break;
        }
        default:
            break;
        }
    }
    if (seen != (1u << BD_SM__COUNT) - 1) {
        for (int i = 0; i < BD_SM__COUNT; i++)
            if (!(seen & (1u << i))) {
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
    if (!cJSON_IsString(m[O_HASH]) || !lower_hex(m[O_HASH]->valuestring, BD_HASH_HEX_LEN)) {
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
        return valid_fpr(s) ? NULL : "is not 40 upper-case hex digits";
    case F_STARTED_AT:
    case F_FINISHED_AT:
    case F_AT:
        return valid_time(s) ? NULL : "is not a UTC time YYYY-MM-DDTHH:MM:SS[.f]Z";
    case F_PREV_HASH:
        return lower_hex(s, BD_HASH_HEX_LEN) ? NULL : "is not 64 lower-case hex digits";
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
    if (!out)
        return BD_CHAIN_OK;
    out->seq = core->seq;
    out->schema_version = version;
    out->is_audit = is_audit;
    memcpy(out->prev_hash, by_field[F_PREV_HASH]->valuestring, BD_HASH_BUF);
    if (!is_audit)
        out->provenance_verified = cJSON_IsTrue(by_field[F_PROVENANCE_VERIFIED]);
    struct {
        char **dst;
        int f;
    } strs[] = {
        {&out->harness_version, F_HARNESS_VERSION},
        {&out->operator_fingerprint, F_OPERATOR_FINGERPRINT},
        {&out->task_class, F_TASK_CLASS},
        {&out->run_id, F_RUN_ID},
        {&out->case_id, F_CASE_ID},
        {&out->case_digest, F_CASE_DIGEST},
        {&out->rubric_digest, F_RUBRIC_DIGEST},
        {&out->task_class_digest, F_TASK_CLASS_DIGEST},
        {&out->run_scope, F_RUN_SCOPE},
        {&out->cassette_digest, F_CASSETTE_DIGEST},
        {&out->isolation_class, F_ISOLATION_CLASS},
        {&out->started_at, F_STARTED_AT},
        {&out->finished_at, F_FINISHED_AT},
        {&out->event, F_EVENT},
        {&out->detail, F_DETAIL},
        {&out->at, F_AT},
    };
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if (by_field[strs[i].f] && !fill_string(strs[i].dst, by_field[strs[i].f], oom))
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

/* ---- the fast check (reccheck.h, recscan.h) ------------------------------------------ */

/* A string of a record the fast check decodes at once: the longest any rule allows
 * (detail); a longer one is left to the full check. */
#define FAST_STR_CAP (DETAIL_MAX + 1)

/* The `score` object, members in canonical order, by check_score's rules. */
static bool fast_score(bd_rscan *s, int version, char *tmp)
{
    const bd_score_rule_def *R = bd_score_rules;
    double v;
    size_t n, count = 0;
    bool b;
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
                bd_score_banned_word(key, n) || !bd_rs_byte(s, ':') || !bd_rs_number(s, &v) ||
                !bd_score_rule_ok(BD_SR_BREAKDOWN_VALUE, v, version))
                return false;
            count++;
            if (bd_rs_byte(s, '}'))
                break;
            if (!bd_rs_byte(s, ','))
                return false;
        }
    }
    if (!bd_score_rule_ok(BD_SR_BREAKDOWN_COUNT, (double)count, version))
        return false;
    if (!bd_rs_lit(s, ",\"cost_usd\":", 12) || !bd_rs_number(s, &v) || !isfinite(v) ||
        v < R[BD_SR_COST].min || !bd_score_rule_ok(BD_SR_COST, v, version))
        return false;
    if (!bd_rs_lit(s, ",\"failure_modes\":[", 18))
        return false;
    count = 0;
    if (!bd_rs_byte(s, ']')) {
        for (;;) {
            bd_severity sv;
            if (!bd_rs_lit(s, "{\"code\":", 8) || !bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
                !bd_score_rule_ok(BD_SR_FM_CODE, (double)n, version))
                return false;
            if (bd_rs_lit(s, ",\"detail\":", 10) &&
                (!bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
                 !bd_score_rule_ok(BD_SR_FM_DETAIL, (double)n, version)))
                return false;
            if (!bd_rs_lit(s, ",\"severity\":", 12) || !bd_rs_string(s, tmp, FAST_STR_CAP, &n) ||
                bd_severity_parse(tmp, &sv) != 0 || !bd_rs_byte(s, '}'))
                return false;
            count++;
            if (bd_rs_byte(s, ']'))
                break;
            if (!bd_rs_byte(s, ','))
                return false;
        }
    }
    if (!bd_score_rule_ok(BD_SR_FM_COUNT, (double)count, version))
        return false;
    return bd_rs_lit(s, ",\"passed\":", 10) && bd_rs_bool(s, &b) &&
           bd_rs_lit(s, ",\"score\":", 9) && bd_rs_number(s, &v) &&
           bd_score_rule_ok(BD_SR_SCORE, v, version) && bd_rs_lit(s, ",\"wall_clock_ms\":", 17) &&
           bd_rs_number(s, &v) && bd_score_rule_ok(BD_SR_WALL, v, version) && bd_rs_byte(s, '}');
}

/* The `origin` object, members in canonical order, by check_origin's rules. */
static bool fast_origin(bd_rscan *s, char *tmp)
{
    size_t n;
    double shard, shards;
    return bd_rs_lit(s, "{\"bundle_record_hash\":", 22) && bd_rs_string(s, tmp, FAST_STR_CAP, &n) &&
           lower_hex(tmp, BD_HASH_HEX_LEN) && bd_rs_lit(s, ",\"host\":", 8) &&
           bd_rs_string(s, tmp, FAST_STR_CAP, &n) && valid_host(tmp) &&
           bd_rs_lit(s, ",\"run_id\":", 10) && bd_rs_string(s, tmp, FAST_STR_CAP, &n) &&
           valid_run_id(tmp) && bd_rs_lit(s, ",\"shard\":", 9) && bd_rs_number(s, &shard) &&
           bd_rs_lit(s, ",\"shards\":", 10) && bd_rs_number(s, &shards) && bd_rs_byte(s, '}') &&
           integral_in_v(shards, 1, BD_SHARDS_MAX, &shards) &&
           integral_in_v(shard, 0, shards - 1, &shard);
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
 * Accepts exactly what parse_record_full accepts, or less. */
bool bd_history_record_fast(const char *buf, size_t len, bd_rec_core *core)
{
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
            return false;
        int f = last;
        bool ok;
        switch (f) {
        case F_SCHEMA_VERSION:
            ok = bd_rs_number(&s, &v) && integral_in_v(v, 1, BD_HISTORY_SCHEMA_VERSION, &v);
            if (ok)
                version = (int)v;
            break;
        case F_SEQ:
            ok = bd_rs_number(&s, &v) && integral_in_v(v, 1, (double)BD_HISTORY_SEQ_MAX, &seq);
            break;
        case F_RUN_CASES:
            ok = bd_rs_number(&s, &v) && integral_in_v(v, 1, (double)BD_HISTORY_SEQ_MAX, &v);
            break;
        case F_PROVENANCE_VERIFIED:
            ok = bd_rs_bool(&s, &b);
            break;
        case F_ORIGIN:
            ok = fast_origin(&s, tmp);
            break;
        case F_SCORE:
            /* schema_version sorts before score: the version is known here or missing */
            ok = version != 0 && fast_score(&s, version, tmp);
            break;
        default: {
            size_t n;
            /* kind sorts before task_class, the one field whose null depends on it */
            if (bd_rs_lit(&s, "null", 4)) {
                ok = nullable_field(f, (seen & BIT(F_KIND)) != 0);
                break;
            }
            ok = bd_rs_string(&s, tmp, FAST_STR_CAP, &n) && check_string_value(f, tmp) == NULL;
            if (ok && f == F_PREV_HASH)
                bd_hash_unhex(prev, tmp);
            break;
        }
        }
        if (!ok)
            return false;
        seen |= BIT(f);
        if (bd_rs_byte(&s, '}'))
            break;
        if (!bd_rs_byte(&s, ','))
            return false;
    }
    if (s.p != s.end || !(seen & BIT(F_SCHEMA_VERSION)))
        return false;
    bool is_audit = (seen & BIT(F_KIND)) != 0;
    unsigned want = is_audit ? AUDIT_FIELDS : version == 1 ? SCORE_FIELDS_V1 : SCORE_FIELDS_V2;
    unsigned optional = !is_audit && version >= 2 ? SCORE_OPTIONAL_V2 : 0;
    if ((seen & ~(want | optional)) || (want & ~seen))
        return false;
    core->seq = (uint64_t)seq;
    core->is_audit = is_audit;
    memcpy(core->prev, prev, 32);
    return true;
}

/* Parse `len` bytes of one record. Fills core on BD_CHAIN_OK; fills *out (zeroed first)
 * when non-NULL. */
static bd_chain_reason parse_record_full(const char *buf, size_t len, rec_core *core,
                                         bd_history_record *out, char *why)
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
    if (!ascii_no_nul(buf, len) && !bd_utf8_valid(buf, len)) {
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

/* Parse `len` bytes of one record: the fast check when only the core is wanted (verify
 * reads a million records), the full check when it declines or a record is filled (the
 * tree is kept in out->json). Fills core on BD_CHAIN_OK; fills *out (zeroed first) when
 * non-NULL. */
static bd_chain_reason parse_record(const char *buf, size_t len, rec_core *core,
                                    bd_history_record *out, char *why)
{
    if (!out && bd_history_record_fast(buf, len, core)) {
        if (why)
            why[0] = '\0';
        return BD_CHAIN_OK;
    }
    return parse_record_full(buf, len, core, out, why);
}

bd_chain_reason bd_history_record_full(const char *buf, size_t len, bd_rec_core *core,
                                       char why[256])
{
    if (!buf) {
        WHY("no bytes");
        return BD_CHAIN_UNPARSEABLE;
    }
    return parse_record_full(buf, len, core, NULL, why);
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

/* ---- opening ------------------------------------------------------------------------ */

/* The segments directory, when the history is in the version-2 layout. */
static int open_segfd(bd_history *h, bd_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    if (h->segfd >= 0 || h->dirfd < 0)
        goto out;
    int fd = openat(h->dirfd, BD_SEGMENTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            goto out; /* version-1 layout, or no record yet */
        if (errno == ELOOP || errno == ENOTDIR)
            rc = bd_err_set(err, BD_E_CHAIN_TAMPERED, h->segdir, 0, 0,
                            "the history's segments path is not a directory (or is a symbolic "
                            "link); run `benchdesk history verify`");
        else
            rc = bd_err_errno(err, BD_E_IO, errno, h->segdir, "cannot open the history segments");
        goto out;
    }
    h->segfd = fd;
out:
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static int open_dirfd(bd_history *h, bool create, bd_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    if (h->dirfd >= 0)
        goto out;
    if (create && bd_mkdir_p(h->dir, 0700, err) != 0) {
        rc = -1;
        goto out;
    }
    int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && !create)
            goto out; /* no history yet: an empty chain */
        if (errno == ELOOP || errno == ENOTDIR)
            rc = bd_err_set(err, BD_E_IO, h->dir, 0, 0,
                            "the history path is not a directory (or is a symbolic link); "
                            "move it aside so benchdesk can recreate it");
        else
            rc = bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot open the history directory");
        goto out;
    }
    h->dirfd = fd;
out:
    pthread_mutex_unlock(&h->mu);
    return rc == 0 ? open_segfd(h, err) : rc;
}

int bd_history_open_dir(bd_history **out, const char *dir, int flags, bd_err *err)
{
    *out = NULL;
    bd_history *h = calloc(1, sizeof(*h));
    size_t sl = strlen(dir) + sizeof("/" BD_SEGMENTS_DIR);
    if (!h || !(h->dir = strdup(dir)) || !(h->segdir = malloc(sl))) {
        if (h)
            free(h->dir);
        free(h);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the history");
    }
    snprintf(h->segdir, sl, "%s/%s", dir, BD_SEGMENTS_DIR);
    h->dirfd = -1;
    h->segfd = -1;
    pthread_mutex_init(&h->mu, NULL);
    if (open_dirfd(h, (flags & BD_HISTORY_CREATE) != 0, err) != 0) {
        bd_history_free(h);
        return -1;
    }
    *out = h;
    return 0;
}

int bd_history_open(bd_history **out, const char *bench_root, int flags, bd_err *err)
{
    *out = NULL;
    size_t n = strlen(bench_root) + sizeof("/" BD_HISTORY_DIR);
    char *dir = malloc(n);
    if (!dir)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the history");
    snprintf(dir, n, "%s/%s", bench_root, BD_HISTORY_DIR);
    int rc = bd_history_open_dir(out, dir, flags, err);
    free(dir);
    if (rc != 0)
        return rc;
    /* Only a bench's own history gets a derived index (not a shard bundle's records). */
    n = strlen(bench_root) + sizeof("/" BD_HINDEX_DIR);
    if (!((*out)->ixdir = malloc(n))) {
        bd_history_free(*out);
        *out = NULL;
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the history");
    }
    snprintf((*out)->ixdir, n, "%s/%s", bench_root, BD_HINDEX_DIR);
    return 0;
}

void bd_history_free(bd_history *h)
{
    if (!h)
        return;
    if (h->dirfd >= 0)
        close(h->dirfd);
    if (h->segfd >= 0)
        close(h->segfd);
    pthread_mutex_destroy(&h->mu);
    free(h->dir);
    free(h->segdir);
    free(h->ixdir);
    free(h);
}

const char *bd_history_dir(const bd_history *h)
{
    return h->dir;
}

/* ---- reading files ------------------------------------------------------------------ */

typedef struct rbuf {
    char *p;
    size_t cap;
} rbuf;

static bool is_v2(const bd_history *h)
{
    return h->segfd >= 0;
}

/* Where record `seq` lives: its file (version 1) or its segment (version 2; `rec_line`
 * gives the line). */
static void record_path(char *out, size_t size, const bd_history *h, uint64_t seq)
{
    if (is_v2(h)) {
        char name[17];
        bd_segment_name(name, seq ? bd_segment_first(seq) : 1);
        snprintf(out, size, "%s/%s", h->segdir, name);
        return;
    }
    char name[16];
    bd_history_file_name(name, seq);
    snprintf(out, size, "%s/%s", h->dir, name);
}

static int rec_line(const bd_history *h, uint64_t seq)
{
    return is_v2(h) && seq ? (int)(seq - bd_segment_first(seq) + 1) : 0;
}

enum { RD_OK = 0, RD_ABSENT = 1, RD_BAD = 2, RD_ERROR = -1 };

/* Read record file `seq` into b. RD_OK with *len; RD_ABSENT; RD_BAD when the entry is not
 * a readable record file (symlink, directory, FIFO, too large; `why` says which);
 * RD_ERROR with err (io.error, env.out_of_memory). One open and one read. */
static int read_record_file(const bd_history *h, uint64_t seq, rbuf *b, size_t *len, char *why,
                            bd_err *err)
{
    char name[16];
    bd_history_file_name(name, seq);
    *len = 0;
    if (h->dirfd < 0)
        return RD_ABSENT;
    /* O_NONBLOCK: a FIFO planted under a record's name must not hang verify. */
    int fd = openat(h->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return RD_ABSENT;
        if (errno == ELOOP) {
            WHY("a symbolic link, not a record file");
            return RD_BAD;
        }
        char path[PATH_MAX + 32];
        record_path(path, sizeof(path), h, seq);
        bd_err_errno(err, BD_E_IO, errno, path, "cannot open the history record");
        return RD_ERROR;
    }
    int rc = RD_ERROR;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        char path[PATH_MAX + 32];
        record_path(path, sizeof(path), h, seq);
        bd_err_errno(err, BD_E_IO, errno, path, "cannot stat the history record");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        WHY("not a regular file");
        rc = RD_BAD;
        goto out;
    }
    if ((uint64_t)st.st_size > BD_HISTORY_RECORD_MAX) {
        WHY("larger than %u bytes", BD_HISTORY_RECORD_MAX);
        rc = RD_BAD;
        goto out;
    }
    size_t size = (size_t)st.st_size;
    if (b->cap < size + 1) {
        size_t cap = size + 1 > 4096 ? size + 1 : 4096;
        char *p = realloc(b->p, cap);
        if (!p) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
            goto out;
        }
        b->p = p;
        b->cap = cap;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, b->p + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            char path[PATH_MAX + 32];
            record_path(path, sizeof(path), h, seq);
            bd_err_errno(err, BD_E_IO, errno, path, "cannot read the history record");
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    b->p[got] = '\0';
    *len = got;
    rc = RD_OK;
out:
    close(fd);
    return rc;
}

/* Where one operation reads records from: a file buffer (version 1) or one segment held
 * in memory (version 2). Each operation has its own, so a handle needs no lock to read. */
typedef struct src {
    rbuf b;
    bd_segbuf seg;
} src;

static void src_release(src *s)
{
    free(s->b.p);
    bd_segbuf_release(&s->seg);
}

/* The bytes of record `seq`: RD_OK with *p and *len (valid until the next call on `s`),
 * RD_ABSENT, RD_BAD (`why`), RD_ERROR (err). In a segment, a line is record
 * first + its index; a torn final line is not a record. */
static int get_rec(const bd_history *h, src *s, uint64_t seq, const char **p, size_t *len,
                   char *why, bd_err *err)
{
    if (!is_v2(h)) {
        int rc = read_record_file(h, seq, &s->b, len, why, err);
        *p = s->b.p;
        return rc;
    }
    if (seq == 0)
        return RD_ABSENT;
    uint64_t first = bd_segment_first(seq);
    if (s->seg.first != first) {
        int rc = bd_segbuf_load(&s->seg, h->segfd, h->segdir, first, why, err);
        if (rc != BD_SEG_OK)
            return rc == BD_SEG_ABSENT ? RD_ABSENT : rc == BD_SEG_BAD ? RD_BAD : RD_ERROR;
    }
    size_t i = (size_t)(seq - first);
    if (i >= s->seg.nlines)
        return RD_ABSENT;
    *p = bd_segbuf_line(&s->seg, i, len);
    return RD_OK;
}

/* Read, parse and hash record `seq`. Returns RD_OK (core, hash filled), RD_ABSENT, RD_BAD
 * (*reason and why say why it is not a record), RD_ERROR (err). */
static int load_core(const bd_history *h, src *s, uint64_t seq, rec_core *core, uint8_t hash[32],
                     bd_chain_reason *reason, char *why, bd_err *err)
{
    size_t len;
    const char *p;
    int rc = get_rec(h, s, seq, &p, &len, why, err);
    if (rc == RD_BAD)
        *reason = BD_CHAIN_UNPARSEABLE;
    if (rc != RD_OK)
        return rc;
    *reason = parse_record(p, len, core, NULL, why);
    if (*reason != BD_CHAIN_OK)
        return RD_BAD;
    bd_history_record_hash(hash, core->prev, p, len);
    return RD_OK;
}

/* The HEAD hint: "<seq 10 digits> <64 hex>\n". Returns 0 when well-formed. */
static int read_head_hint(const bd_history *h, uint64_t *seq, uint8_t hash[32])
{
    char buf[80];
    if (h->dirfd < 0)
        return -1;
    int fd = openat(h->dirfd, HEAD_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n != 76 || buf[10] != ' ' || buf[75] != '\n')
        return -1;
    buf[10] = '\0';
    buf[75] = '\0';
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(buf[i] - '0');
    }
    if (v == 0 || bd_hash_unhex(hash, buf + 11) != 0)
        return -1;
    *seq = v;
    return 0;
}

/* Scan the directory: the highest record seq, whether a record "0" exists, and (when
 * `clean`) remove stray "<seq>.json.tmp" files. */
static int scan_dir(const bd_history *h, uint64_t *max_seq, bool *has_zero, bool clean, bd_err *err)
{
    *max_seq = 0;
    *has_zero = false;
    if (h->dirfd < 0)
        return 0;
    /* A fresh open file description: a dup would share (and move) dirfd's offset. */
    int fd = openat(h->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return bd_err_errno(err, BD_E_IO, e, h->dir, "cannot list the history directory");
    }
    int rc = 0;
    errno = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t s = parse_record_name(de->d_name);
        if (s == 0)
            *has_zero = true;
        else if (s > 0 && (uint64_t)s > *max_seq)
            *max_seq = (uint64_t)s;
        else if (s < 0 && clean && is_record_tmp_name(de->d_name) &&
                 unlinkat(h->dirfd, de->d_name, 0) != 0 && errno != ENOENT) {
            rc = bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot remove the stray temp file %s",
                              de->d_name);
            break;
        }
        errno = 0;
    }
    if (rc == 0 && errno != 0)
        rc = bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot list the history directory");
    closedir(d);
    return rc;
}

static int tampered_head(bd_err *err, const bd_history *h, uint64_t seq, const char *why)
{
    char path[PATH_MAX + 32];
    record_path(path, sizeof(path), h, seq);
    return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                      "the last history record (seq %llu) is not a valid record (%s); nothing "
                      "can be chained onto it: run `benchdesk history verify`",
                      (unsigned long long)seq, why);
}

/* The chain head of a version-1 layout. `clean` removes stray temp files when the
 * directory is scanned. */
static int find_head_v1(const bd_history *h, src *b, uint64_t *seq, uint8_t hash[32], bool clean,
                        bd_err *err)
{
    rec_core core;
    bd_chain_reason reason;
    char why[256];
    uint8_t hh[32], got[32];
    uint64_t hs;
    memset(hash, 0, 32);
    *seq = 0;
    if (read_head_hint(h, &hs, hh) == 0) {
        int rc = load_core(h, b, hs, &core, got, &reason, why, err);
        if (rc == RD_ERROR)
            return -1;
        if (rc == RD_OK && core.seq == hs && memcmp(got, hh, 32) == 0) {
            /* Believe the hint, then walk forward over records appended after it (a
             * crash between a rename and the hint's update leaves it one behind). */
            for (int steps = 0; steps <= HEAD_PROBE_MAX && hs < BD_HISTORY_SEQ_MAX; steps++) {
                char next[16];
                bd_history_file_name(next, hs + 1);
                struct stat st;
                if (fstatat(h->dirfd, next, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
                    *seq = hs;
                    memcpy(hash, got, 32);
                    return 0;
                }
                memcpy(hh, got, 32);
                rc = load_core(h, b, hs + 1, &core, got, &reason, why, err);
                if (rc == RD_ERROR)
                    return -1;
                if (rc != RD_OK || core.seq != hs + 1 || memcmp(core.prev, hh, 32) != 0)
                    break; /* not a clean continuation: let the scan decide */
                hs++;
            }
        }
    }
    uint64_t max;
    bool zero;
    if (scan_dir(h, &max, &zero, clean, err) != 0)
        return -1;
    if (max == 0)
        return 0;
    int rc = load_core(h, b, max, &core, got, &reason, why, err);
    if (rc == RD_ERROR)
        return -1;
    if (rc == RD_ABSENT)
        return tampered_head(err, h, max, "it vanished while being read");
    if (rc == RD_BAD)
        return tampered_head(err, h, max, why);
    *seq = max;
    memcpy(hash, got, 32);
    return 0;
}

/* The end of one segment, read from its tail without reading the whole file. */
typedef struct segtail {
    uint64_t first; /* the segment */
    off_t whole;    /* bytes up to and including the last '\n' */
    off_t size;     /* the file's size (whole + torn tail) */
    bool has_line;  /* at least one whole line */
    uint64_t seq;   /* the last whole line's record seq */
    uint8_t hash[32];
} segtail;

static int seg_tail(const bd_history *h, rbuf *b, uint64_t first, segtail *t, bd_err *err)
{
    char name[17], path[PATH_MAX + 32], why[256];
    bd_segment_name(name, first);
    snprintf(path, sizeof(path), "%s/%s", h->segdir, name);
    memset(t, 0, sizeof(*t));
    t->first = first;
    int fd = openat(h->segfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return bd_err_errno(err, errno == ELOOP ? BD_E_CHAIN_TAMPERED : BD_E_IO, errno, path,
                            "cannot open the history segment; run `benchdesk history verify`");
    }
    int rc = -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                   "the history segment is not a regular file; run `benchdesk history verify`");
        goto out;
    }
    t->size = st.st_size;
    size_t window = 65536;
    for (;;) {
        size_t want = (off_t)window < st.st_size ? window : (size_t)st.st_size;
        if (b->cap < want + 1) {
            char *p = realloc(b->p, want + 1);
            if (!p) {
                bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
                goto out;
            }
            b->p = p;
            b->cap = want + 1;
        }
        off_t at = st.st_size - (off_t)want;
        ssize_t got = pread(fd, b->p, want, at);
        if (got != (ssize_t)want) {
            bd_err_errno(err, BD_E_IO, got < 0 ? errno : EIO, path,
                         "cannot read the history segment");
            goto out;
        }
        /* The last '\n' ends the last whole line; the one before it starts it. */
        ssize_t nl = (ssize_t)want - 1;
        while (nl >= 0 && b->p[nl] != '\n')
            nl--;
        ssize_t start = nl - 1;
        while (start >= 0 && b->p[start] != '\n')
            start--;
        bool complete = start >= 0 || (off_t)want == st.st_size;
        if (nl < 0 && (off_t)want == st.st_size) {
            t->whole = 0; /* nothing but a torn tail */
            rc = 0;
            goto out;
        }
        if (nl >= 0 && complete) {
            t->whole = at + nl + 1;
            const char *line = b->p + start + 1;
            size_t len = (size_t)(nl - start - 1);
            rec_core core;
            if (parse_record(line, len, &core, NULL, why) != BD_CHAIN_OK) {
                bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                           "the last history record is not a valid record (%s); nothing can be "
                           "chained onto it: run `benchdesk history verify`",
                           why);
                goto out;
            }
            if (core.seq < first || core.seq - first >= BD_SEGMENT_RECORDS) {
                bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                           "the last record of this segment is numbered %llu, outside the "
                           "segment; run `benchdesk history verify`",
                           (unsigned long long)core.seq);
                goto out;
            }
            t->has_line = true;
            t->seq = core.seq;
            bd_history_record_hash(t->hash, core.prev, line, len);
            rc = 0;
            goto out;
        }
        if (window > BD_HISTORY_RECORD_MAX * 2u + 2u) {
            bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                       "the last history record is larger than %u bytes; run `benchdesk "
                       "history verify`",
                       BD_HISTORY_RECORD_MAX);
            goto out;
        }
        window *= 4;
    }
out:
    close(fd);
    return rc;
}

/* The head of a version-2 layout and the tail of the segment that holds it (t->first = 0
 * for an empty chain). */
static int find_head_v2(const bd_history *h, rbuf *b, uint64_t *seq, uint8_t hash[32], segtail *t,
                        bd_err *err)
{
    uint64_t *segs = NULL;
    size_t n = 0;
    memset(hash, 0, 32);
    *seq = 0;
    memset(t, 0, sizeof(*t));
    if (bd_segment_list(h->segfd, h->segdir, &segs, &n, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = n; i-- > 0;) {
        if (seg_tail(h, b, segs[i], t, err) != 0) {
            rc = -1;
            break;
        }
        if (t->has_line) {
            *seq = t->seq;
            memcpy(hash, t->hash, 32);
            break;
        }
    }
    if (rc == 0 && !t->has_line)
        memset(t, 0, sizeof(*t));
    free(segs);
    return rc;
}

static int find_head(const bd_history *h, src *s, uint64_t *seq, uint8_t hash[32], bd_err *err)
{
    if (is_v2(h)) {
        segtail t;
        return find_head_v2(h, &s->b, seq, hash, &t, err);
    }
    return find_head_v1(h, s, seq, hash, false, err);
}

int bd_history_head(bd_history *h, uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err)
{
    src s = {0};
    uint64_t seq = 0;
    uint8_t hash[32];
    int rc = open_dirfd(h, false, err);
    if (rc == 0)
        rc = find_head(h, &s, &seq, hash, err);
    src_release(&s);
    if (rc != 0)
        return -1;
    if (seq_out)
        *seq_out = seq;
    if (hash_out)
        bd_hex(hash_out, hash, 32);
    return 0;
}

const char *bd_history_repair_note(const bd_history *h)
{
    return h->repair[0] ? h->repair : NULL;
}

/* ---- appending ---------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static bool set_str(cJSON *o, const char *key, const char *v)
{
    cJSON *item = v ? cJSON_CreateString(v) : cJSON_CreateNull();
    if (!item)
        return false;
    if (!cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

static int verify_chain(bd_history *h, const bd_history_verify_opts *o,
                        bd_history_verify_result *res, bd_err *err);

/* Convert a version-1 history (one file per record) to segments, under the lock: the chain
 * must verify first (a broken chain is never rewritten); the segments are written into
 * segments.tmp, synced, and renamed into place in one step, so a crash leaves either the
 * old layout or the new one. The record bytes do not change. The old files are removed
 * afterwards; a crash before that leaves them behind, ignored and removed later. */
static int convert_v1(bd_history *h, bd_err *err)
{
    /* Another handle or process may have created the segments since this one opened. */
    if (open_segfd(h, err) != 0)
        return -1;
    if (is_v2(h))
        return 0;
    uint64_t max;
    bool zero;
    if (scan_dir(h, &max, &zero, true, err) != 0)
        return -1;
    bd_history_verify_result vr;
    if (max > 0 || zero) {
        int v = bd_history_verify(h, BD_VERIFY_FULL, &vr, err);
        bd_history_verify_result_release(&vr);
        if (v != 0) {
            if (err && err->code == BD_E_CHAIN_TAMPERED)
                snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg),
                         " (the version-1 history is not converted to segments while broken)");
            return -1;
        }
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", h->dir, SEGTMP_NAME);
    int rc = -1, tfd = -1, fd = -1;
    src s = {0};
    char *wb = NULL;
    size_t wlen = 0, wcap = 0;
    /* A segments.tmp left by a crashed conversion is incomplete by definition. */
    int old = openat(h->dirfd, SEGTMP_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (old >= 0) {
        DIR *d = fdopendir(old);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL)
            if (de->d_name[0] != '.')
                unlinkat(old, de->d_name, 0);
        if (d)
            closedir(d);
        else
            close(old);
        unlinkat(h->dirfd, SEGTMP_NAME, AT_REMOVEDIR);
    }
    if (mkdirat(h->dirfd, SEGTMP_NAME, 0700) != 0 ||
        (tfd = openat(h->dirfd, SEGTMP_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
            0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot create the segments directory");
        goto out;
    }
    for (uint64_t first = 1; first <= max; first += BD_SEGMENT_RECORDS) {
        char name[17];
        bd_segment_name(name, first);
        fd = openat(tfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            bd_err_errno(err, BD_E_IO, errno, path, "cannot create segment %s", name);
            goto out;
        }
        uint64_t last = first + BD_SEGMENT_RECORDS - 1 < max ? first + BD_SEGMENT_RECORDS - 1 : max;
        for (uint64_t k = first; k <= last; k++) {
            const char *p;
            size_t len;
            char why[256];
            if (get_rec(h, &s, k, &p, &len, why, err) != RD_OK) {
                if (err && err->code == BD_OK)
                    bd_err_set(err, BD_E_CHAIN_TAMPERED, h->dir, 0, 0,
                               "record %llu changed during the conversion to segments",
                               (unsigned long long)k);
                goto out;
            }
            if (wlen + len + 1 > wcap) {
                size_t ncap = (wlen + len + 1) * 2 > (1u << 20) ? (wlen + len + 1) * 2 : 1u << 20;
                char *q = realloc(wb, ncap);
                if (!q) {
                    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory converting the history");
                    goto out;
                }
                wb = q;
                wcap = ncap;
            }
            memcpy(wb + wlen, p, len);
            wb[wlen + len] = '\n';
            wlen += len + 1;
            if (wlen >= (1u << 20) || k == last) {
                if (write_all(fd, wb, wlen) != 0) {
                    bd_err_errno(err, BD_E_IO, errno, path, "cannot write segment %s", name);
                    goto out;
                }
                wlen = 0;
            }
        }
        if (fsync(fd) != 0 || close(fd) != 0) {
            fd = -1;
            bd_err_errno(err, BD_E_IO, errno, path, "cannot sync segment %s", name);
            goto out;
        }
        fd = -1;
    }
    if (fsync(tfd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot sync the segments directory");
        goto out;
    }
    if (renameat(h->dirfd, SEGTMP_NAME, h->dirfd, BD_SEGMENTS_DIR) != 0) {
        bd_err_errno(err, BD_E_IO, errno, h->segdir,
                     "cannot move the converted segments into place (the history is unchanged)");
        goto out;
    }
    if (fsync(h->dirfd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, h->dir,
                     "the history was converted to segments but its directory could not be "
                     "synced; check the disk");
        goto out;
    }
    if (open_segfd(h, err) != 0)
        goto out;
    /* The version-1 files are now ignored; remove them. */
    for (uint64_t k = 1; k <= max; k++) {
        char name[16];
        bd_history_file_name(name, k);
        unlinkat(h->dirfd, name, 0);
    }
    unlinkat(h->dirfd, HEAD_NAME, 0);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (tfd >= 0)
        close(tfd);
    free(wb);
    src_release(&s);
    return rc;
}

/* One record to append: built without seq and prev_hash. */
typedef struct pending {
    char *bytes;
    size_t len;
    size_t prev_at; /* where the 64 hex digits of prev_hash start in bytes */
} pending;

/* Give `rec` its seq and a placeholder prev_hash, serialize it canonically and check it
 * with verify's own parser: a record verify would reject is never written. The real
 * prev_hash is patched in afterwards (link_record): it is 64 hex digits either way, so the
 * bytes stay canonical and valid, and the expensive part can run for many records at
 * once. */
static int build_record(cJSON *rec, uint64_t seq, pending *pd, bd_err *err)
{
    static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
    char why[256];
    cJSON_DeleteItemFromObjectCaseSensitive(rec, "seq");
    cJSON_DeleteItemFromObjectCaseSensitive(rec, "prev_hash");
    cJSON *seq_item = cJSON_CreateNumber((double)seq);
    if (!seq_item || !cJSON_AddItemToObject(rec, "seq", seq_item)) {
        cJSON_Delete(seq_item);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
    }
    if (!set_str(rec, "prev_hash", zeros))
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
    free(pd->bytes);
    pd->bytes = bd_canon_json(rec, &pd->len);
    if (!pd->bytes)
        return bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                          "the history record cannot be written as canonical JSON (a NaN or "
                          "infinite number, invalid UTF-8, or a duplicate key); nothing was "
                          "appended");
    rec_core core;
    if (parse_record(pd->bytes, pd->len, &core, NULL, why) != BD_CHAIN_OK)
        return bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                          "refusing to append an invalid history record: %s; nothing was appended",
                          why);
    /* In canonical bytes `"prev_hash":"` can only be the top-level member: a '"' inside
     * a string is escaped, and nested members have fixed names or numeric values. */
    static const char key[] = "\"prev_hash\":\"";
    const char *at = memmem(pd->bytes, pd->len, key, sizeof(key) - 1);
    if (!at || (size_t)(at - pd->bytes) + sizeof(key) - 1 + 64 > pd->len)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "prev_hash not found in a new record");
    pd->prev_at = (size_t)(at - pd->bytes) + sizeof(key) - 1;
    return 0;
}

/* Put the real prev_hash into a built record and hash it. */
static void link_record(pending *pd, const uint8_t prev[32], uint8_t hash[32])
{
    char hex[BD_HASH_BUF];
    bd_hex(hex, prev, 32);
    memcpy(pd->bytes + pd->prev_at, hex, 64);
    bd_history_record_hash(hash, prev, pd->bytes, pd->len);
}

/* Building records in parallel (a batch of many). */
typedef struct build_work {
    cJSON **recs;
    pending *pd;
    uint64_t first_seq;
    size_t n;
    atomic_size_t next;
    atomic_int failed;
    bd_err err; /* the first failure */
    pthread_mutex_t mu;
} build_work;

static void *build_worker(void *arg)
{
    build_work *w = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&w->next, 1);
        if (i >= w->n || atomic_load(&w->failed))
            break;
        bd_err e = BD_ERR_INIT;
        if (build_record(w->recs[i], w->first_seq + i, &w->pd[i], &e) != 0) {
            pthread_mutex_lock(&w->mu);
            if (!atomic_load(&w->failed))
                w->err = e;
            atomic_store(&w->failed, 1);
            pthread_mutex_unlock(&w->mu);
            break;
        }
    }
    return NULL;
}

/* Build records recs[0..n) as seq first_seq.. on up to verify_threads() threads. */
static int build_records(cJSON **recs, pending *pd, uint64_t first_seq, size_t n, bd_err *err);

/* Take the lock and the descriptor of the lock file (close it to release). */
static int take_lock(bd_history *h, bd_err *err)
{
    int lockfd = openat(h->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lockfd < 0)
        return bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot open the history lock file .lock");
    while (flock(lockfd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot lock the history");
            close(lockfd);
            return -1;
        }
    }
    return lockfd;
}

/* Open segment `first` for appending, `expect` bytes of whole lines long; bytes beyond
 * that are a torn final line a crash left, truncated here and noted in h->repair. */
static int open_for_append(bd_history *h, uint64_t first, off_t expect, bool *created, bd_err *err)
{
    char name[17], path[PATH_MAX + 32];
    bd_segment_name(name, first);
    snprintf(path, sizeof(path), "%s/%s", h->segdir, name);
    *created = false;
    int fd = openat(h->segfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = openat(h->segfd, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
        *created = fd >= 0;
    }
    if (fd < 0)
        return bd_err_errno(err, BD_E_IO, errno, path, "cannot open the history segment");
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                          "the history segment is not a regular file; run `benchdesk history "
                          "verify`");
    }
    if (st.st_size == expect)
        return fd;
    if (st.st_size > expect && st.st_size - expect <= (off_t)BD_HISTORY_RECORD_MAX + 1) {
        /* Only a torn line (no '\n') may follow the head. */
        size_t n = (size_t)(st.st_size - expect);
        char *tail = malloc(n);
        int rfd = tail ? openat(h->segfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
        bool torn =
            rfd >= 0 && pread(rfd, tail, n, expect) == (ssize_t)n && memchr(tail, '\n', n) == NULL;
        if (rfd >= 0)
            close(rfd);
        free(tail);
        if (torn) {
            if (ftruncate(fd, expect) != 0 || fsync(fd) != 0) {
                bd_err_errno(err, BD_E_IO, errno, path, "cannot truncate the torn final line");
                close(fd);
                return -1;
            }
            snprintf(h->repair, sizeof(h->repair),
                     "history segment %s: removed a torn final line of %zu bytes left by a "
                     "crash during an earlier append (it was never a record)",
                     name, n);
            return fd;
        }
    }
    close(fd);
    return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                      "the segment holds %lld bytes where the chain head says %lld; run "
                      "`benchdesk history verify`",
                      (long long)st.st_size, (long long)expect);
}

/* Append `n` built records (without seq and prev_hash) together: one lock, one write and
 * one fsync per segment touched (group commit). Either all are appended or none. */
static int append_records(bd_history *h, cJSON **recs, size_t n, uint64_t *first_out,
                          char (*hashes_out)[BD_HASH_BUF], bd_err *err)
{
    int rc = -1, lockfd = -1, fd = -1;
    rbuf b = {NULL, 0};
    pending *pd = NULL;
    char *buf = NULL;
    uint8_t(*hashes)[32] = NULL;
    uint64_t head_seq;
    uint8_t head_hash[32];
    segtail t;
    h->repair[0] = '\0';
    if (n == 0)
        return bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0, "no records to append");
    if (open_dirfd(h, true, err) != 0 || (lockfd = take_lock(h, err)) < 0)
        goto out;
    if (convert_v1(h, err) != 0)
        goto out;
    if (!is_v2(h)) {
        if (mkdirat(h->dirfd, BD_SEGMENTS_DIR, 0700) != 0 && errno != EEXIST) {
            bd_err_errno(err, BD_E_IO, errno, h->segdir, "cannot create the segments directory");
            goto out;
        }
        if (fsync(h->dirfd) != 0) {
            bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot sync the history directory");
            goto out;
        }
        if (open_segfd(h, err) != 0)
            goto out;
    }
    if (find_head_v2(h, &b, &head_seq, head_hash, &t, err) != 0)
        goto out;
    if (head_seq + n > BD_HISTORY_SEQ_MAX) {
        bd_err_set(err, BD_E_IO, h->dir, 0, 0, "the history is full (seq %llu)",
                   (unsigned long long)head_seq);
        goto out;
    }
    if (!(pd = calloc(n, sizeof(*pd))) || !(hashes = malloc(n * sizeof(*hashes)))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory appending to the history");
        goto out;
    }
    if (build_records(recs, pd, head_seq + 1, n, err) != 0)
        goto out;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        link_record(&pd[i], i ? hashes[i - 1] : head_hash, hashes[i]);
        total += pd[i].len + 1;
    }
    if (!(buf = malloc(total))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory appending to the history");
        goto out;
    }
    /* One write and one fsync per segment the batch touches (usually one). */
    size_t i = 0;
    while (i < n) {
        uint64_t seq = head_seq + 1 + i;
        uint64_t first = bd_segment_first(seq);
        size_t j = i, blen = 0;
        while (j < n && bd_segment_first(head_seq + 1 + j) == first) {
            memcpy(buf + blen, pd[j].bytes, pd[j].len);
            buf[blen + pd[j].len] = '\n';
            blen += pd[j].len + 1;
            j++;
        }
        off_t expect = t.first == first ? t.whole : 0;
        bool created;
        char name[17], path[PATH_MAX + 32];
        bd_segment_name(name, first);
        snprintf(path, sizeof(path), "%s/%s", h->segdir, name);
        if ((fd = open_for_append(h, first, expect, &created, err)) < 0)
            goto out;
        if (write_all(fd, buf, blen) != 0 || fdatasync(fd) != 0) {
            int e = errno;
            /* Leave no partial record behind; the append failed as a whole. */
            if (ftruncate(fd, expect) == 0)
                fsync(fd);
            bd_err_errno(err, BD_E_IO, e, path,
                         "cannot write or sync the history segment: nothing was appended from "
                         "seq %llu on (the segment is cut back to its last whole record)",
                         (unsigned long long)seq);
            goto out;
        }
        if (created && fsync(h->segfd) != 0) {
            bd_err_errno(err, BD_E_IO, errno, path,
                         "the new segment was written but the segments directory could not be "
                         "synced, so it may not survive a crash; check the disk");
            goto out;
        }
        close(fd);
        fd = -1;
        t.first = first;
        t.whole = expect + (off_t)blen;
        i = j;
    }
    if (first_out)
        *first_out = head_seq + 1;
    if (hashes_out)
        for (size_t k = 0; k < n; k++)
            bd_hex(hashes_out[k], hashes[k], 32);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (lockfd >= 0)
        close(lockfd); /* releases the flock */
    if (pd)
        for (size_t k = 0; k < n; k++)
            free(pd[k].bytes);
    free(pd);
    free(buf);
    free(hashes);
    free(b.p);
    return rc;
}

int bd_history_repair_tail(bd_history *h, bd_err *err)
{
    int rc = -1, lockfd = -1, fd = -1;
    rbuf b = {NULL, 0};
    uint64_t head_seq;
    uint8_t head_hash[32];
    segtail t;
    h->repair[0] = '\0';
    if (open_dirfd(h, false, err) != 0)
        return -1;
    if (!is_v2(h))
        return 0; /* no history yet, or one file per record: no line to tear */
    if ((lockfd = take_lock(h, err)) < 0)
        goto out;
    if (find_head_v2(h, &b, &head_seq, head_hash, &t, err) != 0)
        goto out;
    /* The segment the next append writes to, as append_records picks it; absent: nothing
     * to repair (and it is not created here). */
    uint64_t first = bd_segment_first(head_seq + 1);
    char name[17];
    bd_segment_name(name, first);
    struct stat st;
    if (fstatat(h->segfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
        rc = 0;
        goto out;
    }
    bool created;
    if ((fd = open_for_append(h, first, t.first == first ? t.whole : 0, &created, err)) < 0)
        goto out;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (lockfd >= 0)
        close(lockfd);
    free(b.p);
    return rc;
}

static int append_record(bd_history *h, cJSON *rec, uint64_t *seq_out, char hash_out[BD_HASH_BUF],
                         bd_err *err)
{
    char hash[1][BD_HASH_BUF];
    if (append_records(h, &rec, 1, seq_out, hash, err) != 0)
        return -1;
    if (hash_out)
        memcpy(hash_out, hash[0], BD_HASH_BUF);
    return 0;
}

/* Build the score record of `f` and `s` without seq and prev_hash into *out (new tree). */
static int build_score(const bd_history_score_fields *f, const bd_score *s, cJSON **out,
                       bd_err *err)
{
    int rc = -1;
    *out = NULL;
    cJSON *rec = cJSON_CreateObject();
    cJSON *score = s ? bd_score_to_json(s) : NULL;
    if (!f || !s) {
        bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                   "no fields or no score given for the history record");
        goto out;
    }
    if (!rec || !score)
        goto oom;
    cJSON *sv = cJSON_CreateNumber(BD_HISTORY_SCHEMA_VERSION);
    if (!sv || !cJSON_AddItemToObject(rec, "schema_version", sv)) {
        cJSON_Delete(sv);
        goto oom;
    }
    if (!set_str(rec, "run_id", f->run_id) || !set_str(rec, "task_class", f->task_class) ||
        !set_str(rec, "case_id", f->case_id) || !set_str(rec, "case_digest", f->case_digest) ||
        !set_str(rec, "task_class_digest", f->task_class_digest) ||
        !set_str(rec, "run_scope", f->run_full ? "full" : "subset") ||
        !set_str(rec, "cassette_digest", f->cassette_digest) ||
        !set_str(rec, "harness_version", f->harness_version ? f->harness_version : BD_VERSION) ||
        !set_str(rec, "isolation_class", f->isolation_class) ||
        !set_str(rec, "operator_fingerprint", f->operator_fingerprint) ||
        !set_str(rec, "started_at", f->started_at) || !set_str(rec, "finished_at", f->finished_at))
        goto oom;
    cJSON *pv = cJSON_CreateBool(f->provenance_verified);
    if (!pv || !cJSON_AddItemToObject(rec, "provenance_verified", pv)) {
        cJSON_Delete(pv);
        goto oom;
    }
    cJSON *rc_n = cJSON_CreateNumber((double)f->run_cases);
    if (!rc_n || !cJSON_AddItemToObject(rec, "run_cases", rc_n)) {
        cJSON_Delete(rc_n);
        goto oom;
    }
    if (f->origin && f->origin->present) {
        cJSON *o = cJSON_AddObjectToObject(rec, "origin");
        if (!o || !set_str(o, "run_id", f->origin->run_id) ||
            !cJSON_AddNumberToObject(o, "shard", f->origin->shard) ||
            !cJSON_AddNumberToObject(o, "shards", f->origin->shards) ||
            !set_str(o, "bundle_record_hash", f->origin->bundle_record_hash) ||
            !set_str(o, "host", f->origin->host))
            goto oom;
    }
    if (!cJSON_AddItemToObject(rec, "score", score))
        goto oom;
    score = NULL;
    /* A required string given as NULL became null: check_schema names it. */
    *out = rec;
    rec = NULL;
    rc = 0;
    goto out;
oom:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
out:
    cJSON_Delete(score);
    cJSON_Delete(rec);
    return rc;
}

int bd_history_append_score(bd_history *h, const bd_history_score_fields *f, const bd_score *s,
                            uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err)
{
    cJSON *rec;
    if (build_score(f, s, &rec, err) != 0)
        return -1;
    int rc = append_record(h, rec, seq_out, hash_out, err);
    cJSON_Delete(rec);
    return rc;
}

int bd_history_append_batch(bd_history *h, const bd_history_score_fields *f,
                            const bd_score *const *s, size_t n, uint64_t *first_seq_out,
                            char (*hashes_out)[BD_HASH_BUF], bd_err *err)
{
    cJSON **recs = calloc(n ? n : 1, sizeof(*recs));
    int rc = -1;
    if (!recs)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory appending to the history");
    size_t built = 0;
    for (; built < n; built++)
        if (build_score(&f[built], s[built], &recs[built], err) != 0)
            goto out;
    rc = append_records(h, recs, n, first_seq_out, hashes_out, err);
out:
    for (size_t i = 0; i < built; i++)
        cJSON_Delete(recs[i]);
    free(recs);
    return rc;
}

int bd_history_append_audit(bd_history *h, const bd_history_audit_fields *f, uint64_t *seq_out,
                            char hash_out[BD_HASH_BUF], bd_err *err)
{
    int rc = -1;
    char now[21];
    cJSON *rec = cJSON_CreateObject();
    if (!f) {
        bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                   "no fields given for the audit record");
        goto out;
    }
    if (!rec)
        goto oom;
    bd_utc_now(now);
    cJSON *sv = cJSON_CreateNumber(BD_HISTORY_SCHEMA_VERSION);
    if (!sv || !cJSON_AddItemToObject(rec, "schema_version", sv)) {
        cJSON_Delete(sv);
        goto oom;
    }
    if (!set_str(rec, "kind", "audit") || !set_str(rec, "event", f->event) ||
        !set_str(rec, "task_class", f->task_class) ||
        !set_str(rec, "detail", f->detail ? f->detail : "") ||
        !set_str(rec, "operator_fingerprint", f->operator_fingerprint) ||
        !set_str(rec, "harness_version", f->harness_version ? f->harness_version : BD_VERSION) ||
        !set_str(rec, "at", f->at ? f->at : now))
        goto oom;
    rc = append_record(h, rec, seq_out, hash_out, err);
    goto out;
oom:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
out:
    cJSON_Delete(rec);
    return rc;
}

/* ---- verifying ---------------------------------------------------------------------- */

typedef struct vctx {
    bd_history *h;
    src s;                 /* records read on their own (failures, neighbours) */
    uint8_t (*hashes)[32]; /* keep_all: hashes[i] is record i+1's */
    size_t n, cap;
    uint8_t last[32]; /* record n's hash */
    /* Every hash is kept only when asked for, or to explain a failure: a lean walk that
     * finds one sets need_full and the walk starts again keeping them (classify looks
     * back at any earlier record). A million hashes are 32 MB. */
    bool keep_all, need_full;
    const bd_history_verify_opts *o;
    size_t *want_order; /* indexes into o->want, by seq */
    size_t want_next;
    uint8_t (*want_hashes)[32];
    size_t needle_len;
    bool visit_stopped;
    uint64_t max_seq; /* the highest seq present (ensure_max: known only when needed) */
    bool max_known;
    bool hint_ok;
    uint64_t hint_seq;
    uint8_t hint_hash[32];
} vctx;

static const uint8_t zero_hash[32];

/* Only a failing record needs the highest seq (to tell "missing" from "inserted"). */
static void ensure_max(vctx *v)
{
    if (v->max_known)
        return;
    v->max_known = true;
    if (!is_v2(v->h))
        return;
    segtail t;
    uint8_t hash[32];
    bd_err ignored = BD_ERR_INIT;
    uint64_t seq = 0;
    if (find_head_v2(v->h, &v->s.b, &seq, hash, &t, &ignored) == 0)
        v->max_seq = seq;
}

/* Record j's hash: any j with keep_all, else only the last one (j == v->n). */
static const uint8_t *hash_of(const vctx *v, uint64_t j)
{
    if (j == 0)
        return zero_hash;
    if (v->keep_all)
        return v->hashes[j - 1];
    return j == v->n ? v->last : zero_hash;
}

static int hex_distance(const uint8_t a[32], const uint8_t b[32])
{
    int d = 0;
    for (int i = 0; i < 32; i++)
        d += ((a[i] ^ b[i]) & 0xf0 ? 1 : 0) + ((a[i] ^ b[i]) & 0x0f ? 1 : 0);
    return d;
}

#define ADVICE                                                                                     \
    "the history can no longer be trusted: restore .benchdesk/history from a backup "              \
    "(checked against the last anchor) and find out who changed it"

/* Why record k (parsed: core, hash hk) does not continue the chain, following the rules
 * in docs/history.md. Sets *bad and returns the reason; msg gets the explanation. */
static bd_chain_reason classify(vctx *v, uint64_t k, const rec_core *core, const uint8_t hk[32],
                                uint64_t *bad, char *msg, size_t msize)
{
    const uint8_t *prevh = hash_of(v, k - 1);
    ensure_max(v);
    unsigned long long K = (unsigned long long)k, M = (unsigned long long)core->seq;
    *bad = k;
    if (core->seq != k && memcmp(core->prev, prevh, 32) == 0) {
        snprintf(msg, msize,
                 "record %llu was edited: it links to record %llu but its seq field "
                 "says %llu",
                 K, K - 1, M);
        return BD_CHAIN_EDITED;
    }
    if (core->seq < k && memcmp(hk, hash_of(v, core->seq), 32) == 0) {
        snprintf(msg, msize, "record %llu was inserted: it is a copy of record %llu", K, M);
        return BD_CHAIN_INSERTED;
    }
    for (uint64_t j = k >= 2 ? k - 2 : 0; j >= 1; j--) {
        if (memcmp(core->prev, hash_of(v, j), 32) == 0) {
            *bad = j + 1;
            if (j + 1 == k - 1)
                snprintf(msg, msize,
                         "record %llu was inserted: the record in file %llu links to record "
                         "%llu, past it",
                         K - 1, K, (unsigned long long)j);
            else
                snprintf(msg, msize,
                         "record %llu was inserted: the record in file %llu links to record "
                         "%llu, so records %llu..%llu do not belong in the chain",
                         (unsigned long long)(j + 1), K, (unsigned long long)j,
                         (unsigned long long)(j + 1), K - 1);
            return BD_CHAIN_INSERTED;
        }
    }
    rec_core other;
    uint8_t oh[32];
    bd_chain_reason oreason;
    char why[256];
    bd_err ignored = BD_ERR_INIT;
    if (core->seq != k) {
        if (core->seq > k) {
            if (core->seq <= v->max_seq &&
                load_core(v->h, &v->s, core->seq, &other, oh, &oreason, why, &ignored) == RD_OK &&
                other.seq == k) {
                snprintf(msg, msize,
                         "records %llu and %llu were reordered: each file holds the other's "
                         "record",
                         K, M);
                return BD_CHAIN_REORDERED;
            }
            if (M == K + 1)
                snprintf(msg, msize,
                         "record %llu is missing: its file holds record %llu, so record %llu "
                         "was removed and later ones renumbered",
                         K, M, K);
            else
                snprintf(msg, msize,
                         "record %llu is missing: its file holds record %llu, so records "
                         "%llu..%llu were removed and later ones renumbered",
                         K, M, K, M - 1);
            return BD_CHAIN_MISSING;
        }
        snprintf(msg, msize,
                 "record %llu was spliced in: its file holds a record numbered %llu that links "
                 "to no record of this chain",
                 K, M);
        return BD_CHAIN_SPLICED;
    }
    if (hex_distance(core->prev, prevh) <= EDIT_DISTANCE_MAX) {
        snprintf(msg, msize,
                 "record %llu was edited: its prev_hash differs from record %llu's hash in a "
                 "few digits",
                 K, K - 1);
        return BD_CHAIN_EDITED;
    }
    /* Is record k itself intact? Its successor's prev_hash (or the HEAD hint, for the
     * last record) says what its hash was when it was appended. */
    bool known = false, vouched = false;
    if (k < v->max_seq) {
        int rc = load_core(v->h, &v->s, k + 1, &other, oh, &oreason, why, &ignored);
        if (rc != RD_ABSENT && rc != RD_ERROR)
            known = true;
        vouched = rc == RD_OK && memcmp(other.prev, hk, 32) == 0;
    } else if (v->hint_ok && v->hint_seq == k) {
        known = true;
        vouched = memcmp(v->hint_hash, hk, 32) == 0;
    }
    if (k == 1) {
        if (vouched) {
            snprintf(msg, msize,
                     "record 1 is missing: the first record does not link to the genesis "
                     "(64 zeros), so records before it were removed and the rest renumbered");
            return BD_CHAIN_MISSING;
        }
        snprintf(msg, msize, "record 1 was spliced in: it does not link to the genesis (64 zeros)");
        return BD_CHAIN_SPLICED;
    }
    if (vouched || !known) {
        *bad = k - 1;
        if (known)
            snprintf(msg, msize,
                     "record %llu was edited: its bytes no longer hash to the prev_hash that "
                     "record %llu commits to",
                     K - 1, K);
        else
            snprintf(msg, msize,
                     "record %llu was edited: its bytes no longer hash to the prev_hash that "
                     "record %llu commits to (or record %llu, the last one, was replaced)",
                     K - 1, K, K);
        return BD_CHAIN_EDITED;
    }
    snprintf(msg, msize,
             "record %llu was spliced in from another history: it links to no record of this "
             "chain and its successor does not link to it",
             K);
    return BD_CHAIN_SPLICED;
}

static int push_hash(vctx *v, const uint8_t h[32])
{
    if (v->keep_all && v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        void *p = realloc(v->hashes, cap * 32);
        if (!p)
            return -1;
        v->hashes = p;
        v->cap = cap;
    }
    if (v->keep_all)
        memcpy(v->hashes[v->n], h, 32);
    memcpy(v->last, h, 32);
    v->n++;
    const bd_history_verify_opts *o = v->o;
    while (v->want_next < o->n_want && o->want[v->want_order[v->want_next]] <= v->n) {
        size_t i = v->want_order[v->want_next++];
        if (o->want[i] == v->n)
            memcpy(v->want_hashes[i], h, 32);
    }
    return 0;
}

/* Record k (just linked, hash h, bytes p/len) to the caller's visitor. Returns 0, or -1
 * when the visitor stopped the walk. */
static int visit_record(vctx *v, uint64_t k, const uint8_t h[32], const char *p, size_t len)
{
    const bd_history_visit *vis = v->o->visit;
    if (!vis || !vis->fn)
        return 0;
    if (vis->needle && !memmem(p, len, vis->needle, v->needle_len))
        return 0;
    if (vis->fn(k, p, len, h, vis->ctx) != 0) {
        v->visit_stopped = true;
        return -1;
    }
    return 0;
}

/* The record is linked: its hash onto the chain, then to the visitor. */
static int accept_record(vctx *v, uint64_t k, const uint8_t h[32], const char *p, size_t len,
                         bd_err *err)
{
    if (push_hash(v, h) != 0)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
    return visit_record(v, k, h, p, len);
}

static int report(vctx *v, bd_history_verify_result *res, uint64_t bad, bd_chain_reason reason,
                  const char *what, bd_err *err)
{
    char path[PATH_MAX + 32];
    if (!v->keep_all) {
        v->need_full = true; /* the intact prefix's head may be any record: walk again */
        return -1;
    }
    record_path(path, sizeof(path), v->h, bad);
    res->reason = reason;
    res->bad_seq = bad;
    res->count = bad > 0 ? bad - 1 : 0;
    if (res->count > v->n)
        res->count = v->n;
    bd_hex(res->head, hash_of(v, res->count), 32);
    return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, rec_line(v->h, bad), 0, "%s (%s); %s", what,
                      bd_chain_reason_str(reason), ADVICE);
}

/* A record whose schema_version is an integer above the newest this benchdesk writes:
 * written by a newer benchdesk, which a reader cannot judge (not tampering). */
static bool newer_record(const char *p, size_t len)
{
    static const char *const key[1] = {"schema_version"};
    const char *val;
    size_t vl;
    if (bd_record_members(p, len, key, 1, &val, &vl) != 1 || vl == 0 || vl > 9 || val[0] == '0')
        return false;
    long n = 0;
    for (size_t i = 0; i < vl; i++) {
        if (val[i] < '0' || val[i] > '9')
            return false;
        n = n * 10 + (val[i] - '0');
    }
    return n > BD_HISTORY_SCHEMA_VERSION;
}

static int newer(vctx *v, bd_history_verify_result *res, uint64_t k, bd_err *err)
{
    char path[PATH_MAX + 32];
    record_path(path, sizeof(path), v->h, k);
    res->bad_seq = k;
    res->count = v->n;
    bd_hex(res->head, v->n ? v->last : zero_hash, 32);
    return bd_err_set(err, BD_E_HISTORY_NEWER, path, rec_line(v->h, k), 0,
                      "record %llu was written by a newer benchdesk (schema_version above %d): "
                      "this one cannot check it; upgrade benchdesk",
                      (unsigned long long)k, BD_HISTORY_SCHEMA_VERSION);
}

/* Check record k on its own (reading it again, with messages). Returns 0 when it is
 * intact and links (accepted), else -1 with the failure reported into res/err. */
static int verify_one(vctx *v, uint64_t k, bd_history_verify_result *res, bd_err *err)
{
    size_t len;
    const char *p;
    char why[256], msg[768];
    int r = get_rec(v->h, &v->s, k, &p, &len, why, err);
    if (r == RD_ERROR)
        return -1;
    if (r == RD_ABSENT) {
        ensure_max(v);
        snprintf(msg, sizeof(msg), "record %llu is missing although records up to %llu exist",
                 (unsigned long long)k, (unsigned long long)v->max_seq);
        return report(v, res, k, BD_CHAIN_MISSING, msg, err);
    }
    if (r == RD_BAD) {
        snprintf(msg, sizeof(msg), "record %llu is unparseable: %s", (unsigned long long)k, why);
        return report(v, res, k, BD_CHAIN_UNPARSEABLE, msg, err);
    }
    rec_core core;
    bd_chain_reason reason = parse_record(p, len, &core, NULL, why);
    if (reason != BD_CHAIN_OK) {
        if (strcmp(why, "out of memory") == 0)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
        if (newer_record(p, len))
            return newer(v, res, k, err);
        snprintf(msg, sizeof(msg), "record %llu is %s: %s", (unsigned long long)k,
                 reason == BD_CHAIN_UNPARSEABLE ? "unparseable" : "schema-invalid", why);
        return report(v, res, k, reason, msg, err);
    }
    uint8_t hk[32];
    bd_history_record_hash(hk, core.prev, p, len);
    if (core.seq == k && memcmp(core.prev, hash_of(v, k - 1), 32) == 0)
        return accept_record(v, k, hk, p, len, err);
    if (!v->keep_all) {
        v->need_full = true;
        return -1;
    }
    uint64_t bad;
    reason = classify(v, k, &core, hk, &bad, msg, sizeof(msg));
    return report(v, res, bad, reason, msg, err);
}

/* The parallel part of verify: reading, parsing, validating and hashing records are
 * independent, so worker threads do them for a window of records; linking them is then
 * a cheap sequential pass. Anything not plainly fine is redone by verify_one, which
 * alone decides and explains.
 *
 * In the fast mode (records up to a head an earlier full verify saw, below) the workers
 * only compute each record's BLAKE3 and the linking thread chains them as they become
 * ready, helping with the hashing whenever it would otherwise wait. */
typedef struct vslot {
    uint64_t seq;
    uint8_t prev[32];
    uint8_t hash[32]; /* the record hash */
    bool ok;
    atomic_int ready;
} vslot;

typedef struct vwork {
    const bd_history *h;
    const bd_segbuf *seg; /* version 2: the window's segment (lines from seg_lo) */
    size_t seg_lo;
    vslot *slots;
    uint64_t base;
    size_t n;
    bool fast;
    atomic_size_t next;
} vwork;

/* The prev_hash member of record bytes already verified once (the fast mode): in canonical
 * JSON a quote inside a string is escaped and no other member named prev_hash holds a
 * string, so its first occurrence is the top-level member. False when absent. */
static bool fast_prev(const char *p, size_t len, uint8_t prev[32])
{
    static const char pat[] = "\"prev_hash\":\"";
    const char *m = memmem(p, len, pat, sizeof(pat) - 1);
    char hex[BD_HASH_BUF];
    if (!m || (size_t)(p + len - m) < sizeof(pat) - 1 + 65)
        return false;
    m += sizeof(pat) - 1;
    if (m[64] != '"')
        return false;
    memcpy(hex, m, 64);
    hex[64] = '\0';
    return bd_hash_unhex(prev, hex) == 0;
}

/* The fast mode's slots [i, end) of a segment: each record's BLAKE3 (many at once), then
 * its hash from its own prev_hash member, so hashing runs on every thread and linking is a
 * comparison (see verify_window_run). */
static void work_batch_fast(vwork *w, size_t i, size_t end)
{
    const uint8_t *in[VERIFY_BATCH] = {NULL};
    size_t lens[VERIFY_BATCH] = {0};
    uint8_t b3[VERIFY_BATCH][32];
    size_t n = end - i;
    for (size_t j = 0; j < n; j++)
        in[j] = (const uint8_t *)bd_segbuf_line(w->seg, w->seg_lo + i + j, &lens[j]);
    bd_blake3_many(in, lens, n, b3);
    /* The chain messages of the records whose prev_hash was found, SHA-256'd together. */
    uint8_t msg[VERIFY_BATCH][CHAIN_TAG_LEN + 64];
    const uint8_t *msgs[VERIFY_BATCH];
    uint8_t hashes[VERIFY_BATCH][32];
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        vslot *s = &w->slots[i + j];
        s->ok = fast_prev((const char *)in[j], lens[j], s->prev);
        if (s->ok) {
            memcpy(msg[m], CHAIN_TAG, CHAIN_TAG_LEN);
            memcpy(msg[m] + CHAIN_TAG_LEN, s->prev, 32);
            memcpy(msg[m] + CHAIN_TAG_LEN + 32, b3[j], 32);
            msgs[m] = msg[m];
            m++;
        }
    }
    bd_sha256_many(msgs, CHAIN_TAG_LEN + 64, m, hashes);
    for (size_t j = 0, k = 0; j < n; j++) {
        vslot *s = &w->slots[i + j];
        if (s->ok)
            memcpy(s->hash, hashes[k++], 32);
        atomic_store_explicit(&s->ready, 1, memory_order_release);
    }
}

/* Do slots [i, end). */
static void work_batch(vwork *w, size_t i, size_t end, rbuf *b)
{
    if (w->fast && w->seg && end - i <= VERIFY_BATCH) {
        work_batch_fast(w, i, end);
        return;
    }
    for (; i < end; i++) {
        vslot *s = &w->slots[i];
        bd_err ignored;
        rec_core core;
        size_t len = 0;
        const char *p = NULL;
        s->ok = false;
        if (w->seg) {
            p = bd_segbuf_line(w->seg, w->seg_lo + i, &len);
        } else if (read_record_file(w->h, w->base + i, b, &len, NULL, &ignored) == RD_OK) {
            p = b->p;
        }
        if (p && w->fast) {
            /* Each record's hash from its own bytes and its prev_hash member, so hashing
             * runs on every thread and linking is a comparison (see verify_window_run). */
            s->ok = fast_prev(p, len, s->prev);
            if (s->ok)
                bd_history_record_hash(s->hash, s->prev, p, len);
        } else if (p && parse_record(p, len, &core, NULL, NULL) == BD_CHAIN_OK) {
            s->seq = core.seq;
            memcpy(s->prev, core.prev, 32);
            bd_history_record_hash(s->hash, core.prev, p, len);
            s->ok = true;
        }
        atomic_store_explicit(&s->ready, 1, memory_order_release);
    }
}

/* Claim and do one batch; false when none is left. */
static bool work_one(vwork *w, rbuf *b)
{
    size_t i = atomic_fetch_add(&w->next, VERIFY_BATCH);
    if (i >= w->n)
        return false;
    work_batch(w, i, i + VERIFY_BATCH < w->n ? i + VERIFY_BATCH : w->n, b);
    return true;
}

static void *verify_worker(void *arg)
{
    vwork *w = arg;
    rbuf b = {NULL, 0};
    while (work_one(w, &b))
        ;
    free(b.p);
    return NULL;
}

static size_t verify_window = VERIFY_WINDOW;

void bd_history_test_verify_window(size_t n)
{
    verify_window = n ? n : VERIFY_WINDOW;
}

static int verify_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > VERIFY_MAX_THREADS ? VERIFY_MAX_THREADS : (int)n;
}

enum { WIN_OK = 0, WIN_FAIL = -1, WIN_FAST_BROKE = 1 };

/* The bytes of slot i of a window, for the visitor: from the segment in memory, or read
 * again in a version-1 layout (NULL with err when that fails). Without a visitor: "". */
static const char *window_record(vctx *v, const vwork *w, size_t i, size_t *len, rbuf *b,
                                 bd_err *err)
{
    static const char none[1] = "";
    *len = 0;
    if (!v->o->visit)
        return none;
    if (w->seg)
        return bd_segbuf_line(w->seg, w->seg_lo + i, len);
    char why[256];
    bd_err e = BD_ERR_INIT;
    if (read_record_file(w->h, w->base + i, b, len, why, &e) == RD_OK)
        return b->p;
    if (e.code != BD_OK) {
        if (err)
            *err = e;
    } else {
        bd_err_set(err, BD_E_IO, NULL, 0, 0, "history record %llu could not be read again: %s",
                   (unsigned long long)(w->base + i), why);
    }
    return NULL;
}

/* Verify records base..base+n-1 (from w's source) and link them onto the chain. In the
 * fast mode returns WIN_FAST_BROKE at the first record that does not chain (the caller
 * starts again in the full mode, which explains it). */
static int verify_window_run(vctx *v, vwork *w, bd_history_verify_result *res, bd_err *err)
{
    pthread_t tids[VERIFY_MAX_THREADS];
    int started = 0, nthreads = verify_threads();
    rbuf b = {NULL, 0};
    int rc = WIN_OK;
    for (size_t i = 0; i < w->n; i++)
        atomic_store_explicit(&w->slots[i].ready, 0, memory_order_relaxed);
    atomic_store(&w->next, 0);
    for (int t = 1; t < nthreads && w->n > VERIFY_BATCH; t++)
        if (pthread_create(&tids[started], NULL, verify_worker, w) == 0)
            started++;
    if (!w->fast) {
        while (work_one(w, &b))
            ;
    }
    for (size_t i = 0; i < w->n; i++) {
        uint64_t k = w->base + i;
        vslot *s = &w->slots[i];
        while (!atomic_load_explicit(&s->ready, memory_order_acquire))
            if (!work_one(w, &b))
                sched_yield();
        if (w->fast) {
            /* Record k's hash was computed over its bytes with the prev_hash it holds; the
             * chain is the same as one computed link after link exactly when that prev_hash
             * is record k-1's hash, so a comparison is the link. Any doubt: the full mode. */
            if (!s->ok || memcmp(s->prev, hash_of(v, k - 1), 32) != 0) {
                rc = WIN_FAST_BROKE;
                break;
            }
        } else if (!(s->ok && s->seq == k && memcmp(s->prev, hash_of(v, k - 1), 32) == 0)) {
            if (verify_one(v, k, res, err) != 0) {
                rc = WIN_FAIL;
                break;
            }
            continue;
        }
        size_t len = 0;
        const char *p = window_record(v, w, i, &len, &b, err);
        if (!p || accept_record(v, k, s->hash, p, len, err) != 0) {
            rc = WIN_FAIL;
            break;
        }
    }
    atomic_store(&w->next, w->n); /* stop the workers early on a failure */
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(b.p);
    return rc;
}

/* The verified-head memo, history/VERIFIED: "<count, 10 digits> <record_hash>
 * <byte offset of record count in its segment, 12 digits>\n", written by a verify that
 * found the chain intact. Records up to it need not be parsed again: if the chain
 * recomputed over their bytes arrives at the same hash, the bytes are those that were
 * parsed and checked then. It is only ever believed after that recomputation. */
#define MEMO_LEN 89

static int read_memo(const bd_history *h, uint64_t *seq, uint8_t hash[32], uint64_t *off)
{
    char buf[MEMO_LEN + 1];
    int fd = openat(h->dirfd, VERIFIED_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n != MEMO_LEN || buf[10] != ' ' || buf[75] != ' ' || buf[88] != '\n')
        return -1;
    buf[75] = '\0';
    uint64_t v = 0, o = 0;
    for (int i = 0; i < 10; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(buf[i] - '0');
    }
    for (int i = 76; i < 88; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        o = o * 10 + (uint64_t)(buf[i] - '0');
    }
    if (v == 0 || bd_hash_unhex(hash, buf + 11) != 0)
        return -1;
    *seq = v;
    *off = o;
    return 0;
}

/* Best effort: a memo that is missing or wrong only costs a slower verify. */
static void write_memo(const bd_history *h, uint64_t seq, const uint8_t hash[32], uint64_t off)
{
    char buf[MEMO_LEN + 8], hex[BD_HASH_BUF];
    if (h->dirfd < 0 || seq == 0)
        return;
    bd_hex(hex, hash, 32);
    int n = snprintf(buf, sizeof(buf), "%010llu %s %012llu\n", (unsigned long long)seq, hex,
                     (unsigned long long)off);
    int fd = openat(h->dirfd, VERIFIED_NAME, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) != 0)
        unlinkat(h->dirfd, VERIFIED_NAME, 0);
    close(fd);
}

static int verify_v1(vctx *v, bd_history_verify_result *res, bd_err *err)
{
    bool has_zero = false;
    v->max_known = true;
    if (scan_dir(v->h, &v->max_seq, &has_zero, false, err) != 0)
        return -1;
    if (has_zero)
        return report(v, res, 0, BD_CHAIN_INSERTED,
                      "a record numbered 0 was inserted before the genesis record", err);
    v->hint_ok = read_head_hint(v->h, &v->hint_seq, v->hint_hash) == 0;
    vslot *slots = NULL;
    if (v->max_seq > 0) {
        size_t cap = v->max_seq < verify_window ? (size_t)v->max_seq : verify_window;
        if (!(slots = calloc(cap, sizeof(*slots))))
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
    }
    int rc = 0;
    for (uint64_t base = 1; base <= v->max_seq && rc == 0; base += verify_window) {
        uint64_t left = v->max_seq - base + 1;
        vwork w = {v->h,  NULL, 0, slots, base, left < verify_window ? (size_t)left : verify_window,
                   false, 0};
        rc = verify_window_run(v, &w, res, err) == WIN_OK ? 0 : -1;
    }
    free(slots);
    return rc;
}

/* Version 2: segment by segment. Returns 0, -1, or 1 when the fast mode must be given up
 * (the caller verifies again in the full mode). */
static int verify_v2(vctx *v, bool fast_ok, bd_history_verify_result *res, uint64_t *last_off,
                     bd_err *err)
{
    uint64_t *segs = NULL;
    size_t nseg = 0;
    vslot *slots = NULL;
    bd_segstream win = {.fd = -1};
    char msg[512], why[256];
    int rc = -1;
    if (bd_segment_list(v->h->segfd, v->h->segdir, &segs, &nseg, err) != 0)
        return -1;
    for (size_t i = 0; i < nseg; i++) {
        if ((segs[i] - 1) % BD_SEGMENT_RECORDS != 0 || segs[i] == 0) {
            char name[17];
            bd_segment_name(name, segs[i]);
            snprintf(msg, sizeof(msg),
                     "segment file %s is not named after the first record of a segment (every "
                     "segment starts at 1 + a multiple of 65536): it was renamed or planted",
                     name);
            report(v, res, segs[i] ? segs[i] : 1, BD_CHAIN_INSERTED, msg, err);
            goto out;
        }
    }
    if (nseg == 0) {
        rc = 0;
        goto out;
    }
    uint64_t last = segs[nseg - 1];
    uint64_t memo_seq = 0, memo_off = 0;
    uint8_t memo_hash[32];
    /* The head an earlier verify saw vouches for that record's bytes, as HEAD did in the
     * version-1 layout: it only tells an edited last record from a spliced one (naming
     * the reason of a failure), never whether the chain is intact. */
    if (read_memo(v->h, &memo_seq, memo_hash, &memo_off) == 0) {
        v->hint_ok = true;
        v->hint_seq = memo_seq;
        memcpy(v->hint_hash, memo_hash, 32);
    }
    /* Records up to a trusted head (an anchor's) are re-hashed, not re-parsed, when the
     * chain recomputed over their bytes arrives at it; a trusted head beyond the chain (a
     * truncation) is noticed when the walk ends before it. */
    bool fast = fast_ok && v->o->trusted_count > 0;
    uint64_t trust_seq = fast ? v->o->trusted_count : 0;
    const uint8_t *trust_hash = v->o->trusted_head;
    if (!(slots = calloc(BD_SEGMENT_RECORDS, sizeof(*slots)))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
        goto out;
    }
    for (uint64_t first = 1; first <= last; first += BD_SEGMENT_RECORDS) {
        char name[17];
        bd_segment_name(name, first);
        int r = bd_segstream_open(&win, v->h->segfd, v->h->segdir, first, why, err);
        if (r == BD_SEG_ERROR)
            goto out;
        if (r == BD_SEG_ABSENT) {
            snprintf(msg, sizeof(msg),
                     "segment %s is missing: records %llu..%llu were removed while later "
                     "segments remain",
                     name, (unsigned long long)first,
                     (unsigned long long)(first + BD_SEGMENT_RECORDS - 1));
            report(v, res, first, BD_CHAIN_MISSING, msg, err);
            goto out;
        }
        if (r == BD_SEG_BAD) {
            snprintf(msg, sizeof(msg), "records from %llu on are unreadable: %s",
                     (unsigned long long)first, why);
            report(v, res, first, BD_CHAIN_UNPARSEABLE, msg, err);
            goto out;
        }
        size_t seen = 0; /* lines of this segment checked so far */
        bool more = true;
        while (more) {
            if (bd_segstream_next(&win, v->h->segdir, err) != 0)
                goto out;
            more = !win.eof;
            size_t m = win.b.nlines;
            bool over = seen + m > BD_SEGMENT_RECORDS;
            if (over)
                m = BD_SEGMENT_RECORDS - seen;
            size_t done = 0;
            while (done < m) {
                uint64_t k = first + seen + done;
                bool in_fast = fast && k <= trust_seq;
                size_t cnt = in_fast ? (size_t)(trust_seq - k + 1) : m - done;
                if (cnt > m - done)
                    cnt = m - done;
                vwork w = {v->h, &win.b, done, slots, k, cnt, in_fast, 0};
                int wr = verify_window_run(v, &w, res, err);
                if (wr == WIN_FAST_BROKE) {
                    rc = 1;
                    goto out;
                }
                if (wr != WIN_OK)
                    goto out;
                if (in_fast && k + cnt - 1 == trust_seq &&
                    memcmp(hash_of(v, trust_seq), trust_hash, 32) != 0) {
                    rc = 1; /* the bytes are not those verified before: check everything */
                    goto out;
                }
                done += cnt;
            }
            if (over) {
                snprintf(msg, sizeof(msg),
                         "segment %s holds more than 65536 records: records were inserted", name);
                report(v, res, first + BD_SEGMENT_RECORDS, BD_CHAIN_INSERTED, msg, err);
                goto out;
            }
            if (m > 0 && first == last)
                *last_off = win.pos + win.b.off[m - 1];
            seen += m;
        }
        if (first != last && win.b.torn > 0) {
            snprintf(msg, sizeof(msg),
                     "segment %s ends in a line without its newline although later segments "
                     "exist: record %llu was cut",
                     name, (unsigned long long)(first + seen));
            report(v, res, first + seen, BD_CHAIN_UNPARSEABLE, msg, err);
            goto out;
        }
        if (first != last && seen < BD_SEGMENT_RECORDS) {
            snprintf(msg, sizeof(msg),
                     "segment %s holds only %zu of its 65536 records although later segments "
                     "exist: record %llu is missing",
                     name, seen, (unsigned long long)(first + seen));
            report(v, res, first + seen, BD_CHAIN_MISSING, msg, err);
            goto out;
        }
        if (first == last)
            res->torn_tail = win.b.torn > 0;
        bd_segstream_close(&win);
    }
    if (fast && trust_seq > v->n) {
        rc = 1; /* the trusted head was never reached: nothing was proven by it */
        goto out;
    }
    rc = 0;
out:
    free(slots);
    free(segs);
    bd_segstream_close(&win);
    return rc;
}

static atomic_uint fast_fallbacks;

unsigned bd_history_test_fast_fallbacks(void)
{
    return atomic_load(&fast_fallbacks);
}

static void vctx_release(vctx *v)
{
    free(v->hashes);
    free(v->want_order);
    free(v->want_hashes);
    src_release(&v->s);
}

/* v->want_order: o->want's indexes by seq (few: one per anchor). */
static int want_prepare(vctx *v, bd_err *err)
{
    const bd_history_verify_opts *o = v->o;
    if (o->n_want == 0)
        return 0;
    v->want_order = malloc(o->n_want * sizeof(*v->want_order));
    v->want_hashes = calloc(o->n_want, 32);
    if (!v->want_order || !v->want_hashes)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
    for (size_t i = 0; i < o->n_want; i++) {
        size_t j = i;
        for (; j > 0 && o->want[v->want_order[j - 1]] > o->want[i]; j--)
            v->want_order[j] = v->want_order[j - 1];
        v->want_order[j] = i;
    }
    return 0;
}

static int verify_chain(bd_history *h, const bd_history_verify_opts *o,
                        bd_history_verify_result *res, bd_err *err)
{
    bool fast_ok = o->trusted_count > 0 && !(o->flags & BD_VERIFY_FULL);
    bool keep_all = (o->flags & BD_VERIFY_KEEP_HASHES) != 0;
    for (;;) {
        vctx v = {0};
        uint64_t last_off = 0;
        v.h = h;
        v.o = o;
        v.keep_all = keep_all;
        v.needle_len = o->visit && o->visit->needle ? strlen(o->visit->needle) : 0;
        memset(res, 0, sizeof(*res));
        bd_hex(res->head, zero_hash, 32);
        if (want_prepare(&v, err) != 0 || open_dirfd(h, false, err) != 0) {
            vctx_release(&v);
            return -1;
        }
        int r = is_v2(h) ? verify_v2(&v, fast_ok, res, &last_off, err) : verify_v1(&v, res, err);
        if (r == 1 || v.need_full) {
            vctx_release(&v);
            if (r == 1 && fast_ok) {
                atomic_fetch_add(&fast_fallbacks, 1);
                fast_ok = false;
            }
            if (v.need_full)
                keep_all = true;
            if (o->visit && o->visit->reset)
                o->visit->reset(o->visit->ctx);
            continue;
        }
        int rc = -1;
        if (r == 0) {
            res->count = v.n;
            bd_hex(res->head, hash_of(&v, v.n), 32);
            res->parsed_from = fast_ok ? o->trusted_count + 1 : 1;
            /* The run gate's tripwire: every record up to here was checked in full now,
             * or when the anchor vouching for them was published. */
            if (is_v2(h) && v.n > 0)
                write_memo(h, v.n, v.last, last_off);
            if (o->flags & BD_VERIFY_KEEP_HASHES) {
                res->hashes = v.hashes;
                v.hashes = NULL;
            }
            rc = 0;
        }
        res->want_hashes = v.want_hashes;
        v.want_hashes = NULL;
        vctx_release(&v);
        return rc;
    }
}

int bd_history_verify_with(bd_history *h, const bd_history_verify_opts *opts,
                           bd_history_verify_result *res, bd_err *err)
{
    static const bd_history_verify_opts none = BD_HISTORY_VERIFY_OPTS_INIT;
    return verify_chain(h, opts ? opts : &none, res, err);
}

int bd_history_verify(bd_history *h, int flags, bd_history_verify_result *res, bd_err *err)
{
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.flags = flags;
    return verify_chain(h, &o, res, err);
}

int bd_history_verify_since(bd_history *h, bd_history_verify_result *res, bd_err *err)
{
    memset(res, 0, sizeof(*res));
    bd_hex(res->head, zero_hash, 32);
    if (open_dirfd(h, false, err) != 0)
        return -1;
    uint64_t memo_seq, memo_off;
    uint8_t memo_hash[32];
    if (!is_v2(h) || read_memo(h, &memo_seq, memo_hash, &memo_off) != 0)
        return bd_history_verify(h, 0, res, err);
    uint64_t *segs = NULL;
    size_t nseg = 0;
    bd_segbuf sb = {0};
    int rc = 1; /* 1: fall back to the full walk */
    if (bd_segment_list(h->segfd, h->segdir, &segs, &nseg, err) != 0)
        return -1;
    uint64_t mfirst = bd_segment_first(memo_seq);
    /* The segments after the memo's must be the ones benchdesk would have written. */
    size_t at = nseg;
    for (size_t i = 0; i < nseg; i++)
        if (segs[i] == mfirst)
            at = i;
    if (at == nseg)
        goto out;
    for (size_t i = at + 1; i < nseg; i++)
        if (segs[i] != segs[i - 1] + BD_SEGMENT_RECORDS)
            goto out;
    /* Record memo_seq must still be where it was, with the same hash. */
    char why[256];
    int r = bd_segbuf_load_from(&sb, h->segfd, h->segdir, mfirst, memo_off, why, err);
    if (r == BD_SEG_ERROR) {
        rc = -1;
        goto out;
    }
    if (r != BD_SEG_OK || sb.nlines == 0)
        goto out;
    uint8_t prev[32];
    uint64_t k = memo_seq;
    uint64_t seg_first = mfirst;
    size_t line = 0;
    uint64_t last_off = memo_off, base_off = memo_off;
    for (;;) {
        for (; line < sb.nlines; line++, k++) {
            size_t len;
            const char *p = bd_segbuf_line(&sb, line, &len);
            rec_core core;
            if (parse_record(p, len, &core, NULL, NULL) != BD_CHAIN_OK || core.seq != k)
                goto out;
            uint8_t hk[32];
            bd_history_record_hash(hk, core.prev, p, len);
            if (k == memo_seq) {
                if (memcmp(hk, memo_hash, 32) != 0)
                    goto out;
            } else if (memcmp(core.prev, prev, 32) != 0) {
                goto out;
            }
            memcpy(prev, hk, 32);
            last_off = base_off + sb.off[line];
        }
        if (k - seg_first > BD_SEGMENT_RECORDS)
            goto out;
        if (seg_first == segs[nseg - 1]) {
            res->torn_tail = sb.torn > 0;
            break;
        }
        if (sb.torn > 0 || k - seg_first != BD_SEGMENT_RECORDS)
            goto out;
        seg_first += BD_SEGMENT_RECORDS;
        r = bd_segbuf_load(&sb, h->segfd, h->segdir, seg_first, why, err);
        if (r == BD_SEG_ERROR) {
            rc = -1;
            goto out;
        }
        if (r != BD_SEG_OK)
            goto out;
        line = 0;
        base_off = 0;
    }
    res->count = k - 1;
    bd_hex(res->head, prev, 32);
    if (k - 1 != memo_seq)
        write_memo(h, k - 1, prev, last_off);
    rc = 0;
out:
    free(segs);
    bd_segbuf_release(&sb);
    if (rc == 1)
        return bd_history_verify(h, 0, res, err);
    return rc;
}

void bd_history_verify_result_release(bd_history_verify_result *r)
{
    if (!r)
        return;
    free(r->hashes);
    r->hashes = NULL;
    free(r->want_hashes);
    r->want_hashes = NULL;
}

/* ---- reading ------------------------------------------------------------------------ */

static int read_src(bd_history *h, src *sr, uint64_t seq, bd_history_record *out, bd_err *err)
{
    size_t len;
    const char *p;
    char why[256], path[PATH_MAX + 32];
    memset(out, 0, sizeof(*out));
    record_path(path, sizeof(path), h, seq);
    int r = get_rec(h, sr, seq, &p, &len, why, err);
    if (r == RD_ERROR)
        return -1;
    if (r == RD_ABSENT)
        return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, rec_line(h, seq), 0,
                          "history record %llu does not exist; run `benchdesk history verify`",
                          (unsigned long long)seq);
    if (r == RD_OK) {
        rec_core core;
        bd_chain_reason reason = parse_record(p, len, &core, out, why);
        if (reason == BD_CHAIN_OK)
            return 0;
        if (strcmp(why, "out of memory") == 0)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    }
    return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, rec_line(h, seq), 0,
                      "history record %llu is not a valid record (%s); run `benchdesk history "
                      "verify`",
                      (unsigned long long)seq, why);
}

int bd_history_read(bd_history *h, uint64_t seq, bd_history_record *out, bd_err *err)
{
    src sr = {0};
    memset(out, 0, sizeof(*out));
    int rc = open_dirfd(h, false, err);
    if (rc == 0)
        rc = read_src(h, &sr, seq, out, err);
    src_release(&sr);
    return rc;
}

static bool log_match(const bd_history_log_opts *o, const bd_history_record *r)
{
    if (o->task_class && (!r->task_class || strcmp(o->task_class, r->task_class) != 0))
        return false;
    if (o->case_id && (!r->case_id || strcmp(o->case_id, r->case_id) != 0))
        return false;
    if ((o->run_id || o->failure_mode || o->failed_only) && r->is_audit)
        return false;
    if (o->run_id && strcmp(o->run_id, r->run_id) != 0)
        return false;
    if (o->failed_only && r->score.passed)
        return false;
    if (o->failure_mode) {
        bool any = false;
        for (size_t i = 0; i < r->score.n_failure_modes && !any; i++)
            any = strcmp(r->score.failure_modes[i].code, o->failure_mode) == 0;
        if (!any)
            return false;
    }
    if (o->keep && !o->keep(r, o->keep_ctx))
        return false;
    return true;
}

/* ---- the derived index (hindex.h) -------------------------------------------------- */

int64_t bd_history_time_epoch(const char *s)
{
    /* Digits at fixed places (the format is validated with the record); no sscanf per
     * record. Fractions of a second are dropped. */
    static const int at[6] = {0, 5, 8, 11, 14, 17}, width[6] = {4, 2, 2, 2, 2, 2};
    int v[6];
    if (!s || strlen(s) < 19)
        return -1;
    for (int i = 0; i < 6; i++) {
        v[i] = 0;
        for (int j = 0; j < width[i]; j++) {
            char c = s[at[i] + j];
            if (c < '0' || c > '9')
                return -1;
            v[i] = v[i] * 10 + (c - '0');
        }
    }
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = v[0] - 1900;
    tm.tm_mon = v[1] - 1;
    tm.tm_mday = v[2];
    tm.tm_hour = v[3];
    tm.tm_min = v[4];
    tm.tm_sec = v[5];
    return (int64_t)timegm(&tm);
}

static const char *skip_string(const char *p, const char *end);

/* A plain JSON string value (quotes, no escapes) into buf; false otherwise. */
static bool plain_str(const char *v, size_t vl, char *buf, size_t cap)
{
    if (!v || vl < 2 || v[0] != '"' || v[vl - 1] != '"' || vl - 2 >= cap ||
        memchr(v + 1, '\\', vl - 2))
        return false;
    memcpy(buf, v + 1, vl - 2);
    buf[vl - 2] = '\0';
    return true;
}

#define IX_STR 160
#define IX_FMS 32
enum {
    IX_SEQ,
    IX_KIND,
    IX_TC,
    IX_CASE,
    IX_RUN,
    IX_CD,
    IX_TCD,
    IX_ISO,
    IX_PV,
    IX_FIN,
    IX_SCORE,
    IX_PREV,
    IX__COUNT
};

typedef struct ixrow {
    bd_hindex_row row;
    char s[6][IX_STR];
    char fm[IX_FMS][IX_STR];
    const char *fmp[IX_FMS];
    char prev_hex[BD_HASH_BUF];
    bool prev_ok;
} ixrow;

/* The index's row for record bytes p[0..len) at line position `seq`: fields read without
 * a parse (bd_record_members); anything unexpected makes the row BD_HX_BAD, which keeps
 * the index out of every query (the slow path then reports the record). */
static void ix_extract(ixrow *x, const char *p, size_t len, uint64_t seq, uint64_t off)
{
    static const char *const keys[IX__COUNT] = {"seq",
                                                "kind",
                                                "task_class",
                                                "case_id",
                                                "run_id",
                                                "case_digest",
                                                "task_class_digest",
                                                "isolation_class",
                                                "provenance_verified",
                                                "finished_at",
                                                "score",
                                                "prev_hash"};
    const char *v[IX__COUNT];
    size_t vl[IX__COUNT];
    bd_hindex_row *r = &x->row;
    memset(r, 0, sizeof(*r));
    r->seq = seq;
    r->off = off;
    r->len = (uint32_t)len;
    r->finished = -1;
    bd_record_members(p, len, keys, IX__COUNT, v, vl);
    char num[24];
    uint64_t fseq = 0;
    bool ok = v[IX_SEQ] && vl[IX_SEQ] > 0 && vl[IX_SEQ] < sizeof(num);
    for (size_t i = 0; ok && i < vl[IX_SEQ]; i++) {
        ok = v[IX_SEQ][i] >= '0' && v[IX_SEQ][i] <= '9';
        fseq = fseq * 10 + (uint64_t)(v[IX_SEQ][i] - '0');
    }
    /* The hash is only computed for the last record added (the index's new head). */
    x->prev_ok = plain_str(v[IX_PREV], vl[IX_PREV], x->prev_hex, sizeof(x->prev_hex));
    ok = ok && fseq == seq && x->prev_ok;
    const char **dst[6] = {&r->task_class,  &r->case_id,   &r->run_id,
                           &r->case_digest, &r->tc_digest, &r->isolation};
    for (int i = 0; i < 6; i++)
        if (plain_str(v[IX_TC + i], vl[IX_TC + i], x->s[i], IX_STR))
            *dst[i] = x->s[i];
    if (v[IX_KIND]) {
        r->flags |= BD_HX_AUDIT;
        char kind[16];
        ok = ok && plain_str(v[IX_KIND], vl[IX_KIND], kind, sizeof(kind)) &&
             strcmp(kind, "audit") == 0;
    } else {
        char fin[IX_STR];
        ok = ok && r->task_class && r->case_id && r->run_id && r->isolation && v[IX_SCORE] &&
             v[IX_PV] && plain_str(v[IX_FIN], vl[IX_FIN], fin, sizeof(fin));
        if (ok)
            r->finished = bd_history_time_epoch(fin);
        if (v[IX_PV] && vl[IX_PV] == 4 && memcmp(v[IX_PV], "true", 4) == 0)
            r->flags |= BD_HX_PROV;
        if (ok) {
            static const char *const skeys[2] = {"failure_modes", "passed"};
            const char *sv[2];
            size_t svl[2];
            bd_record_members(v[IX_SCORE], vl[IX_SCORE], skeys, 2, sv, svl);
            ok = sv[0] && sv[1];
            if (ok && svl[1] == 4 && memcmp(sv[1], "true", 4) == 0)
                r->flags |= BD_HX_PASSED;
            /* Canonical JSON: each failure mode's first member is "code"; a quote inside
             * a string is escaped, so the pattern only matches a member. */
            static const char pat[] = "\"code\":\"";
            const char *a = ok ? sv[0] : NULL, *end = ok ? sv[0] + svl[0] : NULL;
            while (a && (a = memmem(a, (size_t)(end - a), pat, sizeof(pat) - 1)) != NULL) {
                const char *cs = a + sizeof(pat) - 2, *ce = skip_string(cs, end);
                if (!ce || r->n_fm == IX_FMS ||
                    !plain_str(cs, (size_t)(ce - cs), x->fm[r->n_fm], IX_STR)) {
                    ok = false;
                    break;
                }
                x->fmp[r->n_fm] = x->fm[r->n_fm];
                r->n_fm++;
                a = ce;
            }
            r->fm_codes = x->fmp;
        }
    }
    if (!ok)
        r->flags |= BD_HX_BAD;
}

/* Whether record seq's bytes are at [off, off+len) of its segment with this hash: the
 * index's head still on the chain. */
static bool ix_head_holds(bd_history *h, const bd_hindex_head *ih)
{
    bd_hindex_hit hit = {ih->seq, ih->off, ih->len};
    bd_history_record r;
    bd_err e = BD_ERR_INIT;
    if (bd_history_read_at(h, &hit, &r, &e) != 0)
        return false;
    uint8_t hash[32];
    bool ok = bd_hash_unhex(hash, r.hash) == 0 && memcmp(hash, ih->hash, 32) == 0;
    bd_history_record_release(&r);
    return ok;
}

/* Add the records after `from` (whose head is *ih, seq 0: from the start) to the index, in
 * one transaction. 0, or -1 (the index is left as it was). */
static int ix_extend(bd_history *h, bd_hindex *ix, bd_hindex_head *ih)
{
    bd_segbuf sb = {0};
    ixrow *x = malloc(sizeof(*x));
    char why[256];
    bd_err e = BD_ERR_INIT;
    int rc = -1;
    if (!x || bd_hindex_begin(ix) != 0) {
        free(x);
        return -1;
    }
    uint64_t k = ih->seq + 1; /* the next record */
    uint64_t first = bd_segment_first(k);
    uint64_t from = ih->seq && bd_segment_first(ih->seq) == first ? ih->off + ih->len + 1 : 0;
    bd_hindex_head nh = *ih;
    const char *last = NULL; /* the bytes of the last record added from this segment */
    for (;; first += BD_SEGMENT_RECORDS, from = 0) {
        int r = bd_segbuf_load_from(&sb, h->segfd, h->segdir, first, from, why, &e);
        if (r == BD_SEG_ABSENT)
            break;
        if (r != BD_SEG_OK)
            goto out;
        if ((k - first) + sb.nlines > BD_SEGMENT_RECORDS)
            goto out; /* more lines than a segment holds: verify's to report */
        for (size_t i = 0; i < sb.nlines; i++, k++) {
            size_t len;
            const char *p = bd_segbuf_line(&sb, i, &len);
            ix_extract(x, p, len, k, from + sb.off[i]);
            if (bd_hindex_add(ix, &x->row) != 0)
                goto out;
            nh.seq = k;
            nh.off = from + sb.off[i];
            nh.len = (uint32_t)len;
            last = p;
        }
        if (last) { /* the head so far: hashed once per segment, not per record */
            uint8_t prev[32];
            if (!x->prev_ok || bd_hash_unhex(prev, x->prev_hex) != 0)
                goto out;
            bd_history_record_hash(nh.hash, prev, last, nh.len);
            last = NULL;
        }
        /* A segment that is not full while a later one may exist: no index (verify's). */
        if (k - first != BD_SEGMENT_RECORDS)
            break;
    }
    rc = 0;
out:
    bd_segbuf_release(&sb);
    free(x);
    if (rc == 0 && nh.seq > ih->seq)
        rc = bd_hindex_commit(ix, &nh);
    else
        bd_hindex_rollback(ix);
    if (rc == 0)
        *ih = nh;
    return rc;
}

static atomic_uint ix_builds, ix_extends;

/* The index lock, waited for at most IX_LOCK_WAIT_MS: a query never hangs on the index
 * (a child process that inherited the lock's descriptor keeps it until it execs or
 * exits); without the lock it reads the segments instead. 0 or -1. */
#define IX_LOCK_WAIT_MS 3000
static int ix_lock(int fd)
{
    for (int waited = 0;; waited += 5) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= IX_LOCK_WAIT_MS)
            return -1;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void bd_history_test_index_counts(unsigned *builds, unsigned *extends)
{
    *builds = atomic_load(&ix_builds);
    *extends = atomic_load(&ix_extends);
}

bd_hindex *bd_history_index(bd_history *h)
{
    bd_err e = BD_ERR_INIT;
    bd_hindex *ix = NULL;
    uint64_t seq;
    uint8_t hash[32];
    segtail t;
    rbuf b = {NULL, 0};
    if (!h->ixdir || getenv("BENCHDESK_NO_INDEX") || open_dirfd(h, false, &e) != 0 || !is_v2(h))
        return NULL;
    int hr = find_head_v2(h, &b, &seq, hash, &t, &e);
    free(b.p);
    if (hr != 0 || seq == 0 || bd_mkdir_p(h->ixdir, 0700, &e) != 0)
        return NULL;
    size_t pl = strlen(h->ixdir) + sizeof("/" BD_HINDEX_FILE) + sizeof(BD_HINDEX_LOCK);
    char *path = malloc(pl);
    if (!path)
        return NULL;
    snprintf(path, pl, "%s/%s", h->ixdir, BD_HINDEX_FILE);
    /* Only an index this user's benchdesk left as it is (the seal, hindex.h): one edited
     * beside the records is rebuilt from them, and the rebuild is reported. */
    bd_hindex_seal_state seal = bd_hindex_sealed(path);
    if (bd_hindex_open(&ix, path, &e) != 0) {
        free(path);
        return NULL;
    }
    bd_hindex_head ih;
    int lockfd = -1;
    char *lockpath = NULL;
    if (seal == BD_HX_SEAL_OK && bd_hindex_get_head(ix, &ih) == 0 && ih.seq == seq &&
        memcmp(ih.hash, hash, 32) == 0)
        goto done;
    /* One process brings it up to date at a time; the others wait, then find it so. */
    if (!(lockpath = malloc(pl)))
        goto fail;
    snprintf(lockpath, pl, "%s/%s", h->ixdir, BD_HINDEX_LOCK);
    lockfd = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lockfd < 0 || ix_lock(lockfd) != 0)
        goto fail;
    seal = bd_hindex_sealed(path); /* again, now that no other benchdesk is writing it */
    if (seal != BD_HX_SEAL_OK) {
        if (seal == BD_HX_SEAL_BROKEN)
            snprintf(h->ix_note, sizeof(h->ix_note),
                     "the history's index (%s) was changed outside benchdesk: it was rebuilt "
                     "from the records",
                     path);
        if (bd_hindex_reset(ix) != 0)
            goto fail;
    } else if (bd_hindex_reopen(ix) != 0) {
        goto fail;
    }
    if (bd_hindex_get_head(ix, &ih) != 0) {
        if (bd_hindex_reset(ix) != 0)
            goto fail;
        memset(&ih, 0, sizeof(ih));
    }
    if (ih.seq == seq && memcmp(ih.hash, hash, 32) == 0) {
        if (bd_hindex_seal(path) != 0)
            goto fail;
        goto done;
    }
    /* Extended when its head is still on the chain below ours, else rebuilt. */
    bool rebuild = ih.seq == 0 || ih.seq > seq || !ix_head_holds(h, &ih);
    if (rebuild && ih.seq != 0 && bd_hindex_reset(ix) != 0)
        goto fail;
    if (rebuild)
        memset(&ih, 0, sizeof(ih));
    int xr = ix_extend(h, ix, &ih);
    if (xr != 0 && !rebuild) {
        /* An extension that failed (a file SQLite finds damaged): once from nothing. */
        rebuild = true;
        memset(&ih, 0, sizeof(ih));
        xr = bd_hindex_reset(ix) == 0 ? ix_extend(h, ix, &ih) : -1;
    }
    atomic_fetch_add(rebuild ? &ix_builds : &ix_extends, 1);
    /* Without a seal no later process could trust it: then it is not used at all. */
    if (xr != 0 || ih.seq < seq || bd_hindex_seal(path) != 0)
        goto fail;
done:
    if (lockfd >= 0)
        close(lockfd);
    free(lockpath);
    free(path);
    return ix;
fail:
    if (lockfd >= 0)
        close(lockfd);
    free(lockpath);
    free(path);
    bd_hindex_close(ix);
    return NULL;
}

const char *bd_history_index_note(const bd_history *h)
{
    return h->ix_note[0] ? h->ix_note : NULL;
}

void bd_history_index_distrust(bd_history *h)
{
    if (!h->ixdir)
        return;
    size_t pl = strlen(h->ixdir) + sizeof("/" BD_HINDEX_FILE);
    char *path = malloc(pl);
    if (!path)
        return;
    snprintf(path, pl, "%s/%s", h->ixdir, BD_HINDEX_FILE);
    bd_hindex_unseal(path);
    snprintf(h->ix_note, sizeof(h->ix_note),
             "the history's index (%s) disagrees with the records: it is rebuilt from them", path);
    free(path);
}

int bd_history_read_at(bd_history *h, const bd_hindex_hit *hit, bd_history_record *out, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (open_dirfd(h, false, err) != 0)
        return -1;
    if (!is_v2(h) || hit->seq == 0 || hit->len == 0 || hit->len > BD_HISTORY_RECORD_MAX)
        return 1;
    char name[17];
    bd_segment_name(name, bd_segment_first(hit->seq));
    int fd = openat(h->segfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 1;
    /* The byte before (a '\n', unless it is the first line) and the '\n' after. */
    uint64_t at = hit->off ? hit->off - 1 : 0;
    size_t want = hit->len + 1 + (hit->off ? 1 : 0);
    char stackbuf[4096], *buf = want <= sizeof(stackbuf) ? stackbuf : malloc(want);
    if (!buf) {
        close(fd);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    }
    ssize_t got = pread(fd, buf, want, (off_t)at);
    close(fd);
    int rc = 1;
    const char *p = buf + (hit->off ? 1 : 0);
    if (got == (ssize_t)want && (!hit->off || buf[0] == '\n') && p[hit->len] == '\n') {
        rec_core core;
        char why[256];
        if (parse_record(p, hit->len, &core, out, why) == BD_CHAIN_OK) {
            if (core.seq == hit->seq)
                rc = 0;
            else
                bd_history_record_release(out);
        } else if (strcmp(why, "out of memory") == 0) {
            rc = bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        }
    }
    if (buf != stackbuf)
        free(buf);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

/* history log through the index: 0 / -1 as bd_history_log, 1 when the index does not
 * match the segments (the caller reads them instead). */
static int log_indexed(bd_history *h, bd_hindex *ix, const bd_history_log_opts *o, uint64_t head,
                       bd_history_record **out, size_t *n, uint64_t *next, bd_err *err)
{
    size_t limit = o->limit ? o->limit : BD_HISTORY_LOG_DEFAULT;
    size_t page = limit + 16 < 1024 ? limit + 16 : 1024;
    bd_hindex_filter f = {o->task_class, o->case_id, o->run_id, o->failure_mode, o->failed_only};
    bd_history_log_opts ix_only = *o; /* what the index filtered on */
    ix_only.keep = NULL;
    bd_hindex_hit *hits = malloc(page * sizeof(*hits));
    bd_history_record *recs = NULL;
    size_t cnt = 0, cap = 0;
    uint64_t cursor = head + 1, last = 0;
    int rc = 0;
    if (o->before && o->before - 1 < head)
        cursor = o->before;
    if (!hits)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    while (cnt < limit && rc == 0) {
        long got = bd_hindex_find(ix, &f, cursor, hits, page);
        if (got < 0) {
            rc = 1;
            break;
        }
        for (long i = 0; i < got && cnt < limit && rc == 0; i++) {
            bd_history_record r;
            rc = bd_history_read_at(h, &hits[i], &r, err);
            if (rc != 0)
                break;
            cursor = hits[i].seq;
            /* A record the index named for this filter that does not match it: the index
             * is not this chain's. Read the segments instead and have it rebuilt. */
            if (!log_match(&ix_only, &r)) {
                bd_history_record_release(&r);
                bd_history_index_distrust(h);
                rc = 1;
                break;
            }
            if (!log_match(o, &r)) {
                bd_history_record_release(&r);
                continue;
            }
            if (cnt == cap) {
                size_t nc = cap ? cap * 2 : (limit < 64 ? limit : 64);
                bd_history_record *g = realloc(recs, nc * sizeof(*g));
                if (!g) {
                    bd_history_record_release(&r);
                    rc = bd_err_set(err, BD_E_NOMEM, NULL, 0, 0,
                                    "out of memory reading the history");
                    break;
                }
                recs = g;
                cap = nc;
            }
            recs[cnt++] = r;
            last = r.seq;
        }
        if ((size_t)got < page)
            break;
    }
    free(hits);
    if (rc != 0) {
        bd_history_records_free(recs, cnt);
        return rc;
    }
    *out = recs;
    *n = cnt;
    /* As the walk from the head says it: the next page starts below the last record. */
    *next = cnt == limit && last > 1 ? last : 0;
    return 0;
}

int bd_history_log(bd_history *h, const bd_history_log_opts *o, bd_history_record **out, size_t *n,
                   uint64_t *next_before, bd_err *err)
{
    static const bd_history_log_opts defaults = BD_HISTORY_LOG_OPTS_INIT;
    bd_history_record *recs = NULL;
    size_t cnt = 0;
    uint64_t head = 0, next = 0;
    int rc = -1;
    src sr = {0};
    *out = NULL;
    *n = 0;
    if (!o)
        o = &defaults;
    size_t limit = o->limit ? o->limit : BD_HISTORY_LOG_DEFAULT;
    if (bd_history_head(h, &head, NULL, err) != 0)
        goto out;
    /* A filter: the index says where the matching records are, when it can. */
    if (o->task_class || o->case_id || o->run_id || o->failure_mode || o->failed_only) {
        bd_hindex *ix = bd_history_index(h);
        int ir = 1;
        if (ix && !bd_hindex_has_bad(ix))
            ir = log_indexed(h, ix, o, head, &recs, &cnt, &next, err);
        bd_hindex_close(ix);
        if (ir <= 0) {
            rc = ir;
            goto out;
        }
    }
    uint64_t seq = head;
    if (o->before && o->before - 1 < seq)
        seq = o->before - 1;
    size_t cap = limit < 64 ? limit : 64;
    for (; seq >= 1 && cnt < limit; seq--) {
        bd_history_record r;
        if (read_src(h, &sr, seq, &r, err) != 0)
            goto out;
        if (!log_match(o, &r)) {
            bd_history_record_release(&r);
            continue;
        }
        if (!recs || cnt == cap) {
            size_t ncap = recs ? cap * 2 : cap;
            bd_history_record *p = realloc(recs, ncap * sizeof(*p));
            if (!p) {
                bd_history_record_release(&r);
                bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
                goto out;
            }
            recs = p;
            cap = ncap;
        }
        recs[cnt++] = r;
    }
    /* More records below the page? `seq` is the next one to look at. */
    next = cnt == limit && seq >= 1 ? seq + 1 : 0;
    rc = 0;
out:
    if (rc != 0) {
        bd_history_records_free(recs, cnt);
        recs = NULL;
        cnt = 0;
    }
    src_release(&sr);
    *out = recs;
    *n = cnt;
    if (next_before)
        *next_before = next;
    return rc;
}

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

static int build_records(cJSON **recs, pending *pd, uint64_t first_seq, size_t n, bd_err *err)
{
    build_work w;
    memset(&w, 0, sizeof(w));
    w.recs = recs;
    w.pd = pd;
    w.first_seq = first_seq;
    w.n = n;
    pthread_mutex_init(&w.mu, NULL);
    pthread_t tids[VERIFY_MAX_THREADS];
    int started = 0, nthreads = verify_threads();
    for (int t = 1; t < nthreads && n >= 32; t++)
        if (pthread_create(&tids[started], NULL, build_worker, &w) == 0)
            started++;
    build_worker(&w);
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    pthread_mutex_destroy(&w.mu);
    if (atomic_load(&w.failed)) {
        if (err)
            *err = w.err;
        return -1;
    }
    return 0;
}

/* The end of the JSON string starting at p (its opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end)
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
        return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            if (*p == '"') {
                p = skip_string(p, end);
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
        const char *k = p + 1, *ke = skip_string(p, end);
        if (!ke || ke >= end || *ke != ':')
            return found;
        size_t kl = (size_t)(ke - 1 - k);
        const char *v = ke + 1, *ve = skip_value(v, end);
        if (!ve)
            return found;
        for (size_t i = 0; i < n; i++) {
            if (!vals[i] && keys[i][0] == *k && strncmp(keys[i], k, kl) == 0 &&
                keys[i][kl] == '\0') {
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
