/*
 * passphrase.c — the loopback passphrase bridge of passphrase.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "passphrase.h"

#define WAIT_SLICE_NS (100 * 1000 * 1000ull) /* how often a waiting job checks for quitting */

struct bd_pass {
    uv_async_t async; /* async.data = the bridge */
    uv_mutex_t mu;
    uv_cond_t cond;
    /* under mu */
    bool asking, answered, detached;
    int rc;
    bool bad_before;
    char hint[256];
    char pass[512];
    /* loop thread only */
    bd_app *app;
    bd_pass_ask_fn ask;
    void *owner;
};

void bd_wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

static void on_async(uv_async_t *h)
{
    bd_pass *p = h->data;
    char hint[256];
    bool bad, need;
    uv_mutex_lock(&p->mu);
    need = p->asking && !p->answered;
    memcpy(hint, p->hint, sizeof(hint));
    bad = p->bad_before;
    uv_mutex_unlock(&p->mu);
    if (!need)
        return;
    if (p->owner && p->ask && !p->app->quitting)
        p->ask(p->owner, hint, bad);
    else
        bd_pass_answer(p, NULL);
}

int bd_pass_new(bd_pass **out, bd_app *app, bd_pass_ask_fn ask, void *owner)
{
    *out = NULL;
    bd_pass *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    if (uv_mutex_init(&p->mu) != 0) {
        free(p);
        return -1;
    }
    if (uv_cond_init(&p->cond) != 0) {
        uv_mutex_destroy(&p->mu);
        free(p);
        return -1;
    }
    if (uv_async_init(app->loop, &p->async, on_async) != 0) {
        uv_cond_destroy(&p->cond);
        uv_mutex_destroy(&p->mu);
        free(p);
        return -1;
    }
    p->async.data = p;
    p->app = app;
    p->ask = ask;
    p->owner = owner;
    *out = p;
    return 0;
}

int bd_pass_cb(char *buf, size_t cap, const char *uid_hint, bool bad_before, void *payload)
{
    bd_pass *p = payload;
    int rc = 1;
    if (cap)
        buf[0] = '\0';
    uv_mutex_lock(&p->mu);
    if (p->detached)
        goto out;
    p->asking = true;
    p->answered = false;
    p->bad_before = bad_before;
    snprintf(p->hint, sizeof(p->hint), "%s", uid_hint ? uid_hint : "");
    /* Sent under the mutex: the loop closes the handle only after marking the bridge
     * detached under the same mutex, so this never races a close. */
    uv_async_send(&p->async);
    while (!p->answered) {
        if (uv_cond_timedwait(&p->cond, &p->mu, WAIT_SLICE_NS) != 0 &&
            (bd_work_stopping() || p->detached)) {
            p->answered = true;
            p->rc = 1;
        }
    }
    rc = p->rc;
    if (rc == 0 && cap)
        snprintf(buf, cap, "%s", p->pass);
    bd_wipe(p->pass, sizeof(p->pass));
    p->asking = false;
out:
    uv_mutex_unlock(&p->mu);
    return rc;
}

void bd_pass_answer(bd_pass *p, const char *pass)
{
    uv_mutex_lock(&p->mu);
    if (p->asking && !p->answered) {
        if (pass)
            snprintf(p->pass, sizeof(p->pass), "%s", pass);
        p->rc = pass ? 0 : 1;
        p->answered = true;
        uv_cond_broadcast(&p->cond);
    }
    uv_mutex_unlock(&p->mu);
}

void bd_pass_detach(bd_pass *p)
{
    if (!p)
        return;
    p->owner = NULL;
    uv_mutex_lock(&p->mu);
    p->detached = true;
    if (p->asking && !p->answered) {
        p->rc = 1;
        p->answered = true;
        uv_cond_broadcast(&p->cond);
    }
    uv_mutex_unlock(&p->mu);
}

