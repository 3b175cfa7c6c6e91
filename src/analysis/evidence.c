/*
 * evidence.c — recommend's evidence from the latest full run, less what two reviewers
 * removed (evidence.h).
 */
#include "evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "stale.h"
#include "strindex.h"

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory gathering the evidence");
}

/* The run's latest usable record of one case on one isolation side (current, of a case
 * the task class holds, signed when it ran), and how many such records the run has: only
 * that record can be evidence, the others are counted
 * (docs/history.md#promotion-recommend-never-apply). */
typedef struct ev_slot ev_slot;

typedef struct ev_run {
    char *run_id;
    uint64_t run_cases, n, last_seq;
    int iso; /* 1 namespaces, 0 subprocess (the first record's) */
    /* by the record's own isolation side (0 subprocess, 1 namespaces): its records, and
     * those of an unknown case, stale ones and ones not signed when they ran */
    uint64_t side_n[2], unknown[2], stale[2], not_pv[2];
    ev_slot *slots[2]; /* a slot per case of the task class, made on the side's first use */
} ev_run;

enum { F_PASSED = 1, F_STALE = 2, F_PV = 4, F_NS = 8 };

/* finished_at, packed exactly (a million records are kept: 72 bytes each, not 96):
 * YYYY-MM-DDTHH:MM:SS[.f]Z with up to nine digits of fraction (docs/formats.md). */
typedef struct ev_time {
    uint32_t ymd;          /* year * 10000 + month * 100 + day */
    uint32_t ns;           /* the fraction's digits as a number */
    uint8_t h, m, s, ndig; /* ndig: digits of the fraction (0: none) */
} ev_time;

typedef struct ev_rec {
    uint64_t seq;
    int32_t case_ix; /* -1: a case the task class does not hold today */
    double score;
    uint32_t flags;
    ev_time fin;
    uint8_t hash[32];
} ev_rec;

struct ev_slot {
    ev_rec latest;
    uint64_t usable; /* 0: none yet */
};

