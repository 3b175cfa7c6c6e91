#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_report.h"
#include "stale.h"
#include "stats.h"
#include "strindex.h"

/* ---- runs ---------------------------------------------------------------------------- */

/* Order by a string key, then by seq. */
static int by_key_seq(const char *ka, const char *kb, uint64_t sa, uint64_t sb)
{
    int c = strcmp(ka, kb);
    return c ? c : (sa > sb) - (sa < sb);
}

static int cmp_run_seq(const void *x, const void *y)
{
    const bd_history_record *a = *(bd_history_record *const *)x;
    const bd_history_record *b = *(bd_history_record *const *)y;
    return by_key_seq(a->run_id, b->run_id, a->seq, b->seq);
}

static int cmp_case_seq(const void *x, const void *y)
{
    const bd_history_record *a = x, *b = y;
    return by_key_seq(a->case_id, b->case_id, a->seq, b->seq);
}

static int cmp_run_last(const void *x, const void *y)
{
    const bd_run *a = x, *b = y;
    return (a->last_seq > b->last_seq) - (a->last_seq < b->last_seq);
}

/* Fill the summary fields of `run` from its records (sorted and deduplicated already). */
static void run_summarise(bd_run *run)
{
    const bd_history_record *r0 = &run->recs[0];
    run->run_id = r0->run_id;
    run->task_class = r0->task_class;
    run->full_scope = true;
    run->run_cases = r0->run_cases;
    run->last_seq = 0;
    run->started_at = r0->started_at;
    run->finished_at = r0->finished_at;
    for (size_t i = 0; i < run->n_recs; i++) {
        const bd_history_record *r = &run->recs[i];
        if (!r->run_scope || strcmp(r->run_scope, "full") != 0 || r->run_cases != run->run_cases)
            run->full_scope = false;
        if (strcmp(r->isolation_class, r0->isolation_class) != 0)
            run->mixed_iso = true;
        if (r->seq > run->last_seq)
            run->last_seq = r->seq;
        if (strcmp(r->started_at, run->started_at) < 0)
            run->started_at = r->started_at;
        if (strcmp(r->finished_at, run->finished_at) > 0)
            run->finished_at = r->finished_at;
    }
    run->full = run->full_scope && run->run_cases == run->n_recs;
}

void bd_runs_release(bd_runs *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        bd_history_records_free(r->runs[i].recs, r->runs[i].n_recs);
    free(r->runs);
    bd_runsig_walk_free(r->sig_walk);
    bd_runs_report_release(&r->sig);
    memset(r, 0, sizeof(*r));
}

int bd_runs_judge_signed(bd_runs *r, const char *bench_dir, bd_err *err)
{
    bd_runs_report_release(&r->sig);
    return r->sig_walk ? bd_runsig_walk_judge(&r->sig, r->sig_walk, bench_dir, false, err) : 0;
}

size_t bd_run_signed_records(const bd_runs *r, const bd_run *run)
{
    return run && bd_runs_report_signed(&r->sig, run->run_id) ? run->n_recs : 0;
}

/* The score records the runs are made of: the newest of each run and case, met in seq order. */
typedef struct loader {
    bd_history_record *all;
    size_t n, cap;
    uint64_t count; /* records of the verified chain */
    bd_history *h;
    bd_err *err;
    /* the runs the cost cap stopped (run.stopped audit records), in chain order */
    struct stop {
        char run_id[BD_RUN_ID_MAX];
        double cap;
    } * stops;
    size_t n_stops;
    bd_runsig_walk *sig; /* the signed runs, from the same records */
    /* all[i]'s run and case as one key (keys[i]), indexed: a run keeps one record a case,
     * its newest, so a case scored again replaces its record as the walk meets it and the
     * loader holds a record per run and case, not per record of the chain */
    char **keys;
    bd_strindex by_key;
    bool (*stop)(void); /* NULL, or asked now and then: true ends the walk (bd_runs_load_until) */
} loader;

static const char *loader_key_of(const void *keys, size_t i)
{
    return ((char *const *)keys)[i];
}

