/*
 * recommend.c — the recommendation for a task class, with its evidence
 * (docs/history.md#promotion-recommend-never-apply, docs/user-guide.md#recommend): what `benchdesk
 * recommend` computes and writes, on the thread pool (it verifies the chain and every anchor with
 * GnuPG). It never applies anything: the tier moves only when a human edits current_tier in a
 * reviewed commit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err_keys.h"
#include "model.h"
#include "promote.h"
#include "view_util.h"
#include "views/recommend_view.h"

typedef struct rec_job rec_job;

typedef struct rline {
    char *label, *text;
    bd_role role;
    bool heading;
} rline;

typedef struct rec_view {
    size_t tc_index;
    char name[129];
    rec_job *job; /* in flight, or NULL */
    bool done;
    int rc;
    bd_err err;
    bd_recommendation rec;
    char *path; /* the file written */
    rline *lines;
    size_t n, cap;
    size_t top;
} rec_view;

struct rec_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    char *root;
    bd_tc_ref *ref;
    bd_recommendation rec;
    char *path;
    bd_err err;
    int rc;
};

static const bd_action actions[] = {BD_A_RECOMMEND, BD_A_HISTORY, BD_A_NONE};

static void add(rec_view *s, const char *label, const char *text, bd_role role, bool heading)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        rline *g = realloc(s->lines, nc * sizeof(*g));
        if (!g)
            return;
        s->lines = g;
        s->cap = nc;
    }
    rline *l = &s->lines[s->n];
    l->label = strdup(label ? label : "");
    l->text = strdup(text ? text : "");
    if (!l->label || !l->text) {
        free(l->label);
        free(l->text);
        return;
    }
    l->role = role;
    l->heading = heading;
    s->n++;
}

static void clear_lines(rec_view *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->lines[i].label);
        free(s->lines[i].text);
    }
    s->n = 0;
}

/* What reviewers said of the evidence's run (docs/provenance.md#verdicts): unreviewed
 * failures, records removed by two reviewers (who, why), those awaiting a second
 * reviewer, flaky ones. Identities and notes are bench text: drawing sanitizes them. */
static void add_verdicts(rec_view *s, const bd_recommendation *r)
{
    char buf[1400];
    size_t len = (size_t)snprintf(buf, sizeof(buf), "%zu failure%s without a verdict",
                                  r->n_unreviewed, r->n_unreviewed == 1 ? "" : "s");
    for (size_t i = 0; i < r->n_unreviewed && i < 12 && len < sizeof(buf) - 24; i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s#%llu", i ? " " : ": ",
                                (unsigned long long)r->unreviewed[i]);
    add(s, "unreviewed", buf, r->n_unreviewed ? BD_R_WARN : BD_R_MUTED, false);
    const bd_rec_reviewed *lists[3] = {r->removed, r->awaiting, r->flaky};
    const size_t ns[3] = {r->n_removed, r->n_awaiting, r->n_flaky};
    static const char *const labels[3] = {"removed", "awaiting 2nd", "flaky"};
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < ns[l]; i++) {
            const bd_rec_reviewed *x = &lists[l][i];
            snprintf(buf, sizeof(buf), "#%llu %s: %s by %s%s%s%s%.200s%s",
                     (unsigned long long)x->seq, x->case_id, bd_verdict_kind_str(x->verdict),
                     x->reviewer[0], x->n > 1 ? " and " : "", x->n > 1 ? x->reviewer[1] : "",
                     x->note[0] && x->note[0][0] ? " \"" : "", x->note[0] ? x->note[0] : "",
                     x->note[0] && x->note[0][0] ? "\"" : "");
            add(s, i ? "" : labels[l], buf, l == 0 ? BD_R_WARN : BD_R_DIFF_CTX, false);
        }
}

