/*
 * test_serial.c — the serial recording worker: jobs run one at a time in submission
 * order on one thread that is not the loop's, and their completions come back on the
 * loop thread in the same order; close drains what is queued.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "serial.h"

#define N 200

typedef struct {
    int worked[N];
    int n_worked; /* written by the worker only */
    int done[N];
    int n_done; /* loop thread only */
    pthread_t loop_thread;
    pthread_t worker;
    atomic_int running; /* jobs inside `work` at once */
    atomic_int overlap;
    bool wrong_thread;
} state_t;

typedef struct {
    state_t *st;
    int i;
} job_t;

static int work(void *p)
{
    job_t *j = p;
    state_t *st = j->st;
    if (atomic_fetch_add(&st->running, 1) != 0)
        atomic_store(&st->overlap, 1);
    if (pthread_equal(pthread_self(), st->loop_thread))
        st->wrong_thread = true;
    if (st->n_worked == 0)
        st->worker = pthread_self();
    else if (!pthread_equal(st->worker, pthread_self()))
        st->wrong_thread = true;
    st->worked[st->n_worked++] = j->i;
    atomic_fetch_sub(&st->running, 1);
    return j->i % 7 == 0 ? -1 : 0;
}

static void done(void *p, int status)
{
    job_t *j = p;
    state_t *st = j->st;
    if (!pthread_equal(pthread_self(), st->loop_thread))
        st->wrong_thread = true;
    assert_int_equal(status, j->i % 7 == 0 ? -1 : 0);
    st->done[st->n_done++] = j->i;
}

/* A loop, fresh state, and N jobs queued on a new worker. */
static bd_serial *queue_all(uv_loop_t *loop, state_t *st, job_t *jobs)
{
    assert_int_equal(uv_loop_init(loop), 0);
    memset(st, 0, sizeof(*st));
    st->loop_thread = pthread_self();
    bd_serial *w = NULL;
    bd_err e = BD_ERR_INIT;
    assert_int_equal(bd_serial_new(&w, loop, &e), 0);
    for (int i = 0; i < N; i++) {
        jobs[i].st = st;
        jobs[i].i = i;
        assert_int_equal(bd_serial_submit(w, work, done, &jobs[i]), 0);
    }
    return w;
}

static void test_order_threads_and_status(void **state)
{
    (void)state;
    uv_loop_t loop;
    static state_t st;
    static job_t jobs[N];
    bd_serial *w = queue_all(&loop, &st, jobs);
    assert_int_equal(bd_serial_pending(w), N);
    while (bd_serial_pending(w) > 0)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(st.n_done, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(st.worked[i], i);
        assert_int_equal(st.done[i], i);
    }
    assert_false(st.wrong_thread);
    assert_int_equal(atomic_load(&st.overlap), 0);
    bd_serial_close(w);
    uv_run(&loop, UV_RUN_DEFAULT); /* the handle's close */
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_close_drains(void **state)
{
    (void)state;
    uv_loop_t loop;
    static state_t st;
    static job_t jobs[N];
    bd_serial *w = queue_all(&loop, &st, jobs);
    bd_serial_close(w); /* without running the loop: every job runs, every done is called */
    assert_int_equal(st.n_worked, N);
    assert_int_equal(st.n_done, N);
    assert_false(st.wrong_thread);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_threads_and_status),
        cmocka_unit_test(test_close_drains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
