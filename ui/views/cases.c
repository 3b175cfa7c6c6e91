/*
 * cases.c — one row per case of a task class: id, disposition, difficulty, digest ✓/✗,
 * provenance A/R, last score and first failure mode; `/` filters, `s` sorts by the next
 * column (docs/user-guide.md). Rows fill in as the model's pool jobs report; the chunk under
 * the cursor is read and hashed first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stale.h"
#include "model.h"
#include "session.h"
#include "curate.h"
#include "view_args.h"
#include "view_util.h"
#include "views/cases_view.h"

/*      id            heading    */
#define SORT_KEYS(X)                                                                               \
    X(SORT_ID, "CASE")                                                                             \
    X(SORT_DISP, "DISP")                                                                           \
    X(SORT_DIFF, "DIFF")                                                                           \
    X(SORT_DIGEST, "DIG")                                                                          \
    X(SORT_PROV, "PROV")                                                                           \
    X(SORT_LAST, "LAST")                                                                           \
    X(SORT_FAILURE, "FAILURE")

typedef enum {
#define BD_X(id, name) id,
    SORT_KEYS(BD_X)
#undef BD_X
        SORT__COUNT
} sort_key;

static const char *const sort_names[] = {
#define BD_X(id, name) name,
    SORT_KEYS(BD_X)
#undef BD_X
};

typedef struct cases {
    size_t tc;
    int id_width; /* widest case id, in columns */
    bd_list list;
    sort_key sort;
    bool reverse;
    char text[768];
} cases;

static const bd_action actions[] = {BD_A_OPEN, BD_A_RUN,          BD_A_RUN_ALL,  BD_A_FILTER,
                                    BD_A_SORT, BD_A_SORT_REVERSE, BD_A_HISTORY,  BD_A_RECOMMEND,
                                    BD_A_SIGN, BD_A_STAGE_VIEW,   BD_A_NEW_CASE, BD_A_EDIT_FILE,
                                    BD_A_PIN,  BD_A_REVIEW,       BD_A_NONE};

static const bd_ui_tc *tc_of(bd_view *v)
{
    cases *s = v->state;
    return &v->app->model->tcs[s->tc];
}

static const char *disp_short(const bd_ui_case *c)
{
    if (c->meta != BD_LOAD_DONE)
        return c->meta == BD_LOAD_FAILED ? "?" : "";
    return bd_disposition_str((bd_disposition)c->disposition);
}

static const char *row_text(size_t row, void *payload)
{
    bd_view *v = payload;
    cases *s = v->state;
    const bd_ui_case *c = &tc_of(v)->cases[row];
    snprintf(s->text, sizeof(s->text), "%s %s %s %s %s", c->id, disp_short(c),
             c->meta == BD_LOAD_DONE ? bd_difficulty_str((bd_difficulty)c->difficulty) : "",
             c->last_fm ? c->last_fm : "", c->title ? c->title : "");
    return s->text;
}

static int digest_rank(const bd_ui_case *c)
{
    return c->digest == BD_LOAD_FAILED ? 0 : c->digest == BD_LOAD_PENDING ? 1 : 2;
}

static int cmp_rows(size_t a, size_t b, void *payload)
{
    bd_view *v = payload;
    cases *s = v->state;
    const bd_ui_case *x = &tc_of(v)->cases[a], *y = &tc_of(v)->cases[b];
    int c = 0;
    switch (s->sort) {
    case SORT_ID:
        c = strcmp(x->id, y->id);
        break;
    case SORT_DISP:
        c = (int)x->disposition - (int)y->disposition;
        break;
    case SORT_DIFF:
        c = (int)x->difficulty - (int)y->difficulty;
        break;
    case SORT_DIGEST:
        c = digest_rank(x) - digest_rank(y);
        break;
    case SORT_PROV:
        c = (int)x->prov - (int)y->prov;
        break;
    case SORT_LAST: /* never-run cases last, then by score */
        if (x->has_last != y->has_last)
            c = x->has_last ? -1 : 1;
        else if (x->has_last)
            c = x->last_score < y->last_score ? -1 : x->last_score > y->last_score;
        break;
    case SORT_FAILURE:
        c = strcmp(x->last_fm ? x->last_fm : "\x7f", y->last_fm ? y->last_fm : "\x7f");
        break;
    default:
        break;
    }
    return s->reverse ? -c : c;
}

static void rebuild(bd_view *v)
{
    cases *s = v->state;
    const bd_ui_tc *t = tc_of(v);
    bool sorted = s->sort != SORT_ID || s->reverse;
    s->id_width = 4;
    for (size_t i = 0; i < t->n_cases; i++) {
        int w = bd_text_width(t->cases[i].id);
        if (w > s->id_width)
            s->id_width = w;
    }
    if (bd_list_rebuild(&s->list, t->n_cases, row_text, sorted ? cmp_rows : NULL, v) < 0)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory: cannot list cases");
}

