/*
 * happend.c — appending to the history (docs/history.md "Appending"): records built and
 * checked with verify's own parser, a batch written with one lock, one write and one fsync
 * per segment (group commit), a torn final line repaired, and a version-1 history
 * converted to segments first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "history_internal.h"

#include "canon.h"
#include "hash.h"
#include "fsutil.h"
#include "text.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* ---- appending ---------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static bool set_str(cJSON *o, const char *key, const char *v)
{
    cJSON *item = v ? cJSON_CreateString(v) : cJSON_CreateNull();
    if (!item)
        return false;
    if (!cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

/* Remove a segments.tmp left by a crashed conversion: it is incomplete by definition. */
static void remove_segtmp(bd_history *h)
{
    int old = openat(h->dirfd, SEGTMP_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (old < 0)
        return;
    DIR *d = fdopendir(old);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            unlinkat(old, de->d_name, 0);
    if (d)
        closedir(d);
    else
        close(old);
    unlinkat(h->dirfd, SEGTMP_NAME, AT_REMOVEDIR);
}

/* A write buffer for the conversion: records collected and written 1 MiB at a time. */
typedef struct wbuf {
    char *p;
    size_t len, cap;
} wbuf;

/* Write records first..last of the version-1 files as segment `first` into directory
 * `tfd` (path: its name, for messages), synced. 0, or -1 with err. */
static int convert_segment(bd_history *h, src *s, wbuf *wb, int tfd, uint64_t first, uint64_t last,
                           const char *path, bd_err *err)
{
    char name[17];
    bd_segment_name(name, first);
    int fd = openat(tfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return bd_err_errno(err, BD_E_IO, errno, path, "cannot create segment %s", name);
    for (uint64_t k = first; k <= last; k++) {
        const char *p;
        size_t len;
        char why[256];
        if (hist_get_rec(h, s, k, &p, &len, why, err) != RD_OK) {
            if (err && err->code == BD_OK)
                bd_err_set(err, BD_E_CHAIN_TAMPERED, h->dir, 0, 0,
                           "record %llu changed during the conversion to segments",
                           (unsigned long long)k);
            close(fd);
            return -1;
        }
        if (wb->len + len + 1 > wb->cap) {
            size_t need = wb->len + len + 1;
            size_t ncap = need * 2 > (1u << 20) ? need * 2 : 1u << 20;
            char *q = realloc(wb->p, ncap);
            if (!q) {
                close(fd);
                return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0,
                                  "out of memory converting the history");
            }
            wb->p = q;
            wb->cap = ncap;
        }
        memcpy(wb->p + wb->len, p, len);
        wb->p[wb->len + len] = '\n';
        wb->len += len + 1;
        if (wb->len >= (1u << 20) || k == last) {
            if (write_all(fd, wb->p, wb->len) != 0) {
                bd_err_errno(err, BD_E_IO, errno, path, "cannot write segment %s", name);
                close(fd);
                return -1;
            }
            wb->len = 0;
        }
    }
    /* Closed whatever fsync says: a failed sync must not leak the descriptor. */
    int e = fsync(fd) != 0 ? errno : 0;
    if (close(fd) != 0 && e == 0)
        e = errno;
    if (e != 0)
        return bd_err_errno(err, BD_E_IO, e, path, "cannot sync segment %s", name);
    return 0;
}

/* Convert a version-1 history (one file per record) to segments, under the lock: the chain
 * must verify first (a broken chain is never rewritten); the segments are written into
 * segments.tmp, synced, and renamed into place in one step, so a crash leaves either the
 * old layout or the new one. The record bytes do not change. The old files are removed
 * afterwards; a crash before that leaves them behind, ignored and removed later. */
static int convert_v1(bd_history *h, bd_err *err)
{
    /* Another handle or process may have created the segments since this one opened. */
    if (hist_open_segfd(h, err) != 0)
        return -1;
    if (is_v2(h))
        return 0;
    uint64_t max;
    bool zero;
    if (hist_scan_dir(h, &max, &zero, true, err) != 0)
        return -1;
    bd_history_verify_result vr;
    if (max > 0 || zero) {
        int v = bd_history_verify(h, BD_VERIFY_FULL, &vr, err);
        bd_history_verify_result_release(&vr);
        if (v != 0) {
            if (err && err->code == BD_E_CHAIN_TAMPERED)
                snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg),
                         " (the version-1 history is not converted to segments while broken)");
            return -1;
        }
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", h->dir, SEGTMP_NAME);
    int rc = -1, tfd = -1;
    src s = {0};
    wbuf wb = {NULL, 0, 0};
    remove_segtmp(h);
    if (mkdirat(h->dirfd, SEGTMP_NAME, 0700) != 0 ||
        (tfd = openat(h->dirfd, SEGTMP_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
            0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot create the segments directory");
        goto out;
    }
    for (uint64_t first = 1; first <= max; first += BD_SEGMENT_RECORDS) {
        uint64_t last = first + BD_SEGMENT_RECORDS - 1 < max ? first + BD_SEGMENT_RECORDS - 1 : max;
        if (convert_segment(h, &s, &wb, tfd, first, last, path, err) != 0)
            goto out;
    }
    if (fsync(tfd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot sync the segments directory");
        goto out;
    }
    if (renameat(h->dirfd, SEGTMP_NAME, h->dirfd, BD_SEGMENTS_DIR) != 0) {
        bd_err_errno(err, BD_E_IO, errno, h->segdir,
                     "cannot move the converted segments into place (the history is unchanged)");
        goto out;
    }
    if (fsync(h->dirfd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, h->dir,
                     "the history was converted to segments but its directory could not be "
                     "synced; check the disk");
        goto out;
    }
    if (hist_open_segfd(h, err) != 0)
        goto out;
    /* The version-1 files are now ignored; remove them. */
    for (uint64_t k = 1; k <= max; k++) {
        char name[16];
        bd_history_file_name(name, k);
        unlinkat(h->dirfd, name, 0);
    }
    unlinkat(h->dirfd, HEAD_NAME, 0);
    rc = 0;
out:
    if (tfd >= 0)
        close(tfd);
    free(wb.p);
    hist_src_release(&s);
    return rc;
}

/* One record to append: built without seq and prev_hash. */
typedef struct pending {
    char *bytes;
    size_t len;
    size_t prev_at; /* where the 64 hex digits of prev_hash start in bytes */
} pending;

/* Give `rec` its seq and a placeholder prev_hash, serialize it canonically and check it
 * with verify's own parser: a record verify would reject is never written. The real
 * prev_hash is patched in afterwards (link_record): it is 64 hex digits either way, so the
 * bytes stay canonical and valid, and the expensive part can run for many records at
 * once. */
static int build_record(cJSON *rec, uint64_t seq, pending *pd, bd_err *err)
{
    static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
    char why[256];
    cJSON_DeleteItemFromObjectCaseSensitive(rec, "seq");
    cJSON_DeleteItemFromObjectCaseSensitive(rec, "prev_hash");
    cJSON *seq_item = cJSON_CreateNumber((double)seq);
    if (!seq_item || !cJSON_AddItemToObject(rec, "seq", seq_item)) {
        cJSON_Delete(seq_item);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
    }
    if (!set_str(rec, "prev_hash", zeros))
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
    free(pd->bytes);
    pd->bytes = bd_canon_json(rec, &pd->len);
    if (!pd->bytes)
        return bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                          "the history record cannot be written as canonical JSON (a NaN or "
                          "infinite number, invalid UTF-8, or a duplicate key); nothing was "
                          "appended");
    rec_core core;
    if (parse_record(pd->bytes, pd->len, &core, NULL, why) != BD_CHAIN_OK)
        return bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                          "refusing to append an invalid history record: %s; nothing was appended",
                          why);
    /* In canonical bytes `"prev_hash":"` can only be the top-level member: a '"' inside
     * a string is escaped, and nested members have fixed names or numeric values. */
    static const char key[] = "\"prev_hash\":\"";
    const char *at = memmem(pd->bytes, pd->len, key, sizeof(key) - 1);
    if (!at || (size_t)(at - pd->bytes) + sizeof(key) - 1 + 64 > pd->len)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "prev_hash not found in a new record");
    pd->prev_at = (size_t)(at - pd->bytes) + sizeof(key) - 1;
    return 0;
}

