/*
 * runsigned.c — signed runs: the message, the run.signed detail, and the check of every
 * run.signed of a verified chain (runsigned.h, docs/formats.md#signed-runs).
 */
#include "runsigned.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "canon.h"
#include "hash.h"
#include "parfor.h"
#include "provenance.h"
#include "strindex.h"

static bool run_id_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= BD_RUN_SIGNED_ID_BUF)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != ':' && c != '-')))
            return false;
    }
    return true;
}

static bool hash_ok(const char *s)
{
    return s && strlen(s) == BD_HASH_HEX_LEN && bd_hex_lower_str(s, BD_HASH_HEX_LEN);
}

int bd_run_signed_message(char **out, size_t *len, const char *run_id, uint64_t records,
                          uint64_t first_seq, const char *last_record_hash, bd_err *err)
{
    *out = NULL;
    if (!run_id_ok(run_id) || !hash_ok(last_record_hash) || records == 0 || first_seq == 0)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "a signed run needs a valid run id, at least one record and the "
                          "hash of its last record");
    const char *fmt = BD_RUN_SIGNED_MAGIC "\nrun_id:%s\nrecords:%" PRIu64 "\nfirst_seq:%" PRIu64
                                          "\nlast_record_hash:%s\n";
    int n = snprintf(NULL, 0, fmt, run_id, records, first_seq, last_record_hash);
    char *m = malloc((size_t)n + 1);
    if (!m)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    snprintf(m, (size_t)n + 1, fmt, run_id, records, first_seq, last_record_hash);
    *out = m;
    if (len)
        *len = (size_t)n;
    return 0;
}

char *bd_run_signed_detail(const char *run_id, uint64_t records, uint64_t first_seq,
                           const char *last_record_hash, const char *signature, size_t *len)
{
    cJSON *o = cJSON_CreateObject();
    char *s = NULL;
    if (o && cJSON_AddStringToObject(o, "run_id", run_id) &&
        cJSON_AddNumberToObject(o, "records", (double)records) &&
        cJSON_AddNumberToObject(o, "first_seq", (double)first_seq) &&
        cJSON_AddStringToObject(o, "last_record_hash", last_record_hash) &&
        cJSON_AddStringToObject(o, "signature", signature))
        s = bd_canon_json(o, len);
    cJSON_Delete(o);
    return s;
}

void bd_run_signed_release(bd_run_signed *s)
{
    if (s) {
        free(s->signature);
        memset(s, 0, sizeof(*s));
    }
}

/* A whole number in 1..BD_HISTORY_SEQ_MAX from a JSON number, else 0. */
static uint64_t count_of(const cJSON *v)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (double)BD_HISTORY_SEQ_MAX ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return 0;
    return (uint64_t)v->valuedouble;
}

int bd_run_signed_parse(bd_run_signed *out, const char *detail, size_t len, char why[256])
{
    memset(out, 0, sizeof(*out));
    why[0] = '\0';
    cJSON *o = cJSON_ParseWithLength(detail, len);
    const char *bad = NULL;
    char *canon = NULL;
    if (!cJSON_IsObject(o)) {
        bad = "its detail is not a JSON object";
        goto out;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "run_id");
    const cJSON *lh = cJSON_GetObjectItemCaseSensitive(o, "last_record_hash");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(o, "signature");
    out->records = count_of(cJSON_GetObjectItemCaseSensitive(o, "records"));
    out->first_seq = count_of(cJSON_GetObjectItemCaseSensitive(o, "first_seq"));
    if (cJSON_GetArraySize(o) != 5 || !cJSON_IsString(id) || !run_id_ok(id->valuestring) ||
        !cJSON_IsString(lh) || !hash_ok(lh->valuestring) || !cJSON_IsString(sig) || !out->records ||
        !out->first_seq) {
        bad = "its detail is not exactly run_id, records, first_seq, last_record_hash and "
              "signature with their types";
        goto out;
    }
    size_t clen;
    canon = bd_canon_json(o, &clen);
    if (!canon || clen != len || memcmp(canon, detail, len) != 0) {
        bad = "its detail is not in canonical form";
        goto out;
    }
    snprintf(out->run_id, sizeof(out->run_id), "%s", id->valuestring);
    memcpy(out->last_record_hash, lh->valuestring, BD_HASH_BUF);
    if (!(out->signature = strdup(sig->valuestring)))
        bad = "out of memory";
out:
    if (bad) {
        snprintf(why, 256, "%s", bad);
        bd_run_signed_release(out);
    }
    free(canon);
    cJSON_Delete(o);
    return bad ? -1 : 0;
}

