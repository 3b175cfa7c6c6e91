/* .benchdesk/config.yaml: every key optional, unknown keys and bad values refused. */
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

#include "config.h"

static char root[64];

static void write_config(const char *text)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/.benchdesk", root);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/.benchdesk/config.yaml", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/bd-config-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/.benchdesk/config.yaml", root);
    unlink(path);
    snprintf(path, sizeof(path), "%s/.benchdesk", root);
    rmdir(path);
    return rmdir(root);
}

static void missing_file_is_defaults(void **state)
{
    (void)state;
    bd_config c;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_config_load(&c, root, &err), 0);
    assert_null(c.theme);
    assert_int_equal(c.jobs, 0);
    bd_config_release(&c);
}

static void all_keys_load(void **state)
{
    (void)state;
    write_config("theme: light\njobs: 3\nsigning_key: 0123456789abcdef0123456789ABCDEF01234567\n"
                 "python: /usr/bin/python3\n");
    bd_config c;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_config_load(&c, root, &err), 0);
    assert_string_equal(c.theme, "light");
    assert_int_equal(c.jobs, 3);
    assert_string_equal(c.signing_key, "0123456789ABCDEF0123456789ABCDEF01234567");
    assert_string_equal(c.python, "/usr/bin/python3");
    bd_config_release(&c);
}

static void refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int line;
    } bad[] = {
        {"theme: light\nthme: dark\n", 2},
        {"jobs: 0\n", 1},
        {"jobs: many\n", 1},
        {"jobs: \"3\"\n", 1},
        {"python: python3\n", 1},
        {"signing_key: abc\n", 1},
        {"- a list\n", 1},
        {"theme: [a]\n", 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_config(bad[i].text);
        bd_config c;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_config_load(&c, root, &err), -1);
        assert_int_equal(err.code, BD_E_CONFIG_SCHEMA);
        assert_int_equal(err.line, bad[i].line);
        assert_null(c.theme);
    }
    write_config("theme: a\ntheme: b\n");
    bd_config c;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_config_load(&c, root, &err), -1);
    assert_int_equal(err.code, BD_E_YAML_DUPLICATE_KEY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_file_is_defaults),
        cmocka_unit_test(all_keys_load),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
