/*
 * test_run_report.c — the run summary file written in pieces (run_report.h,
 * bd_run_summary_write / bd_run_summary_stream) is byte for byte the canonical text of the
 * whole tree (bd_run_summary_file_json), with and without results, a score with every
 * part, a record hash or none; a string that is not UTF-8 falls back to the compact text
 * of the whole tree, as before; extra members of the head (an import's "origin") are kept.
 * And the atomic file behind it (fsutil.h): pieces larger and smaller than its buffer
 * land whole and in order, an abort leaves the target and the directory as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "canon.h"
#include "fsutil.h"
#include "run_report.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/bd-run-report-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    return bd_remove_tree(dir, &err);
}

static char *slurp(const char *path, size_t *len)
{
    char *buf = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_read_file(&buf, len, path, 1 << 26, BD_E_IO, &err), 0);
    return buf;
}

/* Entries in the directory (temp files an abort must not leave). */
static size_t entries(void)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.' || strncmp(e->d_name, BD_TMP_PREFIX, strlen(BD_TMP_PREFIX)) == 0;
    if (d)
        closedir(d);
    return n;
}

static bd_score_breakdown bds[] = {{"accuracy", 0.75}, {"format", 1.0}};

/* n results: every third with a failure mode and detail, every other one recorded. */
static bd_case_result *results(size_t n, const char *detail)
{
    bd_case_result *r = calloc(n ? n : 1, sizeof(*r));
    static bd_score_fm fm = {"answer.wrong", BD_SEV_WARN, NULL};
    for (size_t i = 0; i < n; i++) {
        char *id = malloc(32);
        snprintf(id, 32, "case-%04zu", i);
        r[i].case_id = id;
        r[i].index = i;
        r[i].score.passed = i % 3 != 0;
        r[i].score.score = i % 3 ? 1.0 : 0.1 * (double)(i % 10);
        r[i].score.breakdown = bds;
        r[i].score.n_breakdown = 2;
        if (i % 3 == 0) {
            r[i].score.failure_modes = &fm;
            r[i].score.n_failure_modes = 1;
        }
        r[i].score.cost_usd = 0.0125 * (double)i;
        r[i].wall_ms = (int64_t)(17 + i);
        snprintf(r[i].started_at, sizeof(r[i].started_at), "2026-11-30T12:00:%02zuZ", i % 60);
        snprintf(r[i].finished_at, sizeof(r[i].finished_at), "2026-11-30T12:01:%02zuZ", i % 60);
        snprintf(r[i].case_digest, sizeof(r[i].case_digest), "blake3:%064zx", i);
        if (i % 2)
            snprintf(r[i].record_hash, sizeof(r[i].record_hash), "%064zx", i * 7);
        r[i].provenance_verified = i != 1;
    }
    fm.detail = (char *)detail;
    return r;
}

static void results_free(bd_case_result *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((char *)r[i].case_id);
    free(r);
}

static bd_run_summary summary(void)
{
    bd_run_summary s = {0};
    snprintf(s.run_id, sizeof(s.run_id), "20261130T120000Z-0123abcd");
    snprintf(s.task_class, sizeof(s.task_class), "bulk");
    s.isolation = BD_ISO_NAMESPACES;
    snprintf(s.start, sizeof(s.start), "warm");
    snprintf(s.task_class_digest, sizeof(s.task_class_digest), "blake3:%064d", 7);
    snprintf(s.started_at, sizeof(s.started_at), "2026-11-30T12:00:00Z");
    snprintf(s.finished_at, sizeof(s.finished_at), "2026-11-30T12:09:00Z");
    return s;
}

/* Writes the summary of n results and checks the file against the whole tree's text
 * (canonical, or compact where the tree has none). */
