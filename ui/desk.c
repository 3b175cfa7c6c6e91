/*
 * desk.c — the layer between the terminal (tui.c) and the views: the model, the live
 * run's hooks, the view registry, the header line, and Ctrl-R.
 *
 * Ctrl-R re-reads the bench and keeps the view stack: each open view says by name what
 * it shows and where its cursor is (ops->where); the stack is closed down to the first
 * view, the model rebuilt, and the views opened again on it, one level at a time as the
 * model loads what each needs (a case view waits for its task class). A view whose task
 * class, case or record is gone stops the re-opening there, with a message saying what.
 * Keys typed meanwhile wait (up to REOPEN_HOLD_MS) and are handed to the views once they
 * are open again: they were typed at those views, not at the ones passed on the way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "desk.h"
#include "model.h"
#include "session.h"
#include "view_args.h"
#include "views/breakdown_view.h"
#include "views/case_view.h"
#include "views/cases_view.h"
#include "views/compare_view.h"
#include "views/help_view.h"
#include "views/history_view.h"
#include "views/messages_view.h"
#include "views/recommend_view.h"
#include "views/record_view.h"
#include "views/result_view.h"
#include "views/review_view.h"
#include "views/run_view.h"
#include "views/sign_view.h"
#include "views/stage_view.h"
#include "views/tclasses_view.h"

/* ---- the stack kept across a reload ------------------------------------------------- */

#define MAX_KEPT 32
#define MAX_HELD 64
/* How long keys wait for the views to open again; after that they go to whatever is
 * open (a re-read of a very large bench may take longer). */
#define REOPEN_HOLD_MS 3000

typedef struct kept_view {
    bd_view_id id;
    bd_view_where where;
} kept_view;

typedef struct desk_state {
    kept_view kept[MAX_KEPT];
    size_t n_kept, next; /* kept[0] is the first view; next: the level to open next */
    bd_view *expect_top; /* the view the re-opening left on top: anything else, it stops */
    bool reopening;
    bool in_resume;     /* opening a view may broadcast: no re-entry */
    const char *done;   /* said when every view is open again (NULL: nothing) */
    uint64_t reopen_ms; /* when the re-opening began (bd_app_now_ms) */
    struct {
        int key;
        bool is_code;
    } held[MAX_HELD]; /* typed during the re-opening, oldest first */
    size_t n_held;
    bool held_dropped;    /* some did not fit */
    bool release_pending; /* handed back on the next turn of the loop (release_timer) */
    uv_timer_t release_timer;
    bool timer_ready;
} desk_state;

/* One desk per process: there is one app. */
static desk_state ds;

static void stop_reopening(void)
{
    ds.reopening = false;
    ds.n_kept = ds.next = 0;
    ds.expect_top = NULL;
    ds.done = NULL;
}

/* Hand the held keys to the views, oldest first, on a turn of the loop of their own: a
 * key may open or close views, and the re-opening ends while views are being walked
 * (resume, a broadcast). Keys typed before then join the queue behind them. */
static void on_release(uv_timer_t *t)
{
    bd_app *app = t->data;
    ds.release_pending = false;
    if (ds.held_dropped)
        bd_app_message(app, BD_MSG_WARN,
                       "more than %d keys were typed while the bench was re-read: the rest "
                       "were dropped",
                       MAX_HELD);
    ds.held_dropped = false;
    /* Copied out first: a held key may start another reload, which holds keys anew. */
    size_t n = ds.n_held;
    int keys[MAX_HELD];
    bool codes[MAX_HELD];
    for (size_t i = 0; i < n; i++) {
        keys[i] = ds.held[i].key;
        codes[i] = ds.held[i].is_code;
    }
    ds.n_held = 0;
    for (size_t i = 0; i < n && !app->quitting; i++)
        bd_app_key(app, keys[i], codes[i]);
    bd_app_invalidate(app, BD_DIRTY_ALL);
}

static void release_keys(void)
{
    if ((ds.n_held || ds.held_dropped) && !ds.release_pending) {
        ds.release_pending = true;
        uv_timer_start(&ds.release_timer, on_release, 0, 0);
    }
}

