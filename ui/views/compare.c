/*
 * compare.c — the compare view (docs/compare.md): run A against run B from the verified
 * chain, computed on the pool by compare.h (the same function as `benchdesk compare`).
 * A summary header (means, the paired 95% BCa interval of the delta, pass rates with
 * McNemar's p, counts, failure modes A -> B, the trend), then one row per case with its
 * badge and delta, regressions first; `n`/`p` walk the regressions; Enter shows both
 * results of the case side by side (breakdown and failure modes as a diff), `q` returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_keys.h"
#include "compare.h"
#include "model.h"
#include "runs_model.h"
#include "stale.h"
#include "trend.h"
#include "view_args.h"
#include "path.h"
#include "view_util.h"
#include "views/compare_view.h"

typedef struct cmp_job cmp_job;

typedef struct cmp_view {
    char *id_a, *id_b; /* as asked (id_a NULL: the previous full run) */
    cmp_job *job;
    bool done;
    int rc;
    bd_err err;
    bd_runs runs;
    bd_compare cmp;
    size_t stale_a, stale_b;
    char trend[64];
    bd_list list;
    bool detail; /* Enter: both results of the selected case side by side */
    size_t detail_top;
    char text[512];
} cmp_view;

struct cmp_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    char *root, *id_a, *id_b;
    bool utf8;
    int rc;
    bd_err err;
    bd_runs runs;
    bd_compare cmp;
    size_t stale_a, stale_b;
    char trend[64];
};

static const bd_action actions[] = {BD_A_OPEN,   BD_A_NEXT_FAIL, BD_A_PREV_FAIL,
                                    BD_A_FILTER, BD_A_HISTORY,   BD_A_NONE};

/* ---- the pool job ------------------------------------------------------------------- */

static void job_run(bd_work *w)
{
    cmp_job *j = (cmp_job *)w;
    bd_history *h = NULL;
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    j->rc = -1;
    if (bd_history_open(&h, j->root, BD_HISTORY_READ, &j->err) < 0)
        return;
    int rc = bd_runs_load_until(&j->runs, h, bd_work_stopping, &j->err);
    bd_history_free(h);
    /* who ran each run: the signed runs against the bench's keys */
    char *bench_dir = rc == 0 ? bd_path_join(j->root, "bench") : NULL;
    if (rc == 0 && (!bench_dir || bd_runs_judge_signed(&j->runs, bench_dir, &j->err) != 0))
        rc = -1;
    free(bench_dir);
    const bd_run *a, *b;
    if (rc < 0 ||
        bd_compare_pick(&j->runs, NULL, j->id_a ? j->id_a : j->id_b, j->id_a ? j->id_b : NULL, &a,
                        &b, &j->err) < 0 ||
        bd_compare_runs(&j->cmp, a, b, &j->err) < 0)
        return;
    /* Stale against today's pins (a task class since removed: every record). */
    bd_err ignored = BD_ERR_INIT;
    if (bd_bench_open(&bench, j->root, &ignored) == 0 &&
        bd_task_class_load(&tc, bench, a->task_class, &ignored) < 0)
        tc = NULL;
    j->stale_a = bd_run_stale_count(a, tc ? tc->digests : NULL, NULL);
    j->stale_b = bd_run_stale_count(b, tc ? tc->digests : NULL, NULL);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    bd_trend_point *p = NULL;
    size_t np = 0;
    if (bd_trend(&j->runs, a->task_class, 0, &p, &np, &ignored) == 0)
        bd_trend_sparkline(p, np, j->utf8, j->trend, sizeof(j->trend));
    free(p);
    j->rc = 0;
}

static const char *row_text(size_t row, void *payload);

static void rebuild(bd_view *v)
{
    cmp_view *s = v->state;
    if (bd_list_rebuild(&s->list, s->cmp.n_cases, row_text, NULL, v) < 0)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
}