static void on_closed(uv_handle_t *h)
{
    bd_pass *p = h->data;
    bd_wipe(p->pass, sizeof(p->pass));
    uv_cond_destroy(&p->cond);
    uv_mutex_destroy(&p->mu);
    free(p);
}

void bd_pass_free(bd_pass *p)
{
    if (!p)
        return;
    bd_pass_detach(p);
    uv_close((uv_handle_t *)&p->async, on_closed);
}

bd_edit_result bd_edit_key(char *buf, size_t cap, size_t *len, int ch)
{
    if (ch == '\r' || ch == '\n' || ch == KEY_ENTER)
        return BD_EDIT_ACCEPT;
    if (ch == 27)
        return BD_EDIT_CANCEL;
    if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        while (*len > 0) {
            (*len)--;
            unsigned char b = (unsigned char)buf[*len];
            buf[*len] = '\0';
            if ((b & 0xc0) != 0x80)
                break;
        }
        return BD_EDIT_CHANGED;
    }
    if (ch == BD_CTRL('u')) {
        bd_wipe(buf, cap);
        *len = 0;
        return BD_EDIT_CHANGED;
    }
    /* Wide characters between 256 and KEY_MAX collide with curses key codes: refused. */
    if (ch < 32 || ch == 127 || (ch >= 256 && ch <= KEY_MAX))
        return BD_EDIT_IGNORED;
    char mb[8];
    int n = 0;
    if (ch < 128) {
        mb[0] = (char)ch;
        n = 1;
    } else {
        mbstate_t st;
        memset(&st, 0, sizeof(st));
        size_t r = wcrtomb(mb, (wchar_t)ch, &st);
        n = r == (size_t)-1 ? 0 : (int)r;
    }
    if (n > 0 && *len + (size_t)n < cap) {
        memcpy(buf + *len, mb, (size_t)n);
        *len += (size_t)n;
        buf[*len] = '\0';
    }
    bd_wipe(mb, sizeof(mb));
    return BD_EDIT_CHANGED;
}

void bd_pass_draw(WINDOW *w, int y, const char *hint, bool bad_before, const char *pass, size_t len)
{
    int cols = getmaxx(w);
    char q[400];
    snprintf(q, sizeof(q), "%sPassphrase for %s: ", bad_before ? "Wrong passphrase. " : "", hint);
    bd_draw_text(w, y, 0, cols, "", A_NORMAL, true);
    int x = 1 + bd_draw_text(w, y, 1, cols - 12, q, bd_role_attr(BD_R_WARN) | A_BOLD, false);
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)pass[i] & 0xc0) != 0x80;
    for (size_t i = 0; i < n && x < cols - 1; i++)
        mvwaddch(w, y, x++, '*');
    if (x < cols)
        bd_draw_text(w, y, x, cols - x, "  (Enter sign, Esc cancel)", bd_role_attr(BD_R_MUTED),
                     false);
}

void bd_pass_line_ask(bd_pass_line *l, const char *hint, bool bad_before)
{
    l->asking = true;
    l->bad_before = bad_before;
    snprintf(l->hint, sizeof(l->hint), "%s", hint);
    bd_wipe(l->pass, sizeof(l->pass));
    l->len = 0;
}

void bd_pass_line_close(bd_pass_line *l)
{
    l->asking = false;
    bd_wipe(l->pass, sizeof(l->pass));
    l->len = 0;
}

bool bd_pass_line_key(bd_pass_line *l, bd_pass *bridge, int ch)
{
    bd_edit_result r = bd_edit_key(l->pass, sizeof(l->pass), &l->len, ch);
    if (r != BD_EDIT_ACCEPT && r != BD_EDIT_CANCEL)
        return false;
    if (bridge)
        bd_pass_answer(bridge, r == BD_EDIT_ACCEPT ? l->pass : NULL);
    bd_pass_line_close(l);
    return true;
}

void bd_pass_line_draw(const bd_pass_line *l, WINDOW *w, int y)
{
    bd_pass_draw(w, y, l->hint, l->bad_before, l->pass, l->len);
}