/* The key of a record's run and case: the run id's length first, so no pair of ids can
 * spell another pair's key. NULL when out of memory. */
static char *run_case_key(const bd_history_record *r)
{
    size_t rl = strlen(r->run_id), cl = strlen(r->case_id);
    char *k = malloc(rl + cl + 24);
    if (k)
        snprintf(k, rl + cl + 24, "%zu:%s%s", rl, r->run_id, r->case_id);
    return k;
}

static void loader_keys_free(loader *l)
{
    if (l->keys)
        for (size_t i = 0; i < l->n; i++)
            free(l->keys[i]);
    free(l->keys);
    l->keys = NULL;
    bd_strindex_release(&l->by_key);
}

/* A run.stopped audit record of the cost cap: note its run. Returns 0 or -1 (out of
 * memory). */
static int loader_stop(loader *l, const bd_history_record *r)
{
    struct stop st;
    if (!r->event || strcmp(r->event, BD_RUN_STOPPED_EVENT) != 0 ||
        bd_run_stop_parse(r->detail, st.run_id, &st.cap) != 0)
        return 0;
    struct stop *p = realloc(l->stops, (l->n_stops + 1) * sizeof(*p));
    if (!p)
        return bd_err_set(l->err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    l->stops = p;
    l->stops[l->n_stops++] = st;
    return 0;
}

/* Mark the runs the cost cap stopped. */
static void mark_stops(bd_runs *out, const loader *l)
{
    for (size_t i = 0; i < l->n_stops; i++)
        for (size_t k = 0; k < out->n; k++)
            if (strcmp(out->runs[k].run_id, l->stops[i].run_id) == 0) {
                out->runs[k].stopped_cost_cap = true;
                out->runs[k].cost_cap_usd = l->stops[i].cap;
            }
}

/* Keep *r (a score record) in l->all. Returns 0, or -1 out of memory (r released). */
static int loader_keep(loader *l, bd_history_record *r)
{
    if (r->is_audit) {
        int rc = loader_stop(l, r);
        bd_history_record_release(r);
        return rc;
    }
    char *key = run_case_key(r);
    if (!key)
        goto nomem;
    size_t at = bd_strindex_find(&l->by_key, l->keys, l->n, key);
    if (at < l->n) {
        /* The walk meets records in seq order: this one is the case's newest in its run. */
        free(key);
        bd_history_record_release(&l->all[at]);
        l->all[at] = *r;
        return 0;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        bd_history_record *p = realloc(l->all, nc * sizeof(*p));
        char **k = p ? realloc(l->keys, nc * sizeof(*k)) : NULL;
        if (p)
            l->all = p;
        if (!k) {
            free(key);
            goto nomem;
        }
        l->keys = k;
        l->cap = nc;
    }
    l->all[l->n] = *r;
    l->keys[l->n] = key;
    if (bd_strindex_add(&l->by_key, l->keys, l->n + 1) != 0) {
        free(key);
        goto nomem;
    }
    l->n++;
    return 0;
nomem:
    bd_history_record_release(r);
    return bd_err_set(l->err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
}

/* One record as the verify walk links it (compare decides on exactly these bytes). */
static int load_scanned(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32],
                        void *ctx)
{
    loader *l = ctx;
    if (l->stop && seq % 4096 == 1 && l->stop())
        return bd_err_set(l->err, BD_E_RUN_CANCELLED, NULL, 0, 0,
                          "stopped reading the runs of the history (the front end is closing)");
    if (bd_runsig_walk_take(l->sig, seq, rec, len, hash) != 0)
        return bd_err_set(l->err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    bd_history_record r;
    if (bd_history_record_parse_linked(&r, seq, rec, len, hash, l->err) != 0)
        return -1;
    return loader_keep(l, &r);
}

/* The walk starts again from record 1: forget what it gathered. */
static void load_reset(void *ctx)
{
    loader *l = ctx;
    bd_runsig_walk_reset(l->sig);
    loader_keys_free(l);
    bd_history_records_free(l->all, l->n);
    l->all = NULL;
    l->n = l->cap = 0;
    free(l->stops);
    l->stops = NULL;
    l->n_stops = 0;
}

static int runs_load(bd_runs *out, bd_history *h, bd_verdict_set *vs, bd_visit_wrap wrap,
                     void *wrap_ctx, bool (*stop)(void), bd_err *err);

int bd_runs_load(bd_runs *out, bd_history *h, bd_err *err)
{
    return runs_load(out, h, NULL, NULL, NULL, NULL, err);
}

int bd_runs_load_until(bd_runs *out, bd_history *h, bool (*stop)(void), bd_err *err)
{
    return runs_load(out, h, NULL, NULL, NULL, stop, err);
}

int bd_runs_load_verdicts(bd_runs *out, bd_history *h, bd_verdict_set *vs, bd_visit_wrap wrap,
                          void *wrap_ctx, bd_err *err)
{
    return runs_load(out, h, vs, wrap, wrap_ctx, NULL, err);
}

static int runs_load(bd_runs *out, bd_history *h, bd_verdict_set *vs, bd_visit_wrap wrap,
                     void *wrap_ctx, bool (*stop)(void), bd_err *err)
{
    memset(out, 0, sizeof(*out));
    bd_history_record **idx = NULL;
    /* The records compared are those the verify walk links, parsed in full as it passes
     * them (never the derived index: docs/history.md#the-derived-index). */
    loader ld = {NULL, 0, 0, 0, h, err, NULL, 0, bd_runsig_walk_new(), NULL, {0}, stop};
    bd_strindex_init(&ld.by_key, loader_key_of);
    if (!ld.sig)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    out->sig_walk = ld.sig;
    bd_history_visit visit = {.fn = load_scanned, .reset = load_reset, .ctx = &ld}, with_verdicts,
                     wrapped;
    bd_history_verify_opts vo = BD_HISTORY_VERIFY_OPTS_INIT;
    vo.visit = &visit;
    if (vs) {
        bd_verdict_set_visitor(&with_verdicts, vs, &visit);
        vo.visit = &with_verdicts;
    }
    if (wrap) {
        wrap(&wrapped, wrap_ctx, vo.visit);
        vo.visit = &wrapped;
    }
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    int rc = bd_history_verify_with(h, &vo, &vr, err);
    out->count = vr.count;
    memcpy(out->head, vr.head, sizeof(out->head));
    bd_history_verify_result_release(&vr);
    bd_history_record *all = ld.all;
    size_t n = ld.n;
    loader_keys_free(&ld);
    if (rc != 0)
        goto fail;
    if (vs)
        bd_verdict_set_settle(vs);
    if (n == 0) {
        free(all);
        free(ld.stops);
        return 0;
    }
    idx = malloc(n * sizeof(*idx));
    out->runs = calloc(n, sizeof(*out->runs));
    if (!idx || !out->runs)
        goto nomem;
    for (size_t i = 0; i < n; i++)
        idx[i] = &all[i];
    qsort(idx, n, sizeof(*idx), cmp_run_seq);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(idx[j]->run_id, idx[i]->run_id) == 0)
            j++;
        bd_run *run = &out->runs[out->n];
        run->recs = malloc((j - i) * sizeof(*run->recs));
        if (!run->recs)
            goto nomem;
        for (size_t k = i; k < j; k++) {
            run->recs[k - i] = *idx[k];
            memset(idx[k], 0, sizeof(*idx[k])); /* moved: `all` no longer owns it */
        }
        run->n_recs = j - i;
        out->n++;
        qsort(run->recs, run->n_recs, sizeof(*run->recs), cmp_case_seq);
        /* A case scored twice in one run (a retried shard) keeps its newest record. */
        size_t w = 0;
        for (size_t k = 0; k < run->n_recs; k++) {
            if (k + 1 < run->n_recs &&
                strcmp(run->recs[k].case_id, run->recs[k + 1].case_id) == 0) {
                bd_history_record_release(&run->recs[k]);
                continue;
            }
            run->recs[w++] = run->recs[k];
        }
        run->n_recs = w;
        run_summarise(run);
        i = j;
    }
    qsort(out->runs, out->n, sizeof(*out->runs), cmp_run_last);
    mark_stops(out, &ld);
    free(ld.stops);
    free(idx);
    free(all);
    return 0;
nomem:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
fail:
    /* Records not yet moved into a run are still owned by `all`; zeroed ones are empty. */
    bd_history_records_free(all, n);
    free(ld.stops);
    free(idx);
    bd_runs_release(out);
    return -1;
}

