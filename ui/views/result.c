/*
 * result.c — one scored case, for the reviewer: pass/fail and score, the breakdown as
 * labelled bars, failure modes by severity with their detail, the rubric's stderr, and
 * the expected answer beside the harness output; `n`/`p` walk to the next/previous
 * failed case of the list it was opened from (DESIGN.md §10).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gitops.h"
#include "model.h"
#include "result_api.h"
#include "runner.h"
#include "stale.h"
#include "tui_internal.h"
#include "view_util.h"

#define STDERR_MAX (64 * 1024)
#define SIDE_MAX   (256 * 1024)

typedef enum { L_TEXT, L_HEADING, L_BAR, L_PAIR, L_FIELD } line_kind;

typedef struct rline {
    line_kind kind;
    char *a, *b;
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
    /* A stale record: the case as it was when scored, looked up in git off the loop. */
    unsigned stale;               /* BD_STALE_* bits of the shown record */
    struct past_job *past_job;    /* the lookup in flight, or NULL */
    char past_for[BD_DIGEST_BUF]; /* the case digest the lookup below is for */
    int past_rc;                  /* 1 found, 0 not in git, -1 failed, -2 not looked up */
    bd_git_case_version past;
    bd_err past_err;
} result;

static const bd_action actions[] = {BD_A_NEXT_FAIL, BD_A_PREV_FAIL, BD_A_HISTORY, BD_A_NONE};

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
    }
    r->n = 0;
    r->top = 0;
}

