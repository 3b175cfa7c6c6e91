/*
 * app.c — the one implementation of the bd_app API: the view stack and the view
 * registry, key dispatch, messages and their log, the `/` line editor, the yes/no
 * question, and the status line. What it needs from the terminal (tui.c) and from the
 * session above the views (desk.c) comes through app->ops, so it depends on neither.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "err_keys.h"
#include "app.h"

int bd_app_push(bd_app *app, const bd_view_ops *ops, void *arg)
{
    bd_view *v = calloc(1, sizeof(*v));
    if (!v) {
        bd_app_message(app, BD_MSG_ERROR, "env.out_of_memory: cannot open the %s view", ops->name);
        return -1;
    }
    v->ops = ops;
    v->app = app;
    snprintf(v->title, sizeof(v->title), "%s", ops->name);
    v->below = app->top;
    if (ops->open(v, arg) < 0) {
        free(v);
        bd_app_invalidate(app, BD_DIRTY_STATUS);
        return -1;
    }
    app->top = v;
    if (ops->resize && app->body)
        ops->resize(v, getmaxy(app->body), getmaxx(app->body));
    bd_app_invalidate(app, BD_DIRTY_ALL);
    return 0;
}

int bd_app_open(bd_app *app, bd_view_id id, void *arg)
{
    if (id >= BD_VIEW__COUNT || !app->views[id]) {
        bd_app_message(app, BD_MSG_ERROR, "internal: view %d is not registered", (int)id);
        return -1;
    }
    return bd_app_push(app, app->views[id], arg);
}

int bd_app_open_replacing(bd_app *app, bd_view_id id, void *arg)
{
    if (app->top && bd_view_is(app->top, id) && app->top->below)
        bd_app_pop(app);
    return bd_app_open(app, id, arg);
}

bool bd_view_is(const bd_view *v, bd_view_id id)
{
    return v && id < BD_VIEW__COUNT && v->ops == v->app->views[id];
}

bd_view_id bd_view_id_of(const bd_view *v)
{
    for (int i = 0; i < BD_VIEW__COUNT; i++)
        if (v->ops == v->app->views[i])
            return (bd_view_id)i;
    return BD_VIEW__COUNT;
}

bd_view *bd_app_find(bd_app *app, bd_view_id id)
{
    for (bd_view *v = app->top; v; v = v->below)
        if (bd_view_is(v, id))
            return v;
    return NULL;
}

void bd_app_drop(bd_app *app, bd_view_id id)
{
    bd_view **link = &app->top;
    while (*link) {
        bd_view *v = *link;
        if (bd_view_is(v, id) && v->below) {
            if (app->prompt.active && app->prompt.owner == v)
                app->prompt.active = false;
            *link = v->below;
            v->ops->close(v);
            free(v);
            bd_app_invalidate(app, BD_DIRTY_ALL);
            continue;
        }
        link = &v->below;
    }
}

void bd_app_open_history(bd_app *app, const char *task_class, const char *case_id)
{
    /* The scope may be borrowed from a view about to close (a result opened from this
     * history): copy it first. */
    char *tc = task_class ? strdup(task_class) : NULL;
    char *id = case_id ? strdup(case_id) : NULL;
    if ((task_class && !tc) || (case_id && !id)) {
        bd_app_message(app, BD_MSG_ERROR, "env.out_of_memory: cannot open the history");
        goto out;
    }
    bd_history_scope sc = {tc, id};
    /* `h` on a history view replaces it; anywhere else the history opens on top, so `q`
     * goes back to where `h` was pressed. */
    bd_app_open_replacing(app, BD_VIEW_HISTORY, &sc);
out:
    free(tc);
    free(id);
}

/* Esc on view `v`: when `v` keeps a filter from the `/` prompt (view_util.c), drop it. */
static bool filter_clear(bd_view *v)
{
    if (!v->filter_list || !v->filter_list->filter[0])
        return false;
    v->filter_list->filter[0] = '\0';
    v->filter_rebuild(v);
    bd_app_message(v->app, BD_MSG_INFO, "filter cleared");
    return true;
}

/* ---- the layers around the app (app->ops) -------------------------------------------- */

uint64_t bd_app_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bd_app_now_ms(const bd_app *app)
{
    return (bd_app_clock_ns() - app->start_ns) / 1000000ull;
}

const char *bd_app_spinner(const bd_app *app)
{
    return bd_gl->spinner[app->spin % (unsigned)bd_gl->n_spinner];
}

void bd_app_invalidate(bd_app *app, unsigned what)
{
    app->dirty |= what;
    if (app->ops.schedule_render)
        app->ops.schedule_render(app);
}