/* The re-opening is over (done, gone elsewhere, or failed): the held keys go on. */
static void end_reopening(void)
{
    stop_reopening();
    release_keys();
}

static bool hold_key(bd_app *app, int key, bool is_code)
{
    if (!ds.timer_ready)
        return false; /* nothing could hand them back: keys go where they are typed */
    if (ds.reopening && bd_app_now_ms(app) - ds.reopen_ms > REOPEN_HOLD_MS) {
        /* Still re-opening: the user waits no longer; the keys go to what is open now,
         * after those held so far. */
        end_reopening();
        bd_app_invalidate(app, BD_DIRTY_ALL);
    }
    if (!ds.reopening && !ds.release_pending)
        return false;
    if (ds.n_held == MAX_HELD) {
        ds.held_dropped = true;
        return true;
    }
    ds.held[ds.n_held].key = key;
    ds.held[ds.n_held].is_code = is_code;
    ds.n_held++;
    return true;
}

/* Open level `k` of the kept stack on top. Returns 1 opened, 0 wait for loading, -1 gone
 * (a message says why). */
static int reopen_one(bd_app *app, const kept_view *k)
{
    bd_model *m = app->model;
    bd_view *below = app->top;
    const bd_view_where *w = &k->where;
    size_t tc = w->tc[0] ? bd_model_find_tc(m, w->tc) : SIZE_MAX;
    if (w->tc[0] && tc == SIZE_MAX && k->id != BD_VIEW_HISTORY) {
        bd_app_message(app, BD_MSG_WARN, "reload: task class '%s' is no longer in the bench",
                       w->tc);
        return -1;
    }
    bool needs_tc = k->id == BD_VIEW_CASES || k->id == BD_VIEW_RECOMMEND || k->id == BD_VIEW_CASE ||
                    k->id == BD_VIEW_SIGN || k->id == BD_VIEW_REVIEW;
    if (needs_tc && tc == SIZE_MAX)
        return -1;
    switch (k->id) {
    case BD_VIEW_CASES:
        return bd_app_open(app, BD_VIEW_CASES, &tc) == 0 ? 1 : -1;
    case BD_VIEW_RECOMMEND:
        return bd_app_open(app, BD_VIEW_RECOMMEND, &tc) == 0 ? 1 : -1;
    case BD_VIEW_CASE:
    case BD_VIEW_SIGN: {
        if (m->tcs[tc].state == BD_LOAD_PENDING)
            return 0;
        size_t ci = bd_model_find_case(m, tc, w->case_id);
        if (ci == SIZE_MAX) {
            bd_app_message(app, BD_MSG_WARN, "reload: case '%s' is no longer in %s", w->case_id,
                           w->tc);
            return -1;
        }
        bd_case_ref ref = {tc, ci};
        return bd_app_open(app, k->id, &ref) == 0 ? 1 : -1;
    }
    case BD_VIEW_RECORD:
        /* A recording is an act, not a place: it is not started again by a reload. */
        bd_app_message(app, BD_MSG_INFO, "reload: the record view was closed (R records again)");
        return -1;
    case BD_VIEW_HISTORY: {
        bd_history_scope sc = {w->tc[0] ? w->tc : NULL, w->case_id[0] ? w->case_id : NULL};
        return bd_app_open(app, BD_VIEW_HISTORY, &sc) == 0 ? 1 : -1;
    }
    case BD_VIEW_COMPARE: {
        bd_compare_arg ca = {w->run_a[0] ? w->run_a : NULL, w->run_b};
        return bd_app_open(app, BD_VIEW_COMPARE, &ca) == 0 ? 1 : -1;
    }
    case BD_VIEW_REVIEW: {
        bd_review_arg ra = {w->tc, 0, NULL, NULL, false};
        return bd_app_open(app, BD_VIEW_REVIEW, &ra) == 0 ? 1 : -1;
    }
    case BD_VIEW_HELP:
        return bd_app_open(app, BD_VIEW_HELP, below) == 0 ? 1 : -1;
    case BD_VIEW_MESSAGES:
    case BD_VIEW_STAGE:
        return bd_app_open(app, k->id, NULL) == 0 ? 1 : -1;
    case BD_VIEW_RUN:
        if (!app->run)
            return -1;
        return bd_app_open(app, BD_VIEW_RUN, NULL) == 0 ? 1 : -1;
    case BD_VIEW_BREAKDOWN:
        if (!below || !bd_view_is(below, BD_VIEW_RUN))
            return -1;
        return bd_app_open(app, BD_VIEW_BREAKDOWN, below) == 0 ? 1 : -1;
    case BD_VIEW_RESULT: {
        /* A result is the row under the cursor of the list below it (run or history):
         * put the cursor back there and open it as Enter does. */
        int r = below && below->ops->reveal ? below->ops->reveal(below, &ds.kept[ds.next - 1].where)
                                            : -1;
        if (r == 0)
            return 0;
        bd_view *before = app->top;
        if (r > 0)
            below->ops->key(below, BD_A_OPEN, '\r');
        if (r < 0 || app->top == before || !bd_view_is(app->top, BD_VIEW_RESULT)) {
            bd_app_message(app, BD_MSG_WARN, "reload: the result of %s is no longer there",
                           w->cursor[0] ? w->cursor : "that case");
            return -1;
        }
        return 1;
    }
    default:
        return -1;
    }
}

