/*
 * case.c — one case: case.yaml rendered, its provenance with each signature's status and
 * signer, and the files of input/ and expected/ (and the cassette) with a preview pane
 * (docs/user-guide.md). Signatures are verified with GnuPG on the thread pool; the rest is a
 * few small reads when the view opens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_keys.h"
#include "fsutil.h"
#include "model.h"
#include "session.h"
#include "curate.h"
#include "view_util.h"
#include "views/case_view.h"

#define PREVIEW_MAX   (64 * 1024) /* bytes of a file shown in the preview */
#define MAX_FILES     2000
#define MAX_DEPTH     16
#define MAX_DOC_LINES 4000

typedef struct doc_line {
    char *label; /* left column (may be NULL) */
    char *value;
    bd_role role;
    bool heading;
    int file; /* index into files, or -1 */
} doc_line;

typedef bd_tree_entry file_ent; /* fsutil.h: rel, size, regular */

typedef struct prov_job prov_job;

typedef struct case_view {
    bd_case_ref ref;
    bd_case *c;
    bd_provfile *pf; /* its provenance.yaml; NULL when it failed to load (load_err) */
    bd_err load_err;
    doc_line *lines;
    size_t n_lines, cap_lines;
    file_ent *files;
    size_t n_files;
    bd_list list;
    int wrap_w; /* columns of the value column when the lines were built (0: unknown) */
    /* preview */
    int preview_of; /* file index shown, -2 = case.yaml, -3 = nothing yet */
    char *pv_buf;
    size_t *pv_lines; /* line start offsets */
    size_t pv_n;
    size_t pv_top;
    char pv_title[512];
    bool focus_preview;
    /* provenance */
    prov_job *job;
    bool prov_done;
    bd_prov_result prov;
    bd_err prov_err;
    int prov_rc;
} case_view;

struct prov_job {
    bd_work work;
    bd_view *view; /* NULL once the view closed */
    bd_tc_ref *ref;
    bd_prov_ctx *ctx;
    char *case_id;
    char digest[BD_DIGEST_BUF];
    bd_prov_result res;
    bd_err err;
    int rc;
};

static const bd_action actions[] = {BD_A_FOCUS, BD_A_RUN,       BD_A_HISTORY,
                                    BD_A_SIGN,  BD_A_RECORD,    BD_A_STAGE_VIEW,
                                    BD_A_PIN,   BD_A_EDIT_FILE, BD_A_NONE};

static const bd_ui_case *row_of(bd_view *v)
{
    case_view *s = v->state;
    return &v->app->model->tcs[s->ref.tc_index].cases[s->ref.case_index];
}

/* ---- the document ------------------------------------------------------------------- */

static void add_line_1(case_view *s, const char *label, const char *value, bd_role role,
                       bool heading, int file);

/* A failure (a BAD signature's reason, a digest mismatch) is wrapped over as many lines
 * as it takes, never cut: its end says what to do. Other lines are cut to the screen. */
static void add_line(case_view *s, const char *label, const char *value, bd_role role, bool heading,
                     int file)
{
    if (role != BD_R_FAIL || !value || s->wrap_w < 20 || bd_text_width(value) <= s->wrap_w) {
        add_line_1(s, label, value, role, heading, file);
        return;
    }
    char *vis = bd_text_vis(value, 0);
    if (!vis) {
        add_line_1(s, label, value, role, heading, file);
        return;
    }
    size_t len = strlen(vis), off = 0;
    while (off < len) {
        size_t take = bd_wrap_next(vis + off, len - off, s->wrap_w);
        char *part = strndup(vis + off, take);
        if (part)
            add_line_1(s, off ? "" : label, part, role, heading, file);
        free(part);
        off += take;
        while (off < len && vis[off] == ' ')
            off++;
    }
    free(vis);
}

