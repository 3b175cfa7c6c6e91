/*
 * bench_find.c — the bench as folders (bench.h): finding its root, listing its task
 * classes and the cases of one, loading a task class with its registration, signatures
 * and pins, and looking a named case up on disk.
 */
#include "bench.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

/* ---- the bench on disk ---------------------------------------------------------------- */

/* A growable, sorted-later list of names. */
typedef struct namelist {
    char **v;
    size_t n, cap;
} namelist;

static int namelist_add(namelist *l, const char *s)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->v, ncap * sizeof(*nv));
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = ncap;
    }
    if (!(l->v[l->n] = strdup(s)))
        return -1;
    l->n++;
    return 0;
}

static void namelist_free(namelist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Sort the names and hand them over: *v and *n take the array, and `l` is left empty. */
static void namelist_take_sorted(namelist *l, char ***v, size_t *n)
{
    if (l->n)
        qsort(l->v, l->n, sizeof(*l->v), bd_str_ptr_cmp);
    *v = l->v;
    *n = l->n;
    memset(l, 0, sizeof(*l));
}

/* The next entry of `d` other than "." and "..": *name is its name, or NULL at the end.
 * Returns 0, or -1 with errno set when the directory cannot be read. */
static int next_entry(DIR *d, const char **name)
{
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            *name = NULL;
            return errno ? -1 : 0;
        }
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            *name = de->d_name;
            return 0;
        }
    }
}

static bool has_bench_dir(const char *dir)
{
    char *p = bd_path_join(dir, "bench");
    struct stat st;
    bool ok = p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
    free(p);
    return ok;
}

int bd_bench_find_root(char **out, const char *dir, bool explicit_dir, bd_err *err)
{
    int rc = -1;
    char *cur = NULL;

    *out = NULL;
    if (!dir || !(cur = realpath(dir, NULL))) {
        int e = errno;
        bd_err_set(err, BD_E_BENCH_NOT_FOUND, dir, 0, 0,
                   "cannot open this directory (%s); pass an existing bench root with -C",
                   dir ? strerror(e) : "no directory given");
        goto out;
    }
    if (explicit_dir) {
        if (!has_bench_dir(cur)) {
            bd_err_set(err, BD_E_BENCH_NOT_FOUND, cur, 0, 0,
                       "holds no bench/ directory; pass the root of a bench with -C");
            goto out;
        }
    } else {
        for (;;) {
            if (has_bench_dir(cur))
                break;
            if (strcmp(cur, "/") == 0) {
                bd_err_set(err, BD_E_BENCH_NOT_FOUND, dir, 0, 0,
                           "neither this directory nor any parent holds a bench/ directory; "
                           "cd into a bench or pass -C DIR");
                goto out;
            }
            char *slash = strrchr(cur, '/');
            if (slash == cur)
                cur[1] = '\0';
            else
                *slash = '\0';
        }
    }
    *out = cur;
    cur = NULL;
    rc = 0;
out:
    free(cur);
    return rc;
}

void bd_bench_free(bd_bench *b)
{
    if (!b)
        return;
    free(b->root);
    free(b->bench_dir);
    for (size_t i = 0; i < b->n_task_classes; i++)
        free(b->task_classes[i]);
    free(b->task_classes);
    free(b);
}

/* True when `dirfd`/`name`/registration.yaml exists (of any type; the loader judges it). */
static bool has_registration(int dirfd, const char *name, int flags)
{
    char *p = bd_path_join(name, "registration.yaml");
    struct stat st;
    bool ok = p && fstatat(dirfd, p, &st, flags) == 0;
    free(p);
    return ok;
}

