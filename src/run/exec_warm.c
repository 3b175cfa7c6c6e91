/*
 * exec_warm.c — the processes of a warm start (docs/runner.md, "Warm starts"): the
 * `benchdesk-warm` binary. It is the exec server of exec_server.c (this file builds that
 * file with BD_WARM_SERVER: the same supervisor, jail, limits, init and reports per case)
 * running in two processes:
 *
 *   benchdesk ──control socket──> launcher ──socket──> warm server ──fork──> supervisor ──clone──>
 * init ──fork──> rubric (host side)          (jailed; Python initialised, the allowlist imported,
 * the rubric compiled once)
 *
 * The launcher is the privileged parent when benchdesk is root: it gives the warm jail a
 * block of host uids (warm.h), and hands each case's temp dir and pipes to the warm jail's
 * uid before passing the request on. The warm server is PID 1 of the warm jail's PID
 * namespace and the only process that ever initialises Python; each case's rubric process
 * is a fork of it that enters the case's own namespaces, root, uid, limits and seccomp
 * filter before bd_warm_case_main runs one line of Python.
 *
 * benchdesk starts it with argv = the cold start's (`<python> -s rubric.py`: what
 * /proc/self/cmdline then says in every case) and fd 0 the control socket, whose first
 * message is "warm2 <benchdesk pid> <slot> <slots> <temp root length> <temp root><staging
 * dir>" (the cases' cwds lie in the staging dir and appear in their jails in the temp
 * root, docs/runner.md#the-staging-directory); the launcher answers
 * "ready" or "fail <why>", then serves requests exactly as the exec server does.
 *
 * A run has one warm interpreter per worker slot, all sharing the run's staging dir and
 * so the run's block of host uids (as root: chosen by benchdesk's pid, unique while the
 * run lives): slot s of n runs its cases as the block's uids 1 + s, 1 + s + n, ... only,
 * so two warm interpreters never give two cases the same uid.
 */
#define BD_WARM_SERVER 1

#include "exec.h"
#include "exec_wire.h"
#include "jail.h"
#include "warm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- hooks of the exec server (see exec_server.c) ------------------------------------ */

static bool warm_as_root;
static const char *warm_interp;
static pid_t slot_pid[BD_WARM_UIDS];         /* which supervisor holds each case uid (as root) */
static unsigned uid_first = 1, uid_step = 1; /* this server's share of the run's block */
static uid_t next_case_uid;                  /* what the next forked supervisor's case runs as */
static bool spare_stale;                     /* the spare was forked before the code now compiled */
static char shown_tmp[PATH_MAX];             /* the run's temp root: where a case's cwd appears */

/* Fork a supervisor (or the spare) of the warm server: Python's at-fork protocol around
 * it, and, as root, a free case uid of the warm jail's block for it. */
static pid_t server_fork(void)
{
    unsigned k = 0;
    if (warm_as_root) {
        for (k = uid_first; k < BD_WARM_UIDS && slot_pid[k] != 0; k += uid_step)
            ;
        if (k >= BD_WARM_UIDS) {
            errno = EAGAIN;
            return -1;
        }
    }
    next_case_uid = (uid_t)k;
    bd_warm_py_before_fork();
    pid_t pid = fork();
    if (pid == 0)
        return 0;
    bd_warm_py_after_fork_parent();
    if (pid > 0 && warm_as_root)
        slot_pid[k] = pid;
    return pid;
}

static void server_reaped(pid_t pid)
{
    for (unsigned k = 1; k < BD_WARM_UIDS; k++)
        if (slot_pid[k] == pid)
            slot_pid[k] = 0;
}

static void supervisor_identity(void)
{
    bd_jail_set_case_identity(warm_as_root, next_case_uid, shown_tmp);
}

/* RLIMIT_AS counts what the case adds to the warm interpreter's size. */
static uint64_t program_as_base(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Only the cold start this server stands for: `<its python> -s rubric.py`, jailed, no
 * host network. Compiles the case's rubric.py (once per distinct source) before the
 * fork, so every case inherits the code. Returns 0 or an errno for the reply. */
static int warm_request(const req_hdr *h, const char *cwd, char **argv)
{
    if (h->iso != BD_ISO_NAMESPACES || (h->flags & REQ_F_HOST_NETWORK) || h->argc != 3 ||
        strcmp(argv[0], warm_interp) != 0 || strcmp(argv[1], "-s") != 0 ||
        strcmp(argv[2], "rubric.py") != 0)
        return EINVAL;
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/rubric.py", cwd) >= (int)sizeof(path))
        return ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) {
        if (fd >= 0)
            close(fd);
        return 0; /* the case itself will fail to read it, as a cold start would */
    }
    char *src = malloc((size_t)st.st_size + 1);
    ssize_t n = src ? read(fd, src, (size_t)st.st_size) : -1;
    close(fd);
    if (n == (ssize_t)st.st_size && bd_warm_py_compile(src, (size_t)n))
        spare_stale = true;
    free(src);
    return 0;
}