static void job_free(cmp_job *j)
{
    bd_compare_release(&j->cmp);
    bd_runs_release(&j->runs);
    free(j->root);
    free(j->id_a);
    free(j->id_b);
    free(j);
}

static void job_done(bd_work *w, bool ran)
{
    cmp_job *j = (cmp_job *)w;
    bd_view *v = j->view;
    if (v && !v->app->quitting) {
        cmp_view *s = v->state;
        s->job = NULL;
        s->done = true;
        s->rc = ran ? j->rc : -1;
        s->err = j->err;
        if (!ran)
            bd_err_set(&s->err, BD_E_RUN_CANCELLED, NULL, 0, 0, "the comparison stopped");
        if (s->rc == 0) {
            /* Moved: the comparison borrows from the runs, which move with it. */
            s->runs = j->runs;
            s->cmp = j->cmp;
            memset(&j->runs, 0, sizeof(j->runs));
            memset(&j->cmp, 0, sizeof(j->cmp));
            s->stale_a = j->stale_a;
            s->stale_b = j->stale_b;
            snprintf(s->trend, sizeof(s->trend), "%s", j->trend);
            snprintf(v->title, sizeof(v->title), "compare %s", s->cmp.a->task_class);
            rebuild(v);
        }
        bd_app_invalidate(v->app, BD_DIRTY_ALL);
    }
    job_free(j);
}

/* ---- rows --------------------------------------------------------------------------- */

static const char *row_text(size_t row, void *payload)
{
    bd_view *v = payload;
    cmp_view *s = v->state;
    const bd_compare_case *c = &s->cmp.cases[row];
    snprintf(s->text, sizeof(s->text), "%s %s", bd_cmp_status_str(c->status), c->case_id);
    return s->text;
}

static bd_role status_role(bd_cmp_status st)
{
    switch (st) {
    case BD_CMP_REGRESSED:
        return BD_R_FAIL;
    case BD_CMP_IMPROVED:
        return BD_R_OK;
    case BD_CMP_CHANGED:
        return BD_R_WARN;
    default:
        return BD_R_MUTED;
    }
}

static void side_text(char *out, size_t cap, const bd_history_record *r)
{
    if (r)
        snprintf(out, cap, "%5.3f %s", r->score.score, r->score.passed ? bd_gl->ok : bd_gl->bad);
    else
        snprintf(out, cap, "    -  ");
}

/* ---- drawing ------------------------------------------------------------------------ */

