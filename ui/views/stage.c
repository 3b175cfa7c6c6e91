/*
 * stage.c — the stage view (docs/provenance.md#staging-and-committing, docs/user-guide.md), like
 * tig's status view: what changed under bench/ and audit/, staged, unstaged and untracked; `u`
 * stages or unstages the selected path (on a heading: every path under it); `C` opens a small
 * commit message editor with a sign toggle, Enter commits. Refusals (git.no_identity,
 * case.digest_mismatch, git.nothing_to_commit, ...) show in the status line with their
 * code.
 *
 * Every libgit2 call runs on libuv's thread pool; each job opens its own bd_git (one per
 * thread) and reads the status again before it reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit_check.h"
#include "err_keys.h"
#include "gitops.h"
#include "model.h"
#include "passphrase.h"
#include "view_util.h"
#include "views/stage_view.h"

#define MSG_CAP 4096

typedef enum { SEC_STAGED, SEC_UNSTAGED, SEC_UNTRACKED, SEC_VERDICTS, SEC__COUNT } section;
static const char *const sec_title[SEC__COUNT] = {
    "Changes to be committed:", "Changes not staged for commit:", "Untracked files:",
    "Verdict files (audit/verdicts/, staged or not):"};

/* Reviewers' verdict files have a section of their own (docs/provenance.md#verdicts): a
 * deleted one is flagged (docs/security.md#a-deleted-verdict-file). */
static bool is_verdict(const bd_git_entry *e)
{
    return strncmp(e->path, "audit/verdicts/", 15) == 0;
}

static bool verdict_staged(const bd_git_entry *e)
{
    return e->staged && !e->unstaged && !e->untracked;
}

typedef enum { ROW_HEADING, ROW_NONE, ROW_ENTRY } row_kind;

typedef struct row {
    row_kind kind;
    section sec;
    size_t entry; /* index into status.entries (ROW_ENTRY) */
} row;

typedef enum { JOB_STATUS, JOB_STAGE, JOB_UNSTAGE, JOB_COMMIT } job_kind;

typedef struct git_job git_job;

typedef struct stage_view {
    bd_git_status st;
    bool loaded;
    bd_err status_err; /* why the status could not be read (shown until it can) */
    row *rows;
    size_t n_rows;
    bd_list list;
    git_job *job;
    /* the commit message editor */
    bool editing;
    bool sign;
    char msg[MSG_CAP];
    size_t msg_len;
    bd_pass_line line; /* the masked passphrase line of a signed commit */
} stage_view;

struct git_job {
    bd_work work;
    job_kind kind;
    bd_view *view; /* NULL once the view closed */
    char *root;
    char **paths;
    size_t n_paths;
    char *message;
    bool sign;
    char key[BD_FPR_LEN + 1];
    bd_pass *pass;
    /* results */
    int rc;        /* of the action */
    bd_err err;    /* of the action */
    int status_rc; /* of reading the status afterwards */
    bd_err status_err;
    bd_git_status st;
    size_t n_changed;
    bd_commit_result commit;
};

static const bd_action actions[] = {BD_A_STAGE_TOGGLE, BD_A_COMMIT, BD_A_RELOAD, BD_A_NONE};

static void job_free(git_job *j)
{
    for (size_t i = 0; i < j->n_paths; i++)
        free(j->paths[i]);
    free(j->paths);
    free(j->message);
    free(j->root);
    bd_pass_free(j->pass);
    bd_git_status_release(&j->st);
    free(j);
}

/* ---- rows --------------------------------------------------------------------------- */

static bool in_section(const bd_git_entry *e, section sec)
{
    if (is_verdict(e) != (sec == SEC_VERDICTS))
        return false;
    switch (sec) {
    case SEC_VERDICTS:
        return true;
    case SEC_STAGED:
        return e->staged != 0 || e->conflicted;
    case SEC_UNSTAGED:
        return e->unstaged != 0 && !e->untracked;
    default:
        return e->untracked;
    }
}

