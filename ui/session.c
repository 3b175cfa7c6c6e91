/*
 * session.c — the live run, at model level (docs/user-guide.md, docs/architecture.md): the startup
 * integrity check (the run gate: chain, pins, signatures, plan) on the thread pool, then the runner
 * on the TUI's loop; its events are copied into app->run and broadcast as BD_EV_RUN, and every
 * finished case is appended to the history by the recorder before anyone hears of it. The run view
 * (views/run.c) only draws what is here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "history.h"
#include "err_keys.h"
#include "rungate.h"
#include "session.h"

/* The preparation on the pool (bd_run_prepare): interpreter, isolation, the gate. */
typedef struct prep_job {
    bd_work work;
    bd_ui_run *run;        /* NULL when the run was freed meanwhile */
    bd_runner *runner;     /* made by bd_run_prepare; the run's once prep_done takes it */
    const bd_bench *bench; /* the app's, immutable while the app lives */
    char *root;
    bd_config config; /* python, jobs and cost_cap_usd of the app's config, copied for the pool */
    bd_run_plan plan;
    /* provenance: every case of the run must be signed unless drafts are allowed */
    const bd_task_class *tc; /* held by run->ref */
    bd_task_class *fresh;    /* tc read again from disk on the pool: what the run checks */
    bd_prov_ctx *prov;       /* NULL: GnuPG unusable (prov_err says why) */
    bd_err prov_err;
    char **ids;
    size_t n_ids;
    bool drafts;
    bool weaker; /* consent to a weaker isolation class (W) */
    bd_err err;
    int rc;
    char repair[256]; /* a torn final line removed from the history first, or "" */
} prep_job;

/* ---- the run ------------------------------------------------------------------------ */

static void broadcast(bd_ui_run *run, size_t case_index)
{
    bd_event ev = {.kind = BD_EV_RUN, .tc_index = run->tc_index, .case_index = case_index};
    bd_app_broadcast(run->app, &ev);
    bd_app_invalidate(run->app, BD_DIRTY_BODY | BD_DIRTY_STATUS | BD_DIRTY_HEADER);
}

/* A run refused before it ran: the run view shows the reason whole, wrapped, with the
 * key that acts on it, so while it is on top the reason only goes to the message log
 * (`m`); elsewhere it is posted as an error. */
static void refusal(bd_app *app, const bd_err *err)
{
    if (app->top && bd_view_is(app->top, BD_VIEW_RUN))
        bd_app_log_error(app, err);
    else
        bd_app_error(app, err);
}

