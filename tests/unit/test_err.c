/*
 * test_err.c — the error setter (src/base/err.h): whatever the arguments hold, a bd_err
 * message is one printable line. Control characters, bidi controls and bytes that are
 * not UTF-8 in a quoted name are written visibly (as bd_text_vis writes them) when the
 * message is set, not later by whichever front end prints it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "text.h"

/* One line, nothing a terminal would act on, NUL-terminated inside the buffer. */
static void assert_one_line(const bd_err *e)
{
    assert_true(memchr(e->msg, '\0', sizeof(e->msg)) != NULL);
    assert_null(strchr(e->msg, '\n'));
    assert_null(strchr(e->msg, '\r'));
    assert_false(bd_text_needs_vis(e->msg, 0));
}

static void test_newline_in_an_argument(void **state)
{
    (void)state;
    bd_err e = BD_ERR_INIT;
    /* The key of the fuzz finding: a manifest member name holding an escaped newline. */
    assert_int_equal(bd_err_set(&e, BD_E_BUNDLE_INVALID, "manifest.json", 0, 0,
                                "unexpected member \"%s\"", "ben\\\\\\\n_clnut"),
                     -1);
    assert_one_line(&e);
    assert_string_equal(e.msg, "manifest.json: unexpected member \"ben\\\\\\\\x0a_clnut\"");
    assert_int_equal(e.code, BD_E_BUNDLE_INVALID);
}

static void test_every_unsafe_kind(void **state)
{
    (void)state;
    bd_err e = BD_ERR_INIT;
    bd_err_set(&e, BD_E_UNKNOWN_CASE, NULL, 0, 0, "case '%s'",
               "a\tb\rc\x1b[2Jd\x7f\xc2\x9b\xe2\x80\xae\xff");
    assert_one_line(&e);
    assert_string_equal(e.msg, "case 'a\\x09b\\x0dc\\x1b[2Jd\\x7f<U+009B><U+202E>\\xff'");
}

static void test_location_prefix_is_sanitized(void **state)
{
    (void)state;
    bd_err e = BD_ERR_INIT;
    bd_err_set(&e, BD_E_YAML_SYNTAX, "cases/evil\nname.yaml", 3, 7, "bad indent");
    assert_one_line(&e);
    assert_string_equal(e.msg, "cases/evil\\x0aname.yaml:3:7: bad indent");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.col, 7);
}

static void test_printable_text_unchanged(void **state)
{
    (void)state;
    bd_err e = BD_ERR_INIT;
    /* Printable UTF-8 stays; a backslash stays; already visible text is not escaped twice. */
    const char *ok = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac C:\\path \\x0a already";
    bd_err_set(&e, BD_E_USAGE, NULL, 0, 0, "%s", ok);
    assert_string_equal(e.msg, ok);
    char again[BD_ERR_MSG_MAX];
    bd_err_set(&e, BD_E_USAGE, NULL, 0, 0, "%s", "x\ny");
    snprintf(again, sizeof(again), "%s", e.msg);
    bd_err_set(&e, BD_E_USAGE, NULL, 0, 0, "%s", again);
    assert_string_equal(e.msg, again);
}

static void test_errno_variant(void **state)
{
    (void)state;
    bd_err e = BD_ERR_INIT;
    assert_int_equal(bd_err_errno(&e, BD_E_IO, ENOENT, "dir\n/x", "cannot open '%s'", "a\nb"), -1);
    assert_one_line(&e);
    assert_non_null(strstr(e.msg, "dir\\x0a/x: cannot open 'a\\x0ab': "));
    assert_non_null(strstr(e.msg, strerror(ENOENT)));
}

/* Escapes make a message longer: it is cut before the first escape that does not fit,
 * never inside one, and stays NUL-terminated in the buffer. */
static void test_expansion_is_cut_cleanly(void **state)
{
    (void)state;
    char many[BD_ERR_MSG_MAX];
    memset(many, '\n', sizeof(many) - 1);
    many[sizeof(many) - 1] = '\0';
    bd_err e = BD_ERR_INIT;
    bd_err_set(&e, BD_E_USAGE, NULL, 0, 0, "%s", many);
    assert_one_line(&e);
    size_t len = strlen(e.msg);
    assert_true(len < BD_ERR_MSG_MAX);
    assert_true(len > BD_ERR_MSG_MAX - 8);
    assert_int_equal(len % 4, 0);
    for (size_t i = 0; i < len; i += 4)
        assert_memory_equal(e.msg + i, "\\x0a", 4);
    /* A multi-byte character the formatter cut at the end of the buffer is shown, not
     * left as a broken sequence. */
    char wide[BD_ERR_MSG_MAX + 8];
    memset(wide, 'a', BD_ERR_MSG_MAX - 2);
    memcpy(wide + BD_ERR_MSG_MAX - 2, "\xe2\x82\xac", 4);
    bd_err_set(&e, BD_E_USAGE, NULL, 0, 0, "%s", wide);
    assert_one_line(&e);
}

static void test_null_err(void **state)
{
    (void)state;
    assert_int_equal(bd_err_set(NULL, BD_E_IO, NULL, 0, 0, "x\n"), -1);
    assert_int_equal(bd_err_errno(NULL, BD_E_IO, EIO, NULL, "x\n"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newline_in_an_argument),
        cmocka_unit_test(test_every_unsafe_kind),
        cmocka_unit_test(test_location_prefix_is_sanitized),
        cmocka_unit_test(test_printable_text_unchanged),
        cmocka_unit_test(test_errno_variant),
        cmocka_unit_test(test_expansion_is_cut_cleanly),
        cmocka_unit_test(test_null_err),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
