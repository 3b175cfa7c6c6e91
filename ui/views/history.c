/*
 * history.c — the chained history, newest first (seq, time, task class, case, score,
 * isolation, hash) under the chain's verify banner, scoped to a task class or a case
 * when opened from one; `/` filters, Enter opens a record (docs/user-guide.md). Records are
 * read a page at a time on the thread pool as the cursor nears the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_keys.h"
#include "history.h"
#include "model.h"
#include "view_args.h"
#include "runs_model.h"
#include "stale.h"
#include "view_util.h"
#include "views/history_view.h"

#define PAGE 200

typedef struct page_job page_job;

typedef struct hist_view {
    char *scope_tc, *scope_case;
    bd_history_record *recs;
    size_t n, cap;
    bd_list list;
    uint64_t next_before; /* 0: no more pages */
    bool loaded_once;
    page_job *job; /* the page being read, or NULL */
    /* The chain changed: the first page is read again while the old rows stay shown (keys
     * keep moving over them); when it comes it replaces them, the cursor kept on its
     * record when that record is in it. */
    bool refreshing;
    bd_err err;
    char text[1024];
} hist_view;

struct page_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    char *root, *tc, *case_id;
    uint64_t before;
    bd_history_record *recs;
    size_t n;
    uint64_t next;
    bd_err err;
    int rc;
};

static const bd_action actions[] = {BD_A_OPEN,      BD_A_FILTER, BD_A_WIDEN,   BD_A_NEXT_FAIL,
                                    BD_A_PREV_FAIL, BD_A_MARK,   BD_A_COMPARE, BD_A_NONE};

static void load_more(bd_view *v);

static const char *row_text(size_t row, void *payload)
{
    bd_view *v = payload;
    hist_view *s = v->state;
    const bd_history_record *r = &s->recs[row];
    snprintf(s->text, sizeof(s->text), "#%llu %s %s %s %s %s %s", (unsigned long long)r->seq,
             r->task_class ? r->task_class : "", r->case_id ? r->case_id : "",
             r->event ? r->event : "", r->run_id ? r->run_id : "",
             r->isolation_class ? r->isolation_class : "", r->hash);
    bd_fm_codes_append(s->text, sizeof(s->text), r->is_audit ? NULL : &r->score);
    return s->text;
}

static void rebuild(bd_view *v)
{
    hist_view *s = v->state;
    if (bd_list_rebuild(&s->list, s->n, row_text, NULL, v) < 0)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
}

/* ---- pages on the pool -------------------------------------------------------------- */

static void page_run(bd_work *w)
{
    page_job *j = (page_job *)w;
    bd_history *h = NULL;
    j->rc = -1;
    if (bd_history_open(&h, j->root, BD_HISTORY_READ, &j->err) < 0)
        return;
    bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
    o.task_class = j->tc;
    o.case_id = j->case_id;
    o.limit = PAGE;
    o.before = j->before;
    j->rc = bd_history_log(h, &o, &j->recs, &j->n, &j->next, &j->err);
    bd_history_free(h);
    /* The stored JSON is not shown here: drop it to keep the list small. */
    for (size_t i = 0; i < j->n; i++) {
        cJSON_Delete(j->recs[i].json);
        j->recs[i].json = NULL;
    }
}

static void page_free(page_job *j)
{
    bd_history_records_free(j->recs, j->n);
    free(j->root);
    free(j->tc);
    free(j->case_id);
    free(j);
}