static void on_event(const bd_run_event *ev, void *payload)
{
    bd_ui_run *run = payload;
    bd_app *app = run->app;
    run->running = ev->running;
    run->done = ev->done;
    bd_run_cost_text(run->cost, sizeof(run->cost), ev->summary);
    run->has_cost_cap = ev->summary->has_cost_cap;
    switch (ev->kind) {
    case BD_RUN_EV_STARTED: {
        snprintf(run->run_id, sizeof(run->run_id), "%s", ev->summary->run_id);
        snprintf(run->isolation, sizeof(run->isolation), "%s",
                 bd_isolation_str(ev->summary->isolation));
        snprintf(run->operator_fpr, sizeof(run->operator_fpr), "%s",
                 ev->summary->operator_fingerprint);
        snprintf(run->task_class_digest, sizeof(run->task_class_digest), "%s",
                 ev->summary->task_class_digest);
        size_t n = ev->summary->cases_selected;
        run->cases = calloc(n ? n : 1, sizeof(*run->cases));
        if (run->cases)
            run->n = n;
        run->phase = BD_UR_RUNNING;
        run->t_start_ms = bd_app_now_ms(app);
        break;
    }
    case BD_RUN_EV_CASE_QUEUED:
        if (ev->case_index < run->n) {
            bd_ur_case *c = &run->cases[ev->case_index];
            c->id = strdup(ev->case_id);
            c->state = BD_UR_QUEUED;
            c->wall_ms = -1;
            c->model_index = bd_model_find_case(app->model, run->tc_index, ev->case_id);
        }
        break;
    case BD_RUN_EV_CASE_STARTED:
        if (ev->case_index < run->n) {
            run->cases[ev->case_index].state = BD_UR_BUSY;
            run->cases[ev->case_index].started_ms = bd_app_now_ms(app);
        }
        break;
    case BD_RUN_EV_CASE_FINISHED:
        if (ev->case_index < run->n && ev->result) {
            bd_ur_case *c = &run->cases[ev->case_index];
            const bd_case_result *res = ev->result;
            c->state = BD_UR_DONE;
            c->finished_ms = bd_app_now_ms(app);
            c->has_score = bd_score_copy(&c->score, &res->score) == 0;
            /* The rubric's stderr is not kept: the result view reads the run's file of it
             * (the runner wrote it before this event), so a long run holds none. */
            snprintf(c->record_hash, sizeof(c->record_hash), "%s", res->record_hash);
            c->seq = res->record_seq;
            snprintf(c->started_at, sizeof(c->started_at), "%s", res->started_at);
            snprintf(c->finished_at, sizeof(c->finished_at), "%s", res->finished_at);
            snprintf(c->case_digest, sizeof(c->case_digest), "%s", res->case_digest);
            c->wall_ms = res->wall_ms;
            c->provenance_verified = res->provenance_verified;
            if (res->score.passed)
                run->passed++;
            else
                run->failed++;
            bd_model_set_last(app->model, run->tc_index, c->model_index, res->score.passed,
                              res->score.score,
                              res->score.n_failure_modes ? res->score.failure_modes[0].code : NULL);
        }
        break;
    case BD_RUN_EV_CASE_NOT_RECORDED:
        if (ev->case_index < run->n) {
            run->cases[ev->case_index].state = BD_UR_NOT_RECORDED;
            run->cases[ev->case_index].finished_ms = bd_app_now_ms(app);
        }
        break;
    case BD_RUN_EV_FINISHED: {
        const bd_run_summary *s = ev->summary;
        run->phase = BD_UR_FINISHED;
        for (size_t i = 0; i < run->n; i++)
            if (run->cases[i].state != BD_UR_DONE && run->cases[i].state != BD_UR_NOT_RECORDED)
                run->cases[i].state = BD_UR_NOT_RUN;
        run->t_end_ms = bd_app_now_ms(app);
        run->cancelled = s->cancelled;
        run->stopped_cost_cap = s->stopped_cost_cap;
        run->n_not_run = s->n_not_run;
        run->has_mean = s->has_mean;
        run->mean = s->mean_score;
        run->pass_rate = s->pass_rate;
        run->has_ci = s->has_ci;
        run->ci_lo = s->ci_lo;
        run->ci_hi = s->ci_hi;
        snprintf(run->chain_head, sizeof(run->chain_head), "%s",
                 s->has_chain_head ? s->chain_head : "");
        snprintf(run->summary_path, sizeof(run->summary_path), "%s",
                 s->has_summary_path ? s->summary_path : "");
        const bd_err *fatal = run->runner ? bd_runner_error(run->runner) : NULL;
        if (fatal)
            run->error = *fatal;
        bd_model_refresh_history(app->model);
        if (fatal)
            bd_app_error(app, fatal);
        else
            bd_app_message(app, BD_MSG_INFO, "run %s %s: %zu passed, %zu failed", run->run_id,
                           run->cancelled          ? "cancelled"
                           : run->stopped_cost_cap ? "stopped by the cost cap"
                                                   : "finished",
                           run->passed, run->failed);
        break;
    }
    default:
        break;
    }
    broadcast(run, ev->case_index);
    if (ev->kind == BD_RUN_EV_FINISHED && run->quit_after)
        bd_app_quit(app, run->quit_status);
}

static bool prep_stopping(void *payload)
{
    (void)payload;
    return bd_work_stopping();
}

