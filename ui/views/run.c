/*
 * run.c — the live run: a progress bar, done/total, passed/failed/running, elapsed and
 * ETA, one row per case with a spinner while it runs; `c` cancels, Enter opens a finished
 * case's result (DESIGN.md §10). The runner runs on the TUI's loop (runner.h); its
 * startup integrity check runs on the thread pool so the screen never freezes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breakdown.h"
#include "exec.h"
#include "history.h"
#include "rungate.h"
#include "result_api.h"
#include "run_api.h"
#include "runs_model.h"
#include "tui_internal.h"
#include "view_util.h"

typedef struct run_view {
    bd_list list;
    bool failed_only;
    char text[512];
    char concern[160]; /* from the breakdown panel: a failure mode or key, or "" */
    bool concern_is_key;
} run_view;

/* The preparation on the pool (bd_run_prepare): interpreter, isolation, the gate. */
typedef struct prep_job {
    bd_work work;
    bd_ui_run *run;        /* NULL when the run was freed meanwhile */
    bd_runner *runner;     /* made by bd_run_prepare; the run's once prep_done takes it */
    const bd_bench *bench; /* the app's, immutable while the app lives */
    char *root;
    bd_config config; /* python and jobs of the app's config, copied for the pool */
    bd_run_plan plan;
    /* provenance: every case of the run must be signed unless drafts are allowed */
    const bd_task_class *tc; /* held by run->ref */
    bd_prov_ctx *prov;       /* NULL: GnuPG unusable (prov_err says why) */
    bd_err prov_err;
    char **ids;
    size_t n_ids;
    bool drafts;
    bd_err err;
    int rc;
} prep_job;

static const bd_action actions[] = {
    BD_A_OPEN,   BD_A_CANCEL, BD_A_BREAKDOWN, BD_A_NEXT_FAIL, BD_A_PREV_FAIL, BD_A_FAILED_ONLY,
    BD_A_FILTER, BD_A_RUN,    BD_A_DRAFTS,    BD_A_HISTORY,   BD_A_COMPARE,   BD_A_NONE};

/* ---- copying results out of the runner ---------------------------------------------- */

static int score_copy(bd_score *dst, const bd_score *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->passed = src->passed;
    dst->score = src->score;
    dst->cost_usd = src->cost_usd;
    dst->wall_clock_ms = src->wall_clock_ms;
    if (src->n_breakdown) {
        dst->breakdown = calloc(src->n_breakdown, sizeof(*dst->breakdown));
        if (!dst->breakdown)
            goto oom;
        for (size_t i = 0; i < src->n_breakdown; i++) {
            dst->breakdown[i].value = src->breakdown[i].value;
            if (!(dst->breakdown[i].key = strdup(src->breakdown[i].key)))
                goto oom;
            dst->n_breakdown++;
        }
    }
    if (src->n_failure_modes) {
        dst->failure_modes = calloc(src->n_failure_modes, sizeof(*dst->failure_modes));
        if (!dst->failure_modes)
            goto oom;
        for (size_t i = 0; i < src->n_failure_modes; i++) {
            bd_score_fm *f = &dst->failure_modes[i];
            f->severity = src->failure_modes[i].severity;
            if (!(f->code = strdup(src->failure_modes[i].code)) ||
                (src->failure_modes[i].detail &&
                 !(f->detail = strdup(src->failure_modes[i].detail)))) {
                free(f->code);
                goto oom;
            }
            dst->n_failure_modes++;
        }
    }
    return 0;
oom:
    bd_score_free(dst);
    return -1;
}

/* ---- the run ------------------------------------------------------------------------ */

static void broadcast(bd_ui_run *run, size_t case_index)
{
    bd_event ev = {BD_EV_RUN, run->tc_index, case_index};
    bd_app_broadcast(run->app, &ev);
    bd_app_invalidate(run->app, BD_DIRTY_BODY | BD_DIRTY_STATUS | BD_DIRTY_HEADER);
}

