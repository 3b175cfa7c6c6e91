/*
 * exec.c — the only file that creates processes (see exec.h for the design).
 *
 * Two halves:
 *   - the helper side (bd_exec_helper_main): the exec server, the per-case supervisor
 *     and the program's own pre-exec setup. It runs in processes that are single-
 *     threaded copies of the small server, so ordinary libc is safe between fork and
 *     exec; it never calls exit() (no atexit handlers, no sanitizer reports at exit).
 *   - the parent side: the context (allowlist, server lifetime) and each exec's libuv
 *     handles (four pipes and a timer), ending in one done callback.
 */
#include "exec.h"
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

/* ---- shared: names, wire format ---------------------------------------------------- */

static const char *const iso_names[] = {
#define BD_X(name, str) str,
    BD_ISOLATION_CLASSES(BD_X)
#undef BD_X
};

const char *bd_isolation_str(bd_isolation iso)
{
    if ((int)iso < 0 || iso >= BD_ISO__COUNT)
        return "?";
    return iso_names[iso];
}

int bd_isolation_parse(const char *s, bd_isolation *out)
{
    for (int i = 0; s && i < BD_ISO__COUNT; i++) {
        if (strcmp(s, iso_names[i]) == 0) {
            *out = (bd_isolation)i;
            return 0;
        }
    }
    return -1;
}

/* The namespaces jail, tried for real once per process: a throwaway child in every
 * namespace builds the whole jail and exits (jail.h). Call from one thread. */
static bool jail_probe(char *why, size_t whylen)
{
    static int state; /* 0 untried, 1 works, -1 does not */
    static char reason[512];
    if (state == 0) {
        bd_err e = BD_ERR_INIT;
        if (bd_jail_prepare(NULL, NULL, &e) != 0) {
            snprintf(reason, sizeof(reason), "namespaces isolation is unavailable: %.300s (%s)",
                     e.msg, strerror(bd_jail_errno()));
            state = -1;
        } else {
            pid_t pid =
                (pid_t)syscall(SYS_clone, bd_jail_clone_flags() | SIGCHLD, NULL, NULL, NULL, NULL);
            if (pid == 0)
                _exit(bd_jail_probe_child());
            state = bd_jail_probe_finish(pid, errno, reason, sizeof(reason)) ? 1 : -1;
        }
    }
    if (state < 0 && why && whylen)
        snprintf(why, whylen, "%s", reason);
    return state > 0;
}

bool bd_isolation_available(bd_isolation iso, char *why, size_t whylen)
{
    if (iso == BD_ISO_SUBPROCESS)
        return true;
    if (iso == BD_ISO_NAMESPACES)
        return jail_probe(why, whylen);
    if (why && whylen)
        snprintf(why, whylen, "the %s isolation class is not built into this version",
                 bd_isolation_str(iso));
    return false;
}

int bd_isolation_choose(bd_isolation *out, bool *weakened, const char *requested, bool allow_weaker,
                        bd_err *err)
{
    if (weakened)
        *weakened = false;
#ifdef __linux__
    /* On Linux "auto" means namespaces: a fallback is never silent (§4). */
    if (!requested || strcmp(requested, "auto") == 0)
        requested = "namespaces";
#endif
    /* Availability is probed only as far as needed (the namespaces probe builds a whole
     * throwaway jail): an explicit class that is available is taken as it is. */
    static const bd_isolation order[] = {BD_ISO_NAMESPACES, BD_ISO_SUBPROCESS};
    if (!requested || strcmp(requested, "auto") == 0) {
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
            if (bd_isolation_available(order[i], NULL, 0)) {
                *out = order[i];
                return 0;
            }
        }
        *out = BD_ISO_SUBPROCESS;
        return 0;
    }
    bd_isolation want;
    if (bd_isolation_parse(requested, &want) != 0)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "unknown isolation class '%s'; use auto, namespaces or subprocess",
                          requested);
    char why[512];
    if (bd_isolation_available(want, why, sizeof(why))) {
        *out = want;
        return 0;
    }
    /* The strongest class weaker than the one asked for. */
    bd_isolation fallback = BD_ISO_SUBPROCESS;
    bool past = false;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (order[i] == want) {
            past = true;
            continue;
        }
        if (past && bd_isolation_available(order[i], NULL, 0)) {
            fallback = order[i];
            break;
        }
    }
    if (!allow_weaker)
        return bd_err_set(err, BD_E_ISOLATION_UNAVAILABLE, NULL, 0, 0,
                          "%s; pass --allow-weaker-isolation to run under '%s' instead", why,
                          bd_isolation_str(fallback));
    *out = fallback;
    if (weakened)
        *weakened = true;
    return 0;
}

const char *bd_exec_signal_name(int sig, char buf[24])
{
    const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(buf, 24, "SIG%s", abbrev);
    else
        snprintf(buf, 24, "signal %d", sig);
    return buf;
}

#define REQ_MAGIC       0x31584442u /* "BDX1" */
#define REQ_FDS         4
#define REQ_STRINGS_MAX (BD_EXEC_MAX_ARGV_BYTES + PATH_MAX)

/* One request = one SOCK_SEQPACKET message: this header, then `strings_len` bytes
 * holding cwd and then argc arguments, each NUL-terminated; plus REQ_FDS descriptors
 * (stdin read end, stdout write end, stderr write end, status write end). */
typedef struct req_hdr {
    uint32_t magic;
    uint32_t iso;
    int64_t wall_ms;
    uint64_t as_bytes, cpu_s, nproc, fsize, nofile;
    uint32_t argc;
    uint32_t strings_len;
} req_hdr;

static const char *const scrubbed_env[] = {BD_EXEC_ENV_PATH, BD_EXEC_ENV_LANG, BD_EXEC_ENV_HASHSEED,
                                           BD_EXEC_ENV_IOENC, NULL};

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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

