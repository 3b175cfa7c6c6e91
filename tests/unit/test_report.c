/*
 * test_report.c — reports of runs (src/analysis/report.h) over a real history in a temp
 * directory: every format parses with libxml2's own XML and HTML parsers, is the same bytes
 * twice, holds hostile failure details (markup, ESC, U+FFFE, a bidi override) as visible
 * text only; the runs reported by default and by id; no runs; the format names.
 */
#include "test_history_util.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>

#include "report.h"

#define HOSTILE                                                                                    \
    "<script>alert(1)</script><img src=x onerror=alert(2)>[x](javascript:alert(3))</style>"        \
    "\x1b[31m\xef\xbf\xbe\xe2\x80\xae & ]]> |"

/* Append a run `run_id` of `n` cases of "tc"; case k fails with the hostile detail when
 * k is odd. */
static void append_run(bd_history *h, const char *run_id, int n, double bump)
{
    for (int k = 0; k < n; k++) {
        bd_history_score_fields f;
        char case_id[32];
        bd_score s;
        th_fields(&f, case_id, "case", k);
        f.run_id = run_id;
        f.task_class = "tc";
        f.run_cases = (uint64_t)n;
        f.isolation_class = "subprocess";
        f.operator_fingerprint = NULL;
        memset(&s, 0, sizeof(s));
        s.passed = k % 2 == 0;
        s.score = s.passed ? 1.0 : 0.25 + bump;
        bd_score_breakdown bk = {(char *)"recipe_match", s.score};
        bd_score_fm fm = {(char *)"cve.not_removed", BD_SEV_BLOCK, (char *)HOSTILE};
        s.breakdown = &bk;
        s.n_breakdown = 1;
        s.failure_modes = s.passed ? NULL : &fm;
        s.n_failure_modes = s.passed ? 0 : 1;
        s.wall_clock_ms = 100 + k;
        bd_err err = BD_ERR_INIT;
        int rc = bd_history_append_score(h, &f, &s, NULL, NULL, &err);
        if (rc != 0)
            fprintf(stderr, "append: %s\n", err.msg);
        assert_int_equal(rc, 0);
    }
}

static char *write_fmt(const bd_report *r, bd_report_format fmt, size_t *len)
{
    char *out = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_report_write(r, fmt, &out, len, &err), 0);
    assert_non_null(out);
    assert_int_equal(strlen(out), *len);
    return out;
}

/* No byte of `s` is a control character but \n. */
static void assert_no_controls(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 && *p != '\n')
            fail_msg("control byte 0x%02x at %zu", *p, (size_t)(p - (const unsigned char *)s));
}

