/*
 * digest.c — BLAKE3 digests of case directories and files (docs/formats.md#digests).
 *
 * The walk holds one directory descriptor per level and opens every child relative to
 * its parent's descriptor with O_NOFOLLOW, so no path is ever re-resolved by name and a
 * symlink swapped in mid-walk is refused, not followed. Every entry is lstat'ed
 * (fstatat AT_SYMLINK_NOFOLLOW) before it is opened — a device or FIFO is never opened —
 * and the opened descriptor is fstat'ed again: it must be the same inode, of the same
 * type, or the digest fails.
 *
 * Order. docs/formats.md#digests sorts all relative paths bytewise. Within a directory every path
 * below a subdirectory "d" starts with "d/", so the global order is a depth-first walk that sorts
 * siblings by their name, with '/' appended to directory names ("a.b" < "a/" < "a0",
 * since '.' 0x2E < '/' 0x2F < '0' 0x30). That gives the same bytes as collecting and
 * sorting every path, while keeping only `depth` descriptors open; the digest loop
 * (bd_case_source_digest) checks the global order with strcmp anyway, so a mistake here is
 * internal.bug, never a digest.
 *
 * The walk is the directory case source (case_source.h): dir_next yields the files in
 * that order, and the one digest loop, shared with the git index and git trees, applies
 * the membership rule and hashes them.
 */
#include "digest.h"
#include "case_source.h"
#include "case_stamp.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blake3.h"
#include "fsutil.h"

/* One read: big enough that BLAKE3 hashes many 1 KiB chunks per call with SIMD (16 at a
 * time with AVX-512). 64 KiB hashes a 400 MB file within 3 % of 1 MiB reads, and stays
 * below malloc's mmap threshold: each verify worker's scanner reuses heap memory instead
 * of mapping (and, under AddressSanitizer, poisoning) a fresh MiB, which cost a `list` of
 * the demo bench a quarter of its time in the test build. */
#define READ_BUF_SIZE (64u * 1024u)
#define CASE_HEADER   "benchdesk-case-v2\n"
#define TC_HEADER     "benchdesk-task-class-v2\n"
/* Escaped path shown in an error message; longer ones end in "...". */
#define SHOW_MAX 400

/* ---- small helpers ---------------------------------------------------------------- */

