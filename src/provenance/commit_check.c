/*
 * commit_check.c — the pin check of the index before a commit: staged cases and task
 * classes against their staged pins (commit_check.h).
 */
#include "commit_check.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "case_source.h"
#include "digest.h"

/* What the index holds of one task class: positions of its staged files (or none). */
typedef struct tc_pins {
    char *name;
    bool has_digests, has_rubric, has_registration;
    size_t digests, rubric, registration; /* index positions */
    bd_digests *pins;                     /* the staged digests.yaml, parsed lazily */
    char **seen;                          /* ids of the staged cases (owned), for orphans */
    size_t n_seen, cap_seen;
} tc_pins;

typedef struct pin_check {
    bd_git *g;
    bd_git_index *ix;
    tc_pins *tcs;
    size_t n_tcs;
    char *pfx; /* "<prefix>bench/" */
    size_t pl;
} pin_check;

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

static tc_pins *find_tc(pin_check *pc, const char *name, size_t len)
{
    for (size_t i = 0; i < pc->n_tcs; i++)
        if (strlen(pc->tcs[i].name) == len && strncmp(pc->tcs[i].name, name, len) == 0)
            return &pc->tcs[i];
    tc_pins *nt = realloc(pc->tcs, (pc->n_tcs + 1) * sizeof(*nt));
    if (!nt)
        return NULL;
    pc->tcs = nt;
    tc_pins *t = &pc->tcs[pc->n_tcs];
    memset(t, 0, sizeof(*t));
    if (!(t->name = strndup(name, len)))
        return NULL;
    pc->n_tcs++;
    return t;
}

/* The staged digests.yaml of `t`, through the bench's strict loader. */
static int tc_pins_load(pin_check *pc, tc_pins *t, bd_err *err)
{
    if (t->pins || !t->has_digests)
        return 0;
    char label[600];
    snprintf(label, sizeof(label), "%sbench/%s/cases/digests.yaml (staged)", bd_git_prefix(pc->g),
             t->name);
    char *buf = NULL;
    size_t len = 0;
    if (bd_git_index_bytes(pc->ix, t->digests, &buf, &len, err) < 0)
        return -1;
    int rc = bd_digests_parse(&t->pins, buf, len, label, err);
    free(buf);
    return rc;
}