static void test_formats(void **state)
{
    (void)state;
    char *tmp = NULL;
    bd_history *h = th_history(&tmp, "x", 0);
    append_run(h, "20261128T080000Z-aaaa", 5, 0.0);
    append_run(h, "20261128T090000Z-bbbb", 5, 0.25);
    bd_report r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_report_load(&r, h, NULL, NULL, &err), 0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.v[0].run->run_id, "20261128T090000Z-bbbb");
    assert_true(r.v[0].have_cmp);
    assert_int_equal(r.v[0].passed, 3);
    assert_int_equal(r.v[0].failed, 2);
    assert_int_equal(r.v[0].n_trend, 2);

    size_t len, len2;
    char *x = write_fmt(&r, BD_REPORT_JUNIT, &len), *x2 = write_fmt(&r, BD_REPORT_JUNIT, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(x, x2, len);
    assert_no_controls(x);
    assert_null(strstr(x, "\xef\xbf\xbe"));
    assert_non_null(strstr(x, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(x, "\\x1b[31m&lt;U+FFFE&gt;&lt;U+202E&gt; &amp; ]]&gt;"));
    xmlDocPtr doc = xmlReadMemory(x, (int)len, "junit.xml", NULL, XML_PARSE_NONET);
    assert_non_null(doc); /* a real parser takes it */
    xmlFreeDoc(doc);

    char *m = write_fmt(&r, BD_REPORT_MARKDOWN, &len),
         *m2 = write_fmt(&r, BD_REPORT_MARKDOWN, &len2);
    assert_string_equal(m, m2);
    assert_no_controls(m);
    assert_null(strchr(m, '<')); /* every tag-like byte is an entity */
    assert_non_null(strstr(m, "&lt;script&gt;alert\\(1\\)&lt;/script&gt;"));
    assert_non_null(strstr(m, "\\[x\\]\\(javascript\\:alert\\(3\\)\\)"));
    assert_non_null(strstr(m, "\\\\x1b\\[31m"));
    assert_non_null(strstr(m, "\\|"));

    char *p = write_fmt(&r, BD_REPORT_HTML, &len), *p2 = write_fmt(&r, BD_REPORT_HTML, &len2);
    assert_string_equal(p, p2);
    assert_no_controls(p);
    assert_null(strstr(p, "<script"));
    assert_null(strstr(p, "<img"));
    assert_int_equal(strstr(p, "</style>") - strstr(p, "<style>") > 0, 1);
    assert_null(strstr(strstr(p, "</style>") + 1, "</style>")); /* one style element, closed once */
    assert_non_null(strstr(p, "Content-Security-Policy"));
    htmlDocPtr hd = htmlReadMemory(p, (int)len, "report.html", "UTF-8",
                                   HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING);
    assert_non_null(hd);
    xmlFreeDoc(hd);

    free(x);
    free(x2);
    free(m);
    free(m2);
    free(p);
    free(p2);
    bd_report_release(&r);

    /* One run by prefix: the older one, with no comparison (nothing before it). */
    assert_int_equal(bd_report_load(&r, h, NULL, "20261128T08", &err), 0);
    assert_int_equal(r.n, 1);
    assert_false(r.v[0].have_cmp);
    assert_true(r.v[0].cmp_note[0] != '\0');
    assert_int_equal(r.v[0].n_trend, 1); /* the trend stops at the run reported */
    bd_report_release(&r);
    assert_int_equal(bd_report_load(&r, h, NULL, "nosuch", &err), -1);
    assert_int_equal(err.code, BD_E_COMPARE_UNKNOWN_RUN);

    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

static void test_no_runs_and_names(void **state)
{
    (void)state;
    char *tmp = NULL;
    bd_history *h = th_history(&tmp, "x", 0);
    bd_report r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_report_load(&r, h, NULL, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_REPORT_NO_RUNS);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);

    bd_report_format f;
    assert_int_equal(bd_report_format_parse(&f, "junit", &err), 0);
    assert_int_equal(f, BD_REPORT_JUNIT);
    assert_int_equal(bd_report_format_parse(&f, "html", &err), 0);
    assert_int_equal(f, BD_REPORT_HTML);
    assert_int_equal(bd_report_format_parse(&f, "pdf", &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);

    char *t = bd_report_text("a\x1b"
                             "b\xef\xbf\xbf"
                             "c\xef\xbf\xbe");
    assert_string_equal(t, "a\\x1bb<U+FFFF>c<U+FFFE>");
    free(t);
}

/* `n` random code points as UTF-8 into buf: controls, DEL, C1, bidi, the noncharacters
 * U+FFFE/U+FFFF, markup characters and astral ones, all mixed. */
static void random_text(char *buf, size_t cap, uint64_t *x, int n)
{
    static const unsigned picks[] = {0x00,   0x01,   0x07,   0x08,   0x09,   0x0a, 0x0b, 0x0c,
                                     0x0d,   0x1b,   0x1f,   0x7f,   0x80,   0x85, 0x9f, 0x202e,
                                     0x2066, 0xfeff, 0xfffe, 0xffff, '<',    '>',  '&',  '"',
                                     '\'',   ']',    '|',    '`',    0x1f600};
    size_t w = 0;
    for (int i = 0; i < n; i++) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        unsigned cp = (*x % 3) ? picks[(*x >> 8) % (sizeof(picks) / sizeof(picks[0]))]
                               : 0x20 + (unsigned)((*x >> 16) % 0x5f);
        if (cp == 0)
            cp = 0x01; /* a record's strings hold no NUL */
        char u[4];
        size_t k;
        if (cp < 0x80) {
            u[0] = (char)cp;
            k = 1;
        } else if (cp < 0x800) {
            u[0] = (char)(0xc0 | cp >> 6);
            u[1] = (char)(0x80 | (cp & 0x3f));
            k = 2;
        } else if (cp < 0x10000) {
            u[0] = (char)(0xe0 | cp >> 12);
            u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
            u[2] = (char)(0x80 | (cp & 0x3f));
            k = 3;
        } else {
            u[0] = (char)(0xf0 | cp >> 18);
            u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
            u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
            u[3] = (char)(0x80 | (cp & 0x3f));
            k = 4;
        }
        if (w + k + 1 > cap)
            break;
        memcpy(buf + w, u, k);
        w += k;
    }
    buf[w] = '\0';
}

/* Whatever text the records hold, the JUnit file parses and the page holds no element
 * from it. */
static void test_any_text(void **state)
{
    (void)state;
    char *tmp = NULL;
    bd_history *h = th_history(&tmp, "x", 0);
    uint64_t x = 0x243f6a8885a308d3ull;
    for (int k = 0; k < 64; k++) {
        bd_history_score_fields f;
        char case_id[32], detail[600];
        th_fields(&f, case_id, "case", k);
        f.run_id = "20261128T100000Z-rand";
        f.task_class = "tc";
        f.run_cases = 64;
        f.isolation_class = "subprocess";
        random_text(detail, sizeof(detail), &x, 120);
        bd_score s;
        memset(&s, 0, sizeof(s));
        bd_score_fm fm = {(char *)"cve.not_removed", BD_SEV_WARN, detail};
        s.failure_modes = &fm;
        s.n_failure_modes = 1;
        s.score = 0.5;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_history_append_score(h, &f, &s, NULL, NULL, &err), 0);
    }
    bd_report r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_report_load(&r, h, NULL, NULL, &err), 0);
    size_t len;
    char *xml = write_fmt(&r, BD_REPORT_JUNIT, &len);
    xmlDocPtr doc = xmlReadMemory(xml, (int)len, "junit.xml", NULL, XML_PARSE_NONET);
    assert_non_null(doc);
    xmlFreeDoc(doc);
    assert_no_controls(xml);
    char *page = write_fmt(&r, BD_REPORT_HTML, &len), *md = write_fmt(&r, BD_REPORT_MARKDOWN, &len);
    assert_no_controls(page);
    assert_no_controls(md);
    assert_null(strstr(page, "<script"));
    assert_null(strchr(md, '<'));
    free(xml);
    free(page);
    free(md);
    bd_report_release(&r);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* One verdict line for each standing: counting with and without an identity, untrusted,
 * invalid; the note last, none when it is empty. */
