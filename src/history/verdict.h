/*
 * verdict.h — a reviewer's signed verdict on one score record (docs/formats.md#verdict-files,
 * docs/provenance.md#verdicts): the file, the signed message, the subject's score_id,
 * writing one, and checking every verdict file of a bench.
 *
 * The subject. A score record's score_id is the lower-case hex BLAKE3 of its canonical
 * JSON without the members `seq`, `prev_hash` and `origin`: the same on every machine
 * that ran or imported the record.
 *
 * The file audit/verdicts/<task_class>/<run_id>/<case_id>/<reviewer fingerprint>-<at as
 * YYYYMMDDTHHMMSSZ>.json is canonical JSON followed by one "\n", with exactly:
 *
 *     {"at":"YYYY-MM-DDTHH:MM:SSZ","case_id":…,"note":…,"reviewer_fingerprint":"<40 hex>",
 *      "run_id":…,"schema_version":1,"score_id":"<64 hex>","signature":"<armored>",
 *      "task_class":…,"verdict":"confirmed|rubric_bug|case_bug|flaky|infra|withdrawn"}
 *
 * The signed message is exactly these bytes, every line ending in "\n":
 *
 *     benchdesk-verdict-v1\n
 *     task_class:<name>\n
 *     run_id:<id>\n
 *     case_id:<id>\n
 *     score_id:<64 hex>\n
 *     verdict:<verdict>\n
 *     note_sha256:<lower-case hex SHA-256 of the note's bytes>\n
 *     at:<at>\n
 *
 * Threads: call bd_provenance_init() from the main thread first. Nothing here prints.
 */
#ifndef BD_VERDICT_H
#define BD_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "history.h"
#include "provenance.h"
#include "sign.h"

#define BD_VERDICT_MAGIC    "benchdesk-verdict-v1"
#define BD_VERDICT_DIR      "audit/verdicts"
#define BD_VERDICT_NOTE_MAX 1024
#define BD_VERDICT_FILE_MAX (64 * 1024)

#define BD_VERDICT_KINDS(X)                                                                        \
    X(BD_VERDICT_CONFIRMED, "confirmed")                                                           \
    X(BD_VERDICT_RUBRIC_BUG, "rubric_bug")                                                         \
    X(BD_VERDICT_CASE_BUG, "case_bug")                                                             \
    X(BD_VERDICT_FLAKY, "flaky")                                                                   \
    X(BD_VERDICT_INFRA, "infra")                                                                   \
    X(BD_VERDICT_WITHDRAWN, "withdrawn")

typedef enum {
#define BD_X(name, str) name,
    BD_VERDICT_KINDS(BD_X)
#undef BD_X
        BD_VERDICT__COUNT
} bd_verdict_kind;

/* "confirmed", ... Never NULL ("?" out of range). */
const char *bd_verdict_kind_str(bd_verdict_kind k);

/* Parse a verdict word. Returns 0, or -1 for anything else. */
int bd_verdict_kind_parse(const char *s, bd_verdict_kind *out);

/* True for the verdicts that take a record out of the evidence when two reviewers agree
 * (rubric_bug, case_bug, infra). */
bool bd_verdict_kind_removes(bd_verdict_kind k);

/* One verdict, as in its file. */
typedef struct bd_verdict {
    char task_class[129];
    char run_id[129];
    char case_id[129];
    char score_id[BD_HASH_BUF];
    bd_verdict_kind verdict;
    char *note; /* owned, UTF-8, at most BD_VERDICT_NOTE_MAX bytes */
    char reviewer[BD_FPR_HEX_LEN + 1];
    char at[21];     /* YYYY-MM-DDTHH:MM:SSZ */
    char *signature; /* owned, armored */
} bd_verdict;

void bd_verdict_release(bd_verdict *v);

/* score_id of the canonical record bytes rec[0..len) (a score record the chain holds):
 * the members seq, prev_hash and origin cut from the bytes, the rest hashed as it is.
 * Returns 0, or -1 (history.record_invalid: not a canonical score record; out of memory). */
int bd_score_id(char out[BD_HASH_BUF], const char *rec, size_t len, bd_err *err);

/* The string member `key` of verified canonical record bytes (no escapes in it: names,
 * ids, digests) into out (`cap` bytes). False when absent, escaped or too long. */
bool bd_verdict_record_str(const char *rec, size_t len, const char *key, char *out, size_t cap);

