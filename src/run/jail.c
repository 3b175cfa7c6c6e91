/*
 * jail.c — the `namespaces` isolation class (see jail.h for the order of the steps): the
 * state of this process's one jail, the supervisor's side (the cwd and the files shown,
 * checked; the maps; handing a case's files to its uid), the program's steps in order,
 * and the warm interpreter's own jail. The root is built in jail_root.c, the Landlock
 * layer and the seccomp filter are jail_filter.c's, the availability probe jail_probe.c's.
 *
 * Everything the program's side does (bd_jail_child) is plain system calls on stack
 * buffers: the same code runs in the availability probe, whose parent may have threads.
 * The jail's root is a small tmpfs mounted over /tmp of the program's private mount
 * namespace; the host paths it shows are bound into it before pivot_root, the case's
 * cwd through a descriptor opened beforehand (so a cwd under the host's /tmp is still
 * reachable after the tmpfs covers it). A root built ahead of its case (the warm server's
 * prepared spare, bd_jail_child_ahead) gets the cwd's read-only entries after the pivot
 * instead, as detached mounts its supervisor opened (open_tree) and it moves in.
 */
#include "jail.h"
#include "jail_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <grp.h>

void bd_jail_set_host_network(bool on)
{
    bd_jail.host_network = on;
}

unsigned long bd_jail_clone_flags(void)
{
    return CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | (bd_jail.host_network ? 0 : CLONE_NEWNET) |
           CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
}

/* ---- supervisor side ------------------------------------------------------------- */

/* True when `path` (absolute) lies under a directory the jail shows anyway. */
static bool under_system_dirs(const char *path)
{
    if (strstr(path, "/../") || strstr(path, "/./"))
        return false;
    for (size_t i = 0; i < sizeof(bd_jail_system_dirs) / sizeof(bd_jail_system_dirs[0]); i++) {
        size_t n = strlen(bd_jail_system_dirs[i]);
        if (path[0] == '/' && strncmp(path + 1, bd_jail_system_dirs[i], n) == 0 &&
            path[1 + n] == '/')
            return true;
    }
    return false;
}

/* False for a working directory that would show, or cover, what the jail builds
 * itself: "/", "/tmp", and anything in the system dirs, /etc, /proc, /dev. */
static bool private_dir(const char *path)
{
    static const char *const own[] = {"etc", "proc", "dev"};
    size_t n = strlen(path);
    if (strstr(path, "/../") || strstr(path, "/./") || strcmp(path, "/") == 0 ||
        (n >= 3 && strcmp(path + n - 3, "/..") == 0) || (n >= 2 && strcmp(path + n - 2, "/.") == 0))
        return false;
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 4 && strncmp(path, "/tmp", 4) == 0)
        return false;
    char probe[PATH_MAX + 2];
    snprintf(probe, sizeof(probe), "%.*s/", (int)n, path);
    if (under_system_dirs(probe))
        return false;
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        size_t k = strlen(own[i]);
        if (strncmp(path + 1, own[i], k) == 0 && (path[1 + k] == '/' || path[1 + k] == '\0'))
            return false;
    }
    return true;
}

/* A directory below /dev/shm (a warm run's staging dir, or a case dir in it:
 * docs/runner.md#the-staging-directory) — never /dev/shm itself, no empty, "." or ".."
 * name on the way. */
static bool shm_dir(const char *path)
{
    if (strncmp(path, "/dev/shm/", 9) != 0)
        return false;
    const char *p = path + 9;
    for (;;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (p[n] == '\0')
            return true;
        p += n + 1;
    }
}

/* Hand the tree below `dirfd` to the jail's host uid: same file system only, symlinks
 * never followed, depth bounded. Used only when benchdesk runs as root. */
