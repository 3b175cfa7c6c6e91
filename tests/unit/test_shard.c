/*
 * test_shard.c — the stable partition, the shard spec and the bundle manifest
 * (src/run/shard.h, docs/scale.md).
 *
 * Partition keys are known answers from b3sum: `printf abc | b3sum` begins 6437b3ac38465133,
 * `printf incident-42 | b3sum` begins c106b38d1eed7a1f.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "shard.h"

static void test_key_known_answers(void **state)
{
    (void)state;
    assert_true(bd_shard_key("abc") == 0x6437b3ac38465133ULL);
    assert_true(bd_shard_key("incident-42") == 0xc106b38d1eed7a1fULL);
    assert_int_equal(bd_shard_of("abc", 4), (uint32_t)(0x6437b3ac38465133ULL % 4));
    assert_int_equal(bd_shard_of("incident-42", 7), (uint32_t)(0xc106b38d1eed7a1fULL % 7));
    assert_int_equal(bd_shard_of("abc", 1), 0);
}

/* A fake environment: NULL-terminated name/value pairs. */
static const char *const *env_table;
static const char *table_get(const char *name)
{
    for (const char *const *p = env_table; p && p[0]; p += 2)
        if (strcmp(p[0], name) == 0)
            return p[1];
    return NULL;
}

static int parse(bd_shard_spec *s, const char *spec, const char *run_id, const char *const *env,
                 bd_err *err)
{
    env_table = env;
    return bd_shard_spec_parse(s, spec, run_id, table_get, err);
}

static void test_spec_explicit(void **state)
{
    (void)state;
    bd_shard_spec s;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(parse(&s, "3/4", "r1", NULL, &err), 0);
    assert_int_equal(s.k, 3);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.run_id, "r1");
    static const char *const bad[] = {"4/4", "1/0",     "01/4", "-1/4", "1/",   "/4",
                                      "a/b", "1/65537", "1 /4", "",     "1/4/5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bd_err e = BD_ERR_INIT;
        assert_int_equal(parse(&s, bad[i], "r1", NULL, &e), -1);
        assert_int_equal(e.code, BD_E_SHARD_SPEC);
    }
    assert_int_equal(parse(&s, "0/65536", "r1", NULL, &err), 0);
    /* No run id, or a bad one. */
    assert_int_equal(parse(&s, "0/2", NULL, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_SHARD_SPEC);
    assert_int_equal(parse(&s, "0/2", "bad id", NULL, &err), -1);
}

static void test_spec_slurm(void **state)
{
    (void)state;
    bd_shard_spec s;
    bd_err err = BD_ERR_INIT;
    static const char *const env[] = {"SLURM_ARRAY_TASK_ID",
                                      "12",
                                      "SLURM_ARRAY_TASK_MIN",
                                      "10",
                                      "SLURM_ARRAY_TASK_COUNT",
                                      "4",
                                      "SLURM_ARRAY_JOB_ID",
                                      "777",
                                      NULL};
    assert_int_equal(parse(&s, "auto", NULL, env, &err), 0);
    assert_int_equal(s.k, 2);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.run_id, "777");
    /* --run-id wins over the scheduler's. */
    assert_int_equal(parse(&s, "auto", "mine", env, &err), 0);
    assert_string_equal(s.run_id, "mine");
    /* --array=0-6:2: ids 0,2,4,6 are shards 0..3. */
    static const char *const step[] = {"SLURM_ARRAY_TASK_ID",
                                       "4",
                                       "SLURM_ARRAY_TASK_MIN",
                                       "0",
                                       "SLURM_ARRAY_TASK_STEP",
                                       "2",
                                       "SLURM_ARRAY_TASK_COUNT",
                                       "4",
                                       "SLURM_ARRAY_JOB_ID",
                                       "9",
                                       NULL};
    assert_int_equal(parse(&s, "auto", NULL, step, &err), 0);
    assert_int_equal(s.k, 2);
    static const char *const off[] = {"SLURM_ARRAY_TASK_ID",
                                      "3",
                                      "SLURM_ARRAY_TASK_MIN",
                                      "0",
                                      "SLURM_ARRAY_TASK_STEP",
                                      "2",
                                      "SLURM_ARRAY_TASK_COUNT",
                                      "4",
                                      "SLURM_ARRAY_JOB_ID",
                                      "9",
                                      NULL};
    assert_int_equal(parse(&s, "auto", NULL, off, &err), -1);
    static const char *const nocount[] = {
        "SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_JOB_ID", "9", NULL};
    assert_int_equal(parse(&s, "auto", NULL, nocount, &err), -1);
    assert_int_equal(err.code, BD_E_SHARD_SPEC);
    assert_non_null(strstr(err.msg, "SLURM_ARRAY_TASK_COUNT"));
}

static void test_spec_kubernetes(void **state)
{
    (void)state;
    bd_shard_spec s;
    bd_err err = BD_ERR_INIT;
    static const char *const env[] = {"JOB_COMPLETION_INDEX", "5", "BENCHDESK_SHARDS", "8", NULL};
    assert_int_equal(parse(&s, "auto", "k8s-run", env, &err), 0);
    assert_int_equal(s.k, 5);
    assert_int_equal(s.n, 8);
    assert_int_equal(parse(&s, "auto", NULL, env, &err), -1); /* no run id */
    static const char *const nos[] = {"JOB_COMPLETION_INDEX", "5", NULL};
    assert_int_equal(parse(&s, "auto", "k", nos, &err), -1);
    assert_non_null(strstr(err.msg, "BENCHDESK_SHARDS"));
    assert_int_equal(parse(&s, "auto", "k", NULL, &err), -1);
    static const char *const over[] = {"JOB_COMPLETION_INDEX", "8", "BENCHDESK_SHARDS", "8", NULL};
    assert_int_equal(parse(&s, "auto", "k", over, &err), -1);
}

