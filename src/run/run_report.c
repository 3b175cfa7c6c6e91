/*
 * run_report.c — what a run reports (see run_report.h): the summary's tally, the summary
 * object and file, the event lines of `run --json`.
 */
#include "run_report.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "fsutil.h"
#include "stats.h"
#include "version.h"

static const char *const event_names[] = {"run.started",   "case.queued",  "case.started",
                                          "case.finished", "run.finished", "case.not_recorded"};

const char *bd_run_event_name(bd_run_event_kind k)
{
    if ((int)k < 0 || k > BD_RUN_EV_CASE_NOT_RECORDED)
        return "?";
    return event_names[k];
}

char *bd_run_json_text(const cJSON *doc, size_t *len)
{
    char *t = bd_canon_json(doc, len);
    if (!t) {
        t = cJSON_PrintUnformatted(doc);
        if (t)
            *len = strlen(t);
    }
    return t;
}

static int cmp_fm(const void *a, const void *b)
{
    return strcmp(((const bd_fm_count *)a)->code, ((const bd_fm_count *)b)->code);
}

static void release_fm(bd_run_summary *s)
{
    for (size_t i = 0; i < s->n_failure_modes; i++)
        free(s->failure_modes[i].code);
    free(s->failure_modes);
    s->failure_modes = NULL;
    s->n_failure_modes = 0;
}

void bd_run_summary_release(bd_run_summary *s)
{
    if (!s)
        return;
    release_fm(s);
    free(s->not_run);
    s->not_run = NULL;
    s->n_not_run = 0;
}

void bd_run_summary_tally(bd_run_summary *s, const bd_case_result *const *res, size_t n)
{
    release_fm(s);
    s->cases = n;
    s->passed = s->failed = 0;
    s->cost_usd = 0;
    s->has_mean = s->has_ci = false;
    s->mean_score = s->pass_rate = 0;
    double *x = n ? malloc(n * sizeof(double)) : NULL;
    for (size_t i = 0; i < n; i++) {
        const bd_score *sc = &res[i]->score;
        if (x)
            x[i] = sc->score;
        if (sc->passed)
            s->passed++;
        else
            s->failed++;
        s->cost_usd += sc->cost_usd;
        for (size_t k = 0; k < sc->n_failure_modes; k++) {
            const char *code = sc->failure_modes[k].code;
            bool seen = false; /* count each code once per case */
            for (size_t j = 0; j < k && !seen; j++)
                seen = strcmp(sc->failure_modes[j].code, code) == 0;
            if (seen)
                continue;
            size_t f = 0;
            while (f < s->n_failure_modes && strcmp(s->failure_modes[f].code, code) != 0)
                f++;
            if (f == s->n_failure_modes) {
                bd_fm_count *g = realloc(s->failure_modes, (s->n_failure_modes + 1) * sizeof(*g));
                char *dup = strdup(code);
                if (!g || !dup) {
                    free(dup);
                    if (g)
                        s->failure_modes = g;
                    continue;
                }
                s->failure_modes = g;
                s->failure_modes[f].code = dup;
                s->failure_modes[f].count = 0;
                s->n_failure_modes++;
            }
            s->failure_modes[f].count++;
        }
    }
    if (s->n_failure_modes > 1)
        qsort(s->failure_modes, s->n_failure_modes, sizeof(bd_fm_count), cmp_fm);
    s->has_mean = n > 0 && x;
    if (s->has_mean) {
        s->mean_score = bd_stats_mean(x, n);
        s->pass_rate = (double)s->passed / (double)n;
        bd_err e = BD_ERR_INIT;
        s->has_ci = bd_stats_bca(x, n, 0.95, BD_STATS_RESAMPLES, BD_STATS_RUN_SEED, &s->ci_lo,
                                 &s->ci_hi, &e) == 0;
    }
    free(x);
}