static void on_event(const bd_run_event *ev, void *payload)
{
    bd_ui_run *run = payload;
    bd_app *app = run->app;
    run->running = ev->running;
    run->done = ev->done;
    switch (ev->kind) {
    case BD_RUN_EV_STARTED: {
        snprintf(run->run_id, sizeof(run->run_id), "%s", ev->summary->run_id);
        snprintf(run->isolation, sizeof(run->isolation), "%s",
                 bd_isolation_str(ev->summary->isolation));
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
            c->has_score = score_copy(&c->score, &res->score) == 0;
            if (res->stderr_len && (c->stderr_tail = malloc(res->stderr_len + 1))) {
                memcpy(c->stderr_tail, res->stderr_tail, res->stderr_len);
                c->stderr_tail[res->stderr_len] = '\0';
                c->stderr_len = res->stderr_len;
            }
            snprintf(c->record_hash, sizeof(c->record_hash), "%s", res->record_hash);
            c->seq = res->record_seq;
            snprintf(c->started_at, sizeof(c->started_at), "%s", res->started_at);
            snprintf(c->finished_at, sizeof(c->finished_at), "%s", res->finished_at);
            snprintf(c->case_digest, sizeof(c->case_digest), "%s", res->case_digest);
            c->wall_ms = res->wall_ms;
            if (res->score.passed)
                run->passed++;
            else
                run->failed++;
            bd_model_set_last(app->model, run->tc_index, c->model_index, res->score.passed,
                              res->score.score,
                              res->score.n_failure_modes ? res->score.failure_modes[0].code : NULL);
        }
        break;
    case BD_RUN_EV_FINISHED: {
        const bd_run_summary *s = ev->summary;
        run->phase = BD_UR_FINISHED;
        for (size_t i = 0; i < run->n; i++)
            if (run->cases[i].state != BD_UR_DONE)
                run->cases[i].state = BD_UR_NOT_RUN;
        run->t_end_ms = bd_app_now_ms(app);
        run->cancelled = s->cancelled;
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
                           run->cancelled ? "cancelled" : "finished", run->passed, run->failed);
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
    bd_run_request req = {.bench = j->bench,
                          .tc = j->tc,
                          .case_ids = (const char *const *)j->ids,
                          .n_case_ids = j->n_ids,
                          .config = &j->config,
                          .gate = {.drafts = j->drafts,
                                   .prov = j->prov,
                                   .drafts_hint = "run with drafts allowed (d)",
                                   .stop = prep_stopping}};
    j->rc = bd_run_prepare(&j->runner, &j->plan, &req, &j->err);
}

static void prep_free(prep_job *j)
{
    bd_runner_free(j->runner);
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
    if (!ran || j->rc < 0 || run->cancel_requested || app->quitting) {
        run->phase = run->cancel_requested || !ran ? BD_UR_FINISHED : BD_UR_FAILED;
        run->t_end_ms = bd_app_now_ms(app); /* a refused run's clock stops */
        run->cancelled = run->cancel_requested || !ran;
        if (j->rc < 0 && ran)
            run->error = j->err;
        prep_free(j);
        if (run->error.code != BD_OK)
            bd_app_error(app, &run->error);
        broadcast(run, SIZE_MAX);
        if (run->quit_after)
            bd_app_quit(app, run->quit_status);
        return;
    }
    run->runner = j->runner;
    j->runner = NULL;
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
        free(run->cases[i].stderr_tail);
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

bool bd_app_run_quit_hook(bd_app *app, int status)
{
    bd_ui_run *run = app->run;
    if (!run || run->phase == BD_UR_FINISHED || run->phase == BD_UR_FAILED)
        return false;
    run->quit_after = true;
    run->quit_status = status;
    bd_ui_run_cancel(app);
    return true;
}

/* Remove every view of `ops` from the stack (they show a run that is going away). */
static void drop_views(bd_app *app, const bd_view_ops *ops)
{
    bd_view **link = &app->top;
    while (*link) {
        bd_view *v = *link;
        if (v->ops == ops && v->below) {
            *link = v->below;
            v->ops->close(v);
            free(v);
            continue;
        }
        link = &v->below;
    }
}

static int start(bd_app *app, size_t tc_index, const char *const *ids, size_t n, bool drafts)
{
    bd_err err = BD_ERR_INIT;
    bd_model *m = app->model;
    if (app->run && (app->run->phase == BD_UR_PREPARING || app->run->phase == BD_UR_RUNNING)) {
        bd_app_message(app, BD_MSG_WARN, "a run is in progress: v shows it, c cancels it");
        return -1;
    }
    const bd_task_class *tc = bd_model_tc(m, tc_index);
    if (!tc) {
        bd_app_message(app, BD_MSG_WARN, "the task class is still loading (or failed to load)");
        return -1;
    }
    /* The previous run's views go with it. */
    drop_views(app, &bd_view_result);
    drop_views(app, &bd_view_run);
    bd_ui_run_free(app);

    bd_ui_run *run = calloc(1, sizeof(*run));
    if (!run)
        goto oom;
    run->app = app;
    run->tc_index = tc_index;
    run->drafts = drafts;
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
    bd_app_push(app, &bd_view_run, NULL);
    return 0;
oom:
    bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory starting the run");
fail:
    if (run && app->run == run) {
        run->phase = BD_UR_FAILED;
        run->t_end_ms = bd_app_now_ms(app);
        run->error = err;
        bd_app_push(app, &bd_view_run, NULL);
    } else if (run) {
        free(run->ids);
        free(run);
    }
    bd_app_error(app, &err);
    return -1;
}

void bd_ui_run_start(bd_app *app, size_t tc_index, const char *const *case_ids, size_t n)
{
    start(app, tc_index, case_ids, n, false);
}

/* ---- the view ----------------------------------------------------------------------- */

/* The run was refused for its cases' provenance (or GnuPG is missing): `d` may run it
 * again with drafts allowed. */
static bool prov_refusal(const bd_ui_run *run)
{
    if (run->phase != BD_UR_FAILED || run->drafts)
        return false;
    switch (run->error.code) {
    case BD_E_PROVENANCE_MISSING:
    case BD_E_PROVENANCE_BAD_SIGNATURE:
    case BD_E_PROVENANCE_UNTRUSTED:
    case BD_E_PROVENANCE_SAME_SIGNER:
    case BD_E_PROVENANCE_STALE:
    case BD_E_PROVENANCE_KEY_EXPIRED:
    case BD_E_PROVENANCE_KEY_REVOKED:
    case BD_E_GPG_UNAVAILABLE:
    case BD_E_GPG:
        return true;
    default:
        return false;
    }
}

static bd_ui_run *run_of(bd_view *v)
{
    return v->app->run;
}

static const char *row_text(size_t row, void *payload)
{
    bd_view *v = payload;
    run_view *s = v->state;
    const bd_ur_case *c = &run_of(v)->cases[row];
    if (s->failed_only && !(c->state == BD_UR_DONE && c->has_score && !c->score.passed))
        return NULL;
    if (s->concern[0] &&
        !(c->has_score && (s->concern_is_key ? bd_bdown_key_below(&c->score, s->concern)
                                             : bd_bdown_has_mode(&c->score, s->concern))))
        return NULL;
    snprintf(s->text, sizeof(s->text), "%s %s", c->id ? c->id : "",
             c->state == BD_UR_DONE      ? (c->has_score && c->score.passed ? "passed" : "failed")
             : c->state == BD_UR_BUSY    ? "running"
             : c->state == BD_UR_NOT_RUN ? "not run"
                                         : "queued");
    bd_fm_codes_append(s->text, sizeof(s->text), c->has_score ? &c->score : NULL);
    return s->text;
}

static void rebuild(bd_view *v)
{
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    if (bd_list_rebuild(&s->list, run ? run->n : 0, row_text, NULL, v) < 0)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
}

static int open_view(bd_view *v, void *arg)
{
    (void)arg;
    if (!v->app->run) {
        bd_app_message(v->app, BD_MSG_INFO, "no run yet: r runs the selected task class or case");
        return -1;
    }
    run_view *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    bd_list_init(&s->list);
    snprintf(v->title, sizeof(v->title), "run %s", v->app->run->task_class);
    rebuild(v);
    return 0;
}

static void close_view(bd_view *v)
{
    run_view *s = v->state;
    bd_list_release(&s->list);
    free(s);
}

static void draw_row(bd_view *v, WINDOW *w, int y, size_t row, bool sel)
{
    const bd_ur_case *c = &run_of(v)->cases[row];
    int cols = getmaxx(w);
    attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
#define ROLE(r) (sel ? base : bd_role_attr(r))
    bd_draw_text(w, y, 0, cols, "", base, true);
    const char *glyph;
    const char *state;
    bd_role role;
    switch (c->state) {
    case BD_UR_BUSY:
        glyph = bd_app_spinner(v->app);
        state = "running";
        role = BD_R_WARN;
        break;
    case BD_UR_DONE:
        glyph = c->has_score && c->score.passed ? bd_gl->ok : bd_gl->bad;
        state = c->has_score && c->score.passed ? "passed" : "failed";
        role = c->has_score && c->score.passed ? BD_R_OK : BD_R_FAIL;
        break;
    case BD_UR_NOT_RUN:
        glyph = "-";
        state = "not run";
        role = BD_R_MUTED;
        break;
    default:
        glyph = bd_gl->pending;
        state = "queued";
        role = BD_R_MUTED;
        break;
    }
    int idw = cols - 1 - 2 - 8 - 7 - 9 - 22;
    if (idw < 20)
        idw = 20;
    int x = 1;
    bd_draw_text(w, y, x, 2, glyph, ROLE(role), false);
    x += 2;
    bd_draw_text(w, y, x, idw, c->id, base, false);
    x += idw + 1;
    bd_draw_text(w, y, x, 8, state, ROLE(role), false);
    x += 8;
    char buf[64];
    if (c->state == BD_UR_DONE && c->has_score) {
        snprintf(buf, sizeof(buf), "%.2f", c->score.score);
        bd_draw_text(w, y, x, 6, buf, ROLE(role), false);
    }
    x += 7;
    if (c->state == BD_UR_BUSY || c->state == BD_UR_DONE) {
        long long ms =
            c->state == BD_UR_DONE
                ? (c->wall_ms >= 0 ? c->wall_ms : (long long)(c->finished_ms - c->started_ms))
                : (long long)(bd_app_now_ms(v->app) - c->started_ms);
        bd_human_ms(buf, sizeof(buf), ms);
        bd_draw_text(w, y, x, 8, buf, ROLE(BD_R_MUTED), false);
    }
    x += 9;
    if (c->has_score && c->score.n_failure_modes)
        bd_draw_text(w, y, x, cols - x, c->score.failure_modes[0].code, ROLE(BD_R_FAIL), false);
#undef ROLE
}

static void draw(bd_view *v, WINDOW *w)
{
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    int rows = getmaxy(w), cols = getmaxx(w);
    uint64_t now = bd_app_now_ms(v->app);
    /* Title: what runs, under which isolation, and where it stands. */
    const char *phase = run->phase == BD_UR_PREPARING ? "checking integrity"
                        : run->phase == BD_UR_RUNNING
                            ? (run->cancel_requested ? "cancelling" : "running")
                        : run->phase == BD_UR_FAILED ? "REFUSED"
                        : run->error.code != BD_OK   ? "ABORTED"
                        : run->cancelled             ? "cancelled"
                                                     : "finished";
    bd_role prole = run->phase == BD_UR_FAILED || run->error.code != BD_OK ? BD_R_BADGE_BAD
                    : run->phase == BD_UR_FINISHED && !run->cancelled      ? BD_R_BADGE_SIGNED
                                                                           : BD_R_TITLE;
    char buf[512];
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    snprintf(buf, sizeof(buf), " %s%s%s ",
             run->phase == BD_UR_PREPARING || run->phase == BD_UR_RUNNING ? bd_app_spinner(v->app)
                                                                          : "",
             run->phase == BD_UR_PREPARING || run->phase == BD_UR_RUNNING ? " " : "", phase);
    int rx = bd_draw_right(w, 0, cols, buf, bd_role_attr(prole));
    snprintf(buf, sizeof(buf), " run %s  %s  %s", run->task_class,
             run->run_id[0] ? run->run_id : "", run->isolation);
    bd_draw_text(w, 0, 0, rx, buf, bd_role_attr(BD_R_TITLE), false);

    /* Progress. */
    size_t total = run->n;
    double frac = total ? (double)run->done / (double)total : 0;
    snprintf(buf, sizeof(buf), " %zu/%zu %3.0f%%", run->done, total, 100.0 * frac);
    int bw = cols - 2 - bd_text_width(buf);
    bd_draw_bar(w, 1, 1, bw, frac, BD_R_BAR_FILL, BD_R_BAR_EMPTY);
    bd_draw_text(w, 1, 1 + bw, cols - 1 - bw, buf, A_BOLD, false);
    uint64_t end = run->phase == BD_UR_FINISHED || run->phase == BD_UR_FAILED ? run->t_end_ms : now;
    if (!end)
        end = now;
    long long elapsed = (long long)(end - run->t_start_ms);
    char el[32], eta[32] = "-";
    bd_human_ms(el, sizeof(el), elapsed);
    if (run->phase == BD_UR_RUNNING && run->done && run->done < total)
        bd_human_ms(eta, sizeof(eta),
                    (long long)((double)elapsed / (double)run->done * (double)(total - run->done)));
    else if (run->phase == BD_UR_FINISHED && !run->cancelled && run->error.code == BD_OK)
        snprintf(eta, sizeof(eta), "done");
    size_t queued = total > run->done + run->running ? total - run->done - run->running : 0;
    int x = 1;
    snprintf(buf, sizeof(buf), "passed %zu", run->passed);
    x += bd_draw_text(w, 2, x, cols - x, buf, bd_role_attr(BD_R_OK), false) + 2;
    snprintf(buf, sizeof(buf), "failed %zu", run->failed);
    x += bd_draw_text(w, 2, x, cols - x, buf, run->failed ? bd_role_attr(BD_R_FAIL) : A_NORMAL,
                      false) +
         2;
    snprintf(buf, sizeof(buf), "running %zu  queued %zu   elapsed %s  ETA %s", run->running, queued,
             el, eta);
    bd_draw_text(w, 2, x, cols - x, buf, A_NORMAL, false);

    int idw = cols - 1 - 2 - 8 - 7 - 9 - 22;
    if (idw < 20)
        idw = 20;
    snprintf(buf, sizeof(buf), "   %-*s %-8s%-7s%-9s%s", idw, "CASE", "STATE", "SCORE", "TIME",
             "FAILURE");
    bd_draw_text(w, 3, 0, cols, buf, bd_role_attr(BD_R_TITLE), true);
    int list_h = rows - 5;
    bd_list_scroll(&s->list, list_h);
    for (int i = 0; i < list_h; i++) {
        size_t vi = s->list.top + (size_t)i;
        if (vi >= s->list.n_vis)
            break;
        draw_row(v, w, 4 + i, s->list.vis[vi], vi == s->list.cursor);
    }
    if (run->phase == BD_UR_PREPARING)
        bd_draw_text(w, 4, 3, cols - 3,
                     "checking the chain, the rubric, every case and cassette against their "
                     "pins...",
                     bd_role_attr(BD_R_MUTED), false);
    else if (!s->list.n_vis && s->failed_only)
        bd_draw_text(w, 4, 3, cols - 3, "no failed case (f shows all)", bd_role_attr(BD_R_MUTED),
                     false);

    /* Footer: the error, or the summary once finished. */
    char foot[1400] = "";
    bd_role fr = BD_R_MUTED;
    if (run->error.code != BD_OK) {
        snprintf(foot, sizeof(foot), "%s%s: %s", prov_refusal(run) ? "d runs with drafts  " : "",
                 bd_code_str(run->error.code), run->error.msg);
        fr = BD_R_FAIL;
    } else if (run->phase == BD_UR_FINISHED && run->has_mean) {
        int n = snprintf(foot, sizeof(foot), "mean %.3f", run->mean);
        if (run->has_ci)
            n += snprintf(foot + n, sizeof(foot) - (size_t)n, " [%.3f, %.3f]", run->ci_lo,
                          run->ci_hi);
        n += snprintf(foot + n, sizeof(foot) - (size_t)n, "  pass %.0f%%", 100.0 * run->pass_rate);
        if (run->chain_head[0])
            snprintf(foot + n, sizeof(foot) - (size_t)n, "  chain head %.12s%s", run->chain_head,
                     bd_gl->ellipsis);
        fr = run->failed ? BD_R_WARN : BD_R_OK;
    }
    bd_draw_text(w, rows - 1, 1, cols - 1, foot, bd_role_attr(fr), false);
    bd_view_draw_filter_note(v, w, &s->list);
}

/* The result provider: the run's finished cases. */
static size_t prov_count(void *payload)
{
    bd_view *v = payload;
    run_view *s = v->state;
    return s->list.n_vis;
}

static bool prov_get(void *payload, size_t i, bd_result_src *out)
{
    bd_view *v = payload;
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    if (!run || i >= s->list.n_vis)
        return false;
    const bd_ur_case *c = &run->cases[s->list.vis[i]];
    if (c->state != BD_UR_DONE || !c->has_score)
        return false;
    memset(out, 0, sizeof(*out));
    out->run_id = run->run_id;
    out->task_class = run->task_class;
    out->case_id = c->id;
    out->score = &c->score;
    out->stderr_tail = c->stderr_tail ? c->stderr_tail : "";
    out->stderr_len = c->stderr_len;
    out->seq = c->seq;
    out->record_hash = c->record_hash;
    out->isolation = run->isolation;
    out->started_at = c->started_at;
    out->finished_at = c->finished_at;
    out->case_digest = c->case_digest;
    /* The records of this run carry it: without it a fresh result would look stale. */
    out->task_class_digest = run->task_class_digest[0] ? run->task_class_digest : NULL;
    out->wall_ms = c->wall_ms;
    return true;
}

static void prov_follow(void *payload, size_t i)
{
    bd_view *v = payload;
    run_view *s = v->state;
    if (i < s->list.n_vis)
        s->list.cursor = i;
}

static void open_result(bd_view *v, size_t vis_index)
{
    bd_result_arg arg = {{prov_count, prov_get, prov_follow, v}, vis_index};
    bd_result_src src;
    if (!prov_get(v, vis_index, &src)) {
        bd_app_message(v->app, BD_MSG_INFO, "this case has not finished yet");
        return;
    }
    bd_app_push(v->app, &bd_view_result, &arg);
}

/* Move the cursor to the next/previous failed case and open it. */
static void walk(bd_view *v, int dir)
{
    run_view *s = v->state;
    size_t n = s->list.n_vis;
    for (size_t k = 1; k <= n; k++) {
        size_t i = dir > 0 ? (s->list.cursor + k) % n : (s->list.cursor + n - k % n) % n;
        bd_result_src src;
        if (prov_get(v, i, &src) && !src.score->passed) {
            s->list.cursor = i;
            open_result(v, i);
            return;
        }
    }
    bd_app_message(v->app, BD_MSG_INFO, "no failed case (yet)");
}

/* Run the same selection again (the new run replaces this view). */
static void rerun(bd_view *v, bool drafts)
{
    bd_ui_run *run = run_of(v);
    if (run->phase == BD_UR_PREPARING || run->phase == BD_UR_RUNNING) {
        bd_app_message(v->app, BD_MSG_WARN, "this run is still going: c cancels it");
        return;
    }
    /* By name: a reload since the run may have renumbered the task classes. */
    size_t tc = bd_model_find_tc(v->app->model, run->task_class), n = run->n_ids;
    if (tc == SIZE_MAX) {
        bd_app_message(v->app, BD_MSG_WARN, "task class '%s' is no longer in the bench",
                       run->task_class);
        return;
    }
    char **ids = run->ids;
    run->ids = NULL;
    run->n_ids = 0;
    start(v->app, tc, (const char *const *)ids, n, drafts);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

void bd_run_view_concern(bd_view *v, const char *what, bool is_key)
{
    run_view *s = v->state;
    snprintf(s->concern, sizeof(s->concern), "%s", what ? what : "");
    s->concern_is_key = is_key;
    rebuild(v);
    s->list.cursor = 0;
    s->list.top = 0;
    bd_app_message(v->app, BD_MSG_INFO, "%zu case%s %s %s; Esc shows every case", s->list.n_vis,
                   s->list.n_vis == 1 ? "" : "s", is_key ? "scored below 1 on" : "reported", what);
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    if (bd_list_move(&s->list, a))
        return true;
    switch (a) {
    case BD_A_OPEN:
        if (s->list.n_vis)
            open_result(v, s->list.cursor);
        return true;
    case BD_A_CANCEL:
        bd_ui_run_cancel(v->app);
        return true;
    case BD_A_NEXT_FAIL:
        walk(v, 1);
        return true;
    case BD_A_PREV_FAIL:
        walk(v, -1);
        return true;
    case BD_A_FAILED_ONLY:
        s->failed_only = !s->failed_only;
        rebuild(v);
        return true;
    case BD_A_FILTER:
        bd_view_filter_prompt(v, &s->list, rebuild);
        return true;
    case BD_A_BREAKDOWN:
        bd_app_push(v->app, &bd_view_breakdown, v);
        return true;
    case BD_A_ESCAPE:
        if (!s->concern[0])
            return false;
        s->concern[0] = '\0';
        rebuild(v);
        bd_app_message(v->app, BD_MSG_INFO, "showing every case again");
        return true;
    case BD_A_RUN:
        rerun(v, run->drafts);
        return true; /* v may be gone: the new run replaced this view */
    case BD_A_DRAFTS: {
        /* After a refusal of unsigned cases, or after a run that skipped some. */
        bool skipped = !run->drafts && run->plan.skipped_draft + run->plan.skipped_awaiting > 0;
        if (skipped && bd_ui_run_active(v->app))
            bd_app_message(v->app, BD_MSG_INFO,
                           "d runs again with drafts once this run is over (c cancels it)");
        else if (prov_refusal(run) || skipped)
            rerun(v, true);
        else
            bd_app_message(v->app, BD_MSG_INFO,
                           "d runs again with drafts after a run that refused or skipped "
                           "unsigned cases");
        return true;
    }
    case BD_A_HISTORY:
        bd_app_open_history(v->app, run->task_class, NULL);
        return true;
    case BD_A_COMPARE: /* this run against the previous full run */
        if (run->phase != BD_UR_FINISHED || !run->run_id[0] || !run->done)
            bd_app_message(v->app, BD_MSG_INFO,
                           "= compares a finished run with the previous "
                           "full run");
        else
            bd_app_open_compare(v->app, NULL, run->run_id);
        return true;
    default:
        break;
    }
    return false;
}

static void event(bd_view *v, const bd_event *ev)
{
    if (ev->kind == BD_EV_RUN) {
        rebuild(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    } else if (ev->kind == BD_EV_TICK) {
        bd_ui_run *run = run_of(v);
        if (run && (run->phase == BD_UR_RUNNING || run->phase == BD_UR_PREPARING))
            bd_app_invalidate(v->app, BD_DIRTY_BODY); /* spinners, elapsed, ETA */
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)x;
    run_view *s = v->state;
    if (bd_list_mouse(&s->list, ev, y - 4))
        open_result(v, s->list.cursor);
}

static void position(bd_view *v, char *out, size_t cap)
{
    run_view *s = v->state;
    bd_view_list_position(&s->list, out, cap);
}

const bd_view_ops bd_view_run = {
    "run", actions, open_view, draw, key, event, NULL, mouse, position, close_view,
};

void bd_app_open_run_view(bd_app *app)
{
    if (!app->run) {
        bd_app_message(app, BD_MSG_INFO, "no run yet: r runs the selected task class or case");
        return;
    }
    for (bd_view *v = app->top; v; v = v->below)
        if (v->ops == &bd_view_run) {
            while (app->top != v)
                bd_app_pop(app);
            return;
        }
    bd_app_push(app, &bd_view_run, NULL);
}
