/*
 * exec_warm.c — the processes of a warm start (docs/runner.md, "Warm starts"): the
 * `benchdesk-warm` binary. It is the exec server of exec_server.c (this file builds that
 * file with BD_WARM_SERVER: the same supervisor, jail, limits, init and reports per case)
 * running in two processes:
 *
 *   benchdesk ──control socket──> launcher ──socket──> warm server ──vfork──> supervisor
 *   ──clone(CLONE_VM)──> init ──fork──> rubric
 *
 * the launcher on the host side; the warm server jailed (Python initialised, json imported,
 * the rubric compiled once, what it names of the allowlist imported); the init forks the
 * rubric, then executes `benchdesk-supervisor init1`, and the supervisor
 * `benchdesk-supervisor v1` ("the spare as a small program" below): only the rubric is a
 * copy of the interpreter.
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
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
/* The seccomp filter this server compiled, as the supervisor program takes it ("-" when
 * none: the program then serves only what its prepared init can). Written by the server
 * before a spare is made (filter_text); each spare only reads it. */
static char filter_hex[BD_JAIL_FILTER_HEX_MAX] = "-";

/* filter_hex from the compiled filter; while there is none, the compile is tried again (a
 * failure at the server's start does not last the whole run). */
static void filter_text(void)
{
    if (strcmp(filter_hex, "-") != 0)
        return;
    if (bd_jail_filter_hex(filter_hex, sizeof(filter_hex)) >= 0)
        return;
    bd_jail_server_init();
    if (bd_jail_filter_hex(filter_hex, sizeof(filter_hex)) < 0)
        strcpy(filter_hex, "-");
}

/* As root, a free case uid of this server's share of the warm jail's block into *k (0
 * when not root) and next_case_uid. Returns false (errno EAGAIN) when none is free. */
static bool case_uid_pick(unsigned *k)
{
    *k = 0;
    if (warm_as_root) {
        for (*k = uid_first; *k < BD_WARM_UIDS && slot_pid[*k] != 0; *k += uid_step)
            ;
        if (*k >= BD_WARM_UIDS) {
            errno = EAGAIN;
            return false;
        }
    }
    next_case_uid = (uid_t)*k;
    return true;
}

/* The case uid *k is the supervisor `pid`'s until it is reaped (server_reaped). */
static void case_uid_hold(unsigned k, pid_t pid)
{
    if (pid > 0 && warm_as_root)
        slot_pid[k] = pid;
}

/* Fork a supervisor (or the spare) of the warm server: Python's at-fork protocol around
 * it, and, as root, a free case uid of the warm jail's block for it. */
static pid_t server_fork(void)
{
    unsigned k;
    if (!case_uid_pick(&k))
        return -1;
    bd_warm_py_before_fork();
    pid_t pid = fork();
    if (pid == 0)
        return 0;
    bd_warm_py_after_fork_parent();
    case_uid_hold(k, pid);
    return pid;
}

static pid_t spare_exec(int sock, pid_t server); /* after exec_server.c, below */

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

/* The rubric's process of a prepared spare, before its case comes: what it can do for the
 * case ahead, with no Python and nothing of the case (exec_server.c, prepared_rubric). */
static void warm_rubric_waits(void)
{
    bd_warm_py_populate();
}

static void __attribute__((noreturn)) warm_program(char **argv, int status_fd)
{
    if (cmdline_at)
        memcpy(cmdline_at, cmdline_saved, cmdline_len);
    bd_warm_case_main(argv, status_fd);
}

#include "exec_server.c"

/* ---- the spare as a small program ---------------------------------------------------------
 * A spare forked from the warm server is a third copy of the interpreter in every case
 * (supervisor, init, rubric), and copying one costs more than anything else a warm case
 * does where page-table writes are slow (docs/runner.md#where-the-time-goes). Only the
 * rubric needs to be one. So a child that shares the server's memory until it executes
 * (vfork: the supervisor-to-be) clones the case's init into its fresh namespaces sharing
 * that memory too (CLONE_VM | CLONE_VFORK); the init, PID 1 there, forks the rubric's
 * process — the one copy, PID 2 — and executes `benchdesk-supervisor init1`; then the
 * supervisor-to-be executes `benchdesk-supervisor v1` (exec_supervisor.c), which takes the
 * prepared init over and serves the request as any spare does. The rubric waits for its
 * case from the init, which builds the jail around it (exec_server.c, prepared_rubric).
 * When the program cannot be executed, the server forks its spares from then on
 * (spare_make). */

