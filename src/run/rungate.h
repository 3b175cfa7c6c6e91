/*
 * rungate.h — what every front end does before a run, in one place (bd_run_prepare): the
 * interpreter, the isolation class and the default --jobs (bd_run_env_resolve), the
 * startup gate (docs/formats.md#digests: the chain, the history's writability, the pins, the
 * signatures of docs/provenance.md#verification-rules, all before the first spawn), what gets run
 * (docs/user-guide.md#what-gets-run: by default the signed cases of a signed task class), and where
 * the records go — the runner then appends each finished case to the history
 * (docs/runner.md#fan-out-events-cancel) before any front end hears of it. `benchdesk run` and the
 * TUI's run view both call bd_run_prepare; neither wires a recorder.
 */
#ifndef BD_RUNGATE_H
#define BD_RUNGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "config.h"
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
    /* A shard run (docs/scale.md), or NULL: the local history is neither opened nor
     * created (the records go to the bundle) and the runner keeps the selected cases of
     * shard k of n. run_cases stays the whole run's count. */
    const bd_shard_spec *shard;
} bd_run_gate_opts;

/* What the gate decided the run scores (docs/user-guide.md#what-gets-run). */
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
    /* Problems in what the run does not select (an unpinned scaffold, a draft being
     * edited, a pin naming no case): counted and left out, never a refusal. */
    size_t n_unselected_problems;
    bd_err unselected_first; /* the first of them */
} bd_run_plan;

void bd_run_plan_release(bd_run_plan *p);

/* The one line a front end shows about the plan's unselected problems, as a notice in
 * *note (code BD_OK, cleared when there is none) whose action says where to see them: each
 * front end renders it with its own words (docs/architecture.md#errors-what-to-do-is-data).
 * Returns true when there is one. The case ids in it are the bench's text: show it
 * through the untrusted-text sanitizer. */
bool bd_run_plan_note(const bd_run_plan *p, const char *task_class, bd_err *note);

/* True when case `id` of the plan's run was signed, in a signed task class. */
bool bd_run_plan_verified(const bd_run_plan *p, const char *id);

/* The startup gate for `runner`, created over the cases `ids` (n > 0, a subset run) or
 * all of `tc` (n == 0, the default selection):
 *   1. open the bench's history (creating it), verify the chain (chain.tampered), check
 *      that it can be written (io.error, exit 4: a read-only or full file system) and
 *      hand its head to the runner;
 *   2. check the task class and every candidate case with their signatures
 *      (bd_verify): an integrity failure or a bad signature of the task class or of a
 *      *selected* case refuses the run with its own code (exit 1) — a bad signature is
 *      never taken for "unsigned". Selected: every named case (a --case run); with
 *      drafts, every pinned case; otherwise every case whose signatures, judged against
 *      its pin, make it signed or bad (what the run would score as signed). A problem in
 *      any other case, or a pin naming no case, is counted in the plan
 *      (n_unselected_problems, bd_run_plan_note) and never refuses;
 *   3. decide what runs: without drafts, a task class that is not signed by two people
 *      refuses (provenance.missing, exit 3); a default run keeps the signed cases and
 *      counts the others as skipped; a --case run refuses an unsigned case
 *      (provenance.missing); no case left to run refuses too. With drafts every
 *      candidate runs, and the plan says which are signed. The runner keeps only the
 *      selected cases (bd_runner_select);
 *   4. bd_runner_prepare (use-time reading of the rubric and the task class's pin; the
 *      selected cases' checks of step 2 are handed to the runner, bd_runner_take_check,
 *      so their files are not read a second time);
 *   5. the runner records into that history (bd_runner_set_recording; the runner owns
 *      it). A shard run's records go to its bundle (bd_run_prepare wires it).
 * Nothing is spawned. Returns 0 with *plan filled (bd_run_plan_release), or -1 with
 * `err` and *plan empty. Safe on a worker thread. */
int bd_run_gate(bd_run_plan *plan, bd_runner *runner, const bd_bench *bench,
                const bd_task_class *tc, const char *const *ids, size_t n,
                const bd_run_gate_opts *opts, bd_err *err);

/* The run's environment, the same for every front end. */
typedef struct bd_run_env {
    bd_isolation isolation; /* the class the run uses */
    char *python;           /* the interpreter, absolute (owned) */
    int jobs;               /* --jobs, else `jobs:` of the config, else 0 (= the CPUs) */
} bd_run_env;

/* Resolve the interpreter (bd_config_find_python: BENCHDESK_PYTHON, `python:` of `cfg`,
 * python3), the isolation class (bd_isolation_choose: `isolation` NULL = auto; a weaker
 * class than asked for is refused, isolation.unavailable, unless allow_weaker) and the
 * jobs (`jobs` > 0, else cfg's). Returns 0 with *out (bd_run_env_release) or -1. */
int bd_run_env_resolve(bd_run_env *out, const bd_config *cfg, const char *isolation,
                       bool allow_weaker, int jobs, bd_err *err);
void bd_run_env_release(bd_run_env *e);

/* A front end's request for a run. */
typedef struct bd_run_request {
    const bd_bench *bench;       /* borrowed; outlives the runner */
    const bd_task_class *tc;     /* borrowed; outlives the runner */
    const char *const *case_ids; /* --case ids, or NULL for the default selection */
    size_t n_case_ids;
    const bd_config *config; /* the bench's .benchdesk/config.yaml; NULL: loaded here */
    const char *isolation;   /* NULL or "auto", "namespaces", "subprocess" */
    bool allow_weaker;
    int jobs;          /* 0: the config's jobs:, else the number of CPUs */
    bool has_cost_cap; /* --cost-cap given: cost_cap_usd (>= 0) */
    double cost_cap_usd;
    bd_run_gate_opts gate; /* drafts, the verification context, stop, shard */
    /* A shard run (gate.shard): the bundle created at bundle_dir once the gate passed
     * (it must not exist: bundle.exists); the records go to its chain. */
    bd_bundle_writer *bundle;
    const char *bundle_dir;
    /* --operator-key: the key that signs the run (runsign.h); NULL: signing_key of the
     * config, else none. Ignored by a shard run (its bundle is signed on import). */
    const char *operator_key;
} bd_run_request;

/* The run's cost cap (docs/runner.md#the-cost-cap): the smallest of the request's
 * --cost-cap, `cost_cap_usd` of `cfg` (may be NULL) and the registration's run.cost_cap_usd;
 * negative when none is set. */
double bd_run_cost_cap(const bd_run_request *req, const bd_config *cfg);

/* Everything before bd_runner_start, for every front end: bd_run_env_resolve, a runner
 * for the request (a shard run takes the shard's run id and writes no files on this
 * machine; the cost cap, bd_run_cost_cap, applies to the shard), bd_run_gate, and for a
 * shard run the bundle. Nothing is spawned (but the
 * namespaces probe, once per process). Returns 0 with *out (bd_runner_free) recording
 * into the history, and *plan (bd_run_plan_release); or -1 with `err`, *out NULL and
 * *plan empty. Safe on a worker thread (one run preparing at a time). */
int bd_run_prepare(bd_runner **out, bd_run_plan *plan, const bd_run_request *req, bd_err *err);

#endif