/* In the program's process, between fork and exec. Never returns. */
static void __attribute__((noreturn))
program_child(const req_hdr *h, char **argv, pid_t supervisor, int status_fd)
{
    sigset_t none;
    sigemptyset(&none);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Own process group: the supervisor kills the group when the program ends. */
    setpgid(0, 0);
    /* Dies with the supervisor, whatever happens to it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
        getppid() != (h->iso == BD_ISO_NAMESPACES ? 0 : supervisor))
        _exit(127);
    bd_err jerr = BD_ERR_INIT;
    if (h->iso == BD_ISO_NAMESPACES && bd_jail_child(&jerr) != 0) {
        status_line(status_fd, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(127);
    }
    umask(077);

    const rlimit_spec lim[] = RLIMIT_SPECS(h);
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
    execve(argv[0], argv, (char *const *)scrubbed_env);
    status_line(status_fd, "error exec %d %s\n", errno, argv[0]);
    _exit(127);
}

/* ---- the subprocess class's program start: clone(CLONE_VM | CLONE_VFORK) ---------------
 * The supervisor is a fork of the (large) exec server; copying its page tables again for
 * every program costs more than the rest of a case's setup. The program's process instead
 * shares the supervisor's memory until its execve (as posix_spawn does), so between clone
 * and execve it makes raw system calls only: no libc state, no sanitizer interceptors. */

typedef struct vfork_args {
    const req_hdr *h;
    char **argv;
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
    long rc = syscall(SYS_execve, a->argv[0], a->argv, scrubbed_env);
    /* syscall() returns -1 and sets errno (in the supervisor's TLS, which is ours too). */
    raw_error(st, "exec", rc == -1 ? errno : -rc, a->argv[0]);
    syscall(SYS_exit, 127);
    return 127;
}

static char vfork_stack[64 * 1024] __attribute__((aligned(64)));

/* Start the program for the subprocess class. Returns its pid, or -1 (errno). */
static pid_t vfork_program(const req_hdr *h, char **argv, pid_t self, int status_fd)
{
    vfork_args a = {h, argv, self, status_fd};
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

/* The per-case supervisor. Never returns. */
static void __attribute__((noreturn))
supervisor(const req_hdr *h, const char *cwd, char **argv, const int fds[REQ_FDS], pid_t server)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_BLOCK, &block, NULL);
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    /* Own session: no terminal signals; the parent decides when to stop. */
    setsid();
    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0 || getppid() != server)
        _exit(0);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    for (int i = 0; i < REQ_FDS; i++) {
        if (fds[i] != i && dup2(fds[i], i) < 0)
            _exit(0);
        fcntl(i, F_SETFD, 0);
    }
    close_from(REQ_FDS);
    const int st = 3;

    if (chdir(cwd) != 0) {
        status_line(st, "error chdir %d\n", errno);
        _exit(0);
    }
    /* Isolation classes set up here, before the program's fork. */
    bd_err jerr = BD_ERR_INIT;
    if (h->iso == BD_ISO_NAMESPACES &&
        bd_jail_prepare(cwd, (const char *const *)argv, &jerr) != 0) {
        status_line(st, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(0);
    }
    if (h->iso != BD_ISO_SUBPROCESS && h->iso != BD_ISO_NAMESPACES) {
        status_line(st, "error isolation %d\n", ENOSYS);
        _exit(0);
    }

    int64_t start = mono_us();
    int64_t deadline = start + h->wall_ms * 1000;
    pid_t self = getpid();
    /* namespaces: the program starts in new namespaces, PID 1 of its PID namespace. */
    pid_t prog =
        h->iso == BD_ISO_NAMESPACES
            ? (pid_t)syscall(SYS_clone, bd_jail_clone_flags() | SIGCHLD, NULL, NULL, NULL, NULL)
            : vfork_program(h, argv, self, st);
    if (prog < 0) {
        status_line(st, "error fork %d\n", errno);
        _exit(0);
    }
    if (prog == 0)
        program_child(h, argv, self, st);
    if (h->iso == BD_ISO_NAMESPACES && bd_jail_parent(prog, &jerr) != 0) {
        kill(prog, SIGKILL);
        waitpid(prog, NULL, 0);
        status_line(st, "error isolation %d %.180s\n", bd_jail_errno(), jerr.msg);
        _exit(0);
    }
    setpgid(prog, prog);
    status_line(st, "started %d\n", (int)prog);
    /* The program owns the stdio pipes now: EOF comes when it and its descendants are
     * gone, not when the supervisor exits. */
    int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (dn >= 0) {
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(dn, 2);
        close(dn);
    }

    int timeout = 0, killed = 0;
    bool prog_exited = false;
    for (;;) {
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
            break;
        int64_t now = mono_us();
        if (now >= deadline) {
            timeout = 1;
            break;
        }
        int64_t left = deadline - now;
        struct timespec ts = {(time_t)(left / 1000000), (long)(left % 1000000) * 1000L};
        int sig = sigtimedwait(&block, &si, &ts);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) {
            killed = 1;
            break;
        }
    }
    /* Kill the group while the program's pid is still held (zombie or alive), then
     * reap it with its resource usage. */
    kill(-prog, SIGKILL);
    if (!prog_exited)
        kill(prog, SIGKILL);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    while (wait4(prog, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    int64_t end = mono_us();
    bool stuck = false;
    int leftovers = kill_leftovers(prog, &stuck);

    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    long long cpu = (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
                    (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
    status_line(st,
                "done code=%d signal=%d timeout=%d killed=%d cpu_us=%lld maxrss_kb=%ld "
                "wall_us=%lld leftovers=%d stuck=%d\n",
                code, sig, timeout, killed, cpu, (long)ru.ru_maxrss, (long long)(end - start),
                leftovers, stuck ? 1 : 0);
    /* EOF now, not after the kernel has torn down this copy of the server's memory. */
    close(st);
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

/* Parse a request buffer (already validated by the server). Returns 0, or -1. */
static int parse_request(const char *buf, size_t len, req_hdr *h, const char **cwd,
                         char ***argv_out)
{
    if (len < sizeof(*h))
        return -1;
    memcpy(h, buf, sizeof(*h));
    const char *s = buf + sizeof(*h);
    size_t slen = len - sizeof(*h);
    if (h->magic != REQ_MAGIC || h->strings_len != slen || slen == 0 || s[slen - 1] != '\0' ||
        h->argc == 0 || h->argc > 4096 || h->wall_ms <= 0)
        return -1;
    char **argv = calloc((size_t)h->argc + 1, sizeof(char *));
    if (!argv)
        return -1;
    const char *p = s + strlen(s) + 1;
    const char *end = s + slen;
    uint32_t i = 0;
    for (; i < h->argc && p < end; i++) {
        argv[i] = (char *)p;
        p += strlen(p) + 1;
    }
    if (i != h->argc || p != end || argv[0][0] != '/') {
        free(argv);
        return -1;
    }
    *cwd = s;
    *argv_out = argv;
    return 0;
}

/* Room for the REQ_FDS descriptors that travel with a request. */
typedef union fd_cmsg {
    char b[CMSG_SPACE(sizeof(int) * REQ_FDS)];
    struct cmsghdr align;
} fd_cmsg;

/* Point `msg` at `iov` and at `u` for the descriptors: with `fds` (REQ_FDS of them) to
 * send them, with NULL to receive up to REQ_FDS. */
static void fd_msg_init(struct msghdr *msg, struct iovec *iov, size_t iovlen, fd_cmsg *u,
                        const int *fds)
{
    memset(u, 0, sizeof(*u));
    memset(msg, 0, sizeof(*msg));
    msg->msg_iov = iov;
    msg->msg_iovlen = iovlen;
    msg->msg_control = u->b;
    msg->msg_controllen = sizeof(u->b);
    if (!fds)
        return;
    struct cmsghdr *c = CMSG_FIRSTHDR(msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * REQ_FDS);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * REQ_FDS);
}

/* In the spare: wait for one forwarded request, then become its supervisor. */
static void __attribute__((noreturn)) spare_main(int sock, pid_t server)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != server)
        _exit(0);
    size_t cap = sizeof(req_hdr) + REQ_STRINGS_MAX;
    char *buf = malloc(cap);
    if (!buf)
        _exit(0);
    struct iovec iov = {buf, cap};
    fd_cmsg u;
    struct msghdr msg;
    fd_msg_init(&msg, &iov, 1, &u, NULL);
    ssize_t n;
    while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n <= 0)
        _exit(0); /* the server went away */
    int fds[REQ_FDS] = {-1, -1, -1, -1};
    int nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t j = 0; j < k && nfds < REQ_FDS; j++)
            memcpy(&fds[nfds++], CMSG_DATA(c) + j * sizeof(int), sizeof(int));
    }
    req_hdr h;
    const char *cwd = NULL;
    char **argv = NULL;
    if (nfds != REQ_FDS || parse_request(buf, (size_t)n, &h, &cwd, &argv) != 0)
        _exit(0);
    close(sock);
    supervisor(&h, cwd, argv, fds, server);
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
    pid_t pid = fork();
    if (pid == 0) {
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
    if (len < sizeof(h) || nfds != REQ_FDS) {
        snprintf(reply, sizeof(reply), "err %d", EPROTO);
        server_reply(sock, reply, -1);
        return;
    }
    memcpy(&h, buf, sizeof(h));
    const char *s = buf + sizeof(h);
    size_t slen = len - sizeof(h);
    if (h.magic != REQ_MAGIC || h.strings_len != slen || slen == 0 || s[slen - 1] != '\0' ||
        h.argc == 0 || h.argc > 4096 || h.wall_ms <= 0) {
        snprintf(reply, sizeof(reply), "err %d", EPROTO);
        server_reply(sock, reply, -1);
        return;
    }
    char **argv = calloc((size_t)h.argc + 1, sizeof(char *));
    if (!argv) {
        snprintf(reply, sizeof(reply), "err %d", ENOMEM);
        server_reply(sock, reply, -1);
        return;
    }
    const char *cwd = s;
    const char *p = s + strlen(s) + 1;
    const char *end = s + slen;
    uint32_t i = 0;
    for (; i < h.argc && p < end; i++) {
        argv[i] = (char *)p;
        p += strlen(p) + 1;
    }
    if (i != h.argc || p != end || argv[0][0] != '/') {
        free(argv);
        snprintf(reply, sizeof(reply), "err %d", EPROTO);
        server_reply(sock, reply, -1);
        return;
    }
    int pidfd = -1;
    pid_t pid = spare_take(buf, len, fds, &pidfd);
    if (pid > 0) {
        free(argv);
        snprintf(reply, sizeof(reply), "ok %d", (int)pid);
        server_reply(sock, reply, pidfd);
        if (pidfd >= 0)
            close(pidfd);
        return;
    }
    pid_t server = getpid();
    pid = fork();
    if (pid == 0) {
        close(sock);
        supervisor(&h, cwd, argv, fds, server);
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
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
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
        int nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t j = 0; j < k; j++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof(int));
                if (nfds < REQ_FDS)
                    fds[nfds++] = fd;
                else
                    close(fd);
            }
        }
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

