/*
 * report_junit.c — a report as JUnit XML (docs/formats.md#junit-xml), written with
 * libxml2's text writer, which escapes markup; text XML 1.0 cannot carry is made visible
 * first (bd_report_text), so the file always parses.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xml2.h"

#include "strbuf.h"
#include "text.h"

/* Attribute `name` = `value` made visible. Returns libxml2's status (< 0 on failure). */
static int attr(xmlTextWriterPtr w, const char *name, const char *value)
{
    char *v = bd_report_text(value);
    if (!v)
        return -1;
    int rc = xmlTextWriterWriteAttribute(w, BAD_CAST name, BAD_CAST v);
    free(v);
    return rc;
}

static int attr_num(xmlTextWriterPtr w, const char *name, double v, int prec)
{
    char buf[64];
    return xmlTextWriterWriteAttribute(w, BAD_CAST name,
                                       BAD_CAST bd_text_fmt_fixed(buf, sizeof(buf), v, prec));
}

static int attr_count(xmlTextWriterPtr w, const char *name, size_t n)
{
    return xmlTextWriterWriteFormatAttribute(w, BAD_CAST name, "%zu", n);
}

static int property(xmlTextWriterPtr w, const char *name, const char *value)
{
    if (xmlTextWriterStartElement(w, BAD_CAST "property") < 0 || attr(w, "name", name) < 0 ||
        attr(w, "value", value ? value : "") < 0)
        return -1;
    return xmlTextWriterEndElement(w);
}

/* "verdicts:" and one line per verdict shown on `rec` (bd_report_verdicts), made visible. */
static void verdict_lines(bd_strbuf *b, const bd_report_run *rr, const bd_history_record *rec)
{
    bd_report_verdict v[32];
    size_t n = bd_report_verdicts(rr, rec, v, 32);
    if (n)
        bd_strbuf_str(b, "verdicts:\n");
    for (size_t i = 0; i < n; i++) {
        char *line = bd_report_verdict_line(&v[i]), *vis = line ? bd_report_text(line) : NULL;
        if (!vis)
            b->oom = true;
        bd_strbuf_str(b, "  ");
        bd_strbuf_str(b, vis ? vis : "?");
        bd_strbuf_str(b, "\n");
        free(line);
        free(vis);
    }
}

/* `label` and `value` made visible, as one line of `b`. */
static void check_line(bd_strbuf *b, const char *label, const char *value)
{
    char *vis = bd_report_text(value ? value : "null");
    if (!vis)
        b->oom = true;
    bd_strbuf_str(b, label);
    bd_strbuf_str(b, vis ? vis : "?");
    bd_strbuf_str(b, "\n");
    free(vis);
}

/* "failed checks:" and, for each check the rubric says failed (in its order), its name,
 * then what was expected and what came in canonical JSON, each made visible
 * (docs/formats.md#what-the-rubric-compared). Nothing when no check failed. */
static void failed_checks(bd_strbuf *b, const bd_score *s)
{
    if (!bd_score_checks_first_failed(s->checks, s->n_checks))
        return;
    bd_strbuf_str(b, "failed checks:\n");
    for (size_t i = 0; i < s->n_checks; i++) {
        const bd_score_check *c = &s->checks[i];
        if (c->passed)
            continue;
        check_line(b, "  ", c->name);
        check_line(b, "    expected: ", c->expected);
        check_line(b, "    actual:   ", c->actual);
    }
}

/* The body of a failure: the score, every failure mode, the failed checks, the breakdown
 * and the verdicts, one per line. */
static char *failure_body(const bd_report_run *rr, const bd_history_record *rec)
{
    const bd_score *s = &rec->score;
    bd_strbuf b = BD_STRBUF_INIT;
    char num[64];
    bd_strbuf_str(&b, "\nscore ");
    bd_strbuf_str(&b, bd_text_fmt_fixed(num, sizeof(num), s->score, 3));
    bd_strbuf_str(&b, s->passed ? " (passed)\n" : " (failed)\n");
    if (s->n_failure_modes)
        bd_strbuf_str(&b, "failure modes:\n");
    for (size_t i = 0; i < s->n_failure_modes; i++) {
        const bd_score_fm *fm = &s->failure_modes[i];
        char *code = bd_report_text(fm->code), *detail = bd_report_text(fm->detail);
        bd_strbuf_str(&b, "  ");
        bd_strbuf_str(&b, bd_severity_str(fm->severity));
        bd_strbuf_str(&b, " ");
        bd_strbuf_str(&b, code ? code : "?");
        if (fm->detail) {
            bd_strbuf_str(&b, ": ");
            bd_strbuf_str(&b, detail ? detail : "?");
        }
        bd_strbuf_str(&b, "\n");
        free(code);
        free(detail);
    }
    failed_checks(&b, s);
    if (s->n_breakdown)
        bd_strbuf_str(&b, "breakdown:\n");
    for (size_t i = 0; i < s->n_breakdown; i++) {
        char *key = bd_report_text(s->breakdown[i].key);
        bd_strbuf_str(&b, "  ");
        bd_strbuf_str(&b, key ? key : "?");
        bd_strbuf_str(&b, " ");
        bd_strbuf_str(&b, bd_text_fmt_fixed(num, sizeof(num), s->breakdown[i].value, 3));
        bd_strbuf_str(&b, "\n");
        free(key);
    }
    verdict_lines(&b, rr, rec);
    return bd_strbuf_take(&b);
}

