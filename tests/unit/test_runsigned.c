/* Signed runs' formats (runsigned.h, docs/formats.md#signed-runs): the exact message, the
 * canonical detail, its strict parse (every other shape refused), the pre step's run id
 * from an escaped detail, and the operator role in trusted-signers.yaml. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "runsigned.h"

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void message_bytes(void **state)
{
    (void)state;
    char *m = NULL;
    size_t n = 0;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_run_signed_message(&m, &n, "run-1", 13, 7, H64, &err), 0);
    const char *want =
        "benchdesk-run-v1\nrun_id:run-1\nrecords:13\nfirst_seq:7\nlast_record_hash:" H64 "\n";
    assert_string_equal(m, want);
    assert_int_equal(n, strlen(want));
    free(m);
    /* out of format: refused, nothing made */
    assert_int_equal(bd_run_signed_message(&m, &n, "bad id", 1, 1, H64, &err), -1);
    assert_null(m);
    assert_int_equal(bd_run_signed_message(&m, &n, "r", 0, 1, H64, &err), -1);
    assert_int_equal(bd_run_signed_message(&m, &n, "r", 1, 1, "ABC", &err), -1);
    assert_int_equal(bd_run_signed_message(
                         &m, &n, "r", 1, 1,
                         "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", &err),
                     -1);
}

static void detail_roundtrip(void **state)
{
    (void)state;
    size_t n = 0;
    char *d = bd_run_signed_detail("run-1", 13, 7, H64, "-----BEGIN PGP SIGNATURE-----\nx\n", &n);
    assert_non_null(d);
    assert_string_equal(d, "{\"first_seq\":7,\"last_record_hash\":\"" H64 "\",\"records\":13,"
                           "\"run_id\":\"run-1\",\"signature\":\"-----BEGIN PGP "
                           "SIGNATURE-----\\nx\\n\"}");
    bd_run_signed s;
    char why[256];
    assert_int_equal(bd_run_signed_parse(&s, d, n, why), 0);
    assert_string_equal(s.run_id, "run-1");
    assert_int_equal(s.records, 13);
    assert_int_equal(s.first_seq, 7);
    assert_string_equal(s.last_record_hash, H64);
    assert_string_equal(s.signature, "-----BEGIN PGP SIGNATURE-----\nx\n");
    bd_run_signed_release(&s);
    free(d);
}

static void parse_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "[]",
        /* not canonical: a space, keys out of order */
        "{\"first_seq\": 7,\"last_record_hash\":\"" H64
        "\",\"records\":13,\"run_id\":\"r\",\"signature\":\"s\"}",
        "{\"last_record_hash\":\"" H64
        "\",\"first_seq\":7,\"records\":13,\"run_id\":\"r\",\"signature\":\"s\"}",
        /* a member more, one less */
        "{\"extra\":1,\"first_seq\":7,\"last_record_hash\":\"" H64
        "\",\"records\":13,\"run_id\":\"r\",\"signature\":\"s\"}",
        "{\"first_seq\":7,\"last_record_hash\":\"" H64 "\",\"records\":13,\"run_id\":\"r\"}",
        /* values out of format */
        "{\"first_seq\":0,\"last_record_hash\":\"" H64
        "\",\"records\":13,\"run_id\":\"r\",\"signature\":\"s\"}",
        "{\"first_seq\":7,\"last_record_hash\":\"" H64
        "\",\"records\":1.5,\"run_id\":\"r\",\"signature\":\"s\"}",
        "{\"first_seq\":7,\"last_record_hash\":\"" H64
        "\",\"records\":\"13\",\"run_id\":\"r\",\"signature\":\"s\"}",
        "{\"first_seq\":7,\"last_record_hash\":\"xyz\",\"records\":13,\"run_id\":\"r\","
        "\"signature\":\"s\"}",
        "{\"first_seq\":7,\"last_record_hash\":\"" H64
        "\",\"records\":13,\"run_id\":\"../r\",\"signature\":\"s\"}",
        "{\"first_seq\":7,\"last_record_hash\":\"" H64
        "\",\"records\":13,\"run_id\":\"r\",\"signature\":null}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bd_run_signed s;
        char why[256];
        if (bd_run_signed_parse(&s, bad[i], strlen(bad[i]), why) != -1)
            fail_msg("accepted detail %zu: %s", i, bad[i]);
        assert_true(why[0] != '\0');
        assert_null(s.signature);
    }
}

static void pre_reads_run_id(void **state)
{
    (void)state;
    /* a run.signed audit record as the history holds it: the detail escaped once more */
    const char *rec =
        "{\"at\":\"2026-11-28T11:00:00Z\",\"detail\":\"{\\\"first_seq\\\":1,\\\"last_record_"
        "hash\\\":\\\"" H64 "\\\",\\\"records\\\":2,\\\"run_id\\\":\\\"run-9\\\",\\\"signature\\\":"
        "\\\"s\\\"}\",\"event\":\"run.signed\",\"harness_version\":\"1\",\"kind\":\"audit\","
        "\"operator_fingerprint\":\"0123456789ABCDEF0123456789ABCDEF01234567\",\"prev_hash\":\"" H64
        "\",\"schema_version\":2,\"seq\":3,\"task_class\":\"tc\"}";
    bd_runsig_pre p;
    bd_runsig_read(rec, strlen(rec), &p);
    assert_int_equal(p.kind, BD_RUNSIG_PRE_SIGNED);
    assert_string_equal(p.run_id, "run-9");
    assert_string_equal(p.fpr, "0123456789ABCDEF0123456789ABCDEF01234567");
    /* a score record with a null fingerprint: nothing */
    const char *unsigned_rec = "{\"operator_fingerprint\":null,\"run_id\":\"r\",\"seq\":1}";
    bd_runsig_read(unsigned_rec, strlen(unsigned_rec), &p);
    assert_int_equal(p.kind, BD_RUNSIG_PRE_NONE);
}

static void operator_role_alone(void **state)
{
    (void)state;
    const char *ok =
        "schema_version: 1\nsigners:\n  - {fingerprint: "
        "0123456789ABCDEF0123456789ABCDEF01234567, identity: o@x, roles: [operator]}\n";
    bd_signers *s = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_signers_parse(&s, ok, strlen(ok), "ts.yaml", &err), 0);
    assert_int_equal(s->signers[0].roles, BD_ROLE_OPERATOR);
    bd_signers_free(s);
    const char *mixed = "schema_version: 1\nsigners:\n  - {fingerprint: "
                        "0123456789ABCDEF0123456789ABCDEF01234567, identity: o@x, roles: "
                        "[reviewer, operator]}\n";
    assert_int_equal(bd_signers_parse(&s, mixed, strlen(mixed), "ts.yaml", &err), -1);
    assert_int_equal(err.code, BD_E_SIGNERS_SCHEMA);
    assert_non_null(strstr(err.msg, "operator key holds no other role"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(message_bytes),       cmocka_unit_test(detail_roundtrip),
        cmocka_unit_test(parse_refuses),       cmocka_unit_test(pre_reads_run_id),
        cmocka_unit_test(operator_role_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
