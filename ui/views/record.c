/*
 * record.c — recording a case's cassette from the live SUT (docs/recording.md), opened with
 * `R` from the case view. What `benchdesk record` does, in steps a person can follow:
 * choose offline or (with the same refusals and an audit event) the host network, run
 * the SUT on the thread pool (preflight, then the runner in its record mode), see the
 * diff between the old and the new cassette, then write it (`y`) or discard it (`n`).
 * The core does every check and every write (record.h); nothing here decides policy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "err_keys.h"
#include "config.h"
#include "linediff.h"
#include "model.h"
#include "record.h"
#include "view_util.h"
#include "views/record_view.h"
#include "watch.h"

typedef enum { ST_CHOOSE, ST_RUNNING, ST_REVIEW, ST_WRITTEN, ST_FAILED } rec_state;

typedef struct rec_job rec_job;

typedef struct dline {
    bd_diff_op op;
    char *text;
} dline;

typedef struct record_view {
    bd_case_ref ref;
    char tc_name[129], case_id[129];
    rec_state state;
    bool network;
    rec_job *job;
    bd_err err;
    bd_record_take take;
    char *old_pretty, *new_pretty; /* what the diff shows (pretty JSON when it parses) */
    dline *lines;
    size_t n, top;
    size_t added, removed;
} record_view;

struct rec_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    char *root, *tc_name, *case_id;
    bool network;  /* N: the operator asked for the host network */
    bool terminal; /* stdin was a terminal when it was asked */
    bd_config cfg;
    int rc;
    bd_err err;
    bd_record_take take;
    char repair[256]; /* a torn final line the audit's append removed, or "" */
};

static const bd_action actions[] = {BD_A_RECORD, BD_A_NONE};

/* ---- the pool job: preflight, audit, the SUT -------------------------------------- */

static void job_run(bd_work *w)
{
    rec_job *j = (rec_job *)w;
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    char *python = NULL;
    j->rc = -1;
    /* A bench of its own: the app's may be replaced by a reload meanwhile. */
    if (bd_bench_open(&bench, j->root, &j->err) < 0 ||
        bd_task_class_load(&tc, bench, j->tc_name, &j->err) < 0 ||
        bd_record_check(bench, tc, j->case_id, NULL, &j->err) < 0 ||
        bd_config_find_python(&python, &j->cfg, &j->err) < 0)
        goto out;
    /* The class first: the network gate depends on it (subprocess has the host network). */
    bd_isolation iso;
    bool host_network = false;
    if (bd_isolation_choose(&iso, NULL, "auto", false, &j->err) < 0 ||
        bd_record_network_gate(iso, j->network, j->terminal, &host_network, &j->err) < 0)
        goto out;
    if (host_network && bd_record_audit(bench, tc, j->case_id, iso, NULL, j->repair, &j->err) < 0)
        goto out;
    bd_record_opts ro = {.isolation = iso, .python = python, .host_network = host_network};
    if (bd_record_capture(&j->take, bench, tc, j->case_id, &ro, &j->err) == 0)
        j->rc = 0;
out:
    free(python);
    bd_task_class_free(tc);
    bd_bench_free(bench);
}

static void job_free(rec_job *j)
{
    bd_record_take_release(&j->take);
    bd_config_release(&j->cfg);
    free(j->root);
    free(j->tc_name);
    free(j->case_id);
    free(j);
}

static void clear_lines(record_view *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->lines[i].text);
    free(s->lines);
    s->lines = NULL;
    s->n = s->top = s->added = s->removed = 0;
}

static void build_diff(record_view *s)
{
    clear_lines(s);
    free(s->old_pretty);
    free(s->new_pretty);
    bd_diff_line *d = NULL;
    size_t n = 0;
    bd_err e = BD_ERR_INIT;
    if (bd_record_diff(&d, &n, &s->old_pretty, &s->new_pretty, &s->take, &e) < 0)
        return;
    s->lines = calloc(n ? n : 1, sizeof(*s->lines));
    for (size_t i = 0; s->lines && i < n; i++) {
        s->lines[i].op = d[i].op;
        s->lines[i].text = strndup(d[i].text, d[i].len);
        s->added += d[i].op == BD_DIFF_ADD;
        s->removed += d[i].op == BD_DIFF_DEL;
        s->n = i + 1;
    }
    free(d);
}

static void job_done(bd_work *w, bool ran)
{
    rec_job *j = (rec_job *)w;
    bd_view *v = j->view;
    if (v && !v->app->quitting) {
        record_view *s = v->state;
        s->job = NULL;
        if (ran && j->repair[0])
            bd_app_message(v->app, BD_MSG_WARN, "%s", j->repair);
        if (ran && j->rc == 0) {
            s->take = j->take; /* moved */
            memset(&j->take, 0, sizeof(j->take));
            s->state = ST_REVIEW;
            build_diff(s);
        } else {
            s->state = ST_FAILED;
            s->err = j->err;
            if (!ran)
                bd_err_set(&s->err, BD_E_RUN_CANCELLED, NULL, 0, 0, "the recording stopped");
            if (v->app->top == v) /* the view shows it whole: the log keeps it */
                bd_app_log_error(v->app, &s->err);
            else
                bd_app_error(v->app, &s->err);
        }
        bd_app_invalidate(v->app, BD_DIRTY_BODY | BD_DIRTY_STATUS);
    }
    job_free(j);
}