static void prep_run(bd_work *w)
{
    prep_job *j = (prep_job *)w;
    /* GnuPG unusable: a signed-only run cannot be checked, so it is refused. */
    if (!j->drafts && !j->prov) {
        j->err = j->prov_err;
        j->rc = -1;
        return;
    }
    /* As `benchdesk run`: the interpreter, the strongest isolation class the machine
     * has, the config's jobs, the gate; the runner records every finished case. */
    /* Provenance is checked again before every run, on the files as they are now (the
     * view may be older than an outside pin or signature): the task class is read anew. */
    if (bd_task_class_load(&j->fresh, j->bench, j->tc->name, &j->err) != 0) {
        j->rc = -1;
        return;
    }
    bd_run_request req = {.bench = j->bench,
                          .tc = j->fresh,
                          .case_ids = (const char *const *)j->ids,
                          .n_case_ids = j->n_ids,
                          .config = &j->config,
                          .allow_weaker = j->weaker,
                          .gate = {.drafts = j->drafts,
                                   .prov = j->prov,
                                   .drafts_hint = "run with drafts allowed (d)",
                                   .stop = prep_stopping}};
    /* As `benchdesk run`: a torn final line a crash left is removed now, and said. */
    bd_history *h = NULL;
    bd_err rerr = BD_ERR_INIT;
    if (bd_history_open(&h, j->root, BD_HISTORY_READ, &rerr) == 0 &&
        bd_history_repair_tail(h, &rerr) == 0 && bd_history_repair_note(h))
        snprintf(j->repair, sizeof(j->repair), "%s", bd_history_repair_note(h));
    bd_history_free(h);
    j->rc = bd_run_prepare(&j->runner, &j->plan, &req, &j->err);
}

static void prep_free(prep_job *j)
{
    bd_runner_free(j->runner);
    bd_task_class_free(j->fresh);
    bd_config_release(&j->config);
    bd_run_plan_release(&j->plan);
    for (size_t i = 0; i < j->n_ids; i++)
        free(j->ids[i]);
    free(j->ids);
    free(j->root);
    free(j);
}

static void prep_done(bd_work *w, bool ran)
{
    prep_job *j = (prep_job *)w;
    bd_ui_run *run = j->run;
    if (!run) {
        prep_free(j);
        return;
    }
    run->prep = NULL;
    bd_app *app = run->app;
    if (ran && j->repair[0])
        bd_app_message(app, BD_MSG_WARN, "%s", j->repair);
    if (!ran || j->rc < 0 || run->cancel_requested || app->quitting) {
        run->phase = run->cancel_requested || !ran ? BD_UR_FINISHED : BD_UR_FAILED;
        run->t_end_ms = bd_app_now_ms(app); /* a refused run's clock stops */
        run->cancelled = run->cancel_requested || !ran;
        if (j->rc < 0 && ran)
            run->error = j->err;
        prep_free(j);
        if (run->error.code != BD_OK)
            refusal(app, &run->error);
        broadcast(run, SIZE_MAX);
        if (run->quit_after)
            bd_app_quit(app, run->quit_status);
        return;
    }
    run->runner = j->runner;
    j->runner = NULL;
    run->own_tc = j->fresh; /* the runner borrows it */
    j->fresh = NULL;
    run->plan = j->plan;
    memset(&j->plan, 0, sizeof(j->plan));
    prep_free(j);
    if (bd_runner_subscribe(run->runner, on_event, run) < 0) {
        bd_err oom = BD_ERR_INIT;
        bd_err_set(&oom, BD_E_NOMEM, NULL, 0, 0, "out of memory starting the run");
        run->phase = BD_UR_FAILED;
        run->t_end_ms = bd_app_now_ms(app);
        run->error = oom;
        bd_app_error(app, &oom);
        broadcast(run, SIZE_MAX);
        return;
    }
    size_t skipped = run->plan.skipped_draft + run->plan.skipped_awaiting;
    if (skipped)
        bd_app_message(app, BD_MSG_WARN,
                       "%zu unsigned case%s skipped (%zu draft, %zu awaiting review): d runs "
                       "them too, as drafts",
                       skipped, skipped == 1 ? "" : "s", run->plan.skipped_draft,
                       run->plan.skipped_awaiting);
    bd_err note = BD_ERR_INIT;
    if (bd_run_plan_note(&run->plan, run->task_class, &note))
        bd_app_message(app, BD_MSG_WARN, "%s", bd_tui_err_text(&note));
    bd_err err = BD_ERR_INIT;
    if (bd_runner_start(run->runner, app->loop, &err) < 0) {
        run->phase = BD_UR_FAILED;
        run->t_end_ms = bd_app_now_ms(app);
        run->error = err;
        bd_app_error(app, &err);
    }
    broadcast(run, SIZE_MAX);
}

