/*
 * test_text.c — the untrusted-text sanitizer and text helpers (src/base/text.h): every C0 and
 * C1 control, ESC sequences, DEL, the bidi and invisible format characters and invalid
 * UTF-8 come out visible; printable UTF-8 is kept; widths, truncation, C-locale numbers,
 * JSON escaping and nearest-name suggestions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_locale.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "text.h"

/* True when `s` holds nothing a terminal would act on. */
static int terminal_safe(const char *s, int flags)
{
    return !bd_text_needs_vis(s, flags);
}

static void check_vis(const char *in, const char *want)
{
    char *got = bd_text_vis(in, 0);
    assert_non_null(got);
    assert_string_equal(got, want);
    assert_true(terminal_safe(got, 0));
    free(got);
}

static void test_every_c0_c1_and_del(void **state)
{
    (void)state;
    char in[2] = {0, 0};
    char want[16];
    for (unsigned c = 1; c < 0x20; c++) {
        in[0] = (char)c;
        snprintf(want, sizeof(want), "\\x%02x", c);
        check_vis(in, want);
    }
    check_vis("\x7f", "\\x7f");
    for (unsigned c = 0x80; c <= 0x9f; c++) {
        char u[3] = {(char)(0xc0 | (c >> 6)), (char)(0x80 | (c & 0x3f)), 0};
        snprintf(want, sizeof(want), "<U+%04X>", c);
        check_vis(u, want);
    }
}

