/*
 * review.c — the review queue (review.h).
 */
#include "review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "stats.h"

/* Append (seq, unhexed id) to ids; -1 when out of memory. */
static int ids_add(bd_score_ids *ids, uint64_t seq, const char *hex)
{
    if (ids->n == ids->cap) {
        size_t nc = ids->cap ? ids->cap * 2 : 1024;
        uint64_t *s = realloc(ids->seq, nc * sizeof(*s));
        if (!s)
            return -1;
        ids->seq = s;
        uint8_t(*d)[32] = realloc(ids->id, nc * sizeof(*d));
        if (!d)
            return -1;
        ids->id = d;
        ids->cap = nc;
    }
    ids->seq[ids->n] = seq;
    bd_hash_unhex(ids->id[ids->n], hex);
    ids->n++;
    return 0;
}

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building the review queue");
}

const char *bd_review_why_str(bd_review_why w)
{
    return w == BD_REVIEW_UNREVIEWED ? "unreviewed"
           : w == BD_REVIEW_AWAITING ? "awaiting_second"
                                     : "sample";
}

void bd_review_queue_release(bd_review_queue *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n_missing; i++)
        free(q->missing_runs[i]);
    free(q->missing_runs);
    free(q->items);
    memset(q, 0, sizeof(*q));
}

/* ---- score ids ------------------------------------------------------------------------- */

static int ids_visit(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *arg)
{
    bd_score_ids *ids = arg;
    char hex[BD_HASH_BUF];
    bd_err ignore = BD_ERR_INIT;
    if (bd_score_id(hex, rec, len, &ignore) == 0 && ids_add(ids, seq, hex) != 0) {
        ids->oom = true;
        return 1;
    }
    return ids->inner && ids->inner->fn ? ids->inner->fn(seq, rec, len, hash, ids->inner->ctx) : 0;
}

static void ids_reset(void *arg)
{
    bd_score_ids *ids = arg;
    ids->n = 0;
    if (ids->inner && ids->inner->reset)
        ids->inner->reset(ids->inner->ctx);
}

void bd_score_ids_wrap(bd_history_visit *out, void *arg, const bd_history_visit *inner)
{
    memset(out, 0, sizeof(*out)); /* what a wrapper does not set stays unset */
    bd_score_ids *ids = arg;
    ids->inner = inner;
    /* A wrapper calls the inner visitor's fn: one with a pre step cannot be wrapped. */
    *out = (bd_history_visit){.needle = inner ? inner->needle : NULL};
    out->fn = ids_visit;
    out->reset = ids_reset;
    out->ctx = ids;
}

void bd_score_ids_release(bd_score_ids *ids)
{
    free(ids->seq);
    free(ids->id);
    memset(ids, 0, sizeof(*ids));
}

int bd_score_ids_find(char out[BD_HASH_BUF], const bd_score_ids *ids, uint64_t seq)
{
    size_t lo = 0, hi = ids->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ids->seq[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == ids->n || ids->seq[lo] != seq)
        return -1;
    bd_hex(out, ids->id[lo], 32);
    return 0;
}

/* The score_id of record `seq` (hex) into out; -1 when the walk did not see it. */
static int record_score_id(char out[BD_HASH_BUF], const bd_score_ids *ids, uint64_t seq,
                           bd_err *err)
{
    if (bd_score_ids_find(out, ids, seq) != 0)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "record %llu has no score_id",
                          (unsigned long long)seq);
    return 0;
}

bool bd_review_unreviewed(const bd_verdict_set *vs, const bd_history_record *r)
{
    if (r->score.passed)
        return false;
    if (!vs)
        return true;
    bd_verdict_summary sm;
    bd_verdict_summarize(&sm, vs, r->seq);
    return sm.n == 0;
}

/* What makes two results "the same failure" for a suggestion: the case and task-class
 * digests and the failure-mode codes in order. */
static bool same_failure(const bd_history_record *a, const bd_history_record *b)
{
    if (!a->case_digest || !b->case_digest || strcmp(a->case_digest, b->case_digest) != 0)
        return false;
    const char *ta = a->task_class_digest ? a->task_class_digest : a->rubric_digest;
    const char *tb = b->task_class_digest ? b->task_class_digest : b->rubric_digest;
    if (!ta || !tb || strcmp(ta, tb) != 0 || a->score.passed != b->score.passed ||
        a->score.n_failure_modes != b->score.n_failure_modes)
        return false;
    for (size_t i = 0; i < a->score.n_failure_modes; i++)
        if (strcmp(a->score.failure_modes[i].code, b->score.failure_modes[i].code) != 0)
            return false;
    return true;
}

