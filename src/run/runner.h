/*
 * runner.h — run a task class's rubric once per case, many at once, on one libuv loop
 * (docs/formats.md#benchscore, docs/runner.md, docs/benchdesk.1).
 *
 * Per case: a fresh 0700 temp dir "<tmp>/benchdesk-<run-id>-<case-id>-XXXXXX" as the
 * rubric's cwd, holding case/input and case/expected (read-only copies) and rubric.py
 * (the exact bytes whose digest matched the pin); stdin is the document of
 * docs/formats.md#benchscore; the program is `<python> -s rubric.py` through the exec chokepoint
 * (exec.h) with the case's limits; its outcome maps to a BenchScore or a harness failure mode
 * (bd_runner_classify, order of docs/runner.md#failure-modes); the temp dir is removed on every
 * path. A rubric failure never stops the run; an environment failure (the interpreter cannot be
 * started, a temp dir cannot be made or removed, a pinned file changed under the run) aborts it.
 *
 * Events: subscribers receive run.started, case.queued (every case, in order, right
 * after run.started), case.started, case.finished (or case.not_recorded) and
 * run.finished, on the loop thread,
 * in subscription order. Pointers inside an event are borrowed for the call only.
 *
 * Recording (docs/runner.md, docs/history.md) belongs to the runner: given a history
 * (bd_runner_set_recording, which the run gate calls), every finished case is appended
 * to it before it is reported. Appends run on the runner's serial recording worker
 * (serial.h), so an fsync never stalls the loop, with group commit: the cases that finish
 * while an append is in flight go to the history together in the next one
 * (bd_history_append_batch: one write, one fsync). A case's `case.finished` follows its
 * record's fsync, on the loop thread, in the order the cases finished. If an append
 * fails, the run stops with that error (exit 4 for io.error) and no further append is
 * tried; every finished case without a record — those of the failed batch and those
 * queued behind it — gets `case.not_recorded`, never `case.finished`, and is not counted
 * in the summary's scores (summary.not_recorded counts it). A case that takes the slot
 * of a case not yet reported gets its `case.started` after that case's `case.finished`
 * (or `case.not_recorded`): causal order (docs/runner.md#use-time-integrity-and-leftovers), though
 * its program may already run.
 *
 * Lifecycle: bd_runner_new → bd_runner_subscribe... → bd_runner_prepare (startup
 * integrity: nothing is spawned before it passes; it touches no loop, so a front end
 * may call it on a worker thread) → bd_runner_start (on the loop thread) → uv_run until
 * bd_runner_finished → bd_runner_free. bd_runner_run does the last three on a private
 * loop. Cancel with bd_runner_cancel: running cases are killed, their temp dirs removed,
 * nothing is recorded for them; what finished is reported.
 *
 * At the end the run summary is written to <bench root>/.benchdesk/runs/<run-id>.json
 * (mode 0600; the directory 0700), and each case's non-empty rubric stderr tail to
 * .benchdesk/runs/<run-id>/<case-id>.stderr (and a command SUT's output to
 * <case-id>.harness_output.json) for the reviewer's result view.
 */
#ifndef BD_RUNNER_H
#define BD_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "bench.h"
#include "err.h"
#include "exec.h"
#include "history.h"
#include "run_report.h"
#include "score.h"
#include "sign.h"
#include "case_layout.h" /* bd_runner_case_limits */
#include "warm_start.h"

typedef struct bd_runner bd_runner;

typedef struct bd_runner_opts {
    int jobs;               /* cases at once; 0 = number of CPUs */
    bd_isolation isolation; /* the class chosen for the run (bd_isolation_choose) */
    const char *python;     /* the interpreter, absolute (bd_exec_find_program); required */
    const char *helper;     /* exec helper binary; NULL = this executable */
    const char *tmp_root;   /* parent of the per-case temp dirs; NULL = $TMPDIR or /tmp */
    bool drafts;            /* --drafts: unsigned cases allowed */
    const char *run_id;     /* NULL = generated "YYYYMMDDTHHMMSSZ-<8 hex>" */
    bool write_files;       /* write the summary and per-case files (default true) */
    /* Record mode (docs/recording.md#what-runs, record.h): run the command SUT only — no rubric,
     * nothing appended to the history; a case need not match a pin (it is about to get a new
     * cassette), the task class must. Each case's SUT stdout is in its result's sut_output. */
    bool record_sut;
    bool sut_host_network; /* record --unsafe-network: the SUT keeps the host network */
} bd_runner_opts;

