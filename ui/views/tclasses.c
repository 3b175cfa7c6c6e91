/*
 * tclasses.c — the first view: every task class with its own signature status, its tier,
 * its cases by provenance, whether its pins hold, and its last run's mean score and pass
 * rate (docs/user-guide.md). `P` signs the task class itself (registration + rubric).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_keys.h"
#include "model.h"
#include "session.h"
#include "curate.h"
#include "view_args.h"
#include "view_util.h"
#include "views/tclasses_view.h"

typedef struct tclasses {
    bd_list list;
    char text[512];
} tclasses;

static const bd_action actions[] = {BD_A_OPEN,      BD_A_RUN,        BD_A_FILTER, BD_A_HISTORY,
                                    BD_A_RECOMMEND, BD_A_STAGE_VIEW, BD_A_SIGN,   BD_A_NEW_CASE,
                                    BD_A_EDIT_FILE, BD_A_PIN,        BD_A_REVIEW, BD_A_NONE};

/* The task class's own signatures: a glyph for the row, words for the footer. */
static const char *tc_sig_glyph(const bd_ui_tc *t, bd_role *role)
{
    *role = BD_R_MUTED;
    if (t->state == BD_LOAD_FAILED) /* never loaded: its signatures are never checked */
        return "?";
    if (t->tc_prov_check == BD_LOAD_PENDING)
        return bd_gl->pending;
    if (t->tc_prov_check == BD_LOAD_FAILED)
        return "?";
    switch ((bd_prov_status)t->tc_prov_status) {
    case BD_PROV_ST_SIGNED:
        *role = BD_R_OK;
        return bd_gl->ok;
    case BD_PROV_ST_AWAITING:
        *role = BD_R_WARN;
        return "~";
    case BD_PROV_ST_BAD:
        *role = BD_R_FAIL;
        return bd_gl->bad;
    case BD_PROV_ST_DRAFT:
        break;
    }
    return "-";
}

static const char *row_text(size_t row, void *payload)
{
    bd_view *v = payload;
    tclasses *s = v->state;
    const bd_ui_tc *t = &v->app->model->tcs[row];
    const bd_task_class *tc = bd_model_tc(v->app->model, row);
    snprintf(s->text, sizeof(s->text), "%s %s %s", t->name,
             tc ? bd_tier_str(tc->reg->current_tier) : "",
             tc && tc->reg->description ? tc->reg->description : "");
    return s->text;
}

static void rebuild(bd_view *v)
{
    tclasses *s = v->state;
    if (bd_list_rebuild(&s->list, v->app->model->n_tcs, row_text, NULL, v) < 0)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory: cannot list task classes");
}

static int open_view(bd_view *v, void *arg)
{
    (void)arg;
    tclasses *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    bd_list_init(&s->list);
    v->state = s;
    snprintf(v->title, sizeof(v->title), "task classes");
    rebuild(v);
    return 0;
}

static void close_view(bd_view *v)
{
    tclasses *s = v->state;
    bd_list_release(&s->list);
    free(s);
}

/* Column layout for `cols` columns. */
typedef struct cols_t {
    int name, tier, cases, signed_, await, draft, pins, last;
} cols_t;

/* Column layout for `cols` columns. The count columns widen with the largest case count
 * (`max_cases`), so a 100,000-case task class shows its counts whole. */
/* Column widths for `cols` columns. The task-class name comes first: when the names
 * (the widest is name_w) do not fit, LAST RUN (down to 11 columns, what "0.75  80%"
 * needs), the spare columns and PINS give way before a name is cut. */
static cols_t layout(int cols, size_t max_cases, int name_w)
{
    int digits = 1;
    for (size_t q = max_cases; q >= 10; q /= 10)
        digits++;
    cols_t c = {0, 7, 6, 7, 6, 6, 11, 15};
    if (digits + 1 > c.cases - 1) {
        int grow = digits + 2 - c.cases;
        c.cases += grow;
        c.signed_ += digits + 1 > c.signed_ - 1 ? digits + 2 - c.signed_ : 0;
        c.await += grow;
        c.draft += grow;
        c.pins += grow; /* "x 100000 bad" */
    }
    /* A wide terminal gives LAST RUN room for the trend sparkline and a partial mark. */
    if (cols >= 110)
        c.last = 34;
    int fixed = 3 + c.tier + c.cases + c.signed_ + c.await + c.draft + c.pins + c.last + 7;
    c.name = cols - fixed;
    if (c.name < name_w) {
        int room = (c.last - 11) + 3; /* the header needs 4 of the 7 spare columns */
        if (digits <= 3)
            room += c.pins - 9; /* "x 999 bad" */
        int give = name_w - c.name < room ? name_w - c.name : room;
        c.name += give;
        int from_last = give < c.last - 11 ? give : c.last - 11;
        c.last -= from_last;
        give -= from_last;
        give -= give < 3 ? give : 3;
        c.pins -= give;
    }
    if (c.name < 12)
        c.name = 12;
    return c;
}