static void test_escape_sequences(void **state)
{
    (void)state;
    check_vis("a\x1b[2Jb", "a\\x1b[2Jb");
    check_vis("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07");
    check_vis("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
              "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\");
    check_vis("\xc2\x9b"
              "31m",
              "<U+009B>31m"); /* C1 CSI */
    check_vis("x\r\n", "x\\x0d\\x0a");
}

static void test_bidi_and_format(void **state)
{
    (void)state;
    static const unsigned cps[] = {0x061c, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b,
                                   0x202c, 0x202d, 0x202e, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064,
                                   0x2065, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff};
    for (size_t i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
        unsigned c = cps[i];
        char u[5] = {0};
        if (c < 0x800) {
            u[0] = (char)(0xc0 | (c >> 6));
            u[1] = (char)(0x80 | (c & 0x3f));
        } else {
            u[0] = (char)(0xe0 | (c >> 12));
            u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
            u[2] = (char)(0x80 | (c & 0x3f));
        }
        char want[16];
        snprintf(want, sizeof(want), "<U+%04X>", c);
        check_vis(u, want);
    }
    /* Neighbours of the ranges stay. */
    check_vis("\xe2\x80\xaf", "\xe2\x80\xaf"); /* U+202F */
    check_vis("\xe2\x80\x90", "\xe2\x80\x90"); /* U+2010 */
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    check_vis("\xff", "\\xff");
    check_vis("\xc0\xaf", "\\xc0\\xaf");                   /* overlong '/' */
    check_vis("\xed\xa0\x80", "\\xed\\xa0\\x80");          /* surrogate */
    check_vis("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
    check_vis("\xe2\x80", "\\xe2\\x80");                   /* truncated */
    check_vis("\xe2\x80\xae", "<U+202E>");
}

static void test_printable_kept(void **state)
{
    (void)state;
    check_vis("plain ascii ~ \\ {}", "plain ascii ~ \\ {}");
    check_vis("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
              "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
    char *v = bd_text_vis("a\nb\tc", BD_TEXT_KEEP_NL | BD_TEXT_KEEP_TAB);
    assert_string_equal(v, "a\nb\tc");
    free(v);
    v = bd_text_vis(NULL, 0);
    assert_string_equal(v, "");
    free(v);
}

static void test_vis_buf_cut(void **state)
{
    (void)state;
    char buf[6];
    bd_text_vis_buf(buf, sizeof(buf), "ab\xe6\x97\xa5\xe6\x9c\xac", 0);
    assert_string_equal(buf, "ab\xe6\x97\xa5");
    bd_text_vis_buf(buf, sizeof(buf), "\x1b[2J", 0);
    assert_string_equal(buf, "\\x1b[");
    assert_true(terminal_safe(buf, 0));
}

static void test_width_and_fit(void **state)
{
    (void)state;
    assert_int_equal(bd_text_width("abc"), 3);
    assert_int_equal(bd_text_width("\xe6\x97\xa5\xe6\x9c\xac"), 4);
    assert_int_equal(bd_text_width("e\xcc\x81"), 1);
    char out[32];
    assert_false(bd_text_fit(out, sizeof(out), "abc", 3, false));
    assert_string_equal(out, "abc");
    assert_true(bd_text_fit(out, sizeof(out), "abcdef", 4, false));
    assert_string_equal(out, "abc\xe2\x80\xa6");
    assert_true(bd_text_fit(out, sizeof(out), "abcdef", 4, true));
    assert_string_equal(out, "abc~");
    /* A wide character never straddles the edge. */
    assert_true(bd_text_fit(out, sizeof(out), "a\xe6\x97\xa5\xe6\x9c\xac", 4, true));
    assert_string_equal(out, "a\xe6\x97\xa5~");
    assert_int_equal(bd_text_width(out), 4);
}

static void test_numbers_c_locale(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(bd_text_fmt_double(buf, sizeof(buf), 0.0976), "0.0976");
    assert_string_equal(bd_text_fmt_double(buf, sizeof(buf), 0.1 + 0.2), "0.30000000000000004");
    assert_string_equal(bd_text_fmt_double(buf, sizeof(buf), 3), "3");
    assert_string_equal(bd_text_fmt_fixed(buf, sizeof(buf), 0.5, 3), "0.500");
    if (bd_test_comma_locale("text") != 0) {
        skip();
        return;
    }
    char probe[16];
    snprintf(probe, sizeof(probe), "%.1f", 1.5);
    assert_string_equal(probe, "1,5"); /* the locale really is a comma locale */
    assert_string_equal(bd_text_fmt_double(buf, sizeof(buf), 0.0976), "0.0976");
    assert_string_equal(bd_text_fmt_fixed(buf, sizeof(buf), 2.25, 2), "2.25");
    setlocale(LC_NUMERIC, "C");
}

static void test_json_safe(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "t",
                            "a\x1b[2J\xc2\x9b\xe2\x80\xae\x7f\xff"
                            "caf\xc3\xa9");
    char *raw = cJSON_PrintUnformatted(o);
    char *safe = bd_text_json_safe(raw);
    assert_string_equal(safe, "{\"t\":\"a\\u001b[2J\\u009b\\u202e\\u007f\\ufffdcaf\xc3\xa9\"}");
    assert_true(terminal_safe(safe, 0));
    cJSON *back = cJSON_Parse(safe);
    assert_non_null(back);
    cJSON_Delete(back);
    free(raw);
    free(safe);
    cJSON_Delete(o);
}

static void test_nearest(void **state)
{
    (void)state;
    const char *names[] = {"list", "verify", "digest", "history", "recommend", "promote"};
    size_t n = sizeof(names) / sizeof(names[0]);
    assert_string_equal(bd_text_nearest("lsit", names, n), "list");
    assert_string_equal(bd_text_nearest("verfy", names, n), "verify");
    assert_string_equal(bd_text_nearest("hist", names, n), "history");
    assert_string_equal(bd_text_nearest("recomend", names, n), "recommend");
    assert_null(bd_text_nearest("zzzzzzzz", names, n));
    assert_null(bd_text_nearest("", names, n));
    assert_int_equal(bd_text_distance("kitten", "sitting"), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_c0_c1_and_del), cmocka_unit_test(test_escape_sequences),
        cmocka_unit_test(test_bidi_and_format),     cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_printable_kept),      cmocka_unit_test(test_vis_buf_cut),
        cmocka_unit_test(test_width_and_fit),       cmocka_unit_test(test_numbers_c_locale),
        cmocka_unit_test(test_json_safe),           cmocka_unit_test(test_nearest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