static int supervisor_exe = -1; /* benchdesk-supervisor (O_PATH), or -1: spares are forks */
/* Set by the vfork child, or the init, that failed: SPARE_NO_INIT (the init or the
 * rubric's fork: this time only) or SPARE_NO_EXEC (the program: from then on the spares
 * are forks). */
static volatile int spare_exec_failed;
enum { SPARE_NO_INIT = 1, SPARE_NO_EXEC = 2 };
static char *init_buf; /* each prepared rubric receives its case into its copy */
/* The init runs this far below the vfork child's frame on the server's own stack (the
 * main thread's, which grows on demand), so that the rubric forked from it runs on the
 * main stack as a cold start's Python does, with all of RLIMIT_STACK but this. */
#define INIT_STACK_GAP (64 * 1024)

/* What the vfork child and the init need, on the server's stack. */
typedef struct spare_exec_args {
    int sock;         /* the spare's end of the server's socket */
    int init_sock[2]; /* [0] the supervisor's end, [1] the init's */
    int init_rep[2];  /* the init's report pipe */
    int rub_sock[2];  /* [0] the init's end, [1] the rubric's */
    int sync_rd;      /* the jail's sync pipe, the init's end */
    int sync_wr;      /* the jail's sync pipe, the supervisor's end */
    pid_t server;
    const sigset_t *mask; /* the server's signal mask before the vfork */
} spare_exec_args;

/* Decimal of `v` into buf (16 bytes). */
static const char *spare_num(char *buf, unsigned long v)
{
    char t[16];
    int n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0 && n < 15);
    for (int i = 0; i < n; i++)
        buf[i] = t[n - 1 - i];
    buf[n] = '\0';
    return buf;
}

/* Put src[0..n) at base + i (n <= 8, base + n <= 16), through copies above them;
 * benchdesk-supervisor's descriptor dup'ed above too, into *exe_out. Returns 0 or an
 * errno. */
static int place_fds(const int *src, int n, int base, int *exe_out)
{
    int tmp[8];
    if ((*exe_out = fcntl(supervisor_exe, F_DUPFD_CLOEXEC, 16)) < 0)
        return errno;
    for (int i = 0; i < n; i++)
        if ((tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16)) < 0)
            return errno;
    for (int i = 0; i < n; i++)
        if (dup2(tmp[i], base + i) != base + i)
            return errno;
    return 0;
}

/* The case's init, PID 1 of its fresh namespaces: it shares the server's memory (the
 * server and the vfork child wait) and runs on the server's stack below the vfork
 * child's frame, so it writes nothing of the server's but spare_exec_failed and what the
 * server's own fork would write there (libc's at-fork locks, taken and released). It
 * forks the rubric's process (which never returns here), then executes the init program
 * with 3 its socket, 4 its report pipe, 5 the jail's sync pipe (read end), 6 the rubric's
 * socket. */
static int init_start(void *arg)
{
    const spare_exec_args *a = arg;
    setpgid(0, 0); /* the case's group, which the rubric joins */
    if (bd_jail_scope_self() != 0) {
        spare_exec_failed = SPARE_NO_INIT;
        _exit(127);
    }
    pid_t rubric = fork();
    if (rubric == 0)
        prepared_rubric(a->rub_sock[1], init_buf, sizeof(req_hdr) + REQ_STRINGS_MAX);
    if (rubric < 0) {
        spare_exec_failed = SPARE_NO_INIT;
        _exit(127);
    }
    const int src[4] = {a->init_sock[1], a->init_rep[1], a->sync_rd, a->rub_sock[0]};
    int exe = -1;
    if (bd_jail_keep_caps_across_exec() == 0 && place_fds(src, 4, 3, &exe) == 0) {
        char rub_s[16], uid_s[16];
        const char *const *want = spare_prepared_argv();
        const char *argv[7 + BD_JAIL_MAX_SHOWN + 1] = {
            "benchdesk-supervisor",
            "init1",
            warm_as_root ? "1" : "0",
            spare_num(uid_s, (unsigned long)next_case_uid),
            shown_tmp,
            spare_num(rub_s, (unsigned long)rubric),
            "--"};
        for (size_t i = 0; want[i] && i < BD_JAIL_MAX_SHOWN; i++)
            argv[7 + i] = want[i];
        char *const envp[] = {NULL};
        syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
    }
    kill(rubric, SIGKILL);
    spare_exec_failed = SPARE_NO_EXEC;
    _exit(127);
}

