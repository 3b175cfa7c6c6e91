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

/* Try to append the default record ("x", 1) to `h`: returns what bd_history_append_score
 * returned, with its error in *err (for the tests of refused appends). */
static inline int th_append_err(bd_history *h, bd_err *err)
{
    bd_history_score_fields f;
    char case_id[32];
    bd_score s;
    th_fields(&f, case_id, "x", 1);
    th_score(&s, 1);
    int rc = bd_history_append_score(h, &f, &s, NULL, NULL, err);
    bd_score_free(&s);
    return rc;
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

/* ---- segment surgery ----------------------------------------------------------------
 * The history is segments/<first seq>.jsonl, one record per line (docs/history.md). The
 * helpers below load every line of every segment in order, change the list and write
 * the segments back, so a test edits "record at position seq" like an attacker with a
 * text editor would. */

#include "segment.h"

typedef struct th_lines {
    char **line;
    size_t *len;
    size_t n;
} th_lines;

static inline void th_segdir(char *out, size_t size, bd_history *h)
{
    snprintf(out, size, "%s/segments", bd_history_dir(h));
}

/* The path of the segment holding position seq. */
static inline void th_path(char *out, size_t size, bd_history *h, uint64_t seq)
{
    char name[17];
    bd_segment_name(name, seq ? bd_segment_first(seq) : 1);
    snprintf(out, size, "%s/segments/%s", bd_history_dir(h), name);
}

static inline char *th_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)size + 1);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (size_t)size, f);
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

static inline void th_lines_add(th_lines *l, size_t at, const char *b, size_t len)
{
    l->line = realloc(l->line, (l->n + 1) * sizeof(*l->line));
    l->len = realloc(l->len, (l->n + 1) * sizeof(*l->len));
    assert_non_null(l->line);
    assert_non_null(l->len);
    memmove(l->line + at + 1, l->line + at, (l->n - at) * sizeof(*l->line));
    memmove(l->len + at + 1, l->len + at, (l->n - at) * sizeof(*l->len));
    l->line[at] = malloc(len + 1);
    assert_non_null(l->line[at]);
    memcpy(l->line[at], b, len);
    l->line[at][len] = '\0';
    l->len[at] = len;
    l->n++;
}

/* Every line of every segment, in order (a torn tail counts as a line). */
static inline th_lines th_lines_load(bd_history *h)
{
    th_lines l = {NULL, NULL, 0};
    for (uint64_t first = 1;; first += BD_SEGMENT_RECORDS) {
        char p[1024];
        th_path(p, sizeof(p), h, first);
        struct stat st;
        if (stat(p, &st) != 0)
            break;
        size_t len;
        char *b = th_read(p, &len);
        size_t i = 0;
        while (i < len) {
            char *nl = memchr(b + i, '\n', len - i);
            size_t e = nl ? (size_t)(nl - b) : len;
            th_lines_add(&l, l.n, b + i, e - i);
            i = e + 1;
        }
        free(b);
    }
    return l;
}

/* Write the lines back as segments of 65,536 lines (the old segments are removed). */
static inline void th_lines_store(bd_history *h, th_lines *l)
{
    char dir[1024];
    th_segdir(dir, sizeof(dir), h);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (bd_segment_parse_name(de->d_name) >= 0) {
            char p[1300];
            snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
            unlink(p);
        }
    }
    closedir(d);
    for (size_t i = 0; i < l->n; i += BD_SEGMENT_RECORDS) {
        char p[1024];
        th_path(p, sizeof(p), h, i + 1);
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        for (size_t j = i; j < l->n && j < i + BD_SEGMENT_RECORDS; j++) {
            fwrite(l->line[j], 1, l->len[j], f);
            fputc('\n', f);
        }
        fclose(f);
    }
    for (size_t i = 0; i < l->n; i++)
        free(l->line[i]);
    free(l->line);
    free(l->len);
    memset(l, 0, sizeof(*l));
}

static inline void th_lines_free(th_lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->line[i]);
    free(l->line);
    free(l->len);
    memset(l, 0, sizeof(*l));
}

/* The bytes of the record at position seq (caller frees). */
static inline char *th_read_seq(bd_history *h, uint64_t seq, size_t *len)
{
    th_lines l = th_lines_load(h);
    assert_true(seq >= 1 && seq <= l.n);
    char *b = malloc(l.len[seq - 1] + 1);
    assert_non_null(b);
    memcpy(b, l.line[seq - 1], l.len[seq - 1] + 1);
    *len = l.len[seq - 1];
    th_lines_free(&l);
    return b;
}

/* Replace the record at position seq; seq = count + 1 appends a line, 0 prepends one. */
static inline void th_write_seq(bd_history *h, uint64_t seq, const char *buf, size_t len)
{
    th_lines l = th_lines_load(h);
    if (seq == 0 || seq == l.n + 1) {
        th_lines_add(&l, seq == 0 ? 0 : l.n, buf, len);
    } else {
        assert_true(seq <= l.n);
        free(l.line[seq - 1]);
        l.line[seq - 1] = malloc(len + 1);
        assert_non_null(l.line[seq - 1]);
        memcpy(l.line[seq - 1], buf, len);
        l.line[seq - 1][len] = '\0';
        l.len[seq - 1] = len;
    }
    th_lines_store(h, &l);
}

/* Insert a line before position seq (the records from seq on move down one line). */
static inline void th_insert_seq(bd_history *h, uint64_t seq, const char *buf, size_t len)
{
    th_lines l = th_lines_load(h);
    assert_true(seq >= 1 && seq <= l.n + 1);
    th_lines_add(&l, seq - 1, buf, len);
    th_lines_store(h, &l);
}

/* Remove the line at position seq (the later records move up one line). */
static inline void th_unlink_seq(bd_history *h, uint64_t seq)
{
    th_lines l = th_lines_load(h);
    assert_true(seq >= 1 && seq <= l.n);
    free(l.line[seq - 1]);
    memmove(l.line + seq - 1, l.line + seq, (l.n - seq) * sizeof(*l.line));
    memmove(l.len + seq - 1, l.len + seq, (l.n - seq) * sizeof(*l.len));
    l.n--;
    th_lines_store(h, &l);
}

/* Swap the lines at positions a and b. */
static inline void th_swap_seq(bd_history *h, uint64_t a, uint64_t b)
{
    th_lines l = th_lines_load(h);
    assert_true(a >= 1 && a <= l.n && b >= 1 && b <= l.n);
    char *t = l.line[a - 1];
    size_t tl = l.len[a - 1];
    l.line[a - 1] = l.line[b - 1];
    l.len[a - 1] = l.len[b - 1];
    l.line[b - 1] = t;
    l.len[b - 1] = tl;
    th_lines_store(h, &l);
}

/* Verify once, as the run gate does before records accumulate: it leaves the memo of
 * the head it saw (history/VERIFIED), which tells an edited last record from a spliced
 * one. */
static inline void th_verified(bd_history *h)
{
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, 0, &r, &err), 0);
    bd_history_verify_result_release(&r);
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