const bd_run *bd_runs_find(const bd_runs *r, const char *id, bd_err *err)
{
    const bd_run *hit = NULL;
    size_t hits = 0, len = strlen(id);
    char list[256] = "";
    for (size_t i = r->n; i-- > 0;) {
        const bd_run *run = &r->runs[i];
        if (strcmp(run->run_id, id) == 0)
            return run;
        if (len && strncmp(run->run_id, id, len) == 0) {
            hit = run;
            if (hits < 4) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof(list) - used, "%s%s", hits ? ", " : "", run->run_id);
            }
            hits++;
        }
    }
    if (hits == 1)
        return hit;
    if (hits > 1) {
        bd_err_set(err, BD_E_COMPARE_AMBIGUOUS_RUN, NULL, 0, 0,
                   "run id prefix '%s' matches %zu runs (%s%s); give more of the id", id, hits,
                   list, hits > 4 ? ", ..." : "");
        return NULL;
    }
    const char *newest = r->n ? r->runs[r->n - 1].run_id : NULL;
    if (newest) {
        bd_err_set(err, BD_E_COMPARE_UNKNOWN_RUN, NULL, 0, 0,
                   "no run in the verified history has an id starting with '%s' (the newest "
                   "is %s); ",
                   id, newest);
        bd_err_advise(err, BD_ACT_HISTORY_LOG, NULL);
        bd_err_append(err, " lists runs");
    } else {
        bd_err_set(err, BD_E_COMPARE_UNKNOWN_RUN, NULL, 0, 0,
                   "no run '%s': the history holds no runs yet; ", id);
        bd_err_advise(err, BD_ACT_RUN, NULL);
        bd_err_append(err, " makes one");
    }
    return NULL;
}

