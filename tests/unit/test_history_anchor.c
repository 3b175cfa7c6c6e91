/* Unit tests of the anchor formats: the exact signed message and the strict anchor-file
 * parser. (Signing and verifying with real keys: tests/cli/test_history_anchor.sh.) */
#include "test_history_util.h"

#include "anchor.h"

#define HEAD "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FPR  "0123456789ABCDEF0123456789ABCDEF01234567"

static void message_is_exact(void **state)
{
    (void)state;
    char *m;
    size_t len;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_anchor_message(&m, &len, "2026-05-12", 42, HEAD, &err), 0);
    const char *want = "benchdesk-anchor-v1\ndate: 2026-05-12\ncount: 42\nchain_head: " HEAD "\n";
    assert_string_equal(m, want);
    assert_int_equal(len, strlen(want));
    free(m);
    /* refusals */
    assert_int_equal(bd_anchor_message(&m, &len, "2026-02-30", 1, HEAD, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    assert_null(m);
    assert_int_equal(bd_anchor_message(&m, &len, "2026-05-12", 0, HEAD, &err), -1);
    assert_int_equal(bd_anchor_message(&m, &len, "2026-05-12", 1, "ABC", &err), -1);
    assert_int_equal(
        bd_anchor_message(&m, &len, "2026-05-12", 1,
                          "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", &err),
        -1);
    assert_int_equal(bd_anchor_message(&m, &len, "2026-5-12\n", 1, HEAD, &err), -1);
}

static const char good[] = "{\"chain_head\":\"" HEAD "\",\"count\":42,\"date\":\"2026-05-12\","
                           "\"schema_version\":1,\"signature\":\"-----BEGIN PGP "
                           "SIGNATURE-----\\n\\nx\\n-----END PGP SIGNATURE-----\\n\","
                           "\"signer\":\"" FPR "\"}\n";

static void parse_accepts_the_canonical_file(void **state)
{
    (void)state;
    bd_anchor a;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_anchor_parse(&a, good, strlen(good), "2026-05-12", "a.json", &err), 0);
    assert_string_equal(a.date, "2026-05-12");
    assert_int_equal(a.count, 42);
    assert_string_equal(a.chain_head, HEAD);
    assert_string_equal(a.signer, FPR);
    assert_non_null(strstr(a.signature, "BEGIN PGP SIGNATURE"));
    bd_anchor_release(&a);
    assert_int_equal(bd_anchor_parse(&a, good, strlen(good), NULL, NULL, &err), 0);
    bd_anchor_release(&a);
}

static void expect_refused(const char *text, const char *date)
{
    bd_anchor a;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_anchor_parse(&a, text, strlen(text), date, "x.json", &err), -1);
    assert_int_equal(err.code, BD_E_ANCHOR_MISMATCH);
    assert_non_null(strstr(err.msg, "x.json"));
    assert_null(a.signature);
}

static char *replace(const char *from, const char *to)
{
    const char *at = strstr(good, from);
    assert_non_null(at);
    size_t n = strlen(good) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    return s;
}

static void parse_refuses_everything_else(void **state)
{
    (void)state;
    expect_refused("", NULL);
    char *s = strdup(good);
    s[strlen(s) - 1] = '\0'; /* no final newline */
    expect_refused(s, NULL);
    free(s);
    expect_refused(good, "2026-05-13"); /* not the file name's date */
    const char *subs[][2] = {
        {"\"count\":42", "\"count\":0"},
        {"\"count\":42", "\"count\":4.5"},
        {"\"count\":42", "\"count\":\"42\""},
        {"\"date\":\"2026-05-12\"", "\"date\":\"2026-13-12\""},
        {"\"schema_version\":1", "\"schema_version\":2"},
        {"\"signer\":\"" FPR "\"", "\"signer\":\"0123456789abcdef0123456789abcdef01234567\""},
        {"\"chain_head\":\"0", "\"chain_head\":\"X"},
        {"\"signature\":\"-----BEGIN PGP SIGNATURE-----\\n\\nx\\n-----END PGP SIGNATURE-----\\n\"",
         "\"signature\":\"\""},
        {"{\"chain_head\"", "{\"extra\":1,\"chain_head\""},
        {"{\"chain_head\"", "{\"count\":42,\"chain_head\""},
        {",\"count\":42", ""},
        {"\"count\":42", "\"count\" : 42"},
        {"{\"chain_head\":\"" HEAD "\",\"count\":42", "{\"count\":42,\"chain_head\":\"" HEAD "\""},
    };
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        char *t = replace(subs[i][0], subs[i][1]);
        expect_refused(t, NULL);
        free(t);
    }
    expect_refused("[]\n", NULL);
    expect_refused("{\"a\":1} {}\n", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(message_is_exact),
        cmocka_unit_test(parse_accepts_the_canonical_file),
        cmocka_unit_test(parse_refuses_everything_else),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
