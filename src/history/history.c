/*
 * history.c — opening the history (docs/history.md, history.h) and reading its records:
 * one file per record (version 1) or lines of segments (version 2), the chain head, the
 * HEAD hint. The other rooms of the history are listed in README.md; what they share is
 * history_internal.h.
 *
 * Every file operation is relative to one directory descriptor opened with O_NOFOLLOW, so
 * a symlink swapped in for the directory after open cannot redirect writes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "history_internal.h"

#include "fsutil.h"
#include "hash.h"
#include "hindex.h"

/* ---- small helpers ------------------------------------------------------------------ */

void bd_history_file_name(char out[16], uint64_t seq)
{
    /* Written by hand: verify formats 100k names and snprintf shows up in profiles. */
    for (int i = 9; i >= 0; i--) {
        out[i] = (char)('0' + seq % 10);
        seq /= 10;
    }
    memcpy(out + 10, ".json", 6);
}

/* Seq of a record file name "<10 digits>.json", or -1 for any other name. */
static int64_t parse_record_name(const char *name)
{
    int64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return strcmp(name + 10, ".json") == 0 ? v : -1;
}

/* True for "<10 digits>.json.tmp": a temp file an interrupted append left behind. */
static bool is_record_tmp_name(const char *name)
{
    for (int i = 0; i < 10; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    return strcmp(name + 10, ".json.tmp") == 0;
}

/* ---- opening ------------------------------------------------------------------------ */

/* The segments directory, when the history is in the version-2 layout. */
int hist_open_segfd(bd_history *h, bd_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    if (h->segfd >= 0 || h->dirfd < 0)
        goto out;
    int fd = openat(h->dirfd, BD_SEGMENTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            goto out; /* version-1 layout, or no record yet */
        if (errno == ELOOP || errno == ENOTDIR) {
            bd_err_set(err, BD_E_CHAIN_TAMPERED, h->segdir, 0, 0,
                       "the history's segments path is not a directory (or is a symbolic "
                       "link); run ");
            rc = bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
        } else
            rc = bd_err_errno(err, BD_E_IO, errno, h->segdir, "cannot open the history segments");
        goto out;
    }
    h->segfd = fd;
out:
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int hist_open_dirfd(bd_history *h, bool create, bd_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    if (h->dirfd >= 0)
        goto out;
    if (create && bd_mkdir_p(h->dir, 0700, err) != 0) {
        rc = -1;
        goto out;
    }
    int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && !create)
            goto out; /* no history yet: an empty chain */
        if (errno == ELOOP || errno == ENOTDIR)
            rc = bd_err_set(err, BD_E_IO, h->dir, 0, 0,
                            "the history path is not a directory (or is a symbolic link); "
                            "move it aside so benchdesk can recreate it");
        else
            rc = bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot open the history directory");
        goto out;
    }
    h->dirfd = fd;
out:
    pthread_mutex_unlock(&h->mu);
    return rc == 0 ? hist_open_segfd(h, err) : rc;
}

int bd_history_open_dir(bd_history **out, const char *dir, int flags, bd_err *err)
{
    *out = NULL;
    bd_history *h = calloc(1, sizeof(*h));
    size_t sl = strlen(dir) + sizeof("/" BD_SEGMENTS_DIR);
    if (!h || !(h->dir = strdup(dir)) || !(h->segdir = malloc(sl))) {
        if (h)
            free(h->dir);
        free(h);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the history");
    }
    snprintf(h->segdir, sl, "%s/%s", dir, BD_SEGMENTS_DIR);
    h->dirfd = -1;
    h->segfd = -1;
    pthread_mutex_init(&h->mu, NULL);
    if (hist_open_dirfd(h, (flags & BD_HISTORY_CREATE) != 0, err) != 0) {
        bd_history_free(h);
        return -1;
    }
    *out = h;
    return 0;
}

int bd_history_open(bd_history **out, const char *bench_root, int flags, bd_err *err)
{
    *out = NULL;
    size_t n = strlen(bench_root) + sizeof("/" BD_HISTORY_DIR);
    char *dir = malloc(n);
    if (!dir)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the history");
    snprintf(dir, n, "%s/%s", bench_root, BD_HISTORY_DIR);
    int rc = bd_history_open_dir(out, dir, flags, err);
    free(dir);
    if (rc != 0)
        return rc;
    /* Only a bench's own history gets a derived index (not a shard bundle's records). */
    n = strlen(bench_root) + sizeof("/" BD_HINDEX_DIR);
    if (!((*out)->ixdir = malloc(n))) {
        bd_history_free(*out);
        *out = NULL;
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the history");
    }
    snprintf((*out)->ixdir, n, "%s/%s", bench_root, BD_HINDEX_DIR);
    return 0;
}

