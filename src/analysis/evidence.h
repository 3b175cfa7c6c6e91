/*
 * evidence.h — recommend's evidence: the latest full run, less what two reviewers removed
 * (docs/history.md#promotion-recommend-never-apply, docs/provenance.md#verdicts).
 *
 * Gathered in the one verified walk (a visitor chained with the others): per run of the
 * task class, its scope, its size and how many records it has; per record of a full run
 * within the window, a few fields (memory grows with those records, about 64 bytes each).
 * After the walk, bd_evidence_apply chooses the run — the latest (highest last seq) full
 * run within the window, of the strongest isolation class among full runs — and takes its
 * current records of signed cases, less those two trusted reviewers removed; subset runs
 * are counted, never used. It fills the recommendation's evidence, its exclusion counts
 * and what the verdicts say (unreviewed failures, removed records, those awaiting a second
 * reviewer, flaky ones).
 */
#ifndef BD_EVIDENCE_H
#define BD_EVIDENCE_H

#include <time.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "promote.h"
#include "runsigned.h"
#include "verdict.h"

typedef struct bd_evidence bd_evidence;

/* A gatherer for `tc`'s records finished at or after `since`. Returns 0 with *out
 * (bd_evidence_free), or -1 (env.out_of_memory). */
int bd_evidence_new(bd_evidence **out, const bd_task_class *tc, time_t since, bd_err *err);

void bd_evidence_free(bd_evidence *ev);

/* The walk's visitor for the records holding `needle` (the task class's member): each
 * record is read on the walk's hashing threads and gathered in chain order. `ev` (and
 * `needle`) must outlive the walk. */
void bd_evidence_visitor(bd_history_visit *out, bd_evidence *ev, const char *needle);

/* Gather the signed runs of the task class into `w` (runsigned.h) in the same walk: each
 * record's part is read with the rest (bd_runsig_read). `w` must outlive the walk; after
 * it, bd_runsig_walk_fill and bd_runsig_walk_judge. */
void bd_evidence_track_signed(bd_evidence *ev, bd_runsig_walk *w);

/* After a walk that returned 0: fill out->evidence (sorted by case id; replacing what was
 * there), out->cases, the run chosen, the exclusion counts and the verdict lists, with
 * `st` (what is signed today), `vs` (settled verdicts of the task class; may be NULL:
 * none) and `runs` (the signed runs of the verified chain, runsigned.h; may be NULL: none
 * is signed). With out->require_signed set, only signed full runs are chosen from.
 * Returns 0 or -1 (env.out_of_memory). */
int bd_evidence_apply(bd_recommendation *out, const bd_evidence *ev, const bd_signed_today *st,
                      const bd_verdict_set *vs, const bd_runs_report *runs, bd_err *err);

/* The verdict lists and the run of `r` into the recommendation's JSON `o`. Returns false
 * when out of memory. */
bool bd_evidence_json_add(cJSON *o, const bd_recommendation *r);

/* Free what bd_evidence_apply added to `r` (called by bd_recommendation_release). */
void bd_evidence_release_fields(bd_recommendation *r);

/* Tests only: whether the evidence takes its shortcuts (on, the default: a case found by a
 * hash of its id, a record holding exactly its case's pin and today's task class digest
 * taken as current without a copy) or reads every record through
 * bd_task_class_case_index and bd_stale_bits (off), to compare the two. Not thread-safe. */
void bd_evidence_test_shortcuts(bool on);

#endif
