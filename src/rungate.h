/*
 * rungate.h — what every front end does around a run, in one place: the startup gate
 * (DESIGN.md §2: the chain, the pins, then the signatures of §6, all before the first
 * spawn) and the recorder that appends each finished case to the history (§5) before
 * any front end hears of it. `benchdesk run` and the TUI's run view both use these.
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

typedef struct bd_run_gate_opts {
    bool drafts;             /* --drafts: skip the signature check (records say so) */
    bd_prov_ctx *prov;       /* verification context to use; NULL: one is made and freed */
    const char *drafts_hint; /* how this front end allows drafts, for the refusal message */
    /* Polled between cases of the signature check; true abandons it (run.cancelled). */
    bool (*stop)(void *payload);
    void *stop_payload;
} bd_run_gate_opts;

/* The startup gate for `runner` over cases `ids` (n > 0) or all of `tc`: open the
 * bench's history (creating it), verify the chain (chain.tampered) and hand its head to
 * the runner, run bd_runner_prepare (pins, rubric, cassettes), then, unless drafts, check
 * that every case is signed by an author and a different reviewer (provenance.missing
 * for a draft or a case awaiting review; the signature's own code for a bad one).
 * Nothing is spawned. Returns 0 with *hist open (caller frees with bd_history_free), or
 * -1 with `err` and *hist NULL. Safe on a worker thread. */
int bd_run_gate(bd_history **hist, bd_runner *runner, const bd_bench *bench,
                const bd_task_class *tc, const char *const *ids, size_t n,
                const bd_run_gate_opts *opts, bd_err *err);

/* The recorder's state; pass it as the payload of bd_run_record. */
typedef struct bd_run_recorder {
    bd_history *hist;         /* borrowed, open */
    bd_runner *runner;        /* its chain head follows every append */
    bool provenance_verified; /* false for drafts runs */
    uint64_t last_seq;        /* seq of the last appended record */
} bd_run_recorder;

/* A bd_run_record_fn: append `res` as a score record (DESIGN.md §5), fill its
 * record_hash, and move the runner's chain head. Returns 0 or -1 with `err` (the run
 * then aborts: a score that cannot be recorded is never reported). */
int bd_run_record(bd_case_result *res, const bd_run_summary *run, void *payload, bd_err *err);

#endif
