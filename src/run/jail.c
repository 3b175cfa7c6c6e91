/*
 * jail.c — the `namespaces` isolation class (see jail.h for the order of the steps).
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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grp.h>
#include <seccomp.h>

/* ---- Landlock, declared here so older kernel headers still build ------------------- */

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule       445
#define SYS_landlock_restrict_self  446
#endif

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH      1
#define LL_FS_EXECUTE             (1ull << 0)
#define LL_FS_WRITE_FILE          (1ull << 1)
#define LL_FS_READ_FILE           (1ull << 2)
#define LL_FS_READ_DIR            (1ull << 3)
#define LL_FS_MAKE_CHAR           (1ull << 6)
#define LL_FS_MAKE_BLOCK          (1ull << 11)
#define LL_FS_ABI1                ((1ull << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER               (1ull << 13)       /* ABI 2 */
#define LL_FS_TRUNCATE            (1ull << 14)       /* ABI 3 */
#define LL_FS_IOCTL_DEV           (1ull << 15)       /* ABI 5 */
#define LL_NET_BIND_TCP           (1ull << 0)        /* ABI 4 */
#define LL_NET_CONNECT_TCP        (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX    (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL           (1ull << 1)

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

/* ---- the mount API (open_tree, move_mount), for older headers ----------------------- */

#ifndef SYS_open_tree
#define SYS_open_tree  428
#define SYS_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* ---- state of this process's one jail --------------------------------------------- */

static struct {
    bool ready;     /* bd_jail_prepare succeeded */
    bool probe;     /* availability probe: no cwd, report pipe */
    bool as_root;   /* benchdesk's effective uid is 0 */
    uid_t host_uid; /* what BD_JAIL_UID maps to */
    gid_t host_gid;
    int sync_rd, sync_wr;     /* supervisor -> program: "maps written" */
    int report_rd, report_wr; /* probe child -> probe parent: why it failed */
    int cwd_fd;               /* O_PATH of the program's cwd (in its mount namespace), or -1 */
    int shown_fd[BD_JAIL_MAX_SHOWN]; /* O_PATH of each file of argv shown, or -1 */
    dev_t cwd_dev;                   /* what the supervisor checked, so the child opens the same */
    ino_t cwd_ino;
    char cwd_path[PATH_MAX];
    char jail_cwd[PATH_MAX]; /* where the cwd appears in the jail (see bd_jail_prepare) */
    char shown[BD_JAIL_MAX_SHOWN][PATH_MAX]; /* argv's files outside the system dirs */
    int n_shown;
    int landlock_abi;
    struct sock_filter bpf[2048]; /* the compiled seccomp filter */
    unsigned short bpf_len;
    bool bpf_cached;   /* compiled once by bd_jail_server_init: kept across prepares */
    bool host_network; /* record --unsafe-network: see bd_jail_set_host_network */
    bool warm_root;    /* building the warm interpreter's own jail (bd_jail_warm_prepare) */
    bool ident_set;    /* bd_jail_set_case_identity: as_root and the uid below are given */
    bool ident_root;
    uid_t ident_uid;
    const char *ident_tmp; /* the directory a case's cwd appears in (the run's temp root) */
    bool built;            /* bd_jail_child_ahead built the root: the cwd comes with the case */
    int tree_fd[2];        /* built: the detached mounts of the cwd's case/ and rubric.py, or -1 */
    uid_t warm_map_base;   /* warm root: what uid/gid 0 of the warm jail maps to */
    unsigned warm_map_count;
    bool warm_shm; /* warm root: the staging dir lies in /dev/shm (a directory there) */
} J = {.sync_rd = -1,
       .sync_wr = -1,
       .report_rd = -1,
       .report_wr = -1,
       .cwd_fd = -1,
       .tree_fd = {-1, -1}};

static int last_errno;

int bd_jail_errno(void)
{
    return last_errno;
}

/* Record errno and fill err with "what" (no strerror: the caller pairs it with errno). */
static int fail(bd_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(bd_err *err, const char *fmt, ...)
{
    int e = errno;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    last_errno = e;
    bd_err_set(err, BD_E_ISOLATION_UNAVAILABLE, NULL, 0, 0, "%s", what);
    errno = e;
    return -1;
}

static int build_filter(bd_err *err);

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void bd_jail_set_host_network(bool on)
{
    J.host_network = on;
}

unsigned long bd_jail_clone_flags(void)
{
    return CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | (J.host_network ? 0 : CLONE_NEWNET) |
           CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
}

int bd_jail_landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}

/* ---- supervisor side ------------------------------------------------------------- */

/* Directories of the host shown read-only (or re-created as the same symlink). */
static const char *const system_dirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};

/* The two entries of the case's dir shown in its jail, read-only. */
static const char *const cwd_ro[] = {"case", "rubric.py"};

/* True when `path` (absolute) lies under a directory the jail shows anyway. */
static bool under_system_dirs(const char *path)
{
    if (strstr(path, "/../") || strstr(path, "/./"))
        return false;
    for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
        size_t n = strlen(system_dirs[i]);
        if (path[0] == '/' && strncmp(path + 1, system_dirs[i], n) == 0 && path[1 + n] == '/')
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
        return fail(err, "the case's temp dir is nested too deep to hand to the jail uid");
    int dup_fd = dup(dirfd);
    if (dup_fd < 0)
        return fail(err, "dup the case's temp dir");
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return fail(err, "read the case's temp dir");
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = fail(err, "stat %s in the case's temp dir", de->d_name);
            break;
        }
        if (st.st_dev != dev)
            continue;
        if (fchownat(dirfd, de->d_name, J.host_uid, J.host_gid, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = fail(err, "chown %s to the jail uid", de->d_name);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                rc = fail(err, "open %s in the case's temp dir", de->d_name);
                break;
            }
            rc = chown_tree(sub, dev, depth + 1, err);
            close(sub);
        }
    }
    closedir(d);
    return rc;
}

