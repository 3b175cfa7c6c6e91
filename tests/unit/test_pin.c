/* Unit tests for the in-place case.yaml edit and the atomic writer behind `pin`, and for
 * how `pin` of named cases writes digests.yaml: nothing when no pin changes, the changed
 * lines put into the file's bytes otherwise, byte for byte what a full rewrite gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fixtures/gpg/fixture.h"
#include "fsutil.h"
#include "pin.h"

static const char *D = "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void set_replaces_only_the_value(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    const char *in = "a: 1\ncase_digest: null  # keep me\nb: 2\n";
    char *out = bd_yaml_set_top_scalar(in, "case_digest", D, "x.yaml", &err);
    assert_non_null(out);
    char want[256];
    snprintf(want, sizeof(want), "a: 1\ncase_digest: %s  # keep me\nb: 2\n", D);
    assert_string_equal(out, want);
    free(out);
}

static void set_ignores_nested_and_prefixed_keys(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    const char *in = "x:\n  case_digest: nested\ncase_digest_old: 1\ncase_digest: \"old\"\n";
    char *out = bd_yaml_set_top_scalar(in, "case_digest", "null", "x.yaml", &err);
    assert_non_null(out);
    assert_string_equal(out, "x:\n  case_digest: nested\ncase_digest_old: 1\ncase_digest: null\n");
    free(out);
}

static void set_refuses_block_scalars_and_missing_keys(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    assert_null(bd_yaml_set_top_scalar("case_digest: |\n  x\n", "case_digest", D, "c.yaml", &err));
    assert_int_equal(err.code, BD_E_CASE_SCHEMA);
    assert_int_equal(err.line, 1);
    bd_err_clear(&err);
    assert_null(bd_yaml_set_top_scalar("case_digest:\n", "case_digest", D, "c.yaml", &err));
    assert_int_equal(err.code, BD_E_CASE_SCHEMA);
    bd_err_clear(&err);
    assert_null(bd_yaml_set_top_scalar("a: 1\n", "case_digest", D, "c.yaml", &err));
    assert_int_equal(err.code, BD_E_CASE_SCHEMA);
    assert_non_null(strstr(err.msg, "c.yaml"));
}

static void atomic_write_replaces_and_keeps_mode(void **state)
{
    (void)state;
    char dir[] = "/tmp/bd-pin-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/f.yaml", dir);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_write_file_atomic(path, "one\n", 4, 0600, &err), 0);
    assert_int_equal(bd_write_file_atomic(path, "two\n", 4, 0640, &err), 0);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(bd_read_file(&buf, &len, path, 100, BD_E_YAML_TOO_LARGE, &err), 0);
    assert_string_equal(buf, "two\n");
    free(buf);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    /* No temp file is left behind. */
    char cmdpath[160];
    snprintf(cmdpath, sizeof(cmdpath), "%s/f.yaml.%ld.tmp", dir, (long)getpid());
    assert_int_not_equal(access(cmdpath, F_OK), 0);
    /* Too big is refused with the caller's code. */
    assert_int_equal(bd_read_file(&buf, &len, path, 2, BD_E_YAML_TOO_LARGE, &err), -1);
    assert_int_equal(err.code, BD_E_YAML_TOO_LARGE);
    /* A symlink is refused, not followed. */
    char link[160];
    snprintf(link, sizeof(link), "%s/l", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(bd_read_file(&buf, &len, link, 100, BD_E_YAML_TOO_LARGE, &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    /* Writing into a missing directory fails cleanly. */
    char bad[160];
    snprintf(bad, sizeof(bad), "%s/nope/f", dir);
    assert_int_equal(bd_write_file_atomic(bad, "x", 1, 0600, &err), -1);
    assert_int_equal(err.code, BD_E_IO);
    unlink(link);
    unlink(path);
    rmdir(dir);
}

static void error_table_is_consistent(void **state)
{
    (void)state;
    assert_string_equal(bd_code_str(BD_E_DIGEST_MISMATCH), "case.digest_mismatch");
    assert_int_equal(bd_code_exit(BD_E_DIGEST_MISMATCH), 1);
    assert_int_equal(bd_code_exit(BD_E_BAD_ID), 2);
    assert_int_equal(bd_code_exit(BD_E_PROMOTION_REQUIRES_HUMAN), 3);
    assert_int_equal(bd_code_exit(BD_E_IO), 4);
    /* Every code string is unique and every exit status in 0..4. */
    for (int i = 0; i < BD_E__COUNT; i++) {
        assert_in_range(bd_code_exit((bd_code)i), 0, 4);
        for (int k = i + 1; k < BD_E__COUNT; k++)
            assert_string_not_equal(bd_code_str((bd_code)i), bd_code_str((bd_code)k));
    }
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_err_set(&err, BD_E_CASE_SCHEMA, "c.yaml", 3, 7, "bad %s", "key"), -1);
    assert_string_equal(err.msg, "c.yaml:3:7: bad key");
    assert_int_equal(err.line, 3);
    assert_string_equal(err.file, "c.yaml");
}

/* ---- digests.yaml as `pin` of named cases writes it ------------------------------------ */

static const char NO_SIGNERS[] = "schema_version: 1\nsigners: []\n";

/* Pin `ids` (none: the whole task class) of task class "tc" under `root`, loading it as
 * `benchdesk pin` does (named cases: without listing cases/). Returns the number of pins
 * that changed. Also checks that the loaded bytes of digests.yaml, which the writer may
 * patch, are as they were loaded once it returns. */
static size_t pin_ids(const char *root, const char *const *ids, size_t n)
{
    bd_bench *b = NULL;
    bd_task_class *tc = NULL;
    bd_pin_report rep;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bench_open(&b, root, &err), 0);
    int rc = n ? bd_task_class_load_unlisted(&tc, b, "tc", &err)
               : bd_task_class_load(&tc, b, "tc", &err);
    if (rc != 0)
        fail_msg("load: %s", err.msg);
    char *raw = NULL;
    size_t raw_len = tc->digests && tc->digests->raw ? tc->digests->raw_len : 0;
    if (raw_len) {
        raw = malloc(raw_len);
        assert_non_null(raw);
        memcpy(raw, tc->digests->raw, raw_len);
    }
    if (bd_pin_task_class(&rep, tc, ids, n, &err) != 0)
        fail_msg("pin: %s: %s", bd_code_str(err.code), err.msg);
    /* The loaded bytes are lent to the writer, never changed for good. */
    if (raw_len) {
        assert_int_equal(tc->digests->raw_len, raw_len);
        assert_memory_equal(tc->digests->raw, raw, raw_len);
    }
    free(raw);
    size_t changed = rep.n_changes;
    bd_pin_report_release(&rep);
    bd_task_class_free(tc);
    bd_bench_free(b);
    return changed;
}

