/*
 * hverify.c — verifying the chain (docs/history.md "Verifying"): the walk every decision
 * takes its records from. Records are read, checked and hashed on worker threads a window
 * at a time and linked in order; what does not link is explained (classify); records up to
 * a trusted head are re-hashed, not re-parsed; the verified-head memo lets a later check
 * start where this one ended (bd_history_verify_since).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "history_internal.h"

#include "b3many.h"
#include "hash.h"
#include "sha256many.h"

/* Two prev_hash values that differ in at most this many hex digits are one hand edit of
 * the other: two unrelated SHA-256 values agree in ~4 of 64 digits, so 56 or more equal
 * digits never happen by chance. */
#define EDIT_DISTANCE_MAX 8

/* ---- verifying ---------------------------------------------------------------------- */

typedef struct vctx {
    bd_history *h;
    src s;                 /* records read on their own (failures, neighbours) */
    uint8_t (*hashes)[32]; /* keep_all: hashes[i] is record i+1's */
    size_t n, cap;
    uint8_t last[32]; /* record n's hash */
    /* Every hash is kept only when asked for, or to explain a failure: a lean walk that
     * finds one sets need_full and the walk starts again keeping them (classify looks
     * back at any earlier record). A million hashes are 32 MB. */
    bool keep_all, need_full;
    const bd_history_verify_opts *o;
    size_t *want_order; /* indexes into o->want, by seq */
    size_t want_next;
    uint8_t (*want_hashes)[32];
    size_t needle_len, needle_at; /* needle_at: has_needle's guess on this thread */
    bool visit_stopped;
    uint8_t *pre_local; /* visit->pre's result for a record linked on its own */
    uint8_t *pre_slots; /* the workers' visit->pre results, a window's worth */
    uint64_t max_seq;   /* the highest seq present (ensure_max: known only when needed) */
    bool max_known;
    bool hint_ok;
    uint64_t hint_seq;
    uint8_t hint_hash[32];
} vctx;

static const uint8_t zero_hash[32];

/* Only a failing record needs the highest seq (to tell "missing" from "inserted"). */
static void ensure_max(vctx *v)
{
    if (v->max_known)
        return;
    v->max_known = true;
    if (!is_v2(v->h))
        return;
    segtail t;
    uint8_t hash[32];
    bd_err ignored = BD_ERR_INIT;
    uint64_t seq = 0;
    if (hist_find_head_v2(v->h, &v->s.b, &seq, hash, &t, &ignored) == 0)
        v->max_seq = seq;
}

/* Record j's hash: any j with keep_all, else only the last one (j == v->n). */
static const uint8_t *hash_of(const vctx *v, uint64_t j)
{
    if (j == 0)
        return zero_hash;
    if (v->keep_all)
        return v->hashes[j - 1];
    return j == v->n ? v->last : zero_hash;
}

static int hex_distance(const uint8_t a[32], const uint8_t b[32])
{
    int d = 0;
    for (int i = 0; i < 32; i++)
        d += ((a[i] ^ b[i]) & 0xf0 ? 1 : 0) + ((a[i] ^ b[i]) & 0x0f ? 1 : 0);
    return d;
}

#define ADVICE                                                                                     \
    "the history can no longer be trusted: restore .benchdesk/history from a backup "              \
    "(checked against the last anchor) and find out who changed it"

/* classify's case of a record k whose seq field says another number and whose
 * prev_hash links to no earlier record: reordered, missing (renumbered) or spliced. */
static bd_chain_reason classify_renumbered(vctx *v, uint64_t k, const rec_core *core, char *msg,
                                           size_t msize)
{
    unsigned long long K = (unsigned long long)k, M = (unsigned long long)core->seq;
    rec_core other;
    uint8_t oh[32];
    bd_chain_reason oreason;
    char why[256];
    bd_err ignored = BD_ERR_INIT;
    if (core->seq > k) {
        if (core->seq <= v->max_seq &&
            hist_load_core(v->h, &v->s, core->seq, &other, oh, &oreason, why, &ignored) == RD_OK &&
            other.seq == k) {
            snprintf(msg, msize,
                     "records %llu and %llu were reordered: each file holds the other's "
                     "record",
                     K, M);
            return BD_CHAIN_REORDERED;
        }
        if (M == K + 1)
            snprintf(msg, msize,
                     "record %llu is missing: its file holds record %llu, so record %llu "
                     "was removed and later ones renumbered",
                     K, M, K);
        else
            snprintf(msg, msize,
                     "record %llu is missing: its file holds record %llu, so records "
                     "%llu..%llu were removed and later ones renumbered",
                     K, M, K, M - 1);
        return BD_CHAIN_MISSING;
    }
    snprintf(msg, msize,
             "record %llu was spliced in: its file holds a record numbered %llu that links "
             "to no record of this chain",
             K, M);
    return BD_CHAIN_SPLICED;
}

/* Why record k (parsed: core, hash hk) does not continue the chain, following the rules
 * in docs/history.md. Sets *bad and returns the reason; msg gets the explanation. */
