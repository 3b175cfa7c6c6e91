/*
 * migrate.c — format v1 to v2 (docs/formats.md); see migrate.h.
 */
#include "migrate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "fsutil.h"
#include "pin.h"
#include "sign.h"
#include "strbuf.h"
#include "ydoc.h"

#define CASE_YAML_MAX (1024 * 1024)

/* One line of the text: [start, end) without its newline; next is past it. */
typedef struct tline {
    const char *s;
    size_t len;  /* without the newline */
    size_t full; /* with it */
} tline;

static tline line_at(const char *p)
{
    tline l = {p, 0, 0};
    const char *nl = strchr(p, '\n');
    l.len = nl ? (size_t)(nl - p) : strlen(p);
    l.full = nl ? l.len + 1 : l.len;
    return l;
}

static bool blank(const tline *l)
{
    for (size_t i = 0; i < l->len; i++)
        if (l->s[i] != ' ' && l->s[i] != '\t' && l->s[i] != '\r')
            return false;
    return true;
}

static size_t indent_of(const tline *l)
{
    size_t i = 0;
    while (i < l->len && l->s[i] == ' ')
        i++;
    return i;
}

/* True when the line, at `ind`, is `key:` followed by a space, the end or a comment. */
static bool is_key(const tline *l, size_t ind, const char *key)
{
    size_t k = strlen(key);
    if (l->len < ind + k + 1 || strncmp(l->s + ind, key, k) != 0 || l->s[ind + k] != ':')
        return false;
    return l->len == ind + k + 1 || l->s[ind + k + 1] == ' ' || l->s[ind + k + 1] == '\r';
}

/* The rest of a `key:` line after the colon is empty or a comment. */
static bool header_only(const tline *l, size_t after)
{
    for (size_t i = after; i < l->len; i++) {
        if (l->s[i] == '#')
            return true;
        if (l->s[i] != ' ' && l->s[i] != '\t' && l->s[i] != '\r')
            return false;
    }
    return true;
}

char *bd_migrate_case_text(const char *text, const char *label, char **last_validated,
                           size_t *dropped, bd_err *err)
{
    bd_strbuf b = BD_STRBUF_INIT;
    bd_ydoc *doc = NULL;
    if (last_validated)
        *last_validated = NULL;
    if (dropped)
        *dropped = 0;
    /* What the v1 file says, read as YAML (values never come from the line edit). */
    if (bd_ydoc_parse(&doc, text, strlen(text), label, err) < 0)
        return NULL;
    const bd_ynode *prov = bd_ynode_get(doc->root, "provenance");
    if (prov && prov->kind == BD_Y_MAP) {
        static const char *const sigs[] = {"added_by", "reviewed_by"};
        for (size_t i = 0; i < 2; i++) {
            const bd_ynode *blk = bd_ynode_get(prov, sigs[i]);
            if (blk && !bd_ynode_is_null(blk) && dropped)
                (*dropped)++;
        }
        const bd_ynode *lv = bd_ynode_get(prov, "last_validated_at");
        if (lv && lv->kind == BD_Y_SCALAR && !bd_ynode_is_null(lv) && last_validated &&
            !(*last_validated = strdup(lv->str)))
            goto oom;
    }
    int lineno = 1;
    const char *p = text;
    while (*p) {
        tline l = line_at(p);
        bool top = l.len > 0 && l.s[0] != ' ' && l.s[0] != '#' && !blank(&l);
        if (top && is_key(&l, 0, "schema_version")) {
            bd_strbuf_add(&b, "schema_version: 2\n", 18);
        } else if (top && is_key(&l, 0, "case_digest")) {
            /* Dropped with any continuation lines. */
            p += l.full;
            lineno++;
            for (tline c = line_at(p); *p && (blank(&c) || c.s[0] == ' ');
                 p += c.full, lineno++, c = line_at(p))
                ;
            continue;
        } else if (top && is_key(&l, 0, "provenance")) {
            if (!header_only(&l, strlen("provenance:"))) {
                bd_err_set(err, BD_E_CASE_SCHEMA, label, lineno, 1,
                           "provenance is written in flow style ({...}); write it as an "
                           "indented block, then run ");
                bd_err_advise(err, BD_ACT_MIGRATE, NULL);
                bd_err_append(err, " again");
                goto fail;
            }
            bd_strbuf_add(&b, "origin:\n", 8);
            p += l.full;
            lineno++;
            size_t child = 0;
            bool keep = true;
            for (tline c = line_at(p); *p; c = line_at(p)) {
                if (!blank(&c) && c.s[0] != ' ')
                    break; /* the next top-level key or comment */
                size_t ind = indent_of(&c);
                bool entry = !blank(&c) && c.s[ind] != '#' && (child == 0 || ind <= child);
                if (entry) {
                    if (child == 0)
                        child = ind;
                    keep = is_key(&c, ind, "source") || is_key(&c, ind, "source_ref") ||
                           is_key(&c, ind, "added_at");
                }
                if (keep)
                    bd_strbuf_add(&b, c.s, c.full);
                p += c.full;
                lineno++;
            }
            continue;
        } else {
            bd_strbuf_add(&b, l.s, l.full);
        }
        p += l.full;
        lineno++;
    }
    if (b.oom)
        goto oom;
    if (!b.p)
        bd_strbuf_add(&b, "", 0);
    bd_ydoc_free(doc);
    return b.p;
oom:
    bd_err_set(err, BD_E_NOMEM, label, 0, 0, "out of memory");
fail:
    bd_ydoc_free(doc);
    bd_strbuf_release(&b);
    if (last_validated) {
        free(*last_validated);
        *last_validated = NULL;
    }
    return NULL;
}

