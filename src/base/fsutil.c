#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int bd_read_file(char **out, size_t *len, const char *path, size_t max, bd_code too_big_code,
                 bd_err *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    int rc = -1;
    char *buf = NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, path, 0, 0,
                              "is a symbolic link; benchdesk never follows links, replace "
                              "it with a regular file");
        return bd_err_errno(err, BD_E_IO, errno, path, "cannot open");
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot stat");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, path, 0, 0,
                   "is not a regular file; replace it with one");
        goto out;
    }
    if ((unsigned long long)st.st_size > max) {
        bd_err_set(err, too_big_code, path, 0, 0, "is %lld bytes, over the %zu-byte limit",
                   (long long)st.st_size, max);
        goto out;
    }
    size_t cap = (size_t)st.st_size + 1, used = 0;
    buf = malloc(cap);
    if (!buf) {
        bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory reading the file");
        goto out;
    }
    for (;;) {
        if (used + 1 >= cap) {
            /* The file grew since fstat: allow it up to `max`. */
            if (cap > max) {
                bd_err_set(err, too_big_code, path, 0, 0, "grew past the %zu-byte limit", max);
                goto out;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory reading the file");
                goto out;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + used, cap - used - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            bd_err_errno(err, BD_E_IO, errno, path, "cannot read");
            goto out;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    if (used > max) {
        bd_err_set(err, too_big_code, path, 0, 0, "is over the %zu-byte limit", max);
        goto out;
    }
    buf[used] = '\0';
    *out = buf;
    buf = NULL;
    if (len)
        *len = used;
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

static int fsync_dir_of(const char *path, bd_err *err)
{
    char *copy = strdup(path);
    if (!copy)
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    const char *dir = dirname(copy);
    int rc = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0)
        rc = bd_err_errno(err, BD_E_IO, errno, dir, "cannot sync the directory");
    if (dfd >= 0)
        close(dfd);
    free(copy);
    return rc;
}

int bd_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode, bd_err *err)
{
    return bd_write_file_atomic_in(path, NULL, data, len, mode, err);
}

/* ---- one atomic write, in pieces ------------------------------------------------------ */

#define ATOMIC_BUF 65536

struct bd_atomic_file {
    char *path; /* the target */
    char *tmp;  /* the temp file beside it (or in tmp_dir) */
    int fd;
    unsigned mode;
    size_t used; /* bytes of buf not yet written */
    char buf[ATOMIC_BUF];
};

int bd_atomic_file_open(bd_atomic_file **out, const char *path, const char *tmp_dir, unsigned mode,
                        bd_err *err)
{
    *out = NULL;
    bd_atomic_file *f = malloc(sizeof(*f));
    char *copy = strdup(path);
    char *dircopy = tmp_dir ? NULL : strdup(path);
    char *target = strdup(path);
    if (!f || !copy || (!tmp_dir && !dircopy) || !target) {
        free(f);
        free(copy);
        free(dircopy);
        free(target);
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    }
    const char *base = basename(copy);
    const char *dir = tmp_dir ? tmp_dir : dirname(dircopy);
    size_t tlen = strlen(dir) + strlen(base) + sizeof(BD_TMP_PREFIX) + 48;
    char *tmp = malloc(tlen);
    if (tmp)
        /* A dot name with a fixed prefix: never a case or task-class directory, and
         * recognizable as an interrupted write (bd_tmp_is_leftover). */
        snprintf(tmp, tlen, "%s/" BD_TMP_PREFIX "%s.%ld.XXXXXX", dir, base, (long)getpid());
    free(copy);
    free(dircopy);
    if (!tmp) {
        free(f);
        free(target);
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        bd_err_errno(err, BD_E_IO, errno, tmp, "cannot create the temporary file");
        free(tmp);
        free(f);
        free(target);
        return -1;
    }
    *f = (bd_atomic_file){.path = target, .tmp = tmp, .fd = fd, .mode = mode};
    *out = f;
    return 0;
}

static int atomic_flush(bd_atomic_file *f, const char *p, size_t left, bd_err *err)
{
    while (left) {
        ssize_t n = write(f->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return bd_err_errno(err, BD_E_IO, errno, f->tmp, "cannot write; nothing was changed");
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

int bd_atomic_file_write(bd_atomic_file *f, const void *data, size_t len, bd_err *err)
{
    if (f->used + len > ATOMIC_BUF) {
        if (atomic_flush(f, f->buf, f->used, err) != 0)
            return -1;
        f->used = 0;
    }
    if (len >= ATOMIC_BUF)
        return atomic_flush(f, data, len, err);
    memcpy(f->buf + f->used, data, len);
    f->used += len;
    return 0;
}

void bd_atomic_file_abort(bd_atomic_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    unlink(f->tmp);
    free(f->tmp);
    free(f->path);
    free(f);
}

int bd_atomic_file_commit(bd_atomic_file *f, bd_err *err)
{
    if (atomic_flush(f, f->buf, f->used, err) != 0)
        goto fail;
    f->used = 0;
    if (fchmod(f->fd, (mode_t)f->mode) != 0 || fsync(f->fd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, f->tmp, "cannot sync; nothing was changed");
        goto fail;
    }
    int fd = f->fd;
    f->fd = -1;
    if (close(fd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, f->tmp, "cannot close; nothing was changed");
        goto fail;
    }
    if (rename(f->tmp, f->path) != 0) {
        bd_err_errno(err, BD_E_IO, errno, f->path, "cannot replace; nothing was changed");
        goto fail;
    }
    int rc = fsync_dir_of(f->path, err);
    free(f->tmp);
    free(f->path);
    free(f);
    return rc;
fail:
    bd_atomic_file_abort(f);
    return -1;
}

int bd_write_file_atomic_in(const char *path, const char *tmp_dir, const void *data, size_t len,
                            unsigned mode, bd_err *err)
{
    bd_atomic_file *f;
    if (bd_atomic_file_open(&f, path, tmp_dir, mode, err) != 0)
        return -1;
    if (atomic_flush(f, data, len, err) != 0) { /* one write: no copy through the buffer */
        bd_atomic_file_abort(f);
        return -1;
    }
    return bd_atomic_file_commit(f, err);
}

/* ---- many atomic writes, one sync ---------------------------------------------------- */

typedef struct batch_item {
    char *path; /* the target */
    char *tmp;  /* its temp file, written, not yet renamed; NULL once renamed */
} batch_item;

struct bd_atomic_batch {
    batch_item *items;
    size_t n, cap;
    int sync_fd; /* a descriptor on the temp files' file system, for syncfs; or -1 */
};

int bd_atomic_batch_new(bd_atomic_batch **out, bd_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    (*out)->sync_fd = -1;
    return 0;
}

void bd_atomic_batch_free(bd_atomic_batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        if (b->items[i].tmp)
            unlink(b->items[i].tmp); /* not committed: the target is untouched */
        free(b->items[i].tmp);
        free(b->items[i].path);
    }
    if (b->sync_fd >= 0)
        close(b->sync_fd);
    free(b->items);
    free(b);
}

int bd_atomic_batch_add(bd_atomic_batch *b, const char *path, const char *tmp_dir, const void *data,
                        size_t len, unsigned mode, bd_err *err)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 16;
        batch_item *ni = realloc(b->items, nc * sizeof(*ni));
        if (!ni)
            return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
        b->items = ni;
        b->cap = nc;
    }
    char *copy = strdup(path);
    char *target = strdup(path);
    size_t tlen = strlen(tmp_dir) + strlen(path) + sizeof(BD_TMP_PREFIX) + 48;
    char *tmp = malloc(tlen);
    if (!copy || !target || !tmp) {
        free(copy);
        free(target);
        free(tmp);
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    }
    snprintf(tmp, tlen, "%s/" BD_TMP_PREFIX "%s.%ld.XXXXXX", tmp_dir, basename(copy),
             (long)getpid());
    free(copy);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        bd_err_errno(err, BD_E_IO, errno, tmp, "cannot create the temporary file");
        free(tmp);
        free(target);
        return -1;
    }
    const char *p = data;
    size_t left = len;
    int rc = 0;
    while (left && rc == 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = bd_err_errno(err, BD_E_IO, errno, tmp, "cannot write; nothing was changed");
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (rc == 0 && fchmod(fd, (mode_t)mode) != 0)
        rc = bd_err_errno(err, BD_E_IO, errno, tmp, "cannot set the mode; nothing was changed");
    if (rc == 0 && b->sync_fd < 0)
        b->sync_fd = dup(fd);
    if (close(fd) != 0 && rc == 0)
        rc = bd_err_errno(err, BD_E_IO, errno, tmp, "cannot close; nothing was changed");
    if (rc != 0) {
        unlink(tmp);
        free(tmp);
        free(target);
        return -1;
    }
    b->items[b->n++] = (batch_item){target, tmp};
    return 0;
}

int bd_atomic_batch_commit(bd_atomic_batch *b, bd_err *err)
{
    /* 1. Every temp file's bytes on disk, with one sync of their file system, by syncfs
     *    rather than one fsync per file; where syncfs fails, each file is fsynced. */
    if (b->n && (b->sync_fd < 0 || syncfs(b->sync_fd) != 0)) {
        for (size_t i = 0; i < b->n; i++) {
            int fd = open(b->items[i].tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0 || fsync(fd) != 0) {
                int e = errno;
                if (fd >= 0)
                    close(fd);
                return bd_err_errno(err, BD_E_IO, e, b->items[i].tmp,
                                    "cannot sync; nothing was changed");
            }
            close(fd);
        }
    }
    /* 2. Each rename: from here on a crash leaves every target old or new, never torn. */
    for (size_t i = 0; i < b->n; i++) {
        if (rename(b->items[i].tmp, b->items[i].path) != 0)
            return bd_err_errno(err, BD_E_IO, errno, b->items[i].path,
                                "cannot replace; the files before it in this pin were replaced, "
                                "this one and those after it were not: run the command again");
        free(b->items[i].tmp);
        b->items[i].tmp = NULL;
    }
    /* 3. The directories that now name the new files. */
    for (size_t i = 0; i < b->n; i++)
        if (fsync_dir_of(b->items[i].path, err) != 0)
            return -1;
    return 0;
}

bool bd_tmp_is_leftover(const char *name)
{
    if (strncmp(name, BD_TMP_PREFIX, sizeof(BD_TMP_PREFIX) - 1) == 0)
        return true;
    /* The older sibling form "<file>.<pid>.tmp". */
    size_t l = strlen(name);
    if (l < 7 || strcmp(name + l - 4, ".tmp") != 0)
        return false;
    size_t i = l - 4, digits = 0;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') {
        i--;
        digits++;
    }
    return digits > 0 && i > 1 && name[i - 1] == '.';
}

