/*
 * result.c — one scored case, for the reviewer: first what the rubric compared (the
 * score's `checks`, as a table, failed checks first), then pass/fail and score, the breakdown as
 * labelled bars, failure modes by severity with their detail, the rubric's stderr, and
 * the expected answer beside the harness output as a field-aligned structural diff (same
 * paths on the same row, differences coloured, long values wrapped); `n`/`p` walk to the
 * next/previous failed case of the list it was opened from; `/` searches the view (then
 * `n`/`N` move between matches, Esc ends the search); `e` opens all of it, unwrapped and
 * uncut, in $PAGER or $EDITOR; `c` opens the case, `R` shows the rubric in $PAGER. A string
 * value with line breaks is shown as its lines, each sanitized (docs/user-guide.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "err_keys.h"
#include "fsutil.h"
#include "gitops.h"
#include "jsondiff.h"
#include "model.h"
#include "view_args.h"
#include "runner.h"
#include "runsigned.h"
#include "stale.h"
#include "view_util.h"
#include "result_cols.h"
#include "views/result_view.h"

#define STDERR_MAX (64 * 1024)
#define SIDE_MAX   (256 * 1024)

typedef enum { L_TEXT, L_HEADING, L_BAR, L_PAIR, L_FIELD, L_DIFF } line_kind;

typedef struct rline {
    line_kind kind;
    char *a, *b, *c; /* L_DIFF: path, expected, actual pieces */
    bd_role ra, rb;
    double frac;
} rline;

typedef struct result {
    bd_result_arg arg;
    size_t index;
    rline *lines;
    size_t n, cap;
    size_t top;
    bool passed;
    double score;
    bool have;
    char case_id[129];
    size_t n_failed_total;
    size_t failed_pos; /* 1-based position of this case among the failed ones, 0 if passed */
    int width;         /* body width the lines were wrapped for */
    bd_strbuf full;    /* everything, whole and unwrapped, for `e` */
    char search[128];  /* the active search, or "" */
    /* A stale record: the case as it was when scored, looked up in git off the loop. */
    unsigned stale;               /* BD_STALE_* bits of the shown record */
    struct past_job *past_job;    /* the lookup in flight, or NULL */
    char past_for[BD_DIGEST_BUF]; /* the case digest the lookup below is for */
    int past_rc;                  /* 1 found, 0 not in git, -1 failed, -2 not looked up */
    bd_git_case_version past;
    bd_err past_err;
} result;

/* In the order of their hints: the reviewer's walk first. */
static const bd_action actions[] = {BD_A_NEXT_FAIL,   BD_A_PREV_FAIL, BD_A_SEARCH,
                                    BD_A_VERDICT,     BD_A_EDIT,      BD_A_OPEN_CASE,
                                    BD_A_OPEN_RUBRIC, BD_A_HISTORY,   BD_A_NONE};

static void add(result *r, line_kind k, const char *a, bd_role ra, const char *b, bd_role rb,
                double frac)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 64;
        rline *g = realloc(r->lines, nc * sizeof(*g));
        if (!g)
            return;
        r->lines = g;
        r->cap = nc;
    }
    rline *l = &r->lines[r->n];
    l->kind = k;
    l->c = NULL;
    l->a = strdup(a ? a : "");
    l->b = b ? strdup(b) : NULL;
    if (!l->a || (b && !l->b)) {
        free(l->a);
        free(l->b);
        return;
    }
    l->ra = ra;
    l->rb = rb;
    l->frac = frac;
    r->n++;
}

static void clear_lines(result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->lines[i].a);
        free(r->lines[i].b);
        free(r->lines[i].c);
    }
    r->n = 0;
    r->top = 0;
    bd_strbuf_release(&r->full);
}

/* Append to the text `e` shows (made terminal-safe, newlines and tabs kept). */
static void full_add(result *r, const char *s)
{
    bd_text_vis_into(&r->full, s ? s : "", s ? strlen(s) : 0, BD_TEXT_KEEP_NL | BD_TEXT_KEEP_TAB);
}

/* ---- three columns of wrapped, multi-line values (the diff and the checks) ---------- */

/* One row of three columns: the name column's pieces `cn`, then expected and actual, each
 * value shown as its lines, wrapped; `changed` draws the name bold. */
static void add_pieces(result *r, const bd_rc_pieces *cn, const char *exp, bd_role re,
                       const char *act, bd_role ra, bool changed, int vw)
{
    bd_rc_pieces ce = {0}, ca = {0};
    bd_rc_pieces_value(&ce, exp, vw);
    bd_rc_pieces_value(&ca, act, vw);
    size_t rows = cn->n > ce.n ? cn->n : ce.n;
    rows = rows > ca.n ? rows : ca.n;
    for (size_t i = 0; i < rows; i++) {
        size_t before = r->n;
        add(r, L_DIFF, i < cn->n ? cn->p[i] : "", re, i < ce.n ? ce.p[i] : "", ra, changed ? 1 : 0);
        if (r->n > before)
            r->lines[r->n - 1].c = strdup(i < ca.n ? ca.p[i] : "");
    }
    bd_rc_pieces_free(&ce);
    bd_rc_pieces_free(&ca);
}

/* As add_pieces, the name wrapped like the values. */
static void add_columns(result *r, const char *name, const char *exp, bd_role re, const char *act,
                        bd_role ra, bool changed, int pw, int vw)
{
    bd_rc_pieces cn = {0};
    bd_rc_pieces_value(&cn, name, pw);
    add_pieces(r, &cn, exp, re, act, ra, changed, vw);
    bd_rc_pieces_free(&cn);
}

/* `label` and `value` into the `e` text, a multi-line value as indented lines. */
static void full_add_value(result *r, const char *label, const char *value)
{
    full_add(r, label);
    for (const char *p = value;;) {
        const char *nl = strchr(p, '\n');
        char *line = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
        full_add(r, line);
        free(line);
        if (!nl)
            break;
        full_add(r, "\n                ");
        p = nl + 1;
    }
    full_add(r, "\n");
}