static void close_shown(void)
{
    for (int i = 0; i < J.n_shown; i++)
        close_fd(&J.shown_fd[i]);
}

static void release_all(void)
{
    close_fd(&J.sync_rd);
    close_fd(&J.sync_wr);
    close_fd(&J.report_rd);
    close_fd(&J.report_wr);
    close_fd(&J.cwd_fd);
    close_shown();
    close_fd(&J.tree_fd[0]);
    close_fd(&J.tree_fd[1]);
    J.ready = false;
    J.built = false;
}

/* As root: hand the private directory `cwd` (stat'ed into *st) and its tree to
 * J.host_uid/J.host_gid. Only a private directory benchdesk made (root's, 0700) or one
 * already handed over: a tree is chowned, so never a shared or system directory, even if
 * the path checks were wrong. Returns 0 or -1 (err set). */
static int hand_over_dir(const char *cwd, const struct stat *st, bd_err *err)
{
    if ((st->st_uid != 0 && st->st_uid != J.host_uid) || (st->st_mode & 07777) != 0700) {
        errno = EPERM;
        return fail(err, "not a private working directory (uid %u, mode %o)", (unsigned)st->st_uid,
                    (unsigned)(st->st_mode & 07777));
    }
    int dfd = open(cwd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat now;
    int rc = -1;
    if (dfd < 0 || fstat(dfd, &now) != 0)
        fail(err, "open the working directory");
    else if (now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
        errno = ESTALE;
        fail(err, "the working directory changed while the jail was prepared");
    } else if (fchown(dfd, J.host_uid, J.host_gid) != 0)
        fail(err, "chown the working directory to the jail uid");
    else
        rc = chown_tree(dfd, st->st_dev, 0, err);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

/* As root: hand the stdio pipes among fds[0..n) to J.host_uid, so the program may reopen
 * /dev/stdout (through /proc/self/fd) as any process can. */
static int hand_over_pipes(const int *fds, int n, bd_err *err)
{
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (fstat(fds[i], &st) == 0 && S_ISFIFO(st.st_mode) &&
            fchown(fds[i], J.host_uid, J.host_gid) != 0)
            return fail(err, "hand stdio descriptor %d to the jail uid", i);
    }
    return 0;
}

int bd_jail_hand_over(const char *cwd, const int *fds, int nfds, uid_t uid, bd_err *err)
{
    last_errno = 0;
    J.host_uid = uid;
    J.host_gid = (gid_t)uid;
    struct stat st;
    if (cwd[0] != '/' || !(private_dir(cwd) || shm_dir(cwd))) {
        errno = EINVAL;
        return fail(err, "the jail needs a private working directory, not '%.100s'", cwd);
    }
    if (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (errno == 0)
            errno = ENOTDIR;
        return fail(err, "stat the working directory");
    }
    if (hand_over_dir(cwd, &st, err) != 0)
        return -1;
    return hand_over_pipes(fds, nfds, err);
}

void bd_jail_set_case_identity(bool as_root, uid_t uid, const char *shown_tmp)
{
    J.ident_set = true;
    J.ident_root = as_root;
    J.ident_uid = uid;
    J.ident_tmp = shown_tmp;
}

/* The first steps of a prepare: nothing held, the identity fields, no cwd yet. */
static void prepare_begin(bool probe)
{
    release_all();
    last_errno = 0;
    J.probe = probe;
    J.warm_root = false;
    J.warm_shm = false;
    J.as_root = J.ident_set ? J.ident_root : geteuid() == 0;
    /* A uid of this case's own (see BD_JAIL_HOST_BASE); the supervisor's pid is unique
     * while the case runs. Inside a warm jail the warm server chose it (see
     * bd_jail_set_case_identity). */
    uid_t own = (uid_t)(BD_JAIL_HOST_BASE + (unsigned)getpid() % BD_JAIL_HOST_RANGE);
    if (J.ident_set)
        own = J.ident_uid;
    J.host_uid = J.as_root || J.ident_set ? own : geteuid();
    J.host_gid = J.as_root || J.ident_set ? (gid_t)own : getegid();
    J.landlock_abi = bd_jail_landlock_abi();
    J.n_shown = 0;
    J.cwd_path[0] = '\0';
}

/* The working directory's part of a prepare (see bd_jail_prepare). Returns 0 or -1. */
static int prepare_cwd(const char *cwd, bd_err *err)
{
    size_t n = strlen(cwd);
    bool plain = cwd[0] == '/' && n < sizeof(J.cwd_path) &&
                 (private_dir(cwd) || (J.ident_set && shm_dir(cwd)));
    if (plain) {
        memcpy(J.cwd_path, cwd, n + 1);
        memcpy(J.jail_cwd, cwd, n + 1);
    }
    /* In a warm jail the case's dir lies in the staging dir (in RAM where it can,
     * docs/runner.md#the-staging-directory); in the case's own jail it appears where a
     * cold start's would: "<staging>/<case dir>" becomes "<temp root>/<case dir>" (same
     * name, same length, same listing). */
    const char *last = strrchr(cwd, '/');
    if (plain && J.ident_set && J.ident_tmp && last && last > cwd &&
        snprintf(J.jail_cwd, sizeof(J.jail_cwd), "%s%s", J.ident_tmp, last) >=
            (int)sizeof(J.jail_cwd))
        plain = false;
    /* Checked where it appears: a cwd that would show, or cover, what the jail builds is
     * refused. */
    if (!plain || !private_dir(J.jail_cwd)) {
        errno = EINVAL;
        J.cwd_path[0] = '\0';
        return fail(err, "the jail needs a private working directory, not '%.100s'", cwd);
    }
    struct stat st;
    int ok = stat(cwd, &st) == 0;
    if (!ok || !S_ISDIR(st.st_mode)) {
        if (ok)
            errno = ENOTDIR;
        return fail(err, "stat the working directory");
    }
    J.cwd_dev = st.st_dev;
    J.cwd_ino = st.st_ino;
    if (J.as_root && hand_over_dir(cwd, &st, err) != 0)
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
            return fail(err, "stat the program to show it in the jail");
        }
        bool dup = false;
        for (int k = 0; k < J.n_shown; k++)
            dup = dup || strcmp(J.shown[k], a) == 0;
        if (dup)
            continue;
        if (J.n_shown == BD_JAIL_MAX_SHOWN) {
            errno = E2BIG;
            return fail(err, "more than %d files of the command line to show in the jail",
                        BD_JAIL_MAX_SHOWN);
        }
        memcpy(J.shown[J.n_shown], a, n + 1);
        J.shown_fd[J.n_shown++] = -1;
    }
    return 0;
}

