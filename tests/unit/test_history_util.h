/*
 * test_history_util.h — shared helpers of the history tests: temporary histories, a
 * realistic score, and the byte-level file surgery the tamper tests perform.
 */
#ifndef BD_TEST_HISTORY_UTIL_H
#define BD_TEST_HISTORY_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "canon.h"
#include "history.h"
#include "score.h"

/* A fresh temp directory (caller frees the string; th_rmtree removes it). */
static inline char *th_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof(tmpl), "%s/bd-hist-XXXXXX", base && base[0] ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    char *out = strdup(d);
    assert_non_null(out);
    return out;
}

static inline void th_rmtree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char p[1024];
            if (snprintf(p, sizeof(p), "%s/%s", path, de->d_name) >= (int)sizeof(p))
                continue;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                th_rmtree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

static inline char *th_strdup(const char *s)
{
    char *p = strdup(s);
    assert_non_null(p);
    return p;
}

/* A score with a breakdown and one failure mode; `variant` changes the numbers. */
static inline void th_score(bd_score *s, int variant)
{
    memset(s, 0, sizeof(*s));
    s->passed = variant % 3 != 0;
    s->score = (variant % 7) / 8.0;
    s->n_breakdown = 2;
    s->breakdown = calloc(2, sizeof(*s->breakdown));
    assert_non_null(s->breakdown);
    s->breakdown[0].key = th_strdup("cve_delta");
    s->breakdown[0].value = 0.5;
    s->breakdown[1].key = th_strdup("recipe_match");
    s->breakdown[1].value = variant % 2 ? 1.0 : 0.1;
    s->n_failure_modes = 1;
    s->failure_modes = calloc(1, sizeof(*s->failure_modes));
    assert_non_null(s->failure_modes);
    s->failure_modes[0].code = th_strdup("cve.not_removed");
    s->failure_modes[0].severity = BD_SEV_BLOCK;
    s->failure_modes[0].detail = th_strdup("still reachable via \"axios\" \xc3\xa9\n");
    s->cost_usd = 0.25 * variant;
    s->wall_clock_ms = 1000 + variant;
}

#define TH_DIGEST_A "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TH_DIGEST_B "blake3:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define TH_FPR      "0123456789ABCDEF0123456789ABCDEF01234567"

static inline void th_fields(bd_history_score_fields *f, char case_id[32], const char *prefix,
                             int i)
{
    snprintf(case_id, 32, "%s-%03d", prefix, i);
    memset(f, 0, sizeof(*f));
    f->run_id = "20260512T140000Z-ab12";
    f->task_class = "vuln-remediation";
    f->case_id = case_id;
    f->case_digest = TH_DIGEST_A;
    f->task_class_digest = TH_DIGEST_B;
    f->run_full = true;
    f->run_cases = 1;
    f->cassette_digest = i % 2 ? TH_DIGEST_A : NULL;
    f->harness_version = "0.1.0";
    f->isolation_class = i % 2 ? "namespaces" : "subprocess";
    f->provenance_verified = i % 4 != 0;
    f->operator_fingerprint = i % 3 ? TH_FPR : NULL;
    f->started_at = "2026-05-12T14:00:00Z";
    f->finished_at = "2026-05-12T14:00:01.250Z";
}

/* Append record number i (1-based) of a history whose case ids start with `prefix`. */
static inline void th_append(bd_history *h, const char *prefix, int i)
{
    bd_history_score_fields f;
    char case_id[32];
    bd_score s;
    th_fields(&f, case_id, prefix, i);
    th_score(&s, i);
    bd_err err = BD_ERR_INIT;
    uint64_t seq = 0;
    char hash[BD_HASH_BUF];
    int rc = bd_history_append_score(h, &f, &s, &seq, hash, &err);
    if (rc != 0)
        fprintf(stderr, "append failed: %s: %s\n", bd_code_str(err.code), err.msg);
    assert_int_equal(rc, 0);
    assert_int_not_equal(seq, 0);
    bd_score_free(&s);
}

