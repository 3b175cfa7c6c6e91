/*
 * verdict_set.c — every verdict file of a bench, checked (verdict.h,
 * docs/provenance.md#verdicts): read and parse, signatures on a few threads through
 * provenance's bd_prov_verify_detached (and its memo), replays, subjects matched in the
 * verified walk, and which verdicts count.
 */
#include "verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "hash.h"
#include "parfor.h"
#include "path.h"

#define VERDICT_FILES_MAX 10000000u
#define VERDICT_THREADS   8

struct bd_verdict_index {
    size_t *by_score; /* entries with a trusted verdict, by score_id */
    size_t n_by_score;
    char **runs; /* run ids named by those, sorted, unique */
    size_t n_runs;
    size_t *counting; /* counting entries, by seq */
    size_t n_counting;
    const bd_history_visit *inner;
    bd_verdict_set *set;
};

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory checking verdicts");
}

const char *bd_verdict_state_str(bd_verdict_state s)
{
    switch (s) {
    case BD_VST_COUNTS:
        return "counts";
    case BD_VST_SUPERSEDED:
        return "superseded";
    case BD_VST_UNTRUSTED:
        return "untrusted";
    case BD_VST_NO_SUBJECT:
        return "subject not in this history";
    case BD_VST_BAD:
        return "bad";
    }
    return "?";
}

void bd_verdict_set_release(bd_verdict_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].path);
        bd_verdict_release(&s->e[i].v);
    }
    free(s->e);
    if (s->ix) {
        free(s->ix->by_score);
        free(s->ix->runs); /* borrowed strings */
        free(s->ix->counting);
        free(s->ix);
    }
    memset(s, 0, sizeof(*s));
}

/* ---- reading and signatures -------------------------------------------------------------- */

static int path_cmp(const void *a, const void *b)
{
    return strcmp(((const bd_verdict_entry *)a)->path, ((const bd_verdict_entry *)b)->path);
}

static int list_files(bd_verdict_set *out, const char *bench_root, const char *task_class,
                      bd_err *err)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "%s%s%s", BD_VERDICT_DIR, task_class ? "/" : "",
             task_class ? task_class : "");
    bd_tree_entry *te = NULL;
    size_t n = 0;
    if (bd_list_tree(&te, &n, bench_root, rel, task_class ? 3 : 4, VERDICT_FILES_MAX, err) != 0)
        return -1;
    if (n && !(out->e = calloc(n, sizeof(*out->e)))) {
        bd_tree_entries_free(te, n);
        return nomem(err);
    }
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(te[i].rel, '/');
        base = base ? base + 1 : te[i].rel;
        size_t bl = strlen(base);
        if (base[0] == '.' || bl < 6 || strcmp(base + bl - 5, ".json") != 0)
            continue; /* a temporary file of an atomic write, a README */
        bd_verdict_entry *e = &out->e[out->n++];
        e->path = te[i].rel;
        te[i].rel = NULL;
        e->state = te[i].regular ? BD_VST_NO_SUBJECT : BD_VST_BAD;
        if (!te[i].regular)
            bd_err_set(&e->err, BD_E_VERDICT_INVALID, e->path, 0, 0,
                       "not a valid verdict: a verdict file is a regular file, not a link");
    }
    bd_tree_entries_free(te, n);
    if (out->n > 1)
        qsort(out->e, out->n, sizeof(*out->e), path_cmp);
    return 0;
}

