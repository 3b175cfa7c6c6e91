/*
 * review.c — the review queue of a task class and the reviewer's signed verdicts
 * (docs/provenance.md#the-review-queue, docs/user-guide.md#reviewing-in-the-tui): the queue
 * `benchdesk review` prints (bd_review_load, on the thread pool), one row per record —
 * unreviewed failures, then those awaiting a second reviewer, then sampled passes — with
 * a suggestion from an earlier verdict on the same failure. Space marks a row, V a range;
 * `t` gives one verdict to each marked record (or the one under the cursor): one key per
 * verdict, an optional note, then the files are signed with the reviewer's key exactly as
 * `benchdesk verdict` signs them (bd_verdict_give) and the queue is read again. `a` takes
 * the suggestion into the prompt; nothing gets a verdict without the reviewer's Enter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_keys.h"
#include "model.h"
#include "passphrase.h"
#include "review.h"
#include "view_args.h"
#include "view_util.h"
#include "views/review_view.h"

/* Passing records of the run added to the queue (`benchdesk review --sample 5`), so that
 * reviewing passes too keeps the rubric's calibration unbiased. */
#define REVIEW_SAMPLE 5

typedef struct load_job load_job;
typedef struct give_job give_job;

/* Where the verdict prompt is: choosing the verdict, writing the note, signing. */
typedef enum { P_NONE, P_CHOOSE, P_NOTE, P_SIGNING } prompt_state;

typedef struct rrow {
    const bd_review_item *it; /* borrowed from the session; NULL: the record the view was
                                 opened for, which the queue does not hold */
    bool marked;
} rrow;

typedef struct review_view {
    char tc[129];
    /* the record the result view's `t` asked a verdict on (seq 0: none) */
    uint64_t want_seq;
    char want_case[129], want_run[129];
    bool want_passed, want_prompt;
    load_job *job;
    bool loaded;
    bd_err err;
    bd_review_session rs;
    rrow *rows;
    size_t n;
    bd_list list;
    size_t anchor; /* the row last marked (V marks from here), SIZE_MAX: none */
    /* the verdict prompt */
    prompt_state pstate;
    uint64_t *targets;
    size_t n_targets;
    bd_verdict_kind kind;
    char note[BD_VERDICT_NOTE_MAX + 1];
    size_t note_len;
    give_job *give;
    bd_pass_line line; /* the masked passphrase line */
} review_view;

struct load_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    char *root;
    char tc[129];
    char reviewer[64];
    bd_review_session rs;
    bd_err err;
    int rc;
};

struct give_job {
    bd_work work;
    bd_view *view;
    char *root;
    uint64_t *seqs;
    size_t n;
    bd_verdict_kind kind;
    char note[BD_VERDICT_NOTE_MAX + 1];
    char key[64];
    bd_pass *pass;
    char **paths;
    bd_err err;
    int rc;
};

static const bd_action actions[] = {BD_A_VERDICT, BD_A_MARK_ROW, BD_A_MARK_RANGE, BD_A_ACCEPT,
                                    BD_A_OPEN,    BD_A_FILTER,   BD_A_NONE};

/* One key per verdict in the prompt. */
static const struct {
    int key;
    bd_verdict_kind kind;
} verdict_keys[] = {
    {'c', BD_VERDICT_CONFIRMED}, {'r', BD_VERDICT_RUBRIC_BUG}, {'k', BD_VERDICT_CASE_BUG},
    {'f', BD_VERDICT_FLAKY},     {'i', BD_VERDICT_INFRA},      {'w', BD_VERDICT_WITHDRAWN},
};

/* ---- rows ---------------------------------------------------------------------------- */

static uint64_t row_seq(const review_view *s, const rrow *r)
{
    return r->it ? r->it->r->seq : s->want_seq;
}

static const char *row_text(size_t row, void *payload)
{
    static char buf[1024];
    const review_view *s = payload;
    const rrow *r = &s->rows[row];
    if (!r->it) {
        snprintf(buf, sizeof(buf), "#%llu %s %s", (unsigned long long)s->want_seq, s->want_case,
                 s->want_run);
        return buf;
    }
    const bd_history_record *h = r->it->r;
    snprintf(buf, sizeof(buf), "#%llu %s %s %s %s", (unsigned long long)h->seq, h->case_id,
             h->run_id, bd_review_why_str(r->it->why),
             r->it->has_suggestion ? bd_verdict_kind_str(r->it->suggestion) : "");
    bd_fm_codes_append(buf, sizeof(buf), &h->score);
    return buf;
}