static int chown_tree(int dirfd, dev_t dev, int depth, bd_err *err)
{
    if (depth > 64)
        return bd_jail_fail(err, "the case's temp dir is nested too deep to hand to the jail uid");
    int dup_fd = dup(dirfd);
    if (dup_fd < 0)
        return bd_jail_fail(err, "dup the case's temp dir");
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return bd_jail_fail(err, "read the case's temp dir");
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = bd_jail_fail(err, "stat %s in the case's temp dir", de->d_name);
            break;
        }
        if (st.st_dev != dev)
            continue;
        if (fchownat(dirfd, de->d_name, bd_jail.host_uid, bd_jail.host_gid, AT_SYMLINK_NOFOLLOW) !=
            0) {
            rc = bd_jail_fail(err, "chown %s to the jail uid", de->d_name);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                rc = bd_jail_fail(err, "open %s in the case's temp dir", de->d_name);
                break;
            }
            rc = chown_tree(sub, dev, depth + 1, err);
            close(sub);
        }
    }
    closedir(d);
    return rc;
}

/* As root: hand the private directory `cwd` (stat'ed into *st) and its tree to
 * bd_jail.host_uid/bd_jail.host_gid. Only a private directory benchdesk made (root's, 0700) or one
 * already handed over: a tree is chowned, so never a shared or system directory, even if
 * the path checks were wrong. Returns 0 or -1 (err set). */