/* ---- the walk ---------------------------------------------------------------------- */

/* One run.signed of a run, with the run's records as they stood before it. */
typedef struct walk_sig {
    uint64_t seq;
    uint64_t count, first_seq; /* the run's fingerprinted records before it */
    char last_hash[BD_HASH_BUF];
    bool mixed;
    char fpr[BD_FPR_LEN + 1];        /* the records' fingerprint then */
    char signer_fpr[BD_FPR_LEN + 1]; /* the audit record's operator_fingerprint */
    uint8_t hash[32];                /* its record hash, as the walk verified it */
    bool filled;                     /* s parsed from its bytes (sig_fill) */
    bd_run_signed s;
} walk_sig;

/* One run as the walk sees it. */
typedef struct walk_run {
    char run_id[BD_RUN_SIGNED_ID_BUF];
    char fpr[BD_FPR_LEN + 1]; /* of its first fingerprinted record */
    bool mixed;               /* a record of it carries another fingerprint */
    uint64_t count, first_seq;
    uint8_t last_hash[32]; /* of its last fingerprinted record (when count > 0) */
    walk_sig *sigs;        /* its run.signed records, in seq order (partial imports add more) */
    size_t n_sigs;
    char bad[320]; /* a structural failure found during the walk */
} walk_run;

struct bd_runsig_walk {
    walk_run *runs;
    size_t n, cap;
    bd_strindex ix; /* runs by run id */
    size_t last;    /* the run last taken (n: none): a run's records follow each other */
    size_t pending; /* run.signed records taken through the pre step, not yet filled */
    bd_history_visit visit;
};

static const char *walk_run_key(const void *runs, size_t i)
{
    return ((const walk_run *)runs)[i].run_id;
}

/* The run `id` (added when new). NULL when out of memory. */
static walk_run *run_get(bd_runsig_walk *w, const char *id)
{
    if (w->last < w->n && strcmp(w->runs[w->last].run_id, id) == 0)
        return &w->runs[w->last];
    size_t i = bd_strindex_find(&w->ix, w->runs, w->n, id);
    w->last = i;
    if (i < w->n)
        return &w->runs[i];
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 32;
        walk_run *r = realloc(w->runs, cap * sizeof(*r));
        if (!r)
            return NULL;
        w->runs = r;
        w->cap = cap;
    }
    walk_run *r = &w->runs[w->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->run_id, sizeof(r->run_id), "%s", id);
    if (bd_strindex_add(&w->ix, w->runs, w->n) != 0) {
        w->n--;
        return NULL;
    }
    w->last = w->n - 1;
    return r;
}

/* A member's raw JSON string value (quotes included) as a C string into buf; false when
 * it is not a plain string that fits (escapes never occur in ids and fingerprints). */
static bool raw_str(const char *v, size_t vl, char *buf, size_t cap)
{
    if (!v || vl < 2 || v[0] != '"' || vl - 2 >= cap || memchr(v + 1, '\\', vl - 2))
        return false;
    memcpy(buf, v + 1, vl - 2);
    buf[vl - 2] = '\0';
    return true;
}

/* Keep a run.signed of `r` at `seq` with the run as it stands now; its detail is filled
 * by sig_fill (from the record's bytes). Returns 0 or -1 (out of memory). */
static int on_signed(bd_runsig_walk *w, walk_run *r, uint64_t seq, const char *fpr,
                     const uint8_t hash[32])
{
    walk_sig *g = realloc(r->sigs, (r->n_sigs + 1) * sizeof(*g));
    if (!g)
        return -1;
    r->sigs = g;
    g = &r->sigs[r->n_sigs++];
    memset(g, 0, sizeof(*g));
    g->seq = seq;
    g->count = r->count;
    g->first_seq = r->first_seq;
    g->mixed = r->mixed;
    if (r->count)
        bd_hex(g->last_hash, r->last_hash, 32);
    memcpy(g->fpr, r->fpr, sizeof(g->fpr));
    memcpy(g->hash, hash, 32);
    snprintf(g->signer_fpr, sizeof(g->signer_fpr), "%s", fpr);
    w->pending++;
    return 0;
}

void bd_runsig_read(const char *rec, size_t len, bd_runsig_pre *out)
{
    static const char *const keys[BD_RUNSIG_NKEYS] = {BD_RUNSIG_KEYS};
    const char *v[BD_RUNSIG_NKEYS];
    size_t vl[BD_RUNSIG_NKEYS];
    bd_record_members(rec, len, keys, BD_RUNSIG_NKEYS, v, vl);
    bd_runsig_read_members(v, vl, out);
}

