/*
 * report_html.c — a report as one self-contained HTML page (docs/formats.md#html-page):
 * built as a libxml2 HTML tree and serialized by libxml2, never by concatenating text.
 * Untrusted text (made visible first, bd_report_text) goes only into text nodes and plain
 * attribute values (title); never into <style>, a URL or an event attribute. The page has
 * no script, no link and no external resource: its stylesheet is the fixed one below, its
 * charts are inline SVG, and a Content-Security-Policy forbids everything else.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xml2.h"

#include "text.h"

/* Nothing may load or run; inline style (the fixed sheet below) is all the page uses. */
static const char csp[] = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; "
                          "script-src 'none'; base-uri 'none'; form-action 'none'";

/* The stylesheet: fixed text, never built from a record. */
static const char css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#1d2329;"
    "background:#fff;padding:0 1em}"
    "h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:2px solid #d0d7de}"
    "table{border-collapse:collapse;margin:.5em 0 1em}"
    "th,td{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}"
    "th{background:#f3f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}"
    ".regressed{background:#ffebe9}.improved{background:#dafbe1}"
    ".note{color:#57606a}.detail{white-space:pre-wrap;overflow-wrap:anywhere;"
    "font-family:ui-monospace,monospace;font-size:.92em}"
    "svg{display:block;margin:.5em 0 1em;max-width:100%}svg text{font:11px sans-serif;"
    "fill:#1d2329}.bar{fill:#cf222e}.dist{fill:#0969da}.line{fill:none;stroke:#0969da;"
    "stroke-width:2}.dot{fill:#0969da}.axis{stroke:#8c959f;stroke-width:1}"
    "code{font-family:ui-monospace,monospace;overflow-wrap:anywhere}"
    ".verdict{display:inline-block;border-radius:.8em;padding:0 .55em;margin:0 .2em .1em 0;"
    "font-size:.88em;background:#ddf4ff;color:#0a3069;border:1px solid #54aeff}"
    ".verdict.nocount{background:#f6f8fa;color:#57606a;border:1px dashed #8c959f;"
    "text-decoration:line-through}";

/* The tree being built; `oom` is sticky: once set, every helper is a no-op. */
typedef struct page {
    htmlDocPtr doc;
    bool oom;
} page;

static xmlNodePtr el(page *pg, xmlNodePtr parent, const char *name)
{
    if (pg->oom || !parent)
        return NULL;
    xmlNodePtr n = xmlNewChild(parent, NULL, BAD_CAST name, NULL);
    if (!n)
        pg->oom = true;
    return n;
}

/* Append text node `s` (trusted: the page's own words) to `n`. */
static void text(page *pg, xmlNodePtr n, const char *s)
{
    if (pg->oom || !n)
        return;
    xmlNodePtr t = xmlNewDocText(pg->doc, BAD_CAST s);
    if (!t || !xmlAddChild(n, t)) {
        xmlFreeNode(t);
        pg->oom = true;
    }
}

/* Append untrusted `s`, made visible, as a text node of `n`. */
static void utext(page *pg, xmlNodePtr n, const char *s)
{
    char *v = bd_report_text(s);
    if (!v)
        pg->oom = true;
    else
        text(pg, n, v);
    free(v);
}

/* Attribute `name`="`value`" (libxml2 escapes it as a plain attribute value). */
static void attr(page *pg, xmlNodePtr n, const char *name, const char *value)
{
    if (pg->oom || !n)
        return;
    if (!xmlNewProp(n, BAD_CAST name, BAD_CAST value))
        pg->oom = true;
}

static xmlNodePtr el_text(page *pg, xmlNodePtr parent, const char *name, const char *s)
{
    xmlNodePtr n = el(pg, parent, name);
    text(pg, n, s);
    return n;
}

static xmlNodePtr el_utext(page *pg, xmlNodePtr parent, const char *name, const char *s)
{
    xmlNodePtr n = el(pg, parent, name);
    utext(pg, n, s);
    return n;
}

static const char *num(char *buf, size_t cap, double v, int prec)
{
    return bd_text_fmt_fixed(buf, cap, v, prec);
}

static const char *count(char *buf, size_t cap, size_t n)
{
    snprintf(buf, cap, "%zu", n);
    return buf;
}