/* Put the real prev_hash into a built record and hash it. */
static void link_record(pending *pd, const uint8_t prev[32], uint8_t hash[32])
{
    char hex[BD_HASH_BUF];
    bd_hex(hex, prev, 32);
    memcpy(pd->bytes + pd->prev_at, hex, 64);
    bd_history_record_hash(hash, prev, pd->bytes, pd->len);
}

/* Building records in parallel (a batch of many). */
typedef struct build_work {
    cJSON **recs;
    pending *pd;
    uint64_t first_seq;
    size_t n;
    atomic_size_t next;
    atomic_int failed;
    bd_err err; /* the first failure */
    pthread_mutex_t mu;
} build_work;

static void *build_worker(void *arg)
{
    build_work *w = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&w->next, 1);
        if (i >= w->n || atomic_load(&w->failed))
            break;
        bd_err e = BD_ERR_INIT;
        if (build_record(w->recs[i], w->first_seq + i, &w->pd[i], &e) != 0) {
            pthread_mutex_lock(&w->mu);
            if (!atomic_load(&w->failed))
                w->err = e;
            atomic_store(&w->failed, 1);
            pthread_mutex_unlock(&w->mu);
            break;
        }
    }
    return NULL;
}

/* Build records recs[0..n) as seq first_seq.. on up to verify_threads() threads. */
static int build_records(cJSON **recs, pending *pd, uint64_t first_seq, size_t n, bd_err *err)
{
    build_work w;
    memset(&w, 0, sizeof(w));
    w.recs = recs;
    w.pd = pd;
    w.first_seq = first_seq;
    w.n = n;
    pthread_mutex_init(&w.mu, NULL);
    pthread_t tids[VERIFY_MAX_THREADS];
    int started = 0, nthreads = n >= 32 ? verify_threads() : 1; /* (a batch of a few: no lookup) */
    for (int t = 1; t < nthreads; t++)
        if (pthread_create(&tids[started], NULL, build_worker, &w) == 0)
            started++;
    build_worker(&w);
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    pthread_mutex_destroy(&w.mu);
    if (atomic_load(&w.failed)) {
        if (err)
            *err = w.err;
        return -1;
    }
    return 0;
}