#define BD_RUNNER_OPTS_INIT                                                                        \
    {                                                                                              \
        0, BD_ISO_SUBPROCESS, NULL, NULL, NULL, false, NULL, true, false, false                    \
    }

typedef void (*bd_run_event_fn)(const bd_run_event *ev, void *payload);

/* New runner for the cases `case_ids` (n > 0; duplicates are ignored) or all cases of
 * `tc` (n == 0), run in id order. Checks ids (case.bad_id, bench.unknown_case), the
 * options (usage.bad_args), and that the task class has cases (bench.unknown_case when
 * empty). `bench` and `tc` are borrowed and must outlive the runner. */
int bd_runner_new(bd_runner **out, const bd_bench *bench, const bd_task_class *tc,
                  const char *const *case_ids, size_t n_case_ids, const bd_runner_opts *opts,
                  bd_err *err);

/* Keep only the runner's cases whose ids are in `keep` (the run gate's selection,
 * docs/user-guide.md#what-gets-run); order and indices follow the kept cases. Only before prepare
 * (internal.bug after). Returns 0 or -1. */
int bd_runner_select(bd_runner *r, const char *const *keep, size_t n_keep, bd_err *err);

struct bd_case_check;

/* Hand the runner the check of one of its cases that the run gate made (bd_verify: the
 * case's files read once, its case.yaml parsed from the bytes that were hashed, its
 * signatures checked on them — or the case memo's verdict for those bytes, without
 * loaded: docs/provenance.md#the-case-memo). The runner keeps a passed check's two
 * digests (the case's and its cassette's), not its parsed case.yaml: a case's start parses
 * it again from the bytes it hashes (docs/runner.md#use-time-integrity-and-leftovers).
 * `chk` stays the caller's. When every case the runner keeps was handed over,
 * bd_runner_prepare checks the task class again but not the cases.
 * Ignored after prepare, for a check that failed, and for an id the runner does not
 * have. */
void bd_runner_take_check(bd_runner *r, struct bd_case_check *chk);

/* Subscribe `fn` (called with `payload`). Returns 0 or -1 (out of memory). */
int bd_runner_subscribe(bd_runner *r, bd_run_event_fn fn, void *payload);

/* Where and how the run's score records go (docs/history.md). */
typedef struct bd_runner_recording {
    bd_history *history;             /* open; NULL: nothing is recorded (record_hash stays "") */
    bool own;                        /* the runner frees `history` with itself */
    bool run_full;                   /* run_scope "full" (the default selection) or "subset" */
    size_t run_cases;                /* run_cases: the whole run's selection (a shard's too) */
    const char *const *verified_ids; /* cases whose records say provenance_verified: true */
    size_t n_verified;
    bool scores_only; /* a shard bundle's chain: no run.stopped audit record (see cost cap) */
    /* How long a finished case's record may wait for others to share its append and fsync
     * (group commit, docs/runner.md#fan-out-events-cancel); 0 = BD_RUNNER_COMMIT_WINDOW_MS. */
    unsigned commit_window_ms;
} bd_runner_recording;

#define BD_RUNNER_COMMIT_WINDOW_MS 20

/* Record every finished case into rec->history before it is reported (see above). Before
 * bd_runner_start only (internal.bug after); the ids are copied. Returns 0 or -1. When
 * rec->own, the history is the runner's even on failure. */
int bd_runner_set_recording(bd_runner *r, const bd_runner_recording *rec, bd_err *err);

/* Start the rubrics warm or cold (docs/runner.md, "Warm starts"); before bd_runner_start.
 * Without it the run takes runner.start of .benchdesk/config.yaml (read at prepare), and
 * without that BD_START_DEFAULT: warm where the run can use it. The summary's `start`
 * says which was used and `start_why` why a run that could have been warm was not. */
