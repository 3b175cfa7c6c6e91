/*
 * digest.c — BLAKE3 digests of case directories and files (DESIGN.md §2).
 *
 * The walk holds one directory descriptor per level and opens every child relative to
 * its parent's descriptor with O_NOFOLLOW, so no path is ever re-resolved by name and a
 * symlink swapped in mid-walk is refused, not followed. Every entry is lstat'ed
 * (fstatat AT_SYMLINK_NOFOLLOW) before it is opened — a device or FIFO is never opened —
 * and the opened descriptor is fstat'ed again: it must be the same inode, of the same
 * type, or the digest fails.
 *
 * Order. §2 sorts all relative paths bytewise. Within a directory every path below a
 * subdirectory "d" starts with "d/", so the global order is a depth-first walk that sorts
 * siblings by their name, with '/' appended to directory names ("a.b" < "a/" < "a0",
 * since '.' 0x2E < '/' 0x2F < '0' 0x30). That gives the same bytes as collecting and
 * sorting every path, while keeping only `depth` descriptors open; hash_file checks the
 * global order with strcmp anyway, so a mistake here is internal.bug, never a digest.
 */
#include "digest.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blake3.h"

/* One read: big enough that BLAKE3 hashes many 1 KiB chunks per call with SIMD. */
#define READ_BUF_SIZE BD_DIGEST_BLOCK
#define CASE_HEADER   "benchdesk-case-v2\n"
#define TC_HEADER     "benchdesk-task-class-v2\n"
/* Escaped path shown in an error message; longer ones end in "...". */
#define SHOW_MAX 400

/* ---- small helpers ---------------------------------------------------------------- */

void bd_hex(char *out, const uint8_t *bytes, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0x0f];
    }
    out[2 * len] = '\0';
}

static void format_digest(char out[BD_DIGEST_BUF], const uint8_t raw[BLAKE3_OUT_LEN])
{
    memcpy(out, BD_DIGEST_PREFIX, sizeof(BD_DIGEST_PREFIX) - 1);
    bd_hex(out + sizeof(BD_DIGEST_PREFIX) - 1, raw, BLAKE3_OUT_LEN);
}

void bd_blake3_raw(uint8_t out[32], const void *data, size_t len)
{
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, data, len);
    blake3_hasher_finalize(&h, out, BLAKE3_OUT_LEN);
}

void bd_digest_bytes(char out[BD_DIGEST_BUF], const void *data, size_t len)
{
    uint8_t raw[BLAKE3_OUT_LEN];
    bd_blake3_raw(raw, data, len);
    format_digest(out, raw);
}

