/*
 * serial.c — a serial worker thread with loop-thread completions (see serial.h).
 */
#include "serial.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct job {
    struct job *next;
    bd_serial_work_fn work;
    bd_serial_done_fn done;
    void *payload;
    int status;
} job;

struct bd_serial {
    uv_async_t async; /* first: the handle's memory is the worker's */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *todo, *todo_tail; /* queued, not started */
    job *done, *done_tail; /* worked, `done` not yet called */
    size_t pending;        /* loop thread only */
    bool stop;
};

static void push(job **head, job **tail, job *j)
{
    j->next = NULL;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}

static job *pop_all(job **head, job **tail)
{
    job *j = *head;
    *head = *tail = NULL;
    return j;
}

static void *worker_main(void *arg)
{
    bd_serial *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->todo && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->todo)
            break; /* stopping and drained */
        job *j = w->todo;
        w->todo = j->next;
        if (!w->todo)
            w->todo_tail = NULL;
        pthread_mutex_unlock(&w->mu);
        j->status = j->work(j->payload);
        pthread_mutex_lock(&w->mu);
        push(&w->done, &w->done_tail, j);
        uv_async_send(&w->async);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Loop thread: call `done` of every finished job, in order. */
static void deliver(bd_serial *w)
{
    pthread_mutex_lock(&w->mu);
    job *j = pop_all(&w->done, &w->done_tail);
    pthread_mutex_unlock(&w->mu);
    while (j) {
        job *next = j->next;
        w->pending--;
        j->done(j->payload, j->status);
        free(j);
        j = next;
    }
}

static void async_cb(uv_async_t *a)
{
    deliver((bd_serial *)a);
}

int bd_serial_new(bd_serial **out, uv_loop_t *loop, bd_err *err)
{
    *out = NULL;
    bd_serial *w = calloc(1, sizeof(*w));
    if (!w)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    if (uv_async_init(loop, &w->async, async_cb) != 0) {
        free(w);
        return bd_err_set(err, BD_E_IO, NULL, 0, 0, "cannot set up the recording worker");
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int e = pthread_create(&w->thread, NULL, worker_main, w);
    if (e != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        uv_close((uv_handle_t *)&w->async, (uv_close_cb)free);
        return bd_err_errno(err, BD_E_IO, e, NULL, "cannot start the recording thread");
    }
    *out = w;
    return 0;
}

int bd_serial_submit(bd_serial *w, bd_serial_work_fn work, bd_serial_done_fn done, void *payload)
{
    job *j = calloc(1, sizeof(*j));
    if (!j)
        return -1;
    j->work = work;
    j->done = done;
    j->payload = payload;
    w->pending++;
    pthread_mutex_lock(&w->mu);
    push(&w->todo, &w->todo_tail, j);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

size_t bd_serial_pending(const bd_serial *w)
{
    return w ? w->pending : 0;
}

static void closed_cb(uv_handle_t *h)
{
    free(h); /* the async handle is the first member: this frees the worker */
}

void bd_serial_close(bd_serial *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    deliver(w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    uv_close((uv_handle_t *)&w->async, closed_cb);
}
