#include "stale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

unsigned bd_stale_bits(const char *case_id, const char *case_digest, const char *task_class_digest,
                       const bd_digests *pins)
{
    unsigned bits = BD_STALE_NONE;
    const bd_pin *p = pins && case_id ? bd_digests_find(pins, case_id) : NULL;
    if (!p || !case_digest || strcmp(p->digest, case_digest) != 0)
        bits |= BD_STALE_CASE;
    /* A version-1 record pinned the rubric alone: it cannot vouch for today's task class. */
    if (!pins || !task_class_digest || strcmp(pins->task_class, task_class_digest) != 0)
        bits |= BD_STALE_TASK_CLASS;
    return bits;
}

unsigned bd_record_stale(const bd_history_record *r, const bd_digests *pins)
{
    if (!r || r->is_audit)
        return BD_STALE_NONE;
    return bd_stale_bits(r->case_id, r->case_digest, r->task_class_digest, pins);
}

const char *bd_stale_str(unsigned bits)
{
    switch (bits & (BD_STALE_CASE | BD_STALE_TASK_CLASS)) {
    case BD_STALE_CASE:
        return "case changed";
    case BD_STALE_TASK_CLASS:
        return "rubric or registration changed";
    case BD_STALE_CASE | BD_STALE_TASK_CLASS:
        return "case, rubric or registration changed";
    default:
        return "current";
    }
}

static int latest_cmp(const void *a, const void *b)
{
    return strcmp(((const bd_latest_score *)a)->case_id, ((const bd_latest_score *)b)->case_id);
}

const bd_latest_score *bd_latest_scores_find(const bd_latest_scores *ls, const char *case_id)
{
    if (!ls || !ls->n || !case_id)
        return NULL;
    bd_latest_score key = {.case_id = (char *)case_id};
    return bsearch(&key, ls->v, ls->n, sizeof(*ls->v), latest_cmp);
}

void bd_latest_scores_release(bd_latest_scores *ls)
{
    if (!ls)
        return;
    for (size_t i = 0; i < ls->n; i++)
        free(ls->v[i].case_id);
    free(ls->v);
    ls->v = NULL;
    ls->n = 0;
}

/* Pages of this many records, newest first. */
#define LATEST_PAGE 2048

typedef struct latest_ctx {
    bd_latest_scores *out;
    size_t cap;
    bd_history *h;
    const bd_task_class *tc;
    bd_err *err;
} latest_ctx;