/* The n digits at s as a number (the record's format was validated: digits there). */
static unsigned digits(const char *s, int n)
{
    unsigned v = 0;
    for (int i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    return v;
}

static void time_pack(ev_time *t, const char *s)
{
    memset(t, 0, sizeof(*t));
    t->ymd = digits(s, 4) * 10000 + digits(s + 5, 2) * 100 + digits(s + 8, 2);
    t->h = (uint8_t)digits(s + 11, 2);
    t->m = (uint8_t)digits(s + 14, 2);
    t->s = (uint8_t)digits(s + 17, 2);
    if (s[19] == '.')
        for (const char *p = s + 20; *p >= '0' && *p <= '9' && t->ndig < 9; p++, t->ndig++)
            t->ns = t->ns * 10 + (uint32_t)(*p - '0');
}

static void time_unpack(char *out, size_t size, const ev_time *t)
{
    int n = snprintf(out, size, "%04u-%02u-%02uT%02u:%02u:%02u", t->ymd / 10000, t->ymd / 100 % 100,
                     t->ymd % 100, t->h, t->m, t->s);
    if (t->ndig && n > 0 && (size_t)n < size)
        n += snprintf(out + n, size - (size_t)n, ".%0*u", (int)t->ndig, t->ns);
    if (n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, "Z");
}

/* The members ev_pre reads, and after them those the signed runs read besides run_id (one
 * scan of the record for both). */
enum { M_CD, M_CID, M_FIN, M_ISO, M_PV, M_RC, M_RUN, M_SCOPE, M_SCORE, M_TCD, M__N };
enum { M_FPR = M__N, M_EVENT, M_DETAIL, M__ALL };

/* The members ev_pre reads, in the order of the enum above. */
static const char *const ev_keys[M__ALL] = {"case_digest",
                                            "case_id",
                                            "finished_at",
                                            "isolation_class",
                                            "provenance_verified",
                                            "run_cases",
                                            "run_id",
                                            "run_scope",
                                            "score",
                                            "task_class_digest",
                                            "operator_fingerprint",
                                            "event",
                                            "detail"};

struct bd_evidence {
    const bd_task_class *tc;
    time_t since;
    ev_run *runs;
    size_t n_runs, cap_runs;
    bd_strindex ix;      /* runs by run id */
    size_t last_run;     /* the run of the last record taken (n_runs: none): runs are contiguous */
    const char **pin;    /* per case of the task class, its pinned digest today (NULL: none) */
    size_t *pin_len;     /* its length; 0 when it is not a plain string (then compared slowly) */
    size_t tcd_len;      /* today's task class digest's, the same way */
    uint32_t *case_slot; /* case ids by case_hash: case index + 1 (0: empty) */
    size_t case_mask;    /* slots - 1 */
    size_t outside_window, subset;
    bd_runsig_walk *sig; /* borrowed: the signed runs gathered in the same walk, or NULL */
    bd_record_keys keys_ev, keys_all; /* ev_keys prepared: ev_pre's, and with the signed runs' */
};

static bool shortcuts = true;

void bd_evidence_test_shortcuts(bool on)
{
    shortcuts = on;
}

/* A case id's slot hash (its length and three words of it: ids of one task class share
 * long prefixes). */
static size_t case_hash(const char *s, size_t n)
{
    uint64_t h = n * 0x9E3779B97F4A7C15ull, w[3] = {0, 0, 0};
    if (n >= 8) {
        memcpy(&w[0], s, 8);
        memcpy(&w[1], s + n / 2 - 4, 8);
        memcpy(&w[2], s + n - 8, 8);
    } else {
        memcpy(&w[0], s, n);
    }
    for (int i = 0; i < 3; i++)
        h = (h ^ w[i]) * 0xFF51AFD7ED558CCDull;
    return (size_t)(h ^ (h >> 29));
}

/* The length of `s` when a JSON string of exactly its bytes is read back as `s` by str_of
 * into a buffer of `cap` (no quote, no backslash; it fits); 0 otherwise. */
static size_t plain_len(const char *s, size_t cap)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n + 2 < cap && !strpbrk(s, "\\\"") ? n : 0;
}

/* What ev_pre looks up per record, found once per walk: each case's pin (the stale rule's
 * lookup) and the case ids by hash. 0, or -1 when out of memory. */
static int ev_cases_prepare(bd_evidence *ev)
{
    const bd_task_class *tc = ev->tc;
    size_t n = tc->n_cases, slots = 16;
    while (slots < 4 * n)
        slots *= 2;
    ev->pin = calloc(n ? n : 1, sizeof(*ev->pin));
    ev->pin_len = calloc(n ? n : 1, sizeof(*ev->pin_len));
    ev->case_slot = calloc(slots, sizeof(*ev->case_slot));
    if (!ev->pin || !ev->pin_len || !ev->case_slot)
        return -1;
    ev->case_mask = slots - 1;
    ev->tcd_len = tc->digests ? plain_len(tc->digests->task_class, 80) : 0;
    for (size_t c = 0; c < n; c++) {
        const bd_pin *p = tc->digests ? bd_digests_find(tc->digests, tc->case_ids[c]) : NULL;
        ev->pin[c] = p ? p->digest : NULL;
        ev->pin_len[c] = plain_len(ev->pin[c], 80);
        /* the index bd_task_class_case_index gives for this id, whatever the order */
        int ix = bd_task_class_case_index(tc, tc->case_ids[c]);
        size_t k = case_hash(tc->case_ids[c], strlen(tc->case_ids[c])) & ev->case_mask;
        while (ev->case_slot[k])
            k = (k + 1) & ev->case_mask;
        ev->case_slot[k] = (uint32_t)ix + 1;
    }
    return 0;
}

/* The case whose id is the JSON string v/vl holds, as bd_task_class_case_index finds it
 * from the string str_of reads; -2 when it is not found here (the caller then asks
 * bd_task_class_case_index: an id with a NUL in it, one of no case). */