static void draw_row(bd_view *v, WINDOW *w, int y, size_t row, bool sel, const cols_t *c)
{
    const bd_model *m = v->app->model;
    const bd_ui_tc *t = &m->tcs[row];
    const bd_task_class *tc = bd_model_tc(m, row);
    int cols = getmaxx(w);
    attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
    /* When the row is selected the whole line takes the selection colour. */
#define ROLE(r) (sel ? base : bd_role_attr(r))
    bd_draw_text(w, y, 0, cols, "", base, true);
    bd_role sig_role;
    const char *glyph = tc_sig_glyph(t, &sig_role);
    bd_draw_text(w, y, 1, 1, glyph, ROLE(sig_role) | A_BOLD, false);
    int x = 3;
    bd_draw_text(w, y, x, c->name, t->name, base | A_BOLD, true);
    x += c->name + 1;
    char buf[64];
    if (t->state == BD_LOAD_FAILED) {
        char msg[300];
        snprintf(msg, sizeof(msg), "%s %s", bd_gl->bad, bd_code_str(t->err.code));
        bd_draw_text(w, y, x, cols - x, msg, ROLE(BD_R_FAIL), false);
        return;
    }
    if (!tc) {
        snprintf(buf, sizeof(buf), "%s loading", bd_app_spinner(v->app));
        bd_draw_text(w, y, x, cols - x, buf, ROLE(BD_R_MUTED), false);
        return;
    }
    bd_draw_text(w, y, x, c->tier, bd_tier_str(tc->reg->current_tier), base, false);
    x += c->tier;
    snprintf(buf, sizeof(buf), "%*zu", c->cases - 1, t->n_cases);
    bd_draw_text(w, y, x, c->cases, buf, base, false);
    x += c->cases;
    bool metas = t->meta_done >= t->n_cases;
    /* What GnuPG verified once every case is checked (bad ones count under PINS); until
     * then, and without GnuPG, what case.yaml claims. */
    size_t sig = t->prov[BD_PROV_COUNTERSIGNED], aw = t->prov[BD_PROV_AUTHORED],
           dr = t->prov[BD_PROV_DRAFT];
    if (v->app->model->prov && t->n_cases && t->prov_checked >= t->n_cases) {
        sig = t->pstat[BD_PROV_ST_SIGNED];
        aw = t->pstat[BD_PROV_ST_AWAITING];
        dr = t->pstat[BD_PROV_ST_DRAFT];
    }
    if (metas) {
        snprintf(buf, sizeof(buf), "%*zu", c->signed_ - 1, sig);
        bd_draw_text(w, y, x, c->signed_, buf, ROLE(sig ? BD_R_OK : BD_R_MUTED), false);
        snprintf(buf, sizeof(buf), "%*zu", c->await - 1, aw);
        bd_draw_text(w, y, x + c->signed_, c->await, buf, ROLE(aw ? BD_R_WARN : BD_R_MUTED), false);
        snprintf(buf, sizeof(buf), "%*zu", c->draft - 1, dr);
        bd_draw_text(w, y, x + c->signed_ + c->await, c->draft, buf, ROLE(BD_R_MUTED), false);
    } else {
        snprintf(buf, sizeof(buf), "%*s", c->signed_ - 1, bd_gl->pending);
        bd_draw_text(w, y, x, c->signed_ + c->await + c->draft, buf, ROLE(BD_R_MUTED), false);
    }
    x += c->signed_ + c->await + c->draft + 1;
    /* Pins: every case verified, the task-class pin, no orphan. */
    bool digests = t->digest_done >= t->n_cases && t->tc_pin != BD_LOAD_PENDING;
    size_t bad = t->digest_bad + t->orphans + (t->tc_pin == BD_LOAD_FAILED);
    if (bad) {
        snprintf(buf, sizeof(buf), "%s %zu bad", bd_gl->bad, bad);
        bd_draw_text(w, y, x, c->pins, buf, ROLE(BD_R_FAIL), false);
    } else if (t->prov_bad) { /* pins hold, but signatures do not verify */
        snprintf(buf, sizeof(buf), "%s %zu sig", bd_gl->bad, t->prov_bad);
        bd_draw_text(w, y, x, c->pins, buf, ROLE(BD_R_FAIL), false);
    } else if (digests) {
        snprintf(buf, sizeof(buf), "%s ok", bd_gl->ok);
        bd_draw_text(w, y, x, c->pins, buf, ROLE(BD_R_OK), false);
    } else {
        int pct = t->n_cases ? (int)(100 * t->digest_done / t->n_cases) : 0;
        snprintf(buf, sizeof(buf), "%s %d%%", bd_app_spinner(v->app), pct);
        bd_draw_text(w, y, x, c->pins, buf, ROLE(BD_R_MUTED), false);
    }
    x += c->pins;
    /* LAST RUN is the last full run; a newer partial or cancelled one is marked. */
    if (t->has_last_run) {
        snprintf(buf, sizeof(buf), "%.2f  %3.0f%% ", t->last_mean, 100.0 * t->last_pass_rate);
        x += bd_draw_text(w, y, x, cols - x, buf,
                          ROLE(t->last_pass_rate >= 0.999 ? BD_R_OK : BD_R_WARN), false);
        x += bd_draw_text(w, y, x, cols - x, t->trend, ROLE(BD_R_MUTED), false);
        if (t->last_partial[0] && x + 2 < cols) {
            /* The kind word only ("+partial", "+subset"): the column is narrow. */
            snprintf(buf, sizeof(buf), " +%.*s", (int)strcspn(t->last_partial, " "),
                     t->last_partial);
            bd_draw_text(w, y, x, cols - x, buf, ROLE(BD_R_WARN), false);
        }
    } else if (t->last_partial[0]) {
        snprintf(buf, sizeof(buf), "no full run; last %s", t->last_partial);
        bd_draw_text(w, y, x, cols - x, buf, ROLE(BD_R_WARN), false);
    } else {
        bd_draw_text(w, y, x, cols - x, "never run", ROLE(BD_R_MUTED), false);
    }
#undef ROLE
}

