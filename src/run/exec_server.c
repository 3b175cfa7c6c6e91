/*
 * exec_server.c — the helper side of the exec chokepoint (see exec.h for the design):
 * the exec server (bd_exec_helper_main), the per-case supervisor, the namespaces init and
 * the program's own pre-exec setup. It runs in processes that are single-threaded copies
 * of the small server, so ordinary libc is safe between fork and exec; it never calls
 * exit() (no atexit handlers, no sanitizer reports at exit). exec.c enters it.
 *
 * exec_warm.c builds this same file into the warm interpreter (`benchdesk-warm`, with
 * BD_WARM_SERVER defined and its hooks below defined first): there the program is not
 * exec'd but is a fork of the warm interpreter that runs the rubric (warm.h).
 * exec_supervisor.c builds it, as here, into `benchdesk-supervisor`, the program a warm
 * server's spare executes (spare_exec) to serve one request (spare_serve).
 */
#include "exec.h"
#include "exec_wire.h"
#include "jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef BD_WARM_SERVER
/* The warm server's hooks (exec_warm.c); here, a cold start's. */
static pid_t server_fork(void)
{
    return fork();
}
static void server_reaped(pid_t pid)
{
    (void)pid;
}
static void supervisor_identity(void) {}
static uint64_t program_as_base(void)
{
    return 0;
}
static int warm_request(const req_hdr *h, const char *cwd, char **argv)
{
    (void)h, (void)cwd, (void)argv;
    return 0;
}
static bool spare_stale; /* never: the spare holds no state of a request */
/* A spare that is not a fork of the server (the warm server's small supervisor program,
 * exec_warm.c): its pid, or -2 when there is none and the server forks the spare. */
static pid_t spare_exec(int sock, pid_t server)
{
    (void)sock, (void)server;
    return -2;
}
/* The command line a spare prepares an init for (docs/runner.md#how-a-warm-case-runs), or
 * NULL: a cold server's spare prepares nothing (its next request may be of any class). */
static const char *const *spare_prepared_argv(void)
{
    return NULL;
}
#endif

/* ======================================================================================
 * Helper side
 * ==================================================================================== */

static void close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0u) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = lowfd; fd < max; fd++)
        close(fd);
}

/* Close every descriptor from `lowfd` up but the `n` in `keep` (negative entries ignored). */
static void close_from_except(int lowfd, const int *keep, int n)
{
    int from = lowfd;
    for (;;) {
        int next = -1; /* the lowest kept descriptor at or above `from` */
        for (int i = 0; i < n; i++)
            if (keep[i] >= from && (next < 0 || keep[i] < next))
                next = keep[i];
        if (next < 0) {
            close_from(from);
            return;
        }
        for (int fd = from; fd < next; fd++)
            close(fd);
        from = next + 1;
    }
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* One status line; short enough to be one atomic pipe write. */
static void status_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void status_line(int fd, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(buf))
        n = (int)sizeof(buf) - 1;
    write_all(fd, buf, (size_t)n);
}

/* Lower (never raise above the current hard limit unless privileged: a lower existing
 * hard limit is stricter and stays). */
static int set_limit(int resource, uint64_t soft, uint64_t hard)
{
    struct rlimit old;
    if (getrlimit(resource, &old) != 0)
        return -1;
    struct rlimit nl;
    nl.rlim_max = (rlim_t)hard;
    if (old.rlim_max != RLIM_INFINITY && nl.rlim_max > old.rlim_max)
        nl.rlim_max = old.rlim_max;
    nl.rlim_cur = (rlim_t)soft;
    if (nl.rlim_cur > nl.rlim_max)
        nl.rlim_cur = nl.rlim_max;
    return setrlimit(resource, &nl);
}

/* The limits a program starts under, in the order they are applied. A macro, not a
 * function, so the vfork child builds the table on its own stack with no call. */
typedef struct rlimit_spec {
    int res;
    uint64_t soft, hard;
    const char *name;
} rlimit_spec;

#define RLIMIT_SPECS(h)                                                                            \
    {                                                                                              \
        {RLIMIT_AS, (h)->as_bytes, (h)->as_bytes, "RLIMIT_AS"},                                    \
            {RLIMIT_CPU, (h)->cpu_s, (h)->cpu_s + 1, "RLIMIT_CPU"},                                \
            {RLIMIT_NPROC, (h)->nproc, (h)->nproc, "RLIMIT_NPROC"},                                \
            {RLIMIT_FSIZE, (h)->fsize, (h)->fsize, "RLIMIT_FSIZE"},                                \
            {RLIMIT_NOFILE, (h)->nofile, (h)->nofile, "RLIMIT_NOFILE"},                            \
            {RLIMIT_CORE, 0, 0, "RLIMIT_CORE"},                                                    \
    }

/* What a namespaces init reports when the rubric ends: the rubric's raw wait status and
 * what a wait for the init itself would give — the init's own resource usage with that of
 * every process it reaped (the rubric and the orphans before it). One write, well under
 * PIPE_BUF: it arrives whole or not at all. */
typedef struct ns_report {
    int status;
    int pad;
    long long cpu_us;
    long maxrss_kb;
} ns_report;

static long long rusage_cpu_us(const struct rusage *ru)
{
    return (long long)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec +
           (long long)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
}

/* namespaces: the minimal init, PID 1 of the case's PID namespace
 * (docs/isolation.md#how-the-jail-is-built). The rubric is its child, PID 2, so signals reach it
 * with their usual meaning (a PID 1 ignores what it has no handler for, its own SIGSEGV included).
 * The init reaps every orphan, relays every signal it gets to the rubric, and when the rubric ends
 * writes an ns_report to `report_fd` and exits: the kernel then kills whatever is left in the
 * namespace. All signals are blocked on entry; it holds none of the case's stdio pipes. */
static void __attribute__((noreturn)) ns_init(pid_t rubric, int report_fd)
{
    sigset_t all;
    sigfillset(&all);
    for (;;) {
        int st = 0;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            if (p == rubric) {
                ns_report rep;
                memset(&rep, 0, sizeof(rep));
                rep.status = st;
                struct rusage self, kids;
                if (getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &kids) == 0) {
                    rep.cpu_us = rusage_cpu_us(&self) + rusage_cpu_us(&kids);
                    rep.maxrss_kb =
                        self.ru_maxrss > kids.ru_maxrss ? self.ru_maxrss : kids.ru_maxrss;
                }
                write_all(report_fd, (const char *)&rep, sizeof(rep));
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
            }
        }
        if (p < 0 && errno == ECHILD)
            _exit(127);
        siginfo_t si;
        int sig = sigwaitinfo(&all, &si);
        if (sig > 0 && sig != SIGCHLD)
            kill(rubric, sig);
    }
}