static int hand_over_dir(const char *cwd, const struct stat *st, bd_err *err)
{
    if ((st->st_uid != 0 && st->st_uid != bd_jail.host_uid) || (st->st_mode & 07777) != 0700) {
        errno = EPERM;
        return bd_jail_fail(err, "not a private working directory (uid %u, mode %o)",
                            (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
    }
    int dfd = open(cwd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat now;
    int rc = -1;
    if (dfd < 0 || fstat(dfd, &now) != 0)
        bd_jail_fail(err, "open the working directory");
    else if (now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
        errno = ESTALE;
        bd_jail_fail(err, "the working directory changed while the jail was prepared");
    } else if (fchown(dfd, bd_jail.host_uid, bd_jail.host_gid) != 0)
        bd_jail_fail(err, "chown the working directory to the jail uid");
    else
        rc = chown_tree(dfd, st->st_dev, 0, err);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

/* As root: hand the stdio pipes among fds[0..n) to bd_jail.host_uid, so the program may reopen
 * /dev/stdout (through /proc/self/fd) as any process can. */
static int hand_over_pipes(const int *fds, int n, bd_err *err)
{
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (fstat(fds[i], &st) == 0 && S_ISFIFO(st.st_mode) &&
            fchown(fds[i], bd_jail.host_uid, bd_jail.host_gid) != 0)
            return bd_jail_fail(err, "hand stdio descriptor %d to the jail uid", i);
    }
    return 0;
}

int bd_jail_hand_over(const char *cwd, const int *fds, int nfds, uid_t uid, bd_err *err)
{
    bd_jail_errno_clear();
    bd_jail.host_uid = uid;
    bd_jail.host_gid = (gid_t)uid;
    struct stat st;
    if (cwd[0] != '/' || !(private_dir(cwd) || shm_dir(cwd))) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail needs a private working directory, not '%.100s'", cwd);
    }
    if (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (errno == 0)
            errno = ENOTDIR;
        return bd_jail_fail(err, "stat the working directory");
    }
    if (hand_over_dir(cwd, &st, err) != 0)
        return -1;
    return hand_over_pipes(fds, nfds, err);
}

void bd_jail_set_case_identity(bool as_root, uid_t uid, const char *shown_tmp)
{
    bd_jail.ident_set = true;
    bd_jail.ident_root = as_root;
    bd_jail.ident_uid = uid;
    bd_jail.ident_tmp = shown_tmp;
}

/* The first steps of a prepare: nothing held, the identity fields, no cwd yet. */
static void prepare_begin(bool probe)
{
    bd_jail_release_all();
    bd_jail_errno_clear();
    bd_jail.probe = probe;
    bd_jail.warm_root = false;
    bd_jail.warm_shm = false;
    bd_jail.as_root = bd_jail.ident_set ? bd_jail.ident_root : geteuid() == 0;
    /* A uid of this case's own (see BD_JAIL_HOST_BASE); the supervisor's pid is unique
     * while the case runs. Inside a warm jail the warm server chose it (see
     * bd_jail_set_case_identity). */
    uid_t own = (uid_t)(BD_JAIL_HOST_BASE + (unsigned)getpid() % BD_JAIL_HOST_RANGE);
    if (bd_jail.ident_set)
        own = bd_jail.ident_uid;
    bd_jail.host_uid = bd_jail.as_root || bd_jail.ident_set ? own : geteuid();
    bd_jail.host_gid = bd_jail.as_root || bd_jail.ident_set ? (gid_t)own : getegid();
    bd_jail.landlock_abi = bd_jail_landlock_abi();
    bd_jail.n_shown = 0;
    bd_jail.cwd_path[0] = '\0';
}

/* The working directory's part of a prepare (see bd_jail_prepare). Returns 0 or -1. */
static int prepare_cwd(const char *cwd, bd_err *err)
{
    size_t n = strlen(cwd);
    bool plain = cwd[0] == '/' && n < sizeof(bd_jail.cwd_path) &&
                 (private_dir(cwd) || (bd_jail.ident_set && shm_dir(cwd)));
    if (plain) {
        memcpy(bd_jail.cwd_path, cwd, n + 1);
        memcpy(bd_jail.jail_cwd, cwd, n + 1);
    }
    /* In a warm jail the case's dir lies in the staging dir (in RAM where it can,
     * docs/runner.md#the-staging-directory); in the case's own jail it appears where a
     * cold start's would: "<staging>/<case dir>" becomes "<temp root>/<case dir>" (same
     * name, same length, same listing). */
    const char *last = strrchr(cwd, '/');
    if (plain && bd_jail.ident_set && bd_jail.ident_tmp && last && last > cwd &&
        snprintf(bd_jail.jail_cwd, sizeof(bd_jail.jail_cwd), "%s%s", bd_jail.ident_tmp, last) >=
            (int)sizeof(bd_jail.jail_cwd))
        plain = false;
    /* Checked where it appears: a cwd that would show, or cover, what the jail builds is
     * refused. */
    if (!plain || !private_dir(bd_jail.jail_cwd)) {
        errno = EINVAL;
        bd_jail.cwd_path[0] = '\0';
        return bd_jail_fail(err, "the jail needs a private working directory, not '%.100s'", cwd);
    }
    struct stat st;
    int ok = stat(cwd, &st) == 0;
    if (!ok || !S_ISDIR(st.st_mode)) {
        if (ok)
            errno = ENOTDIR;
        return bd_jail_fail(err, "stat the working directory");
    }
    bd_jail.cwd_dev = st.st_dev;
    bd_jail.cwd_ino = st.st_ino;
    if (bd_jail.as_root && hand_over_dir(cwd, &st, err) != 0)
        return -1;
    return 0;
}

/* The command line's part of a prepare: the files of argv shown. Returns 0 or -1. */
static int prepare_argv(const char *const *argv, bd_err *err)
{
    /* argv[0], and any other argument naming a file by absolute path (a command SUT's
     * script), is shown read-only at the same path when the system dirs do not hold it. */
    for (size_t i = 0; argv && argv[i]; i++) {
        const char *a = argv[i];
        if (a[0] != '/' || under_system_dirs(a))
            continue;
        size_t n = strlen(a);
        struct stat st;
        int ok = n < PATH_MAX && stat(a, &st) == 0;
        if (!ok || !S_ISREG(st.st_mode)) {
            if (i > 0)
                continue; /* an argument, not a file: nothing to show */
            if (ok)
                errno = EACCES;
            return bd_jail_fail(err, "stat the program to show it in the jail");
        }
        bool dup = false;
        for (int k = 0; k < bd_jail.n_shown; k++)
            dup = dup || strcmp(bd_jail.shown[k], a) == 0;
        if (dup)
            continue;
        if (bd_jail.n_shown == BD_JAIL_MAX_SHOWN) {
            errno = E2BIG;
            return bd_jail_fail(err, "more than %d files of the command line to show in the jail",
                                BD_JAIL_MAX_SHOWN);
        }
        memcpy(bd_jail.shown[bd_jail.n_shown], a, n + 1);
        bd_jail.shown_fd[bd_jail.n_shown++] = -1;
    }
    return 0;
}

/* As root, for a case: the stdio pipes are root's: hand them over too. */
static int prepare_stdio(bd_err *err)
{
    static const int stdio_fds[] = {0, 1, 2};
    if (bd_jail.as_root && !bd_jail.probe)
        return hand_over_pipes(stdio_fds, 3, err);
    return 0;
}

/* The last steps of a prepare: the filter, the sync pipe (and the probe's report pipe). */
static int prepare_end(bd_err *err)
{
    /* The host-network filter differs (no socket rule): built for this program only. */
    if ((!bd_jail.bpf_cached || bd_jail.host_network) && bd_jail_build_filter(err) != 0)
        return -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return bd_jail_fail(err, "create the jail's sync pipe");
    bd_jail.sync_rd = p[0];
    bd_jail.sync_wr = p[1];
    if (bd_jail.probe) {
        if (pipe2(p, O_CLOEXEC) != 0)
            return bd_jail_fail(err, "create the jail's report pipe");
        bd_jail.report_rd = p[0];
        bd_jail.report_wr = p[1];
    }
    bd_jail.ready = true;
    return 0;
}

int bd_jail_prepare(const char *cwd, const char *const *argv, bd_err *err)
{
    prepare_begin(cwd == NULL);
    int rc = (cwd ? prepare_cwd(cwd, err) : 0) != 0 || prepare_argv(argv, err) != 0 ||
                     prepare_stdio(err) != 0 || prepare_end(err) != 0
                 ? -1
                 : 0;
    if (rc != 0)
        bd_jail_release_all();
    return rc;
}

int bd_jail_prepare_ahead(const char *const *argv, bd_err *err)
{
    prepare_begin(false);
    if (prepare_argv(argv, err) != 0 || prepare_end(err) != 0) {
        bd_jail_release_all();
        return -1;
    }
    return 0;
}

int bd_jail_prepare_cwd(const char *cwd, bd_err *err)
{
    if (!bd_jail.ready || bd_jail.probe || bd_jail.cwd_path[0]) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail was not prepared ahead");
    }
    bd_jail_errno_clear();
    if (prepare_cwd(cwd, err) != 0 || prepare_stdio(err) != 0) {
        bd_jail.cwd_path[0] = '\0';
        return -1;
    }
    return 0;
}

void bd_jail_cwd_get(bd_jail_cwd *out)
{
    memset(out, 0, sizeof(*out));
    out->dev = bd_jail.cwd_dev;
    out->ino = bd_jail.cwd_ino;
    memcpy(out->path, bd_jail.cwd_path, sizeof(out->path));
    memcpy(out->jail, bd_jail.jail_cwd, sizeof(out->jail));
}

/* The prepared cwd opened (O_PATH) into *out, checked to be the directory the prepare
 * stat()ed. Returns 0, or -1 (nothing held). */
static int open_cwd_checked(int *out, bd_err *err)
{
    struct stat st;
    int fd = open(bd_jail.cwd_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        bd_jail_close_fd(&fd);
        return bd_jail_fail(err, "open the working directory");
    }
    if (st.st_dev != bd_jail.cwd_dev || st.st_ino != bd_jail.cwd_ino) {
        bd_jail_close_fd(&fd);
        errno = ESTALE;
        return bd_jail_fail(err, "the working directory changed during the jail's setup");
    }
    *out = fd;
    return 0;
}

int bd_jail_case_trees(int trees[2], bd_err *err)
{
    trees[0] = trees[1] = -1;
    /* The root is read-only once built: only a cwd inside the jail's /tmp can be made. */
    if (strncmp(bd_jail.jail_cwd, "/tmp/", 5) != 0 || !bd_jail.cwd_path[0])
        return 1;
    int dfd = -1;
    if (open_cwd_checked(&dfd, err) != 0)
        return -1;
    struct stat st;
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (fstatat(dfd, bd_jail_cwd_ro[i], &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
            continue;
        trees[i] =
            (int)syscall(SYS_open_tree, dfd, bd_jail_cwd_ro[i],
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
        if (trees[i] < 0)
            rc = 1; /* no mount API: the ordinary way */
    }
    close(dfd);
    if (rc != 0)
        for (int i = 0; i < 2; i++)
            bd_jail_close_fd(&trees[i]);
    return rc;
}

void bd_jail_cwd_set(const bd_jail_cwd *in, const int trees[2])
{
    for (int i = 0; i < 2; i++) {
        bd_jail_close_fd(&bd_jail.tree_fd[i]);
        bd_jail.tree_fd[i] = trees[i];
    }
    bd_jail.cwd_dev = in->dev;
    bd_jail.cwd_ino = in->ino;
    memcpy(bd_jail.cwd_path, in->path, sizeof(bd_jail.cwd_path));
    memcpy(bd_jail.jail_cwd, in->jail, sizeof(bd_jail.jail_cwd));
    bd_jail.cwd_path[sizeof(bd_jail.cwd_path) - 1] = '\0';
    bd_jail.jail_cwd[sizeof(bd_jail.jail_cwd) - 1] = '\0';
}

int bd_jail_sync_write_fd(void)
{
    return bd_jail.ready ? bd_jail.sync_wr : -1;
}

void bd_jail_adopt_ahead(int sync_wr)
{
    prepare_begin(false);
    bd_jail.sync_wr = sync_wr;
    bd_jail.ready = true;
}

void bd_jail_forget(void)
{
    bd_jail_release_all();
}

int bd_jail_sync_fd(void)
{
    return bd_jail.sync_rd >= 0 ? bd_jail.sync_rd : bd_jail.sync_wr;
}

static int write_proc(pid_t pid, const char *file, const char *text, bd_err *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return bd_jail_fail(err, "open %s", path);
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int e = errno;
    close(fd);
    if (n != (ssize_t)len) {
        errno = n < 0 ? e : EIO;
        return bd_jail_fail(err, "write %s", path);
    }
    return 0;
}

int bd_jail_parent(pid_t child, bd_err *err)
{
    if (!bd_jail.ready) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail was not prepared");
    }
    bd_jail_close_fd(&bd_jail.sync_rd);
    bd_jail_close_fd(&bd_jail.report_wr);
    bd_jail_close_fd(&bd_jail.cwd_fd);
    bd_jail_close_shown();
    char map[64];
    /* Unprivileged: a gid map needs setgroups denied first. Root keeps setgroups so the
     * child can drop root's supplementary groups. */
    if (!bd_jail.as_root && write_proc(child, "setgroups", "deny", err) != 0)
        return -1;
    snprintf(map, sizeof(map), "%d %u 1\n", BD_JAIL_UID, (unsigned)bd_jail.host_uid);
    if (write_proc(child, "uid_map", map, err) != 0)
        return -1;
    snprintf(map, sizeof(map), "%d %u 1\n", BD_JAIL_UID, (unsigned)bd_jail.host_gid);
    if (write_proc(child, "gid_map", map, err) != 0)
        return -1;
    ssize_t n;
    while ((n = write(bd_jail.sync_wr, "g", 1)) < 0 && errno == EINTR)
        ;
    if (n != 1)
        return bd_jail_fail(err, "release the jailed program");
    /* bd_jail.sync_wr stays open until this process exits: its end tells the child we died. */
    return 0;
}

int bd_jail_child_wait(bd_err *err)
{
    if (!bd_jail.ready) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail was not prepared");
    }
    bd_jail_close_fd(&bd_jail.sync_wr);
    bd_jail_close_fd(&bd_jail.report_rd);
    char go = 0;
    ssize_t n;
    while ((n = read(bd_jail.sync_rd, &go, 1)) < 0 && errno == EINTR)
        ;
    if (n != 1) {
        if (n == 0)
            errno = EPIPE;
        return bd_jail_fail(err, "wait for the supervisor's uid map");
    }
    return 0;
}

/* Program: the files of argv to show, opened (see bd_jail_child_finish). */
static int open_shown(bd_err *err)
{
    for (int i = 0; i < bd_jail.n_shown; i++) {
        bd_jail.shown_fd[i] = open(bd_jail.shown[i], O_PATH | O_CLOEXEC);
        if (bd_jail.shown_fd[i] < 0)
            return bd_jail_fail(err, "open %.100s to show it in the jail", bd_jail.shown[i]);
    }
    return 0;
}

/* Become the jail's user. As root this is the drop to the case's own host uid outside; the
 * capabilities held inside this user namespace stay (until execve, or the warm rubric's
 * own drop). A change of credentials clears the parent-death signal: set again. */
static int become_jail_user(bd_err *err)
{
    if (bd_jail.as_root && setgroups(0, NULL) != 0)
        return bd_jail_fail(err, "drop supplementary groups");
    if (setresgid(BD_JAIL_UID, BD_JAIL_UID, BD_JAIL_UID) != 0)
        return bd_jail_fail(err, "setresgid %d", BD_JAIL_UID);
    if (setresuid(BD_JAIL_UID, BD_JAIL_UID, BD_JAIL_UID) != 0)
        return bd_jail_fail(err, "setresuid %d", BD_JAIL_UID);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        return bd_jail_fail(err, "set the parent-death signal");
    return 0;
}

/* Program: become the jail's user, die with the supervisor, its mounts private. */
static int child_identity(bd_err *err)
{
    if (become_jail_user(err) != 0)
        return -1;
    /* Make sure the supervisor did not die before the parent-death signal was set again
     * (its end of the sync pipe closes). */
    struct pollfd pfd = {bd_jail.sync_rd, POLLIN, 0};
    if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
        errno = ESRCH;
        return bd_jail_fail(err, "the supervisor died during the jail's setup");
    }
    bd_jail_close_fd(&bd_jail.sync_rd);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return bd_jail_fail(err, "make the jail's mounts private");
    return 0;
}

