/*
 * segment.c — segment files of the history (segment.h).
 */
#include "segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void bd_segment_name(char out[17], uint64_t first)
{
    for (int i = 9; i >= 0; i--) {
        out[i] = (char)('0' + first % 10);
        first /= 10;
    }
    memcpy(out + 10, ".jsonl", 7);
}

int64_t bd_segment_parse_name(const char *name)
{
    int64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return strcmp(name + 10, ".jsonl") == 0 ? v : -1;
}

#define WHY(...) (why ? (void)snprintf(why, 256, __VA_ARGS__) : (void)0)

static int index_lines(bd_segbuf *b, bd_err *err)
{
    b->nlines = 0;
    if (!b->off || b->offcap < 2) {
        size_t cap = BD_SEGMENT_RECORDS + 2;
        size_t *p = realloc(b->off, cap * sizeof(*p));
        if (!p)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        b->off = p;
        b->offcap = cap;
    }
    b->off[0] = 0;
    const char *p = b->p, *end = b->p + b->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        if (b->nlines + 2 > b->offcap) {
            size_t cap = b->offcap * 2;
            size_t *q = realloc(b->off, cap * sizeof(*q));
            if (!q)
                return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
            b->off = q;
            b->offcap = cap;
        }
        p = nl + 1;
        b->off[++b->nlines] = (size_t)(p - b->p);
    }
    b->torn = (size_t)(end - p);
    return 0;
}

/* Open segment `first` read-only, never following a symlink or blocking on a FIFO, and
 * check it is a regular file of at most BD_SEGMENT_MAX bytes. BD_SEG_OK with *fd and
 * *st; otherwise nothing is left open. */