static void test_manifest_round_trip(void **state)
{
    (void)state;
    bd_bundle_manifest m;
    memset(&m, 0, sizeof(m));
    strcpy(m.run_id, "r-1");
    strcpy(m.task_class, "tc");
    strcpy(m.task_class_digest, "blake3:"
                                "0123456789abcdef0123456789abcdef"
                                "0123456789abcdef0123456789abcdef");
    m.shard = 1;
    m.shards = 3;
    bd_bundle_case cases[2] = {{.id = "a-case"}, {.id = "b-case"}};
    strcpy(cases[0].digest, m.task_class_digest);
    strcpy(cases[1].digest, m.task_class_digest);
    m.cases = cases;
    m.n_cases = 2;
    strcpy(m.isolation_class, "subprocess");
    strcpy(m.harness_version, "0.1.0");
    strcpy(m.host, "node-1");
    strcpy(m.started_at, "2026-01-01T00:00:00Z");
    strcpy(m.finished_at, "2026-01-01T00:00:01Z");
    m.count = 2;
    memset(m.chain_head, 'a', 64);
    size_t len = 0;
    char *text = bd_bundle_manifest_json(&m, &len);
    assert_non_null(text);
    bd_bundle_manifest back;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bundle_manifest_parse(&back, text, len, NULL, &err), 0);
    assert_string_equal(back.run_id, "r-1");
    assert_int_equal(back.n_cases, 2);
    assert_string_equal(back.cases[1].id, "b-case");
    assert_string_equal(back.bench_commit, "");
    assert_int_equal(back.n_not_run, 0);
    assert_null(strstr(text, "not_run")); /* only when a cost cap kept cases from running */
    bd_bundle_manifest_release(&back);
    free(text);
    /* A cost cap kept b-case from running: "not_run" names it, and it reads back. */
    cases[1].not_run = true;
    m.n_not_run = 1;
    m.count = 1;
    text = bd_bundle_manifest_json(&m, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"not_run\":[\"b-case\"]"));
    assert_int_equal(bd_bundle_manifest_parse(&back, text, len, NULL, &err), 0);
    assert_int_equal(back.n_not_run, 1);
    assert_false(back.cases[0].not_run);
    assert_true(back.cases[1].not_run);
    assert_false(back.has_cost_cap);
    bd_bundle_manifest_release(&back);
    free(text);
    /* ... with the cap that stopped it: "cost_cap_usd" reads back. */
    m.has_cost_cap = true;
    m.cost_cap_usd = 0.25;
    text = bd_bundle_manifest_json(&m, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"cost_cap_usd\":0.25,"));
    assert_int_equal(bd_bundle_manifest_parse(&back, text, len, NULL, &err), 0);
    assert_true(back.has_cost_cap);
    assert_true(back.cost_cap_usd == 0.25);
    bd_bundle_manifest_release(&back);
    /* A cap out of range is never written; a cap without not_run is never written either
     * (a shard the cap did not stop) and is refused when read. */
    m.cost_cap_usd = -1;
    assert_null(bd_bundle_manifest_json(&m, &len));
    m.cost_cap_usd = 2e9;
    assert_null(bd_bundle_manifest_json(&m, &len));
    m.cost_cap_usd = 0.25;
    cases[1].not_run = false;
    m.n_not_run = 0;
    char *plain = bd_bundle_manifest_json(&m, &len);
    assert_non_null(plain);
    assert_null(strstr(plain, "cost_cap_usd"));
    free(plain);
    /* Read: "cost_cap_usd" (it sorts just before "count") of the wrong type or range,
     * or without not_run, is bundle.invalid. */
    static const char *const bad_caps[] = {"\"cost_cap_usd\":\"0.25\",", "\"cost_cap_usd\":-0.5,",
                                           "\"cost_cap_usd\":10000000000,",
                                           "\"cost_cap_usd\":null,"};
    static const char cap_ok[] = "\"cost_cap_usd\":0.25,";
    char *e = strstr(text, cap_ok);
    assert_non_null(e);
    for (size_t i = 0; i < sizeof(bad_caps) / sizeof(*bad_caps); i++) {
        char buf[4096];
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(e - text), text, bad_caps[i],
                 e + strlen(cap_ok));
        bd_err e2 = BD_ERR_INIT;
        assert_int_equal(bd_bundle_manifest_parse(&back, buf, strlen(buf), NULL, &e2), -1);
        assert_int_equal(e2.code, BD_E_BUNDLE_INVALID);
    }
    plain = bd_bundle_manifest_json(&m, &len); /* no not_run */
    char *c = strstr(plain, "\"count\":");
    assert_non_null(c);
    char buf[4096];
    snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(c - plain), plain, cap_ok, c);
    bd_err e3 = BD_ERR_INIT;
    assert_int_equal(bd_bundle_manifest_parse(&back, buf, strlen(buf), NULL, &e3), -1);
    assert_int_equal(e3.code, BD_E_BUNDLE_INVALID);
    assert_non_null(strstr(e3.msg, "cost_cap_usd is given without not_run"));
    free(plain);
    m.n_not_run = 1; /* as before for what follows */
    cases[1].not_run = true;
    /* One member too many, or a shard out of range: refused. */
    m.shard = 3;
    assert_null(bd_bundle_manifest_json(&m, &len));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_known_answers),   cmocka_unit_test(test_spec_explicit),
        cmocka_unit_test(test_spec_slurm),          cmocka_unit_test(test_spec_kubernetes),
        cmocka_unit_test(test_manifest_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