void bd_history_free(bd_history *h)
{
    if (!h)
        return;
    if (h->dirfd >= 0)
        close(h->dirfd);
    if (h->segfd >= 0)
        close(h->segfd);
    pthread_mutex_destroy(&h->mu);
    free(h->dir);
    free(h->segdir);
    free(h->ixdir);
    free(h);
}

const char *bd_history_dir(const bd_history *h)
{
    return h->dir;
}

/* ---- reading files ------------------------------------------------------------------ */

/* Where record `seq` lives: its file (version 1) or its segment (version 2; `rec_line`
 * gives the line). */
void hist_record_path(char *out, size_t size, const bd_history *h, uint64_t seq)
{
    if (is_v2(h)) {
        char name[17];
        bd_segment_name(name, seq ? bd_segment_first(seq) : 1);
        snprintf(out, size, "%s/%s", h->segdir, name);
        return;
    }
    char name[16];
    bd_history_file_name(name, seq);
    snprintf(out, size, "%s/%s", h->dir, name);
}

/* Read record file `seq` into b. RD_OK with *len; RD_ABSENT; RD_BAD when the entry is not
 * a readable record file (symlink, directory, FIFO, too large; `why` says which);
 * RD_ERROR with err (io.error, env.out_of_memory). One open and one read. */
int hist_read_record_file(const bd_history *h, uint64_t seq, rbuf *b, size_t *len, char *why,
                          bd_err *err)
{
    char name[16];
    bd_history_file_name(name, seq);
    *len = 0;
    if (h->dirfd < 0)
        return RD_ABSENT;
    /* O_NONBLOCK: a FIFO planted under a record's name must not hang verify. */
    int fd = openat(h->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return RD_ABSENT;
        if (errno == ELOOP) {
            WHY("a symbolic link, not a record file");
            return RD_BAD;
        }
        char path[PATH_MAX + 32];
        hist_record_path(path, sizeof(path), h, seq);
        bd_err_errno(err, BD_E_IO, errno, path, "cannot open the history record");
        return RD_ERROR;
    }
    int rc = RD_ERROR;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        char path[PATH_MAX + 32];
        hist_record_path(path, sizeof(path), h, seq);
        bd_err_errno(err, BD_E_IO, errno, path, "cannot stat the history record");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        WHY("not a regular file");
        rc = RD_BAD;
        goto out;
    }
    if ((uint64_t)st.st_size > BD_HISTORY_RECORD_MAX) {
        WHY("larger than %u bytes", BD_HISTORY_RECORD_MAX);
        rc = RD_BAD;
        goto out;
    }
    size_t size = (size_t)st.st_size;
    if (b->cap < size + 1) {
        size_t cap = size + 1 > 4096 ? size + 1 : 4096;
        char *p = realloc(b->p, cap);
        if (!p) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
            goto out;
        }
        b->p = p;
        b->cap = cap;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, b->p + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            char path[PATH_MAX + 32];
            hist_record_path(path, sizeof(path), h, seq);
            bd_err_errno(err, BD_E_IO, errno, path, "cannot read the history record");
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    b->p[got] = '\0';
    *len = got;
    rc = RD_OK;
out:
    close(fd);
    return rc;
}

void hist_src_release(src *s)
{
    free(s->b.p);
    bd_segbuf_release(&s->seg);
}

#define TAIL_FIRST_WINDOW ((size_t)128 * 1024)
static size_t tail_first_window = TAIL_FIRST_WINDOW;

void bd_history_test_tail_window(size_t bytes)
{
    tail_first_window = bytes ? bytes : TAIL_FIRST_WINDOW;
}

#define TAIL_WHOLE (-3) /* hist_get_tail: read the whole segment instead */

/* hist_get_rec in newest-first mode (src.newest_first): as hist_get_rec, or TAIL_WHOLE. A
 * window holds the lines of records tail_last - nlines + 1 .. tail_last; one that does not
 * reach back to `seq` is replaced by one four times larger (a window that does not start
 * the file is smaller than the file, so this stays under BD_SEGMENT_MAX). */