/* A table cell holding a number. */
static void td_num(page *pg, xmlNodePtr tr, const char *s)
{
    attr(pg, el_text(pg, tr, "td", s), "class", "num");
}

static xmlNodePtr table_head(page *pg, xmlNodePtr parent, const char *const *cols, size_t n)
{
    xmlNodePtr t = el(pg, parent, "table");
    xmlNodePtr tr = el(pg, el(pg, t, "thead"), "tr");
    for (size_t i = 0; i < n; i++)
        el_text(pg, tr, "th", cols[i]);
    return el(pg, t, "tbody");
}

/* A row "label | value" of the summary table; `value` is untrusted. */
static void kv(page *pg, xmlNodePtr tbody, const char *label, const char *value)
{
    xmlNodePtr tr = el(pg, tbody, "tr");
    el_text(pg, tr, "th", label);
    el_utext(pg, tr, "td", value ? value : "-");
}

/* ---- SVG ------------------------------------------------------------------------- */

static xmlNodePtr svg(page *pg, xmlNodePtr parent, double w, double h, const char *label)
{
    char vb[96];
    snprintf(vb, sizeof(vb), "0 0 %.0f %.0f", w, h);
    xmlNodePtr s = el(pg, parent, "svg");
    attr(pg, s, "xmlns", "http://www.w3.org/2000/svg");
    attr(pg, s, "viewBox", vb);
    snprintf(vb, sizeof(vb), "%.0f", w);
    attr(pg, s, "width", vb);
    snprintf(vb, sizeof(vb), "%.0f", h);
    attr(pg, s, "height", vb);
    attr(pg, s, "role", "img");
    attr(pg, s, "aria-label", label);
    return s;
}

static void svg_rect(page *pg, xmlNodePtr s, double x, double y, double w, double h,
                     const char *cls)
{
    char b[4][32];
    xmlNodePtr r = el(pg, s, "rect");
    attr(pg, r, "x", num(b[0], sizeof(b[0]), x, 1));
    attr(pg, r, "y", num(b[1], sizeof(b[1]), y, 1));
    attr(pg, r, "width", num(b[2], sizeof(b[2]), w, 1));
    attr(pg, r, "height", num(b[3], sizeof(b[3]), h, 1));
    attr(pg, r, "class", cls);
}

/* An SVG <text> at (x, y); `untrusted` says whether `s` is record text. */
static void svg_text(page *pg, xmlNodePtr s, double x, double y, const char *anchor,
                     const char *str, bool untrusted)
{
    char b[2][32];
    xmlNodePtr t = el(pg, s, "text");
    attr(pg, t, "x", num(b[0], sizeof(b[0]), x, 1));
    attr(pg, t, "y", num(b[1], sizeof(b[1]), y, 1));
    attr(pg, t, "text-anchor", anchor);
    if (untrusted)
        utext(pg, t, str);
    else
        text(pg, t, str);
}

/* The failure-mode histogram: one horizontal bar per code, most frequent first. */
static void svg_modes(page *pg, xmlNodePtr parent, const bd_report_run *rr)
{
    const bd_bdown *bd = &rr->bdown;
    if (!bd->n_modes) {
        attr(pg, el_text(pg, parent, "p", "No failure mode was reported."), "class", "note");
        return;
    }
    size_t most = bd->modes[0].count ? bd->modes[0].count : 1;
    double row = 22, label_w = 260, bar_w = 360;
    xmlNodePtr s = svg(pg, parent, label_w + bar_w + 60, row * (double)bd->n_modes + 8,
                       "failure-mode histogram");
    char b[32];
    for (size_t i = 0; i < bd->n_modes; i++) {
        double y = 4 + row * (double)i;
        double w = bar_w * (double)bd->modes[i].count / (double)most;
        svg_text(pg, s, label_w - 8, y + 14, "end", bd->modes[i].code, true);
        svg_rect(pg, s, label_w, y + 2, w, row - 6, "bar");
        svg_text(pg, s, label_w + w + 6, y + 14, "start", count(b, sizeof(b), bd->modes[i].count),
                 false);
    }
}

