/*
 * hrecord.h — one history record (docs/history.md, docs/formats.md#history-records-format-v2):
 * its parsed form, the full check of its bytes, its record_hash, the validators of its
 * fields and the limits they keep. The record level, below the chain: history.h (which
 * includes this header, so users of the history need nothing else) is the chain built of
 * these records.
 */
#ifndef BD_HRECORD_H
#define BD_HRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "score.h"

#define BD_HISTORY_SCHEMA_VERSION 2
/* Most shards one run may be split into (docs/scale.md). */
#define BD_SHARDS_MAX   65536
#define BD_HASH_HEX_LEN 64
/* 64 hex + NUL */
#define BD_HASH_BUF 65
/* The largest record file verify reads; anything bigger is unparseable. */
#define BD_HISTORY_RECORD_MAX (2u * 1024u * 1024u)
/* Highest sequence number a 10-digit file name can hold. */
#define BD_HISTORY_SEQ_MAX 9999999999ull

/* ---- a record's fields ------------------------------------------------------------ */

/* What the runner knows about one finished case. Every string is borrowed and copied
 * into the record. Formats are checked before anything is written
 * (history.record_invalid for a field out of format, naming the field):
 *   run_id             ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$
 *   task_class/case_id bd_name_valid
 *   *_digest           "blake3:" + 64 lower-case hex; cassette_digest NULL -> null
 *   run_cases          1..9999999999
 *   origin             NULL for a local record
 *   harness_version    1..64 printable ASCII, no spaces; NULL -> BD_VERSION
 *   isolation_class    "namespaces" | "subprocess"
 *   operator_fingerprint  40 upper-case hex, or NULL -> null
 *   started_at/finished_at "YYYY-MM-DDTHH:MM:SS[.fraction]Z" (UTC) */
/* Where an imported record came from (docs/scale.md); present == false: a local record.
 * In a parsed record the strings are owned; in score fields they are borrowed. */
typedef struct bd_history_origin {
    bool present;
    uint32_t shard, shards;
    char *run_id;
    char *host;
    char bundle_record_hash[BD_HASH_BUF];
} bd_history_origin;

typedef struct bd_history_score_fields {
    const char *run_id;
    bool run_full;      /* run_scope "full" (the default selection) or "subset" */
    uint64_t run_cases; /* how many cases the run selected, >= 1 */
    const char *task_class;
    const char *case_id;
    const char *case_digest;
    const char *task_class_digest;
    const char *cassette_digest;
    const char *harness_version;
    const char *isolation_class;
    bool provenance_verified;
    const char *operator_fingerprint;
    const char *started_at;
    const char *finished_at;
    const bd_history_origin *origin;
} bd_history_score_fields;

/* ---- why a record or the chain is refused ------------------------------------------ */

#define BD_CHAIN_REASONS(X)                                                                        \
    X(BD_CHAIN_OK, "ok")                                                                           \
    X(BD_CHAIN_EDITED, "edited")                                                                   \
    X(BD_CHAIN_MISSING, "missing")                                                                 \
    X(BD_CHAIN_REORDERED, "reordered")                                                             \
    X(BD_CHAIN_INSERTED, "inserted")                                                               \
    X(BD_CHAIN_SPLICED, "spliced")                                                                 \
    X(BD_CHAIN_UNPARSEABLE, "unparseable")                                                         \
    X(BD_CHAIN_SCHEMA_INVALID, "schema_invalid")

typedef enum {
#define BD_X(name, str) name,
    BD_CHAIN_REASONS(BD_X)
#undef BD_X
        BD_CHAIN__COUNT
} bd_chain_reason;

/* "edited", "missing", ... Never NULL. */
const char *bd_chain_reason_str(bd_chain_reason r);

/* ---- the parsed record ------------------------------------------------------------- */

