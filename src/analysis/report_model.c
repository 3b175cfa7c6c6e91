/*
 * report_model.c — what a report shows (report.h), gathered from the runs of the verified
 * chain; the writers are report_junit.c, report_markdown.c and report_html.c.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "strbuf.h"
#include "text.h"

int bd_report_format_parse(bd_report_format *out, const char *name, bd_err *err)
{
    static const char *const names[] = {
#define BD_X(id, str) str,
        BD_REPORT_FORMATS(BD_X)
#undef BD_X
    };
    for (size_t i = 0; i < BD_REPORT__COUNT; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (bd_report_format)i;
            return 0;
        }
    return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                      "unknown report format '%s': html, markdown or junit", name);
}

char *bd_report_text(const char *s)
{
    char *v = bd_text_vis(s, 0);
    if (!v || (!strstr(v, "\xef\xbf\xbe") && !strstr(v, "\xef\xbf\xbf")))
        return v;
    bd_strbuf b = BD_STRBUF_INIT;
    for (const char *p = v; *p;) {
        if (p[0] == '\xef' && p[1] == '\xbf' && (p[2] == '\xbe' || p[2] == '\xbf')) {
            bd_strbuf_str(&b, p[2] == '\xbe' ? "<U+FFFE>" : "<U+FFFF>");
            p += 3;
        } else {
            bd_strbuf_add(&b, p++, 1);
        }
    }
    free(v);
    return bd_strbuf_take(&b);
}

const char *bd_report_first_code(const bd_score *s)
{
    return s->n_failure_modes ? s->failure_modes[0].code : "failed";
}

static void report_run_release(bd_report_run *rr)
{
    bd_compare_release(&rr->cmp);
    bd_bdown_release(&rr->bdown);
    free(rr->trend);
    free(rr->scores);
    free(rr->other);
}

void bd_report_release(bd_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        report_run_release(&r->v[i]);
    free(r->v);
    bd_runs_release(&r->runs);
    bd_score_ids_release(&r->ids);
    memset(r, 0, sizeof(*r));
}

/* The tally, mean with its interval, distribution and cost of rr->run. */
static int gather_scores(bd_report_run *rr, bd_err *err)
{
    const bd_run *run = rr->run;
    size_t n = run->n_recs;
    rr->scores = calloc(n ? n : 1, sizeof(*rr->scores));
    double *x = malloc((n ? n : 1) * sizeof(double));
    if (!rr->scores || !x) {
        free(x);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a report");
    }
    for (size_t i = 0; i < n; i++) {
        const bd_score *s = &run->recs[i].score;
        rr->scores[i] = s;
        x[i] = s->score;
        if (s->passed)
            rr->passed++;
        else
            rr->failed++;
        rr->cost_usd += s->cost_usd;
        rr->wall_ms += s->wall_clock_ms;
        size_t bin = (size_t)(s->score * BD_REPORT_BINS);
        rr->bins[bin < BD_REPORT_BINS ? bin : BD_REPORT_BINS - 1]++;
    }
    int rc = 0;
    if (n > 0) {
        rr->mean = bd_stats_mean(x, n);
        /* Scores in case-id order with the run-summary seed: the interval the run's own
         * summary printed (trend.h does the same). */
        rc = bd_stats_bca(x, n, 0.95, 0, BD_STATS_RUN_SEED, &rr->ci_lo, &rr->ci_hi, err);
        rr->have_ci = rc == 0;
    }
    free(x);
    return rc;
}

/* The comparison of rr->run with the previous full run of its task class. A comparison
 * the rules refuse (other isolation classes) is a note, not a failure of the report. */
static int gather_compare(bd_report_run *rr, const bd_runs *runs, bd_err *err)
{
    rr->prev = bd_runs_prev_full(runs, rr->run->task_class, rr->run);
    if (!rr->prev) {
        snprintf(rr->cmp_note, sizeof(rr->cmp_note),
                 "no earlier full run of this task class to compare with");
        return 0;
    }
    bd_err cerr = BD_ERR_INIT;
    if (bd_compare_runs(&rr->cmp, rr->prev, rr->run, &cerr) == 0) {
        rr->have_cmp = true;
        return 0;
    }
    if (cerr.code == BD_E_NOMEM) {
        *err = cerr;
        return -1;
    }
    snprintf(rr->cmp_note, sizeof(rr->cmp_note), "%s", cerr.msg);
    return 0;
}