static void page_done(bd_work *w, bool ran)
{
    page_job *j = (page_job *)w;
    bd_view *v = j->view;
    if (!v || v->app->quitting) {
        page_free(j);
        return;
    }
    hist_view *s = v->state;
    s->job = NULL;
    s->loaded_once = true;
    uint64_t keep_seq = 0;
    if (s->refreshing) {
        s->refreshing = false;
        size_t row = bd_list_selected(&s->list);
        keep_seq = row < s->n ? s->recs[row].seq : 0;
        if (ran && j->rc == 0) {
            bd_history_records_free(s->recs, s->n);
            s->recs = NULL;
            s->n = s->cap = 0;
            s->list.cursor = s->list.top = 0;
        }
    }
    if (!ran || j->rc < 0) {
        s->err = j->err;
        s->next_before = 0;
        if (!ran)
            bd_err_set(&s->err, BD_E_RUN_CANCELLED, NULL, 0, 0, "reading the history stopped");
        page_free(j);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
        bd_app_notify(
            v->app,
            &(bd_event){.kind = BD_EV_LOADED, .tc_index = SIZE_MAX, .case_index = SIZE_MAX});
        return;
    }
    if (s->n + j->n > s->cap) {
        size_t nc = (s->n + j->n) * 2;
        bd_history_record *g = realloc(s->recs, nc * sizeof(*g));
        if (!g) {
            bd_err_set(&s->err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
            page_free(j);
            return;
        }
        s->recs = g;
        s->cap = nc;
    }
    if (j->n)
        memcpy(s->recs + s->n, j->recs, j->n * sizeof(*j->recs));
    s->n += j->n;
    free(j->recs);
    j->recs = NULL;
    j->n = 0;
    s->next_before = j->next;
    page_free(j);
    rebuild(v);
    for (size_t i = 0; keep_seq && i < s->n; i++)
        if (s->recs[i].seq == keep_seq) {
            (void)bd_list_select_row(&s->list, i);
            break;
        }
    bd_app_invalidate(v->app, BD_DIRTY_BODY | BD_DIRTY_STATUS);
    /* A filter may hide the whole page: keep reading while nothing shows. */
    if (s->list.filter[0] && s->list.n_vis < 20)
        load_more(v);
    bd_app_notify(v->app,
                  &(bd_event){.kind = BD_EV_LOADED, .tc_index = SIZE_MAX, .case_index = SIZE_MAX});
}

static void queue_page(bd_view *v, uint64_t before);

static void load_more(bd_view *v)
{
    hist_view *s = v->state;
    if (s->job || (s->loaded_once && !s->next_before) || s->err.code != BD_OK)
        return;
    queue_page(v, s->next_before);
}

/* Read the page of records before seq `before` (0: from the head) on the pool. */
static void queue_page(bd_view *v, uint64_t before)
{
    hist_view *s = v->state;
    page_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root)) ||
        (s->scope_tc && !(j->tc = strdup(s->scope_tc))) ||
        (s->scope_case && !(j->case_id = strdup(s->scope_case)))) {
        if (j)
            page_free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    j->view = v;
    j->before = before;
    j->work.run = page_run;
    j->work.done = page_done;
    if (bd_work_queue(v->app, &j->work) < 0) {
        page_free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "cannot queue the history read");
        return;
    }
    s->job = j;
    bd_app_animate(v->app);
}

static void reset(bd_view *v)
{
    hist_view *s = v->state;
    if (s->job) {
        s->job->view = NULL;
        s->job = NULL;
    }
    s->refreshing = false;
    bd_history_records_free(s->recs, s->n);
    s->recs = NULL;
    s->n = s->cap = 0;
    s->next_before = 0;
    s->loaded_once = false;
    bd_err_clear(&s->err);
    s->list.cursor = s->list.top = 0;
    rebuild(v);
    if (s->scope_case)
        snprintf(v->title, sizeof(v->title), "history: %s", s->scope_case);
    else if (s->scope_tc)
        snprintf(v->title, sizeof(v->title), "history: %s", s->scope_tc);
    else
        snprintf(v->title, sizeof(v->title), "history");
    load_more(v);
}

/* ---- the result provider: records as results, n/p over the loaded ones -------------- */

static size_t prov_count(void *payload)
{
    bd_view *v = payload;
    hist_view *s = v->state;
    return s->list.n_vis;
}

static bool prov_get(void *payload, size_t i, bd_result_src *out)
{
    bd_view *v = payload;
    hist_view *s = v->state;
    if (i >= s->list.n_vis)
        return false;
    const bd_history_record *r = &s->recs[s->list.vis[i]];
    return bd_result_src_of_record(out, r);
}

static void prov_follow(void *payload, size_t i)
{
    bd_view *v = payload;
    hist_view *s = v->state;
    if (i < s->list.n_vis)
        s->list.cursor = i;
}