static void build_rows(bd_view *v)
{
    stage_view *s = v->state;
    free(s->rows);
    s->n_rows = 0;
    s->rows = calloc(s->st.n * 3 + SEC__COUNT * 2, sizeof(*s->rows));
    if (!s->rows) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory: cannot list the changes");
        bd_list_rebuild(&s->list, 0, NULL, NULL, NULL);
        return;
    }
    for (int sec = 0; sec < SEC__COUNT; sec++) {
        s->rows[s->n_rows++] = (row){ROW_HEADING, (section)sec, 0};
        size_t before = s->n_rows;
        for (size_t i = 0; i < s->st.n; i++)
            if (in_section(&s->st.entries[i], (section)sec))
                s->rows[s->n_rows++] = (row){ROW_ENTRY, (section)sec, i};
        if (s->n_rows == before)
            s->rows[s->n_rows++] = (row){ROW_NONE, (section)sec, 0};
    }
    size_t keep = s->list.cursor;
    bool first = !s->loaded;
    bd_list_rebuild(&s->list, s->n_rows, NULL, NULL, NULL);
    if (first) {
        for (size_t r = 0; r < s->n_rows; r++)
            if (s->rows[r].kind == ROW_ENTRY) {
                bd_list_select_row(&s->list, r);
                break;
            }
    } else {
        s->list.cursor = keep < s->list.n_vis ? keep : (s->list.n_vis ? s->list.n_vis - 1 : 0);
    }
}

/* ---- pool work ---------------------------------------------------------------------- */

static void job_run(bd_work *w)
{
    git_job *j = (git_job *)w;
    bd_git *g = NULL;
    j->rc = 0;
    if (bd_git_open(&g, j->root, &j->err) < 0) {
        j->rc = -1;
        j->status_rc = -1;
        j->status_err = j->err;
        return;
    }
    switch (j->kind) {
    case JOB_STAGE:
        j->rc = bd_git_stage(g, (const char *const *)j->paths, j->n_paths, &j->n_changed, &j->err);
        break;
    case JOB_UNSTAGE:
        j->rc = bd_git_unstage(g, (const char *const *)j->paths, j->n_paths, &j->err);
        break;
    case JOB_COMMIT: {
        bd_commit_opts o = BD_COMMIT_OPTS_INIT;
        o.message = j->message;
        o.sign = j->sign;
        o.sign_opts.key = j->key[0] ? j->key : NULL;
        if (j->pass) {
            o.sign_opts.passphrase = bd_pass_cb;
            o.sign_opts.payload = j->pass;
        }
        j->rc = bd_git_commit(&j->commit, g, &o, &j->err);
        break;
    }
    default:
        break;
    }
    j->status_rc = bd_git_status_get(&j->st, g, &j->status_err);
    bd_git_close(g);
}

static void job_done(bd_work *w, bool ran)
{
    git_job *j = (git_job *)w;
    bd_view *v = j->view;
    bd_app *app = j->work.app;
    if (app->quitting || !v)
        goto out;
    stage_view *s = v->state;
    s->job = NULL;
    bd_pass_line_close(&s->line);
    if (j->kind == JOB_COMMIT)
        bd_app_redraw_all(app); /* an external pinentry may have drawn on the terminal */
    if (!ran) {
        bd_app_message(app, BD_MSG_WARN, "cancelled");
        goto out;
    }
    if (j->status_rc == 0) {
        /* Keep the cursor on the path it was on, wherever that path went. */
        char *keep = NULL;
        size_t r = bd_list_selected(&s->list);
        if (r < s->n_rows && s->rows[r].kind == ROW_ENTRY)
            keep = strdup(s->st.entries[s->rows[r].entry].path);
        bd_git_status_release(&s->st);
        s->st = j->st;
        memset(&j->st, 0, sizeof(j->st));
        build_rows(v);
        for (size_t i = 0; keep && i < s->n_rows; i++)
            if (s->rows[i].kind == ROW_ENTRY &&
                strcmp(s->st.entries[s->rows[i].entry].path, keep) == 0) {
                bd_list_select_row(&s->list, i);
                break;
            }
        free(keep);
        s->loaded = true;
        if (s->st.branch[0])
            snprintf(app->branch, sizeof(app->branch), "%s", s->st.branch);
    }
    s->status_err = j->status_err;
    if (j->rc < 0) {
        bd_app_error(app, &j->err);
    } else if (j->status_rc < 0) {
        bd_app_error(app, &j->status_err);
    } else if (j->kind == JOB_COMMIT) {
        s->editing = false;
        bd_wipe(s->msg, sizeof(s->msg));
        s->msg_len = 0;
        char signer[80] = "";
        if (j->commit.is_signed)
            snprintf(signer, sizeof(signer), ", signed by %s", j->commit.signer);
        bd_app_message(app, BD_MSG_INFO, "committed %.7s on %s%s%s", j->commit.id, j->commit.branch,
                       j->commit.initial ? " (its first commit)" : "", signer);
    } else if (j->kind == JOB_STAGE) {
        bd_app_message(app, BD_MSG_INFO, "staged %s%s", j->paths[0],
                       j->n_paths > 1 ? " and more" : "");
    } else if (j->kind == JOB_UNSTAGE) {
        bd_app_message(app, BD_MSG_INFO, "unstaged %s%s", j->paths[0],
                       j->n_paths > 1 ? " and more" : "");
    }
    bd_app_invalidate(app, BD_DIRTY_ALL);
out:
    job_free(j);
}

