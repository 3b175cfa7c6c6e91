/*
 * test_runner.c — the rubric runner end to end on the fixture bench
 * (tests/fixtures/rubrics/mkbench.py): every adversarial rubric gets its exact failure
 * mode and the run goes on; secrets never surface; nothing is left behind (processes,
 * temp dirs); cancel; startup integrity; the command SUT; events; the summary.
 *
 * Like test_exec, this program is its own exec server (exec.c's constructor).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "exec.h"
#include "history.h"
#include "runner.h"
#include "verify.h"

#define SECRET "sk-bd-test-secret-0123456789"

static char base[] = "/tmp/bd-test-runner-XXXXXX";
static char root[PATH_MAX], state[PATH_MAX], tmproot[PATH_MAX];
static char *python;
static bd_bench *bench;

static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

static int setup(void **st)
{
    (void)st;
    const char *src = getenv("BD_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "test_runner: BD_SOURCE_DIR is not set (run through ctest)\n");
        return -1;
    }
    if (!mkdtemp(base))
        return -1;
    snprintf(root, sizeof(root), "%s/bench-root", base);
    snprintf(state, sizeof(state), "%s/state", base);
    snprintf(tmproot, sizeof(tmproot), "%s/tmp", base);
    mkdir(tmproot, 0700);
    bd_err err = BD_ERR_INIT;
    const char *want = getenv("BENCHDESK_PYTHON");
    if (bd_exec_find_program(&python, want && want[0] ? want : "python3", &err) != 0)
        return -1;
    if (sh("%s -s %s/tests/fixtures/rubrics/mkbench.py %s --state %s --python %s", python, src,
           root, state, python) != 0) {
        fprintf(stderr, "test_runner: mkbench.py failed\n");
        return -1;
    }
    if (bd_bench_open(&bench, root, &err) != 0) {
        fprintf(stderr, "test_runner: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    bd_bench_free(bench);
    free(python);
    sh("chmod -R u+rwx %s 2>/dev/null; rm -rf %s", base, base);
    return 0;
}

static bd_task_class *load_tc(const char *name)
{
    bd_task_class *tc = NULL;
    bd_err err = BD_ERR_INIT;
    if (bd_task_class_load(&tc, bench, name, &err) != 0)
        fail_msg("cannot load %s: %s", name, err.msg);
    return tc;
}

static int dir_entries(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* Processes whose working directory is under the temp root. */
static int procs_in_tmproot(void)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char p[300], cwd[PATH_MAX];
        snprintf(p, sizeof(p), "/proc/%s/cwd", de->d_name);
        ssize_t k = readlink(p, cwd, sizeof(cwd) - 1);
        if (k <= 0)
            continue;
        cwd[k] = '\0';
        if (strncmp(cwd, tmproot, strlen(tmproot)) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static bool pid_alive(int pid)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return false;
    char buf[512];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return rp && rp[2] != 'X';
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(4 << 20);
    size_t n = fread(buf, 1, (4 << 20) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* ---- event log --------------------------------------------------------------------- */

typedef struct evlog {
    char kinds[256];
    char ids[256][130];
    char *err[256]; /* a case.finished event's stderr, copied (the runner frees its own) */
    size_t err_len[256];
    size_t n;
    size_t max_running;
    bool cancel_on_start;
    bd_runner *runner;
} evlog;

static void evlog_release(evlog *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->err[i]);
}

/* The stderr a case.finished event of `id` carried (*len its length), or NULL. */
static const char *evlog_stderr(const evlog *l, const char *id, size_t *len)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->kinds[i] == BD_RUN_EV_CASE_FINISHED && strcmp(l->ids[i], id) == 0) {
            *len = l->err_len[i];
            return l->err[i];
        }
    *len = 0;
    return NULL;
}

static void on_event(const bd_run_event *ev, void *payload)
{
    evlog *l = payload;
    if (l->n < 256) {
        l->kinds[l->n] = (char)ev->kind;
        snprintf(l->ids[l->n], sizeof(l->ids[0]), "%s", ev->case_id ? ev->case_id : "");
        l->err[l->n] = NULL;
        l->err_len[l->n] = 0;
        if (ev->kind == BD_RUN_EV_CASE_FINISHED && ev->result->stderr_len) {
            l->err[l->n] = malloc(ev->result->stderr_len);
            assert_non_null(l->err[l->n]);
            memcpy(l->err[l->n], ev->result->stderr_tail, ev->result->stderr_len);
            l->err_len[l->n] = ev->result->stderr_len;
        }
        l->n++;
    }
    if (ev->running > l->max_running)
        l->max_running = ev->running;
    /* Every --json event (docs/runner.md#fan-out-events-cancel) serialises. */
    cJSON *j = bd_run_event_json(ev);
    if (ev->kind == BD_RUN_EV_CASE_QUEUED)
        assert_null(j);
    else
        assert_non_null(j);
    cJSON_Delete(j);
}

static const bd_case_result *find_result(bd_runner *r, const char *id)
{
    size_t n = 0;
    const bd_case_result *const *res = bd_runner_results(r, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(res[i]->case_id, id) == 0)
            return res[i];
    return NULL;
}

static const char *first_mode(const bd_case_result *res)
{
    return res->score.n_failure_modes ? res->score.failure_modes[0].code : NULL;
}

