/*
 * test_runner_record.c — the runner owns recording (docs/runner.md, docs/history.md): group commit
 * (the cases that finish while an append is in flight share the next append), a case is reported
 * only after its record is durable, events stay in causal order, and an append that fails mid-run
 * ends the run with io.error and reports the unrecorded cases as such, never as finished.
 *
 * A bench of 8 trivial cases (tests/fixtures/rubrics/mkbench.py --trivial 8). Like
 * test_runner, this program is its own exec server (exec.c's constructor).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "exec.h"
#include "history.h"
#include "runner.h"

#define N_CASES 8

static char base[] = "/tmp/bd-test-runrec-XXXXXX";
static char root[PATH_MAX], tmproot[PATH_MAX];
static char *python;
static bd_bench *bench;
static bd_task_class *tc;

static int setup(void **st)
{
    (void)st;
    const char *src = getenv("BD_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "test_runner_record: BD_SOURCE_DIR is not set (run through ctest)\n");
        return -1;
    }
    if (!mkdtemp(base))
        return -1;
    snprintf(root, sizeof(root), "%s/bench-root", base);
    snprintf(tmproot, sizeof(tmproot), "%s/tmp", base);
    mkdir(tmproot, 0700);
    bd_err err = BD_ERR_INIT;
    const char *want = getenv("BENCHDESK_PYTHON");
    if (bd_exec_find_program(&python, want && want[0] ? want : "python3", &err) != 0)
        return -1;
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "%s -s %s/tests/fixtures/rubrics/mkbench.py %s --python %s --trivial %d "
             "--only trivial >/dev/null",
             python, src, root, python, N_CASES);
    if (system(cmd) != 0)
        return -1;
    if (bd_bench_open(&bench, root, &err) != 0 || bd_task_class_load(&tc, bench, "trivial", &err))
        return -1;
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    bd_task_class_free(tc);
    bd_bench_free(bench);
    free(python);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- an event log with a clock --------------------------------------------------- */

typedef struct evlog {
    int kinds[128];
    char ids[128][130];
    uint64_t seqs[128];
    size_t n;
    atomic_int finished; /* case.finished so far (read by the unlocking thread) */
    void (*on_first_finished)(void);
} evlog;

static void on_event(const bd_run_event *ev, void *payload)
{
    evlog *l = payload;
    if (l->n < 128) {
        l->kinds[l->n] = (int)ev->kind;
        snprintf(l->ids[l->n], sizeof(l->ids[0]), "%s", ev->case_id ? ev->case_id : "");
        l->seqs[l->n] = ev->result ? ev->result->record_seq : 0;
        l->n++;
    }
    if (ev->kind == BD_RUN_EV_CASE_FINISHED) {
        /* Published only with its record durable. */
        assert_int_equal(strlen(ev->result->record_hash), 64);
        assert_true(ev->result->record_seq > 0);
        if (atomic_fetch_add(&l->finished, 1) == 0 && l->on_first_finished)
            l->on_first_finished();
    }
    if (ev->kind == BD_RUN_EV_CASE_NOT_RECORDED) {
        assert_non_null(ev->error);
        cJSON *j = bd_run_event_json(ev);
        assert_non_null(j);
        assert_string_equal(cJSON_GetObjectItem(j, "event")->valuestring, "case.not_recorded");
        assert_null(cJSON_GetObjectItem(j, "score")); /* no score is published for it */
        cJSON_Delete(j);
    }
}

/* Causal order (docs/runner.md#use-time-integrity-and-leftovers): each case is queued, then
 * started, then finished or not recorded, once; with `jobs` slots, a case's `started` comes when at
 * most jobs-1 other cases are started and not yet reported. */
static void check_causal(const evlog *l, int jobs)
{
    int open = 0;
    for (size_t i = 0; i < l->n; i++) {
        int k = l->kinds[i];
        if (k == BD_RUN_EV_CASE_STARTED) {
            open++;
            assert_true(open <= jobs);
            for (size_t p = 0; p < i; p++) /* queued before, never started twice */
                if (strcmp(l->ids[p], l->ids[i]) == 0)
                    assert_int_equal(l->kinds[p], BD_RUN_EV_CASE_QUEUED);
        } else if (k == BD_RUN_EV_CASE_FINISHED || k == BD_RUN_EV_CASE_NOT_RECORDED) {
            open--;
            bool started = false;
            for (size_t p = 0; p < i; p++)
                started = started || (strcmp(l->ids[p], l->ids[i]) == 0 &&
                                      l->kinds[p] == BD_RUN_EV_CASE_STARTED);
            assert_true(started);
        }
    }
}