/* The vfork child: it runs on the server's stack and shares its memory, so it writes
 * nothing of the server's but spare_exec_failed, and never returns. The supervisor's
 * signals and session (which the init inherits, as from a forked spare), the init cloned
 * into its namespaces (init_start: it returns here once it executed its program), the
 * supervisor's descriptors put where the program expects them (4 the init's socket, 5
 * its report pipe, 6 the jail's sync pipe, 7 the server's socket), then the program. */
static void __attribute__((noreturn, noinline)) spare_exec_child(spare_exec_args *a)
{
    sigset_t block;
    supervisor_signals(&block); /* with every signal blocked: no handler of the server runs */
    sigprocmask(SIG_SETMASK, a->mask, NULL);
    sigprocmask(SIG_BLOCK, &block, NULL);
    char here;
    uintptr_t top = ((uintptr_t)&here - INIT_STACK_GAP) & ~(uintptr_t)63;
    pid_t init = clone(init_start, (void *)top,
                       (int)bd_jail_clone_flags() | CLONE_VM | CLONE_VFORK | SIGCHLD, a);
    int e = init < 0 ? errno : spare_exec_failed;
    int exe = -1;
    if (!e) {
        const int src[4] = {a->init_sock[0], a->init_rep[0], a->sync_wr, a->sock};
        e = place_fds(src, 4, 4, &exe);
        close(3); /* the server's control socket: not the spare's */
    }
    if (!e) {
        char pid_s[16], init_s[16], uid_s[16];
        const char *const *want = spare_prepared_argv();
        const char *argv[9 + BD_JAIL_MAX_SHOWN + 1] = {
            "benchdesk-supervisor",
            "v1",
            spare_num(pid_s, (unsigned long)a->server),
            spare_num(init_s, (unsigned long)init),
            warm_as_root ? "1" : "0",
            spare_num(uid_s, (unsigned long)next_case_uid),
            shown_tmp,
            filter_hex,
            "--"};
        for (size_t i = 0; want[i] && i < BD_JAIL_MAX_SHOWN; i++)
            argv[9 + i] = want[i];
        char *const envp[] = {NULL};
        syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
    }
    if (init > 0)
        kill(init, SIGKILL); /* then the server's to reap */
    if (!spare_exec_failed)
        spare_exec_failed = init < 0 ? SPARE_NO_INIT : SPARE_NO_EXEC;
    _exit(127);
}

/* The warm server's spare as the small program (see above). Returns its pid; -2 when the
 * server forks the spare instead (no program, or it could not be executed). */
static pid_t spare_exec(int sock, pid_t server)
{
    filter_text();
    size_t cap = sizeof(req_hdr) + REQ_STRINGS_MAX;
    unsigned k;
    /* The init needs room below the vfork child on the main stack (INIT_STACK_GAP). */
    struct rlimit stack;
    if (getrlimit(RLIMIT_STACK, &stack) != 0 ||
        (stack.rlim_cur != RLIM_INFINITY && stack.rlim_cur < 16 * INIT_STACK_GAP))
        return -2;
    if (supervisor_exe < 0 || (!init_buf && !(init_buf = malloc(cap))) || !case_uid_pick(&k))
        return -2;
    bd_err jerr = BD_ERR_INIT;
    spare_exec_args a = {sock, {-1, -1}, {-1, -1}, {-1, -1}, -1, -1, server, NULL};
    pid_t pid = -2;
    bd_jail_set_host_network(false);
    supervisor_identity();
    if (bd_jail_prepare_ahead(spare_prepared_argv(), &jerr) != 0 ||
        pipe2(a.init_rep, O_CLOEXEC | O_NONBLOCK) != 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, a.init_sock) != 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, a.rub_sock) != 0)
        goto out;
    a.sync_wr = bd_jail_sync_write_fd();
    a.sync_rd = bd_jail_sync_fd();
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    a.mask = &old;
    spare_exec_failed = 0;
    bd_warm_py_before_fork();
    pid_t child = vfork();
    if (child == 0)
        spare_exec_child(&a);
    bd_warm_py_after_fork_parent();
    sigprocmask(SIG_SETMASK, &old, NULL);
    int failed = child > 0 ? spare_exec_failed : 0;
    if (failed) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
    } else if (child > 0) {
        case_uid_hold(k, child);
        pid = child;
    }
    if (failed == SPARE_NO_EXEC) { /* from now on the spares are forks */
        close(supervisor_exe);
        supervisor_exe = -1;
    }
