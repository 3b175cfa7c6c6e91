/*
 * view_util.c — small pieces the list views share.
 */
#include <stdio.h>
#include <string.h>

#include "view_util.h"

void bd_view_list_position(const bd_list *l, char *out, size_t cap)
{
    if (!l->n_vis)
        snprintf(out, cap, l->n ? "0 (of %zu)" : "empty", l->n);
    else if (l->n_vis < l->n)
        snprintf(out, cap, "%zu/%zu (of %zu)", l->cursor + 1, l->n_vis, l->n);
    else
        snprintf(out, cap, "%zu/%zu", l->cursor + 1, l->n_vis);
}

void bd_view_draw_filter_note(bd_view *v, WINDOW *w, const bd_list *l)
{
    (void)v;
    if (!l->filter[0])
        return;
    char note[160];
    snprintf(note, sizeof(note), " /%s ", l->filter);
    bd_draw_right(w, getmaxy(w) - 1, getmaxx(w), note, bd_role_attr(BD_R_BADGE_AWAITING));
}

bool bd_view_queue_work(bd_app *app, bd_work *w, const char *what)
{
    if (!w) {
        bd_app_message(app, BD_MSG_ERROR, "env.out_of_memory: cannot start %s", what);
        return false;
    }
    if (bd_work_queue(app, w) < 0) {
        bd_app_message(app, BD_MSG_ERROR, "env.error: cannot queue %s", what);
        return false;
    }
    bd_app_animate(app);
    return true;
}

/* The list and the rebuild of the view whose filter the prompt edits. */
static struct {
    bd_list *list;
    void (*rebuild)(bd_view *v);
} filter_target;

static void filter_changed(bd_view *v, const char *text)
{
    snprintf(filter_target.list->filter, sizeof(filter_target.list->filter), "%s", text);
    filter_target.rebuild(v);
}

static void filter_done(bd_view *v, const char *text, bool accepted)
{
    filter_changed(v, accepted ? text : "");
}

void bd_view_filter_prompt(bd_view *v, bd_list *l, void (*rebuild)(bd_view *v))
{
    v->filter_list = l;
    v->filter_rebuild = rebuild;
    filter_target.list = l;
    filter_target.rebuild = rebuild;
    bd_app_prompt(v->app, v, l->filter, filter_changed, filter_done);
}

void bd_human_size(char *out, size_t cap, unsigned long long bytes)
{
    if (bytes < 1024)
        snprintf(out, cap, "%llu B", bytes);
    else if (bytes < 1024ull * 1024)
        snprintf(out, cap, "%.1f KiB", (double)bytes / 1024.0);
    else if (bytes < 1024ull * 1024 * 1024)
        snprintf(out, cap, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
    else
        snprintf(out, cap, "%.1f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
}

void bd_human_ms(char *out, size_t cap, long long ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < 1000)
        snprintf(out, cap, "%lld ms", ms);
    else if (ms < 60000)
        snprintf(out, cap, "%.1f s", (double)ms / 1000.0);
    else if (ms < 3600000)
        snprintf(out, cap, "%lldm%02llds", ms / 60000, (ms / 1000) % 60);
    else
        snprintf(out, cap, "%lldh%02lldm", ms / 3600000, (ms / 60000) % 60);
}

void bd_fm_codes_append(char *buf, size_t cap, const bd_score *s)
{
    size_t used = strlen(buf);
    for (size_t i = 0; s && i < s->n_failure_modes && used + 1 < cap; i++) {
        int n = snprintf(buf + used, cap - used, " %s", s->failure_modes[i].code);
        if (n < 0)
            break;
        used += (size_t)n < cap - used ? (size_t)n : cap - used - 1;
    }
}

bool bd_view_scroll(size_t *top, size_t n, bd_action a, size_t page)
{
    switch (a) {
    case BD_A_UP:
        if (*top)
            (*top)--;
        return true;
    case BD_A_DOWN:
        (*top)++;
        return true;
    case BD_A_PAGE_UP:
        *top = *top > page ? *top - page : 0;
        return true;
    case BD_A_PAGE_DOWN:
        *top += page;
        return true;
    case BD_A_HOME:
        *top = 0;
        return true;
    case BD_A_END:
        *top = n;
        return true;
    default:
        return false;
    }
}

void bd_view_line_position(char *out, size_t cap, size_t top, size_t n)
{
    snprintf(out, cap, "line %zu/%zu", n ? top + 1 : 0, n);
}

bool bd_result_src_of_record(bd_result_src *out, const bd_history_record *r)
{
    if (r->is_audit)
        return false;
    memset(out, 0, sizeof(*out));
    out->run_id = r->run_id;
    out->task_class = r->task_class;
    out->case_id = r->case_id;
    out->score = &r->score;
    out->seq = r->seq;
    out->record_hash = r->hash;
    out->isolation = r->isolation_class;
    out->started_at = r->started_at;
    out->finished_at = r->finished_at;
    out->case_digest = r->case_digest;
    out->task_class_digest = r->task_class_digest;
    out->wall_ms = r->score.wall_clock_ms;
    out->origin = r->origin.present ? &r->origin : NULL;
    out->unverified = !r->provenance_verified;
    out->operator_fingerprint = r->operator_fingerprint;
    return true;
}
