/*
 * sign.c — the sign view (docs/provenance.md, docs/user-guide.md): the exact message to be signed,
 * the key to sign with (GPGME's secret keys), the role; Enter signs. The passphrase is asked by
 * benchdesk itself on a masked line (loopback, the default) or by gpg-agent's own
 * pinentry (`l` switches); the whole screen is repainted afterwards in case a pinentry
 * drew on the terminal. Then the case view below shows the new status.
 *
 * Everything GnuPG does — listing keys, preparing the message (which verifies the case
 * and, for a review, the author's signature), signing — runs on libuv's thread pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err_keys.h"
#include "fsutil.h"
#include "gitops.h"
#include "linediff.h"
#include "strbuf.h"
#include "text.h"
#include "model.h"
#include "passphrase.h"
#include "watch.h"
#include "sign.h"
#include "view_util.h"
#include "views/sign_view.h"

typedef struct sign_job sign_job;

typedef struct sign_view {
    bd_case_ref ref;     /* case_index SIZE_MAX: the task class itself is signed */
    char *case_id;       /* NULL when the subject is the task class */
    bool from_case_view; /* the case view of this case is below: reopen it after signing */
    /* keys */
    bd_sign_key *keys;
    size_t n_keys;
    uint8_t keys_state; /* bd_load_state */
    bd_err keys_err;
    bd_list list;
    /* role and the prepared message for (role, key) */
    int role;
    bool auto_role;  /* the role still missing is picked (until `t` chooses) */
    bool replace;    /* the signer agreed to replace a valid signature in the role */
    bool may_review; /* an author signature exists */
    uint8_t prep_state;
    bd_sign_result prep;
    bd_err prep_err;
    bd_err sign_err; /* why the last attempt to sign failed (BD_OK: none yet) */
    unsigned gen;    /* bumped whenever role or key changes: older answers are dropped */
    /* signing */
    bool loopback;
    sign_job *job; /* the prepare or sign job in flight (NULL once reported) */
    bool signing;
    bd_pass_line line; /* the masked passphrase line */
    /* a task class: registration.yaml and rubric.py against the last signed commit */
    struct diff_job *diff_job;
    char *diff_text;     /* the diff, terminal-safe, for the pager (D) */
    char diff_line[256]; /* the summary line ("" while it is made or without git) */
} sign_view;

typedef enum { JOB_KEYS, JOB_PREPARE, JOB_SIGN } job_kind;

struct sign_job {
    bd_work work;
    job_kind kind;
    bd_view *view; /* NULL once the view closed */
    unsigned gen;
    bd_tc_ref *ref;
    bd_prov_ctx *ctx;
    char *case_id;
    size_t tc_index;
    int role;
    bool auto_role; /* JOB_PREPARE: take the other role when this one is validly held */
    bool replace;
    char key[BD_FPR_LEN + 1];
    bd_pass *pass; /* loopback bridge (JOB_SIGN), or NULL: the agent asks */
    /* results */
    int rc;
    bd_err err;
    bd_sign_key *keys;
    size_t n_keys;
    bd_sign_result prep;
    /* after signing: what the case now claims and verifies to */
    int claim;
    int vrc;
    bd_prov_result vres;
};

static const bd_action actions[] = {BD_A_OPEN, BD_A_ROLE, BD_A_PINENTRY, BD_A_DIFF, BD_A_NONE};

/* ---- the diff of a task class against its last signed commit ------------------------ */

typedef struct diff_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    char *root, *dir, *name;
    char *text;
    char line[256];
} diff_job;

/* One file's diff into `b` (terminal-safe lines marked -, + or a space); counts added and
 * removed lines. */
static void diff_file(bd_strbuf *b, const char *label, const char *old, size_t olen,
                      const char *now, size_t nlen, size_t *add, size_t *del)
{
    bd_diff_line *d = NULL;
    size_t n = 0;
    *add = *del = 0;
    bd_strbuf_str(b, "=== ");
    bd_strbuf_str(b, label);
    bd_strbuf_str(b, "\n");
    if (bd_line_diff(&d, &n, old ? old : "", olen, now ? now : "", nlen, NULL) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        *add += d[i].op == BD_DIFF_ADD;
        *del += d[i].op == BD_DIFF_DEL;
        bd_strbuf_str(b, d[i].op == BD_DIFF_ADD ? "+ " : d[i].op == BD_DIFF_DEL ? "- " : "  ");
        bd_text_vis_into(b, d[i].text, d[i].len, BD_TEXT_KEEP_TAB);
        bd_strbuf_str(b, "\n");
    }
    free(d);
}