static void rebuild(bd_view *v)
{
    review_view *s = v->state;
    bd_list_rebuild(&s->list, s->n, row_text, NULL, s);
}

/* Rows from the loaded queue; marks on records still queued are kept. */
static void set_rows(bd_view *v)
{
    review_view *s = v->state;
    rrow *old = s->rows;
    size_t n_old = s->n;
    bool extra = s->want_seq != 0;
    for (size_t i = 0; i < s->rs.q.n && extra; i++)
        extra = s->rs.q.items[i].r->seq != s->want_seq;
    s->n = 0;
    s->rows = calloc(s->rs.q.n + 1, sizeof(*s->rows));
    if (!s->rows) {
        free(old);
        rebuild(v);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    if (extra)
        s->rows[s->n++].it = NULL;
    for (size_t i = 0; i < s->rs.q.n; i++) {
        rrow *r = &s->rows[s->n++];
        r->it = &s->rs.q.items[i];
        for (size_t k = 0; k < n_old; k++)
            if (old[k].marked && old[k].it && old[k].it->r->seq == r->it->r->seq)
                r->marked = true;
    }
    free(old);
    s->anchor = SIZE_MAX;
    rebuild(v);
}

static size_t n_marked(const review_view *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->rows[i].marked;
    return n;
}

/* ---- loading the queue (pool) ------------------------------------------------------------ */

static void load_run(bd_work *w)
{
    load_job *j = (load_job *)w;
    bd_review_opts o = {0};
    o.task_class = j->tc;
    o.sample = REVIEW_SAMPLE;
    o.reviewer = j->reviewer[0] ? j->reviewer : NULL;
    j->rc = bd_review_load(&j->rs, j->root, &o, &j->err);
}

static void open_prompt(bd_view *v, const uint64_t *seqs, size_t n);

static void load_done(bd_work *w, bool ran)
{
    load_job *j = (load_job *)w;
    bd_view *v = j->view;
    if (v && !v->app->quitting) {
        review_view *s = v->state;
        s->job = NULL;
        s->loaded = true;
        s->err = j->err;
        if (!ran)
            bd_err_set(&s->err, BD_E_RUN_CANCELLED, NULL, 0, 0, "reading the queue stopped");
        if (ran && j->rc == 0) {
            /* The old rows borrow from the old session until the new rows are made. */
            bd_review_session old = s->rs;
            s->rs = j->rs; /* moved: the rows borrow from it */
            memset(&j->rs, 0, sizeof(j->rs));
            s->err = (bd_err)BD_ERR_INIT;
            set_rows(v);
            bd_review_session_release(&old);
        } else {
            /* The rows borrowed from the session kept: nothing new to show. */
            bd_app_log_error(v->app, &s->err);
        }
        if (s->want_prompt && s->want_seq) {
            s->want_prompt = false;
            for (size_t i = 0; i < s->n; i++)
                if (row_seq(s, &s->rows[i]) == s->want_seq)
                    bd_list_select_row(&s->list, i);
            open_prompt(v, &s->want_seq, 1);
        }
        bd_app_invalidate(v->app, BD_DIRTY_ALL);
        /* A reload (Ctrl-R) waiting to put the cursor back learns the rows are here. */
        bd_app_notify(
            v->app,
            &(bd_event){.kind = BD_EV_LOADED, .tc_index = SIZE_MAX, .case_index = SIZE_MAX});
    }
    bd_review_session_release(&j->rs);
    free(j->root);
    free(j);
}

static void start_load(bd_view *v)
{
    review_view *s = v->state;
    if (s->job)
        return;
    load_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root))) {
        free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    snprintf(j->tc, sizeof(j->tc), "%s", s->tc);
    if (v->app->config.signing_key)
        snprintf(j->reviewer, sizeof(j->reviewer), "%s", v->app->config.signing_key);
    j->view = v;
    j->work.run = load_run;
    j->work.done = load_done;
    if (!bd_view_queue_work(v->app, &j->work, "the review queue")) {
        free(j->root);
        free(j);
        return;
    }
    s->job = j;
}

/* ---- giving the verdicts (pool) ---------------------------------------------------------- */