/* The exact message above for `v`. *out is new (caller frees), *len (may be NULL) its
 * length. Refuses fields out of format (usage.bad_args). Returns 0 or -1. */
int bd_verdict_message(char **out, size_t *len, const bd_verdict *v, bd_err *err);

/* The file's path relative to the bench root (new string, caller frees; NULL when out of
 * memory). */
char *bd_verdict_rel_path(const bd_verdict *v);

/* Parse the bytes of a verdict file strictly (the members and formats above, canonical
 * JSON and a final "\n"); when `rel_path` is not NULL, the path must be the one
 * bd_verdict_rel_path gives. Returns 0 and fills *out (bd_verdict_release), or -1 with
 * verdict.invalid naming `rel_path` and what is wrong. Never crashes on any input. */
int bd_verdict_parse(bd_verdict *out, const char *buf, size_t len, const char *rel_path,
                     bd_err *err);

/* The file's bytes (canonical JSON + "\n"): *out new (caller frees), *len its length.
 * Returns 0 or -1 (env.out_of_memory). */
int bd_verdict_serialize(char **out, size_t *len, const bd_verdict *v, bd_err *err);

/* ---- the verdicts of a bench ------------------------------------------------------------ */

/* Where one verdict file stands. */
typedef enum {
    BD_VST_COUNTS,     /* trusted, its subject in this chain, its reviewer's latest */
    BD_VST_SUPERSEDED, /* trusted, but the same reviewer has a later verdict on the subject */
    BD_VST_UNTRUSTED,  /* good file, but its key has no reviewer role today (or is unusable) */
    BD_VST_NO_SUBJECT, /* trusted, but its subject is not in this machine's verified chain */
    BD_VST_BAD,        /* malformed, misnamed, forged or replayed: a verify failure (err) */
} bd_verdict_state;

/* "counts" | "superseded" | "untrusted" | "subject not in this history" | "bad". */
const char *bd_verdict_state_str(bd_verdict_state s);

typedef struct bd_verdict_entry {
    char *path;   /* relative to the bench root (owned) */
    bd_verdict v; /* zeroed when the file did not parse */
    bd_verdict_state state;
    bd_err err;         /* BD_OK unless state is BD_VST_BAD */
    char why[200];      /* why it is untrusted ("" otherwise) */
    char identity[256]; /* trusted-signers.yaml identity of the reviewer, "" if none */
    uint64_t seq;       /* the subject's seq in this chain, 0 when not there */
    bool passed;        /* the subject's score.passed (seq != 0) */
} bd_verdict_entry;

typedef struct bd_verdict_set {
    bd_verdict_entry *e; /* sorted by path */
    size_t n;
    size_t n_bad, n_untrusted, n_no_subject, n_counting;
    bool matched; /* subjects were matched against a verified chain */
    /* internal: score_id -> entries, run ids named */
    struct bd_verdict_index *ix;
} bd_verdict_set;

/* Read every *.json under audit/verdicts/ of the bench at `bench_root`, parse each and
 * check its signature over its message in `prov` (bench/keys in a private home; many at
 * once on a few threads, each through bd_prov_verify_detached), its key's reviewer role
 * in trusted-signers.yaml, and replays (two files with one signature: both bad). A file
 * that does not parse, is misnamed, or whose signature does not verify over its message
 * or was made by another key than the file names is BD_VST_BAD (verdict.invalid); a good
 * file whose key is unknown, expired, revoked, or without the reviewer role is
 * BD_VST_UNTRUSTED (never a failure). `task_class` (may be NULL) limits it to that task
 * class's folder. Subjects are not matched yet (every good trusted file is
 * BD_VST_NO_SUBJECT until bd_verdict_set_match's walk). Returns 0 and fills *out
 * (bd_verdict_set_release), or -1 (io.error, gpg.*, env.out_of_memory). */
int bd_verdict_set_load(bd_verdict_set *out, const char *bench_root, const char *task_class,
                        bd_prov_ctx *prov, bd_err *err);

/* A visitor for the verified walk (history.h) that matches the set's subjects: for each
 * record of a run some verdict names, its score_id; records named get seq and passed.
 * Calls `inner` (may be NULL) first for every record, with inner's needle. Fill *out and
 * pass it to the walk; after a walk that returned 0 call bd_verdict_set_settle. The set
 * must outlive the walk. */
void bd_verdict_set_visitor(bd_history_visit *out, bd_verdict_set *s,
                            const bd_history_visit *inner);

