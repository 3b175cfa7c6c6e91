/*
 * verify.h — integrity of a task class on disk (DESIGN.md §2, §6): the task-class digest
 * (registration.yaml + rubric.py) against its pin, every case's digest against its pin,
 * every cassette against cassette_digest, pins that name no case, and — with a
 * verification context — the signatures of the task class and of every case.
 * bd_verify_check is the one call `list`, `verify`, the TUI model and the run gate use;
 * nothing here spawns or prints.
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
    bd_case *loaded;              /* the parsed case.yaml, or NULL when it failed */
    bd_provfile *prov_file;       /* its provenance.yaml (empty when absent), or NULL */
    bool prov_checked;            /* bd_verify_provenance ran on this case */
    bd_prov_result prov;          /* its outcome when prov_checked */
} bd_case_check;

/* Check case `case_id` of `tc`: provenance.yaml and case.yaml load (their schema codes
 * otherwise), no temp file of an interrupted write is in the case dir (case.leftover_temp,
 * and the case is not hashed), the pin exists (case.digest_missing), the computed digest equals the
 * pin (case.digest_mismatch), cassette.json exists for cassette SUTs (cassette.missing) and matches
 * cassette_digest (cassette.digest_mismatch). Always fills *out (release with
 * bd_case_check_release); returns 0 when the case is intact, -1 otherwise (details in out->err). */
int bd_verify_case(bd_case_check *out, const bd_task_class *tc, const char *case_id);
void bd_case_check_release(bd_case_check *c);

typedef struct bd_verify_report {
    char task_class[129];
    char tc_digest[BD_DIGEST_BUF]; /* task-class digest computed now, "" if not computable */
    char tc_pinned[BD_DIGEST_BUF]; /* its pin, "" if none */
    bd_err tc_err; /* rubric.missing / task_class.digest_* / its signature's code / OK */
    bool tc_prov_checked;
    bd_prov_result tc_prov; /* the task class's signatures, when tc_prov_checked */
    bd_case_check *cases;   /* one per checked case, in id order */
    size_t n_cases;
    bd_err *orphans; /* case.pin_orphaned: pins in digests.yaml naming no case dir */
    size_t n_orphans;
    size_t n_failed;  /* failing entries: task class + cases + orphans */
    size_t n_prov[4]; /* bd_verify_stream only: cases by bd_prov_status */
} bd_verify_report;

/* Verify `tc` without signatures: the task-class pin, then the cases named in `case_ids`
 * (n_case_ids > 0) or all of them, then orphaned pins (only when checking all). Collects every
 * failure — it does not stop at the first. Returns 0 when everything passed, 1 when some check
 * failed (see out->n_failed), -1 with `err` on failure to run at all (out of memory).
 * Release *out with bd_verify_report_release. */
int bd_verify_task_class(bd_verify_report *out, const bd_task_class *tc,
                         const char *const *case_ids, size_t n_case_ids, bd_err *err);
void bd_verify_report_release(bd_verify_report *r);

/* Verify the signatures (DESIGN.md §6) of the task class and of every case of `r`
 * whose provenance.yaml loaded, against the digests the report computed and the pins,
 * using `ctx` (one per command). Fills tc_prov and each case's `prov`. A bad signature
 * counts as a failure of the report (n_failed, and the entry's `err` when it had none);
 * draft and awaiting-review subjects do not. Returns 0, or -1 with `err` when GnuPG
 * itself failed. */
int bd_verify_provenance(bd_verify_report *r, const bd_task_class *tc, bd_prov_ctx *ctx,
                         bd_err *err);

/* "Check this task class and its cases, with provenance": bd_verify_task_class, then
 * bd_verify_provenance when `ctx` is not NULL. Same returns as bd_verify_task_class.
 * Release *out with bd_verify_report_release. */
int bd_verify_check(bd_verify_report *out, const bd_task_class *tc, const char *const *case_ids,
                    size_t n_case_ids, bd_prov_ctx *ctx, bd_err *err);

/* Where bd_verify_stream hands each result (every callback may be NULL). Borrowed
 * arguments are valid only during the call. */