/* The widths of the name and value columns for the view's width. */
static void column_widths(const result *r, int *pw, int *vw)
{
    *pw = r->width / 4 < 28 ? r->width / 4 : 28;
    *vw = (r->width - *pw - 6) / 2;
    if (*vw < 8)
        *vw = 8;
}

/* One diff row: path, expected and actual each in their column. */
static void add_diff_row(result *r, const bd_jd_row *row, int pw, int vw)
{
    char *e = bd_rc_leaf_text(row->expected ? row->expected : "(absent)");
    char *a = bd_rc_leaf_text(row->actual ? row->actual : "(absent)");
    if (!e || !a)
        goto out;
    bd_role re = BD_R_DIFF_CTX, ra = BD_R_DIFF_CTX;
    if (row->status == BD_JD_CHANGED)
        re = BD_R_DIFF_DEL, ra = BD_R_DIFF_ADD;
    else if (row->status == BD_JD_ONLY_EXPECTED)
        re = BD_R_DIFF_DEL, ra = BD_R_MUTED;
    else if (row->status == BD_JD_ONLY_ACTUAL)
        re = BD_R_MUTED, ra = BD_R_DIFF_ADD;
    const char *path = row->path[0] ? row->path : "(value)";
    add_columns(r, path, e, re, a, ra, row->status != BD_JD_SAME, pw, vw);
    full_add(r, row->status == BD_JD_SAME ? "  " : "! ");
    full_add(r, path);
    full_add_value(r, "\n      expected: ", e);
    full_add_value(r, "      actual:   ", a);
out:
    free(e);
    free(a);
}

/* At most `max` bytes of `path` (fsutil.h: O_NOFOLLOW, regular files only); NULL if
 * absent or unreadable. */
static char *read_small(const char *path, size_t max, size_t *len)
{
    char *buf = NULL;
    unsigned long long size = 0;
    bd_err err = BD_ERR_INIT;
    return bd_read_file_head(&buf, len, &size, path, max, 0, &err) == 0 ? buf : NULL;
}

/* JSON text pretty-printed with two-space indents; other text as it is. New string. */
static char *pretty(const char *text, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!j)
        return strndup(text, len);
    char *p = cJSON_Print(j);
    cJSON_Delete(j);
    if (!p)
        return strndup(text, len);
    /* cJSON indents with tabs and puts one after each colon: two spaces per level,
     * one space after a colon. */
    size_t tabs = 0;
    for (char *q = p; *q; q++)
        tabs += *q == '\t';
    char *out = malloc(strlen(p) + tabs + 1);
    if (!out)
        return p;
    char *o = out;
    bool line_start = true;
    for (char *q = p; *q; q++) {
        if (*q == '\t') {
            *o++ = ' ';
            if (line_start)
                *o++ = ' ';
        } else {
            *o++ = *q;
            line_start = *q == '\n';
        }
    }
    *o = '\0';
    free(p);
    return out;
}

/* Split `s` into lines in place; returns the count, fills at most max pointers. */
static size_t split_lines(char *s, char **out, size_t max)
{
    size_t n = 0;
    if (!s || !*s)
        return 0;
    char *p = s;
    while (*p && n < max) {
        out[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    return n;
}

static int sev_rank(bd_severity s)
{
    return s == BD_SEV_BLOCK ? 0 : s == BD_SEV_WARN ? 1 : 2;
}

static bool is_failed(result *r, size_t i)
{
    bd_result_src src;
    return r->arg.provider.get(r->arg.provider.payload, i, &src) && !src.score->passed;
}

static void count_failed(result *r)
{
    size_t n = r->arg.provider.count(r->arg.provider.payload);
    r->n_failed_total = 0;
    r->failed_pos = 0;
    for (size_t i = 0; i < n; i++)
        if (is_failed(r, i)) {
            r->n_failed_total++;
            if (i == r->index)
                r->failed_pos = r->n_failed_total;
        }
}

/* ---- the case as it was (stale records) ------------------------------------------- */

typedef struct past_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    char *root, *task_class, *case_id;
    char digest[BD_DIGEST_BUF];
    int rc;
    bd_git_case_version found;
    bd_err err;
} past_job;

static void past_job_free(past_job *j)
{
    bd_git_case_version_release(&j->found);
    free(j->root);
    free(j->task_class);
    free(j->case_id);
    free(j);
}

static void past_run(bd_work *w)
{
    past_job *j = (past_job *)w;
    bd_git *g = NULL;
    j->rc =
        bd_git_open(&g, j->root, &j->err) < 0
            ? -1
            : bd_git_case_at_digest(&j->found, g, j->task_class, j->case_id, j->digest, &j->err);
    bd_git_close(g);
}

static void build(bd_view *v);

static void past_done(bd_work *w, bool ran)
{
    past_job *j = (past_job *)w;
    if (j->view) {
        result *r = j->view->state;
        r->past_job = NULL;
        bd_git_case_version_release(&r->past);
        r->past_rc = ran ? j->rc : -1;
        r->past = j->found;
        memset(&j->found, 0, sizeof(j->found));
        r->past_err = j->err;
        if (!ran)
            bd_err_set(&r->past_err, BD_E_RUN_CANCELLED, NULL, 0, 0, "lookup cancelled");
        size_t top = r->top;
        build(j->view);
        r->top = top < r->n ? top : 0;
        bd_app_invalidate(j->view->app, BD_DIRTY_BODY);
    }
    past_job_free(j);
}

/* Look the case up in git at the digest it was scored on (once per record shown). */
static void start_past(bd_view *v, const bd_result_src *src)
{
    result *r = v->state;
    if (r->past_job || !src->case_digest || strcmp(r->past_for, src->case_digest) == 0)
        return;
    snprintf(r->past_for, sizeof(r->past_for), "%s", src->case_digest);
    bd_git_case_version_release(&r->past);
    r->past_rc = -2;
    past_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(v->app->bench->root)) ||
        !(j->task_class = strdup(src->task_class)) || !(j->case_id = strdup(src->case_id))) {
        if (j)
            past_job_free(j);
        return;
    }
    snprintf(j->digest, sizeof(j->digest), "%s", src->case_digest);
    j->view = v;
    j->work.run = past_run;
    j->work.done = past_done;
    if (bd_work_queue(v->app, &j->work) < 0) {
        past_job_free(j);
        return;
    }
    r->past_job = j;
    bd_app_animate(v->app);
}

