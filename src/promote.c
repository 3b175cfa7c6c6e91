/*
 * promote.c — recommendations from the verified history (promote.h, DESIGN.md §7).
 */
#include "promote.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anchor.h"
#include "fsutil.h"
#include "provenance.h"
#include "stale.h"
#include "stats.h"
#include "verify.h"

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory making a recommendation");
}

/* "YYYY-MM-DDTHH:MM:SS[.f]Z" (already validated by the history) to UTC seconds. */
void bd_recommendation_release(bd_recommendation *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_evidence; i++)
        free(r->evidence[i].case_id);
    free(r->evidence);
    memset(r, 0, sizeof(*r));
}

/* Per case of the task class: the latest eligible record of each isolation class. */
typedef struct case_best {
    bool signed_today; /* the case's signatures verify today (bd_verify_check) */
    const char *pin;   /* its pin today, or NULL */
    uint64_t seq[2];   /* 0: none; [0] subprocess, [1] namespaces */
    char finished_at[2][40];
    double score[2];
    bool passed[2];
    char hash[2][BD_HASH_BUF]; /* through the index: the record's hash, read with it */
} case_best;

typedef struct scan_ctx {
    bd_recommendation *out;
    const bd_task_class *tc;
    case_best *best;
    time_t since;
    size_t n_class[2]; /* eligible records per isolation class */
    char tc_field[160];
} scan_ctx;

