/*
 * verify.h — integrity of a task class on disk (docs/provenance.md): the task-class digest
 * (registration.yaml + rubric.py) against its pin, every case's digest against its pin,
 * every cassette against cassette_digest, pins that name no case, and — with a
 * verification context — the signatures of the task class and of every case.
 * bd_verify is the one call `list`, `verify`, the TUI model, the run gate, record and
 * recommend use; nothing here spawns or prints.
 */
#ifndef BD_VERIFY_H
#define BD_VERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "digest.h"
#include "err.h"
#include "provenance.h"

/* What one case looks like on disk right now. */
typedef struct bd_case_check {
    char case_id[129];
    bd_err err;                   /* integrity: BD_OK when the files match their pins */
    char digest[BD_DIGEST_BUF];   /* computed case digest, "" if not computable */
    char pinned[BD_DIGEST_BUF];   /* pin in digests.yaml, "" if none */
    char cassette[BD_DIGEST_BUF]; /* computed digest of cassette.json, "" if absent */
    bd_case *loaded;              /* the parsed case.yaml, or NULL when it failed or the
                                   * case memo answered (opts.case_memo) */
    bd_provfile *prov_file;       /* its provenance.yaml (empty when absent), or NULL when it
                                   * failed or the case memo answered */
    bool prov_checked;            /* its signatures were checked (bd_verify with a context) */
    bd_prov_result prov;          /* its outcome when prov_checked */
} bd_case_check;

/* Release what a case check owns (loaded, prov_file). */
void bd_case_check_release(bd_case_check *c);

typedef struct bd_verify_report {
    char task_class[129];
    char tc_digest[BD_DIGEST_BUF]; /* task-class digest computed now, "" if not computable */
    char tc_pinned[BD_DIGEST_BUF]; /* its pin, "" if none */
    bd_err tc_err; /* rubric.missing / task_class.digest_* / its signature's code / OK */
    bool tc_prov_checked;
    bd_prov_result tc_prov; /* the task class's signatures, when tc_prov_checked */
    bd_case_check *cases;   /* with opts.collect: one per checked case, in the order checked */
    size_t n_cases;
    bd_err *orphans; /* with opts.collect: case.pin_orphaned, pins naming no case dir */
    size_t n_orphans;
    size_t n_failed;  /* failing entries: task class + cases + orphans */
    size_t n_prov[4]; /* checked cases by bd_prov_status (unchecked ones count as bad) */
} bd_verify_report;

void bd_verify_report_release(bd_verify_report *r);

/* Where bd_verify hands each result (the sink and every callback may be NULL). Borrowed
 * arguments are valid only during the call. */
typedef struct bd_verify_sink {
    /* Once, after the task class's own pin and signatures are checked (tc_* of the report
     * are final; the case counts are not yet). */
    void (*on_task_class)(const bd_verify_report *r, void *payload);
    /* Once per case, in order, with its integrity and (with a context) signatures.
     * Without opts.collect the check is released after the call; the callee may keep
     * c->loaded (setting it to NULL: then it frees it with bd_case_free). */
    void (*on_case)(bd_case_check *c, void *payload);
    /* Once per pin naming no case directory (case.pin_orphaned). */
    void (*on_orphan)(const bd_err *e, void *payload);
    void *payload;
} bd_verify_sink;

/* What bd_verify checks and how ({0}: the task class, every case, orphaned pins, no
 * signatures, streamed, every failure, threads as they pay off). */
typedef struct bd_verify_opts {
    /* Which cases: the `n_case_ids` named, in that order (each must exist, else it fails
     * with bench.unknown_case), or every case in id order when n_case_ids is 0 — and then
     * the pins naming no case (case.pin_orphaned) too. */
    const char *const *case_ids;
    size_t n_case_ids;
    bool no_cases;      /* the task class alone: no case and no orphaned pin is looked at */
    bool no_task_class; /* the cases alone: tc_* stay empty (tc_err BD_OK, tc_prov_checked
                         * false), on_task_class is not called, no orphaned pin looked for */
    /* With a context (one per command): the signatures (docs/provenance.md) of the task
     * class and of every case whose provenance.yaml loaded; a bad one counts as a
     * failure, drafts and subjects awaiting review do not. */
    bd_prov_ctx *prov;
    bool collect;    /* keep every check in out->cases and every orphan in out->orphans
                      * (memory grows with the cases); else each check is handed to the
                      * sink and released, a window of cases alive whatever their number */
    bool stop_early; /* stop at the first failure (task class, then cases in order, then
                      * orphans): the counts then cover what was checked */
    /* With `prov`: a case this user's case memo (docs/provenance.md#the-case-memo) knows to
     * pass on exactly the bytes just read comes back with its verdict alone — digests, pin,
     * the signatures' outcome; loaded and prov_file NULL — and every case whose whole check
     * passes is remembered there. Every case is still read and hashed in full. */
    bool case_memo;
    bool scan_here; /* scan on the calling thread only (a caller that spreads chunks
                     * over the cores itself); with `prov`, up to four threads still
                     * check ahead (at most 128 cases) so GnuPG is waited on together */
} bd_verify_opts;

/* The one check of a task class and its cases (docs/provenance.md): the task-class digest
 * against its pin, then with `prov` its signatures (handed to sink->on_task_class); then
 * each case (provenance.yaml and case.yaml load (their schema codes otherwise), no temp
 * file of an interrupted write is in the case dir (case.leftover_temp, and the case is not
 * hashed), the pin exists (case.digest_missing), the computed digest equals the pin
 * (case.digest_mismatch), cassette.json exists for cassette SUTs (cassette.missing) and
 * matches cassette_digest (cassette.digest_mismatch), and with `prov` its signatures —
 * or, with opts.case_memo, the verdict this user's memo holds for exactly these bytes),
 * checked ahead on up to four threads, one pass over each case's files, handed to
 * sink->on_case in order on the calling thread; then orphaned pins (sink->on_orphan).
 * `opts` NULL is {0}. Returns 0 when everything checked passed, 1 when something failed
 * (out->n_failed), -1 with `err` when the check could not run (out of memory, GnuPG
 * failed). Release *out with bd_verify_report_release whatever it returns. */
int bd_verify(bd_verify_report *out, const bd_task_class *tc, const bd_verify_opts *opts,
              const bd_verify_sink *sink, bd_err *err);

/* A case's first failure: its integrity error, else its bad signature; NULL when fine. */
const bd_err *bd_case_check_failure(const bd_case_check *c);

/* The task class's first failure (integrity, else a bad signature), or NULL. */
const bd_err *bd_verify_tc_failure(const bd_verify_report *r);

/* First failure of the report (task class, then cases in order, then orphans), or NULL. */
const bd_err *bd_verify_first_failure(const bd_verify_report *r);

#endif

#ifndef BD_VERIFY_PROVENANCE
#define BD_VERIFY_PROVENANCE
/* Provenance as written in provenance.yaml: which signature blocks are present. Whether they
 * verify is provenance's job (docs/provenance.md); this only says what the file claims. */
typedef enum {
    BD_PROV_DRAFT,         /* no signature */
    BD_PROV_AUTHORED,      /* author signature only: awaiting review */
    BD_PROV_COUNTERSIGNED, /* both signatures present */
} bd_prov_claim;

bd_prov_claim bd_prov_claim_of(const bd_provfile *p); /* NULL: draft */
const char *bd_prov_claim_str(bd_prov_claim p);       /* "draft" | "awaiting_review" | "signed" */
#endif
