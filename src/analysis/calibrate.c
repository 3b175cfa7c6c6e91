/*
 * calibrate.c — the rubric measured against its reviewers (calibrate.h).
 */
#include "calibrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stale.h"
#include "stats.h"

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory calibrating");
}

void bd_calibration_release(bd_calibration *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_fms; i++)
        free(c->fms[i].code);
    free(c->fms);
    free(c->disputed);
    memset(c, 0, sizeof(*c));
}

/* A judged record: its seq and agreed verdict, filled with what the second walk reads. */
typedef struct judged {
    uint64_t seq;
    bd_verdict_kind verdict;
    bool seen, stale, passed;
    char **codes;
    size_t n_codes;
} judged;

typedef struct calib_walk {
    judged *j; /* by seq */
    size_t n;
    const bd_task_class *tc;
    bool oom;
} calib_walk;

static int judged_find(const calib_walk *w, uint64_t seq)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->j[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->n && w->j[lo].seq == seq ? (int)lo : -1;
}

static int calib_visit(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *a)
{
    (void)hash;
    calib_walk *w = a;
    int k = judged_find(w, seq);
    if (k < 0)
        return 0;
    bd_history_record r;
    char why[256];
    if (bd_history_record_parse(&r, rec, len, why) != BD_CHAIN_OK)
        return 0;
    judged *jd = &w->j[k];
    jd->seen = true;
    jd->passed = r.score.passed;
    jd->stale = bd_record_stale(&r, w->tc->digests) != BD_STALE_NONE;
    if (r.score.n_failure_modes && !(jd->codes = calloc(r.score.n_failure_modes, sizeof(char *))))
        w->oom = true;
    for (size_t i = 0; jd->codes && i < r.score.n_failure_modes; i++)
        if ((jd->codes[jd->n_codes] = strdup(r.score.failure_modes[i].code)))
            jd->n_codes++;
    bd_history_record_release(&r);
    return w->oom ? 1 : 0;
}

static void calib_reset(void *a)
{
    calib_walk *w = a;
    for (size_t i = 0; i < w->n; i++) {
        for (size_t k = 0; k < w->j[i].n_codes; k++)
            free(w->j[i].codes[k]);
        free(w->j[i].codes);
        w->j[i].codes = NULL;
        w->j[i].n_codes = 0;
        w->j[i].seen = false;
    }
}

static int add_fm(bd_calibration *c, const char *code, bd_verdict_kind v)
{
    size_t i = 0;
    while (i < c->n_fms && strcmp(c->fms[i].code, code) != 0)
        i++;
    if (i == c->n_fms) {
        bd_calib_fm *p = realloc(c->fms, (c->n_fms + 1) * sizeof(*p));
        if (!p)
            return -1;
        c->fms = p;
        memset(&p[i], 0, sizeof(p[i]));
        if (!(p[i].code = strdup(code)))
            return -1;
        c->n_fms++;
    }
    if (v == BD_VERDICT_CONFIRMED)
        c->fms[i].confirmed++;
    else
        c->fms[i].rubric_bug++;
    return 0;
}

static int fm_cmp(const void *a, const void *b)
{
    const bd_calib_fm *x = a, *y = b;
    if (x->rubric_bug != y->rubric_bug)
        return x->rubric_bug > y->rubric_bug ? -1 : 1;
    return strcmp(x->code, y->code);
}

/* Records with counting verdicts: agreed ones into w->j, the others into c->disputed. */
static int gather_judged(bd_calibration *c, calib_walk *w, const bd_verdict_set *vs)
{
    size_t cap = vs->n ? vs->n : 1;
    if (!(w->j = calloc(cap, sizeof(*w->j))) || !(c->disputed = calloc(cap, sizeof(uint64_t))))
        return -1;
    for (size_t i = 0; i < vs->n; i++) {
        const bd_verdict_entry *e = &vs->e[i];
        if (e->state != BD_VST_COUNTS || e->v.verdict == BD_VERDICT_WITHDRAWN ||
            (w->n && w->j[w->n - 1].seq == e->seq) ||
            (c->n_disputed && c->disputed[c->n_disputed - 1] == e->seq))
            continue;
        bd_verdict_summary sm;
        bd_verdict_summarize(&sm, vs, e->seq);
        if (!sm.agreed)
            c->disputed[c->n_disputed++] = e->seq;
        else
            w->j[w->n++] = (judged){.seq = e->seq, .verdict = sm.agreed_on};
    }
    return 0;
}

