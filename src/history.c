/*
 * history.c — the append-only, hash-chained score history (DESIGN.md §5, history.h).
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "bench.h"
#include "canon.h"
#include "digest.h"
#include "fsutil.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#define CHAIN_TAG "benchdesk-chain-v1"
/* The tag is hashed with its terminating NUL: "benchdesk-chain-v1\0" is 19 bytes. */
#define CHAIN_TAG_LEN (sizeof(CHAIN_TAG))
#define HEAD_NAME     "HEAD"
#define LOCK_NAME     ".lock"
/* How far past a stale HEAD hint append walks before it scans the directory instead. */
#define HEAD_PROBE_MAX 64
/* verify: records per parallel window, per work item, and the most threads it uses. */
#define VERIFY_WINDOW      8192
#define VERIFY_BATCH       64
#define VERIFY_MAX_THREADS 8
#define DETAIL_MAX         4096
#define FM_CODE_MAX        256
#define BREAKDOWN_KEY_MAX  256
/* Two prev_hash values that differ in at most this many hex digits are one hand edit of
 * the other: two unrelated SHA-256 values agree in ~4 of 64 digits, so 56 or more equal
 * digits never happen by chance. */
#define EDIT_DISTANCE_MAX 8

struct bd_history {
    char *dir;
    int dirfd; /* -1 while the directory does not exist (read-only handle) */
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

static void tmp_name(char out[20], uint64_t seq)
{
    bd_history_file_name(out, seq);
    memcpy(out + 15, ".tmp", 5);
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

int bd_hash_unhex(uint8_t out[32], const char *hex)
{
    if (!hex)
        return -1;
    for (size_t i = 0; i < 32; i++) {
        int hi = hexval(hex[2 * i]);
        if (hi < 0)
            return -1;
        int lo = hexval(hex[2 * i + 1]);
        if (lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[64] == '\0' ? 0 : -1;
}

void bd_history_record_hash(uint8_t out[32], const uint8_t prev[32], const void *buf, size_t len)
{
    uint8_t msg[CHAIN_TAG_LEN + 64];
    memcpy(msg, CHAIN_TAG, CHAIN_TAG_LEN); /* includes the NUL */
    memcpy(msg + CHAIN_TAG_LEN, prev, 32);
    bd_blake3_raw(msg + CHAIN_TAG_LEN + 32, buf, len);
    SHA256(msg, sizeof(msg), out);
}

static bool lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[n] == '\0';
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

static bool integral_in(const cJSON *c, double lo, double hi, double *out)
{
    if (!cJSON_IsNumber(c))
        return false;
    double v = c->valuedouble;
    if (!isfinite(v) || v != trunc(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
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
 * and says which run selection the record belongs to (DESIGN.md §5). */
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

/* What verify needs from every record. */
typedef struct rec_core {
    uint64_t seq;
    uint8_t prev[32];
    bool is_audit;
} rec_core;

#define WHY(...) (why ? (void)snprintf(why, 256, __VA_ARGS__) : (void)0)

/* Validate the BenchScore object `o`; fill `s` when non-NULL. Returns true when valid.
 * On false `*oom` tells out-of-memory apart from invalid. */
static bool check_score(const cJSON *o, bd_score *s, bool *oom, char *why)
{
    enum { S_BREAKDOWN, S_COST, S_FMS, S_PASSED, S_SCORE, S_WALL, S__COUNT };
    static const char *const names[S__COUNT] = {"breakdown", "cost_usd", "failure_modes",
                                                "passed",    "score",    "wall_clock_ms"};
    if (!cJSON_IsObject(o)) {
        WHY("score: not an object");
        return false;
    }
    unsigned seen = 0;
    for (const cJSON *c = o->child; c; c = c->next) {
        int f = -1;
        for (int i = 0; i < S__COUNT; i++)
            if (strcmp(c->string, names[i]) == 0)
                f = i;
        if (f < 0) {
            WHY("score: unexpected member \"%.64s\"", c->string);
            return false;
        }
        if (seen & (1u << f)) {
            WHY("score: duplicate member \"%s\"", names[f]);
            return false;
        }
        seen |= 1u << f;
        double v;
        switch (f) {
        case S_PASSED:
            if (!cJSON_IsBool(c)) {
                WHY("score.passed: not a boolean");
                return false;
            }
            if (s)
                s->passed = cJSON_IsTrue(c);
            break;
        case S_SCORE:
            if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0.0 && c->valuedouble <= 1.0)) {
                WHY("score.score: not a number in [0,1]");
                return false;
            }
            if (s)
                s->score = c->valuedouble;
            break;
        case S_COST:
            if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble < 0) {
                WHY("score.cost_usd: not a finite number >= 0");
                return false;
            }
            if (s)
                s->cost_usd = c->valuedouble;
            break;
        case S_WALL:
            if (!integral_in(c, 0, 9007199254740991.0, &v)) {
                WHY("score.wall_clock_ms: not an integer >= 0");
                return false;
            }
            if (s)
                s->wall_clock_ms = (int64_t)v;
            break;
        case S_BREAKDOWN: {
            if (!cJSON_IsObject(c)) {
                WHY("score.breakdown: not an object");
                return false;
            }
            size_t n = 0;
            for (const cJSON *b = c->child; b; b = b->next) {
                size_t kl = strlen(b->string);
                if (kl == 0 || kl > BREAKDOWN_KEY_MAX) {
                    WHY("score.breakdown: a key is empty or longer than %d bytes",
                        BREAKDOWN_KEY_MAX);
                    return false;
                }
                if (!cJSON_IsNumber(b) || !(b->valuedouble >= 0.0 && b->valuedouble <= 1.0)) {
                    WHY("score.breakdown.%.64s: not a number in [0,1]", b->string);
                    return false;
                }
                n++;
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
        case S_FMS: {
            if (!cJSON_IsArray(c)) {
                WHY("score.failure_modes: not an array");
                return false;
            }
            size_t n = (size_t)cJSON_GetArraySize(c), i = 0;
            if (s && n > 0) {
                s->failure_modes = calloc(n, sizeof(*s->failure_modes));
                if (!s->failure_modes) {
                    *oom = true;
                    return false;
                }
            }
            for (const cJSON *fm = c->child; fm; fm = fm->next, i++) {
                const cJSON *code = NULL, *sev = NULL, *det = NULL;
                if (!cJSON_IsObject(fm)) {
                    WHY("score.failure_modes[%zu]: not an object", i);
                    return false;
                }
                for (const cJSON *m = fm->child; m; m = m->next) {
                    const cJSON **slot = strcmp(m->string, "code") == 0       ? &code
                                         : strcmp(m->string, "severity") == 0 ? &sev
                                         : strcmp(m->string, "detail") == 0   ? &det
                                                                              : NULL;
                    if (!slot || *slot) {
                        WHY("score.failure_modes[%zu]: unexpected or duplicate member "
                            "\"%.64s\"",
                            i, m->string);
                        return false;
                    }
                    *slot = m;
                }
                bd_severity sv;
                if (!cJSON_IsString(code) || code->valuestring[0] == '\0' ||
                    strlen(code->valuestring) > FM_CODE_MAX) {
                    WHY("score.failure_modes[%zu].code: not a non-empty string of at most %d "
                        "bytes",
                        i, FM_CODE_MAX);
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
        }
    }
    if (seen != (1u << S__COUNT) - 1) {
        for (int i = 0; i < S__COUNT; i++)
            if (!(seen & (1u << i))) {
                WHY("score: member \"%s\" is missing", names[i]);
                break;
            }
        return false;
    }
    return true;
}

/* The `origin` object of a record imported from a shard bundle (DESIGN.md §14):
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

/* Validate string-or-null fields by format. Returns NULL when fine, else the reason. */
static const char *check_string_field(int f, const cJSON *c, bool is_audit)
{
    if (cJSON_IsNull(c)) {
        if (f == F_CASSETTE_DIGEST || f == F_OPERATOR_FINGERPRINT ||
            (f == F_TASK_CLASS && is_audit))
            return NULL;
        return "is null";
    }
    if (!cJSON_IsString(c))
        return "is not a string";
    const char *s = c->valuestring;
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
            if (!check_score(c, out ? &out->score : NULL, oom, why))
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

/* Parse `len` bytes of one record. Fills core on BD_CHAIN_OK; fills *out (zeroed first)
 * when non-NULL. */
static bd_chain_reason parse_record(const char *buf, size_t len, rec_core *core,
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

static int open_dirfd(bd_history *h, bool create, bd_err *err)
{
    if (h->dirfd >= 0)
        return 0;
    if (create && bd_mkdir_p(h->dir, 0700, err) != 0)
        return -1;
    int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && !create)
            return 0; /* no history yet: an empty chain */
        if (errno == ELOOP || errno == ENOTDIR)
            return bd_err_set(err, BD_E_IO, h->dir, 0, 0,
                              "the history path is not a directory (or is a symbolic link); "
                              "move it aside so benchdesk can recreate it");
        return bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot open the history directory");
    }
    h->dirfd = fd;
    return 0;
}

int bd_history_open_dir(bd_history **out, const char *dir, int flags, bd_err *err)
{
    *out = NULL;
    bd_history *h = calloc(1, sizeof(*h));
    if (!h || !(h->dir = strdup(dir))) {
        free(h);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the history");
    }
    h->dirfd = -1;
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
    return rc;
}

void bd_history_free(bd_history *h)
{
    if (!h)
        return;
    if (h->dirfd >= 0)
        close(h->dirfd);
    free(h->dir);
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

static void record_path(char *out, size_t size, const bd_history *h, uint64_t seq)
{
    char name[16];
    bd_history_file_name(name, seq);
    snprintf(out, size, "%s/%s", h->dir, name);
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

/* Read, parse and hash record `seq`. Returns RD_OK (core, hash filled), RD_ABSENT, RD_BAD
 * (*reason and why say why it is not a record), RD_ERROR (err). */
static int load_core(const bd_history *h, uint64_t seq, rbuf *b, rec_core *core, uint8_t hash[32],
                     bd_chain_reason *reason, char *why, bd_err *err)
{
    size_t len;
    int rc = read_record_file(h, seq, b, &len, why, err);
    if (rc == RD_BAD)
        *reason = BD_CHAIN_UNPARSEABLE;
    if (rc != RD_OK)
        return rc;
    *reason = parse_record(b->p, len, core, NULL, why);
    if (*reason != BD_CHAIN_OK)
        return RD_BAD;
    bd_history_record_hash(hash, core->prev, b->p, len);
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

/* Best effort: HEAD is only a hint (validated on every use), so failing to write it makes
 * the next append scan the directory once, nothing worse. Rewritten in place (no temp
 * file and rename): one data write instead of two metadata operations per append; a torn
 * or stale HEAD is simply not believed. */
static void write_head_hint(const bd_history *h, uint64_t seq, const uint8_t hash[32])
{
    char buf[80], hex[BD_HASH_BUF], name[16];
    bd_history_file_name(name, seq);
    bd_hex(hex, hash, 32);
    int n = snprintf(buf, sizeof(buf), "%.10s %s\n", name, hex);
    int fd = openat(h->dirfd, HEAD_NAME, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) != 0)
        unlinkat(h->dirfd, HEAD_NAME, 0); /* never leave a half-written hint behind */
    close(fd);
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

/* The chain head. `clean` removes stray temp files when the directory is scanned. */
static int find_head(const bd_history *h, rbuf *b, uint64_t *seq, uint8_t hash[32], bool clean,
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
        int rc = load_core(h, hs, b, &core, got, &reason, why, err);
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
                rc = load_core(h, hs + 1, b, &core, got, &reason, why, err);
                if (rc == RD_ERROR)
                    return -1;
                if (rc != RD_OK || core.seq != hs + 1 || memcmp(core.prev, hh, 32) != 0)
                    break; /* not a clean continuation: let the scan decide */
                hs++;
            }
        }
    }
    /* The hint is absent or stale (e.g. a crash between the rename and its update). */
    uint64_t max;
    bool zero;
    if (scan_dir(h, &max, &zero, clean, err) != 0)
        return -1;
    if (max == 0)
        return 0;
    int rc = load_core(h, max, b, &core, got, &reason, why, err);
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

int bd_history_head(bd_history *h, uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err)
{
    rbuf b = {NULL, 0};
    uint64_t seq = 0;
    uint8_t hash[32];
    int rc = open_dirfd(h, false, err);
    if (rc == 0)
        rc = find_head(h, &b, &seq, hash, false, err);
    free(b.p);
    if (rc != 0)
        return -1;
    if (seq_out)
        *seq_out = seq;
    if (hash_out)
        bd_hex(hash_out, hash, 32);
    return 0;
}

/* ---- appending ---------------------------------------------------------------------- */

static bool force_link_fallback;

void bd_history_test_force_link(bool on)
{
    force_link_fallback = on;
}

/* Move `from` to `to` inside dirfd without ever replacing an existing `to`. */
static int rename_noreplace(int dirfd, const char *from, const char *to)
{
#ifdef SYS_renameat2
    if (!force_link_fallback) {
        if (syscall(SYS_renameat2, dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno != EINVAL && errno != ENOSYS)
            return -1;
    }
#endif
    /* File systems without RENAME_NOREPLACE: link refuses an existing name too. */
    if (linkat(dirfd, from, dirfd, to, 0) != 0)
        return -1;
    /* The record is in place; a temp name left behind is a stray the next append or
     * scan removes. */
    unlinkat(dirfd, from, 0);
    return 0;
}

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

/* Take the lock, chain `rec` (which lacks seq and prev_hash) onto the head, write it
 * crash-safely. Takes ownership of nothing; `rec` is modified. */
static int append_record(bd_history *h, cJSON *rec, uint64_t *seq_out, char hash_out[BD_HASH_BUF],
                         bd_err *err)
{
    int rc = -1, lockfd = -1, fd = -1;
    bool tmp_created = false;
    rbuf b = {NULL, 0};
    char *bytes = NULL;
    char tmp[20], name[16], path[PATH_MAX + 32], why[256];
    uint64_t head_seq;
    uint8_t head_hash[32], new_hash[32];

    if (open_dirfd(h, true, err) != 0)
        goto out;
    lockfd = openat(h->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lockfd < 0) {
        bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot open the history lock file .lock");
        goto out;
    }
    while (flock(lockfd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot lock the history");
            goto out;
        }
    }
    if (find_head(h, &b, &head_seq, head_hash, true, err) != 0)
        goto out;
    if (head_seq >= BD_HISTORY_SEQ_MAX) {
        bd_err_set(err, BD_E_IO, h->dir, 0, 0, "the history is full (seq %llu)",
                   (unsigned long long)head_seq);
        goto out;
    }
    uint64_t seq = head_seq + 1;
    char prev_hex[BD_HASH_BUF];
    bd_hex(prev_hex, head_hash, 32);
    cJSON_DeleteItemFromObjectCaseSensitive(rec, "seq");
    cJSON_DeleteItemFromObjectCaseSensitive(rec, "prev_hash");
    cJSON *seq_item = cJSON_CreateNumber((double)seq);
    if (!seq_item || !cJSON_AddItemToObject(rec, "seq", seq_item)) {
        cJSON_Delete(seq_item);
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
        goto out;
    }
    if (!set_str(rec, "prev_hash", prev_hex)) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
        goto out;
    }
    size_t len = 0;
    bytes = bd_canon_json(rec, &len);
    if (!bytes) {
        bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                   "the history record cannot be written as canonical JSON (a NaN or infinite "
                   "number, invalid UTF-8, or a duplicate key); nothing was appended");
        goto out;
    }
    /* Never write what verify would reject. */
    rec_core core;
    bd_chain_reason r = parse_record(bytes, len, &core, NULL, why);
    if (r != BD_CHAIN_OK) {
        bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                   "refusing to append an invalid history record: %s; nothing was appended", why);
        goto out;
    }

    tmp_name(tmp, seq);
    bd_history_file_name(name, seq);
    snprintf(path, sizeof(path), "%s/%s", h->dir, tmp);
    /* A temp file of this seq can only be left by an append that died before its rename. */
    if (unlinkat(h->dirfd, tmp, 0) != 0 && errno != ENOENT) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot remove a stale temp file");
        goto out;
    }
    fd = openat(h->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot create the history temp file");
        goto out;
    }
    tmp_created = true;
    if (fchmod(fd, 0600) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot set mode 0600 on the history temp file");
        goto out;
    }
    if (write_all(fd, bytes, len) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path,
                     "cannot write the history record (nothing was appended)");
        goto out;
    }
    if (fsync(fd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path,
                     "cannot fsync the history record (nothing was appended)");
        goto out;
    }
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path,
                     "cannot close the history record (nothing was appended)");
        goto out;
    }
    if (rename_noreplace(h->dirfd, tmp, name) != 0) {
        int e = errno;
        snprintf(path, sizeof(path), "%s/%s", h->dir, name);
        if (e == EEXIST)
            bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                       "history record %llu already exists although the chain head is %llu: "
                       "something wrote to the history without its lock; run `benchdesk "
                       "history verify`",
                       (unsigned long long)seq, (unsigned long long)head_seq);
        else
            bd_err_errno(err, BD_E_IO, e, path,
                         "cannot move the history record into place (nothing was appended)");
        goto out;
    }
    tmp_created = false;
    if (fsync(h->dirfd) != 0) {
        snprintf(path, sizeof(path), "%s/%s", h->dir, name);
        bd_err_errno(err, BD_E_IO, errno, path,
                     "history record %llu was written but the directory could not be synced, "
                     "so it may not survive a crash; check the disk",
                     (unsigned long long)seq);
        goto out;
    }
    bd_history_record_hash(new_hash, head_hash, bytes, len);
    write_head_hint(h, seq, new_hash);
    if (seq_out)
        *seq_out = seq;
    if (hash_out)
        bd_hex(hash_out, new_hash, 32);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (tmp_created)
        unlinkat(h->dirfd, tmp, 0);
    if (lockfd >= 0)
        close(lockfd); /* releases the flock */
    free(bytes);
    free(b.p);
    return rc;
}

int bd_history_append_score(bd_history *h, const bd_history_score_fields *f, const bd_score *s,
                            uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err)
{
    int rc = -1;
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
    rc = append_record(h, rec, seq_out, hash_out, err);
    goto out;
oom:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
out:
    cJSON_Delete(score);
    cJSON_Delete(rec);
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
    rbuf b;
    uint8_t (*hashes)[32]; /* hashes[i]: record i+1 */
    size_t n, cap;
    uint64_t max_seq;
    bool hint_ok;
    uint64_t hint_seq;
    uint8_t hint_hash[32];
} vctx;

static const uint8_t zero_hash[32];

static const uint8_t *hash_of(const vctx *v, uint64_t j)
{
    return j == 0 ? zero_hash : v->hashes[j - 1];
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
                load_core(v->h, core->seq, &v->b, &other, oh, &oreason, why, &ignored) == RD_OK &&
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
        int rc = load_core(v->h, k + 1, &v->b, &other, oh, &oreason, why, &ignored);
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
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        void *p = realloc(v->hashes, cap * 32);
        if (!p)
            return -1;
        v->hashes = p;
        v->cap = cap;
    }
    memcpy(v->hashes[v->n++], h, 32);
    return 0;
}

static int report(const vctx *v, bd_history_verify_result *res, uint64_t bad,
                  bd_chain_reason reason, const char *what, bd_err *err)
{
    char path[PATH_MAX + 32];
    record_path(path, sizeof(path), v->h, bad);
    res->reason = reason;
    res->bad_seq = bad;
    res->count = bad > 0 ? bad - 1 : 0;
    bd_hex(res->head, hash_of(v, res->count), 32);
    return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0, "%s (%s); %s", what,
                      bd_chain_reason_str(reason), ADVICE);
}

/* Check record k on its own (reading it again, with messages). Returns 0 when it is
 * intact and links (its hash pushed), else -1 with the failure reported into res/err. */
static int verify_one(vctx *v, uint64_t k, bd_history_verify_result *res, bd_err *err)
{
    size_t len;
    char why[256], msg[768];
    int r = read_record_file(v->h, k, &v->b, &len, why, err);
    if (r == RD_ERROR)
        return -1;
    if (r == RD_ABSENT) {
        snprintf(msg, sizeof(msg), "record %llu is missing although records up to %llu exist",
                 (unsigned long long)k, (unsigned long long)v->max_seq);
        return report(v, res, k, BD_CHAIN_MISSING, msg, err);
    }
    if (r == RD_BAD) {
        snprintf(msg, sizeof(msg), "record %llu is unparseable: %s", (unsigned long long)k, why);
        return report(v, res, k, BD_CHAIN_UNPARSEABLE, msg, err);
    }
    rec_core core;
    bd_chain_reason reason = parse_record(v->b.p, len, &core, NULL, why);
    if (reason != BD_CHAIN_OK) {
        if (strcmp(why, "out of memory") == 0)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
        snprintf(msg, sizeof(msg), "record %llu is %s: %s", (unsigned long long)k,
                 reason == BD_CHAIN_UNPARSEABLE ? "unparseable" : "schema-invalid", why);
        return report(v, res, k, reason, msg, err);
    }
    uint8_t hk[32];
    bd_history_record_hash(hk, core.prev, v->b.p, len);
    if (core.seq == k && memcmp(core.prev, hash_of(v, k - 1), 32) == 0) {
        if (push_hash(v, hk) != 0)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
        return 0;
    }
    uint64_t bad;
    reason = classify(v, k, &core, hk, &bad, msg, sizeof(msg));
    return report(v, res, bad, reason, msg, err);
}

/* The parallel part of verify: reading, parsing, validating and hashing records are
 * independent, so worker threads do them for a window of records; linking them is then
 * a cheap sequential pass. Anything not plainly fine is redone by verify_one, which
 * alone decides and explains. */
typedef struct vslot {
    uint64_t seq;
    uint8_t prev[32];
    uint8_t hash[32];
    bool ok;
} vslot;

typedef struct vwork {
    const bd_history *h;
    vslot *slots;
    uint64_t base;
    size_t n;
    atomic_size_t next;
} vwork;

static void *verify_worker(void *arg)
{
    vwork *w = arg;
    rbuf b = {NULL, 0};
    for (;;) {
        size_t i = atomic_fetch_add(&w->next, VERIFY_BATCH);
        if (i >= w->n)
            break;
        size_t end = i + VERIFY_BATCH < w->n ? i + VERIFY_BATCH : w->n;
        for (; i < end; i++) {
            vslot *s = &w->slots[i];
            bd_err ignored;
            rec_core core;
            size_t len;
            s->ok = false;
            if (read_record_file(w->h, w->base + i, &b, &len, NULL, &ignored) != RD_OK ||
                parse_record(b.p, len, &core, NULL, NULL) != BD_CHAIN_OK)
                continue;
            s->seq = core.seq;
            memcpy(s->prev, core.prev, 32);
            bd_history_record_hash(s->hash, core.prev, b.p, len);
            s->ok = true;
        }
    }
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

int bd_history_verify(bd_history *h, int flags, bd_history_verify_result *res, bd_err *err)
{
    int rc = -1;
    vctx v = {0};
    vslot *slots = NULL;
    v.h = h;
    memset(res, 0, sizeof(*res));
    bd_hex(res->head, zero_hash, 32);
    if (open_dirfd(h, false, err) != 0)
        goto out;
    bool has_zero = false;
    if (scan_dir(h, &v.max_seq, &has_zero, false, err) != 0)
        goto out;
    if (has_zero) {
        report(&v, res, 0, BD_CHAIN_INSERTED,
               "a record numbered 0 was inserted before the genesis record", err);
        goto out;
    }
    v.hint_ok = read_head_hint(h, &v.hint_seq, v.hint_hash) == 0;
    int nthreads = verify_threads();
    if (v.max_seq > 0) {
        size_t cap = v.max_seq < verify_window ? (size_t)v.max_seq : verify_window;
        slots = malloc(cap * sizeof(*slots));
        if (!slots) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
            goto out;
        }
    }
    for (uint64_t base = 1; base <= v.max_seq; base += verify_window) {
        uint64_t left = v.max_seq - base + 1;
        vwork w = {h, slots, base, left < verify_window ? (size_t)left : verify_window, 0};
        pthread_t tids[VERIFY_MAX_THREADS];
        int started = 0;
        for (int t = 1; t < nthreads && w.n > VERIFY_BATCH; t++)
            if (pthread_create(&tids[started], NULL, verify_worker, &w) == 0)
                started++;
        verify_worker(&w); /* this thread works too */
        for (int t = 0; t < started; t++)
            pthread_join(tids[t], NULL);
        for (size_t i = 0; i < w.n; i++) {
            uint64_t k = base + i;
            const vslot *s = &slots[i];
            if (s->ok && s->seq == k && memcmp(s->prev, hash_of(&v, k - 1), 32) == 0) {
                if (push_hash(&v, s->hash) != 0) {
                    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
                    goto out;
                }
                continue;
            }
            if (verify_one(&v, k, res, err) != 0)
                goto out;
        }
    }
    res->count = v.n;
    bd_hex(res->head, hash_of(&v, v.n), 32);
    if (flags & BD_VERIFY_KEEP_HASHES) {
        res->hashes = v.hashes;
        v.hashes = NULL;
    }
    rc = 0;
out:
    free(slots);
    free(v.hashes);
    free(v.b.p);
    return rc;
}

void bd_history_verify_result_release(bd_history_verify_result *r)
{
    if (!r)
        return;
    free(r->hashes);
    r->hashes = NULL;
}

/* ---- reading ------------------------------------------------------------------------ */

int bd_history_read(bd_history *h, uint64_t seq, bd_history_record *out, bd_err *err)
{
    rbuf b = {NULL, 0};
    size_t len;
    char why[256], path[PATH_MAX + 32];
    int rc = -1;
    memset(out, 0, sizeof(*out));
    if (open_dirfd(h, false, err) != 0)
        goto out;
    record_path(path, sizeof(path), h, seq);
    int r = read_record_file(h, seq, &b, &len, why, err);
    if (r == RD_ERROR)
        goto out;
    if (r == RD_ABSENT) {
        bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                   "history record %llu does not exist; run `benchdesk history verify`",
                   (unsigned long long)seq);
        goto out;
    }
    if (r == RD_OK) {
        rec_core core;
        bd_chain_reason reason = parse_record(b.p, len, &core, out, why);
        if (reason == BD_CHAIN_OK) {
            rc = 0;
            goto out;
        }
        if (strcmp(why, "out of memory") == 0) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
            goto out;
        }
    }
    bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
               "history record %llu is not a valid record (%s); run `benchdesk history verify`",
               (unsigned long long)seq, why);