/* The lines of a stale record: what changed, and the case.yaml it was scored on. */
static void add_stale(bd_view *v, const bd_result_src *src)
{
    result *r = v->state;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s since it was scored: it does not count for promotion",
             bd_stale_str(r->stale));
    add(r, L_FIELD, "stale", BD_R_WARN, buf, BD_R_WARN, 0);
    if (!(r->stale & BD_STALE_CASE))
        return;
    add(r, L_HEADING, "The case as it was when scored", BD_R_TITLE, NULL, 0, 0);
    start_past(v, src);
    if (r->past_job) {
        snprintf(buf, sizeof(buf), "  %s looking in git for %.23s%s", bd_app_spinner(v->app),
                 src->case_digest, bd_gl->ellipsis);
        add(r, L_TEXT, buf, BD_R_MUTED, NULL, 0, 0);
        return;
    }
    if (r->past_rc == 0 || r->past_rc == -2) {
        add(r, L_TEXT, "  not in git (never committed at that digest, or too far back)", BD_R_MUTED,
            NULL, 0, 0);
        return;
    }
    if (r->past_rc < 0) {
        snprintf(buf, sizeof(buf), "  %s: %s", bd_code_str(r->past_err.code),
                 bd_tui_err_text(&r->past_err));
        add(r, L_TEXT, buf, BD_R_FAIL, NULL, 0, 0);
        return;
    }
    char when[32] = "";
    time_t t = (time_t)r->past.when;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
    snprintf(buf, sizeof(buf), "%.12s  %s  %s", r->past.commit, when, r->past.summary);
    add(r, L_FIELD, "commit", BD_R_DIFF_CTX, buf, BD_R_DIFF_CTX, 0);
    char *copy = strndup(r->past.case_yaml ? r->past.case_yaml : "", r->past.case_yaml_len);
    if (!copy)
        return;
    char *ls[2048];
    size_t n = split_lines(copy, ls, 2048);
    for (size_t i = 0; i < n; i++) {
        snprintf(buf, sizeof(buf), "  %s", ls[i]);
        add(r, L_TEXT, buf, BD_R_DIFF_CTX, NULL, 0, 0);
    }
    free(copy);
}

/* The record's verdict badge (docs/provenance.md#verdict-badges), when reviewers gave it
 * verdicts that count; `t` gives one. */
static void add_verdict_badge(bd_view *v, const bd_result_src *src)
{
    char badge[64];
    bd_role role;
    bd_history_model_badge(v->app->model->history, src->seq, badge, sizeof(badge), &role);
    if (badge[0])
        add(v->state, L_FIELD, "verdicts", BD_R_DIFF_CTX, badge, role, 0);
}

/* The header fields: task class, run, when it finished, the record, its origin, and
 * whether it is stale against today's pins (sets r->stale). */
static void build_header(bd_view *v, const bd_result_src *src, const bd_task_class *tc)
{
    result *r = v->state;
    char buf[2048];
    add(r, L_FIELD, "task class", BD_R_DIFF_CTX, src->task_class, BD_R_DIFF_CTX, 0);
    add(r, L_FIELD, "run", BD_R_DIFF_CTX, src->run_id ? src->run_id : "-", BD_R_DIFF_CTX, 0);
    char when[160] = "";
    if (src->wall_ms >= 0) {
        char d[32];
        bd_human_ms(d, sizeof(d), src->wall_ms);
        snprintf(when, sizeof(when), "%s in %s, %s", src->finished_at ? src->finished_at : "", d,
                 src->isolation ? src->isolation : "");
    } else {
        snprintf(when, sizeof(when), "%s, %s", src->finished_at ? src->finished_at : "",
                 src->isolation ? src->isolation : "");
    }
    add(r, L_FIELD, "finished", BD_R_DIFF_CTX, when, BD_R_DIFF_CTX, 0);
    if (src->seq) {
        snprintf(buf, sizeof(buf), "#%llu  %.16s%s", (unsigned long long)src->seq,
                 src->record_hash ? src->record_hash : "", bd_gl->ellipsis);
        add(r, L_FIELD, "record", BD_R_DIFF_CTX, buf, BD_R_DIFF_CTX, 0);
        add_verdict_badge(v, src);
    } else {
        add(r, L_FIELD, "record", BD_R_DIFF_CTX, "not in the history", BD_R_WARN, 0);
    }
    /* Who ran it: the key the record names, by trusted-signers.yaml (runsigned.h; whether
     * a run.signed covers it is `history verify`'s to say). */
    char who[320];
    const bd_prov_ctx *prov = v->app->model ? v->app->model->prov : NULL;
    bd_run_operator_words(prov ? bd_prov_ctx_signers(prov) : NULL, src->operator_fingerprint, who,
                          sizeof(who));
    add(r, L_FIELD, "operator", BD_R_DIFF_CTX, who,
        src->operator_fingerprint ? BD_R_DIFF_CTX : BD_R_MUTED, 0);
    if (src->origin) {
        /* The host passed the record parser: printable ASCII without spaces. */
        snprintf(buf, sizeof(buf), "shard %u of %u on %s, bundle record %.16s%s",
                 src->origin->shard, src->origin->shards, src->origin->host,
                 src->origin->bundle_record_hash, bd_gl->ellipsis);
        add(r, L_FIELD, "origin", BD_R_DIFF_CTX, buf, BD_R_DIFF_CTX, 0);
    }
    if (src->unverified)
        add(r, L_FIELD, "provenance", BD_R_WARN,
            "NOT verified: a draft or unsigned case, run with drafts allowed (never evidence)",
            BD_R_WARN, 0);
    /* Current or stale against today's pins (stale.c); a live result is current. */
    r->stale = 0;
    if (src->seq) {
        r->stale = bd_stale_bits(src->case_id, src->case_digest, src->task_class_digest,
                                 tc ? tc->digests : NULL);
    }
    if (r->stale)
        add_stale(v, src);
}

