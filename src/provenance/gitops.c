/*
 * gitops.c — status, staging and (signed) commits of bench/ and audit/ with libgit2.
 */
#include "gitops.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lg2.h"

#include "bench.h"
#include "digest.h"
#include "fsutil.h"
#include "case_source.h"

struct bd_git {
    git_repository *repo;
    char *workdir; /* real path of the work tree, no trailing slash */
    char *root;    /* real path of the bench root */
    char *prefix;  /* root relative to workdir: "" or "sub/dir/" */
};

/* ---- errors ------------------------------------------------------------------------ */

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

static int git_fail(bd_err *err, bd_code code, const char *what)
{
    const git_error *e = git_error_last();
    return bd_err_set(err, code, NULL, 0, 0, "%s: %s", what,
                      e && e->message ? e->message : "libgit2 failed");
}

/* ---- opening ----------------------------------------------------------------------- */

static char *strip_slash(char *s)
{
    size_t l = strlen(s);
    while (l > 1 && s[l - 1] == '/')
        s[--l] = '\0';
    return s;
}

int bd_git_open(bd_git **out, const char *bench_root, bd_err *err)
{
    *out = NULL;
    if (bd_lg2_load(err) < 0)
        return -1;
    if (git_libgit2_init() < 0)
        return git_fail(err, BD_E_GIT, "cannot initialise libgit2");
    bd_git *g = calloc(1, sizeof(*g));
    if (!g) {
        git_libgit2_shutdown();
        return nomem(err);
    }
    int rc = -1;
    if (!(g->root = realpath(bench_root, NULL))) {
        bd_err_errno(err, BD_E_IO, errno, bench_root, "cannot resolve the bench root");
        goto out;
    }
    int e = git_repository_open_ext(&g->repo, g->root, 0, NULL);
    if (e == GIT_ENOTFOUND) {
        bd_err_set(err, BD_E_GIT_NOT_REPO, g->root, 0, 0,
                   "is not inside a git work tree; run `git init` in the bench root first");
        goto out;
    }
    if (e < 0) {
        git_fail(err, BD_E_GIT, "cannot open the bench's git repository");
        goto out;
    }
    const char *wd = git_repository_workdir(g->repo);
    if (git_repository_is_bare(g->repo) || !wd) {
        bd_err_set(err, BD_E_GIT_NOT_REPO, g->root, 0, 0,
                   "is in a bare repository; benchdesk needs a work tree");
        goto out;
    }
    if (!(g->workdir = realpath(wd, NULL))) {
        bd_err_errno(err, BD_E_IO, errno, wd, "cannot resolve the git work tree");
        goto out;
    }
    strip_slash(g->workdir);
    size_t wl = strlen(g->workdir);
    const char *rel = NULL;
    if (strcmp(g->root, g->workdir) == 0)
        rel = "";
    else if (strncmp(g->root, g->workdir, wl) == 0 && (g->root[wl] == '/' || wl == 1))
        rel = g->root + (wl == 1 ? 1 : wl + 1);
    if (!rel) {
        bd_err_set(err, BD_E_GIT_NOT_REPO, g->root, 0, 0,
                   "is not inside the work tree %s that git found", g->workdir);
        goto out;
    }
    size_t rl = strlen(rel);
    if (!(g->prefix = malloc(rl + 2))) {
        nomem(err);
        goto out;
    }
    memcpy(g->prefix, rel, rl);
    if (rl)
        g->prefix[rl++] = '/';
    g->prefix[rl] = '\0';
    *out = g;
    g = NULL;
    rc = 0;
out:
    bd_git_close(g);
    return rc;
}

void bd_git_close(bd_git *g)
{
    if (!g)
        return;
    git_repository_free(g->repo);
    free(g->workdir);
    free(g->root);
    free(g->prefix);
    free(g);
    git_libgit2_shutdown();
}

const char *bd_git_prefix(const bd_git *g)
{
    return g->prefix;
}

/* ---- HEAD -------------------------------------------------------------------------- */

/* The branch HEAD names (full ref name, new string) and its commit id when born. */
static int head_branch(bd_git *g, char **branch, git_oid *id, bool *unborn, bd_err *err)
{
    git_reference *head = NULL;
    *branch = NULL;
    *unborn = false;
    if (git_reference_lookup(&head, g->repo, "HEAD") < 0)
        return git_fail(err, BD_E_GIT, "cannot read HEAD");
    if (git_reference_type(head) != GIT_REFERENCE_SYMBOLIC) {
        git_reference_free(head);
        return bd_err_set(err, BD_E_GIT_DETACHED_HEAD, NULL, 0, 0,
                          "HEAD is detached; check out a branch (`git switch BRANCH`) and "
                          "try again");
    }
    *branch = strdup(git_reference_symbolic_target(head));
    git_reference_free(head);
    if (!*branch)
        return nomem(err);
    int e = git_reference_name_to_id(id, g->repo, *branch);
    if (e == GIT_ENOTFOUND) {
        *unborn = true;
        return 0;
    }
    if (e < 0) {
        free(*branch);
        *branch = NULL;
        return git_fail(err, BD_E_GIT, "cannot resolve the current branch");
    }
    return 0;
}

int bd_git_head_commit(bd_git *g, char out[41], bd_err *err)
{
    git_oid id;
    out[0] = '\0';
    int e = git_reference_name_to_id(&id, g->repo, "HEAD");
    if (e == GIT_ENOTFOUND || e == GIT_EUNBORNBRANCH)
        return 0;
    if (e < 0)
        return git_fail(err, BD_E_GIT, "cannot resolve HEAD");
    git_oid_tostr(out, 41, &id);
    return 0;
}

static const char *short_name(const char *ref)
{
    return strncmp(ref, "refs/heads/", 11) == 0 ? ref + 11 : ref;
}

