/*
 * test_canon.c — canonical JSON (src/base/canon.h): byte-exact agreement with Python's
 * json.dumps for ordinary records, and refusal of what canonical JSON cannot express.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_locale.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "canon.h"

static char *canon_of(const char *json, size_t *len)
{
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    char *out = bd_canon_json(root, len);
    cJSON_Delete(root);
    return out;
}

/* Expected bytes produced with python3 (3.11), for each input document:
 *   json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
 * where obj is the input parsed by json.loads; the inputs themselves were written by
 *   json.dumps(obj, indent=1)   (ensure_ascii=True, so non-ASCII arrives as \u escapes). */
static const struct {
    const char *input;
    const char *expected;
} python_vectors[] = {
    {"{\n \"b\": 1,\n \"a\": \"x\"\n}", "{\"a\":\"x\",\"b\":1}"},
    {"{\n \"score\": 0.75,\n \"x\": 0.1,\n \"y\": 12.5,\n \"z\": -3,\n \"t\": 1700000000000\n}",
     "{\"score\":0.75,\"t\":1700000000000,\"x\":0.1,\"y\":12.5,\"z\":-3}"},
    {"{\n \"nested\": {\n  \"z\": [\n   1,\n   2,\n   {\n    \"b\": true,\n    \"a\": null\n   }\n "
     " ],\n  \"a\": false\n },\n \"\\u00e9\": \"\\u00fc/\\u007f\",\n \"A\": "
     "\"q\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\"\n}",
     "{\"A\":\"q\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\",\"nested\":{\"a\":false,\"z\":[1,2,{\"a\":"
     "null,\"b\":true}]},\"\xc3\xa9\":\"\xc3\xbc/\x7f\"}"},
    {"{\n \"k\": \"\\u65e5\\u672c\\u8a9e \\u2028 \\ud83d\\ude00\",\n \"ka\": 1,\n \"k\\u00e9\": "
     "2,\n \"kz\": 3\n}",
     "{\"k\":\"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xe2\x80\xa8 "
     "\xf0\x9f\x98\x80\",\"ka\":1,\"kz\":3,\"k\xc3\xa9\":2}"},
    {"[\n 0.001,\n 1e-05,\n 1.5e-07,\n 1e+20,\n 1e+16,\n 123456789.125,\n -0.5,\n "
     "3.141592653589793,\n 2.5e-300,\n 1.7976931348623157e+308\n]",
     "[0.001,1e-05,1.5e-07,1e+20,1e+16,123456789.125,-0.5,3.141592653589793,2.5e-300,1."
     "7976931348623157e+308]"},
    {"{\n \"\": \"\",\n \"a b\": [],\n \"c\": {}\n}", "{\"\":\"\",\"a b\":[],\"c\":{}}"},
    {"{\n \"passed\": true,\n \"score\": 0.75,\n \"breakdown\": {\n  \"recipe_match\": 1,\n  "
     "\"cve_delta\": 0.5\n },\n \"failure_modes\": [\n  {\n   \"code\": \"cve.not_removed\",\n   "
     "\"severity\": \"block\",\n   \"detail\": \"...\"\n  }\n ],\n \"cost_usd\": 0.0125,\n "
     "\"wall_clock_ms\": 1234\n}",
     "{\"breakdown\":{\"cve_delta\":0.5,\"recipe_match\":1},\"cost_usd\":0.0125,\"failure_modes\":["
     "{\"code\":\"cve.not_removed\",\"detail\":\"...\",\"severity\":\"block\"}],\"passed\":true,"
     "\"score\":0.75,\"wall_clock_ms\":1234}"},
};

static void test_python_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(python_vectors) / sizeof(python_vectors[0]); i++) {
        size_t len = 0;
        char *out = canon_of(python_vectors[i].input, &len);
        assert_non_null(out);
        assert_string_equal(out, python_vectors[i].expected);
        assert_int_equal(len, strlen(python_vectors[i].expected));
        free(out);
    }
}