static void diff_run(bd_work *w)
{
    diff_job *j = (diff_job *)w;
    bd_git *g = NULL;
    bd_signed_texts st;
    memset(&st, 0, sizeof(st));
    bd_err e = BD_ERR_INIT;
    if (bd_git_open(&g, j->root, &e) < 0 || bd_git_last_signed(g, j->name, &st, &e) != 0) {
        snprintf(j->line, sizeof(j->line), "no signed commit of it in git to diff against");
        bd_git_close(g);
        return;
    }
    const char *files[2] = {"registration.yaml", "rubric.py"};
    const char *old[2] = {st.registration, st.rubric};
    size_t olen[2] = {st.registration_len, st.rubric_len}, add[2], del[2];
    bd_strbuf b = BD_STRBUF_INIT;
    bd_strbuf_str(&b, "changes since the last signed commit ");
    bd_strbuf_str(&b, st.commit);
    bd_strbuf_str(&b, "\n\n");
    for (int k = 0; k < 2; k++) {
        char p[4400], *now = NULL;
        size_t nlen = 0;
        snprintf(p, sizeof(p), "%s/%s", j->dir, files[k]);
        (void)bd_read_file(&now, &nlen, p, 1u << 20, BD_E_IO, NULL);
        diff_file(&b, files[k], old[k], olen[k], now, nlen, &add[k], &del[k]);
        free(now);
    }
    j->text = bd_strbuf_take(&b);
    snprintf(j->line, sizeof(j->line),
             "since signed commit %.7s: registration.yaml +%zu -%zu, rubric.py +%zu -%zu   "
             "(D: read the diff)",
             st.commit, add[0], del[0], add[1], del[1]);
    bd_signed_texts_release(&st);
    bd_git_close(g);
}

static void diff_done(bd_work *w, bool ran)
{
    diff_job *j = (diff_job *)w;
    if (j->view && ran) {
        sign_view *s = j->view->state;
        s->diff_job = NULL;
        s->diff_text = j->text;
        j->text = NULL;
        snprintf(s->diff_line, sizeof(s->diff_line), "%s", j->line);
        bd_app_invalidate(j->view->app, BD_DIRTY_BODY);
    } else if (j->view) {
        ((sign_view *)j->view->state)->diff_job = NULL;
    }
    free(j->root);
    free(j->dir);
    free(j->name);
    free(j->text);
    free(j);
}

static void start_diff(bd_view *v, const bd_task_class *tc)
{
    sign_view *s = v->state;
    diff_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root)) || !(j->dir = strdup(tc->dir)) ||
        !(j->name = strdup(tc->name))) {
        if (j) {
            free(j->root);
            free(j->dir);
            free(j);
        }
        return;
    }
    j->view = v;
    j->work.run = diff_run;
    j->work.done = diff_done;
    if (bd_work_queue(v->app, &j->work) < 0) {
        free(j->root);
        free(j->dir);
        free(j->name);
        free(j);
        return;
    }
    s->diff_job = j;
}

static void job_free(sign_job *j)
{
    if (j->ref)
        bd_model_tc_release(j->ref);
    bd_pass_free(j->pass);
    free(j->keys);
    bd_sign_result_release(&j->prep);
    free(j->case_id);
    free(j);
}

/* ---- pool work ---------------------------------------------------------------------- */

