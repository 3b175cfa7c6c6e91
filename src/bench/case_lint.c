#include "case_lint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "digest.h"
#include "fsutil.h"
#include "parfor.h"
#include "path.h"

bool bd_lint_is_scaffold(bd_lint_kind k)
{
    return k == BD_LINT_EMPTY_EXPECTED || k == BD_LINT_EMPTY_INPUT || k == BD_LINT_EMPTY_CASSETTE ||
           k == BD_LINT_TITLE_IS_ID;
}

static int add(bd_lint **out, size_t *n, size_t *cap, bd_lint_kind kind, const char *id,
               const bd_err *e, bd_err *err)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        bd_lint *g = realloc(*out, nc * sizeof(*g));
        if (!g)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        *out = g;
        *cap = nc;
    }
    bd_lint *l = &(*out)[(*n)++];
    memset(l, 0, sizeof(*l));
    l->kind = kind;
    l->scaffold = bd_lint_is_scaffold(kind);
    snprintf(l->case_id, sizeof(l->case_id), "%s", id);
    l->err = *e;
    return 0;
}

/* Whether folder `dir` holds any entry at all (a missing folder holds none). */
static bool has_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    bool any = false;
    while (!any && (e = readdir(d)))
        any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return any;
}

/* The cassette's bytes are the scaffold's `{}` (whitespace aside). */
static bool cassette_is_empty(const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    if (bd_read_file(&buf, &len, path, 4096, BD_E_IO, NULL) != 0)
        return false;
    char t[8];
    size_t k = 0;
    for (size_t i = 0; i < len && k < sizeof(t) - 1; i++)
        if (buf[i] != ' ' && buf[i] != '\n' && buf[i] != '\t' && buf[i] != '\r')
            t[k++] = buf[i];
    t[k] = '\0';
    free(buf);
    return strcmp(t, "{}") == 0;
}

int bd_case_lint(bd_lint **out, size_t *n, size_t *cap, const bd_task_class *tc,
                 const char *case_id, bd_err *err)
{
    if (!bd_name_valid(case_id))
        return bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0, "'%s' is not a valid case id", case_id);
    char dir[4096], p[4200];
    snprintf(dir, sizeof(dir), "%s/%s", tc->cases_dir, case_id);
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return bd_err_set(err, BD_E_UNKNOWN_CASE, dir, 0, 0, "no such case in %s", tc->name);
    bd_err e = BD_ERR_INIT;
    bd_case *c = NULL;
    snprintf(p, sizeof(p), "%s/case.yaml", dir);
    if (bd_case_load(&c, p, case_id, &e) != 0)
        return add(out, n, cap, BD_LINT_SCHEMA, case_id, &e, err);
    int rc = 0;
    if (!c->expected || c->expected->n == 0) {
        bd_err_set(&e, BD_E_CASE_LINT, c->path, c->expected ? c->expected->line : 0, 0,
                   "expected is empty: the rubric gets no ground truth; fill it in");
        rc = add(out, n, cap, BD_LINT_EMPTY_EXPECTED, case_id, &e, err);
    }
    if (rc == 0 && strcmp(c->title, case_id) == 0) {
        bd_err_set(&e, BD_E_CASE_LINT, c->path, 0, 0,
                   "the title is still the case id (the scaffold's): one line a curator "
                   "recognizes");
        rc = add(out, n, cap, BD_LINT_TITLE_IS_ID, case_id, &e, err);
    }
    snprintf(p, sizeof(p), "%s/input", dir);
    if (rc == 0 && !has_entries(p)) {
        bd_err_set(&e, BD_E_CASE_LINT, p, 0, 0, "input/ is empty: add what the SUT is given");
        rc = add(out, n, cap, BD_LINT_EMPTY_INPUT, case_id, &e, err);
    }
    snprintf(p, sizeof(p), "%s/cassette.json", dir);
    bool has_cassette = lstat(p, &st) == 0;
    if (rc == 0 && tc->reg->sut_kind == BD_SUT_CASSETTE && !has_cassette) {
        bd_err_set(&e, BD_E_CASE_LINT, p, 0, 0,
                   "missing: a cassette task class replays it; add the recorded answer");
        rc = add(out, n, cap, BD_LINT_NO_CASSETTE, case_id, &e, err);
    } else if (rc == 0 && has_cassette && cassette_is_empty(p)) {
        bd_err_set(&e, BD_E_CASE_LINT, p, 0, 0,
                   "is {} (the scaffold's): put the recorded answer there");
        if (tc->reg->sut_kind == BD_SUT_COMMAND) {
            bd_err_append(&e, " (");
            bd_err_advise(&e, BD_ACT_RECORD, "%s %s", tc->name, case_id);
            bd_err_append(&e, ")");
        }
        rc = add(out, n, cap, BD_LINT_EMPTY_CASSETTE, case_id, &e, err);
    } else if (rc == 0 && has_cassette && tc->reg->sut_kind == BD_SUT_COMMAND &&
               !c->cassette_digest[0]) {
        bd_err_set(&e, BD_E_CASE_LINT, p, 0, 0,
                   "a command SUT answers live and this cassette was not recorded by benchdesk "
                   "(cassette_digest is null): record it (");
        bd_err_advise(&e, BD_ACT_RECORD, "%s %s", tc->name, case_id);
        bd_err_append(&e, ") or remove it");
        rc = add(out, n, cap, BD_LINT_UNUSED_CASSETTE, case_id, &e, err);
    }
    bd_case_free(c);
    return rc;
}