/* "start": "warm" or "cold", and "start_reason" when cold though warm was not refused. */
static void add_start(cJSON *o, const bd_run_summary *s)
{
    cJSON_AddStringToObject(o, "start", s->start[0] ? s->start : "cold");
    if (s->start_why[0])
        cJSON_AddStringToObject(o, "start_reason", s->start_why);
}

cJSON *bd_run_summary_file_head(const bd_run_summary *s, const bd_case_result *const *res, size_t n)
{
    cJSON *o = bd_run_summary_json(s);
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "schema_version", 1);
    cJSON_AddStringToObject(o, "run_id", s->run_id);
    cJSON_AddStringToObject(o, "task_class", s->task_class);
    cJSON_AddStringToObject(o, "isolation_class", bd_isolation_str(s->isolation));
    add_start(o, s);
    cJSON_AddStringToObject(o, "task_class_digest", s->task_class_digest);
    cJSON_AddStringToObject(o, "harness_version", BD_VERSION);
    cJSON_AddStringToObject(o, "started_at", s->started_at);
    cJSON_AddStringToObject(o, "finished_at", s->finished_at);
    cJSON_AddBoolToObject(o, "cancelled", s->cancelled);
    /* The run's records count for promotion only when every one was signed
     * (docs/runner.md#the-run-summary, docs/history.md#promotion-recommend-never-apply). */
    bool all_verified = n > 0;
    for (size_t i = 0; i < n; i++)
        all_verified = all_verified && res[i]->provenance_verified;
    cJSON_AddBoolToObject(o, "provenance_verified", all_verified);
    cJSON_AddNumberToObject(o, "cases_selected", (double)s->cases_selected);
    if (s->has_mean)
        cJSON_AddNumberToObject(o, "pass_rate", s->pass_rate);
    else
        cJSON_AddNullToObject(o, "pass_rate");
    cJSON *ci = cJSON_AddObjectToObject(o, "ci");
    if (ci) {
        char seed[32];
        snprintf(seed, sizeof(seed), "0x%016llx", (unsigned long long)BD_STATS_RUN_SEED);
        cJSON_AddStringToObject(ci, "method", "bca");
        cJSON_AddNumberToObject(ci, "level", 0.95);
        cJSON_AddNumberToObject(ci, "resamples", BD_STATS_RESAMPLES);
        cJSON_AddStringToObject(ci, "seed", seed);
        cJSON_AddStringToObject(ci, "order", "case_id");
    }
    if (!cJSON_AddArrayToObject(o, "results")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* One entry of the summary file's "results". New tree or NULL (out of memory). */
static cJSON *result_entry(const bd_case_result *rs)
{
    cJSON *e = cJSON_CreateObject();
    if (!e)
        return NULL;
    cJSON_AddStringToObject(e, "case_id", rs->case_id);
    cJSON_AddBoolToObject(e, "provenance_verified", rs->provenance_verified);
    cJSON *sc = bd_score_to_json(&rs->score);
    if (sc)
        cJSON_AddItemToObject(e, "score", sc);
    cJSON_AddNumberToObject(e, "wall_ms", (double)rs->wall_ms);
    cJSON_AddStringToObject(e, "started_at", rs->started_at);
    cJSON_AddStringToObject(e, "finished_at", rs->finished_at);
    cJSON_AddStringToObject(e, "case_digest", rs->case_digest);
    if (rs->record_hash[0])
        cJSON_AddStringToObject(e, "record_hash", rs->record_hash);
    else
        cJSON_AddNullToObject(e, "record_hash");
    return e;
}

cJSON *bd_run_summary_file_json(const bd_run_summary *s, const bd_case_result *const *res, size_t n)
{
    cJSON *o = bd_run_summary_file_head(s, res, n);
    cJSON *results = o ? cJSON_GetObjectItemCaseSensitive(o, "results") : NULL;
    for (size_t i = 0; results && i < n; i++) {
        cJSON *e = result_entry(res[i]);
        if (!e || !cJSON_AddItemToArray(results, e)) {
            cJSON_Delete(e);
            break;
        }
    }
    return o;
}

/* The canonical text of `head` split around its empty top-level "results" array: *pre ends
 * with the array's '[', *post starts with its ']'. Canonical JSON sorts the keys and writes
 * no space, so the text of the whole file is pre, the entries' own canonical texts joined
 * by ',', then post. 0 (pre to be freed; post points into it), 1 when head has no canonical
 * text or the split is not unique, -1 out of memory. */
static int split_head(const cJSON *head, char **pre, size_t *pre_len, const char **post)
{
    size_t len = 0;
    char *t = bd_canon_json(head, &len);
    if (!t)
        return 1;
    static const char mark[] = "\"results\":[]";
    char *at = strstr(t, mark);
    if (!at || strstr(at + 1, mark)) {
        free(t);
        return 1;
    }
    *pre = t;
    *pre_len = (size_t)(at - t) + sizeof(mark) - 2; /* through the '[' */
    *post = at + sizeof(mark) - 2;
    return 0;
}

int bd_run_summary_stream(const char *path, const cJSON *head, const bd_case_result *const *res,
                          size_t n, bd_err *err)
{
    char *pre = NULL;
    size_t pre_len = 0;
    const char *post = NULL;
    int split = split_head(head, &pre, &pre_len, &post);
    if (split != 0)
        return split;
    bd_atomic_file *f = NULL;
    int rc = bd_atomic_file_open(&f, path, NULL, 0600, err);
    if (rc == 0)
        rc = bd_atomic_file_write(f, pre, pre_len, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        cJSON *e = result_entry(res[i]);
        bool made = e != NULL;
        size_t len = 0;
        char *t = made ? bd_canon_json(e, &len) : NULL;
        cJSON_Delete(e);
        if (!t)
            rc = made ? 1
                      : bd_err_set(err, BD_E_NOMEM, NULL, 0, 0,
                                   "out of memory writing the run summary");
        else if ((i > 0 && bd_atomic_file_write(f, ",", 1, err) != 0) ||
                 bd_atomic_file_write(f, t, len, err) != 0)
            rc = -1;
        free(t);
    }
    if (rc == 0)
        rc = bd_atomic_file_write(f, post, strlen(post), err);
    if (rc == 0)
        rc = bd_atomic_file_commit(f, err);
    else
        bd_atomic_file_abort(f);
    free(pre);
    return rc;
}
/* USD as "$0.53" (whole cents) or "$0.0976" into buf. */
static void money(char *buf, size_t cap, double usd)
{
    double cents = usd * 100.0;
    snprintf(buf, cap, fabs(cents - round(cents)) < 1e-6 ? "$%.2f" : "$%.4f", usd);
}

char *bd_run_cost_text(char *buf, size_t cap, const bd_run_summary *s)
{
    char a[48], b[48];
    money(a, sizeof(a), s->cost_usd);
    if (!s->has_cost_cap) {
        snprintf(buf, cap, "%s", a);
        return buf;
    }
    money(b, sizeof(b), s->cost_cap_usd);
    snprintf(buf, cap, "%s of %s", a, b);
    return buf;
}

char *bd_run_stop_detail(const bd_run_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "cost_cap_usd", s->cost_cap_usd);
    cJSON_AddNumberToObject(o, "cost_usd", round(s->cost_usd * 1e9) / 1e9);
    cJSON_AddNumberToObject(o, "not_run", (double)s->n_not_run);
    cJSON_AddStringToObject(o, "run_id", s->run_id);
    cJSON_AddStringToObject(o, "stopped", "cost_cap");
    size_t len = 0;
    char *t = bd_canon_json(o, &len);
    cJSON_Delete(o);
    return t;
}