static void job_run(bd_work *w)
{
    sign_job *j = (sign_job *)w;
    bd_sign_opts opts = BD_SIGN_OPTS_INIT;
    opts.key = j->key[0] ? j->key : NULL;
    j->rc = -1;
    switch (j->kind) {
    case JOB_KEYS:
        j->rc = bd_sign_list_keys(&j->keys, &j->n_keys, NULL, &j->err);
        break;
    case JOB_PREPARE:
        opts.replace = j->replace;
        j->rc = bd_sign_prepare(&j->prep, j->ctx, j->ref->tc, j->case_id, j->role, &opts, &j->err);
        if (j->rc < 0 && j->auto_role && j->err.code == BD_E_PROVENANCE_SIGNED_ALREADY) {
            /* The role is validly held: the one still missing is what is wanted. */
            int other = j->role == BD_ROLE_AUTHOR ? BD_ROLE_REVIEWER : BD_ROLE_AUTHOR;
            bd_sign_result alt;
            bd_err e2 = BD_ERR_INIT;
            if (bd_sign_prepare(&alt, j->ctx, j->ref->tc, j->case_id, other, &opts, &e2) == 0) {
                bd_sign_result_release(&j->prep);
                j->prep = alt;
                j->role = other;
                j->rc = 0;
                j->err = (bd_err)BD_ERR_INIT;
            } else {
                bd_sign_result_release(&alt);
            }
        }
        break;
    case JOB_SIGN: {
        opts.replace = j->replace;
        if (j->pass) {
            opts.passphrase = bd_pass_cb;
            opts.payload = j->pass;
        }
        j->rc = bd_sign_prepared(&j->prep, j->ref->tc, &opts, &j->err);
        if (j->rc < 0)
            break;
        /* What the subject is now, for the model's row. */
        const bd_task_class *tc = j->ref->tc;
        bd_provfile *pf = NULL;
        bd_err e = BD_ERR_INIT;
        j->vrc = -1;
        int lrc = j->case_id ? bd_task_class_case_prov(&pf, tc, j->case_id, &e)
                             : bd_provfile_load(&pf, tc->prov_path, &e);
        if (lrc == 0) {
            j->claim = (int)bd_prov_claim_of(pf);
            bd_subject sj = {j->case_id ? BD_SUBJECT_CASE : BD_SUBJECT_TASK_CLASS,
                             tc->name,
                             j->case_id,
                             j->prep.digest,
                             j->prep.digest,
                             pf};
            if (j->ctx)
                j->vrc = bd_provenance_verify(&j->vres, j->ctx, &sj, &e);
            bd_provfile_free(pf);
        }
        break;
    }
    }
}

static void start_prepare(bd_view *v);

/* The model's row of the signed case, as its own jobs would have left it. */
static void update_model(bd_app *app, sign_job *j)
{
    bd_model *m = app->model;
    if (j->tc_index >= m->n_tcs)
        return;
    if (!j->case_id) {
        bd_ui_tc *t = &m->tcs[j->tc_index];
        if (j->vrc >= 0) {
            t->tc_prov_check = BD_LOAD_DONE;
            t->tc_prov_status = (uint8_t)j->vres.status;
            t->tc_prov_code = j->vres.err.code;
        }
        bd_event ev = {.kind = BD_EV_MODEL, .tc_index = j->tc_index, .case_index = SIZE_MAX};
        bd_app_broadcast(app, &ev);
        return;
    }
    size_t ci = bd_model_find_case(m, j->tc_index, j->case_id);
    if (ci == SIZE_MAX)
        return;
    bd_ui_tc *t = &m->tcs[j->tc_index];
    bd_ui_case *c = &t->cases[ci];
    if (c->meta == BD_LOAD_DONE && j->claim >= 0 && j->claim < 3) {
        if (c->prov < 3 && t->prov[c->prov])
            t->prov[c->prov]--;
        c->prov = (uint8_t)j->claim;
        t->prov[c->prov]++;
    }
    if (c->digest != BD_LOAD_PENDING && j->vrc >= 0) {
        if (c->prov_check == BD_LOAD_DONE) {
            if (t->prov_checked)
                t->prov_checked--;
            if (c->prov_status < 4 && t->pstat[c->prov_status])
                t->pstat[c->prov_status]--;
            if (c->prov_status == BD_PROV_ST_BAD && t->prov_bad)
                t->prov_bad--;
        }
        c->prov_check = BD_LOAD_DONE;
        c->prov_status = (uint8_t)j->vres.status;
        c->prov_code = j->vres.err.code;
        t->prov_checked++;
        if (c->prov_status < 4)
            t->pstat[c->prov_status]++;
        if (c->prov_status == BD_PROV_ST_BAD)
            t->prov_bad++;
    }
    bd_event ev = {.kind = BD_EV_MODEL, .tc_index = j->tc_index, .case_index = ci};
    bd_app_broadcast(app, &ev);
}

