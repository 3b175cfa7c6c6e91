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
#include "rungate.h"

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
                 "python: /usr/bin/python3\ncost_cap_usd: 2.50\n");
    bd_config c;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_config_load(&c, root, &err), 0);
    assert_string_equal(c.theme, "light");
    assert_int_equal(c.jobs, 3);
    assert_string_equal(c.signing_key, "0123456789ABCDEF0123456789ABCDEF01234567");
    assert_string_equal(c.python, "/usr/bin/python3");
    assert_true(c.has_cost_cap && c.cost_cap_usd == 2.5);
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
        {"jobs: 2\ncost_cap_usd: -1\n", 2},
        {"cost_cap_usd: \"1.5\"\n", 1},
        {"cost_cap_usd: 1e3\n", 1},
        {"cost_cap_usd: [1]\n", 1},
        {"cost_cap_usd: .inf\n", 1},
        {"cost_cap_usd:\n", 1},
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

/* The one parser of a cost cap (the command line and the config) and the smallest cap
 * of the flag, the config and the registration. */
static void cost_caps(void **state)
{
    (void)state;
    static const char *const good[] = {"0", "0.0", "2.50", ".5", "5.", "1000000000", "007"};
    static const char *const bad[] = {
        "",    ".",   "-1", "+1", "1e3",           "$5", "1.2.3", "0x10",
        "inf", "nan", " 1", "1 ", "1000000000.01", "1,5"};
    double v = -1;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(bd_cost_cap_parse(good[i], &v), 0);
    assert_true(v == 7.0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = -1;
        assert_int_equal(bd_cost_cap_parse(bad[i], &v), -1);
        assert_true(v == -1);
    }
    assert_int_equal(bd_cost_cap_parse(NULL, &v), -1);

    bd_registration reg = {.run_cost_cap_usd = -1.0};
    bd_task_class tc = {.reg = &reg};
    bd_config cfg = {0};
    bd_run_request req = {.tc = &tc};
    assert_true(bd_run_cost_cap(&req, &cfg) < 0); /* none set */
    reg.run_cost_cap_usd = 0.75;
    assert_true(bd_run_cost_cap(&req, &cfg) == 0.75);
    cfg.has_cost_cap = true;
    cfg.cost_cap_usd = 0.5;
    assert_true(bd_run_cost_cap(&req, &cfg) == 0.5);
    req.has_cost_cap = true;
    req.cost_cap_usd = 1.0;
    assert_true(bd_run_cost_cap(&req, &cfg) == 0.5);
    req.cost_cap_usd = 0;
    assert_true(bd_run_cost_cap(&req, &cfg) == 0.0); /* 0 is a cap, the smallest */
    reg.run_cost_cap_usd = -1.0;
    cfg.has_cost_cap = false;
    req.cost_cap_usd = 3;
    assert_true(bd_run_cost_cap(&req, NULL) == 3.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_file_is_defaults),
        cmocka_unit_test(all_keys_load),
        cmocka_unit_test(refusals),
        cmocka_unit_test(cost_caps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