/* Take the lock and the descriptor of the lock file (close it to release). */
static int take_lock(bd_history *h, bd_err *err)
{
    int lockfd = openat(h->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lockfd < 0)
        return bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot open the history lock file .lock");
    while (flock(lockfd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot lock the history");
            close(lockfd);
            return -1;
        }
    }
    return lockfd;
}

/* Open segment `first` for appending, `expect` bytes of whole lines long; bytes beyond
 * that are a torn final line a crash left, truncated here and noted in h->repair. */
static int open_for_append(bd_history *h, uint64_t first, off_t expect, bool *created, bd_err *err)
{
    char name[17], path[PATH_MAX + 32];
    bd_segment_name(name, first);
    snprintf(path, sizeof(path), "%s/%s", h->segdir, name);
    *created = false;
    int fd = openat(h->segfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = openat(h->segfd, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
        *created = fd >= 0;
    }
    if (fd < 0)
        return bd_err_errno(err, BD_E_IO, errno, path, "cannot open the history segment");
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                   "the history segment is not a regular file; run ");
        return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
    }
    if (st.st_size == expect)
        return fd;
    if (st.st_size > expect && st.st_size - expect <= (off_t)BD_HISTORY_RECORD_MAX + 1) {
        /* Only a torn line (no '\n') may follow the head. */
        size_t n = (size_t)(st.st_size - expect);
        char *tail = malloc(n);
        int rfd = tail ? openat(h->segfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
        bool torn =
            rfd >= 0 && pread(rfd, tail, n, expect) == (ssize_t)n && memchr(tail, '\n', n) == NULL;
        if (rfd >= 0)
            close(rfd);
        free(tail);
        if (torn) {
            if (ftruncate(fd, expect) != 0 || fsync(fd) != 0) {
                bd_err_errno(err, BD_E_IO, errno, path, "cannot truncate the torn final line");
                close(fd);
                return -1;
            }
            snprintf(h->repair, sizeof(h->repair),
                     "history segment %s: removed a torn final line of %zu bytes left by a "
                     "crash during an earlier append (it was never a record)",
                     name, n);
            return fd;
        }
    }
    close(fd);
    bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
               "the segment holds %lld bytes where the chain head says %lld; run ",
               (long long)st.st_size, (long long)expect);
    return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
}

