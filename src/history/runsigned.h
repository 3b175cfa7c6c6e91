/*
 * runsigned.h — signed runs (docs/formats.md#signed-runs): the message an operator's key
 * signs when a run ends, the `run.signed` audit record's detail, and the check of every
 * run.signed of a verified chain against the records it counts and the bench's keys.
 *
 * The signed message is exactly these bytes, every line ending in "\n":
 *
 *     benchdesk-run-v1\n
 *     run_id:<run id>\n
 *     records:<count of the run's records, decimal>\n
 *     first_seq:<seq of the run's first record, decimal>\n
 *     last_record_hash:<record_hash of the run's last record, 64 lower-case hex>\n
 *
 * The detail of the `run.signed` audit record is the canonical JSON object
 * {"first_seq":N,"last_record_hash":"<hex>","records":N,"run_id":"<id>","signature":"<armor>"}
 * (canon.h: members sorted, no spaces), its operator_fingerprint the signing key's primary
 * fingerprint and its task_class the run's.
 *
 * Threads: as provenance.h. Nothing here prints.
 */
#ifndef BD_RUNSIGNED_H
#define BD_RUNSIGNED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "history.h"

#define BD_RUN_SIGNED_EVENT "run.signed"
#define BD_RUN_SIGNED_MAGIC "benchdesk-run-v1"
/* The most bytes an audit record's detail holds (history.h). */
#define BD_RUN_SIGNED_DETAIL_MAX 4096
/* A run id as a record holds it (history.h: at most 128 characters) + NUL. */
#define BD_RUN_SIGNED_ID_BUF 129

/* The message above. *out is a new NUL-terminated string (caller frees), *len (may be
 * NULL) its length. Refuses a run id or hash out of format (usage.bad_args). Returns 0 or
 * -1. */
int bd_run_signed_message(char **out, size_t *len, const char *run_id, uint64_t records,
                          uint64_t first_seq, const char *last_record_hash, bd_err *err);

/* The detail JSON above (canonical) for a signature. New string (caller frees) with its
 * length in *len (may be NULL), or NULL when out of memory. */
char *bd_run_signed_detail(const char *run_id, uint64_t records, uint64_t first_seq,
                           const char *last_record_hash, const char *signature, size_t *len);

/* A parsed run.signed detail. */
typedef struct bd_run_signed {
    char run_id[BD_RUN_SIGNED_ID_BUF];
    uint64_t records;
    uint64_t first_seq;
    char last_record_hash[BD_HASH_BUF];
    char *signature; /* owned */
} bd_run_signed;

/* Parse a run.signed detail strictly: exactly the five members with their types, in
 * canonical form. Returns 0 (release with bd_run_signed_release) or -1 with a one-line
 * reason in `why`. */
int bd_run_signed_parse(bd_run_signed *out, const char *detail, size_t len, char why[256]);
void bd_run_signed_release(bd_run_signed *s);

/* What one run's records add up to in a verified chain. */
typedef enum {
    BD_RUNSIG_SIGNED, /* a run.signed that holds, by a key trusted as operator */
    BD_RUNSIG_CLAIM,  /* records carry a fingerprint that no valid run.signed covers */
    BD_RUNSIG_BAD,    /* a run.signed that does not hold: edited, forged, moved */
} bd_runsig_state;

typedef struct bd_runsig {
    char run_id[BD_RUN_SIGNED_ID_BUF];
    char fingerprint[BD_FPR_LEN + 1]; /* the fingerprint the records claim */
    char identity[256];               /* the trusted operator's identity (SIGNED), else "" */
    uint64_t records;                 /* records of the run that carry a fingerprint */
    uint64_t signed_seq;              /* seq of its run.signed, 0 when none */
    bd_runsig_state state;
    char why[320]; /* CLAIM / BAD: why, one line; "" when SIGNED */
} bd_runsig;

typedef struct bd_runs_report {
    bd_runsig *runs; /* every run with a fingerprint or a run.signed, in order of first seq */
    size_t n;
    size_t n_signed, n_claims, n_bad;
} bd_runs_report;

void bd_runs_report_release(bd_runs_report *r);

/* The entry of `run_id`, or NULL (a run whose records carry no fingerprint). Borrowed. */
const bd_runsig *bd_runs_report_find(const bd_runs_report *r, const char *run_id);

/* Who ran `run_id`, for display: "<last 16 hex of the fingerprint> <identity>" for a
 * signed run, else "unsigned" (a claim says "unsigned (claims <16 hex>)"). Into buf. */
