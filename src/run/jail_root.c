/*
 * jail_root.c — the program side of the `namespaces` jail builds its root (jail_state.h):
 * a small tmpfs over /tmp of its private mount namespace, the host's system directories
 * and the few /etc files bound read-only, /dev's five nodes, a fresh /proc, the private
 * /tmp, the case's cwd with its verified entries read-only, then pivot_root into it.
 * Plain system calls on stack buffers (the probe's parent may have threads).
 */
#include "jail_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

/* Directories of the host shown read-only (or re-created as the same symlink). */
const char *const bd_jail_system_dirs[BD_JAIL_N_SYSTEM_DIRS] = {"usr",   "bin",   "sbin",  "lib",
                                                                "lib32", "lib64", "libx32"};

/* The two entries of the case's dir shown in its jail, read-only. */
const char *const bd_jail_cwd_ro[BD_JAIL_N_CWD_RO] = {"case", "rubric.py"};

static unsigned long locked_flags(const char *path)
{
    struct statvfs sv;
    unsigned long f = 0;
    if (statvfs(path, &sv) != 0)
        return 0;
    if (sv.f_flag & ST_NOSUID)
        f |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV)
        f |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC)
        f |= MS_NOEXEC;
    if (sv.f_flag & ST_RDONLY)
        f |= MS_RDONLY;
    if (sv.f_flag & ST_NODIRATIME)
        f |= MS_NODIRATIME;
    if (sv.f_flag & ST_NOATIME)
        f |= MS_NOATIME;
    else if (sv.f_flag & ST_RELATIME)
        f |= MS_RELATIME;
    else
        f |= MS_STRICTATIME;
    return f;
}

/* Bind `src` on `dst` and remount it with `flags`, keeping the flags a user namespace
 * may not clear (the source mount's nosuid/nodev/noexec/ro/atime). */
static int remount_to(const char *dst, unsigned long flags, bd_err *err)
{
    if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | flags | locked_flags(dst), NULL) != 0)
        return bd_jail_fail(err, "remount %s in the jail", dst);
    return 0;
}

static int bind_to(const char *src, const char *dst, unsigned long flags, bd_err *err)
{
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
        return bd_jail_fail(err, "bind %s in the jail", dst);
    return remount_to(dst, flags, err);
}

static int make_file(const char *path, const char *text, bd_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return bd_jail_fail(err, "create %s in the jail", path);
    size_t len = text ? strlen(text) : 0;
    ssize_t n = len ? write(fd, text, len) : 0;
    int e = errno;
    close(fd);
    if (n != (ssize_t)len) {
        errno = n < 0 ? e : EIO;
        return bd_jail_fail(err, "write %s in the jail", path);
    }
    return 0;
}

static int make_dir(const char *path, mode_t mode, bd_err *err)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return bd_jail_fail(err, "mkdir %s in the jail", path);
    return 0;
}

/* Show the host's `/name` at `name` (relative to the new root): the same symlink, or a
 * read-only bind of the directory or file. Missing: nothing, unless `required`. */
static int show_host(const char *name, bool required, bd_err *err)
{
    char host[PATH_MAX];
    snprintf(host, sizeof(host), "/%s", name);
    struct stat st;
    if (lstat(host, &st) != 0) {
        if (errno == ENOENT && !required)
            return 0;
        return bd_jail_fail(err, "stat %s", host);
    }
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(host, target, sizeof(target) - 1);
        if (n < 0)
            return bd_jail_fail(err, "readlink %s", host);
        target[n] = '\0';
        if (symlink(target, name) != 0)
            return bd_jail_fail(err, "symlink %s in the jail", name);
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        if (make_dir(name, 0755, err) != 0)
            return -1;
    } else if (S_ISREG(st.st_mode)) {
        if (make_file(name, NULL, err) != 0)
            return -1;
    } else {
        return 0;
    }
    return bind_to(host, name, MS_RDONLY | MS_NOSUID | MS_NODEV, err);
}

/* mkdir -p of the parents of `path` (relative, inside the new root). */
static int make_parents(const char *path, bd_err *err)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return bd_jail_fail(err, "the program's path is too long for the jail");
    }
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = make_dir(buf, 0755, err);
        *p = '/';
        if (rc != 0)
            return -1;
    }
    return 0;
}

static const char passwd_text[] = "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
                                  "rubric:x:1000:1000:rubric:/nonexistent:/usr/sbin/nologin\n"
                                  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group_text[] = "root:x:0:\nrubric:x:1000:\nnogroup:x:65534:\n";