static void format_digest(char out[BD_DIGEST_BUF], const uint8_t raw[BLAKE3_OUT_LEN])
{
    memcpy(out, BD_DIGEST_PREFIX, sizeof(BD_DIGEST_PREFIX) - 1);
    bd_hex(out + sizeof(BD_DIGEST_PREFIX) - 1, raw, BLAKE3_OUT_LEN);
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
typedef struct bd_digest_sink {
    blake3_hasher hasher;
    uint8_t *buf;
    size_t buf_size;
    size_t fill;    /* bytes of buf not yet hashed */
    uint64_t total; /* file-content bytes read so far */
    bd_digest_progress_cb cb;
    void *payload;
    int copy_fd;        /* every byte read is also written here (the case copy), or -1 */
    blake3_hasher *tee; /* every byte of the file being read also goes here, or NULL */
    char *keep;         /* ...and is kept here (room for the file's size), or NULL */
    size_t kept;
} hash_state;

/* A read smaller than this waits for an emptied buffer rather than fill the tail (a
 * quarter of the buffer: the rest of a buffer that held headers is still one big read). */
#define MIN_READ (16u * 1024u)

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
        /* One read serves the digest, the cassette's own digest and the parser: the
         * bytes parsed and compared are the bytes hashed. */
        if (st->tee)
            blake3_hasher_update(st->tee, st->buf + st->fill, (size_t)n);
        if (st->keep) {
            memcpy(st->keep + st->kept, st->buf + st->fill, (size_t)n);
            st->kept += (size_t)n;
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

/* A directory is read with getdents64 straight into one buffer per walk: no DIR stream
 * (fdopendir's fstat and fcntl) and no lstat per entry, since the record says the type. */
#define DENTS_BUF (32u * 1024u)

typedef struct {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
} dirent64_rec;

/* The S_IF* type of a getdents64 d_type, or 0 when it is DT_UNKNOWN (stat it). */
static mode_t dtype_mode(unsigned char t)
{
    switch (t) {
    case DT_REG:
        return S_IFREG;
    case DT_DIR:
        return S_IFDIR;
    case DT_LNK:
        return S_IFLNK;
    case DT_FIFO:
        return S_IFIFO;
    case DT_SOCK:
        return S_IFSOCK;
    case DT_CHR:
        return S_IFCHR;
    case DT_BLK:
        return S_IFBLK;
    default:
        return 0;
    }
}

typedef struct {
    const char *name;
    size_t off; /* into the name arena; `name` is set once the arena stops moving */
    size_t len;
    int is_dir;
    int from_dirent; /* type and inode from getdents64 (no lstat): dev unknown */
    dev_t dev;
    ino_t ino;
} dent;

/* The listing buffers of one directory depth. A scanner keeps them from case to case, so
 * a case costs no allocation per directory. */
typedef struct dir_lists {
    dent *ents;
    size_t cap_ents, n_ents;
    char *names;
    size_t names_cap, names_len;
} dir_lists;

/* One open directory of the walk: its listing (sorted) and how far the walk got. */
typedef struct {
    int dfd;        /* owned */
    int dst;        /* owned: where its files are copied, or -1 */
    size_t rel_len; /* length of its relative path in w->rel */
    size_t next;    /* index of the next entry of lists[depth] */
} frame;

/* The directory case source: a depth-first walk, one directory descriptor per level. */
typedef struct {
    bd_case_source src; /* first: a walk is a case source */
    hash_state hs;
    const char *top; /* the case dir as given, for messages */
    char *rel;       /* current relative path, BD_DIGEST_MAX_RELPATH + 1 bytes */
    size_t rel_len;
    char *prev; /* previous file's relative path, to check the global order */
    bd_err *err;
    int copy_top;                 /* bd_digest_case_copy: the destination dir, or -1 */
    const char *const *copy_tops; /* the top-level directories copied there */
    uint8_t *dents;               /* getdents64 buffer, DENTS_BUF bytes */
    bd_scanned_case *scan;        /* bd_scanned_case: top-level files whose bytes are kept */
    bool scan_files_only;         /* bd_digest_case_copy: `scan` keeps case.yaml's bytes and the
                                     cassette's digest; no provenance.yaml, no leftover check */
    dir_lists *lists;             /* per depth (BD_DIGEST_MAX_DEPTH + 1) */
    int depth;                    /* of the innermost open directory, -1 when none */
    frame frames[BD_DIGEST_MAX_DEPTH + 1];
    int cur_fd;      /* the file yielded last, open, or -1 */
    const dent *cur; /* its listing entry */
    int cur_dst;     /* its directory's copy destination, or -1 */
    mode_t cur_mode; /* its mode */
} walk;

static void dir_lists_free(dir_lists *l)
{
    for (size_t d = 0; l && d <= BD_DIGEST_MAX_DEPTH; d++) {
        free(l[d].ents);
        free(l[d].names);
    }
    free(l);
}

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

/* Whether the open file `st` is the entry `e` that was listed: the same inode (and, for an
 * entry that was lstat'ed, the same device). getdents64 gives the inode number without a
 * stat, and on the file systems benches live on (ext4, xfs, btrfs, tmpfs, overlayfs) it is
 * the st_ino of the same file; a file swapped in after the listing has another. */
static bool same_entry(const dent *e, const struct stat *st)
{
    if (e->from_dirent)
        return st->st_ino == e->ino;
    return st->st_dev == e->dev && st->st_ino == e->ino;
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

/* Read the top-level provenance.yaml of the case open on `fd`, when it is a regular file
 * within the limit; anything else (a link, a special file, too big, a read error) is left
 * to the path-based loader, which says what it is (r->unusual). */
static void scan_provenance(bd_scanned_case *r, int fd)
{
    int pfd =
        openat(fd, BD_PROVENANCE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (pfd < 0) {
        if (errno != ENOENT)
            r->unusual = true;
        return;
    }
    struct stat st;
    if (fstat(pfd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > r->yaml_max ||
        !(r->prov_yaml = malloc((size_t)st.st_size + 1))) {
        r->unusual = true;
        close(pfd);
        return;
    }
    if (r->stamps)
        bd_case_stamps_add(r->stamps, BD_PROVENANCE_FILE, strlen(BD_PROVENANCE_FILE), &st);
    size_t size = (size_t)st.st_size, got = 0;
    for (;;) {
        size_t want = size + 1 - got;
        ssize_t n = read(pfd, r->prov_yaml + got, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        /* Short of the byte asked past the size: the end (as hash_fd), no read for 0. */
        if (got > size || (got == size && (size_t)n < want))
            break;
    }
    close(pfd);
    if (got != size) {
        r->unusual = true;
        free(r->prov_yaml);
        r->prov_yaml = NULL;
        return;
    }
    r->prov_yaml[size] = '\0';
    r->prov_len = size;
    r->prov_present = true;
}

/* ---- listing one directory ---------------------------------------------------------- */

/* Room for one more entry named `len` bytes in `lv`. Returns 0 or -1 (out of memory). */
static int lists_grow(dir_lists *lv, size_t len)
{
    if (lv->n_ents == lv->cap_ents) {
        size_t nc = lv->cap_ents ? lv->cap_ents * 2 : 16;
        dent *ne = realloc(lv->ents, nc * sizeof(*ne));
        if (!ne)
            return -1;
        lv->ents = ne;
        lv->cap_ents = nc;
    }
    if (lv->names_cap - lv->names_len < len + 1) {
        size_t nc = lv->names_cap ? lv->names_cap : 512;
        while (nc - lv->names_len < len + 1)
            nc *= 2;
        char *nn = realloc(lv->names, nc);
        if (!nn)
            return -1;
        lv->names = nn;
        lv->names_cap = nc;
    }
    return 0;
}

/* Judge one getdents64 record of the directory open on `dfd` at `depth` (w->rel is its
 * path) and list it in `lv` when the walk goes there. Returns 0 (listed or skipped), 1
 * for a scan's leftover temp file, 2 when out of memory, -1 with w->err set. */
static int list_entry(walk *w, dir_lists *lv, int dfd, int depth, const dirent64_rec *de)
{
    char shown[SHOW_MAX];
    const char *name = de->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
        return 0;
    size_t len = strlen(name), saved;
    /* The entry's type from the directory itself: no lstat per entry. Only a file system
     * that does not report types (DT_UNKNOWN) costs an fstatat. */
    mode_t mode = dtype_mode(de->d_type);
    int from_dirent = mode != 0;
    struct stat st;
    if (!from_dirent) {
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            int e = errno;
            if (rel_push(w, name, len, &saved) != 0)
                return -1;
            show_path(shown, w->top, w->rel);
            return bd_err_errno(w->err, BD_E_IO, e, shown,
                                "cannot stat the entry (did the case change while being hashed?)");
        }
        mode = st.st_mode;
    }
    if (!S_ISDIR(mode)) {
        bd_case_member m =
            bd_case_membership(depth == 0, name, S_ISREG(mode) ? BD_CASE_FILE : BD_CASE_OTHER);
        if (m == BD_CASE_REFUSED) {
            if (rel_push(w, name, len, &saved) != 0)
                return -1;
            return unsupported(w, w->rel, mode);
        }
        /* A scan reads provenance.yaml here, so a case without one costs no failed open. */
        if (m == BD_CASE_OUTSIDE) {
            if (w->scan && !w->scan_files_only)
                scan_provenance(w->scan, dfd);
            return 0;
        }
    } else if (depth == 0 && w->scan && !w->scan_files_only &&
               strcmp(name, BD_PROVENANCE_FILE) == 0) {
        w->scan->unusual = true; /* left to the path-based loader */
    }
    if (depth == 0 && w->scan && !w->scan_files_only && bd_tmp_is_leftover(name)) {
        /* Never hashed: the caller reports it (case.leftover_temp). */
        w->scan->leftover = true;
        return 1;
    }
    if (lists_grow(lv, len) != 0)
        return 2;
    memcpy(lv->names + lv->names_len, name, len + 1);
    dent *d = &lv->ents[lv->n_ents++];
    d->name = NULL;
    d->off = lv->names_len;
    d->len = len;
    d->is_dir = S_ISDIR(mode);
    d->from_dirent = from_dirent;
    d->dev = from_dirent ? 0 : st.st_dev;
    d->ino = from_dirent ? (ino_t)de->d_ino : st.st_ino;
    lv->names_len += len + 1;
    return 0;
}

/* List the innermost open directory into w->lists[w->depth], sorted. Returns 0, 1 for a
 * scan's leftover temp file, -1 with w->err set. */
static int list_dir(walk *w)
{
    char shown[SHOW_MAX];
    int depth = w->depth;
    int dfd = w->frames[depth].dfd;
    dir_lists *lv = &w->lists[depth];
    lv->n_ents = 0;
    lv->names_len = 0;
    for (;;) {
        long nread = getdents64(dfd, w->dents, DENTS_BUF);
        if (nread < 0 && errno == EINTR)
            continue;
        if (nread < 0) {
            show_path(shown, w->top, w->rel);
            return bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot read the directory");
        }
        if (nread == 0)
            break;
        for (long pos = 0; pos < nread;) {
            const dirent64_rec *de = (const dirent64_rec *)(w->dents + pos);
            pos += de->d_reclen;
            int r = list_entry(w, lv, dfd, depth, de);
            if (r == 2) {
                show_path(shown, w->top, w->rel);
                return bd_err_set(w->err, BD_E_NOMEM, shown, 0, 0,
                                  "out of memory listing the directory");
            }
            if (r != 0)
                return r;
        }
    }
    for (size_t i = 0; i < lv->n_ents; i++)
        lv->ents[i].name = lv->names + lv->ents[i].off;
    if (lv->n_ents > 1)
        qsort(lv->ents, lv->n_ents, sizeof(*lv->ents), dent_cmp);
    return 0;
}

/* ---- walking: the directory case source ------------------------------------------- */

/* Enter the directory open on `dfd` (w->rel is its path), copied to `dst` (-1: not
 * copied); both owned from here on. Returns list_dir's result. */
static int push_dir(walk *w, int dfd, int dst)
{
    frame *f = &w->frames[++w->depth];
    f->dfd = dfd;
    f->dst = dst;
    f->rel_len = w->rel_len;
    f->next = 0;
    bd_case_stamps *stamps = w->scan && !w->scan_files_only ? w->scan->stamps : NULL;
    if (stamps) {
        /* Stat'ed before it is listed: an entry made after the listing changes it. */
        struct stat st;
        if (fstat(dfd, &st) == 0)
            bd_case_stamps_add(stamps, w->rel, w->rel_len, &st);
        else
            bd_case_stamps_fail(stamps);
    }
    return list_dir(w);
}

/* Leave the innermost directory; when the walk got through it (`done`), its copy is made
 * read-only. Returns 0 or -1 with w->err set. */
static int pop_dir(walk *w, bool done)
{
    frame *f = &w->frames[w->depth--];
    int rc = 0;
    close(f->dfd);
    if (f->dst >= 0) {
        if (done && fchmod(f->dst, 0555) != 0) {
            char shown[SHOW_MAX];
            rel_pop(w, f->rel_len);
            show_path(shown, w->top, w->rel);
            rc = bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot make the case copy read-only");
        }
        close(f->dst);
    }
    return rc;
}

static void close_cur(walk *w)
{
    if (w->cur_fd >= 0)
        close(w->cur_fd);
    w->cur_fd = -1;
}

/* Close everything the walk holds open. */
static void walk_close(walk *w)
{
    close_cur(w);
    while (w->depth >= 0)
        (void)pop_dir(w, false);
}

static int dir_replaced(walk *w)
{
    char shown[SHOW_MAX];
    show_path(shown, w->top, w->rel);
    return bd_err_set(w->err, BD_E_IO, shown, 0, 0,
                      "directory was replaced while the case was being hashed; digest "
                      "again when nothing is writing to the case");
}

/* Open the subdirectory `e` of the innermost directory (w->rel is its path) and enter
 * it. Returns 0, or -1 with w->err set. */
static int enter_dir(walk *w, const dent *e)
{
    char shown[SHOW_MAX];
    frame *f = &w->frames[w->depth];
    if (w->depth + 1 > BD_DIGEST_MAX_DEPTH) {
        show_path(shown, w->top, w->rel);
        return bd_err_set(w->err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                          "directory nested more than %d levels below the case dir, the limit "
                          "for a case: flatten the tree",
                          BD_DIGEST_MAX_DEPTH);
    }
    int sub = openat(f->dfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
        int oe = errno;
        struct stat now;
        /* With O_DIRECTORY a symlink swapped in gives ENOTDIR, not ELOOP. */
        if (oe == ELOOP || oe == ENOTDIR) {
            if (oe == ELOOP || (fstatat(f->dfd, e->name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                                !S_ISDIR(now.st_mode) && !S_ISREG(now.st_mode)))
                return unsupported(w, w->rel, oe == ELOOP ? S_IFLNK : now.st_mode);
            return dir_replaced(w);
        }
        show_path(shown, w->top, w->rel);
        return bd_err_errno(w->err, BD_E_IO, oe, shown, "cannot open the directory");
    }
    /* O_DIRECTORY | O_NOFOLLOW already proves a real directory; an entry that was
     * lstat'ed (no type from getdents64) must also still be the same one. */
    struct stat st;
    if (!e->from_dirent && (fstat(sub, &st) != 0 || st.st_dev != e->dev || st.st_ino != e->ino)) {
        close(sub);
        return dir_replaced(w);
    }
    int sub_dst = -1;
    if (copy_subdir(w, f->dst, w->depth, e->name, &sub_dst) != 0) {
        close(sub);
        return -1;
    }
    return push_dir(w, sub, sub_dst) == 0 ? 0 : -1;
}

/* Open the regular file `d` of the innermost directory (w->rel is its path) and describe
 * it in `e`. Returns 1, or -1 with w->err set. */
static int open_file(walk *w, const dent *d, bd_case_entry *e)
{
    char shown[SHOW_MAX];
    frame *f = &w->frames[w->depth];
    struct stat st;
    int fd = openat(f->dfd, d->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            return unsupported(w, w->rel, S_IFLNK);
        show_path(shown, w->top, w->rel);
        return bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot open the file");
    }
    w->cur_fd = fd;
    if (fstat(fd, &st) != 0) {
        show_path(shown, w->top, w->rel);
        return bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot stat the open file");
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return unsupported(w, w->rel, st.st_mode);
    if (!S_ISREG(st.st_mode) || !same_entry(d, &st)) {
        show_path(shown, w->top, w->rel);
        return bd_err_set(w->err, BD_E_IO, shown, 0, 0,
                          "file was replaced while the case was being hashed; digest again when "
                          "nothing is writing to the case");
    }
    /* A hint only, for big files on a cold cache (a syscall is not worth it for small
     * ones); its failure changes nothing. */
    if ((uint64_t)st.st_size > 4 * (uint64_t)w->hs.buf_size)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (w->scan && !w->scan_files_only && w->scan->stamps)
        bd_case_stamps_add(w->scan->stamps, w->rel, w->rel_len, &st); /* before its bytes */
    w->cur = d;
    w->cur_dst = f->dst;
    w->cur_mode = st.st_mode;
    e->rel = w->rel;
    e->rel_len = w->rel_len;
    e->name = d->name;
    e->top = w->depth == 0;
    e->kind = BD_CASE_FILE;
    e->exec = (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
    e->size = (uint64_t)st.st_size;
    e->bytes = NULL;
    return 1;
}

/* bd_case_source.next of a walk: the next regular file in bytewise path order, entering
 * and leaving directories on the way. */
static int dir_next(bd_case_source *src, bd_case_entry *e, bd_err *err)
{
    walk *w = (walk *)src;
    (void)err; /* w->err */
    close_cur(w);
    while (w->depth >= 0) {
        frame *f = &w->frames[w->depth];
        dir_lists *lv = &w->lists[w->depth];
        if (f->next == lv->n_ents) {
            if (pop_dir(w, true) != 0)
                return -1;
            continue;
        }
        const dent *d = &lv->ents[f->next++];
        size_t saved;
        rel_pop(w, f->rel_len);
        if (rel_push(w, d->name, d->len, &saved) != 0)
            return -1;
        if (!d->is_dir)
            return open_file(w, d, e);
        if (enter_dir(w, d) != 0)
            return -1;
    }
    return 0;
}

/* The copy of the file being read, or -1 (not copied). Returns 0 or -1 with w->err. */
static int open_copy(walk *w, int *cfd)
{
    *cfd = -1;
    if (w->cur_dst < 0)
        return 0;
    *cfd = openat(w->cur_dst, w->cur->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
    if (*cfd >= 0)
        return 0;
    char shown[SHOW_MAX];
    show_path(shown, w->top, w->rel);
    return bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot create the case copy");
}

/* bd_case_source.read of a walk: the bytes of the file yielded last, read once into the
 * hasher and, in the same pass, into its copy and (a scan) the kept top-level files. */
static int dir_read(bd_case_source *src, const bd_case_entry *e, bd_digest_sink *sink, bd_err *err)
{
    walk *w = (walk *)src;
    hash_state *hs = sink;
    char shown[SHOW_MAX];
    int cfd = -1, rc = -1;
    (void)err; /* w->err */
    if (open_copy(w, &cfd) != 0)
        return -1;
    hs->copy_fd = cfd;
    blake3_hasher cassette;
    bool is_cassette = false;
    char *keep = NULL;
    if (w->scan && e->top) {
        bd_scanned_case *sc = w->scan;
        if (strcmp(e->name, "cassette.json") == 0) {
            is_cassette = true;
            blake3_hasher_init(&cassette);
            hs->tee = &cassette;
        } else if (strcmp(e->name, "case.yaml") == 0) {
            sc->case_yaml_present = true;
            if (e->size > sc->yaml_max) {
                sc->case_yaml_too_big = true;
            } else if (!(keep = malloc((size_t)e->size + 1))) {
                show_path(shown, w->top, w->rel);
                bd_err_set(w->err, BD_E_NOMEM, shown, 0, 0, "out of memory reading the file");
                goto out;
            }
            hs->keep = keep;
            hs->kept = 0;
        }
    }
    int errnum = 0;
    read_status rs = hash_fd(hs, w->cur_fd, e->size, e->rel, &errnum);
    hs->copy_fd = -1;
    hs->tee = NULL;
    hs->keep = NULL;
    if (rs != READ_OK) {
        free(keep);
        show_path(shown, w->top, w->rel);
        read_error(w->err, rs, errnum, shown);
        goto out;
    }
    if (is_cassette) {
        uint8_t raw[BLAKE3_OUT_LEN];
        blake3_hasher_finalize(&cassette, raw, BLAKE3_OUT_LEN);
        format_digest(w->scan->cassette, raw);
        w->scan->cassette_present = true;
    }
    if (keep) {
        keep[hs->kept] = '\0';
        w->scan->case_yaml = keep;
        w->scan->case_yaml_len = hs->kept;
    }
    if (cfd >= 0 && fchmod(cfd, (w->cur_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) ? 0555 : 0444) != 0) {
        show_path(shown, w->top, w->rel);
        bd_err_errno(w->err, BD_E_IO, errno, shown, "cannot make the case copy read-only");
        goto out;
    }
    rc = 0;
out:
    if (cfd >= 0)
        close(cfd);
    close_cur(w);
    return rc;
}

/* bd_case_source.refuse of a walk (never reached: the listing refuses first). */
static int dir_refuse(bd_case_source *src, const bd_case_entry *e, bd_err *err)
{
    (void)err;
    return unsupported((walk *)src, e->rel, 0);
}

/* ---- the membership rule and the one digest loop ----------------------------------- */

bd_case_member bd_case_membership(bool top, const char *name, bd_case_kind kind)
{
    if (kind != BD_CASE_FILE)
        return BD_CASE_REFUSED;
    if (top && strcmp(name, BD_PROVENANCE_FILE) == 0)
        return BD_CASE_OUTSIDE; /* the signatures: the one file outside the digest */
    return BD_CASE_MEMBER;
}

/* Append `len` bytes of any length to the pending bytes. */
static void hs_add_all(hash_state *st, const void *data, size_t len)
{
    if (len <= st->buf_size) {
        hs_add(st, data, len);
        return;
    }
    hs_flush(st);
    blake3_hasher_update(&st->hasher, data, len);
}

/* `v` in decimal (as "%" PRIu64) into out, NUL-terminated; returns its length. */
static size_t u64_decimal(char out[24], uint64_t v)
{
    char rev[24];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return n;
}

/* One member into the stream: T "\0" rel "\0" size "\0" bytes. */
static int feed_entry(hash_state *hs, bd_case_source *src, const bd_case_entry *e, bd_err *err)
{
    char size_str[24];
    size_t sl = u64_decimal(size_str, e->size);
    const char type = e->exec ? 'x' : 'f';
    hs_add(hs, &type, 1);
    hs_add(hs, "", 1);
    hs_add(hs, e->rel, e->rel_len + 1); /* with its NUL */
    hs_add(hs, size_str, sl + 1);       /* with its NUL */
    if (!e->bytes)
        return src->read(src, e, hs, err);
    hs_add_all(hs, e->bytes, (size_t)e->size);
    hs->total += e->size;
    return 0;
}

/* bd_case_source_digest with the caller's hasher and order buffer (`prev`,
 * BD_DIGEST_MAX_RELPATH + 1 bytes). */
static int source_digest(hash_state *hs, char *prev, bd_case_source *src, char out[BD_DIGEST_BUF],
                         bd_err *err)
{
    char shown[SHOW_MAX];
    bool have_prev = false;
    bd_case_entry e;
    int r;
    hs->fill = 0;
    hs->total = 0;
    blake3_hasher_init(&hs->hasher);
    blake3_hasher_update(&hs->hasher, CASE_HEADER, sizeof(CASE_HEADER) - 1);
    while ((r = src->next(src, &e, err)) == 1) {
        bd_case_member m = bd_case_membership(e.top, e.name, e.kind);
        if (m == BD_CASE_OUTSIDE)
            continue;
        if (m == BD_CASE_REFUSED)
            return src->refuse(src, &e, err);
        /* The escaped path is made for a message only (every entry of every case). */
        bool too_long = e.rel_len > BD_DIGEST_MAX_RELPATH;
        if (too_long || (have_prev && strcmp(prev, e.rel) >= 0)) {
            show_path(shown, src->where, e.rel);
            if (too_long)
                return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, shown, 0, 0,
                                  "relative path longer than %d bytes, the limit for a case: "
                                  "shorten the names or the nesting",
                                  BD_DIGEST_MAX_RELPATH);
            return bd_err_set(err, BD_E_INTERNAL, shown, 0, 0,
                              "case walk out of bytewise order; please report this bug");
        }
        memcpy(prev, e.rel, e.rel_len + 1);
        have_prev = true;
        if (feed_entry(hs, src, &e, err) != 0)
            return -1;
    }
    if (r != 0)
        return r;
    hs_flush(hs);
    uint8_t raw[BLAKE3_OUT_LEN];
    blake3_hasher_finalize(&hs->hasher, raw, BLAKE3_OUT_LEN);
    format_digest(out, raw);
    return 0;
}

int bd_case_source_digest(char out[BD_DIGEST_BUF], bd_case_source *src, uint64_t *bytes_hashed,
                          bd_err *err)
{
    hash_state hs;
    memset(&hs, 0, sizeof(hs));
    hs.copy_fd = -1;
    hs.buf_size = 64u * 1024u;
    hs.buf = malloc(hs.buf_size);
    char *prev = malloc(BD_DIGEST_MAX_RELPATH + 1);
    char got[BD_DIGEST_BUF];
    int rc = -1;
    if (!hs.buf || !prev)
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory for the digest buffers");
    else
        rc = source_digest(&hs, prev, src, got, err);
    if (rc == 0) {
        memcpy(out, got, BD_DIGEST_BUF);
        if (bytes_hashed)
            *bytes_hashed = hs.total;
    }
    free(hs.buf);
    free(prev);
    return rc;
}

/* ---- the case walk ---------------------------------------------------------------- */

/* Set up `w` as the directory source of a walk whose buffers are already in place. */
static void walk_init(walk *w, bd_err *err, const char *top)
{
    w->src.next = dir_next;
    w->src.read = dir_read;
    w->src.refuse = dir_refuse;
    w->src.where = top;
    w->top = top;
    w->err = err;
    w->hs.copy_fd = -1;
    w->copy_top = -1;
    w->depth = -1;
    w->cur_fd = -1;
    w->cur_dst = -1;
}

/* The case digest of the case directory open on `fd` (ownership taken), into `out`.
 * Returns 0, or non-zero with w->err set (or w->scan->leftover). */
static int walk_top(walk *w, int fd, char out[BD_DIGEST_BUF])
{
    w->rel[0] = '\0';
    w->rel_len = 0;
    w->depth = -1;
    w->cur_fd = -1;
    int rc = push_dir(w, fd, -1);
    if (rc == 0)
        rc = source_digest(&w->hs, w->prev, &w->src, out, w->err);
    walk_close(w);
    return rc != 0 ? -1 : 0;
}

/* Open the case directory `path` (trailing slashes stripped; `dir` as given) for a walk.
 * Returns the descriptor, or -1 with `err` set. */
static int open_case_dir(const char *path, bd_err *err)
{
    char shown[SHOW_MAX];
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0)
        return fd;
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
    return -1;
}

static int case_walk(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                     bd_digest_progress_cb cb, void *payload, int copy_top,
                     const char *const *copy_tops, bd_scanned_case *kept, bd_err *err)
{
    int rc = -1;
    char *path = NULL;
    walk w;
    memset(&w, 0, sizeof(w));
    walk_init(&w, err, dir ? dir : "");
    w.copy_top = copy_top;
    w.copy_tops = copy_tops;
    if (kept) {
        size_t yaml_max = kept->yaml_max;
        memset(kept, 0, sizeof(*kept));
        kept->yaml_max = yaml_max;
        w.scan = kept;
        w.scan_files_only = true;
    }

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
    w.top = w.src.where = path;

    w.hs.buf_size = READ_BUF_SIZE;
    w.hs.buf = malloc(w.hs.buf_size);
    w.rel = malloc(BD_DIGEST_MAX_RELPATH + 1);
    w.prev = malloc(BD_DIGEST_MAX_RELPATH + 1);
    w.dents = malloc(DENTS_BUF);
    w.lists = calloc(BD_DIGEST_MAX_DEPTH + 1, sizeof(*w.lists));
    if (!w.hs.buf || !w.rel || !w.prev || !w.dents || !w.lists) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory for the digest buffers");
        goto out;
    }
    w.rel[0] = '\0';
    w.hs.cb = cb;
    w.hs.payload = payload;

    int fd = open_case_dir(path, err);
    if (fd < 0 || walk_top(&w, fd, out) != 0)
        goto out;
    if (bytes_hashed)
        *bytes_hashed = w.hs.total;
    rc = 0;
out:
    free(w.hs.buf);
    free(w.rel);
    free(w.prev);
    free(w.dents);
    dir_lists_free(w.lists);
    free(path);
    return rc;
}

int bd_digest_case_dir_progress(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                                bd_digest_progress_cb cb, void *payload, bd_err *err)
{
    return case_walk(out, dir, bytes_hashed, cb, payload, -1, NULL, NULL, err);
}

int bd_digest_case_copy(char out[BD_DIGEST_BUF], const char *dir, int dst_dirfd,
                        const char *const *tops, bd_scanned_case *kept, bd_err *err)
{
    if (dst_dirfd < 0)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "no destination for the case copy");
    return case_walk(out, dir, NULL, NULL, NULL, dst_dirfd, tops, kept, err);
}

int bd_digest_case_dir(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                       bd_err *err)
{
    return bd_digest_case_dir_progress(out, dir, bytes_hashed, NULL, NULL, err);
}

/* ---- one pass over a case: digest, case.yaml, cassette, provenance.yaml ------------ */

struct bd_case_scanner {
    uint8_t *buf; /* READ_BUF_SIZE */
    char *rel;
    char *prev;
    uint8_t *dents;
    dir_lists *lists; /* BD_DIGEST_MAX_DEPTH + 1 */
};

size_t bd_case_scan_threads(size_t n, size_t min_n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < min_n || cpus <= 1)
        return 1;
    return cpus > 4 ? 4 : (size_t)cpus;
}

void bd_case_scanner_free(bd_case_scanner *sc)
{
    if (!sc)
        return;
    free(sc->buf);
    free(sc->rel);
    free(sc->prev);
    free(sc->dents);
    dir_lists_free(sc->lists);
    free(sc);
}

int bd_case_scanner_new(bd_case_scanner **out, bd_err *err)
{
    bd_case_scanner *sc = calloc(1, sizeof(*sc));
    *out = NULL;
    if (!sc || !(sc->buf = malloc(READ_BUF_SIZE)) ||
        !(sc->rel = malloc(BD_DIGEST_MAX_RELPATH + 1)) ||
        !(sc->prev = malloc(BD_DIGEST_MAX_RELPATH + 1)) || !(sc->dents = malloc(DENTS_BUF)) ||
        !(sc->lists = calloc(BD_DIGEST_MAX_DEPTH + 1, sizeof(*sc->lists)))) {
        bd_case_scanner_free(sc);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory for the digest buffers");
    }
    *out = sc;
    return 0;
}

void bd_case_scan_release(bd_scanned_case *r)
{
    if (!r)
        return;
    free(r->case_yaml);
    free(r->prov_yaml);
    r->case_yaml = r->prov_yaml = NULL;
}

int bd_case_scan(bd_case_scanner *sc, bd_scanned_case *r, int cases_fd, const char *cases_dir,
                 const char *case_id, bd_err *err)
{
    size_t yaml_max = r->yaml_max;
    bd_case_stamps *stamps = r->stamps;
    memset(r, 0, sizeof(*r));
    r->yaml_max = yaml_max;
    r->stamps = stamps;
    if (stamps)
        bd_case_stamps_begin(stamps, time(NULL));
    char top[SHOW_MAX];
    snprintf(top, sizeof(top), "%s/%s", cases_dir, case_id);
    int fd = openat(cases_fd, case_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        r->unusual = true;
        return bd_err_errno(err, BD_E_IO, errno, top, "cannot open the case directory");
    }
    walk w;
    memset(&w, 0, sizeof(w));
    walk_init(&w, err, top);
    w.hs.buf = sc->buf;
    w.hs.buf_size = READ_BUF_SIZE;
    w.rel = sc->rel;
    w.prev = sc->prev;
    w.dents = sc->dents;
    w.lists = sc->lists;
    w.scan = r;
    if (walk_top(&w, fd, r->digest) != 0) {
        r->digest[0] = '\0';
        if (stamps)
            bd_case_stamps_fail(stamps);
        if (r->leftover)
            return 1;
        r->unusual = true;
        return -1;
    }
    if (stamps)
        bd_case_stamps_end(stamps);
    return 0;
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