/* One parsed record. Strings are owned; absent/null fields are NULL. */
typedef struct bd_history_record {
    uint64_t seq;
    int schema_version; /* 1 or 2 */
    bool is_audit;
    char hash[BD_HASH_BUF]; /* this record's record_hash */
    char prev_hash[BD_HASH_BUF];
    char *harness_version;
    char *operator_fingerprint; /* NULL when null */
    char *task_class;           /* NULL only for an audit record without one */
    /* score records */
    char *run_id;
    char *case_id;
    char *case_digest;
    char *rubric_digest;     /* version 1 only */
    char *task_class_digest; /* version 2 only */
    char *run_scope;         /* version 2: "full" | "subset"; NULL in version 1 */
    uint64_t run_cases;      /* version 2; 0 in version 1 */
    bd_history_origin origin;
    char *cassette_digest; /* NULL when null */
    char *isolation_class;
    bool provenance_verified;
    char *started_at;
    char *finished_at;
    bd_score score; /* owned; released by bd_history_record_release */
    /* audit records */
    char *event;
    char *detail;
    char *at;
    /* the record as stored (owned), for --json and the TUI's record view */
    cJSON *json;
} bd_history_record;

/* Parse and validate the bytes of one record. `out` may be NULL (validate only).
 * Returns BD_CHAIN_OK and fills *out (release with bd_history_record_release), or
 * BD_CHAIN_UNPARSEABLE (not UTF-8, not one JSON object) / BD_CHAIN_SCHEMA_INVALID (a
 * missing, extra, duplicate or mistyped member, a value out of format, bytes that are not
 * the canonical form) with a one-line reason in `why` (may be NULL), leaving *out zeroed.
 * On out-of-memory returns BD_CHAIN_UNPARSEABLE with why "out of memory". out->hash is
 * computed from the bytes. Never crashes on any input (fuzzed). */
bd_chain_reason bd_history_record_parse(bd_history_record *out, const char *buf, size_t len,
                                        char why[256]);

void bd_history_record_release(bd_history_record *r);

/* Parse the bytes of record `seq` that a verified walk hands its visitor, with their
 * record hash: they are a valid record already (the walk checked them in full, or an
 * anchor that verifies covers them), so their encoding, canonical form and hash are not
 * worked out again; out->hash is `hash` and out->json is NULL. Returns 0 (release with
 * bd_history_record_release), or -1 with chain.tampered ("history record N is not a valid
 * record (why)", advising history verify) or env.out_of_memory in `err`. */
int bd_history_record_parse_linked(bd_history_record *out, uint64_t seq, const char *buf,
                                   size_t len, const uint8_t hash[32], bd_err *err);

/* Whether `a` and `b` hold the same record: every field, string by string and number bit
 * by bit, the stored JSON aside (tests and fuzz targets hold the ways of parsing a record
 * to the same answer with it). */
bool bd_history_record_same(const bd_history_record *a, const bd_history_record *b);

/* Release n records and free the array (bd_history_log's). */
void bd_history_records_free(bd_history_record *recs, size_t n);

/* ---- hashing ----------------------------------------------------------------------- */

/* record_hash of a record whose bytes are `buf` and whose prev_hash is `prev` (32 raw
 * bytes). */
void bd_history_record_hash(uint8_t out[32], const uint8_t prev[32], const void *buf, size_t len);

/* Parse 64 hex digits (either case) into 32 bytes. Returns 0 or -1. */
int bd_hash_unhex(uint8_t out[32], const char *hex);

/* ---- fields ------------------------------------------------------------------------ */

/* The fields of the parsed version-2 score record `r`, to append it again elsewhere (a
 * shard's record merged into the local chain, docs/scale.md: set f->origin after this
 * call, then bd_history_append_score(h, f, &r->score, ...)). Strings are borrowed from
 * `r`. Returns 0, or -1 (nothing filled) for an audit or version-1 record. */
int bd_history_score_fields_of(bd_history_score_fields *f, const bd_history_record *r);

/* Whether an audit record with `detail` belongs to a run (docs/history.md#audit-records):
 * its detail is canonical JSON, an object whose `run_id` member is a string of the run-id
 * format (run.stopped, run.signed). Returns true with that id in `run_id`, else false
 * with run_id "". `detail` may be NULL. */
#define BD_HISTORY_AUDIT_RUN_BUF 129 /* a run id is at most 128 bytes */
bool bd_history_audit_run(const char *detail, char run_id[BD_HISTORY_AUDIT_RUN_BUF]);

/* The formats a record's fields are checked against (see bd_history_score_fields), for
 * other files that carry the same values (a shard bundle's manifest, docs/scale.md). */
bool bd_history_run_id_valid(const char *s);
bool bd_history_host_valid(const char *s);
bool bd_history_time_valid(const char *s);

#endif
