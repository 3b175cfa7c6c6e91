/*
 * model.c — the bench as the TUI sees it, loaded lazily on libuv's thread pool (see
 * model.h for the order). Pool jobs read only what they own or a reference-counted,
 * immutable bd_task_class; they hand their results to the loop thread, which merges.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err_keys.h"
#include "model.h"
#include "runs_model.h"
#include "stale.h"

/* Which kind of pool job: a task class's load; its own pin and signatures (once per
 * load); the case.yaml of a chunk near the cursor (metadata only, cheap); a chunk of
 * cases checked (each case read once: digest, signatures, and the case.yaml parsed from
 * the bytes hashed, which fills the metadata of rows that have none yet). */
typedef enum { JOB_TC_LOAD, JOB_TC_CHECK, JOB_META, JOB_DIGEST } job_kind;

typedef struct meta_result {
    bd_load_state state;
    uint8_t disposition, difficulty, prov;
    char *title;
    bd_code code;
    char *msg;
} meta_result;

typedef struct digest_result {
    meta_result meta; /* from the case.yaml the check parsed */
    bd_code code;
    char *msg;
    char digest[BD_DIGEST_BUF];
    uint8_t prov_check; /* bd_load_state */
    uint8_t prov_status;
    bd_code prov_code;
} digest_result;

typedef struct model_job {
    bd_work work;
    bd_model *model;
    unsigned gen;
    job_kind kind;
    size_t tc_index;
    /* JOB_TC_LOAD */
    char *bench_dir;
    char *name;
    unsigned slow_ms; /* BENCHDESK_MODEL_SLOW_MS (tests) */
    bd_task_class *loaded;
    bd_err err;
    /* JOB_META / JOB_DIGEST: cases [lo, hi) of ref->tc */
    bd_tc_ref *ref;
    bd_prov_ctx *prov; /* shared, thread-safe; NULL: no verification */
    size_t lo, hi;
    meta_result *metas;
    digest_result *digests;
    /* JOB_TC_CHECK */
    bd_code tc_pin_code;
    uint8_t tc_prov_check;  /* bd_load_state */
    uint8_t tc_prov_status; /* bd_prov_status */
    bd_code tc_prov_code;
    bool failed; /* out of memory: the chunk is retried later */
} model_job;

/* Per-model scheduling state that views never read. */
typedef struct model_priv {
    unsigned gen; /* bumped by reload: results of older jobs are dropped */
    size_t prio_tc;
    uint8_t **meta_chunks;   /* per tc: 0 todo, 1 queued, 2 done */
    uint8_t **digest_chunks; /* per tc */
    uint8_t *tc_check;       /* per tc: its own pin and signatures, 0 todo, 1 queued, 2 done */
    bool *tc_queued;
    bool hold_digests; /* BENCHDESK_MODEL_HOLD=digests|all: no JOB_DIGEST is started (tests) */
    bool hold_meta;    /* BENCHDESK_MODEL_HOLD=all: no JOB_META either */
    unsigned slow_ms;  /* BENCHDESK_MODEL_SLOW_MS: each task-class load takes this long (tests) */
    bd_model_reads reads;
} model_priv;

_Static_assert(BD_MODEL_DIGEST_CHUNK % BD_MODEL_META_CHUNK == 0,
               "a metadata chunk lies inside one chunk of checks");

static model_priv *priv_of(bd_model *m)
{
    return (model_priv *)(m + 1);
}

static void pump(bd_model *m);

static void ref_drop(bd_tc_ref *r)
{
    if (r && --r->refs == 0) {
        bd_task_class_free(r->tc);
        free(r);
    }
}

static void case_release(bd_ui_case *c)
{
    free(c->id);
    free(c->title);
    free(c->digest_msg);
    free(c->last_fm);
}

static void tc_release(bd_ui_tc *t)
{
    for (size_t i = 0; i < t->n_cases; i++)
        case_release(&t->cases[i]);
    free(t->cases);
    free(t->name);
    ref_drop(t->ref);
    memset(t, 0, sizeof(*t));
}

static size_t n_chunks(size_t n, size_t chunk)
{
    return (n + chunk - 1) / chunk;
}

