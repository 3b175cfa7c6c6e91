/*
 * jail_filter.c — what the kernel enforces in the `namespaces` jail besides the
 * namespaces (jail_state.h): the Landlock layer (no writes outside the cwd, /tmp and the
 * /dev nodes; no TCP; abstract sockets and signals scoped to the jail) and the seccomp
 * filter, compiled once with libseccomp and loaded with one system call.
 */
#include "jail.h"
#include "jail_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>

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

int bd_jail_landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}

static int ll_rule(int ruleset, const char *path, uint64_t access, bd_err *err)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return bd_jail_fail(err, "open %s for Landlock", path);
    struct ll_path_beneath_attr pb = {access, fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(fd);
    if (rc != 0) {
        errno = e;
        return bd_jail_fail(err, "add the Landlock rule for %s", path);
    }
    return 0;
}

/* Inside the new root: read and execute everywhere; write only the cwd, /tmp and the
 * /dev nodes; no TCP; no abstract unix sockets or signals beyond the jail (ABI 6: with
 * `scoped`, else the layer the warm init made for it and itself, bd_jail_scope_self). */
int bd_jail_apply_landlock(bool scoped, bd_err *err)
{
    int abi = bd_jail.landlock_abi;
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
        attr.handled_access_net = bd_jail.host_network ? 0 : LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
        size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6 && scoped) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
        size = sizeof(attr);
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rs < 0)
        return bd_jail_fail(err, "create the Landlock ruleset (ABI %d)", abi);
    uint64_t rx = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
    uint64_t rw = fs & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
    uint64_t dev = LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_WRITE_FILE;
    if (abi >= 3)
        dev |= LL_FS_TRUNCATE;
    if (abi >= 5)
        dev |= LL_FS_IOCTL_DEV;
    int rc = -1;
    if (ll_rule(rs, "/", rx, err) != 0 || ll_rule(rs, "/dev", dev, err) != 0 ||
        ll_rule(rs, "/tmp", rw, err) != 0 ||
        (!bd_jail.probe && ll_rule(rs, bd_jail.jail_cwd, rw, err) != 0))
        goto out;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        bd_jail_fail(err, "set no_new_privs");
        goto out;
    }
    if (syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
        bd_jail_fail(err, "apply the Landlock ruleset");
        goto out;
    }
    rc = 0;
out:
    close(rs);
    return rc;
}

int bd_jail_scope_self(void)
{
    if (bd_jail.landlock_abi < 6)
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

/* ---- seccomp ------------------------------------------------------------------------ */

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

/* Compile the filter into bd_jail.bpf (libseccomp allocates: this runs in the supervisor,
 * before the program's rlimits; loading it later is one system call). */
int bd_jail_build_filter(bd_err *err)
{
    int rc = -1;
    int mfd = -1;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        errno = ENOMEM;
        return bd_jail_fail(err, "create the seccomp filter");
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
    if (r == 0 && !bd_jail.host_network)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0));
    /* (One comparison per argument and rule: the families between and beyond, one rule
     * each.) */
    if (r == 0 && bd_jail.host_network)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNSPEC, 0));
    for (int fam = AF_INET + 1; r == 0 && bd_jail.host_network && fam < AF_INET6; fam++)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, fam, 0));
    if (r == 0 && bd_jail.host_network)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GT, AF_INET6, 0));
    if (r == 0)
        r = seccomp_rule_add(ctx, kill, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0));
    if (r != 0) {
        errno = -r;
        bd_jail_fail(err, "build the seccomp filter");
        goto out;
    }
    mfd = memfd_create("bd-seccomp", MFD_CLOEXEC);
    if (mfd < 0) {
        bd_jail_fail(err, "create a memfd for the seccomp filter");
        goto out;
    }
    r = seccomp_export_bpf(ctx, mfd);
    if (r != 0) {
        errno = -r;
        bd_jail_fail(err, "export the seccomp filter");
        goto out;
    }
    off_t size = lseek(mfd, 0, SEEK_END);
    if (size <= 0 || (size_t)size > sizeof(bd_jail.bpf) ||
        size % (off_t)sizeof(bd_jail.bpf[0]) != 0) {
        errno = EFBIG;
        bd_jail_fail(err, "the seccomp filter has an unexpected size (%lld bytes)",
                     (long long)size);
        goto out;
    }
    if (pread(mfd, bd_jail.bpf, (size_t)size, 0) != (ssize_t)size) {
        bd_jail_fail(err, "read the seccomp filter back");
        goto out;
    }
    bd_jail.bpf_len = (unsigned short)(size / (off_t)sizeof(bd_jail.bpf[0]));
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
    bd_jail.bpf_cached = false;
    if (bd_jail_build_filter(&e) == 0)
        bd_jail.bpf_cached = true; /* else each prepare tries again and reports the failure */
}

int bd_jail_lockdown(bd_err *err)
{
    if (!bd_jail.ready || bd_jail.bpf_len == 0) {
        errno = EINVAL;
        return bd_jail_fail(err, "the seccomp filter was not prepared");
    }
    struct sock_fprog prog = {bd_jail.bpf_len, bd_jail.bpf};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return bd_jail_fail(err, "set no_new_privs");
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return bd_jail_fail(err, "load the seccomp filter");
    return 0;
}