/* The hidden mode is entered before main(): the chokepoint is self-contained, and no
 * front end can forget (or misplace) the dispatch. glibc calls .init_array functions
 * with (argc, argv, envp). Anything but the exact server command line falls through. */
static void __attribute__((constructor)) exec_helper_entry(int argc, char **argv, char **envp)
{
    (void)envp;
    if (argc == 4 && argv && argv[1] && argv[2] && strcmp(argv[1], BD_EXEC_HELPER_ARG) == 0 &&
        strcmp(argv[2], "v1") == 0)
        _exit(bd_exec_helper_main(argc, argv));
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

/* ======================================================================================
 * Parent side
 * ==================================================================================== */

typedef struct server {
    uv_process_t proc;
    bool exited;
    bool closed;
    struct server *next;
} server;

struct bd_exec_ctx {
    bd_isolation iso;
    char *helper;
    char **allow;
    size_t n_allow;
    char **wrapper; /* NULL-terminated copy, or NULL */
    size_t n_wrapper;
    uint64_t nproc;
    uv_loop_t sloop; /* private loop owning the server process handles */
    server *servers; /* newest first; only the head is live */
    int ctl;         /* our end of the control socket, -1 when no server */
};

static void free_strv(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

long bd_exec_uid_process_count(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    uid_t me = getuid();
    long count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        char line[256];
        while (fgets(line, sizeof(line), f)) {
            unsigned long ruid;
            if (sscanf(line, "Uid: %lu", &ruid) == 1) {
                if ((uid_t)ruid == me)
                    count++;
                break;
            }
        }
        fclose(f);
    }
    closedir(d);
    return count;
}

static bool is_exec_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int bd_exec_find_program(char **out, const char *name, bd_err *err)
{
    *out = NULL;
    char cand[PATH_MAX];
    if (!name || !name[0])
        return bd_err_set(err, BD_E_INTERPRETER, NULL, 0, 0, "no interpreter named");
    if (strchr(name, '/')) {
        if (name[0] != '/')
            return bd_err_set(err, BD_E_INTERPRETER, NULL, 0, 0,
                              "interpreter '%s' is not an absolute path; give /usr/bin/... ", name);
        snprintf(cand, sizeof(cand), "%s", name);
    } else {
        static const char *const dirs[] = {"/usr/bin", "/bin"};
        cand[0] = '\0';
        for (size_t i = 0; i < 2; i++) {
            char p[PATH_MAX];
            snprintf(p, sizeof(p), "%s/%s", dirs[i], name);
            if (is_exec_file(p)) {
                snprintf(cand, sizeof(cand), "%s", p);
                break;
            }
        }
        if (!cand[0])
            return bd_err_set(err, BD_E_INTERPRETER, NULL, 0, 0,
                              "'%s' not found in /usr/bin or /bin; install it (Debian: "
                              "python3) or configure `python:` in .benchdesk/config.yaml",
                              name);
    }
    char *real = realpath(cand, NULL);
    if (!real || !is_exec_file(real)) {
        free(real);
        return bd_err_set(err, BD_E_INTERPRETER, NULL, 0, 0,
                          "interpreter '%s' is not an executable file", cand);
    }
    *out = real;
    return 0;
}

int bd_exec_ctx_new(bd_exec_ctx **out, bd_isolation iso, const char *helper, bd_err *err)
{
    *out = NULL;
    char why[512];
    if (!bd_isolation_available(iso, why, sizeof(why)))
        return bd_err_set(err, BD_E_ISOLATION_UNAVAILABLE, NULL, 0, 0, "%s", why);
    bd_exec_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    ctx->iso = iso;
    ctx->ctl = -1;
    if (helper) {
        if (helper[0] != '/' || !is_exec_file(helper)) {
            free(ctx);
            return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                              "exec helper '%s' is not an absolute path to an executable", helper);
        }
        ctx->helper = strdup(helper);
    } else {
        char buf[PATH_MAX];
        size_t len = sizeof(buf);
        if (uv_exepath(buf, &len) != 0) {
            free(ctx);
            return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                              "cannot find benchdesk's own executable (/proc not mounted?)");
        }
        ctx->helper = strdup(buf);
    }
    if (!ctx->helper || uv_loop_init(&ctx->sloop) != 0) {
        free(ctx->helper);
        free(ctx);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    long procs = bd_exec_uid_process_count();
    ctx->nproc = (procs > 0 ? (uint64_t)procs : 0) + BD_EXEC_NPROC_EXTRA;
    /* A program closing its stdin early must not kill us; a same-uid program must not
     * read our /proc/<pid>/environ or memory. */
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    *out = ctx;
    return 0;
}

