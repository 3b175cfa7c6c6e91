/*
 * case_lint.h — what a curator checks before pinning a case (`benchdesk case check`,
 * `pin`'s warnings, docs/provenance.md#checking-a-case-before-pinning): case.yaml loads
 * by the schema, no scaffold is left untouched (an empty `expected`, an empty input/, a
 * cassette `{}`, the title still the id), and the cassette fits the SUT kind.
 */
#ifndef BD_CASE_LINT_H
#define BD_CASE_LINT_H

#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "err.h"
#include "pin.h"

typedef enum {
    BD_LINT_SCHEMA,          /* case.yaml does not load (the finding's err says why) */
    BD_LINT_EMPTY_EXPECTED,  /* expected: {} — the rubric gets no ground truth */
    BD_LINT_EMPTY_INPUT,     /* input/ holds no file */
    BD_LINT_EMPTY_CASSETTE,  /* cassette.json is {} (the scaffold's) */
    BD_LINT_NO_CASSETTE,     /* a cassette SUT and no cassette.json */
    BD_LINT_UNUSED_CASSETTE, /* a command SUT and a cassette.json record never wrote */
    BD_LINT_TITLE_IS_ID,     /* the scaffold's title */
} bd_lint_kind;

typedef struct bd_lint {
    bd_lint_kind kind;
    bool scaffold; /* a scaffold left untouched (pin warns about these) */
    char case_id[129];
    bd_err err; /* one line: where and what to do (code: the schema's, else case.lint) */
} bd_lint;

/* Lint case `case_id` of `tc`, appending findings to *out (*n of *cap; grown with
 * realloc; caller frees). Returns 0 (findings or none), or -1 with `err` when out of
 * memory or the id is bad (case.bad_id) or absent (bench.unknown_case). */
int bd_case_lint(bd_lint **out, size_t *n, size_t *cap, const bd_task_class *tc,
                 const char *case_id, bd_err *err);

/* The scaffold findings alone of the cases `ids` (what `pin` warns about), appended as
 * bd_case_lint does; cases that do not load are left to verify. Returns 0 or -1. */
int bd_case_lint_scaffolds(bd_lint **out, size_t *n, size_t *cap, const bd_task_class *tc,
                           const char *const *ids, size_t n_ids, bd_err *err);

/* bd_case_lint_scaffolds over the cases `rep` pinned anew (a change with a case and a new
 * pin): what `pin` warns about. *out and *n as there (start them at NULL and 0). */
int bd_case_lint_pinned(bd_lint **out, size_t *n, const bd_task_class *tc, const bd_pin_report *rep,
                        bd_err *err);

/* True when a finding of this kind means an untouched scaffold. */
bool bd_lint_is_scaffold(bd_lint_kind k);

#endif