static void add_line_1(case_view *s, const char *label, const char *value, bd_role role,
                       bool heading, int file)
{
    if (s->n_lines >= MAX_DOC_LINES)
        return;
    if (s->n_lines == s->cap_lines) {
        size_t nc = s->cap_lines ? s->cap_lines * 2 : 64;
        doc_line *g = realloc(s->lines, nc * sizeof(*g));
        if (!g)
            return;
        s->lines = g;
        s->cap_lines = nc;
    }
    doc_line *l = &s->lines[s->n_lines];
    l->label = label ? strdup(label) : NULL;
    l->value = strdup(value ? value : "");
    if ((label && !l->label) || !l->value) {
        free(l->label);
        free(l->value);
        return;
    }
    l->role = role;
    l->heading = heading;
    l->file = file;
    s->n_lines++;
}

static void free_lines(case_view *s)
{
    for (size_t i = 0; i < s->n_lines; i++) {
        free(s->lines[i].label);
        free(s->lines[i].value);
    }
    s->n_lines = 0;
}

/* A YAML value on one line: scalars as written, sequences of scalars as [a, b]. */
static void inline_value(const bd_ynode *n, char *out, size_t cap)
{
    out[0] = '\0';
    if (!n)
        return;
    if (n->kind == BD_Y_SCALAR) {
        snprintf(out, cap, "%s", n->str);
        return;
    }
    size_t len = 0;
    bool seq = n->kind == BD_Y_SEQ;
    len += (size_t)snprintf(out, cap, "%s", seq ? "[" : "{");
    for (size_t i = 0; i < n->n && len < cap; i++) {
        char item[256];
        if (seq)
            inline_value(n->items[i], item, sizeof(item));
        else {
            char v[200];
            inline_value(n->pairs[i].value, v, sizeof(v));
            snprintf(item, sizeof(item), "%s: %s", n->pairs[i].key->str, v);
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", item);
    }
    if (len < cap)
        snprintf(out + len, cap - len, "%s", seq ? "]" : "}");
}

/* The `expected` mapping, one key per line, nested mappings indented. */
static void add_yaml(case_view *s, const bd_ynode *map, int depth)
{
    if (!map || map->kind != BD_Y_MAP || depth > 8)
        return;
    for (size_t i = 0; i < map->n; i++) {
        char label[160];
        snprintf(label, sizeof(label), "%*s%s", 2 + 2 * depth, "", map->pairs[i].key->str);
        const bd_ynode *val = map->pairs[i].value;
        if (val->kind == BD_Y_MAP && val->n > 0) {
            add_line(s, label, "", BD_R_DIFF_CTX, false, -1);
            add_yaml(s, val, depth + 1);
        } else {
            char buf[1024];
            inline_value(val, buf, sizeof(buf));
            add_line(s, label, buf, BD_R_DIFF_CTX, false, -1);
        }
    }
}

static void add_sig(bd_view *v, const char *label, const bd_signature_block *b,
                    const bd_prov_sig *verified)
{
    case_view *s = v->state;
    char buf[1024];
    if (!b->present) {
        add_line(s, label, "- none", BD_R_MUTED, false, -1);
        return;
    }
    char fpr[64];
    snprintf(fpr, sizeof(fpr), "%.4s%s%.4s", b->fingerprint, bd_gl->ellipsis,
             b->fingerprint + (strlen(b->fingerprint) > 4 ? strlen(b->fingerprint) - 4 : 0));
    if (!v->app->model->prov) {
        snprintf(buf, sizeof(buf), "? %s (%s) not verified: %s", b->identity ? b->identity : "",
                 fpr, bd_tui_err_text(&v->app->model->prov_err));
        add_line(s, label, buf, BD_R_WARN, false, -1);
    } else if (!s->prov_done) {
        snprintf(buf, sizeof(buf), "%s %s (%s) verifying", bd_gl->pending,
                 b->identity ? b->identity : "", fpr);
        add_line(s, label, buf, BD_R_MUTED, false, -1);
    } else if (verified && verified->present && verified->err.code == BD_OK) {
        snprintf(buf, sizeof(buf), "%s %s (%s) good signature by a trusted %s", bd_gl->ok,
                 b->identity ? b->identity : "", fpr, label);
        add_line(s, label, buf, BD_R_OK, false, -1);
    } else {
        const bd_err *e = verified && verified->err.code != BD_OK ? &verified->err : &s->prov.err;
        snprintf(buf, sizeof(buf), "%s %s (%s) %s: %s", bd_gl->bad, b->identity ? b->identity : "",
                 fpr, bd_code_str(e->code), bd_tui_err_text(e));
        add_line(s, label, buf, BD_R_FAIL, false, -1);
    }
}

static void build_doc(bd_view *v)
{
    case_view *s = v->state;
    const bd_ui_case *row = row_of(v);
    const bd_case *c = s->c;
    char buf[1200];
    free_lines(s);
    if (!c) {
        snprintf(buf, sizeof(buf), "%s: %s", bd_code_str(s->load_err.code),
                 bd_tui_err_text(&s->load_err));
        add_line(s, "case.yaml", buf, BD_R_FAIL, false, -1);
    } else {
        add_line(s, "title", c->title, BD_R_DIFF_CTX, false, -1);
        snprintf(buf, sizeof(buf), "%s, %s", bd_disposition_str(c->disposition),
                 bd_difficulty_str(c->difficulty));
        add_line(s, "kind", buf, BD_R_DIFF_CTX, false, -1);
        snprintf(buf, sizeof(buf), "%s (%s %s)", c->source ? c->source : "",
                 c->source_ref_type ? c->source_ref_type : "",
                 c->source_ref_value ? c->source_ref_value : "");
        add_line(s, "source", buf, BD_R_DIFF_CTX, false, -1);
        const char *validated = s->pf ? s->pf->last_validated_at : NULL;
        snprintf(buf, sizeof(buf), "%s%s%s", c->added_at ? c->added_at : "",
                 validated ? ", validated " : "", validated ? validated : "");
        add_line(s, "added", buf, BD_R_DIFF_CTX, false, -1);
        if (c->wall_clock_s || c->memory_mb) {
            snprintf(buf, sizeof(buf), "wall clock %d s, memory %d MB", c->wall_clock_s,
                     c->memory_mb);
            add_line(s, "limits", buf, BD_R_DIFF_CTX, false, -1);
        }
    }
    /* Integrity, from the model's verification. */
    if (row->digest == BD_LOAD_DONE) {
        snprintf(buf, sizeof(buf), "%s %s (equals its pin)", bd_gl->ok, row->digest_hex);
        add_line(s, "digest", buf, BD_R_OK, false, -1);
    } else if (row->digest == BD_LOAD_FAILED) {
        snprintf(buf, sizeof(buf), "%s %s: %s", bd_gl->bad, bd_code_str(row->digest_code),
                 row->digest_msg ? row->digest_msg : "");
        add_line(s, "digest", buf, BD_R_FAIL, false, -1);
    } else {
        snprintf(buf, sizeof(buf), "%s hashing", bd_gl->pending);
        add_line(s, "digest", buf, BD_R_MUTED, false, -1);
    }
    if (c && c->has_cassette_digest && c->cassette_digest[0])
        add_line(s, "cassette", c->cassette_digest, BD_R_DIFF_CTX, false, -1);

    add_line(s, NULL, "Provenance", BD_R_TITLE, true, -1);
    if (c) {
        if (s->prov_done && s->prov_rc != 0) {
            const bd_err *e = s->prov_rc < 0 ? &s->prov_err : &s->prov.err;
            snprintf(buf, sizeof(buf), "%s BAD %s: %s", bd_gl->bad, bd_code_str(e->code),
                     bd_tui_err_text(e));
            add_line(s, "status", buf, BD_R_FAIL, false, -1);
        } else if (s->prov_done) {
            snprintf(buf, sizeof(buf), "%s", bd_prov_status_str(s->prov.status));
            add_line(s, "status", buf,
                     s->prov.status == BD_PROV_ST_SIGNED     ? BD_R_OK
                     : s->prov.status == BD_PROV_ST_AWAITING ? BD_R_WARN
                                                             : BD_R_MUTED,
                     false, -1);
        }
        static const bd_signature_block none = {0};
        add_sig(v, "author", s->pf ? &s->pf->author : &none, s->prov_done ? &s->prov.author : NULL);
        add_sig(v, "reviewer", s->pf ? &s->pf->reviewer : &none,
                s->prov_done ? &s->prov.reviewer : NULL);
        add_line(s, NULL, "Expected", BD_R_TITLE, true, -1);
        add_yaml(s, c->expected, 0);
    }
    add_line(s, NULL, "Files", BD_R_TITLE, true, -1);
    add_line(s, "case.yaml", "(metadata, ground truth and limits: hashed into the digest)",
             BD_R_MUTED, false, -2);
    for (size_t i = 0; i < s->n_files; i++) {
        char size[32];
        if (s->files[i].regular)
            bd_human_size(size, sizeof(size), s->files[i].size);
        else
            snprintf(size, sizeof(size), "not a regular file (refused)");
        add_line(s, s->files[i].rel, size, s->files[i].regular ? BD_R_DIFF_CTX : BD_R_FAIL, false,
                 (int)i);
    }
    if (!s->n_files)
        add_line(s, NULL, "  (no files under input/ or expected/)", BD_R_MUTED, false, -1);
    if (bd_list_rebuild(&s->list, s->n_lines, NULL, NULL, NULL) < 0)
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
}

/* ---- files -------------------------------------------------------------------------- */

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const file_ent *)a)->rel, ((const file_ent *)b)->rel);
}