/* The summary header; returns the rows it used. */
static int draw_summary(bd_view *v, WINDOW *w, int cols)
{
    cmp_view *s = v->state;
    const bd_compare *c = &s->cmp;
    char buf[512], ka[64], kb[64];
    int y = 0;
    bd_draw_text(w, y, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    size_t reg = c->counts[BD_CMP_REGRESSED];
    if (reg)
        snprintf(buf, sizeof(buf), " %zu REGRESSED ", reg);
    else
        snprintf(buf, sizeof(buf), " no regressions ");
    int rx = bd_draw_right(w, y, cols, buf, bd_role_attr(reg ? BD_R_BADGE_BAD : BD_R_BADGE_SIGNED));
    snprintf(buf, sizeof(buf), " compare %s   trend %s", c->a->task_class, s->trend);
    bd_draw_text(w, y++, 0, rx, buf, bd_role_attr(BD_R_TITLE), false);
    snprintf(buf, sizeof(buf), " A %s  %s  %s%s", c->a->run_id, c->a->finished_at,
             bd_run_kind(c->a, ka, sizeof(ka)), s->stale_a ? "  (stale records)" : "");
    bd_draw_text(w, y++, 0, cols, buf, bd_role_attr(BD_R_DIFF_CTX), false);
    snprintf(buf, sizeof(buf), " B %s  %s  %s%s", c->b->run_id, c->b->finished_at,
             bd_run_kind(c->b, kb, sizeof(kb)), s->stale_b ? "  (stale records)" : "");
    bd_draw_text(w, y++, 0, cols, buf, bd_role_attr(BD_R_DIFF_CTX), false);
    char wa[320], wb[320];
    bd_runs_report_who(&s->runs.sig, c->a->run_id, wa, sizeof(wa));
    bd_runs_report_who(&s->runs.sig, c->b->run_id, wb, sizeof(wb));
    snprintf(buf, sizeof(buf), " ran by A %s, B %s: %zu of %zu records from signed runs", wa, wb,
             bd_run_signed_records(&s->runs, c->a) + bd_run_signed_records(&s->runs, c->b),
             c->a->n_recs + c->b->n_recs);
    bd_draw_text(w, y++, 0, cols, buf, bd_role_attr(BD_R_DIFF_CTX), false);
    if (c->have_stats)
        snprintf(buf, sizeof(buf),
                 " %zu comparable: mean %.3f %s %.3f, delta %+.3f [95%% %+.3f, %+.3f]; pass "
                 "%.0f%% %s %.0f%%, McNemar p %.3g",
                 c->comparable, c->mean_a, bd_gl->arrow, c->mean_b, c->mean_delta, c->ci_lo,
                 c->ci_hi, 100 * c->pass_rate_a, bd_gl->arrow, 100 * c->pass_rate_b, c->p_value);
    else
        snprintf(buf, sizeof(buf), " no comparable cases: no statistics");
    bd_draw_text(w, y++, 0, cols, buf, A_BOLD, false);
    snprintf(buf, sizeof(buf),
             " %zu regressed, %zu improved, %zu unchanged, %zu new, %zu removed, %zu changed; "
             "isolation %s",
             reg, c->counts[BD_CMP_IMPROVED], c->counts[BD_CMP_UNCHANGED], c->counts[BD_CMP_NEW],
             c->counts[BD_CMP_REMOVED], c->counts[BD_CMP_CHANGED], c->isolation_class);
    bd_draw_text(w, y++, 0, cols, buf, bd_role_attr(BD_R_DIFF_CTX), false);
    if (c->task_class_changed)
        bd_draw_text(w, y++, 0, cols, " rubric or registration changed between runs",
                     bd_role_attr(BD_R_WARN), false);
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < c->n_fms && used + 2 < sizeof(buf); i++) {
        if (c->fms[i].count_a == c->fms[i].count_b)
            continue;
        int n = snprintf(buf + used, sizeof(buf) - used, "%s %s %zu%s%zu",
                         used ? "," : " modes:", c->fms[i].code, c->fms[i].count_a, bd_gl->arrow,
                         c->fms[i].count_b);
        if (n < 0 || (size_t)n >= sizeof(buf) - used)
            break;
        used += (size_t)n;
    }
    if (used)
        bd_draw_text(w, y++, 0, cols, buf, bd_role_attr(BD_R_MUTED), false);
    return y;
}

static void draw_rows(bd_view *v, WINDOW *w, int y0, int rows, int cols)
{
    cmp_view *s = v->state;
    char head[256], a[32], b[32], d[32];
    snprintf(head, sizeof(head), "  %-10s %-*s %-9s %-9s %s", "STATUS", cols > 80 ? 44 : 36, "CASE",
             "A", "B", "DELTA");
    bd_draw_text(w, y0, 0, cols, head, bd_role_attr(BD_R_TITLE), true);
    int h = rows - y0 - 1;
    bd_list_scroll(&s->list, h);
    int cw = cols > 80 ? 44 : 36;
    for (int i = 0; i < h; i++) {
        size_t vi = s->list.top + (size_t)i;
        if (vi >= s->list.n_vis)
            break;
        const bd_compare_case *c = &s->cmp.cases[s->list.vis[vi]];
        bool sel = vi == s->list.cursor;
        attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : 0;
        int y = y0 + 1 + i;
        bd_draw_text(w, y, 0, cols, "", base, true);
        bd_draw_text(w, y, 2, 10, bd_cmp_status_str(c->status),
                     sel ? base : bd_role_attr(status_role(c->status)), false);
        /* B's verdict badge (history_model.h) at the right of the CASE column. */
        char badge[64];
        bd_role brole;
        bd_history_model_badge(v->app->model->history, c->b ? c->b->seq : 0, badge, sizeof(badge),
                               &brole);
        int bw = badge[0] ? bd_text_width(badge) : 0;
        bd_draw_text(w, y, 13, cw - (bw ? bw + 1 : 0), c->case_id, base, false);
        if (bw)
            bd_draw_text(w, y, 13 + cw - bw, bw, badge, sel ? base : bd_role_attr(brole), false);
        side_text(a, sizeof(a), c->a);
        side_text(b, sizeof(b), c->b);
        bd_draw_text(w, y, 14 + cw, 9, a, base, false);
        bd_draw_text(w, y, 24 + cw, 9, b, base, false);
        if (c->a && c->b) {
            snprintf(d, sizeof(d), "%+.3f", c->delta);
            bd_draw_text(w, y, 34 + cw, cols - 34 - cw, d,
                         sel ? base : bd_role_attr(status_role(c->status)), false);
        }
    }
    bd_view_draw_filter_note(v, w, &s->list);
}