static const char *first_detail(const bd_case_result *res)
{
    return res->score.n_failure_modes && res->score.failure_modes[0].detail
               ? res->score.failure_modes[0].detail
               : "";
}

static bd_runner_opts opts_for(int jobs)
{
    bd_runner_opts o = BD_RUNNER_OPTS_INIT;
    o.jobs = jobs;
    o.isolation = BD_ISO_SUBPROCESS;
    o.python = python;
    o.tmp_root = tmproot;
    o.drafts = true;
    return o;
}

/* ---- pure functions ---------------------------------------------------------------- */

static void test_classify_precedence(void **st)
{
    (void)st;
    bd_exec_limits lim = BD_EXEC_LIMITS_INIT;
    lim.wall_ms = 2000;
    lim.cpu_s = 2;
    lim.as_bytes = 256ull << 20;
    char d[BD_SCORE_DETAIL_MAX];
    bd_exec_result r;
    char err[] = "Traceback...\nMemoryError\n";

#define RESET()                                                                                    \
    do {                                                                                           \
        memset(&r, 0, sizeof(r));                                                                  \
        r.started = true;                                                                          \
        r.exited = true;                                                                           \
        r.run_wall_us = 100000;                                                                    \
        r.wall_ms = 100;                                                                           \
    } while (0)

    RESET();
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_NONE);
    /* timeout beats everything, including an output cap and a MemoryError */
    RESET();
    r.exited = false;
    r.term_signal = SIGKILL;
    r.timed_out = true;
    r.output_limit = true;
    r.err = err;
    r.err_len = strlen(err);
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_TIMEOUT);
    assert_non_null(strstr(d, "2000 ms limit"));
    /* SIGXCPU after the wall-clock limit had passed: both apply, timeout first */
    RESET();
    r.exited = false;
    r.term_signal = SIGXCPU;
    r.run_wall_us = 2100000;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_TIMEOUT);
    /* ... or a tick short of it (the CPU limit is checked at the kernel's ticks) */
    r.run_wall_us = 1985000;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_TIMEOUT);
    /* SIGXCPU well before it: cpu_limit (beats OOM and output cap) */
    r.run_wall_us = 900000;
    r.output_limit = true;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_CPU_LIMIT);
    /* an unexplained SIGKILL with the CPU spent: the hard CPU limit */
    RESET();
    r.exited = false;
    r.term_signal = SIGKILL;
    r.cpu_us = 1700000; /* 85% of the 2 s limit: tick-sampled CPU reads low */
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_CPU_LIMIT);
    /* ... with little CPU and much memory: the OOM killer */
    r.cpu_us = 1000;
    r.maxrss_kb = 200 * 1024;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_KILLED_OOM);
    /* ... with little of either: a crash */
    r.maxrss_kb = 10 * 1024;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_CRASHED);
    assert_non_null(strstr(d, "SIGKILL"));
    /* MemoryError and a non-zero exit: killed_oom, over malformed */
    RESET();
    r.exit_code = 1;
    r.err = err;
    r.err_len = strlen(err);
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_KILLED_OOM);
    /* ... but exit 0 with "MemoryError" in stderr is just a score to parse */
    r.exit_code = 0;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_NONE);
    /* output cap beats sandbox and crash (the cap kill is ours) */
    RESET();
    r.exited = false;
    r.term_signal = SIGKILL;
    r.killed = true;
    r.output_limit = true;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_OUTPUT_LIMIT);
    RESET();
    r.exited = false;
    r.term_signal = SIGSYS;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_SANDBOX_VIOLATION);
    RESET();
    r.exited = false;
    r.term_signal = SIGSEGV;
    memcpy(r.err_head, "Segfault\n", 9);
    r.err_head_len = 9;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_CRASHED);
    assert_string_equal(d, "killed by SIGSEGV: Segfault");
    RESET();
    r.exited = false;
    r.supervisor_lost = true;
    r.term_signal = SIGKILL;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_CRASHED);
    /* non-zero exit: the first 200 bytes of stderr, one line */
    RESET();
    r.exit_code = 2;
    memset(r.err_head, 'a', sizeof(r.err_head));
    r.err_head[3] = '\n';
    r.err_head_len = sizeof(r.err_head);
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_MALFORMED);
    assert_int_equal(strlen(d), strlen("exit status 2: ") + 200);
    assert_null(strchr(d, '\n'));
    RESET();
    r.exit_code = 5;
    assert_int_equal(bd_runner_classify(&r, &lim, d), BD_HM_MALFORMED);
    assert_string_equal(d, "exit status 5 (no stderr)");
#undef RESET
}

static void test_classify_sut(void **st)
{
    (void)st;
    char d[BD_SCORE_DETAIL_MAX];
    bd_exec_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.setup_error, sizeof(r.setup_error), "exec: No such file or directory");
    assert_int_equal(bd_runner_classify_sut(&r, d), BD_HM_SUT_EXCEPTION);
    assert_non_null(strstr(d, "No such file"));
    r.started = true;
    r.timed_out = true;
    assert_int_equal(bd_runner_classify_sut(&r, d), BD_HM_SUT_TIMEOUT);
    r.timed_out = false;
    r.output_limit = true;
    assert_int_equal(bd_runner_classify_sut(&r, d), BD_HM_SUT_MALFORMED);
    r.output_limit = false;
    r.exited = true;
    r.exit_code = 1;
    assert_int_equal(bd_runner_classify_sut(&r, d), BD_HM_SUT_EXCEPTION);
    r.exit_code = 0;
    assert_int_equal(bd_runner_classify_sut(&r, d), BD_HM_NONE);
    r.exited = false;
    r.term_signal = SIGABRT;
    assert_int_equal(bd_runner_classify_sut(&r, d), BD_HM_SUT_EXCEPTION);
}