/* ---- the view ----------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    const bd_history_scope *sc = arg;
    hist_view *s = calloc(1, sizeof(*s));
    if (!s || (sc->tc && !(s->scope_tc = strdup(sc->tc))) ||
        (sc->case_id && !(s->scope_case = strdup(sc->case_id)))) {
        if (s) {
            free(s->scope_tc);
            free(s);
        }
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    bd_list_init(&s->list);
    reset(v);
    return 0;
}

static void close_view(bd_view *v)
{
    hist_view *s = v->state;
    if (s->job)
        s->job->view = NULL;
    bd_history_records_free(s->recs, s->n);
    bd_list_release(&s->list);
    free(s->scope_tc);
    free(s->scope_case);
    free(s);
}

static void banner(bd_view *v, WINDOW *w, int y, int cols)
{
    bd_chain_status c = bd_model_chain(v->app->model);
    const bd_chain_status *m = &c;
    char buf[600];
    bd_role role = BD_R_OK;
    switch (m->state) {
    case BD_CHAIN_VERIFIED:
        snprintf(buf, sizeof(buf), "%s chain verified: %llu records from #1, head %.16s%s",
                 bd_gl->ok, (unsigned long long)m->count, m->head, bd_gl->ellipsis);
        break;
    case BD_CHAIN_NONE:
        snprintf(buf, sizeof(buf), "no history yet: runs append one record per case");
        role = BD_R_MUTED;
        break;
    case BD_CHAIN_BROKEN:
        snprintf(buf, sizeof(buf), "%s chain TAMPERED at #%llu (%s): %s", bd_gl->bad,
                 (unsigned long long)m->bad_seq, m->reason, m->msg);
        role = BD_R_BADGE_BAD;
        break;
    case BD_CHAIN_UNREADABLE:
        snprintf(buf, sizeof(buf), "%s chain unreadable: %s", bd_gl->bad, m->msg);
        role = BD_R_BADGE_BAD;
        break;
    default:
        snprintf(buf, sizeof(buf), "%s verifying the chain", bd_app_spinner(v->app));
        role = BD_R_MUTED;
        break;
    }
    bd_draw_text(w, y, 0, cols, "", bd_role_attr(role), role == BD_R_BADGE_BAD);
    /* The scope on the right: what the list holds. */
    hist_view *s = v->state;
    char scope[300];
    snprintf(scope, sizeof(scope), " %s%s ",
             s->scope_case ? "scope: "
             : s->scope_tc ? "scope: "
                           : "every record",
             s->scope_case ? s->scope_case
             : s->scope_tc ? s->scope_tc
                           : "");
    int rx = bd_draw_right(w, y, cols, scope, bd_role_attr(BD_R_MUTED));
    bd_draw_text(w, y, 1, rx - 2, buf, bd_role_attr(role), role == BD_R_BADGE_BAD);
}

typedef struct cols_t {
    int seq, time, tc, cs, score, iso, hash;
} cols_t;

/* Column layout for `cols` columns; SEQ is as wide as "#<max_seq>" and a space (at least
 * 8), so a 7-digit sequence number is shown whole. */
/* Column widths for `cols` columns; tc_w is the widest task-class name among the records
 * read. Names are not cut where the screen has room: on a narrow screen FINISHED drops
 * its year ("11-21 05:56:02") before TASK CLASS or CASE is cut. */
static cols_t layout(int cols, unsigned long long max_seq, int tc_w)
{
    int digits = 1;
    for (unsigned long long q = max_seq; q >= 10; q /= 10)
        digits++;
    cols_t c = {digits + 2 > 8 ? digits + 2 : 8, 21, 17, 0, 8, 0, 0};
    if (tc_w + 1 > c.tc)
        c.tc = tc_w + 1 < 41 ? tc_w + 1 : 41;
    if (cols >= 110) {
        c.iso = 11;
        c.hash = 13;
    }
    c.cs = cols - 1 - c.seq - c.time - c.tc - c.score - c.iso - c.hash;
    if (c.cs < 26) {
        c.time = 16;
        c.cs += 5;
    }
    if (c.cs < 12)
        c.cs = 12;
    return c;
}

/* The stale bits of score record `r` against today's pins of its task class (stale.h, as
 * `history log` marks them); a task class no longer in the bench: no pins, stale. */
