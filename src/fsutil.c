#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
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

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

int bd_remove_tree(const char *path, bd_err *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : bd_err_errno(err, BD_E_IO, errno, path, "cannot remove");
    /* FTW_PHYS: never follow a link out of the tree while deleting it. */
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (lstat(path, &st) == 0)
        return bd_err_set(err, BD_E_IO, path, 0, 0, "could not be removed entirely");
    return 0;
}

int bd_tmp_sweep(const char *tmp_root)
{
    DIR *d = opendir(tmp_root);
    if (!d)
        return 0;
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
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", tmp_root, name) >= (int)sizeof(path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me)
            continue;
        unsigned long long now = proc_start(pid);
        if (now != 0 && now == start)
            continue; /* the owner is alive */
        if (bd_remove_tree(path, NULL) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

const char *bd_tmp_root(void)
{
    const char *t = getenv("TMPDIR");
    return t && t[0] == '/' ? t : "/tmp";
}

void bd_utc_now(char out[21])
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