void bd_runsig_read_members(const char *const *v, const size_t *vl, bd_runsig_pre *out)
{
    char ev[32];
    out->kind = BD_RUNSIG_PRE_NONE;
    out->run_id[0] = '\0';
    out->fpr[0] = '\0';
    if (!raw_str(v[1], vl[1], out->fpr, sizeof(out->fpr)))
        return; /* null: an unsigned record */
    if (raw_str(v[0], vl[0], out->run_id, sizeof(out->run_id))) {
        out->kind = BD_RUNSIG_PRE_SCORE;
        return;
    }
    if (!raw_str(v[2], vl[2], ev, sizeof(ev)) || strcmp(ev, BD_RUN_SIGNED_EVENT) != 0 || !v[3])
        return;
    /* Which run it signs: the run_id inside the detail's escaped JSON (ids hold no
     * escapes). sig_fill parses the detail properly and holds it to this. */
    out->kind = BD_RUNSIG_PRE_SIGNED;
    static const char key[] = "\\\"run_id\\\":\\\"";
    const char *k = memmem(v[3], vl[3], key, sizeof(key) - 1);
    if (!k)
        return;
    const char *id = k + sizeof(key) - 1, *end = v[3] + vl[3];
    size_t n = 0;
    while (id + n < end && id[n] != '\\' && id[n] != '"' && n + 1 < sizeof(out->run_id))
        n++;
    memcpy(out->run_id, id, n);
    out->run_id[n] = '\0';
}

/* bd_runsig_walk_take_pre, giving the run taken (*out; NULL for a record of none). */
static int take(bd_runsig_walk *w, uint64_t seq, const bd_runsig_pre *p, const uint8_t hash[32],
                walk_run **out)
{
    *out = NULL;
    if (p->kind == BD_RUNSIG_PRE_NONE)
        return 0;
    char own[BD_RUN_SIGNED_ID_BUF];
    const char *key = p->run_id;
    if (!key[0]) { /* not attributable to a run: a run of its own, bad */
        snprintf(own, sizeof(own), "?run.signed@%" PRIu64, seq);
        key = own;
    }
    walk_run *r = run_get(w, key);
    if (!r)
        return -1;
    *out = r;
    if (p->kind == BD_RUNSIG_PRE_SIGNED)
        return on_signed(w, r, seq, p->fpr, hash);
    if (!r->count) {
        memcpy(r->fpr, p->fpr, sizeof(r->fpr));
        r->first_seq = seq;
    } else if (strcmp(r->fpr, p->fpr) != 0) {
        r->mixed = true;
    }
    r->count++;
    memcpy(r->last_hash, hash, 32);
    return 0;
}

int bd_runsig_walk_take_pre(bd_runsig_walk *w, uint64_t seq, const bd_runsig_pre *p,
                            const uint8_t hash[32])
{
    walk_run *r;
    return take(w, seq, p, hash, &r);
}

/* Parse the detail (NULL: none) of the run.signed `g` of run `r`: a malformed one, or
 * one naming another run than bd_runsig_read found, makes the run bad. */
static void sig_fill(walk_run *r, walk_sig *g, const char *detail)
{
    char why[256] = "";
    if (!detail)
        snprintf(why, sizeof(why), "its detail is not a string");
    else if (bd_run_signed_parse(&g->s, detail, strlen(detail), why) == 0 &&
             strcmp(g->s.run_id, r->run_id) != 0)
        snprintf(why, sizeof(why), "its detail names another run");
    if (why[0]) {
        snprintf(r->bad, sizeof(r->bad), "the run.signed record %" PRIu64 " is malformed: %s",
                 g->seq, why);
        bd_run_signed_release(&g->s);
    }
    g->filled = true;
}

static int walk_fn(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *ctx)
{
    bd_runsig_walk *w = ctx;
    bd_runsig_pre p;
    walk_run *r;
    bd_runsig_read(rec, len, &p);
    if (take(w, seq, &p, hash, &r) != 0)
        return -1;
    if (p.kind != BD_RUNSIG_PRE_SIGNED)
        return 0;
    /* The detail is a JSON string holding the canonical JSON: unescape it. */
    static const char *const keys[] = {"detail"};
    const char *dv = NULL;
    size_t dl = 0;
    bd_record_members(rec, len, keys, 1, &dv, &dl);
    cJSON *d = dv ? cJSON_ParseWithLength(dv, dl) : NULL;
    sig_fill(r, &r->sigs[r->n_sigs - 1], cJSON_IsString(d) ? d->valuestring : NULL);
    cJSON_Delete(d);
    w->pending--;
    return 0;
}

