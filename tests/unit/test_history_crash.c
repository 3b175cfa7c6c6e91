/* Crash safety and concurrency of append: interrupted appends at every step, SIGKILL at
 * random moments, and several writers (threads and processes) at once. */
#include "test_history_util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

/* Crash after the temp file was written and synced, before the rename: the temp file
 * holds a complete, valid record that never became part of the chain. */
static void crash_before_rename(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 4);
    /* what the dead append would have written: record 5, complete */
    th_append(h, "case", 5);
    size_t len;
    char *rec5 = th_read_seq(h, 5, &len);
    th_unlink_name(h, "0000000005.json");
    char p[1024];
    snprintf(p, sizeof(p), "%s/0000000005.json.tmp", bd_history_dir(h));
    th_write(p, rec5, len);
    /* HEAD still says 5 (written after the rename in the real sequence, so a crash before
     * the rename leaves it at 4: restore that) */
    th_unlink_name(h, "HEAD");
    assert_intact(h, 4);
    uint64_t seq;
    char hash[BD_HASH_BUF];
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_head(h, &seq, hash, &err), 0);
    assert_int_equal(seq, 4);
    th_append(h, "case", 6);
    assert_false(th_exists_name(h, "0000000005.json.tmp"));
    assert_intact(h, 5);
    free(rec5);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* Crash in the middle of writing the temp file: a torn prefix. */
static void crash_mid_write(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    char p[1024];
    snprintf(p, sizeof(p), "%s/0000000004.json.tmp", bd_history_dir(h));
    th_write(p, "{\"case_digest\":\"bla", 19);
    assert_intact(h, 3);
    th_append(h, "case", 4);
    assert_intact(h, 4);
    assert_false(th_exists_name(h, "0000000004.json.tmp"));
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* Crash after the rename, before HEAD was updated: HEAD is stale by one record. */
static void crash_after_rename_before_head(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    char p[1024];
    snprintf(p, sizeof(p), "%s/HEAD", bd_history_dir(h));
    size_t len;
    char *old_head = th_read(p, &len);
    th_append(h, "case", 4);
    th_write(p, old_head, len);
    th_append(h, "case", 5); /* must become 5, not a second 4 */
    assert_intact(h, 5);
    free(old_head);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* Crash between link and unlink in the fallback path: both names exist. */
static void crash_between_link_and_unlink(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    size_t len;
    char *rec3 = th_read_seq(h, 3, &len);
    char p[1024];
    snprintf(p, sizeof(p), "%s/0000000003.json.tmp", bd_history_dir(h));
    th_write(p, rec3, len);
    assert_intact(h, 3);
    th_unlink_name(h, "HEAD"); /* force the scan that cleans old strays */
    th_append(h, "case", 4);
    assert_false(th_exists_name(h, "0000000003.json.tmp"));
    assert_intact(h, 4);
    free(rec3);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* File systems without RENAME_NOREPLACE: the link+unlink path appends the same chain. */
static void link_fallback_appends(void **state)
{
    (void)state;
    char *tmp;
    bd_history_test_force_link(true);
    bd_history *h = th_history(&tmp, "case", 5);
    bd_history_test_force_link(false);
    assert_intact(h, 5);
    assert_false(th_exists_name(h, "0000000005.json.tmp"));
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A symlink planted under the next record's name is never followed, replaced or
 * written through: append refuses (chain.tampered) and the link's target stays absent. */
static void planted_symlink_is_never_followed(void **state)
{
    (void)state;
    for (int fallback = 0; fallback < 2; fallback++) {
        char *tmp;
        bd_history *h = th_history(&tmp, "case", 3);
        char p[1024], target[1024];
        th_path(p, sizeof(p), h, 4);
        snprintf(target, sizeof(target), "%s/target", tmp);
        assert_int_equal(symlink(target, p), 0);
        bd_history_score_fields f;
        char cid[32];
        bd_score s;
        th_fields(&f, cid, "x", 1);
        th_score(&s, 1);
        bd_err err = BD_ERR_INIT;
        bd_history_test_force_link(fallback != 0);
        assert_int_equal(bd_history_append_score(h, &f, &s, NULL, NULL, &err), -1);
        bd_history_test_force_link(false);
        assert_int_equal(err.code, BD_E_CHAIN_TAMPERED);
        struct stat st;
        assert_int_equal(lstat(target, &st), -1);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        assert_false(th_exists_name(h, "0000000004.json.tmp"));
        bd_score_free(&s);
        bd_history_free(h);
        th_rmtree(tmp);
        free(tmp);
    }
}

/* A child appends in a loop and is SIGKILLed at a random moment, 50 times. After each
 * kill the chain verifies and holds no partial record; the next append continues it. */
static void sigkill_at_random_moments(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 1);
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", bd_history_dir(h));
    srand((unsigned)time(NULL));
    uint64_t last = 1;
    for (int round = 0; round < 50; round++) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            bd_history *ch = NULL;
            bd_err e = BD_ERR_INIT;
            if (bd_history_open_dir(&ch, dir, BD_HISTORY_READ, &e) != 0)
                _exit(2);
            for (int i = 0;; i++) {
                bd_history_score_fields f;
                char cid[32];
                bd_score s;
                th_fields(&f, cid, "kill", i + 1);
                th_score(&s, i);
                if (bd_history_append_score(ch, &f, &s, NULL, NULL, &e) != 0)
                    _exit(3);
                bd_score_free(&s);
            }
        }
        struct timespec ts = {0, (long)(rand() % 8000) * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status)); /* it was still appending, not failing */
        bd_history_verify_result r;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(th_verify(h, &r, &err), 0);
        assert_true(r.count >= last);
        last = r.count;
        bd_history_verify_result_release(&r);
        th_append(h, "case", round + 2);
        last++;
    }
    assert_intact(h, last);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

#define PER_WRITER 60

/* Two processes appending at once: one linear chain, no seq lost or duplicated. */
static void two_processes_append_at_once(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 0);
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", bd_history_dir(h));
    pid_t pids[2];
    fflush(NULL);
    for (int w = 0; w < 2; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            bd_history *ch = NULL;
            bd_err e = BD_ERR_INIT;
            if (bd_history_open_dir(&ch, dir, BD_HISTORY_READ, &e) != 0)
                _exit(2);
            for (int i = 1; i <= PER_WRITER; i++) {
                bd_history_score_fields f;
                char cid[32];
                bd_score s;
                th_fields(&f, cid, w ? "procb" : "proca", i);
                th_score(&s, i);
                if (bd_history_append_score(ch, &f, &s, NULL, NULL, &e) != 0)
                    _exit(3);
                bd_score_free(&s);
            }
            bd_history_free(ch);
            bd_history_free(h); /* the parent's, inherited: leave a leak checker nothing */
            free(tmp);
            _exit(0);
        }
    }
    for (int w = 0; w < 2; w++) {
        int status;
        assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_intact(h, 2 * PER_WRITER);
    /* every writer's records are all there, each once */
    int seen[2][PER_WRITER + 1] = {{0}};
    for (uint64_t s = 1; s <= 2 * PER_WRITER; s++) {
        bd_history_record r;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_history_read(h, s, &r, &err), 0);
        int w = strncmp(r.case_id, "procb", 5) == 0;
        int i = atoi(r.case_id + 6);
        assert_true(i >= 1 && i <= PER_WRITER);
        seen[w][i]++;
        bd_history_record_release(&r);
    }
    for (int w = 0; w < 2; w++)
        for (int i = 1; i <= PER_WRITER; i++)
            assert_int_equal(seen[w][i], 1);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

