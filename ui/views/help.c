/*
 * help.c — `?`: every key of the view below, then the keys that work everywhere, all
 * generated from the action and key tables in app.h (so help cannot drift from code).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "view_util.h"
#include "views/help_view.h"

typedef struct help_line {
    char keys[64];
    char text[192];
    bool heading;
} help_line;

typedef struct help {
    help_line *lines;
    size_t n;
    bd_list list;
} help;

static const bd_action actions[] = {BD_A_NONE};

static void add(help *h, const char *keys, const char *text, bool heading)
{
    help_line *g = realloc(h->lines, (h->n + 1) * sizeof(*g));
    if (!g)
        return;
    h->lines = g;
    help_line *l = &h->lines[h->n++];
    snprintf(l->keys, sizeof(l->keys), "%s", keys);
    snprintf(l->text, sizeof(l->text), "%s", text);
    l->heading = heading;
}

static bool listed(const bd_action *list, bd_action a)
{
    for (const bd_action *p = list; p && *p != BD_A_NONE; p++)
        if (*p == a)
            return true;
    return false;
}

/* The verdict prompt's keys (views/review.c), one per verdict (docs/provenance.md#verdicts). */
static void add_verdict_keys(help *h, bool marks)
{
    add(h, "", "", false);
    add(h, "", "In the verdict prompt (t)", true);
    add(h, "c", "confirmed: the score is right", false);
    add(h, "r", "rubric_bug: the rubric scored this wrongly, either way", false);
    add(h, "k", "case_bug: the case or its expected value is wrong", false);
    add(h, "f", "flaky: the result does not reproduce", false);
    add(h, "i", "infra: the harness or the environment failed, not the system under test", false);
    add(h, "w", "withdrawn: take back your earlier verdict", false);
    add(h, "text", "then an optional note (at most 1,024 bytes)", false);
    add(h, "Enter", "sign with your key (signing_key, else GnuPG's default) and write the files",
        false);
    add(h, "Esc", "give no verdict", false);
    if (marks)
        add(h, "Space", "here Space marks a record (PgDn pages)", false);
}

static int open_view(bd_view *v, void *arg)
{
    const bd_view *of = arg;
    help *h = calloc(1, sizeof(*h));
    if (!h) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = h;
    bd_list_init(&h->list);
    snprintf(v->title, sizeof(v->title), "help");
    char title[320];
    snprintf(title, sizeof(title), "Keys of the %s view", of->ops->name);
    add(h, "", title, true);
    for (const bd_action *p = of->ops->actions; p && *p != BD_A_NONE; p++) {
        char keys[64];
        bd_action_keys(*p, keys, sizeof(keys));
        add(h, keys, bd_action_help(*p), false);
    }
    if (listed(of->ops->actions, BD_A_FILTER)) {
        add(h, "", "", false);
        add(h, "", "In the filter line (/)", true);
        add(h, "text", "narrow the list to rows containing it (any column, any case)", false);
        add(h, "Enter", "keep the filter and go back to the list", false);
        add(h, "Esc", "drop the filter", false);
        add(h, "Backspace", "delete a character (on an empty line: drop the filter)", false);
        add(h, "Ctrl-U", "empty the line", false);
    }
    if (listed(of->ops->actions, BD_A_SEARCH)) {
        add(h, "", "", false);
        add(h, "", "In the search line (/): the view is searched, nothing is hidden", true);
        add(h, "text", "go to the next line containing it (any case); matches are marked", false);
        add(h, "Enter", "keep the search: n and N go to the next and previous match", false);
        add(h, "Esc", "end the search (n and p walk the failed cases again)", false);
    }
    if (listed(of->ops->actions, BD_A_VERDICT))
        add_verdict_keys(h, listed(of->ops->actions, BD_A_MARK_ROW));
    add(h, "", "", false);
    add(h, "", "Everywhere", true);
    for (const bd_action *p = bd_global_actions; *p != BD_A_NONE; p++) {
        if (listed(of->ops->actions, *p))
            continue;
        char keys[64];
        bd_action_keys(*p, keys, sizeof(keys));
        add(h, keys, bd_action_help(*p), false);
    }
    add(h, "mouse", "wheel scrolls; a click selects a row, a second click opens it", false);
    bd_list_rebuild(&h->list, h->n, NULL, NULL, NULL);
    return 0;
}

static void close_view(bd_view *v)
{
    help *h = v->state;
    bd_list_release(&h->list);
    free(h->lines);
    free(h);
}

static void draw(bd_view *v, WINDOW *w)
{
    help *h = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    bd_draw_text(w, 0, 0, cols, " Help (q or Esc goes back)", bd_role_attr(BD_R_TITLE), true);
    int list_h = rows - 1;
    /* The help scrolls as a page: the cursor is the top line. */
    if (h->list.cursor + (size_t)list_h > h->n)
        h->list.cursor = h->n > (size_t)list_h ? h->n - (size_t)list_h : 0;
    h->list.top = h->list.cursor;
    h->list.height = list_h;
    for (int i = 0; i < list_h; i++) {
        size_t li = h->list.top + (size_t)i;
        if (li >= h->n)
            break;
        const help_line *l = &h->lines[li];
        if (l->heading) {
            bd_draw_text(w, 1 + i, 1, cols - 1, l->text, A_BOLD | A_UNDERLINE, false);
            continue;
        }
        bd_draw_text(w, 1 + i, 3, 20, l->keys, bd_role_attr(BD_R_OK) | A_BOLD, false);
        bd_draw_text(w, 1 + i, 24, cols - 24, l->text, A_NORMAL, false);
    }
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    help *h = v->state;
    if (a == BD_A_HELP) {
        bd_app_pop(v->app);
        return true;
    }
    return bd_list_move(&h->list, a);
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)y;
    (void)x;
    help *h = v->state;
    if (ev->bstate & BUTTON4_PRESSED)
        h->list.cursor = h->list.cursor > 3 ? h->list.cursor - 3 : 0;
#ifdef BUTTON5_PRESSED
    if (ev->bstate & BUTTON5_PRESSED)
        h->list.cursor += 3;
#endif
}

static void position(bd_view *v, char *out, size_t cap)
{
    help *h = v->state;
    snprintf(out, cap, "%zu/%zu", h->list.cursor + 1, h->n);
}

const bd_view_ops bd_view_help = {
    "help", actions, open_view, draw, key, NULL, NULL, mouse, position, close_view, NULL, NULL,
};
