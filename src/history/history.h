/*
 * history.h — the append-only, hash-chained score history (docs/history.md).
 *
 * Records are the lines of append-only segment files (segment.h),
 * <bench root>/.benchdesk/history/segments/<seq of the first record, 10 digits>.jsonl,
 * mode 0600, 65,536 records each; a record is one canonical JSON object (canon.h), its
 * line's bytes without the '\n'. A history in the version-1 layout (one <seq>.json file
 * per record) is read as it is and converted to segments on the first append, under the
 * lock, atomically, the bytes unchanged. Two kinds of record share the chain:
 *
 *   score record  exactly the members of docs/formats.md#history-records-format-v2.
 *                 Version 2 (written now): schema_version, seq, run_id, run_scope,
 *                 run_cases, task_class, case_id, case_digest, task_class_digest,
 *                 cassette_digest, harness_version, isolation_class, provenance_verified,
 *                 operator_fingerprint, started_at, finished_at, score, prev_hash, and
 *                 `origin` on records imported from a shard (docs/scale.md#what-a-shard-writes).
 *                 Version 1 (still valid in a chain) had rubric_digest instead of
 *                 task_class_digest and no run_scope/run_cases. No "kind" member;
 *   audit record  schema_version, seq, kind ("audit"), event, task_class, detail,
 *                 operator_fingerprint, harness_version, at, prev_hash (e.g. a refused
 *                 promotion, docs/history.md#promotion-recommend-never-apply).
 *
 * record_hash = SHA-256("benchdesk-chain-v1\0" || unhex(prev_hash) || BLAKE3(record bytes)),
 * lower-case hex; the genesis prev_hash is 64 zeros. Every record's hash is computable
 * from its own bytes, so anyone can recompute the chain with b3sum and sha256sum.
 *
 * Append is single-writer (flock on history/.lock, also between threads of one process),
 * group-committed (the records appended together share one write and one fsync), and
 * O(1): the head is the last whole line of the last segment, read from the file's end.
 * A crash leaves whole records plus at most one torn final line, which the next append
 * truncates (bd_history_repair_note) and verify reports as torn_tail, never as a record.
 *
 * docs/history.md documents the formats and how verify names the first bad record.
 */
#ifndef BD_HISTORY_H
#define BD_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "hindex.h"
#include "hrecord.h" /* one record: its struct, parse, hash and fields */
#include "score.h"
#include "version.h" /* BD_VERSION, the default harness_version */

#define BD_HISTORY_DIR ".benchdesk/history"
/* Default page of `log`. */
#define BD_HISTORY_LOG_DEFAULT 20

typedef struct bd_history bd_history;

/* ---- opening ----------------------------------------------------------------------- */

enum {
    BD_HISTORY_READ = 0,   /* the directory may be absent: an empty chain */
    BD_HISTORY_CREATE = 1, /* create .benchdesk/history (mode 0700) if absent */
};

/* Open the history of the bench at `bench_root` (<root>/.benchdesk/history). With
 * BD_HISTORY_READ a missing directory is an empty chain; a path that exists but is not
 * a directory (or is a symlink) is io.error. Returns 0 and a new handle (free with
 * bd_history_free), or -1 with io.error / env.out_of_memory. A handle may be used from
 * several threads; appends through it (or through other handles, or other processes)
 * are serialised by the lock file. */
int bd_history_open(bd_history **out, const char *bench_root, int flags, bd_err *err);

/* Same, for the history directory `dir` itself (tests, tools). */
int bd_history_open_dir(bd_history **out, const char *dir, int flags, bd_err *err);

void bd_history_free(bd_history *h);

/* The history directory (borrowed). */
const char *bd_history_dir(const bd_history *h);

/* ---- appending --------------------------------------------------------------------- */

/* The fields of a score record (bd_history_score_fields) and their formats: hrecord.h. */

/* Append one score record for `f` and `s` (the BenchScore, as bd_score_to_json writes
 * it). On success returns 0, the new record's seq in *seq_out and its record_hash in
 * hash_out (each may be NULL). On failure returns -1 and nothing was added:
 * history.record_invalid (a field out of format, or a score that canonical JSON cannot
 * hold: NaN, invalid UTF-8), chain.tampered
 * (the head record is unreadable, or the segment holds more than its whole lines and a
 * torn tail, or is not a regular file: run history verify), io.error (any open, write or
 * sync failure — never retried; the segment is cut back to its last whole record),
 * env.out_of_memory. A torn final line left by a crash is truncated first and reported
 * through bd_history_repair_note. */