static int seg_open(int segfd, const char *dir, uint64_t first, int *fd, struct stat *st,
                    char why[256], bd_err *err)
{
    char name[17];
    bd_segment_name(name, first);
    *fd = openat(segfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0) {
        if (errno == ENOENT)
            return BD_SEG_ABSENT;
        if (errno == ELOOP) {
            WHY("segment %s is a symbolic link, not a segment file", name);
            return BD_SEG_BAD;
        }
        bd_err_errno(err, BD_E_IO, errno, dir, "cannot open the history segment %s", name);
        return BD_SEG_ERROR;
    }
    int rc = BD_SEG_OK;
    if (fstat(*fd, st) != 0) {
        bd_err_errno(err, BD_E_IO, errno, dir, "cannot stat the history segment %s", name);
        rc = BD_SEG_ERROR;
    } else if (!S_ISREG(st->st_mode)) {
        WHY("segment %s is not a regular file", name);
        rc = BD_SEG_BAD;
    } else if ((uint64_t)st->st_size > BD_SEGMENT_MAX) {
        WHY("segment %s is larger than %zu bytes", name, BD_SEGMENT_MAX);
        rc = BD_SEG_BAD;
    }
    if (rc != BD_SEG_OK) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

/* Read the file's bytes [from, EOF) into b->p (NUL-terminated; b->len). BD_SEG_OK or
 * BD_SEG_ERROR (err). A file that shrinks while being read gives what was read. */
static int read_range(bd_segbuf *b, int fd, const char *dir, const char *name, uint64_t from,
                      uint64_t size_now, bd_err *err)
{
    size_t size = (size_t)(size_now - from);
    if (b->cap < size + 1) {
        char *p = realloc(b->p, size + 1);
        if (!p)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        b->p = p;
        b->cap = size + 1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, b->p + got, size - got, (off_t)(from + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return bd_err_errno(err, BD_E_IO, errno, dir, "cannot read the history segment %s",
                                name);
        if (r == 0)
            break; /* shrank while being read: what was read is what there is */
        got += (size_t)r;
    }
    b->p[got] = '\0';
    b->len = got;
    return BD_SEG_OK;
}

/* Load segment `first` into *b: from byte `from` on (which must start a line), or, when
 * `tail`, the lines that start in its final `want` bytes. */
static int seg_load(bd_segbuf *b, int segfd, const char *dir, uint64_t first, uint64_t from,
                    bool tail, size_t want, char why[256], bd_err *err)
{
    char name[17];
    bd_segment_name(name, first);
    b->first = 0;
    b->from = 0;
    b->len = 0;
    b->nlines = 0;
    b->torn = 0;
    struct stat st;
    int fd;
    int rc = seg_open(segfd, dir, first, &fd, &st, why, err);
    if (rc != BD_SEG_OK)
        return rc;
    uint64_t size = (uint64_t)st.st_size;
    /* A tail: one byte more than asked, so a window that starts a line keeps it. */
    if (tail)
        from = size > want ? size - want - 1 : 0;
    rc = BD_SEG_ERROR;
    if (size < from) {
        WHY("segment %s is shorter than %llu bytes", name, (unsigned long long)from);
        rc = BD_SEG_BAD;
        goto out;
    }
    if (read_range(b, fd, dir, name, from, size, err) != BD_SEG_OK)
        goto out;
    if (tail && from > 0) {
        /* Drop the partial first line: the window starts after the first '\n' in it. */
        const char *nl = memchr(b->p, '\n', b->len);
        size_t skip = nl ? (size_t)(nl - b->p) + 1 : b->len;
        memmove(b->p, b->p + skip, b->len - skip + 1);
        b->len -= skip;
        from += skip;
    } else if (from > 0) {
        /* `from` must start a line: the byte before it is a '\n'. */
        char c;
        if (pread(fd, &c, 1, (off_t)from - 1) != 1 || c != '\n') {
            WHY("offset %llu of segment %s does not start a line", (unsigned long long)from, name);
            rc = BD_SEG_BAD;
            goto out;
        }
    }
    if (index_lines(b, err) != 0)
        goto out;
    b->first = first;
    b->from = from;
    rc = BD_SEG_OK;
out:
    close(fd);
    return rc;
}

int bd_segbuf_load_from(bd_segbuf *b, int segfd, const char *dir, uint64_t first, uint64_t from,
                        char why[256], bd_err *err)
{
    return seg_load(b, segfd, dir, first, from, false, 0, why, err);
}

int bd_segbuf_load_tail(bd_segbuf *b, int segfd, const char *dir, uint64_t first, size_t want,
                        char why[256], bd_err *err)
{
    return seg_load(b, segfd, dir, first, 0, true, want, why, err);
}

int bd_segbuf_load(bd_segbuf *b, int segfd, const char *dir, uint64_t first, char why[256],
                   bd_err *err)
{
    return bd_segbuf_load_from(b, segfd, dir, first, 0, why, err);
}

void bd_segbuf_release(bd_segbuf *b)
{
    free(b->p);
    free(b->off);
    memset(b, 0, sizeof(*b));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int bd_segment_list(int segfd, const char *dir, uint64_t **out, size_t *n, bd_err *err)
{
    *out = NULL;
    *n = 0;
    int fd = openat(segfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return bd_err_errno(err, BD_E_IO, e, dir, "cannot list the history segments");
    }
    uint64_t *v = NULL;
    size_t cnt = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        int64_t s = bd_segment_parse_name(de->d_name);
        if (s < 0) {
            errno = 0;
            continue;
        }
        if (cnt == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            uint64_t *p = realloc(v, ncap * sizeof(*p));
            if (!p) {
                rc = bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory listing the history");
                break;
            }
            v = p;
            cap = ncap;
        }
        v[cnt++] = (uint64_t)s;
        errno = 0;
    }
    if (rc == 0 && errno != 0)
        rc = bd_err_errno(err, BD_E_IO, errno, dir, "cannot list the history segments");
    closedir(d);
    if (rc != 0) {
        free(v);
        return -1;
    }
    if (cnt > 1)
        qsort(v, cnt, sizeof(*v), cmp_u64);
    *out = v;
    *n = cnt;
    return 0;
}

/* Two chunks are held at once (the one worked on and the one read ahead). */
#define STREAM_CHUNK ((size_t)4 << 20)

static size_t stream_chunk = STREAM_CHUNK;

void bd_history_test_stream_chunk(size_t bytes)
{
    stream_chunk = bytes ? bytes : STREAM_CHUNK;
}

int bd_segstream_open(bd_segstream *s, int segfd, const char *dir, uint64_t first, char why[256],
                      bd_err *err)
{
    s->fd = -1;
    s->pos = 0;
    s->eof = false;
    s->ahead_running = false;
    s->b.first = first;
    s->b.len = 0;
    s->b.nlines = 0;
    s->b.torn = 0;
    if (s->chunk == 0)
        s->chunk = stream_chunk;
    struct stat st;
    int fd;
    int rc = seg_open(segfd, dir, first, &fd, &st, why, err);
    if (rc != BD_SEG_OK)
        return rc;
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    s->fd = fd;
    return BD_SEG_OK;
}

/* Into `to`: the torn bytes of `from` (they start the next line), then the file's next
 * bytes up to a chunk, indexed. 0, or -1 (io.error, env.out_of_memory). */
static int read_chunk(bd_segstream *s, const bd_segbuf *from, bd_segbuf *to, bool *eof,
                      const char *dir, bd_err *err)
{
    size_t keep = from->torn, whole = from->len - from->torn;
    size_t chunk = s->chunk;
    if (keep >= chunk)
        chunk = keep * 2; /* one line longer than a chunk: read further */
    if (to->cap < chunk + 1) {
        char *p = realloc(to->p, chunk + 1);
        if (!p)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
        to->p = p;
        to->cap = chunk + 1;
    }
    if (keep > 0)
        memmove(to->p, from->p + whole, keep);
    to->first = from->first;
    to->len = keep;
    *eof = false;
    while (to->len < chunk) {
        ssize_t r = read(s->fd, to->p + to->len, chunk - to->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return bd_err_errno(err, BD_E_IO, errno, dir, "cannot read a history segment");
        if (r == 0) {
            *eof = true;
            break;
        }
        to->len += (size_t)r;
    }
    to->p[to->len] = '\0';
    return index_lines(to, err);
}

static void *read_ahead(void *arg)
{
    bd_segstream *s = arg;
    s->ahead_err = (bd_err)BD_ERR_INIT;
    s->ahead_rc = read_chunk(s, &s->b, &s->ahead, &s->ahead_eof, s->dir, &s->ahead_err);
    return NULL;
}

/* Wait for the chunk read ahead, if any. */
static void ahead_join(bd_segstream *s)
{
    if (s->ahead_running)
        pthread_join(s->ahead_tid, NULL);
    s->ahead_running = false;
}

int bd_segstream_next(bd_segstream *s, const char *dir, bd_err *err)
{
    int rc;
    bool eof;
    if (s->ahead_running) {
        ahead_join(s);
        rc = s->ahead_rc;
        eof = s->ahead_eof;
        if (rc != 0) {
            *err = s->ahead_err;
            return -1;
        }
    } else if (s->b.len == 0) { /* the first chunk */
        rc = read_chunk(s, &s->b, &s->b, &eof, dir, err);
        if (rc != 0)
            return -1;
        goto indexed;
    } else {
        rc = read_chunk(s, &s->b, &s->ahead, &eof, dir, err);
        if (rc != 0)
            return -1;
    }
    s->pos += s->b.len - s->b.torn;
    bd_segbuf t = s->b;
    s->b = s->ahead;
    s->ahead = t;
indexed:
    s->eof = eof;
    s->dir = dir;
    if (!eof && pthread_create(&s->ahead_tid, NULL, read_ahead, s) == 0)
        s->ahead_running = true;
    return 0;
}

void bd_segstream_close(bd_segstream *s)
{
    ahead_join(s);
    bd_segbuf_release(&s->ahead);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    bd_segbuf_release(&s->b);
}
