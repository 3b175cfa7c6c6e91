/*
 * rungate.h — what every front end does around a run, in one place: the startup gate
 * (DESIGN.md §2: the chain, the pins, the signatures of §6, all before the first spawn),
 * what gets run (§4: by default the signed cases of a signed task class), and the
 * recorder that appends each finished case to the history (§5) before any front end
 * hears of it. `benchdesk run` and the TUI's run view both use these.
 */
#ifndef BD_RUNGATE_H
#define BD_RUNGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "provenance.h"
#include "runner.h"
#include "shard.h"

typedef struct bd_run_gate_opts {
    bool drafts;             /* --drafts: unsigned cases and task class allowed (records say so) */
    bd_prov_ctx *prov;       /* verification context to use; NULL: one is made and freed */
    const char *drafts_hint; /* how this front end allows drafts, for messages */
    /* Polled between cases of the signature check; true abandons it (run.cancelled). */
    bool (*stop)(void *payload);
    void *stop_payload;
    /* A shard run (DESIGN.md §14), or NULL: the local history is neither opened nor
     * created (*hist stays NULL; the records go to the bundle) and the runner keeps the
     * selected cases of shard k of n. run_cases stays the whole run's count. */
    const bd_shard_spec *shard;
} bd_run_gate_opts;

/* What the gate decided the run scores (§4 "What gets run"). */
typedef struct bd_run_plan {
    bool full;            /* the task class's default selection (no --case): run_scope "full" */
    size_t run_cases;     /* cases the run scores */
    size_t skipped_draft; /* unsigned cases left out of a default run without --drafts */
    size_t skipped_awaiting;
    bool tc_signed;      /* the task class is signed by two people */
    char **verified_ids; /* sorted ids whose records carry provenance_verified: true */
    size_t n_verified;
    char **shard_ids; /* a shard run: the sorted ids of its cases (maybe none) */
    size_t n_shard_ids;
} bd_run_plan;

void bd_run_plan_release(bd_run_plan *p);

/* True when case `id` of the plan's run was signed, in a signed task class. */
bool bd_run_plan_verified(const bd_run_plan *p, const char *id);

/* The startup gate for `runner`, created over the cases `ids` (n > 0, a subset run) or
 * all of `tc` (n == 0, the default selection):
 *   1. open the bench's history (creating it), verify the chain (chain.tampered) and hand
 *      its head to the runner;
 *   2. check the task class and every candidate case with their signatures
 *      (bd_verify_check): any integrity failure or any bad signature refuses the run
 *      with its own code (exit 1) — a bad signature is never taken for "unsigned";
 *   3. decide what runs: without drafts, a task class that is not signed by two people
 *      refuses (provenance.missing, exit 3); a default run keeps the signed cases and
 *      counts the others as skipped; a --case run refuses an unsigned case
 *      (provenance.missing); no case left to run refuses too. With drafts every
 *      candidate runs, and the plan says which are signed. The runner keeps only the
 *      selected cases (bd_runner_select);
 *   4. bd_runner_prepare (use-time reading of the rubric, the pins again).
 * Nothing is spawned. Returns 0 with *hist open (caller frees with bd_history_free) and
 * *plan filled (bd_run_plan_release), or -1 with `err`, *hist NULL and *plan empty.
 * Safe on a worker thread. */
int bd_run_gate(bd_history **hist, bd_run_plan *plan, bd_runner *runner, const bd_bench *bench,
                const bd_task_class *tc, const char *const *ids, size_t n,
                const bd_run_gate_opts *opts, bd_err *err);

/* The recorder's state; pass it as the payload of bd_run_record. */
typedef struct bd_run_recorder {
    bd_history *hist;        /* borrowed, open: the bench's history, or for a shard run the
                              * bundle's own records chain (bd_bundle_writer.records) */
    bd_runner *runner;       /* its chain head follows every append */
    const bd_run_plan *plan; /* borrowed: run_scope, run_cases, provenance per case */
    uint64_t last_seq;       /* seq of the last appended record */
} bd_run_recorder;

/* A bd_run_record_fn: append `res` as a score record (DESIGN.md §5), fill its
 * record_hash, and move the runner's chain head. Returns 0 or -1 with `err` (the run
 * then aborts: a score that cannot be recorded is never reported). */
int bd_run_record(bd_case_result *res, const bd_run_summary *run, void *payload, bd_err *err);

#endif
