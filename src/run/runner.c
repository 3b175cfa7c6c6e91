/*
 * runner.c — the rubric runner (see runner.h): per-case temp dirs, the stdin document
 * (docs/formats.md#benchscore), the chokepoint, failure-mode mapping, fan-out on one loop, events
 * (their JSON and the run summary are run_report.c).
 */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "case_layout.h"
#include "config.h"
#include "digest.h"
#include "runsign.h"
#include "fsutil.h"
#include "serial.h"
#include "sut_env.h"
#include "text.h"
#include "verify.h"
#include "strbuf.h"

/* ---- small helpers ----------------------------------------------------------------- */

/* ---- the runner -------------------------------------------------------------------- */

enum { C_QUEUED, C_RUNNING, C_RECORDING, C_DONE, C_DROPPED };

typedef struct run_case {
    struct bd_runner *r;
    size_t index;
    char *id;
    /* Its case.yaml is not kept between the gate and its start (a parsed case is a few KB:
     * gigabytes at a million cases): its limits and its stdin document come from the
     * case.yaml its start hashes (bd_layout_rubric, case_layout.h). */
    char *case_dir_path; /* <cases_dir>/<id> */
    int state;
    char *tmp;     /* the rubric's cwd */
    char *sut_tmp; /* the SUT's cwd */
    bd_exec *ex;
    bool in_sut;
    cJSON *harness;
    char *sut_out;
    size_t sut_out_len;
    bd_exec_limits lim;
    uint64_t t0;
    bd_case_result res;
    char *stderr_buf;
    char *doc; /* the prepared stdin document (with tmp laid out), or NULL */
    size_t doc_len;
    size_t wait_for; /* 1 + index of the case whose slot this one took, until that one
                        is published; then its `started` is emitted; 0 = none */
    size_t waiter;   /* 1 + index of the case that took this one's slot (its wait_for may
                        since have been cleared), or 0: a slot is freed once, so one at most */
    bool slot_freed; /* its slot went on r->freed */
    bool verified;   /* its record says provenance_verified: true */
    bool checked;    /* c and its digests came from the run gate's check (bd_runner_take_check) */
} run_case;

/* One group commit: the records of the cases that finished while the previous append was
 * in flight, appended together on the recording worker. */
typedef struct rec_batch {
    struct bd_runner *r;
    run_case **cases; /* in the order they finished */
    size_t n;
    bd_err err; /* the append's error (written on the worker thread) */
} rec_batch;

typedef struct subscriber {
    bd_run_event_fn fn;
    void *payload;
} subscriber;

struct bd_runner {
    const bd_bench *bench;
    const bd_task_class *tc;
    bd_runner_opts opts;
    char *python;
    char *helper;
    char **sut_env; /* the SUT's extra "NAME=value" entries (sut_env.h), or NULL */
    char *tmp_root;
    char owner_tag[BD_OWNER_TAG_MAX];
    char *runs_dir;
    int jobs;
    run_case *cases;
    size_t n;
    subscriber *subs;
    size_t n_subs;
    bd_history *hist; /* where the records go, or NULL (bd_runner_set_recording) */
    bool hist_own;
    bool run_full;
    size_t run_cases;
    char *rubric;
    size_t rubric_len;
    bd_exec_ctx *ctx;
    bd_start_mode start; /* bd_runner_set_start, else runner.start of the config */
    bool start_set;
    char *staging;    /* warm: the directory the case dirs are made in, else NULL */
    bd_layout layout; /* how its cases are laid out (case_layout.h), set at its start */
    uv_loop_t *loop;
    size_t next, running, done;
    size_t finishing;     /* running cases whose program ended, completion pending */
    size_t recording;     /* finished cases waiting for their record (queued or in flight) */
    size_t removing;      /* temp dirs being removed on the thread pool */
    bool reading_ahead;   /* a read_ahead request is on the thread pool */
    size_t read_ahead_to; /* cases below this index were read ahead */
    bd_serial *recorder;
    size_t *rec_queue; /* finished cases waiting for the next append, in finish order */
    size_t rec_n;
    rec_batch *inflight;      /* the append on the worker, or NULL */
    uv_timer_t *commit_timer; /* the group commit's window (record_soon), or NULL */
    bool commit_armed;        /* commit_timer is counting down */
    unsigned commit_window_ms;
    bool append_failed; /* an append failed: no more are tried */
    /* The operator's key (bd_runner_set_operator): records carry its fingerprint and the
     * run is signed when it ends; op_first_seq/op_last_hash span its records. */
    bool op_set;
    bd_sign_key op_key;
    uint64_t op_first_seq;
    char op_last_hash[BD_HASH_BUF];
    size_t *freed; /* indices of cases whose slot was freed, in order (r->n of them) */
    size_t freed_head, freed_tail;
    bool prepared, started, cancelled, finished;
    size_t n_checked;  /* cases whose check the run gate handed over */
    size_t take_next;  /* where bd_runner_take_check looks first (checks come in id order) */
    bool cancel_asked; /* bd_runner_cancel (a user's Ctrl-C), not the cost cap */
    double cost_cap;   /* bd_runner_set_cost_cap; negative = none */
    double spent;      /* cost_usd of the cases finished so far */
    bool capped;       /* the cap was reached: no case starts */
    bool scores_only;  /* the history takes no run.stopped audit record (a shard bundle) */
    bool has_fatal;
    bd_err fatal;
    bd_run_summary summary;
    uint64_t t0;
    bd_case_result **results;
    size_t n_results;
    bool runs_dir_made;
};

static void emit(bd_runner *r, bd_run_event_kind kind, const run_case *rc)
{
    bd_run_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = kind;
    ev.summary = &r->summary;
    if (rc) {
        ev.case_id = rc->id;
        ev.case_index = rc->index;
        if (kind == BD_RUN_EV_CASE_FINISHED || kind == BD_RUN_EV_CASE_NOT_RECORDED)
            ev.result = &rc->res;
        if (kind == BD_RUN_EV_CASE_NOT_RECORDED && r->has_fatal)
            ev.error = &r->fatal;
    }
    ev.running = r->running - r->finishing; /* programs running; not a case in cleanup */
    ev.done = r->done;
    for (size_t i = 0; i < r->n_subs; i++)
        r->subs[i].fn(&ev, r->subs[i].payload);
}

static void set_fatal(bd_runner *r, const bd_err *e)
{
    if (!r->has_fatal) {
        r->has_fatal = true;
        r->fatal = *e;
    }
    if (!r->cancelled) {
        r->cancelled = true;
        for (size_t i = 0; i < r->n; i++)
            if (r->cases[i].ex)
                bd_exec_cancel(r->cases[i].ex);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void make_run_id(char out[BD_RUN_ID_MAX])
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        rnd = (uint32_t)getpid() ^ (uint32_t)clock();
    snprintf(out, BD_RUN_ID_MAX, "%04d%02d%02dT%02d%02d%02dZ-%08x", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rnd);
}

static bool run_id_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= BD_RUN_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (i > 0 && (c == '.' || c == '_' || c == '-' || c == ':'));
        if (!ok)
            return false;
    }
    return true;
}