static void give_run(bd_work *w)
{
    give_job *j = (give_job *)w;
    bd_verdict_subject *subj = NULL;
    bd_verdict_give_opts o = BD_VERDICT_GIVE_OPTS_INIT;
    o.sign.key = j->key[0] ? j->key : NULL;
    if (j->pass) {
        o.sign.passphrase = bd_pass_cb;
        o.sign.payload = j->pass;
    }
    j->rc = -1;
    if (bd_verdict_subjects(&subj, j->root, j->seqs, j->n, &j->err) == 0)
        j->rc = bd_verdict_give(&j->paths, j->root, subj, j->n, j->kind, j->note, &o, &j->err);
    free(subj);
}

static void give_free(give_job *j)
{
    for (size_t i = 0; j->paths && i < j->n; i++)
        free(j->paths[i]);
    free(j->paths);
    bd_pass_free(j->pass);
    bd_wipe(j->note, sizeof(j->note));
    free(j->seqs);
    free(j->root);
    free(j);
}

static void close_prompt(review_view *s)
{
    s->pstate = P_NONE;
    bd_wipe(s->note, sizeof(s->note));
    s->note_len = 0;
    bd_pass_line_close(&s->line);
    free(s->targets);
    s->targets = NULL;
    s->n_targets = 0;
}

static void give_done(bd_work *w, bool ran)
{
    give_job *j = (give_job *)w;
    bd_view *v = j->view;
    bd_app *app = j->work.app;
    if (app->quitting)
        goto out;
    /* A pinentry may have drawn on the terminal; keys typed while GnuPG worked were
     * meant for it: dropped, never commands. */
    bd_app_redraw_all(app);
    bd_app_discard_keys(app, 0);
    if (v) {
        review_view *s = v->state;
        s->give = NULL;
        bd_pass_line_close(&s->line);
    }
    if (!ran) {
        bd_app_message(app, BD_MSG_WARN, "the verdict was not given: cancelled");
    } else if (j->rc < 0) {
        bd_app_error(app, &j->err);
        if (v)
            ((review_view *)v->state)->pstate = P_NOTE; /* Enter tries again */
    } else {
        bd_app_message(app, BD_MSG_INFO,
                       "%s on %zu record%s: wrote %s%s; stage and commit %s with w (git)",
                       bd_verdict_kind_str(j->kind), j->n, j->n == 1 ? "" : "s", j->paths[0],
                       j->n > 1 ? " and more" : "", j->n == 1 ? "it" : "them");
        bd_model_refresh_history(app->model); /* the badges of the other views */
        if (v) {
            review_view *s = v->state;
            close_prompt(s);
            for (size_t i = 0; i < s->n; i++)
                s->rows[i].marked = false;
            start_load(v);
        }
    }
    if (v)
        bd_app_invalidate(app, BD_DIRTY_ALL);
out:
    give_free(j);
}

static void ask(void *owner, const char *hint, bool bad_before)
{
    bd_view *v = owner;
    review_view *s = v->state;
    bd_pass_line_ask(&s->line, hint, bad_before);
    bd_app_invalidate(v->app, BD_DIRTY_ALL);
}

static void start_give(bd_view *v)
{
    review_view *s = v->state;
    give_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root)) ||
        !(j->seqs = malloc(s->n_targets * sizeof(*j->seqs)))) {
        if (j)
            free(j->root);
        free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    memcpy(j->seqs, s->targets, s->n_targets * sizeof(*j->seqs));
    j->n = s->n_targets;
    j->kind = s->kind;
    snprintf(j->note, sizeof(j->note), "%s", s->note);
    if (v->app->config.signing_key)
        snprintf(j->key, sizeof(j->key), "%s", v->app->config.signing_key);
    j->view = v;
    j->work.run = give_run;
    j->work.done = give_done;
    if (bd_pass_new(&j->pass, v->app, ask, v) < 0 ||
        !bd_view_queue_work(v->app, &j->work, "signing the verdicts")) {
        give_free(j);
        return;
    }
    s->give = j;
    s->pstate = P_SIGNING;
}

/* ---- the prompt ------------------------------------------------------------------------ */

static void open_prompt(bd_view *v, const uint64_t *seqs, size_t n)
{
    review_view *s = v->state;
    if (!n)
        return;
    free(s->targets);
    s->targets = malloc(n * sizeof(*s->targets));
    if (!s->targets) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    memcpy(s->targets, seqs, n * sizeof(*seqs));
    s->n_targets = n;
    s->pstate = P_CHOOSE;
}