/* The score bar, the cost, and the breakdown as labelled bars. */
static void build_score(result *r, const bd_result_src *src)
{
    const bd_score *sc = src->score;
    char buf[2048];
    snprintf(buf, sizeof(buf), "%.2f", sc->score);
    add(r, L_BAR, "score", BD_R_TITLE, buf, sc->passed ? BD_R_OK : BD_R_FAIL, sc->score);
    if (sc->cost_usd > 0) {
        snprintf(buf, sizeof(buf), "$%.4f", sc->cost_usd);
        add(r, L_FIELD, "cost", BD_R_DIFF_CTX, buf, BD_R_DIFF_CTX, 0);
    }

    add(r, L_HEADING, "Breakdown", BD_R_TITLE, NULL, 0, 0);
    full_add(r, "\nFailure modes\n");
    if (!sc->n_breakdown)
        add(r, L_TEXT, "  (none)", BD_R_MUTED, NULL, 0, 0);
    for (size_t i = 0; i < sc->n_breakdown; i++) {
        snprintf(buf, sizeof(buf), "%.2f", sc->breakdown[i].value);
        add(r, L_BAR, sc->breakdown[i].key, BD_R_DIFF_CTX, buf,
            sc->breakdown[i].value >= 0.999 ? BD_R_OK : BD_R_WARN, sc->breakdown[i].value);
    }
}

/* One failure mode: severity and code, then its description and detail wrapped under it. */
static void add_failure_mode(result *r, const bd_score_fm *fm, int rank, const bd_task_class *tc)
{
    char buf[2048];
    bd_role role = rank == 0 ? BD_R_FAIL : rank == 1 ? BD_R_WARN : BD_R_MUTED;
    const bd_failure_mode_def *def = tc ? bd_registration_failure_mode(tc->reg, fm->code) : NULL;
    snprintf(buf, sizeof(buf), "%-5s %s", bd_severity_str(fm->severity), fm->code);
    const char *what = def && def->description ? def->description : "";
    char rest[1400];
    snprintf(rest, sizeof(rest), "%s%s%s", what, what[0] && fm->detail ? ": " : "",
             fm->detail ? fm->detail : "");
    full_add(r, buf);
    full_add(r, "\n    ");
    full_add(r, rest);
    full_add(r, "\n");
    /* The reviewer needs all of it: wrap under the code (widths of what is drawn). */
    char *vis = bd_text_vis(rest, 0);
    if (vis) {
        snprintf(rest, sizeof(rest), "%s", vis);
        free(vis);
    }
    int tw = r->width - 38 > 20 ? r->width - 38 : 20;
    size_t len = strlen(rest), off = 0;
    do {
        size_t take = bd_wrap_next(rest + off, len - off, tw);
        char piece[1400];
        snprintf(piece, sizeof(piece), "%.*s", (int)take, rest + off);
        add(r, L_PAIR, off ? "" : buf, role, piece, BD_R_DIFF_CTX, 0);
        off += take;
    } while (off < len);
}

/* The failure modes, blocking first, then warnings, then notes. */
static void build_failure_modes(result *r, const bd_score *sc, const bd_task_class *tc)
{
    add(r, L_HEADING, "Failure modes", BD_R_TITLE, NULL, 0, 0);
    if (!sc->n_failure_modes)
        add(r, L_TEXT, "  (none)", BD_R_MUTED, NULL, 0, 0);
    for (int rank = 0; rank < 3; rank++)
        for (size_t i = 0; i < sc->n_failure_modes; i++)
            if (sev_rank(sc->failure_modes[i].severity) == rank)
                add_failure_mode(r, &sc->failure_modes[i], rank, tc);
}

/* The rubric's stderr: the run's copy, else the file the runner kept. */
static void build_stderr(bd_view *v, const bd_result_src *src)
{
    result *r = v->state;
    char *err_buf = NULL;
    size_t err_len = 0;
    if (src->stderr_tail) {
        err_buf = strndup(src->stderr_tail, src->stderr_len);
        err_len = src->stderr_len;
    } else if (src->run_id) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s/%s/%s.stderr", v->app->bench->root, BD_RUNS_DIR,
                 src->run_id, src->case_id);
        err_buf = read_small(path, STDERR_MAX, &err_len);
    }
    add(r, L_HEADING, "Rubric stderr", BD_R_TITLE, NULL, 0, 0);
    full_add(r, "\nRubric stderr\n");
    if (err_buf && err_len) {
        full_add(r, err_buf);
        full_add(r, "\n");
        /* Wrap what will be drawn, not the raw bytes. */
        char *vis = bd_text_vis(err_buf, BD_TEXT_KEEP_NL | BD_TEXT_KEEP_TAB);
        if (vis) {
            free(err_buf);
            err_buf = vis;
        }
        char *lines[4096];
        size_t n = split_lines(err_buf, lines, 4096);
        int tw = r->width - 3 > 20 ? r->width - 3 : 20;
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(lines[i]), off = 0;
            do {
                size_t take = bd_wrap_next(lines[i] + off, len - off, tw);
                char piece[1024];
                snprintf(piece, sizeof(piece), "  %.*s", (int)take, lines[i] + off);
                add(r, L_TEXT, piece, BD_R_DIFF_DEL, NULL, 0, 0);
                off += take;
            } while (off < len);
        }
    } else {
        add(r, L_TEXT, "  (empty)", BD_R_MUTED, NULL, 0, 0);
    }
    free(err_buf);
}

/* ---- what the rubric compared ------------------------------------------------------- */