int bd_runner_new(bd_runner **out, const bd_bench *bench, const bd_task_class *tc,
                  const char *const *case_ids, size_t n_case_ids, const bd_runner_opts *opts,
                  bd_err *err)
{
    *out = NULL;
    const char **ids = NULL;
    bd_runner *r = NULL;
    int rc = -1;
    if (!opts || !opts->python || opts->python[0] != '/')
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "the runner needs an absolute interpreter");
    if (opts->jobs < 0 || opts->jobs > 1024)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "--jobs must be between 1 and 1024");
    if (opts->run_id && !run_id_valid(opts->run_id))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "invalid run id '%s'", opts->run_id);
    size_t n = n_case_ids ? n_case_ids : tc->n_cases;
    if (n == 0) {
        bd_err_set(err, BD_E_UNKNOWN_CASE, tc->cases_dir, 0, 0,
                   "task class '%s' has no cases to run; add one with ", tc->name);
        return bd_err_advise(err, BD_ACT_CASE_NEW, "%s", tc->name);
    }
    ids = calloc(n, sizeof(*ids));
    r = calloc(1, sizeof(*r));
    if (!ids || !r) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = n_case_ids ? case_ids[i] : tc->case_ids[i];
        if (!bd_name_valid(id)) {
            bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                       "'%s' is not a valid case id (^[a-z0-9][a-z0-9._-]{0,127}$)", id);
            goto out;
        }
        /* tc->case_ids is sorted: one binary search per id (a linear scan made a
         * 100,000-case run spend minutes here before its first case). */
        if (n_case_ids && bd_task_class_case_index(tc, id) < 0) {
            char hint[192];
            bd_text_did_you_mean(hint, sizeof(hint), id, (const char *const *)tc->case_ids,
                                 tc->n_cases);
            bd_err_set(err, BD_E_UNKNOWN_CASE, NULL, 0, 0,
                       "task class '%s' has no case '%s';%s see ", tc->name, id, hint);
            bd_err_advise(err, BD_ACT_LIST_CASES, "%s", tc->name);
            goto out;
        }
        ids[i] = id;
    }
    qsort(ids, n, sizeof(*ids), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(ids[u - 1], ids[i]) != 0)
            ids[u++] = ids[i];
    n = u;

    r->bench = bench;
    r->tc = tc;
    r->cost_cap = -1.0; /* none until bd_runner_set_cost_cap */
    r->opts = *opts;
    r->opts.run_id = NULL;
    r->python = strdup(opts->python);
    r->helper = opts->helper ? strdup(opts->helper) : NULL;
    const char *tmp = opts->tmp_root;
    if (!tmp || !tmp[0])
        tmp = bd_tmp_root();
    r->tmp_root = strdup(tmp);
    bd_owner_tag(r->owner_tag);
    r->runs_dir = bd_path_join(bench->root, BD_RUNS_DIR);
    r->cases = calloc(n, sizeof(run_case));
    if (!r->python || (opts->helper && !r->helper) || !r->tmp_root || !r->runs_dir || !r->cases) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        run_case *c = &r->cases[i];
        c->r = r;
        c->index = i;
        c->id = strdup(ids[i]);
        c->case_dir_path = c->id ? bd_path_join(tc->cases_dir, c->id) : NULL;
        if (!c->id || !c->case_dir_path) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
            goto out;
        }
    }
    int jobs = opts->jobs;
    if (jobs == 0) {
        unsigned p = uv_available_parallelism();
        jobs = p ? (int)p : 1;
    }
    r->jobs = jobs;

    bd_run_summary *s = &r->summary;
    if (opts->run_id)
        snprintf(s->run_id, sizeof(s->run_id), "%s", opts->run_id);
    else
        make_run_id(s->run_id);
    snprintf(s->task_class, sizeof(s->task_class), "%s", tc->name);
    s->isolation = opts->isolation;
    s->cases_selected = n;
    *out = r;
    r = NULL;
    rc = 0;
out:
    free(ids);
    bd_runner_free(r);
    return rc;
}

int bd_runner_select(bd_runner *r, const char *const *keep, size_t n_keep, bd_err *err)
{
    if (r->prepared || r->started)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0,
                          "the runner's cases are fixed once prepared");
    /* Sorted once, then one lookup per case: a 100,000-case run selects in
     * O(n log n), not O(n × kept). */
    const char **sorted = n_keep ? malloc(n_keep * sizeof(*sorted)) : NULL;
    if (n_keep && !sorted)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    if (n_keep)
        memcpy(sorted, keep, n_keep * sizeof(*sorted));
    if (n_keep > 1)
        qsort(sorted, n_keep, sizeof(*sorted), bd_str_ptr_cmp);
    size_t u = 0;
    for (size_t i = 0; i < r->n; i++) {
        bool kept = bd_str_sorted_has(sorted, n_keep, r->cases[i].id);
        if (!kept) {
            free(r->cases[i].id);
            free(r->cases[i].case_dir_path);
            r->n_checked -= r->cases[i].checked;
            continue;
        }
        r->cases[u] = r->cases[i];
        r->cases[u].index = u;
        u++;
    }
    free(sorted);
    r->n = u;
    r->summary.cases_selected = u;
    return 0;
}

int bd_runner_subscribe(bd_runner *r, bd_run_event_fn fn, void *payload)
{
    subscriber *grown = realloc(r->subs, (r->n_subs + 1) * sizeof(*grown));
    if (!grown)
        return -1;
    r->subs = grown;
    r->subs[r->n_subs].fn = fn;
    r->subs[r->n_subs].payload = payload;
    r->n_subs++;
    return 0;
}

int bd_runner_set_recording(bd_runner *r, const bd_runner_recording *rec, bd_err *err)
{
    if (r->started) {
        if (rec->own)
            bd_history_free(rec->history);
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0,
                          "the run's history is fixed once the run started");
    }
    if (r->hist_own && r->hist != rec->history)
        bd_history_free(r->hist);
    r->hist = rec->history;
    r->hist_own = rec->own;
    r->run_full = rec->run_full;
    r->run_cases = rec->run_cases;
    r->scores_only = rec->scores_only;
    r->commit_window_ms =
        rec->commit_window_ms ? rec->commit_window_ms : BD_RUNNER_COMMIT_WINDOW_MS;
    for (size_t i = 0; i < r->n; i++)
        r->cases[i].verified =
            bd_str_sorted_has(rec->verified_ids, rec->n_verified, r->cases[i].id);
    return 0;
}

void bd_runner_set_skipped(bd_runner *r, size_t draft, size_t awaiting)
{
    r->summary.skipped_draft = draft;
    r->summary.skipped_awaiting = awaiting;
}

void bd_runner_set_cost_cap(bd_runner *r, double usd)
{
    r->cost_cap = usd;
    r->summary.has_cost_cap = usd >= 0;
    r->summary.cost_cap_usd = usd >= 0 ? usd : 0;
}

void bd_runner_set_chain_head(bd_runner *r, const char *hex)
{
    r->summary.has_chain_head = hex != NULL;
    snprintf(r->summary.chain_head, sizeof(r->summary.chain_head), "%s", hex ? hex : "");
}

static int run_case_id_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const run_case *)elem)->id);
}

/* What the run keeps of a case's check: its digest and its cassette's, which its record
 * carries and its start compares with. */
static void keep_digests(run_case *c, const bd_case_check *chk)
{
    snprintf(c->res.case_digest, sizeof(c->res.case_digest), "%s", chk->digest);
    snprintf(c->res.cassette_digest, sizeof(c->res.cassette_digest), "%s", chk->cassette);
}