int bd_run_stop_append(bd_history *h, const bd_run_summary *s, uint64_t *seq,
                       char hash[BD_HASH_BUF], bd_err *err)
{
    char *detail = bd_run_stop_detail(s);
    if (!detail)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    bd_history_audit_fields a = {.event = BD_RUN_STOPPED_EVENT,
                                 .task_class = s->task_class,
                                 .detail = detail,
                                 .at = s->finished_at};
    int rc = bd_history_append_audit(h, &a, seq, hash, err);
    free(detail);
    return rc;
}

int bd_run_stop_parse(const char *detail, char run_id[BD_RUN_ID_MAX], double *cap_usd)
{
    cJSON *o = detail ? cJSON_Parse(detail) : NULL;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "run_id");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "stopped");
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(o, "cost_cap_usd");
    int rc = -1;
    if (cJSON_IsString(id) && strlen(id->valuestring) < BD_RUN_ID_MAX && cJSON_IsString(why) &&
        strcmp(why->valuestring, "cost_cap") == 0 && cJSON_IsNumber(cap)) {
        snprintf(run_id, BD_RUN_ID_MAX, "%s", id->valuestring);
        *cap_usd = cap->valuedouble;
        rc = 0;
    }
    cJSON_Delete(o);
    return rc;
}

/* "cost_cap_usd" when a cap applied; "stopped": "cost_cap" and "not_run" when it
 * stopped the run. */
