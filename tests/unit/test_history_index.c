/* The history's derived index (hindex.h, docs/history.md): built on first use, extended when
 * the chain grew past the head it holds, rebuilt when that head is no longer on the chain,
 * deleted or corrupted -> rebuilt, and never trusted: history log answers exactly as the
 * segments do, and a tampered chain is caught by verify whatever the index says. */
#include "test_history_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <sqlite3.h>

#include "hindex.h"

#define N 40

typedef struct fx {
    char *root;
    bd_history *h;
} fx;

/* Records alternate between two task classes' case names and fail one time in three
 * (th_score), so the filters below select different subsets. */
static void append_n(bd_history *h, int from, int n)
{
    for (int i = from; i < from + n; i++)
        th_append(h, i % 2 ? "odd" : "even", i);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->root = th_tmpdir();
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_open(&f->h, f->root, BD_HISTORY_CREATE, &err), 0);
    append_n(f->h, 1, N);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    bd_history_free(f->h);
    th_rmtree(f->root);
    free(f->root);
    free(f);
    unsetenv("BENCHDESK_NO_INDEX");
    return 0;
}

static void index_path(char *out, size_t size, const fx *f)
{
    snprintf(out, size, "%s/%s/%s", f->root, BD_HINDEX_DIR, BD_HINDEX_FILE);
}

static uint64_t index_head(bd_history *h)
{
    bd_hindex *ix = bd_history_index(h);
    assert_non_null(ix);
    bd_hindex_head ih;
    assert_int_equal(bd_hindex_get_head(ix, &ih), 0);
    bd_hindex_close(ix);
    return ih.seq;
}

static void counts(unsigned *b, unsigned *e)
{
    bd_history_test_index_counts(b, e);
}

/* The seqs history log returns for `o`, as "s1,s2,...;next". */
static void log_seqs(bd_history *h, const bd_history_log_opts *o, char *out, size_t size)
{
    bd_history_record *recs = NULL;
    size_t n = 0;
    uint64_t next = 0;
    bd_err err = BD_ERR_INIT;
    int rc = bd_history_log(h, o, &recs, &n, &next, &err);
    if (rc != 0) {
        snprintf(out, size, "error %s", bd_code_str(err.code));
        return;
    }
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%llu,", (unsigned long long)recs[i].seq);
    if (at < size)
        snprintf(out + at, size - at, ";%llu", (unsigned long long)next);
    bd_history_records_free(recs, n);
}

/* Every filter combination gives the same page through the index as without it. */
static void assert_log_as_segments(bd_history *h)
{
    static const char *const cases[] = {NULL, "odd-003", "even-010", "none"};
    static const char *const fms[] = {NULL, "cve.not_removed", "nope"};
    static const size_t limits[] = {1, 20};
    static const uint64_t befores[] = {0, 17, 1000};
    for (size_t c = 0; c < 4; c++)
        for (size_t m = 0; m < 3; m++)
            for (int failed = 0; failed < 2; failed++)
                for (size_t l = 0; l < 2; l++)
                    for (size_t b = 0; b < 3; b++) {
                        bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
                        o.task_class = c == 3 ? NULL : "vuln-remediation";
                        o.case_id = cases[c];
                        o.failure_mode = fms[m];
                        o.failed_only = failed;
                        o.limit = limits[l];
                        o.before = befores[b];
                        o.run_id = (c + b) % 2 ? "20260512T140000Z-ab12" : NULL;
                        char with[2048], without[2048];
                        unsetenv("BENCHDESK_NO_INDEX");
                        log_seqs(h, &o, with, sizeof(with));
                        setenv("BENCHDESK_NO_INDEX", "1", 1);
                        log_seqs(h, &o, without, sizeof(without));
                        unsetenv("BENCHDESK_NO_INDEX");
                        assert_string_equal(with, without);
                    }
}

static void built_on_first_use(void **state)
{
    fx *f = *state;
    unsigned b0, e0, b1, e1;
    counts(&b0, &e0);
    assert_int_equal(index_head(f->h), N);
    counts(&b1, &e1);
    assert_int_equal(b1, b0 + 1);
    char p[1024];
    index_path(p, sizeof(p), f);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* Current: a second use neither builds nor extends. */
    assert_int_equal(index_head(f->h), N);
    counts(&b0, &e0);
    assert_int_equal(b0, b1);
    assert_int_equal(e0, e1);
    assert_log_as_segments(f->h);
}