/* One line of the side-by-side: label, A's text, B's text, A and B differ. */
static void pair_line(WINDOW *w, int y, int cols, const char *label, const char *ta, const char *tb,
                      bool differ)
{
    int lw = cols / 3 > 28 ? 28 : cols / 3;
    int half = (cols - lw - 2) / 2;
    bd_draw_text(w, y, 1, lw, label, A_BOLD, false);
    bd_draw_text(w, y, 1 + lw, half, ta, bd_role_attr(differ ? BD_R_DIFF_DEL : BD_R_DIFF_CTX),
                 false);
    bd_draw_text(w, y, 2 + lw + half, half, tb,
                 bd_role_attr(differ ? BD_R_DIFF_ADD : BD_R_DIFF_CTX), false);
}

static const double *bd_value(const bd_history_record *r, const char *key)
{
    for (size_t i = 0; r && i < r->score.n_breakdown; i++)
        if (strcmp(r->score.breakdown[i].key, key) == 0)
            return &r->score.breakdown[i].value;
    return NULL;
}

static void draw_detail(bd_view *v, WINDOW *w, int y0, int rows, int cols)
{
    cmp_view *s = v->state;
    size_t row = bd_list_selected(&s->list);
    if (row == SIZE_MAX)
        return;
    const bd_compare_case *c = &s->cmp.cases[row];
    const bd_history_record *ra = c->a, *rb = c->b;
    char ta[256], tb[256];
    /* Lines are produced in order; those above detail_top or below the screen are skipped. */
    int y = y0;
    size_t line = 0;
#define EMIT(label, a, b, differ)                                                                  \
    do {                                                                                           \
        if (line++ >= s->detail_top && y < rows)                                                   \
            pair_line(w, y++, cols, label, a, b, differ);                                          \
    } while (0)
    snprintf(ta, sizeof(ta), "%s  %s", c->case_id, bd_cmp_status_str(c->status));
    bd_draw_text(w, y++, 0, cols, ta, bd_role_attr(BD_R_TITLE), true);
    EMIT("", ra ? "A" : "A (absent)", rb ? "B" : "B (absent)", false);
    EMIT("run", s->cmp.a->run_id, s->cmp.b->run_id, false);
    side_text(ta, sizeof(ta), ra);
    side_text(tb, sizeof(tb), rb);
    EMIT("score", ta, tb, ra && rb && ra->score.score != rb->score.score);
    snprintf(ta, sizeof(ta), "%s", ra ? (ra->score.passed ? "passed" : "failed") : "-");
    snprintf(tb, sizeof(tb), "%s", rb ? (rb->score.passed ? "passed" : "failed") : "-");
    EMIT("passed", ta, tb, ra && rb && ra->score.passed != rb->score.passed);
    snprintf(ta, sizeof(ta), "%.23s", ra && ra->case_digest ? ra->case_digest : "-");
    snprintf(tb, sizeof(tb), "%.23s", rb && rb->case_digest ? rb->case_digest : "-");
    EMIT("case digest", ta, tb, c->status == BD_CMP_CHANGED);
    snprintf(ta, sizeof(ta), "#%llu %s", ra ? (unsigned long long)ra->seq : 0ULL,
             ra ? ra->finished_at : "");
    snprintf(tb, sizeof(tb), "#%llu %s", rb ? (unsigned long long)rb->seq : 0ULL,
             rb ? rb->finished_at : "");
    EMIT("record", ra ? ta : "-", rb ? tb : "-", false);
    EMIT("breakdown", "", "", false);
    /* Breakdown keys of both sides (each sorted by key): one merge walk. */
    size_t i = 0, j = 0, na = ra ? ra->score.n_breakdown : 0, nb = rb ? rb->score.n_breakdown : 0;
    while (i < na || j < nb) {
        const char *ka = i < na ? ra->score.breakdown[i].key : NULL;
        const char *kb = j < nb ? rb->score.breakdown[j].key : NULL;
        int cmp = !ka ? 1 : !kb ? -1 : strcmp(ka, kb);
        const char *key = cmp <= 0 ? ka : kb;
        const double *va = bd_value(ra, key), *vb = bd_value(rb, key);
        snprintf(ta, sizeof(ta), va ? "%.3f" : "-", va ? *va : 0.0);
        snprintf(tb, sizeof(tb), vb ? "%.3f" : "-", vb ? *vb : 0.0);
        char label[160];
        snprintf(label, sizeof(label), "  %s", key);
        EMIT(label, ta, tb, !va || !vb || *va != *vb);
        i += cmp <= 0;
        j += cmp >= 0;
    }
    EMIT("failure modes", "", "", false);
    size_t nfa = ra ? ra->score.n_failure_modes : 0, nfb = rb ? rb->score.n_failure_modes : 0;
    for (size_t k = 0; k < nfa; k++) {
        const bd_score_fm *f = &ra->score.failure_modes[k];
        bool both = bd_record_fm_count(rb, f->code) > 0;
        snprintf(ta, sizeof(ta), "%s %s", both ? " " : "-", f->code);
        EMIT(both ? "  (both)" : "  (gone in B)", ta, both ? ta : "", !both);
    }
    for (size_t k = 0; k < nfb; k++) {
        const bd_score_fm *f = &rb->score.failure_modes[k];
        if (bd_record_fm_count(ra, f->code))
            continue;
        snprintf(tb, sizeof(tb), "+ %s", f->code);
        EMIT("  (new in B)", "", tb, true);
    }
    if (!nfa && !nfb)
        EMIT("  (none)", "", "", false);
#undef EMIT
    if (s->detail_top && line <= s->detail_top)
        s->detail_top = line ? line - 1 : 0;
}