static int case_of(const bd_evidence *ev, const char *v, size_t vl)
{
    if (vl < 2 || !shortcuts)
        return -2;
    const char *s = v + 1;
    size_t n = vl - 2;
    for (size_t k = case_hash(s, n) & ev->case_mask; ev->case_slot[k];
         k = (k + 1) & ev->case_mask) {
        const char *id = ev->tc->case_ids[ev->case_slot[k] - 1];
        if (strlen(id) == n && memcmp(id, s, n) == 0)
            return (int)ev->case_slot[k] - 1;
    }
    return -2;
}

/* Whether the member's value v/vl is the JSON string of exactly the n bytes of s. */
static bool value_is(const char *v, size_t vl, const char *s, size_t n)
{
    return n > 0 && v && vl == n + 2 && v[0] == '"' && v[n + 1] == '"' && memcmp(v + 1, s, n) == 0;
}

/* run_cases from its member's value: a plain run of up to 19 digits (what records hold)
 * read here, anything else as strtoull reads it. */
static uint64_t count_of(const char *v, size_t vl)
{
    uint64_t n = 0;
    size_t i = 0;
    for (; i < vl && i < 19 && v[i] >= '0' && v[i] <= '9'; i++)
        n = n * 10 + (uint64_t)(v[i] - '0');
    return i > 0 && i == vl ? n : strtoull(v, NULL, 10);
}

/* An entry's key for the runs' index. */
static const char *ev_run_key(const void *runs, size_t i)
{
    return ((const ev_run *)runs)[i].run_id;
}

int bd_evidence_new(bd_evidence **out, const bd_task_class *tc, time_t since, bd_err *err)
{
    bd_evidence *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return nomem(err);
    ev->tc = tc;
    ev->since = since;
    bd_strindex_init(&ev->ix, ev_run_key);
    if (ev_cases_prepare(ev) != 0) {
        bd_evidence_free(ev);
        return nomem(err);
    }
    bd_record_keys_init(&ev->keys_ev, ev_keys, M__N);
    bd_record_keys_init(&ev->keys_all, ev_keys, M__ALL);
    *out = ev;
    return 0;
}

static void ev_clear(bd_evidence *ev)
{
    for (size_t i = 0; i < ev->n_runs; i++)
        free(ev->runs[i].run_id);
    for (size_t i = 0; i < ev->n_runs; i++) {
        free(ev->runs[i].slots[0]);
        free(ev->runs[i].slots[1]);
    }
    ev->n_runs = ev->outside_window = ev->subset = ev->last_run = 0;
    bd_strindex_clear(&ev->ix);
}

void bd_evidence_free(bd_evidence *ev)
{
    if (!ev)
        return;
    ev_clear(ev);
    free(ev->runs);
    free(ev->pin);
    free(ev->pin_len);
    free(ev->case_slot);
    bd_strindex_release(&ev->ix);
    free(ev);
}

/* The run's index (added when new); -1 when out of memory. */
static long run_index(bd_evidence *ev, const char *run_id)
{
    /* a run's records follow each other: the last record's run first */
    if (ev->last_run < ev->n_runs && strcmp(ev->runs[ev->last_run].run_id, run_id) == 0)
        return (long)ev->last_run;
    size_t i = bd_strindex_find(&ev->ix, ev->runs, ev->n_runs, run_id);
    ev->last_run = i;
    if (i < ev->n_runs)
        return (long)i;
    if (ev->n_runs == ev->cap_runs) {
        size_t nc = ev->cap_runs ? ev->cap_runs * 2 : 16;
        ev_run *r = realloc(ev->runs, nc * sizeof(*r));
        if (!r)
            return -1;
        ev->runs = r;
        ev->cap_runs = nc;
    }
    ev_run *r = &ev->runs[ev->n_runs];
    memset(r, 0, sizeof(*r));
    if (!(r->run_id = strdup(run_id)))
        return -1;
    if (bd_strindex_add(&ev->ix, ev->runs, ++ev->n_runs) != 0) {
        free(ev->runs[--ev->n_runs].run_id);
        return -1;
    }
    ev->last_run = ev->n_runs - 1;
    return (long)(ev->n_runs - 1);
}

