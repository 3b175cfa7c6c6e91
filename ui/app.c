/*
 * app.c — the view stack, key dispatch, the `/` line editor, and drawing of the header
 * and status lines. The loop, the terminal and the timers are tui.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "app.h"
#include "model.h"
#include "run_api.h"
#include "tui_internal.h"
#include "view_util.h"

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

/* Quit, first asking when a run is going (it would be cancelled). */
static void quit_now(bd_app *app)
{
    bd_app_quit(app, 0);
}

static void quit_asking(bd_app *app)
{
    if (bd_ui_run_active(app))
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
    bd_app_invalidate(app, BD_DIRTY_STATUS);
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

void bd_app_error(bd_app *app, const bd_err *err)
{
    bd_app_message(app, BD_MSG_ERROR, "%s: %s", bd_code_str(err->code), err->msg);
}

void bd_app_broadcast(bd_app *app, const bd_event *ev)
{
    for (bd_view *v = app->top; v; v = v->below)
        if (v->ops->event)
            v->ops->event(v, ev);
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

static bool view_has_action(const bd_view *v, bd_action a)
{
    for (const bd_action *p = v->ops->actions; p && *p != BD_A_NONE; p++)
        if (*p == a)
            return true;
    return false;
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
        bd_tui_suspend(app);
        return;
    }
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
        app->msg[0] = '\0';
        bd_app_invalidate(app, BD_DIRTY_STATUS);
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
        if (bd_view_filter_clear(v))
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
        if (v->ops != &bd_view_messages)
            bd_app_push(app, &bd_view_messages, NULL);
        break;
    case BD_A_HELP:
        if (v->ops != &bd_view_help)
            bd_app_push(app, &bd_view_help, v);
        break;
    case BD_A_REDRAW:
        bd_tui_redraw_all(app);
        break;
    case BD_A_HISTORY:
        bd_app_open_history(app, NULL, NULL);
        break;
    case BD_A_RUNVIEW:
        bd_app_open_run_view(app);
        break;
    case BD_A_RELOAD:
        bd_app_reload(app);
        break;
    case BD_A_NONE:
        break;
    default:
        if (!view_has_action(v, a)) {
            char k[32];
            bd_action_first_key(a, k, sizeof(k));
            bd_app_message(app, BD_MSG_WARN, "%s (%s) does nothing in this view; ? lists its keys",
                           k, bd_action_name(a));
        }
        break;
    }
}

static void reload_now(bd_app *app);

void bd_app_reload(bd_app *app)
{
    /* Views hold positions in the model that a reload rebuilds: say what it closes. */
    if (!bd_ui_run_active(app) && app->top && app->top->below) {
        size_t n = 0;
        for (bd_view *v = app->top; v->below; v = v->below)
            n++;
        char q[160];
        snprintf(q, sizeof(q), "reload re-reads the bench and closes the %zu open view%s? (y/n)", n,
                 n == 1 ? "" : "s");
        bd_app_confirm(app, q, reload_now);
        return;
    }
    reload_now(app);
}

static void reload_now(bd_app *app)
{
    if (bd_ui_run_active(app)) {
        bd_app_message(app, BD_MSG_WARN, "a run is in progress: reload after it finishes");
        return;
    }
    bd_ui_run_release_runner(app); /* it borrows the bench about to be replaced */
    /* Views hold indices into the model: go back to the first view, then rebuild. */
    while (app->top && app->top->below)
        bd_app_pop(app);
    bd_err err = BD_ERR_INIT;
    if (bd_model_reload(app->model, &err) < 0) {
        bd_app_error(app, &err);
        return;
    }
    bd_event ev = {BD_EV_MODEL, SIZE_MAX, SIZE_MAX};
    bd_app_broadcast(app, &ev);
    bd_app_message(app, BD_MSG_INFO, "re-read the bench from disk");
    bd_app_invalidate(app, BD_DIRTY_ALL);
}

/* ---- header and status ---------------------------------------------------------------- */

static void chain_text(const bd_model *m, char *out, size_t cap, bd_role *role)
{
    *role = BD_R_HEADER;
    switch (m->chain) {
    case BD_CHAIN_VERIFYING:
        snprintf(out, cap, "chain: verifying%s", bd_gl->ellipsis);
        break;
    case BD_CHAIN_VERIFIED:
        snprintf(out, cap, "chain %s verified (%llu)", bd_gl->ok,
                 (unsigned long long)m->chain_count);
        break;
    case BD_CHAIN_NONE:
        snprintf(out, cap, "chain: empty");
        break;
    case BD_CHAIN_BROKEN:
        snprintf(out, cap, "chain TAMPERED at #%llu (%s)", (unsigned long long)m->chain_bad_seq,
                 m->chain_reason);
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

void bd_app_draw_header(bd_app *app)
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
    bool busy = (app->model && bd_model_busy(app->model)) || bd_ui_run_active(app);
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
        /* Too long for one line: say where the whole of it is. */
        char *vis = bd_text_vis(app->msg, 0);
        bool cut = vis && bd_text_width(vis) > rx && rx > 24;
        free(vis);
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
        /* Hints: the view's actions that have one, then help and back. */
        const bd_action tail[] = {BD_A_HELP, BD_A_BACK, BD_A_NONE};
        const bd_action *lists[2] = {v->ops->actions, tail};
        for (int li = 0; li < 2; li++)
            for (const bd_action *p = lists[li]; p && *p != BD_A_NONE; p++) {
                const char *hint = bd_action_hint(*p);
                if (*p == BD_A_BACK && !v->below)
                    hint = "quit"; /* back from the first view leaves */
                if (!hint[0])
                    continue;
                char key[32], item[96];
                bd_action_first_key(*p, key, sizeof(key));
                snprintf(item, sizeof(item), "%s %s  ", key, hint);
                int iw = bd_text_width(item);
                if (x + iw > rx)
                    break;
                x += bd_draw_text(w, 0, x, iw, key, base | A_BOLD, false);
                x += bd_draw_text(w, 0, x, rx - x, item + strlen(key), base, false);
            }
    }
    wbkgdset(w, ' ');
}