static void add_cost_cap(cJSON *o, const bd_run_summary *s)
{
    if (!s->has_cost_cap)
        return;
    cJSON_AddNumberToObject(o, "cost_cap_usd", s->cost_cap_usd);
    if (!s->stopped_cost_cap)
        return;
    cJSON_AddStringToObject(o, "stopped", "cost_cap");
    cJSON *nr = cJSON_AddArrayToObject(o, "not_run");
    for (size_t i = 0; nr && i < s->n_not_run; i++)
        cJSON_AddItemToArray(nr, cJSON_CreateString(s->not_run[i]));
}

cJSON *bd_run_summary_json(const bd_run_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "cases", (double)s->cases);
    cJSON_AddNumberToObject(o, "passed", (double)s->passed);
    cJSON_AddNumberToObject(o, "failed", (double)s->failed);
    if (s->has_mean)
        cJSON_AddNumberToObject(o, "mean_score", s->mean_score);
    else
        cJSON_AddNullToObject(o, "mean_score");
    if (s->has_ci) {
        cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
        if (ci) {
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(s->ci_lo));
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(s->ci_hi));
        }
    } else {
        cJSON_AddNullToObject(o, "ci95");
    }
    cJSON *fm = cJSON_AddObjectToObject(o, "failure_modes");
    for (size_t i = 0; fm && i < s->n_failure_modes; i++)
        cJSON_AddNumberToObject(fm, s->failure_modes[i].code, (double)s->failure_modes[i].count);
    /* A sum of per-case costs carries binary rounding noise (0.097599999999999978);
     * nano-dollars are far below any price, so round there before printing. */
    cJSON_AddNumberToObject(o, "cost_usd", round(s->cost_usd * 1e9) / 1e9);
    add_cost_cap(o, s);
    cJSON_AddNumberToObject(o, "wall_ms", (double)s->wall_ms);
    cJSON_AddNumberToObject(o, "not_recorded", (double)s->not_recorded);
    cJSON *sk = cJSON_AddObjectToObject(o, "skipped_unsigned");
    if (sk) {
        cJSON_AddNumberToObject(sk, "draft", (double)s->skipped_draft);
        cJSON_AddNumberToObject(sk, "awaiting_review", (double)s->skipped_awaiting);
    }
    if (s->has_chain_head)
        cJSON_AddStringToObject(o, "chain_head", s->chain_head);
    else
        cJSON_AddNullToObject(o, "chain_head");
    return o;
}

/* A new event line {"event": name} with "case_id" next when `case_id` is not NULL, or
 * NULL (out of memory). */
static cJSON *event_object(const char *name, const char *case_id)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "event", name);
    if (case_id)
        cJSON_AddStringToObject(o, "case_id", case_id);
    return o;
}