static void test_one_line(void **st)
{
    (void)st;
    char out[64];
    bd_runner_one_line(out, 63, "a\nb\tc\x1b[0m\xff\xc3\xa9", 12);
    assert_string_equal(out, "a b c [0m?\xc3\xa9");
    bd_runner_one_line(out, 5, "abcdefgh", 8);
    assert_string_equal(out, "abcde");
    /* a multi-byte character cut at the limit becomes '?' */
    bd_runner_one_line(out, 2, "a\xc3\xa9", 3);
    assert_string_equal(out, "a?");
    bd_runner_one_line(out, 10, "trail\n\n", 7);
    assert_string_equal(out, "trail");
    bd_runner_one_line(out, 10, "", 0);
    assert_string_equal(out, "");
}

static void test_case_limits(void **st)
{
    (void)st;
    bd_registration reg;
    memset(&reg, 0, sizeof(reg));
    reg.rubric_wall_clock_s = 30;
    reg.rubric_memory_mb = 512;
    bd_case c;
    memset(&c, 0, sizeof(c));
    bd_exec_limits l = bd_runner_case_limits(&reg, &c);
    assert_int_equal(l.wall_ms, 30000);
    assert_int_equal(l.cpu_s, 30);
    assert_true(l.as_bytes == 512ull << 20);
    assert_true(l.fsize_bytes == 64ull << 20);
    assert_int_equal(l.nofile, 256);
    assert_int_equal(l.stdout_max, 1024 * 1024);
    assert_int_equal(l.stderr_keep, 64 * 1024);
    c.wall_clock_s = 90;
    c.memory_mb = 2048;
    l = bd_runner_case_limits(&reg, &c);
    assert_int_equal(l.wall_ms, 90000);
    assert_int_equal(l.cpu_s, 90);
    assert_true(l.as_bytes == 2048ull << 20);
    c.wall_clock_s = 1000; /* over the caps */
    c.memory_mb = 9000;
    l = bd_runner_case_limits(&reg, &c);
    assert_int_equal(l.wall_ms, 300000);
    assert_true(l.as_bytes == 4096ull << 20);
    l = bd_runner_case_limits(NULL, NULL);
    assert_int_equal(l.wall_ms, 60000);
    assert_true(l.as_bytes == 1024ull << 20);
}

static void test_new_refusals(void **st)
{
    (void)st;
    bd_task_class *tc = load_tc("trivial");
    bd_runner *r = NULL;
    bd_err err = BD_ERR_INIT;
    bd_runner_opts o = opts_for(1);
    const char *bad[] = {"../etc"};
    assert_int_equal(bd_runner_new(&r, bench, tc, bad, 1, &o, &err), -1);
    assert_int_equal(err.code, BD_E_BAD_ID);
    const char *unknown[] = {"case-9999"};
    assert_int_equal(bd_runner_new(&r, bench, tc, unknown, 1, &o, &err), -1);
    assert_int_equal(err.code, BD_E_UNKNOWN_CASE);
    o.jobs = 5000;
    assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    o = opts_for(1);
    o.python = "python3";
    assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    o = opts_for(1);
    o.run_id = "../../x";
    assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    assert_null(r);
    /* duplicates are run once */
    const char *dup[] = {"case-0001", "case-0000", "case-0001"};
    o = opts_for(0);
    assert_int_equal(bd_runner_new(&r, bench, tc, dup, 3, &o, &err), 0);
    assert_int_equal(bd_runner_summary(r)->cases_selected, 2);
    bd_runner_free(r);
    bd_task_class_free(tc);
}

/* ---- the adversarial run ----------------------------------------------------------- */

typedef struct expect {
    const char *id;
    const char *mode; /* NULL: a valid score that passes */
} expect;

static const expect adversarial[] = {
    {"pass", NULL},
    {"fail-taxonomy", "answer.wrong"},
    {"secret-env", "rubric.malformed_output"},
    {"sleep-forever", "rubric.timeout"},
    {"ignore-sigterm", "rubric.timeout"},
    {"spin-cpu", "rubric.timeout"},
    {"cpu-rlimit", "rubric.cpu_limit"},
    {"alloc-unbounded", "rubric.killed_oom"},
    {"flood-stdout", "rubric.output_limit"},
    {"flood-stderr", NULL},
    {"two-json", "rubric.malformed_output"},
    {"trailing-garbage", "rubric.malformed_output"},
    {"nan", "rubric.malformed_output"},
    {"score-1.5", "rubric.malformed_output"},
    {"confidence-top", "rubric.malformed_output"},
    {"confidence-nested", "rubric.malformed_output"},
    {"nested-breakdown", "rubric.malformed_output"},
    {"unknown-breakdown-key", "rubric.unknown_breakdown_key"},
    {"unknown-failure-mode", "rubric.unknown_failure_mode"},
    {"negative-cost", "rubric.malformed_output"},
    {"empty-output", "rubric.malformed_output"},
    {"exit-nonzero", "rubric.malformed_output"},
    {"die-by-signal", "rubric.crashed"},
    {"sigsys", "rubric.sandbox_violation"},
    {"kill-supervisor", "rubric.crashed"},
    {"invalid-utf8", "rubric.malformed_output"},
    {"close-stdin", NULL},
    {"fork-outlive", NULL},
    {"setsid-escape", NULL},
    {"write-cwd", NULL},
};
#define N_ADV (sizeof(adversarial) / sizeof(adversarial[0]))