static void run_free_cases(bd_ui_run *run)
{
    for (size_t i = 0; i < run->n; i++) {
        free(run->cases[i].id);
        bd_score_free(&run->cases[i].score);
    }
    free(run->cases);
    run->cases = NULL;
    run->n = 0;
}

void bd_ui_run_release_runner(bd_app *app)
{
    bd_ui_run *run = app->run;
    if (!run || !run->runner || run->phase == BD_UR_RUNNING || run->prep)
        return;
    bd_runner_free(run->runner);
    run->runner = NULL;
    bd_task_class_free(run->own_tc);
    run->own_tc = NULL;
    bd_run_plan_release(&run->plan);
    bd_model_tc_release(run->ref);
    run->ref = NULL;
}

void bd_ui_run_free(bd_app *app)
{
    bd_ui_run *run = app->run;
    if (!run)
        return;
    if (run->prep)
        ((prep_job *)run->prep)->run = NULL;
    /* bd_runner_free cancels and drains a run still going on the loop. */
    bd_runner_free(run->runner);
    bd_task_class_free(run->own_tc);
    bd_run_plan_release(&run->plan);
    bd_model_tc_release(run->ref);
    run_free_cases(run);
    for (size_t i = 0; i < run->n_ids; i++)
        free(run->ids[i]);
    free(run->ids);
    free(run);
    app->run = NULL;
}

void bd_ui_run_cancel(bd_app *app)
{
    bd_ui_run *run = app->run;
    if (!run || run->phase == BD_UR_FINISHED || run->phase == BD_UR_FAILED) {
        bd_app_message(app, BD_MSG_INFO, "no run in progress");
        return;
    }
    if (run->cancel_requested)
        return;
    run->cancel_requested = true;
    bd_app_message(app, BD_MSG_WARN, "cancelling: running cases are being stopped");
    if (run->phase == BD_UR_RUNNING && run->runner)
        bd_runner_cancel(run->runner);
    broadcast(run, SIZE_MAX);
}

bool bd_ui_run_active(const bd_app *app)
{
    return app->run && (app->run->phase == BD_UR_PREPARING || app->run->phase == BD_UR_RUNNING);
}

bool bd_ui_run_quit_hook(bd_app *app, int status)
{
    bd_ui_run *run = app->run;
    if (!run || run->phase == BD_UR_FINISHED || run->phase == BD_UR_FAILED)
        return false;
    run->quit_after = true;
    run->quit_status = status;
    bd_ui_run_cancel(app);
    return true;
}

bool bd_ui_run_can_start(bd_app *app, size_t tc_index)
{
    if (app->run && (app->run->phase == BD_UR_PREPARING || app->run->phase == BD_UR_RUNNING)) {
        bd_app_message(app, BD_MSG_WARN, "a run is in progress: v shows it, c cancels it");
        return false;
    }
    if (app->pinning) {
        bd_app_message(app, BD_MSG_WARN, "a pin is being written: run once it is done");
        return false;
    }
    if (!bd_model_tc(app->model, tc_index)) {
        bd_app_message(app, BD_MSG_WARN, "the task class is still loading (or failed to load)");
        return false;
    }
    return true;
}