/* Program: into the cwd, no_new_privs, Landlock (scoped: see apply_landlock). */
static int child_lock(bool scoped, bd_err *err)
{
    if (!bd_jail.probe && chdir(bd_jail.jail_cwd) != 0)
        return bd_jail_fail(err, "enter the working directory in the jail");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return bd_jail_fail(err, "set no_new_privs");
    return bd_jail_apply_landlock(scoped, err);
}

int bd_jail_child_ahead(bd_err *err)
{
    if (!bd_jail.ready || bd_jail.sync_rd < 0 || bd_jail.probe || bd_jail.built) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail was not prepared");
    }
    umask(022);
    if (open_shown(err) != 0 || child_identity(err) != 0 || bd_jail_root_base(err) != 0 ||
        bd_jail_root_shown(err) != 0 || bd_jail_root_pivot(err) != 0)
        return -1;
    bd_jail_close_shown();
    bd_jail.built = true;
    return 0;
}

/* The rest of an init prepared ahead, once its case is known: the cwd and its read-only
 * entries (the detached mounts passed in), then child_lock. */
static int child_finish_built(bd_err *err)
{
    int rc = bd_jail_root_cwd(bd_jail.tree_fd, err);
    for (int i = 0; i < 2; i++)
        bd_jail_close_fd(&bd_jail.tree_fd[i]);
    if (rc != 0)
        return -1;
    return child_lock(true, err);
}