static bool harness_mode(const char *code)
{
    return strncmp(code, "rubric.", 7) == 0 || strncmp(code, "sut.", 4) == 0;
}

static void test_adversarial_run(void **st)
{
    (void)st;
    setenv("BENCHDESK_TEST_SECRET", SECRET, 1);
    setenv("ANTHROPIC_API_KEY", SECRET, 1);
    bd_task_class *tc = load_tc("adversarial");
    assert_int_equal(tc->n_cases, N_ADV);
    bd_runner *r = NULL;
    bd_err err = BD_ERR_INIT;
    bd_runner_opts o = opts_for(2);
    assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), 0);
    evlog log;
    memset(&log, 0, sizeof(log));
    assert_int_equal(bd_runner_subscribe(r, on_event, &log), 0);
    if (bd_runner_run(r, &err) != 0)
        fail_msg("run failed: %s: %s", bd_code_str(err.code), err.msg);

    /* Every case has its exact outcome: the run went on after each failure. */
    size_t n = 0;
    bd_runner_results(r, &n);
    assert_int_equal(n, N_ADV);
    size_t passed = 0;
    for (size_t i = 0; i < N_ADV; i++) {
        const bd_case_result *res = find_result(r, adversarial[i].id);
        if (!res)
            fail_msg("no result for %s", adversarial[i].id);
        const char *mode = first_mode(res);
        if (!adversarial[i].mode) {
            if (!res->score.passed)
                fail_msg("%s: expected a pass, got %s: %s", adversarial[i].id, mode ? mode : "-",
                         first_detail(res));
            passed++;
        } else {
            if (!mode || strcmp(mode, adversarial[i].mode) != 0)
                fail_msg("%s: expected %s, got %s: %s", adversarial[i].id, adversarial[i].mode,
                         mode ? mode : "(none)", first_detail(res));
            assert_false(res->score.passed);
            if (harness_mode(mode)) {
                /* harness failures: score 0, block, exactly one mode */
                assert_true(res->score.score == 0.0);
                assert_int_equal(res->score.n_failure_modes, 1);
                assert_int_equal(res->score.failure_modes[0].severity, BD_SEV_BLOCK);
            }
        }
        /* The secret appears nowhere. The run keeps no stderr once its event is out. */
        assert_null(strstr(first_detail(res), SECRET));
        assert_null(res->stderr_tail);
        assert_int_equal(res->stderr_len, 0);
        size_t elen = 0;
        const char *ebuf = evlog_stderr(&log, adversarial[i].id, &elen);
        if (ebuf)
            assert_null(memmem(ebuf, elen, SECRET, strlen(SECRET)));
        assert_true(res->score.wall_clock_ms >= 0);
    }

    /* Specifics. */
    const bd_case_result *res = find_result(r, "pass");
    assert_true(res->score.wall_clock_ms != 999999); /* runner's own measurement */
    assert_int_equal(res->score.n_breakdown, 2);
    res = find_result(r, "fail-taxonomy");
    assert_int_equal(res->score.n_failure_modes, 2);
    assert_int_equal(res->score.failure_modes[0].severity, BD_SEV_BLOCK);
    assert_string_equal(res->score.failure_modes[1].code, "format.sloppy");
    assert_int_equal(res->score.failure_modes[1].severity, BD_SEV_WARN);
    res = find_result(r, "secret-env");
    assert_non_null(strstr(first_detail(res), "exit status 2: "));
    assert_non_null(strstr(first_detail(res), "\"leak\": null"));
    assert_non_null(strstr(first_detail(res),
                           "[\"LANG\", \"PATH\", \"PYTHONHASHSEED\", \"PYTHONIOENCODING\"]"));
    assert_null(strstr(first_detail(res), "BENCHDESK_TEST_SECRET"));
    res = find_result(r, "exit-nonzero");
    assert_string_equal(first_detail(res),
                        "exit status 3: rubric gave up:  [31mred [0m second line");
    for (const char *id = "sleep-forever"; id; id = strcmp(id, "spin-cpu") ? "spin-cpu" : NULL) {
        res = find_result(r, id);
        assert_true(res->score.wall_clock_ms >= 1000);
        assert_true(res->score.wall_clock_ms < 1000 + BD_EXEC_BACKSTOP_MS);
    }
    size_t flood_len = 0;
    const char *flood = evlog_stderr(&log, "flood-stderr", &flood_len);
    assert_non_null(flood);
    assert_int_equal(flood_len, BD_EXEC_STDERR_KEEP);
    assert_memory_equal(flood + flood_len - 13, "END-OF-STDERR", 13);

    /* Descendants that tried to outlive their case are gone. */
    for (const char *id = "fork-outlive"; id;
         id = strcmp(id, "fork-outlive") == 0 ? "setsid-escape" : NULL) {
        char p[PATH_MAX + 40];
        snprintf(p, sizeof(p), "%s/%s.pid", state, id);
        char *pid = slurp(p, NULL);
        assert_non_null(pid);
        assert_true(atoi(pid) > 0);
        assert_false(pid_alive(atoi(pid)));
        free(pid);
    }
    /* The littered cwd is gone; the symlinked / and its files are not. */
    char p[2 * PATH_MAX];
    snprintf(p, sizeof(p), "%s/write-cwd.cwd", state);
    char *cwd = slurp(p, NULL);
    assert_non_null(cwd);
    assert_true(strncmp(cwd, tmproot, strlen(tmproot)) == 0);
    assert_non_null(strstr(cwd, "benchdesk-"));
    assert_non_null(strstr(cwd, "-write-cwd-"));
    struct stat sb;
    assert_int_equal(stat(cwd, &sb), -1);
    assert_int_equal(errno, ENOENT);
    free(cwd);
    assert_int_equal(access("/etc/hostname", F_OK) == 0 || access("/etc/passwd", F_OK) == 0, 1);
    assert_int_equal(dir_entries(tmproot), 0);
    assert_int_equal(procs_in_tmproot(), 0);

    /* Events: run.started, N case.queued, started before finished, run.finished last. */
    assert_int_equal(log.kinds[0], BD_RUN_EV_STARTED);
    for (size_t i = 1; i <= N_ADV; i++)
        assert_int_equal(log.kinds[i], BD_RUN_EV_CASE_QUEUED);
    assert_int_equal(log.kinds[log.n - 1], BD_RUN_EV_FINISHED);
    assert_int_equal(log.n, 2 + 3 * N_ADV);
    for (size_t i = 0; i < log.n; i++) {
        if (log.kinds[i] != BD_RUN_EV_CASE_FINISHED)
            continue;
        bool started = false;
        for (size_t k = 0; k < i; k++)
            if (log.kinds[k] == BD_RUN_EV_CASE_STARTED && strcmp(log.ids[k], log.ids[i]) == 0)
                started = true;
        assert_true(started);
    }
    assert_int_equal(log.max_running, 2);

    /* Summary. */
    const bd_run_summary *s = bd_runner_summary(r);
    assert_int_equal(s->cases, N_ADV);
    assert_int_equal(s->passed, passed);
    assert_int_equal(s->failed, N_ADV - passed);
    assert_false(s->cancelled);
    assert_true(s->has_mean && s->has_ci);
    assert_true(s->ci_lo <= s->mean_score && s->mean_score <= s->ci_hi);
    assert_int_equal(s->isolation, BD_ISO_SUBPROCESS);
    size_t timeouts = 0;
    for (size_t i = 0; i < s->n_failure_modes; i++)
        if (strcmp(s->failure_modes[i].code, "rubric.timeout") == 0)
            timeouts = s->failure_modes[i].count;
    assert_int_equal(timeouts, 3);
    assert_true(s->has_summary_path);
    struct stat fs;
    assert_int_equal(stat(s->summary_path, &fs), 0);
    assert_int_equal(fs.st_mode & 0777, 0600);
    char *text = slurp(s->summary_path, NULL);
    assert_null(strstr(text, SECRET));
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    assert_int_equal(cJSON_GetObjectItem(j, "cases")->valueint, (int)N_ADV);
    assert_string_equal(cJSON_GetObjectItem(j, "isolation_class")->valuestring, "subprocess");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "results")), (int)N_ADV);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "ci95")), 2);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "failure_modes"), "rubric.timeout")->valueint,
        3);
    cJSON_Delete(j);
    free(text);
    /* The reviewer's stderr file. */
    snprintf(p, sizeof(p), "%s/.benchdesk/runs/%s/flood-stderr.stderr", root, s->run_id);
    size_t len = 0;
    text = slurp(p, &len);
    assert_non_null(text);
    assert_int_equal(len, BD_EXEC_STDERR_KEEP);
    free(text);
    snprintf(p, sizeof(p), "%s/.benchdesk/runs/%s/secret-env.stderr", root, s->run_id);
    text = slurp(p, &len);
    assert_non_null(text);
    assert_null(strstr(text, SECRET));
    assert_non_null(strstr(text, "\"leak\": null"));
    free(text);

    bd_runner_free(r);
    evlog_release(&log);
    bd_task_class_free(tc);
    unsetenv("BENCHDESK_TEST_SECRET");
    unsetenv("ANTHROPIC_API_KEY");
}

