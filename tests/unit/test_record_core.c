/*
 * test_record_core.c — the pieces of recording that need no SUT (record.h, sut_env.h,
 * linediff.h): the SUT's environment from env_pass, the network policy, the line diff
 * the TUI shows. The SUT itself runs in tests/cli/test_record.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linediff.h"
#include "record.h"
#include "sut_env.h"

static void test_env_pass(void **state)
{
    (void)state;
    char *names[] = {"BD_T_ONE", "BD_T_TWO", NULL};
    bd_registration reg;
    memset(&reg, 0, sizeof(reg));
    reg.sut_kind = BD_SUT_COMMAND;
    reg.sut_env_pass = names;
    reg.n_sut_env_pass = 2;
    setenv("BD_T_ONE", "1", 1);
    setenv("BD_T_TWO", "two=2", 1);
    setenv("BD_T_UNNAMED", "x", 1);
    char **env = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_sut_env_build(&env, &reg, "r.yaml", &err), 0);
    assert_string_equal(env[0], "BD_T_ONE=1");
    assert_string_equal(env[1], "BD_T_TWO=two=2");
    assert_null(env[2]);
    bd_sut_env_free(env);

    unsetenv("BD_T_TWO");
    assert_int_equal(bd_sut_env_build(&env, &reg, "r.yaml", &err), -1);
    assert_int_equal(err.code, BD_E_ENV_VARIABLE_MISSING);
    assert_non_null(strstr(err.msg, "BD_T_TWO"));
    assert_null(env);

    /* A cassette SUT gets nothing, whatever env_pass says. */
    reg.sut_kind = BD_SUT_CASSETTE;
    assert_int_equal(bd_sut_env_build(&env, &reg, "r.yaml", &err), 0);
    assert_null(env[0]);
    bd_sut_env_free(env);
}

static void test_network_policy(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    unsetenv("CI");
    assert_int_equal(bd_record_network_policy(true, &err), 0);
    assert_int_equal(bd_record_network_policy(false, &err), -1);
    assert_int_equal(err.code, BD_E_RECORD_NETWORK_REFUSED);
    setenv("CI", "", 1); /* set, whatever its value */
    assert_int_equal(bd_record_network_policy(true, &err), -1);
    assert_int_equal(err.code, BD_E_RECORD_NETWORK_REFUSED);
    unsetenv("CI");
}

static char *render(const char *a, const char *b)
{
    bd_diff_line *d = NULL;
    size_t n = 0;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_line_diff(&d, &n, a, a ? strlen(a) : 0, b, b ? strlen(b) : 0, &err), 0);
    size_t cap = 16;
    for (size_t i = 0; i < n; i++)
        cap += d[i].len + 2;
    char *out = calloc(1, cap);
    for (size_t i = 0; i < n; i++) {
        char *e = out + strlen(out);
        *e++ = d[i].op == BD_DIFF_ADD ? '+' : d[i].op == BD_DIFF_DEL ? '-' : ' ';
        memcpy(e, d[i].text, d[i].len);
        e[d[i].len] = '|';
    }
    free(d);
    return out;
}

static void test_line_diff(void **state)
{
    (void)state;
    char *r = render("a\nb\nc\n", "a\nx\nc\n");
    assert_string_equal(r, " a|-b|+x| c|");
    free(r);
    r = render(NULL, "new\n");
    assert_string_equal(r, "+new|");
    free(r);
    r = render("old", "");
    assert_string_equal(r, "-old|");
    free(r);
    r = render("same\nsame\n", "same\nsame\n");
    assert_string_equal(r, " same| same|");
    free(r);
    /* Beyond the exact limit: everything removed, then everything added. */
    size_t big = (BD_LINEDIFF_MAX_LINES + 1) * 2;
    char *a = malloc(big + 1);
    for (size_t i = 0; i < big; i += 2)
        memcpy(a + i, "x\n", 2);
    a[big] = '\0';
    bd_diff_line *d = NULL;
    size_t n = 0;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_line_diff(&d, &n, a, big, "y\n", 2, &err), 0);
    assert_int_equal(n, BD_LINEDIFF_MAX_LINES + 2);
    assert_int_equal(d[0].op, BD_DIFF_DEL);
    assert_int_equal(d[n - 1].op, BD_DIFF_ADD);
    free(d);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_pass),
        cmocka_unit_test(test_network_policy),
        cmocka_unit_test(test_line_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
