/*
 * result_api.h — what the result view shows, and how it walks (`n`/`p`) through the
 * list it was opened from: the live run's cases or the history's records.
 */
#ifndef BD_UI_RESULT_API_H
#define BD_UI_RESULT_API_H

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
    /* Where an imported record came from (a shard bundle, DESIGN.md §14); NULL: local. */
    const bd_history_origin *origin;
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

extern const bd_view_ops bd_view_result;
extern const bd_view_ops bd_view_history;

#endif
