/*
 * run.c — the run view: a progress bar, done/total, passed/failed/running, elapsed and
 * ETA, one row per case with a spinner while it runs; `c` cancels, Enter opens a finished
 * case's result (docs/user-guide.md). It only draws the live run, which session.c owns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_keys.h"
#include "breakdown.h"
#include "session.h"
#include "view_args.h"
#include "view_util.h"
#include "views/run_view.h"

typedef struct run_view {
    bd_list list;
    bool failed_only;
    char text[512];
    char concern[160]; /* from the breakdown panel: a failure mode or key, or "" */
    bool concern_is_key;
} run_view;

static const bd_action actions[] = {
    BD_A_OPEN,        BD_A_CANCEL,  BD_A_BREAKDOWN, BD_A_NEXT_FAIL, BD_A_PREV_FAIL,
    BD_A_FAILED_ONLY, BD_A_FILTER,  BD_A_RUN,       BD_A_DRAFTS,    BD_A_WEAKER,
    BD_A_HISTORY,     BD_A_COMPARE, BD_A_NONE};

/* ---- the view ----------------------------------------------------------------------- */

/* The run was refused for its cases' provenance (or GnuPG is missing): `d` may run it
 * again with drafts allowed. */
static bool prov_refusal(const bd_ui_run *run)
{
    if (run->phase != BD_UR_FAILED || run->drafts)
        return false;
    switch (run->error.code) {
    case BD_E_PROVENANCE_MISSING:
    case BD_E_PROVENANCE_BAD_SIGNATURE:
    case BD_E_PROVENANCE_UNTRUSTED:
    case BD_E_PROVENANCE_SAME_SIGNER:
    case BD_E_PROVENANCE_STALE:
    case BD_E_PROVENANCE_KEY_EXPIRED:
    case BD_E_PROVENANCE_KEY_REVOKED:
    case BD_E_GPG_UNAVAILABLE:
    case BD_E_GPG:
        return true;
    default:
        return false;
    }
}

static bd_ui_run *run_of(bd_view *v)
{
    return v->app->run;
}

static const char *row_text(size_t row, void *payload)
{
    bd_view *v = payload;
    run_view *s = v->state;
    const bd_ur_case *c = &run_of(v)->cases[row];
    if (s->failed_only && !(c->state == BD_UR_DONE && c->has_score && !c->score.passed))
        return NULL;
    if (s->concern[0] &&
        !(c->has_score && (s->concern_is_key ? bd_bdown_key_below(&c->score, s->concern)
                                             : bd_bdown_has_mode(&c->score, s->concern))))
        return NULL;
    snprintf(s->text, sizeof(s->text), "%s %s", c->id ? c->id : "",
             c->state == BD_UR_DONE      ? (c->has_score && c->score.passed ? "passed" : "failed")
             : c->state == BD_UR_BUSY    ? "running"
             : c->state == BD_UR_NOT_RUN ? "not run"
             : c->state == BD_UR_NOT_RECORDED ? "no record"
                                              : "queued");
    bd_fm_codes_append(s->text, sizeof(s->text), c->has_score ? &c->score : NULL);
    return s->text;
}

static void rebuild(bd_view *v)
{
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    if (bd_list_rebuild(&s->list, run ? run->n : 0, row_text, NULL, v) < 0)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
}

static int open_view(bd_view *v, void *arg)
{
    (void)arg;
    if (!v->app->run) {
        bd_app_message(v->app, BD_MSG_INFO, "no run yet: r runs the selected task class or case");
        return -1;
    }
    run_view *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    bd_list_init(&s->list);
    snprintf(v->title, sizeof(v->title), "run %s", v->app->run->task_class);
    rebuild(v);
    return 0;
}

static void close_view(bd_view *v)
{
    run_view *s = v->state;
    bd_list_release(&s->list);
    free(s);
}