int bd_runsig_walk_fill(bd_runsig_walk *w, bd_history *h, bd_err *err)
{
    for (size_t i = 0; w->pending && i < w->n; i++) {
        walk_run *r = &w->runs[i];
        for (size_t k = 0; k < r->n_sigs; k++) {
            walk_sig *g = &r->sigs[k];
            if (g->filled)
                continue;
            bd_history_record rec;
            if (bd_history_read(h, g->seq, &rec, err) != 0)
                return -1;
            char hex[BD_HASH_BUF];
            bd_hex(hex, g->hash, 32);
            /* the bytes read again must be the bytes the walk verified */
            bool same = strcmp(hex, rec.hash) == 0;
            if (same)
                sig_fill(r, g, rec.detail);
            bd_history_record_release(&rec);
            if (!same) {
                bd_err_set(err, BD_E_CHAIN_TAMPERED, NULL, 0, 0,
                           "history record %" PRIu64 " changed while it was read; run ", g->seq);
                return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
            }
            w->pending--;
        }
    }
    return 0;
}

static void walk_reset(void *ctx)
{
    bd_runsig_walk *w = ctx;
    for (size_t i = 0; i < w->n; i++) {
        for (size_t k = 0; k < w->runs[i].n_sigs; k++)
            bd_run_signed_release(&w->runs[i].sigs[k].s);
        free(w->runs[i].sigs);
    }
    w->n = 0;
    w->pending = 0;
    bd_strindex_clear(&w->ix);
}

int bd_runsig_walk_take(bd_runsig_walk *w, uint64_t seq, const char *rec, size_t len,
                        const uint8_t hash[32])
{
    const char *n = w->visit.needle;
    return memmem(rec, len, n, strlen(n)) ? walk_fn(seq, rec, len, hash, w) : 0;
}

void bd_runsig_walk_reset(bd_runsig_walk *w)
{
    walk_reset(w);
}

bd_runsig_walk *bd_runsig_walk_new(void)
{
    bd_runsig_walk *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    bd_strindex_init(&w->ix, walk_run_key);
    w->visit = (bd_history_visit){
        .needle = "\"operator_fingerprint\":\"", .fn = walk_fn, .reset = walk_reset, .ctx = w};
    return w;
}

void bd_runsig_walk_free(bd_runsig_walk *w)
{
    if (!w)
        return;
    walk_reset(w);
    free(w->runs);
    bd_strindex_release(&w->ix);
    free(w);
}

const bd_history_visit *bd_runsig_walk_visit(bd_runsig_walk *w)
{
    return &w->visit;
}

/* ---- judging ----------------------------------------------------------------------- */

/* The counts run.signed `g` of run `id` states against the records before it: "" when
 * they hold, else why into bad. */
static void judge_counts(const walk_sig *g, const char *id, char *bad, size_t cap)
{
    bad[0] = '\0';
    if (g->count == 0)
        snprintf(bad, cap,
                 "the run.signed record %" PRIu64 " counts %" PRIu64
                 " records of run %s, and no record of that run carries a fingerprint before it",
                 g->seq, g->s.records, id);
    else if (g->mixed || strcmp(g->fpr, g->signer_fpr) != 0)
        snprintf(bad, cap,
                 "records of run %s carry a fingerprint other than its run.signed's (record "
                 "%" PRIu64 ")",
                 id, g->seq);
    else if (g->s.records != g->count || g->s.first_seq != g->first_seq ||
             strcmp(g->s.last_record_hash, g->last_hash) != 0)
        snprintf(
            bad, cap,
            "the run.signed record %" PRIu64 " of run %s states %" PRIu64
            " records from seq %" PRIu64 "; the chain holds %" PRIu64 " from seq %" PRIu64 "%s",
            g->seq, id, g->s.records, g->s.first_seq, g->count, g->first_seq,
            g->s.records == g->count && g->s.first_seq == g->first_seq ? " with another last record"
                                                                       : "");
}

/* The signature of run.signed `g` whose counts hold: SIGNED, CLAIM (a key not trusted as
 * operator) or BAD, into o. Returns 0, or -1 when GnuPG could not run. */