static bd_chain_reason classify(vctx *v, uint64_t k, const rec_core *core, const uint8_t hk[32],
                                uint64_t *bad, char *msg, size_t msize)
{
    const uint8_t *prevh = hash_of(v, k - 1);
    ensure_max(v);
    unsigned long long K = (unsigned long long)k, M = (unsigned long long)core->seq;
    *bad = k;
    if (core->seq != k && memcmp(core->prev, prevh, 32) == 0) {
        snprintf(msg, msize,
                 "record %llu was edited: it links to record %llu but its seq field "
                 "says %llu",
                 K, K - 1, M);
        return BD_CHAIN_EDITED;
    }
    if (core->seq < k && memcmp(hk, hash_of(v, core->seq), 32) == 0) {
        snprintf(msg, msize, "record %llu was inserted: it is a copy of record %llu", K, M);
        return BD_CHAIN_INSERTED;
    }
    for (uint64_t j = k >= 2 ? k - 2 : 0; j >= 1; j--) {
        if (memcmp(core->prev, hash_of(v, j), 32) == 0) {
            *bad = j + 1;
            if (j + 1 == k - 1)
                snprintf(msg, msize,
                         "record %llu was inserted: the record in file %llu links to record "
                         "%llu, past it",
                         K - 1, K, (unsigned long long)j);
            else
                snprintf(msg, msize,
                         "record %llu was inserted: the record in file %llu links to record "
                         "%llu, so records %llu..%llu do not belong in the chain",
                         (unsigned long long)(j + 1), K, (unsigned long long)j,
                         (unsigned long long)(j + 1), K - 1);
            return BD_CHAIN_INSERTED;
        }
    }
    rec_core other;
    uint8_t oh[32];
    bd_chain_reason oreason;
    char why[256];
    bd_err ignored = BD_ERR_INIT;
    if (core->seq != k)
        return classify_renumbered(v, k, core, msg, msize);
    if (hex_distance(core->prev, prevh) <= EDIT_DISTANCE_MAX) {
        snprintf(msg, msize,
                 "record %llu was edited: its prev_hash differs from record %llu's hash in a "
                 "few digits",
                 K, K - 1);
        return BD_CHAIN_EDITED;
    }
    /* Is record k itself intact? Its successor's prev_hash (or the HEAD hint, for the
     * last record) says what its hash was when it was appended. */
    bool known = false, vouched = false;
    if (k < v->max_seq) {
        int rc = hist_load_core(v->h, &v->s, k + 1, &other, oh, &oreason, why, &ignored);
        if (rc != RD_ABSENT && rc != RD_ERROR)
            known = true;
        vouched = rc == RD_OK && memcmp(other.prev, hk, 32) == 0;
    } else if (v->hint_ok && v->hint_seq == k) {
        known = true;
        vouched = memcmp(v->hint_hash, hk, 32) == 0;
    }
    if (k == 1) {
        if (vouched) {
            snprintf(msg, msize,
                     "record 1 is missing: the first record does not link to the genesis "
                     "(64 zeros), so records before it were removed and the rest renumbered");
            return BD_CHAIN_MISSING;
        }
        snprintf(msg, msize, "record 1 was spliced in: it does not link to the genesis (64 zeros)");
        return BD_CHAIN_SPLICED;
    }
    if (vouched || !known) {
        *bad = k - 1;
        if (known)
            snprintf(msg, msize,
                     "record %llu was edited: its bytes no longer hash to the prev_hash that "
                     "record %llu commits to",
                     K - 1, K);
        else
            snprintf(msg, msize,
                     "record %llu was edited: its bytes no longer hash to the prev_hash that "
                     "record %llu commits to (or record %llu, the last one, was replaced)",
                     K - 1, K, K);
        return BD_CHAIN_EDITED;
    }
    snprintf(msg, msize,
             "record %llu was spliced in from another history: it links to no record of this "
             "chain and its successor does not link to it",
             K);
    return BD_CHAIN_SPLICED;
}

static int push_hash(vctx *v, const uint8_t h[32])
{
    if (v->keep_all && v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        void *p = realloc(v->hashes, cap * 32);
        if (!p)
            return -1;
        v->hashes = p;
        v->cap = cap;
    }
    if (v->keep_all)
        memcpy(v->hashes[v->n], h, 32);
    memcpy(v->last, h, 32);
    v->n++;
    const bd_history_verify_opts *o = v->o;
    while (v->want_next < o->n_want && o->want[v->want_order[v->want_next]] <= v->n) {
        size_t i = v->want_order[v->want_next++];
        if (o->want[i] == v->n)
            memcpy(v->want_hashes[i], h, 32);
    }
    return 0;
}

/* Whether record bytes hold the visitor's needle. Where the last record held it (*at:
 * that many bytes before its end, 0: nowhere yet; records of one history have one shape)
 * is tried first, then the last bytes: a needle on the record's own members (a task class)
 * is there in canonical JSON, whose members are sorted and end with task_class. *at is
 * set where the needle is found. */
static bool has_needle(const char *p, size_t len, const char *needle, size_t nl, size_t *at)
{
    enum { TAIL = 256 };
    if (nl == 0)
        return true;
    if (*at >= nl && *at <= len && memcmp(p + len - *at, needle, nl) == 0)
        return true;
    const char *hit = NULL;
    if (len > 2 * TAIL && nl <= TAIL) {
        /* backwards from the end over the needle's first byte (no table to build) */
        const char *lo = p + len - TAIL, *q = p + len - nl;
        while (!hit && q >= lo && (q = memrchr(lo, needle[0], (size_t)(q - lo) + 1)) != NULL) {
            if (q[nl - 1] == needle[nl - 1] && memcmp(q, needle, nl) == 0)
                hit = q;
            else
                q--;
        }
    }
    if (!hit)
        hit = memmem(p, len, needle, nl);
    if (hit)
        *at = (size_t)(p + len - hit);
    return hit != NULL;
}

/* What a worker found of a record for the visitor (visit->pre): whether it holds the
 * needle, and pre's result when it does. NULL: nothing yet (the linking thread does it). */
typedef struct vpre {
    bool matched;
    const void *out;
} vpre;

/* Record k (just linked, hash h, bytes p/len) to the caller's visitor. Returns 0, or -1
 * when the visitor stopped the walk. */
static int visit_record(vctx *v, uint64_t k, const uint8_t h[32], const char *p, size_t len,
                        const vpre *done)
{
    const bd_history_visit *vis = v->o->visit;
    if (!vis || !(vis->pre ? vis->fn_pre != NULL : vis->fn != NULL))
        return 0;
    if (done ? !done->matched
             : vis->needle && !has_needle(p, len, vis->needle, v->needle_len, &v->needle_at))
        return 0;
    int r;
    if (vis->pre) {
        const void *out = done ? done->out : v->pre_local;
        if (!done)
            vis->pre(p, len, v->pre_local, vis->ctx);
        r = vis->fn_pre(k, out, h, vis->ctx);
    } else {
        r = vis->fn(k, p, len, h, vis->ctx);
    }
    if (r != 0) {
        v->visit_stopped = true;
        return -1;
    }
    return 0;
}