static void sign_finished(bd_app *app, bd_view *v, sign_job *j, bool ran)
{
    /* An external pinentry may have drawn on the terminal: forget what it shows. Keys
     * typed while GnuPG worked were meant for it (a passphrase the agent did not ask
     * for): the view swallowed those it read, and what is still unread is dropped here,
     * never taken as commands by the view below. */
    bd_app_redraw_all(app);
    bd_app_discard_keys(app, 0);
    if (!ran) {
        if (v)
            bd_app_message(app, BD_MSG_WARN, "signing cancelled");
        return;
    }
    if (j->rc < 0) {
        if (v) {
            /* The message is still the one shown: keep it, so Enter tries again (a
             * mistyped passphrase), and say why this attempt failed. */
            sign_view *s = v->state;
            if (j->gen == s->gen && j->prep.message) {
                bd_sign_result_release(&s->prep);
                s->prep = j->prep;
                memset(&j->prep, 0, sizeof(j->prep));
                s->prep_state = BD_LOAD_DONE;
            } else {
                start_prepare(v);
            }
            s->sign_err = j->err;
            /* The view shows the reason whole above its Enter line; on top, the message
             * goes to the log only, so nothing covers that line. */
            if (app->top == v)
                bd_app_log_error(app, &j->err);
            else
                bd_app_error(app, &j->err);
        }
        return;
    }
    update_model(app, j);
    /* Our own write: the watch re-reads the bench but keeps this message (watch.h). */
    bd_watch_touch(app->watch);
    const char *st = j->vrc < 0   ? "signed (not verified)"
                     : j->vrc > 0 ? "BAD"
                                  : bd_prov_status_str(j->vres.status);
    bd_app_message(app, j->vrc == 0 ? BD_MSG_INFO : BD_MSG_WARN,
                   "signed %s%s as %s with %s: now %s", j->case_id ? "" : "task class ",
                   j->case_id ? j->case_id : j->prep.task_class, bd_provenance_role_str(j->role),
                   j->prep.key.identity, st);
    if (!v)
        return;
    sign_view *s = v->state;
    bool reopen = s->from_case_view;
    bd_case_ref ref = s->ref;
    if (app->top != v)
        return; /* something opened over us: leave the stack alone */
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", app->msg);
    bd_app_pop(app);
    if (reopen && app->top && bd_view_is(app->top, BD_VIEW_CASE) && app->top->below) {
        /* The case view read case.yaml when it opened: open it again to show the
         * signature just written, verified. */
        bd_app_pop(app);
        bd_app_open(app, BD_VIEW_CASE, &ref);
    }
    bd_app_message(app, j->vrc == 0 ? BD_MSG_INFO : BD_MSG_WARN, "%s", msg);
}

static void job_done(bd_work *w, bool ran)
{
    sign_job *j = (sign_job *)w;
    bd_view *v = j->view;
    bd_app *app = j->work.app;
    if (app->quitting)
        goto out;
    if (v) {
        sign_view *s = v->state;
        s->job = NULL;
        bd_pass_line_close(&s->line);
    }
    switch (j->kind) {
    case JOB_KEYS:
        if (!v)
            break;
        {
            sign_view *s = v->state;
            if (!ran || j->rc < 0) {
                s->keys_state = BD_LOAD_FAILED;
                s->prep_state = BD_LOAD_FAILED;
                s->keys_err = j->err;
                if (!ran)
                    bd_err_set(&s->keys_err, BD_E_RUN_CANCELLED, NULL, 0, 0, "cancelled");
                break;
            }
            s->keys = j->keys;
            s->n_keys = j->n_keys;
            j->keys = NULL;
            s->keys_state = BD_LOAD_DONE;
            bd_list_rebuild(&s->list, s->n_keys, NULL, NULL, NULL);
            /* The configured signing key first, else GnuPG's default (listed first). */
            const char *want = app->config.signing_key;
            for (size_t i = 0; want && i < s->n_keys; i++)
                if (strcasecmp(s->keys[i].fingerprint, want) == 0)
                    bd_list_select_row(&s->list, i);
            start_prepare(v);
        }
        break;
    case JOB_PREPARE:
        if (!v)
            break;
        {
            sign_view *s = v->state;
            if (j->gen != s->gen) {
                start_prepare(v); /* role or key changed meanwhile */
                break;
            }
            bd_sign_result_release(&s->prep);
            s->prep = j->prep;
            memset(&j->prep, 0, sizeof(j->prep));
            s->prep_err = j->err;
            s->prep_state = ran && j->rc == 0 ? BD_LOAD_DONE : BD_LOAD_FAILED;
            if (ran && j->rc == 0)
                s->role = j->role; /* the role still missing, when it was picked */
            if (!ran)
                bd_err_set(&s->prep_err, BD_E_RUN_CANCELLED, NULL, 0, 0, "cancelled");
        }
        break;
    case JOB_SIGN:
        if (v)
            ((sign_view *)v->state)->signing = false;
        sign_finished(app, v, j, ran);
        break;
    }
    bd_app_invalidate(app, BD_DIRTY_ALL);
out:
    job_free(j);
}