static void draw_row(bd_view *v, WINDOW *w, int y, size_t row, bool sel)
{
    const bd_ur_case *c = &run_of(v)->cases[row];
    int cols = getmaxx(w);
    attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
#define ROLE(r) (sel ? base : bd_role_attr(r))
    bd_draw_text(w, y, 0, cols, "", base, true);
    const char *glyph;
    const char *state;
    bd_role role;
    switch (c->state) {
    case BD_UR_BUSY:
        glyph = bd_app_spinner(v->app);
        state = "running";
        role = BD_R_WARN;
        break;
    case BD_UR_DONE:
        glyph = c->has_score && c->score.passed ? bd_gl->ok : bd_gl->bad;
        state = c->has_score && c->score.passed ? "passed" : "failed";
        role = c->has_score && c->score.passed ? BD_R_OK : BD_R_FAIL;
        break;
    case BD_UR_NOT_RUN:
        glyph = "-";
        state = "not run";
        role = BD_R_MUTED;
        break;
    case BD_UR_NOT_RECORDED: /* scored, but the history could not take its record */
        glyph = bd_gl->bad;
        state = "no record";
        role = BD_R_FAIL;
        break;
    default:
        glyph = bd_gl->pending;
        state = "queued";
        role = BD_R_MUTED;
        break;
    }
    int idw = cols - 1 - 2 - 8 - 7 - 9 - 22;
    if (idw < 20)
        idw = 20;
    int x = 1;
    bd_draw_text(w, y, x, 2, glyph, ROLE(role), false);
    x += 2;
    bd_draw_text(w, y, x, idw, c->id, base, false);
    x += idw + 1;
    bd_draw_text(w, y, x, 8, state, ROLE(role), false);
    x += 8;
    char buf[64];
    if (c->state == BD_UR_DONE && c->has_score) {
        snprintf(buf, sizeof(buf), "%.2f", c->score.score);
        bd_draw_text(w, y, x, 6, buf, ROLE(role), false);
    }
    x += 7;
    if (c->state == BD_UR_BUSY || c->state == BD_UR_DONE) {
        long long ms =
            c->state == BD_UR_DONE
                ? (c->wall_ms >= 0 ? c->wall_ms : (long long)(c->finished_ms - c->started_ms))
                : (long long)(bd_app_now_ms(v->app) - c->started_ms);
        bd_human_ms(buf, sizeof(buf), ms);
        bd_draw_text(w, y, x, 8, buf, ROLE(BD_R_MUTED), false);
    }
    x += 9;
    char badge[64]; /* the record's verdict badge (history_model.h), before its failure mode */
    bd_role brole;
    if (bd_history_model_badge(v->app->model->history, c->seq, badge, sizeof(badge), &brole)[0])
        x += bd_draw_text(w, y, x, cols - x, badge, ROLE(brole), false) + 1;
    if (c->has_score && c->score.n_failure_modes && x < cols)
        bd_draw_text(w, y, x, cols - x, c->score.failure_modes[0].code, ROLE(BD_R_FAIL), false);
#undef ROLE
}

/* The first three rows: the title (what runs, its isolation, where it stands) and the
 * progress (bar, counts, elapsed time and ETA). */