/* Every request this server takes has the one command line warm_request allows: a spare
 * prepares its case's init for it (exec_server.c, "the prepared init"). */
static const char *const *spare_prepared_argv(void)
{
    static const char *argv[4];
    argv[0] = warm_interp;
    argv[1] = "-s";
    argv[2] = "rubric.py";
    argv[3] = NULL;
    return argv;
}

/* The command line benchdesk gave (the cold start's), as it was: the launcher and the
 * warm server show "benchdesk-warm" in its place (ps), each case puts it back so that its
 * /proc/self/cmdline is a cold start's. */
static char *cmdline_at; /* argv[0]'s bytes through argv[argc - 1]'s NUL */
static size_t cmdline_len;
static char cmdline_saved[PATH_MAX + 16];

static void cmdline_hide(int argc, char **argv)
{
    char *end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
    size_t len = (size_t)(end - argv[0]);
    if (len > sizeof(cmdline_saved))
        return;
    memcpy(cmdline_saved, argv[0], len);
    cmdline_at = argv[0];
    cmdline_len = len;
    memset(cmdline_at, 0, len);
    snprintf(cmdline_at, len, "benchdesk-warm");
}

static void __attribute__((noreturn)) warm_program(char **argv, int status_fd)
{
    if (cmdline_at)
        memcpy(cmdline_at, cmdline_saved, cmdline_len);
    bd_warm_case_main(argv, status_fd);
}

#include "exec_server.c"

/* ---- the warm server (jailed) --------------------------------------------------------- */