/* As root, for a case: the stdio pipes are root's: hand them over too. */
static int prepare_stdio(bd_err *err)
{
    static const int stdio_fds[] = {0, 1, 2};
    if (J.as_root && !J.probe)
        return hand_over_pipes(stdio_fds, 3, err);
    return 0;
}

/* The last steps of a prepare: the filter, the sync pipe (and the probe's report pipe). */
static int prepare_end(bd_err *err)
{
    /* The host-network filter differs (no socket rule): built for this program only. */
    if ((!J.bpf_cached || J.host_network) && build_filter(err) != 0)
        return -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return fail(err, "create the jail's sync pipe");
    J.sync_rd = p[0];
    J.sync_wr = p[1];
    if (J.probe) {
        if (pipe2(p, O_CLOEXEC) != 0)
            return fail(err, "create the jail's report pipe");
        J.report_rd = p[0];
        J.report_wr = p[1];
    }
    J.ready = true;
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
        release_all();
    return rc;
}

int bd_jail_prepare_ahead(const char *const *argv, bd_err *err)
{
    prepare_begin(false);
    if (prepare_argv(argv, err) != 0 || prepare_end(err) != 0) {
        release_all();
        return -1;
    }
    return 0;
}

int bd_jail_prepare_cwd(const char *cwd, bd_err *err)
{
    if (!J.ready || J.probe || J.cwd_path[0]) {
        errno = EINVAL;
        return fail(err, "the jail was not prepared ahead");
    }
    last_errno = 0;
    if (prepare_cwd(cwd, err) != 0 || prepare_stdio(err) != 0) {
        J.cwd_path[0] = '\0';
        return -1;
    }
    return 0;
}

void bd_jail_cwd_get(bd_jail_cwd *out)
{
    memset(out, 0, sizeof(*out));
    out->dev = J.cwd_dev;
    out->ino = J.cwd_ino;
    memcpy(out->path, J.cwd_path, sizeof(out->path));
    memcpy(out->jail, J.jail_cwd, sizeof(out->jail));
}

/* The prepared cwd opened (O_PATH) into *out, checked to be the directory the prepare
 * stat()ed. Returns 0, or -1 (nothing held). */
static int open_cwd_checked(int *out, bd_err *err)
{
    struct stat st;
    int fd = open(J.cwd_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        close_fd(&fd);
        return fail(err, "open the working directory");
    }
    if (st.st_dev != J.cwd_dev || st.st_ino != J.cwd_ino) {
        close_fd(&fd);
        errno = ESTALE;
        return fail(err, "the working directory changed during the jail's setup");
    }
    *out = fd;
    return 0;
}

int bd_jail_case_trees(int trees[2], bd_err *err)
{
    trees[0] = trees[1] = -1;
    /* The root is read-only once built: only a cwd inside the jail's /tmp can be made. */
    if (strncmp(J.jail_cwd, "/tmp/", 5) != 0 || !J.cwd_path[0])
        return 1;
    int dfd = -1;
    if (open_cwd_checked(&dfd, err) != 0)
        return -1;
    struct stat st;
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (fstatat(dfd, cwd_ro[i], &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
            continue;
        trees[i] =
            (int)syscall(SYS_open_tree, dfd, cwd_ro[i],
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
        if (trees[i] < 0)
            rc = 1; /* no mount API: the ordinary way */
    }
    close(dfd);
    if (rc != 0)
        for (int i = 0; i < 2; i++)
            close_fd(&trees[i]);
    return rc;
}

void bd_jail_cwd_set(const bd_jail_cwd *in, const int trees[2])
{
    for (int i = 0; i < 2; i++) {
        close_fd(&J.tree_fd[i]);
        J.tree_fd[i] = trees[i];
    }
    J.cwd_dev = in->dev;
    J.cwd_ino = in->ino;
    memcpy(J.cwd_path, in->path, sizeof(J.cwd_path));
    memcpy(J.jail_cwd, in->jail, sizeof(J.jail_cwd));
    J.cwd_path[sizeof(J.cwd_path) - 1] = '\0';
    J.jail_cwd[sizeof(J.jail_cwd) - 1] = '\0';
}

int bd_jail_sync_write_fd(void)
{
    return J.ready ? J.sync_wr : -1;
}

void bd_jail_adopt_ahead(int sync_wr)
{
    prepare_begin(false);
    J.sync_wr = sync_wr;
    J.ready = true;
}

void bd_jail_forget(void)
{
    release_all();
}

int bd_jail_sync_fd(void)
{
    return J.sync_rd >= 0 ? J.sync_rd : J.sync_wr;
}

static int write_proc(pid_t pid, const char *file, const char *text, bd_err *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, "open %s", path);
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int e = errno;
    close(fd);
    if (n != (ssize_t)len) {
        errno = n < 0 ? e : EIO;
        return fail(err, "write %s", path);
    }
    return 0;
}

int bd_jail_parent(pid_t child, bd_err *err)
{
    if (!J.ready) {
        errno = EINVAL;
        return fail(err, "the jail was not prepared");
    }
    close_fd(&J.sync_rd);
    close_fd(&J.report_wr);
    close_fd(&J.cwd_fd);
    close_shown();
    char map[64];
    /* Unprivileged: a gid map needs setgroups denied first. Root keeps setgroups so the
     * child can drop root's supplementary groups. */
    if (!J.as_root && write_proc(child, "setgroups", "deny", err) != 0)
        return -1;
    snprintf(map, sizeof(map), "%d %u 1\n", BD_JAIL_UID, (unsigned)J.host_uid);
    if (write_proc(child, "uid_map", map, err) != 0)
        return -1;
    snprintf(map, sizeof(map), "%d %u 1\n", BD_JAIL_UID, (unsigned)J.host_gid);
    if (write_proc(child, "gid_map", map, err) != 0)
        return -1;
    ssize_t n;
    while ((n = write(J.sync_wr, "g", 1)) < 0 && errno == EINTR)
        ;
    if (n != 1)
        return fail(err, "release the jailed program");
    /* J.sync_wr stays open until this process exits: its end tells the child we died. */
    return 0;
}

/* ---- program side: building the root ------------------------------------------------ */

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
        return fail(err, "remount %s in the jail", dst);
    return 0;
}