int bd_git_branch(bd_git *g, char *out, size_t cap, bool *unborn, bd_err *err)
{
    char *b = NULL;
    git_oid id;
    if (head_branch(g, &b, &id, unborn, err) < 0)
        return -1;
    snprintf(out, cap, "%s", short_name(b));
    free(b);
    return 0;
}

/* ---- status ------------------------------------------------------------------------ */

/* True when repo path `p` is under the bench root's bench/ or audit/. */
static bool in_scope(const bd_git *g, const char *p)
{
    size_t pl = strlen(g->prefix);
    if (strncmp(p, g->prefix, pl) != 0)
        return false;
    p += pl;
    return strncmp(p, "bench/", 6) == 0 || strncmp(p, "audit/", 6) == 0;
}

static git_status_list *status_list(bd_git *g, bd_err *err)
{
    git_status_options so;
    git_status_list *list = NULL;
    git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
    so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
    so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
               GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_SORT_CASE_SENSITIVELY;
    if (git_status_list_new(&list, g->repo, &so) < 0) {
        git_fail(err, BD_E_GIT, "cannot read the git status");
        return NULL;
    }
    return list;
}

static const char *entry_path(const git_status_entry *e)
{
    const git_diff_delta *d = e->head_to_index ? e->head_to_index : e->index_to_workdir;
    if (!d)
        return NULL;
    return d->new_file.path ? d->new_file.path : d->old_file.path;
}

static char kind_index(unsigned s)
{
    if (s & GIT_STATUS_INDEX_NEW)
        return 'A';
    if (s & GIT_STATUS_INDEX_DELETED)
        return 'D';
    if (s & GIT_STATUS_INDEX_TYPECHANGE)
        return 'T';
    if (s & (GIT_STATUS_INDEX_MODIFIED | GIT_STATUS_INDEX_RENAMED))
        return 'M';
    return 0;
}

static char kind_wt(unsigned s)
{
    if (s & GIT_STATUS_WT_DELETED)
        return 'D';
    if (s & GIT_STATUS_WT_TYPECHANGE)
        return 'T';
    if (s & (GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_RENAMED | GIT_STATUS_WT_UNREADABLE))
        return 'M';
    return 0;
}

void bd_git_status_release(bd_git_status *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->entries[i].path);
    free(s->entries);
    memset(s, 0, sizeof(*s));
}

bool bd_git_path_is_trust(const char *path)
{
    return strcmp(path, "bench/trusted-signers.yaml") == 0 || strncmp(path, "bench/keys/", 11) == 0;
}

int bd_git_status_get(bd_git_status *out, bd_git *g, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    char *branch = NULL;
    git_oid id;
    int rc = -1;
    bd_err herr = BD_ERR_INIT;
    if (head_branch(g, &branch, &id, &out->unborn, &herr) == 0)
        snprintf(out->branch, sizeof(out->branch), "%s", short_name(branch));
    else if (herr.code != BD_E_GIT_DETACHED_HEAD) {
        if (err)
            *err = herr;
        return -1;
    }
    free(branch);
    git_status_list *list = status_list(g, err);
    if (!list)
        return -1;
    size_t cnt = git_status_list_entrycount(list);
    if (cnt && !(out->entries = calloc(cnt, sizeof(*out->entries)))) {
        nomem(err);
        goto out;
    }
    size_t pl = strlen(g->prefix);
    for (size_t i = 0; i < cnt; i++) {
        const git_status_entry *e = git_status_byindex(list, i);
        const char *p = entry_path(e);
        unsigned s = (unsigned)e->status;
        if (!p || !in_scope(g, p) || s == GIT_STATUS_CURRENT || (s & GIT_STATUS_IGNORED))
            continue;
        bd_git_entry *x = &out->entries[out->n];
        if (!(x->path = strdup(p + pl))) {
            nomem(err);
            goto out;
        }
        out->n++;
        x->conflicted = (s & GIT_STATUS_CONFLICTED) != 0;
        x->untracked = (s & GIT_STATUS_WT_NEW) != 0;
        x->staged = kind_index(s);
        x->unstaged = x->untracked ? 0 : kind_wt(s);
        out->n_staged += x->staged != 0;
        out->n_unstaged += x->unstaged != 0 || x->conflicted;
        out->n_untracked += x->untracked;
        x->trust = bd_git_path_is_trust(x->path);
        out->n_trust += x->trust;
    }
    /* Who may sign first (docs/provenance.md#staging-and-committing): a stable partition keeps the
     * path order. */
    if (out->n_trust && out->n_trust < out->n) {
        bd_git_entry *sorted = calloc(out->n, sizeof(*sorted));
        if (!sorted) {
            nomem(err);
            goto out;
        }
        size_t k = 0;
        for (int pass = 1; pass >= 0; pass--)
            for (size_t i = 0; i < out->n; i++)
                if (out->entries[i].trust == (pass == 1))
                    sorted[k++] = out->entries[i];
        free(out->entries);
        out->entries = sorted;
    }
    rc = 0;
out:
    git_status_list_free(list);
    if (rc < 0)
        bd_git_status_release(out);
    return rc;
}

/* ---- paths ------------------------------------------------------------------------- */

/* Lexically normalise an absolute path: no ".", "..", or repeated slashes. */
static char *normalise(const char *abs)
{
    size_t l = strlen(abs);
    char *out = malloc(l + 2);
    if (!out)
        return NULL;
    size_t w = 0;
    const char *p = abs;
    while (*p) {
        while (*p == '/')
            p++;
        const char *s = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - s);
        if (n == 0 || (n == 1 && s[0] == '.'))
            continue;
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (w > 0 && out[w - 1] != '/')
                w--;
            if (w > 0)
                w--;
            continue;
        }
        out[w++] = '/';
        memcpy(out + w, s, n);
        w += n;
    }
    if (w == 0)
        out[w++] = '/';
    out[w] = '\0';
    return out;
}

