/*
 * stale.h — current and stale score records (docs/history.md): a record is current when its
 * case_digest equals the case's pin today and its task_class_digest the task class's pin
 * today; otherwise it was scored on content, or by a rubric or registration, that has
 * since changed. The one rule every view that shows a score from the history uses.
 */
#ifndef BD_STALE_H
#define BD_STALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* The newest score record of each case of a task class, current or stale. */
typedef struct bd_latest_score {
    char *case_id;
    uint64_t seq;
    bool passed;
    double score;
    unsigned stale; /* BD_STALE_* against the task class's pins today */
} bd_latest_score;

typedef struct bd_latest_scores {
    bd_latest_score *v; /* sorted by case_id */
    size_t n;
} bd_latest_scores;

/* For each case of `tc`, its newest score record with its stale bits against tc's pins
 * today: from the history's index (the records it names are read from the segments), or,
 * when there is none to use, reading the history newest first until every pinned case has
 * one (else to the oldest record). Memory grows with the cases that have a record, not
 * with the history. Does not verify the chain (`verify` does). Returns 0 (release with
 * bd_latest_scores_release) or -1 with the history's error. */
int bd_latest_scores_load(bd_latest_scores *out, bd_history *h, const bd_task_class *tc,
                          bd_err *err);
const bd_latest_score *bd_latest_scores_find(const bd_latest_scores *ls, const char *case_id);
void bd_latest_scores_release(bd_latest_scores *ls);

/* The cases of `tc` to score again after an edit (`run --stale`): those whose newest score
 * record is stale against tc's pins today, and those that have none. Read from the verified
 * walk of the whole chain (bd_history_verify_with's visitor: never the index, which no
 * decision rests on). With `signed_only` (a run without --drafts), a case whose
 * provenance.yaml does not hold both an author's and a reviewer's signature is left out and
 * counted in *n_unsigned (may be NULL), as a default run leaves it out; the run gate still
 * verifies every signature kept. Returns 0 with a new array *ids of *n case ids in tc's
 * (sorted) order — the strings are borrowed from tc->case_ids; free the array with free()
 * — or -1 with chain.tampered (a chain that does not verify selects nothing), the
 * provenance file's error, io.error, env.out_of_memory. */
int bd_stale_select(const char ***ids, size_t *n, size_t *n_unsigned, bd_history *h,
                    const bd_task_class *tc, bool signed_only, bd_err *err);

#endif