int bd_mkdir_p(const char *path, unsigned mode, bd_err *err)
{
    char *copy = strdup(path);
    if (!copy)
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    int rc = 0;
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(copy, (mode_t)mode) != 0) {
            int e = errno;
            struct stat st;
            /* An existing directory is fine whatever mkdir said (EEXIST, or EROFS/EACCES
             * on a read-only or locked-down parent); say what is true otherwise. */
            if (stat(copy, &st) == 0 && S_ISDIR(st.st_mode)) {
                /* nothing to do */
            } else if (e == EEXIST) {
                rc = bd_err_set(err, BD_E_IO, copy, 0, 0,
                                "exists but is not a directory; move it away and retry");
                break;
            } else {
                rc = bd_err_errno(err, BD_E_IO, e, copy, "cannot create the directory");
                break;
            }
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    free(copy);
    return rc;
}

void bd_utc_now(char out[21])
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- trees: list, remove, write one file ------------------------------------------ */

/* A listing of the directory `fd` from its first entry, leaving `fd` itself open (the
 * caller closedir()s the result). NULL with errno set on failure. */
static DIR *open_dir_listing(int fd)
{
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    /* A dup shares the file offset: always start from the top. */
    if (d)
        rewinddir(d);
    else if (dup_fd >= 0)
        close(dup_fd);
    return d;
}