/* Append the entries of `e` (n of them) to the case's files, up to MAX_FILES; frees e. */
static void add_files(case_view *s, bd_tree_entry *e, size_t n)
{
    size_t room = MAX_FILES - s->n_files, take = n < room ? n : room;
    file_ent *g = take ? realloc(s->files, (s->n_files + take) * sizeof(*g)) : NULL;
    if (g) {
        s->files = g;
        memcpy(g + s->n_files, e, take * sizeof(*e));
        s->n_files += take;
        for (size_t i = take; i < n; i++)
            free(e[i].rel);
    } else {
        bd_tree_entries_free(e, n);
        return;
    }
    free(e);
}

/* The files of input/ and expected/ (never through a symbolic link) and the cassette,
 * listed by the core (fsutil.h). */
static void list_files(bd_view *v)
{
    case_view *s = v->state;
    const bd_task_class *tc = bd_model_tc(v->app->model, s->ref.tc_index);
    if (!tc)
        return;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s", tc->cases_dir, row_of(v)->id);
    const char *subs[] = {"input", "expected", "."};
    for (size_t k = 0; k < 3; k++) {
        bd_tree_entry *e = NULL;
        size_t n = 0;
        bd_err err = BD_ERR_INIT;
        if (bd_list_tree(&e, &n, dir, subs[k], k < 2 ? MAX_DEPTH : 0, MAX_FILES, &err) < 0) {
            bd_app_error(v->app, &err);
            continue;
        }
        if (k == 2) { /* the case directory itself: only its cassette */
            size_t w = 0;
            for (size_t i = 0; i < n; i++) {
                if (strcmp(e[i].rel, "./cassette.json") == 0) {
                    memmove(e[i].rel, e[i].rel + 2, strlen(e[i].rel + 2) + 1);
                    e[w++] = e[i];
                } else {
                    free(e[i].rel);
                }
            }
            n = w;
        }
        add_files(s, e, n);
    }
    if (s->n_files > 1)
        qsort(s->files, s->n_files, sizeof(*s->files), file_cmp);
}