/* The physical path of `norm` (absolute, normalised): its longest existing parent
 * resolved with realpath, the rest (which may not exist: a deleted file) appended. The
 * last component itself is never resolved, so a symlink is staged as the link it is. */
static char *physical(const char *norm)
{
    size_t cut = strlen(norm);
    for (;;) {
        size_t slash = cut;
        while (slash > 0 && norm[slash - 1] != '/')
            slash--;
        if (slash == 0)
            return NULL; /* not absolute */
        slash--;         /* norm[slash] == '/' */
        char *parent = slash == 0 ? strdup("/") : strndup(norm, slash);
        if (!parent)
            return NULL;
        char *real = realpath(parent, NULL);
        int saved = errno;
        free(parent);
        if (real) {
            size_t rl = strcmp(real, "/") == 0 ? 0 : strlen(real);
            const char *rest = norm + slash;
            char *out = malloc(rl + strlen(rest) + 1);
            if (out) {
                memcpy(out, real, rl);
                strcpy(out + rl, rest);
            }
            free(real);
            return out;
        }
        if ((saved != ENOENT && saved != ENOTDIR) || slash == 0) {
            errno = saved;
            return NULL;
        }
        cut = slash;
    }
}

/* True when any component of `p` is ".git". */
static bool has_git_component(const char *p)
{
    for (const char *s = p; s;) {
        if (strncmp(s, ".git", 4) == 0 && (s[4] == '/' || s[4] == '\0'))
            return true;
        s = strchr(s, '/');
        s = s ? s + 1 : NULL;
    }
    return false;
}

/* Resolve a user path to a repo-relative path under bench/ or audit/. */
static int resolve_path(char **out, const bd_git *g, const char *path, bd_err *err)
{
    char *abs = NULL, *norm = NULL, *phys = NULL;
    int rc = -1;
    *out = NULL;
    if (!path || !path[0]) {
        bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "an empty path was given");
        return -1;
    }
    abs = path[0] == '/' ? strdup(path) : bd_path_join(g->root, path);
    if (!abs || !(norm = normalise(abs))) {
        nomem(err);
        goto out;
    }
    if (!(phys = physical(norm))) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot resolve the path");
        goto out;
    }
    size_t wl = strlen(g->workdir), pl = strlen(g->prefix);
    const char *rel = NULL;
    if (strncmp(phys, g->workdir, wl) == 0 && phys[wl] == '/')
        rel = phys + wl + 1;
    bool ok = rel && strncmp(rel, g->prefix, pl) == 0;
    const char *in = ok ? rel + pl : "";
    ok = ok && (strcmp(in, "bench") == 0 || strcmp(in, "audit") == 0 ||
                strncmp(in, "bench/", 6) == 0 || strncmp(in, "audit/", 6) == 0);
    ok = ok && !has_git_component(rel);
    if (!ok) {
        bd_err_set(err, BD_E_GIT_PATH_OUTSIDE, path, 0, 0,
                   "is outside the bench's bench/ and audit/ folders; benchdesk stages only "
                   "those (use git itself for anything else)");
        goto out;
    }
    if (!(*out = strdup(rel))) {
        nomem(err);
        goto out;
    }
    rc = 0;
out:
    free(abs);
    free(norm);
    free(phys);
    return rc;
}

static void free_paths(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static int resolve_all(char ***out, const bd_git *g, const char *const *paths, size_t n,
                       bd_err *err)
{
    char **v = calloc(n ? n : 1, sizeof(*v));
    *out = NULL;
    if (!v)
        return nomem(err);
    for (size_t i = 0; i < n; i++)
        if (resolve_path(&v[i], g, paths[i], err) < 0) {
            free_paths(v, n);
            return -1;
        }
    *out = v;
    return 0;
}

static bool under(const char *p, const char *rp)
{
    size_t l = strlen(rp);
    return strncmp(p, rp, l) == 0 && (p[l] == '\0' || p[l] == '/');
}

/* ---- staging ----------------------------------------------------------------------- */

int bd_git_stage(bd_git *g, const char *const *paths, size_t n, size_t *n_changed, bd_err *err)
{
    char **rps = NULL;
    git_status_list *list = NULL;
    git_index *index = NULL;
    size_t changed = 0;
    int rc = -1;
    bool dirty = false;
    if (n_changed)
        *n_changed = 0;
    if (n == 0)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "name at least one path to stage");
    if (resolve_all(&rps, g, paths, n, err) < 0)
        return -1;
    if (!(list = status_list(g, err)))
        goto out;
    if (git_repository_index(&index, g->repo) < 0) {
        git_fail(err, BD_E_GIT, "cannot open the git index");
        goto out;
    }
    size_t cnt = git_status_list_entrycount(list);
    /* First refuse unknown paths, so nothing is staged unless every path is good. */
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        for (size_t k = 0; k < cnt && !known; k++) {
            const char *p = entry_path(git_status_byindex(list, k));
            known = p && under(p, rps[i]);
        }
        if (!known) {
            char *abs = bd_path_join(g->workdir, rps[i]);
            struct stat st;
            size_t pos;
            char *pre = NULL;
            if (abs && lstat(abs, &st) == 0)
                known = true;
            else if (git_index_get_bypath(index, rps[i], 0))
                known = true;
            else if ((pre = malloc(strlen(rps[i]) + 2))) {
                sprintf(pre, "%s/", rps[i]);
                known = git_index_find_prefix(&pos, index, pre) == 0;
            }
            free(pre);
            free(abs);
        }
        if (!known) {
            bd_err_set(err, BD_E_GIT_PATH_UNKNOWN, paths[i], 0, 0,
                       "is neither in the work tree nor in the index; check the path");
            goto out;
        }
    }
    for (size_t k = 0; k < cnt; k++) {
        const git_status_entry *e = git_status_byindex(list, k);
        const char *p = entry_path(e);
        bool hit = false;
        for (size_t i = 0; p && i < n && !hit; i++)
            hit = under(p, rps[i]);
        if (!hit || !in_scope(g, p))
            continue;
        unsigned s = (unsigned)e->status;
        int r = 0;
        if (s & GIT_STATUS_WT_DELETED) {
            r = git_index_remove_bypath(index, p);
            changed++;
        } else if (s & (GIT_STATUS_WT_NEW | GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_TYPECHANGE |
                        GIT_STATUS_WT_RENAMED | GIT_STATUS_CONFLICTED)) {
            r = git_index_add_bypath(index, p);
            changed++;
        }
        dirty = dirty || changed;
        if (r < 0) {
            char what[600];
            snprintf(what, sizeof(what), "cannot stage %s", p);
            git_fail(err, BD_E_GIT, what);
            goto out;
        }
    }
    if (dirty && git_index_write(index) < 0) {
        git_fail(err, BD_E_GIT, "cannot write the git index");
        goto out;
    }
    dirty = false;
    if (n_changed)
        *n_changed = changed;
    rc = 0;