/* No "dns": a name lookup fails at once instead of opening a socket. */
static const char nsswitch_text[] = "passwd: files\ngroup: files\nhosts: files\n";
/* With the host network (record --unsafe-network) names resolve as on the host. */
static const char nsswitch_net_text[] = "passwd: files\ngroup: files\nhosts: files dns\n";

/* The root's fixed part: the tmpfs, the system dirs, /etc, /dev, /proc, the private /tmp. */
int bd_jail_root_base(bd_err *err)
{
    /* The new root: a small tmpfs over /tmp of this (private) mount namespace. */
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=1m,nr_inodes=1024") != 0)
        return bd_jail_fail(err, "mount the jail's root tmpfs");
    if (chdir("/tmp") != 0)
        return bd_jail_fail(err, "enter the jail's root");

    for (size_t i = 0; i < sizeof(bd_jail_system_dirs) / sizeof(bd_jail_system_dirs[0]); i++)
        if (show_host(bd_jail_system_dirs[i], i == 0, err) != 0)
            return -1;

    if (make_dir("etc", 0755, err) != 0 || make_file("etc/passwd", passwd_text, err) != 0 ||
        make_file("etc/group", group_text, err) != 0 ||
        make_file("etc/nsswitch.conf", bd_jail.host_network ? nsswitch_net_text : nsswitch_text,
                  err) != 0 ||
        show_host("etc/ld.so.cache", false, err) != 0 ||
        show_host("etc/localtime", false, err) != 0 ||
        show_host("etc/alternatives", false, err) != 0)
        return -1;
    if (bd_jail.host_network &&
        (show_host("etc/resolv.conf", false, err) != 0 || show_host("etc/hosts", false, err) != 0 ||
         show_host("etc/ssl", false, err) != 0 ||
         show_host("etc/ca-certificates", false, err) != 0))
        return -1;

    if (make_dir("dev", 0755, err) != 0)
        return -1;
    static const char *const devs[] = {"null", "zero", "full", "random", "urandom"};
    for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
        char host[32], in[32];
        snprintf(host, sizeof(host), "/dev/%s", devs[i]);
        snprintf(in, sizeof(in), "dev/%s", devs[i]);
        /* A plain bind: a device node is never executed, and remounting five of them
         * would cost more than the rest of /dev. */
        if (make_file(in, NULL, err) != 0)
            return -1;
        if (mount(host, in, NULL, MS_BIND, NULL) != 0)
            return bd_jail_fail(err, "bind %s in the jail", in);
    }
    static const char *const links[][2] = {{"/proc/self/fd", "dev/fd"},
                                           {"/proc/self/fd/0", "dev/stdin"},
                                           {"/proc/self/fd/1", "dev/stdout"},
                                           {"/proc/self/fd/2", "dev/stderr"},
                                           {"/tmp", "dev/shm"}};
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        /* The warm root shows a staging dir in /dev/shm there: a directory, not the link. */
        if (bd_jail.warm_root && bd_jail.warm_shm && strcmp(links[i][1], "dev/shm") == 0) {
            if (make_dir(links[i][1], 0755, err) != 0)
                return -1;
        } else if (symlink(links[i][0], links[i][1]) != 0) {
            return bd_jail_fail(err, "symlink %s in the jail", links[i][1]);
        }
    }

    /* A fresh /proc of the new PID namespace: only its own processes. */
    if (make_dir("proc", 0555, err) != 0)
        return -1;
    unsigned long pflags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    /* The warm jail's own /proc is whole: a case's user namespace may mount a fresh
     * procfs only where one is fully visible. */
    if ((bd_jail.warm_root || mount("proc", "proc", "proc", pflags, "subset=pid") != 0) &&
        mount("proc", "proc", "proc", pflags, NULL) != 0)
        return bd_jail_fail(err, "mount a fresh /proc in the jail");

    if (make_dir("tmp", 01777, err) != 0 ||
        mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=1777,size=" BD_JAIL_TMP_SIZE ",nr_inodes=" BD_JAIL_TMP_INODES) != 0)
        return bd_jail_fail(err, "mount the jail's private /tmp");
    return 0;
}

/* The case's cwd in the root (relative to the root: before or after the pivot). Its
 * read-only entries come from bd_jail.cwd_fd, or, when `trees` is given, from the detached
 * mounts in it (-1: absent; see bd_jail_case_trees). */