static int gather_run(bd_report_run *rr, const bd_report *rep, const bd_run *run, bd_err *err)
{
    const bd_runs *runs = &rep->runs;
    memset(rr, 0, sizeof(*rr));
    rr->run = run;
    rr->vs = rep->vs;
    rr->ids = &rep->ids;
    if (gather_scores(rr, err) != 0 || gather_compare(rr, runs, err) != 0 ||
        bd_report_gather_verdicts(rr, err) != 0)
        return -1;
    for (size_t i = 0; i < run->n_recs; i++)
        if (run->recs[i].seq == run->last_seq)
            rr->last = &run->recs[i];
    /* The trend up to this run, not past it: a run's report stays the same when later runs
     * are recorded. */
    bd_runs upto = *runs;
    upto.n = (size_t)(run - runs->runs) + 1;
    if (bd_trend(&upto, run->task_class, BD_TREND_RUNS, &rr->trend, &rr->n_trend, err) != 0)
        return -1;
    if (bd_bdown_build(&rr->bdown, rr->scores, run->n_recs) != 0)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a report");
    return 0;
}

static int cmp_run_tc(const void *x, const void *y)
{
    const bd_run *a = *(const bd_run *const *)x, *b = *(const bd_run *const *)y;
    return strcmp(a->task_class, b->task_class);
}

/* The runs a report without a run id shows: the latest full run of each task class, in
 * task-class order, into a new array *out of *n (free()). */
static int pick_latest_full(const bd_runs *runs, const bd_run ***out, size_t *n, bd_err *err)
{
    *n = 0;
    *out = calloc(runs->n ? runs->n : 1, sizeof(**out));
    if (!*out)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a report");
    for (size_t i = 0; i < runs->n; i++) {
        const bd_run *run = &runs->runs[i];
        if (run->full && bd_runs_last(runs, run->task_class, true) == run)
            (*out)[(*n)++] = run;
    }
    if (*n == 0) {
        free(*out);
        *out = NULL;
        bd_err_set(err, BD_E_REPORT_NO_RUNS, NULL, 0, 0,
                   "the verified history holds no full run to report; ");
        bd_err_advise(err, BD_ACT_RUN, NULL);
        return bd_err_append(err, " makes one, or name a run");
    }
    qsort(*out, *n, sizeof(**out), cmp_run_tc);
    return 0;
}

int bd_report_load(bd_report *out, bd_history *h, bd_verdict_set *vs, const char *run_id,
                   bd_err *err)
{
    memset(out, 0, sizeof(*out));
    const bd_run **pick = NULL;
    size_t n = 0;
    out->vs = vs;
    /* score_ids (a BLAKE3 per record) are needed only to place the verdicts that count for
     * nothing: the counting ones the set matches in the walk itself */
    bool need_ids = vs && vs->n_untrusted + vs->n_bad > 0;
    if (bd_runs_load_verdicts(&out->runs, h, vs, need_ids ? bd_score_ids_wrap : NULL,
                              need_ids ? &out->ids : NULL, err) != 0) {
        if (out->ids.oom)
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        bd_report_release(out);
        return -1;
    }
    if (run_id) {
        const bd_run *one = bd_runs_find(&out->runs, run_id, err);
        if (!one)
            goto fail;
        pick = malloc(sizeof(*pick));
        if (!pick) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a report");
            goto fail;
        }
        pick[n++] = one;
    } else if (pick_latest_full(&out->runs, &pick, &n, err) != 0) {
        goto fail;
    }
    out->v = calloc(n, sizeof(*out->v));
    if (!out->v) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a report");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        out->n++;
        if (gather_run(&out->v[i], out, pick[i], err) != 0)
            goto fail;
    }
    free(pick);
    return 0;
fail:
    free(pick);
    bd_report_release(out);
    return -1;
}