/* The latest counting verdict on an earlier result that is the same failure as `r`. */
static void suggest(bd_review_item *it, const bd_runs *runs, const bd_verdict_set *vs)
{
    const bd_history_record *r = it->r;
    for (size_t k = runs->n; k-- > 0;) {
        const bd_run *run = &runs->runs[k];
        if (strcmp(run->task_class, r->task_class) != 0)
            continue;
        for (size_t i = 0; i < run->n_recs; i++) {
            const bd_history_record *o = &run->recs[i];
            if (o->seq == r->seq || strcmp(o->case_id, r->case_id) != 0 || !same_failure(o, r))
                continue;
            const bd_verdict_entry *on[4];
            size_t n = bd_verdict_set_on(vs, o->seq, on, 4);
            if (n == 0)
                continue;
            it->has_suggestion = true;
            it->suggestion = on[0]->v.verdict;
            it->suggestion_seq = o->seq;
            snprintf(it->suggestion_reviewer, sizeof(it->suggestion_reviewer), "%s",
                     on[0]->identity[0] ? on[0]->identity : on[0]->v.reviewer);
            return;
        }
    }
}

typedef struct qctx {
    const bd_runs *runs;
    const bd_verdict_set *vs;
    const bd_score_ids *ids;
} qctx;

static int push(bd_review_queue *q, size_t *cap, const bd_history_record *r, bd_review_why why,
                const qctx *c, bd_err *err)
{
    if (q->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        bd_review_item *p = realloc(q->items, nc * sizeof(*p));
        if (!p)
            return nomem(err);
        q->items = p;
        *cap = nc;
    }
    bd_review_item *it = &q->items[q->n];
    memset(it, 0, sizeof(*it));
    it->r = r;
    it->why = why;
    if (record_score_id(it->score_id, c->ids, r->seq, err) != 0)
        return -1;
    if (why != BD_REVIEW_AWAITING)
        suggest(it, c->runs, c->vs);
    q->n++;
    return 0;
}

/* One run's part of the queue. */
static int queue_run(bd_review_queue *q, size_t *cap, const bd_run *run, const qctx *c,
                     const bd_review_opts *o, bd_err *err)
{
    const bd_verdict_set *vs = c->vs;
    size_t *pass = malloc((run->n_recs ? run->n_recs : 1) * sizeof(size_t)), np = 0;
    if (!pass)
        return nomem(err);
    int rc = -1;
    for (int pass_no = 0; pass_no < 2; pass_no++)
        for (size_t i = 0; i < run->n_recs; i++) {
            const bd_history_record *r = &run->recs[i];
            bd_verdict_summary sm;
            bd_verdict_summarize(&sm, vs, r->seq);
            if (pass_no == 0 && bd_review_unreviewed(vs, r) &&
                push(q, cap, r, BD_REVIEW_UNREVIEWED, c, err) != 0)
                goto out;
            if (pass_no == 1 && sm.awaiting_second) {
                const bd_verdict_entry *on[8];
                size_t n = bd_verdict_set_on(vs, r->seq, on, 8);
                bool mine = false;
                for (size_t k = 0; k < n && k < 8 && o->reviewer; k++)
                    mine |= bd_verdict_kind_removes(on[k]->v.verdict) &&
                            strcmp(on[k]->v.reviewer, o->reviewer) == 0;
                if (!mine && push(q, cap, r, BD_REVIEW_AWAITING, c, err) != 0)
                    goto out;
            }
            if (pass_no == 0 && r->score.passed && sm.n == 0)
                pass[np++] = i;
        }
    /* N passing records, seeded by the run id: anyone can redraw the same sample */
    bd_rng rng;
    bd_rng_seed(&rng, bd_stats_seed_from(run->run_id, strlen(run->run_id)));
    for (size_t k = 0; k < o->sample && k < np; k++) {
        size_t j = k + (size_t)bd_rng_below(&rng, np - k);
        size_t t = pass[k];
        pass[k] = pass[j];
        pass[j] = t;
        if (push(q, cap, &run->recs[pass[k]], BD_REVIEW_SAMPLE, c, err) != 0)
            goto out;
    }
    rc = 0;
out:
    free(pass);
    return rc;
}

static int note_missing(bd_review_queue *q, const bd_runs *runs, const bd_verdict_set *vs,
                        bd_err *err)
{
    for (size_t i = 0; i < vs->n; i++) {
        const bd_verdict_entry *e = &vs->e[i];
        if (e->state != BD_VST_NO_SUBJECT)
            continue;
        bool known = false;
        for (size_t k = 0; k < runs->n && !known; k++)
            known = strcmp(runs->runs[k].run_id, e->v.run_id) == 0;
        for (size_t k = 0; k < q->n_missing && !known; k++)
            known = strcmp(q->missing_runs[k], e->v.run_id) == 0;
        if (known)
            continue;
        char **p = realloc(q->missing_runs, (q->n_missing + 1) * sizeof(char *));
        if (!p)
            return nomem(err);
        q->missing_runs = p;
        if (!(p[q->n_missing] = strdup(e->v.run_id)))
            return nomem(err);
        q->n_missing++;
    }
    return 0;
}