/* `t`: the marked records, else the one under the cursor. */
static void verdict_prompt(bd_view *v)
{
    review_view *s = v->state;
    size_t n = n_marked(s), k = 0;
    uint64_t *seqs = calloc(n ? n : 1, sizeof(*seqs));
    if (!seqs)
        return;
    if (n) {
        for (size_t i = 0; i < s->n; i++)
            if (s->rows[i].marked)
                seqs[k++] = row_seq(s, &s->rows[i]);
    } else {
        size_t row = bd_list_selected(&s->list);
        if (row != SIZE_MAX)
            seqs[k++] = row_seq(s, &s->rows[row]);
    }
    if (k)
        open_prompt(v, seqs, k);
    else
        bd_app_message(v->app, BD_MSG_INFO, "nothing to give a verdict on");
    free(seqs);
}

static bool prompt_key(bd_view *v, int ch)
{
    review_view *s = v->state;
    switch (s->pstate) {
    case P_CHOOSE:
        if (ch == 27) {
            close_prompt(s);
            bd_app_message(v->app, BD_MSG_INFO, "no verdict given");
            return true;
        }
        for (size_t i = 0; i < sizeof(verdict_keys) / sizeof(verdict_keys[0]); i++)
            if (ch == verdict_keys[i].key) {
                s->kind = verdict_keys[i].kind;
                s->pstate = P_NOTE;
            }
        return true;
    case P_NOTE: {
        bd_edit_result r = bd_edit_key(s->note, sizeof(s->note), &s->note_len, ch);
        if (r == BD_EDIT_CANCEL) {
            close_prompt(s);
            bd_app_message(v->app, BD_MSG_INFO, "no verdict given");
        } else if (r == BD_EDIT_ACCEPT) {
            start_give(v);
        }
        return true;
    }
    case P_SIGNING:
        if (s->line.asking)
            bd_pass_line_key(&s->line, s->give ? s->give->pass : NULL, ch);
        /* Keys typed while GnuPG signs are meant for it: discarded, never commands. */
        return true;
    default:
        return false;
    }
}

/* ---- drawing --------------------------------------------------------------------------- */

/* The case column: what is left beside the fixed columns (26) and 34 for the verdicts and
 * the suggestion, between 12 and 30 columns. */
static int case_width(int cols)
{
    int cw = cols - 26 - 34;
    return cw < 12 ? 12 : cw > 30 ? 30 : cw;
}

static void draw_row(bd_view *v, WINDOW *w, int y, size_t row, bool sel)
{
    review_view *s = v->state;
    const rrow *r = &s->rows[row];
    int cols = getmaxx(w);
    attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
#define ROLE(x) (sel ? base : bd_role_attr(x))
    bd_draw_text(w, y, 0, cols, "", base, true);
    bd_draw_text(w, y, 0, 2, r->marked ? "*" : " ", ROLE(BD_R_WARN) | A_BOLD, false);
    char buf[512], badge[64];
    bd_role brole;
    uint64_t seq = row_seq(s, r);
    bool passed = r->it ? r->it->r->score.passed : s->want_passed;
    snprintf(buf, sizeof(buf), "#%llu", (unsigned long long)seq);
    int x = 2;
    bd_draw_text(w, y, x, 8, buf, ROLE(BD_R_MUTED), false);
    x += 8;
    bd_draw_text(w, y, x, 5, passed ? "pass" : "FAIL", ROLE(passed ? BD_R_OK : BD_R_FAIL), false);
    x += 5;
    const char *why = r->it ? bd_review_why_str(r->it->why) : "shown";
    bd_draw_text(w, y, x, 11, strcmp(why, "awaiting_second") == 0 ? "2nd review" : why,
                 ROLE(BD_R_MUTED), false);
    x += 11;
    int cw = case_width(cols);
    bd_draw_text(w, y, x, cw - 1, r->it ? r->it->r->case_id : s->want_case, base, false);
    x += cw;
    bd_history_model_badge(v->app->model->history, seq, badge, sizeof(badge), &brole);
    if (badge[0]) {
        x += bd_draw_text(w, y, x, cols - x, badge, ROLE(brole), false);
        x += bd_draw_text(w, y, x, cols - x, " ", base, false);
    }
    if (r->it && r->it->has_suggestion) {
        /* The reviewer's name, short: their identity up to '@' (whole in the footer). */
        const char *who = r->it->suggestion_reviewer;
        snprintf(buf, sizeof(buf), "suggest: %s (by %.*s)", bd_verdict_kind_str(r->it->suggestion),
                 (int)strcspn(who, "@"), who);
        bd_draw_text(w, y, x, cols - x, buf, ROLE(BD_R_WARN), false);
    } else if (r->it) {
        buf[0] = '\0';
        bd_fm_codes_append(buf, sizeof(buf), &r->it->r->score);
        bd_draw_text(w, y, x, cols - x, buf + (buf[0] == ' '), ROLE(BD_R_MUTED), false);
    }
#undef ROLE
}