static void ask(void *owner, const char *hint, bool bad_before)
{
    bd_view *v = owner;
    stage_view *s = v->state;
    bd_pass_line_ask(&s->line, hint, bad_before);
    bd_app_invalidate(v->app, BD_DIRTY_ALL);
}

static git_job *new_job(bd_view *v, job_kind kind)
{
    git_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root))) {
        free(j);
        return NULL;
    }
    j->kind = kind;
    j->view = v;
    j->work.run = job_run;
    j->work.done = job_done;
    return j;
}

static bool queue(bd_view *v, git_job *j)
{
    stage_view *s = v->state;
    if (!bd_view_queue_work(v->app, j ? &j->work : NULL, "git work")) {
        if (j)
            job_free(j);
        return false;
    }
    s->job = j;
    return true;
}

static bool busy(bd_view *v)
{
    stage_view *s = v->state;
    if (s->job)
        bd_app_message(v->app, BD_MSG_WARN, "wait: git is still working");
    return s->job != NULL;
}

/* `u`: stage or unstage the row under the cursor (a heading: its whole section). */
static void toggle(bd_view *v)
{
    stage_view *s = v->state;
    size_t r = bd_list_selected(&s->list);
    if (r >= s->n_rows || busy(v))
        return;
    section sec = s->rows[r].sec;
    size_t n = 0;
    for (size_t i = 0; i < s->n_rows; i++)
        if (s->rows[i].kind == ROW_ENTRY && s->rows[i].sec == sec &&
            (i == r || s->rows[r].kind == ROW_HEADING))
            n++;
    if (!n) {
        bd_app_message(v->app, BD_MSG_WARN, "nothing to %s here",
                       sec == SEC_STAGED ? "unstage" : "stage");
        return;
    }
    /* a verdict entry: unstage a staged one, stage the rest; the heading stages them all */
    bool unstage = sec == SEC_STAGED || (sec == SEC_VERDICTS && s->rows[r].kind == ROW_ENTRY &&
                                         verdict_staged(&s->st.entries[s->rows[r].entry]));
    git_job *j = new_job(v, unstage ? JOB_UNSTAGE : JOB_STAGE);
    if (j && !(j->paths = calloc(n, sizeof(*j->paths)))) {
        job_free(j);
        j = NULL;
    }
    for (size_t i = 0; j && i < s->n_rows; i++)
        if (s->rows[i].kind == ROW_ENTRY && s->rows[i].sec == sec &&
            (i == r || s->rows[r].kind == ROW_HEADING)) {
            if (!(j->paths[j->n_paths] = strdup(s->st.entries[s->rows[i].entry].path))) {
                job_free(j);
                j = NULL;
                break;
            }
            j->n_paths++;
        }
    queue(v, j);
}

static void commit(bd_view *v)
{
    stage_view *s = v->state;
    if (busy(v))
        return;
    if (strspn(s->msg, " \t\n") == s->msg_len) {
        bd_app_message(v->app, BD_MSG_ERROR,
                       "usage.bad_args: the commit message is empty; type one, then Enter");
        return;
    }
    git_job *j = new_job(v, JOB_COMMIT);
    if (j && !(j->message = strdup(s->msg))) {
        job_free(j);
        j = NULL;
    }
    if (j && s->sign) {
        j->sign = true;
        if (v->app->config.signing_key)
            snprintf(j->key, sizeof(j->key), "%s", v->app->config.signing_key);
        if (bd_pass_new(&j->pass, v->app, ask, v) < 0) {
            job_free(j);
            j = NULL;
        }
    }
    queue(v, j);
}

/* ---- the view ----------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    (void)arg;
    stage_view *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    bd_list_init(&s->list);
    snprintf(v->title, sizeof(v->title), "stage");
    queue(v, new_job(v, JOB_STATUS));
    return 0;
}

static void close_view(bd_view *v)
{
    stage_view *s = v->state;
    if (s->job) {
        s->job->view = NULL; /* it frees itself when it reports */
        bd_pass_detach(s->job->pass);
    }
    bd_pass_line_close(&s->line);
    bd_git_status_release(&s->st);
    free(s->rows);
    bd_list_release(&s->list);
    free(s);
}