int bd_history_append_score(bd_history *h, const bd_history_score_fields *f, const bd_score *s,
                            uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err);

/* Append n score records together (group commit): one lock, one write and one fsync per
 * segment touched, records seq first..first+n-1 in the order given. f[i] and s[i] as for
 * bd_history_append_score. Either every record is appended or none (a record out of
 * format refuses the whole batch before anything is written). *first_seq_out (may be
 * NULL) gets the first new seq, hashes_out (may be NULL, else n entries) the record
 * hashes. Errors as bd_history_append_score. */
int bd_history_append_batch(bd_history *h, const bd_history_score_fields *f,
                            const bd_score *const *s, size_t n, uint64_t *first_seq_out,
                            char (*hashes_out)[BD_HASH_BUF], bd_err *err);

/* What the last append through `h` (or bd_history_repair_tail) repaired — a torn final
 * line left by a crash, which it truncated — as one line for the caller to report (every
 * front end that appends says so, docs/history.md); NULL when nothing. Borrowed. */
const char *bd_history_repair_note(const bd_history *h);

/* The first step of an append on its own: under the lock, truncate a torn final line a
 * crash left in the segment the next append writes to, and note it for
 * bd_history_repair_note. Adds no record and creates nothing. For a front end that wants
 * to report the repair before it hands the history on (`run`: the runner appends later).
 * Returns 0 (also when there was nothing to repair) or -1 with the errors an append
 * reports before writing (chain.tampered, io.error, env.out_of_memory). */
int bd_history_repair_tail(bd_history *h, bd_err *err);

/* An audit event. `event` matches ^[a-z0-9][a-z0-9._-]{0,127}$ (e.g.
 * "promotion.refused"); task_class is a valid name or NULL (-> null); detail is UTF-8
 * of at most 4096 bytes (NULL -> ""); operator_fingerprint as for a score record
 * (hrecord.h); harness_version NULL -> BD_VERSION; at NULL -> now (UTC). */
typedef struct bd_history_audit_fields {
    const char *event;
    const char *task_class;
    const char *detail;
    const char *operator_fingerprint;
    const char *harness_version;
    const char *at;
} bd_history_audit_fields;

/* Append one audit record. Same contract as bd_history_append_score. */
int bd_history_append_audit(bd_history *h, const bd_history_audit_fields *f, uint64_t *seq_out,
                            char hash_out[BD_HASH_BUF], bd_err *err);

/* The chain head: seq of the last record (0 for an empty chain) and its record_hash (64
 * zeros when empty). O(1): the last whole line of the last non-empty segment.
 * Does not verify the chain. Returns 0, or -1 (chain.tampered when the last record is
 * unreadable, io.error). */
int bd_history_head(bd_history *h, uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err);

/* ---- verifying --------------------------------------------------------------------- */

/* Why a record or the chain is refused (bd_chain_reason): hrecord.h. */

enum {
    BD_VERIFY_KEEP_HASHES = 1, /* keep every verified record's hash in result->hashes */
    BD_VERIFY_FULL = 2,        /* parse every record, even under a trusted head (opts) */
};

/* Each record of the chain being verified, in seq order: fn(seq, bytes, len, hash, ctx)
 * for every record whose bytes contain `needle` (NULL: every record), called by the walk
 * itself, so what a caller decides on is exactly the bytes that were verified (never a
 * second read of the files). fn returns 0 to go on; anything else stops the walk, which
 * returns -1 (fn fills its own error). When the walk starts again from record 1 (a
 * trusted head that the bytes do not reach, below), reset(ctx) is called first; fn may
 * be called for records before a failure is found, so a caller uses what it gathered only
 * when the walk returns 0. */
typedef struct bd_history_visit {
    const char *needle;
    int (*fn)(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *ctx);
    void (*reset)(void *ctx);
    void *ctx;
    /* Optional, to spread the reading of each record over the walk's hashing threads:
     * pre(rec, len, out, ctx) is called for every record whose bytes contain `needle`, on
     * any thread and in any order (it must only read `rec` and what `ctx` holds unchanged
     * during the walk), filling `pre_size` bytes at `out`; then fn_pre(seq, out, hash,
     * ctx) is called in seq order, after the record is linked, instead of `fn`. The
     * bytes `pre` read are the bytes verified. pre_size at most 1024. */
    size_t pre_size;
    void (*pre)(const char *rec, size_t len, void *out, const void *ctx);
    int (*fn_pre)(uint64_t seq, const void *pre, const uint8_t hash[32], void *ctx);
} bd_history_visit;