static int hist_get_tail(const bd_history *h, src *s, uint64_t seq, const char **p, size_t *len,
                         char *why, bd_err *err)
{
    uint64_t first = bd_segment_first(seq);
    size_t want = tail_first_window;
    if (want == SIZE_MAX)
        return TAIL_WHOLE;
    for (;;) {
        if (s->seg.first == first && s->tail_last) {
            if (seq > s->tail_last)
                return TAIL_WHOLE;
            uint64_t back = s->tail_last - seq; /* lines back from the window's last */
            if (back < s->seg.nlines) {
                *p = bd_segbuf_line(&s->seg, (size_t)(s->seg.nlines - 1 - back), len);
                return RD_OK;
            }
            if (s->seg.from == 0)
                return TAIL_WHOLE; /* the whole file, and not there */
            want = s->tail_want * 4;
        }
        int rc = bd_segbuf_load_tail(&s->seg, h->segfd, h->segdir, first, want, why, err);
        s->tail_last = 0;
        if (rc != BD_SEG_OK)
            return rc == BD_SEG_ABSENT ? RD_ABSENT : rc == BD_SEG_BAD ? RD_BAD : RD_ERROR;
        s->tail_want = want;
        if (s->seg.nlines == 0) {
            if (s->seg.from == 0)
                return TAIL_WHOLE;
            want *= 4; /* a window inside one long line */
            continue;
        }
        /* The window's last line says, by its own seq, which record it is. */
        size_t ll;
        const char *lp = bd_segbuf_line(&s->seg, s->seg.nlines - 1, &ll);
        rec_core core;
        if (parse_record(lp, ll, &core, NULL, why) != BD_CHAIN_OK ||
            bd_segment_first(core.seq) != first)
            return TAIL_WHOLE;
        s->tail_last = core.seq;
    }
}

void hist_src_whole(src *s)
{
    s->newest_first = false;
    s->tail_last = 0;
    s->seg.first = 0; /* the window is not the segment: read it again whole */
}

/* The bytes of record `seq`: RD_OK with *p and *len (valid until the next call on `s`),
 * RD_ABSENT, RD_BAD (`why`), RD_ERROR (err). In a segment, a line is record
 * first + its index; a torn final line is not a record. */
int hist_get_rec(const bd_history *h, src *s, uint64_t seq, const char **p, size_t *len, char *why,
                 bd_err *err)
{
    if (s->newest_first && is_v2(h) && seq > 0) {
        int rc = hist_get_tail(h, s, seq, p, len, why, err);
        if (rc != TAIL_WHOLE)
            return rc;
        hist_src_whole(s);
    }
    if (!is_v2(h)) {
        int rc = hist_read_record_file(h, seq, &s->b, len, why, err);
        *p = s->b.p;
        return rc;
    }
    if (seq == 0)
        return RD_ABSENT;
    uint64_t first = bd_segment_first(seq);
    if (s->seg.first != first) {
        int rc = bd_segbuf_load(&s->seg, h->segfd, h->segdir, first, why, err);
        if (rc != BD_SEG_OK)
            return rc == BD_SEG_ABSENT ? RD_ABSENT : rc == BD_SEG_BAD ? RD_BAD : RD_ERROR;
    }
    size_t i = (size_t)(seq - first);
    if (i >= s->seg.nlines)
        return RD_ABSENT;
    *p = bd_segbuf_line(&s->seg, i, len);
    return RD_OK;
}

/* Read, parse and hash record `seq`. Returns RD_OK (core, hash filled), RD_ABSENT, RD_BAD
 * (*reason and why say why it is not a record), RD_ERROR (err). */
int hist_load_core(const bd_history *h, src *s, uint64_t seq, rec_core *core, uint8_t hash[32],
                   bd_chain_reason *reason, char *why, bd_err *err)
{
    size_t len;
    const char *p;
    int rc = hist_get_rec(h, s, seq, &p, &len, why, err);
    if (rc == RD_BAD)
        *reason = BD_CHAIN_UNPARSEABLE;
    if (rc != RD_OK)
        return rc;
    *reason = parse_record(p, len, core, NULL, why);
    if (*reason != BD_CHAIN_OK)
        return RD_BAD;
    bd_history_record_hash(hash, core->prev, p, len);
    return RD_OK;
}

/* The HEAD hint: "<seq 10 digits> <64 hex>\n". Returns 0 when well-formed. */
int hist_read_head_hint(const bd_history *h, uint64_t *seq, uint8_t hash[32])
{
    char buf[80];
    if (h->dirfd < 0)
        return -1;
    int fd = openat(h->dirfd, HEAD_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n != 76 || buf[10] != ' ' || buf[75] != '\n')
        return -1;
    buf[10] = '\0';
    buf[75] = '\0';
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(buf[i] - '0');
    }
    if (v == 0 || bd_hash_unhex(hash, buf + 11) != 0)
        return -1;
    *seq = v;
    return 0;
}

