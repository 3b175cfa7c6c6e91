/*
 * list.c — the list every view is made of: visible rows after filter and sort, a cursor
 * that stays on its row across rebuilds, and scrolling that keeps the cursor in view.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

void bd_list_init(bd_list *l)
{
    memset(l, 0, sizeof(*l));
}

void bd_list_release(bd_list *l)
{
    free(l->vis);
    memset(l, 0, sizeof(*l));
}

/* Case-insensitive substring test (ASCII folding: ids and codes are ASCII). */
static bool contains_ci(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    if (!nl)
        return true;
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < nl && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == nl)
            return true;
    }
    return false;
}

typedef struct sort_ctx {
    bd_list_cmp_fn cmp;
    void *payload;
} sort_ctx;

static int sort_cb(const void *a, const void *b, void *ctx)
{
    const sort_ctx *s = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = s->cmp(x, y, s->payload);
    if (!c)
        c = x < y ? -1 : x > y; /* stable: model order breaks ties */
    return c;
}

int bd_list_rebuild(bd_list *l, size_t n, bd_list_text_fn text, bd_list_cmp_fn cmp, void *payload)
{
    size_t keep = bd_list_selected(l);
    if (n > l->cap_vis) {
        size_t *g = realloc(l->vis, n * sizeof(*g));
        if (!g) {
            l->n = l->n_vis = l->cursor = l->top = 0;
            return -1;
        }
        l->vis = g;
        l->cap_vis = n;
    }
    l->n = n;
    l->n_vis = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = text ? text(i, payload) : "";
        if (!t)
            continue; /* the view hides this row whatever the filter */
        if (!l->filter[0] || contains_ci(t, l->filter))
            l->vis[l->n_vis++] = i;
    }
    if (cmp && l->n_vis > 1) {
        sort_ctx s = {cmp, payload};
        qsort_r(l->vis, l->n_vis, sizeof(*l->vis), sort_cb, &s);
    }
    if (keep == SIZE_MAX || !bd_list_select_row(l, keep)) {
        if (l->cursor >= l->n_vis)
            l->cursor = l->n_vis ? l->n_vis - 1 : 0;
    }
    if (l->top > l->cursor)
        l->top = l->cursor;
    return 0;
}

bool bd_list_select_row(bd_list *l, size_t row)
{
    /* The common case: the cursor did not move relative to its row. */
    if (l->cursor < l->n_vis && l->vis[l->cursor] == row)
        return true;
    for (size_t i = 0; i < l->n_vis; i++)
        if (l->vis[i] == row) {
            l->cursor = i;
            return true;
        }
    return false;
}

size_t bd_list_selected(const bd_list *l)
{
    return l->cursor < l->n_vis ? l->vis[l->cursor] : SIZE_MAX;
}

bool bd_list_move(bd_list *l, bd_action a)
{
    size_t page = l->height > 1 ? (size_t)l->height - 1 : 1;
    size_t last = l->n_vis ? l->n_vis - 1 : 0;
    switch (a) {
    case BD_A_UP:
        if (l->cursor > 0)
            l->cursor--;
        return true;
    case BD_A_DOWN:
        if (l->cursor < last)
            l->cursor++;
        return true;
    case BD_A_PAGE_UP:
        l->cursor = l->cursor > page ? l->cursor - page : 0;
        l->top = l->top > page ? l->top - page : 0;
        return true;
    case BD_A_PAGE_DOWN:
        l->cursor = l->cursor + page < last ? l->cursor + page : last;
        l->top += page;
        return true;
    case BD_A_HOME:
        l->cursor = 0;
        return true;
    case BD_A_END:
        l->cursor = last;
        return true;
    default:
        return false;
    }
}

void bd_list_scroll(bd_list *l, int height)
{
    if (height < 1)
        height = 1;
    l->height = height;
    size_t h = (size_t)height;
    if (l->n_vis <= h) {
        l->top = 0;
        return;
    }
    if (l->top > l->n_vis - h)
        l->top = l->n_vis - h;
    if (l->cursor < l->top)
        l->top = l->cursor;
    if (l->cursor >= l->top + h)
        l->top = l->cursor - h + 1;
}

bool bd_list_mouse(bd_list *l, const MEVENT *ev, int line)
{
    if (ev->bstate & BUTTON4_PRESSED) {
        l->top = l->top > 3 ? l->top - 3 : 0;
        if (l->cursor >= l->top + (size_t)(l->height > 0 ? l->height : 1))
            l->cursor = l->top + (size_t)l->height - 1;
        return false;
    }
#ifdef BUTTON5_PRESSED
    if (ev->bstate & BUTTON5_PRESSED) {
        size_t h = (size_t)(l->height > 0 ? l->height : 1);
        if (l->n_vis > h && l->top + 3 <= l->n_vis - h)
            l->top += 3;
        else if (l->n_vis > h)
            l->top = l->n_vis - h;
        if (l->cursor < l->top)
            l->cursor = l->top;
        return false;
    }
#endif
    if (line < 0 || !(ev->bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED)))
        return false;
    size_t i = l->top + (size_t)line;
    if (i >= l->n_vis)
        return false;
    bool again = l->cursor == i;
    l->cursor = i;
    return again;
}
