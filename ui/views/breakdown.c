/*
 * breakdown.c — `b` on the run view: what is dragging the task class down. A failure-mode
 * histogram (labelled bars, most frequent first, coloured by severity) and the mean of
 * each breakdown key (lowest first) over the cases finished so far, redrawn live as cases
 * finish. Enter on a row goes back to the run view showing only the cases it concerns
 * (core: src/analysis/breakdown.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breakdown.h"
#include "session.h"
#include "view_util.h"
#include "views/breakdown_view.h"

typedef struct brow {
    bool heading, is_key;
    char label[160];
    double frac;
    char value[48];
    bd_role role;
} brow;

typedef struct bview {
    bd_view *run_view; /* the view below, which Enter filters */
    brow *rows;
    size_t n;
    size_t cursor; /* a row that is not a heading, or n when there is none */
    size_t top;
    size_t n_scored;
} bview;

static const bd_action actions[] = {BD_A_OPEN, BD_A_BREAKDOWN, BD_A_NONE};

static void push(bview *b, brow r)
{
    brow *g = realloc(b->rows, (b->n + 1) * sizeof(*g));
    if (!g)
        return;
    b->rows = g;
    b->rows[b->n++] = r;
}

/* The next selectable row from `from` in direction `dir`, or `from` when there is none. */
static size_t step(const bview *b, size_t from, int dir)
{
    size_t i = from;
    while (dir > 0 ? i + 1 < b->n : i > 0) {
        i = dir > 0 ? i + 1 : i - 1;
        if (!b->rows[i].heading)
            return i;
    }
    return from;
}