static bd_runner *new_runner_window(int jobs, bd_history **h, bool write_files, unsigned window_ms)
{
    bd_runner *r = NULL;
    bd_err err = BD_ERR_INIT;
    bd_runner_opts o = BD_RUNNER_OPTS_INIT;
    o.jobs = jobs;
    o.isolation = BD_ISO_SUBPROCESS;
    o.python = python;
    o.tmp_root = tmproot;
    o.drafts = true;
    o.write_files = write_files;
    assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), 0);
    assert_int_equal(bd_history_open(h, root, BD_HISTORY_CREATE, &err), 0);
    bd_runner_recording rec = {
        .history = *h, .run_full = true, .run_cases = N_CASES, .commit_window_ms = window_ms};
    assert_int_equal(bd_runner_set_recording(r, &rec, &err), 0);
    return r;
}

static bd_runner *new_runner(int jobs, bd_history **h, bool write_files)
{
    return new_runner_window(jobs, h, write_files, 0);
}

static void verify_chain(uint64_t want_count)
{
    bd_history *h = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_open(&h, root, 0, &err), 0);
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    assert_int_equal(bd_history_verify(h, 0, &vr, &err), 0);
    assert_int_equal(vr.reason, BD_CHAIN_OK);
    assert_int_equal(vr.count, want_count);
    bd_history_verify_result_release(&vr);
    bd_history_free(h);
}

static uint64_t history_count(void)
{
    bd_history *h = NULL;
    bd_err err = BD_ERR_INIT;
    uint64_t seq = 0;
    char head[BD_HASH_BUF];
    if (bd_history_open(&h, root, BD_HISTORY_CREATE, &err) != 0 ||
        bd_history_head(h, &seq, head, &err) != 0)
        fail_msg("history head: %s", err.msg);
    bd_history_free(h);
    return seq;
}

/* ---- group commit ----------------------------------------------------------------- */

typedef struct locker {
    int fd;
    evlog *log;
    int finished_before_unlock;
} locker;

/* A recording run of the bench's cases at `jobs`, with a commit window of `window_ms` (0:
 * the default), its events in *log. Returns the runner after its run (its history in *h:
 * both the caller's to free). */
static bd_runner *run_logged(int jobs, unsigned window_ms, evlog *log, bd_history **h)
{
    bd_runner *r = new_runner_window(jobs, h, false, window_ms);
    memset(log, 0, sizeof(*log));
    bd_runner_subscribe(r, on_event, log);
    bd_err err = BD_ERR_INIT;
    if (bd_runner_run(r, &err) != 0)
        fail_msg("run: %s", err.msg);
    return r;
}

/* Reported in record order: each case.finished with the seq after the one before, from
 * `before` + 1 to `before` + N_CASES. */
static void check_seqs(const evlog *log, uint64_t before)
{
    uint64_t last = before;
    for (size_t i = 0; i < log->n; i++)
        if (log->kinds[i] == BD_RUN_EV_CASE_FINISHED) {
            assert_int_equal(log->seqs[i], last + 1);
            last = log->seqs[i];
        }
    assert_int_equal(last, before + N_CASES);
}

/* Hold the history's lock while every case's program runs and ends: the first append
 * waits on it, the other cases finish meanwhile and queue. */
static void *unlock_later(void *arg)
{
    locker *k = arg;
    usleep(2500 * 1000);
    k->finished_before_unlock = atomic_load(&k->log->finished);
    flock(k->fd, LOCK_UN);
    return NULL;
}

static void test_group_commit(void **st)
{
    (void)st;
    uint64_t before = history_count();
    char lock[PATH_MAX + 40];
    snprintf(lock, sizeof(lock), "%s/.benchdesk/history/.lock", root);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);

    bd_history *h = NULL;
    bd_runner *r = new_runner(4, &h, false);
    evlog log;
    memset(&log, 0, sizeof(log));
    bd_runner_subscribe(r, on_event, &log);
    locker k = {fd, &log, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, unlock_later, &k), 0);
    bd_err err = BD_ERR_INIT;
    int rc = bd_runner_run(r, &err);
    pthread_join(t, NULL);
    close(fd);
    if (rc != 0)
        fail_msg("run: %s", err.msg);
    const bd_run_summary *s = bd_runner_summary(r);
    /* Nothing was reported while no record could be written. */
    assert_int_equal(k.finished_before_unlock, 0);
    assert_int_equal(s->cases, N_CASES);
    assert_int_equal(s->records, N_CASES);
    assert_int_equal(s->not_recorded, 0);
    /* The first append carried the first case; those that finished while it waited went
     * together: fewer appends (fsyncs) than records. */
    assert_true(s->appends >= 2);
    assert_true(s->appends < N_CASES);
    fprintf(stderr, "group commit: %zu records in %zu appends\n", s->records, s->appends);
    /* Reported in record order, each with the seq the history gave it. */
    check_seqs(&log, before);
    assert_true(s->has_chain_head);
    check_causal(&log, 4);
    bd_runner_free(r);
    bd_history_free(h);
    verify_chain(before + N_CASES);
}