/* Go on re-opening the kept stack as far as what is loaded allows. */
static void resume_levels(bd_app *app);

static void resume(bd_app *app)
{
    if (ds.in_resume)
        return;
    ds.in_resume = true;
    resume_levels(app);
    ds.in_resume = false;
}

static void resume_levels(bd_app *app)
{
    while (ds.reopening) {
        if (app->top != ds.expect_top) {
            end_reopening(); /* something else opened a view meanwhile: leave it there */
            return;
        }
        /* The cursor of the view on top first (its rows may still be loading). */
        const kept_view *cur = &ds.kept[ds.next - 1];
        bd_view *top = app->top;
        bool child_is_result = ds.next < ds.n_kept && ds.kept[ds.next].id == BD_VIEW_RESULT;
        if (!child_is_result && top->ops->reveal &&
            (cur->where.cursor[0] || cur->where.cursor_seq)) {
            if (top->ops->reveal(top, &cur->where) == 0)
                return; /* rows still loading */
        }
        if (ds.next >= ds.n_kept) {
            if (ds.done)
                bd_app_message(app, BD_MSG_INFO, "%s", ds.done);
            end_reopening();
            return;
        }
        int r = reopen_one(app, &ds.kept[ds.next]);
        if (r == 0)
            return;
        if (r < 0) {
            end_reopening();
            bd_app_invalidate(app, BD_DIRTY_ALL);
            return;
        }
        ds.next++;
        ds.expect_top = app->top;
        bd_app_invalidate(app, BD_DIRTY_ALL);
    }
}

static void on_event(bd_app *app, const bd_event *ev)
{
    (void)ev;
    if (ds.reopening)
        resume(app);
}