out:
    /* A failure half way must not leave a half-staged index in memory. */
    if (dirty && index)
        git_index_read(index, 1);
    git_index_free(index);
    git_status_list_free(list);
    free_paths(rps, n);
    return rc;
}

/* `s` with the pathspec metacharacters *?[\ escaped (new string). */
static char *escape_pathspec(const char *s)
{
    char *out = malloc(2 * strlen(s) + 1), *w = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        if (strchr("*?[\\", *s))
            *w++ = '\\';
        *w++ = *s;
    }
    *w = '\0';
    return out;
}

int bd_git_unstage(bd_git *g, const char *const *paths, size_t n, bd_err *err)
{
    char **rps = NULL, *branch = NULL;
    git_object *target = NULL;
    git_oid id;
    bool unborn = false;
    int rc = -1;
    if (n == 0)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "name at least one path to unstage");
    if (resolve_all(&rps, g, paths, n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char *x = escape_pathspec(rps[i]);
        if (!x) {
            nomem(err);
            goto out;
        }
        free(rps[i]);
        rps[i] = x;
    }
    if (head_branch(g, &branch, &id, &unborn, err) < 0)
        goto out;
    if (!unborn && git_object_lookup(&target, g->repo, &id, GIT_OBJECT_COMMIT) < 0) {
        git_fail(err, BD_E_GIT, "cannot read HEAD's commit");
        goto out;
    }
    git_strarray arr = {rps, n};
    /* NULL target on an unborn branch removes the entries: nothing was committed yet. */
    if (git_reset_default(g->repo, target, &arr) < 0) {
        git_fail(err, BD_E_GIT, "cannot unstage");
        goto out;
    }
    rc = 0;
out:
    git_object_free(target);
    free(branch);
    free_paths(rps, n);
    return rc;
}

/* ---- the index, read for a check ----------------------------------------------------- */

struct bd_git_index {
    bd_git *g;
    git_index *index;
};

int bd_git_index_open(bd_git_index **out, bd_git *g, bd_err *err)
{
    *out = NULL;
    bd_git_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return nomem(err);
    ix->g = g;
    if (git_repository_index(&ix->index, g->repo) < 0) {
        free(ix);
        return git_fail(err, BD_E_GIT, "cannot open the git index");
    }
    if (git_index_read(ix->index, 0) < 0) {
        git_fail(err, BD_E_GIT, "cannot read the git index");
        bd_git_index_close(ix);
        return -1;
    }
    *out = ix;
    return 0;
}

void bd_git_index_close(bd_git_index *ix)
{
    if (!ix)
        return;
    git_index_free(ix->index);
    free(ix);
}

size_t bd_git_index_count(const bd_git_index *ix)
{
    return git_index_entrycount(ix->index);
}

const char *bd_git_index_path(const bd_git_index *ix, size_t i, bool *exec)
{
    const git_index_entry *e = git_index_get_byindex(ix->index, i);
    if (exec)
        *exec = e->mode == GIT_FILEMODE_BLOB_EXECUTABLE;
    return e->path;
}

static int read_blob(git_blob **out, bd_git *g, const git_oid *id, const char *path, bd_err *err)
{
    if (git_blob_lookup(out, g->repo, id) < 0) {
        char what[600];
        snprintf(what, sizeof(what), "cannot read the staged %.560s", path);
        return git_fail(err, BD_E_GIT, what);
    }
    return 0;
}

int bd_git_index_bytes(const bd_git_index *ix, size_t i, char **out, size_t *len, bd_err *err)
{
    const git_index_entry *e = git_index_get_byindex(ix->index, i);
    git_blob *b = NULL;
    *out = NULL;
    *len = 0;
    if (read_blob(&b, ix->g, &e->id, e->path, err) < 0)
        return -1;
    size_t n = (size_t)git_blob_rawsize(b);
    char *buf = malloc(n + 1);
    if (buf) {
        memcpy(buf, git_blob_rawcontent(b), n);
        buf[n] = '\0';
    }
    git_blob_free(b);
    if (!buf)
        return nomem(err);
    *out = buf;
    *len = n;
    return 0;
}

/* ---- the git index as a case source ------------------------------------------------- */

typedef struct index_source {
    bd_case_source src; /* first */
    bd_git_index *ix;
    size_t next, to, base_len;
    const git_index_entry *cur;
    git_blob *blob; /* the bytes of `cur`, or NULL */
} index_source;

