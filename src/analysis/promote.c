/*
 * promote.c — recommendations from the verified history (promote.h,
 * docs/history.md#promotion-recommend-never-apply).
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
#include "config.h"
#include "evidence.h"
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
    bd_evidence_release_fields(r);
    memset(r, 0, sizeof(*r));
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

/* The task class's verdicts (their signatures checked now) and the evidence's gatherer,
 * chained as visitors around `inner` for the one walk: *vs_visit is the one to walk with. */
static int evidence_start(bd_evidence **ev, bd_verdict_set *vs, bd_history_visit *ev_visit,
                          bd_history_visit *vs_visit, const char *needle, const bd_bench *bench,
                          const bd_task_class *tc, time_t since, bd_err *err)
{
    bd_prov_ctx *prov = NULL;
    int rc = -1;
    if (bd_evidence_new(ev, tc, since, err) != 0 || bd_provenance_init(err) != 0 ||
        bd_prov_ctx_new(&prov, bench->bench_dir, err) != 0 ||
        bd_verdict_set_load(vs, bench->root, tc->name, prov, err) != 0)
        goto out;
    bd_evidence_visitor(ev_visit, *ev, needle);
    bd_verdict_set_visitor(vs_visit, vs, ev_visit);
    rc = 0;
out:
    bd_prov_ctx_free(prov);
    return rc;
}

/* The signed runs the walk gathered (`w`, runsigned.h), judged against bench/keys, and
 * whether this task class's evidence must come from them: run.require_signed of its
 * registration, or require_signed_runs of this machine's config. Returns 0 or -1. */
static int signed_runs(bd_runs_report *runs, bool *require, bd_runsig_walk *w,
                       const bd_bench *bench, const bd_task_class *tc, bd_err *err)
{
    bd_config cfg;
    bd_history *h = NULL;
    if (bd_config_load(&cfg, bench->root, err) != 0)
        return -1;
    *require = tc->run_require_signed || cfg.require_signed_runs;
    bd_config_release(&cfg);
    int rc = bd_history_open(&h, bench->root, BD_HISTORY_READ, err);
    if (rc == 0)
        rc = bd_runsig_walk_fill(w, h, err);
    bd_history_free(h);
    return rc == 0 ? bd_runsig_walk_judge(runs, w, bench->bench_dir, false, err) : -1;
}

static int recommend_core(bd_recommendation *out, const bd_bench *bench, const bd_task_class *tc,
                          time_t now, today_fn today, void *today_payload, bd_err *err)
{
    bd_runs_report runs;
    memset(&runs, 0, sizeof(runs));
    bd_runsig_walk *sigw = bd_runsig_walk_new();
    if (!sigw) {
        memset(out, 0, sizeof(*out));
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    int rc = -1;
    bd_anchor_report rep;
    bd_evidence *ev = NULL;
    bd_verdict_set vs;
    memset(&vs, 0, sizeof(vs));
    double *scores = NULL;
    memset(out, 0, sizeof(*out));
    memset(&rep, 0, sizeof(rep));
    snprintf(out->task_class, sizeof(out->task_class), "%s", tc->name);
    out->current_tier = tc->reg->current_tier;
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out->generated_at, sizeof(out->generated_at), "%Y-%m-%dT%H:%M:%SZ", &tm);

    /* Every record used comes from the one walk that verifies the chain and every anchor
     * (never from the derived index or a memo: docs/history.md#the-derived-index). The
     * needle, `"task_class":"<name>"` with its closing quote, matches exactly this task
     * class. */
    char tc_field[160];
    snprintf(tc_field, sizeof(tc_field), "\"task_class\":\"%s\"", tc->name);
    time_t since = now - (time_t)BD_RECOMMEND_WINDOW_DAYS * 86400;
    /* The evidence's run and the verdicts' subjects are gathered in the same walk. */
    bd_history_visit ev_visit, vs_visit;
    if (evidence_start(&ev, &vs, &ev_visit, &vs_visit, tc_field, bench, tc, since, err) != 0)
        goto out;
    bd_evidence_track_signed(ev, sigw); /* who ran each run, from the same walk */
    int vr = bd_anchor_verify_visit(&rep, bench->root, 0, &vs_visit, err);
    if (vr < 0) {
        if (err->code == BD_OK)
            nomem(err);
        goto out;
    }
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
    bd_verdict_set_settle(&vs);
    /* The latest full run (a signed one when required), less what two reviewers removed
     * (evidence.h). */
    if (signed_runs(&runs, &out->require_signed, sigw, bench, tc, err) != 0 ||
        bd_evidence_apply(out, ev, st, &vs, &runs, err) != 0)
        goto out;
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
        /* A task class not signed today recommends nothing
         * (docs/history.md#promotion-recommend-never-apply). */
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
    bd_anchor_report_release(&rep);
    bd_evidence_free(ev);
    bd_verdict_set_release(&vs);
    bd_runs_report_release(&runs);
    bd_runsig_walk_free(sigw);
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
        bd_verify(&vrep, tc, &(bd_verify_opts){.prov = ctx, .collect = true}, NULL, &j->err) < 0)
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
        int ci = bd_task_class_case_index(tc, vrep.cases[i].case_id);
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
    ADD(bd_evidence_json_add(o, r));
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