/* One check as a table row: mark and name, expected, actual (multi-line strings as lines). */
static void add_check_row(result *r, const bd_score_check *c, int pw, int vw)
{
    char *e = bd_rc_leaf_text(c->expected ? c->expected : "null");
    char *a = bd_rc_leaf_text(c->actual ? c->actual : "null");
    bd_rc_pieces cn = {0};
    bd_rc_pieces_name(&cn, c->passed ? bd_gl->ok : bd_gl->bad, c->name, pw);
    if (e && a) {
        add_pieces(r, &cn, e, c->passed ? BD_R_DIFF_CTX : BD_R_DIFF_DEL, a,
                   c->passed ? BD_R_DIFF_CTX : BD_R_DIFF_ADD, !c->passed, vw);
        full_add(r, c->passed ? "  passed  " : "! FAILED  ");
        full_add(r, c->name);
        full_add_value(r, "\n      expected: ", e);
        full_add_value(r, "      actual:   ", a);
    }
    bd_rc_pieces_free(&cn);
    free(e);
    free(a);
}

/* A heading (also in the `e` text) over a three-column table: `first`, EXPECTED and
 * `third`, with the column widths for its rows in *pw and *vw. */
static void table_head(result *r, const char *heading, const char *first, const char *third,
                       int *pw, int *vw)
{
    add(r, L_HEADING, heading, BD_R_TITLE, NULL, 0, 0);
    full_add(r, "\n");
    full_add(r, heading);
    full_add(r, "\n");
    column_widths(r, pw, vw);
    add(r, L_DIFF, first, BD_R_MUTED, "EXPECTED", BD_R_MUTED, 0);
    if (r->n && r->lines[r->n - 1].kind == L_DIFF)
        r->lines[r->n - 1].c = strdup(third);
}

/* The rubric's own account of what it compared (the score's `checks`), failed checks
 * first: the first thing the reviewer reads. Nothing when the rubric wrote none. */
static void build_checks(result *r, const bd_score *sc)
{
    if (!sc->n_checks)
        return;
    size_t failed = 0;
    for (size_t i = 0; i < sc->n_checks; i++)
        failed += !sc->checks[i].passed;
    char buf[160];
    snprintf(buf, sizeof(buf), "What the rubric compared: %zu check%s, %zu failed", sc->n_checks,
             sc->n_checks == 1 ? "" : "s", failed);
    int pw, vw;
    table_head(r, buf, "CHECK", "ACTUAL", &pw, &vw);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < sc->n_checks; i++)
            if (sc->checks[i].passed == (pass == 1))
                add_check_row(r, &sc->checks[i], pw, vw);
}

/* The two sides of the diff: the expected answer as compact JSON (from the case as it
 * was scored when the record is stale and git had it, else today's case) into *exp, and
 * the harness output (the run's copy, else the cassette) into *got. Either may be left
 * NULL; the caller frees both. A case that does not load adds a warning line. */
static void load_sides(bd_view *v, const bd_result_src *src, const bd_task_class *tc, char **exp,
                       size_t *exp_len, char **got, size_t *got_len)
{
    result *r = v->state;
    bd_case *c = NULL;
    bd_err e = BD_ERR_INIT;
    /* A stale record was scored against the case as it was: show that expected. */
    bool as_scored = (r->stale & BD_STALE_CASE) && r->past_rc == 1 && r->past.case_yaml;
    int lrc = as_scored ? bd_case_parse(&c, r->past.case_yaml, r->past.case_yaml_len,
                                        "case.yaml (as scored)", src->case_id, &e)
                        : bd_task_class_case(&c, tc, src->case_id, &e);
    if (lrc == 0) {
        cJSON *j = c->expected ? bd_ynode_to_json(c->expected) : NULL;
        *exp = j ? cJSON_PrintUnformatted(j) : NULL;
        *exp_len = *exp ? strlen(*exp) : 0;
        cJSON_Delete(j);
        bd_case_free(c);
    } else {
        char buf[2048];
        snprintf(buf, sizeof(buf), "%s: %s", bd_code_str(e.code), bd_tui_err_text(&e));
        add(r, L_TEXT, buf, BD_R_WARN, NULL, 0, 0);
    }
    char path[4400];
    if (src->run_id) {
        snprintf(path, sizeof(path), "%s/%s/%s/%s.harness_output.json", v->app->bench->root,
                 BD_RUNS_DIR, src->run_id, src->case_id);
        *got = read_small(path, SIDE_MAX, got_len);
    }
    if (!*got) {
        snprintf(path, sizeof(path), "%s/%s/cassette.json", tc->cases_dir, src->case_id);
        *got = read_small(path, SIDE_MAX, got_len);
    }
}

/* The diff rows under their heading, and both sides pretty-printed into the `e` text. */
static void add_diff(result *r, const bd_jd *diff, const char *heading, const char *exp,
                     size_t exp_len, const char *got, size_t got_len)
{
    int pw, vw;
    table_head(r, heading, "FIELD", "HARNESS OUTPUT", &pw, &vw);
    for (size_t i = 0; i < diff->n; i++)
        add_diff_row(r, &diff->rows[i], pw, vw);
    full_add(r, "\nExpected (case.yaml)\n");
    char *pe = exp ? pretty(exp, exp_len) : NULL;
    full_add(r, pe ? pe : "(none)");
    free(pe);
    full_add(r, "\n\nHarness output\n");
    char *pg = got ? pretty(got, got_len) : NULL;
    full_add(r, pg ? pg : "(none)");
    free(pg);
    full_add(r, "\n");
}

/* Expected (case.yaml) beside the harness output (the run's copy, else the cassette),
 * as a structural diff: the same field on the same row. */