/* Options of bd_history_verify_with (zero-initialise; BD_HISTORY_VERIFY_OPTS_INIT). */
typedef struct bd_history_verify_opts {
    int flags;
    /* Records 1..trusted_count need not be parsed again when the chain recomputed over
     * their bytes arrives at trusted_head: a head that a signed anchor vouches for (every
     * record under an anchor was checked in full when it was published). When it does not
     * arrive there, every record is parsed. 0: parse every record. Never the memo
     * (history/VERIFIED), which anyone who can edit a record can also write. */
    uint64_t trusted_count;
    uint8_t trusted_head[32];
    /* The hashes of these records (any order) into result->want_hashes[i] (zeros when
     * the chain is shorter): an anchor's record, without keeping every hash. */
    const uint64_t *want;
    size_t n_want;
    const bd_history_visit *visit; /* NULL: none */
} bd_history_verify_opts;

#define BD_HISTORY_VERIFY_OPTS_INIT                                                                \
    {                                                                                              \
        0, 0, {0}, NULL, 0, NULL                                                                   \
    }

typedef struct bd_history_verify_result {
    uint64_t count;             /* records verified intact, from seq 1 */
    char head[BD_HASH_BUF];     /* hash of record `count` (64 zeros when 0) */
    bd_chain_reason reason;     /* BD_CHAIN_OK, or why the chain is broken */
    uint64_t bad_seq;           /* the first bad seq (0 when OK, or for a record "0") */
    uint8_t (*hashes)[32];      /* BD_VERIFY_KEEP_HASHES: hashes[i] is record i+1's */
    bool torn_tail;             /* the last segment ends in a torn line (a crash during an
                                   append): not a record, not tampering; the next append
                                   removes it */
    uint8_t (*want_hashes)[32]; /* opts->want's hashes, in its order (owned) */
    uint64_t parsed_from;       /* the first record parsed in full (count + 1: none; 1:
                                   all; trusted_count + 1 when a trusted head held) */
} bd_history_verify_result;

/* Walk the chain from seq 1: segments named on the 65,536-record grid without a gap, each
 * line a record, parseable, schema-valid and canonical, its seq field equal to its
 * position, its prev_hash equal to the previous record's hash (in a version-1 layout:
 * contiguous file names). A torn final line is result->torn_tail, not a failure. Every
 * record is parsed and checked in full, except those under opts->trusted_head (above);
 * the memo (history/VERIFIED) is written for the run gate but never believed here.
 * Returns 0 when the chain is intact (result->reason BD_CHAIN_OK, count and head set).
 * Returns -1 with chain.tampered when it is not: result->bad_seq and result->reason name
 * the first bad record (rules in docs/history.md), result->count/head describe the
 * intact prefix before it, and err's message says what was found, where, and what to do.
 * A record whose schema_version is newer than this benchdesk knows is
 * history.newer_version (exit 4: upgrade), never chain.tampered.
 * Returns -1 with io.error / env.out_of_memory when the chain could not be read
 * (result->reason stays BD_CHAIN_OK), or with the visitor's error when it stopped.
 * Always release *result with bd_history_verify_result_release. */
int bd_history_verify_with(bd_history *h, const bd_history_verify_opts *opts,
                           bd_history_verify_result *result, bd_err *err);

/* bd_history_verify_with with only flags. */
int bd_history_verify(bd_history *h, int flags, bd_history_verify_result *result, bd_err *err);

void bd_history_verify_result_release(bd_history_verify_result *r);

/* The run gate's verify (docs/history.md#verifying-the-first-bad-record-and-why): a
 * tripwire, not a proof. Checks only what was appended since the last verify that found
 * the chain intact (history/VERIFIED, the head it saw and where), plus
 * that this head is still in place with the same hash; when there is no such memo, it no
 * longer matches, or anything after it does not chain cleanly, it does the full walk
 * (bd_history_verify), which then names the first bad record. Same contract as
 * bd_history_verify (no hashes kept); updates the memo. */
int bd_history_verify_since(bd_history *h, bd_history_verify_result *res, bd_err *err);

/* ---- reading ----------------------------------------------------------------------- */