static sign_job *new_job(bd_view *v, job_kind kind)
{
    sign_view *s = v->state;
    sign_job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->kind = kind;
    j->view = v;
    j->gen = s->gen;
    j->role = s->role;
    j->auto_role = s->auto_role;
    j->replace = s->replace;
    j->tc_index = s->ref.tc_index;
    j->ctx = v->app->model->prov;
    j->claim = -1;
    j->work.run = job_run;
    j->work.done = job_done;
    if (kind != JOB_KEYS) {
        if ((s->case_id && !(j->case_id = strdup(s->case_id))) ||
            !(j->ref = bd_model_tc_hold(v->app->model, s->ref.tc_index))) {
            job_free(j);
            return NULL;
        }
        size_t k = bd_list_selected(&s->list);
        if (k < s->n_keys)
            snprintf(j->key, sizeof(j->key), "%s", s->keys[k].fingerprint);
    }
    return j;
}

static bool queue(bd_view *v, sign_job *j)
{
    sign_view *s = v->state;
    if (!bd_view_queue_work(v->app, j ? &j->work : NULL, "GnuPG work")) {
        if (j)
            job_free(j);
        return false;
    }
    s->job = j;
    return true;
}

static void start_prepare(bd_view *v)
{
    sign_view *s = v->state;
    s->prep_state = BD_LOAD_PENDING;
    if (s->job)
        return; /* the job in flight restarts it when it reports (gen differs) */
    if (!v->app->model->prov) {
        s->prep_state = BD_LOAD_FAILED;
        s->prep_err = v->app->model->prov_err;
        return;
    }
    if (s->keys_state != BD_LOAD_DONE || !s->n_keys) {
        s->prep_state = BD_LOAD_FAILED;
        return;
    }
    queue(v, new_job(v, JOB_PREPARE));
}

/* ---- the passphrase line ------------------------------------------------------------ */

static void ask(void *owner, const char *hint, bool bad_before)
{
    bd_view *v = owner;
    sign_view *s = v->state;
    bd_pass_line_ask(&s->line, hint, bad_before);
    bd_app_invalidate(v->app, BD_DIRTY_ALL);
}

static void pass_key(bd_view *v, int ch)
{
    sign_view *s = v->state;
    bd_pass_line_key(&s->line, s->job ? s->job->pass : NULL, ch);
}

/* ---- the view ----------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    const bd_case_ref *ref = arg;
    bd_model *m = v->app->model;
    const bd_task_class *tc = bd_model_tc(m, ref->tc_index);
    bool whole = ref->case_index == SIZE_MAX;
    if (!tc || (!whole && ref->case_index >= m->tcs[ref->tc_index].n_cases)) {
        bd_app_message(v->app, BD_MSG_WARN, "the task class is still loading");
        return -1;
    }
    const char *name = whole ? tc->name : m->tcs[ref->tc_index].cases[ref->case_index].id;
    if (!whole && m->tcs[ref->tc_index].cases[ref->case_index].meta == BD_LOAD_FAILED) {
        bd_app_message(v->app, BD_MSG_WARN, "%s: case.yaml is unreadable", name);
        return -1;
    }
    /* The role still missing comes from the signatures as they are on disk now, not from
     * the model's row: the row may still be loading (a re-read of the bench just began)
     * or be older than a signature made since. One small file, read here. */
    bd_provfile *pf = NULL;
    bd_err e = BD_ERR_INIT;
    int rc = whole ? bd_provfile_load(&pf, tc->prov_path, &e)
                   : bd_task_class_case_prov(&pf, tc, name, &e);
    if (rc < 0) {
        bd_app_error(v->app, &e);
        return -1;
    }
    int claim = (int)bd_prov_claim_of(pf);
    bd_provfile_free(pf);
    sign_view *s = calloc(1, sizeof(*s));
    if (!s || (!whole && !(s->case_id = strdup(name)))) {
        free(s);
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    s->ref = *ref;
    s->from_case_view = !whole && v->below && bd_view_is(v->below, BD_VIEW_CASE);
    s->may_review = claim != BD_PROV_DRAFT;
    s->role = claim == BD_PROV_AUTHORED ? BD_ROLE_REVIEWER : BD_ROLE_AUTHOR;
    s->auto_role = true;
    s->loopback = true;
    s->keys_state = s->prep_state = BD_LOAD_PENDING;
    bd_list_init(&s->list);
    snprintf(v->title, sizeof(v->title), "sign %s%s", whole ? "task class " : "", name);
    queue(v, new_job(v, JOB_KEYS));
    if (whole)
        start_diff(v, tc);
    return 0;
}