static void build_diff(bd_view *v, const bd_result_src *src, const bd_task_class *tc)
{
    result *r = v->state;
    char buf[2048];
    char *exp = NULL, *got = NULL;
    size_t exp_len = 0, got_len = 0;
    if (tc)
        load_sides(v, src, tc, &exp, &exp_len, &got, &got_len);
    const char *exp_title = !(r->stale & BD_STALE_CASE) ? "Expected"
                            : (r->past_rc == 1)         ? "Expected (as scored)"
                                                        : "Expected (today's: the case changed)";
    bd_jd diff;
    if (!exp && !got) {
        snprintf(buf, sizeof(buf), "%s vs harness output", exp_title);
        add(r, L_HEADING, buf, BD_R_TITLE, NULL, 0, 0);
        add(r, L_TEXT, "  (neither is available)", BD_R_MUTED, NULL, 0, 0);
    } else if (bd_jd_diff(&diff, exp, exp_len, got, got_len) == 0) {
        snprintf(buf, sizeof(buf), "%s vs harness output: %zu field%s, %zu differ%s", exp_title,
                 diff.n, diff.n == 1 ? "" : "s", diff.n_diff, diff.n_diff == 1 ? "s" : "");
        add_diff(r, &diff, buf, exp, exp_len, got, got_len);
        bd_jd_release(&diff);
    } else {
        add(r, L_TEXT, "  out of memory building the diff", BD_R_FAIL, NULL, 0, 0);
    }
    free(exp);
    free(got);
}

/* (Re)build the view's lines and its `e` text for the case at r->index. */
static void build(bd_view *v)
{
    result *r = v->state;
    bd_model *m = v->app->model;
    bd_result_src src;
    clear_lines(r);
    r->width = v->app->body ? getmaxx(v->app->body) : 80;
    r->have = r->arg.provider.get(r->arg.provider.payload, r->index, &src);
    if (!r->have) {
        add(r, L_TEXT, "no result for this row", BD_R_MUTED, NULL, 0, 0);
        return;
    }
    r->passed = src.score->passed;
    r->score = src.score->score;
    snprintf(r->case_id, sizeof(r->case_id), "%s", src.case_id);
    snprintf(v->title, sizeof(v->title), "%s", src.case_id);
    count_failed(r);
    size_t ti = bd_model_find_tc(m, src.task_class);
    const bd_task_class *tc = ti == SIZE_MAX ? NULL : bd_model_tc(m, ti);

    build_header(v, &src, tc);
    char head[600];
    snprintf(head, sizeof(head), "case %s (%s)  %s  score %.4f\nrun %s\n", src.case_id,
             src.task_class, src.score->passed ? "PASSED" : "FAILED", src.score->score,
             src.run_id ? src.run_id : "-");
    full_add(r, head);
    build_checks(r, src.score);
    build_score(r, &src);
    build_failure_modes(r, src.score, tc);
    build_stderr(v, &src);
    build_diff(v, &src, tc);
}

static int open_view(bd_view *v, void *arg)
{
    result *r = calloc(1, sizeof(*r));
    if (!r) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = r;
    r->arg = *(const bd_result_arg *)arg;
    r->index = r->arg.index;
    r->past_rc = -2;
    build(v);
    return 0;
}

static void close_view(bd_view *v)
{
    result *r = v->state;
    if (r->past_job)
        r->past_job->view = NULL; /* its done callback frees it */
    bd_git_case_version_release(&r->past);
    clear_lines(r);
    free(r->lines);
    free(r);
}

static bool has(const char *hay, const char *needle)
{
    return hay && strcasestr(hay, needle) != NULL;
}

static bool line_matches(const rline *l, const char *s)
{
    return has(l->a, s) || has(l->b, s) || has(l->c, s);
}

/* Move to the next (dir 1) or previous (-1) line matching the search, from `from`. */
static bool find_match(result *r, size_t from, int dir)
{
    if (!r->search[0] || !r->n)
        return false;
    for (size_t k = 0; k < r->n; k++) {
        size_t i = dir > 0 ? (from + k) % r->n : (from + r->n - (k % r->n)) % r->n;
        if (line_matches(&r->lines[i], r->search)) {
            r->top = i;
            return true;
        }
    }
    return false;
}

static size_t count_matches(const result *r)
{
    size_t n = 0;
    for (size_t i = 0; r->search[0] && i < r->n; i++)
        n += line_matches(&r->lines[i], r->search);
    return n;
}

static void search_changed(bd_view *v, const char *text)
{
    result *r = v->state;
    snprintf(r->search, sizeof(r->search), "%s", text);
    find_match(r, r->top, 1);
    bd_app_invalidate(v->app, BD_DIRTY_BODY);
}

static void search_done(bd_view *v, const char *text, bool accepted)
{
    result *r = v->state;
    snprintf(r->search, sizeof(r->search), "%s", accepted ? text : "");
    if (r->search[0]) {
        size_t n = count_matches(r);
        if (n)
            bd_app_message(v->app, BD_MSG_INFO, "%zu matching line%s: n next, N previous, Esc ends",
                           n, n == 1 ? "" : "s");
        else
            bd_app_message(v->app, BD_MSG_WARN, "no line matches; Esc ends the search");
    }
    bd_app_invalidate(v->app, BD_DIRTY_ALL);
}

/* `e`: the whole result in the pager, with the terminal given up meanwhile. */
static void open_pager(bd_view *v)
{
    result *r = v->state;
    if (!r->full.p || r->full.oom) {
        bd_app_message(v->app, BD_MSG_WARN, "nothing to show in the pager");
        return;
    }
    bd_err err = BD_ERR_INIT;
    if (bd_app_foreground_viewer(v->app, r->full.p, r->full.len, r->case_id, &err) < 0)
        bd_app_error(v->app, &err);
}

/* ---- from a result to its case and its rubric ------------------------------------------ */

/* The task class of the shown result in the model, or NULL (with a message). */
static const bd_task_class *shown_tc(bd_view *v, bd_result_src *src, size_t *ti)
{
    result *r = v->state;
    if (!r->have || !r->arg.provider.get(r->arg.provider.payload, r->index, src)) {
        bd_app_message(v->app, BD_MSG_WARN, "no result shown");
        return NULL;
    }
    *ti = bd_model_find_tc(v->app->model, src->task_class);
    if (*ti == SIZE_MAX) {
        bd_app_message(v->app, BD_MSG_WARN, "task class %s is no longer in the bench",
                       src->task_class);
        return NULL;
    }
    return bd_model_tc(v->app->model, *ti);
}