/* Canonical bytes are a fixed point: parsing and re-serializing them changes nothing. */
static void test_idempotent(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(python_vectors) / sizeof(python_vectors[0]); i++) {
        char *once = canon_of(python_vectors[i].input, NULL);
        assert_non_null(once);
        char *twice = canon_of(once, NULL);
        assert_non_null(twice);
        assert_string_equal(once, twice);
        free(once);
        free(twice);
    }
}

static void expect_number(double d, const char *expected)
{
    cJSON *n = cJSON_CreateNumber(d);
    assert_non_null(n);
    char *out = bd_canon_json(n, NULL);
    cJSON_Delete(n);
    assert_non_null(out);
    assert_string_equal(out, expected);
    free(out);
}

static void test_numbers(void **state)
{
    (void)state;
    expect_number(0.0, "0");
    expect_number(-0.0, "0"); /* one value, one spelling */
    expect_number(-3, "-3");
    expect_number(1700000000000.0, "1700000000000");
    expect_number(9007199254740991.0, "9007199254740991"); /* 2^53 - 1: integer form */
    /* 2^53 and above: %g forms, as Python's repr gives them */
    expect_number(9007199254740992.0, "9007199254740992");
    expect_number(9223372036854775808.0, "9.223372036854776e+18");
    expect_number(1e20, "1e+20");
    expect_number(-1e300, "-1e+300");
    expect_number(0.1, "0.1");
    expect_number(0.75, "0.75");
    expect_number(12.5, "12.5");
    expect_number(1.0 / 3.0, "0.3333333333333333");
    expect_number(0.1 + 0.2, "0.30000000000000004");
    expect_number(1e-7, "1e-07");
    expect_number(5e-324, "4.94065645841247e-324"); /* denormal: round-trips, see canon.h */
    expect_number(2.0 / 3.0 * 1e-5, "6.666666666666667e-06");
}

static void test_nan_inf_refused(void **state)
{
    (void)state;
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < 3; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "x");
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(1));
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(bad[i]));
        size_t len = 99;
        assert_null(bd_canon_json(o, &len));
        assert_int_equal(len, 0);
        cJSON_Delete(o);
    }
}

static void test_duplicate_keys_refused(void **state)
{
    (void)state;
    size_t len;
    /* cJSON keeps both members; canonical bytes must not pick one silently. */
    assert_null(canon_of("{\"a\":1,\"a\":2}", &len));
    assert_null(canon_of("{\"x\":{\"b\":1,\"c\":2,\"b\":1}}", &len));
    assert_null(canon_of("[{\"k\":1},{\"z\":0,\"k\":1,\"k\":1}]", &len));
    /* same prefix is not a duplicate */
    char *ok = canon_of("{\"ab\":1,\"a\":2}", &len);
    assert_non_null(ok);
    assert_string_equal(ok, "{\"a\":2,\"ab\":1}");
    free(ok);
}

static void test_string_escaping(void **state)
{
    (void)state;
    cJSON *s = cJSON_CreateString("\x01\x1f\x7f/\"\\\b\f\n\r\t\xc3\xa9\xe2\x80\xa9");
    char *out = bd_canon_json(s, NULL);
    cJSON_Delete(s);
    assert_non_null(out);
    assert_string_equal(out, "\"\\u0001\\u001f\x7f/\\\"\\\\\\b\\f\\n\\r\\t\xc3\xa9\xe2\x80\xa9\"");
    free(out);
}

static void test_invalid_utf8_refused(void **state)
{
    (void)state;
    const char *bad[] = {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *s = cJSON_CreateString(bad[i]);
        assert_null(bd_canon_json(s, NULL));
        cJSON_Delete(s);
        /* and as a key */
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, bad[i], 1);
        assert_null(bd_canon_json(o, NULL));
        cJSON_Delete(o);
    }
}

static void test_raw_and_invalid_refused(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddRawToObject(o, "r", "{\"z\":1, \"a\":2}");
    assert_null(bd_canon_json(o, NULL));
    cJSON_Delete(o);
    cJSON inv;
    memset(&inv, 0, sizeof(inv)); /* cJSON_Invalid */
    assert_null(bd_canon_json(&inv, NULL));
    assert_null(bd_canon_json(NULL, NULL));
    /* an object member without a key */
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddItemToArray(obj, cJSON_CreateNumber(1));
    assert_null(bd_canon_json(obj, NULL));
    cJSON_Delete(obj);
}