/* ---- preview ------------------------------------------------------------------------ */

static void preview_clear(case_view *s)
{
    free(s->pv_buf);
    free(s->pv_lines);
    s->pv_buf = NULL;
    s->pv_lines = NULL;
    s->pv_n = s->pv_top = 0;
}

static void preview_text(case_view *s, char *buf)
{
    preview_clear(s);
    s->pv_buf = buf;
    size_t n = 1;
    for (char *p = buf; *p; p++)
        n += *p == '\n';
    s->pv_lines = calloc(n, sizeof(*s->pv_lines));
    if (!s->pv_lines)
        return;
    s->pv_n = 0;
    s->pv_lines[s->pv_n++] = 0;
    for (size_t i = 0; buf[i]; i++)
        if (buf[i] == '\n' && buf[i + 1])
            s->pv_lines[s->pv_n++] = i + 1;
}

/* Show file `idx` (-2: case.yaml) in the preview: at most PREVIEW_MAX bytes, opened
 * O_NOFOLLOW; a binary file (a NUL byte) is described, not shown. */
static void load_preview(bd_view *v, int idx)
{
    case_view *s = v->state;
    if (s->preview_of == idx)
        return;
    s->preview_of = idx;
    const bd_task_class *tc = bd_model_tc(v->app->model, s->ref.tc_index);
    if (!tc)
        return;
    const char *rel = idx == -2 ? "case.yaml" : s->files[idx].rel;
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/%s", tc->cases_dir, row_of(v)->id, rel);
    char *buf = NULL;
    char msg[600];
    size_t got = 0;
    unsigned long long fsize = 0;
    bd_err err = BD_ERR_INIT;
    /* 64 bytes spare: room to describe a binary file in place. */
    if (bd_read_file_head(&buf, &got, &fsize, path, PREVIEW_MAX, 64, &err) < 0) {
        snprintf(msg, sizeof(msg), "(cannot show %s: %s)", rel,
                 err.code == BD_E_UNSUPPORTED_ENTRY ? "not a regular file" : bd_tui_err_text(&err));
        snprintf(s->pv_title, sizeof(s->pv_title), "%s", rel);
        preview_text(s, strdup(msg));
        return;
    }
    size_t cap = got;
    char size[32];
    bd_human_size(size, sizeof(size), fsize);
    if (memchr(buf, '\0', got)) {
        snprintf(buf, cap + 64, "(binary file, %s)", size);
    } else if (fsize > got) {
        snprintf(s->pv_title, sizeof(s->pv_title), "%s (%s, first %zu bytes)", rel, size, got);
        preview_text(s, buf);
        return;
    }
    snprintf(s->pv_title, sizeof(s->pv_title), "%s (%s)", rel, size);
    preview_text(s, buf);
}