/* The score distribution: BD_REPORT_BINS columns over [0, 1], [0.9, 1.0] closed. */
static void svg_scores(page *pg, xmlNodePtr parent, const bd_report_run *rr)
{
    size_t most = 1;
    for (size_t i = 0; i < BD_REPORT_BINS; i++)
        most = rr->bins[i] > most ? rr->bins[i] : most;
    double col = 48, h = 120, top = 16, base = top + h;
    xmlNodePtr s = svg(pg, parent, col * BD_REPORT_BINS + 20, base + 22, "score distribution");
    char b[32];
    for (size_t i = 0; i < BD_REPORT_BINS; i++) {
        double x = 10 + col * (double)i;
        double bh = h * (double)rr->bins[i] / (double)most;
        svg_rect(pg, s, x + 4, base - bh, col - 8, bh, "dist");
        if (rr->bins[i])
            svg_text(pg, s, x + col / 2, base - bh - 4, "middle", count(b, sizeof(b), rr->bins[i]),
                     false);
    }
    /* The bins' bounds under their edges: 0.0, 0.1, ..., 1.0 (the last bin holds 1.0). */
    for (size_t i = 0; i <= BD_REPORT_BINS; i++)
        svg_text(pg, s, 10 + col * (double)i, base + 16, "middle",
                 num(b, sizeof(b), (double)i / BD_REPORT_BINS, 1), false);
}

/* The trend: the mean score of the last full runs as a line over [0, 1]. */
static void svg_trend(page *pg, xmlNodePtr parent, const bd_report_run *rr)
{
    double w = 520, h = 120, top = 10, left = 36;
    xmlNodePtr s = svg(pg, parent, left + w + 10, top + h + 20, "trend of the mean score");
    char pts[BD_TREND_RUNS * 40] = "", b[2][32];
    double step = rr->n_trend > 1 ? w / (double)(rr->n_trend - 1) : 0;
    for (size_t i = 0; i < rr->n_trend; i++) {
        double x = left + step * (double)i, y = top + h * (1.0 - rr->trend[i].mean);
        size_t used = strlen(pts);
        snprintf(pts + used, sizeof(pts) - used, "%s%s,%s", i ? " " : "",
                 num(b[0], sizeof(b[0]), x, 1), num(b[1], sizeof(b[1]), y, 1));
        svg_rect(pg, s, x - 2.5, y - 2.5, 5, 5, "dot");
    }
    xmlNodePtr axis = el(pg, s, "line");
    attr(pg, axis, "x1", num(b[0], sizeof(b[0]), left, 1));
    attr(pg, axis, "x2", num(b[1], sizeof(b[1]), left + w, 1));
    attr(pg, axis, "y1", num(b[0], sizeof(b[0]), top + h, 1));
    attr(pg, axis, "y2", num(b[0], sizeof(b[0]), top + h, 1));
    attr(pg, axis, "class", "axis");
    svg_text(pg, s, left - 6, top + 4, "end", "1.0", false);
    svg_text(pg, s, left - 6, top + h + 4, "end", "0.0", false);
    xmlNodePtr pl = rr->n_trend > 1 ? el(pg, s, "polyline") : NULL;
    attr(pg, pl, "points", pts);
    attr(pg, pl, "class", "line");
}

/* ---- sections ---------------------------------------------------------------------- */