/* digests.yaml of task class "tc" exactly as docs/formats.md gives it, made
 * here from the digests of the case dirs `ids` (sorted) and of the task class. */
static char *expected_digests(const char *root, const char *const *ids, size_t n)
{
    char dir[1024], tcd[BD_DIGEST_BUF], d[BD_DIGEST_BUF];
    bd_err err = BD_ERR_INIT;
    snprintf(dir, sizeof(dir), "%s/bench/tc", root);
    assert_int_equal(bd_digest_task_class_dir(tcd, dir, &err), 0);
    size_t cap = 1024 + n * 256, off = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    off +=
        (size_t)snprintf(out, cap,
                         "# Pins written by `benchdesk pin`: the task-class digest "
                         "(registration.yaml + rubric.py) and each case's digest "
                         "(docs/formats.md#digests).\nschema_version: 2\ntask_class: %s\ncases:\n",
                         tcd);
    for (size_t i = 0; i < n; i++) {
        snprintf(dir, sizeof(dir), "%s/bench/tc/cases/%s", root, ids[i]);
        assert_int_equal(bd_digest_case_dir(d, dir, NULL, &err), 0);
        off += (size_t)snprintf(out + off, cap - off, "  %s: %s\n", ids[i], d);
    }
    return out;
}

/* The same file, untouched: a rewrite is a new inode (though a freed inode number may come
 * back) with a new change time. */
static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
           a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void digests_path(char *out, size_t cap, const char *root)
{
    snprintf(out, cap, "%s/bench/tc/cases/digests.yaml", root);
}

/* A fresh bench of `ncases` pinned cases in `root`; `path` gets its digests.yaml. */
static void new_bench(char *root, size_t cap, char *path, size_t path_cap, const char *tag,
                      int ncases)
{
    fx_tmpdir(root, cap, tag);
    fx_make_bench(root, NULL, NULL, NO_SIGNERS, ncases);
    digests_path(path, path_cap, root);
}

/* digests.yaml at `path` is exactly what a full pin writes for the cases `all` (sorted):
 * the documented bytes, and a full pin then leaves the file alone. */
static void assert_full_pin_bytes(const char *root, const char *path, const char *const *all,
                                  size_t n)
{
    char *want = expected_digests(root, all, n), *got = fx_read(path);
    assert_string_equal(got, want);
    free(got);
    free(want);
    struct stat s1, s2;
    assert_int_equal(stat(path, &s1), 0);
    assert_int_equal(pin_ids(root, NULL, 0), 0);
    assert_int_equal(stat(path, &s2), 0);
    assert_true(same_file(&s1, &s2));
}

static void pin_one_unchanged_writes_nothing(void **state)
{
    (void)state;
    char root[512], path[600];
    new_bench(root, sizeof(root), path, sizeof(path), "pin1", 4);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    const char *one[] = {"c3"}, *twice[] = {"c2", "c4", "c2"};
    assert_int_equal(pin_ids(root, one, 1), 0);
    assert_int_equal(pin_ids(root, twice, 3), 0); /* a case named twice is pinned once */
    assert_int_equal(pin_ids(root, NULL, 0), 0);  /* nor does a full pin, nothing changing */
    assert_int_equal(stat(path, &after), 0);
    assert_true(same_file(&before, &after)); /* not rewritten */
    const char *all[] = {"c1", "c2", "c3", "c4"};
    assert_full_pin_bytes(root, path, all, 4);
    fx_cleanup(NULL, root);
}

