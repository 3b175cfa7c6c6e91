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

/* Two front ends' words for the same actions, as the CLI and the TUI tables are. */
static const char *const cli_words[BD_ACT__COUNT] = {
    [BD_ACT_ALLOW_WEAKER] = "; pass --allow-weaker-isolation to run under '%s' instead",
    [BD_ACT_SIGN_TASK_CLASS] =
        "(`benchdesk sign bench/%s --role author`, then a second person as reviewer)",
    [BD_ACT_STAGE] = "`benchdesk stage PATH...`",
};
static const char *const tui_words[BD_ACT__COUNT] = {
    [BD_ACT_ALLOW_WEAKER] = "; W in the run view runs it under '%s' instead",
    [BD_ACT_SIGN_TASK_CLASS] = "(P on %s, as author; %s again)",
};

static void test_advice_is_data(void **state)
{
    (void)state;
    char out[BD_ERR_MSG_MAX + 512];
    bd_err e = BD_ERR_INIT;
    assert_int_equal(e.action, BD_ACT_NONE);
    bd_err_set(&e, BD_E_ISOLATION_UNAVAILABLE, NULL, 0, 0, "no user namespaces");
    assert_int_equal(bd_err_advise(&e, BD_ACT_ALLOW_WEAKER, "%s", "subprocess"), -1);
    /* The message keeps the what; the action is apart from it. */
    assert_string_equal(e.msg, "no user namespaces");
    assert_int_equal(e.action, BD_ACT_ALLOW_WEAKER);
    assert_string_equal(e.action_arg, "subprocess");
    assert_string_equal(bd_action_kind(e.action), "allow_weaker_isolation");
    /* The CLI's words make today's line byte for byte; the TUI's its keys. */
    assert_string_equal(bd_err_render(&e, cli_words, out, sizeof(out)),
                        "no user namespaces; pass --allow-weaker-isolation to run under "
                        "'subprocess' instead");
    assert_string_equal(bd_err_render(&e, tui_words, out, sizeof(out)),
                        "no user namespaces; W in the run view runs it under 'subprocess' "
                        "instead");
    /* Setting a new error drops the old advice. */
    bd_err_set(&e, BD_E_USAGE, "f.yaml", 2, 0, "bad");
    assert_int_equal(e.action, BD_ACT_NONE);
    assert_string_equal(e.action_arg, "");
    assert_string_equal(bd_err_render(&e, cli_words, out, sizeof(out)), "f.yaml:2: bad");
}

static void test_advice_mid_message(void **state)
{
    (void)state;
    char out[BD_ERR_MSG_MAX + 512];
    bd_err e = BD_ERR_INIT;
    bd_err_set(&e, BD_E_PROVENANCE_MISSING, "p.yaml", 0, 0, "tc is draft; sign it ");
    bd_err_advise(&e, BD_ACT_SIGN_TASK_CLASS, "%s", "tc\n");
    assert_int_equal(bd_err_append(&e, ", or %s", "pass --drafts"), -1);
    assert_string_equal(e.msg, "p.yaml: tc is draft; sign it , or pass --drafts");
    /* The argument is made one line like a message; every "%s" in the words is it. */
    assert_string_equal(e.action_arg, "tc\\x0a");
    assert_string_equal(bd_err_render(&e, cli_words, out, sizeof(out)),
                        "p.yaml: tc is draft; sign it (`benchdesk sign bench/tc\\x0a --role "
                        "author`, then a second person as reviewer), or pass --drafts");
    assert_string_equal(bd_err_render(&e, tui_words, out, sizeof(out)),
                        "p.yaml: tc is draft; sign it (P on tc\\x0a, as author; tc\\x0a "
                        "again), or pass --drafts");
    /* A table without words for the action shows the message alone; a small buffer cuts. */
    bd_err_set(&e, BD_E_GIT_NOTHING_TO_COMMIT, NULL, 0, 0, "nothing is staged; stage with ");
    bd_err_advise(&e, BD_ACT_STAGE, NULL);
    assert_string_equal(bd_err_render(&e, tui_words, out, sizeof(out)),
                        "nothing is staged; stage with ");
    assert_string_equal(bd_err_render(&e, cli_words, out, 36),
                        "nothing is staged; stage with `benc");
    assert_int_equal(bd_err_advise(NULL, BD_ACT_STAGE, NULL), -1);
    assert_int_equal(bd_err_append(NULL, "x"), -1);
}

/* A wrapped error keeps its advice where it stood in the old text. */
static void test_wrap_keeps_advice(void **state)
{
    (void)state;
    char out[BD_ERR_MSG_MAX + 512];
    bd_err e = BD_ERR_INIT;
    bd_err_set(&e, BD_E_PROVENANCE_MISSING, "p.yaml", 0, 0, "tc is draft; sign it ");
    bd_err_advise(&e, BD_ACT_SIGN_TASK_CLASS, "%s", "tc");
    bd_err_append(&e, " first");
    assert_int_equal(bd_err_wrap(&e, BD_E_USAGE, "w.json", "cannot go on (", ")"), -1);
    assert_int_equal(e.code, BD_E_USAGE);
    assert_string_equal(e.msg, "w.json: cannot go on (p.yaml: tc is draft; sign it  first)");
    assert_string_equal(bd_err_render(&e, cli_words, out, sizeof(out)),
                        "w.json: cannot go on (p.yaml: tc is draft; sign it (`benchdesk sign "
                        "bench/tc --role author`, then a second person as reviewer) first)");
    /* Without advice: only the text. */
    bd_err_set(&e, BD_E_USAGE, NULL, 0, 0, "inner");
    bd_err_wrap(&e, BD_E_IO, NULL, "outer: ", "");
    assert_string_equal(bd_err_render(&e, cli_words, out, sizeof(out)), "outer: inner");
    assert_int_equal(bd_err_wrap(NULL, BD_E_IO, NULL, "", ""), -1);
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
        cmocka_unit_test(test_advice_is_data),
        cmocka_unit_test(test_advice_mid_message),
        cmocka_unit_test(test_wrap_keeps_advice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