static int testcase(xmlTextWriterPtr w, const bd_report_run *rr, const bd_history_record *rec)
{
    const bd_score *s = &rec->score;
    if (xmlTextWriterStartElement(w, BAD_CAST "testcase") < 0 ||
        attr(w, "classname", rec->task_class) < 0 || attr(w, "name", rec->case_id) < 0 ||
        attr_num(w, "time", (double)s->wall_clock_ms / 1000.0, 3) < 0)
        return -1;
    if (!s->passed) {
        const char *detail =
            s->n_failure_modes && s->failure_modes[0].detail ? s->failure_modes[0].detail : "";
        char *body = failure_body(rr, rec); /* its pieces are made visible already */
        int rc = !body || xmlTextWriterStartElement(w, BAD_CAST "failure") < 0 ||
                         attr(w, "type", bd_report_first_code(s)) < 0 ||
                         attr(w, "message", detail) < 0 ||
                         xmlTextWriterWriteString(w, BAD_CAST body) < 0 ||
                         xmlTextWriterEndElement(w) < 0
                     ? -1
                     : 0;
        free(body);
        if (rc != 0)
            return -1;
    }
    return xmlTextWriterEndElement(w);
}

/* The record digest of a task class (version 1: the rubric's). */
static const char *tc_digest(const bd_history_record *r)
{
    return r->task_class_digest ? r->task_class_digest : r->rubric_digest;
}

static int testsuite(xmlTextWriterPtr w, const bd_report_run *rr, const char *start_mode)
{
    const bd_run *run = rr->run;
    const bd_history_record *r0 = &run->recs[0];
    char kind[96], seq[32];
    snprintf(seq, sizeof(seq), "%llu", (unsigned long long)run->last_seq);
    if (xmlTextWriterStartElement(w, BAD_CAST "testsuite") < 0 ||
        attr(w, "name", run->task_class) < 0 || attr_count(w, "tests", run->n_recs) < 0 ||
        attr_count(w, "failures", rr->failed) < 0 || attr_count(w, "errors", 0) < 0 ||
        attr_count(w, "skipped", 0) < 0 ||
        attr_num(w, "time", (double)rr->wall_ms / 1000.0, 3) < 0 ||
        attr(w, "timestamp", run->started_at) < 0 ||
        xmlTextWriterStartElement(w, BAD_CAST "properties") < 0 ||
        property(w, "run_id", run->run_id) < 0 ||
        property(w, "run_kind", bd_run_kind(run, kind, sizeof(kind))) < 0 ||
        property(w, "isolation_class", r0->isolation_class) < 0 ||
        property(w, "task_class_digest", tc_digest(r0)) < 0 ||
        (r0->operator_fingerprint &&
         property(w, "operator_fingerprint", r0->operator_fingerprint) < 0) ||
        (start_mode && property(w, "start_mode", start_mode) < 0) ||
        property(w, "harness_version", r0->harness_version) < 0 ||
        property(w, "started_at", run->started_at) < 0 ||
        property(w, "finished_at", run->finished_at) < 0 ||
        property(w, "chain_head", rr->last->hash) < 0 || property(w, "chain_seq", seq) < 0 ||
        xmlTextWriterEndElement(w) < 0)
        return -1;
    for (size_t i = 0; i < run->n_recs; i++)
        if (testcase(w, rr, &run->recs[i]) < 0)
            return -1;
    return xmlTextWriterEndElement(w);
}

static int document(xmlTextWriterPtr w, const bd_report *r)
{
    size_t tests = 0, failures = 0;
    int64_t ms = 0;
    for (size_t i = 0; i < r->n; i++) {
        tests += r->v[i].run->n_recs;
        failures += r->v[i].failed;
        ms += r->v[i].wall_ms;
    }
    if (xmlTextWriterSetIndent(w, 1) < 0 || xmlTextWriterSetIndentString(w, BAD_CAST "  ") < 0 ||
        xmlTextWriterStartDocument(w, "1.0", "UTF-8", NULL) < 0 ||
        xmlTextWriterStartElement(w, BAD_CAST "testsuites") < 0 ||
        attr(w, "name", "benchdesk") < 0 || attr_count(w, "tests", tests) < 0 ||
        attr_count(w, "failures", failures) < 0 || attr_count(w, "errors", 0) < 0 ||
        attr_num(w, "time", (double)ms / 1000.0, 3) < 0)
        return -1;
    for (size_t i = 0; i < r->n; i++)
        if (testsuite(w, &r->v[i], r->start_mode) < 0)
            return -1;
    if (xmlTextWriterEndElement(w) < 0 || xmlTextWriterEndDocument(w) < 0)
        return -1;
    return 0;
}

int bd_report_junit(const bd_report *r, char **out, size_t *len, bd_err *err)
{
    *out = NULL;
    *len = 0;
    if (bd_xml2_load(err) < 0)
        return -1;
    xmlBufferPtr buf = xmlBufferCreate();
    xmlTextWriterPtr w = buf ? xmlNewTextWriterMemory(buf, 0) : NULL;
    int rc = w ? document(w, r) : -1;
    xmlFreeTextWriter(w); /* flushes into buf */
    if (rc == 0) {
        size_t n = (size_t)xmlBufferLength(buf);
        *out = malloc(n + 1);
        if (*out) {
            memcpy(*out, xmlBufferContent(buf), n);
            (*out)[n] = '\0';
            *len = n;
        }
    }
    xmlBufferFree(buf);
    if (!*out)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory writing a JUnit report");
    return 0;
}