static void close_view(bd_view *v)
{
    sign_view *s = v->state;
    if (s->job) {
        s->job->view = NULL; /* it frees itself when it reports */
        bd_pass_detach(s->job->pass);
    }
    bd_pass_line_close(&s->line);
    if (s->diff_job)
        s->diff_job->view = NULL; /* it frees itself when it reports */
    free(s->diff_text);
    free(s->keys);
    bd_sign_result_release(&s->prep);
    bd_list_release(&s->list);
    free(s->case_id);
    free(s);
}

static int label(WINDOW *w, int y, const char *l)
{
    bd_draw_text(w, y, 1, 12, l, A_BOLD, false);
    return 13;
}

/* The message to be signed from row y (or what stands in for it: preparing, or why it
 * could not be prepared); returns the row after it. */
static int draw_message(bd_view *v, WINDOW *w, int y)
{
    sign_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    char buf[1024];
    if (s->prep_state == BD_LOAD_DONE && s->prep.message) {
        const char *p = s->prep.message;
        while (*p && y < rows - 1) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            bd_draw_textn(w, y++, 2, cols - 2, p, len, bd_role_attr(BD_R_DIFF_CTX), false);
            p += len + (nl ? 1 : 0);
        }
    } else if (s->prep_state == BD_LOAD_PENDING) {
        snprintf(buf, sizeof(buf), "%s preparing (verifying the case against its pin)",
                 bd_app_spinner(v->app));
        bd_draw_text(w, y++, 2, cols - 2, buf, bd_role_attr(BD_R_MUTED), false);
    } else {
        const bd_err *e = s->keys_state == BD_LOAD_FAILED ? &s->keys_err : &s->prep_err;
        if (s->keys_state == BD_LOAD_DONE && !s->n_keys)
            snprintf(buf, sizeof(buf),
                     "%s no secret key that can sign in your keyring (GNUPGHOME); create or "
                     "import one",
                     bd_gl->bad);
        else
            snprintf(buf, sizeof(buf), "%s %s: %s", bd_gl->bad, bd_code_str(e->code),
                     bd_tui_err_text(e));
        int h = 0;
        size_t len = strlen(buf), off = 0;
        while (off < len && h < 4 && y < rows - 1) {
            size_t n = bd_wrap_next(buf + off, len - off, cols - 3);
            bd_draw_textn(w, y++, 2, cols - 2, buf + off, n, bd_role_attr(BD_R_FAIL), false);
            off += n;
            while (off < len && buf[off] == ' ')
                off++;
            h++;
        }
    }
    return y;
}

/* The secret keys to sign with, as a list from row y down to the last line but one. */
static void draw_keys(bd_view *v, WINDOW *w, int y)
{
    sign_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    char buf[1024];
    int list_h = rows - y - 2;
    if (list_h < 1)
        list_h = 1;
    if (s->keys_state == BD_LOAD_PENDING) {
        snprintf(buf, sizeof(buf), "%s listing your secret keys", bd_app_spinner(v->app));
        bd_draw_text(w, y, 2, cols - 2, buf, bd_role_attr(BD_R_MUTED), false);
    } else {
        bd_list_scroll(&s->list, list_h);
        for (size_t i = s->list.top; i < s->list.n_vis && (int)(i - s->list.top) < list_h; i++) {
            size_t k = s->list.vis[i];
            bool sel = i == s->list.cursor;
            attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
            int ly = y + (int)(i - s->list.top);
            bd_draw_text(w, ly, 0, cols, "", base, true);
            snprintf(buf, sizeof(buf), "%s %s  %s%s", sel ? bd_gl->arrow : " ",
                     s->keys[k].fingerprint, s->keys[k].uid,
                     s->keys[k].is_default ? "  (default)" : "");
            bd_draw_text(w, ly, 1, cols - 1, buf, base, false);
        }
    }
}

/* The last line: what Enter does, the passphrase line, or signing; a signing error
 * wrapped above it (not above row y). */