int bd_digest_str_valid(const char *s)
{
    size_t plen = sizeof(BD_DIGEST_PREFIX) - 1;
    if (!s || strncmp(s, BD_DIGEST_PREFIX, plen) != 0)
        return 0;
    s += plen;
    for (size_t i = 0; i < BD_DIGEST_HEX_LEN; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return s[BD_DIGEST_HEX_LEN] == '\0';
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned min;
    unsigned cp;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0) {
        len = 2, min = 0x80, cp = s[0] & 0x1F;
    } else if ((s[0] & 0xF0) == 0xE0) {
        len = 3, min = 0x800, cp = s[0] & 0x0F;
    } else if ((s[0] & 0xF8) == 0xF0) {
        len = 4, min = 0x10000, cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* Append `s` to out[*len] (capacity cap) with control bytes, backslashes and invalid
 * UTF-8 escaped as \xNN, so a hostile file name can't break a one-line message. Stops
 * at the capacity and marks the cut with "...". */
static int show_append(char *out, size_t cap, size_t *len, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    size_t i = 0;
    if (*len + 4 > cap)
        return -1;
    while (i < n) {
        size_t seq = utf8_seq(p + i, n - i);
        char tmp[8];
        size_t tl;
        if (seq == 1 && (p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\')) {
            snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
            tl = 4;
            seq = 1;
        } else if (seq == 0) {
            snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
            tl = 4;
            seq = 1;
        } else {
            memcpy(tmp, p + i, seq);
            tl = seq;
        }
        if (*len + tl + 4 > cap) {
            memcpy(out + *len, "...", 4);
            *len += 3;
            return -1;
        }
        memcpy(out + *len, tmp, tl);
        *len += tl;
        out[*len] = '\0';
        i += seq;
    }
    return 0;
}

/* "top/rel" (or just top when rel is empty), escaped, into out[SHOW_MAX]. */
static void show_path(char out[SHOW_MAX], const char *top, const char *rel)
{
    size_t len = 0;
    out[0] = '\0';
    if (show_append(out, SHOW_MAX, &len, top) != 0 || !rel || !rel[0])
        return;
    if (len + 8 > SHOW_MAX)
        return;
    if (len == 0 || out[len - 1] != '/') {
        out[len++] = '/';
        out[len] = '\0';
    }
    (void)show_append(out, SHOW_MAX, &len, rel);
}

static const char *kind_name(mode_t mode)
{
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISDIR(mode))
        return "a directory";
    return "a special file";
}

/* ---- reading one open file into a hasher ------------------------------------------ */

/* Bytes are gathered in `buf` (headers and file contents read straight into it) and
 * handed to BLAKE3 a full buffer at a time: many small files then hash as one long run,
 * with the same SIMD width as one big file. */
typedef struct {
    blake3_hasher hasher;
    uint8_t *buf;
    size_t buf_size;
    size_t fill;    /* bytes of buf not yet hashed */
    uint64_t total; /* file-content bytes read so far */
    bd_digest_progress_cb cb;
    void *payload;
    int copy_fd; /* every byte read is also written here (the case copy), or -1 */
} hash_state;

/* A read smaller than this waits for an emptied buffer rather than fill the tail. */
#define MIN_READ (64u * 1024u)

static void hs_flush(hash_state *st)
{
    if (st->fill) {
        blake3_hasher_update(&st->hasher, st->buf, st->fill);
        st->fill = 0;
    }
}

/* Append `len` bytes (len <= buf_size) to the pending bytes. */
static void hs_add(hash_state *st, const void *data, size_t len)
{
    if (st->buf_size - st->fill < len)
        hs_flush(st);
    memcpy(st->buf + st->fill, data, len);
    st->fill += len;
}

typedef enum {
    READ_OK,
    READ_ERRNO,
    READ_GREW,
    READ_SHRANK,
    READ_CANCELLED,
    READ_COPY_ERRNO
} read_status;

/* Write all of buf to fd. Returns 0 or an errno. */
static int write_full(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Hash exactly `size` bytes of `fd` and require end of file there: a file that grows or
 * shrinks while being read is reported, never hashed as is. Each read asks for one byte
 * more than what is left, so a short read at `size` is the end of file without a second
 * read() (one syscall saved per small file); a short read before `size` reads on. */
static read_status hash_fd(hash_state *st, int fd, uint64_t size, const char *relpath, int *errnum)
{
    uint64_t got = 0;
    for (;;) {
        uint64_t left = size - got;
        size_t space = st->buf_size - st->fill;
        if (space < MIN_READ && left >= space) {
            hs_flush(st);
            space = st->buf_size;
        }
        size_t want = left < space ? (size_t)left + 1 : space;
        ssize_t n = read(fd, st->buf + st->fill, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            *errnum = errno;
            return READ_ERRNO;
        }
        if (n == 0)
            break;
        if ((uint64_t)n > left)
            return READ_GREW;
        /* The copy gets exactly the bytes hashed, from the same read. */
        if (st->copy_fd >= 0) {
            int we = write_full(st->copy_fd, st->buf + st->fill, (size_t)n);
            if (we != 0) {
                *errnum = we;
                return READ_COPY_ERRNO;
            }
        }
        st->fill += (size_t)n;
        if (st->fill == st->buf_size)
            hs_flush(st);
        got += (uint64_t)n;
        st->total += (uint64_t)n;
        if (st->cb) {
            bd_digest_progress p = {relpath, got, size, st->total};
            if (st->cb(&p, st->payload) != 0)
                return READ_CANCELLED;
        }
        if (got == size && (size_t)n < want)
            break;
    }
    return got == size ? READ_OK : READ_SHRANK;
}

/* Turn a non-OK read_status into an error for `shown` (an escaped path). */
static int read_error(bd_err *err, read_status rs, int errnum, const char *shown)
{
    switch (rs) {
    case READ_ERRNO:
        return bd_err_errno(err, BD_E_IO, errnum, shown, "cannot read the file");
    case READ_GREW:
        return bd_err_set(err, BD_E_IO, shown, 0, 0,
                          "file grew while it was being hashed; digest again when nothing "
                          "is writing to it");
    case READ_SHRANK:
        return bd_err_set(err, BD_E_IO, shown, 0, 0,
                          "file shrank while it was being hashed; digest again when nothing "
                          "is writing to it");
    case READ_CANCELLED:
        return bd_err_set(err, BD_E_RUN_CANCELLED, shown, 0, 0, "digest cancelled");
    case READ_COPY_ERRNO:
        return bd_err_errno(err, BD_E_IO, errnum, shown,
                            "cannot write the case copy (is the temp dir's file system full?)");
    case READ_OK:
        break;
    }
    return bd_err_set(err, BD_E_INTERNAL, shown, 0, 0, "unexpected read status %d", (int)rs);
}

/* ---- the case walk ---------------------------------------------------------------- */

typedef struct {
    hash_state hs;
    const char *top; /* the case dir as given, for messages */
    char *rel;       /* current relative path, BD_DIGEST_MAX_RELPATH + 1 bytes */
    size_t rel_len;
    char *prev; /* previous file's relative path, to check the global order */
    int have_prev;
    bd_err *err;
    int copy_top;                 /* bd_digest_case_copy: the destination dir, or -1 */
    const char *const *copy_tops; /* the top-level directories copied there */
} walk;

typedef struct {
    const char *name;
    size_t off; /* into the name arena; `name` is set once the arena stops moving */
    size_t len;
    int is_dir;
    dev_t dev;
    ino_t ino;
} dent;

/* Sibling order = order of full relative paths: a directory sorts as "name/". */
static int dent_cmp(const void *pa, const void *pb)
{
    const dent *a = pa;
    const dent *b = pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, n);
    if (c != 0)
        return c;
    size_t la = a->len + (a->is_dir ? 1 : 0);
    size_t lb = b->len + (b->is_dir ? 1 : 0);
    for (size_t i = n; i < la && i < lb; i++) {
        unsigned char ca = i < a->len ? (unsigned char)a->name[i] : '/';
        unsigned char cb = i < b->len ? (unsigned char)b->name[i] : '/';
        if (ca != cb)
            return ca < cb ? -1 : 1;
    }
    return (la > lb) - (la < lb);
}

static int unsupported(walk *w, const char *rel, mode_t mode)
{
    char shown[SHOW_MAX];
    char rel_shown[SHOW_MAX];
    size_t len = 0;
    show_path(shown, w->top, rel);
    rel_shown[0] = '\0';
    (void)show_append(rel_shown, sizeof(rel_shown), &len, rel);
    return bd_err_set(w->err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                      "case entry '%s' is %s; a case may contain only regular files and "
                      "directories (links are never followed): replace it with a regular file",
                      rel_shown, kind_name(mode));
}

/* Append "/name" (or "name" at top level) to w->rel; refuse paths over the limit. */
static int rel_push(walk *w, const char *name, size_t len, size_t *saved)
{
    size_t need = w->rel_len + (w->rel_len ? 1 : 0) + len;
    *saved = w->rel_len;
    if (need > BD_DIGEST_MAX_RELPATH) {
        char shown[SHOW_MAX];
        show_path(shown, w->top, w->rel);
        return bd_err_set(w->err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                          "an entry in this directory has a relative path longer than %d "
                          "bytes, the limit for a case: shorten the names or the nesting",
                          BD_DIGEST_MAX_RELPATH);
    }
    if (w->rel_len)
        w->rel[w->rel_len++] = '/';
    memcpy(w->rel + w->rel_len, name, len);
    w->rel_len += len;
    w->rel[w->rel_len] = '\0';
    return 0;
}

static void rel_pop(walk *w, size_t saved)
{
    w->rel_len = saved;
    w->rel[saved] = '\0';
}

/* Hash the regular file `e` of directory `dfd`; w->rel is its relative path. With
 * `dst` >= 0 its bytes are also copied to a new file of the same name in `dst`. */
static int hash_file(walk *w, int dfd, const dent *e, int dst)
{
    char shown[SHOW_MAX];
    int rc = -1;
    int fd = -1;
    int cfd = -1;
    struct stat st;

    if (w->have_prev && strcmp(w->prev, w->rel) >= 0) {
        show_path(shown, w->top, w->rel);
        bd_err_set(w->err, BD_E_INTERNAL, shown, 0, 0,
                   "case walk out of bytewise order; please report this bug");
        goto out;
    }
    memcpy(w->prev, w->rel, w->rel_len + 1);
    w->have_prev = 1;

    fd = openat(dfd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP) {
            unsupported(w, w->rel, S_IFLNK);
            goto out;
        }
        show_path(shown, w->top, w->rel);
        bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot open the file");
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        show_path(shown, w->top, w->rel);
        bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot stat the open file");
        goto out;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        unsupported(w, w->rel, st.st_mode);
        goto out;
    }
    if (!S_ISREG(st.st_mode) || st.st_dev != e->dev || st.st_ino != e->ino) {
        show_path(shown, w->top, w->rel);
        bd_err_set(w->err, BD_E_IO, shown, 0, 0,
                   "file was replaced while the case was being hashed; digest again when "
                   "nothing is writing to the case");
        goto out;
    }
    /* A hint only, for big files on a cold cache (a syscall is not worth it for small
     * ones); its failure changes nothing. */
    if ((uint64_t)st.st_size > 4 * (uint64_t)w->hs.buf_size)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

    /* T "\0" relpath "\0" size "\0" */
    {
        char size_str[24];
        int sl = snprintf(size_str, sizeof(size_str), "%" PRIu64, (uint64_t)st.st_size);
        if (sl < 0 || (size_t)sl >= sizeof(size_str)) {
            show_path(shown, w->top, w->rel);
            bd_err_set(w->err, BD_E_INTERNAL, shown, 0, 0, "cannot format the file size");
            goto out;
        }
        const char type = (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) ? 'x' : 'f';
        hs_add(&w->hs, &type, 1);
        hs_add(&w->hs, "", 1);
        hs_add(&w->hs, w->rel, w->rel_len + 1);   /* with its NUL */
        hs_add(&w->hs, size_str, (size_t)sl + 1); /* with its NUL */
    }

    if (dst >= 0) {
        cfd = openat(dst, e->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (cfd < 0) {
            show_path(shown, w->top, w->rel);
            bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot create the case copy");
            goto out;
        }
    }
    w->hs.copy_fd = cfd;
    int errnum = 0;
    read_status rs = hash_fd(&w->hs, fd, (uint64_t)st.st_size, w->rel, &errnum);
    w->hs.copy_fd = -1;
    if (rs != READ_OK) {
        show_path(shown, w->top, w->rel);
        read_error(w->err, rs, errnum, shown);
        goto out;
    }
    if (cfd >= 0 && fchmod(cfd, (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) ? 0555 : 0444) != 0) {
        show_path(shown, w->top, w->rel);
        bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot make the case copy read-only");
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (cfd >= 0)
        close(cfd);
    return rc;
}

/* The copy destination of subdirectory `name` of a directory whose destination is `dst`
 * (-1: not copied) at `depth`: a new 0700 directory, open, or -1 when the subtree is not
 * copied. Returns 0, or -1 with w->err set. */
static int copy_subdir(walk *w, int dst, int depth, const char *name, int *out)
{
    *out = -1;
    int parent = dst;
    if (depth == 0) {
        bool wanted = false;
        for (size_t i = 0; w->copy_tops && w->copy_tops[i] && !wanted; i++)
            wanted = strcmp(w->copy_tops[i], name) == 0;
        parent = wanted ? w->copy_top : -1;
    }
    if (parent < 0)
        return 0;
    char shown[SHOW_MAX];
    if (mkdirat(parent, name, 0700) != 0 ||
        (*out = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        show_path(shown, w->top, w->rel);
        return bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot create the case copy");
    }
    return 0;
}

/* Walk the directory open on `dfd` (ownership taken: closed before returning), at
 * `depth` directories below the case dir; w->rel is its relative path. `dst` is where
 * its files are copied (not owned), or -1. */
static int walk_dir(walk *w, int dfd, int depth, int dst)
{
    char shown[SHOW_MAX];
    int rc = -1;
    DIR *d = NULL;
    dent *ents = NULL;
    size_t n_ents = 0, cap_ents = 0;
    char *names = NULL;
    size_t names_len = 0, names_cap = 0;

    d = fdopendir(dfd);
    if (!d) {
        show_path(shown, w->top, w->rel);
        bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot read the directory");
        close(dfd);
        goto out;
    }
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno != 0) {
                show_path(shown, w->top, w->rel);
                bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot read the directory");
                goto out;
            }
            break;
        }
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        size_t len = strlen(name);
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            int e = errno;
            size_t saved;
            if (rel_push(w, name, len, &saved) != 0)
                goto out;
            show_path(shown, w->top, w->rel);
            bd_err_errno(w->err, BD_E_IO, e, shown,
                         "cannot stat the entry (did the case change while being hashed?)");
            goto out;
        }
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
            size_t saved;
            if (rel_push(w, name, len, &saved) != 0)
                goto out;
            unsupported(w, w->rel, st.st_mode);
            goto out;
        }
        /* §2: only the top-level provenance.yaml file is outside the digest. */
        if (depth == 0 && S_ISREG(st.st_mode) && strcmp(name, BD_PROVENANCE_FILE) == 0)
            continue;
        if (n_ents == cap_ents) {
            size_t nc = cap_ents ? cap_ents * 2 : 32;
            dent *ne = realloc(ents, nc * sizeof(*ne));
            if (!ne)
                goto nomem;
            ents = ne;
            cap_ents = nc;
        }
        if (names_cap - names_len < len + 1) {
            size_t nc = names_cap ? names_cap : 1024;
            while (nc - names_len < len + 1)
                nc *= 2;
            char *nn = realloc(names, nc);
            if (!nn)
                goto nomem;
            names = nn;
            names_cap = nc;
        }
        memcpy(names + names_len, name, len + 1);
        ents[n_ents].name = NULL;
        ents[n_ents].off = names_len;
        ents[n_ents].len = len;
        ents[n_ents].is_dir = S_ISDIR(st.st_mode);
        ents[n_ents].dev = st.st_dev;
        ents[n_ents].ino = st.st_ino;
        n_ents++;
        names_len += len + 1;
    }
    for (size_t i = 0; i < n_ents; i++)
        ents[i].name = names + ents[i].off;
    if (n_ents > 1)
        qsort(ents, n_ents, sizeof(*ents), dent_cmp);

    for (size_t i = 0; i < n_ents; i++) {
        const dent *e = &ents[i];
        size_t saved;
        if (rel_push(w, e->name, e->len, &saved) != 0)
            goto out;
        if (!e->is_dir) {
            if (hash_file(w, dirfd(d), e, dst) != 0)
                goto out;
            rel_pop(w, saved);
            continue;
        }
        if (depth + 1 > BD_DIGEST_MAX_DEPTH) {
            show_path(shown, w->top, w->rel);
            bd_err_set(w->err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                       "directory nested more than %d levels below the case dir, the limit "
                       "for a case: flatten the tree",
                       BD_DIGEST_MAX_DEPTH);
            goto out;
        }
        int sub = openat(dirfd(d), e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            int oe = errno;
            struct stat now;
            /* With O_DIRECTORY a symlink swapped in gives ENOTDIR, not ELOOP. */
            if (oe == ELOOP || oe == ENOTDIR) {
                if (oe == ELOOP || (fstatat(dirfd(d), e->name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                                    !S_ISDIR(now.st_mode) && !S_ISREG(now.st_mode))) {
                    unsupported(w, w->rel, oe == ELOOP ? S_IFLNK : now.st_mode);
                    goto out;
                }
                show_path(shown, w->top, w->rel);
                bd_err_set(w->err, BD_E_IO, shown, 0, 0,
                           "directory was replaced while the case was being hashed; digest "
                           "again when nothing is writing to the case");
                goto out;
            }
            show_path(shown, w->top, w->rel);
            bd_err_errno(w->err, BD_E_IO, oe, shown, "cannot open the directory");
            goto out;
        }
        struct stat st;
        if (fstat(sub, &st) != 0 || st.st_dev != e->dev || st.st_ino != e->ino) {
            close(sub);
            show_path(shown, w->top, w->rel);
            bd_err_set(w->err, BD_E_IO, shown, 0, 0,
                       "directory was replaced while the case was being hashed; digest "
                       "again when nothing is writing to the case");
            goto out;
        }
        int sub_dst = -1;
        if (copy_subdir(w, dst, depth, e->name, &sub_dst) != 0) {
            close(sub);
            goto out;
        }
        int wr = walk_dir(w, sub, depth + 1, sub_dst);
        if (wr == 0 && sub_dst >= 0 && fchmod(sub_dst, 0555) != 0) {
            show_path(shown, w->top, w->rel);
            wr = bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot make the case copy read-only");
        }
        if (sub_dst >= 0)
            close(sub_dst);
        if (wr != 0)
            goto out;
        rel_pop(w, saved);
    }
    rc = 0;
    goto out;
nomem:
    show_path(shown, w->top, w->rel);
    bd_err_set(w->err, BD_E_NOMEM, shown, 0, 0, "out of memory listing the directory");
out:
    if (d)
        closedir(d);
    free(ents);
    free(names);
    return rc;
}

