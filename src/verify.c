#include "verify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Relative label "<task-class>/cases/<id>/..." keeps messages short and copy-pastable. */
static void check_cassette(bd_case_check *out, const bd_task_class *tc, const char *case_dir)
{
    const bd_case *c = out->loaded;
    char *path = bd_path_join(case_dir, "cassette.json");
    if (!path) {
        bd_err_set(&out->err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        return;
    }
    struct stat st;
    bool present = lstat(path, &st) == 0;
    if (!present && errno != ENOENT) {
        bd_err_errno(&out->err, BD_E_IO, errno, path, "cannot stat the cassette");
        goto out;
    }
    if (!present) {
        if (tc->reg->sut_kind == BD_SUT_CASSETTE)
            bd_err_set(&out->err, BD_E_CASSETTE_MISSING, path, 0, 0,
                       "cassette.json is missing but task class '%s' replays cassettes; "
                       "record the system's output there, then run `benchdesk pin %s %s`",
                       tc->name, tc->name, out->case_id);
        else if (c->has_cassette_digest)
            bd_err_set(&out->err, BD_E_CASSETTE_MISSING, c->path, 0, 0,
                       "cassette_digest is set but cassette.json is missing; restore it or "
                       "set cassette_digest: null");
        goto out;
    }
    bd_err ferr = BD_ERR_INIT;
    if (bd_digest_file(out->cassette, path, &ferr) != 0) {
        out->err = ferr;
        goto out;
    }
    if (!c->has_cassette_digest) {
        bd_err_set(&out->err, BD_E_CASSETTE_DIGEST_MISMATCH, c->path, 0, 0,
                   "cassette_digest is null but cassette.json exists (%s); run `benchdesk "
                   "pin %s %s` to pin it",
                   out->cassette, tc->name, out->case_id);
    } else if (strcmp(c->cassette_digest, out->cassette) != 0) {
        bd_err_set(&out->err, BD_E_CASSETTE_DIGEST_MISMATCH, path, 0, 0,
                   "cassette.json is %s but case.yaml pins %s; restore the recorded output, "
                   "or re-pin deliberately with `benchdesk pin %s %s`",
                   out->cassette, c->cassette_digest, tc->name, out->case_id);
    }
out:
    free(path);
}

int bd_verify_case(bd_case_check *out, const bd_task_class *tc, const char *case_id)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->case_id, sizeof(out->case_id), "%s", case_id);
    char *case_dir = NULL;

    /* The signatures are read even when the case is broken: list shows what it claims. */
    bd_err perr = BD_ERR_INIT;
    if (bd_task_class_case_prov(&out->prov_file, tc, case_id, &perr) != 0) {
        out->err = perr;
        goto out;
    }
    if (bd_task_class_case(&out->loaded, tc, case_id, &out->err) != 0)
        goto out;
    case_dir = bd_path_join(tc->cases_dir, case_id);
    if (!case_dir) {
        bd_err_set(&out->err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    /* A temp file from an interrupted write is reported as what it is, never hashed
     * (it would only show up as a digest mismatch with no hint why). */
    if (bd_case_leftover_check(case_dir, &out->err))
        goto out;
    if (bd_digest_case_dir(out->digest, case_dir, NULL, &out->err) != 0) {
        out->digest[0] = '\0';
        goto out;
    }
    const bd_pin *pin = tc->digests ? bd_digests_find(tc->digests, case_id) : NULL;
    if (pin)
        snprintf(out->pinned, sizeof(out->pinned), "%s", pin->digest);

    if (!pin) {
        bd_err_set(&out->err, BD_E_DIGEST_MISSING, case_dir, 0, 0,
                   "case '%s' has no pin in %s/cases/digests.yaml; review it, then run "
                   "`benchdesk pin %s %s`",
                   case_id, tc->name, tc->name, case_id);
        goto out;
    }
    if (strcmp(pin->digest, out->digest) != 0) {
        bd_err_set(&out->err, BD_E_DIGEST_MISMATCH, case_dir, 0, 0,
                   "content is %s but digests.yaml:%d pins %s; restore the case, or re-pin "
                   "deliberately with `benchdesk pin %s %s` (its signatures must then be made "
                   "again)",
                   out->digest, pin->line, pin->digest, tc->name, case_id);
        goto out;
    }
    check_cassette(out, tc, case_dir);
out:
    free(case_dir);
    return out->err.code == BD_OK ? 0 : -1;
}

void bd_case_check_release(bd_case_check *c)
{
    if (!c)
        return;
    bd_case_free(c->loaded);
    c->loaded = NULL;
    bd_provfile_free(c->prov_file);
    c->prov_file = NULL;
}

static void check_task_class(bd_verify_report *r, const bd_task_class *tc)
{
    bd_err *e = &r->tc_err;
    if (bd_digest_task_class_dir(r->tc_digest, tc->dir, e) != 0) {
        r->tc_digest[0] = '\0';
        return;
    }
    if (tc->digests)
        snprintf(r->tc_pinned, sizeof(r->tc_pinned), "%s", tc->digests->task_class);
    if (!tc->digests) {
        bd_err_set(e, BD_E_TC_DIGEST_MISSING, tc->cases_dir, 0, 0,
                   "digests.yaml is missing, so nothing is pinned; run `benchdesk pin %s`",
                   tc->name);
        return;
    }
    if (strcmp(tc->digests->task_class, r->tc_digest) != 0)
        bd_err_set(e, BD_E_TC_DIGEST_MISMATCH, tc->dir, 0, 0,
                   "registration.yaml + rubric.py are %s but digests.yaml pins %s; restore "
                   "them, or re-pin deliberately with `benchdesk pin %s` (the task class's "
                   "signatures must then be made again)",
                   r->tc_digest, tc->digests->task_class, tc->name);
}

static int id_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool has_case(const bd_task_class *tc, const char *id)
{
    return tc->n_cases && bsearch(&id, tc->case_ids, tc->n_cases, sizeof(char *), id_cmp);
}

/* Fill `e` with the case.pin_orphaned error of pin `p`. */
static void orphan_err(bd_err *e, const bd_task_class *tc, const bd_pin *p)
{
    char *path = bd_path_join(tc->cases_dir, "digests.yaml");
    bd_err_set(e, BD_E_PIN_ORPHAN, path ? path : "digests.yaml", p->line, 0,
               "pin for '%s' names no case directory; restore the case or run "
               "`benchdesk pin %s` to drop the pin",
               p->case_id, tc->name);
    free(path);
}

int bd_verify_task_class(bd_verify_report *out, const bd_task_class *tc,
                         const char *const *case_ids, size_t n_case_ids, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->task_class, sizeof(out->task_class), "%s", tc->name);
    check_task_class(out, tc);
    if (out->tc_err.code != BD_OK)
        out->n_failed++;

    size_t n = n_case_ids ? n_case_ids : tc->n_cases;
    if (n) {
        out->cases = calloc(n, sizeof(*out->cases));
        if (!out->cases)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = n_case_ids ? case_ids[i] : tc->case_ids[i];
        if (bd_verify_case(&out->cases[i], tc, id) != 0)
            out->n_failed++;
        out->n_cases++;
    }

    if (!n_case_ids && tc->digests && tc->digests->n_pins) {
        /* At most one orphan per pin: one allocation, whatever the count. */
        out->orphans = calloc(tc->digests->n_pins, sizeof(*out->orphans));
        if (!out->orphans)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        for (size_t i = 0; i < tc->digests->n_pins; i++) {
            const bd_pin *p = &tc->digests->pins[i];
            if (has_case(tc, p->case_id))
                continue;
            orphan_err(&out->orphans[out->n_orphans++], tc, p);
            out->n_failed++;
        }
    }
    return out->n_failed ? 1 : 0;
}

