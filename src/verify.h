/*
 * verify.h — integrity of a task class on disk (DESIGN.md §2): the rubric against its
 * pin, every case's digest against its pin and its own case_digest field, every cassette
 * against cassette_digest, and pins that name no case. `benchdesk verify`, `list` and
 * the runner's startup check all call these; nothing here spawns or prints.
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
    bd_err err;                   /* err.code == BD_OK when every check passed */
    char digest[BD_DIGEST_BUF];   /* computed case digest, "" if not computable */
    char pinned[BD_DIGEST_BUF];   /* pin in digests.yaml, "" if none */
    char cassette[BD_DIGEST_BUF]; /* computed digest of cassette.json, "" if absent */
    bd_case *loaded;              /* the parsed case.yaml, or NULL when it failed */
    bool prov_checked;            /* bd_verify_provenance ran on this case */
    bd_prov_result prov;          /* its outcome when prov_checked */
} bd_case_check;

/* Check case `case_id` of `tc`: case.yaml loads (its schema code otherwise), the pin
 * exists (case.digest_missing), the computed digest equals the pin and the case_digest
 * field (case.digest_mismatch; a null field is case.digest_missing), cassette.json
 * exists for cassette SUTs (cassette.missing) and matches cassette_digest
 * (cassette.digest_mismatch). Always fills *out (release with bd_case_check_release);
 * returns 0 when the case is intact, -1 otherwise (details in out->err). */
int bd_verify_case(bd_case_check *out, const bd_task_class *tc, const char *case_id);
void bd_case_check_release(bd_case_check *c);

typedef struct bd_verify_report {
    char task_class[129];
    char rubric_digest[BD_DIGEST_BUF]; /* computed, "" if rubric.py is unreadable */
    bd_err rubric_err;                 /* rubric.missing / rubric.digest_mismatch / OK */
    bd_case_check *cases;              /* one per checked case, in id order */
    size_t n_cases;
    bd_err *orphans; /* case.pin_orphaned: pins in digests.yaml naming no case dir */
    size_t n_orphans;
    size_t n_failed; /* failing entries: rubric + cases + orphans */
} bd_verify_report;

/* Verify `tc`: the rubric pin, then the cases named in `case_ids` (n_case_ids > 0) or
 * all of them, then orphaned pins (only when checking all). Collects every failure —
 * it does not stop at the first. Returns 0 when everything passed, 1 when some check
 * failed (see out->n_failed), -1 with `err` on failure to run at all (out of memory).
 * Release *out with bd_verify_report_release. */
int bd_verify_task_class(bd_verify_report *out, const bd_task_class *tc,
                         const char *const *case_ids, size_t n_case_ids, bd_err *err);
void bd_verify_report_release(bd_verify_report *r);

/* Verify the signatures (DESIGN.md §6) of every case of `r` whose case.yaml loaded,
 * against the current digests the report computed, using `ctx` (one per command).
 * Fills each case's `prov`. A bad signature counts as a failure of the report
 * (n_failed, and the case's `err` when it had none); draft and awaiting-review cases do
 * not. Returns 0, or -1 with `err` when GnuPG itself failed (nothing else changed). */
int bd_verify_provenance(bd_verify_report *r, bd_prov_ctx *ctx, bd_err *err);

/* First failure of the report (rubric, then cases in order, then orphans), or NULL. */
const bd_err *bd_verify_first_failure(const bd_verify_report *r);

#endif

#ifndef BD_VERIFY_PROVENANCE
#define BD_VERIFY_PROVENANCE
/* Provenance as written in case.yaml: which signature blocks are present. Whether they
 * verify is provenance's job (DESIGN.md §6); this only says what the file claims. */
typedef enum {
    BD_PROV_DRAFT,         /* no signature */
    BD_PROV_AUTHORED,      /* author signature only: awaiting review */
    BD_PROV_COUNTERSIGNED, /* both signatures present */
} bd_prov_claim;

bd_prov_claim bd_case_prov_claim(const bd_case *c);
const char *bd_prov_claim_str(bd_prov_claim p); /* "draft" | "awaiting_review" | "signed" */
#endif