/* The record is linked: its hash onto the chain, then to the visitor. */
static int accept_record(vctx *v, uint64_t k, const uint8_t h[32], const char *p, size_t len,
                         const vpre *done, bd_err *err)
{
    if (push_hash(v, h) != 0)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
    return visit_record(v, k, h, p, len, done);
}

static int report(vctx *v, bd_history_verify_result *res, uint64_t bad, bd_chain_reason reason,
                  const char *what, bd_err *err)
{
    char path[PATH_MAX + 32];
    if (!v->keep_all) {
        v->need_full = true; /* the intact prefix's head may be any record: walk again */
        return -1;
    }
    hist_record_path(path, sizeof(path), v->h, bad);
    res->reason = reason;
    res->bad_seq = bad;
    res->count = bad > 0 ? bad - 1 : 0;
    if (res->count > v->n)
        res->count = v->n;
    bd_hex(res->head, hash_of(v, res->count), 32);
    return bd_err_set(err, BD_E_CHAIN_TAMPERED, path, rec_line(v->h, bad), 0, "%s (%s); %s", what,
                      bd_chain_reason_str(reason), ADVICE);
}

/* A record whose schema_version is an integer above the newest this benchdesk writes:
 * written by a newer benchdesk, which a reader cannot judge (not tampering). */
static bool newer_record(const char *p, size_t len)
{
    static const char *const key[1] = {"schema_version"};
    const char *val;
    size_t vl;
    if (bd_record_members(p, len, key, 1, &val, &vl) != 1 || vl == 0 || vl > 9 || val[0] == '0')
        return false;
    long n = 0;
    for (size_t i = 0; i < vl; i++) {
        if (val[i] < '0' || val[i] > '9')
            return false;
        n = n * 10 + (val[i] - '0');
    }
    return n > BD_HISTORY_SCHEMA_VERSION;
}

static int newer(vctx *v, bd_history_verify_result *res, uint64_t k, bd_err *err)
{
    char path[PATH_MAX + 32];
    hist_record_path(path, sizeof(path), v->h, k);
    res->bad_seq = k;
    res->count = v->n;
    bd_hex(res->head, v->n ? v->last : zero_hash, 32);
    return bd_err_set(err, BD_E_HISTORY_NEWER, path, rec_line(v->h, k), 0,
                      "record %llu was written by a newer benchdesk (schema_version above %d): "
                      "this one cannot check it; upgrade benchdesk",
                      (unsigned long long)k, BD_HISTORY_SCHEMA_VERSION);
}

/* Check record k on its own (reading it again, with messages). Returns 0 when it is
 * intact and links (accepted), else -1 with the failure reported into res/err. */
static int verify_one(vctx *v, uint64_t k, bd_history_verify_result *res, bd_err *err)
{
    size_t len;
    const char *p;
    char why[256], msg[768];
    int r = hist_get_rec(v->h, &v->s, k, &p, &len, why, err);
    if (r == RD_ERROR)
        return -1;
    if (r == RD_ABSENT) {
        ensure_max(v);
        snprintf(msg, sizeof(msg), "record %llu is missing although records up to %llu exist",
                 (unsigned long long)k, (unsigned long long)v->max_seq);
        return report(v, res, k, BD_CHAIN_MISSING, msg, err);
    }
    if (r == RD_BAD) {
        snprintf(msg, sizeof(msg), "record %llu is unparseable: %s", (unsigned long long)k, why);
        return report(v, res, k, BD_CHAIN_UNPARSEABLE, msg, err);
    }
    rec_core core;
    bd_chain_reason reason = parse_record(p, len, &core, NULL, why);
    if (reason != BD_CHAIN_OK) {
        if (strcmp(why, "out of memory") == 0)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
        if (newer_record(p, len))
            return newer(v, res, k, err);
        snprintf(msg, sizeof(msg), "record %llu is %s: %s", (unsigned long long)k,
                 reason == BD_CHAIN_UNPARSEABLE ? "unparseable" : "schema-invalid", why);
        return report(v, res, k, reason, msg, err);
    }
    uint8_t hk[32];
    bd_history_record_hash(hk, core.prev, p, len);
    if (core.seq == k && memcmp(core.prev, hash_of(v, k - 1), 32) == 0)
        return accept_record(v, k, hk, p, len, NULL, err);
    if (!v->keep_all) {
        v->need_full = true;
        return -1;
    }
    uint64_t bad;
    reason = classify(v, k, &core, hk, &bad, msg, sizeof(msg));
    return report(v, res, bad, reason, msg, err);
}

/* The parallel part of verify: reading, parsing, validating and hashing records are
 * independent, so worker threads do them for a window of records; linking them is then
 * a cheap sequential pass. Anything not plainly fine is redone by verify_one, which
 * alone decides and explains.
 *
 * In the fast mode (records up to a head an earlier full verify saw, below) the workers
 * only compute each record's BLAKE3 and the linking thread chains them as they become
 * ready, helping with the hashing whenever it would otherwise wait. */
/* One slot's room for visit->pre's result: aligned for any type the visitor stores. */
static size_t pre_stride(const bd_history_visit *vis)
{
    return (vis->pre_size + 15) / 16 * 16;
}

typedef struct vslot {
    uint64_t seq;
    uint8_t prev[32];
    uint8_t hash[32]; /* the record hash */
    bool ok;
    bool pre_done, matched; /* visit->pre ran on this record; it holds the needle */
    atomic_int ready;
} vslot;

typedef struct vwork {
    const bd_history *h;
    const bd_segbuf *seg; /* version 2: the window's segment (lines from seg_lo) */
    size_t seg_lo;
    vslot *slots;
    uint64_t base;
    size_t n;
    bool fast;
    atomic_size_t next;
    /* The visitor's per-record step (visit->pre), done by the workers: its results, one
     * visit->pre_size block a slot. NULL: none. */
    const bd_history_visit *vis;
    size_t needle_len;
    uint8_t *pre_buf;
} vwork;