static void sync_preview(bd_view *v)
{
    case_view *s = v->state;
    size_t row = bd_list_selected(&s->list);
    int f = row < s->n_lines ? s->lines[row].file : -1;
    if (f == -1)
        f = s->preview_of >= -2 ? s->preview_of : -2; /* keep what was shown */
    load_preview(v, f);
}

/* ---- provenance on the pool --------------------------------------------------------- */

static void prov_run(bd_work *w)
{
    prov_job *j = (prov_job *)w;
    bd_provfile *pf = NULL;
    const bd_task_class *tc = j->ref->tc;
    j->rc = -1;
    if (bd_task_class_case_prov(&pf, tc, j->case_id, &j->err) < 0)
        return;
    if (!j->digest[0]) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/%s", j->ref->tc->cases_dir, j->case_id);
        bd_err derr = BD_ERR_INIT;
        if (bd_digest_case_dir(j->digest, dir, NULL, &derr) < 0)
            j->digest[0] = '\0';
    }
    const bd_pin *pin = bd_digests_find(tc->digests, j->case_id);
    bd_subject sj = {BD_SUBJECT_CASE,          tc->name, j->case_id, j->digest,
                     pin ? pin->digest : NULL, pf};
    j->rc = bd_provenance_verify(&j->res, j->ctx, &sj, &j->err);
    bd_provfile_free(pf);
}

