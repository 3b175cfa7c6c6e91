/*
 * history_model.c — the chain status and the last scores, read on libuv's thread pool.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anchor.h"
#include "badge.h"
#include "err_keys.h"
#include "history.h"
#include "history_model.h"
#include "verdict.h"

typedef bd_last_score last_entry;

struct bd_history_model {
    bd_app *app;
    unsigned gen;
    int busy;
    last_entry *last; /* sorted by task class, case */
    size_t n_last;
    /* the chain status for the header */
    bd_chain_state chain;
    uint64_t chain_count;
    char chain_head[65];
    uint64_t chain_bad_seq;
    char chain_reason[32];
    char chain_msg[256];
    /* the verdict badges of the verified records, sorted by seq */
    bd_badge_entry *badges;
    size_t n_badges;
    char badge_err[256];
    void (*changed)(void *payload);
    void *payload;
};

typedef struct hist_job {
    bd_work work;
    bd_history_model *model;
    unsigned gen;
    bool verify;    /* else: scan */
    bool badge_job; /* the verdict badges (neither verify nor scan) */
    char *root;
    /* verify */
    int rc;
    bd_history_verify_result res;
    bd_err err;
    bd_badge_entry *badges;
    size_t n_badges;
    char badge_err[256];
    /* scan */
    last_entry *last;
    size_t n_last;
    char note[PATH_MAX + 160]; /* the index was edited outside benchdesk: rebuilt */
} hist_job;

static void entries_free(last_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].tc);
        free(e[i].case_id);
        free(e[i].fm);
        free(e[i].run_id);
        free(e[i].case_digest);
        free(e[i].tc_digest);
    }
    free(e);
}

static int entry_cmp(const void *a, const void *b)
{
    const last_entry *x = a, *y = b;
    int c = strcmp(x->tc, y->tc);
    if (!c)
        c = strcmp(x->case_id, y->case_id);
    if (!c)
        c = x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0; /* newest first */
    return c;
}

static int seq_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The badges of the records the settled set `vs` has counting verdicts on, by seq. */
static void collect_badges(hist_job *j, const bd_verdict_set *vs)
{
    uint64_t *seqs = malloc((vs->n ? vs->n : 1) * sizeof(*seqs));
    size_t n = 0;
    if (!seqs)
        return;
    for (size_t i = 0; i < vs->n; i++)
        if (vs->e[i].state == BD_VST_COUNTS && vs->e[i].seq)
            seqs[n++] = vs->e[i].seq;
    qsort(seqs, n, sizeof(*seqs), seq_cmp);
    if (n && (j->badges = malloc(n * sizeof(*j->badges)))) {
        for (size_t i = 0; i < n; i++) {
            if (i && seqs[i] == seqs[i - 1])
                continue;
            bd_badge_entry *b = &j->badges[j->n_badges];
            b->seq = seqs[i];
            b->kind = bd_badge_of(b->text, sizeof(b->text), vs, seqs[i]);
            if (b->kind != BD_BADGE_NONE)
                j->n_badges++;
        }
    }
    free(seqs);
}

/* The chain's status as `benchdesk verify` checks it: the anchors' signatures first, then
 * one walk that re-hashes the records under the longest anchor that holds and parses the
 * rest in full ("What is parsed again" in docs/history.md#verifying-the-first-bad-record-and-why).
 * A chain that does not pass that way, or could not be checked so (GnuPG missing), is
 * walked again the plain way, which names the first bad record and why. */
static void run_verify(hist_job *j)
{
    bd_anchor_report rep;
    bd_err aerr = BD_ERR_INIT;
    if (bd_anchor_verify_visit(&rep, j->root, 0, NULL, &aerr) >= 0) {
        j->rc = 0;
        j->res.count = rep.chain_count;
        snprintf(j->res.head, sizeof(j->res.head), "%s", rep.chain_head);
        bd_anchor_report_release(&rep);
        return;
    }
    bd_anchor_report_release(&rep);
    bd_history *h = NULL;
    j->rc = -1;
    if (bd_history_open(&h, j->root, BD_HISTORY_READ, &j->err) < 0)
        return;
    j->rc = bd_history_verify(h, 0, &j->res, &j->err);
    bd_history_free(h);
}