static void extended_when_the_chain_grew(void **state)
{
    fx *f = *state;
    unsigned b0, e0, b1, e1;
    assert_int_equal(index_head(f->h), N);
    counts(&b0, &e0);
    append_n(f->h, N + 1, 7);
    assert_int_equal(index_head(f->h), N + 7);
    counts(&b1, &e1);
    assert_int_equal(b1, b0);
    assert_int_equal(e1, e0 + 1);
    assert_log_as_segments(f->h);
}

/* The head the index holds is no longer on the chain: the last record was removed and
 * another appended in its place (same seq, another hash). */
static void rebuilt_when_its_head_is_not_on_the_chain(void **state)
{
    fx *f = *state;
    unsigned b0, e0, b1, e1;
    assert_int_equal(index_head(f->h), N);
    th_lines l = th_lines_load(f->h);
    free(l.line[l.n - 1]);
    l.n--;
    th_lines_store(f->h, &l);
    th_lines_free(&l);
    th_append(f->h, "other", 99); /* seq N again, another record */
    append_n(f->h, N + 1, 2);
    counts(&b0, &e0);
    assert_int_equal(index_head(f->h), N + 2);
    counts(&b1, &e1);
    assert_int_equal(b1, b0 + 1);
    assert_log_as_segments(f->h);
    /* A chain shorter than the index's head: rebuilt too. */
    l = th_lines_load(f->h);
    for (int i = 0; i < 5; i++)
        free(l.line[--l.n]);
    th_lines_store(f->h, &l);
    th_lines_free(&l);
    assert_int_equal(index_head(f->h), N - 3);
    counts(&b0, &e0);
    assert_int_equal(b0, b1 + 1);
    assert_log_as_segments(f->h);
}

static void deleted_is_rebuilt(void **state)
{
    fx *f = *state;
    unsigned b0, e0, b1, e1;
    assert_int_equal(index_head(f->h), N);
    char p[1024];
    index_path(p, sizeof(p), f);
    assert_int_equal(unlink(p), 0);
    counts(&b0, &e0);
    assert_int_equal(index_head(f->h), N);
    counts(&b1, &e1);
    assert_int_equal(b1, b0 + 1);
    assert_log_as_segments(f->h);
}

static void corrupt_file_is_rebuilt(void **state)
{
    fx *f = *state;
    char p[1024];
    index_path(p, sizeof(p), f);
    assert_int_equal(index_head(f->h), N);
    /* Garbage where the file was. */
    th_write(p, "this is not an SQLite database, whatever it once was\n", 53);
    unsigned b0, e0, b1, e1;
    counts(&b0, &e0);
    assert_int_equal(index_head(f->h), N);
    counts(&b1, &e1);
    assert_int_equal(b1, b0 + 1);
    assert_log_as_segments(f->h);
    /* Cut in half, as a crash of the disk under it could leave it. */
    size_t len;
    char *buf = th_read(p, &len);
    th_write(p, buf, len / 2);
    free(buf);
    assert_int_equal(index_head(f->h), N);
    assert_log_as_segments(f->h);
    /* An index whose head names a record that is not where it says: its rows are for
     * another history; rebuilt. */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "UPDATE meta SET v = 5 WHERE k = 'head_seq'", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    counts(&b0, &e0);
    assert_int_equal(index_head(f->h), N);
    counts(&b1, &e1);
    assert_int_equal(b1, b0 + 1);
}

/* The index is current by its head, but a record in the middle was edited so that the
 * places it holds are wrong: log notices and reads the segments; verify names the edit. */
static void tampered_chain_is_caught_whatever_the_index_says(void **state)
{
    fx *f = *state;
    assert_int_equal(index_head(f->h), N);
    th_lines l = th_lines_load(f->h);
    /* Record 12 one byte longer: every later place in the segment moves. */
    char *at = strstr(l.line[11], "\"wall_clock_ms\":");
    assert_non_null(at);
    char edited[4096];
    size_t pre = (size_t)(at - l.line[11]) + strlen("\"wall_clock_ms\":");
    snprintf(edited, sizeof(edited), "%.*s9%s", (int)pre, l.line[11], l.line[11] + pre);
    free(l.line[11]);
    l.line[11] = th_strdup(edited);
    l.len[11] = strlen(edited);
    th_lines_store(f->h, &l);
    th_lines_free(&l);
    assert_log_as_segments(f->h);
    assert_tampered(f->h, BD_CHAIN_EDITED, 12);
    /* The same with an edit that keeps every place: the index still says where records
     * are, log shows the bytes that are there, and verify still names the edit. */
    l = th_lines_load(f->h);
    at = strstr(l.line[20], "\"wall_clock_ms\":10");
    assert_non_null(at);
    at[strlen("\"wall_clock_ms\":10")] = at[strlen("\"wall_clock_ms\":10")] == '2' ? '3' : '2';
    th_lines_store(f->h, &l);
    th_lines_free(&l);
    assert_log_as_segments(f->h);
    assert_tampered(f->h, BD_CHAIN_EDITED, 12);
}

