/*
 * session.h — the live run, a model-level object the app holds (app->run); the run view
 * (views/run.c) only draws it.
 *
 * One run at a time, hosted on the TUI's own loop: the startup integrity check (the
 * chain, then bd_runner_prepare: pins, cassettes, rubric) runs on the thread pool, then
 * bd_runner_start puts the cases on app->loop and the runner's events update the run
 * view. Every finished case is appended to the history by the recorder before its
 * case.finished event is published.
 */
#ifndef BD_UI_SESSION_H
#define BD_UI_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "model.h"
#include "runner.h"
#include "rungate.h"

/* A case of the run: queued, running (busy), finished with a score, or never finished
 * (the run was cancelled or aborted first: nothing was recorded for it). */
/* BD_UR_NOT_RECORDED: the case finished but its record could not be appended (the run
 * then ends with the history's error; the case counts neither as passed nor failed). */
typedef enum {
    BD_UR_QUEUED,
    BD_UR_BUSY,
    BD_UR_DONE,
    BD_UR_NOT_RUN,
    BD_UR_NOT_RECORDED
} bd_ur_state;

/* One case of the run, as copied from the runner's events (owned here). */
typedef struct bd_ur_case {
    char *id;
    size_t model_index; /* row in the model's task class, SIZE_MAX if unknown */
    bd_ur_state state;
    uint64_t started_ms, finished_ms; /* bd_app_now_ms */
    bool has_score;
    bd_score score; /* the rubric's stderr is read from the run's file when shown */
    char record_hash[65];
    uint64_t seq;
    char started_at[21], finished_at[21];
    char case_digest[72];
    int64_t wall_ms;
    bool provenance_verified; /* its record's provenance_verified (false: a draft run) */
} bd_ur_case;

typedef enum {
    BD_UR_PREPARING, /* integrity checks on the pool */
    BD_UR_RUNNING,
    BD_UR_FINISHED, /* completed or cancelled; see cancelled */
    BD_UR_FAILED,   /* refused before anything ran; see error */
} bd_ur_phase;

struct bd_ui_run {
    bd_app *app;
    bd_runner *runner;     /* NULL once released */
    bd_tc_ref *ref;        /* keeps the task class alive for the runner */
    bd_task_class *own_tc; /* the task class as read from disk just before the run (the
                            * runner's: provenance is checked again before every run) */
    size_t tc_index;
    char task_class[129];
    char run_id[BD_RUN_ID_MAX];
    char isolation[16];
    char operator_fpr[41];      /* the operator key that signs the run, or "" */
    char task_class_digest[72]; /* what the run hashed and recorded (docs/formats.md#digests), for
                                   stale marks */
    bd_ur_case *cases;
    size_t n;
    size_t passed, failed, running, done;
    uint64_t t_start_ms, t_end_ms;
    bd_ur_phase phase;
    bool cancel_requested, cancelled;
    bool drafts;      /* unsigned cases allowed (records carry provenance_verified per case) */
    bool weaker;      /* consent to a weaker isolation class than namespaces (`W`) */
    bd_run_plan plan; /* what the gate selected (owned; filled before the run starts) */
    bd_err error;
    /* the cost so far beside the cap ("$0.53 of $1.00", bd_run_cost_text), every event */
    char cost[96];
    bool has_cost_cap; /* a cost cap applies to the run */
    /* the summary, copied at run.finished */
    bool stopped_cost_cap; /* the cost cap stopped it: n_not_run cases did not run */
    size_t n_not_run;
    bool has_mean, has_ci;
    double mean, ci_lo, ci_hi, pass_rate;
    char chain_head[65];
    char summary_path[4096];
    /* quitting while the run goes on */
    bool quit_after;
    int quit_status;
    /* what to run again with `d` */
    char **ids;
    size_t n_ids;
    void *prep; /* the preparation job in flight */
};

/* Whether a run of task class `tc_index` may start now; when not, say why on the status
 * line (a run is going, the task class is still loading) and return false. */
bool bd_ui_run_can_start(bd_app *app, size_t tc_index);

/* Start a run of task class `tc_index` over `case_ids` (n > 0) or all its cases (n == 0),
 * with drafts allowed or not, with consent to a weaker isolation class or not, replacing the
 * previous run (free its views first). Returns 0 (preparing on the pool), -1 when refused before
 * the run was set up (message posted, app->run unchanged or NULL), -2 when the run was set up and
 * failed (app->run says why: phase BD_UR_FAILED, error). */
int bd_ui_run_start(bd_app *app, size_t tc_index, const char *const *case_ids, size_t n,
                    bool drafts, bool weaker);

/* What every view's "run" key does: unless refused (bd_ui_run_can_start, message
 * posted), close the previous run's views, start the run (bd_ui_run_start) and open the
 * run view on it. */
void bd_ui_run_open(bd_app *app, size_t tc_index, const char *const *case_ids, size_t n,
                    bool drafts, bool weaker);

/* A run is being prepared or is running. */
bool bd_ui_run_active(const bd_app *app);

/* Cancel the run in progress (no effect otherwise). */
void bd_ui_run_cancel(bd_app *app);

/* Quitting while a run goes on: cancel it first. Returns true when the quit is deferred
 * until the run has stopped (the run then calls bd_app_quit again). */
bool bd_ui_run_quit_hook(bd_app *app, int status);

/* Release the finished run's runner (before a reload; the copied results stay). */
void bd_ui_run_release_runner(bd_app *app);

/* Free app->run (teardown: the loop must still be there for the runner's handles). */
void bd_ui_run_free(bd_app *app);

#endif
