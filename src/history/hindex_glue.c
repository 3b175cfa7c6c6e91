/*
 * hindex_glue.c — the history's side of the derived index (hindex.h, docs/history.md):
 * what a record puts into its row, when the index is current, extended or rebuilt, its
 * seal, and reading a record at the place the index names (checked again).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "history_internal.h"

#include "fsutil.h"
#include "hindex.h"

/* ---- the derived index (hindex.h) -------------------------------------------------- */

int64_t bd_history_time_epoch(const char *s)
{
    /* Digits at fixed places (the format is validated with the record); no sscanf per
     * record. Fractions of a second are dropped. */
    static const int at[6] = {0, 5, 8, 11, 14, 17}, width[6] = {4, 2, 2, 2, 2, 2};
    int v[6];
    if (!s || strlen(s) < 19)
        return -1;
    for (int i = 0; i < 6; i++) {
        v[i] = 0;
        for (int j = 0; j < width[i]; j++) {
            char c = s[at[i] + j];
            if (c < '0' || c > '9')
                return -1;
            v[i] = v[i] * 10 + (c - '0');
        }
    }
    if (v[1] >= 1 && v[1] <= 12 && v[2] >= 1 && v[2] <= 31 && v[3] < 24 && v[4] < 60 && v[5] < 60) {
        /* UTC's days since 1970 from the civil date (what timegm gives, without its
         * normalising: a measurable part of reading a million records). */
        int y = v[0] - (v[1] <= 2), era = y / 400; /* years from 0000: never negative */
        int yoe = y - era * 400, mp = (v[1] + 9) % 12;
        int doy = (153 * mp + 2) / 5 + v[2] - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        int64_t days = (int64_t)era * 146097 + doe - 719468;
        return days * 86400 + v[3] * 3600 + v[4] * 60 + v[5];
    }
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = v[0] - 1900;
    tm.tm_mon = v[1] - 1;
    tm.tm_mday = v[2];
    tm.tm_hour = v[3];
    tm.tm_min = v[4];
    tm.tm_sec = v[5];
    return (int64_t)timegm(&tm);
}

/* A plain JSON string value (quotes, no escapes) into buf; false otherwise. */
static bool plain_str(const char *v, size_t vl, char *buf, size_t cap)
{
    if (!v || vl < 2 || v[0] != '"' || v[vl - 1] != '"' || vl - 2 >= cap ||
        memchr(v + 1, '\\', vl - 2))
        return false;
    memcpy(buf, v + 1, vl - 2);
    buf[vl - 2] = '\0';
    return true;
}

#define IX_STR 160
#define IX_FMS 32
enum {
    IX_SEQ,
    IX_KIND,
    IX_TC,
    IX_CASE,
    IX_RUN,
    IX_CD,
    IX_TCD,
    IX_ISO,
    IX_PV,
    IX_FIN,
    IX_SCORE,
    IX_PREV,
    IX_DETAIL,
    IX__COUNT
};

typedef struct ixrow {
    bd_hindex_row row;
    char s[6][IX_STR];
    char fm[IX_FMS][IX_STR];
    const char *fmp[IX_FMS];
    char prev_hex[BD_HASH_BUF];
    bool prev_ok;
} ixrow;

/* The run an audit record's detail (its JSON string token v[0..vl)) names, as
 * bd_history_audit_run reads it, into x->s[2] and x->row.run_id. Returns false only when
 * out of memory (the row is then marked bad and the slow path answers). */
static bool audit_run(ixrow *x, const char *v, size_t vl)
{
    if (!v || vl < 4 || memcmp(v, "\"{", 2) != 0)
        return true; /* not an object: no run */
    cJSON *d = cJSON_ParseWithLength(v, vl);
    if (!d)
        return false;
    char id[BD_HISTORY_AUDIT_RUN_BUF];
    if (cJSON_IsString(d) && bd_history_audit_run(d->valuestring, id) &&
        strlen(id) < sizeof(x->s[2])) {
        memcpy(x->s[2], id, strlen(id) + 1);
        x->row.run_id = x->s[2];
    }
    cJSON_Delete(d);
    return true;
}