/* After the walk: which verdicts count (trusted, subject here, the reviewer's latest at on
 * the subject; a latest `withdrawn` counts as none), counts filled. */
void bd_verdict_set_settle(bd_verdict_set *s);

/* bd_verdict_set_load, a verified walk of the chain (bd_history_verify_with, anchors not
 * checked) and bd_verdict_set_settle, for verify and the commands that need nothing else
 * from the chain. Returns as bd_verdict_set_load, or the walk's error (chain.tampered). */
int bd_verdict_set_check(bd_verdict_set *out, const char *bench_root, const char *task_class,
                         bd_prov_ctx *prov, bd_err *err);

void bd_verdict_set_release(bd_verdict_set *s);

/* What trusted reviewers say of the record `seq`, after settling: the counting verdicts
 * on it (their entries, at most `cap` into out), returns how many there are. */
size_t bd_verdict_set_on(const bd_verdict_set *s, uint64_t seq, const bd_verdict_entry **out,
                         size_t cap);

/* The combined judgement of a record from its counting verdicts. */
typedef struct bd_verdict_summary {
    size_t n;                         /* counting verdicts */
    bool removed;                     /* two reviewers (different fingerprints and
                                         identities) gave the same removing verdict */
    bd_verdict_kind removed_by;       /* that verdict, when removed */
    const bd_verdict_entry *first[2]; /* the two reviewers, when removed */
    bool awaiting_second;             /* one removing verdict, no agreeing second */
    bool flaky;                       /* some reviewer said flaky */
    bool agreed;                      /* n > 0 and every counting verdict is the same */
    bd_verdict_kind agreed_on;        /* that verdict, when agreed */
} bd_verdict_summary;

void bd_verdict_summarize(bd_verdict_summary *out, const bd_verdict_set *s, uint64_t seq);

/* A one-line badge of the verdicts that count on record `seq` into buf ("" when none):
 * "removed: rubric_bug (alice, bob)", "rubric_bug by alice, awaiting a second reviewer",
 * "confirmed by bob; flaky by carol". Identities are bench text: a front end sanitizes the
 * line before it draws it. Returns buf. */
const char *bd_verdict_badge(char *buf, size_t cap, const bd_verdict_set *s, uint64_t seq);

/* ---- giving one -------------------------------------------------------------------------- */

typedef struct bd_verdict_give_opts {
    bd_sign_opts sign; /* key (NULL: the default key), passphrase callback, gnupg home */
    const char *at;    /* YYYY-MM-DDTHH:MM:SSZ; NULL: now (UTC) */
} bd_verdict_give_opts;

#define BD_VERDICT_GIVE_OPTS_INIT                                                                  \
    {                                                                                              \
        BD_SIGN_OPTS_INIT, NULL                                                                    \
    }

/* One subject to give a verdict on: the record's bytes as the verified walk gave them. */
typedef struct bd_verdict_subject {
    uint64_t seq;
    char task_class[129], run_id[129], case_id[129];
    char score_id[BD_HASH_BUF];
} bd_verdict_subject;

/* The score records `seqs` of the bench's chain, taken from a verified walk: usage.bad_args
 * for a seq past the chain or an audit record; the chain's own error when it does not
 * verify. *out is a new array of n (caller frees). Returns 0 or -1. */
int bd_verdict_subjects(bd_verdict_subject **out, const char *bench_root, const uint64_t *seqs,
                        size_t n, bd_err *err);

/* Give verdict `kind` with `note` (NULL: "") on each of `subj[0..n)`: resolve the key
 * (gpg.key_not_found), require the reviewer role in trusted-signers.yaml
 * (verdict.not_reviewer, exit 3), refuse a verdict identical to this key's latest one on a
 * subject (verdict.duplicate, exit 3; nothing is written for any subject then), a note
 * over 1,024 bytes or not UTF-8 (usage.bad_args); sign each message, check the signature
 * against bench/keys as verify will (verdict.not_reviewer when the key is not there), and
 * write each file atomically (a file of the same name: `at` moves on by a second).
 * paths_out (may be NULL) gets n new relative paths (free each, then the array).
 * Returns 0 or -1. */
int bd_verdict_give(char ***paths_out, const char *bench_root, const bd_verdict_subject *subj,
                    size_t n, bd_verdict_kind kind, const char *note,
                    const bd_verdict_give_opts *opts, bd_err *err);

#endif