int bd_review_queue_build(bd_review_queue *out, const bd_runs *runs, const bd_verdict_set *vs,
                          const bd_score_ids *ids, const bd_review_opts *o, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    qctx c = {runs, vs, ids};
    size_t cap = 0;
    if (o->run_id) {
        const bd_run *run = bd_runs_find(runs, o->run_id, err);
        if (!run || queue_run(out, &cap, run, &c, o, err) != 0)
            goto fail;
    } else {
        /* each task class's latest full run (runs are oldest first) */
        for (size_t k = runs->n; k-- > 0;) {
            const bd_run *run = &runs->runs[k];
            if (!run->full || (o->task_class && strcmp(run->task_class, o->task_class) != 0) ||
                bd_runs_last(runs, run->task_class, true) != run)
                continue;
            if (queue_run(out, &cap, run, &c, o, err) != 0)
                goto fail;
        }
    }
    if (note_missing(out, runs, vs, err) != 0)
        goto fail;
    return 0;
fail:
    bd_review_queue_release(out);
    return -1;
}

cJSON *bd_review_verdicts_json(const bd_verdict_set *vs, uint64_t seq)
{
    cJSON *a = cJSON_CreateArray();
    const bd_verdict_entry *on[16];
    size_t n = bd_verdict_set_on(vs, seq, on, 16);
    for (size_t i = 0; a && i < n && i < 16; i++) {
        cJSON *x = cJSON_CreateObject();
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddStringToObject(x, "reviewer",
                                on[i]->identity[0] ? on[i]->identity : on[i]->v.reviewer);
        cJSON_AddStringToObject(x, "verdict", bd_verdict_kind_str(on[i]->v.verdict));
        cJSON_AddStringToObject(x, "at", on[i]->v.at);
    }
    return a;
}

cJSON *bd_review_queue_json(const bd_review_queue *q, const bd_verdict_set *vs)
{
    cJSON *o = cJSON_CreateObject(), *arr = o ? cJSON_AddArrayToObject(o, "queue") : NULL;
    cJSON *miss = o ? cJSON_AddArrayToObject(o, "runs_missing") : NULL;
    if (!arr || !miss) {
        cJSON_Delete(o);
        return NULL;
    }
    for (size_t i = 0; i < q->n_missing; i++)
        cJSON_AddItemToArray(miss, cJSON_CreateString(q->missing_runs[i]));
    for (size_t i = 0; i < q->n; i++) {
        const bd_review_item *it = &q->items[i];
        cJSON *x = cJSON_CreateObject(), *fm = cJSON_CreateArray();
        if (!x || !fm || !cJSON_AddItemToArray(arr, x)) {
            cJSON_Delete(x);
            cJSON_Delete(fm);
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddNumberToObject(x, "seq", (double)it->r->seq);
        cJSON_AddStringToObject(x, "run_id", it->r->run_id);
        cJSON_AddStringToObject(x, "case_id", it->r->case_id);
        cJSON_AddStringToObject(x, "score_id", it->score_id);
        cJSON_AddBoolToObject(x, "passed", it->r->score.passed);
        for (size_t k = 0; k < it->r->score.n_failure_modes; k++)
            cJSON_AddItemToArray(fm, cJSON_CreateString(it->r->score.failure_modes[k].code));
        cJSON_AddItemToObject(x, "failure_modes", fm);
        cJSON_AddItemToObject(x, "verdicts", bd_review_verdicts_json(vs, it->r->seq));
        cJSON_AddStringToObject(x, "why", bd_review_why_str(it->why));
        if (it->has_suggestion) {
            cJSON *s = cJSON_AddObjectToObject(x, "suggestion");
            cJSON_AddStringToObject(s, "verdict", bd_verdict_kind_str(it->suggestion));
            cJSON_AddNumberToObject(s, "from_seq", (double)it->suggestion_seq);
            cJSON_AddStringToObject(s, "reviewer", it->suggestion_reviewer);
        } else {
            cJSON_AddNullToObject(x, "suggestion");
        }
    }
    return o;
}

int bd_review_load(bd_review_session *out, const char *bench_root, const bd_review_opts *o,
                   bd_err *err)
{
    bd_history *h = NULL;
    bd_prov_ctx *prov = NULL;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    size_t len = strlen(bench_root) + sizeof("/bench");
    char *bench_dir = malloc(len);
    if (!bench_dir) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        return -1;
    }
    snprintf(bench_dir, len, "%s/bench", bench_root);
    if (bd_prov_ctx_new(&prov, bench_dir, err) != 0 ||
        bd_verdict_set_load(&out->vs, bench_root, o->task_class, prov, err) != 0 ||
        bd_history_open(&h, bench_root, BD_HISTORY_READ, err) != 0)
        goto out;
    if (bd_runs_load_verdicts(&out->runs, h, &out->vs, bd_score_ids_wrap, &out->ids, err) != 0) {
        if (out->ids.oom)
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        goto out;
    }
    rc = bd_review_queue_build(&out->q, &out->runs, &out->vs, &out->ids, o, err);
out:
    bd_history_free(h);
    bd_prov_ctx_free(prov);
    free(bench_dir);
    return rc;
}

void bd_review_session_release(bd_review_session *s)
{
    bd_review_queue_release(&s->q);
    bd_score_ids_release(&s->ids);
    bd_runs_release(&s->runs);
    bd_verdict_set_release(&s->vs);
    memset(s, 0, sizeof(*s));
}
