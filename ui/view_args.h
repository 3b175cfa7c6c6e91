/*
 * view_args.h — what views are opened with (bd_app_open's `arg`), types only: a view
 * that opens another includes this, never the other view's file.
 *
 * The result view shows one scored case and walks (`n`/`p`) through the list it was
 * opened from (the live run's cases or the history's records) through a provider.
 */
#ifndef BD_UI_VIEW_ARGS_H
#define BD_UI_VIEW_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "history.h"
#include "score.h"

/* One scored case. Pointers are borrowed from the provider and valid until the next call
 * to the provider or until its view changes. */
typedef struct bd_result_src {
    const char *run_id;
    const char *task_class;
    const char *case_id;
    const bd_score *score;
    const char *stderr_tail; /* the run's copy, or NULL: read .benchdesk/runs/<run>/<case> */
    size_t stderr_len;
    uint64_t seq;            /* history record, 0 when not recorded */
    const char *record_hash; /* "" or NULL when not recorded */
    const char *isolation;   /* "subprocess" / "namespaces" */
    const char *started_at;
    const char *finished_at;
    const char *case_digest;
    const char *task_class_digest; /* NULL for a version-1 record */
    int64_t wall_ms;               /* -1 when unknown */
    /* Where an imported record came from (a shard bundle, docs/scale.md); NULL: local. */
    const bd_history_origin *origin;
    /* The record says provenance_verified: false (a draft or unsigned case that ran with
     * drafts allowed): the result view marks it unverified. */
    bool unverified;
    /* The operator key the record names (operator_fingerprint), or NULL: unsigned. */
    const char *operator_fingerprint;
} bd_result_src;

typedef struct bd_result_provider {
    size_t (*count)(void *payload);
    /* Fill *out for item i; false when item i has no result (not finished, an audit
     * record). */
    bool (*get)(void *payload, size_t i, bd_result_src *out);
    /* The list's cursor follows the walk. May be NULL. */
    void (*follow)(void *payload, size_t i);
    void *payload;
} bd_result_provider;

/* What bd_view_result is opened with. */
typedef struct bd_result_arg {
    bd_result_provider provider;
    size_t index;
} bd_result_arg;

/* BD_VIEW_COMPARE: run_a (before; NULL: the previous full run of run_b's task class)
 * against run_b (after), both looked up in the verified chain on the pool. */
typedef struct bd_compare_arg {
    const char *run_a, *run_b;
} bd_compare_arg;

/* BD_VIEW_REVIEW: the review queue of `task_class` (copied). With `seq` (not 0), the
 * verdict prompt opens at once for that record (the result view's `t`): `case_id`,
 * `run_id` and `passed` say what it is when the queue does not hold it. */
typedef struct bd_review_arg {
    const char *task_class;
    uint64_t seq;
    const char *case_id, *run_id;
    bool passed;
} bd_review_arg;

#endif