/* The entry of directory `dfd` that is the directory (dev, ino), or -1. */
static int find_dir_entry(int dfd, dev_t dev, ino_t ino, char name[256])
{
    DIR *d = open_dir_listing(dfd);
    if (!d) {
        return -1;
    }
    int found = -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
            st.st_dev == dev && st.st_ino == ino) {
            snprintf(name, 256, "%s", de->d_name);
            found = 0;
            break;
        }
    }
    closedir(d);
    return found;
}

static void read_ahead_dir(int dfd, int depth_left)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        unsigned char type = de->d_type;
        struct stat st;
        if (type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        if (type != DT_DIR && type != DT_REG)
            continue; /* symlinks, devices, pipes and sockets: never opened */
        if (type == DT_DIR && depth_left <= 0)
            continue;
        int fd = openat(dirfd(d), de->d_name,
                        (type == DT_DIR ? O_DIRECTORY : 0) | O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
                            O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
            continue;
        if (fstat(fd, &st) != 0) {
            close(fd);
        } else if (S_ISDIR(st.st_mode) && depth_left > 0) {
            read_ahead_dir(fd, depth_left - 1); /* closes fd */
        } else {
            if (S_ISREG(st.st_mode))
                (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
            close(fd);
        }
    }
    closedir(d);
}

void bd_read_ahead_tree(const char *path, int max_depth)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        read_ahead_dir(fd, max_depth);
}