/* The verdict prompt over the last lines of the body. */
static void draw_prompt(bd_view *v, WINDOW *w, int rows, int cols)
{
    review_view *s = v->state;
    char buf[1400];
    attr_t a = bd_role_attr(BD_R_BADGE_AWAITING);
    snprintf(buf, sizeof(buf), " verdict on %zu record%s (signed with %.16s%s)", s->n_targets,
             s->n_targets == 1 ? "" : "s",
             v->app->config.signing_key ? v->app->config.signing_key : "GnuPG's default key",
             v->app->config.signing_key ? "..." : "");
    bd_draw_text(w, rows - 3, 0, cols, buf, bd_role_attr(BD_R_TITLE), true);
    if (s->pstate == P_CHOOSE) {
        bd_draw_text(w, rows - 2, 0, cols,
                     " c confirmed  r rubric_bug  k case_bug  f flaky  i infra  w withdrawn", a,
                     true);
        bd_draw_text(w, rows - 1, 0, cols, " Esc: no verdict", bd_role_attr(BD_R_MUTED), true);
        return;
    }
    snprintf(buf, sizeof(buf), " %s   Enter signs and writes, Esc: no verdict",
             bd_verdict_kind_str(s->kind));
    bd_draw_text(w, rows - 2, 0, cols, buf, a, true);
    if (s->pstate == P_SIGNING && s->line.asking) {
        bd_pass_line_draw(&s->line, w, rows - 1);
        return;
    }
    if (s->pstate == P_SIGNING) {
        snprintf(buf, sizeof(buf), " %s signing (keys typed now are dropped)",
                 bd_app_spinner(v->app));
        bd_draw_text(w, rows - 1, 0, cols, buf, bd_role_attr(BD_R_MUTED), true);
        return;
    }
    int x = bd_draw_text(w, rows - 1, 0, cols, " note: ", bd_role_attr(BD_R_TITLE), false);
    /* The tail of a long note: what is being typed stays in sight. */
    const char *t = s->note;
    while (bd_text_width(t) > cols - x - 2 && *t)
        t++;
    while ((*t & 0xC0) == 0x80)
        t++;
    x += bd_draw_text(w, rows - 1, x, cols - x, t, A_NORMAL, true);
}

static void draw_foot(bd_view *v, WINDOW *w, int y, int cols)
{
    review_view *s = v->state;
    char foot[1400] = "";
    bd_role fr = BD_R_MUTED;
    size_t row = bd_list_selected(&s->list);
    if (s->err.code != BD_OK) {
        snprintf(foot, sizeof(foot), "%s: %s", bd_code_str(s->err.code), bd_tui_err_text(&s->err));
        fr = BD_R_FAIL;
    } else if (s->job) {
        snprintf(foot, sizeof(foot), "%s reading the verified history and the verdicts",
                 bd_app_spinner(v->app));
    } else if (!s->n) {
        snprintf(foot, sizeof(foot), "nothing to review in %s", s->tc);
    } else if (row != SIZE_MAX && s->rows[row].it) {
        const bd_review_item *it = s->rows[row].it;
        size_t len = (size_t)snprintf(foot, sizeof(foot), "run %s", it->r->run_id);
        char badge[512];
        if (bd_verdict_badge(badge, sizeof(badge), &s->rs.vs, it->r->seq)[0])
            len += (size_t)snprintf(foot + len, sizeof(foot) - len, "  %s", badge);
        if (it->has_suggestion && len < sizeof(foot))
            snprintf(foot + len, sizeof(foot) - len, "  same as #%llu: %s, %s (a takes it)",
                     (unsigned long long)it->suggestion_seq, bd_verdict_kind_str(it->suggestion),
                     it->suggestion_reviewer);
    }
    if (!foot[0] && s->rs.q.n_missing)
        snprintf(foot, sizeof(foot),
                 "verdicts name run %s, which this history lacks: import its "
                 "bundle",
                 s->rs.q.missing_runs[0]);
    bd_draw_text(w, y, 1, cols - 1, foot, bd_role_attr(fr), false);
}