static unsigned record_stale(bd_view *v, const bd_history_record *r)
{
    if (r->is_audit)
        return BD_STALE_NONE;
    size_t ti = r->task_class ? bd_model_find_tc(v->app->model, r->task_class) : SIZE_MAX;
    const bd_task_class *tc = ti == SIZE_MAX ? NULL : bd_model_tc(v->app->model, ti);
    return bd_record_stale(r, tc ? tc->digests : NULL);
}

static void draw_row(bd_view *v, WINDOW *w, int y, size_t row, bool sel, const cols_t *c)
{
    hist_view *s = v->state;
    const bd_history_record *r = &s->recs[row];
    int cols = getmaxx(w);
    attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
#define ROLE(x) (sel ? base : bd_role_attr(x))
    bd_draw_text(w, y, 0, cols, "", base, true);
    char buf[256];
    int x = 1;
    snprintf(buf, sizeof(buf), "#%llu", (unsigned long long)r->seq);
    bd_draw_text(w, y, x, c->seq - 1, buf, ROLE(BD_R_MUTED), false);
    x += c->seq;
    const char *t = r->is_audit ? r->at : r->finished_at;
    /* "2026-11-21T05:56:02Z" shown as "2026-11-21 05:56:02", or "11-21 05:56:02". */
    bool full = c->time >= 21;
    snprintf(buf, sizeof(buf), "%.*s %.8s", full ? 10 : 5,
             t && strlen(t) > 5 && !full ? t + 5
             : t                         ? t
                                         : "",
             t && strlen(t) > 11 ? t + 11 : "");
    bd_draw_text(w, y, x, c->time - 1, buf, base, false);
    x += c->time;
    bd_draw_text(w, y, x, c->tc - 1, r->task_class ? r->task_class : "-", base, false);
    x += c->tc;
    if (r->is_audit) {
        snprintf(buf, sizeof(buf), "audit: %s", r->event ? r->event : "");
        bd_draw_text(w, y, x, cols - x, buf, ROLE(BD_R_WARN), false);
        return;
    }
    /* The record's verdict badge at the right of the CASE column (history_model.h). */
    char badge[64];
    bd_role brole;
    bd_history_model_badge(v->app->model->history, r->seq, badge, sizeof(badge), &brole);
    int bw = badge[0] && c->cs > 24 ? bd_text_width(badge) : 0;
    bd_draw_text(w, y, x, c->cs - 1 - (bw ? bw + 1 : 0), r->case_id, base, false);
    if (bw)
        bd_draw_text(w, y, x + c->cs - 1 - bw, bw, badge, ROLE(brole), false);
    x += c->cs;
    snprintf(buf, sizeof(buf), "%s %.2f", r->score.passed ? bd_gl->ok : bd_gl->bad, r->score.score);
    bd_draw_text(w, y, x, c->score, buf, ROLE(r->score.passed ? BD_R_OK : BD_R_FAIL), false);
    /* A stale score was earned by other content or another rubric: marked, never hidden. */
    if (record_stale(v, r))
        bd_draw_text(w, y, x + bd_text_width(buf), 1, "*", ROLE(BD_R_WARN) | A_BOLD, false);
    x += c->score;
    if (c->iso) {
        bd_draw_text(w, y, x, c->iso - 1, r->isolation_class, ROLE(BD_R_MUTED), false);
        x += c->iso;
    }
    if (c->hash) {
        snprintf(buf, sizeof(buf), "%.10s", r->hash);
        bd_draw_text(w, y, x, c->hash - 1, buf, ROLE(BD_R_MUTED), false);
    }
#undef ROLE
}