/* The signature's verdict on a parsed entry (state and err/why). -1: GnuPG failed. */
static int judge(bd_verdict_entry *e, bd_prov_ctx *prov, bd_err *err)
{
    char *msg = NULL;
    size_t mlen;
    if (bd_verdict_message(&msg, &mlen, &e->v, err) != 0)
        return -1;
    bd_prov_detached d;
    int rc = bd_prov_verify_detached(&d, prov, msg, mlen, e->v.signature, err);
    free(msg);
    if (rc != 0)
        return -1;
    const char *bad = NULL;
    switch (d.verdict) {
    case BD_PROV_DET_NOT_SIGNATURE:
    case BD_PROV_DET_SEVERAL:
    case BD_PROV_DET_BAD:
        bad = "its signature is not one good signature over its verdict message (forged or "
              "altered)";
        break;
    case BD_PROV_DET_UNKNOWN_KEY:
        snprintf(e->why, sizeof(e->why), "signed by key %s, which is not in bench/keys",
                 d.key_id[0] ? d.key_id : "?");
        e->state = BD_VST_UNTRUSTED;
        return 0;
    default:
        break;
    }
    if (!bad && strcmp(d.fingerprint, e->v.reviewer) != 0)
        bad = "it names one reviewer but was signed by another key";
    if (bad) {
        e->state = BD_VST_BAD;
        bd_err_set(&e->err, BD_E_VERDICT_INVALID, e->path, 0, 0,
                   "not a valid verdict: %s; remove it from the bench (`git rm %s`)", bad, e->path);
        return 0;
    }
    const bd_signer *s = bd_signers_find(bd_prov_ctx_signers(prov), e->v.reviewer);
    if (s)
        snprintf(e->identity, sizeof(e->identity), "%s", s->identity ? s->identity : "");
    const char *why = d.verdict == BD_PROV_DET_REVOKED   ? "its key is revoked"
                      : d.verdict == BD_PROV_DET_EXPIRED ? "its key has expired"
                      : d.verdict != BD_PROV_DET_GOOD    ? "GnuPG reports its key unusable"
                      : !s ? "its key is not in bench/trusted-signers.yaml"
                      : !(s->roles & BD_ROLE_REVIEWER)
                          ? "its key does not have the reviewer role in trusted-signers.yaml"
                          : NULL;
    if (why) {
        snprintf(e->why, sizeof(e->why), "%s", why);
        e->state = BD_VST_UNTRUSTED;
    }
    return 0;
}

typedef struct load_job {
    bd_verdict_set *set;
    const char *root;
    bd_prov_ctx *prov;
} load_job;

static int load_one(load_job *j, bd_verdict_entry *e, bd_err *err)
{
    if (e->state == BD_VST_BAD)
        return 0;
    char *full = bd_path_join(j->root, e->path), *buf = NULL;
    size_t len = 0;
    if (!full)
        return nomem(err);
    int rc = 0;
    if (bd_read_file(&buf, &len, full, BD_VERDICT_FILE_MAX, BD_E_VERDICT_INVALID, &e->err) != 0 ||
        bd_verdict_parse(&e->v, buf, len, e->path, &e->err) != 0) {
        if (e->err.code == BD_E_IO || e->err.code == BD_E_NOMEM) {
            *err = e->err;
            rc = -1;
        }
        e->state = BD_VST_BAD;
    } else {
        rc = judge(e, j->prov, err);
    }
    free(buf);
    free(full);
    return rc;
}

static int load_at(size_t i, void *arg, bd_err *err)
{
    load_job *j = arg;
    return load_one(j, &j->set->e[i], err);
}

static int sig_cmp(const void *a, const void *b, void *set)
{
    const bd_verdict_entry *e = ((bd_verdict_set *)set)->e;
    return strcmp(e[*(const size_t *)a].v.signature, e[*(const size_t *)b].v.signature);
}

/* qsort_r is a GNU extension; one thread-local pointer keeps it portable here. */
static _Thread_local bd_verdict_set *sort_set;
static int sig_cmp_q(const void *a, const void *b)
{
    return sig_cmp(a, b, sort_set);
}

/* Two files with one signature: both are refused as a replay. */
static int mark_replays(bd_verdict_set *s, bd_err *err)
{
    size_t *ix = malloc((s->n ? s->n : 1) * sizeof(*ix)), m = 0;
    if (!ix)
        return nomem(err);
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].v.signature)
            ix[m++] = i;
    sort_set = s;
    qsort(ix, m, sizeof(*ix), sig_cmp_q);
    for (size_t i = 0; i + 1 < m; i++) {
        if (sig_cmp(&ix[i], &ix[i + 1], s) != 0)
            continue;
        for (size_t k = i; k <= i + 1; k++) {
            bd_verdict_entry *e = &s->e[ix[k]];
            e->state = BD_VST_BAD;
            bd_err_set(&e->err, BD_E_VERDICT_REPLAYED, e->path, 0, 0,
                       "a replayed verdict: %s and %s hold the same signature; a verdict is "
                       "signed once, for one file; remove the copy",
                       s->e[ix[i]].path, s->e[ix[i + 1]].path);
        }
    }
    free(ix);
    return 0;
}