static void sec_summary(page *pg, xmlNodePtr sec, const bd_report_run *rr)
{
    const bd_run *run = rr->run;
    char b[4][96];
    xmlNodePtr h2 = el(pg, sec, "h2");
    utext(pg, h2, run->task_class);
    snprintf(b[0], sizeof(b[0]), ": %zu of %zu passed", rr->passed, run->n_recs);
    text(pg, h2, b[0]);
    xmlNodePtr t = el(pg, el(pg, sec, "table"), "tbody");
    kv(pg, t, "run", run->run_id);
    kv(pg, t, "kind", bd_run_kind(run, b[0], sizeof(b[0])));
    kv(pg, t, "isolation", run->recs[0].isolation_class);
    kv(pg, t, "started", run->started_at);
    kv(pg, t, "finished", run->finished_at);
    if (run->recs[0].operator_fingerprint)
        kv(pg, t, "operator", run->recs[0].operator_fingerprint);
    kv(pg, t, "passed", count(b[0], sizeof(b[0]), rr->passed));
    kv(pg, t, "failed", count(b[0], sizeof(b[0]), rr->failed));
    kv(pg, t, "unreviewed failures", count(b[0], sizeof(b[0]), rr->unreviewed));
    if (rr->have_ci)
        snprintf(b[3], sizeof(b[3]), "%s (95%% BCa %s to %s)", num(b[0], 32, rr->mean, 3),
                 num(b[1], 32, rr->ci_lo, 3), num(b[2], 32, rr->ci_hi, 3));
    else
        snprintf(b[3], sizeof(b[3]), "%s", num(b[0], 32, rr->mean, 3));
    kv(pg, t, "mean score", b[3]);
    snprintf(b[3], sizeof(b[3]), "$%s", num(b[0], 32, rr->cost_usd, 4));
    kv(pg, t, "cost", b[3]);
    snprintf(b[3], sizeof(b[3]), "%s s", num(b[0], 32, (double)rr->wall_ms / 1000.0, 1));
    kv(pg, t, "rubric time", b[3]);
    kv(pg, t, "chain head", rr->last->hash);
}

static void sec_breakdown(page *pg, xmlNodePtr sec, const bd_report_run *rr)
{
    el_text(pg, sec, "h3", "Breakdown means");
    if (!rr->bdown.n_keys) {
        attr(pg, el_text(pg, sec, "p", "No breakdown key was reported."), "class", "note");
        return;
    }
    static const char *const cols[] = {"key", "mean", "cases", "below 1.0"};
    xmlNodePtr tb = table_head(pg, sec, cols, 4);
    char b[32];
    for (size_t i = 0; i < rr->bdown.n_keys; i++) {
        const bd_bdown_key *k = &rr->bdown.keys[i];
        xmlNodePtr tr = el(pg, tb, "tr");
        el_utext(pg, tr, "td", k->key);
        td_num(pg, tr, num(b, sizeof(b), k->mean, 3));
        td_num(pg, tr, count(b, sizeof(b), k->n));
        td_num(pg, tr, count(b, sizeof(b), k->n_below));
    }
}

/* "0.812 pass" for one side of a compared case, "-" when absent. */
static const char *side(char *buf, size_t cap, const bd_history_record *rec)
{
    char n[32];
    if (!rec)
        return "-";
    snprintf(buf, cap, "%s %s", num(n, sizeof(n), rec->score.score, 3),
             rec->score.passed ? "pass" : "FAIL");
    return buf;
}

static void cmp_stats(page *pg, xmlNodePtr sec, const bd_compare *c)
{
    char b[8][32], line[512];
    if (!c->have_stats)
        return;
    snprintf(line, sizeof(line),
             "Over %zu comparable cases: mean %s to %s, paired delta %s (95%% BCa %s to %s); "
             "pass rate %s%% to %s%%, McNemar's exact p = %s (%zu pass to fail, %zu fail "
             "to pass).",
             c->comparable, num(b[0], 32, c->mean_a, 3), num(b[1], 32, c->mean_b, 3),
             num(b[2], 32, c->mean_delta, 3), num(b[3], 32, c->ci_lo, 3),
             num(b[4], 32, c->ci_hi, 3), num(b[5], 32, c->pass_rate_a * 100.0, 1),
             num(b[6], 32, c->pass_rate_b * 100.0, 1), num(b[7], 32, c->p_value, 4),
             c->pass_to_fail, c->fail_to_pass);
    el_text(pg, sec, "p", line);
}

