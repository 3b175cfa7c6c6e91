/* Known-answer test of the chain: an independent checker (tests/kat/chain_check.py:
 * Python's hashlib + the b3sum command + Python's json) recomputes every record hash of
 * a varied history and must agree with benchdesk, record by record. */
#include "test_history_util.h"

#include <math.h>

#include "digest.h"

static char *run_checker(const char *dir, int *status)
{
    const char *src = getenv("BD_SOURCE_DIR");
    assert_non_null(src); /* set by ctest */
    char cmd[4096];
    assert_true(snprintf(cmd, sizeof(cmd), "python3 '%s/tests/kat/chain_check.py' '%s' --json", src,
                         dir) < (int)sizeof(cmd));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t n;
    while ((n = fread(out + len, 1, cap - 1 - len, p)) > 0)
        len += n;
    out[len] = '\0';
    *status = pclose(p);
    return out;
}

static void add_score(bd_history *h, int i, double score, double cost, const char *detail,
                      const char *case_id)
{
    bd_history_score_fields f;
    char cid[32];
    bd_score s;
    th_fields(&f, cid, "kat", i);
    if (case_id)
        f.case_id = case_id;
    th_score(&s, i);
    s.score = score;
    s.cost_usd = cost;
    free(s.failure_modes[0].detail);
    s.failure_modes[0].detail = detail ? th_strdup(detail) : NULL;
    bd_err err = BD_ERR_INIT;
    int rc = bd_history_append_score(h, &f, &s, NULL, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
    bd_score_free(&s);
}

static void checker_agrees_with_benchdesk(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "kat", 3);
    /* strings that exercise every escaping rule, numbers that exercise every form (1e9:
     * the largest cost a record holds, score_rules.h) */
    add_score(h, 4, 1.0 / 3.0, 0.1 + 0.2, "quote \" backslash \\ slash / tab \t nl \n", NULL);
    add_score(h, 5, 0.1, 1e-7, "ctl \x01\x1f del \x7f", NULL);
    add_score(h, 6, 0, 1e9, "utf-8 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "kat.odd_id-6");
    add_score(h, 7, 1, 12.5, NULL, NULL);
    add_score(h, 8, 0.999999, 1.5e-7, "", NULL);
    bd_history_audit_fields a = {.event = "promotion.refused",
                                 .task_class = "vuln-remediation",
                                 .detail = "refused \xe2\x80\x94 requires a human",
                                 .operator_fingerprint = TH_FPR,
                                 .at = "2026-05-12T15:00:00.123456789Z"};
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_append_audit(h, &a, NULL, NULL, &err), 0);
    for (int i = 10; i <= 40; i++)
        th_append(h, "kat", i);

    bd_history_verify_result r;
    assert_int_equal(bd_history_verify(h, BD_VERIFY_KEEP_HASHES, &r, &err), 0);
    assert_int_equal(r.count, 40);

    int status;
    char *out = run_checker(bd_history_dir(h), &status);
    cJSON *j = cJSON_Parse(out);
    if (!j || status != 0)
        fprintf(stderr, "checker (status %d) said: %s\n", status, out);
    assert_int_equal(status, 0);
    assert_non_null(j);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
    assert_int_equal(cJSON_GetObjectItem(j, "count")->valueint, 40);
    assert_string_equal(cJSON_GetObjectItem(j, "head")->valuestring, r.head);
    cJSON *recs = cJSON_GetObjectItem(j, "records");
    assert_int_equal(cJSON_GetArraySize(recs), 40);
    int i = 0;
    for (cJSON *c = recs->child; c; c = c->next, i++) {
        char hex[BD_HASH_BUF];
        bd_hex(hex, r.hashes[i], 32);
        assert_int_equal(cJSON_GetObjectItem(c, "seq")->valueint, i + 1);
        assert_string_equal(cJSON_GetObjectItem(c, "record_hash")->valuestring, hex);
    }
    cJSON_Delete(j);
    free(out);
    bd_history_verify_result_release(&r);

    /* The checker is not a rubber stamp: it rejects an edited record too. */
    size_t len;
    char *b = th_read_seq(h, 20, &len);
    char *at = strstr(b, "\"case_id\":\"kat-");
    assert_non_null(at);
    at[11] = 'c';
    th_write_seq(h, 20, b, len);
    free(b);
    out = run_checker(bd_history_dir(h), &status);
    j = cJSON_Parse(out);
    assert_non_null(j);
    assert_int_not_equal(status, 0);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
    assert_int_equal(cJSON_GetObjectItem(j, "seq")->valueint, 21);
    cJSON_Delete(j);
    free(out);
    assert_tampered(h, BD_CHAIN_EDITED, 20);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checker_agrees_with_benchdesk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
