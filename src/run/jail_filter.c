/*
 * jail_filter.c — what the kernel enforces in the `namespaces` jail besides the
 * namespaces (jail_state.h): the Landlock layer (no writes outside the cwd, /tmp and the
 * /dev nodes; no TCP; abstract sockets and signals scoped to the jail) and the seccomp
 * filter: compiled once (jail_seccomp.c), handed to the supervisor program as hex, and
 * loaded with one system call.
 */
#include "jail.h"
#include "jail_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

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

/* The filter travels to the supervisor program as hex: 16 digits an instruction (code,
 * jt, jf, k, each in that order, big-endian), so the program needs no libseccomp. */
static const char hexdig[] = "0123456789abcdef";

static void put_hex(char *out, uint64_t v, int digits)
{
    for (int i = digits - 1; i >= 0; i--, v >>= 4)
        out[i] = hexdig[v & 15];
}

int bd_jail_filter_hex(char *out, size_t cap)
{
    size_t need = (size_t)bd_jail.bpf_len * 16 + 1;
    if (!bd_jail.bpf_cached || bd_jail.bpf_len == 0 || cap < need)
        return -1;
    for (size_t i = 0; i < bd_jail.bpf_len; i++) {
        const struct sock_filter *f = &bd_jail.bpf[i];
        put_hex(out + i * 16, f->code, 4);
        put_hex(out + i * 16 + 4, f->jt, 2);
        put_hex(out + i * 16 + 6, f->jf, 2);
        put_hex(out + i * 16 + 8, f->k, 8);
    }
    out[need - 1] = '\0';
    return (int)(need - 1);
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int bd_jail_filter_from_hex(const char *hex)
{
    size_t len = strlen(hex);
    size_t n = len / 16;
    if (len == 0 || len % 16 != 0 || n > sizeof(bd_jail.bpf) / sizeof(bd_jail.bpf[0]))
        return -1;
    for (size_t i = 0; i < len; i++) /* all checked first: a refused text changes nothing */
        if (hex_digit(hex[i]) < 0)
            return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (size_t d = 0; d < 16; d++)
            v = v << 4 | (uint64_t)hex_digit(hex[i * 16 + d]);
        bd_jail.bpf[i] = (struct sock_filter){(uint16_t)(v >> 48), (uint8_t)(v >> 40),
                                              (uint8_t)(v >> 32), (uint32_t)v};
    }
    bd_jail.bpf_len = (unsigned short)n;
    bd_jail.bpf_cached = true;
    return 0;
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