static void draw(bd_view *v, WINDOW *w)
{
    review_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    size_t marked = n_marked(s);
    char head[400];
    const char *run = s->rs.q.n ? s->rs.q.items[0].r->run_id : NULL;
    snprintf(head, sizeof(head), " review queue of %s%s%s", s->tc, run ? ", run " : "",
             run ? run : "");
    bd_draw_text(w, 0, 0, cols, head, bd_role_attr(BD_R_TITLE), true);
    snprintf(head, sizeof(head), "  %-8s%-5s%-11s%-*s%s", "SEQ", "", "WHY", case_width(cols),
             "CASE", "VERDICTS / SUGGESTION");
    bd_draw_text(w, 1, 0, cols, head, bd_role_attr(BD_R_TITLE), true);
    int prompt_h = s->pstate != P_NONE ? 3 : 0;
    int list_h = rows - 3 - prompt_h;
    bd_list_scroll(&s->list, list_h);
    for (int i = 0; i < list_h; i++) {
        size_t vi = s->list.top + (size_t)i;
        if (vi >= s->list.n_vis)
            break;
        draw_row(v, w, 2 + i, s->list.vis[vi], vi == s->list.cursor);
    }
    if (prompt_h) {
        draw_prompt(v, w, rows, cols);
        return;
    }
    draw_foot(v, w, rows - 1, cols);
    if (marked) {
        char m[64];
        snprintf(m, sizeof(m), " %zu marked ", marked);
        bd_draw_right(w, rows - 1, cols, m, bd_role_attr(BD_R_WARN) | A_BOLD);
    }
    bd_view_draw_filter_note(v, w, &s->list);
}

/* ---- the result of a row ---------------------------------------------------------------- */

static size_t prov_count(void *payload)
{
    bd_view *v = payload;
    return ((review_view *)v->state)->list.n_vis;
}

static bool prov_get(void *payload, size_t i, bd_result_src *out)
{
    bd_view *v = payload;
    review_view *s = v->state;
    if (i >= s->list.n_vis || !s->rows[s->list.vis[i]].it)
        return false;
    const bd_history_record *r = s->rows[s->list.vis[i]].it->r;
    return bd_result_src_of_record(out, r);
}

static void prov_follow(void *payload, size_t i)
{
    bd_view *v = payload;
    review_view *s = v->state;
    if (i < s->list.n_vis)
        s->list.cursor = i;
}

/* ---- keys ------------------------------------------------------------------------------ */

static void mark_range(bd_view *v)
{
    review_view *s = v->state;
    size_t row = bd_list_selected(&s->list);
    if (row == SIZE_MAX)
        return;
    size_t from = s->list.cursor, to = s->list.cursor;
    for (size_t i = 0; i < s->list.n_vis && s->anchor != SIZE_MAX; i++)
        if (s->list.vis[i] == s->anchor)
            from = i;
    if (from > to) {
        size_t t = from;
        from = to;
        to = t;
    }
    for (size_t i = from; i <= to; i++)
        s->rows[s->list.vis[i]].marked = true;
    s->anchor = row;
    bd_app_message(v->app, BD_MSG_INFO, "%zu marked: t gives them one verdict each", n_marked(s));
}

static void accept_suggestion(bd_view *v)
{
    review_view *s = v->state;
    size_t row = bd_list_selected(&s->list);
    const rrow *r = row == SIZE_MAX ? NULL : &s->rows[row];
    if (!r || !r->it || !r->it->has_suggestion) {
        bd_app_message(v->app, BD_MSG_INFO, "no suggestion for this record");
        return;
    }
    uint64_t seq = r->it->r->seq;
    open_prompt(v, &seq, 1);
    if (s->pstate != P_CHOOSE)
        return;
    s->kind = r->it->suggestion;
    s->pstate = P_NOTE; /* the reviewer's Enter gives it; Esc does not */
    if (!s->note_len) {
        snprintf(s->note, sizeof(s->note), "same as #%llu",
                 (unsigned long long)r->it->suggestion_seq);
        s->note_len = strlen(s->note);
    }
}