int bd_exec_ctx_allow(bd_exec_ctx *ctx, const char *path, bd_err *err)
{
    if (!path || path[0] != '/' || !is_exec_file(path))
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                          "'%s' cannot be allowlisted: it is not an absolute path to an "
                          "executable file",
                          path ? path : "(null)");
    for (size_t i = 0; i < ctx->n_allow; i++)
        if (strcmp(ctx->allow[i], path) == 0)
            return 0;
    char **grown = realloc(ctx->allow, (ctx->n_allow + 1) * sizeof(char *));
    if (!grown)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    ctx->allow = grown;
    ctx->allow[ctx->n_allow] = strdup(path);
    if (!ctx->allow[ctx->n_allow])
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    ctx->n_allow++;
    return 0;
}

static bool allowed(const bd_exec_ctx *ctx, const char *path)
{
    for (size_t i = 0; i < ctx->n_allow; i++)
        if (strcmp(ctx->allow[i], path) == 0)
            return true;
    return false;
}

int bd_exec_ctx_set_wrapper(bd_exec_ctx *ctx, const char *const *wrapper, bd_err *err)
{
    free_strv(ctx->wrapper, ctx->n_wrapper);
    ctx->wrapper = NULL;
    ctx->n_wrapper = 0;
    if (!wrapper || !wrapper[0])
        return 0;
    if (!allowed(ctx, wrapper[0]))
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                          "wrapper '%s' is not on the allowlist", wrapper[0]);
    size_t n = 0;
    while (wrapper[n])
        n++;
    char **copy = calloc(n + 1, sizeof(char *));
    if (!copy)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < n; i++) {
        copy[i] = strdup(wrapper[i]);
        if (!copy[i]) {
            free_strv(copy, i);
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        }
    }
    ctx->wrapper = copy;
    ctx->n_wrapper = n;
    return 0;
}

bd_isolation bd_exec_ctx_isolation(const bd_exec_ctx *ctx)
{
    return ctx->iso;
}

uint64_t bd_exec_ctx_nproc(const bd_exec_ctx *ctx)
{
    return ctx->nproc;
}

static void server_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    (void)status;
    (void)sig;
    server *s = p->data;
    s->exited = true;
}

static void server_close_cb(uv_handle_t *h)
{
    server *s = h->data;
    s->closed = true;
}

/* Drop the live server: close our end of the socket (it exits on EOF). Its handle
 * stays on the list until bd_exec_ctx_free reaps it. */
static void server_drop(bd_exec_ctx *ctx)
{
    if (ctx->ctl >= 0) {
        close(ctx->ctl);
        ctx->ctl = -1;
    }
}

static int server_start(bd_exec_ctx *ctx, bd_err *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return bd_err_errno(err, BD_E_SPAWN, errno, NULL, "cannot create the exec socket");
    server *s = calloc(1, sizeof(*s));
    if (!s) {
        close(sv[0]);
        close(sv[1]);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    char ppid[32];
    snprintf(ppid, sizeof(ppid), "%d", (int)getpid());
    char *args[] = {ctx->helper, BD_EXEC_HELPER_ARG, "v1", ppid, NULL};
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = sv[1];
    stdio[1].flags = UV_IGNORE;
    stdio[2].flags = UV_IGNORE;
    uv_process_options_t o;
    memset(&o, 0, sizeof(o));
    o.exit_cb = server_exit_cb;
    o.file = ctx->helper;
    o.args = args;
    o.env = (char **)scrubbed_env;
    o.cwd = "/";
    o.flags = UV_PROCESS_DETACHED;
    o.stdio_count = 3;
    o.stdio = stdio;
    s->proc.data = s;
    int rc = uv_spawn(&ctx->sloop, &s->proc, &o);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        /* A failed uv_spawn still initialised the handle: it must be closed. */
        s->exited = true;
        uv_close((uv_handle_t *)&s->proc, server_close_cb);
        s->next = ctx->servers;
        ctx->servers = s;
        return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0, "cannot start the exec server '%s': %s",
                          ctx->helper, uv_strerror(rc));
    }
    s->next = ctx->servers;
    ctx->servers = s;
    ctx->ctl = sv[0];
    return 0;
}