/* The badges: the bench's verdict files checked against bench/keys and matched to their
 * records in a verified walk of their own (docs/provenance.md#verdict-badges), after the
 * chain status, so GnuPG never holds up the header. None when there are no verdict files;
 * a set that cannot be read leaves them empty with its reason. */
static void run_badges(hist_job *j)
{
    bd_prov_ctx *prov = NULL;
    bd_verdict_set vs;
    bd_err err = BD_ERR_INIT;
    char vdir[PATH_MAX], bdir[PATH_MAX];
    snprintf(vdir, sizeof(vdir), "%s/" BD_VERDICT_DIR, j->root);
    snprintf(bdir, sizeof(bdir), "%s/bench", j->root);
    if (access(vdir, F_OK) != 0)
        return;
    if (bd_prov_ctx_new(&prov, bdir, &err) == 0 &&
        bd_verdict_set_check(&vs, j->root, NULL, prov, &err) == 0) {
        collect_badges(j, &vs);
        bd_verdict_set_release(&vs);
    } else if (err.code != BD_E_CHAIN_TAMPERED) { /* the header says that already */
        snprintf(j->badge_err, sizeof(j->badge_err), "%.40s: %.200s", bd_code_str(err.code),
                 bd_tui_err_text(&err));
    }
    bd_prov_ctx_free(prov);
}

/* Fill e from record r (the newest of its case). Returns 0, or -1 out of memory. */
static int entry_fill(last_entry *e, const bd_history_record *r)
{
    memset(e, 0, sizeof(*e));
    e->seq = r->seq;
    e->passed = r->score.passed;
    e->score = r->score.score;
    e->tc = strdup(r->task_class);
    e->case_id = strdup(r->case_id);
    e->case_digest = r->case_digest ? strdup(r->case_digest) : NULL;
    e->tc_digest = r->task_class_digest ? strdup(r->task_class_digest) : NULL;
    if ((r->case_digest && !e->case_digest) || (r->task_class_digest && !e->tc_digest))
        return -1;
    if (r->score.n_failure_modes && !(e->fm = strdup(r->score.failure_modes[0].code)))
        return -1;
    return e->tc && e->case_id ? 0 : -1;
}

typedef struct latest_ctx {
    hist_job *j;
    bd_history *h;
    size_t cap;
} latest_ctx;

static int latest_one(const char *tc, const char *case_id, const bd_hindex_hit *hit, void *ctx)
{
    latest_ctx *c = ctx;
    hist_job *j = c->j;
    bd_history_record r;
    bd_err err = BD_ERR_INIT;
    if (bd_work_stopping())
        return 2;
    /* 1: not as the index says (it is distrusted): read the segments instead. */
    if (bd_history_read_latest(c->h, hit, tc, case_id, &r, &err) != 0)
        return 1;
    if (j->n_last == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        last_entry *g = realloc(j->last, nc * sizeof(*g));
        if (g) {
            j->last = g;
            c->cap = nc;
        }
    }
    int rc = 2;
    if (j->n_last < c->cap) {
        rc = entry_fill(&j->last[j->n_last], &r) == 0 ? 0 : 2;
        j->n_last++; /* freed with the others, filled or not */
    }
    bd_history_record_release(&r);
    return rc;
}

/* The newest score record of every case from the history's index: memory and time grow
 * with the cases, not with the history. Returns 0, or 1 when there is no index to use
 * (j->last emptied). */
static int scan_indexed(hist_job *j, bd_history *h)
{
    bd_hindex *ix = bd_history_index(h);
    if (!ix)
        return 1;
    latest_ctx c = {j, h, 0};
    int rc = bd_hindex_has_bad(ix) ? 1 : bd_hindex_latest(ix, NULL, latest_one, &c);
    bd_hindex_close(ix);
    if (rc == 0 || rc == 2) /* 2: stopping or out of memory: what was read is kept */
        return 0;
    entries_free(j->last, j->n_last);
    j->last = NULL;
    j->n_last = 0;
    return 1;
}