static int cmp_score(const void *a, const void *b)
{
    const bd_verdict_entry *e = sort_set->e;
    int c = strcmp(e[*(const size_t *)a].v.score_id, e[*(const size_t *)b].v.score_id);
    return c ? c
             : (*(const size_t *)a > *(const size_t *)b) -
                   (*(const size_t *)a < *(const size_t *)b);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The subjects to look for in the walk: trusted entries by score_id, their run ids. */
static int build_index(bd_verdict_set *s, bd_err *err)
{
    struct bd_verdict_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return nomem(err);
    s->ix = ix;
    size_t n = s->n ? s->n : 1;
    if (!(ix->by_score = malloc(n * sizeof(size_t))) || !(ix->runs = malloc(n * sizeof(char *))))
        return nomem(err);
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].state == BD_VST_NO_SUBJECT) {
            ix->by_score[ix->n_by_score++] = i;
            ix->runs[ix->n_runs++] = s->e[i].v.run_id;
        }
    sort_set = s;
    qsort(ix->by_score, ix->n_by_score, sizeof(size_t), cmp_score);
    qsort(ix->runs, ix->n_runs, sizeof(char *), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < ix->n_runs; i++)
        if (u == 0 || strcmp(ix->runs[u - 1], ix->runs[i]) != 0)
            ix->runs[u++] = ix->runs[i];
    ix->n_runs = u;
    return 0;
}

int bd_verdict_set_load(bd_verdict_set *out, const char *bench_root, const char *task_class,
                        bd_prov_ctx *prov, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (task_class && !bd_name_valid(task_class))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "'%s' is not a task class name", task_class);
    if (list_files(out, bench_root, task_class, err) != 0)
        goto fail;
    load_job j = {.set = out, .root = bench_root, .prov = prov};
    /* GnuPG does the work in processes of its own: the threads mostly wait for them */
    if (bd_parfor(out->n, VERDICT_THREADS, 8, load_at, &j, err) != 0)
        goto fail;
    if (mark_replays(out, err) != 0 || build_index(out, err) != 0)
        goto fail;
    for (size_t i = 0; i < out->n; i++) {
        out->n_bad += out->e[i].state == BD_VST_BAD;
        out->n_untrusted += out->e[i].state == BD_VST_UNTRUSTED;
    }
    return 0;
fail:
    bd_verdict_set_release(out);
    return -1;
}

/* ---- matching subjects in the walk ---------------------------------------------------------- */

/* What a record tells the verdicts, read on the walk's hashing threads (match_pre): its
 * score_id, task class and case when its run is one a trusted verdict names. */
typedef struct match_pre_rec {
    bool named;
    bool passed;
    char sid[BD_HASH_BUF], run[160], tc[160], cid[160];
} match_pre_rec;

/* Reads only the record and the index, which the walk does not change. */
static void match_read(const struct bd_verdict_index *ix, const char *rec, size_t len,
                       match_pre_rec *o)
{
    o->named = false;
    if (ix->n_runs == 0 || !bd_verdict_record_str(rec, len, "run_id", o->run, sizeof(o->run)))
        return;
    char *key = o->run;
    if (!bsearch(&key, ix->runs, ix->n_runs, sizeof(char *), cmp_str))
        return;
    bd_err e = BD_ERR_INIT;
    double score;
    if (bd_score_id(o->sid, rec, len, &e) != 0 ||
        !bd_verdict_record_str(rec, len, "task_class", o->tc, sizeof(o->tc)) ||
        !bd_verdict_record_str(rec, len, "case_id", o->cid, sizeof(o->cid)))
        return;
    o->passed = false;
    bd_record_score(rec, len, &o->passed, &score);
    o->named = true;
}