/* Causal order with more cases than slots and every record going through the worker. */
static void test_event_order(void **st)
{
    (void)st;
    uint64_t before = history_count();
    bd_history *h = NULL;
    evlog log;
    bd_runner *r = run_logged(2, 0, &log, &h);
    check_causal(&log, 2);
    assert_int_equal(log.kinds[0], BD_RUN_EV_STARTED);
    assert_int_equal(log.kinds[log.n - 1], BD_RUN_EV_FINISHED);
    assert_int_equal(bd_runner_summary(r)->records, N_CASES);
    assert_true(bd_runner_summary(r)->appends <= N_CASES);
    bd_runner_free(r);
    bd_history_free(h);
    verify_chain(before + N_CASES);
}

/* ---- the commit window ---------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A window longer than the run: every record waits for the others, and the last case's
 * finish (no case is still to come) sends them all at once, without waiting the window
 * out. One append; one at a time, at --jobs 1 too (a case ends before the next starts). */
static void test_commit_window_holds_until_the_last_case(void **st)
{
    (void)st;
    for (int jobs = 1; jobs <= 2; jobs++) {
        uint64_t before = history_count();
        bd_history *h = NULL;
        evlog log;
        double t0 = now_s();
        bd_runner *r = run_logged(jobs, 600 * 1000, &log, &h);
        assert_true(now_s() - t0 < 300); /* not the window's 600 s */
        const bd_run_summary *s = bd_runner_summary(r);
        assert_int_equal(s->records, N_CASES);
        assert_int_equal(s->appends, 1);
        /* Published together, each with its own seq, in finish order. */
        check_seqs(&log, before);
        check_causal(&log, jobs);
        bd_runner_free(r);
        bd_history_free(h);
        verify_chain(before + N_CASES);
    }
}

/* A window of 1 ms at --jobs 1: it closes long before the next case ends, so each record
 * goes in an append of its own, sent by the window's timer. */
static void test_commit_window_closes(void **st)
{
    (void)st;
    uint64_t before = history_count();
    bd_history *h = NULL;
    evlog log;
    bd_runner *r = run_logged(1, 1, &log, &h);
    const bd_run_summary *s = bd_runner_summary(r);
    assert_int_equal(s->records, N_CASES);
    assert_int_equal(s->appends, N_CASES);
    check_causal(&log, 1);
    bd_runner_free(r);
    bd_history_free(h);
    verify_chain(before + N_CASES);
}

/* ---- an append that fails mid-run ------------------------------------------------- */

static char segment[PATH_MAX + 64];

/* At the first case.finished (its record is durable), cap the file size of this process
 * at the segment's size: the next append's write fails (EFBIG, SIGXFSZ ignored) as a
 * full disk would. */
static void cap_file_size(void)
{
    struct stat sb;
    assert_int_equal(stat(segment, &sb), 0);
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = (rlim_t)sb.st_size;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static void test_append_fails_mid_run(void **st)
{
    (void)st;
    uint64_t before = history_count();
    snprintf(segment, sizeof(segment), "%s/.benchdesk/history/segments/0000000001.jsonl", root);
    signal(SIGXFSZ, SIG_IGN);
    bd_history *h = NULL;
    bd_runner *r = new_runner(1, &h, false);
    evlog log;
    memset(&log, 0, sizeof(log));
    log.on_first_finished = cap_file_size;
    bd_runner_subscribe(r, on_event, &log);
    bd_err err = BD_ERR_INIT;
    int rc = bd_runner_run(r, &err);
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_FSIZE, &rl);
    signal(SIGXFSZ, SIG_DFL);

    assert_int_equal(rc, -1);
    assert_int_equal(err.code, BD_E_IO);
    assert_int_equal(bd_code_exit(err.code), 4);
    const bd_run_summary *s = bd_runner_summary(r);
    assert_true(s->cancelled);
    assert_int_equal(s->cases, 1); /* only the recorded case counts */
    assert_int_equal(s->records, 1);
    assert_true(s->not_recorded >= 1);
    size_t fin = 0, nrec = 0;
    for (size_t i = 0; i < log.n; i++) {
        if (log.kinds[i] == BD_RUN_EV_CASE_FINISHED)
            fin++;
        if (log.kinds[i] == BD_RUN_EV_CASE_NOT_RECORDED) {
            nrec++;
            for (size_t p = 0; p < log.n; p++) /* never also reported finished */
                assert_false(log.kinds[p] == BD_RUN_EV_CASE_FINISHED &&
                             strcmp(log.ids[p], log.ids[i]) == 0);
        }
    }
    assert_int_equal(fin, 1);
    assert_int_equal(nrec, s->not_recorded);
    check_causal(&log, 1);
    fprintf(stderr, "append failure: %s\n", err.msg);
    bd_runner_free(r);
    bd_history_free(h);
    /* The failed append left nothing behind: the chain has exactly the one record. */
    verify_chain(before + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_commit),
        cmocka_unit_test(test_event_order),
        cmocka_unit_test(test_commit_window_holds_until_the_last_case),
        cmocka_unit_test(test_commit_window_closes),
        cmocka_unit_test(test_append_fails_mid_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