out:
    for (int i = 0; i < 2; i++) {
        if (a.init_sock[i] >= 0)
            close(a.init_sock[i]);
        if (a.init_rep[i] >= 0)
            close(a.init_rep[i]);
        if (a.rub_sock[i] >= 0)
            close(a.rub_sock[i]);
    }
    bd_jail_forget(); /* the sync pipe and the shown files: the spare's and the init's now */
    return pid;
}

/* ---- the warm server (jailed) --------------------------------------------------------- */

/* Which of the server's pages a case writes (warm.h, bd_warm_py_learn_child): learned
 * once, by a fork that runs our own stand-in for a rubric. A fork that has not answered
 * within 5 s is killed and nothing is learned (cases then fault as before). */
static void learn_case_writes(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return;
    bd_warm_py_before_fork();
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        bd_warm_py_learn_child(p[1]);
    }
    bd_warm_py_after_fork_parent();
    close(p[1]);
    if (pid > 0) {
        struct pollfd pf = {p[0], POLLIN, 0};
        int ready;
        while ((ready = poll(&pf, 1, 5000)) < 0 && errno == EINTR)
            ;
        if (ready > 0)
            (void)bd_warm_py_learn_read(p[0]);
        else
            kill(pid, SIGKILL);
    }
    close(p[0]); /* before the wait: a fork still writing gets EPIPE and exits */
    while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static void __attribute__((noreturn)) warm_server(int sock)
{
    char why[200] = "";
    bd_err jerr = BD_ERR_INIT;
    if (bd_jail_warm_child(&jerr) != 0)
        snprintf(why, sizeof(why), "the warm jail: %.120s (errno %d)", jerr.msg, bd_jail_errno());
    /* fds 0..2 are /dev/null (Python's first sys.std* live there, never used), the socket 3. */
    /* and benchdesk-supervisor at 4, when there is one (close-on-exec; first moved above
     * the four places, which it may hold) */
    int exe = supervisor_exe >= 0 ? fcntl(supervisor_exe, F_DUPFD_CLOEXEC, 5) : -1;
    /* /dev/null above the places too: opened at 3 (free when the launcher's end of the
     * socket was there), the socket's dup2 would replace it, and Python's streams would
     * write into the launcher's socket. */
    int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (dn >= 0 && dn < 5) {
        int high = fcntl(dn, F_DUPFD_CLOEXEC, 5);
        close(dn);
        dn = high;
    }
    if (dn < 0 || dup2(sock, 3) != 3 || dup2(dn, 0) != 0 || dup2(dn, 1) != 1 || dup2(dn, 2) != 2)
        _exit(0);
    supervisor_exe = exe >= 0 && dup2(exe, 4) == 4 ? 4 : -1;
    if (supervisor_exe == 4)
        fcntl(4, F_SETFD, FD_CLOEXEC);
    close_from(supervisor_exe == 4 ? 5 : 4);
    signal(SIGPIPE, SIG_IGN);
    if (!why[0])
        (void)bd_warm_py_init(warm_interp, why, sizeof(why));
    char msg[256];
    snprintf(msg, sizeof(msg), why[0] ? "fail %s" : "ready", why);
    server_reply(3, msg, -1);
    if (why[0])
        _exit(0);
    learn_case_writes(); /* while benchdesk makes its first request */
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

/* benchdesk-supervisor, next to this program (a build tree, or libexec/benchdesk/), opened
 * for the warm server: the jail does not show the directory it lies in. None: the warm
 * server forks its spares. */
static void supervisor_open(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0)
        return;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    const char name[] = "/benchdesk-supervisor";
    if (!slash || (size_t)(slash - path) + sizeof(name) > sizeof(path))
        return;
    memcpy(slash, name, sizeof(name));
    supervisor_exe = open(path, O_PATH | O_CLOEXEC);
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
    supervisor_open();
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