typedef struct bd_verify_sink {
    /* Once, after the task class's own pin and signatures are checked (tc_* of the report
     * are final; the case counts are not yet). */
    void (*on_task_class)(const bd_verify_report *r, void *payload);
    /* Once per case, in id order, with its integrity and (with a context) signatures. The
     * check is released after the call; the callee may keep c->loaded (setting it to NULL:
     * then it frees it with bd_case_free). */
    void (*on_case)(bd_case_check *c, void *payload);
    /* Once per pin naming no case directory (case.pin_orphaned). */
    void (*on_orphan)(const bd_err *e, void *payload);
    void *payload;
} bd_verify_sink;

/* bd_verify_check over every case of `tc`, streamed: each case is loaded, checked (with
 * its signatures when `ctx` is not NULL), handed to `sink` in id order on the calling
 * thread, and released, so memory is bounded by a window of cases (checked ahead on up to
 * four threads, one pass over each case's files) whatever the number of cases (`list`,
 * `verify` and the run gate of a 100,000-case task class). *out gets the task-class results and the
 * counts (n_cases, n_failed, n_orphans, n_prov) but no `cases` or `orphans` arrays.
 * Returns 0 when everything passed, 1 when something failed, -1 with `err` when the
 * check could not run (out of memory, GnuPG failed). Release *out with
 * bd_verify_report_release. */
int bd_verify_stream(bd_verify_report *out, const bd_task_class *tc, bd_prov_ctx *ctx,
                     const bd_verify_sink *sink, bd_err *err);

/* bd_verify_check in two parts, for a caller that checks a large task class chunk by
 * chunk on threads of its own (the TUI model) and so checks the task class once, not
 * with every chunk. Both return 0 when everything checked passed, 1 when something
 * failed, -1 with `err` when the check could not run (out of memory, GnuPG failed);
 * release *out with bd_verify_report_release.
 *
 * bd_verify_tc_check: the task class alone — tc_digest, tc_pinned, tc_err and, with
 * `ctx`, tc_prov; no case and no orphaned pin is looked at (n_cases and n_orphans 0).
 *
 * bd_verify_cases_stream: the `n_case_ids` cases named (each must exist, else it fails
 * with bench.unknown_case), each checked as bd_verify_check checks it (integrity, and
 * signatures with `ctx`) and handed to sink->on_case in order on the calling thread,
 * then released. No thread is started to scan (the caller spreads its chunks over the
 * cores; then one check is alive at a time); with `ctx`, up to four threads check ahead,
 * at most 128 cases, so GnuPG's processes are waited on together, as in bd_verify_check.
 * on_task_class and on_orphan are never called: the task class's own results stay empty
 * (tc_err BD_OK, tc_prov_checked false) and orphaned pins are not looked for. *out gets
 * the counts (n_cases, n_failed, n_prov). n_case_ids 0 checks nothing. */
int bd_verify_tc_check(bd_verify_report *out, const bd_task_class *tc, bd_prov_ctx *ctx,
                       bd_err *err);
int bd_verify_cases_stream(bd_verify_report *out, const bd_task_class *tc,
                           const char *const *case_ids, size_t n_case_ids, bd_prov_ctx *ctx,
                           const bd_verify_sink *sink, bd_err *err);

/* bd_verify_stream over the cases named in `case_ids` (n_case_ids > 0; each must exist,
 * else that case fails with bench.unknown_case), or every case when n_case_ids is 0
 * (then orphaned pins are reported too). The run gate streams its cases through it. */
int bd_verify_stream_ids(bd_verify_report *out, const bd_task_class *tc,
                         const char *const *case_ids, size_t n_case_ids, bd_prov_ctx *ctx,
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
 * verify is provenance's job (DESIGN.md §6); this only says what the file claims. */
typedef enum {
    BD_PROV_DRAFT,         /* no signature */
    BD_PROV_AUTHORED,      /* author signature only: awaiting review */
    BD_PROV_COUNTERSIGNED, /* both signatures present */
} bd_prov_claim;

bd_prov_claim bd_prov_claim_of(const bd_provfile *p); /* NULL: draft */
const char *bd_prov_claim_str(bd_prov_claim p);       /* "draft" | "awaiting_review" | "signed" */
#endif