static int bind_to(const char *src, const char *dst, unsigned long flags, bd_err *err)
{
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
        return fail(err, "bind %s in the jail", dst);
    return remount_to(dst, flags, err);
}

static int make_file(const char *path, const char *text, bd_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return fail(err, "create %s in the jail", path);
    size_t len = text ? strlen(text) : 0;
    ssize_t n = len ? write(fd, text, len) : 0;
    int e = errno;
    close(fd);
    if (n != (ssize_t)len) {
        errno = n < 0 ? e : EIO;
        return fail(err, "write %s in the jail", path);
    }
    return 0;
}

static int make_dir(const char *path, mode_t mode, bd_err *err)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return fail(err, "mkdir %s in the jail", path);
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
        return fail(err, "stat %s", host);
    }
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(host, target, sizeof(target) - 1);
        if (n < 0)
            return fail(err, "readlink %s", host);
        target[n] = '\0';
        if (symlink(target, name) != 0)
            return fail(err, "symlink %s in the jail", name);
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
        return fail(err, "the program's path is too long for the jail");
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
static int root_base(bd_err *err)
{
    /* The new root: a small tmpfs over /tmp of this (private) mount namespace. */
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=1m,nr_inodes=1024") != 0)
        return fail(err, "mount the jail's root tmpfs");
    if (chdir("/tmp") != 0)
        return fail(err, "enter the jail's root");

    for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
        if (show_host(system_dirs[i], i == 0, err) != 0)
            return -1;

    if (make_dir("etc", 0755, err) != 0 || make_file("etc/passwd", passwd_text, err) != 0 ||
        make_file("etc/group", group_text, err) != 0 ||
        make_file("etc/nsswitch.conf", J.host_network ? nsswitch_net_text : nsswitch_text, err) !=
            0 ||
        show_host("etc/ld.so.cache", false, err) != 0 ||
        show_host("etc/localtime", false, err) != 0 ||
        show_host("etc/alternatives", false, err) != 0)
        return -1;
    if (J.host_network &&
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
            return fail(err, "bind %s in the jail", in);
    }
    static const char *const links[][2] = {{"/proc/self/fd", "dev/fd"},
                                           {"/proc/self/fd/0", "dev/stdin"},
                                           {"/proc/self/fd/1", "dev/stdout"},
                                           {"/proc/self/fd/2", "dev/stderr"},
                                           {"/tmp", "dev/shm"}};
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        /* The warm root shows a staging dir in /dev/shm there: a directory, not the link. */
        if (J.warm_root && J.warm_shm && strcmp(links[i][1], "dev/shm") == 0) {
            if (make_dir(links[i][1], 0755, err) != 0)
                return -1;
        } else if (symlink(links[i][0], links[i][1]) != 0) {
            return fail(err, "symlink %s in the jail", links[i][1]);
        }
    }

    /* A fresh /proc of the new PID namespace: only its own processes. */
    if (make_dir("proc", 0555, err) != 0)
        return -1;
    unsigned long pflags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    /* The warm jail's own /proc is whole: a case's user namespace may mount a fresh
     * procfs only where one is fully visible. */
    if ((J.warm_root || mount("proc", "proc", "proc", pflags, "subset=pid") != 0) &&
        mount("proc", "proc", "proc", pflags, NULL) != 0)
        return fail(err, "mount a fresh /proc in the jail");

    if (make_dir("tmp", 01777, err) != 0 ||
        mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=1777,size=" BD_JAIL_TMP_SIZE ",nr_inodes=" BD_JAIL_TMP_INODES) != 0)
        return fail(err, "mount the jail's private /tmp");
    return 0;
}

/* The case's cwd in the root (relative to the root: before or after the pivot). Its
 * read-only entries come from J.cwd_fd, or, when `trees` is given, from the detached
 * mounts in it (-1: absent; see bd_jail_case_trees). */