static bool str_of(const char *v, size_t vl, char *out, size_t size)
{
    if (!v || vl < 2 || v[0] != '"' || v[vl - 1] != '"' || vl - 2 >= size ||
        memchr(v + 1, '\\', vl - 2))
        return false;
    memcpy(out, v + 1, vl - 2);
    out[vl - 2] = '\0';
    return true;
}

/* What one record of the task class tells the evidence, read on the walk's hashing
 * threads (ev_pre: it reads only the record and what stays unchanged in the walk). */
enum { EV_AUDIT, EV_OUTSIDE, EV_SUBSET, EV_FULL };

typedef struct ev_pre_rec {
    int kind;
    bool ns;
    uint64_t run_cases;
    ev_rec r; /* seq and hash are the take step's */
    char run[160];
    bd_runsig_pre sig; /* for the signed runs (bd_evidence_track_signed) */
} ev_pre_rec;

static void ev_pre(const char *rec, size_t len, void *outp, const void *arg)
{
    const bd_evidence *ev = arg;
    ev_pre_rec *o = outp;
    const char *v[M__ALL];
    size_t vl[M__ALL];
    char cid[160], fin[40], iso[16], scope[16], cd[80], tcd[80];
    bool passed = false;
    double score = 0;
    o->kind = EV_AUDIT;
    size_t nk = ev->sig ? M__ALL : M__N;
    /* A score record is read from both ends, stepping over none of its BenchScore; any
     * other shape the general way (the same answers on a verified record). */
    bool scored = bd_record_members_scored(rec, len, ev->sig ? &ev->keys_all : &ev->keys_ev, v, vl,
                                           &passed, &score);
    if (!scored) {
        bd_record_members(rec, len, ev_keys, nk, v, vl);
        scored = bd_record_score_of(v[M_SCORE], vl[M_SCORE], &passed, &score);
    }
    if (ev->sig) {
        /* in the order of BD_RUNSIG_KEYS */
        const char *sv[BD_RUNSIG_NKEYS] = {v[M_RUN], v[M_FPR], v[M_EVENT], v[M_DETAIL]};
        size_t svl[BD_RUNSIG_NKEYS] = {vl[M_RUN], vl[M_FPR], vl[M_EVENT], vl[M_DETAIL]};
        bd_runsig_read_members(sv, svl, &o->sig);
    }
    if (!str_of(v[M_CID], vl[M_CID], cid, sizeof(cid)) ||
        !str_of(v[M_FIN], vl[M_FIN], fin, sizeof(fin)) ||
        !str_of(v[M_ISO], vl[M_ISO], iso, sizeof(iso)) || !scored)
        return; /* an audit record */
    time_t t = (time_t)bd_history_time_epoch(fin);
    if (t == (time_t)-1 || t < ev->since) {
        o->kind = EV_OUTSIDE;
        return;
    }
    if (!str_of(v[M_SCOPE], vl[M_SCOPE], scope, sizeof(scope)) || strcmp(scope, "full") != 0 ||
        !str_of(v[M_RUN], vl[M_RUN], o->run, sizeof(o->run)) || !v[M_RC]) {
        o->kind = EV_SUBSET; /* a subset run, or a version-1 record (no scope) */
        return;
    }
    o->kind = EV_FULL;
    o->ns = strcmp(iso, "namespaces") == 0;
    o->run_cases = count_of(v[M_RC], vl[M_RC]);
    ev_rec *e = &o->r;
    memset(e, 0, sizeof(*e));
    e->case_ix = case_of(ev, v[M_CID], vl[M_CID]);
    if (e->case_ix == -2)
        e->case_ix = bd_task_class_case_index(ev->tc, cid);
    e->score = score;
    time_pack(&e->fin, fin);
    bool pv = v[M_PV] && vl[M_PV] == 4 && memcmp(v[M_PV], "true", 4) == 0;
    /* current through the one stale rule (bd_stale_bits); a record holding exactly its
     * case's pin and today's task class digest is current without a copy or a lookup */
    bool current = shortcuts && e->case_ix >= 0 &&
                   value_is(v[M_CD], vl[M_CD], ev->pin[e->case_ix], ev->pin_len[e->case_ix]) &&
                   value_is(v[M_TCD], vl[M_TCD], ev->tc->digests->task_class, ev->tcd_len);
    bool stale = e->case_ix < 0;
    if (!stale && !current) {
        const char *cdp = str_of(v[M_CD], vl[M_CD], cd, sizeof(cd)) ? cd : NULL;
        const char *tcdp = str_of(v[M_TCD], vl[M_TCD], tcd, sizeof(tcd)) ? tcd : NULL;
        stale = bd_stale_bits(cid, cdp, tcdp, ev->tc->digests) != BD_STALE_NONE;
    }
    e->flags =
        (passed ? F_PASSED : 0) | (stale ? F_STALE : 0) | (pv ? F_PV : 0) | (o->ns ? F_NS : 0);
}