/* No recursion and O(1) descriptors: a rubric may leave a tree thousands of levels
 * deep, or with modes 000, behind. */
int bd_remove_tree(const char *path, bd_err *err)
{
    char *copy = strdup(path);
    if (!copy)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    char *slash = strrchr(copy, '/');
    if (!slash || slash == copy || !slash[1]) {
        free(copy);
        return bd_err_set(err, BD_E_INTERNAL, path, 0, 0, "refusing to remove this path");
    }
    *slash = '\0';
    const char *base = slash + 1;
    int rc = -1, cur = -1;
    int pfd = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) {
        bd_err_errno(err, BD_E_IO, errno, copy, "cannot open the temp root");
        goto out;
    }
    struct stat top;
    if (fstatat(pfd, base, &top, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = errno == ENOENT ? 0 : bd_err_errno(err, BD_E_IO, errno, path, "cannot stat");
        goto out;
    }
    if (!S_ISDIR(top.st_mode)) {
        if (unlinkat(pfd, base, 0) != 0 && errno != ENOENT)
            bd_err_errno(err, BD_E_IO, errno, path, "cannot remove");
        else
            rc = 0;
        goto out;
    }
    fchmodat(pfd, base, 0700, 0);
    cur = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cur < 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot open the temp dir to remove it");
        goto out;
    }
    size_t depth = 0;
    for (;;) {
        DIR *d = open_dir_listing(cur);
        if (!d) {
            bd_err_errno(err, BD_E_IO, errno, path, "cannot list the temp dir");
            goto out;
        }
        bool descended = false;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            const char *name = de->d_name;
            if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                continue;
            struct stat st;
            if (fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            if (S_ISDIR(st.st_mode)) {
                if (st.st_dev != top.st_dev) {
                    closedir(d);
                    bd_err_set(err, BD_E_IO, path, 0, 0,
                               "a file system is mounted inside the temp dir (at '%s'); "
                               "unmount it, then remove the directory",
                               name);
                    goto out;
                }
                /* Entries can be removed only from a directory we may write: the
                 * read-only copies and a rubric's mode 000 need u+rwx first. */
                if ((st.st_mode & 0700) != 0700)
                    fchmodat(cur, name, 0700, 0);
                int sub = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0) {
                    closedir(d);
                    bd_err_errno(err, BD_E_IO, errno, path, "cannot enter '%s'", name);
                    goto out;
                }
                closedir(d);
                close(cur);
                cur = sub;
                depth++;
                descended = true;
                break;
            }
            if (unlinkat(cur, name, 0) != 0 && errno != ENOENT) {
                int e = errno;
                closedir(d);
                bd_err_errno(err, BD_E_IO, e, path, "cannot remove '%s'", name);
                goto out;
            }
        }
        if (descended)
            continue;
        closedir(d);
        if (depth == 0)
            break;
        /* `cur` is empty: go up and remove it. */
        struct stat me;
        if (fstat(cur, &me) != 0) {
            bd_err_errno(err, BD_E_IO, errno, path, "cannot stat a directory");
            goto out;
        }
        int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (up < 0) {
            bd_err_errno(err, BD_E_IO, errno, path, "cannot go back up");
            goto out;
        }
        close(cur);
        cur = up;
        depth--;
        char name[256];
        if (find_dir_entry(cur, me.st_dev, me.st_ino, name) != 0 ||
            unlinkat(cur, name, AT_REMOVEDIR) != 0) {
            bd_err_errno(err, BD_E_IO, errno ? errno : EIO, path,
                         "cannot remove an emptied directory");
            goto out;
        }
    }
    close(cur);
    cur = -1;
    if (unlinkat(pfd, base, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot remove the temp dir");
        goto out;
    }
    rc = 0;
out:
    if (cur >= 0)
        close(cur);
    if (pfd >= 0)
        close(pfd);
    free(copy);
    return rc;
}

int bd_write_file_at(int dfd, const char *name, const void *data, size_t len, unsigned mode,
                     bd_err *err)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return bd_err_errno(err, BD_E_IO, errno, name, "cannot create in the temp dir");
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return bd_err_errno(err, BD_E_IO, e, name, "cannot write in the temp dir");
        }
        p += n;
        len -= (size_t)n;
    }
    if (fchmod(fd, mode) != 0) {
        int e = errno;
        close(fd);
        return bd_err_errno(err, BD_E_IO, e, name, "cannot set the mode");
    }
    close(fd);
    return 0;
}

/* ---- owner tags and the sweep of dead owners' temp dirs ---------------------------- */

/* Start time of process `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot), or
 * 0 when it is gone or unreadable. */