static void release_all(bd_model *m)
{
    model_priv *p = priv_of(m);
    for (size_t i = 0; i < m->n_tcs; i++) {
        tc_release(&m->tcs[i]);
        if (p->meta_chunks)
            free(p->meta_chunks[i]);
        if (p->digest_chunks)
            free(p->digest_chunks[i]);
    }
    free(m->tcs);
    free(p->meta_chunks);
    free(p->digest_chunks);
    free(p->tc_check);
    free(p->tc_queued);
    m->tcs = NULL;
    m->n_tcs = 0;
    p->meta_chunks = p->digest_chunks = NULL;
    p->tc_check = NULL;
    p->tc_queued = NULL;
}

static int build(bd_model *m, bd_err *err)
{
    model_priv *p = priv_of(m);
    const bd_bench *b = m->app->bench;
    size_t n = b->n_task_classes;
    m->tcs = calloc(n ? n : 1, sizeof(*m->tcs));
    p->meta_chunks = calloc(n ? n : 1, sizeof(*p->meta_chunks));
    p->digest_chunks = calloc(n ? n : 1, sizeof(*p->digest_chunks));
    p->tc_check = calloc(n ? n : 1, sizeof(*p->tc_check));
    p->tc_queued = calloc(n ? n : 1, sizeof(*p->tc_queued));
    if (!m->tcs || !p->meta_chunks || !p->digest_chunks || !p->tc_check || !p->tc_queued)
        goto oom;
    m->n_tcs = n;
    for (size_t i = 0; i < n; i++) {
        if (!(m->tcs[i].name = strdup(b->task_classes[i])))
            goto oom;
        m->tcs[i].prio_case = SIZE_MAX;
    }
    p->prio_tc = SIZE_MAX;
    return 0;
oom:
    release_all(m);
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building the bench view");
}

/* ---- what the history says, copied into the rows ------------------------------------ */

/* LAST RUN and trend of task class row `ti` (runs_model.h). */
static void apply_runs(bd_model *m, size_t ti)
{
    bd_ui_tc *t = &m->tcs[ti];
    const bd_tc_runs *r = bd_runs_model_get(m->runs, t->name);
    t->has_last_run = r && r->has_full;
    t->last_mean = r ? r->mean : 0;
    t->last_pass_rate = r ? r->pass_rate : 0;
    t->last_run_cases = r ? r->cases : 0;
    bool utf8 = (unsigned char)bd_gl->hline[0] >= 0x80;
    snprintf(t->last_partial, sizeof(t->last_partial), "%s", r ? r->partial : "");
    snprintf(t->trend, sizeof(t->trend), "%s", !r ? "" : utf8 ? r->trend_utf8 : r->trend_ascii);
}

/* The newest score of each case of task class row `ti` (history_model.h), with its stale
 * mark against today's pins, then its LAST RUN. */
static void apply_history(bd_model *m, size_t ti)
{
    if (ti >= m->n_tcs)
        return;
    bd_ui_tc *t = &m->tcs[ti];
    if (t->state != BD_LOAD_DONE)
        return;
    size_t n = 0;
    const bd_last_score *last = bd_history_model_scores(m->history, &n);
    for (size_t i = 0; i < n; i++) {
        const bd_last_score *e = &last[i];
        if (!e->tc || strcmp(e->tc, t->name) != 0)
            continue;
        size_t ci = bd_model_find_case(m, ti, e->case_id);
        if (ci == SIZE_MAX)
            continue;
        bd_ui_case *c = &t->cases[ci];
        if (c->has_last && c->last_seq > e->seq)
            continue;
        c->has_last = true;
        c->last_passed = e->passed;
        c->last_score = e->score;
        c->last_seq = e->seq;
        /* Current or stale against today's pins: the one rule of stale.c. */
        const bd_task_class *tc = bd_model_tc(m, ti);
        c->last_stale = (uint8_t)bd_stale_bits(e->case_id, e->case_digest, e->tc_digest,
                                               tc ? tc->digests : NULL);
        free(c->last_fm);
        c->last_fm = e->fm ? strdup(e->fm) : NULL;
    }
    apply_runs(m, ti);
}

static void history_changed(void *payload)
{
    bd_model *m = payload;
    for (size_t i = 0; i < m->n_tcs; i++)
        apply_history(m, i);
}

static void runs_changed(void *payload)
{
    bd_model *m = payload;
    for (size_t i = 0; i < m->n_tcs; i++)
        apply_runs(m, i);
}

void bd_model_refresh_history(bd_model *m)
{
    bd_history_model_refresh(m->history);
    bd_runs_model_refresh(m->runs);
}

bd_chain_status bd_model_chain(const bd_model *m)
{
    return bd_history_model_chain(m->history);
}