/* The scaffold findings of each case of a bd_case_lint_scaffolds call, one slot per case so
 * the threads never share an array. */
typedef struct scaffold_job {
    const bd_task_class *tc;
    const char *const *ids;
    bd_lint **found; /* found[i]: case ids[i]'s scaffold findings, NULL when none */
    size_t *n_found;
} scaffold_job;

static int lint_scaffold_at(size_t i, void *ctx, bd_err *err)
{
    scaffold_job *j = ctx;
    bd_lint *l = NULL;
    size_t n = 0, cap = 0;
    bd_err e = BD_ERR_INIT;
    if (bd_case_lint(&l, &n, &cap, j->tc, j->ids[i], &e) < 0) {
        free(l);
        if (e.code != BD_E_NOMEM)
            return 0; /* a case that does not load is left to verify */
        if (err)
            *err = e;
        return -1;
    }
    size_t k = 0;
    for (size_t m = 0; m < n; m++)
        if (l[m].scaffold)
            l[k++] = l[m];
    if (!k) {
        free(l);
        l = NULL;
    }
    j->found[i] = l;
    j->n_found[i] = k;
    return 0;
}

int bd_case_lint_scaffolds(bd_lint **out, size_t *n, size_t *cap, const bd_task_class *tc,
                           const char *const *ids, size_t n_ids, bd_err *err)
{
    /* Every case of a task class re-pinned at once is read again here: on the threads the
     * pin hashed them on. */
    scaffold_job j = {tc, ids, calloc(n_ids ? n_ids : 1, sizeof(*j.found)),
                      calloc(n_ids ? n_ids : 1, sizeof(*j.n_found))};
    int rc = -1;
    if (!j.found || !j.n_found)
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    else
        rc = bd_parfor(n_ids, bd_case_scan_threads(n_ids, 256), 0, lint_scaffold_at, &j, err);
    for (size_t i = 0; i < n_ids && j.found; i++) {
        for (size_t m = 0; rc == 0 && m < j.n_found[i]; m++) {
            const bd_lint *f = &j.found[i][m];
            rc = add(out, n, cap, f->kind, f->case_id, &f->err, err);
        }
        free(j.found[i]);
    }
    free(j.found);
    free(j.n_found);
    return rc;
}

int bd_case_lint_pinned(bd_lint **out, size_t *n, const bd_task_class *tc, const bd_pin_report *rep,
                        bd_err *err)
{
    const char **ids = calloc(rep->n_changes ? rep->n_changes : 1, sizeof(*ids));
    size_t k = 0, cap = *n;
    if (!ids)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < rep->n_changes; i++)
        if (rep->changes[i].case_id[0] && rep->changes[i].after[0])
            ids[k++] = rep->changes[i].case_id;
    int rc = bd_case_lint_scaffolds(out, n, &cap, tc, ids, k, err);
    free(ids);
    return rc;
}