static void check_written(size_t n, const char *detail, bool canonical)
{
    bd_case_result *r = results(n, detail);
    const bd_case_result **p = calloc(n ? n : 1, sizeof(*p));
    for (size_t i = 0; i < n; i++)
        p[i] = &r[i];
    bd_run_summary s = summary();
    s.cases_selected = n;
    bd_run_summary_tally(&s, p, n);
    cJSON *whole = bd_run_summary_file_json(&s, p, n);
    assert_non_null(whole);
    size_t want_len = 0;
    char *want = bd_canon_json(whole, &want_len);
    if (canonical) {
        assert_non_null(want);
    } else {
        assert_null(want);
        want = bd_run_json_text(whole, &want_len);
        assert_non_null(want);
    }
    cJSON_Delete(whole);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_run_summary_write(&s, dir, p, n, &err), 0);
    assert_true(s.has_summary_path);
    size_t got_len = 0;
    char *got = slurp(s.summary_path, &got_len);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    struct stat st;
    assert_int_equal(stat(s.summary_path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(entries(), 1); /* the file, no temp file */
    unlink(s.summary_path);
    free(got);
    free(want);
    bd_run_summary_release(&s);
    free(p);
    results_free(r, n);
}

static void test_summary_streamed_is_the_whole_text(void **state)
{
    (void)state;
    check_written(0, NULL, true);
    check_written(1, "plain", true);
    check_written(7, "quoted \"x\", a tab\t, é and ✓", true);
    check_written(2500, "plain", true); /* many 64 KiB buffers */
}

static void test_summary_not_utf8_falls_back(void **state)
{
    (void)state;
    check_written(5, "bad \xff byte", false);
}

/* A head with a member of its own, as the import of shard bundles adds "origin"; and a
 * head whose text has no canonical form is refused with 1, nothing written. */
static void test_stream_keeps_the_head(void **state)
{
    (void)state;
    size_t n = 4;
    bd_case_result *r = results(n, NULL);
    const bd_case_result *p[4] = {&r[0], &r[1], &r[2], &r[3]};
    bd_run_summary s = summary();
    bd_run_summary_tally(&s, p, n);
    cJSON *head = bd_run_summary_file_head(&s, p, n);
    cJSON *whole = bd_run_summary_file_json(&s, p, n);
    assert_non_null(head);
    assert_non_null(whole);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(head, "results")), 0);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(head, "origin"), "shards", 3);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(whole, "origin"), "shards", 3);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/merged.json", dir);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_run_summary_stream(path, head, p, n, &err), 0);
    size_t want_len = 0, got_len = 0;
    char *want = bd_canon_json(whole, &want_len);
    char *got = slurp(path, &got_len);
    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
    free(got);
    free(want);
    unlink(path);
    cJSON_AddStringToObject(head, "bad", "\xc3"); /* no canonical text */
    assert_int_equal(bd_run_summary_stream(path, head, p, n, &err), 1);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(entries(), 0);
    cJSON_Delete(head);
    cJSON_Delete(whole);
    bd_run_summary_release(&s);
    results_free(r, n);
}

static void test_atomic_file_in_pieces(void **state)
{
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/f", dir);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_write_file_atomic(path, "old\n", 4, 0600, &err), 0);
    /* pieces of 1 byte to 200 KiB, each a byte pattern of its own */
    size_t sizes[] = {1, 100, 65535, 65536, 3, 200000, 7};
    size_t total = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        total += sizes[i];
    char *want = malloc(total), *piece = malloc(200000);
    bd_atomic_file *f;
    assert_int_equal(bd_atomic_file_open(&f, path, NULL, 0640, &err), 0);
    assert_int_equal(entries(), 2); /* the old file, the temp file */
    size_t at = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (size_t k = 0; k < sizes[i]; k++)
            piece[k] = (char)('a' + (i * 7 + k) % 26);
        memcpy(want + at, piece, sizes[i]);
        at += sizes[i];
        assert_int_equal(bd_atomic_file_write(f, piece, sizes[i], &err), 0);
        size_t len = 0;
        char *now = slurp(path, &len); /* untouched until the commit */
        assert_int_equal(len, 4);
        free(now);
    }
    assert_int_equal(bd_atomic_file_commit(f, &err), 0);
    size_t len = 0;
    char *got = slurp(path, &len);
    assert_int_equal(len, total);
    assert_memory_equal(got, want, total);
    free(got);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(entries(), 1);
    /* an abort: the target as it was, no temp file */
    assert_int_equal(bd_atomic_file_open(&f, path, NULL, 0600, &err), 0);
    assert_int_equal(bd_atomic_file_write(f, "new", 3, &err), 0);
    bd_atomic_file_abort(f);
    got = slurp(path, &len);
    assert_int_equal(len, total);
    free(got);
    assert_int_equal(entries(), 1);
    /* a directory that is not there: refused at the open */
    char bad[PATH_MAX + 8];
    snprintf(bad, sizeof(bad), "%s/nope/f", dir);
    assert_int_equal(bd_atomic_file_open(&f, bad, NULL, 0600, &err), -1);
    assert_int_equal(err.code, BD_E_IO);
    unlink(path);
    free(want);
    free(piece);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_summary_streamed_is_the_whole_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary_not_utf8_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_keeps_the_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_atomic_file_in_pieces, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