static void sec_compare(page *pg, xmlNodePtr sec, const bd_report_run *rr)
{
    el_text(pg, sec, "h3", "Compared with the previous full run");
    if (!rr->have_cmp) {
        attr(pg, el_utext(pg, sec, "p", rr->cmp_note), "class", "note");
        return;
    }
    const bd_compare *c = &rr->cmp;
    xmlNodePtr p = el(pg, sec, "p");
    text(pg, p, "Run ");
    utext(pg, el(pg, p, "code"), c->a->run_id);
    text(pg, p, " (before) against this run.");
    if (c->task_class_changed)
        el_text(pg, p, "strong", " The rubric or registration changed between the runs.");
    char b[256] = "", n[32];
    for (int s = 0; s < BD_CMP__COUNT; s++) {
        size_t used = strlen(b);
        snprintf(b + used, sizeof(b) - used, "%s%s %s", s ? ", " : "",
                 count(n, sizeof(n), c->counts[s]), bd_cmp_status_str((bd_cmp_status)s));
    }
    el_text(pg, sec, "p", b);
    cmp_stats(pg, sec, c);
    static const char *const cols[] = {"case", "status", "before", "after", "delta"};
    xmlNodePtr tb = NULL;
    for (size_t i = 0; i < c->n_cases; i++) {
        const bd_compare_case *cc = &c->cases[i];
        if (cc->status == BD_CMP_UNCHANGED)
            continue;
        if (!tb)
            tb = table_head(pg, sec, cols, 5);
        xmlNodePtr tr = el(pg, tb, "tr");
        attr(pg, tr, "class", bd_cmp_status_str(cc->status));
        el_utext(pg, tr, "td", cc->case_id);
        el_text(pg, tr, "td", bd_cmp_status_str(cc->status));
        td_num(pg, tr, side(b, sizeof(b), cc->a));
        td_num(pg, tr, side(b, sizeof(b), cc->b));
        td_num(pg, tr, cc->a && cc->b ? num(n, sizeof(n), cc->delta, 3) : "");
    }
}

static void sec_trend(page *pg, xmlNodePtr sec, const bd_report_run *rr)
{
    el_text(pg, sec, "h3", "Trend of the last full runs");
    if (!rr->n_trend) {
        attr(pg, el_text(pg, sec, "p", "No full run of this task class yet."), "class", "note");
        return;
    }
    svg_trend(pg, sec, rr);
    static const char *const cols[] = {"run", "finished", "cases", "pass rate", "mean", "95% BCa"};
    xmlNodePtr tb = table_head(pg, sec, cols, 6);
    char b[3][32], ci[80];
    for (size_t i = rr->n_trend; i-- > 0;) {
        const bd_trend_point *t = &rr->trend[i];
        xmlNodePtr tr = el(pg, tb, "tr");
        utext(pg, el(pg, el(pg, tr, "td"), "code"), t->run->run_id);
        el_utext(pg, tr, "td", t->run->finished_at);
        td_num(pg, tr, count(b[0], sizeof(b[0]), t->cases));
        snprintf(ci, sizeof(ci), "%s%%", num(b[0], sizeof(b[0]), t->pass_rate * 100.0, 1));
        td_num(pg, tr, ci);
        td_num(pg, tr, num(b[0], sizeof(b[0]), t->mean, 3));
        snprintf(ci, sizeof(ci), "%s to %s", num(b[1], 32, t->ci_lo, 3),
                 num(b[2], 32, t->ci_hi, 3));
        td_num(pg, tr, ci);
    }
}

/* A badge for verdict `v`: its word, and for one that counts for nothing, why; the whole
 * line (reviewer, time, note) as its title. */
static void verdict_badge(page *pg, xmlNodePtr parent, const bd_report_verdict *v)
{
    char why[BD_ERR_MSG_MAX + 32], *line = bd_report_verdict_line(v);
    char *tip = line ? bd_report_text(line) : NULL;
    xmlNodePtr sp = el_text(pg, parent, "span", bd_verdict_kind_str(v->e->v.verdict));
    attr(pg, sp, "class", v->counts ? "verdict" : "verdict nocount");
    if (!tip)
        pg->oom = true;
    else
        attr(pg, sp, "title", tip);
    if (!v->counts) {
        text(pg, parent, " (");
        utext(pg, parent, bd_report_verdict_why(v, why, sizeof(why)));
        text(pg, parent, ") ");
    }
    free(line);
    free(tip);
}