static void draw_head(bd_view *v, WINDOW *w)
{
    bd_ui_run *run = run_of(v);
    int cols = getmaxx(w);
    uint64_t now = bd_app_now_ms(v->app);
    /* Title: what runs, under which isolation, and where it stands. */
    const char *phase = run->phase == BD_UR_PREPARING ? "checking integrity"
                        : run->phase == BD_UR_RUNNING
                            ? (run->cancel_requested ? "cancelling" : "running")
                        : run->phase == BD_UR_FAILED ? "REFUSED"
                        : run->error.code != BD_OK   ? "ABORTED"
                        : run->cancelled             ? "cancelled"
                        : run->stopped_cost_cap      ? "stopped: cost cap"
                                                     : "finished";
    bd_role prole = run->phase == BD_UR_FAILED || run->error.code != BD_OK ? BD_R_BADGE_BAD
                    : run->phase == BD_UR_FINISHED && !run->cancelled      ? BD_R_BADGE_SIGNED
                                                                           : BD_R_TITLE;
    char buf[512];
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    snprintf(buf, sizeof(buf), " %s%s%s ",
             run->phase == BD_UR_PREPARING || run->phase == BD_UR_RUNNING ? bd_app_spinner(v->app)
                                                                          : "",
             run->phase == BD_UR_PREPARING || run->phase == BD_UR_RUNNING ? " " : "", phase);
    int rx = bd_draw_right(w, 0, cols, buf, bd_role_attr(prole));
    const char *start = run->runner ? bd_runner_summary(run->runner)->start : ""; /* warm|cold */
    snprintf(buf, sizeof(buf), " run %s  %s  %s%s%s", run->task_class,
             run->run_id[0] ? run->run_id : "", run->isolation, start[0] ? "  start " : "", start);
    bd_draw_text(w, 0, 0, rx, buf, bd_role_attr(BD_R_TITLE), false);

    /* Progress. */
    size_t total = run->n;
    double frac = total ? (double)run->done / (double)total : 0;
    snprintf(buf, sizeof(buf), " %zu/%zu %3.0f%%", run->done, total, 100.0 * frac);
    int bw = cols - 2 - bd_text_width(buf);
    bd_draw_bar(w, 1, 1, bw, frac, BD_R_BAR_FILL, BD_R_BAR_EMPTY);
    bd_draw_text(w, 1, 1 + bw, cols - 1 - bw, buf, A_BOLD, false);
    uint64_t end = run->phase == BD_UR_FINISHED || run->phase == BD_UR_FAILED ? run->t_end_ms : now;
    if (!end)
        end = now;
    long long elapsed = (long long)(end - run->t_start_ms);
    char el[32], eta[32] = "-";
    bd_human_ms(el, sizeof(el), elapsed);
    if (run->phase == BD_UR_RUNNING && run->done && run->done < total)
        bd_human_ms(eta, sizeof(eta),
                    (long long)((double)elapsed / (double)run->done * (double)(total - run->done)));
    else if (run->phase == BD_UR_FINISHED && !run->cancelled && run->error.code == BD_OK)
        snprintf(eta, sizeof(eta), "done");
    /* A finished run queues nothing: what did not run is marked so. */
    size_t queued = run->phase != BD_UR_FINISHED && total > run->done + run->running
                        ? total - run->done - run->running
                        : 0;
    int x = 1;
    snprintf(buf, sizeof(buf), "passed %zu", run->passed);
    x += bd_draw_text(w, 2, x, cols - x, buf, bd_role_attr(BD_R_OK), false) + 2;
    snprintf(buf, sizeof(buf), "failed %zu", run->failed);
    x += bd_draw_text(w, 2, x, cols - x, buf, run->failed ? bd_role_attr(BD_R_FAIL) : A_NORMAL,
                      false) +
         2;
    int n = snprintf(buf, sizeof(buf), "running %zu  queued %zu   elapsed %s  ETA %s", run->running,
                     queued, el, eta);
    if (run->has_cost_cap) /* the budget beside the cost */
        snprintf(buf + n, sizeof(buf) - (size_t)n, "   cost %s", run->cost);
    bd_draw_text(w, 2, x, cols - x, buf, A_NORMAL, false);
}