static int seq_cmp(const void *a, const void *b)
{
    uint64_t x = ((const judged *)a)->seq, y = ((const judged *)b)->seq;
    return (x > y) - (x < y);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The tables from the judged records the walk saw. */
static int tabulate(bd_calibration *c, const calib_walk *w, bd_err *err)
{
    unsigned char *rx = malloc(w->n ? w->n : 1), *ry = malloc(w->n ? w->n : 1);
    size_t m = 0;
    if (!rx || !ry) {
        free(rx);
        free(ry);
        return nomem(err);
    }
    for (size_t i = 0; i < w->n; i++) {
        const judged *jd = &w->j[i];
        if (!jd->seen || jd->stale)
            continue;
        c->records++;
        if (jd->verdict != BD_VERDICT_CONFIRMED && jd->verdict != BD_VERDICT_RUBRIC_BUG)
            continue;
        bool reviewer = jd->verdict == BD_VERDICT_CONFIRMED ? jd->passed : !jd->passed;
        rx[m] = jd->passed;
        ry[m++] = reviewer;
        if (jd->passed && reviewer)
            c->both_pass++;
        else if (!jd->passed && !reviewer)
            c->both_fail++;
        else if (jd->passed)
            c->rubric_pass_reviewer_fail++;
        else
            c->rubric_fail_reviewer_pass++;
        if (jd->passed && jd->verdict == BD_VERDICT_RUBRIC_BUG)
            c->false_passes++;
        for (size_t k = 0; k < jd->n_codes; k++)
            if (add_fm(c, jd->codes[k], jd->verdict) != 0) {
                free(rx);
                free(ry);
                return nomem(err);
            }
    }
    if (m) {
        c->has_rate = true;
        c->rate = (double)(c->both_pass + c->both_fail) / (double)m;
        c->has_kappa = bd_stats_kappa(c->both_pass, c->rubric_pass_reviewer_fail,
                                      c->rubric_fail_reviewer_pass, c->both_fail, &c->kappa) == 0;
        bd_err ignore = BD_ERR_INIT;
        c->has_ci = c->has_kappa && bd_stats_kappa_ci(rx, ry, m, 0.95, 0, c->seed, &c->ci_lo,
                                                      &c->ci_hi, &ignore) == 0;
    }
    free(rx);
    free(ry);
    if (c->n_fms > 1)
        qsort(c->fms, c->n_fms, sizeof(*c->fms), fm_cmp);
    if (c->n_disputed > 1)
        qsort(c->disputed, c->n_disputed, sizeof(uint64_t), u64_cmp);
    size_t u = 0;
    for (size_t i = 0; i < c->n_disputed; i++)
        if (u == 0 || c->disputed[u - 1] != c->disputed[i])
            c->disputed[u++] = c->disputed[i];
    c->n_disputed = u;
    return 0;
}

int bd_calibrate(bd_calibration *out, const char *bench_root, const bd_task_class *tc,
                 bd_prov_ctx *prov, bd_err *err)
{
    bd_verdict_set vs;
    calib_walk w = {NULL, 0, tc, false};
    bd_history *h = NULL;
    bd_history_verify_result res;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    memset(&res, 0, sizeof(res));
    snprintf(out->task_class, sizeof(out->task_class), "%s", tc->name);
    if (bd_verdict_set_check(&vs, bench_root, tc->name, prov, err) != 0)
        return -1;
    if (gather_judged(out, &w, &vs) != 0) {
        nomem(err);
        goto out;
    }
    qsort(w.j, w.n, sizeof(*w.j), seq_cmp);
    size_t u = 0; /* one entry per record, whichever of its verdict files listed it */
    for (size_t i = 0; i < w.n; i++)
        if (u == 0 || w.j[u - 1].seq != w.j[i].seq)
            w.j[u++] = w.j[i];
    w.n = u;
    bd_history_visit visit = {.fn = calib_visit, .reset = calib_reset, .ctx = &w};
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.visit = &visit;
    if (bd_history_open(&h, bench_root, BD_HISTORY_READ, err) != 0)
        goto out;
    if (bd_history_verify_with(h, &o, &res, err) != 0) {
        if (w.oom)
            nomem(err);
        goto out;
    }
    out->seed = bd_stats_seed_from(res.head, BD_HASH_HEX_LEN);
    rc = tabulate(out, &w, err);
out:
    calib_reset(&w);
    free(w.j);
    bd_history_verify_result_release(&res);
    bd_history_free(h);
    bd_verdict_set_release(&vs);
    if (rc != 0)
        bd_calibration_release(out);
    return rc;
}

static cJSON *num_or_null(bool has, double v)
{
    return has ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *bd_calibration_json(const bd_calibration *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *ag = o ? cJSON_AddObjectToObject(o, "agreement") : NULL;
    cJSON *fm = NULL, *dis = NULL;
    if (!ag)
        goto fail;
    cJSON_AddStringToObject(o, "task_class", c->task_class);
    cJSON_AddNumberToObject(o, "records", (double)c->records);
    cJSON_AddNumberToObject(ag, "both_pass", (double)c->both_pass);
    cJSON_AddNumberToObject(ag, "both_fail", (double)c->both_fail);
    cJSON_AddNumberToObject(ag, "rubric_pass_reviewer_fail", (double)c->rubric_pass_reviewer_fail);
    cJSON_AddNumberToObject(ag, "rubric_fail_reviewer_pass", (double)c->rubric_fail_reviewer_pass);
    cJSON_AddItemToObject(ag, "rate", num_or_null(c->has_rate, c->rate));
    cJSON_AddItemToObject(ag, "kappa", num_or_null(c->has_kappa, c->kappa));
    if (c->has_ci) {
        cJSON *ci = cJSON_AddArrayToObject(ag, "kappa_ci95");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(c->ci_lo));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(c->ci_hi));
    } else {
        cJSON_AddNullToObject(ag, "kappa_ci95");
    }
    if (!(fm = cJSON_AddObjectToObject(o, "failure_modes")))
        goto fail;
    for (size_t i = 0; i < c->n_fms; i++) { /* overturned most first */
        cJSON *x = cJSON_AddObjectToObject(fm, c->fms[i].code);
        cJSON_AddNumberToObject(x, "confirmed", (double)c->fms[i].confirmed);
        cJSON_AddNumberToObject(x, "rubric_bug", (double)c->fms[i].rubric_bug);
    }
    cJSON_AddNumberToObject(o, "false_passes", (double)c->false_passes);
    if (!(dis = cJSON_AddArrayToObject(o, "disputed")))
        goto fail;
    for (size_t i = 0; i < c->n_disputed; i++)
        cJSON_AddItemToArray(dis, cJSON_CreateNumber((double)c->disputed[i]));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}