int bd_model_new(bd_model **out, bd_app *app, bd_err *err)
{
    *out = NULL;
    bd_model *m = calloc(1, sizeof(*m) + sizeof(model_priv));
    if (!m)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    m->app = app;
    model_priv *p = priv_of(m);
    const char *hold = getenv("BENCHDESK_MODEL_HOLD");
    p->hold_meta = hold && strcmp(hold, "all") == 0;
    const char *slow = getenv("BENCHDESK_MODEL_SLOW_MS");
    unsigned long slow_ms = slow ? strtoul(slow, NULL, 10) : 0;
    p->slow_ms = slow_ms > 60000 ? 60000 : (unsigned)slow_ms; /* a minute at most */
    p->hold_digests = p->hold_meta || (hold && strcmp(hold, "digests") == 0);
    if (build(m, err) < 0) {
        free(m);
        return -1;
    }
    /* GnuPG was initialised by tui.c before any thread; a bench whose signers file is
     * broken still browses, with the reason on screen. */
    if (bd_prov_ctx_new(&m->prov, app->bench->bench_dir, &m->prov_err) < 0)
        m->prov = NULL;
    if (bd_history_model_new(&m->history, app, history_changed, m) < 0 ||
        bd_runs_model_new(&m->runs, app, runs_changed, m) < 0) {
        bd_model_free(m);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    *out = m;
    pump(m);
    bd_model_refresh_history(m);
    return 0;
}

/* BENCHDESK_MODEL_STATS=<file>: how many cases each kind of job read (tests). */
static void write_stats(bd_model *m)
{
    const char *path = getenv("BENCHDESK_MODEL_STATS");
    FILE *f = path ? fopen(path, "we") : NULL;
    if (!f)
        return;
    const bd_model_reads *r = &priv_of(m)->reads;
    size_t cases = 0;
    for (size_t i = 0; i < m->n_tcs; i++)
        cases += m->tcs[i].n_cases;
    fprintf(f, "cases=%zu\nmeta_reads=%zu\ncase_checks=%zu\ntc_checks=%zu\n", cases, r->meta_reads,
            r->case_checks, r->tc_checks);
    fclose(f);
}

void bd_model_free(bd_model *m)
{
    if (!m)
        return;
    write_stats(m);
    bd_history_model_free(m->history);
    bd_runs_model_free(m->runs);
    release_all(m);
    bd_prov_ctx_free(m->prov);
    free(m);
}

int bd_model_reload(bd_model *m, bd_err *err)
{
    model_priv *p = priv_of(m);
    release_all(m);
    p->gen++;
    bd_bench *fresh = NULL;
    if (bd_bench_open(&fresh, m->app->bench->root, err) < 0)
        return -1;
    bd_bench_free(m->app->bench);
    m->app->bench = fresh;
    if (build(m, err) < 0)
        return -1;
    pump(m);
    bd_model_refresh_history(m);
    return 0;
}

const bd_task_class *bd_model_tc(const bd_model *m, size_t tc_index)
{
    if (tc_index >= m->n_tcs || !m->tcs[tc_index].ref)
        return NULL;
    return m->tcs[tc_index].ref->tc;
}

bd_tc_ref *bd_model_tc_hold(bd_model *m, size_t tc_index)
{
    if (tc_index >= m->n_tcs || !m->tcs[tc_index].ref)
        return NULL;
    m->tcs[tc_index].ref->refs++;
    return m->tcs[tc_index].ref;
}

void bd_model_tc_release(bd_tc_ref *ref)
{
    ref_drop(ref);
}

static int id_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const bd_ui_case *)elem)->id);
}

size_t bd_model_find_case(const bd_model *m, size_t tc_index, const char *id)
{
    if (tc_index >= m->n_tcs || !id)
        return SIZE_MAX;
    const bd_ui_tc *t = &m->tcs[tc_index];
    const bd_ui_case *c = t->n_cases ? bsearch(id, t->cases, t->n_cases, sizeof(*c), id_cmp) : NULL;
    return c ? (size_t)(c - t->cases) : SIZE_MAX;
}

size_t bd_model_find_tc(const bd_model *m, const char *name)
{
    for (size_t i = 0; name && i < m->n_tcs; i++)
        if (strcmp(m->tcs[i].name, name) == 0)
            return i;
    return SIZE_MAX;
}

bool bd_model_busy(const bd_model *m)
{
    return m->jobs_in_flight > 0 || bd_history_model_busy(m->history);
}