static void draw(bd_view *v, WINDOW *w)
{
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    int rows = getmaxy(w), cols = getmaxx(w);
    draw_head(v, w);
    char buf[512];

    int idw = cols - 1 - 2 - 8 - 7 - 9 - 22;
    if (idw < 20)
        idw = 20;
    snprintf(buf, sizeof(buf), "   %-*s %-8s%-7s%-9s%s", idw, "CASE", "STATE", "SCORE", "TIME",
             "FAILURE");
    bd_draw_text(w, 3, 0, cols, buf, bd_role_attr(BD_R_TITLE), true);
    /* Footer: the error, or the summary once finished. */
    char foot[1400] = "";
    bd_role fr = BD_R_MUTED;
    if (run->error.code != BD_OK) {
        snprintf(foot, sizeof(foot), "%s%s: %s", prov_refusal(run) ? "d runs with drafts  " : "",
                 bd_code_str(run->error.code), bd_tui_err_text(&run->error));
        fr = BD_R_FAIL;
    } else if (run->phase == BD_UR_FINISHED && run->has_mean) {
        int n = snprintf(foot, sizeof(foot), "mean %.3f", run->mean);
        if (run->has_ci)
            n += snprintf(foot + n, sizeof(foot) - (size_t)n, " [%.3f, %.3f]", run->ci_lo,
                          run->ci_hi);
        n += snprintf(foot + n, sizeof(foot) - (size_t)n, "  pass %.0f%%", 100.0 * run->pass_rate);
        if (run->chain_head[0])
            snprintf(foot + n, sizeof(foot) - (size_t)n, "  chain head %.12s%s", run->chain_head,
                     bd_gl->ellipsis);
        fr = run->failed ? BD_R_WARN : BD_R_OK;
    }
    if (run->error.code == BD_OK && run->phase == BD_UR_FINISHED && run->stopped_cost_cap) {
        size_t n = strlen(foot);
        snprintf(foot + n, sizeof(foot) - n, "%sthe cost cap stopped the run: %zu case%s not run%s",
                 n ? "  " : "", run->n_not_run, run->n_not_run == 1 ? "" : "s",
                 run->done ? "" : ", nothing recorded");
        fr = BD_R_WARN;
    }
    /* The footer is wrapped, never cut: a refusal says what to do at its end. */
    int foot_h = foot[0] ? bd_wrap_count(foot, cols - 2) : 1;
    if (foot_h > rows - 6)
        foot_h = rows - 6 > 1 ? rows - 6 : 1;
    int list_h = rows - 4 - foot_h;
    bd_list_scroll(&s->list, list_h);
    for (int i = 0; i < list_h; i++) {
        size_t vi = s->list.top + (size_t)i;
        if (vi >= s->list.n_vis)
            break;
        draw_row(v, w, 4 + i, s->list.vis[vi], vi == s->list.cursor);
    }
    if (run->phase == BD_UR_PREPARING)
        bd_draw_text(w, 4, 3, cols - 3,
                     "checking the chain, the rubric, every case and cassette against their "
                     "pins...",
                     bd_role_attr(BD_R_MUTED), false);
    else if (!s->list.n_vis && s->failed_only)
        bd_draw_text(w, 4, 3, cols - 3, "no failed case (f shows all)", bd_role_attr(BD_R_MUTED),
                     false);

    bd_draw_wrapped(w, rows - foot_h, 1, cols - 2, foot_h, foot, bd_role_attr(fr));
    bd_view_draw_filter_note(v, w, &s->list);
}

/* The result provider: the run's finished cases. */
static size_t prov_count(void *payload)
{
    bd_view *v = payload;
    run_view *s = v->state;
    return s->list.n_vis;
}

static bool prov_get(void *payload, size_t i, bd_result_src *out)
{
    bd_view *v = payload;
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    if (!run || i >= s->list.n_vis)
        return false;
    const bd_ur_case *c = &run->cases[s->list.vis[i]];
    if (c->state != BD_UR_DONE || !c->has_score)
        return false;
    memset(out, 0, sizeof(*out));
    out->run_id = run->run_id;
    out->task_class = run->task_class;
    out->case_id = c->id;
    out->score = &c->score;
    out->stderr_tail = NULL; /* the result view reads <runs>/<run>/<case>.stderr */
    out->seq = c->seq;
    out->record_hash = c->record_hash;
    out->isolation = run->isolation;
    out->operator_fingerprint = run->operator_fpr[0] ? run->operator_fpr : NULL;
    out->started_at = c->started_at;
    out->finished_at = c->finished_at;
    out->case_digest = c->case_digest;
    /* The records of this run carry it: without it a fresh result would look stale. */
    out->task_class_digest = run->task_class_digest[0] ? run->task_class_digest : NULL;
    out->wall_ms = c->wall_ms;
    out->unverified = !c->provenance_verified;
    return true;
}