/* The visitor's step on slot i's bytes, on a worker (vwork.vis). */
static void work_pre(vwork *w, size_t i, const char *p, size_t len, size_t *needle_at)
{
    vslot *s = &w->slots[i];
    const bd_history_visit *vis = w->vis;
    s->pre_done = false;
    if (!vis || !p)
        return;
    s->matched = !vis->needle || has_needle(p, len, vis->needle, w->needle_len, needle_at);
    if (s->matched)
        vis->pre(p, len, w->pre_buf + i * pre_stride(vis), vis->ctx);
    s->pre_done = true;
}

/* The prev_hash member of record bytes already verified once (the fast mode): in canonical
 * JSON a quote inside a string is escaped and no other member named prev_hash holds a
 * string, so its first occurrence is the top-level member. False when absent. */
static bool fast_prev(const char *p, size_t len, uint8_t prev[32], size_t hint[2])
{
    static const char pat[] = "\"prev_hash\":\"";
    /* Records of one history have much the same shape: where the last one held the member
     * is tried first, counted from the start (hint[0]) and from the end (hint[1]: the ids
     * before it vary in length more than the members after it); the pattern occurs once,
     * so any place it is found is the member. */
    enum { NEAR = 96 };
    const char *m = NULL;
    if (hint[0] + sizeof(pat) - 1 <= len && memcmp(p + hint[0], pat, sizeof(pat) - 1) == 0)
        m = p + hint[0];
    else if (hint[1] >= sizeof(pat) - 1 && hint[1] <= len &&
             memcmp(p + len - hint[1], pat, sizeof(pat) - 1) == 0)
        m = p + len - hint[1];
    if (!m && len > 4 * NEAR && hint[0] < len) {
        /* then near it: ids before it vary in length by a few bytes from record to record */
        size_t lo = hint[0] > NEAR ? hint[0] - NEAR : 0, hi = hint[0] + NEAR + sizeof(pat);
        m = memmem(p + lo, (hi < len ? hi : len) - lo, pat, sizeof(pat) - 1);
    }
    if (!m)
        m = memmem(p, len, pat, sizeof(pat) - 1);
    if (m) {
        hint[0] = (size_t)(m - p);
        hint[1] = (size_t)(p + len - m);
    }
    char hex[BD_HASH_BUF];
    if (!m || (size_t)(p + len - m) < sizeof(pat) - 1 + 65)
        return false;
    m += sizeof(pat) - 1;
    if (m[64] != '"')
        return false;
    memcpy(hex, m, 64);
    hex[64] = '\0';
    return bd_hash_unhex(prev, hex) == 0;
}

/* The fast mode's slots [i, end) of a segment: each record's BLAKE3 (many at once), then
 * its hash from its own prev_hash member, so hashing runs on every thread and linking is a
 * comparison (see verify_window_run). */
static void work_batch_fast(vwork *w, size_t i, size_t end)
{
    const uint8_t *in[VERIFY_BATCH] = {NULL};
    size_t lens[VERIFY_BATCH] = {0};
    uint8_t b3[VERIFY_BATCH][32];
    size_t hint[2] = {0, 0}, needle_at = 0;
    size_t n = end - i;
    for (size_t j = 0; j < n; j++)
        in[j] = (const uint8_t *)bd_segbuf_line(w->seg, w->seg_lo + i + j, &lens[j]);
    bd_blake3_many(in, lens, n, b3);
    /* The chain messages of the records whose prev_hash was found, SHA-256'd together. */
    uint8_t msg[VERIFY_BATCH][CHAIN_TAG_LEN + 64];
    const uint8_t *msgs[VERIFY_BATCH];
    uint8_t hashes[VERIFY_BATCH][32];
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        vslot *s = &w->slots[i + j];
        s->ok = fast_prev((const char *)in[j], lens[j], s->prev, hint);
        if (s->ok) {
            memcpy(msg[m], CHAIN_TAG, CHAIN_TAG_LEN);
            memcpy(msg[m] + CHAIN_TAG_LEN, s->prev, 32);
            memcpy(msg[m] + CHAIN_TAG_LEN + 32, b3[j], 32);
            msgs[m] = msg[m];
            m++;
        }
    }
    bd_sha256_many(msgs, CHAIN_TAG_LEN + 64, m, hashes);
    for (size_t j = 0, k = 0; j < n; j++) {
        vslot *s = &w->slots[i + j];
        if (s->ok)
            memcpy(s->hash, hashes[k++], 32);
        work_pre(w, i + j, s->ok ? (const char *)in[j] : NULL, lens[j], &needle_at);
        atomic_store_explicit(&s->ready, 1, memory_order_release);
    }
}

/* Do slots [i, end). */
static void work_batch(vwork *w, size_t i, size_t end, rbuf *b)
{
    if (w->fast && w->seg && end - i <= VERIFY_BATCH) {
        work_batch_fast(w, i, end);
        return;
    }
    size_t hint[2] = {0, 0}, needle_at = 0;
    for (; i < end; i++) {
        vslot *s = &w->slots[i];
        bd_err ignored;
        rec_core core;
        size_t len = 0;
        const char *p = NULL;
        s->ok = false;
        if (w->seg) {
            p = bd_segbuf_line(w->seg, w->seg_lo + i, &len);
        } else if (hist_read_record_file(w->h, w->base + i, b, &len, NULL, &ignored) == RD_OK) {
            p = b->p;
        }
        if (p && w->fast) {
            /* Each record's hash from its own bytes and its prev_hash member, so hashing
             * runs on every thread and linking is a comparison (see verify_window_run). */
            s->ok = fast_prev(p, len, s->prev, hint);
            if (s->ok)
                bd_history_record_hash(s->hash, s->prev, p, len);
        } else if (p && parse_record(p, len, &core, NULL, NULL) == BD_CHAIN_OK) {
            s->seq = core.seq;
            memcpy(s->prev, core.prev, 32);
            bd_history_record_hash(s->hash, core.prev, p, len);
            s->ok = true;
        }
        work_pre(w, i, s->ok ? p : NULL, len, &needle_at);
        atomic_store_explicit(&s->ready, 1, memory_order_release);
    }
}