void bd_runs_report_who(const bd_runs_report *r, const char *run_id, char *buf, size_t cap);

/* Who a record's operator_fingerprint `fpr` names, for a view that does not verify the
 * chain (history log): "<last 16 hex> <identity>" when trusted-signers.yaml (`s`, may be
 * NULL) lists it with the role operator, "<last 16 hex> (not a trusted operator)" when
 * not, "unsigned" for NULL. Whether a run.signed covers the record is verify's to say. */
void bd_run_operator_words(const bd_signers *s, const char *fpr, char *buf, size_t cap);

/* True when `run_id` is covered by a valid run.signed. */
bool bd_runs_report_signed(const bd_runs_report *r, const char *run_id);

/* The chain walk that gathers the runs (history.h's visitor): make one, pass
 * bd_runsig_walk_visit(w) to a verify walk, then bd_runsig_walk_judge. */
typedef struct bd_runsig_walk bd_runsig_walk;

bd_runsig_walk *bd_runsig_walk_new(void);
void bd_runsig_walk_free(bd_runsig_walk *w);
/* The visitor (borrowed from w): it reads the records that carry a fingerprint. */
const bd_history_visit *bd_runsig_walk_visit(bd_runsig_walk *w);

/* For a visitor with a pre step (history.h): what one record holds for the signed runs,
 * read on any thread (bd_runsig_read), then taken in chain order
 * (bd_runsig_walk_take_pre); after the walk, bd_runsig_walk_fill reads the run.signed
 * records it met (a few: one per run), each held to the hash the walk verified. */
enum { BD_RUNSIG_PRE_NONE, BD_RUNSIG_PRE_SCORE, BD_RUNSIG_PRE_SIGNED };
typedef struct bd_runsig_pre {
    unsigned char kind;
    char run_id[BD_RUN_SIGNED_ID_BUF];
    char fpr[BD_FPR_LEN + 1];
} bd_runsig_pre;

void bd_runsig_read(const char *rec, size_t len, bd_runsig_pre *out);
/* The same from the record's members already found (bd_record_members) under the keys
 * BD_RUNSIG_KEYS, in that order: for a caller that reads other members in the same scan. */
#define BD_RUNSIG_KEYS "run_id", "operator_fingerprint", "event", "detail"
enum { BD_RUNSIG_NKEYS = 4 };
void bd_runsig_read_members(const char *const *v, const size_t *vl, bd_runsig_pre *out);
/* Returns 0, or -1 out of memory. */
int bd_runsig_walk_take_pre(bd_runsig_walk *w, uint64_t seq, const bd_runsig_pre *p,
                            const uint8_t hash[32]);
/* Returns 0, or -1: chain.tampered (a record's bytes changed since the walk), io.error,
 * env.out_of_memory. */
int bd_runsig_walk_fill(bd_runsig_walk *w, bd_history *h, bd_err *err);

/* For a visitor of one's own that sees every record: hand `w` the record (it keeps what
 * carries a fingerprint). Returns 0, or -1 out of memory. bd_runsig_walk_reset when the
 * walk starts again. */
int bd_runsig_walk_take(bd_runsig_walk *w, uint64_t seq, const char *rec, size_t len,
                        const uint8_t hash[32]);
void bd_runsig_walk_reset(bd_runsig_walk *w);

/* After a walk that returned 0: judge every run (*out; release it). For each run.signed:
 * the records it counts exist (as many records of its run carrying its fingerprint before
 * it, the first at first_seq, the last with last_record_hash), no record of the run
 * carries another fingerprint, and its signature holds over the message — else the run
 * is BAD. A good signature by a key that is not in bench/keys or not trusted as
 * `operator` (or revoked, expired) leaves the run a CLAIM, as do fingerprinted records no
 * run.signed covers. `bench_dir` is the bench's bench/ folder (the keys); `full`: no
 * signature memo. Returns 0, or -1 when GnuPG could not run (err). */
int bd_runsig_walk_judge(bd_runs_report *out, bd_runsig_walk *w, const char *bench_dir, bool full,
                         bd_err *err);

/* Verify the chain (bd_history_verify_with with `flags`) and judge its runs. Returns 0
 * (chain intact; runs judged, any BAD in out->n_bad), or -1 as bd_history_verify_with
 * (chain.tampered with *chain set) or a GnuPG failure. Release both. */
int bd_history_verify_runs(bd_runs_report *out, bd_history_verify_result *chain, bd_history *h,
                           const char *bench_dir, int flags, bd_err *err);

#endif