/* The index's row for record bytes p[0..len) at line position `seq`: fields read without
 * a parse (bd_record_members); anything unexpected makes the row BD_HX_BAD, which keeps
 * the index out of every query (the slow path then reports the record). */
static void ix_extract(ixrow *x, const char *p, size_t len, uint64_t seq, uint64_t off)
{
    static const char *const keys[IX__COUNT] = {"seq",
                                                "kind",
                                                "task_class",
                                                "case_id",
                                                "run_id",
                                                "case_digest",
                                                "task_class_digest",
                                                "isolation_class",
                                                "provenance_verified",
                                                "finished_at",
                                                "score",
                                                "prev_hash",
                                                "detail"};
    const char *v[IX__COUNT];
    size_t vl[IX__COUNT];
    bd_hindex_row *r = &x->row;
    memset(r, 0, sizeof(*r));
    r->seq = seq;
    r->off = off;
    r->len = (uint32_t)len;
    r->finished = -1;
    bd_record_members(p, len, keys, IX__COUNT, v, vl);
    char num[24];
    uint64_t fseq = 0;
    bool ok = v[IX_SEQ] && vl[IX_SEQ] > 0 && vl[IX_SEQ] < sizeof(num);
    for (size_t i = 0; ok && i < vl[IX_SEQ]; i++) {
        ok = v[IX_SEQ][i] >= '0' && v[IX_SEQ][i] <= '9';
        fseq = fseq * 10 + (uint64_t)(v[IX_SEQ][i] - '0');
    }
    /* The hash is only computed for the last record added (the index's new head). */
    x->prev_ok = plain_str(v[IX_PREV], vl[IX_PREV], x->prev_hex, sizeof(x->prev_hex));
    ok = ok && fseq == seq && x->prev_ok;
    const char **dst[6] = {&r->task_class,  &r->case_id,   &r->run_id,
                           &r->case_digest, &r->tc_digest, &r->isolation};
    for (int i = 0; i < 6; i++)
        if (plain_str(v[IX_TC + i], vl[IX_TC + i], x->s[i], IX_STR))
            *dst[i] = x->s[i];
    if (v[IX_KIND]) {
        r->flags |= BD_HX_AUDIT;
        char kind[16];
        ok = ok && plain_str(v[IX_KIND], vl[IX_KIND], kind, sizeof(kind)) &&
             strcmp(kind, "audit") == 0;
        /* The run it belongs to, as history log --run reads it (hlog.c): none of its own,
         * the run named by its detail. */
        r->run_id = NULL;
        if (ok && !audit_run(x, v[IX_DETAIL], vl[IX_DETAIL]))
            ok = false;
    } else {
        char fin[IX_STR];
        ok = ok && r->task_class && r->case_id && r->run_id && r->isolation && v[IX_SCORE] &&
             v[IX_PV] && plain_str(v[IX_FIN], vl[IX_FIN], fin, sizeof(fin));
        if (ok)
            r->finished = bd_history_time_epoch(fin);
        if (v[IX_PV] && vl[IX_PV] == 4 && memcmp(v[IX_PV], "true", 4) == 0)
            r->flags |= BD_HX_PROV;
        if (ok) {
            static const char *const skeys[2] = {"failure_modes", "passed"};
            const char *sv[2];
            size_t svl[2];
            bd_record_members(v[IX_SCORE], vl[IX_SCORE], skeys, 2, sv, svl);
            ok = sv[0] && sv[1];
            if (ok && svl[1] == 4 && memcmp(sv[1], "true", 4) == 0)
                r->flags |= BD_HX_PASSED;
            /* Canonical JSON: each failure mode's first member is "code"; a quote inside
             * a string is escaped, so the pattern only matches a member. */
            static const char pat[] = "\"code\":\"";
            const char *a = ok ? sv[0] : NULL, *end = ok ? sv[0] + svl[0] : NULL;
            while (a && (a = memmem(a, (size_t)(end - a), pat, sizeof(pat) - 1)) != NULL) {
                const char *cs = a + sizeof(pat) - 2, *ce = hist_skip_string(cs, end);
                if (!ce || r->n_fm == IX_FMS ||
                    !plain_str(cs, (size_t)(ce - cs), x->fm[r->n_fm], IX_STR)) {
                    ok = false;
                    break;
                }
                x->fmp[r->n_fm] = x->fm[r->n_fm];
                r->n_fm++;
                a = ce;
            }
            r->fm_codes = x->fmp;
        }
    }
    if (!ok)
        r->flags |= BD_HX_BAD;
}