int bd_bench_open(bd_bench **out, const char *root, bd_err *err)
{
    int rc = -1;
    DIR *d = NULL;
    namelist names = {0};
    bd_bench *b = calloc(1, sizeof(*b));

    *out = NULL;
    if (!b) {
        bd_err_set(err, BD_E_NOMEM, root, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    if (!root || !(b->root = realpath(root, NULL))) {
        bd_err_set(err, BD_E_BENCH_NOT_FOUND, root, 0, 0,
                   "cannot open the bench root (%s); pass an existing bench with -C",
                   root ? strerror(errno) : "none given");
        goto out;
    }
    if (!(b->bench_dir = bd_path_join(b->root, "bench"))) {
        bd_err_set(err, BD_E_NOMEM, root, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    d = opendir(b->bench_dir);
    if (!d) {
        bd_err_set(err, BD_E_BENCH_NOT_FOUND, b->bench_dir, 0, 0,
                   "cannot open the bench directory (%s); pass a bench root with -C",
                   strerror(errno));
        goto out;
    }
    int dfd = dirfd(d);
    for (;;) {
        const char *name;
        if (next_entry(d, &name) < 0) {
            bd_err_errno(err, BD_E_IO, errno, b->bench_dir, "cannot list");
            goto out;
        }
        if (!name)
            break;
        if (!strcmp(name, "keys"))
            continue;
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* vanished while listing */
        if (S_ISLNK(st.st_mode)) {
            if (has_registration(dfd, name, 0)) {
                char shown[72];
                bd_ydoc_clip(shown, sizeof(shown), name);
                bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, b->bench_dir, 0, 0,
                           "task class '%s' is a symbolic link; refused (never followed): "
                           "make it a real directory",
                           shown);
                goto out;
            }
            continue;
        }
        if (!S_ISDIR(st.st_mode) || !has_registration(dfd, name, AT_SYMLINK_NOFOLLOW))
            continue; /* not a task class: trusted-signers.yaml, README, .git, ... */
        if (!bd_name_valid(name)) {
            char shown[72];
            bd_ydoc_clip(shown, sizeof(shown), name);
            bd_err_set(err, BD_E_BAD_ID, b->bench_dir, 0, 0,
                       "task class directory '%s' is not a valid name "
                       "(^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); rename it",
                       shown);
            goto out;
        }
        if (namelist_add(&names, name) < 0) {
            bd_err_set(err, BD_E_NOMEM, root, 0, 0, "out of memory; free memory and retry");
            goto out;
        }
    }
    namelist_take_sorted(&names, &b->task_classes, &b->n_task_classes);
    *out = b;
    b = NULL;
    rc = 0;
out:
    if (d)
        closedir(d);
    namelist_free(&names);
    bd_bench_free(b);
    return rc;
}

void bd_task_class_free(bd_task_class *tc)
{
    if (!tc)
        return;
    free(tc->name);
    free(tc->dir);
    free(tc->cases_dir);
    free(tc->rubric_path);
    free(tc->prov_path);
    bd_provfile_free(tc->prov);
    bd_registration_free(tc->reg);
    bd_digests_free(tc->digests);
    for (size_t i = 0; i < tc->n_cases; i++)
        free(tc->case_ids[i]);
    free(tc->case_ids);
    free(tc);
}

int bd_list_case_dirs(char ***ids, size_t *n, const char *cases_dir, bd_err *err)
{
    int rc = -1;
    namelist names = {0};
    *ids = NULL;
    *n = 0;
    DIR *d = opendir(cases_dir);
    if (!d) {
        if (errno == ENOENT)
            return 0; /* a task class without cases yet */
        bd_err_errno(err, BD_E_IO, errno, cases_dir, "cannot list the cases");
        return -1;
    }
    int dfd = dirfd(d);
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                bd_err_errno(err, BD_E_IO, errno, cases_dir, "cannot list the cases");
                goto out;
            }
            break;
        }
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        /* The type from the directory record (no lstat per case: 100,000 of them); only
         * a file system that does not report it costs an fstatat. */
        mode_t mode = de->d_type == DT_DIR ? S_IFDIR : de->d_type == DT_REG ? S_IFREG : 0;
        if (!mode && de->d_type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue; /* vanished while listing */
            mode = st.st_mode;
        }
        if (S_ISREG(mode))
            continue; /* digests.yaml, a README: not cases */
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), name);
        if (!S_ISDIR(mode)) {
            bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, cases_dir, 0, 0,
                       "'%s' is a symbolic link or special file; refused (never followed): "
                       "replace it with a real case directory or remove it",
                       shown);
            goto out;
        }
        if (!bd_name_valid(name)) {
            bd_err_set(err, BD_E_BAD_ID, cases_dir, 0, 0,
                       "case directory '%s' is not a valid case id "
                       "(^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); rename it",
                       shown);
            goto out;
        }
        if (namelist_add(&names, name) < 0) {
            bd_err_set(err, BD_E_NOMEM, cases_dir, 0, 0, "out of memory; free memory and retry");
            goto out;
        }
    }
    namelist_take_sorted(&names, ids, n);
    rc = 0;