void bd_verify_report_release(bd_verify_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->cases && i < r->n_cases; i++)
        bd_case_check_release(&r->cases[i]);
    free(r->cases);
    free(r->orphans);
    memset(r, 0, sizeof(*r));
}

/* The task class's own signatures into `r`. 0, or -1 when GnuPG failed. */
static int verify_tc_prov(bd_verify_report *r, const bd_task_class *tc, bd_prov_ctx *ctx,
                          bd_err *err)
{
    bd_subject tsj = {BD_SUBJECT_TASK_CLASS, tc->name, NULL, r->tc_digest, r->tc_pinned, tc->prov};
    int v = bd_provenance_verify(&r->tc_prov, ctx, &tsj, err);
    if (v < 0)
        return -1;
    r->tc_prov_checked = true;
    if (v == 1 && r->tc_err.code == BD_OK)
        r->n_failed++;
    return 0;
}

/* One case's signatures, counted into `r`. 0, or -1 when GnuPG failed. */
static int verify_case_prov(bd_verify_report *r, bd_case_check *k, const bd_task_class *tc,
                            bd_prov_ctx *ctx, bd_err *err)
{
    if (!k->prov_file)
        return 0;
    bd_subject sj = {BD_SUBJECT_CASE, tc->name, k->case_id, k->digest, k->pinned, k->prov_file};
    int v = bd_provenance_verify(&k->prov, ctx, &sj, err);
    if (v < 0)
        return -1;
    k->prov_checked = true;
    if (v == 1 && k->err.code == BD_OK)
        r->n_failed++;
    return 0;
}