static void start(bd_view *v, bool network)
{
    record_view *s = v->state;
    if (s->job)
        return;
    bd_err e = BD_ERR_INIT;
    bool terminal = isatty(STDIN_FILENO) == 1;
    /* The same refusals as the command line: never in CI, never without a terminal (at
     * once here; the job applies the whole gate once the isolation class is known). */
    if (network && bd_record_network_policy(terminal, &e) < 0) {
        bd_app_error(v->app, &e);
        return;
    }
    rec_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root)) || !(j->tc_name = strdup(s->tc_name)) ||
        !(j->case_id = strdup(s->case_id)) ||
        (v->app->config.python && !(j->cfg.python = strdup(v->app->config.python)))) {
        if (j)
            job_free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    j->network = network;
    j->terminal = terminal;
    j->view = v;
    j->work.run = job_run;
    j->work.done = job_done;
    if (bd_work_queue(v->app, &j->work) < 0) {
        job_free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "cannot queue the recording");
        return;
    }
    s->job = j;
    s->network = network;
    s->state = ST_RUNNING;
    bd_app_animate(v->app);
}

static void write_take(bd_view *v)
{
    record_view *s = v->state;
    bd_err e = BD_ERR_INIT;
    bd_task_class *tc = NULL; /* its own copy: the pin rewrites what it loaded */
    bd_pin_report rep = {0};
    if (bd_task_class_load_unlisted(&tc, v->app->bench, s->tc_name, &e) < 0 ||
        bd_record_write_pin(&rep, v->app->bench, tc, s->case_id, &s->take, NULL, &e) < 0) {
        s->state = ST_FAILED;
        s->err = e;
        bd_app_error(v->app, &e);
        bd_task_class_free(tc);
        return;
    }
    s->state = ST_WRITTEN;
    /* Our own write: the watch re-reads the bench but keeps the message below. */
    bd_watch_touch(v->app->watch);
    bd_err next = BD_ERR_INIT;
    bd_record_next_steps(&next, tc, s->case_id);
    const bd_pin_change *ch = rep.n_changes ? &rep.changes[0] : NULL;
    if (ch && (ch->author_broken || ch->reviewer_broken))
        bd_app_message(v->app, BD_MSG_INFO,
                       "%s; superseded the signatures of %s%s%s (Ctrl-R re-reads the bench)",
                       bd_tui_err_text(&next), ch->author_broken ? ch->author_by : "",
                       ch->author_broken && ch->reviewer_broken ? ", " : "",
                       ch->reviewer_broken ? ch->reviewer_by : "");
    else
        bd_app_message(v->app, BD_MSG_INFO, "%s (Ctrl-R re-reads the bench)",
                       bd_tui_err_text(&next));
    bd_pin_report_release(&rep);
    bd_task_class_free(tc);
}

/* ---- the view ----------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    const bd_case_ref *ref = arg;
    bd_model *m = v->app->model;
    const bd_task_class *tc = bd_model_tc(m, ref->tc_index);
    if (!tc || ref->case_index >= m->tcs[ref->tc_index].n_cases) {
        bd_app_message(v->app, BD_MSG_WARN, "the task class is still loading");
        return -1;
    }
    if (tc->reg->sut_kind != BD_SUT_COMMAND) {
        bd_app_message(v->app, BD_MSG_WARN,
                       "%s replays cassettes: there is no live SUT to record (sut: {kind: "
                       "command} declares one)",
                       tc->name);
        return -1;
    }
    record_view *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    s->ref = *ref;
    snprintf(s->tc_name, sizeof(s->tc_name), "%s", tc->name);
    snprintf(s->case_id, sizeof(s->case_id), "%s", m->tcs[ref->tc_index].cases[ref->case_index].id);
    snprintf(v->title, sizeof(v->title), "record %s", s->case_id);
    return 0;
}

static void close_view(bd_view *v)
{
    record_view *s = v->state;
    if (s->job)
        s->job->view = NULL; /* its done callback frees it */
    clear_lines(s);
    free(s->old_pretty);
    free(s->new_pretty);
    bd_record_take_release(&s->take);
    free(s);
}