void bd_runner_take_check(bd_runner *r, bd_case_check *chk)
{
    /* A passing check: its case.yaml was valid on these bytes, parsed now or when the case
     * memo's verdict was reached (loaded then NULL); the case is parsed again when it
     * starts, from the bytes it hashes against the pin. */
    if (r->prepared || r->started || chk->err.code != BD_OK)
        return;
    run_case *c = r->take_next < r->n && strcmp(r->cases[r->take_next].id, chk->case_id) == 0
                      ? &r->cases[r->take_next]
                      : bsearch(chk->case_id, r->cases, r->n, sizeof(*r->cases), run_case_id_cmp);
    if (!c)
        return;
    r->take_next = (size_t)(c - r->cases) + 1;
    keep_digests(c, chk);
    r->n_checked += !c->checked;
    c->checked = true;
}

/* bd_runner_prepare's view of the streamed check. */
typedef struct prep_sink {
    bd_runner *r;
    size_t next;    /* the run_case the next check should be (checks come in id order) */
    bool record;    /* record mode: a loadable case.yaml is enough */
    bool unmatched; /* a check named no case of the run */
    bd_err first;   /* the first failing case, in id order */
} prep_sink;

static void prep_on_case(bd_case_check *chk, void *payload)
{
    prep_sink *ps = payload;
    bd_runner *r = ps->r;
    if (r->n == 0) /* an empty shard: only the task class matters */
        return;
    size_t i = ps->next;
    if (i >= r->n || strcmp(r->cases[i].id, chk->case_id) != 0)
        for (i = 0; i < r->n && strcmp(r->cases[i].id, chk->case_id) != 0; i++)
            ;
    if (i >= r->n) {
        ps->unmatched = true;
        return;
    }
    ps->next = i + 1;
    run_case *c = &r->cases[i];
    /* Record mode: the case is about to change, so only a loadable case.yaml is needed. */
    bool failed = ps->record ? chk->loaded == NULL : chk->err.code != BD_OK;
    if (failed && ps->first.code == BD_OK) {
        ps->first = chk->err;
        if (ps->first.code == BD_OK)
            bd_err_set(&ps->first, BD_E_INTERNAL, NULL, 0, 0, "case %s did not load", c->id);
    }
    keep_digests(c, chk);
}

int bd_runner_prepare(bd_runner *r, bd_err *err)
{
    if (r->prepared)
        return 0;
    const char **ids = calloc(r->n ? r->n : 1, sizeof(*ids));
    if (!ids)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < r->n; i++)
        ids[i] = r->cases[i].id;
    /* Streamed (one window of cases alive, whatever the size of the task class): each
     * case's digests go into its run_case, the rest of the check is dropped.
     * With no case (an empty shard) the stream walks every case; they are ignored. */
    prep_sink ps = {.r = r, .record = r->opts.record_sut, .first = BD_ERR_INIT};
    bd_verify_sink sink = {.on_case = prep_on_case, .payload = &ps};
    bd_verify_report rep;
    /* Every case checked by the run gate already (the one pass over its files that its
     * signatures were checked on): the task class alone, not the cases a second time. */
    bool all_checked = r->n > 0 && r->n_checked == r->n;
    bd_verify_opts vopt = {.case_ids = ids, .n_case_ids = r->n, .no_cases = all_checked};
    int v = bd_verify(&rep, r->tc, &vopt, &sink, err);
    free(ids);
    if (v < 0) {
        bd_verify_report_release(&rep);
        return -1;
    }
    /* The task class first, then the first case in id order (as bd_verify_first_failure). */
    bd_err first = rep.tc_err.code != BD_OK ? rep.tc_err : ps.first;
    bd_verify_report_release(&rep);
    if (first.code == BD_OK && ps.unmatched)
        bd_err_set(&first, BD_E_INTERNAL, NULL, 0, 0, "a checked case is not in the run");
    if (first.code != BD_OK) {
        if (err)
            *err = first;
        return -1;
    }
    /* The rubric the run executes is exactly these bytes, read once with the registration
     * and checked, as the task-class digest, against the pin. */
    bd_tc_files tf;
    if (bd_tc_files_read(&tf, r->tc->dir, err) != 0)
        return -1;
    char dg[BD_DIGEST_BUF];
    bd_digest_task_class_files(dg, &tf);
    r->rubric = tf.rubric;
    r->rubric_len = tf.rubric_len;
    tf.rubric = NULL;
    bd_tc_files_release(&tf);
    if (!r->tc->digests || strcmp(dg, r->tc->digests->task_class) != 0) {
        bd_err_set(err, BD_E_TC_DIGEST_MISMATCH, r->tc->dir, 0, 0,
                   "registration.yaml or rubric.py changed while the run was starting (%s); "
                   "restore them or re-pin with ",
                   dg);
        return bd_err_advise(err, BD_ACT_PIN, "%s", r->tc->name);
    }
    snprintf(r->summary.task_class_digest, sizeof(r->summary.task_class_digest), "%s", dg);

    /* The SUT's environment: the scrubbed keys plus what the signed registration names
     * (docs/recording.md#secrets-only-what-the-signed-registration-names); a variable that is not
     * set stops the run before anything starts. */
    if (r->tc->reg->sut_kind == BD_SUT_COMMAND) {
        char rp[PATH_MAX];
        snprintf(rp, sizeof(rp), "%s/registration.yaml", r->tc->dir);
        if (bd_sut_env_build(&r->sut_env, r->tc->reg, rp, err) != 0)
            return -1;
    }

    /* Temp dirs of runs that were SIGKILLed go before this run makes its own. */
    (void)bd_tmp_sweep(r->tmp_root);
    if (bd_exec_ctx_new(&r->ctx, r->opts.isolation, r->helper, err) != 0)
        return -1;
    /* runner.start of the config, unless a front end chose (bd_runner_set_start). */
    if (!r->start_set) {
        bd_config cfg;
        if (bd_config_load(&cfg, r->bench->root, err) != 0)
            return -1;
        r->start = cfg.start;
        bd_config_release(&cfg);
    }
    if (bd_exec_ctx_allow(r->ctx, r->python, err) != 0)
        return -1;
    if (r->tc->reg->sut_kind == BD_SUT_COMMAND && r->tc->reg->sut_argv && r->tc->reg->sut_argv[0] &&
        bd_exec_ctx_allow(r->ctx, r->tc->reg->sut_argv[0], err) != 0)
        return -1;
    r->prepared = true;
    return 0;
}

/* ---- per case ---------------------------------------------------------------------- */

static void pump(bd_runner *r);
static void publish(run_case *rc);
static int record_work(void *payload);
static void record_done(void *payload, int status);
static void record_flush(bd_runner *r);
static void record_soon(bd_runner *r);
static void not_recorded(run_case *rc);
static void not_recorded_queue(bd_runner *r);
static void stop_run(bd_runner *r);

/* The rubric's stderr went out with the case's event (and to its file in the run's
 * directory): a run keeps no case's, or a run of many noisy rubrics would hold up to
 * 64 KiB for each. */
static void drop_stderr(run_case *rc)
{
    free(rc->stderr_buf);
    rc->stderr_buf = NULL;
    rc->res.stderr_tail = NULL;
    rc->res.stderr_len = 0;
}