static void sec_cases(page *pg, xmlNodePtr sec, const bd_report_run *rr)
{
    el_text(pg, sec, "h3", "Every case");
    static const char *const cols[] = {"case", "score", "result", "failure modes", "verdicts"};
    xmlNodePtr tb = table_head(pg, sec, cols, 5);
    char b[32];
    for (size_t i = 0; i < rr->run->n_recs; i++) {
        const bd_history_record *rec = &rr->run->recs[i];
        xmlNodePtr tr = el(pg, tb, "tr");
        el_utext(pg, tr, "td", rec->case_id);
        td_num(pg, tr, num(b, sizeof(b), rec->score.score, 3));
        attr(pg, el_text(pg, tr, "td", rec->score.passed ? "pass" : "FAIL"), "class",
             rec->score.passed ? "pass" : "fail");
        xmlNodePtr td = el(pg, tr, "td");
        for (size_t k = 0; k < rec->score.n_failure_modes; k++) {
            if (k)
                text(pg, td, ", ");
            utext(pg, td, rec->score.failure_modes[k].code);
        }
        td = el(pg, tr, "td");
        bd_report_verdict v[32];
        size_t n = bd_report_verdicts(rr, rec, v, 32);
        for (size_t k = 0; k < n; k++)
            verdict_badge(pg, td, &v[k]);
        if (!rec->score.passed && bd_review_unreviewed(rr->vs, rec))
            attr(pg, el_text(pg, td, "span", "unreviewed"), "class", "note");
    }
}

/* The verdicts on a failed case, one row each: badge, reviewer, time, note. */
static void failed_verdicts(page *pg, xmlNodePtr sec, const bd_report_run *rr,
                            const bd_history_record *rec)
{
    bd_report_verdict v[32];
    size_t n = bd_report_verdicts(rr, rec, v, 32);
    if (bd_review_unreviewed(rr->vs, rec))
        attr(pg, el_text(pg, sec, "p", "Unreviewed: no verdict counts on it."), "class", "note");
    if (n == 0)
        return;
    static const char *const cols[] = {"verdict", "reviewer", "at", "note"};
    xmlNodePtr tb = table_head(pg, sec, cols, 4);
    for (size_t k = 0; k < n; k++) {
        xmlNodePtr tr = el(pg, tb, "tr");
        verdict_badge(pg, el(pg, tr, "td"), &v[k]);
        char *who = bd_report_verdict_who(&v[k]);
        if (!who)
            pg->oom = true;
        utext(pg, el(pg, el(pg, tr, "td"), "code"), who ? who : "?");
        free(who);
        el_utext(pg, tr, "td", v[k].e->v.at);
        attr(pg, el_utext(pg, tr, "td", v[k].e->v.note ? v[k].e->v.note : ""), "class", "detail");
    }
}

/* The checks the rubric says failed (docs/formats.md#what-the-rubric-compared), one item
 * each: its name, then what was expected and what came, as the rubric wrote them. */
static void failed_checks(page *pg, xmlNodePtr ul, const bd_score *s)
{
    for (size_t k = 0; k < s->n_checks; k++) {
        const bd_score_check *c = &s->checks[k];
        if (c->passed)
            continue;
        xmlNodePtr li = el(pg, ul, "li");
        text(pg, li, "failed check ");
        utext(pg, el(pg, li, "code"), c->name);
        bd_strbuf b = {0};
        bd_strbuf_str(&b, "expected: ");
        bd_strbuf_str(&b, c->expected ? c->expected : "null");
        bd_strbuf_str(&b, "\nactual:   ");
        bd_strbuf_str(&b, c->actual ? c->actual : "null");
        if (!b.oom && b.p)
            attr(pg, el_utext(pg, li, "div", b.p), "class", "detail");
        bd_strbuf_release(&b);
    }
}

static void failed_case(page *pg, xmlNodePtr sec, const bd_report_run *rr,
                        const bd_history_record *rec)
{
    char b[64];
    xmlNodePtr h4 = el(pg, sec, "h4");
    utext(pg, h4, rec->case_id);
    snprintf(b, sizeof(b), ": score %s", num(b + 32, 32, rec->score.score, 3));
    text(pg, h4, b);
    xmlNodePtr ul = el(pg, sec, "ul");
    for (size_t k = 0; k < rec->score.n_failure_modes; k++) {
        const bd_score_fm *fm = &rec->score.failure_modes[k];
        xmlNodePtr li = el(pg, ul, "li");
        text(pg, li, bd_severity_str(fm->severity));
        text(pg, li, " ");
        utext(pg, el(pg, li, "code"), fm->code);
        if (fm->detail)
            attr(pg, el_utext(pg, li, "div", fm->detail), "class", "detail");
    }
    if (!rec->score.n_failure_modes)
        el_text(pg, ul, "li", "failed without a failure mode");
    failed_checks(pg, ul, &rec->score);
    for (size_t k = 0; k < rec->score.n_breakdown; k++) {
        xmlNodePtr li = el(pg, ul, "li");
        text(pg, li, "breakdown ");
        utext(pg, el(pg, li, "code"), rec->score.breakdown[k].key);
        text(pg, li, " ");
        text(pg, li, num(b, sizeof(b), rec->score.breakdown[k].value, 3));
    }
    failed_verdicts(pg, sec, rr, rec);
}