/* Claim and do one batch; false when none is left. */
static bool work_one(vwork *w, rbuf *b)
{
    size_t i = atomic_fetch_add(&w->next, VERIFY_BATCH);
    if (i >= w->n)
        return false;
    work_batch(w, i, i + VERIFY_BATCH < w->n ? i + VERIFY_BATCH : w->n, b);
    return true;
}

static void *verify_worker(void *arg)
{
    vwork *w = arg;
    rbuf b = {NULL, 0};
    while (work_one(w, &b))
        ;
    free(b.p);
    return NULL;
}

static size_t verify_window = VERIFY_WINDOW;

void bd_history_test_verify_window(size_t n)
{
    verify_window = n ? n : VERIFY_WINDOW;
}

enum { WIN_OK = 0, WIN_FAIL = -1, WIN_FAST_BROKE = 1 };

/* The visitor's per-record step goes to the workers when it has one (visit->pre). */
static void work_visit(const vctx *v, vwork *w)
{
    const bd_history_visit *vis = v->o->visit;
    if (vis && vis->pre && vis->fn_pre && v->pre_slots) {
        w->vis = vis;
        w->needle_len = v->needle_len;
        w->pre_buf = v->pre_slots;
    }
}

/* The bytes of slot i of a window, for the visitor: from the segment in memory, or read
 * again in a version-1 layout (NULL with err when that fails). Without a visitor: "". */
static const char *window_record(vctx *v, const vwork *w, size_t i, size_t *len, rbuf *b,
                                 bd_err *err)
{
    static const char none[1] = "";
    *len = 0;
    if (!v->o->visit)
        return none;
    if (w->seg)
        return bd_segbuf_line(w->seg, w->seg_lo + i, len);
    char why[256];
    bd_err e = BD_ERR_INIT;
    if (hist_read_record_file(w->h, w->base + i, b, len, why, &e) == RD_OK)
        return b->p;
    if (e.code != BD_OK) {
        if (err)
            *err = e;
    } else {
        bd_err_set(err, BD_E_IO, NULL, 0, 0, "history record %llu could not be read again: %s",
                   (unsigned long long)(w->base + i), why);
    }
    return NULL;
}

/* Verify records base..base+n-1 (from w's source) and link them onto the chain. In the
 * fast mode returns WIN_FAST_BROKE at the first record that does not chain (the caller
 * starts again in the full mode, which explains it). */
static int verify_window_run(vctx *v, vwork *w, bd_history_verify_result *res, bd_err *err)
{
    pthread_t tids[VERIFY_MAX_THREADS];
    int started = 0, nthreads = verify_threads();
    rbuf b = {NULL, 0};
    int rc = WIN_OK;
    for (size_t i = 0; i < w->n; i++)
        atomic_store_explicit(&w->slots[i].ready, 0, memory_order_relaxed);
    atomic_store(&w->next, 0);
    for (int t = 1; t < nthreads && w->n > VERIFY_BATCH; t++)
        if (pthread_create(&tids[started], NULL, verify_worker, w) == 0)
            started++;
    if (!w->fast) {
        while (work_one(w, &b))
            ;
    }
    for (size_t i = 0; i < w->n; i++) {
        uint64_t k = w->base + i;
        vslot *s = &w->slots[i];
        while (!atomic_load_explicit(&s->ready, memory_order_acquire))
            if (!work_one(w, &b))
                sched_yield();
        if (w->fast) {
            /* Record k's hash was computed over its bytes with the prev_hash it holds; the
             * chain is the same as one computed link after link exactly when that prev_hash
             * is record k-1's hash, so a comparison is the link. Any doubt: the full mode. */
            if (!s->ok || memcmp(s->prev, hash_of(v, k - 1), 32) != 0) {
                rc = WIN_FAST_BROKE;
                break;
            }
        } else if (!(s->ok && s->seq == k && memcmp(s->prev, hash_of(v, k - 1), 32) == 0)) {
            if (verify_one(v, k, res, err) != 0) {
                rc = WIN_FAIL;
                break;
            }
            continue;
        }
        size_t len = 0;
        const char *p = window_record(v, w, i, &len, &b, err);
        /* No pointer arithmetic on pre_buf when it is NULL (no visitor). */
        vpre done = {s->matched,
                     w->pre_buf && w->vis ? w->pre_buf + i * pre_stride(w->vis) : w->pre_buf};
        if (!p || accept_record(v, k, s->hash, p, len, s->pre_done ? &done : NULL, err) != 0) {
            rc = WIN_FAIL;
            break;
        }
    }
    atomic_store(&w->next, w->n); /* stop the workers early on a failure */
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(b.p);
    return rc;
}

/* The verified-head memo, history/VERIFIED: "<count, 10 digits> <record_hash>
 * <byte offset of record count in its segment, 12 digits>\n", written by a verify that
 * found the chain intact. Records up to it need not be parsed again: if the chain
 * recomputed over their bytes arrives at the same hash, the bytes are those that were
 * parsed and checked then. It is only ever believed after that recomputation. */
#define MEMO_LEN 89

static int read_memo(const bd_history *h, uint64_t *seq, uint8_t hash[32], uint64_t *off)
{
    char buf[MEMO_LEN + 1];
    int fd = openat(h->dirfd, VERIFIED_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n != MEMO_LEN || buf[10] != ' ' || buf[75] != ' ' || buf[88] != '\n')
        return -1;
    buf[75] = '\0';
    uint64_t v = 0, o = 0;
    for (int i = 0; i < 10; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(buf[i] - '0');
    }
    for (int i = 76; i < 88; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        o = o * 10 + (uint64_t)(buf[i] - '0');
    }
    if (v == 0 || bd_hash_unhex(hash, buf + 11) != 0)
        return -1;
    *seq = v;
    *off = o;
    return 0;
}