static void prioritize(bd_view *v)
{
    cases *s = v->state;
    size_t row = bd_list_selected(&s->list);
    bd_model_prioritize(v->app->model, s->tc, row == SIZE_MAX ? 0 : row);
}

static int open_view(bd_view *v, void *arg)
{
    size_t tc = *(const size_t *)arg;
    bd_ui_tc *t = &v->app->model->tcs[tc];
    if (t->state == BD_LOAD_FAILED) {
        bd_app_error(v->app, &t->err);
        return -1;
    }
    cases *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    s->tc = tc;
    bd_list_init(&s->list);
    v->state = s;
    snprintf(v->title, sizeof(v->title), "%s", t->name);
    rebuild(v);
    /* Back where the user left this task class. */
    if (t->cursor_saved) {
        bd_list_select_row(&s->list, t->saved_cursor);
        s->list.top = t->saved_top;
    }
    prioritize(v);
    return 0;
}

static void close_view(bd_view *v)
{
    cases *s = v->state;
    bd_ui_tc *t = &v->app->model->tcs[s->tc];
    size_t row = bd_list_selected(&s->list);
    if (row != SIZE_MAX && !s->list.filter[0]) {
        t->cursor_saved = true;
        t->saved_cursor = row;
        t->saved_top = s->list.top;
    }
    /* The priority stays on this task class and row: the rows shown when the user comes
     * back, and the row a sign view opened from elsewhere asks for. */
    bd_list_release(&s->list);
    free(s);
}

typedef struct cols_t {
    int id, disp, diff, dig, prov, last, fm;
} cols_t;

/* The id column gets what its widest id needs, as long as the failure column keeps 16. */
/* Column widths. The case id comes first: when the ids do not fit, DISP shortens to
 * "pos"/"neg"/"amb" and FAILURE gives way down to 12 columns before an id is cut. */
static cols_t layout(int cols, int id_width)
{
    cols_t c = {0, 9, 7, 4, 5, 6, 0};
    int rest = cols - 1 - c.disp - c.diff - c.dig - c.prov - c.last - 6;
    if (id_width + 1 > rest - 16) {
        c.disp = 5;
        rest += 4;
    }
    int fm_min = id_width + 1 > rest - 16 ? 12 : 16;
    c.id = id_width + 1 < rest - fm_min ? id_width + 1 : rest - fm_min;
    if (c.id < 16)
        c.id = 16;
    c.fm = rest - c.id;
    return c;
}

static void draw_prov(WINDOW *w, int y, int x, const bd_ui_case *c, bool sel, attr_t base)
{
    /* A = author signature, R = reviewer; coloured by what verification said. */
    if (c->meta != BD_LOAD_DONE) {
        bd_draw_text(w, y, x, 3, c->meta == BD_LOAD_FAILED ? "?" : "", base, false);
        return;
    }
    bd_prov_claim claim = (bd_prov_claim)c->prov;
    const char *txt = claim == BD_PROV_COUNTERSIGNED ? "A R"
                      : claim == BD_PROV_AUTHORED    ? "A -"
                                                     : "- -";
    bd_role r = BD_R_BADGE_DRAFT;
    if (c->prov_check == BD_LOAD_DONE) {
        switch ((bd_prov_status)c->prov_status) {
        case BD_PROV_ST_SIGNED:
            r = BD_R_BADGE_SIGNED;
            break;
        case BD_PROV_ST_AWAITING:
            r = BD_R_BADGE_AWAITING;
            break;
        case BD_PROV_ST_BAD:
            r = BD_R_BADGE_BAD;
            break;
        default:
            r = BD_R_BADGE_DRAFT;
            break;
        }
    } else if (claim != BD_PROV_DRAFT) {
        r = BD_R_MUTED; /* claimed, not verified (yet) */
    }
    bd_draw_text(w, y, x, 3, txt, sel ? base : bd_role_attr(r), false);
}