/* One case's newest record, as the index places it: read from its segment. */
static int latest_one(const char *tc, const char *case_id, const bd_hindex_hit *hit, void *ctx)
{
    latest_ctx *c = ctx;
    bd_history_record r;
    int rc = bd_history_read_latest(c->h, hit, tc, case_id, &r, c->err);
    if (rc != 0)
        return rc > 0 ? 1 : 2; /* 1: not as the index says: read the segments */
    bd_latest_scores *out = c->out;
    if (out->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        bd_latest_score *g = realloc(out->v, nc * sizeof(*g));
        if (!g)
            goto oom;
        out->v = g;
        c->cap = nc;
    }
    bd_latest_score *e = &out->v[out->n];
    if (r.is_audit || !r.case_id || !(e->case_id = strdup(r.case_id))) {
        if (r.is_audit || !r.case_id) {
            bd_history_record_release(&r);
            return 1; /* not what the index said: read the segments */
        }
        goto oom;
    }
    e->seq = r.seq;
    e->passed = r.score.passed;
    e->score = r.score.score;
    e->stale = bd_record_stale(&r, c->tc->digests);
    out->n++;
    bd_history_record_release(&r);
    return 0;
oom:
    bd_history_record_release(&r);
    bd_err_set(c->err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    return 2;
}

/* Through the index: 0, -1, or 1 when it cannot answer (read the segments). latest_one
 * returns 1 for "not as the index says" and 2 for an error in c->err; the index's own -1
 * (an SQLite failure) is "cannot answer" too. */
static int latest_indexed(bd_latest_scores *out, bd_history *h, const bd_task_class *tc,
                          bd_err *err)
{
    bd_hindex *ix = bd_history_index(h);
    if (!ix)
        return 1;
    latest_ctx c = {out, 0, h, tc, err};
    int rc = bd_hindex_has_bad(ix) ? 1 : bd_hindex_latest(ix, tc->name, latest_one, &c);
    bd_hindex_close(ix);
    if (rc != 0)
        bd_latest_scores_release(out);
    return rc == 0 ? 0 : rc == 2 ? -1 : 1;
}

int bd_latest_scores_load(bd_latest_scores *out, bd_history *h, const bd_task_class *tc,
                          bd_err *err)
{
    memset(out, 0, sizeof(*out));
    int ir = latest_indexed(out, h, tc, err);
    if (ir <= 0)
        return ir;
    size_t cap = 0, want = tc->digests ? tc->digests->n_pins : 0;
    size_t unsorted = 0; /* entries appended since the last sort */
    uint64_t before = 0;
    for (;;) {
        bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
        o.task_class = tc->name;
        o.limit = LATEST_PAGE;
        o.before = before;
        bd_history_record *recs = NULL;
        size_t n = 0;
        uint64_t next = 0;
        if (bd_history_log(h, &o, &recs, &n, &next, err) != 0) {
            bd_latest_scores_release(out);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            const bd_history_record *r = &recs[i];
            if (r->is_audit || !r->case_id)
                continue;
            /* Newest first: a case already seen keeps its newer record. */
            bd_latest_scores sorted = {out->v, out->n - unsorted};
            bool seen = bd_latest_scores_find(&sorted, r->case_id) != NULL;
            for (size_t k = out->n - unsorted; !seen && k < out->n; k++)
                seen = strcmp(out->v[k].case_id, r->case_id) == 0;
            if (seen)
                continue;
            if (out->n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                bd_latest_score *g = realloc(out->v, nc * sizeof(*g));
                if (!g)
                    goto oom;
                out->v = g;
                cap = nc;
            }
            bd_latest_score *e = &out->v[out->n];
            if (!(e->case_id = strdup(r->case_id)))
                goto oom;
            e->seq = r->seq;
            e->passed = r->score.passed;
            e->score = r->score.score;
            e->stale = bd_record_stale(r, tc->digests);
            out->n++;
            unsorted++;
            continue;
        oom:
            bd_history_records_free(recs, n);
            bd_latest_scores_release(out);
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        }
        bd_history_records_free(recs, n);
        /* Sorted after each page, so the lookups above stay logarithmic. */
        if (unsorted) {
            qsort(out->v, out->n, sizeof(*out->v), latest_cmp);
            unsorted = 0;
        }
        if (!next || (want && out->n >= want))
            break;
        before = next;
    }
    return 0;
}

/* ---- what `run --stale` scores ------------------------------------------------------ */

typedef struct stale_walk {
    const bd_task_class *tc;
    uint64_t *newest; /* per case of tc: seq of its newest score record (0: none) */
    unsigned *bits;   /* its stale bits */
    bd_err *err;
} stale_walk;

static int stale_visit(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *ctx)
{
    stale_walk *w = ctx;
    bd_history_record r;
    if (bd_history_record_parse_linked(&r, seq, rec, len, hash, w->err) != 0)
        return -1;
    if (!r.is_audit && r.task_class && r.case_id && strcmp(r.task_class, w->tc->name) == 0) {
        const char *key = r.case_id;
        const char **hit =
            bsearch(&key, w->tc->case_ids, w->tc->n_cases, sizeof(char *), bd_str_ptr_cmp);
        size_t i = hit ? (size_t)(hit - (const char **)w->tc->case_ids) : 0;
        if (hit && seq > w->newest[i]) {
            w->newest[i] = seq;
            w->bits[i] = bd_record_stale(&r, w->tc->digests);
        }
    }
    bd_history_record_release(&r);
    return 0;
}

static void stale_reset(void *ctx)
{
    stale_walk *w = ctx;
    memset(w->newest, 0, w->tc->n_cases * sizeof(*w->newest));
    memset(w->bits, 0, w->tc->n_cases * sizeof(*w->bits));
}

/* True when case `id` of `tc` carries both signatures in its provenance.yaml (read, not
 * verified: the run gate verifies). Returns 1, 0, or -1 with the file's error. */
static int case_signed(const bd_task_class *tc, const char *id, bd_err *err)
{
    bd_provfile *p = NULL;
    if (bd_task_class_case_prov(&p, tc, id, err) != 0)
        return -1;
    int yes = p->author.present && p->reviewer.present;
    bd_provfile_free(p);
    return yes;
}

int bd_stale_select(const char ***ids, size_t *n, size_t *n_unsigned, bd_history *h,
                    const bd_task_class *tc, bool signed_only, bd_err *err)
{
    *ids = NULL;
    *n = 0;
    if (n_unsigned)
        *n_unsigned = 0;
    size_t nc = tc->n_cases ? tc->n_cases : 1;
    stale_walk w = {tc, calloc(nc, sizeof(uint64_t)), calloc(nc, sizeof(unsigned)), err};
    const char **out = calloc(nc, sizeof(*out));
    char needle[320]; /* task-class names are at most 128 bytes */
    snprintf(needle, sizeof(needle), "\"task_class\":\"%s\"", tc->name);
    int rc = -1;
    if (!w.newest || !w.bits || !out) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        goto out;
    }
    bd_history_visit visit = {.needle = needle, .fn = stale_visit, .reset = stale_reset, .ctx = &w};
    bd_history_verify_opts vo = BD_HISTORY_VERIFY_OPTS_INIT;
    vo.visit = &visit;
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    rc = bd_history_verify_with(h, &vo, &vr, err);
    bd_history_verify_result_release(&vr);
    if (rc != 0)
        goto out;
    for (size_t i = 0; i < tc->n_cases; i++) {
        if (w.newest[i] && !w.bits[i])
            continue;
        int sig = signed_only ? case_signed(tc, tc->case_ids[i], err) : 1;
        if (sig < 0) {
            rc = -1;
            goto out;
        }
        if (sig)
            out[(*n)++] = tc->case_ids[i];
        else if (n_unsigned)
            (*n_unsigned)++;
    }
    *ids = out;
    out = NULL;
out:
    free(out);
    free(w.newest);
    free(w.bits);
    return rc;
}