static int note_seen(tc_pins *t, const char *id, bd_err *err)
{
    if (t->n_seen == t->cap_seen) {
        size_t nc = t->cap_seen ? t->cap_seen * 2 : 16;
        char **ns = realloc(t->seen, nc * sizeof(*ns));
        if (!ns)
            return nomem(err);
        t->seen = ns;
        t->cap_seen = nc;
    }
    if (!(t->seen[t->n_seen] = strdup(id)))
        return nomem(err);
    t->n_seen++;
    return 0;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every pin of the staged digests.yaml of `t` names a staged case (case.pin_orphaned). */
static int check_orphans(pin_check *pc, tc_pins *t, bd_err *err)
{
    if (!t->has_digests || tc_pins_load(pc, t, err) < 0)
        return t->has_digests ? -1 : 0;
    if (t->n_seen > 1)
        qsort(t->seen, t->n_seen, sizeof(*t->seen), str_cmp);
    for (size_t i = 0; t->pins && i < t->pins->n_pins; i++) {
        const char *id = t->pins->pins[i].case_id;
        if (t->n_seen && bsearch(&id, t->seen, t->n_seen, sizeof(*t->seen), str_cmp))
            continue;
        bd_err_set(err, BD_E_PIN_ORPHAN, NULL, 0, 0,
                   "the staged %sbench/%s/cases/digests.yaml pins case %s, which the commit "
                   "would not hold; stage the case too, or re-pin the task class (",
                   bd_git_prefix(pc->g), t->name, id);
        bd_err_advise(err, BD_ACT_PIN, "%s", t->name);
        return bd_err_append(err, ") and stage digests.yaml");
    }
    return 0;
}

/* Check one staged case: index entries [from, to), all below the case dir whose path is
 * their first `base_len` bytes. */
static int check_case(pin_check *pc, tc_pins *t, const char *id, size_t base_len, size_t from,
                      size_t to, bd_err *err)
{
    bool has_case_yaml = false;
    for (size_t i = from; i < to; i++)
        has_case_yaml |= strcmp(bd_git_index_path(pc->ix, i, NULL) + base_len, "case.yaml") == 0;
    bd_case_source *src = NULL;
    char digest[BD_DIGEST_BUF];
    if (bd_git_index_source(&src, pc->ix, from, to, base_len, err) < 0)
        return -1;
    int r = bd_case_source_digest(digest, src, NULL, err);
    bd_git_index_source_free(src);
    if (r != 0 || tc_pins_load(pc, t, err) < 0)
        return -1;
    const bd_pin *pin = t->pins ? bd_digests_find(t->pins, id) : NULL;
    if (!pin) {
        bd_err_set(err, BD_E_DIGEST_MISSING, NULL, 0, 0,
                   "staged case %s/%s has no pin in the staged digests.yaml; run ", t->name, id);
        bd_err_advise(err, BD_ACT_PIN, "%s %s", t->name, id);
        return bd_err_append(err, " and stage bench/%s/cases/digests.yaml with it", t->name);
    }
    if (strcmp(pin->digest, digest) != 0) {
        bd_err_set(err, BD_E_DIGEST_MISMATCH, NULL, 0, 0,
                   "staged case %s/%s is %s but its staged pin is %s; stage the case's files "
                   "and digests.yaml together ",
                   t->name, id, digest, pin->digest);
        bd_err_advise(err, BD_ACT_STAGE_PATH, "%s", t->name);
        return bd_err_append(err, ", or re-pin deliberately");
    }
    if (!has_case_yaml)
        return bd_err_set(err, BD_E_CASE_SCHEMA, NULL, 0, 0,
                          "staged case %s/%s has no staged case.yaml; stage it too", t->name, id);
    return 0;
}

/* The task-class digest of the staged registration.yaml and rubric.py of `t`. */
static int staged_tc_digest(pin_check *pc, const tc_pins *t, char out[BD_DIGEST_BUF], bd_err *err)
{
    bd_tc_files f;
    memset(&f, 0, sizeof(f));
    (void)bd_git_index_path(pc->ix, t->registration, &f.registration_exec);
    (void)bd_git_index_path(pc->ix, t->rubric, &f.rubric_exec);
    int rc = -1;
    if (bd_git_index_bytes(pc->ix, t->registration, &f.registration, &f.registration_len, err) ==
            0 &&
        bd_git_index_bytes(pc->ix, t->rubric, &f.rubric, &f.rubric_len, err) == 0) {
        bd_digest_task_class_files(out, &f);
        rc = 0;
    }
    bd_tc_files_release(&f);
    return rc;
}

/* The staged task class (registration.yaml + rubric.py) against the staged pin. */
static int check_task_class(pin_check *pc, tc_pins *t, bd_err *err)
{
    if (!t->has_digests && !t->has_rubric && !t->has_registration)
        return 0;
    if (!t->has_digests || !t->has_rubric || !t->has_registration) {
        bd_err_set(err, BD_E_TC_DIGEST_MISSING, NULL, 0, 0,
                   "the index holds task class %s without its %s; stage registration.yaml, "
                   "rubric.py and cases/digests.yaml together ",
                   t->name,
                   !t->has_registration ? "registration.yaml"
                   : !t->has_rubric     ? "rubric.py"
                                        : "pins (cases/digests.yaml)");
        return bd_err_advise(err, BD_ACT_STAGE_PATH, "%s", t->name);
    }
    if (tc_pins_load(pc, t, err) < 0)
        return -1;
    const char *pin = t->pins && t->pins->task_class[0] ? t->pins->task_class : NULL;
    char digest[BD_DIGEST_BUF];
    if (staged_tc_digest(pc, t, digest, err) < 0)
        return -1;
    if (!pin || strcmp(pin, digest) != 0) {
        bd_err_set(err, BD_E_TC_DIGEST_MISMATCH, NULL, 0, 0,
                   "staged task class %sbench/%s (registration.yaml + rubric.py) is %s but the "
                   "staged pin is %s; run ",
                   bd_git_prefix(pc->g), t->name, digest, pin ? pin : "missing");
        bd_err_advise(err, BD_ACT_PIN, "%s", t->name);
        return bd_err_append(err, ", have it signed again, and stage it all");
    }
    return 0;
}

/* Pass 1: each task class's staged digests.yaml, registration.yaml and rubric.py. */
static int find_task_classes(pin_check *pc, bd_err *err)
{
    size_t cnt = bd_git_index_count(pc->ix);
    for (size_t i = 0; i < cnt; i++) {
        const char *path = bd_git_index_path(pc->ix, i, NULL);
        if (strncmp(path, pc->pfx, pc->pl) != 0)
            continue;
        const char *rest = path + pc->pl, *slash = strchr(rest, '/');
        if (!slash)
            continue;
        bool dig = strcmp(slash, "/cases/digests.yaml") == 0,
             rub = strcmp(slash, "/rubric.py") == 0, reg = strcmp(slash, "/registration.yaml") == 0;
        if (!dig && !rub && !reg)
            continue;
        tc_pins *t = find_tc(pc, rest, (size_t)(slash - rest));
        if (!t)
            return nomem(err);
        if (dig) {
            t->has_digests = true;
            t->digests = i;
        } else if (rub) {
            t->has_rubric = true;
            t->rubric = i;
        } else {
            t->has_registration = true;
            t->registration = i;
        }
    }
    return 0;
}

/* Pass 2: cases, each a contiguous run of entries below bench/<tc>/cases/<id>/. */
static int check_cases(pin_check *pc, bd_err *err)
{
    size_t cnt = bd_git_index_count(pc->ix);
    for (size_t i = 0; i < cnt;) {
        const char *path = bd_git_index_path(pc->ix, i, NULL);
        const char *rest = strncmp(path, pc->pfx, pc->pl) == 0 ? path + pc->pl : NULL;
        const char *s1 = rest ? strchr(rest, '/') : NULL;
        const char *s2 = s1 && strncmp(s1, "/cases/", 7) == 0 ? s1 + 7 : NULL;
        const char *s3 = s2 ? strchr(s2, '/') : NULL;
        if (!s3) {
            i++;
            continue;
        }
        size_t base_len = (size_t)(s3 + 1 - path);
        size_t j = i + 1;
        while (j < cnt && strncmp(bd_git_index_path(pc->ix, j, NULL), path, base_len) == 0)
            j++;
        char *id = strndup(s2, (size_t)(s3 - s2));
        tc_pins *t = find_tc(pc, rest, (size_t)(s1 - rest));
        int r = (!id || !t)                                      ? nomem(err)
                : check_case(pc, t, id, base_len, i, j, err) < 0 ? -1
                                                                 : note_seen(t, id, err);
        free(id);
        if (r < 0)
            return -1;
        i = j;
    }
    return 0;
}

int bd_git_check_index(bd_git *g, bd_err *err)
{
    pin_check pc = {g, NULL, NULL, 0, NULL, 0};
    int rc = -1;
    if (bd_git_index_open(&pc.ix, g, err) < 0)
        return -1;
    const char *prefix = bd_git_prefix(g);
    if (!(pc.pfx = malloc(strlen(prefix) + 8))) {
        nomem(err);
        goto out;
    }
    sprintf(pc.pfx, "%sbench/", prefix);
    pc.pl = strlen(pc.pfx);
    if (find_task_classes(&pc, err) < 0 || check_cases(&pc, err) < 0)
        goto out;
    for (size_t k = 0; k < pc.n_tcs; k++)
        if (check_task_class(&pc, &pc.tcs[k], err) < 0 || check_orphans(&pc, &pc.tcs[k], err) < 0)
            goto out;
    rc = 0;
out:
    for (size_t k = 0; k < pc.n_tcs; k++) {
        free(pc.tcs[k].name);
        bd_digests_free(pc.tcs[k].pins);
        for (size_t i = 0; i < pc.tcs[k].n_seen; i++)
            free(pc.tcs[k].seen[i]);
        free(pc.tcs[k].seen);
    }
    free(pc.tcs);
    free(pc.pfx);
    bd_git_index_close(pc.ix);
    return rc;
}

int bd_git_commit(bd_commit_result *out, bd_git *g, const bd_commit_opts *opts, bd_err *err)
{
    return bd_git_commit_with(out, g, opts, bd_git_check_index, err);
}