/* One parsed record (bd_history_record), its parse and release, and
 * bd_history_records_free for bd_history_log's array: hrecord.h. */

/* Read and parse record `seq` (not verified against its neighbours). Returns 0 and fills
 * *out (release with bd_history_record_release), or -1: chain.tampered when the record is
 * missing, unparseable or schema-invalid, io.error, env.out_of_memory. */
int bd_history_read(bd_history *h, uint64_t seq, bd_history_record *out, bd_err *err);

typedef struct bd_history_log_opts {
    const char *task_class;   /* only records of this task class, or NULL */
    const char *case_id;      /* only score records of this case, or NULL */
    size_t limit;             /* page size; 0 means BD_HISTORY_LOG_DEFAULT */
    uint64_t before;          /* start below this seq (paging); 0 = from the head */
    const char *run_id;       /* only records of this run (bd_history_audit_run), or NULL */
    const char *failure_mode; /* only score records with a failure mode of this code */
    bool failed_only;         /* only score records that did not pass */
    /* A further filter (e.g. stale records, stale.h), or NULL: keep when it returns true. */
    bool (*keep)(const bd_history_record *r, void *ctx);
    void *keep_ctx;
} bd_history_log_opts;

#define BD_HISTORY_LOG_OPTS_INIT                                                                   \
    {                                                                                              \
        NULL, NULL, 0, 0, NULL, NULL, false, NULL, NULL                                            \
    }

/* The newest records matching `o`, newest first: reads from the head downwards and stops
 * as soon as the page is full (a filter that matches rarely may read further). Does not
 * verify the chain. Returns 0 with a new array in *out and its length in *n (free with
 * bd_history_records_free), or -1: chain.tampered (a record in the way is missing or
 * unreadable), io.error, env.out_of_memory. *next_before (may be NULL) receives the seq
 * to pass as `before` for the next page, 0 when there is none. */
int bd_history_log(bd_history *h, const bd_history_log_opts *o, bd_history_record **out, size_t *n,
                   uint64_t *next_before, bd_err *err);

/* Fast field access on the bytes of a record that verify has accepted (canonical JSON,
 * schema-valid): no parse. Only for such bytes: on anything else the answers are
 * meaningless (never unsafe). */
/* One pass over the top level of the record: for each of keys[0..n) found, vals[i] and
 * vlens[i] get its value's raw JSON text (a string with its quotes); others get NULL.
 * Nested objects and arrays are stepped over. At most 64 keys (those past are never
 * found). Returns how many were found. */
size_t bd_record_members(const char *rec, size_t len, const char *const *keys, size_t n,
                         const char **vals, size_t *vlens);

/* score.passed and score.score of a score record; false for an audit record. */
bool bd_record_score(const char *rec, size_t len, bool *passed, double *score);

/* The same from the score member's raw value (as bd_record_members gives it). */
bool bd_record_score_of(const char *score_val, size_t len, bool *passed, double *score);

/* Keys looked up in many records, prepared once by bd_record_keys_init (no allocation,
 * nothing to free; `keys` is borrowed and must outlive it): at most 64. */
typedef struct bd_record_keys {
    const char *const *keys;
    size_t n;
    size_t len[64];
    uint64_t slot[32]; /* bit i in slot[(first byte + length) % 32]: key i may match */
    uint8_t known[16]; /* the members a score record may hold before `score`, in their
                        * order (hmembers.c): which key each is (n: none of these) */
    uint8_t tail[8];   /* the same for those read from its end (hmembers.c) */
} bd_record_keys;

/* Prepare keys[0..n) (n <= 64; more are ignored). */
void bd_record_keys_init(bd_record_keys *ks, const char *const *keys, size_t n);

/* bd_record_members and bd_record_score_of together, for a version-2 score record in the
 * shape docs/formats.md#history-records-format-v2 gives it (members sorted; after `score`
 * exactly seq, started_at, task_class and task_class_digest; a BenchScore ending with
 * passed, score and wall_clock_ms): the members before `score` are read forwards, the rest
 * and score's passed and score backwards from the record's end, never stepping over the
 * BenchScore's lists — most of a record's bytes. Returns true with vals/vlens (ks->n of
 * each) filled as bd_record_members fills them (keys named nowhere in the record get NULL)
 * and *passed, *score set; false for anything not in that shape (an audit record, a
 * version-1 record), the outputs then meaningless: the caller reads it the general way.
 * Same contract on the bytes as above: verified records only, never unsafe on others. */