/* Whether record seq's bytes are at [off, off+len) of its segment with this hash: the
 * index's head still on the chain. */
static bool ix_head_holds(bd_history *h, const bd_hindex_head *ih)
{
    bd_hindex_hit hit = {ih->seq, ih->off, ih->len};
    bd_history_record r;
    bd_err e = BD_ERR_INIT;
    if (bd_history_read_at(h, &hit, &r, &e) != 0)
        return false;
    uint8_t hash[32];
    bool ok = bd_hash_unhex(hash, r.hash) == 0 && memcmp(hash, ih->hash, 32) == 0;
    bd_history_record_release(&r);
    return ok;
}

/* Add the records after `from` (whose head is *ih, seq 0: from the start) to the index, in
 * one transaction. 0, or -1 (the index is left as it was). */
static int ix_extend(bd_history *h, bd_hindex *ix, bd_hindex_head *ih)
{
    bd_segbuf sb = {0};
    ixrow *x = malloc(sizeof(*x));
    char why[256];
    bd_err e = BD_ERR_INIT;
    int rc = -1;
    if (!x || bd_hindex_begin(ix) != 0) {
        free(x);
        return -1;
    }
    uint64_t k = ih->seq + 1; /* the next record */
    uint64_t first = bd_segment_first(k);
    uint64_t from = ih->seq && bd_segment_first(ih->seq) == first ? ih->off + ih->len + 1 : 0;
    bd_hindex_head nh = *ih;
    const char *last = NULL; /* the bytes of the last record added from this segment */
    for (;; first += BD_SEGMENT_RECORDS, from = 0) {
        int r = bd_segbuf_load_from(&sb, h->segfd, h->segdir, first, from, why, &e);
        if (r == BD_SEG_ABSENT)
            break;
        if (r != BD_SEG_OK)
            goto out;
        if ((k - first) + sb.nlines > BD_SEGMENT_RECORDS)
            goto out; /* more lines than a segment holds: verify's to report */
        for (size_t i = 0; i < sb.nlines; i++, k++) {
            size_t len;
            const char *p = bd_segbuf_line(&sb, i, &len);
            ix_extract(x, p, len, k, from + sb.off[i]);
            if (bd_hindex_add(ix, &x->row) != 0)
                goto out;
            nh.seq = k;
            nh.off = from + sb.off[i];
            nh.len = (uint32_t)len;
            last = p;
        }
        if (last) { /* the head so far: hashed once per segment, not per record */
            uint8_t prev[32];
            if (!x->prev_ok || bd_hash_unhex(prev, x->prev_hex) != 0)
                goto out;
            bd_history_record_hash(nh.hash, prev, last, nh.len);
            last = NULL;
        }
        /* A segment that is not full while a later one may exist: no index (verify's). */
        if (k - first != BD_SEGMENT_RECORDS)
            break;
    }
    rc = 0;
out:
    bd_segbuf_release(&sb);
    free(x);
    if (rc == 0 && nh.seq > ih->seq)
        rc = bd_hindex_commit(ix, &nh);
    else
        bd_hindex_rollback(ix);
    if (rc == 0)
        *ih = nh;
    return rc;
}

