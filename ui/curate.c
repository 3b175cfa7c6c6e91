/*
 * curate.c — the curator's acts from the TUI (curate.h).
 */
#include "curate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_lint.h"
#include "editor.h"
#include "err_keys.h"
#include "model.h"
#include "pin.h"
#include "repin.h"
#include "session.h"
#include "watch.h"

/* What the open prompt is for (one prompt at a time). */
static struct {
    size_t tc_index;
    char case_id[256]; /* "" for the task class */
} pending;

/* The prompt's text as it is typed: nothing to do until Enter. */
static void typed(bd_view *v, const char *text)
{
    (void)v;
    (void)text;
}

static const char *tc_name(bd_app *app, size_t tc_index)
{
    return tc_index < app->model->n_tcs ? app->model->tcs[tc_index].name : NULL;
}

/* A fresh copy of the task class from disk: the acts below write what it loaded. */
static bd_task_class *fresh_tc(bd_app *app, size_t tc_index)
{
    const char *name = tc_name(app, tc_index);
    bd_task_class *tc = NULL;
    bd_err e = BD_ERR_INIT;
    if (!name || bd_task_class_load_unlisted(&tc, app->bench, name, &e) < 0) {
        if (name)
            bd_app_error(app, &e);
        return NULL;
    }
    return tc;
}

static void new_case_done(bd_view *v, const char *text, bool accepted)
{
    bd_app *app = v->app;
    if (!accepted || !text[0])
        return;
    bd_task_class *tc = fresh_tc(app, pending.tc_index);
    if (!tc)
        return;
    bd_err e = BD_ERR_INIT;
    if (bd_case_scaffold(NULL, tc, text, &e) < 0)
        bd_app_error(app, &e);
    else
        bd_app_message(app, BD_MSG_INFO,
                       "created draft case %s in %s: E opens its files, I pins it once it is "
                       "filled in",
                       text, tc->name);
    bd_task_class_free(tc);
    bd_watch_touch(app->watch);
}

void bd_curate_new_case(bd_view *v, size_t tc_index)
{
    if (!tc_name(v->app, tc_index))
        return;
    pending.tc_index = tc_index;
    pending.case_id[0] = '\0';
    bd_app_message(v->app, BD_MSG_INFO, "the new case's id (a-z 0-9 . _ -), Enter scaffolds it");
    bd_app_prompt(v->app, v, "", typed, new_case_done);
}

static void edit_done(bd_view *v, const char *text, bool accepted)
{
    bd_app *app = v->app;
    const char *name = tc_name(app, pending.tc_index);
    if (!accepted || !name)
        return;
    char base[4096], path[4400];
    if (pending.case_id[0])
        snprintf(base, sizeof(base), "%s/%s/cases/%s", app->bench->bench_dir, name,
                 pending.case_id);
    else
        snprintf(base, sizeof(base), "%s/%s", app->bench->bench_dir, name);
    bd_err e = BD_ERR_INIT;
    if (bd_editor_path(path, sizeof(path), base, text, &e) < 0 ||
        bd_app_foreground_editor(app, path, &e) < 0) {
        bd_app_error(app, &e);
        return;
    }
    bd_app_message(app, BD_MSG_INFO, "edited %s: I pins %s when it is ready", text,
                   pending.case_id[0] ? "the case" : "the task class");
    bd_watch_touch(app->watch);
}

void bd_curate_edit(bd_view *v, size_t tc_index, const char *case_id, const char *initial)
{
    if (!tc_name(v->app, tc_index))
        return;
    pending.tc_index = tc_index;
    snprintf(pending.case_id, sizeof(pending.case_id), "%s", case_id ? case_id : "");
    bd_app_message(v->app, BD_MSG_INFO, "the file to edit, inside the %s; Enter opens $EDITOR",
                   case_id ? "case" : "task class");
    bd_app_prompt(v->app, v, initial, typed, edit_done);
}