/* namespaces, in the jailed process just before execve: fork the rubric off and stay
 * behind as its init. Returns in the rubric's process only. */
static void ns_init_fork(int report_fd, int status_fd)
{
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &all, NULL);
    pid_t rubric = fork();
    if (rubric < 0) {
        status_line(status_fd, "error fork %d\n", errno);
        _exit(127);
    }
    if (rubric > 0) {
        /* The case's pipes reach EOF when the rubric and what it started are done with
         * them, not when this init has torn down its namespace and memory. */
        close(status_fd);
        close(0);
        close(1);
        close(2);
        ns_init(rubric, report_fd);
    }
    close(report_fd);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The program's first steps: default SIGPIPE, nothing blocked, its own process group (the
 * supervisor kills the group when the program ends), and death with the supervisor,
 * whatever happens to it. `parent` is the supervisor's pid, or 0 for a namespaces init
 * (its parent lies outside its PID namespace). Exits when the supervisor is already gone. */
static void program_enter(pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
        _exit(127);
}

/* The program's last steps before its exec (warm: the rubric), in the process that
 * execs: umask, the rlimits, no_new_privs and (namespaces) the seccomp filter. Exits 127
 * after the status line when one fails. */
static void program_lock(const req_hdr *h, int status_fd)
{
    bd_err jerr = BD_ERR_INIT;
    umask(077);

    /* Warm: the address space counts from the warm interpreter's size. */
    req_hdr hl = *h;
    if (hl.as_bytes)
        hl.as_bytes += program_as_base();
    const rlimit_spec lim[] = RLIMIT_SPECS(&hl);
    for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
        if (lim[i].res != RLIMIT_CORE && lim[i].soft == 0)
            continue;
        if (set_limit(lim[i].res, lim[i].soft, lim[i].hard) != 0) {
            status_line(status_fd, "error rlimit %d %s\n", errno, lim[i].name);
            _exit(127);
        }
    }
    /* No setuid escalation through anything the program execs. */
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (h->iso == BD_ISO_NAMESPACES && bd_jail_lockdown(&jerr) != 0) {
        status_line(status_fd, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(127);
    }
    fcntl(status_fd, F_SETFD, FD_CLOEXEC);
}

/* The program's setup once its case is known (namespaces: after the maps, see
 * bd_jail_child_wait), then exec (warm: the rubric). Never returns. `report_fd` is the
 * init's report pipe (namespaces) or -1. */
static void __attribute__((noreturn))
program_run(const req_hdr *h, char **argv, char **envp, int status_fd, int report_fd)
{
    bd_err jerr = BD_ERR_INIT;
    if (h->iso == BD_ISO_NAMESPACES && bd_jail_child_finish(&jerr) != 0) {
        status_line(status_fd, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(127);
    }
    program_lock(h, status_fd);
    if (h->iso == BD_ISO_NAMESPACES)
        ns_init_fork(report_fd, status_fd);
#ifdef BD_WARM_SERVER
    (void)envp;
    warm_program(argv, status_fd);
#else
    execve(argv[0], argv, envp);
    status_line(status_fd, "error exec %d %s\n", errno, argv[0]);
    _exit(127);
#endif
}

/* In the program's process, between fork and exec. Never returns. `report_fd` is the
 * init's report pipe (namespaces) or -1. */
static void __attribute__((noreturn)) program_child(const req_hdr *h, char **argv, char **envp,
                                                    pid_t supervisor, int status_fd, int report_fd)
{
    program_enter(h->iso == BD_ISO_NAMESPACES ? 0 : supervisor);
    bd_err jerr = BD_ERR_INIT;
    if (h->iso == BD_ISO_NAMESPACES && bd_jail_child_wait(&jerr) != 0) {
        status_line(status_fd, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(127);
    }
    program_run(h, argv, envp, status_fd, report_fd);
}

/* ---- the subprocess class's program start: clone(CLONE_VM | CLONE_VFORK) ---------------
 * The supervisor is a fork of the (large) exec server; copying its page tables again for
 * every program costs more than the rest of a case's setup. The program's process instead
 * shares the supervisor's memory until its execve (as posix_spawn does), so between clone
 * and execve it makes raw system calls only: no libc state, no sanitizer interceptors. */

typedef struct vfork_args {
    const req_hdr *h;
    char **argv;
    char **envp;
    pid_t supervisor;
    int status_fd;
} vfork_args;

#define NOSAN __attribute__((no_sanitize("address", "undefined")))

/* "error <stage> <errno> <what>\n" without printf. */
static NOSAN void raw_error(int fd, const char *stage, long e, const char *what)
{
    char buf[256];
    size_t k = 0;
    const char *parts[2] = {"error ", stage};
    for (int p = 0; p < 2; p++)
        for (const char *c = parts[p]; *c && k < 200; c++)
            buf[k++] = *c;
    buf[k++] = ' ';
    char digits[24];
    int nd = 0;
    unsigned long v = e < 0 ? (unsigned long)-e : (unsigned long)e;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && nd < 20);
    while (nd > 0)
        buf[k++] = digits[--nd];
    buf[k++] = ' ';
    for (const char *c = what; *c && k < 250; c++)
        buf[k++] = *c;
    buf[k++] = '\n';
    syscall(SYS_write, fd, buf, k);
}

static NOSAN int raw_limit(int resource, uint64_t soft, uint64_t hard)
{
    struct rlimit old;
    if (syscall(SYS_prlimit64, 0, resource, NULL, &old) != 0)
        return -1;
    if (old.rlim_max != RLIM_INFINITY && hard > old.rlim_max)
        hard = old.rlim_max;
    if (soft > hard)
        soft = hard;
    struct rlimit nl = {(rlim_t)soft, (rlim_t)hard};
    return (int)syscall(SYS_prlimit64, 0, resource, &nl, NULL);
}

static NOSAN int vfork_child(void *arg)
{
    const vfork_args *a = arg;
    const req_hdr *h = a->h;
    int st = a->status_fd;
    /* Default SIGPIPE (the supervisor ignores it), nothing blocked. */
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } dfl = {(void *)SIG_DFL, 0, NULL, 0};
    uint64_t none = 0;
    syscall(SYS_rt_sigaction, SIGPIPE, &dfl, NULL, sizeof(uint64_t));
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(uint64_t));
    syscall(SYS_setpgid, 0, 0);
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
        syscall(SYS_getppid) != a->supervisor)
        syscall(SYS_exit, 127);
    syscall(SYS_umask, 077);
    const rlimit_spec lim[] = RLIMIT_SPECS(h);
    for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
        if (lim[i].res != RLIMIT_CORE && lim[i].soft == 0)
            continue;
        long rc = raw_limit(lim[i].res, lim[i].soft, lim[i].hard);
        if (rc != 0) {
            raw_error(st, "rlimit", rc < 0 ? -rc : EPERM, lim[i].name);
            syscall(SYS_exit, 127);
        }
    }
    syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    syscall(SYS_fcntl, st, F_SETFD, FD_CLOEXEC);
    long rc = syscall(SYS_execve, a->argv[0], a->argv, a->envp);
    /* syscall() returns -1 and sets errno (in the supervisor's TLS, which is ours too). */
    raw_error(st, "exec", rc == -1 ? errno : -rc, a->argv[0]);
    syscall(SYS_exit, 127);
    return 127;
}