/* Best effort: a memo that is missing or wrong only costs a slower verify. */
static void write_memo(const bd_history *h, uint64_t seq, const uint8_t hash[32], uint64_t off)
{
    char buf[MEMO_LEN + 8], hex[BD_HASH_BUF];
    if (h->dirfd < 0 || seq == 0)
        return;
    bd_hex(hex, hash, 32);
    int n = snprintf(buf, sizeof(buf), "%010llu %s %012llu\n", (unsigned long long)seq, hex,
                     (unsigned long long)off);
    int fd = openat(h->dirfd, VERIFIED_NAME, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) != 0)
        unlinkat(h->dirfd, VERIFIED_NAME, 0);
    close(fd);
}

static int verify_v1(vctx *v, bd_history_verify_result *res, bd_err *err)
{
    bool has_zero = false;
    v->max_known = true;
    if (hist_scan_dir(v->h, &v->max_seq, &has_zero, false, err) != 0)
        return -1;
    if (has_zero)
        return report(v, res, 0, BD_CHAIN_INSERTED,
                      "a record numbered 0 was inserted before the genesis record", err);
    v->hint_ok = hist_read_head_hint(v->h, &v->hint_seq, v->hint_hash) == 0;
    vslot *slots = NULL;
    if (v->max_seq > 0) {
        size_t cap = v->max_seq < verify_window ? (size_t)v->max_seq : verify_window;
        if (!(slots = calloc(cap, sizeof(*slots))))
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
    }
    int rc = 0;
    for (uint64_t base = 1; base <= v->max_seq && rc == 0; base += verify_window) {
        uint64_t left = v->max_seq - base + 1;
        vwork w = {.h = v->h,
                   .slots = slots,
                   .base = base,
                   .n = left < verify_window ? (size_t)left : verify_window};
        work_visit(v, &w);
        rc = verify_window_run(v, &w, res, err) == WIN_OK ? 0 : -1;
    }
    free(slots);
    return rc;
}

/* Every segment file named after the first record of a segment. 0, or -1 reported. */
static int check_segment_names(vctx *v, const uint64_t *segs, size_t nseg,
                               bd_history_verify_result *res, bd_err *err)
{
    char msg[512];
    for (size_t i = 0; i < nseg; i++) {
        if ((segs[i] - 1) % BD_SEGMENT_RECORDS != 0 || segs[i] == 0) {
            char name[17];
            bd_segment_name(name, segs[i]);
            snprintf(msg, sizeof(msg),
                     "segment file %s is not named after the first record of a segment (every "
                     "segment starts at 1 + a multiple of 65536): it was renamed or planted",
                     name);
            report(v, res, segs[i] ? segs[i] : 1, BD_CHAIN_INSERTED, msg, err);
            return -1;
        }
    }
    return 0;
}

/* The trusted head records are re-hashed up to in the fast mode (verify_v2). */
typedef struct vtrust {
    bool fast;
    uint64_t seq;
    const uint8_t *hash;
} vtrust;

/* The lines of segment `first` (open in `win`) in windows, each linked onto the chain.
 * *seen: lines checked. 0, -1 (reported), or 1 when the fast mode must be given up. */
static int verify_segment_lines(vctx *v, bd_segstream *win, uint64_t first, uint64_t last,
                                const vtrust *tr, vslot *slots, size_t *seen,
                                bd_history_verify_result *res, uint64_t *last_off, bd_err *err)
{
    char msg[512];
    bool more = true;
    while (more) {
        if (bd_segstream_next(win, v->h->segdir, err) != 0)
            return -1;
        more = !win->eof;
        size_t m = win->b.nlines;
        bool over = *seen + m > BD_SEGMENT_RECORDS;
        if (over)
            m = BD_SEGMENT_RECORDS - *seen;
        size_t done = 0;
        while (done < m) {
            uint64_t k = first + *seen + done;
            bool in_fast = tr->fast && k <= tr->seq;
            size_t cnt = in_fast ? (size_t)(tr->seq - k + 1) : m - done;
            if (cnt > m - done)
                cnt = m - done;
            vwork w = {.h = v->h,
                       .seg = &win->b,
                       .seg_lo = done,
                       .slots = slots,
                       .base = k,
                       .n = cnt,
                       .fast = in_fast};
            work_visit(v, &w);
            int wr = verify_window_run(v, &w, res, err);
            if (wr == WIN_FAST_BROKE)
                return 1;
            if (wr != WIN_OK)
                return -1;
            if (in_fast && k + cnt - 1 == tr->seq && memcmp(hash_of(v, tr->seq), tr->hash, 32) != 0)
                return 1; /* the bytes are not those verified before: check everything */
            done += cnt;
        }
        if (over) {
            char name[17];
            bd_segment_name(name, first);
            snprintf(msg, sizeof(msg),
                     "segment %s holds more than 65536 records: records were inserted", name);
            return report(v, res, first + BD_SEGMENT_RECORDS, BD_CHAIN_INSERTED, msg, err);
        }
        if (m > 0 && first == last)
            *last_off = win->pos + win->b.off[m - 1];
        *seen += m;
    }
    return 0;
}

/* Segment `first` of a chain whose last segment is `last`: opened, its lines verified,
 * its end checked. 0, -1 (reported), or 1 when the fast mode must be given up. */