/* Send one request and read the reply. Returns 0 with the supervisor's pid (and pidfd,
 * or -1), -1 on a transport failure (server gone: caller may restart and retry), -2 on
 * a refusal by the server (err set). */
static int server_call(bd_exec_ctx *ctx, const req_hdr *h, const char *strings,
                       const int fds[REQ_FDS], pid_t *pid, int *pidfd, bd_err *err)
{
    struct iovec iov[2] = {{(void *)h, sizeof(*h)}, {(void *)strings, h->strings_len}};
    fd_cmsg u;
    struct msghdr msg;
    fd_msg_init(&msg, iov, 2, &u, fds);
    ssize_t n;
    while ((n = sendmsg(ctx->ctl, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return -1;
    struct pollfd pfd = {ctx->ctl, POLLIN, 0};
    int pr;
    while ((pr = poll(&pfd, 1, 10000)) < 0 && errno == EINTR)
        ;
    if (pr <= 0)
        return -1;
    char reply[64];
    struct iovec riov = {reply, sizeof(reply) - 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ru;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &riov;
    msg.msg_iovlen = 1;
    msg.msg_control = ru.buf;
    msg.msg_controllen = sizeof(ru.buf);
    while ((n = recvmsg(ctx->ctl, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n <= 0)
        return -1;
    reply[n] = '\0';
    *pidfd = -1;
    for (struct cmsghdr *rc = CMSG_FIRSTHDR(&msg); rc; rc = CMSG_NXTHDR(&msg, rc))
        if (rc->cmsg_level == SOL_SOCKET && rc->cmsg_type == SCM_RIGHTS)
            memcpy(pidfd, CMSG_DATA(rc), sizeof(int));
    int v;
    if (sscanf(reply, "ok %d", &v) == 1 && v > 0) {
        *pid = (pid_t)v;
        return 0;
    }
    if (*pidfd >= 0)
        close(*pidfd);
    *pidfd = -1;
    int e = 0;
    if (sscanf(reply, "err %d", &e) != 1)
        e = EPROTO;
    bd_err_set(err, BD_E_SPAWN, NULL, 0, 0, "the exec server refused to start the program: %s",
               strerror(e));
    return -2;
}

/* ---- one exec ---------------------------------------------------------------------- */

enum { H_IN, H_OUT, H_ERR, H_ST, H__PIPES };
#define STATUS_MAX 4096
#define DRAIN_MS   500

struct bd_exec {
    uv_loop_t *loop;
    uv_pipe_t pipes[H__PIPES];
    bool open[H__PIPES];
    uv_timer_t timer;
    bool timer_open;
    int open_handles;
    uv_write_t wreq;
    char *stdin_copy;
    size_t stdin_len;
    pid_t sup_pid;
    int pidfd;
    pid_t prog_pid;
    int64_t limit_ms;
    size_t stdout_max, stderr_keep;
    uint64_t start_ns, end_ns;
    bool status_done; /* EOF on the status pipe: the supervisor is gone */
    bool term_sent;
    bool backstop_fired;
    bool draining;
    /* stdout */
    char *out;
    size_t out_len, out_cap;
    /* stderr ring */
    char *ring;
    size_t ring_pos;
    uint64_t err_total;
    /* status */
    char status[STATUS_MAX + 1];
    size_t status_len;
    bd_exec_result res;
    bd_exec_result *heap_res; /* handed to `done` */
    bd_exec_done_fn done;
    void *payload;
    bool ring_full_size; /* the ring has its stderr_keep bytes (allocated on first use) */
};

static void signal_supervisor(bd_exec *ex, int sig)
{
    if (ex->status_done)
        return;
#ifdef SYS_pidfd_send_signal
    if (ex->pidfd >= 0 && syscall(SYS_pidfd_send_signal, ex->pidfd, sig, NULL, 0) == 0)
        return;
    if (ex->pidfd >= 0)
        return; /* ESRCH: it is already gone */
#endif
    kill(ex->sup_pid, sig);
}

static void timer_cb(uv_timer_t *t);

static void arm_timer(bd_exec *ex, uint64_t ms)
{
    if (ex->timer_open)
        uv_timer_start(&ex->timer, timer_cb, ms, 0);
}

static void handle_closed(uv_handle_t *h);

static void close_pipe(bd_exec *ex, int which)
{
    if (!ex->open[which])
        return;
    ex->open[which] = false;
    uv_close((uv_handle_t *)&ex->pipes[which], handle_closed);
}

/* Ask the supervisor to kill the program now (output limit, cancel). */
static void kill_request(bd_exec *ex)
{
    if (ex->status_done || ex->term_sent)
        return;
    ex->term_sent = true;
    signal_supervisor(ex, SIGTERM);
    if (!ex->backstop_fired)
        arm_timer(ex, BD_EXEC_BACKSTOP_MS);
}

static void maybe_close_timer(bd_exec *ex)
{
    if (ex->timer_open && !ex->open[H_OUT] && !ex->open[H_ERR] && !ex->open[H_ST] &&
        !ex->open[H_IN]) {
        ex->timer_open = false;
        uv_close((uv_handle_t *)&ex->timer, handle_closed);
    }
}

static void after_pipe_closed(bd_exec *ex)
{
    if (ex->status_done && !ex->open[H_OUT] && !ex->open[H_ERR])
        close_pipe(ex, H_IN);
    maybe_close_timer(ex);
}

/* libuv calls alloc_cb and then the read callback, one read at a time per loop, and a
 * loop runs on one thread: one scratch buffer per thread suffices. */
static _Thread_local char read_buf[65536];

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    buf->base = read_buf;
    buf->len = sizeof(read_buf);
}

static void out_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    bd_exec *ex = s->data;
    if (n > 0) {
        size_t take = (size_t)n;
        bool over = false;
        if (ex->out_len + take > ex->stdout_max) {
            take = ex->stdout_max - ex->out_len;
            over = true;
        }
        if (ex->out_len + take + 1 > ex->out_cap) {
            size_t cap = ex->out_cap ? ex->out_cap : 4096;
            while (cap < ex->out_len + take + 1)
                cap *= 2;
            if (cap > ex->stdout_max + 1)
                cap = ex->stdout_max + 1;
            if (cap < ex->out_len + take + 1)
                cap = ex->out_len + take + 1;
            char *grown = realloc(ex->out, cap);
            if (!grown) {
                /* Out of memory: treat as over the cap rather than lose the case. */
                over = true;
                take = 0;
            } else {
                ex->out = grown;
                ex->out_cap = cap;
            }
        }
        if (take) {
            memcpy(ex->out + ex->out_len, buf->base, take);
            ex->out_len += take;
        }
        if (over) {
            ex->res.output_limit = true;
            kill_request(ex);
            close_pipe(ex, H_OUT);
            after_pipe_closed(ex);
        }
        return;
    }
    if (n < 0) {
        close_pipe(ex, H_OUT);
        after_pipe_closed(ex);
    }
}

static void err_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    bd_exec *ex = s->data;
    if (n > 0) {
        size_t len = (size_t)n;
        const char *p = buf->base;
        if (ex->res.err_head_len < BD_EXEC_STDERR_HEAD) {
            size_t k = BD_EXEC_STDERR_HEAD - ex->res.err_head_len;
            if (k > len)
                k = len;
            memcpy(ex->res.err_head + ex->res.err_head_len, p, k);
            ex->res.err_head_len += k;
        }
        ex->err_total += len;
        if (!ex->ring_full_size) {
            /* Most programs write nothing to stderr: the ring is made on first use. If
             * there is no memory for it, the tail is lost, not the case. */
            char *grown = realloc(ex->ring, ex->stderr_keep + 1);
            if (grown) {
                ex->ring = grown;
                ex->ring_full_size = true;
            }
        }
        if (ex->ring_full_size) {
            /* Keep only the last stderr_keep bytes. */
            if (len >= ex->stderr_keep) {
                memcpy(ex->ring, p + len - ex->stderr_keep, ex->stderr_keep);
                ex->ring_pos = 0;
            } else {
                size_t first = ex->stderr_keep - ex->ring_pos;
                if (first > len)
                    first = len;
                memcpy(ex->ring + ex->ring_pos, p, first);
                memcpy(ex->ring, p + first, len - first);
                ex->ring_pos = (ex->ring_pos + len) % ex->stderr_keep;
            }
        }
        return;
    }
    if (n < 0) {
        close_pipe(ex, H_ERR);
        after_pipe_closed(ex);
    }
}

static void parse_status_lines(bd_exec *ex)
{
    ex->status[ex->status_len] = '\0';
    const char *p = strstr(ex->status, "started ");
    if (p && ex->prog_pid <= 0) {
        int v;
        if (sscanf(p, "started %d", &v) == 1 && v > 0)
            ex->prog_pid = (pid_t)v;
    }
}

static void st_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    bd_exec *ex = s->data;
    if (n > 0) {
        size_t take = (size_t)n;
        if (take > STATUS_MAX - ex->status_len)
            take = STATUS_MAX - ex->status_len;
        memcpy(ex->status + ex->status_len, buf->base, take);
        ex->status_len += take;
        parse_status_lines(ex);
        return;
    }
    if (n < 0) {
        ex->status_done = true;
        ex->end_ns = uv_hrtime();
        close_pipe(ex, H_ST);
        /* Everything the program left is dead; its pipes reach EOF right away unless a
         * backstop kill left some holder behind — drain briefly, then close. */
        if (ex->open[H_OUT] || ex->open[H_ERR]) {
            ex->draining = true;
            arm_timer(ex, DRAIN_MS);
        } else if (ex->timer_open) {
            uv_timer_stop(&ex->timer);
        }
        after_pipe_closed(ex);
    }
}

static void write_cb(uv_write_t *req, int status)
{
    (void)status; /* EPIPE: the program closed stdin without reading — its business */
    bd_exec *ex = req->data;
    close_pipe(ex, H_IN);
    maybe_close_timer(ex);
}

static void timer_cb(uv_timer_t *t)
{
    bd_exec *ex = t->data;
    if (!ex->status_done && !ex->backstop_fired) {
        /* The supervisor missed its own deadline (or ignored our request): kill it and
         * the program's group ourselves. */
        ex->backstop_fired = true;
        signal_supervisor(ex, SIGKILL);
        if (ex->prog_pid > 0)
            kill(-ex->prog_pid, SIGKILL);
        arm_timer(ex, BD_EXEC_BACKSTOP_MS);
        return;
    }
    /* Drain time is over (or the supervisor never went away): close everything. */
    if (!ex->status_done) {
        ex->status_done = true;
        ex->end_ns = uv_hrtime();
    }
    for (int i = 0; i < H__PIPES; i++)
        close_pipe(ex, i);
    maybe_close_timer(ex);
}

static void reverse(char *a, size_t n)
{
    for (size_t i = 0; i < n / 2; i++) {
        char t = a[i];
        a[i] = a[n - 1 - i];
        a[n - 1 - i] = t;
    }
}

static void finish(bd_exec *ex)
{
    bd_exec_result *r = ex->heap_res;
    *r = ex->res;
    ex->status[ex->status_len] = '\0';
    const char *err_line = strstr(ex->status, "error ");
    if (err_line) {
        char stage[32] = "";
        int e = 0;
        char what[200] = "";
        if (sscanf(err_line, "error %31s %d %199[^\n]", stage, &e, what) >= 2)
            snprintf(r->setup_error, sizeof(r->setup_error), "%s%s%s: %s", stage,
                     what[0] ? " " : "", what, strerror(e));
        else
            snprintf(r->setup_error, sizeof(r->setup_error), "setup failed");
    }
    const char *done = strstr(ex->status, "done ");
    r->started = ex->prog_pid > 0 && !err_line;
    if (done) {
        int code = -1, sig = 0, timeout = 0, killed = 0, leftovers = 0, stuck = 0;
        long long cpu = 0, wall = 0;
        long rss = 0;
        sscanf(done,
               "done code=%d signal=%d timeout=%d killed=%d cpu_us=%lld maxrss_kb=%ld "
               "wall_us=%lld leftovers=%d stuck=%d",
               &code, &sig, &timeout, &killed, &cpu, &rss, &wall, &leftovers, &stuck);
        r->exited = code >= 0 && sig == 0;
        r->exit_code = code >= 0 ? code : 0;
        r->term_signal = sig;
        r->timed_out = timeout != 0;
        r->killed = killed != 0;
        r->cpu_us = cpu;
        r->maxrss_kb = rss;
        r->run_wall_us = wall;
        r->leftovers = leftovers;
    } else if (!err_line) {
        /* No report: the supervisor was killed (by the backstop, or by the program). */
        r->supervisor_lost = true;
        r->term_signal = SIGKILL;
        if (ex->backstop_fired && !ex->term_sent)
            r->timed_out = true;
    }
    if (!ex->end_ns)
        ex->end_ns = uv_hrtime();
    r->wall_ms = (int64_t)((ex->end_ns - ex->start_ns) / 1000000u);
    if (!done)
        r->run_wall_us = r->wall_ms * 1000;

    /* Hand over stdout and the stderr tail, linearised in place. */
    ex->out[ex->out_len] = '\0';
    r->out = ex->out;
    r->out_len = ex->out_len;
    size_t kept = ex->err_total < ex->stderr_keep ? (size_t)ex->err_total : ex->stderr_keep;
    if (!ex->ring_full_size)
        kept = 0;
    if (ex->ring_full_size && ex->err_total > ex->stderr_keep && ex->ring_pos) {
        reverse(ex->ring, ex->ring_pos);
        reverse(ex->ring + ex->ring_pos, ex->stderr_keep - ex->ring_pos);
        reverse(ex->ring, ex->stderr_keep);
    }
    ex->ring[kept] = '\0';
    r->err = ex->ring;
    r->err_len = kept;
    r->err_total = ex->err_total;

    bd_exec_done_fn done_fn = ex->done;
    void *payload = ex->payload;
    if (ex->pidfd >= 0)
        close(ex->pidfd);
    free(ex->stdin_copy);
    free(ex);
    done_fn(r, payload);
}

static void handle_closed(uv_handle_t *h)
{
    bd_exec *ex = h->data;
    if (--ex->open_handles == 0)
        finish(ex);
}

void bd_exec_result_free(bd_exec_result *res)
{
    if (!res)
        return;
    free(res->out);
    free(res->err);
    res->out = NULL;
    res->err = NULL;
}

void bd_exec_result_delete(bd_exec_result *res)
{
    bd_exec_result_free(res);
    free(res);
}

/* Free an exec that never started. */
static void exec_free_early(bd_exec *ex)
{
    if (!ex)
        return;
    if (ex->pidfd > 0)
        close(ex->pidfd);
    free(ex->ring);
    free(ex->out);
    free(ex->heap_res);
    free(ex->stdin_copy);
    free(ex);
}

int bd_exec_start(bd_exec **out, uv_loop_t *loop, bd_exec_ctx *ctx, const bd_exec_spec *spec,
                  bd_exec_done_fn done, void *payload, bd_err *err)
{
    if (out)
        *out = NULL;
    if (!spec || !spec->argv || !spec->argv[0] || !done)
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0, "no program to run");
    const char *prog = spec->argv[0];
    if (prog[0] != '/' || !allowed(ctx, prog))
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                          "'%s' is not an allowlisted absolute path; only the configured "
                          "interpreter and declared SUT binaries may run",
                          prog);
    if (spec->limits.wall_ms <= 0)
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                          "refusing to run '%s' without a wall-clock deadline", prog);
    if (!spec->cwd || spec->cwd[0] != '/')
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                          "refusing to run '%s' without an absolute working directory", prog);

    /* Serialise cwd + (wrapper +) argv. */
    size_t argc = 0, bytes = strlen(spec->cwd) + 1;
    for (size_t i = 0; i < ctx->n_wrapper; i++, argc++)
        bytes += strlen(ctx->wrapper[i]) + 1;
    for (size_t i = 0; spec->argv[i]; i++, argc++)
        bytes += strlen(spec->argv[i]) + 1;
    if (bytes > REQ_STRINGS_MAX)
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                          "the command line of '%s' is too long (%zu bytes, at most %u)", prog,
                          bytes, (unsigned)REQ_STRINGS_MAX);

    bd_exec *ex = calloc(1, sizeof(*ex));
    char *strings = malloc(bytes);
    size_t keep = spec->limits.stderr_keep ? spec->limits.stderr_keep : BD_EXEC_STDERR_KEEP;
    if (ex) {
        ex->ring = malloc(1); /* grown to keep + 1 on the first stderr byte */
        ex->out_cap = 4096;
        ex->out = malloc(ex->out_cap);
        ex->heap_res = calloc(1, sizeof(bd_exec_result));
    }
    if (ex && spec->stdin_len) {
        ex->stdin_copy = malloc(spec->stdin_len);
        if (ex->stdin_copy)
            memcpy(ex->stdin_copy, spec->stdin_buf, spec->stdin_len);
    }
    if (!ex || !strings || !ex->ring || !ex->out || !ex->heap_res ||
        (spec->stdin_len && !ex->stdin_copy)) {
        exec_free_early(ex);
        free(strings);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    size_t off = 0;
    size_t l = strlen(spec->cwd) + 1;
    memcpy(strings, spec->cwd, l);
    off += l;
    for (size_t i = 0; i < ctx->n_wrapper; i++) {
        l = strlen(ctx->wrapper[i]) + 1;
        memcpy(strings + off, ctx->wrapper[i], l);
        off += l;
    }
    for (size_t i = 0; spec->argv[i]; i++) {
        l = strlen(spec->argv[i]) + 1;
        memcpy(strings + off, spec->argv[i], l);
        off += l;
    }
    req_hdr h;
    memset(&h, 0, sizeof(h));
    h.magic = REQ_MAGIC;
    h.iso = (uint32_t)ctx->iso;
    h.wall_ms = spec->limits.wall_ms;
    h.as_bytes = spec->limits.as_bytes;
    h.cpu_s = spec->limits.cpu_s;
    h.nproc = spec->limits.nproc ? spec->limits.nproc : ctx->nproc;
    h.fsize = spec->limits.fsize_bytes;
    h.nofile = spec->limits.nofile;
    h.argc = (uint32_t)argc;
    h.strings_len = (uint32_t)bytes;

    ex->loop = loop;
    ex->stdin_len = spec->stdin_len;
    ex->limit_ms = spec->limits.wall_ms;
    ex->stdout_max = spec->limits.stdout_max ? spec->limits.stdout_max : BD_EXEC_STDOUT_MAX;
    ex->stderr_keep = keep;
    ex->done = done;
    ex->payload = payload;
    ex->pidfd = -1;
    ex->res.isolation = ctx->iso;

    /* Pipes: [0] is the read end. The child's ends go to the server. */
    int p[H__PIPES][2];
    for (int i = 0; i < H__PIPES; i++)
        p[i][0] = p[i][1] = -1;
    int rc = 0;
    for (int i = 0; i < H__PIPES && rc == 0; i++)
        if (pipe2(p[i], O_CLOEXEC) != 0)
            rc = bd_err_errno(err, BD_E_IO, errno, NULL, "cannot create a pipe");
    int child_fds[REQ_FDS] = {p[H_IN][0], p[H_OUT][1], p[H_ERR][1], p[H_ST][1]};
    int mine[H__PIPES] = {p[H_IN][1], p[H_OUT][0], p[H_ERR][0], p[H_ST][0]};
    if (rc == 0) {
        ex->start_ns = uv_hrtime();
        int call = -1;
        for (int attempt = 0; attempt < 2 && call == -1; attempt++) {
            if (ctx->ctl < 0 && server_start(ctx, err) != 0) {
                call = -2;
                break;
            }
            call = server_call(ctx, &h, strings, child_fds, &ex->sup_pid, &ex->pidfd, err);
            if (call == -1)
                server_drop(ctx); /* dead or stuck server: start a fresh one once */
        }
        if (call == -1)
            bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                       "the exec server '%s' does not answer; is it a benchdesk binary?",
                       ctx->helper);
        if (call != 0)
            rc = -1;
    }
    free(strings);
    for (int i = 0; i < REQ_FDS; i++)
        if (child_fds[i] >= 0)
            close(child_fds[i]);
    if (rc != 0) {
        for (int i = 0; i < H__PIPES; i++)
            if (mine[i] >= 0)
                close(mine[i]);
        exec_free_early(ex);
        return -1;
    }

    /* From here on the supervisor runs: every failure is reported through `done`. */
    for (int i = 0; i < H__PIPES; i++) {
        uv_pipe_init(loop, &ex->pipes[i], 0);
        ex->pipes[i].data = ex;
        ex->open[i] = true;
        ex->open_handles++;
        if (uv_pipe_open(&ex->pipes[i], mine[i]) != 0) {
            close(mine[i]);
            kill_request(ex);
        }
    }
    uv_timer_init(loop, &ex->timer);
    ex->timer.data = ex;
    ex->timer_open = true;
    ex->open_handles++;
    arm_timer(ex, (uint64_t)spec->limits.wall_ms + BD_EXEC_BACKSTOP_MS);

    uv_read_start((uv_stream_t *)&ex->pipes[H_OUT], alloc_cb, out_read);
    uv_read_start((uv_stream_t *)&ex->pipes[H_ERR], alloc_cb, err_read);
    uv_read_start((uv_stream_t *)&ex->pipes[H_ST], alloc_cb, st_read);
    if (ex->stdin_len) {
        uv_buf_t b = uv_buf_init(ex->stdin_copy, (unsigned)ex->stdin_len);
        ex->wreq.data = ex;
        if (uv_write(&ex->wreq, (uv_stream_t *)&ex->pipes[H_IN], &b, 1, write_cb) != 0)
            close_pipe(ex, H_IN);
    } else {
        close_pipe(ex, H_IN);
    }
    if (out)
        *out = ex;
    return 0;
}

