/*
 * watch.c — changes made outside the TUI (watch.h).
 */
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"

#define TICK_MS     500  /* how often the set of watches is brought in line */
#define SETTLE_MS   300  /* a burst of events settles before the reload */
#define RESCAN_MS   3000 /* the fallback's stat pass, when a watch could not be had */
#define MAX_WATCHED 4096 /* task classes beyond this are rescanned, not watched */

typedef struct watch_h {
    uv_fs_event_t h;
    struct bd_watch *w;
    bool keep; /* still wanted by the last sync */
    char path[4096];
} watch_h;

struct bd_watch {
    bd_app *app;
    uv_timer_t tick;
    watch_h **hs;
    size_t n, cap;
    size_t open; /* handles not yet closed (the timer included) */
    bool stopping;
    bool dirty;
    uint64_t dirty_at;
    bool fallback; /* some path could not be watched: rescan */
    uint64_t rescan_at;
    unsigned long long stamp; /* the fallback's sum of folder times */
    unsigned long reloads;
    bool own; /* the change was the TUI's own act (bd_watch_touch) */
};

static void on_closed(uv_handle_t *h)
{
    struct bd_watch *w = h->data;
    if (h != (uv_handle_t *)&w->tick)
        free(h); /* the handle is a watch_h's first member */
    if (--w->open == 0 && w->stopping) {
        free(w->hs);
        free(w);
    }
}

static void on_fs(uv_fs_event_t *h, const char *name, int events, int status)
{
    (void)name;
    (void)events;
    struct bd_watch *w = h->data;
    if (status < 0 || w->stopping)
        return;
    w->dirty = true;
    w->dirty_at = bd_app_now_ms(w->app);
}

static watch_h *find(struct bd_watch *w, const char *path)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->hs[i]->path, path) == 0)
            return w->hs[i];
    return NULL;
}

/* Want `path` watched: keep its handle, or start one (a failure turns the rescan on). */
static void want(struct bd_watch *w, const char *path)
{
    watch_h *x = find(w, path);
    if (x) {
        x->keep = true;
        return;
    }
    if (w->n >= MAX_WATCHED) {
        w->fallback = true;
        return;
    }
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 16;
        watch_h **g = realloc(w->hs, nc * sizeof(*g));
        if (!g)
            return;
        w->hs = g;
        w->cap = nc;
    }
    x = calloc(1, sizeof(*x));
    if (!x)
        return;
    snprintf(x->path, sizeof(x->path), "%s", path);
    x->w = w;
    x->keep = true;
    if (uv_fs_event_init(w->app->loop, &x->h) != 0) {
        free(x);
        w->fallback = true;
        return;
    }
    x->h.data = w;
    w->open++;
    uv_unref((uv_handle_t *)&x->h); /* never what keeps the loop alive */
    if (uv_fs_event_start(&x->h, on_fs, x->path, 0) != 0) {
        w->fallback = true; /* ENOSPC: inotify's watches ran out */
        uv_close((uv_handle_t *)&x->h, on_closed);
        return;
    }
    w->hs[w->n++] = x;
}

/* The folder of the case in view, if the top view shows one. */
static bool case_in_view(bd_app *app, char *out, size_t cap)
{
    bd_view *v = app->top;
    if (!v || !bd_view_is(v, BD_VIEW_CASE) || !v->ops->where)
        return false;
    bd_view_where wh;
    memset(&wh, 0, sizeof(wh));
    v->ops->where(v, &wh);
    if (!wh.tc[0] || !wh.case_id[0])
        return false;
    snprintf(out, cap, "%s/%s/cases/%s", app->bench->bench_dir, wh.tc, wh.case_id);
    return true;
}

/* Bring the watches in line with the bench as the model lists it. */
static void sync_watches(struct bd_watch *w)
{
    bd_app *app = w->app;
    bd_model *m = app->model;
    char p[4096];
    for (size_t i = 0; i < w->n; i++)
        w->hs[i]->keep = false;
    want(w, app->bench->bench_dir);
    for (size_t i = 0; m && i < m->n_tcs; i++) {
        snprintf(p, sizeof(p), "%s/%s", app->bench->bench_dir, m->tcs[i].name);
        want(w, p);
        snprintf(p, sizeof(p), "%s/%s/cases", app->bench->bench_dir, m->tcs[i].name);
        want(w, p);
    }
    if (case_in_view(app, p, sizeof(p)))
        want(w, p);
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (w->hs[i]->keep)
            w->hs[k++] = w->hs[i];
        else
            uv_close((uv_handle_t *)&w->hs[i]->h, on_closed);
    }
    w->n = k;
}