/* The case's slot is free for the next case (once). */
static void free_slot(run_case *rc)
{
    bd_runner *r = rc->r;
    if (rc->slot_freed)
        return;
    rc->slot_freed = true;
    r->freed[r->freed_tail++] = rc->index;
}

/* Causal order (docs/runner.md#use-time-integrity-and-leftovers): emit the held-back `started` of
 * the cases that took `done`'s slot, now that `done` is reported (or dropped). */
static void announce_waiting(bd_runner *r, const run_case *done)
{
    if (!done->waiter)
        return;
    run_case *w = &r->cases[done->waiter - 1];
    if (w->wait_for == done->index + 1) {
        w->wait_for = 0;
        emit(r, BD_RUN_EV_CASE_STARTED, w);
    }
}

/* Removing a temp dir runs on libuv's thread pool: a rubric may leave a tree that takes
 * a minute to remove, and the loop (the TUI, the other cases, Ctrl-C) must not wait for
 * it. The run finishes only when every removal is done. */
typedef struct removal {
    uv_work_t req;
    bd_runner *r;
    char *path;
    int rc;
    bd_err err;
} removal;

static void removal_work(uv_work_t *req)
{
    removal *m = req->data;
    bd_err_clear(&m->err);
    m->rc = bd_remove_tree(m->path, &m->err);
}

static void removal_done(uv_work_t *req, int status)
{
    removal *m = req->data;
    bd_runner *r = m->r;
    (void)status;
    if (m->rc != 0)
        set_fatal(r, &m->err);
    free(m->path);
    free(m);
    r->removing--;
    pump(r);
}

/* Remove the temp dir `*path` (and free and clear it): off the loop while the run is
 * going, in place otherwise (the runner being freed). */
static void remove_temp(bd_runner *r, char **path)
{
    if (!*path)
        return;
    removal *m = r->loop && r->started && !r->finished ? calloc(1, sizeof(*m)) : NULL;
    if (m) {
        m->req.data = m;
        m->r = r;
        m->path = *path;
        if (uv_queue_work(r->loop, &m->req, removal_work, removal_done) == 0) {
            r->removing++;
            *path = NULL;
            return;
        }
        free(m);
    }
    bd_err e = BD_ERR_INIT;
    if (bd_remove_tree(*path, &e) != 0)
        set_fatal(r, &e);
    free(*path);
    *path = NULL;
}

static void case_cleanup(run_case *rc)
{
    bd_runner *r = rc->r;
    remove_temp(r, &rc->sut_tmp);
    remove_temp(r, &rc->tmp);
    cJSON_Delete(rc->harness);
    rc->harness = NULL;
    free(rc->doc);
    rc->doc = NULL;
}

static void case_drop(run_case *rc)
{
    bd_runner *r = rc->r;
    case_cleanup(rc);
    free(rc->sut_out);
    rc->sut_out = NULL;
    free_slot(rc);
    rc->state = C_DROPPED;
    r->running--;
    announce_waiting(r, rc);
}

static void persist_case_files(bd_runner *r, run_case *rc)
{
    if (!r->opts.write_files)
        return;
    bool want_err = rc->res.stderr_len > 0;
    bool want_ho = rc->sut_out != NULL;
    if (!want_err && !want_ho)
        return;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/%s", r->runs_dir, r->summary.run_id);
    bd_err e = BD_ERR_INIT;
    if (bd_mkdir_p(dir, 0700, &e) != 0) {
        set_fatal(r, &e);
        return;
    }
    char path[PATH_MAX + 160];
    if (want_err) {
        snprintf(path, sizeof(path), "%s/%s.stderr", dir, rc->id);
        if (bd_write_file_atomic(path, rc->res.stderr_tail, rc->res.stderr_len, 0600, &e) != 0)
            set_fatal(r, &e);
    }
    if (want_ho) {
        snprintf(path, sizeof(path), "%s/%s.harness_output.json", dir, rc->id);
        if (bd_write_file_atomic(path, rc->sut_out, rc->sut_out_len, 0600, &e) != 0)
            set_fatal(r, &e);
    }
}

/* The case has its score: clean up, record, publish. */
static void case_complete(run_case *rc, bd_score *score, const bd_exec_result *rubric)
{
    bd_runner *r = rc->r;
    case_cleanup(rc);
    rc->res.case_id = rc->id;
    rc->res.index = rc->index;
    rc->res.score = *score;
    memset(score, 0, sizeof(*score));
    rc->res.wall_ms = (int64_t)((uv_hrtime() - rc->t0) / 1000000u);
    bd_utc_now(rc->res.finished_at);
    if (rubric && rubric->err_len) {
        rc->stderr_buf = malloc(rubric->err_len);
        if (rc->stderr_buf) {
            memcpy(rc->stderr_buf, rubric->err, rubric->err_len);
            rc->res.stderr_tail = rc->stderr_buf;
            rc->res.stderr_len = rubric->err_len;
        }
    }
    persist_case_files(r, rc);
    if (r->opts.record_sut) {
        /* The recording: freed with the runner. */
        rc->res.sut_output = rc->sut_out;
        rc->res.sut_output_len = rc->sut_out_len;
    } else {
        free(rc->sut_out);
        rc->sut_out = NULL;
    }
    /* docs/runner.md#fan-out-events-cancel: a case is reported only once its record is in the
     * history. Appends run on the serial recording worker (an fsync never stalls the loop);
     * the cases finishing within the commit window, or while an append is in flight, are
     * appended together (group commit, record_soon). */
    free_slot(rc);
    r->running--;
    if (!r->hist) {
        publish(rc);
        return;
    }
    rc->state = C_RECORDING;
    r->recording++;
    r->rec_queue[r->rec_n++] = rc->index;
    if (r->append_failed) {
        not_recorded_queue(r);
        return;
    }
    record_soon(r);
}

/* Loop thread: every case still waiting for its record gets none (an append failed, or
 * none could be queued): case.not_recorded, never case.finished. */
static void not_recorded_queue(bd_runner *r)
{
    size_t n = r->rec_n;
    r->rec_n = 0;
    for (size_t i = 0; i < n; i++)
        not_recorded(&r->cases[r->rec_queue[i]]);
}

/* A finished case without a record: reported as such, not counted in the scores. */
static void not_recorded(run_case *rc)
{
    bd_runner *r = rc->r;
    r->recording--;
    rc->state = C_DROPPED;
    r->summary.not_recorded++;
    if (rc->wait_for) {
        rc->wait_for = 0;
        emit(r, BD_RUN_EV_CASE_STARTED, rc);
    }
    emit(r, BD_RUN_EV_CASE_NOT_RECORDED, rc);
    drop_stderr(rc);
    announce_waiting(r, rc);
}

/* Group commit (docs/runner.md#fan-out-events-cancel): a finished case's record waits up
 * to the commit window (r->commit_window_ms) for others to share its append and its
 * fsync, unless COMMIT_BATCH records are waiting or no other case is still to finish. An
 * fsync a case cost about 5 % of a warm run's CPU; the wait delays a case's report, never
 * the next case. */
#define COMMIT_BATCH 64

static void commit_due(uv_timer_t *t)
{
    bd_runner *r = t->data;
    r->commit_armed = false;
    record_flush(r);
}

/* The window's timer is closed with the recorder, so the run's loop can end. */
static void close_commit_timer(bd_runner *r)
{
    if (!r->commit_timer)
        return;
    uv_close((uv_handle_t *)r->commit_timer, (uv_close_cb)free);
    r->commit_timer = NULL;
    r->commit_armed = false;
}