void bd_app_animate(bd_app *app)
{
    if (app->ops.animate)
        app->ops.animate(app);
}

void bd_app_quit(bd_app *app, int status)
{
    if (app->ops.quit_hook && app->ops.quit_hook(app, status))
        return; /* a run is being cancelled; the session quits when it has stopped */
    if (app->ops.leave)
        app->ops.leave(app, status);
}

void bd_app_suspend(bd_app *app)
{
    if (app->ops.suspend)
        app->ops.suspend(app);
}

int bd_app_foreground_viewer(bd_app *app, const char *text, size_t len, const char *name,
                             bd_err *err)
{
    return app->ops.foreground_viewer ? app->ops.foreground_viewer(app, text, len, name, err) : 0;
}

int bd_app_foreground_editor(bd_app *app, const char *path, bd_err *err)
{
    return app->ops.foreground_editor ? app->ops.foreground_editor(app, path, err) : 0;
}

void bd_app_redraw_all(bd_app *app)
{
    if (app->ops.redraw_all)
        app->ops.redraw_all(app);
}

/* Quit, first asking when a run is going (it would be cancelled). */
static void quit_now(bd_app *app)
{
    bd_app_quit(app, 0);
}

static void quit_asking(bd_app *app)
{
    if (app->ops.busy && app->ops.busy(app))
        bd_app_confirm(app, "a run is going: quit and cancel it? (y/n)", quit_now);
    else
        bd_app_quit(app, 0);
}

void bd_app_pop(bd_app *app)
{
    bd_view *v = app->top;
    if (!v)
        return;
    if (!v->below) {
        quit_asking(app);
        return;
    }
    if (app->prompt.active && app->prompt.owner == v)
        app->prompt.active = false;
    app->top = v->below;
    v->ops->close(v);
    free(v);
    bd_app_invalidate(app, BD_DIRTY_ALL);
}

void bd_app_close_all(bd_app *app)
{
    while (app->top) {
        bd_view *v = app->top;
        app->top = v->below;
        v->ops->close(v);
        free(v);
    }
}

void bd_app_message(bd_app *app, bd_msg_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(app->msg, sizeof(app->msg), fmt, ap);
    va_end(ap);
    app->msg_level = level;
    /* Kept whole for `m`: the status line may have to cut it. */
    size_t cap = sizeof(app->log) / sizeof(app->log[0]);
    size_t k = app->log_next++ % cap;
    snprintf(app->log[k].text, sizeof(app->log[k].text), "%s", app->msg);
    app->log[k].level = level;
    app->log[k].at_ms = bd_app_now_ms(app);
    if (app->log_count < cap)
        app->log_count++;
    bd_app_invalidate(app, bd_app_message_panel_rows(app) ? BD_DIRTY_ALL : BD_DIRTY_STATUS);
}

/* A warning or error too long for the status line is shown whole in a panel over the
 * bottom of the body (until the next key): the part of a refusal that says what to do
 * comes last, and must not be the part that is cut. */
int bd_app_message_panel_rows(const bd_app *app)
{
    if (!app->msg[0] || app->msg_level == BD_MSG_INFO || app->cols < 20 || !app->body)
        return 0;
    char *vis = bd_text_vis(app->msg, 0);
    int w = vis ? bd_text_width(vis) : 0;
    free(vis);
    if (w <= app->cols - 16)
        return 0;
    int n = bd_wrap_count(app->msg, app->cols - 2) + 1; /* and a rule above it */
    int max = getmaxy(app->body) - 2;
    return n > max ? max : n;
}

void bd_app_draw_message_panel(bd_app *app)
{
    int n = bd_app_message_panel_rows(app);
    if (n < 2)
        return;
    WINDOW *w = app->body;
    int rows = getmaxy(w), cols = getmaxx(w);
    bd_role r = app->msg_level == BD_MSG_ERROR ? BD_R_FAIL : BD_R_WARN;
    for (int y = rows - n; y < rows; y++)
        bd_draw_text(w, y, 0, cols, "", A_NORMAL, true);
    bd_draw_rule(w, rows - n, app->msg_level == BD_MSG_ERROR ? " error " : " warning ",
                 bd_role_attr(r));
    bd_draw_wrapped(w, rows - n + 1, 1, cols - 2, n - 1, app->msg, bd_role_attr(r));
}