/* The fallback: a sum of the watched folders' change times (a folder's time moves when
 * an entry is added, removed or renamed over: how every write of benchdesk and git
 * lands). */
static unsigned long long folder_stamp(struct bd_watch *w)
{
    bd_app *app = w->app;
    bd_model *m = app->model;
    unsigned long long sum = 0;
    char p[4096];
    struct stat st;
    const char *subs[] = {"", "/cases"};
    for (size_t i = 0; m && i < m->n_tcs; i++)
        for (size_t k = 0; k < 2; k++) {
            snprintf(p, sizeof(p), "%s/%s%s", app->bench->bench_dir, m->tcs[i].name, subs[k]);
            if (stat(p, &st) == 0)
                sum += (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
                       (unsigned long long)st.st_mtim.tv_nsec + (unsigned long long)st.st_ino;
        }
    if (case_in_view(app, p, sizeof(p)) && stat(p, &st) == 0)
        sum += (unsigned long long)st.st_mtim.tv_nsec;
    return sum;
}

/* Nothing is in progress that a reload would disturb or race. */
static bool quiet(bd_app *app)
{
    if (app->quitting || app->confirm.active || app->prompt.active ||
        (app->ops.busy && app->ops.busy(app)) || (app->model && bd_model_busy(app->model)) ||
        bd_work_pending() > 0)
        return false;
    bd_view *v = app->top;
    return !(v && (bd_view_is(v, BD_VIEW_SIGN) || bd_view_is(v, BD_VIEW_RECORD) ||
                   bd_view_is(v, BD_VIEW_STAGE) || bd_view_is(v, BD_VIEW_RUN)));
}

static void on_tick(uv_timer_t *t)
{
    struct bd_watch *w = t->data;
    bd_app *app = w->app;
    if (w->stopping || app->quitting)
        return;
    uint64_t now = bd_app_now_ms(app);
    if (w->fallback && now >= w->rescan_at) {
        w->rescan_at = now + RESCAN_MS;
        unsigned long long st = folder_stamp(w);
        if (st != w->stamp && w->stamp) {
            w->dirty = true;
            w->dirty_at = now;
        }
        w->stamp = st;
    }
    if (w->dirty && now - w->dirty_at >= SETTLE_MS && quiet(app) && app->ops.reload) {
        w->dirty = false;
        w->reloads++;
        /* After the TUI's own act its message stays; else say why the views moved (once they
         * are open again: the re-opening's end must not say something else over it). */
        app->ops.reload(app, w->own ? NULL : "re-read the bench: it changed outside benchdesk");
        w->own = false;
        w->stamp = w->fallback ? folder_stamp(w) : 0;
    }
    sync_watches(w);
}

bd_watch *bd_watch_start(bd_app *app)
{
    struct bd_watch *w = calloc(1, sizeof(*w));
    if (!w || !app->loop || !app->bench)
        return (free(w), NULL);
    w->app = app;
    if (uv_timer_init(app->loop, &w->tick) != 0)
        return (free(w), NULL);
    w->tick.data = w;
    w->open = 1;
    w->fallback = getenv("BENCHDESK_WATCH_RESCAN") != NULL; /* tests: the rescan path */
    sync_watches(w);
    w->stamp = w->fallback ? folder_stamp(w) : 0;
    uv_timer_start(&w->tick, on_tick, TICK_MS, TICK_MS);
    uv_unref((uv_handle_t *)&w->tick); /* never what keeps the loop alive */
    return w;
}

void bd_watch_stop(bd_watch *w)
{
    if (!w || w->stopping)
        return;
    w->stopping = true;
    for (size_t i = 0; i < w->n; i++)
        uv_close((uv_handle_t *)&w->hs[i]->h, on_closed);
    w->n = 0;
    uv_close((uv_handle_t *)&w->tick, on_closed);
}

void bd_watch_touch(void *wp)
{
    struct bd_watch *w = wp;
    if (!w || w->stopping)
        return;
    w->dirty = true;
    w->own = true;
    w->dirty_at = bd_app_now_ms(w->app);
}

unsigned long bd_watch_reloads(const bd_watch *w)
{
    return w ? w->reloads : 0;
}