static void test_crash_and_pass_both_produce_results(void **st)
{
    (void)st;
    bd_task_class *tc = load_tc("adversarial");
    const char *ids[] = {"die-by-signal", "pass"};
    bd_runner *r = NULL;
    bd_err err = BD_ERR_INIT;
    bd_runner_opts o = opts_for(1);
    o.write_files = false;
    assert_int_equal(bd_runner_new(&r, bench, tc, ids, 2, &o, &err), 0);
    assert_int_equal(bd_runner_run(r, &err), 0);
    size_t n = 0;
    const bd_case_result *const *res = bd_runner_results(r, &n);
    assert_int_equal(n, 2);
    assert_string_equal(res[0]->case_id, "die-by-signal");
    assert_string_equal(first_mode(res[0]), "rubric.crashed");
    assert_string_equal(res[1]->case_id, "pass");
    assert_true(res[1]->score.passed);
    assert_false(bd_runner_summary(r)->has_summary_path);
    bd_runner_free(r);
    bd_task_class_free(tc);
}

static void test_sut_command(void **st)
{
    (void)st;
    bd_task_class *tc = load_tc("sut-command");
    bd_runner *r = NULL;
    bd_err err = BD_ERR_INIT;
    bd_runner_opts o = opts_for(2);
    assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), 0);
    if (bd_runner_run(r, &err) != 0)
        fail_msg("run failed: %s", err.msg);
    const bd_case_result *res = find_result(r, "sut-ok");
    if (!res->score.passed)
        fail_msg("sut-ok: %s", first_detail(res));
    res = find_result(r, "sut-timeout");
    assert_string_equal(first_mode(res), "sut.timeout");
    res = find_result(r, "sut-exception");
    assert_string_equal(first_mode(res), "sut.exception");
    assert_non_null(strstr(first_detail(res), "fell over"));
    res = find_result(r, "sut-malformed");
    assert_string_equal(first_mode(res), "sut.malformed_output");
    assert_int_equal(dir_entries(tmproot), 0);
    /* The SUT's output is kept for the reviewer. */
    char p[2 * PATH_MAX];
    snprintf(p, sizeof(p), "%s/.benchdesk/runs/%s/sut-ok.harness_output.json", root,
             bd_runner_summary(r)->run_id);
    char *text = slurp(p, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"answer\": 42"));
    free(text);
    bd_runner_free(r);
    bd_task_class_free(tc);
}

