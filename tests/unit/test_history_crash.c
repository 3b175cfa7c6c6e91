/* Crash safety and concurrency of append: torn lines, group commit, the conversion of a
 * version-1 history, SIGKILL at random moments during single and batch appends, and
 * several writers (threads and processes) at once. */
#include "test_history_util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

/* Append to the last segment's file as a crashed writer would have. */
static void append_raw(bd_history *h, const char *bytes, size_t len)
{
    char p[1024];
    th_lines l = th_lines_load(h);
    th_path(p, sizeof(p), h, l.n ? l.n : 1);
    th_lines_free(&l);
    FILE *f = fopen(p, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

/* A crash in the middle of the write: a torn prefix of record 5 after record 4. It is not
 * a record: verify says so, the head stays 4, and the next append truncates it (and says
 * so) before writing record 5. */
static void crash_mid_write_leaves_a_torn_line(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 4);
    append_raw(h, "{\"case_digest\":\"bla", 19);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(th_verify(h, &r, &err), 0);
    assert_int_equal(r.count, 4);
    assert_true(r.torn_tail);
    bd_history_verify_result_release(&r);
    uint64_t seq;
    char hash[BD_HASH_BUF];
    assert_int_equal(bd_history_head(h, &seq, hash, &err), 0);
    assert_int_equal(seq, 4);
    th_append(h, "case", 5);
    assert_non_null(bd_history_repair_note(h));
    assert_non_null(strstr(bd_history_repair_note(h), "torn"));
    assert_int_equal(th_verify(h, &r, &err), 0);
    assert_int_equal(r.count, 5);
    assert_false(r.torn_tail);
    bd_history_verify_result_release(&r);
    th_append(h, "case", 6);
    assert_null(bd_history_repair_note(h));
    assert_intact(h, 6);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A crash after the whole record was written but before its newline: still torn (it was
 * never reported as appended: its fsync had not returned), never taken for record 5. */
static void crash_before_the_newline(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 5);
    size_t len;
    char *rec5 = th_read_seq(h, 5, &len);
    th_unlink_seq(h, 5);
    append_raw(h, rec5, len);
    assert_intact(h, 4);
    th_append(h, "other", 5);
    bd_history_record rec;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_read(h, 5, &rec, &err), 0);
    assert_non_null(strstr(rec.case_id, "other"));
    bd_history_record_release(&rec);
    assert_intact(h, 5);
    free(rec5);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A batch of records shares one write and one fsync; either all are there or none. */
static void batch_append_is_one_group(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 2);
    bd_history_score_fields f[5];
    bd_score s[5];
    const bd_score *sp[5];
    char cid[5][32];
    for (int i = 0; i < 5; i++) {
        th_fields(&f[i], cid[i], "batch", i + 1);
        th_score(&s[i], i + 1);
        sp[i] = &s[i];
    }
    uint64_t first = 0;
    char hashes[5][BD_HASH_BUF];
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_append_batch(h, f, sp, 5, &first, hashes, &err), 0);
    assert_int_equal(first, 3);
    bd_history_record rec;
    assert_int_equal(bd_history_read(h, 7, &rec, &err), 0);
    assert_string_equal(rec.hash, hashes[4]);
    assert_string_equal(rec.case_id, "batch-005");
    bd_history_record_release(&rec);
    assert_intact(h, 7);
    /* one record out of format refuses the whole batch before anything is written */
    f[3].run_id = "bad run id";
    assert_int_equal(bd_history_append_batch(h, f, sp, 5, &first, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_HISTORY_RECORD_INVALID);
    assert_intact(h, 7);
    for (int i = 0; i < 5; i++)
        bd_score_free(&s[i]);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* Turn a history into the version-1 layout: one <seq>.json per record, no segments. */
static void to_v1(bd_history *h)
{
    th_lines l = th_lines_load(h);
    for (size_t i = 0; i < l.n; i++) {
        char name[16], p[1024];
        bd_history_file_name(name, i + 1);
        snprintf(p, sizeof(p), "%s/%s", bd_history_dir(h), name);
        th_write(p, l.line[i], l.len[i]);
    }
    th_lines_free(&l);
    char p[1024];
    th_path(p, sizeof(p), h, 1);
    unlink(p);
    th_segdir(p, sizeof(p), h);
    assert_int_equal(rmdir(p), 0);
    th_unlink_name(h, "VERIFIED");
}

static bd_history *reopen(bd_history *h)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", bd_history_dir(h));
    bd_history_free(h);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_open_dir(&h, dir, BD_HISTORY_READ, &err), 0);
    return h;
}