/* Write built and linked records pd[0..n) (seq head_seq+1..) after the segment tail *t,
 * through `buf` (room for all of them): one write and one fsync per segment the batch
 * touches (usually one). *t follows the writes. 0, or -1 with err (the segment being
 * written is cut back to its last whole record). */
static int write_batch(bd_history *h, const pending *pd, size_t n, uint64_t head_seq, char *buf,
                       segtail *t, bd_err *err)
{
    size_t i = 0;
    while (i < n) {
        uint64_t seq = head_seq + 1 + i;
        uint64_t first = bd_segment_first(seq);
        size_t j = i, blen = 0;
        while (j < n && bd_segment_first(head_seq + 1 + j) == first) {
            memcpy(buf + blen, pd[j].bytes, pd[j].len);
            buf[blen + pd[j].len] = '\n';
            blen += pd[j].len + 1;
            j++;
        }
        off_t expect = t->first == first ? t->whole : 0;
        bool created;
        char name[17], path[PATH_MAX + 32];
        bd_segment_name(name, first);
        snprintf(path, sizeof(path), "%s/%s", h->segdir, name);
        int fd = open_for_append(h, first, expect, &created, err);
        if (fd < 0)
            return -1;
        if (write_all(fd, buf, blen) != 0 || fdatasync(fd) != 0) {
            int e = errno;
            /* Leave no partial record behind; the append failed as a whole. */
            if (ftruncate(fd, expect) == 0)
                fsync(fd);
            bd_err_errno(err, BD_E_IO, e, path,
                         "cannot write or sync the history segment: nothing was appended from "
                         "seq %llu on (the segment is cut back to its last whole record)",
                         (unsigned long long)seq);
            close(fd);
            return -1;
        }
        if (created && fsync(h->segfd) != 0) {
            bd_err_errno(err, BD_E_IO, errno, path,
                         "the new segment was written but the segments directory could not be "
                         "synced, so it may not survive a crash; check the disk");
            close(fd);
            return -1;
        }
        close(fd);
        t->first = first;
        t->whole = expect + (off_t)blen;
        i = j;
    }
    return 0;
}

/* Append `n` built records (without seq and prev_hash) together: one lock, one write and
 * one fsync per segment touched (group commit). Either all are appended or none. */
static int append_records(bd_history *h, cJSON **recs, size_t n, uint64_t *first_out,
                          char (*hashes_out)[BD_HASH_BUF], bd_err *err)
{
    int rc = -1, lockfd = -1;
    rbuf b = {NULL, 0};
    pending *pd = NULL;
    char *buf = NULL;
    uint8_t(*hashes)[32] = NULL;
    uint64_t head_seq;
    uint8_t head_hash[32];
    segtail t;
    h->repair[0] = '\0';
    if (n == 0)
        return bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0, "no records to append");
    if (hist_open_dirfd(h, true, err) != 0 || (lockfd = take_lock(h, err)) < 0)
        goto out;
    if (convert_v1(h, err) != 0)
        goto out;
    if (!is_v2(h)) {
        if (mkdirat(h->dirfd, BD_SEGMENTS_DIR, 0700) != 0 && errno != EEXIST) {
            bd_err_errno(err, BD_E_IO, errno, h->segdir, "cannot create the segments directory");
            goto out;
        }
        if (fsync(h->dirfd) != 0) {
            bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot sync the history directory");
            goto out;
        }
        if (hist_open_segfd(h, err) != 0)
            goto out;
    }
    if (hist_find_head_v2(h, &b, &head_seq, head_hash, &t, err) != 0)
        goto out;
    if (head_seq + n > BD_HISTORY_SEQ_MAX) {
        bd_err_set(err, BD_E_IO, h->dir, 0, 0, "the history is full (seq %llu)",
                   (unsigned long long)head_seq);
        goto out;
    }
    if (!(pd = calloc(n, sizeof(*pd))) || !(hashes = malloc(n * sizeof(*hashes)))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory appending to the history");
        goto out;
    }
    if (build_records(recs, pd, head_seq + 1, n, err) != 0)
        goto out;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        link_record(&pd[i], i ? hashes[i - 1] : head_hash, hashes[i]);
        total += pd[i].len + 1;
    }
    if (!(buf = malloc(total))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory appending to the history");
        goto out;
    }
    if (write_batch(h, pd, n, head_seq, buf, &t, err) != 0)
        goto out;
    if (first_out)
        *first_out = head_seq + 1;
    if (hashes_out)
        for (size_t k = 0; k < n; k++)
            bd_hex(hashes_out[k], hashes[k], 32);
    rc = 0;