static int root_cwd(const int *trees, bd_err *err)
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
        const char *work = J.jail_cwd + 1;
        bool in_tmp = strncmp(work, "tmp/", 4) == 0;
        if (make_parents(work, err) != 0 || make_dir(work, 0700, err) != 0)
            return -1;
        if (!in_tmp &&
            mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "mode=0700,size=" BD_JAIL_TMP_SIZE ",nr_inodes=" BD_JAIL_TMP_INODES) != 0)
            return fail(err, "mount the jail's working directory");
        const char *const *ro = cwd_ro;
        for (size_t i = 0; i < sizeof(cwd_ro) / sizeof(cwd_ro[0]); i++) {
            struct stat st;
            char p[PATH_MAX + 16];
            size_t wl = strlen(work), rl = strlen(ro[i]);
            if (wl + 1 + rl >= sizeof(p)) {
                errno = ENAMETOOLONG;
                return fail(err, "the working directory's path is too long");
            }
            memcpy(p, work, wl);
            p[wl] = '/';
            memcpy(p + wl + 1, ro[i], rl + 1);
            if (trees ? trees[i] < 0 || fstat(trees[i], &st) != 0
                      : fstatat(J.cwd_fd, ro[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                continue;
            if ((S_ISDIR(st.st_mode) ? make_dir(p, 0500, err) : make_file(p, NULL, err)) != 0)
                return -1;
            const unsigned long flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
            if (trees) {
                if (syscall(SYS_move_mount, trees[i], "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) !=
                    0)
                    return fail(err, "bind %s in the jail", p);
                if (remount_to(p, flags, err) != 0)
                    return -1;
                continue;
            }
            snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d/%s", J.cwd_fd, ro[i]);
            if (bind_to(fdpath, p, flags, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* The files of the command line shown (and the warm jail's staging dir). */
static int root_shown(bd_err *err)
{
    char fdpath[64];
    for (int i = 0; i < J.n_shown; i++) {
        const char *rel = J.shown[i] + 1;
        snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", J.shown_fd[i]);
        struct stat st;
        if (make_parents(rel, err) != 0)
            return -1;
        /* The warm jail's staging directory: a directory, writable (the warm server hands
         * each case's tree to the case's uid), never executable. */
        bool dir = J.warm_root && i == 0;
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
static int root_pivot(bd_err *err)
{
    if (sethostname(BD_JAIL_HOSTNAME, strlen(BD_JAIL_HOSTNAME)) != 0)
        return fail(err, "set the jail's host name");

    /* Swap roots; the old one is detached whole, so nothing of the host stays reachable. */
    if (syscall(SYS_pivot_root, ".", ".") != 0)
        return fail(err, "pivot_root into the jail");
    if (umount2(".", MNT_DETACH) != 0)
        return fail(err, "detach the host's root");
    if (chdir("/") != 0)
        return fail(err, "enter the jail's root");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) != 0)
        return fail(err, "make the jail's root read-only");
    return 0;
}

static int build_root(bd_err *err)
{
    if (root_base(err) != 0 || (J.cwd_fd >= 0 && root_cwd(NULL, err) != 0) ||
        root_shown(err) != 0 || root_pivot(err) != 0)
        return -1;
    return 0;
}

static int ll_rule(int ruleset, const char *path, uint64_t access, bd_err *err)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return fail(err, "open %s for Landlock", path);
    struct ll_path_beneath_attr pb = {access, fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(fd);
    if (rc != 0) {
        errno = e;
        return fail(err, "add the Landlock rule for %s", path);
    }
    return 0;
}

/* Inside the new root: read and execute everywhere; write only the cwd, /tmp and the
 * /dev nodes; no TCP; no abstract unix sockets or signals beyond the jail (ABI 6: with
 * `scoped`, else the layer the warm init made for it and itself, bd_jail_scope_self). */
static int apply_landlock(bool scoped, bd_err *err)
{
    int abi = J.landlock_abi;
    if (abi <= 0)
        return 0;
    uint64_t fs = LL_FS_ABI1;
    if (abi >= 2)
        fs |= LL_FS_REFER;
    if (abi >= 3)
        fs |= LL_FS_TRUNCATE;
    if (abi >= 5)
        fs |= LL_FS_IOCTL_DEV;
    struct ll_ruleset_attr attr = {fs, 0, 0};
    size_t size = sizeof(uint64_t);
    if (abi >= 4) {
        attr.handled_access_net = J.host_network ? 0 : LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
        size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6 && scoped) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
        size = sizeof(attr);
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rs < 0)
        return fail(err, "create the Landlock ruleset (ABI %d)", abi);
    uint64_t rx = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
    uint64_t rw = fs & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
    uint64_t dev = LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_WRITE_FILE;
    if (abi >= 3)
        dev |= LL_FS_TRUNCATE;
    if (abi >= 5)
        dev |= LL_FS_IOCTL_DEV;
    int rc = -1;
    if (ll_rule(rs, "/", rx, err) != 0 || ll_rule(rs, "/dev", dev, err) != 0 ||
        ll_rule(rs, "/tmp", rw, err) != 0 || (!J.probe && ll_rule(rs, J.jail_cwd, rw, err) != 0))
        goto out;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        fail(err, "set no_new_privs");
        goto out;
    }
    if (syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
        fail(err, "apply the Landlock ruleset");
        goto out;
    }
    rc = 0;
out:
    close(rs);
    return rc;
}

int bd_jail_child_wait(bd_err *err)
{
    if (!J.ready) {
        errno = EINVAL;
        return fail(err, "the jail was not prepared");
    }
    close_fd(&J.sync_wr);
    close_fd(&J.report_rd);
    char go = 0;
    ssize_t n;
    while ((n = read(J.sync_rd, &go, 1)) < 0 && errno == EINTR)
        ;
    if (n != 1) {
        if (n == 0)
            errno = EPIPE;
        return fail(err, "wait for the supervisor's uid map");
    }
    return 0;
}

/* Program: the files of argv to show, opened (see bd_jail_child_finish). */
static int open_shown(bd_err *err)
{
    for (int i = 0; i < J.n_shown; i++) {
        J.shown_fd[i] = open(J.shown[i], O_PATH | O_CLOEXEC);
        if (J.shown_fd[i] < 0)
            return fail(err, "open %.100s to show it in the jail", J.shown[i]);
    }
    return 0;
}

/* Become the jail's user. As root this is the drop to the case's own host uid outside; the
 * capabilities held inside this user namespace stay (until execve, or the warm rubric's
 * own drop). A change of credentials clears the parent-death signal: set again. */
static int become_jail_user(bd_err *err)
{
    if (J.as_root && setgroups(0, NULL) != 0)
        return fail(err, "drop supplementary groups");
    if (setresgid(BD_JAIL_UID, BD_JAIL_UID, BD_JAIL_UID) != 0)
        return fail(err, "setresgid %d", BD_JAIL_UID);
    if (setresuid(BD_JAIL_UID, BD_JAIL_UID, BD_JAIL_UID) != 0)
        return fail(err, "setresuid %d", BD_JAIL_UID);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        return fail(err, "set the parent-death signal");
    return 0;
}

/* Program: become the jail's user, die with the supervisor, its mounts private. */
static int child_identity(bd_err *err)
{
    if (become_jail_user(err) != 0)
        return -1;
    /* Make sure the supervisor did not die before the parent-death signal was set again
     * (its end of the sync pipe closes). */
    struct pollfd pfd = {J.sync_rd, POLLIN, 0};
    if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
        errno = ESRCH;
        return fail(err, "the supervisor died during the jail's setup");
    }
    close_fd(&J.sync_rd);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return fail(err, "make the jail's mounts private");
    return 0;
}

/* Program: into the cwd, no_new_privs, Landlock (scoped: see apply_landlock). */
static int child_lock(bool scoped, bd_err *err)
{
    if (!J.probe && chdir(J.jail_cwd) != 0)
        return fail(err, "enter the working directory in the jail");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return fail(err, "set no_new_privs");
    return apply_landlock(scoped, err);
}

int bd_jail_scope_self(void)
{
    if (J.landlock_abi < 6)
        return 0;
    struct ll_ruleset_attr attr = {0, 0, LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL};
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
    if (rs < 0)
        return -1;
    long rc = syscall(SYS_landlock_restrict_self, rs, 0);
    int e = errno;
    close(rs);
    errno = e;
    return rc == 0 ? 0 : -1;
}

int bd_jail_child_ahead(bd_err *err)
{
    if (!J.ready || J.sync_rd < 0 || J.probe || J.built) {
        errno = EINVAL;
        return fail(err, "the jail was not prepared");
    }
    umask(022);
    if (open_shown(err) != 0 || child_identity(err) != 0 || root_base(err) != 0 ||
        root_shown(err) != 0 || root_pivot(err) != 0)
        return -1;
    close_shown();
    J.built = true;
    return 0;
}

/* The rest of an init prepared ahead, once its case is known: the cwd and its read-only
 * entries (the detached mounts passed in), then child_lock. */
static int child_finish_built(bd_err *err)
{
    int rc = root_cwd(J.tree_fd, err);
    for (int i = 0; i < 2; i++)
        close_fd(&J.tree_fd[i]);
    if (rc != 0)
        return -1;
    return child_lock(true, err);
}

int bd_jail_child_finish(bd_err *err)
{
    if (J.built && J.cwd_path[0])
        return child_finish_built(err);
    if (!J.ready || J.sync_rd < 0 || (!J.probe && !J.cwd_path[0])) {
        errno = EINVAL;
        return fail(err, "the jail was not prepared");
    }
    umask(022);
    /* Descriptors of the cwd and the program, opened here: a bind source must be a mount
     * of this (new) mount namespace, and before the identity switch the host-side owner
     * may still walk to them. */
    if (J.cwd_path[0] && open_cwd_checked(&J.cwd_fd, err) != 0)
        return -1;
    if (open_shown(err) != 0 || child_identity(err) != 0 || build_root(err) != 0)
        return -1;
    close_fd(&J.cwd_fd);
    close_shown();
    return child_lock(true, err);
}

int bd_jail_init_finish(bd_err *err)
{
    if (!J.built || !J.cwd_path[0]) {
        errno = EINVAL;
        return fail(err, "the jail was not prepared");
    }
    int rc = root_cwd(J.tree_fd, err);
    for (int i = 0; i < 2; i++)
        close_fd(&J.tree_fd[i]);
    return rc;
}

int bd_jail_rubric_enter(dev_t root_dev, ino_t root_ino, bd_err *err)
{
    if (!J.cwd_path[0] || !J.jail_cwd[0]) {
        errno = EINVAL;
        return fail(err, "the jail was not prepared");
    }
    if (become_jail_user(err) != 0)
        return -1;
    /* Its parent, the init, may have died before the parent-death signal was set again. */
    if (getppid() != 1) {
        errno = ESRCH;
        return fail(err, "the init died during the jail's setup");
    }
    /* The init's pivot_root moved this process's root too (it was the old root): make
     * sure it did, so that nothing below runs with the warm jail's root. */
    struct stat st;
    if (stat("/", &st) != 0)
        return fail(err, "stat the jail's root");
    if (st.st_dev != root_dev || st.st_ino != root_ino) {
        errno = ESTALE;
        return fail(err, "the rubric's root is not the jail's");
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
        release_all();
        return -1;
    }
    J.sync_rd = sync_rd;
    J.ready = true;
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
    release_all();
    last_errno = 0;
    J.probe = false;
    J.warm_root = true;
    J.as_root = geteuid() == 0;
    J.warm_map_base = map_base;
    J.warm_map_count = map_count;
    J.cwd_path[0] = '\0';
    J.n_shown = 0;
    size_t n = strlen(staging);
    struct stat st;
    /* Under /tmp, or one level below /dev/shm (a directory of its own in the warm root). */
    J.warm_shm = shm_dir(staging) && !strchr(staging + 9, '/');
    if (staging[0] != '/' || n >= PATH_MAX ||
        !(J.warm_shm || (private_dir(staging) && strncmp(staging, "/tmp/", 5) == 0))) {
        errno = EINVAL;
        return fail(err,
                    "the warm jail needs a private staging directory under /tmp or /dev/shm, "
                    "not '%.100s'",
                    staging);
    }
    if (stat(staging, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (errno == 0)
            errno = ENOTDIR;
        return fail(err, "stat the warm jail's staging directory");
    }
    memcpy(J.shown[0], staging, n + 1);
    J.shown_fd[0] = -1;
    J.n_shown = 1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return fail(err, "create the jail's sync pipe");
    J.sync_rd = p[0];
    J.sync_wr = p[1];
    J.ready = true;
    return 0;
}

int bd_jail_warm_parent(pid_t child, bd_err *err)
{
    if (!J.ready || !J.warm_root) {
        errno = EINVAL;
        return fail(err, "the warm jail was not prepared");
    }
    close_fd(&J.sync_rd);
    close_shown();
    char map[64];
    /* As root the warm jail keeps setgroups: its supervisors map each case's own gid. */
    if (!J.as_root && write_proc(child, "setgroups", "deny", err) != 0)
        return -1;
    snprintf(map, sizeof(map), "0 %u %u\n", (unsigned)J.warm_map_base, J.warm_map_count);
    if (write_proc(child, "uid_map", map, err) != 0 || write_proc(child, "gid_map", map, err) != 0)
        return -1;
    ssize_t w;
    while ((w = write(J.sync_wr, "g", 1)) < 0 && errno == EINTR)
        ;
    if (w != 1)
        return fail(err, "release the warm jail");
    return 0;
}

int bd_jail_warm_child(bd_err *err)
{
    if (!J.ready || !J.warm_root) {
        errno = EINVAL;
        return fail(err, "the warm jail was not prepared");
    }
    close_fd(&J.sync_wr);
    char go = 0;
    ssize_t n;
    while ((n = read(J.sync_rd, &go, 1)) < 0 && errno == EINTR)
        ;
    close_fd(&J.sync_rd);
    if (n != 1) {
        if (n == 0)
            errno = EPIPE;
        return fail(err, "wait for the warm jail's uid map");
    }
    umask(022);
    J.shown_fd[0] = open(J.shown[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (J.shown_fd[0] < 0)
        return fail(err, "open the warm jail's staging directory");
    /* uid 0 of the warm jail's own user namespace (an unprivileged host uid): it keeps
     * the capabilities it needs there to give each case its own namespaces and uid. */
    if (J.as_root && setgroups(0, NULL) != 0)
        return fail(err, "drop supplementary groups");
    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0)
        return fail(err, "become uid 0 of the warm jail");
    /* The identity switch made the process non-dumpable, which would make its children's
     * /proc files (uid_map) the host root's: each supervisor could not map its case. No
     * other host process runs as this uid. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
        return fail(err, "make the warm interpreter's /proc its own");
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        return fail(err, "set the parent-death signal");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return fail(err, "make the warm jail's mounts private");
    if (build_root(err) != 0)
        return -1;
    close_shown();
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return fail(err, "set no_new_privs");
    /* Landlock is left to each case: a Landlock domain may not mount, and every case
     * builds its own root inside this one. */
    return 0;
}

/* ---- program side: seccomp ---------------------------------------------------------- */

/* Killed on sight: debugging other processes, kernel attack surface, and the mount and
 * namespace calls that could undo the jail. */
static const char *const killed_syscalls[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "setns",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "init_module",
    "finit_module",
    "delete_module",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "lookup_dcookie",
    "uselib",
    "vhangup",
    "syslog",
};

/* Refused with EPERM: kernel memory a program could fill without it counting in
 * RLIMIT_AS — anonymous memory files, System V shared memory and message queues, POSIX
 * message queues. (POSIX shared memory is files in /dev/shm, which is the jail's /tmp:
 * the size-capped tmpfs.) */
static const char *const denied_syscalls[] = {
    "memfd_create", "memfd_secret", "shmget", "shmat", "msgget", "mq_open",
};

/* Compile the filter into J.bpf (libseccomp allocates: this runs in the supervisor,
 * before the program's rlimits; loading it later is one system call). */
static int build_filter(bd_err *err)
{
    int rc = -1;
    int mfd = -1;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        errno = ENOMEM;
        return fail(err, "create the seccomp filter");
    }
    const uint32_t kill = SCMP_ACT_KILL_PROCESS;
    int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, kill);
    for (size_t i = 0; r == 0 && i < sizeof(killed_syscalls) / sizeof(killed_syscalls[0]); i++) {
        int nr = seccomp_syscall_resolve_name(killed_syscalls[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* unknown to this libseccomp: the kernel lacks it, or no caps anyway */
        r = seccomp_rule_add(ctx, kill, nr, 0);
    }
    if (r == 0)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(unshare), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
    if (r == 0)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
    if (r == 0)
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    /* Memory outside RLIMIT_AS and the tmpfs cap: refused with EPERM (a library falls
     * back; nothing to kill for). */
    for (size_t i = 0; r == 0 && i < sizeof(denied_syscalls) / sizeof(denied_syscalls[0]); i++) {
        int nr = seccomp_syscall_resolve_name(denied_syscalls[i]);
        if (nr != __NR_SCMP_ERROR)
            r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    /* Sockets: AF_UNIX only; with the host network also AF_INET and AF_INET6 (never
     * netlink, packet or the rest). */
    if (r == 0 && !J.host_network)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0));
    /* (One comparison per argument and rule: the families between and beyond, one rule
     * each.) */
    if (r == 0 && J.host_network)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNSPEC, 0));
    for (int fam = AF_INET + 1; r == 0 && J.host_network && fam < AF_INET6; fam++)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, fam, 0));
    if (r == 0 && J.host_network)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GT, AF_INET6, 0));
    if (r == 0)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0));
    if (r != 0) {
        errno = -r;
        fail(err, "build the seccomp filter");
        goto out;
    }
    mfd = memfd_create("bd-seccomp", MFD_CLOEXEC);
    if (mfd < 0) {
        fail(err, "create a memfd for the seccomp filter");
        goto out;
    }
    r = seccomp_export_bpf(ctx, mfd);
    if (r != 0) {
        errno = -r;
        fail(err, "export the seccomp filter");
        goto out;
    }
    off_t size = lseek(mfd, 0, SEEK_END);
    if (size <= 0 || (size_t)size > sizeof(J.bpf) || size % (off_t)sizeof(J.bpf[0]) != 0) {
        errno = EFBIG;
        fail(err, "the seccomp filter has an unexpected size (%lld bytes)", (long long)size);
        goto out;
    }
    if (pread(mfd, J.bpf, (size_t)size, 0) != (ssize_t)size) {
        fail(err, "read the seccomp filter back");
        goto out;
    }
    J.bpf_len = (unsigned short)(size / (off_t)sizeof(J.bpf[0]));
    rc = 0;