static void draw(bd_view *v, WINDOW *w)
{
    tclasses *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    size_t max_cases = 0;
    int name_w = 0;
    for (size_t i = 0; i < v->app->model->n_tcs; i++) {
        if (v->app->model->tcs[i].n_cases > max_cases)
            max_cases = v->app->model->tcs[i].n_cases;
        int nw = bd_text_width(v->app->model->tcs[i].name);
        name_w = nw > name_w ? nw : name_w;
    }
    cols_t c = layout(cols, max_cases, name_w);
    char head[256];
    snprintf(head, sizeof(head), "   %-*s %-*s%*s %*s%*s%*s %-*s%s", c.name, "TASK CLASS", c.tier,
             "TIER", c.cases - 1, "CASES", c.signed_ - 1, "SIGNED", c.await, "AWAIT", c.draft,
             "DRAFT", c.pins, "PINS", "LAST RUN");
    bd_draw_text(w, 0, 0, cols, head, bd_role_attr(BD_R_TITLE), true);
    int list_h = rows - 2;
    bd_list_scroll(&s->list, list_h);
    for (int i = 0; i < list_h; i++) {
        size_t vi = s->list.top + (size_t)i;
        if (vi >= s->list.n_vis)
            break;
        draw_row(v, w, 1 + i, s->list.vis[vi], vi == s->list.cursor, &c);
    }
    if (!s->list.n_vis)
        bd_draw_text(w, 1, 1, cols - 1,
                     s->list.filter[0] ? "no task class matches the filter"
                                       : "this bench has no task classes (bench/<name>/"
                                         "registration.yaml)",
                     bd_role_attr(BD_R_MUTED), false);
    /* Footer: the selected task class's description, or why it failed to load. */
    size_t row = bd_list_selected(&s->list);
    if (row != SIZE_MAX) {
        const bd_ui_tc *t = &v->app->model->tcs[row];
        const bd_task_class *tc = bd_model_tc(v->app->model, row);
        if (t->state == BD_LOAD_FAILED)
            bd_draw_text(w, rows - 1, 1, cols - 1, bd_tui_err_text(&t->err),
                         bd_role_attr(BD_R_FAIL), false);
        else if (tc) {
            /* The task class's signatures first: they vouch for its rubric and thresholds. */
            char foot[600];
            const char *st =
                t->tc_prov_check == BD_LOAD_PENDING        ? "checking its signatures"
                : t->tc_prov_check == BD_LOAD_FAILED       ? "signatures not verified"
                : t->tc_prov_status == BD_PROV_ST_SIGNED   ? "task class signed"
                : t->tc_prov_status == BD_PROV_ST_AWAITING ? "task class awaiting review (P signs)"
                : t->tc_prov_status == BD_PROV_ST_BAD      ? "task class signature BAD"
                                                           : "task class unsigned (P signs)";
            snprintf(foot, sizeof(foot), "%s: %s", st, tc->reg->description);
            bd_draw_text(
                w, rows - 1, 1, cols - 1, foot,
                bd_role_attr(t->tc_prov_check == BD_LOAD_DONE && t->tc_prov_status == BD_PROV_ST_BAD
                                 ? BD_R_FAIL
                                 : BD_R_MUTED),
                false);
        }
    }
    bd_view_draw_filter_note(v, w, &s->list);
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    tclasses *s = v->state;
    if (bd_list_move(&s->list, a))
        return true;
    size_t row = bd_list_selected(&s->list);
    switch (a) {
    case BD_A_OPEN:
        if (row != SIZE_MAX)
            bd_app_open(v->app, BD_VIEW_CASES, &row);
        return true;
    case BD_A_FILTER:
        bd_view_filter_prompt(v, &s->list, rebuild);
        return true;
    case BD_A_RUN:
        if (row != SIZE_MAX)
            bd_ui_run_open(v->app, row, NULL, 0, false, false);
        return true;
    case BD_A_RECOMMEND:
        if (row != SIZE_MAX)
            bd_app_open(v->app, BD_VIEW_RECOMMEND, &row);
        return true;
    case BD_A_STAGE_VIEW:
        bd_app_open(v->app, BD_VIEW_STAGE, NULL);
        return true;
    case BD_A_REVIEW:
        if (row != SIZE_MAX) {
            bd_review_arg ra = {v->app->model->tcs[row].name, 0, NULL, NULL, false};
            bd_app_open(v->app, BD_VIEW_REVIEW, &ra);
        }
        return true;
    case BD_A_SIGN:
        if (row != SIZE_MAX) {
            /* case_index SIZE_MAX: the sign view signs the task class itself. */
            bd_case_ref ref = {row, SIZE_MAX};
            bd_app_open(v->app, BD_VIEW_SIGN, &ref);
        }
        return true;
    case BD_A_NEW_CASE:
        if (row != SIZE_MAX)
            bd_curate_new_case(v, row);
        return true;
    case BD_A_EDIT_FILE:
        if (row != SIZE_MAX)
            bd_curate_edit(v, row, NULL, "rubric.py");
        return true;
    case BD_A_PIN:
        if (row != SIZE_MAX)
            bd_curate_pin(v, row, NULL);
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    if (ev->kind == BD_EV_MODEL || ev->kind == BD_EV_HISTORY) {
        rebuild(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    } else if (ev->kind == BD_EV_TICK) {
        bd_app_invalidate(v->app, BD_DIRTY_BODY); /* spinners in the rows */
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)x;
    tclasses *s = v->state;
    if (bd_list_mouse(&s->list, ev, y - 1))
        key(v, BD_A_OPEN, '\r');
}

static void position(bd_view *v, char *out, size_t cap)
{
    tclasses *s = v->state;
    bd_view_list_position(&s->list, out, cap);
}

static void where(bd_view *v, bd_view_where *out)
{
    tclasses *s = v->state;
    size_t row = bd_list_selected(&s->list);
    if (row < v->app->model->n_tcs)
        snprintf(out->cursor, sizeof(out->cursor), "%s", v->app->model->tcs[row].name);
}

static int reveal(bd_view *v, const bd_view_where *w)
{
    tclasses *s = v->state;
    size_t row = bd_model_find_tc(v->app->model, w->cursor);
    return row != SIZE_MAX && bd_list_select_row(&s->list, row) ? 1 : -1;
}

const bd_view_ops bd_view_tclasses = {
    "task classes", actions, open_view, draw,       key,   event,
    NULL,           mouse,   position,  close_view, where, reveal,
};