static void draw_footer(bd_view *v, WINDOW *w, int y)
{
    sign_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    char buf[1024];
    /* The last line: what Enter does, or the passphrase line. */
    int ly = rows - 1;
    if (s->line.asking) {
        bd_pass_line_draw(&s->line, w, ly);
    } else if (s->signing) {
        snprintf(buf, sizeof(buf), "%s signing%s", bd_app_spinner(v->app),
                 s->loopback ? "" : " (gpg-agent may ask for the passphrase)");
        bd_draw_text(w, ly, 1, cols - 1, buf, bd_role_attr(BD_R_MUTED), false);
    } else if (s->prep_state == BD_LOAD_FAILED &&
               s->prep_err.code == BD_E_PROVENANCE_SIGNED_ALREADY) {
        snprintf(buf, sizeof(buf),
                 "Enter: replace that %s signature (asks first)   t: the other role",
                 bd_provenance_role_str(s->role));
        bd_draw_text(w, ly, 1, cols - 1, buf, bd_role_attr(BD_R_WARN) | A_BOLD, false);
    } else if (s->prep_state == BD_LOAD_DONE) {
        if (s->sign_err.code != BD_OK && ly - 1 > y) {
            snprintf(buf, sizeof(buf), "%s %s: %s", bd_gl->bad, bd_code_str(s->sign_err.code),
                     bd_tui_err_text(&s->sign_err));
            int h = bd_wrap_count(buf, cols - 2);
            if (h > ly - y)
                h = ly - y;
            bd_draw_wrapped(w, ly - h, 1, cols - 2, h, buf, bd_role_attr(BD_R_FAIL));
        }
        snprintf(buf, sizeof(buf), "Enter: sign %s as %s with %s%s",
                 s->case_id ? s->case_id : "the task class", bd_provenance_role_str(s->role),
                 s->prep.key.identity,
                 s->prep.replaces[0] && s->prep.replaces_valid ? " (replacing a valid one)" : "");
        bd_draw_text(w, ly, 1, cols - 1, buf, bd_role_attr(BD_R_OK) | A_BOLD, false);
    }
}

static void draw(bd_view *v, WINDOW *w)
{
    sign_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    char buf[1024];
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    snprintf(buf, sizeof(buf), " sign as %s ", bd_provenance_role_str(s->role));
    int rx = bd_draw_right(w, 0, cols, buf, bd_role_attr(BD_R_TITLE));
    snprintf(buf, sizeof(buf), "%s / %s", v->app->model->tcs[s->ref.tc_index].name,
             s->case_id ? s->case_id : "(the task class: registration.yaml + rubric.py)");
    bd_draw_text(w, 0, 1, rx - 2, buf, bd_role_attr(BD_R_TITLE), false);

    int y = 1;
    int x = label(w, y, "role");
    snprintf(buf, sizeof(buf), "%s", bd_provenance_role_str(s->role));
    x += bd_draw_text(w, y, x, cols - x, buf, A_BOLD, false);
    bd_draw_text(w, y, x, cols - x,
                 s->may_review ? "   (t: author / reviewer)"
                               : "   (reviewer needs an author signature first)",
                 bd_role_attr(BD_R_MUTED), false);
    y++;
    x = label(w, y, "passphrase");
    bd_draw_text(w, y, x, cols - x,
                 s->loopback ? "asked here, masked (loopback)   (l: gpg-agent's pinentry)"
                             : "gpg-agent's pinentry   (l: ask here instead)",
                 A_NORMAL, false);
    y++;
    if (s->diff_line[0]) {
        x = label(w, y, "change");
        bd_draw_text(w, y, x, cols - x, s->diff_line, A_NORMAL, false);
        y++;
    }
    bd_draw_rule(w, ++y, "message to be signed (exact bytes, every line ends in \\n)",
                 bd_role_attr(BD_R_MUTED));
    y++;
    y = draw_message(v, w, y);
    y++;
    if (y >= rows - 1)
        return;
    bd_draw_rule(w, y++, "key to sign with (your secret keys)", bd_role_attr(BD_R_MUTED));
    draw_keys(v, w, y);
    draw_footer(v, w, y);
}

/* The signer said yes to replacing a valid signature: prepare again, replacing. */
static void replace_yes(bd_app *app)
{
    bd_view *v = app->top;
    if (!v || !bd_view_is(v, BD_VIEW_SIGN))
        return;
    sign_view *s = v->state;
    s->replace = true;
    s->auto_role = false;
    s->gen++;
    start_prepare(v);
    bd_app_message(app, BD_MSG_INFO, "Enter signs, replacing the %s signature",
                   bd_provenance_role_str(s->role));
}