/* The record ev_pre read, in chain order: counted, or kept under its run. 0, or 1 when
 * out of memory (the walk stops; the caller says so). */
static int ev_take(uint64_t seq, const void *pre, const uint8_t hash[32], void *arg)
{
    bd_evidence *ev = arg;
    const ev_pre_rec *o = pre;
    if (ev->sig && bd_runsig_walk_take_pre(ev->sig, seq, &o->sig, hash) != 0)
        return 1;
    if (o->kind == EV_OUTSIDE)
        ev->outside_window++;
    else if (o->kind == EV_SUBSET)
        ev->subset++; /* shown, never counted */
    if (o->kind != EV_FULL)
        return 0;
    long ri = run_index(ev, o->run);
    if (ri < 0)
        return 1;
    ev_run *r = &ev->runs[ri];
    if (r->n++ == 0)
        r->iso = o->ns;
    r->run_cases = o->run_cases;
    r->last_seq = seq;
    const ev_rec *e = &o->r;
    int side = o->ns ? 1 : 0;
    r->side_n[side]++;
    if (e->case_ix < 0) {
        r->unknown[side]++;
        return 0;
    }
    if (e->flags & F_STALE) {
        r->stale[side]++;
        return 0;
    }
    if (!(e->flags & F_PV)) {
        r->not_pv[side]++;
        return 0;
    }
    if (!r->slots[side] && !(r->slots[side] = calloc(ev->tc->n_cases, sizeof(ev_slot))))
        return 1;
    ev_slot *sl = &r->slots[side][e->case_ix];
    sl->usable++;
    sl->latest = *e; /* chain order: the later record of the case replaces it */
    sl->latest.seq = seq;
    memcpy(sl->latest.hash, hash, 32);
    return 0;
}

static void ev_reset(void *arg)
{
    bd_evidence *ev = arg;
    ev_clear(ev);
    if (ev->sig)
        bd_runsig_walk_reset(ev->sig);
}

void bd_evidence_track_signed(bd_evidence *ev, bd_runsig_walk *w)
{
    ev->sig = w;
}

void bd_evidence_visitor(bd_history_visit *out, bd_evidence *ev, const char *needle)
{
    *out = (bd_history_visit){.needle = needle,
                              .reset = ev_reset,
                              .ctx = ev,
                              .pre_size = sizeof(ev_pre_rec),
                              .pre = ev_pre,
                              .fn_pre = ev_take};
}

/* ---- choosing and taking ---------------------------------------------------------------- */

static bool run_full(const ev_run *r)
{
    /* run_cases records make it whole; a cancelled or capped run has fewer */
    return r->run_cases > 0 && r->n >= r->run_cases;
}