/* Scan the directory: the highest record seq, whether a record "0" exists, and (when
 * `clean`) remove stray "<seq>.json.tmp" files. */
int hist_scan_dir(const bd_history *h, uint64_t *max_seq, bool *has_zero, bool clean, bd_err *err)
{
    *max_seq = 0;
    *has_zero = false;
    if (h->dirfd < 0)
        return 0;
    /* A fresh open file description: a dup would share (and move) dirfd's offset. */
    int fd = openat(h->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return bd_err_errno(err, BD_E_IO, e, h->dir, "cannot list the history directory");
    }
    int rc = 0;
    errno = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t s = parse_record_name(de->d_name);
        if (s == 0)
            *has_zero = true;
        else if (s > 0 && (uint64_t)s > *max_seq)
            *max_seq = (uint64_t)s;
        else if (s < 0 && clean && is_record_tmp_name(de->d_name) &&
                 unlinkat(h->dirfd, de->d_name, 0) != 0 && errno != ENOENT) {
            rc = bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot remove the stray temp file %s",
                              de->d_name);
            break;
        }
        errno = 0;
    }
    if (rc == 0 && errno != 0)
        rc = bd_err_errno(err, BD_E_IO, errno, h->dir, "cannot list the history directory");
    closedir(d);
    return rc;
}

static int tampered_head(bd_err *err, const bd_history *h, uint64_t seq, const char *why)
{
    char path[PATH_MAX + 32];
    hist_record_path(path, sizeof(path), h, seq);
    bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
               "the last history record (seq %llu) is not a valid record (%s); nothing can be "
               "chained onto it: run ",
               (unsigned long long)seq, why);
    return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
}

/* The chain head of a version-1 layout. `clean` removes stray temp files when the
 * directory is scanned. */
static int find_head_v1(const bd_history *h, src *b, uint64_t *seq, uint8_t hash[32], bool clean,
                        bd_err *err)
{
    rec_core core;
    bd_chain_reason reason;
    char why[256];
    uint8_t hh[32], got[32];
    uint64_t hs;
    memset(hash, 0, 32);
    *seq = 0;
    if (hist_read_head_hint(h, &hs, hh) == 0) {
        int rc = hist_load_core(h, b, hs, &core, got, &reason, why, err);
        if (rc == RD_ERROR)
            return -1;
        if (rc == RD_OK && core.seq == hs && memcmp(got, hh, 32) == 0) {
            /* Believe the hint, then walk forward over records appended after it (a
             * crash between a rename and the hint's update leaves it one behind). */
            for (int steps = 0; steps <= HEAD_PROBE_MAX && hs < BD_HISTORY_SEQ_MAX; steps++) {
                char next[16];
                bd_history_file_name(next, hs + 1);
                struct stat st;
                if (fstatat(h->dirfd, next, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
                    *seq = hs;
                    memcpy(hash, got, 32);
                    return 0;
                }
                memcpy(hh, got, 32);
                rc = hist_load_core(h, b, hs + 1, &core, got, &reason, why, err);
                if (rc == RD_ERROR)
                    return -1;
                if (rc != RD_OK || core.seq != hs + 1 || memcmp(core.prev, hh, 32) != 0)
                    break; /* not a clean continuation: let the scan decide */
                hs++;
            }
        }
    }
    uint64_t max;
    bool zero;
    if (hist_scan_dir(h, &max, &zero, clean, err) != 0)
        return -1;
    if (max == 0)
        return 0;
    int rc = hist_load_core(h, b, max, &core, got, &reason, why, err);
    if (rc == RD_ERROR)
        return -1;
    if (rc == RD_ABSENT)
        return tampered_head(err, h, max, "it vanished while being read");
    if (rc == RD_BAD)
        return tampered_head(err, h, max, why);
    *seq = max;
    memcpy(hash, got, 32);
    return 0;
}

static int seg_tail(const bd_history *h, rbuf *b, uint64_t first, segtail *t, bd_err *err)
{
    char name[17], path[PATH_MAX + 32], why[256];
    bd_segment_name(name, first);
    snprintf(path, sizeof(path), "%s/%s", h->segdir, name);
    memset(t, 0, sizeof(*t));
    t->first = first;
    int fd = openat(h->segfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        bd_err_errno(err, errno == ELOOP ? BD_E_CHAIN_TAMPERED : BD_E_IO, errno, path,
                     "cannot open the history segment");
        bd_err_append(err, "; run ");
        return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
    }
    int rc = -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                   "the history segment is not a regular file; run ");
        bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
        goto out;
    }
    t->size = st.st_size;
    size_t window = 65536;
    for (;;) {
        size_t want = (off_t)window < st.st_size ? window : (size_t)st.st_size;
        if (b->cap < want + 1) {
            char *p = realloc(b->p, want + 1);
            if (!p) {
                bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
                goto out;
            }
            b->p = p;
            b->cap = want + 1;
        }
        off_t at = st.st_size - (off_t)want;
        ssize_t got = pread(fd, b->p, want, at);
        if (got != (ssize_t)want) {
            bd_err_errno(err, BD_E_IO, got < 0 ? errno : EIO, path,
                         "cannot read the history segment");
            goto out;
        }
        /* The last '\n' ends the last whole line; the one before it starts it. */
        ssize_t nl = (ssize_t)want - 1;
        while (nl >= 0 && b->p[nl] != '\n')
            nl--;
        ssize_t start = nl - 1;
        while (start >= 0 && b->p[start] != '\n')
            start--;
        bool complete = start >= 0 || (off_t)want == st.st_size;
        if (nl < 0 && (off_t)want == st.st_size) {
            t->whole = 0; /* nothing but a torn tail */
            rc = 0;
            goto out;
        }
        if (nl >= 0 && complete) {
            t->whole = at + nl + 1;
            const char *line = b->p + start + 1;
            size_t len = (size_t)(nl - start - 1);
            rec_core core;
            if (parse_record(line, len, &core, NULL, why) != BD_CHAIN_OK) {
                bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                           "the last history record is not a valid record (%s); nothing can be "
                           "chained onto it: run ",
                           why);
                bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
                goto out;
            }
            if (core.seq < first || core.seq - first >= BD_SEGMENT_RECORDS) {
                bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                           "the last record of this segment is numbered %llu, outside the "
                           "segment; run ",
                           (unsigned long long)core.seq);
                bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
                goto out;
            }
            t->has_line = true;
            t->seq = core.seq;
            bd_history_record_hash(t->hash, core.prev, line, len);
            rc = 0;
            goto out;
        }
        if (window > BD_HISTORY_RECORD_MAX * 2u + 2u) {
            bd_err_set(err, BD_E_CHAIN_TAMPERED, path, 0, 0,
                       "the last history record is larger than %u bytes; run ",
                       BD_HISTORY_RECORD_MAX);
            bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
            goto out;
        }
        window *= 4;
    }