static int case_walk(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                     bd_digest_progress_cb cb, void *payload, int copy_top,
                     const char *const *copy_tops, bd_err *err)
{
    char shown[SHOW_MAX];
    int rc = -1;
    char *path = NULL;
    walk w;
    memset(&w, 0, sizeof(w));
    w.err = err;
    w.top = dir ? dir : "";
    w.hs.copy_fd = -1;
    w.copy_top = copy_top;
    w.copy_tops = copy_tops;

    if (!dir || !dir[0]) {
        bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "no case directory given");
        goto out;
    }
    /* "link/" would make the kernel follow a symlinked case dir despite O_NOFOLLOW. */
    path = strdup(dir);
    if (!path) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    for (size_t l = strlen(path); l > 1 && path[l - 1] == '/'; l--)
        path[l - 1] = '\0';
    w.top = path;

    w.hs.buf_size = READ_BUF_SIZE;
    w.hs.buf = malloc(w.hs.buf_size);
    w.rel = malloc(BD_DIGEST_MAX_RELPATH + 1);
    w.prev = malloc(BD_DIGEST_MAX_RELPATH + 1);
    if (!w.hs.buf || !w.rel || !w.prev) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory for the digest buffers");
        goto out;
    }
    w.rel[0] = '\0';
    w.hs.cb = cb;
    w.hs.payload = payload;

    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        show_path(shown, path, NULL);
        if (e == ELOOP || (e == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)))
            bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                       "the case directory is a symbolic link; links are never followed: "
                       "give the real directory");
        else if (e == ENOTDIR)
            bd_err_set(err, BD_E_IO, shown, 0, 0, "not a directory; give a case directory");
        else
            bd_err_errno(err, BD_E_IO, e, shown, "cannot open the case directory");
        goto out;
    }

    blake3_hasher_init(&w.hs.hasher);
    blake3_hasher_update(&w.hs.hasher, CASE_HEADER, sizeof(CASE_HEADER) - 1);
    if (walk_dir(&w, fd, 0, -1) != 0)
        goto out;
    hs_flush(&w.hs);

    uint8_t raw[BLAKE3_OUT_LEN];
    blake3_hasher_finalize(&w.hs.hasher, raw, BLAKE3_OUT_LEN);
    format_digest(out, raw);
    if (bytes_hashed)
        *bytes_hashed = w.hs.total;
    rc = 0;