static int case_index(const bd_task_class *tc, const char *id)
{
    size_t lo = 0, hi = tc->n_cases;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(tc->case_ids[mid], id);
        if (c == 0)
            return (int)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* A string value's characters (no escapes: names, digests, times) into out. */
static bool str_of(const char *v, size_t vl, char *out, size_t size)
{
    if (!v || vl < 2 || v[0] != '"' || v[vl - 1] != '"' || vl - 2 >= size ||
        memchr(v + 1, '\\', vl - 2))
        return false;
    memcpy(out, v + 1, vl - 2);
    out[vl - 2] = '\0';
    return true;
}

enum { M_CASE_DIGEST, M_CASE_ID, M_FINISHED_AT, M_ISOLATION, M_PV, M_TC_DIGEST, M__COUNT };

/* One record of the verified chain: its top-level members read in one pass (the chain
 * was just verified, so the bytes are canonical and schema-valid). */
static int scan_one(uint64_t seq, const char *rec, size_t len, void *arg)
{
    static const char *const keys[M__COUNT] = {"case_digest",         "case_id",
                                               "finished_at",         "isolation_class",
                                               "provenance_verified", "task_class_digest"};
    scan_ctx *c = arg;
    const char *v[M__COUNT];
    size_t vl[M__COUNT];
    char case_id[160], case_digest[80], tc_digest[80], fin[40], iso[16];
    bool passed = false;
    double score = 0;
    /* The needle, `"task_class":"<name>"` with its closing quote, matched exactly this
     * task class; an audit record has no case_id. */
    bd_record_members(rec, len, keys, M__COUNT, v, vl);
    if (!str_of(v[M_CASE_ID], vl[M_CASE_ID], case_id, sizeof(case_id)) ||
        !str_of(v[M_FINISHED_AT], vl[M_FINISHED_AT], fin, sizeof(fin)) ||
        !str_of(v[M_ISOLATION], vl[M_ISOLATION], iso, sizeof(iso)) || !v[M_PV] ||
        !bd_record_score(rec, len, &passed, &score))
        return 0;
    bool pv = vl[M_PV] == 4 && memcmp(v[M_PV], "true", 4) == 0;
    bd_recommendation *out = c->out;
    time_t t = (time_t)bd_history_time_epoch(fin);
    if (t == (time_t)-1 || t < c->since) {
        out->excluded_outside_window++;
        return 0;
    }
    int ci = case_index(c->tc, case_id);
    if (ci < 0) {
        out->excluded_unknown_case++;
        return 0;
    }
    /* Current (DESIGN.md §5) through the one stale rule, on the few fields it reads. */
    bd_history_record r;
    memset(&r, 0, sizeof(r));
    r.case_id = case_id;
    r.case_digest = str_of(v[M_CASE_DIGEST], vl[M_CASE_DIGEST], case_digest, sizeof(case_digest))
                        ? case_digest
                        : NULL;
    r.task_class_digest =
        str_of(v[M_TC_DIGEST], vl[M_TC_DIGEST], tc_digest, sizeof(tc_digest)) ? tc_digest : NULL;
    if (bd_record_stale(&r, c->tc->digests) != BD_STALE_NONE) {
        out->excluded_stale++;
        return 0;
    }
    case_best *b = &c->best[ci];
    if (!pv || !b->signed_today) {
        out->excluded_unsigned++;
        return 0;
    }
    int k = strcmp(iso, "namespaces") == 0;
    c->n_class[k]++;
    b->seq[k] = seq;
    memcpy(b->finished_at[k], fin, strlen(fin) + 1);
    b->score[k] = score;
    b->passed[k] = passed;
    return 0;
}

typedef struct group_ctx {
    scan_ctx *sc;
    bd_history *h;
    bd_err *err;
} group_ctx;

/* One group of equal records from the index (hindex.h), counted as scan_one counts each
 * of them; the newest eligible one of a case is read from its segment. Returns 0, 1 when
 * the index does not answer as the segments do, 2 on an error in g->err. */
static int group_one(const bd_hindex_group *g, void *arg)
{
    group_ctx *gc = arg;
    scan_ctx *c = gc->sc;
    bd_recommendation *out = c->out;
    if (!g->case_id || !g->isolation)
        return 1;
    if (!g->in_window) {
        out->excluded_outside_window += g->count;
        return 0;
    }
    int ci = case_index(c->tc, g->case_id);
    if (ci < 0) {
        out->excluded_unknown_case += g->count;
        return 0;
    }
    if (bd_stale_bits(g->case_id, g->case_digest, g->tc_digest, c->tc->digests) != BD_STALE_NONE) {
        out->excluded_stale += g->count;
        return 0;
    }
    case_best *b = &c->best[ci];
    if (!g->provenance_verified || !b->signed_today) {
        out->excluded_unsigned += g->count;
        return 0;
    }
    int k = strcmp(g->isolation, "namespaces") == 0;
    c->n_class[k] += g->count;
    if (g->newest.seq <= b->seq[k])
        return 0;
    bd_history_record r;
    int rc = bd_history_read_at(gc->h, &g->newest, &r, gc->err);
    if (rc != 0)
        return rc > 0 ? 1 : 2;
    if (r.is_audit || !r.finished_at || strlen(r.finished_at) >= sizeof(b->finished_at[k])) {
        bd_history_record_release(&r);
        return 1;
    }
    b->seq[k] = r.seq;
    memcpy(b->finished_at[k], r.finished_at, strlen(r.finished_at) + 1);
    b->score[k] = r.score.score;
    b->passed[k] = r.score.passed;
    memcpy(b->hash[k], r.hash, BD_HASH_BUF);
    bd_history_record_release(&r);
    return 0;
}

/* The selection through the index: 0, -1 (err), or 1 when there is no index to use or it
 * does not answer as the segments do (then the chain is streamed). */
static int select_indexed(scan_ctx *sc, bd_history *h, uint64_t upto, bd_err *err)
{
    bd_hindex *ix = bd_history_index(h);
    if (!ix)
        return 1;
    group_ctx gc = {sc, h, err};
    bd_hindex_head ih;
    /* Only an index of exactly the verified chain (nothing appended since the verify). */
    int rc = bd_hindex_has_bad(ix) || bd_hindex_get_head(ix, &ih) != 0 || ih.seq != upto
                 ? 1
                 : bd_hindex_groups(ix, sc->tc->name, (int64_t)sc->since, group_one, &gc);
    bd_hindex_close(ix);
    if (rc == 0)
        return 0;
    if (rc == 2)
        return -1;
    /* Start again from nothing on the streamed path. */
    bd_recommendation *out = sc->out;
    out->excluded_outside_window = out->excluded_unknown_case = out->excluded_stale =
        out->excluded_unsigned = 0;
    sc->n_class[0] = sc->n_class[1] = 0;
    for (size_t i = 0; i < sc->tc->n_cases; i++) {
        case_best *b = &sc->best[i];
        bool st = b->signed_today;
        const char *pin = b->pin;
        memset(b, 0, sizeof(*b));
        b->signed_today = st;
        b->pin = pin;
    }
    return 1;
}

/* Hands over "what is signed today" once the chain is verified: NULL with `err` when it
 * could not be found out. */
typedef const bd_signed_today *(*today_fn)(void *payload, bd_err *err);

static const bd_signed_today *today_given(void *payload, bd_err *err)
{
    (void)err;
    return payload;
}

static int recommend_core(bd_recommendation *out, const bd_bench *bench, const bd_task_class *tc,
                          time_t now, today_fn today, void *today_payload, bd_err *err);

int bd_recommend_given(bd_recommendation *out, const bd_bench *bench, const bd_task_class *tc,
                       time_t now, const bd_signed_today *st, bd_err *err)
{
    return recommend_core(out, bench, tc, now, today_given, (void *)st, err);
}

static int recommend_core(bd_recommendation *out, const bd_bench *bench, const bd_task_class *tc,
                          time_t now, today_fn today, void *today_payload, bd_err *err)
{
    int rc = -1;
    bd_anchor_report rep;
    bd_history *h = NULL;
    case_best *best = NULL;
    double *scores = NULL;
    memset(out, 0, sizeof(*out));
    memset(&rep, 0, sizeof(rep));
    snprintf(out->task_class, sizeof(out->task_class), "%s", tc->name);
    out->current_tier = tc->reg->current_tier;
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out->generated_at, sizeof(out->generated_at), "%Y-%m-%dT%H:%M:%SZ", &tm);

    /* Only a verified history: the chain and every anchor. */
    int vr = bd_anchor_verify(&rep, bench->root, err);
    if (vr < 0)
        goto out;
    if (vr > 0) {
        *err = *bd_anchor_report_first_failure(&rep);
        goto out;
    }
    out->chain_count = rep.chain_count;
    memcpy(out->chain_head, rep.chain_head, BD_HASH_BUF);
    out->anchors = rep.n;
    out->seed = bd_stats_seed_from(out->chain_head, BD_HASH_HEX_LEN);

    const bd_signed_today *st = today(today_payload, err);
    if (!st)
        goto out;
    out->tc_signed = st->tc_signed;
    if (!out->tc_signed)
        snprintf(out->no_tier_reason, sizeof(out->no_tier_reason),
                 "task class '%s' is not signed today (%s): nothing is recommended until an "
                 "author and a reviewer sign it",
                 tc->name, st->tc_status);
    if (tc->n_cases > 0 && !(best = calloc(tc->n_cases, sizeof(*best))))
        goto oom;
    for (size_t i = 0; i < tc->n_cases; i++)
        best[i].signed_today = st->case_signed && st->case_signed[i];

    /* Stream the chain once: memory is per case, not per record. */
    scan_ctx sc = {out, tc, best, now - (time_t)BD_RECOMMEND_WINDOW_DAYS * 86400, {0, 0}, ""};
    snprintf(sc.tc_field, sizeof(sc.tc_field), "\"task_class\":\"%s\"", tc->name);
    /* (the closing quote makes it exact: a longer name does not match) */
    if (bd_history_open(&h, bench->root, BD_HISTORY_READ, err) != 0)
        goto out;
    int sel = select_indexed(&sc, h, out->chain_count, err);
    if (sel < 0 ||
        (sel > 0 && bd_history_scan(h, out->chain_count, sc.tc_field, scan_one, &sc, err) != 0))
        goto out;
    int k = sc.n_class[1] > 0; /* the strongest isolation class present */
    size_t nc = sc.n_class[0] + sc.n_class[1];
    snprintf(out->isolation_class, sizeof(out->isolation_class), "%s",
             nc == 0 ? ""
             : k     ? "namespaces"
                     : "subprocess");
    out->excluded_isolation = sc.n_class[!k];
    if (tc->n_cases > 0 && !(out->evidence = calloc(tc->n_cases, sizeof(*out->evidence))))
        goto oom;
    for (size_t i = 0; i < tc->n_cases; i++) { /* case_ids are sorted */
        const case_best *b = &best[i];
        if (!b->seq[k])
            continue;
        bd_rec_evidence *e = &out->evidence[out->n_evidence];
        if (!(e->case_id = strdup(tc->case_ids[i])))
            goto oom;
        out->n_evidence++;
        e->seq = b->seq[k];
        snprintf(e->finished_at, sizeof(e->finished_at), "%s", b->finished_at[k]);
        e->score = b->score[k];
        e->passed = b->passed[k];
    }
    out->superseded = sc.n_class[k] - out->n_evidence;
    /* Record hashes of the evidence only (not of every record scanned). */
    bool have_hashes = sel == 0;
    for (size_t i = 0, e = 0; have_hashes && i < tc->n_cases; i++)
        if (best[i].seq[k])
            memcpy(out->evidence[e++].record_hash, best[i].hash[k], BD_HASH_BUF);
    if (out->n_evidence > 0 && !have_hashes) {
        uint64_t *seqs = malloc(out->n_evidence * sizeof(*seqs));
        char(*hashes)[BD_HASH_BUF] = malloc(out->n_evidence * sizeof(*hashes));
        if (!seqs || !hashes) {
            free(seqs);
            free(hashes);
            goto oom;
        }
        for (size_t i = 0; i < out->n_evidence; i++)
            seqs[i] = out->evidence[i].seq;
        int hr = bd_history_hashes(h, seqs, out->n_evidence, hashes, err);
        for (size_t i = 0; hr == 0 && i < out->n_evidence; i++)
            memcpy(out->evidence[i].record_hash, hashes[i], BD_HASH_BUF);
        free(seqs);
        free(hashes);
        if (hr != 0)
            goto out;
    }
    out->cases = out->n_evidence;
    if (out->cases > 0) {
        if (!(scores = malloc(out->cases * sizeof(*scores))))
            goto oom;
        for (size_t i = 0; i < out->cases; i++) {
            scores[i] = out->evidence[i].score;
            out->passed += out->evidence[i].passed ? 1 : 0;
        }
        out->pass_rate = (double)out->passed / (double)out->cases;
        out->mean_score = bd_stats_mean(scores, out->cases);
        if (bd_stats_bca(scores, out->cases, 0.95, 0, out->seed, &out->ci_lo, &out->ci_hi, err) !=
            0)
            goto out;
        out->has_ci = true;
    }
    for (int t = BD_TIER_BRONZE; t <= BD_TIER_GOLD; t++) {
        bd_tier_eval *te = &out->tiers[t];
        te->tier = (bd_tier)t;
        te->min_cases = tc->reg->min_cases[t];
        te->threshold = t == BD_TIER_BRONZE ? 0.0 : tc->reg->threshold[t];
        te->cases_met = out->cases >= (size_t)te->min_cases && out->cases > 0;
        te->threshold_met = t == BD_TIER_BRONZE || (out->has_ci && out->ci_lo >= te->threshold);
        te->met = te->cases_met && te->threshold_met;
        /* A task class not signed today recommends nothing (DESIGN.md §7). */
        if (te->met && out->tc_signed) {
            out->has_recommended = true;
            out->recommended = (bd_tier)t;
        }
    }
    rc = 0;
    goto out;
oom:
    nomem(err);
out:
    if (rc != 0)
        bd_recommendation_release(out);
    free(scores);
    free(best);
    bd_history_free(h);
    bd_anchor_report_release(&rep);
    return rc;
}