static void prov_follow(void *payload, size_t i)
{
    bd_view *v = payload;
    run_view *s = v->state;
    if (i < s->list.n_vis)
        s->list.cursor = i;
}

static void open_result(bd_view *v, size_t vis_index)
{
    bd_result_arg arg = {{prov_count, prov_get, prov_follow, v}, vis_index};
    bd_result_src src;
    if (!prov_get(v, vis_index, &src)) {
        bd_app_message(v->app, BD_MSG_INFO, "this case has not finished yet");
        return;
    }
    bd_app_open(v->app, BD_VIEW_RESULT, &arg);
}

/* Move the cursor to the next/previous failed case and open it. */
static void walk(bd_view *v, int dir)
{
    run_view *s = v->state;
    size_t n = s->list.n_vis;
    for (size_t k = 1; k <= n; k++) {
        size_t i = dir > 0 ? (s->list.cursor + k) % n : (s->list.cursor + n - k % n) % n;
        bd_result_src src;
        if (prov_get(v, i, &src) && !src.score->passed) {
            s->list.cursor = i;
            open_result(v, i);
            return;
        }
    }
    bd_app_message(v->app, BD_MSG_INFO, "no failed case (yet)");
}

/* Run the same selection again (the new run replaces this view). */
static void rerun(bd_view *v, bool drafts, bool weaker)
{
    bd_ui_run *run = run_of(v);
    if (run->phase == BD_UR_PREPARING || run->phase == BD_UR_RUNNING) {
        bd_app_message(v->app, BD_MSG_WARN, "this run is still going: c cancels it");
        return;
    }
    /* By name: a reload since the run may have renumbered the task classes. */
    size_t tc = bd_model_find_tc(v->app->model, run->task_class), n = run->n_ids;
    if (tc == SIZE_MAX) {
        bd_app_message(v->app, BD_MSG_WARN, "task class '%s' is no longer in the bench",
                       run->task_class);
        return;
    }
    char **ids = run->ids;
    run->ids = NULL;
    run->n_ids = 0;
    bd_ui_run_open(v->app, tc, (const char *const *)ids, n, drafts, weaker);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* `y` to the question of `W`: the run view is on top (the question ends at any key). */
static void rerun_weaker(bd_app *app)
{
    if (app->top && bd_view_is(app->top, BD_VIEW_RUN) && app->run)
        rerun(app->top, app->run->drafts, true);
}

static void concern(bd_view *v, const char *what, bool is_key)
{
    run_view *s = v->state;
    snprintf(s->concern, sizeof(s->concern), "%s", what ? what : "");
    s->concern_is_key = is_key;
    rebuild(v);
    s->list.cursor = 0;
    s->list.top = 0;
    bd_app_message(v->app, BD_MSG_INFO, "%zu case%s %s %s; Esc shows every case", s->list.n_vis,
                   s->list.n_vis == 1 ? "" : "s", is_key ? "scored below 1 on" : "reported", what);
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    if (bd_list_move(&s->list, a))
        return true;
    switch (a) {
    case BD_A_OPEN:
        if (s->list.n_vis)
            open_result(v, s->list.cursor);
        return true;
    case BD_A_CANCEL:
        bd_ui_run_cancel(v->app);
        return true;
    case BD_A_NEXT_FAIL:
        walk(v, 1);
        return true;
    case BD_A_PREV_FAIL:
        walk(v, -1);
        return true;
    case BD_A_FAILED_ONLY:
        s->failed_only = !s->failed_only;
        rebuild(v);
        return true;
    case BD_A_FILTER:
        bd_view_filter_prompt(v, &s->list, rebuild);
        return true;
    case BD_A_BREAKDOWN:
        bd_app_open(v->app, BD_VIEW_BREAKDOWN, v);
        return true;
    case BD_A_ESCAPE:
        if (!s->concern[0])
            return false;
        s->concern[0] = '\0';
        rebuild(v);
        bd_app_message(v->app, BD_MSG_INFO, "showing every case again");
        return true;
    case BD_A_RUN:
        rerun(v, run->drafts, run->weaker);
        return true; /* v may be gone: the new run replaced this view */
    case BD_A_WEAKER:
        if (run->phase == BD_UR_FAILED && run->error.code == BD_E_ISOLATION_UNAVAILABLE)
            bd_app_confirm(v->app,
                           "run under the weaker isolation class (its records say which)? (y/n)",
                           rerun_weaker);
        else
            bd_app_message(v->app, BD_MSG_INFO,
                           "W runs again under a weaker isolation class after a run refused "
                           "for isolation.unavailable");
        return true;
    case BD_A_DRAFTS: {
        /* After a refusal of unsigned cases, or after a run that skipped some. */
        bool skipped = !run->drafts && run->plan.skipped_draft + run->plan.skipped_awaiting > 0;
        if (skipped && bd_ui_run_active(v->app))
            bd_app_message(v->app, BD_MSG_INFO,
                           "d runs again with drafts once this run is over (c cancels it)");
        else if (prov_refusal(run) || skipped)
            rerun(v, true, run->weaker);
        else
            bd_app_message(v->app, BD_MSG_INFO,
                           "d runs again with drafts after a run that refused or skipped "
                           "unsigned cases");
        return true;
    }
    case BD_A_HISTORY:
        bd_app_open_history(v->app, run->task_class, NULL);
        return true;
    case BD_A_COMPARE: /* this run against the previous full run */
        if (run->phase != BD_UR_FINISHED || !run->run_id[0] || !run->done)
            bd_app_message(v->app, BD_MSG_INFO,
                           "= compares a finished run with the previous "
                           "full run");
        else {
            bd_compare_arg ca = {NULL, run->run_id};
            bd_app_open(v->app, BD_VIEW_COMPARE, &ca);
        }
        return true;
    default:
        break;
    }
    return false;
}

static void event(bd_view *v, const bd_event *ev)
{
    if (ev->kind == BD_EV_CONCERN) {
        concern(v, ev->what, ev->is_key);
    } else if (ev->kind == BD_EV_RUN) {
        rebuild(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    } else if (ev->kind == BD_EV_TICK) {
        bd_ui_run *run = run_of(v);
        if (run && (run->phase == BD_UR_RUNNING || run->phase == BD_UR_PREPARING))
            bd_app_invalidate(v->app, BD_DIRTY_BODY); /* spinners, elapsed, ETA */
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)x;
    run_view *s = v->state;
    if (bd_list_mouse(&s->list, ev, y - 4))
        open_result(v, s->list.cursor);
}

static void position(bd_view *v, char *out, size_t cap)
{
    run_view *s = v->state;
    bd_view_list_position(&s->list, out, cap);
}

static void where(bd_view *v, bd_view_where *out)
{
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    size_t row = bd_list_selected(&s->list);
    if (run && row < run->n && run->cases[row].id)
        snprintf(out->cursor, sizeof(out->cursor), "%s", run->cases[row].id);
}

static int reveal(bd_view *v, const bd_view_where *w)
{
    run_view *s = v->state;
    bd_ui_run *run = run_of(v);
    for (size_t i = 0; run && i < run->n; i++)
        if (run->cases[i].id && strcmp(run->cases[i].id, w->cursor) == 0)
            return bd_list_select_row(&s->list, i) ? 1 : -1;
    return -1;
}

const bd_view_ops bd_view_run = {
    "run", actions, open_view, draw, key, event, NULL, mouse, position, close_view, where, reveal,
};