static char vfork_stack[64 * 1024] __attribute__((aligned(64)));

/* Start the program for the subprocess class. Returns its pid, or -1 (errno). */
static pid_t vfork_program(const req_hdr *h, char **argv, char **envp, pid_t self, int status_fd)
{
    vfork_args a = {h, argv, envp, self, status_fd};
    return clone(vfork_child, vfork_stack + sizeof(vfork_stack), CLONE_VM | CLONE_VFORK | SIGCHLD,
                 &a);
}

/* Read the pids of this (single-threaded) process's children. Returns the count (at
 * most `max`), or -1 when the kernel does not offer the children list. */
static int list_children(pid_t self, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)self);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
            return -1;
        buf[n] = '\0';
        int count = 0;
        char *p = buf;
        while (*p && count < max) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            if (v > 0)
                out[count++] = (pid_t)v;
            p = end;
        }
        return count;
    }
    /* Fallback: scan /proc for processes whose parent is us. */
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && count < max) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char sp[300];
        snprintf(sp, sizeof(sp), "/proc/%s/stat", de->d_name);
        int sfd = open(sp, O_RDONLY | O_CLOEXEC);
        if (sfd < 0)
            continue;
        char sb[512];
        ssize_t n = read(sfd, sb, sizeof(sb) - 1);
        close(sfd);
        if (n <= 0)
            continue;
        sb[n] = '\0';
        char *rp = strrchr(sb, ')');
        int ppid = 0;
        char state;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == (int)self)
            out[count++] = (pid_t)atoi(de->d_name);
    }
    closedir(d);
    return count;
}

/* Wait up to `ms` for SIGCHLD (which is blocked). */
static void wait_sigchld(int ms)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGCHLD);
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    sigtimedwait(&s, NULL, &ts);
}

/* Kill and reap every remaining descendant. The supervisor is a child subreaper, so
 * each orphaned descendant becomes its child; repeat until it has no child left.
 * Returns how many were reaped; sets *stuck when some survived the time bound. */
static int kill_leftovers(pid_t prog, bool *stuck)
{
    int reaped = 0;
    pid_t self = getpid();
    int64_t give_up = mono_us() + 2000000;
    *stuck = false;
    for (;;) {
        kill(-prog, SIGKILL);
        pid_t kids[256];
        int n = list_children(self, kids, 256);
        for (int i = 0; i < n; i++) {
            kill(-kids[i], SIGKILL);
            kill(kids[i], SIGKILL);
        }
        pid_t r;
        while ((r = waitpid(-1, NULL, WNOHANG)) > 0)
            reaped++;
        if (r < 0 && errno == ECHILD)
            return reaped;
        if (mono_us() > give_up) {
            *stuck = true;
            return reaped;
        }
        wait_sigchld(20);
    }
}

/* The supervisor's signals and session: block the signals it waits for (`block`: SIGCHLD
 * and the stop signals), default the rest, its own session. (A prepared spare does this
 * before it clones its init, so that the init starts as one cloned on the request does;
 * and again on the request.) */
static void supervisor_signals(sigset_t *block)
{
    sigemptyset(block);
    sigaddset(block, SIGCHLD);
    sigaddset(block, SIGTERM);
    sigaddset(block, SIGINT);
    sigaddset(block, SIGHUP);
    sigaddset(block, SIGQUIT);
    sigaddset(block, SIGIO); /* namespaces: the init's report came (supervisor_wait) */
    sigprocmask(SIG_BLOCK, block, NULL);
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    /* Own session: no terminal signals; the parent decides when to stop. */
    setsid();
}

/* The prepared init, when the spare made one (see prepared_make). */
typedef struct prepared {
    pid_t pid; /* 0 when there is none */
    int sock;  /* the supervisor's end: the case goes to the init through it */
    int rep_rd;
    const char *const *argv; /* the command line it was prepared for */
    const char *req;         /* the request as received, passed on whole */
    size_t req_len;
    int trees[2]; /* the cwd's case/ and rubric.py (bd_jail_case_trees), or -1 */
} prepared;

static prepared the_prep = {0, -1, -1, NULL, NULL, 0, {-1, -1}};

/* What goes to the prepared init before the request's bytes. */
typedef struct prep_hdr {
    bd_jail_cwd cwd;
    uint32_t trees; /* bit i: trees[i] travels (after the request's REQ_FDS descriptors) */
} prep_hdr;

/* Room for the request's descriptors and the two trees. */
typedef union prep_cmsg {
    char b[CMSG_SPACE(sizeof(int) * (REQ_FDS + 2))];
    struct cmsghdr align;
} prep_cmsg;

/* Point `msg` at the parts (iovlen) of a prep message and at `u`: with `fds` (nfds of them) to
 * send them, with NULL to receive up to REQ_FDS + 2. */
static void prep_msg_init(struct msghdr *msg, struct iovec *iov, size_t iovlen, prep_cmsg *u,
                          const int *fds, int nfds)
{
    fd_msg_init_n(msg, iov, iovlen, u->b, sizeof(u->b), fds, nfds);
}

/* The supervisor's first steps: supervisor_signals, die with the server, become the
 * subreaper, the request's fds as 0..3 and nothing else open (but a prepared init's).
 * Exits when the server is already gone or an fd cannot be placed. */
static void supervisor_enter(const int fds[REQ_FDS], pid_t server, sigset_t *block)
{
    supervisor_signals(block);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0 || getppid() != server)
        _exit(0);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    for (int i = 0; i < REQ_FDS; i++) {
        if (fds[i] != i && dup2(fds[i], i) < 0)
            _exit(0);
        fcntl(i, F_SETFD, 0);
    }
    /* A prepared init's descriptors lie above REQ_FDS (prepared_make). */
    const int keep[3] = {the_prep.sock, the_prep.rep_rd, the_prep.pid > 0 ? bd_jail_sync_fd() : -1};
    close_from_except(REQ_FDS, keep, the_prep.pid > 0 ? 3 : 0);
}

/* Into the case's cwd and the isolation class's setup, before the program's fork. On a
 * failure writes the "error" status line to `st` and exits. */