/* ---- cancel ------------------------------------------------------------------------ */

static void cancel_timer(uv_timer_t *t)
{
    evlog *l = t->data;
    bd_runner_cancel(l->runner);
    uv_close((uv_handle_t *)t, NULL);
}

static void test_cancel_mid_run(void **st)
{
    (void)st;
    bd_task_class *tc = load_tc("adversarial");
    const char *ids[] = {"cpu-rlimit", "ignore-sigterm", "pass", "sleep-forever", "spin-cpu"};
    bd_runner *r = NULL;
    bd_err err = BD_ERR_INIT;
    bd_runner_opts o = opts_for(3);
    assert_int_equal(bd_runner_new(&r, bench, tc, ids, 5, &o, &err), 0);
    evlog log;
    memset(&log, 0, sizeof(log));
    log.runner = r;
    bd_runner_subscribe(r, on_event, &log);
    assert_int_equal(bd_runner_prepare(r, &err), 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    t.data = &log;
    uv_timer_start(&t, cancel_timer, 600, 0);
    assert_int_equal(bd_runner_start(r, &loop, &err), 0);
    uint64_t t0 = uv_hrtime();
    uv_run(&loop, UV_RUN_DEFAULT);
    uint64_t ms = (uv_hrtime() - t0) / 1000000u;
    assert_true(bd_runner_finished(r));
    assert_true(ms < 600 + BD_EXEC_BACKSTOP_MS);
    const bd_run_summary *s = bd_runner_summary(r);
    assert_true(s->cancelled);
    /* The three slow cases were running and are not reported. */
    assert_true(s->cases < 5);
    assert_null(find_result(r, "cpu-rlimit"));
    assert_null(find_result(r, "ignore-sigterm"));
    assert_int_equal(log.kinds[log.n - 1], BD_RUN_EV_FINISHED);
    /* Nothing left behind. */
    assert_int_equal(dir_entries(tmproot), 0);
    assert_int_equal(procs_in_tmproot(), 0);
    assert_null(bd_runner_error(r));
    bd_runner_free(r);
    evlog_release(&log);
    assert_int_equal(uv_loop_close(&loop), 0);
    bd_task_class_free(tc);
}

/* ---- startup integrity ------------------------------------------------------------- */

/* A bench of its own with the `trivial` task class alone, at <base>/<name> (path in `alt`),
 * and a temp root for its runs (in `alt_tmp`); opened. */
static bd_bench *own_bench(const char *name, char alt[PATH_MAX + 20], char alt_tmp[PATH_MAX + 20])
{
    snprintf(alt, PATH_MAX + 20, "%s/%s", base, name);
    snprintf(alt_tmp, PATH_MAX + 20, "%s/%s-tmp", base, name);
    mkdir(alt_tmp, 0700);
    assert_int_equal(sh("%s -s %s/tests/fixtures/rubrics/mkbench.py %s --only trivial", python,
                        getenv("BD_SOURCE_DIR"), alt),
                     0);
    bd_bench *b = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bench_open(&b, alt, &err), 0);
    return b;
}