/* Read at most `max` bytes of `path` (O_NOFOLLOW, regular files only); NULL if absent. */
static char *read_small(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size < max ? (size_t)st.st_size : max;
    char *buf = malloc(cap + 1);
    size_t got = 0;
    while (buf && got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[got] = '\0';
    *len = got;
    return buf;
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
        snprintf(buf, sizeof(buf), "  %s: %s", bd_code_str(r->past_err.code), r->past_err.msg);
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

static void build(bd_view *v)
{
    result *r = v->state;
    bd_model *m = v->app->model;
    bd_result_src src;
    char buf[2048];
    clear_lines(r);
    r->width = v->app->body ? getmaxx(v->app->body) : 80;
    r->have = r->arg.provider.get(r->arg.provider.payload, r->index, &src);
    if (!r->have) {
        add(r, L_TEXT, "no result for this row", BD_R_MUTED, NULL, 0, 0);
        return;
    }
    const bd_score *sc = src.score;
    r->passed = sc->passed;
    r->score = sc->score;
    snprintf(r->case_id, sizeof(r->case_id), "%s", src.case_id);
    snprintf(v->title, sizeof(v->title), "%s", src.case_id);
    count_failed(r);
    size_t ti = bd_model_find_tc(m, src.task_class);
    const bd_task_class *tc = ti == SIZE_MAX ? NULL : bd_model_tc(m, ti);

    add(r, L_FIELD, "task class", BD_R_DIFF_CTX, src.task_class, BD_R_DIFF_CTX, 0);
    add(r, L_FIELD, "run", BD_R_DIFF_CTX, src.run_id ? src.run_id : "-", BD_R_DIFF_CTX, 0);
    char when[160] = "";
    if (src.wall_ms >= 0) {
        char d[32];
        bd_human_ms(d, sizeof(d), src.wall_ms);
        snprintf(when, sizeof(when), "%s in %s, %s", src.finished_at ? src.finished_at : "", d,
                 src.isolation ? src.isolation : "");
    } else {
        snprintf(when, sizeof(when), "%s, %s", src.finished_at ? src.finished_at : "",
                 src.isolation ? src.isolation : "");
    }
    add(r, L_FIELD, "finished", BD_R_DIFF_CTX, when, BD_R_DIFF_CTX, 0);
    if (src.seq) {
        snprintf(buf, sizeof(buf), "#%llu  %.16s%s", (unsigned long long)src.seq,
                 src.record_hash ? src.record_hash : "", bd_gl->ellipsis);
        add(r, L_FIELD, "record", BD_R_DIFF_CTX, buf, BD_R_DIFF_CTX, 0);
    } else {
        add(r, L_FIELD, "record", BD_R_DIFF_CTX, "not in the history", BD_R_WARN, 0);
    }
    if (src.origin) {
        /* The host passed the record parser: printable ASCII without spaces. */
        snprintf(buf, sizeof(buf), "shard %u of %u on %s, bundle record %.16s%s", src.origin->shard,
                 src.origin->shards, src.origin->host, src.origin->bundle_record_hash,
                 bd_gl->ellipsis);
        add(r, L_FIELD, "origin", BD_R_DIFF_CTX, buf, BD_R_DIFF_CTX, 0);
    }
    /* Current or stale against today's pins (stale.c); a live result is current. */
    r->stale = 0;
    if (src.seq) {
        r->stale = bd_stale_bits(src.case_id, src.case_digest, src.task_class_digest,
                                 tc ? tc->digests : NULL);
    }
    if (r->stale)
        add_stale(v, &src);
    snprintf(buf, sizeof(buf), "%.2f", sc->score);
    add(r, L_BAR, "score", BD_R_TITLE, buf, sc->passed ? BD_R_OK : BD_R_FAIL, sc->score);
    if (sc->cost_usd > 0) {
        snprintf(buf, sizeof(buf), "$%.4f", sc->cost_usd);
        add(r, L_FIELD, "cost", BD_R_DIFF_CTX, buf, BD_R_DIFF_CTX, 0);
    }

    add(r, L_HEADING, "Breakdown", BD_R_TITLE, NULL, 0, 0);
    if (!sc->n_breakdown)
        add(r, L_TEXT, "  (none)", BD_R_MUTED, NULL, 0, 0);
    for (size_t i = 0; i < sc->n_breakdown; i++) {
        snprintf(buf, sizeof(buf), "%.2f", sc->breakdown[i].value);
        add(r, L_BAR, sc->breakdown[i].key, BD_R_DIFF_CTX, buf,
            sc->breakdown[i].value >= 0.999 ? BD_R_OK : BD_R_WARN, sc->breakdown[i].value);
    }

    add(r, L_HEADING, "Failure modes", BD_R_TITLE, NULL, 0, 0);
    if (!sc->n_failure_modes)
        add(r, L_TEXT, "  (none)", BD_R_MUTED, NULL, 0, 0);
    for (int rank = 0; rank < 3; rank++)
        for (size_t i = 0; i < sc->n_failure_modes; i++) {
            const bd_score_fm *fm = &sc->failure_modes[i];
            if (sev_rank(fm->severity) != rank)
                continue;
            bd_role role = rank == 0 ? BD_R_FAIL : rank == 1 ? BD_R_WARN : BD_R_MUTED;
            const bd_failure_mode_def *def =
                tc ? bd_registration_failure_mode(tc->reg, fm->code) : NULL;
            snprintf(buf, sizeof(buf), "%-5s %s", bd_severity_str(fm->severity), fm->code);
            const char *what = def && def->description ? def->description : "";
            char rest[1400];
            snprintf(rest, sizeof(rest), "%s%s%s", what, what[0] && fm->detail ? ": " : "",
                     fm->detail ? fm->detail : "");
            /* The reviewer needs all of it: wrap under the code. */
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

    /* The rubric's stderr: the run's copy, else the file the runner kept. */
    char *err_buf = NULL;
    size_t err_len = 0;
    if (src.stderr_tail) {
        err_buf = strndup(src.stderr_tail, src.stderr_len);
        err_len = src.stderr_len;
    } else if (src.run_id) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/%s/%s/%s.stderr", v->app->bench->root, BD_RUNS_DIR,
                 src.run_id, src.case_id);
        err_buf = read_small(path, STDERR_MAX, &err_len);
    }
    add(r, L_HEADING, "Rubric stderr", BD_R_TITLE, NULL, 0, 0);
    if (err_buf && err_len) {
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

    /* Expected (case.yaml) beside the harness output (cassette or the SUT's output). */
    char *exp = NULL, *got = NULL;
    if (tc) {
        bd_case *c = NULL;
        bd_err e = BD_ERR_INIT;
        /* A stale record was scored against the case as it was: show that expected. */
        bool as_scored = (r->stale & BD_STALE_CASE) && r->past_rc == 1 && r->past.case_yaml;
        int lrc = as_scored ? bd_case_parse(&c, r->past.case_yaml, r->past.case_yaml_len,
                                            "case.yaml (as scored)", src.case_id, &e)
                            : bd_task_class_case(&c, tc, src.case_id, &e);
        if (lrc == 0) {
            cJSON *j = c->expected ? bd_ynode_to_json(c->expected) : NULL;
            char *t = j ? cJSON_PrintUnformatted(j) : NULL;
            if (t)
                exp = pretty(t, strlen(t));
            free(t);
            cJSON_Delete(j);
            bd_case_free(c);
        } else {
            snprintf(buf, sizeof(buf), "%s: %s", bd_code_str(e.code), e.msg);
            exp = strdup(buf);
        }
        char path[4400];
        size_t len = 0;
        char *raw = NULL;
        if (src.run_id) {
            snprintf(path, sizeof(path), "%s/%s/%s/%s.harness_output.json", v->app->bench->root,
                     BD_RUNS_DIR, src.run_id, src.case_id);
            raw = read_small(path, SIDE_MAX, &len);
        }
        if (!raw) {
            snprintf(path, sizeof(path), "%s/%s/cassette.json", tc->cases_dir, src.case_id);
            raw = read_small(path, SIDE_MAX, &len);
        }
        if (raw)
            got = pretty(raw, len);
        free(raw);
    }
    add(r, L_HEADING,
        !(r->stale & BD_STALE_CASE) ? "Expected"
        : (r->past_rc == 1)         ? "Expected (as scored)"
                                    : "Expected (today's: the case changed)",
        BD_R_TITLE, "Harness output", BD_R_TITLE, 0);
    char *el[2048], *gl[2048];
    size_t ne = split_lines(exp, el, 2048), ng = split_lines(got, gl, 2048);
    if (!ne && !ng)
        add(r, L_TEXT, "  (neither is available)", BD_R_MUTED, NULL, 0, 0);
    for (size_t i = 0; i < ne || i < ng; i++)
        add(r, L_PAIR, i < ne ? el[i] : "", BD_R_DIFF_CTX, i < ng ? gl[i] : "", BD_R_DIFF_CTX, 0);
    free(exp);
    free(got);
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
    int rx = bd_draw_right(w, 0, cols, right, bd_role_attr(BD_R_TITLE));
    snprintf(title, sizeof(title), " %s  score %.2f", r->case_id, r->score);
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
    switch (a) {
    case BD_A_UP:
        if (r->top)
            r->top--;
        return true;
    case BD_A_DOWN:
        r->top++;
        return true;
    case BD_A_PAGE_UP:
        r->top = r->top > page ? r->top - page : 0;
        return true;
    case BD_A_PAGE_DOWN:
        r->top += page;
        return true;
    case BD_A_HOME:
        r->top = 0;
        return true;
    case BD_A_END:
        r->top = r->n;
        return true;
    case BD_A_NEXT_FAIL:
        walk(v, 1);
        return true;
    case BD_A_PREV_FAIL:
        walk(v, -1);
        return true;
    case BD_A_HISTORY: {
        bd_result_src src;
        if (r->arg.provider.get(r->arg.provider.payload, r->index, &src))
            bd_app_open_history(v->app, src.task_class, src.case_id);
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
    snprintf(out, cap, "line %zu/%zu", r->n ? r->top + 1 : 0, r->n);
}

const bd_view_ops bd_view_result = {
    "result", actions, open_view, draw, key, event, resize, mouse, position, close_view,
};
