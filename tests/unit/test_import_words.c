/*
 * test_import_words.c — missing shards in plain words (src/run/import.h,
 * bd_import_shard_words): numbered as --shard K/N numbers them, from 0; three or more in
 * a row as a range; cut with "and N more" when the buffer is short.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "import.h"

static void words(const uint32_t *s, size_t n, uint32_t of, size_t cap, const char *want)
{
    char buf[256];
    memset(buf, 'x', sizeof(buf));
    bd_import_shard_words(buf, cap, s, n, of);
    assert_string_equal(buf, want);
}

static void test_plain_words(void **state)
{
    (void)state;
    words((uint32_t[]){1}, 1, 3, 256, "shard 1 of 3");
    words((uint32_t[]){0}, 1, 100, 256, "shard 0 of 100");
    words((uint32_t[]){1, 2}, 2, 3, 256, "shards 1 and 2 of 3");
    words((uint32_t[]){0, 2, 5}, 3, 9, 256, "shards 0, 2 and 5 of 9");
    words((uint32_t[]){60, 61, 62, 63}, 4, 64, 256, "shards 60-63 of 64");
    words((uint32_t[]){4, 7, 8, 10, 11, 12}, 6, 13, 256, "shards 4, 7, 8 and 10-12 of 13");
}

static void test_cut_when_short(void **state)
{
    (void)state;
    uint32_t s[200];
    for (uint32_t i = 0; i < 200; i++)
        s[i] = 2 * i; /* no two in a row */
    char buf[64];
    bd_import_shard_words(buf, sizeof(buf), s, 200, 400);
    assert_true(strlen(buf) < sizeof(buf));
    assert_non_null(strstr(buf, "shards 0, 2, "));
    assert_non_null(strstr(buf, " more of 400"));
    /* the numbers shown plus the "N more" account for every shard */
    size_t shown = 1;
    for (const char *p = buf; *p; p++)
        shown += *p == ',';
    char tail[32];
    snprintf(tail, sizeof(tail), " and %zu more of 400", (size_t)200 - shown);
    assert_non_null(strstr(buf, tail));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_words),
        cmocka_unit_test(test_cut_when_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