/* `c`: the case view of the case this result scored (as the bench has it today). */
static void open_case(bd_view *v)
{
    bd_result_src src;
    size_t ti;
    if (!shown_tc(v, &src, &ti))
        return;
    size_t ci = bd_model_find_case(v->app->model, ti, src.case_id);
    if (ci == SIZE_MAX) {
        bd_app_message(v->app, BD_MSG_WARN, "case %s is no longer in the bench", src.case_id);
        return;
    }
    bd_case_ref ref = {ti, ci};
    bd_app_open(v->app, BD_VIEW_CASE, &ref);
}

/* `R`: the task class's rubric, terminal-safe, in the pager (read-only: editing it is the
 * curator's `E` in the case view, and it breaks the task class's pin). */
static void open_rubric(bd_view *v)
{
    bd_result_src src;
    size_t ti, len = 0;
    const bd_task_class *tc = shown_tc(v, &src, &ti);
    char *text = tc && tc->rubric_path ? read_small(tc->rubric_path, SIDE_MAX, &len) : NULL;
    if (!text) {
        if (tc)
            bd_app_message(v->app, BD_MSG_WARN, "the rubric of %s cannot be read", tc->name);
        return;
    }
    bd_strbuf b = {0};
    bd_text_vis_into(&b, text, len, BD_TEXT_KEEP_NL | BD_TEXT_KEEP_TAB);
    free(text);
    bd_err err = BD_ERR_INIT;
    if (b.oom)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
    else if (bd_app_foreground_viewer(v->app, b.p ? b.p : "", b.len, "rubric", &err) < 0)
        bd_app_error(v->app, &err);
    bd_strbuf_release(&b);
}

static void draw(bd_view *v, WINDOW *w)
{
    result *r = v->state;
    int rows = getmaxy(w), cols = getmaxx(w);
    char title[400];
    bd_role tr = r->have ? (r->passed ? BD_R_BADGE_SIGNED : BD_R_BADGE_BAD) : BD_R_TITLE;
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    snprintf(title, sizeof(title), " %s %s ", r->passed ? bd_gl->ok : bd_gl->bad,
             r->passed ? "PASSED" : "FAILED");
    int x = r->have ? bd_draw_text(w, 0, 0, cols, title, bd_role_attr(tr), false) : 0;
    char right[96];
    if (r->n_failed_total && r->failed_pos)
        snprintf(right, sizeof(right), " failed %zu of %zu  n/p walk ", r->failed_pos,
                 r->n_failed_total);
    else if (r->n_failed_total)
        snprintf(right, sizeof(right), " %zu failed  n/p walk ", r->n_failed_total);
    else
        snprintf(right, sizeof(right), " no failed case ");
    /* The score first, then the case id; the walk's position gives way to the id (at 80
     * columns an id of 46 characters fits), and only then is the id cut. */
    snprintf(title, sizeof(title), " score %.2f  %s", r->score, r->case_id);
    if (x + bd_text_width(title) + bd_text_width(right) > cols) {
        if (r->n_failed_total && r->failed_pos)
            snprintf(right, sizeof(right), " %zu/%zu n/p ", r->failed_pos, r->n_failed_total);
        else if (r->n_failed_total)
            snprintf(right, sizeof(right), " %zu failed ", r->n_failed_total);
        else
            snprintf(right, sizeof(right), " ");
    }
    int rx = bd_draw_right(w, 0, cols, right, bd_role_attr(BD_R_TITLE));
    bd_draw_text(w, 0, x, rx - x, title, bd_role_attr(BD_R_TITLE), false);

    int h = rows - 1;
    if (r->top + (size_t)h > r->n)
        r->top = r->n > (size_t)h ? r->n - (size_t)h : 0;
    int half = (cols - 3) / 2;
    for (int i = 0; i < h; i++) {
        size_t li = r->top + (size_t)i;
        if (li >= r->n)
            break;
        const rline *l = &r->lines[li];
        int y = 1 + i;
        switch (l->kind) {
        case L_HEADING:
            bd_draw_text(w, y, 1, l->b ? half : cols - 1, l->a, A_BOLD | A_UNDERLINE, false);
            if (l->b) {
                bd_draw_text(w, y, 2 + half, 1, bd_gl->vline, bd_role_attr(BD_R_MUTED), false);
                bd_draw_text(w, y, 4 + half, cols - 4 - half, l->b, A_BOLD | A_UNDERLINE, false);
            }
            break;
        case L_FIELD:
            bd_draw_text(w, y, 1, 12, l->a, A_BOLD, false);
            bd_draw_text(w, y, 13, cols - 13, l->b, bd_role_attr(l->rb), false);
            break;
        case L_BAR: {
            int label_w = 18, bar_w = cols - label_w - 12;
            if (bar_w > 40)
                bar_w = 40;
            if (l->ra == BD_R_TITLE) /* the score itself, aligned with the fields */
                bd_draw_text(w, y, 1, label_w, l->a, A_BOLD, false);
            else
                bd_draw_text(w, y, 3, label_w - 2, l->a, A_NORMAL, false);
            bd_draw_bar(w, y, 1 + label_w, bar_w, l->frac, BD_R_BAR_FILL, BD_R_BAR_EMPTY);
            bd_draw_text(w, y, 2 + label_w + bar_w, 8, l->b, bd_role_attr(l->rb), false);
            break;
        }
        case L_DIFF: {
            int pw = r->width / 4 < 28 ? r->width / 4 : 28;
            int vw = (cols - pw - 6) / 2;
            attr_t pa = l->frac > 0 ? A_BOLD : A_NORMAL;
            if (l->ra == BD_R_MUTED && l->rb == BD_R_MUTED) /* the column heads */
                pa = bd_role_attr(BD_R_MUTED) | A_BOLD;
            bd_draw_text(w, y, 1, pw, l->a, pa, false);
            bd_draw_text(w, y, 2 + pw, vw, l->b ? l->b : "", bd_role_attr(l->ra), false);
            bd_draw_text(w, y, 3 + pw + vw, 1, bd_gl->vline, bd_role_attr(BD_R_MUTED), false);
            bd_draw_text(w, y, 5 + pw + vw, cols - 5 - pw - vw, l->c ? l->c : "",
                         bd_role_attr(l->rb), false);
            break;
        }
        case L_PAIR:
            if (l->b && l->ra != BD_R_DIFF_CTX) { /* failure mode: severity+code, then text */
                bd_draw_text(w, y, 3, 34, l->a, bd_role_attr(l->ra), false);
                bd_draw_text(w, y, 38, cols - 38, l->b, bd_role_attr(l->rb), false);
            } else {
                bd_draw_text(w, y, 1, half, l->a, bd_role_attr(BD_R_DIFF_CTX), false);
                bd_draw_text(w, y, 2 + half, 1, bd_gl->vline, bd_role_attr(BD_R_MUTED), false);
                bd_draw_text(w, y, 4 + half, cols - 4 - half, l->b ? l->b : "",
                             bd_role_attr(BD_R_DIFF_CTX), false);
            }
            break;
        default:
            bd_draw_text(w, y, 1, cols - 1, l->a, bd_role_attr(l->ra), false);
            break;
        }
        if (r->search[0] && line_matches(l, r->search))
            bd_draw_text(w, y, 0, 1, bd_gl->arrow, bd_role_attr(BD_R_WARN) | A_BOLD, false);
    }
}