/* One file to write once the whole task class converted. */
typedef struct pending {
    char *path;
    char *text;
} pending;

typedef struct plan {
    pending *files;
    size_t n, cap;
} plan;

static int plan_add(plan *pl, char *path, char *text, bd_err *err)
{
    if (pl->n == pl->cap) {
        size_t nc = pl->cap ? pl->cap * 2 : 64;
        pending *g = realloc(pl->files, nc * sizeof(*g));
        if (!g) {
            free(path);
            free(text);
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        }
        pl->files = g;
        pl->cap = nc;
    }
    pl->files[pl->n++] = (pending){path, text};
    return 0;
}

static void plan_free(plan *pl)
{
    for (size_t i = 0; i < pl->n; i++) {
        free(pl->files[i].path);
        free(pl->files[i].text);
    }
    free(pl->files);
    memset(pl, 0, sizeof(*pl));
}

/* True when the file at `path` declares schema_version 1 (read as YAML). */
static int is_v1(bool *out, const char *path, bd_err *err)
{
    bd_ydoc *doc = NULL;
    *out = false;
    if (bd_ydoc_load(&doc, path, err) < 0)
        return -1;
    const bd_ynode *sv = bd_ynode_get(doc->root, "schema_version");
    *out = sv && sv->kind == BD_Y_SCALAR && strcmp(sv->str, "1") == 0;
    bd_ydoc_free(doc);
    return 0;
}

static int convert_case(plan *pl, bd_migrate_report *out, const char *case_dir, const char *id,
                        bd_err *err)
{
    int rc = -1;
    char path[4500], prov_path[4500];
    char *text = NULL, *next = NULL, *validated = NULL, *prov_text = NULL;
    size_t len, dropped = 0;
    bd_case *c = NULL;
    snprintf(path, sizeof(path), "%s/case.yaml", case_dir);
    snprintf(prov_path, sizeof(prov_path), "%s/%s", case_dir, BD_PROVENANCE_FILE);
    bool v1;
    if (is_v1(&v1, path, err) < 0)
        goto out;
    if (!v1) {
        rc = 0;
        goto out;
    }
    if (bd_read_file(&text, &len, path, CASE_YAML_MAX, BD_E_YAML_TOO_LARGE, err) < 0 ||
        !(next = bd_migrate_case_text(text, path, &validated, &dropped, err)))
        goto out;
    if (bd_case_parse(&c, next, strlen(next), path, id, err) < 0)
        goto out;
    if (validated) {
        bd_provfile pf = {.schema_version = 2, .last_validated_at = validated};
        if (!(prov_text = bd_provfile_format(&pf))) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
            goto out;
        }
        char *pp = strdup(prov_path);
        if (!pp || plan_add(pl, pp, prov_text, err) < 0) {
            if (!pp)
                bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
            prov_text = NULL;
            goto out;
        }
        prov_text = NULL;
    }
    char *cp = strdup(path);
    if (!cp) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    if (plan_add(pl, cp, next, err) < 0) {
        next = NULL;
        goto out;
    }
    next = NULL;
    out->cases++;
    out->signatures_dropped += dropped;
    rc = 0;
out:
    bd_case_free(c);
    free(text);
    free(next);
    free(validated);
    free(prov_text);
    return rc;
}