/* At the run's start, when it records: the window's timer (none when it cannot be made:
 * each record then goes at once, as before the window). */
static void open_commit_timer(bd_runner *r)
{
    r->commit_timer = malloc(sizeof(*r->commit_timer));
    if (r->commit_timer && uv_timer_init(r->loop, r->commit_timer) != 0) {
        free(r->commit_timer);
        r->commit_timer = NULL;
    }
    if (r->commit_timer)
        r->commit_timer->data = r;
}

/* Loop thread: the queued records go to the worker now, or when the window closes. */
static void record_soon(bd_runner *r)
{
    if (r->rec_n == 0)
        return;
    bool more = r->running > 0 || (r->next < r->n && !r->cancelled);
    if (r->rec_n < COMMIT_BATCH && more && !r->inflight && r->commit_timer &&
        (r->commit_armed ||
         uv_timer_start(r->commit_timer, commit_due, r->commit_window_ms, 0) == 0)) {
        r->commit_armed = true;
        return;
    }
    record_flush(r);
}

/* Loop thread: when no append is in flight, send every queued record to the worker as
 * one batch. */
static void record_flush(bd_runner *r)
{
    if (r->commit_armed) {
        uv_timer_stop(r->commit_timer);
        r->commit_armed = false;
    }
    if (r->inflight || r->rec_n == 0 || r->append_failed)
        return;
    bd_err e = BD_ERR_INIT;
    rec_batch *b = calloc(1, sizeof(*b));
    if (b)
        b->cases = calloc(r->rec_n, sizeof(*b->cases));
    if (!r->recorder && b && b->cases)
        (void)bd_serial_new(&r->recorder, r->loop, &e);
    if (b && b->cases && r->recorder) {
        b->r = r;
        b->n = r->rec_n;
        for (size_t i = 0; i < b->n; i++)
            b->cases[i] = &r->cases[r->rec_queue[i]];
        if (bd_serial_submit(r->recorder, record_work, record_done, b) == 0) {
            r->rec_n = 0;
            r->inflight = b;
            return;
        }
    }
    if (b)
        free(b->cases);
    free(b);
    if (!e.code)
        bd_err_set(&e, BD_E_NOMEM, NULL, 0, 0, "out of memory queueing a history append");
    r->append_failed = true;
    set_fatal(r, &e);
    not_recorded_queue(r);
}

/* Worker thread: append the batch's records together (one write, one fsync). Reads only
 * what no one writes during the run (the summary's run id, task class, digest, class;
 * the cases' results) and writes only the batch's results. */
static int record_work(void *payload)
{
    rec_batch *b = payload;
    bd_runner *r = b->r;
    const bd_run_summary *s = &r->summary;
    bd_err_clear(&b->err);
    bd_history_score_fields *f = calloc(b->n, sizeof(*f));
    const bd_score **sc = calloc(b->n, sizeof(*sc));
    char(*hashes)[BD_HASH_BUF] = calloc(b->n, sizeof(*hashes));
    int rc = -1;
    if (!f || !sc || !hashes) {
        bd_err_set(&b->err, BD_E_NOMEM, NULL, 0, 0, "out of memory appending to the history");
        goto out;
    }
    for (size_t i = 0; i < b->n; i++) {
        const run_case *c = b->cases[i];
        const bd_case_result *res = &c->res;
        f[i].run_id = s->run_id;
        f[i].run_full = r->run_full;
        f[i].run_cases = r->run_cases;
        f[i].task_class = s->task_class;
        f[i].case_id = res->case_id;
        f[i].case_digest = res->case_digest;
        f[i].task_class_digest = s->task_class_digest;
        f[i].cassette_digest = res->cassette_digest[0] ? res->cassette_digest : NULL;
        f[i].isolation_class = bd_isolation_str(s->isolation);
        f[i].provenance_verified = c->verified;
        f[i].operator_fingerprint = r->op_set ? r->op_key.fingerprint : NULL;
        f[i].started_at = res->started_at;
        f[i].finished_at = res->finished_at;
        sc[i] = &res->score;
    }
    uint64_t first = 0;
    if (bd_history_append_batch(r->hist, f, sc, b->n, &first, hashes, &b->err) != 0)
        goto out;
    for (size_t i = 0; i < b->n; i++) {
        bd_case_result *res = &b->cases[i]->res;
        snprintf(res->record_hash, sizeof(res->record_hash), "%s", hashes[i]);
        res->record_seq = first + i;
        res->provenance_verified = f[i].provenance_verified;
    }
    rc = 0;
out:
    free(f);
    free(sc);
    free(hashes);
    return rc;
}

/* Loop thread: the batch is durable (publish its cases, in the order they finished) or
 * its append failed (stop the run; nothing of it, nor anything queued behind it, is
 * reported as finished). */
static void record_done(void *payload, int status)
{
    rec_batch *b = payload;
    bd_runner *r = b->r;
    r->inflight = NULL;
    if (status != 0) {
        r->append_failed = true;
        set_fatal(r, &b->err);
        for (size_t i = 0; i < b->n; i++)
            not_recorded(b->cases[i]);
        not_recorded_queue(r);
    } else {
        r->summary.appends++;
        r->summary.records += b->n;
        for (size_t i = 0; i < b->n; i++) {
            if (!r->op_first_seq)
                r->op_first_seq = b->cases[i]->res.record_seq;
            memcpy(r->op_last_hash, b->cases[i]->res.record_hash, BD_HASH_BUF);
            r->recording--;
            bd_runner_set_chain_head(r, b->cases[i]->res.record_hash);
            publish(b->cases[i]);
        }
        record_soon(r);
    }
    free(b->cases);
    free(b);
    pump(r);
}

/* The case is done (and recorded, when there is a recorder): count it, report it. */
static void publish(run_case *rc)
{
    bd_runner *r = rc->r;
    rc->state = C_DONE;
    r->done++;
    r->results[r->n_results++] = &rc->res;
    /* Keep results in id order for the summary and readers. */
    for (size_t i = r->n_results - 1; i > 0 && r->results[i - 1]->index > r->results[i]->index;
         i--) {
        bd_case_result *t = r->results[i - 1];
        r->results[i - 1] = r->results[i];
        r->results[i] = t;
    }
    r->summary.cases = r->n_results;
    r->summary.cost_usd += rc->res.score.cost_usd; /* live; the tally sums it again */
    if (rc->res.score.passed)
        r->summary.passed++;
    else
        r->summary.failed++;
    if (rc->wait_for) {
        rc->wait_for = 0;
        emit(r, BD_RUN_EV_CASE_STARTED, rc);
    }
    emit(r, BD_RUN_EV_CASE_FINISHED, rc);
    drop_stderr(rc);
    announce_waiting(r, rc);
}