static void test_integrity_before_any_spawn(void **st)
{
    (void)st;
    char alt[PATH_MAX + 20], alt_tmp[PATH_MAX + 20];
    bd_bench *b = own_bench("tampered", alt, alt_tmp);
    bd_err err = BD_ERR_INIT;

    struct {
        const char *cmd;
        bd_code code;
    } tamper[] = {
        {"echo tampered >> %s/bench/trivial/cases/case-0001/input/prompt.txt",
         BD_E_DIGEST_MISMATCH},
        {"echo '# tampered' >> %s/bench/trivial/rubric.py", BD_E_TC_DIGEST_MISMATCH},
        {"sed -i 's/silver: 0.80/silver: 0.10/' %s/bench/trivial/registration.yaml",
         BD_E_TC_DIGEST_MISMATCH},
        {"sed -i 's/^title: .*/title: \"edited\"/' %s/bench/trivial/cases/case-0001/case.yaml",
         BD_E_DIGEST_MISMATCH},
        /* case.yaml is inside the case digest (and `pin` rewrites cassette_digest to
         * fit), so a cassette digest that does not fit its cassette gets past the pin
         * only with a pin written by hand (the independent reference computes it). */
        {"cd %s && sed -i 's/^cassette_digest: blake3:./cassette_digest: blake3:0/' "
         "bench/trivial/cases/case-0002/case.yaml && "
         "d=$(python3 \"$BD_SOURCE_DIR/tests/kat/case_digest.py\" "
         "bench/trivial/cases/case-0002) && "
         "sed -i \"s|^  case-0002: .*|  case-0002: $d|\" bench/trivial/cases/digests.yaml",
         BD_E_CASSETTE_DIGEST_MISMATCH},
    };
    for (size_t i = 0; i < sizeof(tamper) / sizeof(tamper[0]); i++) {
        if (i > 0) /* undo the previous tamper by rebuilding */
            assert_int_equal(sh("rm -rf %s && %s -s %s/tests/fixtures/rubrics/mkbench.py %s "
                                "--only trivial",
                                alt, python, getenv("BD_SOURCE_DIR"), alt),
                             0);
        assert_int_equal(sh(tamper[i].cmd, alt), 0);
        bd_task_class *tc = NULL;
        assert_int_equal(bd_task_class_load(&tc, b, "trivial", &err), 0);
        bd_runner *r = NULL;
        bd_runner_opts o = opts_for(2);
        o.tmp_root = alt_tmp;
        assert_int_equal(bd_runner_new(&r, b, tc, NULL, 0, &o, &err), 0);
        bd_err_clear(&err);
        assert_int_equal(bd_runner_run(r, &err), -1);
        if (err.code != tamper[i].code)
            fail_msg("tamper %zu: wanted %s, got %s: %s", i, bd_code_str(tamper[i].code),
                     bd_code_str(err.code), err.msg);
        assert_int_equal(bd_code_exit(err.code), 1);
        assert_false(bd_runner_finished(r));
        assert_int_equal(bd_runner_summary(r)->cases, 0);
        bd_runner_free(r);
        bd_task_class_free(tc);
        /* Nothing ran: no temp dir was made, no summary written. */
        assert_int_equal(dir_entries(alt_tmp), 0);
        char runs[PATH_MAX + 40];
        snprintf(runs, sizeof(runs), "%s/.benchdesk/runs", alt);
        assert_int_equal(dir_entries(runs), -1);
    }
    bd_bench_free(b);
}

/* ---- the run gate's checks handed over --------------------------------------------- */

static void take_check(bd_case_check *c, void *payload)
{
    bd_runner_take_check(payload, c);
}

/* A runner given every case's check (as the run gate gives them) does not read the cases
 * again when it prepares: a case edited after its check passes prepare, and is caught
 * when its bytes are handed to the rubric (the use-time digest). Given only some, prepare
 * checks every case itself and refuses the edited one. */
static void test_checks_handed_over(void **st)
{
    (void)st;
    char alt[PATH_MAX + 20], alt_tmp[PATH_MAX + 20];
    bd_bench *b = own_bench("handover", alt, alt_tmp);
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = NULL;
    assert_int_equal(bd_task_class_load(&tc, b, "trivial", &err), 0);
    assert_true(tc->n_cases >= 2);
    for (int all = 1; all >= 0; all--) {
        bd_runner *r = NULL;
        bd_runner_opts o = opts_for(1);
        o.tmp_root = alt_tmp;
        assert_int_equal(bd_runner_new(&r, b, tc, NULL, 0, &o, &err), 0);
        /* Every case's check, or all but the last one's. */
        bd_verify_report rep;
        bd_verify_sink sink = {.on_case = take_check, .payload = r};
        bd_verify_opts vo = {.case_ids = (const char *const *)tc->case_ids,
                             .n_case_ids = all ? tc->n_cases : tc->n_cases - 1};
        assert_int_equal(bd_verify(&rep, tc, &vo, &sink, &err), 0);
        bd_verify_report_release(&rep);
        assert_int_equal(sh("cp -a %s/bench/trivial/cases/case-0001/input/prompt.txt %s/saved && "
                            "echo edited >> %s/bench/trivial/cases/case-0001/input/prompt.txt",
                            alt, base, alt),
                         0);
        bd_err_clear(&err);
        if (all) {
            assert_int_equal(bd_runner_prepare(r, &err), 0);
            assert_int_equal(bd_runner_run(r, &err), -1);
        } else {
            assert_int_equal(bd_runner_prepare(r, &err), -1);
        }
        if (err.code != BD_E_DIGEST_MISMATCH)
            fail_msg("wanted case.digest_mismatch, got %s: %s", bd_code_str(err.code), err.msg);
        assert_true(strstr(err.msg, "case-0001") || strstr(err.file, "case-0001"));
        bd_runner_free(r);
        assert_int_equal(
            sh("cp -a %s/saved %s/bench/trivial/cases/case-0001/input/prompt.txt", base, alt), 0);
    }
    bd_task_class_free(tc);
    bd_bench_free(b);
}