static void test_verdict_lines(void **state)
{
    (void)state;
    bd_verdict_entry e;
    memset(&e, 0, sizeof(e));
    e.v.verdict = BD_VERDICT_RUBRIC_BUG;
    snprintf(e.v.reviewer, sizeof(e.v.reviewer), "%s", "ABCDEF0123456789ABCDEF0123456789ABCDEF01");
    snprintf(e.v.at, sizeof(e.v.at), "%s", "2026-01-02T03:04:05Z");
    snprintf(e.identity, sizeof(e.identity), "%s", "alice@bench.example");
    e.v.note = (char *)HOSTILE;
    bd_report_verdict v = {&e, true};
    char *line = bd_report_verdict_line(&v), why[300];
    assert_string_equal(line, "rubric_bug by alice@bench.example "
                              "(ABCDEF0123456789ABCDEF0123456789ABCDEF01) at "
                              "2026-01-02T03:04:05Z: " HOSTILE);
    assert_string_equal(bd_report_verdict_why(&v, why, sizeof(why)), "");
    free(line);
    e.identity[0] = '\0';
    e.v.note = (char *)"";
    e.state = BD_VST_UNTRUSTED;
    snprintf(e.why, sizeof(e.why), "%s", "no reviewer role");
    v.counts = false;
    line = bd_report_verdict_line(&v);
    assert_string_equal(line, "rubric_bug by ABCDEF0123456789ABCDEF0123456789ABCDEF01 at "
                              "2026-01-02T03:04:05Z, counts for nothing (untrusted: no "
                              "reviewer role)");
    free(line);
    e.state = BD_VST_BAD;
    bd_err_set(&e.err, BD_E_VERDICT_INVALID, NULL, 0, 0, "forged");
    assert_string_equal(bd_report_verdict_why(&v, why, sizeof(why)), "invalid: forged");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_no_runs_and_names),
        cmocka_unit_test(test_any_text),
        cmocka_unit_test(test_verdict_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