typedef struct writer {
    bd_history *h; /* shared handle, or NULL to open its own */
    const char *dir;
    int id;
    int failures;
    uint64_t seqs[PER_WRITER];
} writer;

static void *writer_main(void *arg)
{
    writer *w = arg;
    bd_history *h = w->h;
    bd_err e = BD_ERR_INIT;
    if (!h && bd_history_open_dir(&h, w->dir, BD_HISTORY_READ, &e) != 0) {
        w->failures = PER_WRITER;
        return NULL;
    }
    for (int i = 0; i < PER_WRITER; i++) {
        bd_history_score_fields f;
        char cid[32];
        bd_score s;
        th_fields(&f, cid, "thread", i + 1);
        th_score(&s, i);
        if (bd_history_append_score(h, &f, &s, &w->seqs[i], NULL, &e) != 0)
            w->failures++;
        bd_score_free(&s);
    }
    if (!w->h)
        bd_history_free(h);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Threads of one process, through one shared handle and through their own handles. */
static void threads_append_at_once(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 0);
    writer ws[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        memset(&ws[i], 0, sizeof(ws[i]));
        ws[i].h = i < 2 ? h : NULL;
        ws[i].dir = bd_history_dir(h);
        ws[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, writer_main, &ws[i]), 0);
    }
    uint64_t all[4 * PER_WRITER];
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(ws[i].failures, 0);
        memcpy(all + i * PER_WRITER, ws[i].seqs, sizeof(ws[i].seqs));
    }
    qsort(all, 4 * PER_WRITER, sizeof(all[0]), cmp_u64);
    for (int i = 0; i < 4 * PER_WRITER; i++)
        assert_int_equal(all[i], (uint64_t)i + 1); /* each seq returned exactly once */
    assert_intact(h, 4 * PER_WRITER);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crash_before_rename),
        cmocka_unit_test(crash_mid_write),
        cmocka_unit_test(crash_after_rename_before_head),
        cmocka_unit_test(crash_between_link_and_unlink),
        cmocka_unit_test(link_fallback_appends),
        cmocka_unit_test(planted_symlink_is_never_followed),
        cmocka_unit_test(sigkill_at_random_moments),
        cmocka_unit_test(two_processes_append_at_once),
        cmocka_unit_test(threads_append_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