static void start_sign(bd_view *v)
{
    sign_view *s = v->state;
    if (s->signing || s->job) {
        bd_app_message(v->app, BD_MSG_WARN, "wait: GnuPG is still working");
        return;
    }
    if (s->prep_state == BD_LOAD_FAILED && s->prep_err.code == BD_E_PROVENANCE_SIGNED_ALREADY) {
        char q[600];
        snprintf(q, sizeof(q), "replace the valid %s signature by %s? y/N",
                 bd_provenance_role_str(s->role),
                 s->prep.replaces[0] ? s->prep.replaces : "another signer");
        bd_app_confirm(v->app, q, replace_yes);
        return;
    }
    if (s->prep_state != BD_LOAD_DONE) {
        bd_app_message(v->app, BD_MSG_WARN, "nothing to sign: %s",
                       s->prep_state == BD_LOAD_PENDING ? "still preparing"
                                                        : "the message could not be prepared");
        return;
    }
    sign_job *j = new_job(v, JOB_SIGN);
    if (!j) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return;
    }
    if (s->loopback && bd_pass_new(&j->pass, v->app, ask, v) < 0) {
        job_free(j);
        bd_app_message(v->app, BD_MSG_ERROR, "env.error: cannot set up the passphrase prompt");
        return;
    }
    /* The prepared message goes with the job: it is what the user saw. */
    j->prep = s->prep;
    memset(&s->prep, 0, sizeof(s->prep));
    s->prep_state = BD_LOAD_PENDING;
    if (queue(v, j))
        s->signing = true;
    else
        start_prepare(v);
}

static bool key(bd_view *v, bd_action a, int ch)
{
    sign_view *s = v->state;
    if (s->line.asking) {
        pass_key(v, ch);
        return true;
    }
    if (s->signing) {
        /* Keys typed while GnuPG signs are meant for it (a passphrase typed for an agent
         * that does not ask): discarded, never commands. Esc still leaves (no passphrase
         * holds it), Ctrl-C still quits. */
        if (a == BD_A_ESCAPE)
            return false;
        return true;
    }
    if (bd_list_move(&s->list, a)) {
        s->gen++;
        start_prepare(v);
        return true;
    }
    switch (a) {
    case BD_A_OPEN:
        start_sign(v);
        return true;
    case BD_A_ROLE:
        if (!s->may_review) {
            bd_app_message(v->app, BD_MSG_WARN,
                           "provenance.missing: %s has no author signature; sign it as author "
                           "first",
                           s->case_id ? s->case_id : "the task class");
            return true;
        }
        s->role = s->role == BD_ROLE_AUTHOR ? BD_ROLE_REVIEWER : BD_ROLE_AUTHOR;
        s->auto_role = false; /* chosen: never switched behind the signer's back */
        s->replace = false;
        s->gen++;
        start_prepare(v);
        return true;
    case BD_A_PINENTRY:
        s->loopback = !s->loopback;
        return true;
    case BD_A_DIFF:
        if (s->diff_text) {
            bd_err e = BD_ERR_INIT;
            if (bd_app_foreground_viewer(v->app, s->diff_text, strlen(s->diff_text), "signed-diff",
                                         &e) < 0)
                bd_app_error(v->app, &e);
        } else {
            bd_app_message(v->app, BD_MSG_INFO, "%s",
                           s->diff_line[0] ? s->diff_line : "the diff is still being made");
        }
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    (void)ev;
    bd_app_invalidate(v->app, BD_DIRTY_BODY);
}

static void position(bd_view *v, char *out, size_t cap)
{
    sign_view *s = v->state;
    if (s->keys_state == BD_LOAD_DONE)
        snprintf(out, cap, "key %zu/%zu", s->n_keys ? s->list.cursor + 1 : 0, s->n_keys);
    else
        out[0] = '\0';
}

static void where(bd_view *v, bd_view_where *out)
{
    sign_view *s = v->state;
    snprintf(out->tc, sizeof(out->tc), "%s", v->app->model->tcs[s->ref.tc_index].name);
    snprintf(out->case_id, sizeof(out->case_id), "%s", s->case_id ? s->case_id : "");
}

const bd_view_ops bd_view_sign = {
    "sign", actions, open_view, draw, key, event, NULL, NULL, position, close_view, where, NULL,
};