static bool mode_is_file(uint32_t mode)
{
    return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE;
}

/* Fill `e` for the entry of work-tree path `path` whose case-relative path starts at
 * `rel`; a file's bytes are those of `blob` (may be NULL for anything else). */
static void git_entry(bd_case_entry *e, const char *rel, uint32_t mode, git_blob *blob)
{
    const char *slash = strrchr(rel, '/');
    e->rel = rel;
    e->rel_len = strlen(rel);
    e->name = slash ? slash + 1 : rel;
    e->top = slash == NULL;
    e->kind = mode_is_file(mode) ? BD_CASE_FILE : BD_CASE_OTHER;
    e->exec = mode == GIT_FILEMODE_BLOB_EXECUTABLE;
    e->bytes = blob ? git_blob_rawcontent(blob) : "";
    e->size = blob ? (uint64_t)git_blob_rawsize(blob) : 0;
}

static int index_next(bd_case_source *src, bd_case_entry *e, bd_err *err)
{
    index_source *s = (index_source *)src;
    git_blob_free(s->blob);
    s->blob = NULL;
    if (s->next == s->to)
        return 0;
    s->cur = git_index_get_byindex(s->ix->index, s->next++);
    if (mode_is_file(s->cur->mode) &&
        read_blob(&s->blob, s->ix->g, &s->cur->id, s->cur->path, err) < 0)
        return -1;
    git_entry(e, s->cur->path + s->base_len, s->cur->mode, s->blob);
    return 1;
}

static int index_refuse(bd_case_source *src, const bd_case_entry *e, bd_err *err)
{
    const index_source *s = (const index_source *)src;
    (void)e;
    return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, s->cur->path, 0, 0,
                      "is staged as a %s; a case holds regular files only",
                      s->cur->mode == GIT_FILEMODE_LINK ? "symlink" : "submodule or special entry");
}

int bd_git_index_source(bd_case_source **out, bd_git_index *ix, size_t from, size_t to,
                        size_t base_len, bd_err *err)
{
    index_source *s = calloc(1, sizeof(*s));
    *out = NULL;
    if (!s)
        return nomem(err);
    s->src.next = index_next;
    s->src.refuse = index_refuse;
    s->src.where = "";
    s->ix = ix;
    s->next = from;
    s->to = to;
    s->base_len = base_len;
    *out = &s->src;
    return 0;
}

void bd_git_index_source_free(bd_case_source *src)
{
    index_source *s = (index_source *)src;
    if (!s)
        return;
    git_blob_free(s->blob);
    free(s);
}

/* ---- committing -------------------------------------------------------------------- */

/* Write the commit object of `tree` with `message` by `me` (parent `parent`, NULL on an
 * unborn branch), signed with GPGME when opts->sign, into *id; out->is_signed and
 * out->signer say how. Returns 0 or -1 (git.error, bd_sign_bytes's errors). */
static int write_commit(git_oid *id, bd_commit_result *out, bd_git *g, const bd_commit_opts *opts,
                        const git_signature *me, const char *message, const git_tree *tree,
                        const git_commit *parent, bd_err *err)
{
    const git_commit *parents[1] = {parent};
    size_t np = parent ? 1 : 0;
    if (!opts->sign) {
        if (git_commit_create(id, g->repo, NULL, me, me, NULL, message, tree, np, parents) < 0)
            return git_fail(err, BD_E_GIT, "cannot write the commit");
        return 0;
    }
    git_buf content = {0};
    char *sig = NULL;
    int rc = -1;
    bd_sign_key key;
    if (git_commit_create_buffer(&content, g->repo, me, me, NULL, message, tree, np, parents) < 0) {
        git_fail(err, BD_E_GIT, "cannot build the commit");
        goto out;
    }
    if (bd_sign_resolve_key(&key, &opts->sign_opts, err) < 0 ||
        bd_sign_bytes(&sig, &key, &opts->sign_opts, content.ptr, content.size, err) < 0)
        goto out;
    /* libgit2 indents each line itself; a trailing newline would add a blank one. */
    size_t sl = strlen(sig);
    while (sl && sig[sl - 1] == '\n')
        sig[--sl] = '\0';
    if (git_commit_create_with_signature(id, g->repo, content.ptr, sig, NULL) < 0) {
        git_fail(err, BD_E_GIT, "cannot write the signed commit");
        goto out;
    }
    out->is_signed = true;
    snprintf(out->signer, sizeof(out->signer), "%s", key.fingerprint);
    rc = 0;
out:
    git_buf_dispose(&content);
    free(sig);
    return rc;
}

/* Move `branch` to the commit `id` with a compare-and-swap: only from `was` (NULL: only
 * while the branch does not exist), with git's reflog line for `message`. Returns 0 or
 * -1 (git.ref_moved, git.error, env.out_of_memory). */
static int move_branch(bd_git *g, const char *branch, const git_oid *was, const git_oid *id,
                       const char *message, const bd_commit_result *out, bd_err *err)
{
    size_t subj = strcspn(message, "\n");
    size_t rl = subj + 32;
    char *reflog = malloc(rl);
    git_reference *moved = NULL;
    if (!reflog)
        return nomem(err);
    snprintf(reflog, rl, "commit%s: %.*s", was ? "" : " (initial)", (int)subj, message);
    int e = was ? git_reference_create_matching(&moved, g->repo, branch, id, 1, was, reflog)
                : git_reference_create(&moved, g->repo, branch, id, 0, reflog);
    free(reflog);
    git_reference_free(moved);
    if (e == GIT_EMODIFIED || e == GIT_EEXISTS || (e == GIT_ENOTFOUND && was)) {
        char was_hex[GIT_OID_HEXSZ + 1] = "unborn";
        if (was)
            git_oid_tostr(was_hex, sizeof(was_hex), was);
        bd_err_set(err, BD_E_GIT_REF_MOVED, NULL, 0, 0,
                   "%s moved while committing (it was %s); nothing was overwritten: your "
                   "commit %s is in the object database and the index is unchanged; "
                   "review `git log %s` and ",
                   out->branch, was_hex, out->id, out->branch);
        bd_err_advise(err, BD_ACT_COMMIT, NULL);
        return bd_err_append(err, " again");
    }
    if (e < 0)
        return git_fail(err, BD_E_GIT, "cannot move the branch");
    return 0;
}