out:
    closedir(d);
    namelist_free(&names);
    return rc;
}

static int list_cases(bd_task_class *tc, bd_err *err)
{
    return bd_list_case_dirs(&tc->case_ids, &tc->n_cases, tc->cases_dir, err);
}

static int task_class_load(bd_task_class **out, const bd_bench *bench, const char *name, bool list,
                           bd_err *err);

int bd_task_class_load(bd_task_class **out, const bd_bench *bench, const char *name, bd_err *err)
{
    return task_class_load(out, bench, name, true, err);
}

int bd_task_class_load_unlisted(bd_task_class **out, const bd_bench *bench, const char *name,
                                bd_err *err)
{
    return task_class_load(out, bench, name, false, err);
}

static int task_class_load(bd_task_class **out, const bd_bench *bench, const char *name, bool list,
                           bd_err *err)
{
    int rc = -1;
    char *reg_path = NULL, *dig_path = NULL;
    bd_task_class *tc = NULL;
    struct stat st;
    char shown[72];

    *out = NULL;
    bd_ydoc_clip(shown, sizeof(shown), name);
    if (!bd_name_valid(name)) {
        bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                   "'%s' is not a valid task-class name (^[a-z0-9][a-z0-9._-]{0,127}$, no "
                   "'..'); check the name",
                   shown);
        goto out;
    }
    if (!(tc = calloc(1, sizeof(*tc))) || !(tc->name = strdup(name)) ||
        !(tc->dir = bd_path_join(bench->bench_dir, name)) ||
        !(tc->cases_dir = bd_path_join(tc->dir, "cases")) ||
        !(tc->rubric_path = bd_path_join(tc->dir, "rubric.py")) ||
        !(tc->prov_path = bd_path_join(tc->dir, "provenance.yaml")) ||
        !(reg_path = bd_path_join(tc->dir, "registration.yaml")) ||
        !(dig_path = bd_path_join(tc->cases_dir, "digests.yaml"))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    if (lstat(tc->dir, &st) == 0 && S_ISLNK(st.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, tc->dir, 0, 0,
                   "is a symbolic link; refused (never followed): make it a real directory");
        goto out;
    }
    if (lstat(tc->dir, &st) < 0 || !S_ISDIR(st.st_mode) || lstat(reg_path, &st) < 0) {
        char hint[192];
        bd_text_did_you_mean(hint, sizeof(hint), name, (const char *const *)bench->task_classes,
                             bench->n_task_classes);
        bd_err_set(err, BD_E_UNKNOWN_TASK_CLASS, bench->bench_dir, 0, 0,
                   "no task class '%s' here (no %s/registration.yaml);%s ", name, name, hint);
        bd_err_advise(err, BD_ACT_LIST_TASK_CLASSES, NULL);
        bd_err_append(err, " shows the task classes");
        goto out;
    }
    if (bd_registration_load(&tc->reg, reg_path, name, err) < 0 ||
        bd_provfile_load(&tc->prov, tc->prov_path, err) < 0)
        goto out;
    tc->run_cost_cap_usd = tc->reg->run_cost_cap_usd;
    tc->run_require_signed = tc->reg->run_require_signed;
    if (lstat(dig_path, &st) == 0) {
        if (bd_digests_load(&tc->digests, dig_path, err) < 0)
            goto out;
    } else if (errno != ENOENT) {
        bd_err_errno(err, BD_E_IO, errno, dig_path, "cannot stat");
        goto out;
    }
    if (!list)
        tc->cases_unlisted = true;
    else if (list_cases(tc, err) < 0)
        goto out;
    *out = tc;
    tc = NULL;
    rc = 0;
out:
    free(reg_path);
    free(dig_path);
    bd_task_class_free(tc);
    return rc;
}