static void reload_now(bd_app *app, const char *done)
{
    if (bd_ui_run_active(app)) {
        bd_app_message(app, BD_MSG_WARN, "a run is in progress: reload after it finishes");
        return;
    }
    if (app->pinning) { /* the pin borrows the bench a reload replaces */
        bd_app_message(app, BD_MSG_WARN, "a pin is being written: reload once it is done");
        return;
    }
    /* Say where every view is, by name, before the model is renumbered. */
    stop_reopening();
    bd_view *stack[MAX_KEPT];
    size_t n = 0;
    for (bd_view *v = app->top; v && n < MAX_KEPT; v = v->below)
        stack[n++] = v;
    for (size_t i = n; i-- > 0;) {
        kept_view *k = &ds.kept[ds.n_kept++];
        memset(k, 0, sizeof(*k));
        k->id = bd_view_id_of(stack[i]);
        if (stack[i]->ops->where)
            stack[i]->ops->where(stack[i], &k->where);
    }
    bd_ui_run_release_runner(app); /* it borrows the bench about to be replaced */
    /* Views hold indices into the model: close down to the first view, then rebuild. */
    while (app->top && app->top->below)
        bd_app_pop(app);
    bd_err err = BD_ERR_INIT;
    if (bd_model_reload(app->model, &err) < 0) {
        bd_app_error(app, &err);
        end_reopening();
        return;
    }
    bd_event ev = {.kind = BD_EV_MODEL, .tc_index = SIZE_MAX, .case_index = SIZE_MAX};
    ds.reopening = true;
    ds.reopen_ms = bd_app_now_ms(app);
    ds.next = 1;
    ds.expect_top = app->top;
    ds.done = done;
    bd_app_broadcast(app, &ev); /* resumes the re-opening (on_event) */
    bd_app_invalidate(app, BD_DIRTY_ALL);
}

/* ---- the session hooks ------------------------------------------------------------- */

static bool busy(const bd_app *app)
{
    return bd_ui_run_active(app);
}

bool bd_desk_busy(const bd_app *app)
{
    return (app->model && bd_model_busy(app->model)) || bd_ui_run_active(app);
}

void bd_desk_abandon_run(bd_app *app)
{
    if (bd_ui_run_active(app) && !app->run->cancel_requested) {
        app->run->quit_after = false;
        bd_ui_run_cancel(app);
    }
}

/* `v` from anywhere: back to the live run view, or open it. */
static void open_run_view(bd_app *app)
{
    if (!app->run) {
        bd_app_message(app, BD_MSG_INFO, "no run yet: r runs the selected task class or case");
        return;
    }
    bd_view *v = bd_app_find(app, BD_VIEW_RUN);
    if (v) {
        while (app->top != v)
            bd_app_pop(app);
        return;
    }
    bd_app_open(app, BD_VIEW_RUN, NULL);
}

static bool global(bd_app *app, bd_action a)
{
    if (a == BD_A_RUNVIEW) {
        open_run_view(app);
        return true;
    }
    return false;
}

void bd_desk_install(bd_app *app)
{
    const bd_view_ops *views[BD_VIEW__COUNT] = {
        [BD_VIEW_TCLASSES] = &bd_view_tclasses, [BD_VIEW_CASES] = &bd_view_cases,
        [BD_VIEW_CASE] = &bd_view_case,         [BD_VIEW_HELP] = &bd_view_help,
        [BD_VIEW_MESSAGES] = &bd_view_messages, [BD_VIEW_SIGN] = &bd_view_sign,
        [BD_VIEW_STAGE] = &bd_view_stage,       [BD_VIEW_RECORD] = &bd_view_record,
        [BD_VIEW_RUN] = &bd_view_run,           [BD_VIEW_BREAKDOWN] = &bd_view_breakdown,
        [BD_VIEW_RESULT] = &bd_view_result,     [BD_VIEW_HISTORY] = &bd_view_history,
        [BD_VIEW_COMPARE] = &bd_view_compare,   [BD_VIEW_RECOMMEND] = &bd_view_recommend,
        [BD_VIEW_REVIEW] = &bd_view_review,
    };
    memcpy(app->views, views, sizeof(views));
    app->ops.busy = busy;
    app->ops.quit_hook = bd_ui_run_quit_hook;
    app->ops.reload = reload_now;
    app->ops.global = global;
    app->ops.event = on_event;
    app->ops.hold_key = hold_key;
}

int bd_desk_start(bd_app *app, bd_err *err)
{
    if (uv_timer_init(app->loop, &ds.release_timer) == 0) {
        ds.release_timer.data = app;
        ds.timer_ready = true;
    }
    if (bd_model_new(&app->model, app, err) < 0)
        return -1;
    if (bd_app_open(app, BD_VIEW_TCLASSES, NULL) < 0)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "cannot open the first view: %s",
                          app->msg);
    return 0;
}