static void test_depth_limit(void **state)
{
    (void)state;
    cJSON *root = cJSON_CreateArray();
    cJSON *cur = root;
    for (int i = 0; i < BD_CANON_MAX_DEPTH; i++) {
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(cur, a);
        cur = a;
    }
    /* BD_CANON_MAX_DEPTH + 1 levels: exactly at the limit */
    char *out = bd_canon_json(root, NULL);
    assert_non_null(out);
    assert_int_equal(strlen(out), 2 * (BD_CANON_MAX_DEPTH + 1));
    free(out);
    cJSON_AddItemToArray(cur, cJSON_CreateArray());
    assert_null(bd_canon_json(root, NULL));
    cJSON_Delete(root);
}

static void test_empty_containers_and_scalars(void **state)
{
    (void)state;
    const char *in[] = {"{}", "[]", "true", "false", "null", "\"\"", "[[],{}]"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        char *out = canon_of(in[i], NULL);
        assert_non_null(out);
        assert_string_equal(out, in[i]);
        free(out);
    }
}

/* The TUI calls setlocale(LC_ALL, ""): a comma-decimal LC_NUMERIC must not leak into
 * the hashed bytes. */
static void test_locale_independent(void **state)
{
    (void)state;
    if (bd_test_comma_locale("canon") != 0) {
        printf("SKIP test_locale_independent: no comma-decimal locale installed and "
               "localedef could not build de_DE.UTF-8\n");
        skip();
    }
    char probe[16];
    snprintf(probe, sizeof(probe), "%.2f", 0.75);
    assert_string_equal(probe, "0,75"); /* the locale really is active */
    char *out = canon_of("{\"b\":0.75,\"a\":1e-7,\"c\":1e+20}", NULL);
    assert_non_null(out);
    assert_string_equal(out, "{\"a\":1e-07,\"b\":0.75,\"c\":1e+20}");
    free(out);
    setlocale(LC_NUMERIC, "C");
}

/* bd_json_print: the tree's member order, and every double in the shortest form that
 * reads back as itself (what --json prints), the same digits canonical JSON writes. */
static void test_print_shortest_in_order(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "z", 0.8173076923076923);
    cJSON_AddNumberToObject(o, "a", 0.1);
    cJSON_AddNumberToObject(o, "n", 13);
    cJSON_AddNumberToObject(o, "nan", NAN);
    cJSON_AddStringToObject(o, "s", "x\"y");
    char *p = bd_json_print(o, NULL);
    assert_non_null(p);
    assert_string_equal(p, "{\"z\":0.8173076923076923,\"a\":0.1,\"n\":13,\"nan\":null,"
                           "\"s\":\"x\\\"y\"}");
    free(p);
    cJSON_Delete(o);
    /* Many doubles: the printed text reads back as the same double and is never longer
     * than what %.17g gives; and it is the number's canonical form. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d = (double)(x >> 11) / 9007199254740992.0 * (i % 3 == 0 ? 1e6 : 1.0);
        cJSON *n = cJSON_CreateNumber(d);
        char *t = bd_json_print(n, NULL), *c = bd_canon_json(n, NULL), g17[40];
        snprintf(g17, sizeof(g17), "%.17g", d);
        assert_non_null(t);
        assert_true(strtod(t, NULL) == d);
        assert_true(strlen(t) <= strlen(g17));
        assert_string_equal(t, c);
        free(t);
        free(c);
        cJSON_Delete(n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_vectors),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_nan_inf_refused),
        cmocka_unit_test(test_duplicate_keys_refused),
        cmocka_unit_test(test_string_escaping),
        cmocka_unit_test(test_invalid_utf8_refused),
        cmocka_unit_test(test_raw_and_invalid_refused),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_empty_containers_and_scalars),
        cmocka_unit_test(test_locale_independent),
        cmocka_unit_test(test_print_shortest_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