/* "What is signed today" (the task class with both roles, and each case), found out on a
 * thread of its own while the chain is verified: GnuPG's processes and the chain's hashing
 * overlap instead of adding up. */
typedef struct today_job {
    const bd_bench *bench;
    const bd_task_class *tc;
    bd_signed_today st;
    bd_err err;
    int rc;
    pthread_t thread;
    bool started; /* the thread runs (else the work is done inline when asked) */
    bool done;
} today_job;

static int signed_today(today_job *j)
{
    bd_verify_report vrep;
    bd_prov_ctx *ctx = NULL;
    const bd_task_class *tc = j->tc;
    int rc = -1;
    memset(&vrep, 0, sizeof(vrep));
    /* GPGME's start-up (it runs gpgconf, gpg and gpgsm to learn their versions: ~40 ms)
     * is on this thread too, not before the chain's verify. */
    if (bd_provenance_init(&j->err) != 0 ||
        bd_prov_ctx_new(&ctx, j->bench->bench_dir, &j->err) != 0 ||
        bd_verify_check(&vrep, tc, NULL, 0, ctx, &j->err) < 0)
        goto out;
    const bd_err *f = bd_verify_tc_failure(&vrep);
    j->st.tc_signed = vrep.tc_prov_checked && vrep.tc_prov.status == BD_PROV_ST_SIGNED && f == NULL;
    snprintf(j->st.tc_status, sizeof(j->st.tc_status), "%s%s%s",
             vrep.tc_prov_checked ? bd_prov_status_str(vrep.tc_prov.status) : "unchecked",
             f ? ": " : "", f ? bd_code_str(f->code) : "");
    if (tc->n_cases > 0 && !(j->st.case_signed = calloc(tc->n_cases, sizeof(bool)))) {
        nomem(&j->err);
        goto out;
    }
    for (size_t i = 0; i < vrep.n_cases; i++) {
        int ci = case_index(tc, vrep.cases[i].case_id);
        if (ci >= 0)
            j->st.case_signed[ci] = vrep.cases[i].prov_checked &&
                                    vrep.cases[i].prov.status == BD_PROV_ST_SIGNED &&
                                    bd_case_check_failure(&vrep.cases[i]) == NULL;
    }
    rc = 0;
out:
    bd_verify_report_release(&vrep);
    bd_prov_ctx_free(ctx);
    return rc;
}