static int verify_segment(vctx *v, bd_segstream *win, uint64_t first, uint64_t last,
                          const vtrust *tr, vslot *slots, bd_history_verify_result *res,
                          uint64_t *last_off, bd_err *err)
{
    char msg[512], why[256], name[17];
    bd_segment_name(name, first);
    int r = bd_segstream_open(win, v->h->segfd, v->h->segdir, first, why, err);
    if (r == BD_SEG_ERROR)
        return -1;
    if (r == BD_SEG_ABSENT) {
        snprintf(msg, sizeof(msg),
                 "segment %s is missing: records %llu..%llu were removed while later "
                 "segments remain",
                 name, (unsigned long long)first,
                 (unsigned long long)(first + BD_SEGMENT_RECORDS - 1));
        return report(v, res, first, BD_CHAIN_MISSING, msg, err);
    }
    if (r == BD_SEG_BAD) {
        snprintf(msg, sizeof(msg), "records from %llu on are unreadable: %s",
                 (unsigned long long)first, why);
        return report(v, res, first, BD_CHAIN_UNPARSEABLE, msg, err);
    }
    size_t seen = 0; /* lines of this segment checked so far */
    int rc = verify_segment_lines(v, win, first, last, tr, slots, &seen, res, last_off, err);
    if (rc != 0)
        return rc;
    if (first != last && win->b.torn > 0) {
        snprintf(msg, sizeof(msg),
                 "segment %s ends in a line without its newline although later segments "
                 "exist: record %llu was cut",
                 name, (unsigned long long)(first + seen));
        return report(v, res, first + seen, BD_CHAIN_UNPARSEABLE, msg, err);
    }
    if (first != last && seen < BD_SEGMENT_RECORDS) {
        snprintf(msg, sizeof(msg),
                 "segment %s holds only %zu of its 65536 records although later segments "
                 "exist: record %llu is missing",
                 name, seen, (unsigned long long)(first + seen));
        return report(v, res, first + seen, BD_CHAIN_MISSING, msg, err);
    }
    if (first == last)
        res->torn_tail = win->b.torn > 0;
    bd_segstream_close(win);
    return 0;
}

/* Version 2: segment by segment. Returns 0, -1, or 1 when the fast mode must be given up
 * (the caller verifies again in the full mode). */
static int verify_v2(vctx *v, bool fast_ok, bd_history_verify_result *res, uint64_t *last_off,
                     bd_err *err)
{
    uint64_t *segs = NULL;
    size_t nseg = 0;
    vslot *slots = NULL;
    bd_segstream win = {.fd = -1};
    int rc = -1;
    if (bd_segment_list(v->h->segfd, v->h->segdir, &segs, &nseg, err) != 0)
        return -1;
    if (check_segment_names(v, segs, nseg, res, err) != 0)
        goto out;
    if (nseg == 0) {
        rc = 0;
        goto out;
    }
    uint64_t last = segs[nseg - 1];
    uint64_t memo_seq = 0, memo_off = 0;
    uint8_t memo_hash[32];
    /* The head an earlier verify saw vouches for that record's bytes, as HEAD did in the
     * version-1 layout: it only tells an edited last record from a spliced one (naming
     * the reason of a failure), never whether the chain is intact. */
    if (read_memo(v->h, &memo_seq, memo_hash, &memo_off) == 0) {
        v->hint_ok = true;
        v->hint_seq = memo_seq;
        memcpy(v->hint_hash, memo_hash, 32);
    }
    /* Records up to a trusted head (an anchor's) are re-hashed, not re-parsed, when the
     * chain recomputed over their bytes arrives at it; a trusted head beyond the chain (a
     * truncation) is noticed when the walk ends before it. */
    vtrust tr = {fast_ok && v->o->trusted_count > 0, 0, v->o->trusted_head};
    tr.seq = tr.fast ? v->o->trusted_count : 0;
    if (!(slots = calloc(BD_SEGMENT_RECORDS, sizeof(*slots)))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
        goto out;
    }
    for (uint64_t first = 1; first <= last; first += BD_SEGMENT_RECORDS) {
        int sr = verify_segment(v, &win, first, last, &tr, slots, res, last_off, err);
        if (sr != 0) {
            rc = sr;
            goto out;
        }
    }
    if (tr.fast && tr.seq > v->n) {
        rc = 1; /* the trusted head was never reached: nothing was proven by it */
        goto out;
    }
    rc = 0;
out:
    free(slots);
    free(segs);
    bd_segstream_close(&win);
    return rc;
}

static atomic_uint fast_fallbacks;

unsigned bd_history_test_fast_fallbacks(void)
{
    return atomic_load(&fast_fallbacks);
}

static void vctx_release(vctx *v)
{
    free(v->pre_local);
    free(v->pre_slots);
    free(v->hashes);
    free(v->want_order);
    free(v->want_hashes);
    hist_src_release(&v->s);
}

/* Room for the visitor's per-record results (visit->pre): a window's worth for the
 * workers, one for a record linked on its own. */
static int pre_prepare(vctx *v, bd_err *err)
{
    const bd_history_visit *vis = v->o->visit;
    if (!vis || !vis->pre)
        return 0;
    if (!vis->fn_pre || vis->pre_size == 0 || vis->pre_size > 1024)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0,
                          "a history visitor's pre step is "
                          "malformed");
    size_t slots = BD_SEGMENT_RECORDS > verify_window ? BD_SEGMENT_RECORDS : verify_window;
    v->pre_local = malloc(vis->pre_size);
    v->pre_slots = malloc(slots * pre_stride(vis));
    if (!v->pre_local || !v->pre_slots)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
    return 0;
}

/* v->want_order: o->want's indexes by seq (few: one per anchor). */
static int want_prepare(vctx *v, bd_err *err)
{
    const bd_history_verify_opts *o = v->o;
    if (o->n_want == 0)
        return 0;
    v->want_order = malloc(o->n_want * sizeof(*v->want_order));
    v->want_hashes = calloc(o->n_want, 32);
    if (!v->want_order || !v->want_hashes)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory verifying the history");
    for (size_t i = 0; i < o->n_want; i++) {
        size_t j = i;
        for (; j > 0 && o->want[v->want_order[j - 1]] > o->want[i]; j--)
            v->want_order[j] = v->want_order[j - 1];
        v->want_order[j] = i;
    }
    return 0;
}