void bd_model_prioritize(bd_model *m, size_t tc_index, size_t case_index)
{
    model_priv *p = priv_of(m);
    p->prio_tc = tc_index;
    if (tc_index < m->n_tcs)
        m->tcs[tc_index].prio_case = case_index;
    pump(m);
}

void bd_model_set_last(bd_model *m, size_t tc_index, size_t case_index, bool passed, double score,
                       const char *first_fm)
{
    if (tc_index >= m->n_tcs || case_index >= m->tcs[tc_index].n_cases)
        return;
    bd_ui_case *c = &m->tcs[tc_index].cases[case_index];
    c->has_last = true;
    c->last_passed = passed;
    c->last_score = score;
    c->last_stale = 0; /* scored just now, on today's pins */
    free(c->last_fm);
    c->last_fm = first_fm ? strdup(first_fm) : NULL;
    bd_event ev = {.kind = BD_EV_MODEL, .tc_index = tc_index, .case_index = case_index};
    bd_app_broadcast(m->app, &ev);
}

/* ---- pool work ---------------------------------------------------------------------- */

static void run_tc_load(model_job *j)
{
    if (j->slow_ms) {
        struct timespec ts = {(time_t)(j->slow_ms / 1000), (long)(j->slow_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    bd_bench b = {0};
    b.bench_dir = j->bench_dir;
    bd_task_class_load(&j->loaded, &b, j->name, &j->err);
}

/* A row's metadata from a parsed case.yaml and its provenance.yaml. */
static void meta_from(meta_result *r, const bd_case *c, const bd_provfile *pf)
{
    r->state = BD_LOAD_DONE;
    r->disposition = (uint8_t)c->disposition;
    r->difficulty = (uint8_t)c->difficulty;
    r->prov = (uint8_t)bd_prov_claim_of(pf);
    r->title = c->title ? strdup(c->title) : NULL;
}

static void run_meta(model_job *j)
{
    const bd_task_class *tc = j->ref->tc;
    for (size_t i = j->lo; i < j->hi && !bd_work_stopping(); i++) {
        meta_result *r = &j->metas[i - j->lo];
        bd_case *c = NULL;
        bd_err err = BD_ERR_INIT;
        bd_provfile *pf = NULL;
        if (bd_task_class_case(&c, tc, tc->case_ids[i], &err) == 0 &&
            bd_task_class_case_prov(&pf, tc, tc->case_ids[i], &err) == 0) {
            meta_from(r, c, pf);
        } else {
            r->state = BD_LOAD_FAILED;
            r->code = err.code;
            char text[BD_ERR_MSG_MAX + 2 * BD_ERR_ARG_MAX];
            r->msg = strdup(bd_err_render(&err, bd_tui_action_words, text, sizeof(text)));
        }
        bd_provfile_free(pf);
        bd_case_free(c);
    }
}

/* The task class's own pin and signatures, once per load (not with every chunk). */
static void run_tc_check(model_job *j)
{
    const bd_task_class *tc = j->ref->tc;
    bd_verify_report rep;
    bd_err err = BD_ERR_INIT;
    bd_prov_ctx *prov = bd_work_stopping() ? NULL : j->prov;
    bd_verify_opts vopt = {.no_cases = true, .prov = prov};
    int rc = bd_verify(&rep, tc, &vopt, NULL, &err);
    if (rc < 0 && prov) {
        /* GnuPG failed: show the pin, and the signatures as not verified. */
        bd_verify_report_release(&rep);
        vopt.prov = NULL;
        rc = bd_verify(&rep, tc, &vopt, NULL, &err);
    }
    if (rc < 0) {
        bd_verify_report_release(&rep);
        j->failed = true;
        return;
    }
    j->tc_pin_code = rep.tc_err.code;
    j->tc_prov_check = rep.tc_prov_checked ? BD_LOAD_DONE : BD_LOAD_FAILED;
    j->tc_prov_status = (uint8_t)rep.tc_prov.status;
    j->tc_prov_code = rep.tc_prov.err.code;
    bd_verify_report_release(&rep);
}

/* One case of a chunk of checks, as bd_verify hands it over. */
typedef struct digest_sink {
    model_job *job;
    size_t next;
} digest_sink;

static void take_case(bd_case_check *chk, void *payload)
{
    digest_sink *ds = payload;
    if (ds->next >= ds->job->hi - ds->job->lo)
        return;
    digest_result *r = &ds->job->digests[ds->next++];
    if (chk->loaded && chk->prov_file)
        meta_from(&r->meta, chk->loaded, chk->prov_file);
    else
        r->meta.state = BD_LOAD_FAILED; /* why: chk->err, kept below */
    r->code = chk->err.code;
    if (r->code != BD_OK) {
        char text[BD_ERR_MSG_MAX + 2 * BD_ERR_ARG_MAX];
        r->msg = strdup(bd_err_render(&chk->err, bd_tui_action_words, text, sizeof(text)));
    }
    memcpy(r->digest, chk->digest, sizeof(r->digest));
    if (chk->prov_checked) {
        r->prov_check = BD_LOAD_DONE;
        r->prov_status = (uint8_t)chk->prov.status;
        r->prov_code = chk->prov.err.code;
    } else if (chk->prov_file) {
        /* No GnuPG: a draft is a draft; a claimed signature is unknown. */
        bool draft = bd_prov_claim_of(chk->prov_file) == BD_PROV_DRAFT;
        r->prov_check = draft ? BD_LOAD_DONE : BD_LOAD_FAILED;
        r->prov_status = BD_PROV_ST_DRAFT;
    }
}

/* Forget what a failed pass handed over, so the next pass starts clean. */
static void digests_reset(model_job *j)
{
    for (size_t i = 0; i < j->hi - j->lo; i++) {
        free(j->digests[i].meta.title);
        free(j->digests[i].msg);
        memset(&j->digests[i], 0, sizeof(j->digests[i]));
    }
}

static void run_digest(model_job *j)
{
    const bd_task_class *tc = j->ref->tc;
    bd_verify_report rep;
    bd_err err = BD_ERR_INIT;
    size_t n = j->hi - j->lo;
    /* The one core check of each case (pins and, when GnuPG is usable, signatures),
     * scanned on this pool thread (the model keeps one chunk per core going); only the
     * waits on GnuPG run on threads of the core's own. */
    bd_prov_ctx *prov = bd_work_stopping() ? NULL : j->prov;
    const char *const *ids = (const char *const *)tc->case_ids + j->lo;
    digest_sink ds = {j, 0};
    bd_verify_sink sink = {.on_case = take_case, .payload = &ds};
    /* The cases alone (the task class is run_tc_check's), scanned here. */
    bd_verify_opts vopt = {.case_ids = ids,
                           .n_case_ids = n,
                           .no_cases = n == 0,
                           .no_task_class = true,
                           .prov = prov,
                           .scan_here = true};
    int rc = bd_verify(&rep, tc, &vopt, &sink, &err);
    if (rc < 0 && prov) {
        /* GnuPG failed: show the pins, and the signatures as not verified. */
        bd_verify_report_release(&rep);
        digests_reset(j);
        ds.next = 0;
        vopt.prov = NULL;
        rc = bd_verify(&rep, tc, &vopt, &sink, &err);
    }
    bd_verify_report_release(&rep);
    if (rc < 0 || ds.next < n)
        j->failed = true;
}

static void job_run(bd_work *w)
{
    model_job *j = (model_job *)w;
    switch (j->kind) {
    case JOB_TC_LOAD:
        run_tc_load(j);
        break;
    case JOB_TC_CHECK:
        run_tc_check(j);
        break;
    case JOB_META:
        run_meta(j);
        break;
    case JOB_DIGEST:
        run_digest(j);
        break;
    }
}

static void job_free(model_job *j)
{
    if (j->metas) {
        for (size_t i = 0; i < j->hi - j->lo; i++) {
            free(j->metas[i].title);
            free(j->metas[i].msg);
        }
        free(j->metas);
    }
    if (j->digests) {
        for (size_t i = 0; i < j->hi - j->lo; i++) {
            free(j->digests[i].meta.title);
            free(j->digests[i].msg);
        }
        free(j->digests);
    }
    bd_task_class_free(j->loaded);
    free(j->bench_dir);
    free(j->name);
    ref_drop(j->ref);
    free(j);
}

static void merge_tc_load(bd_model *m, model_job *j)
{
    model_priv *p = priv_of(m);
    bd_ui_tc *t = &m->tcs[j->tc_index];
    if (!j->loaded) {
        t->state = BD_LOAD_FAILED;
        t->err = j->err;
        return;
    }
    bd_tc_ref *ref = calloc(1, sizeof(*ref));
    bd_task_class *tc = j->loaded;
    size_t n = tc->n_cases;
    bd_ui_case *cases = calloc(n ? n : 1, sizeof(*cases));
    /* One byte more: never calloc(0) (which may return NULL) for a task class without cases. */
    uint8_t *mc = calloc(n_chunks(n, BD_MODEL_META_CHUNK) + 1, 1);
    uint8_t *dc = calloc(n_chunks(n, BD_MODEL_DIGEST_CHUNK) + 1, 1);
    bool ok = ref && cases && mc && dc;
    for (size_t i = 0; ok && i < n; i++)
        ok = (cases[i].id = strdup(tc->case_ids[i])) != NULL;
    if (!ok) {
        for (size_t i = 0; cases && i < n; i++)
            free(cases[i].id);
        free(cases);
        free(ref);
        free(mc);
        free(dc);
        t->state = BD_LOAD_FAILED;
        bd_err_set(&t->err, BD_E_NOMEM, NULL, 0, 0, "out of memory loading '%s'", t->name);
        return;
    }
    ref->tc = tc;
    ref->refs = 1;
    j->loaded = NULL;
    t->ref = ref;
    t->cases = cases;
    t->n_cases = n;
    t->state = BD_LOAD_DONE;
    p->meta_chunks[j->tc_index] = mc;
    p->digest_chunks[j->tc_index] = dc;
    /* Orphaned pins: pins whose case id is not a directory under cases/. */
    if (tc->digests)
        for (size_t i = 0; i < tc->digests->n_pins; i++)
            if (bd_model_find_case(m, j->tc_index, tc->digests->pins[i].case_id) == SIZE_MAX)
                t->orphans++;
    apply_history(m, j->tc_index);
}

static void merge_tc_check(bd_model *m, model_job *j)
{
    bd_ui_tc *t = &m->tcs[j->tc_index];
    t->tc_pin = j->tc_pin_code == BD_OK ? BD_LOAD_DONE : BD_LOAD_FAILED;
    t->tc_pin_code = j->tc_pin_code;
    t->tc_prov_check = j->tc_prov_check;
    t->tc_prov_status = j->tc_prov_status;
    t->tc_prov_code = j->tc_prov_code;
}

/* The metadata `r` into row `c` unless it has some already (from the other kind of job). */
static void merge_one_meta(bd_ui_tc *t, bd_ui_case *c, meta_result *r)
{
    if (r->state == BD_LOAD_PENDING || c->meta != BD_LOAD_PENDING)
        return;
    c->meta = (uint8_t)r->state;
    if (r->state == BD_LOAD_DONE) {
        c->disposition = r->disposition;
        c->difficulty = r->difficulty;
        c->prov = r->prov;
        c->title = r->title;
        r->title = NULL;
        if (c->prov < 3)
            t->prov[c->prov]++;
    } else if (!c->digest_msg && r->msg) {
        c->digest_msg = r->msg;
        c->digest_code = r->code;
        r->msg = NULL;
    }
    t->meta_done++;
}

static void merge_meta(bd_model *m, model_job *j)
{
    bd_ui_tc *t = &m->tcs[j->tc_index];
    for (size_t i = j->lo; i < j->hi && i < t->n_cases; i++)
        merge_one_meta(t, &t->cases[i], &j->metas[i - j->lo]);
}

static void merge_digest(bd_model *m, model_job *j)
{
    bd_ui_tc *t = &m->tcs[j->tc_index];
    for (size_t i = j->lo; i < j->hi && i < t->n_cases; i++) {
        digest_result *r = &j->digests[i - j->lo];
        bd_ui_case *c = &t->cases[i];
        merge_one_meta(t, c, &r->meta);
        memcpy(c->digest_hex, r->digest, sizeof(c->digest_hex));
        c->digest_code = r->code;
        c->prov_check = r->prov_check;
        c->prov_status = r->prov_status;
        c->prov_code = r->prov_code;
        if (r->prov_check == BD_LOAD_DONE) {
            t->prov_checked++;
            if (r->prov_status == BD_PROV_ST_BAD)
                t->prov_bad++;
            if (r->prov_status < 4)
                t->pstat[r->prov_status]++;
        }
        if (r->code == BD_OK) {
            c->digest = BD_LOAD_DONE;
        } else {
            c->digest = BD_LOAD_FAILED;
            free(c->digest_msg);
            c->digest_msg = r->msg;
            r->msg = NULL;
            t->digest_bad++;
        }
        t->digest_done++;
    }
}

/* The state byte of the job's chunk (or task class check), NULL for a load. */
static uint8_t *job_slot(model_priv *p, const model_job *j)
{
    switch (j->kind) {
    case JOB_META:
        return &p->meta_chunks[j->tc_index][j->lo / BD_MODEL_META_CHUNK];
    case JOB_DIGEST:
        return &p->digest_chunks[j->tc_index][j->lo / BD_MODEL_DIGEST_CHUNK];
    case JOB_TC_CHECK:
        return &p->tc_check[j->tc_index];
    case JOB_TC_LOAD:
        break;
    }
    return NULL;
}

static void job_done(bd_work *w, bool ran)
{
    model_job *j = (model_job *)w;
    bd_model *m = j->model;
    model_priv *p = priv_of(m);
    m->jobs_in_flight--;
    if (ran && !j->failed) {
        /* What was read, whether or not a reload made it stale. */
        if (j->kind == JOB_META)
            p->reads.meta_reads += j->hi - j->lo;
        else if (j->kind == JOB_DIGEST)
            p->reads.case_checks += j->hi - j->lo;
        else if (j->kind == JOB_TC_CHECK)
            p->reads.tc_checks++;
    }
    bool current = j->gen == p->gen && !m->app->quitting;
    if (current && j->tc_index < m->n_tcs) {
        uint8_t *slot = job_slot(p, j);
        if (!ran || j->failed) {
            /* Not run (stopping) or out of memory: leave it to be tried again. */
            if (slot)
                *slot = 0;
            else
                p->tc_queued[j->tc_index] = false;
        } else {
            if (j->kind == JOB_TC_LOAD)
                merge_tc_load(m, j);
            else if (j->kind == JOB_TC_CHECK)
                merge_tc_check(m, j);
            else if (j->kind == JOB_META)
                merge_meta(m, j);
            else
                merge_digest(m, j);
            if (slot)
                *slot = 2;
            bd_event ev = {.kind = BD_EV_MODEL, .tc_index = j->tc_index, .case_index = SIZE_MAX};
            bd_app_broadcast(m->app, &ev);
            bd_app_invalidate(m->app, BD_DIRTY_HEADER);
        }
    }
    job_free(j);
    /* A job of an older generation (a reload came meanwhile) frees its slot too: the
     * reloaded model's jobs may be waiting for it. */
    if (!m->app->quitting && !bd_work_stopping())
        pump(m);
}

static int queue_job(bd_model *m, model_job *j)
{
    j->model = m;
    j->gen = priv_of(m)->gen;
    j->work.run = job_run;
    j->work.done = job_done;
    if (bd_work_queue(m->app, &j->work) < 0) {
        job_free(j);
        return -1;
    }
    m->jobs_in_flight++;
    bd_app_animate(m->app);
    return 0;
}

/* Queue a job of `kind` over task class `ti` (the chunk `chunk` for JOB_META and
 * JOB_DIGEST). Returns 0, or -1 when nothing was queued. */
static int queue_tc_job(bd_model *m, size_t ti, job_kind kind, size_t chunk)
{
    model_priv *p = priv_of(m);
    bd_ui_tc *t = &m->tcs[ti];
    size_t size = kind == JOB_META ? BD_MODEL_META_CHUNK : BD_MODEL_DIGEST_CHUNK;
    size_t lo = kind == JOB_TC_CHECK ? 0 : chunk * size;
    size_t hi = kind == JOB_TC_CHECK ? 0 : lo + size < t->n_cases ? lo + size : t->n_cases;
    model_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -1;
    j->kind = kind;
    j->tc_index = ti;
    j->lo = lo;
    j->hi = hi;
    size_t n = hi > lo ? hi - lo : 1;
    if ((kind == JOB_META && !(j->metas = calloc(n, sizeof(*j->metas)))) ||
        (kind == JOB_DIGEST && !(j->digests = calloc(n, sizeof(*j->digests))))) {
        job_free(j);
        return -1;
    }
    j->ref = t->ref;
    t->ref->refs++;
    j->prov = m->prov;
    uint8_t *slot = job_slot(p, j);
    *slot = 1;
    if (queue_job(m, j) < 0) {
        *slot = 0;
        return -1;
    }
    return 0;
}

/* The chunk to do next in `chunks` (n of them), starting from the one holding `prio`
 * and going forwards, then from the start. SIZE_MAX when none is left. */
static size_t pick_chunk(const uint8_t *chunks, size_t n, size_t prio_chunk)
{
    if (prio_chunk >= n)
        prio_chunk = 0;
    for (size_t k = 0; k < n; k++) {
        size_t c = (prio_chunk + k) % n;
        if (chunks[c] == 0)
            return c;
    }
    return SIZE_MAX;
}

/* The case the user looks at in task class `ti`, when its row has no metadata and its
 * chunk of checks is not done: its chunk's case.yaml files are read at once, on their own
 * (a few milliseconds), so the row (and the sign view) never waits for the signatures of
 * a whole chunk — even one already under way, whose check may take seconds with GnuPG.
 * The only case.yaml files read twice are these, and only when the user looks at them.
 * Returns true when it queued. */
static bool pump_cursor_meta(bd_model *m, size_t ti)
{
    model_priv *p = priv_of(m);
    bd_ui_tc *t = &m->tcs[ti];
    size_t ci = t->prio_case;
    if (p->hold_meta || t->state != BD_LOAD_DONE || ci >= t->n_cases ||
        t->cases[ci].meta != BD_LOAD_PENDING)
        return false;
    if (p->digest_chunks[ti][ci / BD_MODEL_DIGEST_CHUNK] == 2)
        return false; /* merged: the row has what the check found */
    size_t mc = ci / BD_MODEL_META_CHUNK;
    if (p->meta_chunks[ti][mc] != 0)
        return false;
    return queue_tc_job(m, ti, JOB_META, mc) == 0;
}

/* Queue one job for task class `ti` if it has work left; returns true when it queued.
 * `checks`: chunks of case checks too, else only the task class's own check. */
static bool pump_tc(bd_model *m, size_t ti, bool checks)
{
    model_priv *p = priv_of(m);
    bd_ui_tc *t = &m->tcs[ti];
    if (t->state != BD_LOAD_DONE)
        return false;
    if (p->tc_check[ti] == 0)
        return queue_tc_job(m, ti, JOB_TC_CHECK, 0) == 0;
    if (!checks || p->hold_digests)
        return false;
    size_t prio = t->prio_case == SIZE_MAX ? 0 : t->prio_case;
    size_t nd = n_chunks(t->n_cases, BD_MODEL_DIGEST_CHUNK);
    size_t c = pick_chunk(p->digest_chunks[ti], nd, prio / BD_MODEL_DIGEST_CHUNK);
    if (c != SIZE_MAX)
        return queue_tc_job(m, ti, JOB_DIGEST, c) == 0;
    return false;
}

/* Keep up to BD_MODEL_MAX_JOBS jobs going: task-class loads first, then the row the user looks
 * at (its metadata, then checks from there on), then each task class's own check, then
 * every task class's cases. */
static void pump(bd_model *m)
{
    model_priv *p = priv_of(m);
    if (m->app->quitting)
        return;
    /* The cursor's metadata does not queue behind the chunks of checks: it may take one
     * pool thread more than they do. */
    if (p->prio_tc < m->n_tcs && m->jobs_in_flight < BD_MODEL_MAX_JOBS + 1)
        (void)pump_cursor_meta(m, p->prio_tc);
    while (m->jobs_in_flight < BD_MODEL_MAX_JOBS) {
        bool queued = false;
        for (size_t i = 0; i < m->n_tcs && !queued; i++) {
            bd_ui_tc *t = &m->tcs[i];
            if (t->state != BD_LOAD_PENDING || p->tc_queued[i])
                continue;
            model_job *j = calloc(1, sizeof(*j));
            if (!j)
                return;
            j->kind = JOB_TC_LOAD;
            j->tc_index = i;
            j->slow_ms = p->slow_ms;
            j->bench_dir = strdup(m->app->bench->bench_dir);
            j->name = strdup(t->name);
            if (!j->bench_dir || !j->name) {
                job_free(j);
                return;
            }
            p->tc_queued[i] = true;
            if (queue_job(m, j) < 0) {
                p->tc_queued[i] = false;
                return;
            }
            queued = true;
        }
        if (!queued && p->prio_tc < m->n_tcs)
            queued = pump_tc(m, p->prio_tc, true);
        for (size_t i = 0; i < m->n_tcs && !queued; i++)
            queued = pump_tc(m, i, false);
        for (size_t i = 0; i < m->n_tcs && !queued; i++)
            queued = pump_tc(m, i, true);
        if (!queued)
            return;
    }
}