static void draw(bd_view *v, WINDOW *w)
{
    cmp_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    if (!s->done) {
        char buf[256];
        snprintf(buf, sizeof(buf), " %s verifying the chain and comparing the runs",
                 bd_app_spinner(v->app));
        bd_draw_text(w, 0, 0, cols, buf, bd_role_attr(BD_R_MUTED), true);
        return;
    }
    if (s->rc < 0) {
        char buf[1200];
        bd_draw_text(w, 0, 0, cols, " compare", bd_role_attr(BD_R_TITLE), true);
        snprintf(buf, sizeof(buf), " %s: %s", bd_code_str(s->err.code), bd_tui_err_text(&s->err));
        int y = 1;
        size_t len = strlen(buf), off = 0;
        while (off < len && y < rows) {
            size_t n = bd_wrap_next(buf + off, len - off, cols - 1);
            bd_draw_textn(w, y++, 1, cols - 1, buf + off, n, bd_role_attr(BD_R_FAIL), false);
            off += n;
        }
        return;
    }
    int y = draw_summary(v, w, cols);
    if (s->detail)
        draw_detail(v, w, y, rows, cols);
    else
        draw_rows(v, w, y, rows, cols);
}

/* ---- keys --------------------------------------------------------------------------- */

/* Move the cursor to the next/previous regressed row (wrapping). */
static void walk(bd_view *v, int dir)
{
    cmp_view *s = v->state;
    size_t n = s->list.n_vis;
    for (size_t k = 1; k <= n; k++) {
        size_t i = dir > 0 ? (s->list.cursor + k) % n : (s->list.cursor + n - k % n) % n;
        if (s->cmp.cases[s->list.vis[i]].status == BD_CMP_REGRESSED) {
            s->list.cursor = i;
            s->detail_top = 0;
            return;
        }
    }
    bd_app_message(v->app, BD_MSG_INFO, "no regression in the list");
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    cmp_view *s = v->state;
    if (!s->done || s->rc < 0)
        return false;
    if (s->detail) {
        switch (a) {
        case BD_A_BACK:
        case BD_A_OPEN:
            s->detail = false;
            return true;
        case BD_A_UP:
            if (s->detail_top)
                s->detail_top--;
            return true;
        case BD_A_DOWN:
            s->detail_top++;
            return true;
        default:
            break;
        }
    }
    if (!s->detail && bd_list_move(&s->list, a))
        return true;
    switch (a) {
    case BD_A_OPEN:
        if (s->list.n_vis) {
            s->detail = true;
            s->detail_top = 0;
        }
        return true;
    case BD_A_NEXT_FAIL:
        walk(v, 1);
        return true;
    case BD_A_PREV_FAIL:
        walk(v, -1);
        return true;
    case BD_A_FILTER:
        bd_view_filter_prompt(v, &s->list, rebuild);
        return true;
    case BD_A_HISTORY:
        bd_app_open_history(v->app, s->cmp.a->task_class, NULL);
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    cmp_view *s = v->state;
    if (ev->kind == BD_EV_TICK && !s->done)
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
}

static void position(bd_view *v, char *out, size_t cap)
{
    cmp_view *s = v->state;
    if (!s->done || s->rc < 0)
        snprintf(out, cap, "-");
    else
        bd_view_list_position(&s->list, out, cap);
}

/* ---- open / close ------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    const bd_compare_arg *ca = arg;
    cmp_view *s = calloc(1, sizeof(*s));
    cmp_job *j = calloc(1, sizeof(*j));
    if (!s || !j || !(j->root = strdup(v->app->bench->root)) ||
        (ca->run_a && !(j->id_a = strdup(ca->run_a))) || !(j->id_b = strdup(ca->run_b))) {
        free(s);
        if (j)
            job_free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    bd_list_init(&s->list);
    snprintf(v->title, sizeof(v->title), "compare");
    j->view = v;
    j->utf8 = (unsigned char)bd_gl->hline[0] >= 0x80;
    j->work.run = job_run;
    j->work.done = job_done;
    if (!bd_view_queue_work(v->app, &j->work, "the comparison")) {
        job_free(j);
        bd_list_release(&s->list);
        free(s);
        v->state = NULL;
        return -1;
    }
    s->job = j;
    return 0;
}

static void close_view(bd_view *v)
{
    cmp_view *s = v->state;
    if (!s)
        return;
    if (s->job)
        s->job->view = NULL;
    bd_compare_release(&s->cmp);
    bd_runs_release(&s->runs);
    bd_list_release(&s->list);
    free(s->id_a);
    free(s->id_b);
    free(s);
}

static void where(bd_view *v, bd_view_where *out)
{
    cmp_view *s = v->state;
    snprintf(out->run_a, sizeof(out->run_a), "%s", s->id_a ? s->id_a : "");
    snprintf(out->run_b, sizeof(out->run_b), "%s", s->id_b ? s->id_b : "");
}

const bd_view_ops bd_view_compare = {
    "compare", actions, open_view, draw, key, event, NULL, NULL, position, close_view, where, NULL,
};