static int start(bd_app *app, size_t tc_index, const char *const *ids, size_t n, bool drafts,
                 bool weaker)
{
    bd_err err = BD_ERR_INIT;
    bd_model *m = app->model;
    if (!bd_ui_run_can_start(app, tc_index))
        return -1;
    const bd_task_class *tc = bd_model_tc(m, tc_index);
    /* The previous run's views were closed by the caller (views/run.c). */
    bd_ui_run_free(app);

    bd_ui_run *run = calloc(1, sizeof(*run));
    if (!run)
        goto oom;
    run->app = app;
    run->tc_index = tc_index;
    run->drafts = drafts;
    run->weaker = weaker;
    snprintf(run->task_class, sizeof(run->task_class), "%s", tc->name);
    run->ids = calloc(n ? n : 1, sizeof(*run->ids));
    if (!run->ids)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        if (!(run->ids[i] = strdup(ids[i])))
            goto oom;
        run->n_ids++;
    }
    run->ref = bd_model_tc_hold(m, tc_index);
    app->run = run;

    prep_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(app->bench->root)) ||
        !(j->ids = calloc(n ? n : 1, sizeof(*j->ids))) ||
        (app->config.python && !(j->config.python = strdup(app->config.python)))) {
        if (j) {
            free(j->root);
            free(j->ids);
        }
        free(j);
        goto oom;
    }
    j->config.jobs = app->config.jobs;
    j->config.has_cost_cap = app->config.has_cost_cap;
    j->config.cost_cap_usd = app->config.cost_cap_usd;
    for (size_t i = 0; i < n; i++) {
        if (!(j->ids[i] = strdup(ids[i]))) {
            prep_free(j);
            goto oom;
        }
        j->n_ids++;
    }
    j->run = run;
    j->bench = app->bench;
    j->tc = run->ref->tc;
    j->prov = m->prov;
    j->prov_err = m->prov_err;
    j->drafts = drafts;
    j->weaker = weaker;
    j->work.run = prep_run;
    j->work.done = prep_done;
    if (bd_work_queue(app, &j->work) < 0) {
        prep_free(j);
        bd_err_set(&err, BD_E_INTERNAL, NULL, 0, 0, "cannot queue the run's integrity check");
        goto fail;
    }
    run->prep = j;
    run->phase = BD_UR_PREPARING;
    run->t_start_ms = bd_app_now_ms(app);
    bd_app_animate(app);
    return 0;
oom:
    bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory starting the run");
fail:
    if (run && app->run == run) {
        run->phase = BD_UR_FAILED;
        run->t_end_ms = bd_app_now_ms(app);
        if (!run->t_start_ms) /* refused before it started: no time went by */
            run->t_start_ms = run->t_end_ms;
        run->error = err;
        bd_app_log_error(app, &err); /* the caller opens the run view on it */
        return -2;
    } else if (run) {
        free(run->ids);
        free(run);
    }
    bd_app_error(app, &err);
    return -1;
}

int bd_ui_run_start(bd_app *app, size_t tc_index, const char *const *case_ids, size_t n,
                    bool drafts, bool weaker)
{
    return start(app, tc_index, case_ids, n, drafts, weaker);
}

void bd_ui_run_open(bd_app *app, size_t tc_index, const char *const *case_ids, size_t n,
                    bool drafts, bool weaker)
{
    if (!bd_ui_run_can_start(app, tc_index))
        return;
    /* The previous run's views go with it. */
    bd_app_drop(app, BD_VIEW_RESULT);
    bd_app_drop(app, BD_VIEW_BREAKDOWN);
    bd_app_drop(app, BD_VIEW_RUN);
    if (bd_ui_run_start(app, tc_index, case_ids, n, drafts, weaker) != -1)
        bd_app_open(app, BD_VIEW_RUN, NULL);
}