static atomic_uint ix_builds, ix_extends;

/* The index lock, waited for at most IX_LOCK_WAIT_MS: a query never hangs on the index
 * (a child process that inherited the lock's descriptor keeps it until it execs or
 * exits); without the lock it reads the segments instead. 0 or -1. */
#define IX_LOCK_WAIT_MS 3000
static int ix_lock(int fd)
{
    for (int waited = 0;; waited += 5) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= IX_LOCK_WAIT_MS)
            return -1;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void bd_history_test_index_counts(unsigned *builds, unsigned *extends)
{
    *builds = atomic_load(&ix_builds);
    *extends = atomic_load(&ix_extends);
}

bd_hindex *bd_history_index(bd_history *h)
{
    bd_err e = BD_ERR_INIT;
    bd_hindex *ix = NULL;
    uint64_t seq;
    uint8_t hash[32];
    segtail t;
    rbuf b = {NULL, 0};
    if (!h->ixdir || getenv("BENCHDESK_NO_INDEX") || hist_open_dirfd(h, false, &e) != 0 ||
        !is_v2(h))
        return NULL;
    int hr = hist_find_head_v2(h, &b, &seq, hash, &t, &e);
    free(b.p);
    if (hr != 0 || seq == 0 || bd_mkdir_p(h->ixdir, 0700, &e) != 0)
        return NULL;
    size_t pl = strlen(h->ixdir) + sizeof("/" BD_HINDEX_FILE) + sizeof(BD_HINDEX_LOCK);
    char *path = malloc(pl);
    if (!path)
        return NULL;
    snprintf(path, pl, "%s/%s", h->ixdir, BD_HINDEX_FILE);
    /* Only an index this user's benchdesk left as it is (the seal, hindex.h): one edited
     * beside the records is rebuilt from them, and the rebuild is reported. */
    bd_hindex_seal_state seal = bd_hindex_sealed(path);
    if (bd_hindex_open(&ix, path, &e) != 0) {
        free(path);
        return NULL;
    }
    bd_hindex_head ih;
    int lockfd = -1;
    char *lockpath = NULL;
    if (seal == BD_HX_SEAL_OK && bd_hindex_get_head(ix, &ih) == 0 && ih.seq == seq &&
        memcmp(ih.hash, hash, 32) == 0)
        goto done;
    /* One process brings it up to date at a time; the others wait, then find it so. */
    if (!(lockpath = malloc(pl)))
        goto fail;
    snprintf(lockpath, pl, "%s/%s", h->ixdir, BD_HINDEX_LOCK);
    lockfd = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lockfd < 0 || ix_lock(lockfd) != 0)
        goto fail;
    seal = bd_hindex_sealed(path); /* again, now that no other benchdesk is writing it */
    if (seal != BD_HX_SEAL_OK) {
        if (seal == BD_HX_SEAL_BROKEN)
            snprintf(h->ix_note, sizeof(h->ix_note),
                     "the history's index (%s) was changed outside benchdesk: it was rebuilt "
                     "from the records",
                     path);
        if (bd_hindex_reset(ix) != 0)
            goto fail;
    } else if (bd_hindex_reopen(ix) != 0) {
        goto fail;
    }
    if (bd_hindex_get_head(ix, &ih) != 0) {
        if (bd_hindex_reset(ix) != 0)
            goto fail;
        memset(&ih, 0, sizeof(ih));
    }
    if (ih.seq == seq && memcmp(ih.hash, hash, 32) == 0) {
        if (bd_hindex_seal(path) != 0)
            goto fail;
        goto done;
    }
    /* Extended when its head is still on the chain below ours, else rebuilt. */
    bool rebuild = ih.seq == 0 || ih.seq > seq || !ix_head_holds(h, &ih);
    if (rebuild && ih.seq != 0 && bd_hindex_reset(ix) != 0)
        goto fail;
    if (rebuild)
        memset(&ih, 0, sizeof(ih));
    int xr = ix_extend(h, ix, &ih);
    if (xr != 0 && !rebuild) {
        /* An extension that failed (a file SQLite finds damaged): once from nothing. */
        rebuild = true;
        memset(&ih, 0, sizeof(ih));
        xr = bd_hindex_reset(ix) == 0 ? ix_extend(h, ix, &ih) : -1;
    }
    atomic_fetch_add(rebuild ? &ix_builds : &ix_extends, 1);
    /* Without a seal no later process could trust it: then it is not used at all. */
    if (xr != 0 || ih.seq < seq || bd_hindex_seal(path) != 0)
        goto fail;