/* A full run that may be evidence: any, or with signed runs required a signed one. */
static bool run_eligible(const bd_recommendation *out, const ev_run *r, const bd_runs_report *runs)
{
    return run_full(r) && (!out->require_signed || bd_runs_report_signed(runs, r->run_id));
}

static void fill_reviewed(bd_rec_reviewed *x, const ev_rec *e, const char *case_id,
                          bd_verdict_kind k, const bd_verdict_entry *const *who, size_t n)
{
    memset(x, 0, sizeof(*x));
    x->seq = e->seq;
    snprintf(x->case_id, sizeof(x->case_id), "%s", case_id);
    x->verdict = k;
    x->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(x->reviewer[i], sizeof(x->reviewer[i]), "%s",
                 who[i]->identity[0] ? who[i]->identity : who[i]->v.reviewer);
        memcpy(x->fingerprint[i], who[i]->v.reviewer, sizeof(x->fingerprint[i]));
        x->note[i] = strdup(who[i]->v.note ? who[i]->v.note : "");
    }
}

/* What verdicts say of one record of the run: removed (true) or not, and the lists. */
static bool review_one(bd_recommendation *out, const ev_rec *e, const char *case_id,
                       const bd_verdict_set *vs)
{
    bd_verdict_summary sm;
    memset(&sm, 0, sizeof(sm));
    if (vs)
        bd_verdict_summarize(&sm, vs, e->seq);
    if (sm.removed) {
        fill_reviewed(&out->removed[out->n_removed++], e, case_id, sm.removed_by, sm.first, 2);
        return true;
    }
    const bd_verdict_entry *on[8];
    size_t n = vs ? bd_verdict_set_on(vs, e->seq, on, 8) : 0;
    for (size_t i = 0; i < n && i < 8 && sm.awaiting_second; i++)
        if (bd_verdict_kind_removes(on[i]->v.verdict)) {
            fill_reviewed(&out->awaiting[out->n_awaiting++], e, case_id, on[i]->v.verdict, &on[i],
                          1);
            break;
        }
    for (size_t i = 0; i < n && i < 8 && sm.flaky; i++)
        if (on[i]->v.verdict == BD_VERDICT_FLAKY) {
            fill_reviewed(&out->flaky[out->n_flaky++], e, case_id, BD_VERDICT_FLAKY, &on[i], 1);
            break;
        }
    if (!(e->flags & F_PASSED) && sm.n == 0)
        out->unreviewed[out->n_unreviewed++] = e->seq;
    return false;
}

/* The records of every run but the chosen one, by why they are not evidence (a run's
 * properties decide for all its records). */
static void count_other_runs(bd_recommendation *out, const bd_evidence *ev, long chosen, int k,
                             const bd_runs_report *runs)
{
    for (size_t i = 0; i < ev->n_runs; i++) {
        const ev_run *r = &ev->runs[i];
        if ((long)i == chosen)
            continue;
        if (run_full(r) && !run_eligible(out, r, runs))
            out->excluded_unsigned_runs += r->n;
        else if (run_full(r) && r->iso != k)
            out->excluded_isolation += r->n;
        else
            out->excluded_other_runs += r->n;
    }
}

/* The chosen run's records: those of the other isolation side, of unknown cases, stale or
 * unsigned ones counted; of the rest, each case's latest is its evidence unless two
 * reviewers removed it (then its case drops out: never an older record instead), the
 * earlier ones superseded. 0, or -1 when out of memory. */