static unsigned long long proc_start(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields start after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

void bd_owner_tag(char out[BD_OWNER_TAG_MAX])
{
    long pid = (long)getpid();
    snprintf(out, BD_OWNER_TAG_MAX, "p%lds%llu", pid, proc_start(pid));
}

/* Parse "p<pid>s<start>" at s, ending at '-'. Returns 0 with *pid and *start set. */
static int parse_tag(const char *s, long *pid, unsigned long long *start)
{
    char *end;
    if (s[0] != 'p' || s[1] < '1' || s[1] > '9')
        return -1;
    *pid = strtol(s + 1, &end, 10);
    if (*end != 's' || end[1] < '0' || end[1] > '9')
        return -1;
    *start = strtoull(end + 1, &end, 10);
    return *end == '-' ? 0 : -1;
}

int bd_tmp_sweep(const char *tmp_root)
{
    int fd = open(tmp_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    DIR *d = open_dir_listing(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    uid_t me = geteuid();
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (strncmp(name, "benchdesk-", 10) != 0)
            continue;
        /* benchdesk-<kind>-p<pid>s<start>-...: the kind holds no '-'. */
        const char *kind_end = strchr(name + 10, '-');
        long pid;
        unsigned long long start;
        if (!kind_end || parse_tag(kind_end + 1, &pid, &start) != 0)
            continue;
        struct stat st;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        /* Someone else's dir is theirs to sweep; as root, the jail uids' are ours too. */
        if (me != 0 && st.st_uid != me)
            continue;
        unsigned long long now = proc_start(pid);
        if (now != 0 && now == start)
            continue; /* the owner is alive */
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", tmp_root, name) >= (int)sizeof(path))
            continue;
        bd_err e = BD_ERR_INIT;
        if (bd_remove_tree(path, &e) == 0)
            removed++;
    }
    closedir(d);
    close(fd);
    return removed;
}

const char *bd_tmp_root(void)
{
    const char *t = getenv("TMPDIR");
    return t && t[0] == '/' ? t : "/tmp";
}

int bd_read_file_head(char **out, size_t *len, unsigned long long *size, const char *path,
                      size_t max, size_t spare, bd_err *err)
{
    *out = NULL;
    *len = 0;
    *size = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, path, 0, 0,
                              "is a symbolic link; benchdesk never follows links");
        return bd_err_errno(err, BD_E_IO, errno, path, "cannot open");
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return bd_err_errno(err, BD_E_IO, e, path, "cannot stat");
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, path, 0, 0, "is not a regular file");
    }
    size_t cap = (unsigned long long)st.st_size < max ? (size_t)st.st_size : max;
    char *buf = malloc(cap + spare + 1);
    if (!buf) {
        close(fd);
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory reading the file");
    }
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    *size = (unsigned long long)st.st_size;
    return 0;
}

void bd_tree_entries_free(bd_tree_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].rel);
    free(e);
}

typedef struct tree_walk {
    bd_tree_entry *e;
    size_t n, max;
    bool oom;
} tree_walk;

static void tree_add(tree_walk *w, const char *rel, const struct stat *st)
{
    bd_tree_entry *g = realloc(w->e, (w->n + 1) * sizeof(*g));
    if (!g || !(g[w->n].rel = strdup(rel))) {
        if (g)
            w->e = g;
        w->oom = true;
        return;
    }
    w->e = g;
    g[w->n].size = (unsigned long long)st->st_size;
    g[w->n].regular = S_ISREG(st->st_mode);
    w->n++;
}

static void tree_walk_dir(tree_walk *w, const char *root, const char *rel, int depth)
{
    if (depth < 0 || w->oom)
        return;
    char path[8200];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, rel) >= sizeof(path))
        return;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) && w->n < w->max && !w->oom) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char sub[4096];
        if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >= sizeof(sub))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode))
            tree_walk_dir(w, root, sub, depth - 1);
        else
            tree_add(w, sub, &st);
    }
    closedir(d);
}

int bd_list_tree(bd_tree_entry **out, size_t *n, const char *root, const char *rel, int max_depth,
                 size_t max_entries, bd_err *err)
{
    tree_walk w = {NULL, 0, max_entries, false};
    tree_walk_dir(&w, root, rel, max_depth);
    if (w.oom) {
        bd_tree_entries_free(w.e, w.n);
        *out = NULL;
        *n = 0;
        return bd_err_set(err, BD_E_NOMEM, root, 0, 0, "out of memory listing the directory");
    }
    *out = w.e;
    *n = w.n;
    return 0;
}