/* A version-1 history verifies as it is and is converted on the first append: the
 * record bytes, every hash and the chain head are unchanged; the old files are gone. A
 * leftover segments.tmp from a crashed conversion is replaced. */
static void v1_history_converted_on_first_append(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 7);
    bd_history_verify_result before;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, 0, &before, &err), 0);
    to_v1(h);
    h = reopen(h);
    assert_true(th_exists_name(h, "0000000007.json"));
    bd_history_verify_result r;
    assert_int_equal(th_verify(h, &r, &err), 0);
    assert_int_equal(r.count, 7);
    assert_string_equal(r.head, before.head);
    bd_history_verify_result_release(&r);
    char p[1024];
    snprintf(p, sizeof(p), "%s/segments.tmp", bd_history_dir(h));
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/segments.tmp/0000000001.jsonl", bd_history_dir(h));
    th_write(p, "junk", 4);
    th_append(h, "case", 8);
    assert_false(th_exists_name(h, "0000000001.json"));
    assert_false(th_exists_name(h, "0000000007.json"));
    assert_false(th_exists_name(h, "segments.tmp"));
    assert_true(th_exists_name(h, "segments/0000000001.jsonl"));
    assert_int_equal(th_verify(h, &r, &err), 0);
    assert_int_equal(r.count, 8);
    bd_history_verify_result_release(&r);
    bd_history_record rec;
    assert_int_equal(bd_history_read(h, 7, &rec, &err), 0);
    assert_string_equal(rec.hash, before.head);
    bd_history_record_release(&rec);
    bd_history_verify_result_release(&before);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A broken version-1 history is never converted: the append refuses, nothing moves. */
static void broken_v1_history_is_not_converted(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 5);
    to_v1(h);
    th_unlink_name(h, "0000000003.json");
    h = reopen(h);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(th_append_err(h, &err), -1);
    assert_int_equal(err.code, BD_E_CHAIN_TAMPERED);
    assert_non_null(strstr(err.msg, "not converted"));
    assert_false(th_exists_name(h, "segments"));
    assert_true(th_exists_name(h, "0000000005.json"));
    assert_tampered(h, BD_CHAIN_MISSING, 3);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A symlink planted as the segment is never followed or written through: append refuses
 * (chain.tampered) and the link's target is unchanged. */
static void planted_symlink_is_never_followed(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    char p[1024], target[1024];
    th_path(p, sizeof(p), h, 1);
    snprintf(target, sizeof(target), "%s/target", tmp);
    assert_int_equal(rename(p, target), 0);
    assert_int_equal(symlink(target, p), 0);
    struct stat before, after;
    assert_int_equal(stat(target, &before), 0);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(th_append_err(h, &err), -1);
    assert_int_equal(err.code, BD_E_CHAIN_TAMPERED);
    assert_int_equal(stat(target, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_int_equal(lstat(p, &after), 0);
    assert_true(S_ISLNK(after.st_mode));
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
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
            /* Single records and batches of four (cases finishing at once), in turn. */
            for (int i = 0;; i++) {
                bd_history_score_fields f[4];
                char cid[4][32];
                bd_score s[4];
                const bd_score *sp[4];
                int n = i % 2 ? 4 : 1;
                for (int k = 0; k < n; k++) {
                    th_fields(&f[k], cid[k], "kill", i + 1);
                    th_score(&s[k], i + k);
                    sp[k] = &s[k];
                }
                if (bd_history_append_batch(ch, f, sp, (size_t)n, NULL, NULL, &e) != 0)
                    _exit(3);
                for (int k = 0; k < n; k++)
                    bd_score_free(&s[k]);
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
        if (bd_history_append_score(h, &f, &s, &w->seqs[i], NULL, &e) != 0) {
            fprintf(stderr, "writer %d: %s: %s\n", w->id, bd_code_str(e.code), e.msg);
            w->failures++;
        }
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
        cmocka_unit_test(crash_mid_write_leaves_a_torn_line),
        cmocka_unit_test(crash_before_the_newline),
        cmocka_unit_test(batch_append_is_one_group),
        cmocka_unit_test(v1_history_converted_on_first_append),
        cmocka_unit_test(broken_v1_history_is_not_converted),
        cmocka_unit_test(planted_symlink_is_never_followed),
        cmocka_unit_test(sigkill_at_random_moments),
        cmocka_unit_test(two_processes_append_at_once),
        cmocka_unit_test(threads_append_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