static void draw_row(bd_view *v, WINDOW *w, int y, size_t row, bool sel, const cols_t *c)
{
    const bd_ui_case *k = &tc_of(v)->cases[row];
    int cols = getmaxx(w);
    attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
#define ROLE(r) (sel ? base : bd_role_attr(r))
    bd_draw_text(w, y, 0, cols, "", base, true);
    int x = 1;
    bd_draw_text(w, y, x, c->id, k->id, base, false);
    x += c->id + 1;
    char disp[16];
    snprintf(disp, sizeof(disp), "%.*s", c->disp < 9 ? 3 : 15, disp_short(k));
    bd_draw_text(w, y, x, c->disp - 1, disp, base, false);
    x += c->disp;
    bd_draw_text(w, y, x, c->diff - 1,
                 k->meta == BD_LOAD_DONE ? bd_difficulty_str((bd_difficulty)k->difficulty) : "",
                 base, false);
    x += c->diff;
    const char *g = k->digest == BD_LOAD_DONE     ? bd_gl->ok
                    : k->digest == BD_LOAD_FAILED ? bd_gl->bad
                                                  : bd_gl->pending;
    bd_draw_text(w, y, x + 1, 1, g,
                 ROLE(k->digest == BD_LOAD_DONE     ? BD_R_OK
                      : k->digest == BD_LOAD_FAILED ? BD_R_FAIL
                                                    : BD_R_MUTED),
                 false);
    x += c->dig;
    draw_prov(w, y, x, k, sel, base);
    x += c->prov + 1;
    if (k->has_last) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%.2f", k->last_score);
        bd_draw_text(w, y, x, c->last, buf, ROLE(k->last_passed ? BD_R_OK : BD_R_FAIL), false);
        /* A stale score was earned by other content or another rubric: marked, never hidden. */
        if (k->last_stale)
            bd_draw_text(w, y, x + 5, 1, "*", ROLE(BD_R_WARN) | A_BOLD, false);
    } else {
        bd_draw_text(w, y, x, c->last, "-", ROLE(BD_R_MUTED), false);
    }
    x += c->last + 1;
    if (k->has_last && k->last_fm)
        bd_draw_text(w, y, x, cols - x, k->last_fm, ROLE(BD_R_FAIL), false);
#undef ROLE
}