void bd_runner_set_start(bd_runner *r, bd_start_mode mode);

/* The unsigned cases the run gate left out of this run (docs/user-guide.md#what-gets-run), for the
 * summary, the run.finished event and the summary file. */
void bd_runner_set_skipped(bd_runner *r, size_t draft, size_t awaiting);

/* The run's cost cap in USD (docs/runner.md#the-cost-cap), negative for none; before
 * bd_runner_start. Once the summed cost_usd of the finished cases reaches it, no case
 * starts and the running ones are cancelled as by bd_runner_cancel (their cost is
 * unknown and not counted); when that leaves cases without a result, the summary says
 * stopped_cost_cap and names them in not_run, and the run is not cancelled. A cap of 0
 * starts no case. Record mode ignores it. */
void bd_runner_set_cost_cap(bd_runner *r, double usd);
/* (When the cap stops a run that records into a history that is not scores_only, the
 * runner appends the audit record BD_RUN_STOPPED_EVENT, bd_run_stop_detail, after the
 * run's last record: reports and `history log` read from the chain that the cap
 * stopped the run.) */
/* The operator's key (runsign.h; NULL: none), before bd_runner_start: every record
 * carries its fingerprint and, when the run ends having recorded anything, the run is
 * signed (a `run.signed` audit record; summary.signed_seq). The key is copied. */
void bd_runner_set_operator(bd_runner *r, const bd_sign_key *key);

/* Set the chain head reported in the summary (64 hex), or NULL for none. */
void bd_runner_set_chain_head(bd_runner *r, const char *hex);

/* Startup integrity, before any spawn: the rubric, every selected case and cassette
 * against their pins (the first failure: case.digest_mismatch, case.digest_missing,
 * rubric.digest_mismatch, cassette.digest_mismatch, cassette.missing, ...), then the
 * exec context for the run's isolation class with the interpreter and SUT binary on
 * its allowlist. Reads the rubric once; the run uses exactly those bytes. */
int bd_runner_prepare(bd_runner *r, bd_err *err);

/* Publish run.started and case.queued, then start up to `jobs` cases on `loop`.
 * The loop must be run until bd_runner_finished. */
int bd_runner_start(bd_runner *r, uv_loop_t *loop, bd_err *err);

/* Stop: kill running cases, start no more. run.finished follows once they are gone. */
void bd_runner_cancel(bd_runner *r);

bool bd_runner_finished(const bd_runner *r);

/* prepare + start + run a private loop to the end. Returns 0, or -1 with the
 * preparation error or the run's abort error. */
int bd_runner_run(bd_runner *r, bd_err *err);

/* The run's abort error (environment failure, history append failure, summary write failure),
 * or NULL when none. */
const bd_err *bd_runner_error(const bd_runner *r);

const bd_run_summary *bd_runner_summary(const bd_runner *r);

/* Finished cases in id order (borrowed); *n gets their count. */
const bd_case_result *const *bd_runner_results(const bd_runner *r, size_t *n);

void bd_runner_free(bd_runner *r);

/* ---- exposed for tests ------------------------------------------------------------- */

/* Map a finished rubric process to its harness failure mode, in the order of
 * docs/runner.md#failure-modes, with a one-line detail. BD_HM_NONE means: exited 0, parse stdout as
 * the BenchScore. */
bd_harness_mode bd_runner_classify(const bd_exec_result *res, const bd_exec_limits *lim,
                                   char detail[BD_SCORE_DETAIL_MAX]);

/* Same for a command SUT: BD_HM_NONE when it exited 0 (its stdout is then parsed). */
bd_harness_mode bd_runner_classify_sut(const bd_exec_result *res, char detail[BD_SCORE_DETAIL_MAX]);

/* At most `max` bytes of `in` as one printable line: control characters become spaces,
 * invalid UTF-8 bytes '?'; the result is NUL-terminated valid UTF-8 in `out` (size >=
 * max + 1). */
void bd_runner_one_line(char *out, size_t max, const char *in, size_t len);

/* A new run id as a run makes one: "YYYYMMDDTHHMMSSZ-<8 random hex>" (UTC now). */
void bd_run_id_new(char out[BD_RUN_ID_MAX]);

#endif