static void draw(bd_view *v, WINDOW *w)
{
    hist_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    unsigned long long max_seq = 0;
    if (s->n) /* loaded in seq order, one way or the other: the ends hold the largest */
        max_seq = s->recs[0].seq > s->recs[s->n - 1].seq ? s->recs[0].seq : s->recs[s->n - 1].seq;
    int tc_w = 0; /* the widest task class among the records read */
    for (size_t i = 0; i < s->n; i++) {
        int nw = s->recs[i].task_class ? bd_text_width(s->recs[i].task_class) : 0;
        tc_w = nw > tc_w ? nw : tc_w;
    }
    cols_t c = layout(cols, max_seq, tc_w);
    char head[400];
    snprintf(head, sizeof(head), " %-*s%-*s%-*s%-*s%-*s%-*s%s", c.seq, "SEQ", c.time, "FINISHED",
             c.tc, "TASK CLASS", c.cs, "CASE", c.score, "SCORE", c.iso, c.iso ? "ISOLATION" : "",
             c.hash ? "HASH" : "");
    banner(v, w, 0, cols);
    bd_draw_text(w, 1, 0, cols, head, bd_role_attr(BD_R_TITLE), true);
    int list_h = rows - 3;
    bd_list_scroll(&s->list, list_h);
    for (int i = 0; i < list_h; i++) {
        size_t vi = s->list.top + (size_t)i;
        if (vi >= s->list.n_vis)
            break;
        draw_row(v, w, 2 + i, s->list.vis[vi], vi == s->list.cursor, &c);
    }
    char foot[1400] = "";
    bd_role fr = BD_R_MUTED;
    if (s->err.code != BD_OK) {
        snprintf(foot, sizeof(foot), "%s: %s", bd_code_str(s->err.code), bd_tui_err_text(&s->err));
        fr = BD_R_FAIL;
    } else if (s->job) {
        snprintf(foot, sizeof(foot), "%s reading records", bd_app_spinner(v->app));
    } else if (!s->n) {
        snprintf(foot, sizeof(foot), "%s",
                 s->scope_tc || s->scope_case ? "no records here (a shows every record)"
                                              : "no records yet");
    } else {
        size_t row = bd_list_selected(&s->list);
        if (row != SIZE_MAX) {
            const bd_history_record *r = &s->recs[row];
            if (r->is_audit)
                snprintf(foot, sizeof(foot), "%s", r->detail ? r->detail : "");
            else if (record_stale(v, r))
                snprintf(foot, sizeof(foot), "* stale (%s since it was scored)  run %s%s%s",
                         bd_stale_str(record_stale(v, r)), r->run_id,
                         r->provenance_verified ? "" : "  (provenance not verified)",
                         s->next_before ? "" : "  (end of the history)");
            else
                snprintf(foot, sizeof(foot), "run %s%s%s", r->run_id,
                         r->provenance_verified ? "" : "  (provenance not verified)",
                         s->next_before ? "" : "  (end of the history)");
        }
    }
    bd_draw_text(w, rows - 1, 1, cols - 1, foot, bd_role_attr(fr), false);
    bd_view_draw_filter_note(v, w, &s->list);
}

static void filter_changed(bd_view *v, const char *text)
{
    hist_view *s = v->state;
    snprintf(s->list.filter, sizeof(s->list.filter), "%s", text);
    rebuild(v);
}

static void filter_done(bd_view *v, const char *text, bool accepted)
{
    filter_changed(v, accepted ? text : "");
    if (accepted && text[0])
        load_more(v);
}

static void open_selected(bd_view *v)
{
    hist_view *s = v->state;
    size_t row = bd_list_selected(&s->list);
    if (row == SIZE_MAX)
        return;
    const bd_history_record *r = &s->recs[row];
    if (r->is_audit) {
        bd_app_message(v->app, BD_MSG_INFO, "#%llu %s: %s", (unsigned long long)r->seq, r->event,
                       r->detail ? r->detail : "");
        return;
    }
    bd_result_arg arg = {{prov_count, prov_get, prov_follow, v}, s->list.cursor};
    bd_app_open(v->app, BD_VIEW_RESULT, &arg);
}

/* Open the result of the next/previous failed record from the list. */
static void walk_open(bd_view *v, int dir)
{
    hist_view *s = v->state;
    size_t n = s->list.n_vis;
    for (size_t k = 1; k <= n; k++) {
        size_t i = dir > 0 ? (s->list.cursor + k) % n : (s->list.cursor + n - k % n) % n;
        const bd_history_record *r = &s->recs[s->list.vis[i]];
        if (!r->is_audit && !r->score.passed) {
            s->list.cursor = i;
            return;
        }
    }
    bd_app_message(v->app, BD_MSG_INFO, "no failed record in the list");
}

/* `x` marks the selected record's run; `=` compares the marked run (A) with it (B), or
 * without a mark the previous full run with it (runs_model.h, docs/compare.md). */
