/*
 * review.h — the review queue (docs/provenance.md#the-review-queue): what reviewers should
 * look at next, from the verified runs and the verdicts that count.
 *
 * For each task class (or the one named), the run reviewed is its latest full run (or the
 * run named): first its failed records without a counting verdict ("unreviewed"), then
 * those with one removing verdict (rubric_bug, case_bug, infra) awaiting a second reviewer
 * ("awaiting_second"; left out when the reviewer asking is its author), then `sample`
 * passing records of the run chosen by a seed derived from the run id ("sample"), so that
 * reviewing passes too keeps the calibration unbiased. A queued record with the same case
 * digest, task-class digest and failure-mode codes as a record with a counting verdict is
 * given that verdict as a suggestion — never applied: a person accepts it by giving a
 * verdict of their own.
 */
#ifndef BD_REVIEW_H
#define BD_REVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "compare.h"
#include "err.h"
#include "verdict.h"

/* score_ids of the score records of a walk, by seq: a visitor (bd_score_ids_wrap, as a
 * bd_visit_wrap of bd_runs_load_verdicts) fills it, 40 bytes a record. Zero-initialise;
 * release with bd_score_ids_release. */
typedef struct bd_score_ids {
    uint64_t *seq;
    uint8_t (*id)[32];
    size_t n, cap;
    bool oom;
    const bd_history_visit *inner;
} bd_score_ids;

void bd_score_ids_wrap(bd_history_visit *out, void *ids, const bd_history_visit *inner);
void bd_score_ids_release(bd_score_ids *ids);

/* The score_id (hex) of record `seq` as the walk gave it into out. Returns 0, or -1 when
 * the walk did not see it as a score record (no error set). */
int bd_score_ids_find(char out[BD_HASH_BUF], const bd_score_ids *ids, uint64_t seq);

/* True when `r` failed and no verdict counts on it: the queue's "unreviewed" and the
 * reports' unreviewed failures. `vs` NULL: no verdicts (every failure). */
bool bd_review_unreviewed(const bd_verdict_set *vs, const bd_history_record *r);

typedef enum { BD_REVIEW_UNREVIEWED, BD_REVIEW_AWAITING, BD_REVIEW_SAMPLE } bd_review_why;

/* "unreviewed" | "awaiting_second" | "sample". */
const char *bd_review_why_str(bd_review_why w);

typedef struct bd_review_item {
    const bd_history_record *r; /* borrowed from the runs */
    bd_review_why why;
    char score_id[BD_HASH_BUF];
    bool has_suggestion;
    bd_verdict_kind suggestion;
    uint64_t suggestion_seq;
    char suggestion_reviewer[256];
} bd_review_item;

typedef struct bd_review_queue {
    bd_review_item *items;
    size_t n;
    char **missing_runs; /* runs named by trusted verdicts that this chain lacks (owned) */
    size_t n_missing;
} bd_review_queue;

typedef struct bd_review_opts {
    const char *task_class; /* NULL: every task class with a full run */
    const char *run_id;     /* NULL: the latest full run; else this run (or a unique prefix) */
    size_t sample;          /* passing records to add */
    const char *reviewer;   /* fingerprint of who asks (NULL: anyone) */
} bd_review_opts;

/* Build the queue from `runs` (bd_runs_load_verdicts, with `vs` settled and `ids`
 * gathered in the same walk). Returns 0 and
 * fills *out (bd_review_queue_release), or -1: compare.unknown_run /
 * compare.ambiguous_run (the run named), env.out_of_memory. */
int bd_review_queue_build(bd_review_queue *out, const bd_runs *runs, const bd_verdict_set *vs,
                          const bd_score_ids *ids, const bd_review_opts *o, bd_err *err);

void bd_review_queue_release(bd_review_queue *q);

/* {"queue": [{"seq", "run_id", "case_id", "score_id", "passed", "failure_modes",
 * "verdicts": [{"reviewer", "verdict", "at"}], "why", "suggestion": null | {"verdict",
 * "from_seq", "reviewer"}}], "runs_missing": [...]}. New tree or NULL (out of memory). */
cJSON *bd_review_queue_json(const bd_review_queue *q, const bd_verdict_set *vs);

/* The counting verdicts on `r` as a JSON array of {"reviewer", "verdict", "at"}. */
cJSON *bd_review_verdicts_json(const bd_verdict_set *vs, uint64_t seq);

/* Everything the queue is built from, read from one bench: its verdict set (checked against
 * bench/keys), its verified runs with their score_ids, and the queue. Zero-initialise. */
typedef struct bd_review_session {
    bd_verdict_set vs;
    bd_runs runs;
    bd_score_ids ids;
    bd_review_queue q;
} bd_review_session;

/* Read the bench at `bench_root` (the task class's verdicts, or all when o->task_class is
 * NULL; the verified chain in one walk) and build the queue of `o` (bd_review_queue_build):
 * what `benchdesk review` and the TUI's review view show. Call bd_provenance_init first.
 * Returns 0 and fills *out (bd_review_session_release, also after -1), or -1: io.error,
 * gpg.*, chain.tampered, compare.unknown_run, compare.ambiguous_run,
 * env.out_of_memory. */
int bd_review_load(bd_review_session *out, const char *bench_root, const bd_review_opts *o,
                   bd_err *err);

void bd_review_session_release(bd_review_session *s);

#endif