/* Read every score record newest first; keep the newest per case. */
static void run_scan(hist_job *j)
{
    bd_history *h = NULL;
    bd_err err = BD_ERR_INIT;
    size_t cap = 0;
    if (bd_history_open(&h, j->root, BD_HISTORY_READ, &err) < 0)
        return;
    int ir = scan_indexed(j, h);
    const char *note = bd_history_index_note(h);
    if (note)
        snprintf(j->note, sizeof(j->note), "%s", note);
    if (ir == 0) {
        bd_history_free(h);
        return; /* one per case already, in (task class, case) order */
    }
    bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
    o.limit = 512;
    for (;;) {
        bd_history_record *recs = NULL;
        size_t n = 0;
        uint64_t next = 0;
        if (bd_work_stopping() || bd_history_log(h, &o, &recs, &n, &next, &err) < 0)
            break;
        for (size_t i = 0; i < n; i++) {
            const bd_history_record *r = &recs[i];
            if (r->is_audit || !r->task_class || !r->case_id)
                continue;
            if (j->n_last == cap) {
                size_t nc = cap ? cap * 2 : 256;
                last_entry *g = realloc(j->last, nc * sizeof(*g));
                if (!g)
                    goto oom;
                j->last = g;
                cap = nc;
            }
            if (entry_fill(&j->last[j->n_last++], r) != 0)
                goto oom;
        }
        bd_history_records_free(recs, n);
        if (!next)
            break;
        o.before = next;
        continue;
    oom:
        bd_history_records_free(recs, n);
        break;
    }
    bd_history_free(h);
    /* Keep the newest entry of each case. */
    if (j->n_last) {
        qsort(j->last, j->n_last, sizeof(*j->last), entry_cmp);
        size_t w = 0;
        for (size_t i = 0; i < j->n_last; i++) {
            last_entry *e = &j->last[i];
            if (w && e->tc && e->case_id && j->last[w - 1].tc && j->last[w - 1].case_id &&
                strcmp(e->tc, j->last[w - 1].tc) == 0 &&
                strcmp(e->case_id, j->last[w - 1].case_id) == 0) {
                free(e->tc);
                free(e->case_id);
                free(e->fm);
                free(e->run_id);
                free(e->case_digest);
                free(e->tc_digest);
                continue;
            }
            j->last[w++] = *e;
        }
        j->n_last = w;
    }
}

static void job_run(bd_work *w)
{
    hist_job *j = (hist_job *)w;
    if (j->badge_job)
        run_badges(j);
    else if (j->verify)
        run_verify(j);
    else
        run_scan(j);
}

static void job_done(bd_work *w, bool ran)
{
    hist_job *j = (hist_job *)w;
    bd_history_model *m = j->model;
    m->busy--;
    if (ran && j->gen == m->gen && !m->app->quitting) {
        if (j->badge_job) {
            free(m->badges);
            m->badges = j->badges;
            m->n_badges = j->n_badges;
            j->badges = NULL;
            /* Said once, not on every read: the badges are shown without those files. */
            if (j->badge_err[0] && strcmp(m->badge_err, j->badge_err) != 0)
                bd_app_message(m->app, BD_MSG_WARN, "verdict badges: %s", j->badge_err);
            snprintf(m->badge_err, sizeof(m->badge_err), "%s", j->badge_err);
        } else if (j->verify) {
            snprintf(m->chain_head, sizeof(m->chain_head), "%s", j->res.head);
            if (j->rc == 0) {
                m->chain = j->res.count ? BD_CHAIN_VERIFIED : BD_CHAIN_NONE;
                m->chain_count = j->res.count;
            } else if (j->err.code == BD_E_CHAIN_TAMPERED) {
                m->chain = BD_CHAIN_BROKEN;
                m->chain_count = j->res.count;
                m->chain_bad_seq = j->res.bad_seq;
                snprintf(m->chain_reason, sizeof(m->chain_reason), "%s",
                         bd_chain_reason_str(j->res.reason));
                snprintf(m->chain_msg, sizeof(m->chain_msg), "%.200s", bd_tui_err_text(&j->err));
            } else {
                m->chain = BD_CHAIN_UNREADABLE;
                snprintf(m->chain_msg, sizeof(m->chain_msg), "%.40s: %.200s",
                         bd_code_str(j->err.code), bd_tui_err_text(&j->err));
            }
        } else {
            if (j->note[0])
                bd_app_message(m->app, BD_MSG_WARN, "%s", j->note);
            entries_free(m->last, m->n_last);
            m->last = j->last;
            m->n_last = j->n_last;
            j->last = NULL;
            j->n_last = 0;
        }
        if (m->changed)
            m->changed(m->payload);
        bd_event ev = {.kind = BD_EV_HISTORY, .tc_index = SIZE_MAX, .case_index = SIZE_MAX};
        bd_app_broadcast(m->app, &ev);
        bd_app_invalidate(m->app, BD_DIRTY_ALL);
    }
    if (j->verify)
        bd_history_verify_result_release(&j->res);
    free(j->badges);
    entries_free(j->last, j->n_last);
    free(j->root);
    free(j);
}