static void supervisor_isolate(const req_hdr *h, const char *cwd, char **argv, int st)
{
    if (chdir(cwd) != 0) {
        status_line(st, "error chdir %d\n", errno);
        _exit(0);
    }
    /* Isolation classes set up here, before the program's fork. */
    bd_err jerr = BD_ERR_INIT;
    if (h->iso == BD_ISO_NAMESPACES)
        bd_jail_set_host_network((h->flags & REQ_F_HOST_NETWORK) != 0);
    supervisor_identity();
    if (h->iso == BD_ISO_NAMESPACES &&
        bd_jail_prepare(cwd, (const char *const *)argv, &jerr) != 0) {
        status_line(st, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(0);
    }
    if (h->iso != BD_ISO_SUBPROCESS && h->iso != BD_ISO_NAMESPACES) {
        status_line(st, "error isolation %d\n", ENOSYS);
        _exit(0);
    }
}

/* Start the program (namespaces: its init, PID 1 of new namespaces, with the program PID
 * 2; `rep[0]` then gets the init's report pipe, else -1), in its own process group, and
 * write "started <pid>" to `st`. Returns the pid; on a failure writes the "error" status
 * line and exits. */
static pid_t supervisor_spawn(const req_hdr *h, char **argv, char **envp, int st, int *rep_read)
{
    pid_t self = getpid();
    /* namespaces: the init's report of the rubric's wait status (see ns_init). */
    int rep[2] = {-1, -1};
    if (h->iso == BD_ISO_NAMESPACES && pipe2(rep, O_CLOEXEC | O_NONBLOCK) != 0) {
        status_line(st, "error pipe %d\n", errno);
        _exit(0);
    }
    /* namespaces: the program starts in new namespaces, its init PID 1 of its PID
     * namespace and the program PID 2. */
    pid_t prog =
        h->iso == BD_ISO_NAMESPACES
            ? (pid_t)syscall(SYS_clone, bd_jail_clone_flags() | SIGCHLD, NULL, NULL, NULL, NULL)
            : vfork_program(h, argv, envp, self, st);
    if (prog < 0) {
        status_line(st, "error fork %d\n", errno);
        _exit(0);
    }
    if (prog == 0) {
        if (rep[0] >= 0)
            close(rep[0]);
        program_child(h, argv, envp, self, st, rep[1]);
    }
    if (rep[1] >= 0)
        close(rep[1]);
    bd_err jerr = BD_ERR_INIT;
    if (h->iso == BD_ISO_NAMESPACES && bd_jail_parent(prog, &jerr) != 0) {
        kill(prog, SIGKILL);
        waitpid(prog, NULL, 0);
        status_line(st, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(0);
    }
    setpgid(prog, prog);
    status_line(st, "started %d\n", (int)prog);
    *rep_read = rep[0];
    return prog;
}

/* How supervisor_wait ended. */
typedef enum { WAIT_STOPPED, WAIT_EXITED, WAIT_REPORTED } wait_end;

/* namespaces: the init's report, when it has come whole (`rep` is non-blocking). */
static bool report_read(int rep, ns_report *out)
{
    ssize_t n;
    while ((n = read(rep, out, sizeof(*out))) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)sizeof(*out);
}

/* Wait for the program to exit (reaping adopted orphans meanwhile), the init's report on
 * `rep` (namespaces; SIGIO in `block` says it came), the deadline, or a stop signal from
 * `block`. Returns WAIT_EXITED when the program exited, WAIT_REPORTED with *report filled
 * when its init reported the rubric's end (the init is exiting by itself then), else
 * WAIT_STOPPED with *timeout or *killed set. The program's pid stays held (waitid WNOWAIT). */
static wait_end supervisor_wait(pid_t prog, int rep, int64_t deadline, const sigset_t *block,
                                int *timeout, int *killed, ns_report *report)
{
    bool prog_exited = false;
    for (;;) {
        if (rep >= 0 && report_read(rep, report))
            return WAIT_REPORTED;
        siginfo_t si;
        for (;;) {
            memset(&si, 0, sizeof(si));
            if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
                break;
            if (si.si_pid == prog) {
                prog_exited = true;
                break;
            }
            waitpid(si.si_pid, NULL, 0); /* an adopted orphan */
        }
        if (prog_exited)
            return WAIT_EXITED;
        int64_t now = mono_us();
        if (now >= deadline) {
            *timeout = 1;
            return WAIT_STOPPED;
        }
        int64_t left = deadline - now;
        struct timespec ts = {(time_t)(left / 1000000), (long)(left % 1000000) * 1000L};
        int sig = sigtimedwait(block, &si, &ts);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) {
            *killed = 1;
            return WAIT_STOPPED;
        }
    }
}

/* The supervisor's last status line, then EOF on the status pipe: now, not after the
 * kernel has torn down this copy of the server's memory. */
static void supervisor_done(int st, int status, int timeout, int killed, long long cpu_us,
                            long maxrss_kb, int64_t wall_us, int leftovers, bool stuck)
{
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    status_line(st,
                "done code=%d signal=%d timeout=%d killed=%d cpu_us=%lld maxrss_kb=%ld "
                "wall_us=%lld leftovers=%d stuck=%d\n",
                code, sig, timeout, killed, cpu_us, maxrss_kb, (long long)wall_us, leftovers,
                stuck ? 1 : 0);
    close(st);
}

static bool prepared_fits(const req_hdr *h, char **argv);
static bool prepared_isolate(const char *cwd, int st);
static pid_t prepared_start(int st, int *rep_read);

/* The per-case supervisor. Never returns. */
static void __attribute__((noreturn)) supervisor(const req_hdr *h, const char *cwd, char **argv,
                                                 char **envp, const int fds[REQ_FDS], pid_t server)
{
    sigset_t block;
    supervisor_enter(fds, server, &block);
    const int st = 3;
    bool prep = prepared_fits(h, argv) && prepared_isolate(cwd, st); /* else discarded */
    if (!prep)
        supervisor_isolate(h, cwd, argv, st);

    int64_t start = mono_us();
    int64_t deadline = start + h->wall_ms * 1000;
    int rep = -1; /* namespaces: the init's report pipe */
    pid_t prog = prep ? prepared_start(st, &rep) : -1;
    if (prog < 0) {
        if (prep) /* the prepared init died: the jail as if there had been none */
            supervisor_isolate(h, cwd, argv, st);
        prog = supervisor_spawn(h, argv, envp, st, &rep);
    }
    /* The program owns the stdio pipes now: EOF comes when it and its descendants are
     * gone, not when the supervisor exits. */
    int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (dn >= 0) {
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(dn, 2);
        close(dn);
    }

    /* namespaces: SIGIO (blocked, see supervisor_signals) when the init's report comes. */
    if (rep >= 0 && (fcntl(rep, F_SETOWN, getpid()) != 0 ||
                     fcntl(rep, F_SETFL, fcntl(rep, F_GETFL) | O_ASYNC | O_NONBLOCK) != 0)) {
        status_line(st, "error fcntl %d\n", errno);
        kill(-prog, SIGKILL);
        kill(prog, SIGKILL);
        _exit(0);
    }
    int timeout = 0, killed = 0;
    ns_report nr;
    wait_end how = supervisor_wait(prog, rep, deadline, &block, &timeout, &killed, &nr);
    if (how == WAIT_REPORTED) {
        /* The rubric ended and its init reported it: answer now. The init exits by itself
         * and the kernel ends the rest of its namespace (nothing of it is this process's
         * child, so nothing is counted as left over; kill_leftovers below is the same
         * backstop as on the other path); tearing that down is not the case's time. */
        supervisor_done(st, nr.status, 0, 0, nr.cpu_us, nr.maxrss_kb, mono_us() - start, 0, false);
        kill(-prog, SIGKILL);
        while (waitpid(prog, NULL, 0) < 0 && errno == EINTR)
            ;
        bool stuck;
        (void)kill_leftovers(prog, &stuck);
        _exit(0);
    }
    /* Kill the group while the program's pid is still held (zombie or alive), then
     * reap it with its resource usage. */
    kill(-prog, SIGKILL);
    if (how != WAIT_EXITED)
        kill(prog, SIGKILL);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    while (wait4(prog, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    long long cpu = rusage_cpu_us(&ru);
    long maxrss = (long)ru.ru_maxrss;
    /* namespaces: `prog` is the init; the rubric's own status is what it reported (none
     * when the init was killed with the whole namespace: then the init's status is it). */
    if (rep >= 0) {
        if (report_read(rep, &nr)) {
            status = nr.status;
            cpu = nr.cpu_us;
            maxrss = nr.maxrss_kb;
        }
        close(rep);
    }
    int64_t end = mono_us();
    bool stuck = false;
    int leftovers = kill_leftovers(prog, &stuck);
    supervisor_done(st, status, timeout, killed, cpu, maxrss, end - start, leftovers, stuck);
    _exit(0);
}

/* Reply to one request: "ok <pid>" with the supervisor's pidfd when the kernel has
 * pidfd_open, or "err <errno>". */
static void server_reply(int sock, const char *text, int pass_fd)
{
    struct iovec iov = {(void *)text, strlen(text)};
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    if (pass_fd >= 0) {
        memset(&u, 0, sizeof(u));
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof(u.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

static void close_fds(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Handle one received request: validate, fork the supervisor, reply. */
/* ---- the spare supervisor ----------------------------------------------------------
 * Forking the server is the most expensive step of a program's start, so the server keeps
 * one supervisor forked ahead of time, idle on its own socket; a request is forwarded to
 * it (the spec and the four descriptors) and a new spare is forked after the reply,
 * while the case runs. */

typedef struct spare {
    pid_t pid; /* 0 when there is none */
    int pidfd;
    int sock; /* the server's end */
} spare;

static spare the_spare;

/* Parse a request buffer: *cwd, and one allocation holding argv (argc + 1 entries)
 * followed by envp (the scrubbed keys, then the request's envc entries, then NULL);
 * free *argv_out only. Returns 0, or an errno (EPROTO for a malformed request). */
static int parse_request(const char *buf, size_t len, req_hdr *h, const char **cwd,
                         char ***argv_out, char ***envp_out)
{
    if (len < sizeof(*h))
        return EPROTO;
    memcpy(h, buf, sizeof(*h));
    const char *s = buf + sizeof(*h);
    size_t slen = len - sizeof(*h);
    if (h->magic != REQ_MAGIC || h->strings_len != slen || slen == 0 || s[slen - 1] != '\0' ||
        h->argc == 0 || h->argc > 4096 || h->envc > REQ_ENV_MAX || h->wall_ms <= 0)
        return EPROTO;
    size_t n_scrub = sizeof(scrubbed_env) / sizeof(scrubbed_env[0]) - 1;
    char **argv = calloc((size_t)h->argc + 1 + n_scrub + h->envc + 1, sizeof(char *));
    if (!argv)
        return ENOMEM;
    char **envp = argv + h->argc + 1;
    for (size_t k = 0; k < n_scrub; k++)
        envp[k] = (char *)scrubbed_env[k];
    const char *p = s + strlen(s) + 1;
    const char *end = s + slen;
    uint32_t i = 0, e = 0;
    for (; i < h->argc && p < end; i++) {
        argv[i] = (char *)p;
        p += strlen(p) + 1;
    }
    for (; e < h->envc && p < end; e++) {
        envp[n_scrub + e] = (char *)p;
        p += strlen(p) + 1;
    }
    if (i != h->argc || e != h->envc || p != end || argv[0][0] != '/') {
        free(argv);
        return EPROTO;
    }
    *cwd = s;
    *argv_out = argv;
    *envp_out = envp;
    return 0;
}

/* The descriptors that came with a received message, at most `max` of them into `fds`
 * (any beyond are closed). Returns how many. */
static int received_fds_max(struct msghdr *msg, int *fds, int max)
{
    int nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t j = 0; j < k; j++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof(int));
            if (nfds < max)
                fds[nfds++] = fd;
            else
                close(fd);
        }
    }
    return nfds;
}

/* received_fds_max for a request's REQ_FDS. */
static int received_fds(struct msghdr *msg, int fds[REQ_FDS])
{
    return received_fds_max(msg, fds, REQ_FDS);
}

/* ---- the prepared init ----------------------------------------------------------------
 * A spare of the warm server (spare_prepared_argv) also starts its case's init ahead of the
 * request, while the case before runs: the clone into fresh namespaces, the maps, the
 * jail's fixed part (bd_jail_prepare_ahead). The init then waits on a socket of its own;
 * on the request the supervisor checks the request is one it can serve, does the cwd's
 * part of the jail and hands the init the request and its four descriptors; the init
 * goes on exactly as a freshly cloned one (bd_jail_child_finish, the limits, the filter,
 * the rubric's fork). Anything else discards it: SIGKILL and reaped, by pid. */

/* Close what the spare holds of its prepared init (those of its descriptors still held)
 * and forget it. */
static void prepared_release(void)
{
    int *held[] = {&the_prep.sock, &the_prep.rep_rd, &the_prep.trees[0], &the_prep.trees[1]};
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
        if (*held[i] >= 0)
            close(*held[i]);
        *held[i] = -1;
    }
    the_prep.pid = 0;
}

/* Kill and reap the prepared init (unless `reaped`), drop what the spare holds of it. */
static void prepared_discard(bool reaped)
{
    if (the_prep.pid <= 0)
        return;
    if (!reaped) {
        kill(the_prep.pid, SIGKILL);
        while (waitpid(the_prep.pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    prepared_release();
}

/* What the warm init program sends its rubric before the prep_hdr and the request
 * (prepared_rubric): the jail's root as the init sees it after the pivot. */
typedef struct rubric_hdr {
    dev_t root_dev;
    ino_t root_ino;
} rubric_hdr;

/* Receive a case as a prepared init (or its rubric) gets it: `head` (head_len bytes, may be
 * 0), the prep_hdr, the request into `buf` (cap bytes), the request's REQ_FDS descriptors
 * then the trees ph->trees names (into trees[0..1], -1 for none). The request's descriptors
 * end up as 0..REQ_FDS-1, as a freshly cloned init has them (every one received moved above
 * them first, so that none is overwritten); their received copies stay open above. Returns
 * the request's length, or -1 when the case did not come whole. */
static ssize_t prep_receive(int sock, void *head, size_t head_len, prep_hdr *ph, char *buf,
                            size_t cap, int trees[2])
{
    memset(ph, 0, sizeof(*ph));
    struct iovec iov[3] = {{head, head_len}, {ph, sizeof(*ph)}, {buf, cap}};
    prep_cmsg u;
    struct msghdr msg;
    prep_msg_init(&msg, iov, 3, &u, NULL, 0);
    ssize_t n;
    while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    int fds[REQ_FDS + 2] = {-1, -1, -1, -1, -1, -1};
    int nfds = n > 0 ? received_fds_max(&msg, fds, REQ_FDS + 2) : 0;
    int ntrees = (ph->trees & 1u) + ((ph->trees >> 1) & 1u);
    ssize_t head_all = (ssize_t)(head_len + sizeof(*ph));
    if (n <= head_all || nfds != REQ_FDS + ntrees || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        return -1;
    for (int i = 0; i < nfds; i++)
        if (fds[i] < REQ_FDS && (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, REQ_FDS)) < 0)
            return -1;
    for (int i = 0; i < REQ_FDS; i++)
        if (dup2(fds[i], i) != i)
            return -1;
    trees[0] = trees[1] = -1;
    for (int i = 0, k = REQ_FDS; i < 2; i++)
        if (ph->trees & (1u << i))
            trees[i] = fds[k++];
    return n - head_all;
}

/* The warm init program with its case (its rubric forked before it, waiting on
 * `rubric_sock`): the cwd's mounts, then the rubric gets its case — the jail's root, the
 * prep_hdr, the request and the descriptors 0..REQ_FDS-1 — and the init stays behind as
 * its PID 1, holding none of them. Never returns. */
static void __attribute__((noreturn))
init_hand_over(const prep_hdr *ph, const char *req, size_t len, pid_t rubric, int rubric_sock,
               int rep_wr)
{
    bd_err jerr = BD_ERR_INIT;
    if (bd_jail_init_finish(&jerr) != 0) {
        status_line(3, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(127);
    }
    /* The init needs no capability from here on: it reaps, relays signals to its rubric
     * (the same uid) and reports. */
    if (bd_jail_drop_caps() != 0) {
        status_line(3, "error isolation %d drop the init's capabilities\n", errno);
        _exit(127);
    }
    struct stat root;
    if (stat("/", &root) != 0) {
        status_line(3, "error isolation %d stat the jail's root\n", errno);
        _exit(127);
    }
    rubric_hdr rh;
    memset(&rh, 0, sizeof(rh));
    rh.root_dev = root.st_dev;
    rh.root_ino = root.st_ino;
    prep_hdr to_rubric = *ph;
    to_rubric.trees = 0; /* mounted: the rubric gets none */
    struct iovec iov[3] = {{&rh, sizeof(rh)}, {&to_rubric, sizeof(to_rubric)}, {(void *)req, len}};
    const int fds[REQ_FDS] = {0, 1, 2, 3};
    prep_cmsg u;
    struct msghdr msg;
    prep_msg_init(&msg, iov, 3, &u, fds, REQ_FDS);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    ssize_t n;
    while ((n = sendmsg(rubric_sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)(sizeof(rh) + sizeof(to_rubric) + len)) {
        status_line(3, "error fork %d\n", n < 0 ? errno : EPIPE);
        kill(rubric, SIGKILL);
    }
    close(rubric_sock);
    for (int i = 0; i < REQ_FDS; i++)
        close(i);
    ns_init(rubric, rep_wr);
}

/* The prepared init, in its namespaces: wait for the maps, build the jail's root but the
 * cwd, then wait for the case (prep_hdr, the request, its four descriptors and the trees),
 * then on as program_child — or, for the warm init program (`rubric` > 0, its process
 * waiting on `rubric_sock`), init_hand_over. Never returns. Exits 127 unseen when the
 * spare goes or the case does not come whole; a failure of the jail's build is reported on
 * the case's status pipe, as program_child reports it. `buf` (cap bytes) receives the
 * request. */
static void __attribute__((noreturn))
prepared_init(int sock, int rep_wr, char *buf, size_t cap, pid_t rubric, int rubric_sock)
{
    program_enter(0);
    bd_err jerr = BD_ERR_INIT;
    if (bd_jail_child_wait(&jerr) != 0)
        _exit(127);
    int ahead = bd_jail_child_ahead(&jerr), ahead_errno = bd_jail_errno();
    const int keep[4] = {sock, rep_wr, bd_jail_sync_fd(), rubric_sock};
    close_from_except(0, keep, 4); /* nothing of the spare's */
    prep_hdr ph;
    int trees[2];
    ssize_t len = prep_receive(sock, NULL, 0, &ph, buf, cap, trees);
    req_hdr h;
    const char *cwd = NULL;
    char **argv = NULL, **envp = NULL;
    if (len < 0 || parse_request(buf, (size_t)len, &h, &cwd, &argv, &envp) != 0)
        _exit(127);
    const int kept[5] = {rep_wr, bd_jail_sync_fd(), trees[0], trees[1], rubric_sock};
    close_from_except(REQ_FDS, kept, 5);
    if (ahead != 0) {
        status_line(3, "error isolation %d %.180s\n", ahead_errno, jerr.msg);
        _exit(127);
    }
    bd_jail_cwd_set(&ph.cwd, trees);
    if (rubric > 0)
        init_hand_over(&ph, buf, (size_t)len, rubric, rubric_sock, rep_wr);
    program_run(&h, argv, envp, 3, rep_wr);
}

#ifdef BD_WARM_SERVER
/* The rubric's process of a warm case: a fork of the warm server made by its init before
 * the init executed the init program (exec_warm.c), PID 2 of the case's namespaces.
 * Closes everything but `sock`, waits for its case from the init (into `buf`, cap bytes),
 * then enters the jail the init built, takes the limits and the filter, and runs the
 * rubric. Never returns; a failure is reported on the case's status pipe. */
static void __attribute__((noreturn)) prepared_rubric(int sock, char *buf, size_t cap)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != 1)
        _exit(127);
    const int keep[1] = {sock};
    close_from_except(0, keep, 1); /* nothing of the server's */
    warm_rubric_waits();
    rubric_hdr rh;
    prep_hdr ph;
    int trees[2];
    ssize_t len = prep_receive(sock, &rh, sizeof(rh), &ph, buf, cap, trees);
    req_hdr h;
    const char *cwd = NULL;
    char **argv = NULL, **envp = NULL;
    if (len < 0 || trees[0] >= 0 || trees[1] >= 0 ||
        parse_request(buf, (size_t)len, &h, &cwd, &argv, &envp) != 0)
        _exit(127);
    close_from(REQ_FDS);
    bd_jail_cwd_set(&ph.cwd, trees);
    bd_err jerr = BD_ERR_INIT;
    if (bd_jail_rubric_enter(rh.root_dev, rh.root_ino, &jerr) != 0) {
        status_line(3, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(127);
    }
    program_lock(&h, 3);
    (void)envp;
    warm_program(argv, 3);
}
#endif

/* In a new spare, before it waits: start the prepared init (see above). Nothing when the
 * server prepares none or a step fails (the request then takes the ordinary path).
 * `buf` (cap bytes) is the spare's request buffer, which the init receives into too. */
static void prepared_make(char *buf, size_t cap)
{
    const char *const *want = spare_prepared_argv();
    if (!want)
        return;
    sigset_t block;
    supervisor_signals(&block);
    /* The fds below REQ_FDS held meanwhile: what the spare keeps of its init lies above
     * where supervisor_enter puts the request's. */
    int holds[REQ_FDS], nh = 0;
    for (int fd; nh < REQ_FDS && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
        if (fd >= REQ_FDS) {
            close(fd);
            break;
        }
        holds[nh++] = fd;
    }
    bd_err jerr = BD_ERR_INIT;
    int rep[2] = {-1, -1}, sv[2] = {-1, -1};
    bd_jail_set_host_network(false);
    supervisor_identity();
    if (bd_jail_prepare_ahead(want, &jerr) != 0 || pipe2(rep, O_CLOEXEC | O_NONBLOCK) != 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        goto out;
    pid_t pid = (pid_t)syscall(SYS_clone, bd_jail_clone_flags() | SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid == 0) {
        close(sv[0]);
        close(rep[0]);
        prepared_init(sv[1], rep[1], buf, cap, 0, -1);
    }
    if (pid < 0)
        goto out;
    if (bd_jail_parent(pid, &jerr) != 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        goto out;
    }
    setpgid(pid, pid);
    the_prep = (prepared){pid, sv[0], rep[0], want, NULL, 0, {-1, -1}};
    sv[0] = rep[0] = -1;
out:
    for (int i = 0; i < 2; i++) {
        if (sv[i] >= 0)
            close(sv[i]);
        if (rep[i] >= 0)
            close(rep[i]);
    }
    for (int i = 0; i < nh; i++)
        close(holds[i]);
}

/* Supervisor: whether the prepared init can serve this request — the namespaces class
 * without the host network, the very command line it was prepared for (the files the jail
 * shows), and still alive. When not, it is discarded. */
static bool prepared_fits(const req_hdr *h, char **argv)
{
    if (the_prep.pid <= 0)
        return false;
    bool ok = h->iso == BD_ISO_NAMESPACES && !(h->flags & REQ_F_HOST_NETWORK);
    size_t i = 0;
    for (; ok && the_prep.argv[i]; i++)
        ok = argv[i] && strcmp(argv[i], the_prep.argv[i]) == 0;
    ok = ok && argv[i] == NULL;
    pid_t w = 0;
    if (ok)
        while ((w = waitpid(the_prep.pid, NULL, WNOHANG)) < 0 && errno == EINTR)
            ;
    if (ok && w == 0)
        return true;
    prepared_discard(w != 0); /* reaped now (or not ours to kill any more) */
    return false;
}

/* Supervisor, with a prepared init: into the case's cwd and the cwd's part of the jail
 * (the failures supervisor_isolate reports, worded the same: then it exits). Returns
 * false, the init discarded, when the init's root cannot take this cwd. */
static bool prepared_isolate(const char *cwd, int st)
{
    bd_err jerr = BD_ERR_INIT;
    if (chdir(cwd) != 0) {
        status_line(st, "error chdir %d\n", errno);
        prepared_discard(false);
        _exit(0);
    }
    int rc = bd_jail_prepare_cwd(cwd, &jerr);
    if (rc == 0)
        rc = bd_jail_case_trees(the_prep.trees, &jerr);
    if (rc < 0) {
        status_line(st, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        prepared_discard(false);
        _exit(0);
    }
    if (rc > 0)
        prepared_discard(false);
    return rc == 0;
}

/* Supervisor: hand the case to the prepared init and write "started <pid>" to `st`.
 * Returns the init's pid (its report pipe in *rep_read), or -1 when it is gone
 * (discarded: the caller starts one the ordinary way). */
static pid_t prepared_start(int st, int *rep_read)
{
    prep_hdr ph;
    memset(&ph, 0, sizeof(ph));
    bd_jail_cwd_get(&ph.cwd);
    int fds[REQ_FDS + 2] = {0, 1, 2, 3, -1, -1};
    int nfds = REQ_FDS;
    for (int i = 0; i < 2; i++)
        if (the_prep.trees[i] >= 0) {
            ph.trees |= 1u << i;
            fds[nfds++] = the_prep.trees[i];
        }
    struct iovec iov[2] = {{&ph, sizeof(ph)}, {(void *)the_prep.req, the_prep.req_len}};
    prep_cmsg u;
    struct msghdr msg;
    prep_msg_init(&msg, iov, 2, &u, fds, nfds);
    ssize_t n;
    while ((n = sendmsg(the_prep.sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)(sizeof(ph) + the_prep.req_len)) {
        prepared_discard(false);
        return -1;
    }
    pid_t prog = the_prep.pid;
    *rep_read = the_prep.rep_rd;
    the_prep.rep_rd = -1;
    prepared_release(); /* the init is the case's now: only the descriptors go */
    status_line(st, "started %d\n", (int)prog);
    return prog;
}

/* In a spare, once its init is prepared (or none is): wait for one forwarded request on
 * `sock` (into `buf`, cap bytes), then become its supervisor. */
static void __attribute__((noreturn)) spare_serve(int sock, pid_t server, char *buf, size_t cap)
{
    struct iovec iov = {buf, cap};
    fd_cmsg u;
    struct msghdr msg;
    fd_msg_init(&msg, &iov, 1, &u, NULL);
    ssize_t n;
    while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n <= 0) {
        prepared_discard(false);
        _exit(0); /* the server went away, or dropped this spare */
    }
    int fds[REQ_FDS] = {-1, -1, -1, -1};
    int nfds = received_fds(&msg, fds);
    req_hdr h;
    const char *cwd = NULL;
    char **argv = NULL, **envp = NULL;
    if (nfds != REQ_FDS || parse_request(buf, (size_t)n, &h, &cwd, &argv, &envp) != 0) {
        prepared_discard(false);
        _exit(0);
    }
    the_prep.req = buf;
    the_prep.req_len = (size_t)n;
    close(sock);
    supervisor(&h, cwd, argv, envp, fds, server);
}

/* In the spare, a fork of the server: prepare its init, then serve one request. */
static void __attribute__((noreturn)) spare_main(int sock, pid_t server)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != server)
        _exit(0);
    size_t cap = sizeof(req_hdr) + REQ_STRINGS_MAX;
    char *buf = malloc(cap);
    if (!buf)
        _exit(0);
    prepared_make(buf, cap);
    spare_serve(sock, server, buf, cap);
}

static void spare_drop(void)
{
    if (the_spare.pid <= 0)
        return;
    close(the_spare.sock);
    if (the_spare.pidfd >= 0)
        close(the_spare.pidfd);
    the_spare.pid = 0;
}

/* Fork a new spare if there is none. Failure is not an error: requests then fork. */
static void spare_make(int ctl)
{
    if (the_spare.pid > 0)
        return;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return;
    pid_t server = getpid();
    pid_t pid = spare_exec(sv[1], server); /* -2: none, fork one */
    if (pid == -2 && (pid = server_fork()) == 0) {
        close(ctl);
        close(sv[0]);
        spare_main(sv[1], server);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return;
    }
    the_spare.pid = pid;
    the_spare.sock = sv[0];
    the_spare.pidfd = -1;
#ifdef SYS_pidfd_open
    the_spare.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
}

/* Hand a validated request to the spare. Returns its pid (and pidfd), or -1. */
static pid_t spare_take(const char *buf, size_t len, const int *fds, int *pidfd)
{
    if (the_spare.pid <= 0)
        return -1;
    struct iovec iov = {(void *)buf, len};
    fd_cmsg u;
    struct msghdr msg;
    fd_msg_init(&msg, &iov, 1, &u, fds);
    ssize_t n;
    while ((n = sendmsg(the_spare.sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)len) {
        spare_drop(); /* it died: the caller forks instead */
        return -1;
    }
    pid_t pid = the_spare.pid;
    *pidfd = the_spare.pidfd;
    the_spare.pidfd = -1;
    spare_drop();
    return pid;
}

static void server_request(int sock, const char *buf, size_t len, int *fds, int nfds)
{
    char reply[64];
    req_hdr h;
    const char *cwd = NULL;
    char **argv = NULL, **envp = NULL;
    int perr = nfds != REQ_FDS ? EPROTO : parse_request(buf, len, &h, &cwd, &argv, &envp);
    if (perr == 0 && (perr = warm_request(&h, cwd, argv)) != 0)
        free(argv);
    if (spare_stale) {
        spare_drop(); /* forked before the rubric now compiled: it exits on EOF */
        spare_stale = false;
    }
    if (perr != 0) {
        snprintf(reply, sizeof(reply), "err %d", perr);
        server_reply(sock, reply, -1);
        return;
    }
    int pidfd = -1;
    pid_t pid = spare_take(buf, len, fds, &pidfd);
#ifdef BD_WARM_SERVER
    if (pid <= 0) { /* the first case, or the first after a new compile: a spare made now,
                     * whose supervisor and init are no copies of the interpreter
                     * (spare_exec) */
        spare_make(sock);
        pid = spare_take(buf, len, fds, &pidfd);
    }
#endif
    if (pid > 0) {
        free(argv);
        snprintf(reply, sizeof(reply), "ok %d", (int)pid);
        server_reply(sock, reply, pidfd);
        if (pidfd >= 0)
            close(pidfd);
        return;
    }
    pid_t server = getpid();
    pid = server_fork();
    if (pid == 0) {
        close(sock);
        supervisor(&h, cwd, argv, envp, fds, server);
    }
    free(argv);
    if (pid < 0) {
        snprintf(reply, sizeof(reply), "err %d", errno);
        server_reply(sock, reply, -1);
        return;
    }
    /* The child cannot have been reaped yet (only this loop reaps), so the pidfd is
     * certainly the supervisor's. */
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    snprintf(reply, sizeof(reply), "ok %d", (int)pid);
    server_reply(sock, reply, pidfd);
    if (pidfd >= 0)
        close(pidfd);
}

static int server_loop(int sock)
{
    size_t cap = sizeof(req_hdr) + REQ_STRINGS_MAX;
    char *buf = malloc(cap);
    if (!buf)
        return 1;
    for (;;) {
        /* Reap finished supervisors (they stay zombies until here, which keeps every
         * pidfd and pid handed out unambiguous). */
        pid_t gone;
        while ((gone = waitpid(-1, NULL, WNOHANG)) > 0)
            server_reaped(gone);
        spare_make(sock);
        struct iovec iov = {buf, cap};
        fd_cmsg u;
        struct msghdr msg;
        fd_msg_init(&msg, &iov, 1, &u, NULL);
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the parent closed the socket (or died) */
        int fds[REQ_FDS] = {-1, -1, -1, -1};
        int nfds = received_fds(&msg, fds);
        if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
            close_fds(fds, nfds);
            server_reply(sock, "err 90", -1); /* EMSGSIZE */
            continue;
        }
        server_request(sock, buf, (size_t)n, fds, nfds);
        close_fds(fds, nfds);
    }
    free(buf);
    return 0;
}

int bd_exec_helper_main(int argc, char **argv)
{
    /* benchdesk __exec-server v1 <parent pid> ; fd 0 is the control socket. */
    if (argc != 4 || strcmp(argv[1], BD_EXEC_HELPER_ARG) != 0 || strcmp(argv[2], "v1") != 0)
        return 2; /* not the exact command line the chokepoint uses */
    pid_t parent = (pid_t)atol(argv[3]);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
        _exit(0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close_from(3);
    bd_jail_server_init(); /* the seccomp filter, compiled once for every case */
    int rc = server_loop(0);
    _exit(rc);
}