out:
    if (mfd >= 0)
        close(mfd);
    seccomp_release(ctx);
    return rc;
}

void bd_jail_server_init(void)
{
    bd_err e = BD_ERR_INIT;
    J.bpf_cached = false;
    if (build_filter(&e) == 0)
        J.bpf_cached = true; /* else each prepare tries again and reports the failure */
}

int bd_jail_lockdown(bd_err *err)
{
    if (!J.ready || J.bpf_len == 0) {
        errno = EINVAL;
        return fail(err, "the seccomp filter was not prepared");
    }
    struct sock_fprog prog = {J.bpf_len, J.bpf};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return fail(err, "set no_new_privs");
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return fail(err, "load the seccomp filter");
    return 0;
}

/* ---- availability probe --------------------------------------------------------------- */

int bd_jail_probe_child(void)
{
    bd_err e = BD_ERR_INIT;
    int code = 0;
    if (bd_jail_child(&e) != 0) {
        code = 1;
    } else {
        /* The real filter: proves the kernel takes it. */
        if (bd_jail_lockdown(&e) != 0)
            code = 2;
    }
    if (code != 0 && J.report_wr >= 0) {
        char line[sizeof(e.msg) + 16];
        int n = snprintf(line, sizeof(line), "%d %s", last_errno, e.msg);
        if (n > 0) {
            ssize_t w =
                write(J.report_wr, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
            (void)w;
        }
    }
    return code;
}

/* -1 when unreadable. */
static long read_knob(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

/* The kernel knobs that explain a refusal, as one hint ("" when none applies). */
static void knob_hint(char *hint, size_t len)
{
    hint[0] = '\0';
    if (read_knob("/proc/sys/user/max_user_namespaces") == 0)
        snprintf(hint, len, "; user namespaces are disabled (sysctl user.max_user_namespaces=0)");
    else if (geteuid() != 0 && read_knob("/proc/sys/kernel/unprivileged_userns_clone") == 0)
        snprintf(hint, len,
                 "; unprivileged user namespaces are disabled (sysctl "
                 "kernel.unprivileged_userns_clone=0; set it to 1)");
    else if (read_knob("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
        snprintf(hint, len,
                 "; AppArmor restricts unprivileged user namespaces (sysctl "
                 "kernel.apparmor_restrict_unprivileged_userns=1): give benchdesk an AppArmor "
                 "profile with 'userns,' or set the sysctl to 0");
}

bool bd_jail_probe_finish(pid_t child, int clone_errno, char *why, size_t whylen)
{
    char hint[256];
    knob_hint(hint, sizeof(hint));
    bool ok = false;
    if (child < 0) {
        snprintf(why, whylen,
                 "namespaces isolation is unavailable on this machine: the kernel refused new "
                 "user/PID/mount/network namespaces (%s)%s",
                 strerror(clone_errno), hint);
        release_all();
        return false;
    }
    bd_err e = BD_ERR_INIT;
    if (bd_jail_parent(child, &e) != 0) {
        snprintf(why, whylen, "namespaces isolation is unavailable on this machine: %s (%s)%s",
                 e.msg, strerror(last_errno), hint);
        kill(child, SIGKILL);
    }
    int status = 0;
    pid_t w;
    while ((w = waitpid(child, &status, 0)) < 0 && errno == EINTR)
        ;
    if (e.code != BD_OK)
        goto out;
    if (w == child && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ok = true;
        goto out;
    }
    char report[512] = "";
    if (J.report_rd >= 0) {
        int fl = fcntl(J.report_rd, F_GETFL);
        fcntl(J.report_rd, F_SETFL, fl | O_NONBLOCK);
        ssize_t n = read(J.report_rd, report, sizeof(report) - 1);
        report[n > 0 ? n : 0] = '\0';
    }
    int err_no = 0;
    char *what = report;
    if (report[0]) {
        err_no = (int)strtol(report, &what, 10);
        while (*what == ' ')
            what++;
    }
    if (what[0]) {
        const char *extra = "";
        if (strstr(what, "/proc") && err_no == EPERM)
            extra = "; the host's /proc has masked or covered paths (inside a container?): "
                    "the kernel refuses a fresh /proc there";
        snprintf(why, whylen, "namespaces isolation is unavailable on this machine: %s (%s)%s%s",
                 what, strerror(err_no), extra, hint);
    } else if (w == child && WIFSIGNALED(status)) {
        snprintf(why, whylen,
                 "namespaces isolation is unavailable on this machine: the probe died of "
                 "signal %d%s",
                 WTERMSIG(status), hint);
    } else {
        snprintf(why, whylen,
                 "namespaces isolation is unavailable on this machine: the probe failed%s", hint);
    }
out:
    release_all();
    return ok;
}
