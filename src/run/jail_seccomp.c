/*
 * jail_seccomp.c — the seccomp filter of the `namespaces` jail, compiled with libseccomp
 * (jail_filter.c loads it). The supervisor program builds jail_seccomp_handed.c instead:
 * it is given the filter its warm server compiled, and links no libseccomp.
 */
#include "jail.h"
#include "jail_state.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seccomp.h>

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
    return bd_jail_build_filter_laid_out(true, err);
}

int bd_jail_build_filter_laid_out(bool tree, bd_err *err)
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
    /* Laid out as a binary tree of system call numbers, not a list: the kernel walks the
     * filter for every call number when it is loaded (to cache the calls it always
     * allows), so a tree halves what loading costs each case (docs/isolation.md, step 5). */
    if (r == 0 && tree)
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
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