/* In chain order: the verdicts naming this record learn its seq. */
static void match_take(struct bd_verdict_index *ix, uint64_t seq, const match_pre_rec *o)
{
    if (!o->named)
        return;
    bd_verdict_set *s = ix->set;
    size_t lo = 0, hi = ix->n_by_score;
    while (lo < hi) { /* the first entry with this score_id */
        size_t mid = (lo + hi) / 2;
        if (strcmp(s->e[ix->by_score[mid]].v.score_id, o->sid) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < ix->n_by_score; k++) {
        bd_verdict_entry *en = &s->e[ix->by_score[k]];
        if (strcmp(en->v.score_id, o->sid) != 0)
            break;
        /* the subject named must be this record: its task class, run and case too */
        if (en->seq == 0 && strcmp(en->v.task_class, o->tc) == 0 &&
            strcmp(en->v.run_id, o->run) == 0 && strcmp(en->v.case_id, o->cid) == 0) {
            en->seq = seq;
            en->passed = o->passed;
        }
    }
}

static int match_one(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *arg)
{
    struct bd_verdict_index *ix = arg;
    if (ix->inner && ix->inner->fn) {
        int r = ix->inner->fn(seq, rec, len, hash, ix->inner->ctx);
        if (r != 0)
            return r;
    }
    match_pre_rec o;
    match_read(ix, rec, len, &o);
    match_take(ix, seq, &o);
    return 0;
}

/* With an inner visitor that has a pre step: its result first, then this one's. */
static size_t inner_pre_size(const struct bd_verdict_index *ix)
{
    return (ix->inner->pre_size + 15) / 16 * 16;
}

static void match_pre(const char *rec, size_t len, void *out, const void *arg)
{
    const struct bd_verdict_index *ix = arg;
    ix->inner->pre(rec, len, out, ix->inner->ctx);
    match_read(ix, rec, len, (match_pre_rec *)(void *)((char *)out + inner_pre_size(ix)));
}

static int match_take_pre(uint64_t seq, const void *pre, const uint8_t hash[32], void *arg)
{
    struct bd_verdict_index *ix = arg;
    int r = ix->inner->fn_pre(seq, pre, hash, ix->inner->ctx);
    if (r != 0)
        return r;
    match_take(ix, seq,
               (const match_pre_rec *)(const void *)((const char *)pre + inner_pre_size(ix)));
    return 0;
}

static void match_reset(void *arg)
{
    struct bd_verdict_index *ix = arg;
    if (ix->inner && ix->inner->reset)
        ix->inner->reset(ix->inner->ctx);
    for (size_t k = 0; k < ix->n_by_score; k++)
        ix->set->e[ix->by_score[k]].seq = 0;
}

void bd_verdict_set_visitor(bd_history_visit *out, bd_verdict_set *s, const bd_history_visit *inner)
{
    memset(out, 0, sizeof(*out)); /* what a wrapper does not set stays unset */
    s->ix->inner = inner;
    s->ix->set = s;
    *out = (bd_history_visit){.needle = inner ? inner->needle : NULL};
    out->reset = match_reset;
    out->ctx = s->ix;
    if (inner && inner->pre && inner->fn_pre && s->ix->n_runs == 0) {
        *out = *inner; /* no verdict names a run: nothing to match */
    } else if (inner && inner->pre && inner->fn_pre) {
        /* The inner visitor reads on the hashing threads: so does this one. */
        out->pre_size = inner_pre_size(s->ix) + sizeof(match_pre_rec);
        out->pre = match_pre;
        out->fn_pre = match_take_pre;
    } else {
        out->fn = match_one;
    }
}

/* ---- which verdicts count ------------------------------------------------------------------- */

static int cmp_subject(const void *a, const void *b)
{
    const bd_verdict_entry *x = &sort_set->e[*(const size_t *)a],
                           *y = &sort_set->e[*(const size_t *)b];
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    int c = strcmp(x->v.reviewer, y->v.reviewer);
    if (c)
        return c;
    if ((c = strcmp(x->v.at, y->v.at)) != 0)
        return c;
    return strcmp(x->path, y->path);
}

void bd_verdict_set_settle(bd_verdict_set *s)
{
    struct bd_verdict_index *ix = s->ix;
    s->matched = true;
    s->n_no_subject = s->n_counting = 0;
    if (!ix)
        return;
    size_t m = 0;
    for (size_t k = 0; k < ix->n_by_score; k++) {
        bd_verdict_entry *e = &s->e[ix->by_score[k]];
        if (e->seq)
            ix->by_score[m++] = ix->by_score[k]; /* reused: matched entries */
        else
            s->n_no_subject++;
    }
    sort_set = s;
    qsort(ix->by_score, m, sizeof(size_t), cmp_subject);
    free(ix->counting);
    ix->counting = malloc((m ? m : 1) * sizeof(size_t));
    ix->n_counting = 0;
    for (size_t k = 0; k < m; k++) {
        bd_verdict_entry *e = &s->e[ix->by_score[k]];
        bool last = k + 1 == m || s->e[ix->by_score[k + 1]].seq != e->seq ||
                    strcmp(s->e[ix->by_score[k + 1]].v.reviewer, e->v.reviewer) != 0;
        e->state = last ? BD_VST_COUNTS : BD_VST_SUPERSEDED;
        if (last && e->v.verdict != BD_VERDICT_WITHDRAWN && ix->counting) {
            ix->counting[ix->n_counting++] = ix->by_score[k];
            s->n_counting++;
        }
    }
    ix->n_by_score = 0; /* the walk's index is spent */
}

size_t bd_verdict_set_on(const bd_verdict_set *s, uint64_t seq, const bd_verdict_entry **out,
                         size_t cap)
{
    const struct bd_verdict_index *ix = s->ix;
    if (!ix || !ix->counting)
        return 0;
    size_t lo = 0, hi = ix->n_counting;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->e[ix->counting[mid]].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t n = 0;
    for (size_t k = lo; k < ix->n_counting && s->e[ix->counting[k]].seq == seq; k++, n++)
        if (n < cap)
            out[n] = &s->e[ix->counting[k]];
    return n;
}

void bd_verdict_summarize(bd_verdict_summary *out, const bd_verdict_set *s, uint64_t seq)
{
    const bd_verdict_entry *on[64];
    memset(out, 0, sizeof(*out));
    size_t n = bd_verdict_set_on(s, seq, on, 64);
    if (n > 64)
        n = 64;
    out->n = n;
    out->agreed = n > 0;
    for (size_t i = 0; i < n; i++) {
        bd_verdict_kind k = on[i]->v.verdict;
        if (k != on[0]->v.verdict)
            out->agreed = false;
        if (k == BD_VERDICT_FLAKY)
            out->flaky = true;
        if (!bd_verdict_kind_removes(k))
            continue;
        for (size_t j = 0; j < i && !out->removed; j++)
            if (on[j]->v.verdict == k && strcmp(on[j]->v.reviewer, on[i]->v.reviewer) != 0 &&
                on[j]->identity[0] && strcasecmp(on[j]->identity, on[i]->identity) != 0) {
                out->removed = true;
                out->removed_by = k;
                out->first[0] = on[j];
                out->first[1] = on[i];
            }
        if (!out->removed)
            out->awaiting_second = true;
    }
    if (out->removed)
        out->awaiting_second = false;
    if (out->agreed)
        out->agreed_on = on[0]->v.verdict;
}

int bd_verdict_set_check(bd_verdict_set *out, const char *bench_root, const char *task_class,
                         bd_prov_ctx *prov, bd_err *err)
{
    if (bd_verdict_set_load(out, bench_root, task_class, prov, err) != 0)
        return -1;
    if (out->ix->n_by_score == 0) {
        bd_verdict_set_settle(out);
        return 0;
    }
    bd_history *h = NULL;
    bd_history_verify_result res;
    memset(&res, 0, sizeof(res));
    bd_history_visit visit;
    bd_verdict_set_visitor(&visit, out, NULL);
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.visit = &visit;
    int rc = -1;
    if (bd_history_open(&h, bench_root, BD_HISTORY_READ, err) == 0 &&
        bd_history_verify_with(h, &o, &res, err) == 0) {
        bd_verdict_set_settle(out);
        rc = 0;
    }
    bd_history_verify_result_release(&res);
    bd_history_free(h);
    if (rc != 0)
        bd_verdict_set_release(out);
    return rc;
}

static const char *who(const bd_verdict_entry *e)
{
    return e->identity[0] ? e->identity : e->v.reviewer;
}

const char *bd_verdict_badge(char *buf, size_t cap, const bd_verdict_set *s, uint64_t seq)
{
    bd_verdict_summary sm;
    buf[0] = '\0';
    if (!s || !cap)
        return buf;
    bd_verdict_summarize(&sm, s, seq);
    if (sm.removed) {
        snprintf(buf, cap, "removed: %s (%s, %s)", bd_verdict_kind_str(sm.removed_by),
                 who(sm.first[0]), who(sm.first[1]));
        return buf;
    }
    const bd_verdict_entry *on[16];
    size_t n = bd_verdict_set_on(s, seq, on, 16), len = 0;
    for (size_t i = 0; i < n && i < 16 && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s by %s%s", i ? "; " : "",
                         bd_verdict_kind_str(on[i]->v.verdict), who(on[i]),
                         bd_verdict_kind_removes(on[i]->v.verdict) ? ", awaiting a second reviewer"
                                                                   : "");
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return buf;
}