out:
    if (lockfd >= 0)
        close(lockfd); /* releases the flock */
    if (pd)
        for (size_t k = 0; k < n; k++)
            free(pd[k].bytes);
    free(pd);
    free(buf);
    free(hashes);
    free(b.p);
    return rc;
}

int bd_history_repair_tail(bd_history *h, bd_err *err)
{
    int rc = -1, lockfd = -1, fd = -1;
    rbuf b = {NULL, 0};
    uint64_t head_seq;
    uint8_t head_hash[32];
    segtail t;
    h->repair[0] = '\0';
    if (hist_open_dirfd(h, false, err) != 0)
        return -1;
    if (!is_v2(h))
        return 0; /* no history yet, or one file per record: no line to tear */
    if ((lockfd = take_lock(h, err)) < 0)
        goto out;
    if (hist_find_head_v2(h, &b, &head_seq, head_hash, &t, err) != 0)
        goto out;
    /* The segment the next append writes to, as append_records picks it; absent: nothing
     * to repair (and it is not created here). */
    uint64_t first = bd_segment_first(head_seq + 1);
    char name[17];
    bd_segment_name(name, first);
    struct stat st;
    if (fstatat(h->segfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
        rc = 0;
        goto out;
    }
    bool created;
    if ((fd = open_for_append(h, first, t.first == first ? t.whole : 0, &created, err)) < 0)
        goto out;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (lockfd >= 0)
        close(lockfd);
    free(b.p);
    return rc;
}

static int append_record(bd_history *h, cJSON *rec, uint64_t *seq_out, char hash_out[BD_HASH_BUF],
                         bd_err *err)
{
    char hash[1][BD_HASH_BUF];
    if (append_records(h, &rec, 1, seq_out, hash, err) != 0)
        return -1;
    if (hash_out)
        memcpy(hash_out, hash[0], BD_HASH_BUF);
    return 0;
}

/* Build the score record of `f` and `s` without seq and prev_hash into *out (new tree). */
static int build_score(const bd_history_score_fields *f, const bd_score *s, cJSON **out,
                       bd_err *err)
{
    int rc = -1;
    *out = NULL;
    cJSON *rec = cJSON_CreateObject();
    cJSON *score = s ? bd_score_to_json(s) : NULL;
    if (!f || !s) {
        bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                   "no fields or no score given for the history record");
        goto out;
    }
    if (!rec || !score)
        goto oom;
    cJSON *sv = cJSON_CreateNumber(BD_HISTORY_SCHEMA_VERSION);
    if (!sv || !cJSON_AddItemToObject(rec, "schema_version", sv)) {
        cJSON_Delete(sv);
        goto oom;
    }
    if (!set_str(rec, "run_id", f->run_id) || !set_str(rec, "task_class", f->task_class) ||
        !set_str(rec, "case_id", f->case_id) || !set_str(rec, "case_digest", f->case_digest) ||
        !set_str(rec, "task_class_digest", f->task_class_digest) ||
        !set_str(rec, "run_scope", f->run_full ? "full" : "subset") ||
        !set_str(rec, "cassette_digest", f->cassette_digest) ||
        !set_str(rec, "harness_version", f->harness_version ? f->harness_version : BD_VERSION) ||
        !set_str(rec, "isolation_class", f->isolation_class) ||
        !set_str(rec, "operator_fingerprint", f->operator_fingerprint) ||
        !set_str(rec, "started_at", f->started_at) || !set_str(rec, "finished_at", f->finished_at))
        goto oom;
    cJSON *pv = cJSON_CreateBool(f->provenance_verified);
    if (!pv || !cJSON_AddItemToObject(rec, "provenance_verified", pv)) {
        cJSON_Delete(pv);
        goto oom;
    }
    cJSON *rc_n = cJSON_CreateNumber((double)f->run_cases);
    if (!rc_n || !cJSON_AddItemToObject(rec, "run_cases", rc_n)) {
        cJSON_Delete(rc_n);
        goto oom;
    }
    if (f->origin && f->origin->present) {
        cJSON *o = cJSON_AddObjectToObject(rec, "origin");
        if (!o || !set_str(o, "run_id", f->origin->run_id) ||
            !cJSON_AddNumberToObject(o, "shard", f->origin->shard) ||
            !cJSON_AddNumberToObject(o, "shards", f->origin->shards) ||
            !set_str(o, "bundle_record_hash", f->origin->bundle_record_hash) ||
            !set_str(o, "host", f->origin->host))
            goto oom;
    }
    if (!cJSON_AddItemToObject(rec, "score", score))
        goto oom;
    score = NULL;
    /* A required string given as NULL became null: check_schema names it. */
    *out = rec;
    rec = NULL;
    rc = 0;
    goto out;
oom:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
out:
    cJSON_Delete(score);
    cJSON_Delete(rec);
    return rc;
}