static void mark_or_compare(bd_view *v, bool mark)
{
    hist_view *s = v->state;
    size_t row = bd_list_selected(&s->list);
    const bd_history_record *r = row == SIZE_MAX ? NULL : &s->recs[row];
    if (!r || r->is_audit || !r->run_id) {
        bd_app_message(v->app, BD_MSG_INFO, "select a score record: its run is the one used");
        return;
    }
    const char *marked = bd_runs_model_marked();
    if (mark) {
        bool same = marked && strcmp(marked, r->run_id) == 0;
        bd_runs_model_mark(same ? NULL : r->run_id);
        bd_app_message(v->app, BD_MSG_INFO,
                       same ? "unmarked run %s"
                            : "marked run %s; = on "
                              "another run's record compares them",
                       r->run_id);
        return;
    }
    if (marked && strcmp(marked, r->run_id) == 0) {
        bd_app_message(v->app, BD_MSG_INFO, "that is the marked run: pick a record of another");
        return;
    }
    bd_compare_arg ca = {marked, r->run_id};
    bd_app_open(v->app, BD_VIEW_COMPARE, &ca);
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    hist_view *s = v->state;
    if (bd_list_move(&s->list, a)) {
        if (s->list.cursor + 20 >= s->list.n_vis)
            load_more(v);
        return true;
    }
    switch (a) {
    case BD_A_OPEN:
        open_selected(v);
        return true;
    case BD_A_FILTER:
        bd_app_prompt(v->app, v, s->list.filter, filter_changed, filter_done);
        return true;
    case BD_A_WIDEN:
        if (!s->scope_tc && !s->scope_case) {
            bd_app_message(v->app, BD_MSG_INFO, "already showing every record");
            return true;
        }
        free(s->scope_tc);
        free(s->scope_case);
        s->scope_tc = s->scope_case = NULL;
        reset(v);
        return true;
    case BD_A_NEXT_FAIL:
        walk_open(v, 1);
        return true;
    case BD_A_PREV_FAIL:
        walk_open(v, -1);
        return true;
    case BD_A_MARK:
    case BD_A_COMPARE:
        mark_or_compare(v, a == BD_A_MARK);
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    hist_view *s = v->state;
    if (ev->kind == BD_EV_HISTORY) {
        /* The chain changed (a run appended): read it again from the head, the rows
         * shown meanwhile. */
        if (s->loaded_once && !s->job && s->err.code == BD_OK) {
            s->refreshing = true;
            queue_page(v, 0);
        } else if (s->loaded_once && !s->job) {
            reset(v);
        }
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    } else if (ev->kind == BD_EV_TICK &&
               (s->job || bd_model_chain(v->app->model).state == BD_CHAIN_VERIFYING)) {
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)x;
    hist_view *s = v->state;
    if (bd_list_mouse(&s->list, ev, y - 2))
        open_selected(v);
    if (s->list.cursor + 20 >= s->list.n_vis)
        load_more(v);
}

static void position(bd_view *v, char *out, size_t cap)
{
    hist_view *s = v->state;
    bd_view_list_position(&s->list, out, cap);
    if (s->next_before) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "+");
    }
}

static void where(bd_view *v, bd_view_where *out)
{
    hist_view *s = v->state;
    snprintf(out->tc, sizeof(out->tc), "%s", s->scope_tc ? s->scope_tc : "");
    snprintf(out->case_id, sizeof(out->case_id), "%s", s->scope_case ? s->scope_case : "");
    size_t row = bd_list_selected(&s->list);
    if (row < s->n) {
        out->cursor_seq = s->recs[row].seq;
        snprintf(out->cursor, sizeof(out->cursor), "#%llu", (unsigned long long)s->recs[row].seq);
    }
}

/* Records come newest first, a page at a time: read on until the record is there or
 * older than the oldest read. */
static int reveal(bd_view *v, const bd_view_where *w)
{
    hist_view *s = v->state;
    if (s->job || !s->loaded_once)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->recs[i].seq == w->cursor_seq)
            return bd_list_select_row(&s->list, i) ? 1 : -1;
    if (s->next_before && (!s->n || s->recs[s->n - 1].seq > w->cursor_seq)) {
        load_more(v);
        return s->job ? 0 : -1;
    }
    return -1;
}

const bd_view_ops bd_view_history = {
    "history", actions, open_view, draw,       key,   event,
    NULL,      mouse,   position,  close_view, where, reveal,
};