cJSON *bd_run_event_json(const bd_run_event *ev)
{
    cJSON *o = NULL, *inner = NULL;
    switch (ev->kind) {
    case BD_RUN_EV_STARTED:
        if (!(o = event_object("run.started", NULL)))
            return NULL;
        cJSON_AddStringToObject(o, "run_id", ev->summary->run_id);
        cJSON_AddStringToObject(o, "task_class", ev->summary->task_class);
        cJSON_AddNumberToObject(o, "cases", (double)ev->summary->cases_selected);
        cJSON_AddStringToObject(o, "isolation_class", bd_isolation_str(ev->summary->isolation));
        add_start(o, ev->summary);
        return o;
    case BD_RUN_EV_CASE_STARTED:
        return event_object("case.started", ev->case_id);
    case BD_RUN_EV_CASE_FINISHED:
        o = event_object("case.finished", ev->case_id);
        inner = bd_score_to_json(&ev->result->score);
        if (!o || !inner)
            break;
        cJSON_AddItemToObject(o, "score", inner);
        if (ev->result->record_hash[0])
            cJSON_AddStringToObject(o, "record_hash", ev->result->record_hash);
        else
            cJSON_AddNullToObject(o, "record_hash");
        return o;
    case BD_RUN_EV_CASE_NOT_RECORDED:
        /* The case was scored but its record could not be appended: no score is
         * published for it, only that it is missing and why
         * (docs/runner.md#fan-out-events-cancel). */
        if (!(o = event_object("case.not_recorded", ev->case_id)))
            return NULL;
        cJSON_AddStringToObject(o, "reason", ev->error ? bd_code_str(ev->error->code) : "");
        return o;
    case BD_RUN_EV_FINISHED:
        o = event_object("run.finished", NULL);
        inner = bd_run_summary_json(ev->summary);
        if (!o || !inner)
            break;
        cJSON_AddItemToObject(o, "summary", inner);
        if (ev->summary->operator_fingerprint[0]) { /* a run with an operator key */
            cJSON_AddStringToObject(o, "operator_fingerprint", ev->summary->operator_fingerprint);
            if (ev->summary->signed_seq)
                cJSON_AddNumberToObject(o, "run_signed_seq", (double)ev->summary->signed_seq);
            else
                cJSON_AddNullToObject(o, "run_signed_seq");
        }
        return o;
    default:
        return NULL;
    }
    cJSON_Delete(o); /* out of memory */
    cJSON_Delete(inner);
    return NULL;
}

int bd_run_summary_write(bd_run_summary *s, const char *runs_dir, const bd_case_result *const *res,
                         size_t n, bd_err *err)
{
    char path[PATH_MAX + 80];
    snprintf(path, sizeof(path), "%s/%s.json", runs_dir, s->run_id);
    if (bd_mkdir_p(runs_dir, 0700, err) != 0)
        return -1;
    /* Streamed: a run of a million cases never holds its summary file's tree or text. */
    cJSON *head = bd_run_summary_file_head(s, res, n);
    int rc = head
                 ? bd_run_summary_stream(path, head, res, n, err)
                 : bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory writing the run summary");
    cJSON_Delete(head);
    if (rc == 1) {
        /* No canonical text (a rubric's string that is not UTF-8): the whole file in
         * cJSON's compact form, as bd_run_json_text gives it, built in memory. */
        cJSON *o = bd_run_summary_file_json(s, res, n);
        size_t len = 0;
        char *text = o ? bd_run_json_text(o, &len) : NULL;
        cJSON_Delete(o);
        rc = !text
                 ? bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory writing the run summary")
                 : bd_write_file_atomic(path, text, len, 0600, err);
        free(text);
    }
    if (rc == 0) {
        s->has_summary_path = true;
        snprintf(s->summary_path, sizeof(s->summary_path), "%s", path);
    }
    return rc;
}