const char *bd_app_log_at(const bd_app *app, size_t i, bd_msg_level *level, uint64_t *at_ms)
{
    size_t cap = sizeof(app->log) / sizeof(app->log[0]);
    if (i >= app->log_count)
        return NULL;
    size_t k = (app->log_next - app->log_count + i) % cap;
    if (level)
        *level = app->log[k].level;
    if (at_ms)
        *at_ms = app->log[k].at_ms;
    return app->log[k].text;
}

void bd_app_confirm(bd_app *app, const char *text, void (*yes)(bd_app *app))
{
    app->confirm.active = true;
    app->confirm.yes = yes;
    snprintf(app->confirm.text, sizeof(app->confirm.text), "%s", text);
    bd_app_invalidate(app, BD_DIRTY_STATUS);
}

void bd_app_log_error(bd_app *app, const bd_err *err)
{
    char keep[sizeof(app->msg)];
    bd_msg_level level = app->msg_level;
    snprintf(keep, sizeof(keep), "%s", app->msg);
    bd_app_error(app, err);
    /* What the status line showed before stays; the log has the error. */
    snprintf(app->msg, sizeof(app->msg), "%s", keep);
    app->msg_level = level;
    bd_app_invalidate(app, BD_DIRTY_ALL);
}

void bd_app_error(bd_app *app, const bd_err *err)
{
    bd_app_message(app, BD_MSG_ERROR, "%s: %s", bd_code_str(err->code), bd_tui_err_text(err));
}

void bd_app_broadcast(bd_app *app, const bd_event *ev)
{
    for (bd_view *v = app->top; v; v = v->below)
        if (v->ops->event)
            v->ops->event(v, ev);
    bd_app_notify(app, ev);
}

void bd_app_notify(bd_app *app, const bd_event *ev)
{
    if (app->ops.event)
        app->ops.event(app, ev);
}

void bd_app_prompt(bd_app *app, bd_view *v, const char *initial,
                   void (*changed)(bd_view *v, const char *text),
                   void (*done)(bd_view *v, const char *text, bool accepted))
{
    app->prompt.active = true;
    app->prompt.owner = v;
    app->prompt.changed = changed;
    app->prompt.done = done;
    snprintf(app->prompt.buf, sizeof(app->prompt.buf), "%s", initial ? initial : "");
    app->prompt.len = strlen(app->prompt.buf);
    app->msg[0] = '\0';
    bd_app_invalidate(app, BD_DIRTY_STATUS);
}

/* A key while the line editor is open. */
static void prompt_key(bd_app *app, int key, bool is_code)
{
    bd_prompt *p = &app->prompt;
    bd_view *owner = p->owner;
    if (!is_code && (key == '\r' || key == '\n')) {
        p->active = false;
        p->done(owner, p->buf, true);
    } else if (!is_code && key == 27) {
        p->active = false;
        p->done(owner, p->buf, false);
    } else if ((is_code && key == KEY_BACKSPACE) || (!is_code && (key == 127 || key == 8))) {
        if (p->len == 0) {
            p->active = false;
            p->done(owner, "", false);
        } else {
            /* Drop one UTF-8 character. */
            do
                p->len--;
            while (p->len > 0 && ((unsigned char)p->buf[p->len] & 0xc0) == 0x80);
            p->buf[p->len] = '\0';
            p->changed(owner, p->buf);
        }
    } else if (!is_code && key == BD_CTRL('u')) {
        p->len = 0;
        p->buf[0] = '\0';
        p->changed(owner, p->buf);
    } else if (!is_code && key >= 32 && key != 127) {
        char mb[8];
        int n = 0;
        if (key < 128) {
            mb[0] = (char)key;
            n = 1;
        } else {
            mbstate_t st;
            memset(&st, 0, sizeof(st));
            size_t r = wcrtomb(mb, (wchar_t)key, &st);
            n = r == (size_t)-1 ? 0 : (int)r;
        }
        if (n > 0 && p->len + (size_t)n < sizeof(p->buf)) {
            memcpy(p->buf + p->len, mb, (size_t)n);
            p->len += (size_t)n;
            p->buf[p->len] = '\0';
            p->changed(owner, p->buf);
        }
    }
    bd_app_invalidate(app, BD_DIRTY_ALL);
}

/* The key hint of action `a` in view `v` ("? help  ") into `item` and its key into `key`;
 * its width, 0 when the action has no hint. */
static int hint_item(const bd_view *v, bd_action a, char *key, size_t kcap, char *item, size_t icap)
{
    const char *hint = bd_action_hint(a);
    if (a == BD_A_BACK && !v->below)
        hint = "quit"; /* back from the first view leaves */
    if (!hint[0])
        return 0;
    bd_action_first_key(a, key, kcap);
    snprintf(item, icap, "%s %s  ", key, hint);
    return bd_text_width(item);
}