bool bd_record_members_scored(const char *rec, size_t len, const bd_record_keys *ks,
                              const char **vals, size_t *vlens, bool *passed, double *score);

/* A JSON number's raw text (as bd_record_members gives it) as the double verify read,
 * whatever the locale. False when it is not a number. */
bool bd_record_number(const char *v, size_t vl, double *out);

/* ---- hashing ----------------------------------------------------------------------- */

/* A record's record_hash (bd_history_record_hash) and bd_hash_unhex: hrecord.h. */

/* Tests only: whether bd_record_members_scored reads the members before `score` by their
 * known names (on, the default) or the general way (off), to compare the two. Not
 * thread-safe. */
void bd_record_test_members_known(bool on);

/* Tests only: records per parallel verify window (0 restores the default), so a small
 * history crosses several windows. Not thread-safe. */
void bd_history_test_verify_window(size_t n);

/* Tests only: the first window (bytes) history log reads from a segment's end when it
 * pages newest first (0 restores the default; SIZE_MAX reads whole segments only), so a
 * small history crosses several windows. Not thread-safe. */
void bd_history_test_tail_window(size_t bytes);

/* Tests only: how many verifies in this process started over in the full mode because the
 * fast mode (hashes recomputed from each record's own prev_hash, under a memo) did not
 * arrive at the memo's head. */
unsigned bd_history_test_fast_fallbacks(void);

/* ---- the derived index (docs/history.md, hindex.h) ------------------------------------ */

/* The index of the history of a bench (a handle from bd_history_open; not of one opened
 * with bd_history_open_dir), brought up to the chain's head first: extended from the head
 * it was built from when that record is still in its place with its hash, else rebuilt.
 * NULL when there is none to use — a version-1 layout, an empty chain, an index that
 * cannot be written, segments that do not hold whole segments of records, or
 * BENCHDESK_NO_INDEX set — and the caller reads the segments instead. An index that is
 * not exactly as this user's benchdesk left it (its seal, hindex.h) is rebuilt from the
 * records first (bd_history_index_note says so). Never trusted for integrity and never
 * for a decision: it only says where to read, and a view checks what it reads. Close
 * with bd_hindex_close. Never fails. */
bd_hindex *bd_history_index(bd_history *h);

/* What the last bd_history_index or bd_history_index_distrust found about the index (it
 * was edited outside benchdesk, or disagreed with the records, and is rebuilt), for the
 * front end to say once; NULL when nothing. Owned by h. */
const char *bd_history_index_note(const bd_history *h);

/* A view read a record the index pointed to and it was not what the index said (another
 * task class, case or run, a record that is not a score): the index is not this chain's.
 * Breaks its seal so the next bd_history_index rebuilds it, and sets the note. */
void bd_history_index_distrust(bd_history *h);

/* Read and parse the record the index places at `hit` (bytes [off, off+len) of its
 * segment, a whole line). Returns 0 and fills *out (bd_history_record_release); 1 when
 * that place does not hold record hit->seq as a valid whole line (the index is out of date
 * or the history was altered: the caller falls back to reading the segments); -1 with
 * io.error / env.out_of_memory. */
int bd_history_read_at(bd_history *h, const bd_hindex_hit *hit, bd_history_record *out,
                       bd_err *err);

/* bd_history_read_at for the newest score record of (task_class, case_id), as
 * bd_hindex_latest names it, held against what the index said: a record that is not a
 * score record of that task class and case means the index is not this chain's, so it is
 * distrusted (bd_history_index_distrust) and 1 is returned, as for a place that holds no
 * record. Returns 0 (*out filled), 1, or -1 as bd_history_read_at. */
int bd_history_read_latest(bd_history *h, const bd_hindex_hit *hit, const char *task_class,
                           const char *case_id, bd_history_record *out, bd_err *err);

/* Tests only: how many times an index was built from nothing and extended, so far in
 * this process. */
void bd_history_test_index_counts(unsigned *builds, unsigned *extends);

/* Seconds since the epoch of a record time "YYYY-MM-DDTHH:MM:SS[.f]Z" (the fraction
 * dropped), or -1 when it is not of that form. */
int64_t bd_history_time_epoch(const char *s);

/* The version-1 record file name of `seq`: "0000000042.json" (16 bytes with NUL). */
void bd_history_file_name(char out[16], uint64_t seq);

#endif