static void queue(bd_history_model *m, bool verify, bool badges)
{
    hist_job *j = calloc(1, sizeof(*j));
    if (!j || !(j->root = strdup(m->app->bench->root))) {
        free(j);
        bd_app_message(m->app, BD_MSG_ERROR, "out of memory reading the history");
        return;
    }
    j->model = m;
    j->gen = m->gen;
    j->verify = verify;
    j->badge_job = badges;
    j->work.run = job_run;
    j->work.done = job_done;
    if (bd_work_queue(m->app, &j->work) < 0) {
        free(j->root);
        free(j);
        bd_app_message(m->app, BD_MSG_ERROR, "cannot queue the history read");
        return;
    }
    m->busy++;
    bd_app_animate(m->app);
}

int bd_history_model_new(bd_history_model **out, bd_app *app, void (*changed)(void *payload),
                         void *payload)
{
    bd_history_model *m = calloc(1, sizeof(*m));
    if (!(*out = m))
        return -1;
    m->app = app;
    m->changed = changed;
    m->payload = payload;
    return 0;
}

void bd_history_model_refresh(bd_history_model *m)
{
    m->gen++;
    m->chain = BD_CHAIN_VERIFYING;
    queue(m, true, false);
    queue(m, false, false);
    queue(m, false, true);
}

void bd_history_model_free(bd_history_model *m)
{
    if (!m)
        return;
    /* Jobs in flight hold m: they are cancelled or drained before the app frees the
     * model (the loop has stopped). */
    entries_free(m->last, m->n_last);
    free(m->badges);
    free(m);
}

bool bd_history_model_busy(const bd_history_model *m)
{
    return m->busy > 0;
}

const bd_last_score *bd_history_model_scores(const bd_history_model *m, size_t *n)
{
    *n = m->n_last;
    return m->last;
}

bd_chain_status bd_history_model_chain(const bd_history_model *m)
{
    bd_chain_status c;
    memset(&c, 0, sizeof(c));
    c.state = m->chain;
    c.count = m->chain_count;
    c.bad_seq = m->chain_bad_seq;
    snprintf(c.head, sizeof(c.head), "%s", m->chain_head);
    snprintf(c.reason, sizeof(c.reason), "%s", m->chain_reason);
    snprintf(c.msg, sizeof(c.msg), "%s", m->chain_msg);
    return c;
}

const char *bd_history_model_badge(const bd_history_model *m, uint64_t seq, char *buf, size_t cap,
                                   bd_role *role)
{
    size_t lo = 0, n = m ? m->n_badges : 0, hi = n;
    buf[0] = '\0';
    *role = BD_R_MUTED;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->badges[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!seq || lo >= n || m->badges[lo].seq != seq)
        return buf;
    const bd_badge_entry *b = &m->badges[lo];
    switch ((bd_badge_kind)b->kind) {
    case BD_BADGE_CONFIRMED:
        *role = BD_R_OK;
        snprintf(buf, cap, "%s%s", bd_gl->ok, b->text);
        return buf;
    case BD_BADGE_AWAITING:
    case BD_BADGE_FLAKY:
        *role = BD_R_WARN;
        break;
    case BD_BADGE_REMOVED:
        *role = BD_R_BADGE_AWAITING;
        break;
    default:
        break;
    }
    snprintf(buf, cap, "%s", b->text);
    return buf;
}