int bd_task_class_case(bd_case **out, const bd_task_class *tc, const char *case_id, bd_err *err)
{
    int rc = -1;
    char *dir = NULL, *path = NULL;
    char shown[72];

    *out = NULL;
    bd_ydoc_clip(shown, sizeof(shown), case_id);
    if (!bd_name_valid(case_id)) {
        bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                   "'%s' is not a valid case id (^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); "
                   "check the id",
                   shown);
        goto out;
    }
    char case_dir_check[4096];
    struct stat cst;
    int cn = snprintf(case_dir_check, sizeof(case_dir_check), "%s/%s", tc->cases_dir, case_id);
    bool exists = tc->cases_unlisted ? cn > 0 && (size_t)cn < sizeof(case_dir_check) &&
                                           lstat(case_dir_check, &cst) == 0 && !S_ISREG(cst.st_mode)
                                     : tc->n_cases && bsearch(&case_id, tc->case_ids, tc->n_cases,
                                                              sizeof(char *), bd_str_ptr_cmp);
    if (!exists) {
        char hint[192];
        char **ids = tc->case_ids;
        size_t n_ids = tc->n_cases;
        if (tc->cases_unlisted && bd_list_case_dirs(&ids, &n_ids, tc->cases_dir, NULL) != 0) {
            ids = NULL;
            n_ids = 0;
        }
        bd_text_did_you_mean(hint, sizeof(hint), case_id, (const char *const *)ids, n_ids);
        if (tc->cases_unlisted) {
            for (size_t i = 0; i < n_ids; i++)
                free(ids[i]);
            free(ids);
        }
        bd_err_set(err, BD_E_UNKNOWN_CASE, tc->cases_dir, 0, 0,
                   "no case '%s' in task class '%s';%s ", case_id, tc->name, hint);
        bd_err_advise(err, BD_ACT_LIST_CASES, "%s", tc->name);
        bd_err_append(err, " shows the cases");
        goto out;
    }
    if (!(dir = bd_path_join(tc->cases_dir, case_id)) || !(path = bd_path_join(dir, "case.yaml"))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    /* Listed as a real directory, but it may have been swapped since: look again. */
    struct stat st;
    if (lstat(dir, &st) < 0) {
        if (errno == ENOENT) {
            bd_err_set(err, BD_E_UNKNOWN_CASE, tc->cases_dir, 0, 0,
                       "case '%s' is gone from task class '%s'; ", case_id, tc->name);
            bd_err_advise(err, BD_ACT_LIST_CASES, "%s", tc->name);
            bd_err_append(err, " shows the cases");
        } else {
            bd_err_errno(err, BD_E_IO, errno, dir, "cannot stat");
        }
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, dir, 0, 0,
                   "is not a real directory (a symbolic link?); refused (never followed)");
        goto out;
    }
    rc = bd_case_load(out, path, case_id, err);
out:
    free(dir);
    free(path);
    return rc;
}

int bd_task_class_case_prov(bd_provfile **out, const bd_task_class *tc, const char *case_id,
                            bd_err *err)
{
    *out = NULL;
    if (!bd_name_valid(case_id)) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), case_id ? case_id : "");
        return bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                          "'%s' is not a valid case id (^[a-z0-9][a-z0-9._-]{0,127}$, no '..'); "
                          "check the id",
                          shown);
    }
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s/provenance.yaml", tc->cases_dir, case_id);
    if (n < 0 || (size_t)n >= sizeof(path))
        return bd_err_set(err, BD_E_IO, tc->cases_dir, 0, 0, "path too long");
    return bd_provfile_load(out, path, err);
}

int bd_case_leftover_check(const char *case_dir, bd_err *err)
{
    DIR *d = opendir(case_dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!bd_tmp_is_leftover(de->d_name))
            continue;
        char shown[160];
        bd_ydoc_clip(shown, sizeof(shown), de->d_name);
        bd_err_set(err, BD_E_LEFTOVER_TEMP, case_dir, 0, 0,
                   "'%s' is a temporary file left by an interrupted write (a crash or kill "
                   "during pin, sign or migrate); it is not part of the case and is not hashed: "
                   "check that case.yaml and provenance.yaml are whole, delete it, then run the "
                   "command again",
                   shown);
        found = 1;
        break;
    }
    closedir(d);
    return found;
}

int bd_task_class_case_index(const bd_task_class *tc, const char *case_id)
{
    size_t lo = 0, hi = tc->n_cases;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(tc->case_ids[mid], case_id);
        if (c == 0)
            return (int)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}
