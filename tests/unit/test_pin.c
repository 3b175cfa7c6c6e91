/* Unit tests for the in-place case.yaml edit and the atomic writer behind `pin`. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_replaces_only_the_value),
        cmocka_unit_test(set_ignores_nested_and_prefixed_keys),
        cmocka_unit_test(set_refuses_block_scalars_and_missing_keys),
        cmocka_unit_test(atomic_write_replaces_and_keeps_mode),
        cmocka_unit_test(error_table_is_consistent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