static void draw(bd_view *v, WINDOW *w)
{
    record_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    char buf[1200];
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    snprintf(buf, sizeof(buf), " record %s / %s", s->tc_name, s->case_id);
    bd_draw_text(w, 0, 0, cols, buf, bd_role_attr(BD_R_TITLE), false);
    int y = 2;
    switch (s->state) {
    case ST_CHOOSE:
        bd_draw_text(w, y++, 1, cols - 1,
                     "Runs the task class's SUT on this case as a run would (same jail, limits "
                     "and environment), then shows the new cassette beside the old one.",
                     A_NORMAL, false);
        y++;
        bd_draw_text(w, y++, 3, cols - 3, "o  offline (the default: the SUT gets no network)",
                     A_BOLD, false);
        bd_draw_text(w, y++, 3, cols - 3,
                     "N  with the host network (unsafe: never in CI; recorded in the history)",
                     bd_role_attr(BD_R_WARN) | A_BOLD, false);
        bd_draw_text(w, y++, 3, cols - 3, "Esc  back, nothing runs", A_NORMAL, false);
        return;
    case ST_RUNNING:
        snprintf(buf, sizeof(buf), "%s running the SUT%s%s", bd_app_spinner(v->app),
                 s->network ? " with the host network" : " offline", bd_gl->ellipsis);
        bd_draw_text(w, y, 1, cols - 1, buf, bd_role_attr(BD_R_MUTED), false);
        return;
    case ST_FAILED:
        snprintf(buf, sizeof(buf), "%s %s: %s", bd_gl->bad, bd_code_str(s->err.code),
                 bd_tui_err_text(&s->err));
        y += bd_draw_wrapped(w, y, 1, cols - 2, rows - y - 3, buf, bd_role_attr(BD_R_FAIL));
        bd_draw_text(w, y + 1, 1, cols - 1, "nothing was written; Esc goes back", A_NORMAL, false);
        return;
    case ST_REVIEW:
    case ST_WRITTEN:
        break;
    }
    if (s->state == ST_WRITTEN)
        snprintf(buf, sizeof(buf), "%s written: cassette_digest %s; pin the case and sign it again",
                 bd_gl->ok, s->take.new_digest);
    else if (!s->take.changed)
        snprintf(buf, sizeof(buf), "the SUT answered exactly the recorded cassette (%s)",
                 s->take.new_digest);
    else
        snprintf(buf, sizeof(buf), "cassette %s: +%zu -%zu lines; y writes it, n discards",
                 s->take.old_digest[0] ? "changes" : "is new", s->added, s->removed);
    bd_draw_text(w, 1, 1, cols - 1, buf,
                 bd_role_attr(s->state == ST_WRITTEN ? BD_R_OK : BD_R_WARN) | A_BOLD, false);
    int h = rows - 2;
    if (s->top + (size_t)h > s->n)
        s->top = s->n > (size_t)h ? s->n - (size_t)h : 0;
    for (int i = 0; i < h; i++) {
        size_t li = s->top + (size_t)i;
        if (li >= s->n)
            break;
        const dline *l = &s->lines[li];
        const char *mark = l->op == BD_DIFF_ADD ? "+" : l->op == BD_DIFF_DEL ? "-" : " ";
        bd_role role = l->op == BD_DIFF_ADD   ? BD_R_DIFF_ADD
                       : l->op == BD_DIFF_DEL ? BD_R_DIFF_DEL
                                              : BD_R_DIFF_CTX;
        bd_draw_text(w, 2 + i, 1, 1, mark, bd_role_attr(role), false);
        /* The SUT's output is untrusted: bd_draw_text shows it, never interprets it. */
        bd_draw_text(w, 2 + i, 3, cols - 3, l->text ? l->text : "", bd_role_attr(role), false);
    }
}

static bool key(bd_view *v, bd_action a, int ch)
{
    record_view *s = v->state;
    if (s->state == ST_CHOOSE) {
        if (ch == 'o' || a == BD_A_OPEN || a == BD_A_RECORD) {
            start(v, false);
            return true;
        }
        if (ch == 'N') {
            start(v, true);
            return true;
        }
        return false;
    }
    if (s->state == ST_REVIEW) {
        if (ch == 'y') {
            write_take(v);
            return true;
        }
        if (ch == 'n') {
            bd_app_message(v->app, BD_MSG_INFO, "discarded: nothing was written");
            bd_app_pop(v->app);
            return true;
        }
    }
    size_t page = (size_t)(getmaxy(v->app->body) > 3 ? getmaxy(v->app->body) - 3 : 1);
    return bd_view_scroll(&s->top, s->n, a, page);
}

static void event(bd_view *v, const bd_event *ev)
{
    record_view *s = v->state;
    if (ev->kind == BD_EV_TICK && s->state == ST_RUNNING)
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
}

static void position(bd_view *v, char *out, size_t cap)
{
    record_view *s = v->state;
    bd_view_line_position(out, cap, s->top, s->n);
}

static void where(bd_view *v, bd_view_where *out)
{
    record_view *s = v->state;
    snprintf(out->tc, sizeof(out->tc), "%s", s->tc_name);
    snprintf(out->case_id, sizeof(out->case_id), "%s", s->case_id);
}

const bd_view_ops bd_view_record = {
    "record", actions, open_view, draw, key, event, NULL, NULL, position, close_view, where, NULL,
};
