/*
 * exec_wire.h — what the two halves of the exec chokepoint share (private to exec.c and
 * exec_server.c; see exec.h for the design): the request sent over the control socket,
 * the descriptors that travel with it, the scrubbed environment, the clock.
 */
#ifndef BD_EXEC_WIRE_H
#define BD_EXEC_WIRE_H

#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "exec.h"

#define REQ_MAGIC       0x31584442u /* "BDX1" */
#define REQ_FDS         4
#define REQ_STRINGS_MAX (BD_EXEC_MAX_ARGV_BYTES + PATH_MAX)

/* One request = one SOCK_SEQPACKET message: this header, then `strings_len` bytes
 * holding cwd, then argc arguments, then envc "NAME=value" entries added to the
 * scrubbed environment, each NUL-terminated; plus REQ_FDS descriptors (stdin read end,
 * stdout write end, stderr write end, status write end). */
typedef struct req_hdr {
    uint32_t magic;
    uint32_t iso;
    int64_t wall_ms;
    uint64_t as_bytes, cpu_s, nproc, fsize, nofile;
    uint32_t argc;
    uint32_t strings_len;
    uint32_t envc;
    uint32_t flags; /* REQ_F_* */
} req_hdr;

/* The program keeps the host network (record --unsafe-network; jail.h). */
#define REQ_F_HOST_NETWORK 1u
/* Extra environment entries, at most. */
#define REQ_ENV_MAX 64

static const char *const scrubbed_env[] __attribute__((unused)) = {
    BD_EXEC_ENV_PATH, BD_EXEC_ENV_LANG, BD_EXEC_ENV_HASHSEED, BD_EXEC_ENV_IOENC, NULL};

static inline int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Room for the REQ_FDS descriptors that travel with a request. */
typedef union fd_cmsg {
    char b[CMSG_SPACE(sizeof(int) * REQ_FDS)];
    struct cmsghdr align;
} fd_cmsg;

/* Point `msg` at `iov` and at the control buffer `ctl` (`cap` bytes, aligned for a
 * cmsghdr) for descriptors: with `fds` (nfds of them) to send them, with NULL to receive
 * as many as `ctl` holds. */
static inline void fd_msg_init_n(struct msghdr *msg, struct iovec *iov, size_t iovlen, char *ctl,
                                 size_t cap, const int *fds, int nfds)
{
    memset(ctl, 0, cap);
    memset(msg, 0, sizeof(*msg));
    msg->msg_iov = iov;
    msg->msg_iovlen = iovlen;
    msg->msg_control = ctl;
    msg->msg_controllen = cap;
    if (!fds)
        return;
    msg->msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
}

/* fd_msg_init_n for a request's REQ_FDS descriptors in `u`. */
static inline void fd_msg_init(struct msghdr *msg, struct iovec *iov, size_t iovlen, fd_cmsg *u,
                               const int *fds)
{
    fd_msg_init_n(msg, iov, iovlen, u->b, sizeof(u->b), fds, REQ_FDS);
}

#endif