int bd_jail_child_finish(bd_err *err)
{
    if (bd_jail.built && bd_jail.cwd_path[0])
        return child_finish_built(err);
    if (!bd_jail.ready || bd_jail.sync_rd < 0 || (!bd_jail.probe && !bd_jail.cwd_path[0])) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail was not prepared");
    }
    umask(022);
    /* Descriptors of the cwd and the program, opened here: a bind source must be a mount
     * of this (new) mount namespace, and before the identity switch the host-side owner
     * may still walk to them. */
    if (bd_jail.cwd_path[0] && open_cwd_checked(&bd_jail.cwd_fd, err) != 0)
        return -1;
    if (open_shown(err) != 0 || child_identity(err) != 0 || bd_jail_build_root(err) != 0)
        return -1;
    bd_jail_close_fd(&bd_jail.cwd_fd);
    bd_jail_close_shown();
    return child_lock(true, err);
}

int bd_jail_init_finish(bd_err *err)
{
    if (!bd_jail.built || !bd_jail.cwd_path[0]) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail was not prepared");
    }
    int rc = bd_jail_root_cwd(bd_jail.tree_fd, err);
    for (int i = 0; i < 2; i++)
        bd_jail_close_fd(&bd_jail.tree_fd[i]);
    return rc;
}