out:
    free(w.hs.buf);
    free(w.rel);
    free(w.prev);
    free(path);
    return rc;
}

int bd_digest_case_dir_progress(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                                bd_digest_progress_cb cb, void *payload, bd_err *err)
{
    return case_walk(out, dir, bytes_hashed, cb, payload, -1, NULL, err);
}

int bd_digest_case_copy(char out[BD_DIGEST_BUF], const char *dir, int dst_dirfd,
                        const char *const *tops, bd_err *err)
{
    if (dst_dirfd < 0)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "no destination for the case copy");
    return case_walk(out, dir, NULL, NULL, NULL, dst_dirfd, tops, err);
}

int bd_digest_case_dir(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                       bd_err *err)
{
    return bd_digest_case_dir_progress(out, dir, bytes_hashed, NULL, NULL, err);
}

int bd_digest_file(char out[BD_DIGEST_BUF], const char *path, bd_err *err)
{
    char shown[SHOW_MAX];
    int rc = -1;
    int fd = -1;
    struct stat lst, st;
    hash_state hs;
    memset(&hs, 0, sizeof(hs));
    hs.copy_fd = -1;

    if (!path || !path[0]) {
        bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "no file given");
        goto out;
    }
    show_path(shown, path, NULL);
    /* lstat first: a device or FIFO is refused without being opened (opening one can
     * block or have side effects). */
    if (lstat(path, &lst) != 0) {
        bd_err_errno(err, BD_E_IO, errno, shown, "cannot stat the file");
        goto out;
    }
    if (!S_ISREG(lst.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                   "is %s, not a regular file; links are never followed: give a regular file",
                   kind_name(lst.st_mode));
        goto out;
    }
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                       "became a symbolic link while being opened; links are never followed");
        else
            bd_err_errno(err, BD_E_IO, errno, shown, "cannot open the file");
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        bd_err_errno(err, BD_E_IO, errno, shown, "cannot stat the open file");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                   "is %s, not a regular file; give a regular file", kind_name(st.st_mode));
        goto out;
    }
    if (st.st_dev != lst.st_dev || st.st_ino != lst.st_ino) {
        bd_err_set(err, BD_E_IO, shown, 0, 0,
                   "file was replaced while being opened; digest again when nothing is "
                   "writing to it");
        goto out;
    }
    /* Small files get a small buffer; +1 so the end of file shows in the same read. */
    hs.buf_size = READ_BUF_SIZE;
    if ((uint64_t)st.st_size + 1 < hs.buf_size)
        hs.buf_size = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1;
    hs.buf = malloc(hs.buf_size);
    if (!hs.buf) {
        bd_err_set(err, BD_E_NOMEM, shown, 0, 0, "out of memory for the read buffer");
        goto out;
    }
    if ((uint64_t)st.st_size > 4 * (uint64_t)hs.buf_size)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    blake3_hasher_init(&hs.hasher);
    int errnum = 0;
    read_status rs = hash_fd(&hs, fd, (uint64_t)st.st_size, path, &errnum);
    if (rs != READ_OK) {
        read_error(err, rs, errnum, shown);
        goto out;
    }
    hs_flush(&hs);
    uint8_t raw[BLAKE3_OUT_LEN];
    blake3_hasher_finalize(&hs.hasher, raw, BLAKE3_OUT_LEN);
    format_digest(out, raw);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(hs.buf);
    return rc;
}