static int editor_height(const stage_view *s)
{
    if (!s->editing)
        return 0;
    int lines = 1;
    for (size_t i = 0; i < s->msg_len; i++)
        lines += s->msg[i] == '\n';
    if (lines > 6)
        lines = 6;
    return lines + 2; /* rule + text + key line */
}

static void draw_editor(bd_view *v, WINDOW *w, int y0)
{
    stage_view *s = v->state;
    int cols = getmaxx(w), rows = getmaxy(w);
    bd_draw_rule(w, y0, "commit message", bd_role_attr(BD_R_SELECTION));
    int h = editor_height(s) - 2;
    /* The last h lines of the message, the cursor at its end. */
    const char *lines[64];
    size_t lens[64];
    size_t n = 0;
    const char *p = s->msg;
    for (;;) {
        const char *nl = strchr(p, '\n');
        if (n == 64) {
            memmove(lines, lines + 1, 63 * sizeof(*lines));
            memmove(lens, lens + 1, 63 * sizeof(*lens));
            n = 63;
        }
        lines[n] = p;
        lens[n++] = nl ? (size_t)(nl - p) : strlen(p);
        if (!nl)
            break;
        p = nl + 1;
    }
    size_t first = n > (size_t)h ? n - (size_t)h : 0;
    int y = y0 + 1, cx = 2, cy = y;
    for (size_t i = first; i < n && y < rows - 1; i++, y++) {
        bd_draw_text(w, y, 0, cols, "", A_NORMAL, true);
        int used = bd_draw_textn(w, y, 2, cols - 3, lines[i], lens[i], A_BOLD, false);
        cx = 2 + used;
        cy = y;
    }
    char keys[200];
    snprintf(keys, sizeof(keys), "Enter commit   Ctrl-N new line   Tab signed: %s   Esc cancel",
             s->sign ? "YES (GPGME)" : "no");
    bd_draw_text(w, rows - 1, 0, cols, "", A_NORMAL, true);
    bd_draw_text(w, rows - 1, 1, cols - 1, keys, bd_role_attr(BD_R_MUTED), false);
    if (cx < cols)
        mvwaddstr(w, cy, cx, "_");
}

