/*
 * test_isolation_probe.c — the namespaces probe clones the process, and a clone of a
 * process running other threads can hang for good in libc (src/run/exec.h,
 * bd_isolation_available): once another thread runs, an unprobed namespaces class is
 * reported unavailable with that reason, and the probe is never made. Its own program, so
 * nothing probed before it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "exec.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;

static void *parked(void *arg)
{
    pthread_mutex_lock(&mu);
    while (!go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return arg;
}

static void test_no_clone_while_threads_run(void **state)
{
    (void)state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, parked, NULL), 0);
    char why[512] = "";
    bool ok = bd_isolation_available(BD_ISO_NAMESPACES, why, sizeof(why));
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    assert_false(ok);
    assert_non_null(strstr(why, "already runs threads"));
    /* The answer is kept: asking again, now single-threaded, does not clone either. */
    assert_false(bd_isolation_available(BD_ISO_NAMESPACES, NULL, 0));
    /* The subprocess class needs no probe. */
    assert_true(bd_isolation_available(BD_ISO_SUBPROCESS, NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_clone_while_threads_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