out:
    free(b.p);
    return rc;
}

static bool log_match(const bd_history_log_opts *o, const bd_history_record *r)
{
    if (o->task_class && (!r->task_class || strcmp(o->task_class, r->task_class) != 0))
        return false;
    if (o->case_id && (!r->case_id || strcmp(o->case_id, r->case_id) != 0))
        return false;
    return true;
}

int bd_history_log(bd_history *h, const bd_history_log_opts *o, bd_history_record **out, size_t *n,
                   uint64_t *next_before, bd_err *err)
{
    static const bd_history_log_opts defaults = BD_HISTORY_LOG_OPTS_INIT;
    bd_history_record *recs = NULL;
    size_t cnt = 0;
    uint64_t head = 0, next = 0;
    int rc = -1;
    *out = NULL;
    *n = 0;
    if (!o)
        o = &defaults;
    size_t limit = o->limit ? o->limit : BD_HISTORY_LOG_DEFAULT;
    if (bd_history_head(h, &head, NULL, err) != 0)
        goto out;
    uint64_t seq = head;
    if (o->before && o->before - 1 < seq)
        seq = o->before - 1;
    size_t cap = limit < 64 ? limit : 64;
    for (; seq >= 1 && cnt < limit; seq--) {
        bd_history_record r;
        if (bd_history_read(h, seq, &r, err) != 0)
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
    *out = recs;
    *n = cnt;
    if (next_before)
        *next_before = next;
    return rc;
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