const bd_run *bd_runs_prev_full(const bd_runs *r, const char *task_class, const bd_run *before)
{
    size_t end = before ? (size_t)(before - r->runs) : r->n;
    for (size_t i = end; i-- > 0;) {
        const bd_run *run = &r->runs[i];
        if (run->full && strcmp(run->task_class, task_class) == 0)
            return run;
    }
    return NULL;
}

const bd_run *bd_runs_last(const bd_runs *r, const char *task_class, bool full_only)
{
    for (size_t i = r->n; i-- > 0;) {
        const bd_run *run = &r->runs[i];
        if ((!full_only || run->full) && strcmp(run->task_class, task_class) == 0)
            return run;
    }
    return NULL;
}

const char *bd_run_kind(const bd_run *run, char *buf, size_t len)
{
    if (run->full)
        snprintf(buf, len, "full");
    else
        snprintf(buf, len, "%s (%zu of %llu cases%s)", run->full_scope ? "partial" : "subset",
                 run->n_recs, (unsigned long long)run->run_cases,
                 run->stopped_cost_cap ? ", stopped by the cost cap" : "");
    return buf;
}

int bd_compare_pick(const bd_runs *r, const char *task_class, const char *id_a, const char *id_b,
                    const bd_run **a, const bd_run **b, bd_err *err)
{
    *a = *b = NULL;
    if (id_a && id_b) {
        if (!(*a = bd_runs_find(r, id_a, err)) || !(*b = bd_runs_find(r, id_b, err)))
            return -1;
    } else if (id_a) {
        if (!(*b = bd_runs_find(r, id_a, err)))
            return -1;
        *a = bd_runs_prev_full(r, (*b)->task_class, *b);
        if (!*a)
            return bd_err_set(err, BD_E_COMPARE_NO_RUNS, NULL, 0, 0,
                              "no full run of '%s' before run %s to compare it with; name "
                              "both runs",
                              (*b)->task_class, (*b)->run_id);
    } else {
        const char *tc = task_class;
        for (size_t i = 0; !task_class && i < r->n; i++) {
            if (tc && strcmp(tc, r->runs[i].task_class) != 0)
                return bd_err_set(err, BD_E_COMPARE_NO_RUNS, NULL, 0, 0,
                                  "the history holds runs of several task classes ('%s', "
                                  "'%s', ...); name one with --task-class",
                                  tc, r->runs[i].task_class);
            tc = r->runs[i].task_class;
        }
        if (!tc) {
            bd_err_set(err, BD_E_COMPARE_NO_RUNS, NULL, 0, 0, "the history holds no runs yet; ");
            bd_err_advise(err, BD_ACT_RUN, NULL);
            return bd_err_append(err, " makes one");
        }
        *b = bd_runs_prev_full(r, tc, NULL);
        *a = *b ? bd_runs_prev_full(r, tc, *b) : NULL;
        if (!*a)
            return bd_err_set(err, BD_E_COMPARE_NO_RUNS, NULL, 0, 0,
                              "task class '%s' has %s full run in the verified history; "
                              "compare needs two (or name the runs)",
                              tc, *b ? "one" : "no");
    }
    if (task_class &&
        (strcmp((*a)->task_class, task_class) != 0 || strcmp((*b)->task_class, task_class) != 0)) {
        const bd_run *odd = strcmp((*a)->task_class, task_class) != 0 ? *a : *b;
        return bd_err_set(err, BD_E_COMPARE_TASK_CLASS_MISMATCH, NULL, 0, 0,
                          "run %s is of task class '%s', not '%s'", odd->run_id, odd->task_class,
                          task_class);
    }
    return 0;
}