done:
    if (lockfd >= 0)
        close(lockfd);
    free(lockpath);
    free(path);
    return ix;
fail:
    if (lockfd >= 0)
        close(lockfd);
    free(lockpath);
    free(path);
    bd_hindex_close(ix);
    return NULL;
}

const char *bd_history_index_note(const bd_history *h)
{
    return h->ix_note[0] ? h->ix_note : NULL;
}

int bd_history_read_latest(bd_history *h, const bd_hindex_hit *hit, const char *task_class,
                           const char *case_id, bd_history_record *out, bd_err *err)
{
    int rc = bd_history_read_at(h, hit, out, err);
    if (rc != 0)
        return rc;
    if (out->is_audit || !out->task_class || !out->case_id ||
        strcmp(out->task_class, task_class) != 0 || strcmp(out->case_id, case_id) != 0) {
        bd_history_record_release(out);
        bd_history_index_distrust(h);
        return 1;
    }
    return 0;
}

void bd_history_index_distrust(bd_history *h)
{
    if (!h->ixdir)
        return;
    size_t pl = strlen(h->ixdir) + sizeof("/" BD_HINDEX_FILE);
    char *path = malloc(pl);
    if (!path)
        return;
    snprintf(path, pl, "%s/%s", h->ixdir, BD_HINDEX_FILE);
    bd_hindex_unseal(path);
    snprintf(h->ix_note, sizeof(h->ix_note),
             "the history's index (%s) disagrees with the records: it is rebuilt from them", path);
    free(path);
}

int bd_history_read_at(bd_history *h, const bd_hindex_hit *hit, bd_history_record *out, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (hist_open_dirfd(h, false, err) != 0)
        return -1;
    if (!is_v2(h) || hit->seq == 0 || hit->len == 0 || hit->len > BD_HISTORY_RECORD_MAX)
        return 1;
    char name[17];
    bd_segment_name(name, bd_segment_first(hit->seq));
    int fd = openat(h->segfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 1;
    /* The byte before (a '\n', unless it is the first line) and the '\n' after. */
    uint64_t at = hit->off ? hit->off - 1 : 0;
    size_t want = hit->len + 1 + (hit->off ? 1 : 0);
    char stackbuf[4096], *buf = want <= sizeof(stackbuf) ? stackbuf : malloc(want);
    if (!buf) {
        close(fd);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    }
    ssize_t got = pread(fd, buf, want, (off_t)at);
    close(fd);
    int rc = 1;
    const char *p = buf + (hit->off ? 1 : 0);
    if (got == (ssize_t)want && (!hit->off || buf[0] == '\n') && p[hit->len] == '\n') {
        rec_core core;
        char why[256];
        if (parse_record(p, hit->len, &core, out, why) == BD_CHAIN_OK) {
            if (core.seq == hit->seq)
                rc = 0;
            else
                bd_history_record_release(out);
        } else if (strcmp(why, "out of memory") == 0) {
            rc = bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        }
    }
    if (buf != stackbuf)
        free(buf);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}