static void case_fail(run_case *rc, bd_harness_mode mode, const char *detail, int64_t wall_ms)
{
    bd_score s;
    if (bd_score_harness_failure(&s, mode, detail, wall_ms) != 0) {
        bd_err e = BD_ERR_INIT;
        bd_err_set(&e, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        set_fatal(rc->r, &e);
        case_drop(rc);
        return;
    }
    case_complete(rc, &s, NULL);
}

static void rubric_done(bd_exec_result *res, void *payload);

static void sut_done(bd_exec_result *res, void *payload);

/* What the layout needs of a case. */
static bd_layout_case layout_case(const run_case *rc)
{
    bd_layout_case lc = {.id = rc->id,
                         .dir = rc->case_dir_path,
                         .digest = rc->res.case_digest,
                         .cassette_digest = rc->res.cassette_digest};
    return lc;
}

/* Lay out the rubric's cwd and build its stdin document (rc->tmp, rc->doc, rc->lim).
 * Returns -1 (err set) on an environment or integrity failure. */
static int prepare_rubric(run_case *rc, bd_err *err)
{
    bd_layout_case lc = layout_case(rc);
    return bd_layout_rubric(&rc->r->layout, &lc, rc->harness, &rc->tmp, &rc->doc, &rc->doc_len,
                            &rc->lim, err);
}

/* Start the rubric of a prepared case. */
static int launch_rubric(run_case *rc, bd_err *err)
{
    bd_runner *r = rc->r;
    const char *argv[] = {r->python, "-s", "rubric.py", NULL};
    bd_exec_spec spec = {argv, rc->tmp, rc->doc, rc->doc_len, rc->lim, NULL, false};
    rc->in_sut = false;
    int rc_ = bd_exec_start(&rc->ex, r->loop, r->ctx, &spec, rubric_done, rc, err);
    free(rc->doc); /* the exec keeps its own copy */
    rc->doc = NULL;
    return rc_;
}

static int start_rubric(run_case *rc, bd_err *err)
{
    if (!rc->doc && prepare_rubric(rc, err) != 0)
        return -1;
    return launch_rubric(rc, err);
}

static int start_sut(run_case *rc, bd_err *err)
{
    bd_runner *r = rc->r;
    const bd_registration *reg = r->tc->reg;
    int rc_ = -1;
    char *text = NULL;
    size_t len = 0;
    bd_layout_case lc = layout_case(rc);
    if (bd_layout_sut(&r->layout, &lc, &rc->sut_tmp, &text, &len, err) != 0)
        goto out;
    bd_exec_limits lim = BD_EXEC_LIMITS_INIT;
    int wall = reg->sut_wall_clock_s > 0 ? reg->sut_wall_clock_s : 120;
    if (wall > BD_RUBRIC_MAX_WALL_S)
        wall = BD_RUBRIC_MAX_WALL_S;
    lim.wall_ms = (int64_t)wall * 1000;
    lim.cpu_s = (uint64_t)wall;
    lim.as_bytes = (uint64_t)BD_RUBRIC_MAX_MEMORY_MB * 1024 * 1024;
    /* The SUT alone gets env_pass and, when recording with consent, the network. */
    bd_exec_spec spec = {(const char *const *)reg->sut_argv,
                         rc->sut_tmp,
                         text,
                         len,
                         lim,
                         (const char *const *)r->sut_env,
                         r->opts.sut_host_network};
    rc->in_sut = true;
    if (bd_exec_start(&rc->ex, r->loop, r->ctx, &spec, sut_done, rc, err) != 0)
        goto out;
    rc_ = 0;
out:
    free(text);
    return rc_;
}

/* The start of both exec callbacks: the exec is over; after a cancel the result is
 * dropped with the case. Returns true when it was (nothing more to do). */
static bool exec_done_cancelled(run_case *rc, bd_exec_result *res)
{
    bd_runner *r = rc->r;
    rc->ex = NULL;
    if (!r->cancelled)
        return false;
    bd_exec_result_delete(res);
    case_drop(rc);
    pump(r);
    return true;
}

static void sut_done(bd_exec_result *res, void *payload)
{
    run_case *rc = payload;
    bd_runner *r = rc->r;
    if (exec_done_cancelled(rc, res))
        return;
    char detail[BD_SCORE_DETAIL_MAX];
    bd_harness_mode mode = bd_runner_classify_sut(res, detail);
    if (mode == BD_HM_NONE) {
        rc->harness = bd_layout_parse_json(res->out, res->out_len, detail, "the SUT's stdout");
        if (!rc->harness)
            mode = BD_HM_SUT_MALFORMED;
    }
    if (mode == BD_HM_NONE) {
        rc->sut_out = res->out;
        rc->sut_out_len = res->out_len;
        res->out = NULL;
    }
    int64_t wall = res->wall_ms;
    bd_exec_result_delete(res);
    bd_err e = BD_ERR_INIT;
    remove_temp(r, &rc->sut_tmp);
    if (mode != BD_HM_NONE) {
        case_fail(rc, mode, detail, wall);
    } else if (r->opts.record_sut && !r->has_fatal) {
        bd_score none;
        memset(&none, 0, sizeof(none));
        none.passed = true; /* the SUT answered; nothing was scored */
        case_complete(rc, &none, NULL);
    } else if (r->has_fatal) {
        case_drop(rc);
    } else if (start_rubric(rc, &e) != 0) {
        set_fatal(r, &e);
        case_drop(rc);
    }
    pump(r);
}

/* Count a finished case's cost against the cap (docs/runner.md#the-cost-cap); once the sum
 * reaches it (to a nano-dollar: a sum of costs carries rounding noise), stop the run as
 * bd_runner_cancel does. */
static void cap_count(bd_runner *r, double cost_usd)
{
    if (r->cost_cap < 0 || r->opts.record_sut || r->capped)
        return;
    r->spent += cost_usd;
    if (r->spent + 1e-9 >= r->cost_cap) {
        r->capped = true;
        stop_run(r);
    }
}

static void rubric_done(bd_exec_result *res, void *payload)
{
    run_case *rc = payload;
    bd_runner *r = rc->r;
    if (exec_done_cancelled(rc, res))
        return;
    if (!res->started) {
        bd_err e = BD_ERR_INIT;
        bd_err_set(&e, BD_E_SPAWN, NULL, 0, 0, "cannot start the rubric with %s: %s", r->python,
                   res->setup_error[0] ? res->setup_error : "unknown reason");
        bd_exec_result_delete(res);
        set_fatal(r, &e);
        case_drop(rc);
        pump(r);
        return;
    }
    char detail[BD_SCORE_DETAIL_MAX];
    bd_harness_mode mode = bd_runner_classify(res, &rc->lim, detail);
    bd_score s;
    memset(&s, 0, sizeof(s));
    if (mode == BD_HM_NONE) {
        mode = bd_score_parse(&s, res->out, res->out_len, r->tc->reg, detail);
        if (mode == BD_HM_NONE)
            s.wall_clock_ms = res->wall_ms; /* the runner's measurement, never the rubric's */
    }
    if (mode != BD_HM_NONE && bd_score_harness_failure(&s, mode, detail, res->wall_ms) != 0) {
        bd_err e = BD_ERR_INIT;
        bd_err_set(&e, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        bd_exec_result_delete(res);
        set_fatal(r, &e);
        case_drop(rc);
        pump(r);
        return;
    }
    /* The cap first: a case that reaches it starts no other. */
    cap_count(r, s.cost_usd);
    /* Refill the slot first: the next rubric starts while this case is cleaned up,
     * recorded and published. */
    free_slot(rc);
    r->finishing++;
    pump(r);
    r->finishing--;
    case_complete(rc, &s, res);
    bd_exec_result_delete(res);
    pump(r);
}

/* Read the cassette: the bytes replayed are the bytes whose digest matches the pin.
 * Returns 1 with rc->harness set, 0 when it is not one JSON value (detail set: the case
 * fails with sut.malformed_output), -1 on an environment or integrity failure (err). */
static int load_cassette(run_case *rc, char detail[BD_SCORE_DETAIL_MAX], bd_err *err)
{
    if (rc->harness)
        return 1;
    bd_layout_case lc = layout_case(rc);
    return bd_layout_cassette(&lc, &rc->harness, detail, err);
}

/* Read ahead (docs/runner.md#cases-read-ahead): the files of the cases about to start are
 * asked into the page cache on libuv's thread pool, READ_AHEAD_CASES at a time and up to
 * READ_AHEAD_LEAD cases past the next to start, so that preparing a case on the loop does
 * not wait for the disk when the machine has paged the bench out. Only a hint: each case
 * is still read, hashed and checked when it is prepared. */
#define READ_AHEAD_CASES 64
#define READ_AHEAD_LEAD  256
#define READ_AHEAD_DEPTH 8 /* subdirectories below a case's directory */

typedef struct read_ahead_req {
    uv_work_t req;
    bd_runner *r;
    size_t from, to;
} read_ahead_req;

/* Thread pool: reads only the cases' directory paths, set before the run and freed only
 * with the runner (which waits for this request first). */
static void read_ahead_work(uv_work_t *req)
{
    read_ahead_req *a = req->data;
    for (size_t i = a->from; i < a->to; i++)
        if (a->r->cases[i].case_dir_path)
            bd_read_ahead_tree(a->r->cases[i].case_dir_path, READ_AHEAD_DEPTH);
}

static void read_ahead_done(uv_work_t *req, int status)
{
    read_ahead_req *a = req->data;
    bd_runner *r = a->r;
    (void)status;
    free(a);
    r->reading_ahead = false;
    pump(r);
}

static void read_ahead(bd_runner *r)
{
    if (r->reading_ahead || r->cancelled || !r->loop)
        return;
    size_t from = r->read_ahead_to > r->next ? r->read_ahead_to : r->next;
    if (from >= r->n || from >= r->next + READ_AHEAD_LEAD)
        return;
    read_ahead_req *a = calloc(1, sizeof(*a));
    if (!a)
        return; /* no hint: the cases are read when they are prepared, as always */
    a->req.data = a;
    a->r = r;
    a->from = from;
    a->to = from + READ_AHEAD_CASES < r->n ? from + READ_AHEAD_CASES : r->n;
    if (uv_queue_work(r->loop, &a->req, read_ahead_work, read_ahead_done) != 0) {
        free(a);
        return;
    }
    r->reading_ahead = true;
    r->read_ahead_to = a->to;
}

/* Prepare the next queued cases (temp dir, copies, document) while others run, so a
 * finished case's slot is refilled at once. Cassette cases only; errors are left for
 * the case's own start to report. */
static void prefetch(bd_runner *r)
{
    if (r->cancelled || r->tc->reg->sut_kind != BD_SUT_CASSETTE)
        return;
    for (size_t i = r->next; i < r->n && i < r->next + (size_t)r->jobs; i++) {
        run_case *rc = &r->cases[i];
        if (rc->doc)
            continue;
        char detail[BD_SCORE_DETAIL_MAX];
        bd_err e = BD_ERR_INIT;
        if (load_cassette(rc, detail, &e) != 1)
            return;
        if (prepare_rubric(rc, &e) != 0) {
            case_cleanup(rc);
            return;
        }
    }
}

/* Start case `rc`. Never calls pump. */
static void start_case(run_case *rc)
{
    bd_runner *r = rc->r;
    bd_err e = BD_ERR_INIT;
    rc->state = C_RUNNING;
    r->running++;
    rc->t0 = uv_hrtime();
    bd_utc_now(rc->res.started_at);
    /* Causal order (docs/runner.md#use-time-integrity-and-leftovers): a case that takes the slot of
     * a case not yet reported (its program ended; it is being cleaned up or recorded) is announced
     * after that case's `finished`, though its own program may already be running. */
    if (r->freed_head < r->freed_tail) {
        run_case *prev = &r->cases[r->freed[r->freed_head++]];
        if (prev->state != C_DONE && prev->state != C_DROPPED) {
            rc->wait_for = prev->index + 1;
            prev->waiter = rc->index + 1;
        }
    }
    if (!rc->wait_for)
        emit(r, BD_RUN_EV_CASE_STARTED, rc);

    if (r->tc->reg->sut_kind == BD_SUT_COMMAND) {
        if (start_sut(rc, &e) != 0) {
            set_fatal(r, &e);
            case_drop(rc);
        }
        return;
    }
    char detail[BD_SCORE_DETAIL_MAX];
    int c = load_cassette(rc, detail, &e);
    if (c == 0) {
        case_fail(rc, BD_HM_SUT_MALFORMED, detail, 0);
        return;
    }
    if (c < 0 || start_rubric(rc, &e) != 0) {
        set_fatal(r, &e);
        case_drop(rc);
    }
}

/* A run the cost cap stopped: the cases without a result, in id order. */
static void cap_summary(bd_runner *r)
{
    bd_run_summary *s = &r->summary;
    s->stopped_cost_cap = false;
    if (!r->capped || r->n_results == r->n || !(s->not_run = calloc(r->n, sizeof(char *))))
        return;
    for (size_t i = 0; i < r->n; i++)
        if (!r->cases[i].res.finished_at[0])
            s->not_run[s->n_not_run++] = r->cases[i].id;
    s->stopped_cost_cap = s->n_not_run > 0;
}

/* Cancelled: by bd_runner_cancel or an abort; a stop at the cost cap is not. */
static bool run_cancelled(const bd_runner *r)
{
    return r->cancelled && (!r->capped || r->cancel_asked || r->has_fatal);
}

static void compute_summary(bd_runner *r)
{
    bd_run_summary *s = &r->summary;
    s->wall_ms = (int64_t)((uv_hrtime() - r->t0) / 1000000u);
    bd_utc_now(s->finished_at);
    s->cancelled = run_cancelled(r);
    bd_run_summary_tally(s, (const bd_case_result *const *)r->results, r->n_results);
    cap_summary(r);
}

static void write_summary(bd_runner *r)
{
    if (!r->opts.write_files)
        return;
    bd_err e = BD_ERR_INIT;
    if (bd_run_summary_write(&r->summary, r->runs_dir, (const bd_case_result *const *)r->results,
                             r->n_results, &e) != 0)
        set_fatal(r, &e);
}

/* The cost cap stopped the run: say so in the history, after its last record, so what
 * reads the chain (reports, `history log`) knows. Never for a run that recorded nothing. */
static void record_stop(bd_runner *r)
{
    const bd_run_summary *s = &r->summary;
    if (!s->stopped_cost_cap || !r->hist || r->scores_only || r->append_failed || !s->records)
        return;
    bd_err e = BD_ERR_INIT;
    uint64_t seq = 0;
    char hash[BD_HASH_BUF];
    if (bd_run_stop_append(r->hist, s, &seq, hash, &e) != 0)
        set_fatal(r, &e);
    else
        bd_runner_set_chain_head(r, hash);
}

/* The operator's signature over what the run recorded (runsign.h); nothing when it
 * recorded nothing. A failure is the run's error: its records stay unsigned claims. */
static void sign_run(bd_runner *r)
{
    if (!r->op_set || !r->hist || r->summary.records == 0)
        return;
    bd_err e = BD_ERR_INIT;
    uint64_t seq = 0;
    if (bd_run_operator_sign(r->hist, &r->op_key, NULL, r->summary.task_class, r->summary.run_id,
                             r->summary.records, r->op_first_seq, r->op_last_hash, &seq, &e) != 0) {
        set_fatal(r, &e);
        return;
    }
    r->summary.signed_seq = seq;
}

void bd_runner_set_operator(bd_runner *r, const bd_sign_key *key)
{
    r->op_set = key != NULL;
    if (key) {
        r->op_key = *key;
        memcpy(r->summary.operator_fingerprint, key->fingerprint, BD_FPR_LEN + 1);
    }
}

static void finish_run(bd_runner *r)
{
    if (r->finished)
        return;
    r->finished = true;
    /* Every record is in (recording == 0): the worker has nothing left. */
    bd_serial_close(r->recorder);
    r->recorder = NULL;
    close_commit_timer(r);
    sign_run(r);
    compute_summary(r);
    record_stop(r);
    write_summary(r);
    r->summary.cancelled = run_cancelled(r);
    emit(r, BD_RUN_EV_FINISHED, NULL);
}

static void pump(bd_runner *r)
{
    if (r->finished)
        return;
    while (!r->cancelled && r->running - r->finishing < (size_t)r->jobs && r->next < r->n)
        start_case(&r->cases[r->next++]);
    read_ahead(r);
    if (r->finishing)
        return; /* the finished case completes (and calls pump) next */
    if (r->running == 0 && r->recording == 0 && (r->cancelled || r->next >= r->n)) {
        /* Cases prepared ahead but never started leave nothing behind either. */
        for (size_t i = r->next; i < r->n; i++)
            case_cleanup(&r->cases[i]);
        if (r->removing || r->reading_ahead)
            return; /* the last removal, or the read ahead, calls pump again */
        finish_run(r);
        return;
    }
    prefetch(r);
}

void bd_runner_set_start(bd_runner *r, bd_start_mode mode)
{
    r->start = mode;
    r->start_set = true;
}

/* Warm or cold (docs/runner.md, "Warm starts"): the summary says which, and why cold. */
static void start_mode(bd_runner *r)
{
    bd_warm_req req = {.mode = r->start,
                       .isolation = r->opts.isolation,
                       .python = r->python,
                       .sut_command = r->tc->reg->sut_kind == BD_SUT_COMMAND,
                       .jobs = (size_t)r->jobs < r->n ? r->jobs : (int)r->n,
                       .tmp_root = r->tmp_root,
                       .owner_tag = r->owner_tag};
    bool warm =
        !r->opts.record_sut && bd_warm_start_try(r->ctx, &req, &r->staging, r->summary.start_why,
                                                 sizeof(r->summary.start_why));
    snprintf(r->summary.start, sizeof(r->summary.start), "%s", warm ? "warm" : "cold");
}

int bd_runner_start(bd_runner *r, uv_loop_t *loop, bd_err *err)
{
    if (!r->prepared)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "bd_runner_start before prepare");
    if (r->started)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "the run was already started");
    r->results = calloc(r->n, sizeof(*r->results));
    r->freed = calloc(r->n ? r->n : 1, sizeof(*r->freed));
    r->rec_queue = calloc(r->n ? r->n : 1, sizeof(*r->rec_queue));
    if (!r->results || !r->freed || !r->rec_queue)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    r->loop = loop;
    if (r->hist)
        open_commit_timer(r);
    start_mode(r);
    r->layout = (bd_layout){.dir = r->staging ? r->staging : r->tmp_root,
                            .staged = r->staging != NULL,
                            .owner_tag = r->owner_tag,
                            .rubric = r->rubric,
                            .rubric_len = r->rubric_len,
                            .reg = r->tc->reg,
                            .unpinned = r->opts.record_sut};
    r->started = true;
    r->t0 = uv_hrtime();
    bd_utc_now(r->summary.started_at);
    emit(r, BD_RUN_EV_STARTED, NULL);
    for (size_t i = 0; i < r->n; i++)
        emit(r, BD_RUN_EV_CASE_QUEUED, &r->cases[i]);
    cap_count(r, 0.0); /* a cap of 0 starts no case */
    pump(r);
    return 0;
}