/* Hints from column x to rx: the view's actions that have one, in the view's order (its
 * most used first), then help and back. Room for "? help" is kept first; the view's hints
 * that do not fit are left out from the end, and back (known to everyone) goes first. */
static void draw_hints(WINDOW *w, const bd_view *v, int x, int rx, attr_t base)
{
    char key[32], item[96];
    int help_w = hint_item(v, BD_A_HELP, key, sizeof(key), item, sizeof(item));
    int room = rx - help_w;
    bool all = true;
    for (const bd_action *p = v->ops->actions; p && *p != BD_A_NONE; p++) {
        int iw = hint_item(v, *p, key, sizeof(key), item, sizeof(item));
        if (!iw)
            continue;
        if (x + iw > room) {
            all = false;
            break;
        }
        x += bd_draw_text(w, 0, x, iw, key, base | A_BOLD, false);
        x += bd_draw_text(w, 0, x, room - x, item + strlen(key), base, false);
    }
    const bd_action tail[] = {BD_A_HELP, all ? BD_A_BACK : BD_A_NONE, BD_A_NONE};
    for (const bd_action *p = tail; *p != BD_A_NONE; p++) {
        int iw = hint_item(v, *p, key, sizeof(key), item, sizeof(item));
        if (!iw || x + iw > rx)
            break;
        x += bd_draw_text(w, 0, x, iw, key, base | A_BOLD, false);
        x += bd_draw_text(w, 0, x, rx - x, item + strlen(key), base, false);
    }
}

static bool view_has_action(const bd_view *v, bd_action a)
{
    for (const bd_action *p = v->ops->actions; p && *p != BD_A_NONE; p++)
        if (*p == a)
            return true;
    return false;
}

void bd_app_discard_keys(bd_app *app, uint64_t ms)
{
    flushinp();
    app->discard_keys_until_ms = bd_app_now_ms(app) + ms;
}

void bd_app_key(bd_app *app, int key, bool is_code)
{
    /* The terminal is in raw mode: Ctrl-C and Ctrl-Z arrive here as keys, and work in
     * every state, the filter line included. */
    if (!is_code && key == BD_CTRL('c')) {
        bd_app_quit(app, 130);
        return;
    }
    if (!is_code && key == BD_CTRL('z')) {
        bd_app_suspend(app);
        return;
    }
    if (app->discard_keys_until_ms && bd_app_now_ms(app) < app->discard_keys_until_ms)
        return; /* typed for GnuPG, not for benchdesk */
    app->discard_keys_until_ms = 0;
    if (app->ops.hold_key && app->ops.hold_key(app, key, is_code))
        return;
    if (app->confirm.active) {
        app->confirm.active = false;
        bd_app_invalidate(app, BD_DIRTY_STATUS);
        if (!is_code && (key == 'y' || key == 'Y'))
            app->confirm.yes(app);
        else
            bd_app_message(app, BD_MSG_INFO, "cancelled: nothing was done");
        return;
    }
    if (app->prompt.active) {
        prompt_key(app, key, is_code);
        return;
    }
    if (app->msg[0]) {
        bool panel = bd_app_message_panel_rows(app) > 0;
        app->msg[0] = '\0';
        bd_app_invalidate(app, panel ? BD_DIRTY_ALL : BD_DIRTY_STATUS);
    }
    if (app->too_small) {
        if (!is_code && (key == 'q' || key == 'Q'))
            bd_app_quit(app, 0);
        return;
    }
    /* Characters beyond Latin-1 would collide with curses key codes: they bind nothing. */
    bd_view *v = app->top;
    if (!v)
        return;
    bd_action a = (is_code || key < 256) ? bd_action_for_key(key, v->ops->actions) : BD_A_NONE;
    if (v->ops->key(v, a, key)) {
        bd_app_invalidate(app, BD_DIRTY_BODY | BD_DIRTY_STATUS);
        return;
    }
    switch (a) {
    case BD_A_ESCAPE:
        /* Innermost first: a kept filter, then the view; never quits. */
        if (filter_clear(v))
            break;
        if (v->below)
            bd_app_pop(app);
        else
            bd_app_message(app, BD_MSG_INFO, "Esc never quits: q or Q quits");
        break;
    case BD_A_BACK:
        if (v->below)
            bd_app_pop(app);
        else if (!is_code && key == 'q')
            quit_asking(app);
        else
            bd_app_message(app, BD_MSG_INFO, "this is the first view: q or Q quits");
        break;
    case BD_A_QUIT:
        quit_asking(app);
        break;
    case BD_A_MESSAGES:
        if (!bd_view_is(v, BD_VIEW_MESSAGES))
            bd_app_open(app, BD_VIEW_MESSAGES, NULL);
        break;
    case BD_A_HELP:
        if (!bd_view_is(v, BD_VIEW_HELP))
            bd_app_open(app, BD_VIEW_HELP, v);
        break;
    case BD_A_REDRAW:
        bd_app_redraw_all(app);
        break;
    case BD_A_HISTORY:
        bd_app_open_history(app, NULL, NULL);
        break;
    case BD_A_RELOAD:
        if (app->ops.reload)
            app->ops.reload(app, "re-read the bench from disk");
        break;
    case BD_A_NONE:
        break;
    default:
        if (app->ops.global && app->ops.global(app, a))
            break;
        if (!view_has_action(v, a)) {
            char k[32];
            bd_action_first_key(a, k, sizeof(k));
            bd_app_message(app, BD_MSG_WARN, "%s (%s) does nothing in this view; ? lists its keys",
                           k, bd_action_name(a));
        }
        break;
    }
}

