/*
 * test_strindex.c — the string index over a caller's array (strindex.h): every key added
 * is found at its entry through the growths, an absent key is not, and a cleared index
 * holds nothing until filled again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "strindex.h"

enum { N = 5000 };

typedef struct entry {
    char key[24];
} entry;

static const char *entry_key(const void *entries, size_t i)
{
    return ((const entry *)entries)[i].key;
}

static entry table[N];

static void fill(bd_strindex *ix, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(table[i].key, sizeof(table[i].key), "run-%zu", i * 7919 % 100003);
        assert_int_equal(bd_strindex_find(ix, table, i, table[i].key), i);
        assert_int_equal(bd_strindex_add(ix, table, i + 1), 0);
    }
}

static void test_found_through_growth(void **state)
{
    (void)state;
    bd_strindex ix;
    bd_strindex_init(&ix, entry_key);
    assert_int_equal(bd_strindex_find(&ix, table, 0, "run-1"), 0);
    fill(&ix, N);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(bd_strindex_find(&ix, table, N, table[i].key), i);
    assert_int_equal(bd_strindex_find(&ix, table, N, "run-"), N);
    assert_int_equal(bd_strindex_find(&ix, table, N, "run-100003"), N);
    assert_int_equal(bd_strindex_find(&ix, table, N, ""), N);
    bd_strindex_release(&ix);
}

static void test_clear_then_fill_again(void **state)
{
    (void)state;
    bd_strindex ix;
    bd_strindex_init(&ix, entry_key);
    fill(&ix, 100);
    bd_strindex_clear(&ix);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(bd_strindex_find(&ix, table, 0, table[i].key), 0);
    fill(&ix, 300);
    assert_int_equal(bd_strindex_find(&ix, table, 300, table[299].key), 299);
    bd_strindex_release(&ix);
    assert_int_equal(bd_strindex_find(&ix, table, 300, table[0].key), 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found_through_growth),
        cmocka_unit_test(test_clear_then_fill_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