static int take_chosen(bd_recommendation *out, const ev_run *r, int k, const bd_task_class *tc,
                       const bd_signed_today *st, const bd_verdict_set *vs)
{
    out->excluded_isolation += r->side_n[!k]; /* one isolation class, never mixed */
    out->excluded_unknown_case += r->unknown[k];
    out->excluded_stale += r->stale[k];
    out->excluded_unsigned += r->not_pv[k];
    for (size_t c = 0; r->slots[k] && c < tc->n_cases; c++) { /* case_ids are sorted */
        const ev_slot *sl = &r->slots[k][c];
        if (sl->usable == 0)
            continue;
        if (!(st->case_signed && st->case_signed[c])) {
            out->excluded_unsigned += sl->usable;
            continue;
        }
        out->superseded += sl->usable - 1;
        const ev_rec *e = &sl->latest;
        if (review_one(out, e, tc->case_ids[c], vs)) {
            out->excluded_removed++;
            continue;
        }
        bd_rec_evidence *x = &out->evidence[out->n_evidence];
        if (!(x->case_id = strdup(tc->case_ids[c])))
            return -1;
        out->n_evidence++;
        x->seq = e->seq;
        time_unpack(x->finished_at, sizeof(x->finished_at), &e->fin);
        x->score = e->score;
        x->passed = (e->flags & F_PASSED) != 0;
        bd_hex(x->record_hash, e->hash, 32);
    }
    return 0;
}

int bd_evidence_apply(bd_recommendation *out, const bd_evidence *ev, const bd_signed_today *st,
                      const bd_verdict_set *vs, const bd_runs_report *runs, bd_err *err)
{
    const bd_task_class *tc = ev->tc;
    bd_evidence_release_fields(out);
    for (size_t i = 0; i < out->n_evidence; i++)
        free(out->evidence[i].case_id);
    out->n_evidence = out->cases = 0;
    out->excluded_outside_window = ev->outside_window;
    out->excluded_subset = ev->subset;
    out->excluded_unknown_case = out->excluded_stale = out->excluded_unsigned =
        out->excluded_isolation = out->superseded = out->excluded_other_runs =
            out->excluded_removed = out->excluded_unsigned_runs = out->signed_records = 0;
    /* the strongest isolation class among full runs (signed ones when required), then its
     * latest full run */
    int k = 0;
    out->full_runs = 0;
    for (size_t i = 0; i < ev->n_runs; i++)
        if (run_eligible(out, &ev->runs[i], runs)) {
            out->full_runs++;
            k |= ev->runs[i].iso;
        }
    long chosen = -1;
    for (size_t i = 0; i < ev->n_runs; i++)
        if (run_eligible(out, &ev->runs[i], runs) && ev->runs[i].iso == k &&
            (chosen < 0 || ev->runs[i].last_seq > ev->runs[chosen].last_seq))
            chosen = (long)i;
    out->isolation_class[0] = '\0';
    out->run_id[0] = '\0';
    free(out->evidence);
    out->evidence = NULL;
    size_t n = tc->n_cases; /* at most a record per case is evidence */
    if (!(out->evidence = calloc(n ? n : 1, sizeof(*out->evidence))) ||
        !(out->removed = calloc(n ? n : 1, sizeof(bd_rec_reviewed))) ||
        !(out->awaiting = calloc(n ? n : 1, sizeof(bd_rec_reviewed))) ||
        !(out->flaky = calloc(n ? n : 1, sizeof(bd_rec_reviewed))) ||
        !(out->unreviewed = calloc(n ? n : 1, sizeof(uint64_t))))
        return nomem(err);
    if (chosen >= 0) {
        const ev_run *r = &ev->runs[chosen];
        snprintf(out->run_id, sizeof(out->run_id), "%s", r->run_id);
        out->run_cases = r->run_cases;
        snprintf(out->isolation_class, sizeof(out->isolation_class), "%s",
                 k ? "namespaces" : "subprocess");
        out->run_signed = bd_runs_report_signed(runs, r->run_id);
        bd_runs_report_who(runs, r->run_id, out->run_operator, sizeof(out->run_operator));
    } else {
        out->run_signed = false;
        out->run_operator[0] = '\0';
    }
    count_other_runs(out, ev, chosen, k, runs);
    if (chosen >= 0 && take_chosen(out, &ev->runs[chosen], k, tc, st, vs) != 0)
        return nomem(err);
    out->cases = out->n_evidence;
    out->signed_records = out->run_signed ? out->n_evidence : 0;
    return 0;
}

/* ---- JSON and release ------------------------------------------------------------------- */