static void __attribute__((noreturn)) warm_server(int sock)
{
    char why[200] = "";
    bd_err jerr = BD_ERR_INIT;
    if (bd_jail_warm_child(&jerr) != 0)
        snprintf(why, sizeof(why), "the warm jail: %.120s (errno %d)", jerr.msg, bd_jail_errno());
    /* fds 0..2 are /dev/null (Python's first sys.std* live there, never used), the socket 3. */
    int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (dn < 0 || dup2(sock, 3) != 3 || dup2(dn, 0) != 0 || dup2(dn, 1) != 1 || dup2(dn, 2) != 2)
        _exit(0);
    close_from(4);
    signal(SIGPIPE, SIG_IGN);
    if (!why[0])
        (void)bd_warm_py_init(warm_interp, why, sizeof(why));
    char msg[256];
    snprintf(msg, sizeof(msg), why[0] ? "fail %s" : "ready", why);
    server_reply(3, msg, -1);
    if (why[0])
        _exit(0);
    bd_jail_server_init();
    int rc = server_loop(3);
    /* The spare exits on EOF; reap everything (the CPU time of every case counts). */
    spare_drop();
    for (;;) {
        if (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
            continue;
        break;
    }
    _exit(rc);
}

/* ---- the launcher (host side) --------------------------------------------------------- */

static int recv_with_fds(int sock, char *buf, size_t cap, int fds[REQ_FDS], int *nfds)
{
    struct iovec iov = {buf, cap};
    fd_cmsg u;
    struct msghdr msg;
    fd_msg_init(&msg, &iov, 1, &u, NULL);
    ssize_t n;
    while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    *nfds = n > 0 ? received_fds(&msg, fds) : 0;
    if (n > 0 && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        close_fds(fds, *nfds);
        *nfds = 0;
        return -2;
    }
    return (int)n;
}

/* Start the jailed warm server (*pid). Returns its socket, or -1 with `why`. */
static int launch(const char *staging, uid_t base, pid_t *pid_out, char *why, size_t whylen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(why, whylen, "socketpair: %s", strerror(errno));
        return -1;
    }
    bd_err jerr = BD_ERR_INIT;
    if (bd_jail_warm_prepare(staging, base, warm_as_root ? BD_WARM_UIDS : 1, &jerr) != 0) {
        snprintf(why, whylen, "%.150s: %s", jerr.msg, strerror(bd_jail_errno()));
        return -1;
    }
    pid_t pid = (pid_t)syscall(SYS_clone, bd_jail_clone_flags() | SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid < 0) {
        snprintf(why, whylen, "clone the warm jail: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        warm_server(sv[1]);
    }
    close(sv[1]);
    *pid_out = pid;
    if (bd_jail_warm_parent(pid, &jerr) != 0) {
        kill(pid, SIGKILL);
        snprintf(why, whylen, "%.150s: %s", jerr.msg, strerror(bd_jail_errno()));
        return -1;
    }
    char reply[256];
    int fds[REQ_FDS], nfds = 0;
    int n = recv_with_fds(sv[0], reply, sizeof(reply) - 1, fds, &nfds);
    close_fds(fds, nfds);
    if (n <= 0) {
        snprintf(why, whylen, "the warm interpreter died while starting");
        return -1;
    }
    reply[n] = '\0';
    if (strcmp(reply, "ready") != 0) {
        snprintf(why, whylen, "%s", strncmp(reply, "fail ", 5) == 0 ? reply + 5 : reply);
        return -1;
    }
    return sv[0];
}

/* Pass one request on (as root, its temp dir and pipes handed to the warm jail first) and
 * its reply back. Returns -1 when the warm server is gone. */
static int relay(int ctl, int inner, char *buf, size_t len, int fds[REQ_FDS], int nfds, uid_t base)
{
    req_hdr h;
    const char *cwd = NULL;
    char **argv = NULL, **envp = NULL;
    int perr = nfds != REQ_FDS ? EPROTO : parse_request(buf, len, &h, &cwd, &argv, &envp);
    bd_err jerr = BD_ERR_INIT;
    if (perr == 0 && warm_as_root && bd_jail_hand_over(cwd, fds, 3, base, &jerr) != 0)
        perr = bd_jail_errno() ? bd_jail_errno() : EPERM;
    free(argv);
    char reply[64];
    if (perr != 0) {
        snprintf(reply, sizeof(reply), "err %d", perr);
        server_reply(ctl, reply, -1);
        return 0;
    }
    struct iovec iov = {buf, len};
    fd_cmsg u;
    struct msghdr msg;
    fd_msg_init(&msg, &iov, 1, &u, fds);
    ssize_t n;
    while ((n = sendmsg(inner, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)len)
        return -1;
    int rfds[REQ_FDS], rn = 0;
    int r = recv_with_fds(inner, reply, sizeof(reply) - 1, rfds, &rn);
    if (r <= 0)
        return -1;
    reply[r] = '\0';
    server_reply(ctl, reply, rn > 0 ? rfds[0] : -1);
    close_fds(rfds, rn);
    return 0;
}

int main(int argc, char **argv)
{
    /* argv is the cold start's command line: `<python> -s rubric.py`. */
    if (argc != 3 || argv[0][0] != '/')
        return 2;
    static char interp[PATH_MAX];
    snprintf(interp, sizeof(interp), "%s", argv[0]);
    warm_interp = interp;
    cmdline_hide(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close_from(3);
    size_t cap = sizeof(req_hdr) + REQ_STRINGS_MAX;
    char *buf = malloc(cap);
    int fds[REQ_FDS], nfds = 0;
    int n = buf ? recv_with_fds(0, buf, cap - 1, fds, &nfds) : -1;
    if (n <= 0)
        return 2;
    close_fds(fds, nfds);
    buf[n] = '\0';
    /* "warm2 <benchdesk pid> <slot> <slots> <temp root length> <temp root><staging dir>":
     * the dir is the rest. */
    long parent = 0;
    unsigned slot = 0, slots = 0;
    size_t tmp_len = 0;
    int at = 0;
    if (sscanf(buf, "warm2 %ld %u %u %zu %n", &parent, &slot, &slots, &tmp_len, &at) != 4 ||
        at <= 0 || tmp_len == 0 || tmp_len >= sizeof(shown_tmp) ||
        strnlen(buf + at, tmp_len) != tmp_len || buf[at] != '/' || buf[at + tmp_len] != '/' ||
        strlen(buf + at + tmp_len) >= PATH_MAX || parent <= 0 || slots == 0 ||
        slots > BD_WARM_SLOTS_MAX || slot >= slots)
        return 2;
    uid_first = 1 + slot;
    uid_step = slots;
    memcpy(shown_tmp, buf + at, tmp_len);
    shown_tmp[tmp_len] = '\0';
    static char staging[PATH_MAX];
    snprintf(staging, sizeof(staging), "%s", buf + at + tmp_len);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != (pid_t)parent)
        _exit(0);
    warm_as_root = geteuid() == 0;
    uid_t base = warm_as_root ? BD_WARM_HOST_BASE +
                                    ((unsigned long)parent % BD_JAIL_HOST_RANGE) * BD_WARM_UIDS
                              : geteuid();
    char why[256] = "";
    bd_err jerr = BD_ERR_INIT;
    int none_fds[1];
    if (warm_as_root && bd_jail_hand_over(staging, none_fds, 0, base, &jerr) != 0)
        snprintf(why, sizeof(why), "%.150s: %s", jerr.msg, strerror(bd_jail_errno()));
    pid_t inner_pid = 0;
    int inner = why[0] ? -1 : launch(staging, base, &inner_pid, why, sizeof(why));
    char msg[300];
    snprintf(msg, sizeof(msg), inner < 0 ? "fail %s" : "ready", why);
    server_reply(0, msg, -1);
    if (inner < 0)
        _exit(0);
    for (;;) {
        n = recv_with_fds(0, buf, cap, fds, &nfds);
        if (n == -2) {
            server_reply(0, "err 90", -1); /* EMSGSIZE */
            continue;
        }
        if (n <= 0)
            break; /* benchdesk closed the socket (or died) */
        int rc = relay(0, inner, buf, (size_t)n, fds, nfds, base);
        close_fds(fds, nfds);
        if (rc != 0)
            break;
    }
    /* EOF tells the warm server to stop (its end takes its PID namespace with it); reap it,
     * so its CPU time — every case's — is counted where benchdesk's is. */
    close(inner);
    if (inner_pid > 0)
        while (waitpid(inner_pid, NULL, 0) < 0 && errno == EINTR)
            ;
    _exit(0);
}