int bd_jail_rubric_enter(dev_t root_dev, ino_t root_ino, bd_err *err)
{
    if (!bd_jail.cwd_path[0] || !bd_jail.jail_cwd[0]) {
        errno = EINVAL;
        return bd_jail_fail(err, "the jail was not prepared");
    }
    if (become_jail_user(err) != 0)
        return -1;
    /* Its parent, the init, may have died before the parent-death signal was set again. */
    if (getppid() != 1) {
        errno = ESRCH;
        return bd_jail_fail(err, "the init died during the jail's setup");
    }
    /* The init's pivot_root moved this process's root too (it was the old root): make
     * sure it did, so that nothing below runs with the warm jail's root. */
    struct stat st;
    if (stat("/", &st) != 0)
        return bd_jail_fail(err, "stat the jail's root");
    if (st.st_dev != root_dev || st.st_ino != root_ino) {
        errno = ESTALE;
        return bd_jail_fail(err, "the rubric's root is not the jail's");
    }
    return child_lock(false, err);
}

/* capget/capset's header and data (version 3: two 32-bit words per set). */
typedef struct cap_hdr {
    uint32_t version;
    int pid;
} cap_hdr;
typedef struct cap_data {
    uint32_t effective, permitted, inheritable;
} cap_data;
#define CAP_V3 0x20080522u

