/*
 * messages.c — `m`: the last messages (errors, warnings, notices) in full, newest first,
 * wrapped to the screen, so a reason that the status line had to cut can be read whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "view_util.h"
#include "views/messages_view.h"

/* One screen line: a slice of a message, or its first line with time and level. */
typedef struct msg_line {
    char text[1024];
    bd_msg_level level;
    bool first;
} msg_line;

typedef struct messages {
    msg_line *lines;
    size_t n;
    size_t top;
    int width; /* the width the lines were wrapped to */
} messages;

static const bd_action actions[] = {BD_A_NONE};

static void add_line(messages *m, const char *s, size_t len, bd_msg_level level, bool first)
{
    msg_line *g = realloc(m->lines, (m->n + 1) * sizeof(*g));
    if (!g)
        return;
    m->lines = g;
    msg_line *l = &m->lines[m->n++];
    if (len >= sizeof(l->text))
        len = sizeof(l->text) - 1;
    memcpy(l->text, s, len);
    l->text[len] = '\0';
    l->level = level;
    l->first = first;
}

/* Wrap every kept message to `width` columns, newest first. */
static void layout(bd_view *v, int width)
{
    messages *m = v->state;
    free(m->lines);
    m->lines = NULL;
    m->n = 0;
    m->width = width;
    int tw = width - 12 > 10 ? width - 12 : 10;
    for (size_t k = v->app->log_count; k-- > 0;) {
        bd_msg_level level;
        uint64_t at;
        const char *raw = bd_app_log_at(v->app, k, &level, &at);
        char *text = bd_text_vis(raw, 0); /* widths are those of what is drawn */
        if (!text)
            continue;
        size_t len = strlen(text), off = 0;
        bool first = true;
        while (off < len || first) {
            size_t take = bd_wrap_next(text + off, len - off, tw);
            if (take == 0)
                take = len - off;
            add_line(m, text + off, take, level, first);
            first = false;
            off += take;
            if (take == 0)
                break;
        }
        free(text);
        add_line(m, "", 0, level, false);
    }
}

static int open_view(bd_view *v, void *arg)
{
    (void)arg;
    messages *m = calloc(1, sizeof(*m));
    if (!m) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = m;
    snprintf(v->title, sizeof(v->title), "messages");
    layout(v, v->app->body ? getmaxx(v->app->body) : 80);
    return 0;
}

static void close_view(bd_view *v)
{
    messages *m = v->state;
    free(m->lines);
    free(m);
}

static void draw(bd_view *v, WINDOW *w)
{
    messages *m = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    if (cols != m->width)
        layout(v, cols);
    bd_draw_text(w, 0, 0, cols, " Messages, newest first (q goes back)", bd_role_attr(BD_R_TITLE),
                 true);
    if (!m->n) {
        bd_draw_text(w, 2, 2, cols - 2, "No messages yet.", bd_role_attr(BD_R_MUTED), false);
        return;
    }
    int h = rows - 1;
    if (m->top + (size_t)h > m->n)
        m->top = m->n > (size_t)h ? m->n - (size_t)h : 0;
    for (int i = 0; i < h && m->top + (size_t)i < m->n; i++) {
        const msg_line *l = &m->lines[m->top + (size_t)i];
        if (l->first) {
            const char *tag = l->level == BD_MSG_ERROR  ? "error"
                              : l->level == BD_MSG_WARN ? "warning"
                                                        : "notice";
            bd_role r = l->level == BD_MSG_ERROR  ? BD_R_FAIL
                        : l->level == BD_MSG_WARN ? BD_R_WARN
                                                  : BD_R_MUTED;
            bd_draw_text(w, 1 + i, 1, 10, tag, bd_role_attr(r) | A_BOLD, false);
        }
        bd_draw_text(w, 1 + i, 11, cols - 11, l->text, A_NORMAL, false);
    }
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    messages *m = v->state;
    int h = v->app->body ? getmaxy(v->app->body) - 1 : 20;
    switch (a) {
    case BD_A_UP:
        if (m->top)
            m->top--;
        return true;
    case BD_A_DOWN:
        m->top++;
        return true;
    case BD_A_PAGE_UP:
        m->top = m->top > (size_t)h ? m->top - (size_t)h : 0;
        return true;
    case BD_A_PAGE_DOWN:
        m->top += (size_t)h;
        return true;
    case BD_A_HOME:
        m->top = 0;
        return true;
    case BD_A_END:
        m->top = m->n;
        return true;
    case BD_A_MESSAGES:
        bd_app_pop(v->app);
        return true;
    default:
        return false;
    }
}

static void position(bd_view *v, char *out, size_t cap)
{
    messages *m = v->state;
    snprintf(out, cap, "%zu message%s", v->app->log_count, v->app->log_count == 1 ? "" : "s");
    (void)m;
}

const bd_view_ops bd_view_messages = {
    "messages", actions, open_view, draw, key, NULL, NULL, NULL, position, close_view, NULL, NULL,
};