/* A line that is not a record keeps the index out of every query: the slow path reports
 * it, as it did without an index. */
static void a_bad_line_keeps_the_index_out(void **state)
{
    fx *f = *state;
    th_lines l = th_lines_load(f->h);
    free(l.line[30]);
    l.line[30] = th_strdup("{\"not\":\"a record\"}");
    l.len[30] = strlen(l.line[30]);
    th_lines_store(f->h, &l);
    th_lines_free(&l);
    bd_hindex *ix = bd_history_index(f->h);
    assert_non_null(ix);
    assert_true(bd_hindex_has_bad(ix));
    bd_hindex_close(ix);
    assert_log_as_segments(f->h);
}

/* n more records in batches of 100 (one fsync each). */
static void append_batches(bd_history *h, int from, int n)
{
    for (int done = 0; done < n;) {
        bd_history_score_fields f[100];
        char cid[100][32];
        bd_score s[100];
        const bd_score *sp[100];
        int k = n - done < 100 ? n - done : 100;
        for (int i = 0; i < k; i++) {
            th_fields(&f[i], cid[i], (from + done + i) % 2 ? "odd" : "even", from + done + i);
            th_score(&s[i], from + done + i);
            sp[i] = &s[i];
        }
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_history_append_batch(h, f, sp, (size_t)k, NULL, NULL, &err), 0);
        for (int i = 0; i < k; i++)
            bd_score_free(&s[i]);
        done += k;
    }
}

/* A process building or extending the index is SIGKILLed at random moments: whatever it
 * left, the next use gives an index at the chain's head that answers as the segments. */
static void sigkill_while_building(void **state)
{
    fx *f = *state;
    append_batches(f->h, N + 1, 1500);
    uint64_t count = N + 1500;
    char p[1024];
    index_path(p, sizeof(p), f);
    srand((unsigned)time(NULL));
    int killed = 0;
    for (int round = 0; round < 15; round++) {
        if (round % 3 == 0) {
            unlink(p); /* a build from nothing */
        } else {
            append_batches(f->h, (int)count + 1, 200); /* an extension */
            count += 200;
        }
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            bd_hindex *ix = bd_history_index(f->h);
            _exit(ix ? 0 : 3);
        }
        struct timespec ts = {0, (long)(rand() % 60000) * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
            killed++;
        else
            assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(index_head(f->h), count);
    }
    fprintf(stderr, "  %d of 15 index builds killed mid-way\n", killed);
    static const char *const cases[] = {NULL, "odd-1001", "even-2000"};
    for (int c = 0; c < 3; c++) {
        bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
        o.task_class = "vuln-remediation";
        o.case_id = cases[c];
        o.failed_only = c == 2;
        char with[2048], without[2048];
        log_seqs(f->h, &o, with, sizeof(with));
        setenv("BENCHDESK_NO_INDEX", "1", 1);
        log_seqs(f->h, &o, without, sizeof(without));
        unsetenv("BENCHDESK_NO_INDEX");
        assert_string_equal(with, without);
    }
}

/* A handle on a directory (a shard bundle's records) has no index. */
static void no_index_for_a_bare_directory(void **state)
{
    fx *f = *state;
    bd_history *h = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_open_dir(&h, bd_history_dir(f->h), BD_HISTORY_READ, &err), 0);
    assert_null(bd_history_index(h));
    bd_history_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(built_on_first_use, setup, teardown),
        cmocka_unit_test_setup_teardown(extended_when_the_chain_grew, setup, teardown),
        cmocka_unit_test_setup_teardown(rebuilt_when_its_head_is_not_on_the_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(deleted_is_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(corrupt_file_is_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(tampered_chain_is_caught_whatever_the_index_says, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_bad_line_keeps_the_index_out, setup, teardown),
        cmocka_unit_test_setup_teardown(no_index_for_a_bare_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(sigkill_while_building, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