static void prov_done(bd_work *w, bool ran)
{
    prov_job *j = (prov_job *)w;
    bd_view *v = j->view;
    if (v) /* even when quitting: close_view must not reach the freed job */
        ((case_view *)v->state)->job = NULL;
    if (v && !v->app->quitting) {
        case_view *s = v->state;
        s->job = NULL;
        s->prov_done = true;
        s->prov_rc = ran ? j->rc : -1;
        s->prov = j->res;
        s->prov_err = j->err;
        if (!ran)
            bd_err_set(&s->prov_err, BD_E_RUN_CANCELLED, NULL, 0, 0, "verification cancelled");
        size_t keep = s->list.cursor, top = s->list.top;
        build_doc(v);
        s->list.cursor = keep < s->list.n_vis ? keep : 0;
        s->list.top = top;
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
    bd_model_tc_release(j->ref);
    free(j->case_id);
    free(j);
}

static void start_prov(bd_view *v)
{
    case_view *s = v->state;
    bd_model *m = v->app->model;
    if (!s->c || !s->pf || !m->prov || bd_prov_claim_of(s->pf) == BD_PROV_DRAFT) {
        /* Nothing to verify: a draft is a draft. */
        s->prov_done = s->c && s->pf && bd_prov_claim_of(s->pf) == BD_PROV_DRAFT;
        s->prov.status = BD_PROV_ST_DRAFT;
        s->prov_rc = 0;
        return;
    }
    prov_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->case_id = strdup(row_of(v)->id)) ||
        !(j->ref = bd_model_tc_hold(m, s->ref.tc_index))) {
        if (j)
            free(j->case_id);
        free(j);
        return;
    }
    j->view = v;
    j->ctx = m->prov;
    if (row_of(v)->digest == BD_LOAD_DONE)
        memcpy(j->digest, row_of(v)->digest_hex, sizeof(j->digest));
    j->work.run = prov_run;
    j->work.done = prov_done;
    if (bd_work_queue(v->app, &j->work) < 0) {
        bd_model_tc_release(j->ref);
        free(j->case_id);
        free(j);
        return;
    }
    s->job = j;
    bd_app_animate(v->app);
}

/* ---- the view ----------------------------------------------------------------------- */

static int open_view(bd_view *v, void *arg)
{
    const bd_case_ref *ref = arg;
    const bd_task_class *tc = bd_model_tc(v->app->model, ref->tc_index);
    if (!tc) {
        bd_app_message(v->app, BD_MSG_WARN, "the task class is still loading");
        return -1;
    }
    case_view *s = calloc(1, sizeof(*s));
    if (!s) {
        bd_app_message(v->app, BD_MSG_ERROR, "env.out_of_memory");
        return -1;
    }
    v->state = s;
    s->ref = *ref;
    s->preview_of = -3;
    bd_list_init(&s->list);
    snprintf(v->title, sizeof(v->title), "%s", row_of(v)->id);
    if (bd_task_class_case(&s->c, tc, row_of(v)->id, &s->load_err) < 0)
        s->c = NULL;
    else if (bd_task_class_case_prov(&s->pf, tc, row_of(v)->id, &s->load_err) < 0)
        s->pf = NULL;
    list_files(v);
    start_prov(v);
    build_doc(v);
    load_preview(v, -2);
    return 0;
}

static void close_view(bd_view *v)
{
    case_view *s = v->state;
    if (s->job)
        s->job->view = NULL; /* the job frees itself when it reports */
    free_lines(s);
    free(s->lines);
    for (size_t i = 0; i < s->n_files; i++)
        free(s->files[i].rel);
    free(s->files);
    preview_clear(s);
    bd_list_release(&s->list);
    bd_case_free(s->c);
    bd_provfile_free(s->pf);
    free(s);
}

static int doc_height(int rows)
{
    int h = (rows - 2) * 55 / 100;
    return h < 4 ? 4 : h;
}

