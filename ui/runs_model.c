/*
 * runs_model.c — per task class LAST RUN and trend, from the runs of the verified chain,
 * read on libuv's thread pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "runs_model.h"
#include "trend.h"

typedef bd_tc_runs tc_runs;

struct bd_runs_model {
    bd_app *app;
    unsigned gen;
    tc_runs *tcs;
    size_t n;
    void (*changed)(void *payload);
    void *payload;
};

typedef struct runs_job {
    bd_work work;
    bd_runs_model *model;
    unsigned gen;
    char *root;
    tc_runs *tcs;
    size_t n;
} runs_job;

/* The run marked for a comparison: one per process, it outlives reloads. */
static char *marked;

static void tcs_free(tc_runs *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i].tc);
    free(t);
}

static tc_runs *find_tc(tc_runs *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].tc, name) == 0)
            return &t[i];
    return NULL;
}

static void job_run(bd_work *w)
{
    runs_job *j = (runs_job *)w;
    bd_history *h = NULL;
    bd_runs runs;
    bd_err err = BD_ERR_INIT;
    /* A chain that does not verify shows no LAST RUN: the header says why. */
    if (bd_history_open(&h, j->root, BD_HISTORY_READ, &err) < 0)
        return;
    int rc = bd_runs_load_until(&runs, h, bd_work_stopping, &err);
    bd_history_free(h);
    if (rc < 0)
        return;
    for (size_t i = runs.n; i-- > 0 && !bd_work_stopping();) {
        const bd_run *r = &runs.runs[i];
        if (find_tc(j->tcs, j->n, r->task_class))
            continue;
        tc_runs *g = realloc(j->tcs, (j->n + 1) * sizeof(*g));
        if (!g)
            break;
        j->tcs = g;
        tc_runs *t = &j->tcs[j->n];
        memset(t, 0, sizeof(*t));
        if (!(t->tc = strdup(r->task_class)))
            break;
        j->n++;
        if (!r->full)
            bd_run_kind(r, t->partial, sizeof(t->partial));
        bd_trend_point *p = NULL;
        size_t np = 0;
        if (bd_trend(&runs, r->task_class, 0, &p, &np, &err) == 0 && np) {
            const bd_trend_point *last = &p[np - 1];
            t->has_full = true;
            t->mean = last->mean;
            t->pass_rate = last->pass_rate;
            t->cases = last->cases;
            bd_trend_sparkline(p, np, true, t->trend_utf8, sizeof(t->trend_utf8));
            bd_trend_sparkline(p, np, false, t->trend_ascii, sizeof(t->trend_ascii));
        }
        free(p);
    }
    bd_runs_release(&runs);
}

const bd_tc_runs *bd_runs_model_get(const bd_runs_model *m, const char *task_class)
{
    return find_tc(m->tcs, m->n, task_class);
}

static void job_done(bd_work *w, bool ran)
{
    runs_job *j = (runs_job *)w;
    bd_runs_model *m = j->model;
    if (ran && j->gen == m->gen && !m->app->quitting) {
        tcs_free(m->tcs, m->n);
        m->tcs = j->tcs;
        m->n = j->n;
        j->tcs = NULL;
        j->n = 0;
        if (m->changed)
            m->changed(m->payload);
        bd_app_invalidate(m->app, BD_DIRTY_BODY);
    }
    tcs_free(j->tcs, j->n);
    free(j->root);
    free(j);
}

int bd_runs_model_new(bd_runs_model **out, bd_app *app, void (*changed)(void *payload),
                      void *payload)
{
    bd_runs_model *m = calloc(1, sizeof(*m));
    if (!(*out = m))
        return -1;
    m->app = app;
    m->changed = changed;
    m->payload = payload;
    return 0;
}

void bd_runs_model_refresh(bd_runs_model *m)
{
    m->gen++;
    runs_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(m->app->bench->root))) {
        free(j);
        return;
    }
    j->model = m;
    j->gen = m->gen;
    j->work.run = job_run;
    j->work.done = job_done;
    if (bd_work_queue(m->app, &j->work) < 0) {
        free(j->root);
        free(j);
    }
}

void bd_runs_model_free(bd_runs_model *m)
{
    if (!m)
        return;
    tcs_free(m->tcs, m->n);
    free(m);
}

void bd_runs_model_mark(const char *run_id)
{
    free(marked);
    marked = run_id ? strdup(run_id) : NULL;
}

const char *bd_runs_model_marked(void)
{
    return marked;
}