/* One line: whose signatures the pin superseded, over every change. */
static void say_pinned(bd_app *app, const bd_pin_report *rep, const char *what)
{
    char who[700] = "";
    size_t n_sup = 0;
    for (size_t i = 0; i < rep->n_changes; i++) {
        const bd_pin_change *c = &rep->changes[i];
        const char *by[2] = {c->author_broken ? c->author_by : NULL,
                             c->reviewer_broken ? c->reviewer_by : NULL};
        for (int k = 0; k < 2; k++)
            if (by[k] && n_sup++ < 4 && strlen(who) + strlen(by[k]) + 3 < sizeof(who))
                snprintf(who + strlen(who), sizeof(who) - strlen(who), "%s%s", who[0] ? ", " : "",
                         by[k]);
    }
    if (!rep->n_changes)
        bd_app_message(app, BD_MSG_INFO, "pinned %s: no pin changed", what);
    else if (n_sup)
        bd_app_message(app, BD_MSG_WARN,
                       "pinned %s (%zu pin%s changed): superseded %zu signature%s (%s%s); two "
                       "people sign again (P)",
                       what, rep->n_changes, rep->n_changes == 1 ? "" : "s", n_sup,
                       n_sup == 1 ? "" : "s", who, n_sup > 4 ? ", ..." : "");
    else
        bd_app_message(app, BD_MSG_INFO, "pinned %s (%zu pin%s changed): sign it next (P)", what,
                       rep->n_changes, rep->n_changes == 1 ? "" : "s");
}

/* pin's warning about an untouched scaffold, over the message when there is one. */
static void warn_scaffold(bd_app *app, const bd_task_class *tc, const bd_pin_report *rep)
{
    bd_lint *l = NULL;
    size_t n = 0;
    if (bd_case_lint_pinned(&l, &n, tc, rep, NULL) == 0 && n)
        bd_app_message(app, BD_MSG_WARN, "%s looks like an untouched scaffold: %s", l[0].case_id,
                       bd_tui_err_text(&l[0].err));
    free(l);
}

/* A pin on the pool: hashing every case of a large task class takes seconds, and the
 * TUI keeps drawing meanwhile. */
typedef struct pin_job {
    bd_work work;
    bd_bench *bench;
    bd_prov_ctx *prov;
    char name[256];
    char case_id[256]; /* "" for every case */
    bd_task_class *tc;
    bd_pin_report rep;
    bd_err err;
    int rc;
} pin_job;

static void pin_run(bd_work *w)
{
    pin_job *j = (pin_job *)w;
    const char *ids[1] = {j->case_id};
    j->rc = -1;
    /* As `benchdesk pin`: every case on disk for the task class, only the named one
     * (without listing the others) for a case. */
    int (*load)(bd_task_class **, const bd_bench *, const char *, bd_err *) =
        j->case_id[0] ? bd_task_class_load_unlisted : bd_task_class_load;
    if (load(&j->tc, j->bench, j->name, &j->err) < 0)
        return;
    j->rc = bd_repin(&j->rep, j->bench, j->tc, j->case_id[0] ? ids : NULL, j->case_id[0] ? 1 : 0,
                     j->prov, &j->err);
}

static void pin_done(bd_work *w, bool ran)
{
    pin_job *j = (pin_job *)w;
    bd_app *app = w->app;
    app->pinning = false;
    char what[600];
    snprintf(what, sizeof(what), "%s%s%s", j->name, j->case_id[0] ? "/" : " (every case)",
             j->case_id);
    if (!ran)
        bd_app_message(app, BD_MSG_WARN, "pin of %s cancelled: nothing was written", what);
    else if (j->rc < 0)
        bd_app_error(app, &j->err);
    else {
        say_pinned(app, &j->rep, what);
        warn_scaffold(app, j->tc, &j->rep);
    }
    bd_pin_report_release(&j->rep);
    bd_task_class_free(j->tc);
    free(j);
    bd_watch_touch(app->watch);
}

void bd_curate_pin(bd_view *v, size_t tc_index, const char *case_id)
{
    bd_app *app = v->app;
    if (bd_ui_run_active(app)) {
        bd_app_message(app, BD_MSG_WARN, "a run is in progress: pin after it finishes");
        return;
    }
    if (app->pinning) {
        bd_app_message(app, BD_MSG_WARN, "a pin is being written: wait for it to finish");
        return;
    }
    const char *name = tc_name(app, tc_index);
    if (!name)
        return;
    pin_job *j = calloc(1, sizeof(*j));
    if (!j) {
        bd_app_message(app, BD_MSG_ERROR, "env.out_of_memory: cannot start the pin");
        return;
    }
    j->bench = app->bench;
    j->prov = app->model->prov;
    j->err = (bd_err)BD_ERR_INIT;
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->case_id, sizeof(j->case_id), "%s", case_id ? case_id : "");
    j->work.run = pin_run;
    j->work.done = pin_done;
    if (bd_work_queue(app, &j->work) < 0) {
        free(j);
        bd_app_message(app, BD_MSG_ERROR, "env.error: cannot queue the pin");
        return;
    }
    app->pinning = true;
    bd_app_message(app, BD_MSG_INFO, "pinning %s%s%s...", name, case_id ? "/" : " (every case)",
                   case_id ? case_id : "");
    bd_app_animate(app);
}