int bd_jail_root_cwd(const int *trees, bd_err *err)
{
    char fdpath[64];
    {
        /* The cwd keeps its host path (no name of its own can collide with a file shown
         * at its host path) but none of its host inodes: it is a directory of the jail's
         * private /tmp tmpfs when it lies under /tmp (so the cwd, /tmp and /dev/shm share
         * one size cap), else a tmpfs of the same caps of its own. Whatever the rubric
         * writes vanishes with the mount namespace: nothing to clean on the host, nothing
         * another host process can open. Only the verified case/ and rubric.py come from
         * the host dir, bound read-only. */
        const char *work = bd_jail.jail_cwd + 1;
        bool in_tmp = strncmp(work, "tmp/", 4) == 0;
        if (make_parents(work, err) != 0 || make_dir(work, 0700, err) != 0)
            return -1;
        if (!in_tmp &&
            mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "mode=0700,size=" BD_JAIL_TMP_SIZE ",nr_inodes=" BD_JAIL_TMP_INODES) != 0)
            return bd_jail_fail(err, "mount the jail's working directory");
        const char *const *ro = bd_jail_cwd_ro;
        for (size_t i = 0; i < sizeof(bd_jail_cwd_ro) / sizeof(bd_jail_cwd_ro[0]); i++) {
            struct stat st;
            char p[PATH_MAX + 16];
            size_t wl = strlen(work), rl = strlen(ro[i]);
            if (wl + 1 + rl >= sizeof(p)) {
                errno = ENAMETOOLONG;
                return bd_jail_fail(err, "the working directory's path is too long");
            }
            memcpy(p, work, wl);
            p[wl] = '/';
            memcpy(p + wl + 1, ro[i], rl + 1);
            if (trees ? trees[i] < 0 || fstat(trees[i], &st) != 0
                      : fstatat(bd_jail.cwd_fd, ro[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                continue;
            if ((S_ISDIR(st.st_mode) ? make_dir(p, 0500, err) : make_file(p, NULL, err)) != 0)
                return -1;
            const unsigned long flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
            if (trees) {
                if (syscall(SYS_move_mount, trees[i], "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) !=
                    0)
                    return bd_jail_fail(err, "bind %s in the jail", p);
                if (remount_to(p, flags, err) != 0)
                    return -1;
                continue;
            }
            snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d/%s", bd_jail.cwd_fd, ro[i]);
            if (bind_to(fdpath, p, flags, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* The files of the command line shown (and the warm jail's staging dir). */
int bd_jail_root_shown(bd_err *err)
{
    char fdpath[64];
    for (int i = 0; i < bd_jail.n_shown; i++) {
        const char *rel = bd_jail.shown[i] + 1;
        snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", bd_jail.shown_fd[i]);
        struct stat st;
        if (make_parents(rel, err) != 0)
            return -1;
        /* The warm jail's staging directory: a directory, writable (the warm server hands
         * each case's tree to the case's uid), never executable. */
        bool dir = bd_jail.warm_root && i == 0;
        if (lstat(rel, &st) != 0 &&
            (dir ? make_dir(rel, 0700, err) : make_file(rel, NULL, err)) != 0)
            return -1;
        if (bind_to(fdpath, rel,
                    dir ? MS_NOSUID | MS_NODEV | MS_NOEXEC : MS_RDONLY | MS_NOSUID | MS_NODEV,
                    err) != 0)
            return -1;
    }
    return 0;
}

/* The host name, then into the new root, read-only. */
int bd_jail_root_pivot(bd_err *err)
{
    if (sethostname(BD_JAIL_HOSTNAME, strlen(BD_JAIL_HOSTNAME)) != 0)
        return bd_jail_fail(err, "set the jail's host name");

    /* Swap roots; the old one is detached whole, so nothing of the host stays reachable. */
    if (syscall(SYS_pivot_root, ".", ".") != 0)
        return bd_jail_fail(err, "pivot_root into the jail");
    if (umount2(".", MNT_DETACH) != 0)
        return bd_jail_fail(err, "detach the host's root");
    if (chdir("/") != 0)
        return bd_jail_fail(err, "enter the jail's root");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) != 0)
        return bd_jail_fail(err, "make the jail's root read-only");
    return 0;
}

int bd_jail_build_root(bd_err *err)
{
    if (bd_jail_root_base(err) != 0 || (bd_jail.cwd_fd >= 0 && bd_jail_root_cwd(NULL, err) != 0) ||
        bd_jail_root_shown(err) != 0 || bd_jail_root_pivot(err) != 0)
        return -1;
    return 0;
}