static void draw(bd_view *v, WINDOW *w)
{
    case_view *s = v->state;
    const bd_ui_case *row = row_of(v);
    int rows = getmaxy(w), cols = getmaxx(w);
    /* Failures are wrapped to the value column: build again when the width changed. */
    if (s->wrap_w != cols - 14) {
        s->wrap_w = cols - 14;
        build_doc(v);
    }
    /* Title bar: the id, then the integrity and provenance badges on the right. */
    bd_draw_text(w, 0, 0, cols, "", bd_role_attr(BD_R_TITLE), true);
    char right[128];
    const char *prov = !s->prov_done     ? "provenance ..."
                       : s->prov_rc != 0 ? "provenance BAD"
                                         : bd_prov_status_str(s->prov.status);
    snprintf(right, sizeof(right), " %s digest  %s ",
             row->digest == BD_LOAD_DONE     ? bd_gl->ok
             : row->digest == BD_LOAD_FAILED ? bd_gl->bad
                                             : bd_gl->pending,
             prov);
    int rx = bd_draw_right(w, 0, cols, right, bd_role_attr(BD_R_TITLE));
    bd_draw_text(w, 0, 1, rx - 2, row->id, bd_role_attr(BD_R_TITLE), false);

    int dh = doc_height(rows);
    bd_list_scroll(&s->list, dh);
    int label_w = 12;
    for (size_t i = 0; i < s->n_lines && (int)(i - s->list.top) < dh; i++) {
        if (i < s->list.top)
            continue;
        const doc_line *l = &s->lines[i];
        int y = 1 + (int)(i - s->list.top);
        bool sel = i == s->list.cursor && !s->focus_preview;
        attr_t base = sel ? bd_role_attr(BD_R_SELECTION) : A_NORMAL;
        bd_draw_text(w, y, 0, cols, "", base, true);
        if (l->heading) {
            bd_draw_text(w, y, 1, cols - 1, l->value, sel ? base : A_BOLD | A_UNDERLINE, false);
            continue;
        }
        int x = 1;
        if (l->label) {
            int lw = bd_text_width(l->label);
            int width =
                l->file != -1 ? (lw + 2 > 36 ? 36 : lw + 2) : (lw + 2 > label_w ? lw + 1 : label_w);
            if (l->file != -1 && width < 30)
                width = 30;
            bd_draw_text(w, y, x, width, l->label, base | (l->file != -1 ? 0 : A_BOLD), false);
            x += width;
        }
        bd_draw_text(w, y, x, cols - x, l->value, sel ? base : bd_role_attr(l->role), false);
    }
    /* The preview pane. */
    int py = 1 + dh;
    bd_draw_rule(w, py, s->pv_title,
                 s->focus_preview ? bd_role_attr(BD_R_SELECTION) : bd_role_attr(BD_R_MUTED));
    int ph = rows - py - 1;
    if (s->pv_n && s->pv_top > s->pv_n - 1)
        s->pv_top = s->pv_n - 1;
    for (int i = 0; i < ph; i++) {
        size_t li = s->pv_top + (size_t)i;
        if (li >= s->pv_n)
            break;
        const char *start = s->pv_buf + s->pv_lines[li];
        const char *nl = strchr(start, '\n');
        size_t len = nl ? (size_t)(nl - start) : strlen(start);
        bd_draw_textn(w, py + 1 + i, 1, cols - 1, start, len, bd_role_attr(BD_R_DIFF_CTX), false);
    }
}