static void build(bd_view *v)
{
    rec_view *s = v->state;
    const bd_recommendation *r = &s->rec;
    char buf[1024];
    clear_lines(s);
    if (!s->done) {
        snprintf(buf, sizeof(buf), "%s verifying the chain and its anchors, reading the evidence",
                 bd_app_spinner(v->app));
        add(s, "", buf, BD_R_MUTED, false);
        return;
    }
    if (s->rc < 0) {
        snprintf(buf, sizeof(buf), "%s: %s", bd_code_str(s->err.code), bd_tui_err_text(&s->err));
        add(s, "refused", buf, BD_R_FAIL, false);
        add(s, "", "a recommendation reads only a verified history (docs/history.md)", BD_R_MUTED,
            false);
        return;
    }
    add(s, "current tier", bd_tier_str(r->current_tier), BD_R_DIFF_CTX, false);
    if (r->has_recommended)
        snprintf(buf, sizeof(buf),
                 "%s  (never applied: a human edits current_tier in a "
                 "reviewed commit)",
                 bd_tier_str(r->recommended));
    else
        snprintf(buf, sizeof(buf), "none: not even bronze's minimum number of cases is met");
    add(s, "recommended", buf, r->has_recommended ? BD_R_OK : BD_R_WARN, false);
    snprintf(buf, sizeof(buf),
             "%zu cases, isolation %s, chain of %llu records, %zu anchor%s "
             "verified",
             r->cases, r->isolation_class[0] ? r->isolation_class : "-",
             (unsigned long long)r->chain_count, r->anchors, r->anchors == 1 ? "" : "s");
    add(s, "evidence", buf, BD_R_DIFF_CTX, false);
    if (r->run_id[0]) {
        snprintf(buf, sizeof(buf), "%s; %zu of %zu records from signed runs%s", r->run_operator,
                 r->signed_records, r->cases, r->require_signed ? " (signed runs required)" : "");
        add(s, "ran by", buf, r->run_signed ? BD_R_DIFF_CTX : BD_R_MUTED, false);
    }
    snprintf(buf, sizeof(buf), "%.1f%% (%zu of %zu passed)", 100.0 * r->pass_rate, r->passed,
             r->cases);
    add(s, "pass rate", buf, BD_R_DIFF_CTX, false);
    if (r->has_ci)
        snprintf(buf, sizeof(buf), "%.3f  95%% BCa interval [%.3f, %.3f]", r->mean_score, r->ci_lo,
                 r->ci_hi);
    else
        snprintf(buf, sizeof(buf), "%.3f  (no interval: too few cases)", r->mean_score);
    add(s, "mean score", buf, BD_R_DIFF_CTX, false);
    snprintf(buf, sizeof(buf),
             "%zu older than %d days, %zu of unknown cases, %zu unsigned, %zu other "
             "isolation, %zu superseded, %zu of subset runs, %zu of other runs, %zu removed by "
             "two reviewers",
             r->excluded_outside_window, BD_RECOMMEND_WINDOW_DAYS, r->excluded_unknown_case,
             r->excluded_unsigned, r->excluded_isolation, r->superseded, r->excluded_subset,
             r->excluded_other_runs, r->excluded_removed);
    add(s, "excluded", buf, BD_R_MUTED, false);
    add_verdicts(s, r);
    if (s->path)
        add(s, "written to", s->path, BD_R_MUTED, false);

    add(s, "", "Tiers", BD_R_TITLE, true);
    for (int i = 0; i < 3; i++) {
        const bd_tier_eval *t = &r->tiers[i];
        char thr[64];
        if (t->tier == BD_TIER_BRONZE)
            snprintf(thr, sizeof(thr), "no threshold  ");
        else
            snprintf(thr, sizeof(thr), "threshold %.2f %s", t->threshold,
                     t->threshold_met ? bd_gl->ok : bd_gl->bad);
        snprintf(buf, sizeof(buf), "min %3d cases %s   %-16s  %s", t->min_cases,
                 t->cases_met ? bd_gl->ok : bd_gl->bad, thr, t->met ? "met" : "not met");
        add(s, bd_tier_str(t->tier), buf, t->met ? BD_R_OK : BD_R_MUTED, false);
    }
    snprintf(buf, sizeof(buf), "Evidence: full run %s, each case's current record",
             r->run_id[0] ? r->run_id : "(none in the window)");
    add(s, "", buf, BD_R_TITLE, true);
    if (!r->n_evidence)
        add(s, "", "(no eligible record: signed runs of this task class land here)", BD_R_MUTED,
            false);
    for (size_t i = 0; i < r->n_evidence; i++) {
        const bd_rec_evidence *e = &r->evidence[i];
        snprintf(buf, sizeof(buf), "%s %.2f  #%-6llu %s", e->passed ? bd_gl->ok : bd_gl->bad,
                 e->score, (unsigned long long)e->seq, e->finished_at);
        add(s, e->case_id, buf, e->passed ? BD_R_OK : BD_R_FAIL, false);
    }
}

/* ---- the pool job ------------------------------------------------------------------- */

static void job_run(bd_work *w)
{
    rec_job *j = (rec_job *)w;
    bd_bench *bench = NULL;
    j->rc = -1;
    /* A bench of its own: the app's may be replaced by a reload meanwhile. */
    if (bd_bench_open(&bench, j->root, &j->err) < 0)
        return;
    if (bd_recommend(&j->rec, bench, j->ref->tc, time(NULL), &j->err) == 0 &&
        bd_recommendation_write(&j->rec, bench->root, &j->path, &j->err) == 0)
        j->rc = 0;
    bd_bench_free(bench);
}