size_t bd_run_stale_count(const bd_run *run, const bd_digests *pins, unsigned *bits)
{
    size_t k = 0;
    unsigned all = 0;
    for (size_t i = 0; i < run->n_recs; i++) {
        unsigned s = bd_record_stale(&run->recs[i], pins);
        all |= s;
        k += s != 0;
    }
    if (bits)
        *bits = all;
    return k;
}

/* ---- comparing ----------------------------------------------------------------------- */

const char *bd_cmp_status_str(bd_cmp_status s)
{
    static const char *const names[] = {
#define BD_X(name, str) str,
        BD_CMP_STATUSES(BD_X)
#undef BD_X
    };
    return (unsigned)s < BD_CMP__COUNT ? names[s] : "unknown";
}

uint64_t bd_compare_seed(const char *run_a, const char *run_b)
{
    size_t la = strlen(run_a), lb = strlen(run_b);
    char buf[2 * 128 + 2];
    if (la > 128 || lb > 128) /* run ids are at most 128 bytes (history.h) */
        return bd_stats_seed_from(run_a, la);
    memcpy(buf, run_a, la);
    buf[la] = '\0';
    memcpy(buf + la + 1, run_b, lb);
    return bd_stats_seed_from(buf, la + 1 + lb);
}

size_t bd_record_fm_count(const bd_history_record *r, const char *code)
{
    size_t k = 0;
    if (!r)
        return 0;
    for (size_t i = 0; i < r->score.n_failure_modes; i++)
        if (strcmp(r->score.failure_modes[i].code, code) == 0)
            k++;
    return k;
}

/* The digest that pins a record's task class (version 1: its rubric alone). */
static const char *record_tc_digest(const bd_history_record *r)
{
    return r->task_class_digest ? r->task_class_digest : r->rubric_digest;
}

static int status_rank(bd_cmp_status s)
{
    static const int rank[BD_CMP__COUNT] = {
        [BD_CMP_REGRESSED] = 0, [BD_CMP_IMPROVED] = 1, [BD_CMP_CHANGED] = 2,
        [BD_CMP_REMOVED] = 3,   [BD_CMP_NEW] = 4,      [BD_CMP_UNCHANGED] = 5,
    };
    return rank[s];
}

