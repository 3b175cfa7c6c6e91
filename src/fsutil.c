#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

int bd_write_file_atomic_in(const char *path, const char *tmp_dir, const void *data, size_t len,
                            unsigned mode, bd_err *err)
{
    char *copy = strdup(path);
    char *dircopy = tmp_dir ? NULL : strdup(path);
    if (!copy || (!tmp_dir && !dircopy)) {
        free(copy);
        free(dircopy);
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    }
    const char *base = basename(copy);
    const char *dir = tmp_dir ? tmp_dir : dirname(dircopy);
    size_t tlen = strlen(dir) + strlen(base) + sizeof(BD_TMP_PREFIX) + 48;
    char *tmp = malloc(tlen);
    if (!tmp) {
        free(copy);
        free(dircopy);
        return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    }
    /* A dot name with a fixed prefix: never a case or task-class directory, and
     * recognizable as an interrupted write (bd_tmp_is_leftover). */
    snprintf(tmp, tlen, "%s/" BD_TMP_PREFIX "%s.%ld.XXXXXX", dir, base, (long)getpid());
    free(copy);
    free(dircopy);
    int rc = -1;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        bd_err_errno(err, BD_E_IO, errno, tmp, "cannot create the temporary file");
        free(tmp);
        return -1;
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            bd_err_errno(err, BD_E_IO, errno, tmp, "cannot write; nothing was changed");
            goto fail;
        }
        p += n;
        left -= (size_t)n;
    }
    if (fchmod(fd, (mode_t)mode) != 0 || fsync(fd) != 0) {
        bd_err_errno(err, BD_E_IO, errno, tmp, "cannot sync; nothing was changed");
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        bd_err_errno(err, BD_E_IO, errno, tmp, "cannot close; nothing was changed");
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot replace; nothing was changed");
        goto fail;
    }
    rc = fsync_dir_of(path, err);
    free(tmp);
    return rc;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    return rc;
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