/* The refusal of a commit with nothing staged. Returns -1. */
static int nothing_staged(bd_err *err)
{
    bd_err_set(err, BD_E_GIT_NOTHING_TO_COMMIT, NULL, 0, 0,
               "nothing is staged; stage changes with ");
    return bd_err_advise(err, BD_ACT_STAGE, NULL);
}

int bd_git_commit_with(bd_commit_result *out, bd_git *g, const bd_commit_opts *opts,
                       int (*check)(bd_git *g, bd_err *err), bd_err *err)
{
    git_index *index = NULL;
    git_signature *me = NULL;
    git_tree *tree = NULL;
    git_commit *parent = NULL;
    git_buf msg = {0};
    char *branch = NULL;
    git_oid parent_id, tree_id, id;
    bool unborn = false;
    int rc = -1, e;
    memset(out, 0, sizeof(*out));
    if (!opts || !opts->message)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "a commit needs a message (-m MSG)");
    if (git_message_prettify(&msg, opts->message, 0, '#') < 0) {
        git_fail(err, BD_E_GIT, "cannot clean up the commit message");
        goto out;
    }
    if (!msg.ptr || !msg.ptr[0]) {
        bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "the commit message is empty; give one with -m");
        goto out;
    }
    if (git_repository_index(&index, g->repo) < 0 || git_index_read(index, 0) < 0) {
        git_fail(err, BD_E_GIT, "cannot read the git index");
        goto out;
    }
    if (git_index_has_conflicts(index)) {
        bd_err_set(err, BD_E_GIT_INDEX_CONFLICT, NULL, 0, 0,
                   "the index has unresolved merge conflicts; resolve them with git first");
        goto out;
    }
    if (check(g, err) < 0)
        goto out;
    if (head_branch(g, &branch, &parent_id, &unborn, err) < 0)
        goto out;
    snprintf(out->branch, sizeof(out->branch), "%s", short_name(branch));
    out->initial = unborn;
    if (git_index_write_tree(&tree_id, index) < 0 ||
        git_tree_lookup(&tree, g->repo, &tree_id) < 0) {
        git_fail(err, BD_E_GIT, "cannot write the index as a tree");
        goto out;
    }
    if (!unborn) {
        if (git_commit_lookup(&parent, g->repo, &parent_id) < 0) {
            git_fail(err, BD_E_GIT, "cannot read the branch's commit");
            goto out;
        }
        if (git_oid_equal(git_commit_tree_id(parent), &tree_id)) {
            nothing_staged(err);
            goto out;
        }
    } else if (git_index_entrycount(index) == 0) {
        nothing_staged(err);
        goto out;
    }
    e = git_signature_default(&me, g->repo);
    if (e == GIT_ENOTFOUND) {
        bd_err_set(err, BD_E_GIT_NO_IDENTITY, NULL, 0, 0,
                   "git does not know who you are: set `git config user.name \"Your Name\"` "
                   "and `git config user.email you@example.org`");
        goto out;
    }
    if (e < 0) {
        git_fail(err, BD_E_GIT_NO_IDENTITY, "cannot read user.name/user.email from git config");
        goto out;
    }
    if (write_commit(&id, out, g, opts, me, msg.ptr, tree, unborn ? NULL : parent, err) < 0)
        goto out;
    git_oid_tostr(out->id, sizeof(out->id), &id);
    if (opts->before_ref_update && opts->before_ref_update(opts->payload) != 0) {
        bd_err_set(err, BD_E_GIT, NULL, 0, 0,
                   "cancelled before moving %s; commit %s was written but not recorded",
                   out->branch, out->id);
        goto out;
    }
    if (move_branch(g, branch, unborn ? NULL : &parent_id, &id, msg.ptr, out, err) < 0)
        goto out;
    rc = 0;
out:
    git_commit_free(parent);
    git_tree_free(tree);
    git_signature_free(me);
    git_index_free(index);
    git_buf_dispose(&msg);
    free(branch);
    return rc;
}

/* ---- the case as it was: a past commit whose case has a given digest ----------------- */

/* A git tree (the case dir) as a case source: a depth-first walk of its subtrees, which
 * git keeps in the same order as the case digest's ("name/" for a tree). Anything a case
 * may not hold (a link, a submodule, a path or nesting over the limits) ends the walk
 * with 1: that tree has no case digest. */
typedef struct tree_source {
    bd_case_source src; /* first */
    git_repository *repo;
    bd_err *err;
    int depth;
    git_tree *trees[BD_DIGEST_MAX_DEPTH + 1]; /* [0] borrowed, the others owned */
    size_t next[BD_DIGEST_MAX_DEPTH + 1];
    size_t rel_at[BD_DIGEST_MAX_DEPTH + 1]; /* length of rel at each depth */
    char rel[BD_DIGEST_MAX_RELPATH + 1];
    git_blob *blob;
} tree_source;

