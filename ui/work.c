/*
 * work.c — jobs on libuv's thread pool, tracked so the TUI can cancel the queued ones
 * and wait for the running ones before it tears down.
 */
#include <stdatomic.h>

#include "app.h"

static bd_work *in_flight; /* loop thread only */
static size_t n_pending;   /* loop thread only */
static atomic_bool stop_flag;

static void work_cb(uv_work_t *req)
{
    bd_work *w = req->data;
    if (!atomic_load(&stop_flag))
        w->run(w);
}

static void after_cb(uv_work_t *req, int status)
{
    bd_work *w = req->data;
    if (w->prev)
        w->prev->next = w->next;
    else
        in_flight = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    n_pending--;
    /* A job that never started, or started after the stop flag, did not run. */
    bool ran = status == 0 && !atomic_load(&stop_flag);
    w->done(w, ran);
}

int bd_work_queue(bd_app *app, bd_work *w)
{
    w->app = app;
    w->req.data = w;
    w->prev = NULL;
    w->next = in_flight;
    if (uv_queue_work(app->loop, &w->req, work_cb, after_cb) != 0)
        return -1;
    if (in_flight)
        in_flight->prev = w;
    in_flight = w;
    n_pending++;
    return 0;
}

void bd_work_cancel_all(bd_app *app)
{
    (void)app;
    atomic_store(&stop_flag, true);
    /* uv_cancel fails (EBUSY) for jobs already running: they finish and report. */
    for (bd_work *w = in_flight; w; w = w->next)
        uv_cancel((uv_req_t *)&w->req);
}

bool bd_work_stopping(void)
{
    return atomic_load(&stop_flag);
}

size_t bd_work_pending(void)
{
    return n_pending;
}
