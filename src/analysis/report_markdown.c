/*
 * report_markdown.c — a report as Markdown for a CI job summary or a pull-request comment
 * (docs/formats.md#markdown): the summary, the comparison with the previous full run
 * (regressions first), failure-mode counts, the unreviewed failures and the cases with
 * verdicts (each verdict beside its case, those that count for nothing said so). Every untrusted
 * string is made visible, then escaped for HTML (& < > " ' as entities) and for Markdown
 * (its punctuation backslash-escaped), so it renders as the text it is and never as a
 * link, an image, a tag or a table cell break.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "text.h"

/* Untrusted `s`, escaped for Markdown and HTML. */
static void md_text(bd_strbuf *b, const char *s)
{
    char *v = bd_report_text(s);
    if (!v) {
        b->oom = true;
        return;
    }
    for (const char *p = v; *p; p++) {
        switch (*p) {
        case '&':
            bd_strbuf_str(b, "&amp;");
            break;
        case '<':
            bd_strbuf_str(b, "&lt;");
            break;
        case '>':
            bd_strbuf_str(b, "&gt;");
            break;
        case '"':
            bd_strbuf_str(b, "&quot;");
            break;
        case '\'':
            bd_strbuf_str(b, "&#39;");
            break;
        default:
            /* Markdown punctuation; ':' and '.' too, so no autolink (http:, www.) forms. */
            if (strchr("\\`*_{}[]()#+-.!|~:", *p))
                bd_strbuf_add(b, "\\", 1);
            bd_strbuf_add(b, p, 1);
            break;
        }
    }
    free(v);
}

static void md_num(bd_strbuf *b, double v, int prec)
{
    char buf[64];
    bd_strbuf_str(b, bd_text_fmt_fixed(buf, sizeof(buf), v, prec));
}

static void md_count(bd_strbuf *b, size_t n)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%zu", n);
    bd_strbuf_str(b, buf);
}

static void md_pct(bd_strbuf *b, size_t k, size_t n)
{
    md_num(b, n ? 100.0 * (double)k / (double)n : 0.0, 1);
    bd_strbuf_str(b, "%");
}

/* A summary row "| label | value |" whose value is untrusted text. */
static void md_row(bd_strbuf *b, const char *label, const char *value)
{
    bd_strbuf_str(b, "| ");
    bd_strbuf_str(b, label);
    bd_strbuf_str(b, " | ");
    md_text(b, value ? value : "-");
    bd_strbuf_str(b, " |\n");
}

static void md_summary(bd_strbuf *b, const bd_report_run *rr)
{
    const bd_run *run = rr->run;
    char kind[96];
    bd_strbuf_str(b, "## ");
    md_text(b, run->task_class);
    bd_strbuf_str(b, ": ");
    md_count(b, rr->passed);
    bd_strbuf_str(b, " of ");
    md_count(b, run->n_recs);
    bd_strbuf_str(b, " passed\n\n| | |\n|---|---|\n");
    md_row(b, "run", run->run_id);
    md_row(b, "kind", bd_run_kind(run, kind, sizeof(kind)));
    md_row(b, "isolation", run->recs[0].isolation_class);
    md_row(b, "started", run->started_at);
    md_row(b, "finished", run->finished_at);
    if (run->recs[0].operator_fingerprint)
        md_row(b, "operator", run->recs[0].operator_fingerprint);
    bd_strbuf_str(b, "| pass rate | ");
    md_pct(b, rr->passed, run->n_recs);
    bd_strbuf_str(b, " |\n| unreviewed failures | ");
    md_count(b, rr->unreviewed);
    bd_strbuf_str(b, " |\n| mean score | ");
    md_num(b, rr->mean, 3);
    if (rr->have_ci) {
        bd_strbuf_str(b, " (95% BCa ");
        md_num(b, rr->ci_lo, 3);
        bd_strbuf_str(b, " to ");
        md_num(b, rr->ci_hi, 3);
        bd_strbuf_str(b, ")");
    }
    bd_strbuf_str(b, " |\n| cost | $");
    md_num(b, rr->cost_usd, 4);
    bd_strbuf_str(b, " |\n");
    md_row(b, "chain head", rr->last->hash);
    bd_strbuf_str(b, "\n");
}