int bd_verify_provenance(bd_verify_report *r, const bd_task_class *tc, bd_prov_ctx *ctx,
                         bd_err *err)
{
    if (verify_tc_prov(r, tc, ctx, err) < 0)
        return -1;
    for (size_t i = 0; i < r->n_cases; i++)
        if (verify_case_prov(r, &r->cases[i], tc, ctx, err) < 0)
            return -1;
    return 0;
}

int bd_verify_stream(bd_verify_report *out, const bd_task_class *tc, bd_prov_ctx *ctx,
                     const bd_verify_sink *sink, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->task_class, sizeof(out->task_class), "%s", tc->name);
    check_task_class(out, tc);
    if (out->tc_err.code != BD_OK)
        out->n_failed++;
    if (ctx && verify_tc_prov(out, tc, ctx, err) < 0)
        return -1;
    if (sink->on_task_class)
        sink->on_task_class(out, sink->payload);

    /* One check alive at a time: memory does not grow with the number of cases. */
    bd_case_check *k = malloc(sizeof(*k));
    if (!k)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < tc->n_cases; i++) {
        if (bd_verify_case(k, tc, tc->case_ids[i]) != 0)
            out->n_failed++;
        out->n_cases++;
        if (ctx && verify_case_prov(out, k, tc, ctx, err) < 0) {
            bd_case_check_release(k);
            free(k);
            return -1;
        }
        bd_prov_status st = k->prov_checked ? k->prov.status : BD_PROV_ST_BAD;
        out->n_prov[st]++;
        if (sink->on_case)
            sink->on_case(k, sink->payload);
        bd_case_check_release(k);
    }
    free(k);
    if (tc->digests) {
        for (size_t i = 0; i < tc->digests->n_pins; i++) {
            const bd_pin *p = &tc->digests->pins[i];
            if (has_case(tc, p->case_id))
                continue;
            bd_err e;
            orphan_err(&e, tc, p);
            out->n_orphans++;
            out->n_failed++;
            if (sink->on_orphan)
                sink->on_orphan(&e, sink->payload);
        }
    }
    return out->n_failed ? 1 : 0;
}

int bd_verify_check(bd_verify_report *out, const bd_task_class *tc, const char *const *case_ids,
                    size_t n_case_ids, bd_prov_ctx *ctx, bd_err *err)
{
    int v = bd_verify_task_class(out, tc, case_ids, n_case_ids, err);
    if (v < 0)
        return -1;
    if (ctx && bd_verify_provenance(out, tc, ctx, err) != 0)
        return -1;
    return out->n_failed ? 1 : 0;
}

const bd_err *bd_case_check_failure(const bd_case_check *c)
{
    if (c->err.code != BD_OK)
        return &c->err;
    if (c->prov_checked && c->prov.status == BD_PROV_ST_BAD)
        return &c->prov.err;
    return NULL;
}

const bd_err *bd_verify_tc_failure(const bd_verify_report *r)
{
    if (r->tc_err.code != BD_OK)
        return &r->tc_err;
    if (r->tc_prov_checked && r->tc_prov.status == BD_PROV_ST_BAD)
        return &r->tc_prov.err;
    return NULL;
}

const bd_err *bd_verify_first_failure(const bd_verify_report *r)
{
    const bd_err *e = bd_verify_tc_failure(r);
    if (e)
        return e;
    for (size_t i = 0; i < r->n_cases; i++)
        if ((e = bd_case_check_failure(&r->cases[i])))
            return e;
    if (r->n_orphans)
        return &r->orphans[0];
    return NULL;
}

bd_prov_claim bd_prov_claim_of(const bd_provfile *p)
{
    if (!p)
        return BD_PROV_DRAFT;
    if (p->author.present && p->reviewer.present)
        return BD_PROV_COUNTERSIGNED;
    if (p->author.present || p->reviewer.present)
        return BD_PROV_AUTHORED;
    return BD_PROV_DRAFT;
}

const char *bd_prov_claim_str(bd_prov_claim p)
{
    switch (p) {
    case BD_PROV_COUNTERSIGNED:
        return "signed";
    case BD_PROV_AUTHORED:
        return "awaiting_review";
    case BD_PROV_DRAFT:
        break;
    }
    return "draft";
}