static int verify_chain(bd_history *h, const bd_history_verify_opts *o,
                        bd_history_verify_result *res, bd_err *err)
{
    bool fast_ok = o->trusted_count > 0 && !(o->flags & BD_VERIFY_FULL);
    bool keep_all = (o->flags & BD_VERIFY_KEEP_HASHES) != 0;
    for (;;) {
        vctx v = {0};
        uint64_t last_off = 0;
        v.h = h;
        v.o = o;
        v.keep_all = keep_all;
        v.needle_len = o->visit && o->visit->needle ? strlen(o->visit->needle) : 0;
        memset(res, 0, sizeof(*res));
        bd_hex(res->head, zero_hash, 32);
        if (want_prepare(&v, err) != 0 || pre_prepare(&v, err) != 0 ||
            hist_open_dirfd(h, false, err) != 0) {
            vctx_release(&v);
            return -1;
        }
        int r = is_v2(h) ? verify_v2(&v, fast_ok, res, &last_off, err) : verify_v1(&v, res, err);
        if (r == 1 || v.need_full) {
            vctx_release(&v);
            if (r == 1 && fast_ok) {
                atomic_fetch_add(&fast_fallbacks, 1);
                fast_ok = false;
            }
            if (v.need_full)
                keep_all = true;
            if (o->visit && o->visit->reset)
                o->visit->reset(o->visit->ctx);
            continue;
        }
        int rc = -1;
        if (r == 0) {
            res->count = v.n;
            bd_hex(res->head, hash_of(&v, v.n), 32);
            res->parsed_from = fast_ok ? o->trusted_count + 1 : 1;
            /* The run gate's tripwire: every record up to here was checked in full now,
             * or when the anchor vouching for them was published. */
            if (is_v2(h) && v.n > 0)
                write_memo(h, v.n, v.last, last_off);
            if (o->flags & BD_VERIFY_KEEP_HASHES) {
                res->hashes = v.hashes;
                v.hashes = NULL;
            }
            rc = 0;
        }
        res->want_hashes = v.want_hashes;
        v.want_hashes = NULL;
        vctx_release(&v);
        return rc;
    }
}

int bd_history_verify_with(bd_history *h, const bd_history_verify_opts *opts,
                           bd_history_verify_result *res, bd_err *err)
{
    static const bd_history_verify_opts none = BD_HISTORY_VERIFY_OPTS_INIT;
    return verify_chain(h, opts ? opts : &none, res, err);
}

int bd_history_verify(bd_history *h, int flags, bd_history_verify_result *res, bd_err *err)
{
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.flags = flags;
    return verify_chain(h, &o, res, err);
}

int bd_history_verify_since(bd_history *h, bd_history_verify_result *res, bd_err *err)
{
    memset(res, 0, sizeof(*res));
    bd_hex(res->head, zero_hash, 32);
    if (hist_open_dirfd(h, false, err) != 0)
        return -1;
    uint64_t memo_seq, memo_off;
    uint8_t memo_hash[32];
    if (!is_v2(h) || read_memo(h, &memo_seq, memo_hash, &memo_off) != 0)
        return bd_history_verify(h, 0, res, err);
    uint64_t *segs = NULL;
    size_t nseg = 0;
    bd_segbuf sb = {0};
    int rc = 1; /* 1: fall back to the full walk */
    if (bd_segment_list(h->segfd, h->segdir, &segs, &nseg, err) != 0)
        return -1;
    uint64_t mfirst = bd_segment_first(memo_seq);
    /* The segments after the memo's must be the ones benchdesk would have written. */
    size_t at = nseg;
    for (size_t i = 0; i < nseg; i++)
        if (segs[i] == mfirst)
            at = i;
    if (at == nseg)
        goto out;
    for (size_t i = at + 1; i < nseg; i++)
        if (segs[i] != segs[i - 1] + BD_SEGMENT_RECORDS)
            goto out;
    /* Record memo_seq must still be where it was, with the same hash. */
    char why[256];
    int r = bd_segbuf_load_from(&sb, h->segfd, h->segdir, mfirst, memo_off, why, err);
    if (r == BD_SEG_ERROR) {
        rc = -1;
        goto out;
    }
    if (r != BD_SEG_OK || sb.nlines == 0)
        goto out;
    uint8_t prev[32];
    uint64_t k = memo_seq;
    uint64_t seg_first = mfirst;
    size_t line = 0;
    uint64_t last_off = memo_off, base_off = memo_off;
    for (;;) {
        for (; line < sb.nlines; line++, k++) {
            size_t len;
            const char *p = bd_segbuf_line(&sb, line, &len);
            rec_core core;
            if (parse_record(p, len, &core, NULL, NULL) != BD_CHAIN_OK || core.seq != k)
                goto out;
            uint8_t hk[32];
            bd_history_record_hash(hk, core.prev, p, len);
            if (k == memo_seq) {
                if (memcmp(hk, memo_hash, 32) != 0)
                    goto out;
            } else if (memcmp(core.prev, prev, 32) != 0) {
                goto out;
            }
            memcpy(prev, hk, 32);
            last_off = base_off + sb.off[line];
        }
        if (k - seg_first > BD_SEGMENT_RECORDS)
            goto out;
        if (seg_first == segs[nseg - 1]) {
            res->torn_tail = sb.torn > 0;
            break;
        }
        if (sb.torn > 0 || k - seg_first != BD_SEGMENT_RECORDS)
            goto out;
        seg_first += BD_SEGMENT_RECORDS;
        r = bd_segbuf_load(&sb, h->segfd, h->segdir, seg_first, why, err);
        if (r == BD_SEG_ERROR) {
            rc = -1;
            goto out;
        }
        if (r != BD_SEG_OK)
            goto out;
        line = 0;
        base_off = 0;
    }
    res->count = k - 1;
    bd_hex(res->head, prev, 32);
    if (k - 1 != memo_seq)
        write_memo(h, k - 1, prev, last_off);
    rc = 0;
out:
    free(segs);
    bd_segbuf_release(&sb);
    if (rc == 1)
        return bd_history_verify(h, 0, res, err);
    return rc;
}

void bd_history_verify_result_release(bd_history_verify_result *r)
{
    if (!r)
        return;
    free(r->hashes);
    r->hashes = NULL;
    free(r->want_hashes);
    r->want_hashes = NULL;
}