out:
    close(fd);
    return rc;
}

/* The head of a version-2 layout and the tail of the segment that holds it (t->first = 0
 * for an empty chain). */
int hist_find_head_v2(const bd_history *h, rbuf *b, uint64_t *seq, uint8_t hash[32], segtail *t,
                      bd_err *err)
{
    uint64_t *segs = NULL;
    size_t n = 0;
    memset(hash, 0, 32);
    *seq = 0;
    memset(t, 0, sizeof(*t));
    if (bd_segment_list(h->segfd, h->segdir, &segs, &n, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = n; i-- > 0;) {
        if (seg_tail(h, b, segs[i], t, err) != 0) {
            rc = -1;
            break;
        }
        if (t->has_line) {
            *seq = t->seq;
            memcpy(hash, t->hash, 32);
            break;
        }
    }
    if (rc == 0 && !t->has_line)
        memset(t, 0, sizeof(*t));
    free(segs);
    return rc;
}

static int find_head(const bd_history *h, src *s, uint64_t *seq, uint8_t hash[32], bd_err *err)
{
    if (is_v2(h)) {
        segtail t;
        return hist_find_head_v2(h, &s->b, seq, hash, &t, err);
    }
    return find_head_v1(h, s, seq, hash, false, err);
}

int bd_history_head(bd_history *h, uint64_t *seq_out, char hash_out[BD_HASH_BUF], bd_err *err)
{
    src s = {0};
    uint64_t seq = 0;
    uint8_t hash[32];
    int rc = hist_open_dirfd(h, false, err);
    if (rc == 0)
        rc = find_head(h, &s, &seq, hash, err);
    hist_src_release(&s);
    if (rc != 0)
        return -1;
    if (seq_out)
        *seq_out = seq;
    if (hash_out)
        bd_hex(hash_out, hash, 32);
    return 0;
}

const char *bd_history_repair_note(const bd_history *h)
{
    return h->repair[0] ? h->repair : NULL;
}
