/*
 * stale.h — current and stale score records (DESIGN.md §5): a record is current when its
 * case_digest equals the case's pin today and its task_class_digest the task class's pin
 * today; otherwise it was scored on content, or by a rubric or registration, that has
 * since changed. The one rule every view that shows a score from the history uses.
 */
#ifndef BD_STALE_H
#define BD_STALE_H

#include "bench.h"
#include "history.h"

/* What changed since a record was scored (bits). */
enum {
    BD_STALE_NONE = 0,
    BD_STALE_CASE = 1,       /* the case's content (its pin moved, or it has none) */
    BD_STALE_TASK_CLASS = 2, /* the rubric or the registration (version-1 records: always) */
};

/* The stale bits of score record `r` against the pins `pins` of its task class today
 * (NULL: nothing is pinned, so both). An audit record is never stale (0). */
unsigned bd_record_stale(const bd_history_record *r, const bd_digests *pins);

/* The same rule over the fields alone, for views that keep only these of a score record:
 * `case_digest` / `task_class_digest` NULL count as changed. */
unsigned bd_stale_bits(const char *case_id, const char *case_digest, const char *task_class_digest,
                       const bd_digests *pins);

/* "current", "case changed", "rubric or registration changed", "case, rubric or
 * registration changed". Never NULL. */
const char *bd_stale_str(unsigned bits);

#endif