/* Start no more cases and kill the running ones (their results are dropped). */
static void stop_run(bd_runner *r)
{
    r->cancelled = true;
    for (size_t i = 0; i < r->n; i++)
        if (r->cases[i].ex)
            bd_exec_cancel(r->cases[i].ex);
    if (r->started)
        pump(r);
}

void bd_runner_cancel(bd_runner *r)
{
    if (!r || r->finished)
        return;
    r->cancel_asked = true;
    stop_run(r);
}

bool bd_runner_finished(const bd_runner *r)
{
    return r->finished;
}

int bd_runner_run(bd_runner *r, bd_err *err)
{
    if (bd_runner_prepare(r, err) != 0)
        return -1;
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "cannot create an event loop");
    int rc = bd_runner_start(r, &loop, err);
    if (rc == 0)
        uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    if (rc == 0 && r->has_fatal) {
        if (err)
            *err = r->fatal;
        rc = -1;
    }
    return rc;
}

const bd_err *bd_runner_error(const bd_runner *r)
{
    return r->has_fatal ? &r->fatal : NULL;
}

const bd_run_summary *bd_runner_summary(const bd_runner *r)
{
    return &r->summary;
}

const bd_case_result *const *bd_runner_results(const bd_runner *r, size_t *n)
{
    *n = r->n_results;
    return (const bd_case_result *const *)r->results;
}

