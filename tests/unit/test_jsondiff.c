/*
 * test_jsondiff.c — the field-aligned structural diff (src/base/jsondiff.h): same paths on the
 * same row whatever the key order, changed / only-one-side rows marked, arrays by index,
 * non-JSON text as one value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "jsondiff.h"

static const bd_jd_row *row(const bd_jd *d, const char *path)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->rows[i].path, path) == 0)
            return &d->rows[i];
    return NULL;
}

static void test_aligned(void **state)
{
    (void)state;
    const char *e = "{\"a\":1,\"b\":{\"c\":\"x\",\"d\":[1,2]},\"only_e\":true}";
    const char *a = "{\"b\":{\"d\":[1,3],\"c\":\"x\"},\"a\":1,\"only_a\":null}";
    bd_jd d;
    assert_int_equal(bd_jd_diff(&d, e, strlen(e), a, strlen(a)), 0);
    assert_int_equal(d.n, 6);
    assert_string_equal(d.rows[0].path, "a"); /* expected's order */
    assert_int_equal(row(&d, "a")->status, BD_JD_SAME);
    assert_int_equal(row(&d, "b.c")->status, BD_JD_SAME);
    assert_int_equal(row(&d, "b.d[0]")->status, BD_JD_SAME);
    const bd_jd_row *r = row(&d, "b.d[1]");
    assert_int_equal(r->status, BD_JD_CHANGED);
    assert_string_equal(r->expected, "2");
    assert_string_equal(r->actual, "3");
    assert_int_equal(row(&d, "only_e")->status, BD_JD_ONLY_EXPECTED);
    assert_null(row(&d, "only_e")->actual);
    assert_int_equal(row(&d, "only_a")->status, BD_JD_ONLY_ACTUAL);
    assert_string_equal(d.rows[5].path, "only_a"); /* actual-only rows come last */
    assert_int_equal(d.n_diff, 3);
    bd_jd_release(&d);
}

static void test_not_json_and_missing(void **state)
{
    (void)state;
    bd_jd d;
    const char *e = "{\"k\":\"v\"}";
    assert_int_equal(bd_jd_diff(&d, e, strlen(e), "plain \x1b text", 12), 0);
    assert_int_equal(d.n, 2);
    assert_string_equal(row(&d, "")->actual, "\"plain \\u001b text\"");
    bd_jd_release(&d);
    assert_int_equal(bd_jd_diff(&d, NULL, 0, "[]", 2), 0);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.rows[0].status, BD_JD_ONLY_ACTUAL);
    assert_string_equal(d.rows[0].actual, "[]");
    bd_jd_release(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aligned),
        cmocka_unit_test(test_not_json_and_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