static void pin_one_changed_equals_a_full_rewrite(void **state)
{
    (void)state;
    char root[512], path[600], p[700];
    new_bench(root, sizeof(root), path, sizeof(path), "pin2", 12);
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c11/input/prompt.txt", root);
    fx_write(p, "edited input of c11\n");
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c3/expected/answer.txt", root);
    fx_write(p, "43\n");
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    const char *two[] = {"c3", "c11"};
    assert_int_equal(pin_ids(root, two, 2), 2);
    assert_int_equal(stat(path, &after), 0);
    assert_false(same_file(&before, &after)); /* written anew */
    const char *all[] = {"c1", "c10", "c11", "c12", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"};
    assert_full_pin_bytes(root, path, all, 12);
    /* No temp file is left anywhere in the task class. */
    assert_int_equal(fx_sh("test -z \"$(find '%s/bench' -name '.benchdesk-tmp.*')\"", root), 0);
    fx_cleanup(NULL, root);
}

static void pin_new_cases_go_in_order(void **state)
{
    (void)state;
    char root[512], path[600];
    new_bench(root, sizeof(root), path, sizeof(path), "pin3", 3);
    bd_bench *b = NULL;
    bd_task_class *tc = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bench_open(&b, root, &err), 0);
    assert_int_equal(bd_task_class_load(&tc, b, "tc", &err), 0);
    /* Before every pin, between two (c2 < c25 < c3: "c2" is a prefix), after every pin. */
    const char *fresh[] = {"z9", "a0", "c25"};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(bd_case_scaffold(NULL, tc, fresh[i], &err), 0);
    bd_task_class_free(tc);
    bd_bench_free(b);
    /* An edit too: a replaced digest and inserted lines in one file. */
    char p[700];
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c2/input/prompt.txt", root);
    fx_write(p, "edited\n");
    const char *ids[] = {"z9", "c2", "a0", "c25", "z9"};
    assert_int_equal(pin_ids(root, ids, 5), 4);
    const char *all[] = {"a0", "c1", "c2", "c25", "c3", "z9"};
    assert_full_pin_bytes(root, path, all, 6);
    fx_cleanup(NULL, root);
}

static void pin_one_rewrites_a_file_in_another_layout(void **state)
{
    (void)state;
    char root[512], path[600];
    new_bench(root, sizeof(root), path, sizeof(path), "pin4", 3);
    const char *all[] = {"c1", "c2", "c3"};
    char *want = expected_digests(root, all, 3);
    /* Valid YAML with the same pins, not as pin writes it: a comment of the curator's, a
     * quoted digest, the cases out of order. Not spliced into: written anew, in pin's
     * layout, even with no pin changing (that is what a full rewrite would give). */
    const char *variants[] = {"# mine\n", "quoted", "unsorted"};
    for (size_t v = 0; v < 3; v++) {
        char *text = malloc(strlen(want) + 64), *q;
        assert_non_null(text);
        if (v == 0) {
            sprintf(text, "%s%s", variants[0], want);
        } else if (v == 1) {
            strcpy(text, want);
            q = strstr(text, "  c2: ") + 6;
            memmove(q + 1, q, strlen(q) + 1);
            *q = '"';
            memmove(q + 73, q + 72, strlen(q + 72) + 1);
            q[72] = '"';
        } else {
            /* c1's line moved to the end. */
            const char *c1 = strstr(want, "  c1: "), *c2 = strstr(want, "  c2: ");
            size_t head = (size_t)(c1 - want), l1 = (size_t)(c2 - c1);
            memcpy(text, want, head);
            strcpy(text + head, c2);
            strncat(text, c1, l1);
        }
        fx_write(path, text);
        free(text);
        const char *one[] = {"c2"};
        assert_int_equal(pin_ids(root, one, 1), 0);
        char *got = fx_read(path);
        assert_string_equal(got, want);
        free(got);
    }
    free(want);
    fx_cleanup(NULL, root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_replaces_only_the_value),
        cmocka_unit_test(set_ignores_nested_and_prefixed_keys),
        cmocka_unit_test(set_refuses_block_scalars_and_missing_keys),
        cmocka_unit_test(atomic_write_replaces_and_keeps_mode),
        cmocka_unit_test(error_table_is_consistent),
        cmocka_unit_test(pin_one_unchanged_writes_nothing),
        cmocka_unit_test(pin_one_changed_equals_a_full_rewrite),
        cmocka_unit_test(pin_new_cases_go_in_order),
        cmocka_unit_test(pin_one_rewrites_a_file_in_another_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
