/*
 * parfor.c — one job per index on a few threads (parfor.h).
 */
#include "parfor.h"

#include <pthread.h>
#include <stdatomic.h>

#define PARFOR_MAX_THREADS 32

typedef struct parfor_job {
    size_t n;
    int (*fn)(size_t i, void *ctx, bd_err *err);
    void *ctx;
    atomic_size_t next;
    atomic_int failed;
    pthread_mutex_t mu;
    bd_err err;
} parfor_job;

static void *parfor_thread(void *arg)
{
    parfor_job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n || atomic_load(&j->failed))
            break;
        bd_err e = BD_ERR_INIT;
        if (j->fn(i, j->ctx, &e) != 0) {
            pthread_mutex_lock(&j->mu);
            if (!atomic_exchange(&j->failed, 1))
                j->err = e;
            pthread_mutex_unlock(&j->mu);
            break;
        }
    }
    return NULL;
}

int bd_parfor(size_t n, size_t threads, size_t min_parallel,
              int (*fn)(size_t i, void *ctx, bd_err *err), void *ctx, bd_err *err)
{
    parfor_job j = {.n = n, .fn = fn, .ctx = ctx, .err = BD_ERR_INIT};
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);
    pthread_mutex_init(&j.mu, NULL);
    if (threads > PARFOR_MAX_THREADS)
        threads = PARFOR_MAX_THREADS;
    size_t extra = n < min_parallel || threads < 2 ? 0 : threads - 1, started = 0;
    pthread_t th[PARFOR_MAX_THREADS];
    for (; started < extra; started++)
        if (pthread_create(&th[started], NULL, parfor_thread, &j) != 0)
            break;
    parfor_thread(&j); /* this thread works too (and alone when none started) */
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.mu);
    if (atomic_load(&j.failed)) {
        *err = j.err;
        return -1;
    }
    return 0;
}