/* ---- recorder and JSON ------------------------------------------------------------- */

static char last_finished_json[4096];

static void capture_json(const bd_run_event *ev, void *payload)
{
    (void)payload;
    if (ev->kind != BD_RUN_EV_CASE_FINISHED && ev->kind != BD_RUN_EV_FINISHED)
        return;
    cJSON *j = bd_run_event_json(ev);
    char *s = cJSON_PrintUnformatted(j);
    snprintf(last_finished_json, sizeof(last_finished_json), "%s", s);
    free(s);
    cJSON_Delete(j);
}

static void test_recorder_and_json(void **st)
{
    (void)st;
    bd_task_class *tc = load_tc("trivial");
    bd_runner *r = NULL;
    bd_err err = BD_ERR_INIT;
    bd_runner_opts o = opts_for(1);
    o.run_id = "test-run-1";
    assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), 0);
    /* The runner records into the bench's history (the run gate wires it so). */
    bd_history *h = NULL;
    assert_int_equal(bd_history_open(&h, root, BD_HISTORY_CREATE, &err), 0);
    uint64_t seq0 = 0;
    char head0[BD_HASH_BUF];
    assert_int_equal(bd_history_head(h, &seq0, head0, &err), 0);
    bd_runner_recording rec = {.history = h, .own = true, .run_full = true, .run_cases = 3};
    assert_int_equal(bd_runner_set_recording(r, &rec, &err), 0);
    bd_runner_subscribe(r, capture_json, NULL);
    assert_int_equal(bd_runner_run(r, &err), 0);
    size_t n = 0;
    const bd_case_result *const *res = bd_runner_results(r, &n);
    assert_int_equal(n, 3);
    assert_int_equal(bd_runner_summary(r)->records, 3);
    bd_history *h2 = NULL;
    assert_int_equal(bd_history_open(&h2, root, 0, &err), 0);
    uint64_t seq = 0;
    char head[BD_HASH_BUF];
    assert_int_equal(bd_history_head(h2, &seq, head, &err), 0);
    assert_int_equal(seq, seq0 + 3);
    for (size_t i = 0; i < n; i++) {
        bd_history_record hr;
        assert_int_equal(bd_history_read(h2, res[i]->record_seq, &hr, &err), 0);
        bd_history_record_release(&hr);
        assert_true(res[i]->record_seq > seq0 && res[i]->record_seq <= seq);
    }
    bd_history_free(h2);
    cJSON *j = cJSON_Parse(last_finished_json);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "event")->valuestring, "run.finished");
    cJSON *s = cJSON_GetObjectItem(j, "summary");
    const char *keys[] = {"cases",        "passed",           "failed",    "mean_score",
                          "ci95",         "failure_modes",    "cost_usd",  "wall_ms",
                          "not_recorded", "skipped_unsigned", "chain_head"};
    assert_int_equal(cJSON_GetArraySize(s), 11);
    for (size_t i = 0; i < 11; i++)
        assert_non_null(cJSON_GetObjectItem(s, keys[i]));
    assert_true(cJSON_GetObjectItem(s, "mean_score")->valuedouble == 1.0);
    assert_true(cJSON_GetObjectItem(s, "not_recorded")->valuedouble == 0);
    /* The head moved with every record: the history's head now. */
    assert_string_equal(cJSON_GetObjectItem(s, "chain_head")->valuestring, head);
    cJSON *ci = cJSON_GetObjectItem(s, "ci95");
    assert_true(cJSON_GetArrayItem(ci, 0)->valuedouble == 1.0);
    cJSON_Delete(j);
    char p[PATH_MAX + 40];
    snprintf(p, sizeof(p), "%s/.benchdesk/runs/test-run-1.json", root);
    assert_int_equal(access(p, R_OK), 0);
    bd_runner_free(r);
    bd_task_class_free(tc);
}

static void test_jobs_bound(void **st)
{
    (void)st;
    bd_task_class *tc = load_tc("trivial");
    for (int jobs = 1; jobs <= 3; jobs += 2) {
        bd_runner *r = NULL;
        bd_err err = BD_ERR_INIT;
        bd_runner_opts o = opts_for(jobs);
        o.write_files = false;
        assert_int_equal(bd_runner_new(&r, bench, tc, NULL, 0, &o, &err), 0);
        evlog log;
        memset(&log, 0, sizeof(log));
        bd_runner_subscribe(r, on_event, &log);
        assert_int_equal(bd_runner_run(r, &err), 0);
        assert_int_equal(log.max_running, (size_t)jobs);
        assert_int_equal(bd_runner_summary(r)->passed, 3);
        bd_runner_free(r);
        evlog_release(&log);
    }
    bd_task_class_free(tc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_precedence),
        cmocka_unit_test(test_classify_sut),
        cmocka_unit_test(test_one_line),
        cmocka_unit_test(test_case_limits),
        cmocka_unit_test(test_new_refusals),
        cmocka_unit_test(test_adversarial_run),
        cmocka_unit_test(test_crash_and_pass_both_produce_results),
        cmocka_unit_test(test_sut_command),
        cmocka_unit_test(test_cancel_mid_run),
        cmocka_unit_test(test_integrity_before_any_spawn),
        cmocka_unit_test(test_checks_handed_over),
        cmocka_unit_test(test_recorder_and_json),
        cmocka_unit_test(test_jobs_bound),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