static int cmp_cases(const void *x, const void *y)
{
    const bd_compare_case *a = x, *b = y;
    int ra = status_rank(a->status), rb = status_rank(b->status);
    if (ra != rb)
        return ra - rb;
    /* The worst regression first, the best improvement first. */
    if (a->status == BD_CMP_REGRESSED && a->delta != b->delta)
        return a->delta < b->delta ? -1 : 1;
    if (a->status == BD_CMP_IMPROVED && a->delta != b->delta)
        return a->delta > b->delta ? -1 : 1;
    return strcmp(a->case_id, b->case_id);
}

static int cmp_fm(const void *x, const void *y)
{
    return strcmp(((const bd_compare_fm *)x)->code, ((const bd_compare_fm *)y)->code);
}

static int fm_add(bd_compare *c, size_t *cap, const char *code, bool side_b)
{
    for (size_t i = 0; i < c->n_fms; i++) {
        if (strcmp(c->fms[i].code, code) == 0) {
            *(side_b ? &c->fms[i].count_b : &c->fms[i].count_a) += 1;
            return 0;
        }
    }
    if (c->n_fms == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        bd_compare_fm *p = realloc(c->fms, nc * sizeof(*p));
        if (!p)
            return -1;
        c->fms = p;
        *cap = nc;
    }
    bd_compare_fm *f = &c->fms[c->n_fms];
    f->code = strdup(code);
    if (!f->code)
        return -1;
    f->count_a = side_b ? 0 : 1;
    f->count_b = side_b ? 1 : 0;
    c->n_fms++;
    return 0;
}

static bd_cmp_status classify(const bd_history_record *a, const bd_history_record *b)
{
    if (!a)
        return BD_CMP_NEW;
    if (!b)
        return BD_CMP_REMOVED;
    if (!a->case_digest || !b->case_digest || strcmp(a->case_digest, b->case_digest) != 0)
        return BD_CMP_CHANGED;
    if (a->score.passed != b->score.passed)
        return a->score.passed ? BD_CMP_REGRESSED : BD_CMP_IMPROVED;
    if (b->score.score < a->score.score)
        return BD_CMP_REGRESSED;
    if (b->score.score > a->score.score)
        return BD_CMP_IMPROVED;
    return BD_CMP_UNCHANGED;
}

void bd_compare_release(bd_compare *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_fms; i++)
        free(c->fms[i].code);
    free(c->fms);
    free(c->cases);
    memset(c, 0, sizeof(*c));
}