static int judge_signature(bd_runsig *o, const walk_sig *g, const char *id, bd_prov_ctx *prov,
                           bd_err *err)
{
    char *msg = NULL;
    size_t mlen = 0;
    if (bd_run_signed_message(&msg, &mlen, id, g->s.records, g->s.first_seq, g->s.last_record_hash,
                              err) != 0)
        return -1;
    bd_prov_detached d;
    int rc = bd_prov_verify_detached(&d, prov, msg, mlen, g->s.signature, err);
    free(msg);
    if (rc != 0)
        return -1;
    const bd_signer *sg =
        d.fingerprint[0] ? bd_signers_find(bd_prov_ctx_signers(prov), d.fingerprint) : NULL;
    o->state = BD_RUNSIG_CLAIM;
    o->identity[0] = '\0';
    if (d.verdict == BD_PROV_DET_NOT_SIGNATURE || d.verdict == BD_PROV_DET_SEVERAL ||
        d.verdict == BD_PROV_DET_BAD) {
        o->state = BD_RUNSIG_BAD;
        snprintf(o->why, sizeof(o->why),
                 "the signature of run.signed record %" PRIu64
                 " does not hold over its run id, records, first_seq and last_record_hash: it "
                 "was altered or made for other records",
                 g->seq);
    } else if (d.verdict == BD_PROV_DET_UNKNOWN_KEY) {
        snprintf(o->why, sizeof(o->why), "signed by key %s, which is not in bench/keys/",
                 d.key_id[0] ? d.key_id : "?");
    } else if (d.verdict != BD_PROV_DET_GOOD) {
        snprintf(o->why, sizeof(o->why), "signed by key %s, which is revoked, expired or unusable",
                 d.fingerprint);
    } else if (strcmp(d.fingerprint, g->signer_fpr) != 0) {
        o->state = BD_RUNSIG_BAD;
        snprintf(o->why, sizeof(o->why),
                 "run.signed record %" PRIu64 " names key %s but was signed by %s", g->seq,
                 g->signer_fpr, d.fingerprint);
    } else if (!sg || !(sg->roles & BD_ROLE_OPERATOR)) {
        snprintf(o->why, sizeof(o->why),
                 "signed by %s, which trusted-signers.yaml does not list with the role operator",
                 d.fingerprint);
    } else {
        o->state = BD_RUNSIG_SIGNED;
        o->why[0] = '\0';
        snprintf(o->identity, sizeof(o->identity), "%s", sg->identity);
    }
    return 0;
}

/* Judge run `r` into o: every run.signed's counts, then the signatures; the last one
 * decides whether the run is signed (it must cover every fingerprinted record). */
static int judge_run(bd_runsig *o, const walk_run *r, bd_prov_ctx *prov, bd_err *err)
{
    o->state = BD_RUNSIG_CLAIM;
    if (r->bad[0]) {
        o->state = BD_RUNSIG_BAD;
        snprintf(o->why, sizeof(o->why), "%s", r->bad);
        return 0;
    }
    if (!r->n_sigs) {
        snprintf(o->why, sizeof(o->why), "no run.signed covers its records (a crash?)");
        return 0;
    }
    for (size_t k = 0; k < r->n_sigs; k++) {
        judge_counts(&r->sigs[k], r->run_id, o->why, sizeof(o->why));
        if (o->why[0]) {
            o->state = BD_RUNSIG_BAD;
            return 0;
        }
    }
    for (size_t k = 0; k < r->n_sigs; k++) {
        if (judge_signature(o, &r->sigs[k], r->run_id, prov, err) != 0)
            return -1;
        if (o->state == BD_RUNSIG_BAD)
            return 0;
    }
    const walk_sig *last = &r->sigs[r->n_sigs - 1];
    if (o->state == BD_RUNSIG_SIGNED && r->count > last->count) {
        o->state = BD_RUNSIG_CLAIM;
        snprintf(o->why, sizeof(o->why),
                 "%" PRIu64 " record(s) of the run come after its last run.signed",
                 r->count - last->count);
    }
    return 0;
}

static void tally(bd_runs_report *out)
{
    for (size_t i = 0; i < out->n; i++) {
        bd_runsig_state s = out->runs[i].state;
        out->n_signed += s == BD_RUNSIG_SIGNED;
        out->n_claims += s == BD_RUNSIG_CLAIM;
        out->n_bad += s == BD_RUNSIG_BAD;
    }
}

/* Runs are judged on a few threads: GnuPG checks each signature in a process of its own,
 * so the threads mostly wait for them (the context is shared: provenance.h). */