void bd_runner_free(bd_runner *r)
{
    if (!r)
        return;
    /* Freed mid-run (a front end giving up): cancel and drain the running cases on the
     * loop first, so no process, temp dir or callback outlives the runner. */
    if (r->started && !r->finished && r->loop) {
        bd_runner_cancel(r);
        while (r->running > 0 || r->recording > 0 || r->removing > 0 || r->reading_ahead)
            uv_run(r->loop, UV_RUN_ONCE);
    }
    for (size_t i = 0; i < r->n; i++) {
        run_case *c = &r->cases[i];
        if (c->ex)
            bd_exec_cancel(c->ex);
        case_cleanup(c);
        bd_score_free(&c->res.score);
        free(c->stderr_buf);
        free(c->sut_out);
        free(c->case_dir_path);
        free(c->id);
    }
    bd_serial_close(r->recorder);
    close_commit_timer(r);
    free(r->cases);
    free(r->results);
    free(r->freed);
    free(r->rec_queue);
    free(r->subs);
    if (r->hist_own)
        bd_history_free(r->hist);
    bd_run_summary_release(&r->summary);
    bd_sut_env_free(r->sut_env);
    bd_exec_ctx_free(r->ctx);
    if (r->staging) {
        /* Its case dirs are gone (or left to the next sweep with it). */
        bd_err e = BD_ERR_INIT;
        (void)bd_remove_tree(r->staging, &e);
        free(r->staging);
    }
    free(r->rubric);
    free(r->python);
    free(r->helper);
    free(r->tmp_root);
    free(r->runs_dir);
    free(r);
}

void bd_run_id_new(char out[BD_RUN_ID_MAX])
{
    make_run_id(out);
}