int bd_compare_runs(bd_compare *out, const bd_run *a, const bd_run *b, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (a == b || strcmp(a->run_id, b->run_id) == 0)
        return bd_err_set(err, BD_E_COMPARE_SAME_RUN, NULL, 0, 0,
                          "run %s compared with itself; name two different runs", a->run_id);
    if (strcmp(a->task_class, b->task_class) != 0)
        return bd_err_set(err, BD_E_COMPARE_TASK_CLASS_MISMATCH, NULL, 0, 0,
                          "run %s is of task class '%s' but run %s is of '%s'; compare two runs "
                          "of one task class",
                          a->run_id, a->task_class, b->run_id, b->task_class);
    const char *iso_a = a->recs[0].isolation_class, *iso_b = b->recs[0].isolation_class;
    if (a->mixed_iso || b->mixed_iso || strcmp(iso_a, iso_b) != 0)
        return bd_err_set(err, BD_E_COMPARE_ISOLATION_MISMATCH, NULL, 0, 0,
                          "refused: run %s ran under isolation '%s'%s and run %s under '%s'%s; "
                          "scores from different isolation classes are never compared (run "
                          "again with --isolation %s)",
                          a->run_id, iso_a, a->mixed_iso ? " (and others)" : "", b->run_id, iso_b,
                          b->mixed_iso ? " (and others)" : "", iso_a);
    out->a = a;
    out->b = b;
    out->isolation_class = iso_a;
    const char *da = record_tc_digest(&a->recs[0]), *db = record_tc_digest(&b->recs[0]);
    out->task_class_changed = !da || !db || strcmp(da, db) != 0;
    for (size_t i = 1; i < a->n_recs && !out->task_class_changed; i++) {
        const char *d = record_tc_digest(&a->recs[i]);
        out->task_class_changed = !d || strcmp(d, da) != 0;
    }
    for (size_t i = 1; i < b->n_recs && !out->task_class_changed; i++) {
        const char *d = record_tc_digest(&b->recs[i]);
        out->task_class_changed = !d || strcmp(d, db) != 0;
    }

    out->cases = calloc(a->n_recs + b->n_recs, sizeof(*out->cases));
    double *da_v = malloc((a->n_recs + 1) * sizeof(double));
    double *db_v = malloc((a->n_recs + 1) * sizeof(double));
    double *dd = malloc((a->n_recs + 1) * sizeof(double));
    size_t fm_cap = 0;
    if (!out->cases || !da_v || !db_v || !dd)
        goto nomem;
    /* Both runs are sorted by case id: one merge walk aligns them. */
    size_t i = 0, j = 0, m = 0, pass_a = 0, pass_b = 0;
    while (i < a->n_recs || j < b->n_recs) {
        const bd_history_record *ra = i < a->n_recs ? &a->recs[i] : NULL;
        const bd_history_record *rb = j < b->n_recs ? &b->recs[j] : NULL;
        int c = !ra ? 1 : !rb ? -1 : strcmp(ra->case_id, rb->case_id);
        if (c < 0)
            rb = NULL;
        if (c > 0)
            ra = NULL;
        i += ra != NULL;
        j += rb != NULL;
        bd_compare_case *cc = &out->cases[out->n_cases++];
        cc->a = ra;
        cc->b = rb;
        cc->case_id = ra ? ra->case_id : rb->case_id;
        cc->status = classify(ra, rb);
        cc->delta = ra && rb ? rb->score.score - ra->score.score : 0.0;
        out->counts[cc->status]++;
        if (cc->status == BD_CMP_NEW || cc->status == BD_CMP_REMOVED ||
            cc->status == BD_CMP_CHANGED)
            continue;
        da_v[m] = ra->score.score;
        db_v[m] = rb->score.score;
        dd[m] = cc->delta;
        m++;
        pass_a += ra->score.passed;
        pass_b += rb->score.passed;
        if (ra->score.passed && !rb->score.passed)
            out->pass_to_fail++;
        if (!ra->score.passed && rb->score.passed)
            out->fail_to_pass++;
        for (size_t k = 0; k < ra->score.n_failure_modes; k++)
            if (fm_add(out, &fm_cap, ra->score.failure_modes[k].code, false) != 0)
                goto nomem;
        for (size_t k = 0; k < rb->score.n_failure_modes; k++)
            if (fm_add(out, &fm_cap, rb->score.failure_modes[k].code, true) != 0)
                goto nomem;
    }
    out->comparable = m;
    if (m > 0) {
        out->have_stats = true;
        out->mean_a = bd_stats_mean(da_v, m);
        out->mean_b = bd_stats_mean(db_v, m);
        out->mean_delta = bd_stats_mean(dd, m);
        out->pass_rate_a = (double)pass_a / (double)m;
        out->pass_rate_b = (double)pass_b / (double)m;
        out->p_value = bd_stats_mcnemar_exact(out->pass_to_fail, out->fail_to_pass);
        if (bd_stats_bca(dd, m, 0.95, 0, bd_compare_seed(a->run_id, b->run_id), &out->ci_lo,
                         &out->ci_hi, err) != 0)
            goto fail;
    }
    qsort(out->cases, out->n_cases, sizeof(*out->cases), cmp_cases);
    if (out->n_fms)
        qsort(out->fms, out->n_fms, sizeof(*out->fms), cmp_fm);
    free(da_v);
    free(db_v);
    free(dd);
    return 0;
nomem:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory comparing runs");
fail:
    free(da_v);
    free(db_v);
    free(dd);
    bd_compare_release(out);
    return -1;
}