#define RUNSIG_THREADS 8

typedef struct judge_ctx {
    bd_runs_report *out;
    const bd_runsig_walk *w;
    bd_prov_ctx *prov;
} judge_ctx;

static int judge_one(size_t i, void *arg, bd_err *err)
{
    judge_ctx *j = arg;
    return judge_run(&j->out->runs[i], &j->w->runs[i], j->prov, err);
}

int bd_runsig_walk_judge(bd_runs_report *out, bd_runsig_walk *w, const char *bench_dir, bool full,
                         bd_err *err)
{
    memset(out, 0, sizeof(*out));
    bd_prov_ctx *prov = NULL;
    int rc = -1;
    size_t n_sigs = 0;
    if (w->n && !(out->runs = calloc(w->n, sizeof(*out->runs)))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < w->n; i++) {
        const walk_run *r = &w->runs[i];
        bd_runsig *o = &out->runs[out->n++];
        snprintf(o->run_id, sizeof(o->run_id), "%s", r->run_id);
        snprintf(o->fingerprint, sizeof(o->fingerprint), "%s",
                 r->count    ? r->fpr
                 : r->n_sigs ? r->sigs[0].signer_fpr
                             : "");
        o->records = r->count;
        o->signed_seq = r->n_sigs ? r->sigs[r->n_sigs - 1].seq : 0;
        n_sigs += r->n_sigs;
    }
    /* The bench's keys in a private home, only when there is a signature to check. */
    if (n_sigs && bd_prov_ctx_new(&prov, bench_dir, err) != 0)
        goto out;
    if (prov && full)
        bd_prov_ctx_full(prov);
    judge_ctx jc = {out, w, prov};
    if (bd_parfor(w->n, RUNSIG_THREADS, n_sigs < 8 ? SIZE_MAX : 0, judge_one, &jc, err) != 0)
        goto out;
    tally(out);
    rc = 0;
out:
    bd_prov_ctx_free(prov);
    if (rc != 0)
        bd_runs_report_release(out);
    return rc;
}

void bd_runs_report_release(bd_runs_report *r)
{
    if (r) {
        free(r->runs);
        memset(r, 0, sizeof(*r));
    }
}

const bd_runsig *bd_runs_report_find(const bd_runs_report *r, const char *run_id)
{
    for (size_t i = 0; r && run_id && i < r->n; i++)
        if (strcmp(r->runs[i].run_id, run_id) == 0)
            return &r->runs[i];
    return NULL;
}

void bd_run_operator_words(const bd_signers *s, const char *fpr, char *buf, size_t cap)
{
    const bd_signer *sg = fpr && s ? bd_signers_find(s, fpr) : NULL;
    if (!fpr || strlen(fpr) != BD_FPR_LEN)
        snprintf(buf, cap, "unsigned");
    else if (sg && (sg->roles & BD_ROLE_OPERATOR))
        snprintf(buf, cap, "%s %s", fpr + 24, sg->identity);
    else
        snprintf(buf, cap, "%s (not a trusted operator)", fpr + 24);
}

bool bd_runs_report_signed(const bd_runs_report *r, const char *run_id)
{
    const bd_runsig *s = bd_runs_report_find(r, run_id);
    return s && s->state == BD_RUNSIG_SIGNED;
}

void bd_runs_report_who(const bd_runs_report *r, const char *run_id, char *buf, size_t cap)
{
    const bd_runsig *s = bd_runs_report_find(r, run_id);
    if (s && s->state == BD_RUNSIG_SIGNED)
        snprintf(buf, cap, "%s %s", s->fingerprint + 24, s->identity);
    else if (s && strlen(s->fingerprint) == BD_FPR_LEN)
        snprintf(buf, cap, "unsigned (claims %s)", s->fingerprint + 24);
    else
        snprintf(buf, cap, "unsigned");
}

int bd_history_verify_runs(bd_runs_report *out, bd_history_verify_result *chain, bd_history *h,
                           const char *bench_dir, int flags, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    bd_runsig_walk *w = bd_runsig_walk_new();
    if (!w)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.flags = flags;
    o.visit = bd_runsig_walk_visit(w);
    int rc = bd_history_verify_with(h, &o, chain, err);
    if (rc != 0 && err->code == BD_OK)
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory checking signed runs");
    if (rc == 0)
        rc = bd_runsig_walk_judge(out, w, bench_dir, (flags & BD_VERIFY_FULL) != 0, err);
    bd_runsig_walk_free(w);
    return rc;
}