static void draw(bd_view *v, WINDOW *w)
{
    stage_view *s = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    char buf[1200];
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    if (s->loaded)
        snprintf(buf, sizeof(buf), " %s %s%s  %zu staged, %zu unstaged, %zu untracked ",
                 bd_gl->branch, s->st.branch[0] ? s->st.branch : "(detached)",
                 s->st.unborn ? " (no commit yet)" : "", s->st.n_staged, s->st.n_unstaged,
                 s->st.n_untracked);
    else if (s->job)
        snprintf(buf, sizeof(buf), " %s reading git status ", bd_app_spinner(v->app));
    else
        snprintf(buf, sizeof(buf), " %s no git status ", bd_gl->bad);
    int rx = bd_draw_right(w, 0, cols, buf, bd_role_attr(BD_R_TITLE));
    bd_draw_text(w, 0, 1, rx - 2, "git status of bench/ and audit/", bd_role_attr(BD_R_TITLE),
                 false);
    if (!s->loaded && !s->job && s->status_err.code != BD_OK) {
        snprintf(buf, sizeof(buf), "%s: %s", bd_code_str(s->status_err.code),
                 bd_tui_err_text(&s->status_err));
        bd_draw_wrapped(w, 2, 1, cols - 2, rows - 3, buf, bd_role_attr(BD_R_FAIL));
        return;
    }
    int eh = editor_height(s);
    int list_h = rows - 1 - eh - (s->line.asking ? 1 : 0);
    if (list_h < 1)
        list_h = 1;
    bd_list_scroll(&s->list, list_h);
    for (size_t i = s->list.top; i < s->list.n_vis && (int)(i - s->list.top) < list_h; i++) {
        const row *r = &s->rows[s->list.vis[i]];
        int y = 1 + (int)(i - s->list.top);
        bool sel = i == s->list.cursor && !s->editing;
        attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
        bd_draw_text(w, y, 0, cols, "", base, true);
        if (r->kind == ROW_HEADING) {
            bd_draw_text(w, y, 1, cols - 1, sec_title[r->sec], sel ? base : A_BOLD, false);
        } else if (r->kind == ROW_NONE) {
            bd_draw_text(w, y, 3, cols - 3, "(no files)", sel ? base : bd_role_attr(BD_R_MUTED),
                         false);
        } else {
            const bd_git_entry *e = &s->st.entries[r->entry];
            bool vstaged = r->sec == SEC_VERDICTS && verdict_staged(e);
            char k = r->sec == SEC_STAGED     ? (e->conflicted ? 'U' : e->staged)
                     : r->sec == SEC_UNSTAGED ? e->unstaged
                     : r->sec == SEC_VERDICTS
                         ? (vstaged        ? e->staged
                            : e->untracked ? '?'
                                           : (e->unstaged ? e->unstaged : e->staged))
                         : '?';
            bd_role role = r->sec == SEC_STAGED || vstaged ? BD_R_DIFF_ADD
                           : k == 'D'                      ? BD_R_DIFF_DEL
                                                           : BD_R_WARN;
            snprintf(buf, sizeof(buf), "%c", k ? k : ' ');
            bd_draw_text(w, y, 3, 2, buf, sel ? base : bd_role_attr(role) | A_BOLD, false);
            int used = bd_draw_text(w, y, 5, cols - 5, e->path, base, false);
            if (e->trust && 5 + used + 2 < cols)
                bd_draw_text(w, y, 5 + used + 2, cols - 5 - used - 2, "!! changes who may sign",
                             sel ? base : bd_role_attr(BD_R_FAIL) | A_BOLD, false);
            if (r->sec == SEC_VERDICTS && k == 'D' && 5 + used + 2 < cols)
                bd_draw_text(w, y, 5 + used + 2, cols - 5 - used - 2,
                             "!! a verdict deleted (a deleted withdrawn revives what it took back)",
                             sel ? base : bd_role_attr(BD_R_FAIL) | A_BOLD, false);
        }
    }
    if (s->job && s->loaded && !s->line.asking)
        bd_draw_right(w, rows - 1 - eh, cols, bd_app_spinner(v->app), bd_role_attr(BD_R_MUTED));
    if (s->editing)
        draw_editor(v, w, rows - eh);
    if (s->line.asking)
        bd_pass_line_draw(&s->line, w, s->editing ? rows - eh - 1 : rows - 1);
}

static bool key(bd_view *v, bd_action a, int ch)
{
    stage_view *s = v->state;
    if (s->line.asking) {
        bd_pass_line_key(&s->line, s->job ? s->job->pass : NULL, ch);
        return true;
    }
    if (s->editing) {
        if (s->job)
            return true; /* committing: the message stays as it is */
        if (ch == '\t' || ch == BD_CTRL('s')) {
            s->sign = !s->sign;
            return true;
        }
        if (ch == BD_CTRL('n')) {
            if (s->msg_len + 1 < sizeof(s->msg)) {
                s->msg[s->msg_len++] = '\n';
                s->msg[s->msg_len] = '\0';
            }
            return true;
        }
        bd_edit_result r = bd_edit_key(s->msg, sizeof(s->msg), &s->msg_len, ch);
        if (r == BD_EDIT_ACCEPT)
            commit(v);
        else if (r == BD_EDIT_CANCEL)
            s->editing = false; /* the text is kept for the next C */
        return true;
    }
    if (bd_list_move(&s->list, a))
        return true;
    switch (a) {
    case BD_A_STAGE_TOGGLE:
        toggle(v);
        return true;
    case BD_A_COMMIT:
        if (!s->loaded) {
            bd_app_message(v->app, BD_MSG_WARN, "wait: git status is still being read");
            return true;
        }
        s->editing = true;
        return true;
    case BD_A_RELOAD: /* here: read the git status again */
        if (!busy(v))
            queue(v, new_job(v, JOB_STATUS));
        return true;
    default:
        return false;
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)x;
    stage_view *s = v->state;
    if (y >= 1 && !s->editing && !s->line.asking)
        bd_list_mouse(&s->list, ev, y - 1);
}

static void position(bd_view *v, char *out, size_t cap)
{
    stage_view *s = v->state;
    if (s->editing)
        snprintf(out, cap, "commit message");
    else
        bd_view_list_position(&s->list, out, cap);
}

const bd_view_ops bd_view_stage = {
    "stage", actions, open_view, draw, key, NULL, NULL, mouse, position, close_view, NULL, NULL,
};