/* Move to the next (dir 1) or previous (-1) failed case, wrapping around. */
static void walk(bd_view *v, int dir)
{
    result *r = v->state;
    size_t n = r->arg.provider.count(r->arg.provider.payload);
    for (size_t k = 1; k <= n; k++) {
        size_t i = dir > 0 ? (r->index + k) % n : (r->index + n - (k % n)) % n;
        if (is_failed(r, i)) {
            if (i == r->index)
                break;
            r->index = i;
            if (r->arg.provider.follow)
                r->arg.provider.follow(r->arg.provider.payload, i);
            build(v);
            return;
        }
    }
    bd_app_message(v->app, BD_MSG_INFO,
                   r->n_failed_total ? "this is the only failed case"
                                     : "no failed case in this list");
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    result *r = v->state;
    size_t page = (size_t)(getmaxy(v->app->body) > 2 ? getmaxy(v->app->body) - 2 : 1);
    if (bd_view_scroll(&r->top, r->n, a, page))
        return true;
    switch (a) {
    case BD_A_NEXT_FAIL:
        if (r->search[0]) { /* while searching, n is the next match */
            if (!find_match(r, r->top + 1, 1))
                bd_app_message(v->app, BD_MSG_WARN, "no line matches '%s'", r->search);
            return true;
        }
        walk(v, 1);
        return true;
    case BD_A_PREV_MATCH:
        if (r->search[0]) {
            if (!find_match(r, r->top ? r->top - 1 : r->n - 1, -1))
                bd_app_message(v->app, BD_MSG_WARN, "no line matches '%s'", r->search);
        } else {
            bd_app_message(v->app, BD_MSG_INFO, "N moves between matches of a search: / first");
        }
        return true;
    case BD_A_PREV_FAIL:
        walk(v, -1);
        return true;
    case BD_A_SEARCH:
        bd_app_prompt(v->app, v, r->search, search_changed, search_done);
        return true;
    case BD_A_OPEN_CASE:
        open_case(v);
        return true;
    case BD_A_OPEN_RUBRIC:
        open_rubric(v);
        return true;
    case BD_A_ESCAPE:
        if (!r->search[0])
            return false;
        r->search[0] = '\0';
        bd_app_message(v->app, BD_MSG_INFO, "search ended");
        return true;
    case BD_A_EDIT:
        open_pager(v);
        return true;
    case BD_A_HISTORY: {
        bd_result_src src;
        if (r->arg.provider.get(r->arg.provider.payload, r->index, &src))
            bd_app_open_history(v->app, src.task_class, src.case_id);
        return true;
    }
    case BD_A_VERDICT: {
        bd_result_src src;
        if (!r->arg.provider.get(r->arg.provider.payload, r->index, &src) || !src.seq) {
            bd_app_message(v->app, BD_MSG_WARN, "a verdict needs a record in the history");
            return true;
        }
        bd_review_arg ra = {src.task_class, src.seq, src.case_id, src.run_id, src.score->passed};
        bd_app_open(v->app, BD_VIEW_REVIEW, &ra);
        return true;
    }
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    result *r = v->state;
    /* A run result that was still going when the view opened has arrived. */
    if (ev->kind == BD_EV_RUN && !r->have) {
        build(v);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    } else if (ev->kind == BD_EV_RUN) {
        count_failed(r);
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    } else if (ev->kind == BD_EV_HISTORY && r->have) { /* verdict badges read again */
        size_t top = r->top;
        build(v);
        r->top = top;
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
}

static void resize(bd_view *v, int rows, int cols)
{
    (void)rows;
    result *r = v->state;
    if (cols != r->width) {
        size_t top = r->top;
        build(v);
        r->top = top;
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)y;
    (void)x;
    result *r = v->state;
    if (ev->bstate & BUTTON4_PRESSED)
        r->top = r->top > 3 ? r->top - 3 : 0;
#ifdef BUTTON5_PRESSED
    if (ev->bstate & BUTTON5_PRESSED)
        r->top += 3;
#endif
}

static void position(bd_view *v, char *out, size_t cap)
{
    result *r = v->state;
    bd_view_line_position(out, cap, r->top, r->n);
}

const bd_view_ops bd_view_result = {
    "result", actions, open_view, draw, key, event, resize, mouse, position, close_view, NULL, NULL,
};