static void draw(bd_view *v, WINDOW *w)
{
    cases *s = v->state;
    const bd_ui_tc *t = tc_of(v);
    int rows = getmaxy(w), cols = getmaxx(w);
    cols_t c = layout(cols, s->id_width);
    /* Headings, the sorted one marked. */
    const int widths[SORT__COUNT] = {c.id + 1, c.disp, c.diff, c.dig, c.prov + 1, c.last + 1, cols};
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    int x = 1;
    for (int k = 0; k < SORT__COUNT && x < cols; k++) {
        char h[64];
        snprintf(h, sizeof(h), "%s%s", sort_names[k],
                 (int)s->sort == k ? (s->reverse ? bd_gl->down : bd_gl->up) : "");
        bd_draw_text(w, 0, x, widths[k] < cols - x ? widths[k] : cols - x, h,
                     bd_role_attr(BD_R_TITLE), false);
        x += widths[k];
    }
    int list_h = rows - 2;
    bd_list_scroll(&s->list, list_h);
    for (int i = 0; i < list_h; i++) {
        size_t vi = s->list.top + (size_t)i;
        if (vi >= s->list.n_vis)
            break;
        draw_row(v, w, 1 + i, s->list.vis[vi], vi == s->list.cursor, &c);
    }
    if (t->state == BD_LOAD_PENDING) {
        char msg[64];
        snprintf(msg, sizeof(msg), "%s loading %s", bd_app_spinner(v->app), t->name);
        bd_draw_text(w, 1, 1, cols - 1, msg, bd_role_attr(BD_R_MUTED), false);
    } else if (!s->list.n_vis) {
        bd_draw_text(w, 1, 1, cols - 1,
                     s->list.filter[0] ? "no case matches the filter"
                                       : "no cases yet: `benchdesk case new` scaffolds one",
                     bd_role_attr(BD_R_MUTED), false);
    }
    /* Footer: what is wrong with the selected case, else its title. */
    size_t row = bd_list_selected(&s->list);
    if (row != SIZE_MAX) {
        const bd_ui_case *k = &t->cases[row];
        char foot[1200];
        if (k->digest_msg) {
            snprintf(foot, sizeof(foot), "%s: %s", bd_code_str(k->digest_code), k->digest_msg);
            bd_draw_text(w, rows - 1, 1, cols - 1, foot, bd_role_attr(BD_R_FAIL), false);
        } else if (k->prov_check == BD_LOAD_DONE && k->prov_status == BD_PROV_ST_BAD) {
            snprintf(foot, sizeof(foot), "%s: signatures do not verify (Enter shows which)",
                     bd_code_str(k->prov_code));
            bd_draw_text(w, rows - 1, 1, cols - 1, foot, bd_role_attr(BD_R_FAIL), false);
        } else if (k->has_last && k->last_stale) {
            snprintf(foot, sizeof(foot), "* last score is stale (%s since it was scored): %s",
                     bd_stale_str(k->last_stale), k->title ? k->title : "");
            bd_draw_text(w, rows - 1, 1, cols - 1, foot, bd_role_attr(BD_R_WARN), false);
        } else {
            bd_draw_text(w, rows - 1, 1, cols - 1, k->title, bd_role_attr(BD_R_MUTED), false);
        }
    }
    bd_view_draw_filter_note(v, w, &s->list);
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    cases *s = v->state;
    if (bd_list_move(&s->list, a)) {
        prioritize(v);
        return true;
    }
    size_t row = bd_list_selected(&s->list);
    switch (a) {
    case BD_A_OPEN:
        if (row != SIZE_MAX) {
            bd_case_ref ref = {s->tc, row};
            bd_app_open(v->app, BD_VIEW_CASE, &ref);
        }
        return true;
    case BD_A_FILTER:
        bd_view_filter_prompt(v, &s->list, rebuild);
        return true;
    case BD_A_SORT:
        s->sort = (sort_key)((s->sort + 1) % SORT__COUNT);
        rebuild(v);
        bd_app_message(v->app, BD_MSG_INFO, "sorted by %s%s", sort_names[s->sort],
                       s->reverse ? " (reversed)" : "");
        return true;
    case BD_A_SORT_REVERSE:
        s->reverse = !s->reverse;
        rebuild(v);
        return true;
    case BD_A_RUN:
        if (row != SIZE_MAX) {
            const char *id = tc_of(v)->cases[row].id;
            bd_ui_run_open(v->app, s->tc, &id, 1, false, false);
        }
        return true;
    case BD_A_RUN_ALL:
        bd_ui_run_open(v->app, s->tc, NULL, 0, false, false);
        return true;
    case BD_A_HISTORY:
        bd_app_open_history(v->app, tc_of(v)->name, NULL);
        return true;
    case BD_A_RECOMMEND:
        bd_app_open(v->app, BD_VIEW_RECOMMEND, &s->tc);
        return true;
    case BD_A_REVIEW: {
        bd_review_arg ra = {tc_of(v)->name, 0, NULL, NULL, false};
        bd_app_open(v->app, BD_VIEW_REVIEW, &ra);
        return true;
    }
    case BD_A_SIGN:
        if (row != SIZE_MAX) {
            bd_case_ref ref = {s->tc, row};
            bd_app_open(v->app, BD_VIEW_SIGN, &ref);
        }
        return true;
    case BD_A_STAGE_VIEW:
        bd_app_open(v->app, BD_VIEW_STAGE, NULL);
        return true;
    case BD_A_NEW_CASE:
        bd_curate_new_case(v, s->tc);
        return true;
    case BD_A_EDIT_FILE:
        if (row != SIZE_MAX)
            bd_curate_edit(v, s->tc, tc_of(v)->cases[row].id, "case.yaml");
        return true;
    case BD_A_PIN:
        if (row != SIZE_MAX)
            bd_curate_pin(v, s->tc, tc_of(v)->cases[row].id);
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    cases *s = v->state;
    if ((ev->kind == BD_EV_MODEL && (ev->tc_index == s->tc || ev->tc_index == SIZE_MAX)) ||
        ev->kind == BD_EV_HISTORY) {
        rebuild(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    } else if (ev->kind == BD_EV_TICK && tc_of(v)->state == BD_LOAD_PENDING) {
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)x;
    cases *s = v->state;
    bool open = bd_list_mouse(&s->list, ev, y - 1);
    prioritize(v);
    if (open)
        key(v, BD_A_OPEN, '\r');
}

static void position(bd_view *v, char *out, size_t cap)
{
    cases *s = v->state;
    bd_view_list_position(&s->list, out, cap);
}

static void where(bd_view *v, bd_view_where *out)
{
    cases *s = v->state;
    const bd_ui_tc *t = tc_of(v);
    snprintf(out->tc, sizeof(out->tc), "%s", t->name);
    size_t row = bd_list_selected(&s->list);
    if (row < t->n_cases)
        snprintf(out->cursor, sizeof(out->cursor), "%s", t->cases[row].id);
}

static int reveal(bd_view *v, const bd_view_where *w)
{
    cases *s = v->state;
    if (tc_of(v)->state == BD_LOAD_PENDING)
        return 0;
    size_t row = bd_model_find_case(v->app->model, s->tc, w->cursor);
    return row != SIZE_MAX && bd_list_select_row(&s->list, row) ? 1 : -1;
}

const bd_view_ops bd_view_cases = {
    "cases", actions, open_view, draw, key, event, NULL, mouse, position, close_view, where, reveal,
};