static int tree_next(bd_case_source *src, bd_case_entry *e, bd_err *err)
{
    tree_source *s = (tree_source *)src;
    git_blob_free(s->blob);
    s->blob = NULL;
    while (s->depth >= 0) {
        git_tree *t = s->trees[s->depth];
        if (s->next[s->depth] == git_tree_entrycount(t)) {
            if (s->depth > 0)
                git_tree_free(t);
            s->depth--;
            continue;
        }
        const git_tree_entry *te = git_tree_entry_byindex(t, s->next[s->depth]++);
        const char *name = git_tree_entry_name(te);
        git_filemode_t mode = git_tree_entry_filemode(te);
        size_t at = s->rel_at[s->depth], nl = strlen(name);
        if (at + nl + 2 > BD_DIGEST_MAX_RELPATH ||
            (mode == GIT_FILEMODE_TREE && s->depth + 1 > BD_DIGEST_MAX_DEPTH)) {
            git_entry(e, name, GIT_FILEMODE_LINK, NULL); /* over the limits: no digest */
            return 1;
        }
        if (at)
            s->rel[at++] = '/';
        memcpy(s->rel + at, name, nl + 1);
        if (mode == GIT_FILEMODE_TREE) {
            git_tree *sub = NULL;
            if (git_tree_lookup(&sub, s->repo, git_tree_entry_id(te)) < 0)
                return git_fail(err, BD_E_GIT, "cannot read a tree of the history");
            s->trees[++s->depth] = sub;
            s->next[s->depth] = 0;
            s->rel_at[s->depth] = at + nl;
            continue;
        }
        if (mode_is_file(mode) && git_blob_lookup(&s->blob, s->repo, git_tree_entry_id(te)) < 0)
            return git_fail(err, BD_E_GIT, "cannot read a blob of the history");
        git_entry(e, s->rel, mode, s->blob);
        return 1;
    }
    return 0;
}

static int tree_refuse(bd_case_source *src, const bd_case_entry *e, bd_err *err)
{
    (void)src, (void)e, (void)err;
    return 1; /* not a case: no digest, no error */
}

/* The case digest of the tree `t` into `out`: 0, 1 when the tree holds something a case
 * may not (no digest), -1 on a git failure. */
static int tree_digest(char out[BD_DIGEST_BUF], git_repository *repo, git_tree *t, bd_err *err)
{
    tree_source *s = calloc(1, sizeof(*s));
    if (!s)
        return nomem(err);
    s->src.next = tree_next;
    s->src.refuse = tree_refuse;
    s->src.where = "";
    s->repo = repo;
    s->trees[0] = t;
    int rc = bd_case_source_digest(out, &s->src, NULL, err);
    git_blob_free(s->blob);
    for (; s->depth > 0; s->depth--)
        git_tree_free(s->trees[s->depth]);
    free(s);
    return rc;
}

int bd_git_case_at_digest(bd_git_case_version *out, bd_git *g, const char *task_class,
                          const char *case_id, const char *digest, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!bd_name_valid(task_class) || !bd_name_valid(case_id) || !bd_digest_str_valid(digest))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "bad task class, case id or digest");
    char path[700];
    snprintf(path, sizeof(path), "%sbench/%s/cases/%s", g->prefix, task_class, case_id);
    git_revwalk *walk = NULL;
    git_oid oid, last_tree;
    bool have_last = false;
    int rc = -1;
    if (git_revwalk_new(&walk, g->repo) < 0) {
        git_fail(err, BD_E_GIT, "cannot walk the history");
        goto out;
    }
    git_revwalk_sorting(walk, GIT_SORT_TIME);
    if (git_revwalk_push_head(walk) < 0) {
        rc = 0; /* an unborn branch: no history to look in */
        goto out;
    }
    for (int seen = 0; seen < BD_GIT_CASE_SEARCH_MAX && git_revwalk_next(&oid, walk) == 0; seen++) {
        git_commit *c = NULL;
        git_tree *root = NULL, *sub = NULL;
        git_tree_entry *te = NULL;
        int found = 0;
        if (git_commit_lookup(&c, g->repo, &oid) < 0 || git_commit_tree(&root, c) < 0) {
            git_commit_free(c);
            git_fail(err, BD_E_GIT, "cannot read a commit of the history");
            goto out;
        }
        if (git_tree_entry_bypath(&te, root, path) == 0 &&
            git_tree_entry_type(te) == GIT_OBJECT_TREE &&
            !(have_last && git_oid_equal(&last_tree, git_tree_entry_id(te)))) {
            last_tree = *git_tree_entry_id(te);
            have_last = true;
            char got[BD_DIGEST_BUF];
            int h = git_tree_lookup(&sub, g->repo, git_tree_entry_id(te)) < 0
                        ? git_fail(err, BD_E_GIT, "cannot read a tree of the history")
                        : tree_digest(got, g->repo, sub, err);
            if (h < 0) {
                git_tree_entry_free(te);
                git_tree_free(sub);
                git_tree_free(root);
                git_commit_free(c);
                goto out;
            }
            if (h == 0 && strcmp(got, digest) == 0) {
                const git_tree_entry *ye = git_tree_entry_byname(sub, "case.yaml");
                git_blob *b = NULL;
                if (ye && git_blob_lookup(&b, g->repo, git_tree_entry_id(ye)) == 0) {
                    size_t len = (size_t)git_blob_rawsize(b);
                    out->case_yaml = malloc(len + 1);
                    if (out->case_yaml) {
                        memcpy(out->case_yaml, git_blob_rawcontent(b), len);
                        out->case_yaml[len] = '\0';
                        out->case_yaml_len = len;
                    }
                    git_blob_free(b);
                }
                git_oid_tostr(out->commit, sizeof(out->commit), &oid);
                const git_signature *a = git_commit_author(c);
                if (a)
                    out->when = (int64_t)a->when.time;
                const char *summary = git_commit_summary(c);
                snprintf(out->summary, sizeof(out->summary), "%s", summary ? summary : "");
                out->found = true;
                found = out->case_yaml ? 1 : -1;
            }
        }
        git_tree_entry_free(te);
        git_tree_free(sub);
        git_tree_free(root);
        git_commit_free(c);
        if (found < 0) {
            nomem(err);
            goto out;
        }
        if (found)
            break;
    }
    rc = out->found ? 1 : 0;