static void md_side(bd_strbuf *b, const bd_history_record *rec)
{
    if (!rec) {
        bd_strbuf_str(b, " - |");
        return;
    }
    bd_strbuf_str(b, " ");
    md_num(b, rec->score.score, 3);
    bd_strbuf_str(b, rec->score.passed ? " pass |" : " FAIL |");
}

static void md_compare(bd_strbuf *b, const bd_report_run *rr)
{
    bd_strbuf_str(b, "### Compared with the previous full run\n\n");
    if (!rr->have_cmp) {
        md_text(b, rr->cmp_note);
        bd_strbuf_str(b, "\n\n");
        return;
    }
    const bd_compare *c = &rr->cmp;
    bd_strbuf_str(b, "Run ");
    md_text(b, c->a->run_id);
    bd_strbuf_str(b, " (before) against this run.");
    if (c->task_class_changed)
        bd_strbuf_str(b, " **The rubric or registration changed between the runs.**");
    bd_strbuf_str(b, "\n\n");
    for (int s = 0; s < BD_CMP__COUNT; s++) {
        bd_strbuf_str(b, s ? ", " : "");
        md_count(b, c->counts[s]);
        bd_strbuf_str(b, " ");
        bd_strbuf_str(b, bd_cmp_status_str((bd_cmp_status)s));
    }
    bd_strbuf_str(b, "\n\n");
    if (c->have_stats) {
        bd_strbuf_str(b, "Over ");
        md_count(b, c->comparable);
        bd_strbuf_str(b, " comparable cases: mean ");
        md_num(b, c->mean_a, 3);
        bd_strbuf_str(b, " to ");
        md_num(b, c->mean_b, 3);
        bd_strbuf_str(b, ", paired delta ");
        md_num(b, c->mean_delta, 3);
        bd_strbuf_str(b, " (95% BCa ");
        md_num(b, c->ci_lo, 3);
        bd_strbuf_str(b, " to ");
        md_num(b, c->ci_hi, 3);
        bd_strbuf_str(b, "); pass rate ");
        md_num(b, c->pass_rate_a * 100.0, 1);
        bd_strbuf_str(b, "% to ");
        md_num(b, c->pass_rate_b * 100.0, 1);
        bd_strbuf_str(b, "%, McNemar's exact p = ");
        md_num(b, c->p_value, 4);
        bd_strbuf_str(b, " (");
        md_count(b, c->pass_to_fail);
        bd_strbuf_str(b, " pass to fail, ");
        md_count(b, c->fail_to_pass);
        bd_strbuf_str(b, " fail to pass)\n\n");
    }
    bool header = false;
    for (size_t i = 0; i < c->n_cases; i++) {
        const bd_compare_case *cc = &c->cases[i];
        if (cc->status == BD_CMP_UNCHANGED)
            continue;
        if (!header)
            bd_strbuf_str(b, "| case | status | before | after | delta |\n|---|---|---|---|---|\n");
        header = true;
        bd_strbuf_str(b, "| ");
        md_text(b, cc->case_id);
        bd_strbuf_str(b, " | ");
        bd_strbuf_str(b, bd_cmp_status_str(cc->status));
        bd_strbuf_str(b, " |");
        md_side(b, cc->a);
        md_side(b, cc->b);
        bd_strbuf_str(b, " ");
        if (cc->a && cc->b)
            md_num(b, cc->delta, 3);
        bd_strbuf_str(b, " |\n");
    }
    bd_strbuf_str(b, header ? "\n" : "");
}

static void md_modes(bd_strbuf *b, const bd_report_run *rr)
{
    bd_strbuf_str(b, "### Failure modes\n\n");
    if (!rr->bdown.n_modes) {
        bd_strbuf_str(b, "None reported.\n\n");
        return;
    }
    bd_strbuf_str(b, "| failure mode | cases | worst severity |\n|---|---|---|\n");
    for (size_t i = 0; i < rr->bdown.n_modes; i++) {
        const bd_bdown_mode *m = &rr->bdown.modes[i];
        bd_strbuf_str(b, "| ");
        md_text(b, m->code);
        bd_strbuf_str(b, " | ");
        md_count(b, m->count);
        bd_strbuf_str(b, " | ");
        bd_strbuf_str(b, bd_severity_str(m->severity));
        bd_strbuf_str(b, " |\n");
    }
    bd_strbuf_str(b, "\n");
}