int bd_jail_drop_caps(void)
{
    cap_hdr hdr = {CAP_V3, 0};
    cap_data data[2];
    memset(data, 0, sizeof(data));
    return (int)syscall(SYS_capset, &hdr, data);
}

int bd_jail_keep_caps_across_exec(void)
{
    cap_hdr hdr = {CAP_V3, 0};
    cap_data data[2];
    if (syscall(SYS_capget, &hdr, data) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        data[i].inheritable = data[i].permitted;
    if (syscall(SYS_capset, &hdr, data) != 0)
        return -1;
    /* Every capability it holds (only the kernel's own are ever permitted). */
    for (unsigned long cap = 0; cap < 64; cap++)
        if ((data[cap / 32].permitted & (1u << (cap % 32))) &&
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0)
            return -1;
    return 0;
}

int bd_jail_adopt_init(int sync_rd, const char *const *argv, bd_err *err)
{
    prepare_begin(false);
    if (prepare_argv(argv, err) != 0) {
        bd_jail_release_all();
        return -1;
    }
    bd_jail.sync_rd = sync_rd;
    bd_jail.ready = true;
    return 0;
}

int bd_jail_child(bd_err *err)
{
    if (bd_jail_child_wait(err) != 0)
        return -1;
    return bd_jail_child_finish(err);
}

/* ---- the warm interpreter's own jail ------------------------------------------------ */

int bd_jail_warm_prepare(const char *staging, uid_t map_base, unsigned map_count, bd_err *err)
{
    bd_jail_release_all();
    bd_jail_errno_clear();
    bd_jail.probe = false;
    bd_jail.warm_root = true;
    bd_jail.as_root = geteuid() == 0;
    bd_jail.warm_map_base = map_base;
    bd_jail.warm_map_count = map_count;
    bd_jail.cwd_path[0] = '\0';
    bd_jail.n_shown = 0;
    size_t n = strlen(staging);
    struct stat st;
    /* Under /tmp, or one level below /dev/shm (a directory of its own in the warm root). */
    bd_jail.warm_shm = shm_dir(staging) && !strchr(staging + 9, '/');
    if (staging[0] != '/' || n >= PATH_MAX ||
        !(bd_jail.warm_shm || (private_dir(staging) && strncmp(staging, "/tmp/", 5) == 0))) {
        errno = EINVAL;
        return bd_jail_fail(
            err,
            "the warm jail needs a private staging directory under /tmp or /dev/shm, "
            "not '%.100s'",
            staging);
    }
    if (stat(staging, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (errno == 0)
            errno = ENOTDIR;
        return bd_jail_fail(err, "stat the warm jail's staging directory");
    }
    memcpy(bd_jail.shown[0], staging, n + 1);
    bd_jail.shown_fd[0] = -1;
    bd_jail.n_shown = 1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return bd_jail_fail(err, "create the jail's sync pipe");
    bd_jail.sync_rd = p[0];
    bd_jail.sync_wr = p[1];
    bd_jail.ready = true;
    return 0;
}

int bd_jail_warm_parent(pid_t child, bd_err *err)
{
    if (!bd_jail.ready || !bd_jail.warm_root) {
        errno = EINVAL;
        return bd_jail_fail(err, "the warm jail was not prepared");
    }
    bd_jail_close_fd(&bd_jail.sync_rd);
    bd_jail_close_shown();
    char map[64];
    /* As root the warm jail keeps setgroups: its supervisors map each case's own gid. */
    if (!bd_jail.as_root && write_proc(child, "setgroups", "deny", err) != 0)
        return -1;
    snprintf(map, sizeof(map), "0 %u %u\n", (unsigned)bd_jail.warm_map_base,
             bd_jail.warm_map_count);
    if (write_proc(child, "uid_map", map, err) != 0 || write_proc(child, "gid_map", map, err) != 0)
        return -1;
    ssize_t w;
    while ((w = write(bd_jail.sync_wr, "g", 1)) < 0 && errno == EINTR)
        ;
    if (w != 1)
        return bd_jail_fail(err, "release the warm jail");
    return 0;
}

int bd_jail_warm_child(bd_err *err)
{
    if (!bd_jail.ready || !bd_jail.warm_root) {
        errno = EINVAL;
        return bd_jail_fail(err, "the warm jail was not prepared");
    }
    bd_jail_close_fd(&bd_jail.sync_wr);
    char go = 0;
    ssize_t n;
    while ((n = read(bd_jail.sync_rd, &go, 1)) < 0 && errno == EINTR)
        ;
    bd_jail_close_fd(&bd_jail.sync_rd);
    if (n != 1) {
        if (n == 0)
            errno = EPIPE;
        return bd_jail_fail(err, "wait for the warm jail's uid map");
    }
    umask(022);
    bd_jail.shown_fd[0] = open(bd_jail.shown[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (bd_jail.shown_fd[0] < 0)
        return bd_jail_fail(err, "open the warm jail's staging directory");
    /* uid 0 of the warm jail's own user namespace (an unprivileged host uid): it keeps
     * the capabilities it needs there to give each case its own namespaces and uid. */
    if (bd_jail.as_root && setgroups(0, NULL) != 0)
        return bd_jail_fail(err, "drop supplementary groups");
    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0)
        return bd_jail_fail(err, "become uid 0 of the warm jail");
    /* The identity switch made the process non-dumpable, which would make its children's
     * /proc files (uid_map) the host root's: each supervisor could not map its case. No
     * other host process runs as this uid. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
        return bd_jail_fail(err, "make the warm interpreter's /proc its own");
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        return bd_jail_fail(err, "set the parent-death signal");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return bd_jail_fail(err, "make the warm jail's mounts private");
    if (bd_jail_build_root(err) != 0)
        return -1;
    bd_jail_close_shown();
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return bd_jail_fail(err, "set no_new_privs");
    /* Landlock is left to each case: a Landlock domain may not mount, and every case
     * builds its own root inside this one. */
    return 0;
}