static cJSON *reviewed_json(const bd_rec_reviewed *x, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *who = o ? cJSON_AddArrayToObject(o, "reviewers") : NULL;
        if (!who || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddNumberToObject(o, "seq", (double)x[i].seq);
        cJSON_AddStringToObject(o, "case_id", x[i].case_id);
        cJSON_AddStringToObject(o, "verdict", bd_verdict_kind_str(x[i].verdict));
        for (size_t k = 0; k < x[i].n; k++) {
            cJSON *w = cJSON_CreateObject();
            cJSON_AddItemToArray(who, w);
            cJSON_AddStringToObject(w, "reviewer", x[i].reviewer[k]);
            cJSON_AddStringToObject(w, "fingerprint", x[i].fingerprint[k]);
            cJSON_AddStringToObject(w, "note", x[i].note[k] ? x[i].note[k] : "");
        }
    }
    return a;
}

bool bd_evidence_json_add(cJSON *o, const bd_recommendation *r)
{
    cJSON *run = cJSON_AddObjectToObject(o, "run");
    if (!run)
        return false;
    if (r->run_id[0]) {
        cJSON_AddStringToObject(run, "run_id", r->run_id);
        cJSON_AddNumberToObject(run, "run_cases", (double)r->run_cases);
    } else {
        cJSON_AddNullToObject(run, "run_id");
    }
    cJSON_AddNumberToObject(run, "full_runs_in_window", (double)r->full_runs);
    cJSON_AddBoolToObject(run, "signed", r->run_signed);
    if (r->run_id[0])
        cJSON_AddStringToObject(run, "operator", r->run_operator);
    else
        cJSON_AddNullToObject(run, "operator");
    cJSON_AddBoolToObject(o, "require_signed_runs", r->require_signed);
    cJSON_AddNumberToObject(o, "signed_run_records", (double)r->signed_records);
    cJSON *ex = cJSON_GetObjectItemCaseSensitive(o, "excluded_records");
    if (ex) {
        cJSON_AddNumberToObject(ex, "subset_runs", (double)r->excluded_subset);
        cJSON_AddNumberToObject(ex, "other_runs", (double)r->excluded_other_runs);
        cJSON_AddNumberToObject(ex, "removed", (double)r->excluded_removed);
        cJSON_AddNumberToObject(ex, "unsigned_runs", (double)r->excluded_unsigned_runs);
    }
    cJSON *v = cJSON_AddObjectToObject(o, "verdicts");
    cJSON *un = v ? cJSON_AddArrayToObject(v, "unreviewed") : NULL;
    for (size_t i = 0; un && i < r->n_unreviewed; i++)
        cJSON_AddItemToArray(un, cJSON_CreateNumber((double)r->unreviewed[i]));
    cJSON *a = reviewed_json(r->removed, r->n_removed),
          *b = reviewed_json(r->awaiting, r->n_awaiting), *c = reviewed_json(r->flaky, r->n_flaky);
    if (!v || !un || !a || !b || !c) {
        cJSON_Delete(a);
        cJSON_Delete(b);
        cJSON_Delete(c);
        return false;
    }
    cJSON_AddItemToObject(v, "removed", a);
    cJSON_AddItemToObject(v, "awaiting_second", b);
    cJSON_AddItemToObject(v, "flaky", c);
    return true;
}

static void reviewed_free(bd_rec_reviewed *x, size_t n)
{
    for (size_t i = 0; x && i < n; i++)
        for (int k = 0; k < 2; k++)
            free(x[i].note[k]);
    free(x);
}

void bd_evidence_release_fields(bd_recommendation *r)
{
    reviewed_free(r->removed, r->n_removed);
    reviewed_free(r->awaiting, r->n_awaiting);
    reviewed_free(r->flaky, r->n_flaky);
    free(r->unreviewed);
    r->removed = r->awaiting = r->flaky = NULL;
    r->unreviewed = NULL;
    r->n_removed = r->n_awaiting = r->n_flaky = r->n_unreviewed = 0;
}