static bool key(bd_view *v, bd_action a, int ch)
{
    review_view *s = v->state;
    if (a == BD_A_INTERRUPT)
        return false; /* Ctrl-C quits whatever the prompt */
    if (s->pstate == P_SIGNING && !s->line.asking && a == BD_A_ESCAPE)
        return false; /* leaving: the signing job goes on, detached */
    if (s->pstate != P_NONE)
        return prompt_key(v, ch);
    if (bd_list_move(&s->list, a))
        return true;
    size_t row = bd_list_selected(&s->list);
    switch (a) {
    case BD_A_MARK_ROW:
        if (row != SIZE_MAX) {
            s->rows[row].marked = !s->rows[row].marked;
            s->anchor = s->rows[row].marked ? row : SIZE_MAX;
            if (s->list.cursor + 1 < s->list.n_vis)
                s->list.cursor++;
        }
        return true;
    case BD_A_MARK_RANGE:
        mark_range(v);
        return true;
    case BD_A_VERDICT:
        if (!s->loaded || s->job)
            bd_app_message(v->app, BD_MSG_INFO, "the queue is still being read");
        else
            verdict_prompt(v);
        return true;
    case BD_A_ACCEPT:
        accept_suggestion(v);
        return true;
    case BD_A_OPEN:
        if (row != SIZE_MAX && s->rows[row].it) {
            bd_result_arg arg = {{prov_count, prov_get, prov_follow, v}, s->list.cursor};
            bd_app_open(v->app, BD_VIEW_RESULT, &arg);
        }
        return true;
    case BD_A_FILTER:
        bd_view_filter_prompt(v, &s->list, rebuild);
        return true;
    default:
        return false;
    }
}

/* ---- the view -------------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    const bd_review_arg *ra = arg;
    if (!ra || !ra->task_class || !bd_name_valid(ra->task_class)) {
        bd_app_message(v->app, BD_MSG_WARN, "no task class to review");
        return -1;
    }
    review_view *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    snprintf(s->tc, sizeof(s->tc), "%s", ra->task_class);
    s->want_seq = ra->seq;
    s->want_prompt = ra->seq != 0;
    s->want_passed = ra->passed;
    snprintf(s->want_case, sizeof(s->want_case), "%s", ra->case_id ? ra->case_id : "");
    snprintf(s->want_run, sizeof(s->want_run), "%s", ra->run_id ? ra->run_id : "");
    s->anchor = SIZE_MAX;
    s->err = (bd_err)BD_ERR_INIT;
    bd_list_init(&s->list);
    /* The task class is on the view's first line: the hints keep their room at 80 columns. */
    snprintf(v->title, sizeof(v->title), "review");
    start_load(v);
    return 0;
}

static void close_view(bd_view *v)
{
    review_view *s = v->state;
    if (s->job)
        s->job->view = NULL; /* it frees itself when it reports */
    if (s->give) {
        s->give->view = NULL;
        bd_pass_detach(s->give->pass);
    }
    bd_pass_line_close(&s->line);
    bd_wipe(s->note, sizeof(s->note));
    free(s->targets);
    free(s->rows);
    bd_review_session_release(&s->rs);
    bd_list_release(&s->list);
    free(s);
}

static void event(bd_view *v, const bd_event *ev)
{
    (void)ev;
    bd_app_invalidate(v->app, BD_DIRTY_BODY);
}

static void position(bd_view *v, char *out, size_t cap)
{
    bd_view_list_position(&((review_view *)v->state)->list, out, cap);
}

static void where(bd_view *v, bd_view_where *out)
{
    review_view *s = v->state;
    snprintf(out->tc, sizeof(out->tc), "%s", s->tc);
    size_t row = bd_list_selected(&s->list);
    if (row != SIZE_MAX)
        out->cursor_seq = row_seq(s, &s->rows[row]);
}

static int reveal(bd_view *v, const bd_view_where *w)
{
    review_view *s = v->state;
    if (!s->loaded || s->job)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        if (row_seq(s, &s->rows[i]) == w->cursor_seq)
            return bd_list_select_row(&s->list, i) ? 1 : -1;
    return -1;
}

const bd_view_ops bd_view_review = {
    "review", actions, open_view, draw, key, event, NULL, NULL, position, close_view, where, reveal,
};