static bool key(bd_view *v, bd_action a, int ch)
{
    (void)ch;
    case_view *s = v->state;
    if (s->focus_preview) {
        int ph = getmaxy(v->app->body) - doc_height(getmaxy(v->app->body)) - 2;
        size_t page = ph > 1 ? (size_t)ph - 1 : 1;
        switch (a) {
        case BD_A_UP:
            if (s->pv_top)
                s->pv_top--;
            return true;
        case BD_A_DOWN:
            if (s->pv_top + 1 < s->pv_n)
                s->pv_top++;
            return true;
        case BD_A_PAGE_UP:
            s->pv_top = s->pv_top > page ? s->pv_top - page : 0;
            return true;
        case BD_A_PAGE_DOWN:
            if (s->pv_top + page < s->pv_n)
                s->pv_top += page;
            return true;
        case BD_A_HOME:
            s->pv_top = 0;
            return true;
        case BD_A_END:
            s->pv_top = s->pv_n > (size_t)ph ? s->pv_n - (size_t)ph : 0;
            return true;
        case BD_A_FOCUS:
        case BD_A_BACK:
            s->focus_preview = false;
            return true;
        default:
            break;
        }
    } else if (bd_list_move(&s->list, a)) {
        sync_preview(v);
        return true;
    }
    switch (a) {
    case BD_A_FOCUS:
    case BD_A_OPEN:
        s->focus_preview = !s->focus_preview;
        return true;
    case BD_A_RUN: {
        const char *id = row_of(v)->id;
        bd_ui_run_open(v->app, s->ref.tc_index, &id, 1, false, false);
        return true;
    }
    case BD_A_HISTORY:
        bd_app_open_history(v->app, v->app->model->tcs[s->ref.tc_index].name, row_of(v)->id);
        return true;
    case BD_A_SIGN:
        bd_app_open(v->app, BD_VIEW_SIGN, &s->ref);
        return true;
    case BD_A_RECORD:
        bd_app_open(v->app, BD_VIEW_RECORD, &s->ref);
        return true;
    case BD_A_STAGE_VIEW:
        bd_app_open(v->app, BD_VIEW_STAGE, NULL);
        return true;
    case BD_A_EDIT_FILE:
        bd_curate_edit(v, s->ref.tc_index, row_of(v)->id, "case.yaml");
        return true;
    case BD_A_PIN:
        bd_curate_pin(v, s->ref.tc_index, row_of(v)->id);
        return true;
    default:
        return false;
    }
}

static void event(bd_view *v, const bd_event *ev)
{
    case_view *s = v->state;
    if (ev->kind == BD_EV_MODEL && ev->tc_index == s->ref.tc_index) {
        size_t keep = s->list.cursor, top = s->list.top;
        build_doc(v);
        s->list.cursor = keep < s->list.n_vis ? keep : 0;
        s->list.top = top;
        bd_app_invalidate(v->app, BD_DIRTY_BODY);
    }
}

static void mouse(bd_view *v, const MEVENT *ev, int y, int x)
{
    (void)x;
    case_view *s = v->state;
    int dh = doc_height(getmaxy(v->app->body));
    if (y >= 1 && y <= dh) {
        s->focus_preview = false;
        if (bd_list_mouse(&s->list, ev, y - 1))
            s->focus_preview = true;
        sync_preview(v);
    } else if (y > dh + 1) {
        s->focus_preview = true;
        if (ev->bstate & BUTTON4_PRESSED)
            s->pv_top = s->pv_top > 3 ? s->pv_top - 3 : 0;
#ifdef BUTTON5_PRESSED
        if ((ev->bstate & BUTTON5_PRESSED) && s->pv_top + 3 < s->pv_n)
            s->pv_top += 3;
#endif
    }
}

static void position(bd_view *v, char *out, size_t cap)
{
    case_view *s = v->state;
    if (s->focus_preview)
        snprintf(out, cap, "preview %zu/%zu", s->pv_n ? s->pv_top + 1 : 0, s->pv_n);
    else
        bd_view_list_position(&s->list, out, cap);
}

static void where(bd_view *v, bd_view_where *out)
{
    case_view *s = v->state;
    snprintf(out->tc, sizeof(out->tc), "%s", v->app->model->tcs[s->ref.tc_index].name);
    snprintf(out->case_id, sizeof(out->case_id), "%s", row_of(v)->id);
}

const bd_view_ops bd_view_case = {
    "case", actions, open_view, draw, key, event, NULL, mouse, position, close_view, where, NULL,
};