/* ---- status line --------------------------------------------------------------------- */

void bd_app_draw_status(bd_app *app)
{
    WINDOW *w = app->status;
    int cols = getmaxx(w);
    attr_t base = bd_role_attr(BD_R_STATUS);
    wbkgdset(w, ' ' | base);
    werase(w);
    bd_view *v = app->top;
    if (app->confirm.active) {
        bd_draw_text(w, 0, 0, cols, app->confirm.text, bd_role_attr(BD_R_BADGE_AWAITING), true);
        wbkgdset(w, ' ');
        return;
    }
    if (app->prompt.active) {
        char right[128], pos[64] = "";
        if (v && v->ops->position)
            v->ops->position(v, pos, sizeof(pos));
        snprintf(right, sizeof(right), " %s  Enter keep  Esc clear ", pos);
        int rx = bd_draw_right(w, 0, cols, right, base);
        int x = bd_draw_text(w, 0, 0, rx, "/", base | A_BOLD, false);
        x += bd_draw_text(w, 0, x, rx - x - 1, app->prompt.buf, base, false);
        wmove(w, 0, x);
        wbkgdset(w, ' ');
        return;
    }
    char pos[64] = "";
    if (v && v->ops->position)
        v->ops->position(v, pos, sizeof(pos));
    int rx = cols;
    if (pos[0]) {
        char p2[80];
        snprintf(p2, sizeof(p2), " %s ", pos);
        rx = bd_draw_right(w, 0, cols, p2, base);
    }
    int x = 0;
    if (app->msg[0]) {
        bd_role r = app->msg_level == BD_MSG_ERROR  ? BD_R_BADGE_BAD
                    : app->msg_level == BD_MSG_WARN ? BD_R_BADGE_AWAITING
                                                    : BD_R_STATUS;
        /* Too long for one line: a warning or an error is shown whole above (the message
         * panel); the status line says so. A notice is cut, and `m` keeps it whole. */
        char *vis = bd_text_vis(app->msg, 0);
        bool cut = vis && bd_text_width(vis) > rx && rx > 24;
        free(vis);
        if (bd_app_message_panel_rows(app)) {
            char code[80];
            snprintf(code, sizeof(code), "%.*s", (int)strcspn(app->msg, ":"), app->msg);
            int x2 = bd_draw_text(w, 0, 0, rx, code, bd_role_attr(r), false);
            bd_draw_text(w, 0, x2, rx - x2, "  (whole above; any key dismisses, m keeps it)", base,
                         false);
            wbkgdset(w, ' ');
            return;
        }
        int mw = cut ? rx - 12 : rx;
        int x2 = bd_draw_text(w, 0, 0, mw, app->msg, bd_role_attr(r), r != BD_R_STATUS);
        if (cut)
            bd_draw_text(w, 0, x2, rx - x2, " m: all of it", base | A_BOLD, false);
        wbkgdset(w, ' ');
        return;
    }
    if (v) {
        x += bd_draw_text(w, 0, x, rx - x, "[", base | A_BOLD, false);
        x += bd_draw_text(w, 0, x, rx - x < 30 ? rx - x : 30, v->title, base | A_BOLD, false);
        x += bd_draw_text(w, 0, x, rx - x, "] ", base | A_BOLD, false);
        draw_hints(w, v, x, rx, base);
    }
    wbkgdset(w, ' ');
}