static void job_done(bd_work *w, bool ran)
{
    rec_job *j = (rec_job *)w;
    bd_view *v = j->view;
    if (v && !v->app->quitting) {
        rec_view *s = v->state;
        s->job = NULL;
        s->done = true;
        s->rc = ran ? j->rc : -1;
        s->err = j->err;
        if (!ran)
            bd_err_set(&s->err, BD_E_RUN_CANCELLED, NULL, 0, 0, "the recommendation stopped");
        bd_recommendation_release(&s->rec);
        s->rec = j->rec; /* moved */
        memset(&j->rec, 0, sizeof(j->rec));
        free(s->path);
        s->path = j->path;
        j->path = NULL;
        build(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
    bd_recommendation_release(&j->rec);
    free(j->path);
    free(j->root);
    bd_model_tc_release(j->ref);
    free(j);
}

static void start(bd_view *v)
{
    rec_view *s = v->state;
    if (s->job)
        return;
    rec_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root)) ||
        !(j->ref = bd_model_tc_hold(v->app->model, s->tc_index))) {
        if (j)
            free(j->root);
        free(j);
        bd_app_message(v->app, BD_MSG_WARN, "the task class is still loading");
        return;
    }
    j->view = v;
    j->work.run = job_run;
    j->work.done = job_done;
    if (bd_work_queue(v->app, &j->work) < 0) {
        bd_model_tc_release(j->ref);
        free(j->root);
        free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "cannot queue the recommendation");
        return;
    }
    s->job = j;
    s->done = false;
    bd_app_animate(v->app);
    build(v);
}

/* ---- the view ----------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    size_t tc = *(const size_t *)arg;
    if (!bd_model_tc(v->app->model, tc)) {
        bd_app_message(v->app, BD_MSG_WARN, "the task class is still loading (or failed to load)");
        return -1;
    }
    rec_view *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    s->tc_index = tc;
    snprintf(s->name, sizeof(s->name), "%s", v->app->model->tcs[tc].name);
    snprintf(v->title, sizeof(v->title), "recommend %s", s->name);
    start(v);
    return 0;
}

static void close_view(bd_view *v)
{
    rec_view *s = v->state;
    if (s->job)
        s->job->view = NULL;
    clear_lines(s);
    free(s->lines);
    bd_recommendation_release(&s->rec);
    free(s->path);
    free(s);
}

static void draw(bd_view *v, WINDOW *w)
{
    rec_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    char right[128] = "";
    bd_role rr = BD_R_TITLE;
    if (s->done && s->rc == 0 && s->rec.has_recommended) {
        snprintf(right, sizeof(right), " recommended: %s ", bd_tier_str(s->rec.recommended));
        rr = BD_R_BADGE_SIGNED;
    } else if (s->done && s->rc == 0) {
        snprintf(right, sizeof(right), " no tier met ");
        rr = BD_R_BADGE_AWAITING;
    } else if (s->done) {
        snprintf(right, sizeof(right), " REFUSED ");
        rr = BD_R_BADGE_BAD;
    }
    int rx = bd_draw_right(w, 0, cols, right, bd_role_attr(rr));
    char title[200];
    snprintf(title, sizeof(title), " recommendation for %s", s->name);
    bd_draw_text(w, 0, 0, rx, title, bd_role_attr(BD_R_TITLE), false);
    int h = rows - 1;
    if (s->top + (size_t)h > s->n)
        s->top = s->n > (size_t)h ? s->n - (size_t)h : 0;
    for (int i = 0; i < h; i++) {
        size_t li = s->top + (size_t)i;
        if (li >= s->n)
            break;
        const rline *l = &s->lines[li];
        if (l->heading) {
            bd_draw_text(w, 1 + i, 1, cols - 1, l->text, A_BOLD | A_UNDERLINE, false);
            continue;
        }
        int lw = bd_text_width(l->label) + 2 > 15 ? bd_text_width(l->label) + 2 : 15;
        if (lw > cols / 2)
            lw = cols / 2;
        bd_draw_text(w, 1 + i, 1, lw, l->label, A_BOLD, false);
        bd_draw_text(w, 1 + i, 1 + lw, cols - 1 - lw, l->text, bd_role_attr(l->role), false);
    }
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    rec_view *s = v->state;
    size_t page = (size_t)(getmaxy(v->app->body) > 2 ? getmaxy(v->app->body) - 2 : 1);
    if (bd_view_scroll(&s->top, s->n, a, page))
        return true;
    switch (a) {
    case BD_A_RECOMMEND: /* again: a fresh recommendation (and file) */
        start(v);
        return true;
    case BD_A_HISTORY:
        bd_app_open_history(v->app, s->name, NULL);
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    rec_view *s = v->state;
    if (ev->kind == BD_EV_TICK && !s->done) {
        build(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
}

static void position(bd_view *v, char *out, size_t cap)
{
    rec_view *s = v->state;
    bd_view_line_position(out, cap, s->top, s->n);
}

static void where(bd_view *v, bd_view_where *out)
{
    rec_view *s = v->state;
    snprintf(out->tc, sizeof(out->tc), "%s", s->name);
}

const bd_view_ops bd_view_recommend = {
    "recommend", actions, open_view, draw,       key,   event,
    NULL,        NULL,    position,  close_view, where, NULL,
};