int bd_history_append_score(bd_history *h, const bd_history_score_fields *f, const bd_score *s,
                            uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err)
{
    cJSON *rec;
    if (build_score(f, s, &rec, err) != 0)
        return -1;
    int rc = append_record(h, rec, seq_out, hash_out, err);
    cJSON_Delete(rec);
    return rc;
}

int bd_history_append_batch(bd_history *h, const bd_history_score_fields *f,
                            const bd_score *const *s, size_t n, uint64_t *first_seq_out,
                            char (*hashes_out)[BD_HASH_BUF], bd_err *err)
{
    cJSON **recs = calloc(n ? n : 1, sizeof(*recs));
    int rc = -1;
    if (!recs)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory appending to the history");
    size_t built = 0;
    for (; built < n; built++)
        if (build_score(&f[built], s[built], &recs[built], err) != 0)
            goto out;
    rc = append_records(h, recs, n, first_seq_out, hashes_out, err);
out:
    for (size_t i = 0; i < built; i++)
        cJSON_Delete(recs[i]);
    free(recs);
    return rc;
}

int bd_history_append_audit(bd_history *h, const bd_history_audit_fields *f, uint64_t *seq_out,
                            char hash_out[BD_HASH_BUF], bd_err *err)
{
    int rc = -1;
    char now[21];
    cJSON *rec = cJSON_CreateObject();
    if (!f) {
        bd_err_set(err, BD_E_HISTORY_RECORD_INVALID, NULL, 0, 0,
                   "no fields given for the audit record");
        goto out;
    }
    if (!rec)
        goto oom;
    bd_utc_now(now);
    cJSON *sv = cJSON_CreateNumber(BD_HISTORY_SCHEMA_VERSION);
    if (!sv || !cJSON_AddItemToObject(rec, "schema_version", sv)) {
        cJSON_Delete(sv);
        goto oom;
    }
    if (!set_str(rec, "kind", "audit") || !set_str(rec, "event", f->event) ||
        !set_str(rec, "task_class", f->task_class) ||
        !set_str(rec, "detail", f->detail ? f->detail : "") ||
        !set_str(rec, "operator_fingerprint", f->operator_fingerprint) ||
        !set_str(rec, "harness_version", f->harness_version ? f->harness_version : BD_VERSION) ||
        !set_str(rec, "at", f->at ? f->at : now))
        goto oom;
    rc = append_record(h, rec, seq_out, hash_out, err);
    goto out;
oom:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a history record");
out:
    cJSON_Delete(rec);
    return rc;
}