static int migrate_task_class(bd_migrate_report *out, const bd_bench *bench, const char *name,
                              bd_err *err)
{
    int rc = -1;
    plan pl = {0};
    char dir[4096], reg_path[4200], dig_path[4300], cases_dir[4200];
    char *text = NULL, *next = NULL;
    bd_registration *reg = NULL;
    bd_task_class *tc = NULL;
    snprintf(dir, sizeof(dir), "%s/%s", bench->bench_dir, name);
    snprintf(reg_path, sizeof(reg_path), "%s/registration.yaml", dir);
    snprintf(cases_dir, sizeof(cases_dir), "%s/cases", dir);
    snprintf(dig_path, sizeof(dig_path), "%s/digests.yaml", cases_dir);

    bool reg_v1, dig_v1 = false;
    struct stat st;
    if (is_v1(&reg_v1, reg_path, err) < 0)
        goto out;
    bool has_digests = lstat(dig_path, &st) == 0;
    if (has_digests) {
        bd_ydoc *doc = NULL;
        if (bd_ydoc_load_max(&doc, dig_path, BD_DIGESTS_MAX_BYTES, "digests.yaml files", err) < 0)
            goto out;
        dig_v1 = bd_ynode_get(doc->root, "rubric") != NULL;
        bd_ydoc_free(doc);
    }
    /* Phase 1: every converted file, proven to load, in memory. */
    if (reg_v1) {
        size_t len;
        if (bd_read_file(&text, &len, reg_path, CASE_YAML_MAX, BD_E_YAML_TOO_LARGE, err) < 0 ||
            !(next = bd_yaml_set_top_scalar(text, "schema_version", "2", reg_path, err)) ||
            bd_registration_parse(&reg, next, strlen(next), reg_path, name, err) < 0)
            goto out;
        char *rp = strdup(reg_path);
        if (!rp) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
            goto out;
        }
        if (plan_add(&pl, rp, next, err) < 0) {
            next = NULL;
            goto out;
        }
        next = NULL;
    }
    size_t cases_before = out->cases;
    {
        /* bd_task_class_load would refuse the v1 files: list the case directories (valid
         * ids, no links) as it would. */
        char **ids = NULL;
        size_t n_ids = 0;
        if (bd_list_case_dirs(&ids, &n_ids, cases_dir, err) < 0)
            goto out;
        for (size_t i = 0; i < n_ids; i++) {
            char cdir[4400];
            snprintf(cdir, sizeof(cdir), "%s/%s", cases_dir, ids[i]);
            if (convert_case(&pl, out, cdir, ids[i], err) < 0) {
                for (size_t k = 0; k < n_ids; k++)
                    free(ids[k]);
                free(ids);
                goto out;
            }
        }
        for (size_t k = 0; k < n_ids; k++)
            free(ids[k]);
        free(ids);
    }
    if (!reg_v1 && !dig_v1 && out->cases == cases_before) {
        out->already_v2++;
        rc = 0;
        goto out;
    }
    /* Phase 2: write, drop the v1 pins, pin the task class anew (format v2). */
    /* Case files are inside a hashed scope: their temp files go to cases/ (fsutil.h). */
    size_t cl = strlen(cases_dir);
    for (size_t i = 0; i < pl.n; i++) {
        bool in_case = strncmp(pl.files[i].path, cases_dir, cl) == 0 && pl.files[i].path[cl] == '/';
        if (bd_write_file_atomic_in(pl.files[i].path, in_case ? cases_dir : NULL, pl.files[i].text,
                                    strlen(pl.files[i].text), 0644, err) < 0)
            goto out;
    }
    if (dig_v1 && unlink(dig_path) != 0) {
        bd_err_errno(err, BD_E_IO, errno, dig_path, "cannot remove the format-v1 pins");
        goto out;
    }
    if (bd_task_class_load(&tc, bench, name, err) < 0)
        goto out;
    bd_pin_report pr;
    if (bd_pin_task_class(&pr, tc, NULL, 0, err) < 0)
        goto out;
    bd_pin_report_release(&pr);
    out->task_classes++;
    rc = 0;
out:
    plan_free(&pl);
    bd_registration_free(reg);
    bd_task_class_free(tc);
    free(text);
    free(next);
    return rc;
}

int bd_migrate_bench(bd_migrate_report *out, const char *root, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    bd_bench *bench = NULL;
    if (bd_bench_open(&bench, root, err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < bench->n_task_classes && rc == 0; i++)
        rc = migrate_task_class(out, bench, bench->task_classes[i], err);
    bd_bench_free(bench);
    return rc;
}