static void sec_failed(page *pg, xmlNodePtr sec, const bd_report_run *rr)
{
    el_text(pg, sec, "h3", "Failed cases");
    if (!rr->failed)
        attr(pg, el_text(pg, sec, "p", "No case failed."), "class", "note");
    for (size_t i = 0; i < rr->run->n_recs; i++)
        if (!rr->run->recs[i].score.passed)
            failed_case(pg, sec, rr, &rr->run->recs[i]);
}

static void build_head(page *pg, xmlNodePtr html)
{
    xmlNodePtr head = el(pg, html, "head");
    attr(pg, el(pg, head, "meta"), "charset", "utf-8");
    xmlNodePtr m = el(pg, head, "meta");
    attr(pg, m, "http-equiv", "Content-Security-Policy");
    attr(pg, m, "content", csp);
    m = el(pg, head, "meta");
    attr(pg, m, "name", "referrer");
    attr(pg, m, "content", "no-referrer");
    el_text(pg, head, "title", "benchdesk report");
    el_text(pg, head, "style", css); /* fixed text: libxml2 writes <style> content raw */
}

static void build_body(page *pg, xmlNodePtr html, const bd_report *r)
{
    xmlNodePtr body = el(pg, html, "body");
    el_text(pg, body, "h1", "benchdesk report");
    char line[160];
    snprintf(line, sizeof(line), "From the verified history: %llu records, chain head ",
             (unsigned long long)r->runs.count);
    xmlNodePtr p = el_text(pg, body, "p", line);
    utext(pg, el(pg, p, "code"), r->runs.head);
    attr(pg, p, "class", "note");
    for (size_t i = 0; i < r->n; i++) {
        const bd_report_run *rr = &r->v[i];
        xmlNodePtr sec = el(pg, body, "section");
        sec_summary(pg, sec, rr);
        el_text(pg, sec, "h3", "Failure modes");
        svg_modes(pg, sec, rr);
        el_text(pg, sec, "h3", "Score distribution");
        svg_scores(pg, sec, rr);
        sec_breakdown(pg, sec, rr);
        sec_compare(pg, sec, rr);
        sec_trend(pg, sec, rr);
        sec_cases(pg, sec, rr);
        sec_failed(pg, sec, rr);
    }
}

int bd_report_html(const bd_report *r, char **out, size_t *len, bd_err *err)
{
    *out = NULL;
    *len = 0;
    if (bd_xml2_load(err) < 0)
        return -1;
    page pg = {htmlNewDocNoDtD(NULL, NULL), false};
    xmlNodePtr html = pg.doc ? xmlNewDocNode(pg.doc, NULL, BAD_CAST "html", NULL) : NULL;
    if (!html || !xmlCreateIntSubset(pg.doc, BAD_CAST "html", NULL, NULL)) {
        xmlFreeNode(html);
        pg.oom = true;
    } else {
        xmlDocSetRootElement(pg.doc, html);
        attr(&pg, html, "lang", "en");
        build_head(&pg, html);
        build_body(&pg, html, r);
    }
    xmlChar *mem = NULL;
    int size = 0;
    if (!pg.oom)
        htmlDocDumpMemoryFormat(pg.doc, &mem, &size, 0);
    if (mem && size > 0 && (*out = malloc((size_t)size + 1)) != NULL) {
        memcpy(*out, mem, (size_t)size);
        (*out)[size] = '\0';
        *len = (size_t)size;
    }
    xmlFree(mem);
    xmlFreeDoc(pg.doc);
    if (!*out)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory writing an HTML report");
    return 0;
}