/* ---- the task-class digest ---------------------------------------------------------- */

void bd_tc_files_release(bd_tc_files *f)
{
    if (!f)
        return;
    free(f->registration);
    free(f->rubric);
    memset(f, 0, sizeof(*f));
}

/* Read the regular file `name` of the directory open on `dfd` whole (O_NOFOLLOW, at most
 * `max` bytes), with whether any execute bit is set. */
static int read_member(int dfd, const char *dir, const char *name, size_t max, char **out,
                       size_t *len, bool *exec, bd_err *err)
{
    char shown[SHOW_MAX];
    char full[SHOW_MAX];
    snprintf(full, sizeof(full), "%s/%s", dir, name);
    show_path(shown, full, NULL);
    int rc = -1;
    char *buf = NULL;
    struct stat lst, st;
    int fd = -1;
    if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            bd_err_set(err, strcmp(name, "rubric.py") == 0 ? BD_E_RUBRIC_MISSING : BD_E_IO, shown,
                       0, 0, "%s is missing; a task class holds registration.yaml and rubric.py",
                       name);
        else
            bd_err_errno(err, BD_E_IO, errno, shown, "cannot stat the file");
        goto out;
    }
    if (!S_ISREG(lst.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                   "is %s, not a regular file; links are never followed: give a regular file",
                   kind_name(lst.st_mode));
        goto out;
    }
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) != 0) {
        bd_err_errno(err, BD_E_IO, errno, shown, "cannot open the file");
        goto out;
    }
    if (!S_ISREG(st.st_mode) || st.st_dev != lst.st_dev || st.st_ino != lst.st_ino) {
        bd_err_set(err, BD_E_IO, shown, 0, 0,
                   "file was replaced while being opened; digest again when nothing is "
                   "writing to it");
        goto out;
    }
    if ((uint64_t)st.st_size > max) {
        bd_err_set(err, BD_E_IO, shown, 0, 0, "is larger than %zu bytes, the limit for %s", max,
                   name);
        goto out;
    }
    size_t size = (size_t)st.st_size;
    buf = malloc(size + 1);
    if (!buf) {
        bd_err_set(err, BD_E_NOMEM, shown, 0, 0, "out of memory reading the file");
        goto out;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, size + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            bd_err_errno(err, BD_E_IO, errno, shown, "cannot read the file");
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
        if (got > size)
            break;
    }
    if (got != size) {
        bd_err_set(err, BD_E_IO, shown, 0, 0,
                   "file changed size while being read; digest again when nothing is writing "
                   "to it");
        goto out;
    }
    buf[size] = '\0';
    *out = buf;
    buf = NULL;
    *len = size;
    *exec = (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

int bd_tc_files_read(bd_tc_files *out, const char *tc_dir, bd_err *err)
{
    char shown[SHOW_MAX];
    memset(out, 0, sizeof(*out));
    int dfd = open(tc_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (dfd < 0) {
        show_path(shown, tc_dir, NULL);
        return bd_err_errno(err, errno == ELOOP ? BD_E_UNSUPPORTED_ENTRY : BD_E_IO, errno, shown,
                            "cannot open the task-class directory (links are never followed)");
    }
    int rc = -1;
    if (read_member(dfd, tc_dir, "registration.yaml", BD_TC_REGISTRATION_MAX, &out->registration,
                    &out->registration_len, &out->registration_exec, err) != 0 ||
        read_member(dfd, tc_dir, "rubric.py", BD_TC_RUBRIC_MAX, &out->rubric, &out->rubric_len,
                    &out->rubric_exec, err) != 0)
        goto out;
    rc = 0;
out:
    close(dfd);
    if (rc != 0)
        bd_tc_files_release(out);
    return rc;
}

_Static_assert(sizeof(blake3_hasher) <= sizeof(((bd_digest_stream *)0)->state),
               "bd_digest_stream too small for a BLAKE3 hasher");

void bd_digest_stream_begin(bd_digest_stream *ds, bd_digest_kind kind)
{
    blake3_hasher *h = (blake3_hasher *)ds->state;
    blake3_hasher_init(h);
    if (kind == BD_DIGEST_TASK_CLASS)
        blake3_hasher_update(h, TC_HEADER, sizeof(TC_HEADER) - 1);
    else
        blake3_hasher_update(h, CASE_HEADER, sizeof(CASE_HEADER) - 1);
}

void bd_digest_stream_entry(bd_digest_stream *ds, const char *rel, bool exec, const void *data,
                            size_t len)
{
    blake3_hasher *h = (blake3_hasher *)ds->state;
    char size_str[24];
    int sl = snprintf(size_str, sizeof(size_str), "%zu", len);
    const char type = exec ? 'x' : 'f';
    blake3_hasher_update(h, &type, 1);
    blake3_hasher_update(h, "", 1);
    blake3_hasher_update(h, rel, strlen(rel) + 1);
    blake3_hasher_update(h, size_str, (size_t)sl + 1);
    blake3_hasher_update(h, data, len);
}

void bd_digest_stream_end(bd_digest_stream *ds, char out[BD_DIGEST_BUF])
{
    uint8_t raw[BLAKE3_OUT_LEN];
    blake3_hasher_finalize((blake3_hasher *)ds->state, raw, BLAKE3_OUT_LEN);
    format_digest(out, raw);
}

void bd_digest_task_class_files(char out[BD_DIGEST_BUF], const bd_tc_files *f)
{
    bd_digest_stream ds;
    bd_digest_stream_begin(&ds, BD_DIGEST_TASK_CLASS);
    /* Sorted bytewise: "registration.yaml" < "rubric.py". */
    bd_digest_stream_entry(&ds, "registration.yaml", f->registration_exec, f->registration,
                           f->registration_len);
    bd_digest_stream_entry(&ds, "rubric.py", f->rubric_exec, f->rubric, f->rubric_len);
    bd_digest_stream_end(&ds, out);
}

int bd_digest_task_class_dir(char out[BD_DIGEST_BUF], const char *tc_dir, bd_err *err)
{
    bd_tc_files f;
    if (bd_tc_files_read(&f, tc_dir, err) != 0)
        return -1;
    bd_digest_task_class_files(out, &f);
    bd_tc_files_release(&f);
    return 0;
}