static void *today_thread(void *payload)
{
    today_job *j = payload;
    j->rc = signed_today(j);
    return NULL;
}

static const bd_signed_today *today_wait(void *payload, bd_err *err)
{
    today_job *j = payload;
    if (!j->done) {
        if (j->started)
            pthread_join(j->thread, NULL);
        else
            j->rc = signed_today(j);
        j->done = true;
    }
    if (j->rc != 0) {
        if (err)
            *err = j->err;
        return NULL;
    }
    return &j->st;
}

int bd_recommend(bd_recommendation *out, const bd_bench *bench, const bd_task_class *tc, time_t now,
                 bd_err *err)
{
    memset(out, 0, sizeof(*out));
    today_job j = {.bench = bench, .tc = tc, .err = BD_ERR_INIT};
    j.started = pthread_create(&j.thread, NULL, today_thread, &j) == 0;
    int rc = recommend_core(out, bench, tc, now, today_wait, &j, err);
    (void)today_wait(&j, NULL); /* joined on every path */
    free(j.st.case_signed);
    return rc;
}

cJSON *bd_recommendation_json(const bd_recommendation *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    bool ok = true;
#define ADD(x)                                                                                     \
    do {                                                                                           \
        if (!(x))                                                                                  \
            ok = false;                                                                            \
    } while (0)
    ADD(cJSON_AddStringToObject(o, "task_class", r->task_class));
    ADD(cJSON_AddStringToObject(o, "generated_at", r->generated_at));
    ADD(cJSON_AddBoolToObject(o, "requires_human_approval", 1));
    ADD(cJSON_AddStringToObject(o, "current_tier", bd_tier_str(r->current_tier)));
    ADD(cJSON_AddBoolToObject(o, "task_class_signed", r->tc_signed));
    if (r->no_tier_reason[0])
        ADD(cJSON_AddStringToObject(o, "reason", r->no_tier_reason));
    if (r->has_recommended)
        ADD(cJSON_AddStringToObject(o, "recommended_tier", bd_tier_str(r->recommended)));
    else
        ADD(cJSON_AddNullToObject(o, "recommended_tier"));
    ADD(cJSON_AddNumberToObject(o, "window_days", BD_RECOMMEND_WINDOW_DAYS));
    if (r->isolation_class[0])
        ADD(cJSON_AddStringToObject(o, "isolation_class", r->isolation_class));
    else
        ADD(cJSON_AddNullToObject(o, "isolation_class"));
    ADD(cJSON_AddNumberToObject(o, "cases", (double)r->cases));
    ADD(cJSON_AddNumberToObject(o, "passed", (double)r->passed));
    ADD(cJSON_AddNumberToObject(o, "pass_rate", r->pass_rate));
    if (r->cases) {
        ADD(cJSON_AddNumberToObject(o, "mean_score", r->mean_score));
        cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
        ADD(ci);
        if (ci) {
            cJSON *lo = cJSON_CreateNumber(r->ci_lo), *hi = cJSON_CreateNumber(r->ci_hi);
            ADD(lo && hi && cJSON_AddItemToArray(ci, lo) && cJSON_AddItemToArray(ci, hi));
        }
    } else {
        ADD(cJSON_AddNullToObject(o, "mean_score"));
        ADD(cJSON_AddNullToObject(o, "ci95"));
    }
    char seed[24];
    snprintf(seed, sizeof(seed), "%016llx", (unsigned long long)r->seed);
    ADD(cJSON_AddStringToObject(o, "bootstrap_seed", seed));
    ADD(cJSON_AddNumberToObject(o, "bootstrap_resamples", BD_STATS_RESAMPLES));
    cJSON *chain = cJSON_AddObjectToObject(o, "chain");
    ADD(chain);
    if (chain) {
        ADD(cJSON_AddNumberToObject(chain, "count", (double)r->chain_count));
        ADD(cJSON_AddStringToObject(chain, "head", r->chain_head));
        ADD(cJSON_AddNumberToObject(chain, "anchors_verified", (double)r->anchors));
    }
    cJSON *ex = cJSON_AddObjectToObject(o, "excluded_records");
    ADD(ex);
    if (ex) {
        ADD(cJSON_AddNumberToObject(ex, "outside_window", (double)r->excluded_outside_window));
        ADD(cJSON_AddNumberToObject(ex, "unknown_case", (double)r->excluded_unknown_case));
        ADD(cJSON_AddNumberToObject(ex, "unsigned", (double)r->excluded_unsigned));
        ADD(cJSON_AddNumberToObject(ex, "stale", (double)r->excluded_stale));
        ADD(cJSON_AddNumberToObject(ex, "other_isolation", (double)r->excluded_isolation));
        ADD(cJSON_AddNumberToObject(ex, "superseded", (double)r->superseded));
    }
    cJSON *tiers = cJSON_AddArrayToObject(o, "tiers");
    ADD(tiers);
    for (int t = 0; tiers && t < 3; t++) {
        const bd_tier_eval *te = &r->tiers[t];
        cJSON *x = cJSON_CreateObject();
        ADD(x && cJSON_AddItemToArray(tiers, x));
        if (!x)
            break;
        ADD(cJSON_AddStringToObject(x, "tier", bd_tier_str(te->tier)));
        ADD(cJSON_AddNumberToObject(x, "min_cases", te->min_cases));
        if (t == BD_TIER_BRONZE)
            ADD(cJSON_AddNullToObject(x, "threshold"));
        else
            ADD(cJSON_AddNumberToObject(x, "threshold", te->threshold));
        ADD(cJSON_AddBoolToObject(x, "cases_met", te->cases_met));
        ADD(cJSON_AddBoolToObject(x, "threshold_met", te->threshold_met));
        ADD(cJSON_AddBoolToObject(x, "met", te->met));
    }
    cJSON *ev = cJSON_AddArrayToObject(o, "evidence");
    ADD(ev);
    for (size_t i = 0; ev && i < r->n_evidence; i++) {
        const bd_rec_evidence *e = &r->evidence[i];
        cJSON *x = cJSON_CreateObject();
        ADD(x && cJSON_AddItemToArray(ev, x));
        if (!x)
            break;
        ADD(cJSON_AddStringToObject(x, "case_id", e->case_id));
        ADD(cJSON_AddNumberToObject(x, "seq", (double)e->seq));
        ADD(cJSON_AddStringToObject(x, "record_hash", e->record_hash));
        ADD(cJSON_AddStringToObject(x, "finished_at", e->finished_at));
        ADD(cJSON_AddNumberToObject(x, "score", e->score));
        ADD(cJSON_AddBoolToObject(x, "passed", e->passed));
    }
#undef ADD
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int bd_recommendation_write(const bd_recommendation *r, const char *bench_root, char **path_out,
                            bd_err *err)
{
    int rc = -1, fd = -1;
    bool created = false;
    char *text = NULL, *dir = NULL, *path = NULL;
    cJSON *j = bd_recommendation_json(r);
    if (path_out)
        *path_out = NULL;
    if (!j || !(text = cJSON_Print(j))) {
        nomem(err);
        goto out;
    }
    size_t dl = strlen(bench_root) + sizeof("/" BD_RECOMMENDATIONS_DIR) + 40;
    if (!(dir = malloc(dl)) || !(path = malloc(dl))) {
        nomem(err);
        goto out;
    }
    snprintf(dir, dl, "%s/%s", bench_root, BD_RECOMMENDATIONS_DIR);
    if (bd_mkdir_p(dir, 0700, err) != 0)
        goto out;
    /* generated_at without separators: 2026-05-12T14:00:00Z -> 20260512T140000Z */
    char stamp[24];
    size_t k = 0;
    for (const char *p = r->generated_at; *p && k < sizeof(stamp) - 1; p++)
        if (*p != '-' && *p != ':')
            stamp[k++] = *p;
    stamp[k] = '\0';
    for (int i = 1; i < 1000; i++) {
        if (i == 1)
            snprintf(path, dl, "%s/%s.json", dir, stamp);
        else
            snprintf(path, dl, "%s/%s-%d.json", dir, stamp, i);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot create the recommendation file");
        goto out;
    }
    created = true;
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print leaves no final newline; the NUL slot is ours */
    size_t off = 0;
    while (off < len + 1) {
        ssize_t w = write(fd, text + off, len + 1 - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            bd_err_errno(err, BD_E_IO, w < 0 ? errno : EIO, path,
                         "cannot write the recommendation file");
            goto out;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot fsync the recommendation file");
        goto out;
    }
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot close the recommendation file");
        goto out;
    }
    rc = 0;
    if (path_out) {
        *path_out = path;
        path = NULL;
    }
out:
    if (fd >= 0)
        close(fd);
    if (rc != 0 && created)
        unlink(path);
    cJSON_Delete(j);
    free(text);
    free(dir);
    free(path);
    return rc;
}