void bd_exec_cancel(bd_exec *ex)
{
    if (!ex || ex->status_done)
        return;
    ex->res.cancelled = true;
    kill_request(ex);
}

typedef struct sync_state {
    bd_exec_result *out;
    bool done;
} sync_state;

static void sync_done(bd_exec_result *res, void *payload)
{
    sync_state *s = payload;
    *s->out = *res;
    free(res);
    s->done = true;
}

int bd_exec_run(bd_exec_result *out, bd_exec_ctx *ctx, const bd_exec_spec *spec, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "cannot create an event loop");
    sync_state s = {out, false};
    int rc = bd_exec_start(NULL, &loop, ctx, spec, sync_done, &s, err);
    if (rc == 0)
        uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc;
}

static void reap_timer_cb(uv_timer_t *t)
{
    bd_exec_ctx *ctx = t->data;
    for (server *s = ctx->servers; s; s = s->next)
        if (!s->exited && s->proc.pid > 0)
            uv_process_kill(&s->proc, SIGKILL);
}

void bd_exec_ctx_free(bd_exec_ctx *ctx)
{
    if (!ctx)
        return;
    server_drop(ctx);
    /* Each server exits on EOF; reap them (SIGKILL after 2 s). */
    uv_timer_t t;
    uv_timer_init(&ctx->sloop, &t);
    t.data = ctx;
    uv_timer_start(&t, reap_timer_cb, 2000, 0);
    for (;;) {
        bool pending = false;
        for (server *s = ctx->servers; s; s = s->next)
            if (!s->exited)
                pending = true;
        if (!pending)
            break;
        uv_run(&ctx->sloop, UV_RUN_ONCE);
    }
    uv_close((uv_handle_t *)&t, NULL);
    for (server *s = ctx->servers; s; s = s->next) {
        s->proc.data = s;
        if (!s->closed && !uv_is_closing((uv_handle_t *)&s->proc))
            uv_close((uv_handle_t *)&s->proc, server_close_cb);
    }
    uv_run(&ctx->sloop, UV_RUN_DEFAULT);
    uv_loop_close(&ctx->sloop);
    while (ctx->servers) {
        server *n = ctx->servers->next;
        free(ctx->servers);
        ctx->servers = n;
    }
    free_strv(ctx->allow, ctx->n_allow);
    free_strv(ctx->wrapper, ctx->n_wrapper);
    free(ctx->helper);
    free(ctx);
}

/* ---- the user's own program in the foreground (the pager of the result view) -------- */

int bd_exec_foreground(const char *command, const char *path, int *exit_status, bd_err *err)
{
    struct sigaction ign = {0}, old_int, old_quit;
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* "$@" keeps the file one argument whatever its name; the command is the user's
         * own setting ($PAGER), word-split by the shell as other programs do. */
        execl("/bin/sh", "sh", "-c", "exec $0 \"$@\"", command, path, (char *)NULL);
        _exit(127);
    }
    int rc = 0, status = 0;
    if (pid < 0) {
        rc = bd_err_errno(err, BD_E_SPAWN, errno, NULL, "cannot start '%s'", command);
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    return rc;
}