out:
    git_revwalk_free(walk);
    if (rc < 0)
        bd_git_case_version_release(out);
    return rc;
}

void bd_git_case_version_release(bd_git_case_version *v)
{
    if (!v)
        return;
    free(v->case_yaml);
    memset(v, 0, sizeof(*v));
}

/* The first line of the small file `path` into out (no newline); false when unreadable. */
static bool head_line(const char *path, char *out, size_t cap)
{
    char *buf = NULL;
    size_t len = 0;
    bd_err err = BD_ERR_INIT;
    if (bd_read_file(&buf, &len, path, 4096, BD_E_IO, &err) < 0)
        return false;
    snprintf(out, cap, "%.*s", (int)strcspn(buf, "\r\n"), buf);
    free(buf);
    return true;
}

void bd_git_head_label(const char *root, char *out, size_t cap)
{
    out[0] = '\0';
    char dir[4096], head[512], path[8200];
    if ((size_t)snprintf(dir, sizeof(dir), "%s", root) >= sizeof(dir))
        return;
    for (;;) {
        snprintf(path, sizeof(path), "%s/.git", dir);
        struct stat st;
        if (lstat(path, &st) == 0) {
            if (S_ISREG(st.st_mode)) { /* a worktree: "gitdir: <path>" */
                char line[4000];
                if (!head_line(path, line, sizeof(line)) || strncmp(line, "gitdir: ", 8) != 0)
                    return;
                if (line[8] == '/')
                    snprintf(path, sizeof(path), "%s/HEAD", line + 8);
                else
                    snprintf(path, sizeof(path), "%s/%s/HEAD", dir, line + 8);
            } else {
                snprintf(path, sizeof(path), "%s/.git/HEAD", dir);
            }
            if (!head_line(path, head, sizeof(head)))
                return;
            if (strncmp(head, "ref: refs/heads/", 16) == 0)
                snprintf(out, cap, "%s", head + 16);
            else if (strlen(head) >= 7)
                snprintf(out, cap, "%.7s (detached)", head);
            return;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return;
        *slash = '\0';
    }
}

/* ---- the last signed version of a task class ------------------------------------------ */

/* The blob id at `path` in `c`'s tree; false when absent. */
static bool blob_at(git_commit *c, const char *path, git_oid *out)
{
    git_tree *t = NULL;
    git_tree_entry *e = NULL;
    bool ok = git_commit_tree(&t, c) == 0 && git_tree_entry_bypath(&e, t, path) == 0;
    if (ok)
        git_oid_cpy(out, git_tree_entry_id(e));
    git_tree_entry_free(e);
    git_tree_free(t);
    return ok;
}

static int blob_text(git_repository *repo, git_commit *c, const char *path, char **out, size_t *len)
{
    git_oid id;
    git_blob *b = NULL;
    *out = NULL;
    *len = 0;
    if (!blob_at(c, path, &id) || git_blob_lookup(&b, repo, &id) != 0)
        return 0; /* absent then: shown as all added */
    size_t n = (size_t)git_blob_rawsize(b);
    *out = malloc(n + 1);
    if (*out) {
        memcpy(*out, git_blob_rawcontent(b), n);
        (*out)[n] = '\0';
        *len = n;
    }
    git_blob_free(b);
    return *out ? 0 : -1;
}

/* Commits looked at for the last signing, newest first. */
#define SIGNED_WALK_MAX 20000

int bd_git_last_signed(bd_git *g, const char *task_class, bd_signed_texts *out, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    char prov[1200], reg[1200], rub[1200];
    snprintf(prov, sizeof(prov), "%sbench/%s/provenance.yaml", g->prefix, task_class);
    snprintf(reg, sizeof(reg), "%sbench/%s/registration.yaml", g->prefix, task_class);
    snprintf(rub, sizeof(rub), "%sbench/%s/rubric.py", g->prefix, task_class);
    git_revwalk *w = NULL;
    git_oid id;
    int rc = 1;
    if (git_revwalk_new(&w, g->repo) != 0 || git_revwalk_push_head(w) != 0) {
        git_revwalk_free(w);
        return 1; /* no commit yet */
    }
    git_revwalk_sorting(w, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
    for (int k = 0; k < SIGNED_WALK_MAX && git_revwalk_next(&id, w) == 0; k++) {
        git_commit *c = NULL, *p = NULL;
        if (git_commit_lookup(&c, g->repo, &id) != 0)
            break;
        git_oid mine, theirs;
        bool here = blob_at(c, prov, &mine);
        bool before = git_commit_parentcount(c) > 0 && git_commit_parent(&p, c, 0) == 0 &&
                      blob_at(p, prov, &theirs);
        git_commit_free(p);
        if (here && (!before || !git_oid_equal(&mine, &theirs))) {
            git_oid_tostr(out->commit, sizeof(out->commit), &id);
            rc = blob_text(g->repo, c, reg, &out->registration, &out->registration_len) < 0 ||
                         blob_text(g->repo, c, rub, &out->rubric, &out->rubric_len) < 0
                     ? bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory")
                     : 0;
            git_commit_free(c);
            break;
        }
        git_commit_free(c);
    }
    git_revwalk_free(w);
    return rc;
}

void bd_signed_texts_release(bd_signed_texts *t)
{
    if (!t)
        return;
    free(t->registration);
    free(t->rubric);
    memset(t, 0, sizeof(*t));
}