static void build(bd_view *v)
{
    bview *b = v->state;
    bd_ui_run *run = v->app->run;
    free(b->rows);
    b->rows = NULL;
    b->n = 0;
    size_t n = run ? run->n : 0;
    const bd_score **scores = calloc(n + 1, sizeof(*scores));
    bd_bdown agg;
    if (!scores) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (run->cases[i].state == BD_UR_DONE && run->cases[i].has_score)
            scores[i] = &run->cases[i].score;
    if (bd_bdown_build(&agg, scores, n) < 0) {
        free(scores);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    b->n_scored = agg.n_scored;
    brow h = {.heading = true};
    snprintf(h.label, sizeof(h.label), "Failure modes (cases reporting each, of %zu finished)",
             agg.n_scored);
    push(b, h);
    if (!agg.n_modes) {
        brow r = {.heading = true, .role = BD_R_MUTED};
        snprintf(r.label, sizeof(r.label), "  none reported");
        push(b, r);
    }
    for (size_t i = 0; i < agg.n_modes; i++) {
        brow r = {0};
        snprintf(r.label, sizeof(r.label), "%s", agg.modes[i].code);
        r.frac = agg.n_scored ? (double)agg.modes[i].count / (double)agg.n_scored : 0;
        snprintf(r.value, sizeof(r.value), "%zu  %s", agg.modes[i].count,
                 bd_severity_str(agg.modes[i].severity));
        r.role = agg.modes[i].severity == BD_SEV_BLOCK  ? BD_R_FAIL
                 : agg.modes[i].severity == BD_SEV_WARN ? BD_R_WARN
                                                        : BD_R_MUTED;
        push(b, r);
    }
    brow k = {.heading = true};
    snprintf(k.label, sizeof(k.label), "Breakdown keys (mean over the cases reporting each)");
    push(b, k);
    if (!agg.n_keys) {
        brow r = {.heading = true, .role = BD_R_MUTED};
        snprintf(r.label, sizeof(r.label), "  none reported");
        push(b, r);
    }
    for (size_t i = 0; i < agg.n_keys; i++) {
        brow r = {.is_key = true};
        snprintf(r.label, sizeof(r.label), "%s", agg.keys[i].key);
        r.frac = agg.keys[i].mean;
        snprintf(r.value, sizeof(r.value), "%.2f  %zu below 1", agg.keys[i].mean,
                 agg.keys[i].n_below);
        r.role = agg.keys[i].mean >= 0.999 ? BD_R_OK : BD_R_WARN;
        push(b, r);
    }
    bd_bdown_release(&agg);
    free(scores);
    if (b->cursor >= b->n || b->rows[b->cursor].heading)
        b->cursor = b->n ? step(b, 0, 1) : 0;
    if (b->cursor < b->n && b->rows[b->cursor].heading)
        b->cursor = b->n; /* nothing to select */
}

static int open_view(bd_view *v, void *arg)
{
    bview *b = calloc(1, sizeof(*b));
    if (!b) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = b;
    b->run_view = arg;
    snprintf(v->title, sizeof(v->title), "breakdown");
    build(v);
    return 0;
}

static void close_view(bd_view *v)
{
    bview *b = v->state;
    free(b->rows);
    free(b);
}

static void draw(bd_view *v, WINDOW *w)
{
    bview *b = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    bd_draw_text(w, 0, 0, cols, " What is dragging this run down (Enter: only those cases)",
                 bd_role_attr(BD_R_TITLE), true);
    int h = rows - 1;
    if (b->cursor < b->n && b->cursor >= b->top + (size_t)h)
        b->top = b->cursor - (size_t)h + 1;
    if (b->cursor < b->top)
        b->top = b->cursor ? b->cursor - 1 : 0; /* keep its heading in sight */
    int label_w = cols / 3 < 36 ? cols / 3 : 36;
    int val_w = 20;
    int bar_w = cols - label_w - val_w - 5;
    if (bar_w > 40)
        bar_w = 40;
    for (int i = 0; i < h; i++) {
        size_t ri = b->top + (size_t)i;
        if (ri >= b->n)
            break;
        const brow *r = &b->rows[ri];
        int y = 1 + i;
        if (r->heading) {
            bd_draw_text(w, y, 1, cols - 1, r->label,
                         r->role ? bd_role_attr(r->role) : A_BOLD | A_UNDERLINE, false);
            continue;
        }
        bool sel = ri == b->cursor;
        attr_t la = sel ? bd_role_attr(BD_R_SELECTION) : bd_role_attr(r->role);
        bd_draw_text(w, y, 0, 1, sel ? bd_gl->arrow : " ", la, false);
        bd_draw_text(w, y, 2, label_w, r->label, la, true);
        if (bar_w > 4)
            bd_draw_bar(w, y, 3 + label_w, bar_w, r->frac,
                        r->is_key ? BD_R_BAR_FILL : (r->role == BD_R_FAIL ? BD_R_FAIL : BD_R_WARN),
                        BD_R_BAR_EMPTY);
        bd_draw_text(w, y, 4 + label_w + (bar_w > 4 ? bar_w : 0), val_w, r->value,
                     bd_role_attr(r->role), false);
    }
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    bview *b = v->state;
    switch (a) {
    case BD_A_UP:
    case BD_A_PAGE_UP:
    case BD_A_HOME:
        if (b->cursor < b->n)
            b->cursor = a == BD_A_UP ? step(b, b->cursor, -1) : step(b, 0, 1);
        if (a != BD_A_UP)
            b->top = 0;
        return true;
    case BD_A_DOWN:
    case BD_A_PAGE_DOWN:
    case BD_A_END:
        if (b->cursor < b->n) {
            if (a == BD_A_DOWN) {
                b->cursor = step(b, b->cursor, 1);
            } else {
                size_t last = b->cursor;
                for (size_t i = b->cursor; i < b->n; i++)
                    if (!b->rows[i].heading)
                        last = i;
                b->cursor = last;
            }
        }
        return true;
    case BD_A_OPEN: {
        if (b->cursor >= b->n)
            return true;
        const brow *r = &b->rows[b->cursor];
        char what[160];
        snprintf(what, sizeof(what), "%s", r->label);
        bool is_key = r->is_key;
        bd_view *rv = b->run_view;
        bd_app *app = v->app;
        bd_app_pop(app); /* v and b are gone */
        if (app->top == rv && rv->ops->event) {
            bd_event ev = {.kind = BD_EV_CONCERN, .what = what, .is_key = is_key};
            rv->ops->event(rv, &ev);
        }
        return true;
    }
    case BD_A_BREAKDOWN:
        bd_app_pop(v->app);
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    if (ev->kind == BD_EV_RUN) {
        build(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
}

static void position(bd_view *v, char *out, size_t cap)
{
    bview *b = v->state;
    snprintf(out, cap, "%zu finished", b->n_scored);
}

const bd_view_ops bd_view_breakdown = {
    "breakdown", actions, open_view, draw, key, event, NULL, NULL, position, close_view, NULL, NULL,
};