/* The verdicts shown on `rec`, "; " between them ("-" when none). */
static void md_verdicts(bd_strbuf *b, const bd_report_run *rr, const bd_history_record *rec)
{
    bd_report_verdict v[32];
    size_t n = bd_report_verdicts(rr, rec, v, 32);
    bd_strbuf_str(b, n ? "" : "-");
    for (size_t i = 0; i < n; i++) {
        char *line = bd_report_verdict_line(&v[i]);
        if (!line)
            b->oom = true;
        bd_strbuf_str(b, i ? "; " : "");
        md_text(b, line ? line : "?");
        free(line);
    }
}

/* One row of a failure table: case, score, first failure mode, detail, verdicts. */
static void md_failure_row(bd_strbuf *b, const bd_report_run *rr, const bd_history_record *rec)
{
    const bd_score *s = &rec->score;
    bd_strbuf_str(b, "| ");
    md_text(b, rec->case_id);
    bd_strbuf_str(b, " | ");
    md_num(b, s->score, 3);
    bd_strbuf_str(b, s->passed ? " pass | " : " FAIL | ");
    md_text(b, s->passed ? "" : bd_report_first_code(s));
    bd_strbuf_str(b, " | ");
    md_text(b, s->n_failure_modes && s->failure_modes[0].detail ? s->failure_modes[0].detail : "");
    /* the checks the rubric says failed, by name (docs/formats.md#what-the-rubric-compared) */
    for (size_t i = 0, n = 0; !s->passed && i < s->n_checks; i++) {
        if (s->checks[i].passed)
            continue;
        bd_strbuf_str(b, n++ ? ", " : " (failed check: ");
        md_text(b, s->checks[i].name);
        if (i + 1 == s->n_checks ||
            !bd_score_checks_first_failed(s->checks + i + 1, s->n_checks - i - 1))
            bd_strbuf_str(b, ")");
    }
    bd_strbuf_str(b, " | ");
    md_verdicts(b, rr, rec);
    bd_strbuf_str(b, " |\n");
}

#define MD_FAILURE_HEAD                                                                            \
    "| case | score | failure mode | detail | verdicts |\n|---|---|---|---|---|\n"

/* The failures without a counting verdict (bd_review_unreviewed, the review queue's rule),
 * then the other cases that carry verdicts. */
static void md_failures(bd_strbuf *b, const bd_report_run *rr)
{
    bd_strbuf_str(b, "### Unreviewed failures\n\n");
    const bd_run *run = rr->run;
    if (!rr->failed)
        bd_strbuf_str(b, "No case failed.\n\n");
    else if (!rr->unreviewed)
        bd_strbuf_str(b, "Every failure has a verdict that counts.\n\n");
    else
        bd_strbuf_str(b, MD_FAILURE_HEAD);
    for (size_t i = 0; i < run->n_recs; i++)
        if (bd_review_unreviewed(rr->vs, &run->recs[i]))
            md_failure_row(b, rr, &run->recs[i]);
    bd_strbuf_str(b, rr->unreviewed ? "\n" : "");
    bool head = false;
    for (size_t i = 0; i < run->n_recs; i++) {
        const bd_history_record *rec = &run->recs[i];
        bd_report_verdict v[1];
        if (bd_review_unreviewed(rr->vs, rec) || bd_report_verdicts(rr, rec, v, 1) == 0)
            continue;
        if (!head)
            bd_strbuf_str(b, "### Cases with verdicts\n\n" MD_FAILURE_HEAD);
        head = true;
        md_failure_row(b, rr, rec);
    }
    bd_strbuf_str(b, head ? "\n" : "");
}

int bd_report_markdown(const bd_report *r, char **out, size_t *len, bd_err *err)
{
    bd_strbuf b = BD_STRBUF_INIT;
    bd_strbuf_str(&b, "# benchdesk report\n\n");
    for (size_t i = 0; i < r->n; i++) {
        md_summary(&b, &r->v[i]);
        md_compare(&b, &r->v[i]);
        md_modes(&b, &r->v[i]);
        md_failures(&b, &r->v[i]);
    }
    *len = b.len;
    *out = bd_strbuf_take(&b);
    if (!*out)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory writing a Markdown report");
    return 0;
}