/* A history of n records in a new temp directory `<tmp>/history`. */
static inline bd_history *th_history(char **tmp_out, const char *prefix, int n)
{
    char *tmp = th_tmpdir();
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/history", tmp);
    bd_history *h = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_open_dir(&h, dir, BD_HISTORY_CREATE, &err), 0);
    for (int i = 1; i <= n; i++)
        th_append(h, prefix, i);
    *tmp_out = tmp;
    return h;
}

static inline void th_path(char *out, size_t size, bd_history *h, uint64_t seq)
{
    char name[16];
    bd_history_file_name(name, seq);
    snprintf(out, size, "%s/%s", bd_history_dir(h), name);
}

static inline char *th_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(4 * 1024 * 1024);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 4 * 1024 * 1024 - 1, f);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static inline void th_write(const char *path, const char *buf, size_t len)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

static inline char *th_read_seq(bd_history *h, uint64_t seq, size_t *len)
{
    char p[1024];
    th_path(p, sizeof(p), h, seq);
    return th_read(p, len);
}

static inline void th_write_seq(bd_history *h, uint64_t seq, const char *buf, size_t len)
{
    char p[1024];
    th_path(p, sizeof(p), h, seq);
    th_write(p, buf, len);
}

/* Record seq's JSON, for forging canonical variants. */
static inline cJSON *th_json_seq(bd_history *h, uint64_t seq)
{
    size_t len;
    char *b = th_read_seq(h, seq, &len);
    cJSON *j = cJSON_ParseWithLength(b, len);
    assert_non_null(j);
    free(b);
    return j;
}

/* Write `j` canonically as record seq. */
static inline void th_write_json_seq(bd_history *h, uint64_t seq, const cJSON *j)
{
    size_t len;
    char *c = bd_canon_json(j, &len);
    assert_non_null(c);
    th_write_seq(h, seq, c, len);
    free(c);
}

static inline void th_rename_seq(bd_history *h, uint64_t from, uint64_t to)
{
    char a[1024], b[1024];
    th_path(a, sizeof(a), h, from);
    th_path(b, sizeof(b), h, to);
    assert_int_equal(rename(a, b), 0);
}

static inline void th_unlink_name(bd_history *h, const char *name)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", bd_history_dir(h), name);
    unlink(p);
}

static inline bool th_exists_name(bd_history *h, const char *name)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", bd_history_dir(h), name);
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Verify and return the result; prints the error for the test log. */
static inline int th_verify(bd_history *h, bd_history_verify_result *r, bd_err *err)
{
    int rc = bd_history_verify(h, 0, r, err);
    if (rc != 0)
        fprintf(stderr, "  verify: %s: %s\n", bd_code_str(err->code), err->msg);
    return rc;
}

#define assert_tampered(h, reason_, seq_)                                                          \
    do {                                                                                           \
        bd_history_verify_result r_;                                                               \
        bd_err e_ = BD_ERR_INIT;                                                                   \
        assert_int_equal(th_verify((h), &r_, &e_), -1);                                            \
        assert_int_equal(e_.code, BD_E_CHAIN_TAMPERED);                                            \
        assert_string_equal(bd_chain_reason_str(r_.reason), bd_chain_reason_str(reason_));         \
        assert_int_equal(r_.bad_seq, (seq_));                                                      \
        bd_history_verify_result_release(&r_);                                                     \
    } while (0)

#define assert_intact(h, count_)                                                                   \
    do {                                                                                           \
        bd_history_verify_result r_;                                                               \
        bd_err e_ = BD_ERR_INIT;                                                                   \
        assert_int_equal(th_verify((h), &r_, &e_), 0);                                             \
        assert_int_equal(r_.reason, BD_CHAIN_OK);                                                  \
        assert_int_equal(r_.count, (count_));                                                      \
        bd_history_verify_result_release(&r_);                                                     \
    } while (0)

#endif