void bd_desk_close(bd_app *app)
{
    stop_reopening();
    ds.n_held = 0; /* leaving: nothing is handed on */
    if (ds.timer_ready) {
        uv_timer_stop(&ds.release_timer);
        uv_close((uv_handle_t *)&ds.release_timer, NULL);
        ds.timer_ready = false;
    }
    bd_app_close_all(app);
    bd_ui_run_free(app); /* the runner's handles live on the loop */
    bd_model_free(app->model);
    app->model = NULL;
}

/* ---- the header line ----------------------------------------------------------------- */

static void chain_text(const bd_model *model, char *out, size_t cap, bd_role *role)
{
    *role = BD_R_HEADER;
    bd_chain_status c = bd_model_chain(model);
    const bd_chain_status *m = &c;
    switch (m->state) {
    case BD_CHAIN_VERIFYING:
        snprintf(out, cap, "chain: verifying%s", bd_gl->ellipsis);
        break;
    case BD_CHAIN_VERIFIED:
        snprintf(out, cap, "chain %s verified (%llu)", bd_gl->ok, (unsigned long long)m->count);
        break;
    case BD_CHAIN_NONE:
        snprintf(out, cap, "chain: empty");
        break;
    case BD_CHAIN_BROKEN:
        snprintf(out, cap, "chain TAMPERED at #%llu (%s)", (unsigned long long)m->bad_seq,
                 m->reason);
        *role = BD_R_BADGE_BAD;
        break;
    case BD_CHAIN_UNREADABLE:
        snprintf(out, cap, "chain: unreadable");
        *role = BD_R_BADGE_BAD;
        break;
    default:
        snprintf(out, cap, "chain: not read");
        break;
    }
}

void bd_desk_draw_header(bd_app *app)
{
    WINDOW *w = app->header;
    int cols = getmaxx(w);
    attr_t base = bd_role_attr(BD_R_HEADER);
    wbkgdset(w, ' ' | base);
    werase(w);
    /* Right side: spinner while anything loads or runs, then the clock. */
    char right[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    bool busy = bd_desk_busy(app);
    snprintf(right, sizeof(right), "%s %02d:%02d ", busy ? bd_app_spinner(app) : " ", tm.tm_hour,
             tm.tm_min);
    int rx = bd_draw_right(w, 0, cols, right, base);

    int x = 0;
    x += bd_draw_text(w, 0, x, rx - x, " benchdesk ", bd_role_attr(BD_R_TITLE), false);
    char chain[160];
    bd_role crole;
    chain_text(app->model, chain, sizeof(chain), &crole);
    char branch[160];
    snprintf(branch, sizeof(branch), "%s %s", bd_gl->branch,
             app->branch[0] ? app->branch : "no git");
    /* The root path gets what is left; clip it from the left so its end stays visible. */
    int fixed = bd_text_width(chain) + bd_text_width(branch) + 6;
    int room = rx - x - fixed;
    const char *root = app->bench->root;
    x += bd_draw_text(w, 0, x, rx - x, " ", base, false);
    if (room >= 8) {
        int rw = bd_text_width(root);
        if (rw > room) {
            const char *p = root + strlen(root);
            int used = 1;
            while (p > root && used < room) {
                p--;
                while (p > root && ((unsigned char)*p & 0xc0) == 0x80)
                    p--;
                used++;
            }
            x += bd_draw_text(w, 0, x, rx - x, bd_gl->ellipsis, base, false);
            x += bd_draw_text(w, 0, x, rx - x, p + 1, base, false);
        } else {
            x += bd_draw_text(w, 0, x, rx - x, root, base, false);
        }
    }
    x += bd_draw_text(w, 0, x, rx - x, "  ", base, false);
    x += bd_draw_text(w, 0, x, rx - x, branch, base, false);
    x += bd_draw_text(w, 0, x, rx - x, "  ", base, false);
    bd_draw_text(w, 0, x, rx - x, chain, bd_role_attr(crole), false);
    wbkgdset(w, ' ');
}
