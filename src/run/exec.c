/*
 * exec.c — the parent side of the one chokepoint that creates processes (see exec.h).
 *
 This file is the parent side: the isolation classes, the context (allowlist, server
 * lifetime) and each exec's libuv handles (four pipes and a timer), ending in one done
 * callback; it spawns the exec server (the one uv_spawn). exec_server.c is the helper
 * side: the server, the per-case supervisor and the program's pre-exec setup.
 */
#include "exec.h"
#include "exec_wire.h"
#include "jail.h"
#include "warm.h"

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

/* The threads of this process, from /proc/self/status (0 when it cannot tell). */
static long thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    long n = 0;
    char line[256];
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %ld", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* The namespaces jail, tried for real once per process: a throwaway child in every
 * namespace builds the whole jail and exits (jail.h). Only while the process runs one
 * thread (bd_isolation_available's contract). */
static bool jail_probe(char *why, size_t whylen)
{
    static int state; /* 0 untried, 1 works, -1 does not */
    static char reason[512];
    if (state == 0) {
        bd_err e = BD_ERR_INIT;
        if (thread_count() > 1) {
            snprintf(reason, sizeof(reason),
                     "namespaces isolation was not probed: this process already runs threads, "
                     "and a clone of it could hang (an internal error: report it)");
            state = -1;
        } else if (bd_jail_prepare(NULL, NULL, &e) != 0) {
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

void bd_isolation_probe_early(void)
{
    (void)jail_probe(NULL, 0);
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
    /* On Linux "auto" means namespaces: a fallback is never silent
     * (docs/isolation.md#choosing-a-class). */
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
    if (!allow_weaker) {
        bd_err_set(err, BD_E_ISOLATION_UNAVAILABLE, NULL, 0, 0, "%s", why);
        return bd_err_advise(err, BD_ACT_ALLOW_WEAKER, "%s", bd_isolation_str(fallback));
    }
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

/* ======================================================================================
 * Parent side
 * ==================================================================================== */

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

/* Slots: one exec server cold; warm, one warm interpreter per worker slot, at most
 * BD_WARM_SLOTS_MAX (more jobs than that share them, the least busy first). */
#define BD_EXEC_SERVERS_MAX BD_WARM_SLOTS_MAX

/* As root, a run's warm uid block is chosen by this process's pid (exec_warm.c): one warm
 * context at a time in a process. */
static bool warm_block_taken;

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
    char *warm_helper;                  /* warm starts: benchdesk-warm, or NULL (cold) */
    char *warm_python;                  /* the interpreter it embeds (argv[0] of every rubric) */
    char *warm_staging;                 /* the directory the cases' temp dirs are made in */
    char *warm_tmp;                     /* where they appear in the cases' jails */
    uv_loop_t sloop;                    /* private loop owning the server process handles */
    server *servers;                    /* every server started, newest first (reaped at the end) */
    size_t nslots;                      /* live servers: 1 cold, one per worker slot warm */
    int ctl[BD_EXEC_SERVERS_MAX];       /* our end of slot k's control socket, or -1 */
    unsigned live[BD_EXEC_SERVERS_MAX]; /* cases slot k started that have not finished */
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
    ctx->nslots = 1;
    for (size_t k = 0; k < BD_EXEC_SERVERS_MAX; k++)
        ctx->ctl[k] = -1;
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
    /* As root, a namespaces case runs as a host uid of its own (jail.h): the limit is
     * then exactly the case's — its processes plus its init. */
    if (iso == BD_ISO_NAMESPACES && geteuid() == 0)
        ctx->nproc = BD_EXEC_NPROC_EXTRA + 1;
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

/* Drop slot k's live server: close our end of the socket (it exits on EOF). Its handle
 * stays on the list until bd_exec_ctx_free reaps it. */
static void server_drop(bd_exec_ctx *ctx, size_t k)
{
    if (ctx->ctl[k] >= 0) {
        close(ctx->ctl[k]);
        ctx->ctl[k] = -1;
    }
}

static void servers_drop(bd_exec_ctx *ctx)
{
    for (size_t k = 0; k < BD_EXEC_SERVERS_MAX; k++)
        server_drop(ctx, k);
}

/* Warm: the first message names benchdesk's pid, the slot, the temp root the cases' cwds
 * appear in (its length first) and the staging directory:
 * "warm2 <pid> <slot> <slots> <temp root length> <temp root><staging dir>". Returns 0,
 * or -1 (slot k's server is dropped). */
static int warm_hello_send(bd_exec_ctx *ctx, size_t k)
{
    char msg[2 * PATH_MAX + 64];
    int len = snprintf(msg, sizeof(msg), "warm2 %d %zu %zu %zu %s%s", (int)getpid(), k, ctx->nslots,
                       strlen(ctx->warm_tmp), ctx->warm_tmp, ctx->warm_staging);
    if (len > 0 && (size_t)len < sizeof(msg) &&
        send(ctx->ctl[k], msg, (size_t)len, MSG_NOSIGNAL) == len)
        return 0;
    server_drop(ctx, k);
    return -1;
}

/* The warm interpreter answers "ready" once it is jailed, initialised and has imported
 * its allowlist, or "fail <why>". Returns 0, or -1 (env.spawn_failed with the reason;
 * slot k's server is dropped). */
static int warm_hello_wait(bd_exec_ctx *ctx, size_t k, bd_err *err)
{
    char reply[320];
    ssize_t n = -1;
    if (ctx->ctl[k] >= 0) {
        struct pollfd pfd = {ctx->ctl[k], POLLIN, 0};
        int pr;
        while ((pr = poll(&pfd, 1, 30000)) < 0 && errno == EINTR)
            ;
        if (pr > 0)
            while ((n = recv(ctx->ctl[k], reply, sizeof(reply) - 1, 0)) < 0 && errno == EINTR)
                ;
    }
    if (n > 0) {
        reply[n] = '\0';
        if (strcmp(reply, "ready") == 0)
            return 0;
    }
    server_drop(ctx, k);
    return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0, "the warm interpreter did not start: %s",
                      n > 5 && strncmp(reply, "fail ", 5) == 0 ? reply + 5 : "no answer");
}

/* Start slot k's server process (warm: and send its first message, without waiting
 * for the answer). Returns 0, or -1 with err set. */
static int server_spawn(bd_exec_ctx *ctx, size_t k, bd_err *err)
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
    /* The warm interpreter's command line is the cold start's (see exec_warm.c). */
    char *wargs[] = {ctx->warm_python, "-s", "rubric.py", NULL};
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = sv[1];
    stdio[1].flags = UV_IGNORE;
    stdio[2].flags = UV_IGNORE;
    uv_process_options_t o;
    memset(&o, 0, sizeof(o));
    o.exit_cb = server_exit_cb;
    o.file = ctx->warm_helper ? ctx->warm_helper : ctx->helper;
    o.args = ctx->warm_helper ? wargs : args;
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
    ctx->ctl[k] = sv[0];
    if (ctx->warm_helper && warm_hello_send(ctx, k) != 0)
        return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                          "the warm interpreter did not start: no answer");
    return 0;
}

/* Start slot k's server and, warm, wait until it is ready. Returns 0 or -1 (err set). */
static int server_start(bd_exec_ctx *ctx, size_t k, bd_err *err)
{
    if (server_spawn(ctx, k, err) != 0)
        return -1;
    return ctx->warm_helper ? warm_hello_wait(ctx, k, err) : 0;
}

/* Send one request and read the reply. Returns 0 with the supervisor's pid (and pidfd,
 * or -1), -1 on a transport failure (server gone: caller may restart and retry), -2 on
 * a refusal by the server (err set). */
static int server_call(bd_exec_ctx *ctx, size_t k, const req_hdr *h, const char *strings,
                       const int fds[REQ_FDS], pid_t *pid, int *pidfd, bd_err *err)
{
    struct iovec iov[2] = {{(void *)h, sizeof(*h)}, {(void *)strings, h->strings_len}};
    fd_cmsg u;
    struct msghdr msg;
    fd_msg_init(&msg, iov, 2, &u, fds);
    ssize_t n;
    while ((n = sendmsg(ctx->ctl[k], &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return -1;
    struct pollfd pfd = {ctx->ctl[k], POLLIN, 0};
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
    while ((n = recvmsg(ctx->ctl[k], &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
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
    bool warm;           /* started by the warm interpreter: prog_pid is not a host pid */
    unsigned *slot_live; /* the count of the slot that started it, or NULL */
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
        /* Warm: the pid is the warm jail's, not the host's (the program dies with its
         * supervisor there). */
        if (ex->prog_pid > 0 && !ex->warm)
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

    if (ex->slot_live)
        (*ex->slot_live)--;
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

/* Check a spec before anything is allocated: an allowlisted absolute program, a deadline,
 * an absolute cwd, extra environment entries that are NAME=value and none of the scrubbed
 * keys. On success *argc, *envc and *bytes get the counts and size of the request's strings
 * (cwd, wrapper, argv, env) and 0 is returned; -1 with err set (exec.refused). */
static int check_spec(const bd_exec_ctx *ctx, const bd_exec_spec *spec, size_t *argc, size_t *envc,
                      size_t *bytes, bd_err *err)
{
    if (!spec || !spec->argv || !spec->argv[0])
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
    *argc = 0;
    *bytes = strlen(spec->cwd) + 1;
    for (size_t i = 0; i < ctx->n_wrapper; i++, (*argc)++)
        *bytes += strlen(ctx->wrapper[i]) + 1;
    for (size_t i = 0; spec->argv[i]; i++, (*argc)++)
        *bytes += strlen(spec->argv[i]) + 1;
    /* Extra environment (a SUT's env_pass): NAME=value, never one of the scrubbed keys. */
    for (*envc = 0; spec->env_extra && spec->env_extra[*envc]; (*envc)++) {
        const char *kv = spec->env_extra[*envc];
        const char *eq = strchr(kv, '=');
        bool scrubbed = false;
        for (size_t k = 0; eq && scrubbed_env[k]; k++)
            scrubbed = scrubbed || (strncmp(scrubbed_env[k], kv, (size_t)(eq - kv) + 1) == 0);
        if (!eq || eq == kv || scrubbed || *envc >= REQ_ENV_MAX)
            return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                              "refusing environment entry %zu for '%s': not NAME=value, one of "
                              "the scrubbed keys, or more than %d entries",
                              *envc + 1, prog, REQ_ENV_MAX);
        *bytes += strlen(kv) + 1;
    }
    if (*bytes > REQ_STRINGS_MAX)
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0,
                          "the command line of '%s' is too long (%zu bytes, at most %u)", prog,
                          *bytes, (unsigned)REQ_STRINGS_MAX);
    return 0;
}

/* A new exec for `spec` with its buffers (stdout, the stderr ring, the result, a copy of
 * stdin), not yet started: free it with exec_free_early. NULL when out of memory. */
static bd_exec *exec_alloc(uv_loop_t *loop, const bd_exec_ctx *ctx, const bd_exec_spec *spec,
                           bd_exec_done_fn done, void *payload)
{
    bd_exec *ex = calloc(1, sizeof(*ex));
    if (!ex)
        return NULL;
    ex->ring = malloc(1); /* grown to keep + 1 on the first stderr byte */
    ex->out_cap = 4096;
    ex->out = malloc(ex->out_cap);
    ex->heap_res = calloc(1, sizeof(bd_exec_result));
    if (spec->stdin_len) {
        ex->stdin_copy = malloc(spec->stdin_len);
        if (ex->stdin_copy)
            memcpy(ex->stdin_copy, spec->stdin_buf, spec->stdin_len);
    }
    if (!ex->ring || !ex->out || !ex->heap_res || (spec->stdin_len && !ex->stdin_copy)) {
        exec_free_early(ex);
        return NULL;
    }
    ex->loop = loop;
    ex->stdin_len = spec->stdin_len;
    ex->limit_ms = spec->limits.wall_ms;
    ex->stdout_max = spec->limits.stdout_max ? spec->limits.stdout_max : BD_EXEC_STDOUT_MAX;
    ex->stderr_keep = spec->limits.stderr_keep ? spec->limits.stderr_keep : BD_EXEC_STDERR_KEEP;
    ex->done = done;
    ex->payload = payload;
    ex->pidfd = -1;
    ex->warm = ctx->warm_helper != NULL;
    ex->res.isolation = ctx->iso;
    return ex;
}

/* Copy `s` (with its NUL) to strings + *off and advance *off. */
static void pack_string(char *strings, size_t *off, const char *s)
{
    size_t l = strlen(s) + 1;
    memcpy(strings + *off, s, l);
    *off += l;
}

/* The request for the exec server: the header (isolation, limits, counts) and its
 * strings, cwd, wrapper, argv and extra environment, NUL-separated in `strings` (`bytes`
 * long, as check_spec measured). */
static void pack_request(req_hdr *h, char *strings, const bd_exec_ctx *ctx,
                         const bd_exec_spec *spec, size_t argc, size_t envc, size_t bytes)
{
    size_t off = 0;
    pack_string(strings, &off, spec->cwd);
    for (size_t i = 0; i < ctx->n_wrapper; i++)
        pack_string(strings, &off, ctx->wrapper[i]);
    for (size_t i = 0; spec->argv[i]; i++)
        pack_string(strings, &off, spec->argv[i]);
    for (size_t i = 0; i < envc; i++)
        pack_string(strings, &off, spec->env_extra[i]);
    memset(h, 0, sizeof(*h));
    h->magic = REQ_MAGIC;
    h->iso = (uint32_t)ctx->iso;
    h->wall_ms = spec->limits.wall_ms;
    h->as_bytes = spec->limits.as_bytes;
    h->cpu_s = spec->limits.cpu_s;
    h->nproc = spec->limits.nproc ? spec->limits.nproc : ctx->nproc;
    h->fsize = spec->limits.fsize_bytes;
    h->nofile = spec->limits.nofile;
    h->argc = (uint32_t)argc;
    h->strings_len = (uint32_t)bytes;
    h->envc = (uint32_t)envc;
    h->flags = spec->host_network ? REQ_F_HOST_NETWORK : 0;
}

/* The slot whose server takes the next case: the one with the fewest cases running
 * (the lowest on a tie). With one server per worker slot, a case finishing frees its
 * server for the next case, so each slot keeps its own server. */
static size_t slot_pick(const bd_exec_ctx *ctx)
{
    size_t best = 0;
    for (size_t k = 1; k < ctx->nslots; k++)
        if (ctx->live[k] < ctx->live[best])
            best = k;
    return best;
}

/* Make the four pipes, hand the child's ends to the exec server with the request
 * (starting the server, and restarting it once when it does not answer) and close them
 * here. On success `mine` holds this side's ends (stdin write, stdout, stderr and status
 * read) and the supervisor runs (ex->sup_pid, ex->pidfd); returns 0. On failure every
 * pipe is closed and -1 is returned with err set. */
static int request_start(bd_exec *ex, bd_exec_ctx *ctx, const req_hdr *h, const char *strings,
                         int mine[H__PIPES], bd_err *err)
{
    /* Pipes: [0] is the read end. The child's ends go to the server. */
    int p[H__PIPES][2];
    for (int i = 0; i < H__PIPES; i++)
        p[i][0] = p[i][1] = -1;
    int rc = 0;
    for (int i = 0; i < H__PIPES && rc == 0; i++)
        if (pipe2(p[i], O_CLOEXEC) != 0)
            rc = bd_err_errno(err, BD_E_IO, errno, NULL, "cannot create a pipe");
    int child_fds[REQ_FDS] = {p[H_IN][0], p[H_OUT][1], p[H_ERR][1], p[H_ST][1]};
    mine[H_IN] = p[H_IN][1];
    mine[H_OUT] = p[H_OUT][0];
    mine[H_ERR] = p[H_ERR][0];
    mine[H_ST] = p[H_ST][0];
    if (rc == 0) {
        ex->start_ns = uv_hrtime();
        int call = -1;
        size_t k = slot_pick(ctx);
        for (int attempt = 0; attempt < 2 && call == -1; attempt++) {
            if (ctx->ctl[k] < 0 && server_start(ctx, k, err) != 0) {
                call = -2;
                break;
            }
            call = server_call(ctx, k, h, strings, child_fds, &ex->sup_pid, &ex->pidfd, err);
            if (call == -1)
                server_drop(ctx, k); /* dead or stuck server: start a fresh one once */
        }
        if (call == 0) {
            ctx->live[k]++;
            ex->slot_live = &ctx->live[k];
        }
        if (call == -1)
            bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                       "the exec server '%s' does not answer; is it a benchdesk binary?",
                       ctx->helper);
        if (call != 0)
            rc = -1;
    }
    for (int i = 0; i < REQ_FDS; i++)
        if (child_fds[i] >= 0)
            close(child_fds[i]);
    if (rc != 0)
        for (int i = 0; i < H__PIPES; i++)
            if (mine[i] >= 0)
                close(mine[i]);
    return rc;
}

/* The supervisor runs: watch this side's pipe ends and the backstop timer on the loop and
 * write stdin. A failure from here on is reported through `done`. */
static void attach_loop(bd_exec *ex, const int mine[H__PIPES], int64_t wall_ms)
{
    for (int i = 0; i < H__PIPES; i++) {
        uv_pipe_init(ex->loop, &ex->pipes[i], 0);
        ex->pipes[i].data = ex;
        ex->open[i] = true;
        ex->open_handles++;
        if (uv_pipe_open(&ex->pipes[i], mine[i]) != 0) {
            close(mine[i]);
            kill_request(ex);
        }
    }
    uv_timer_init(ex->loop, &ex->timer);
    ex->timer.data = ex;
    ex->timer_open = true;
    ex->open_handles++;
    arm_timer(ex, (uint64_t)wall_ms + BD_EXEC_BACKSTOP_MS);

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
}

int bd_exec_start(bd_exec **out, uv_loop_t *loop, bd_exec_ctx *ctx, const bd_exec_spec *spec,
                  bd_exec_done_fn done, void *payload, bd_err *err)
{
    if (out)
        *out = NULL;
    if (!done)
        return bd_err_set(err, BD_E_EXEC_REFUSED, NULL, 0, 0, "no program to run");
    size_t argc = 0, envc = 0, bytes = 0;
    if (check_spec(ctx, spec, &argc, &envc, &bytes, err) != 0)
        return -1;
    bd_exec *ex = exec_alloc(loop, ctx, spec, done, payload);
    char *strings = malloc(bytes);
    if (!ex || !strings) {
        exec_free_early(ex);
        free(strings);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    req_hdr h;
    pack_request(&h, strings, ctx, spec, argc, envc, bytes);
    int mine[H__PIPES];
    int rc = request_start(ex, ctx, &h, strings, mine, err);
    free(strings);
    if (rc != 0) {
        exec_free_early(ex);
        return -1;
    }
    /* From here on the supervisor runs: every failure is reported through `done`. */
    attach_loop(ex, mine, spec->limits.wall_ms);
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
    servers_drop(ctx);
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
    if (ctx->warm_helper && geteuid() == 0)
        warm_block_taken = false;
    free(ctx->warm_helper);
    free(ctx->warm_python);
    free(ctx->warm_staging);
    free(ctx->warm_tmp);
    free(ctx);
}

/* Start `servers` warm servers (clamped to 1..BD_EXEC_SERVERS_MAX) side by side, then
 * wait for each to be ready. Returns 0, or -1 with the first failure in err. */
static int warm_servers_start(bd_exec_ctx *ctx, int servers, bd_err *err)
{
    size_t n = servers < 1 ? 1 : (size_t)servers;
    if (n > BD_EXEC_SERVERS_MAX)
        n = BD_EXEC_SERVERS_MAX;
    ctx->nslots = n;
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++)
        rc = server_spawn(ctx, k, err);
    for (size_t k = 0; k < n && rc == 0; k++)
        rc = warm_hello_wait(ctx, k, err);
    return rc;
}

int bd_exec_ctx_set_warm(bd_exec_ctx *ctx, const char *warm_helper, const char *python,
                         const char *staging, const char *shown_tmp, int servers, bd_err *err)
{
    if (ctx->iso != BD_ISO_NAMESPACES || ctx->warm_helper)
        return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                          "a warm start needs the namespaces isolation class");
    if (!warm_helper || warm_helper[0] != '/' || !is_exec_file(warm_helper))
        return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0, "the warm interpreter '%s' is not installed",
                          warm_helper ? warm_helper : "benchdesk-warm");
    if (geteuid() == 0 && warm_block_taken)
        return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                          "another warm run is under way in this process (as root)");
    servers_drop(ctx);
    ctx->warm_helper = strdup(warm_helper);
    ctx->warm_python = strdup(python);
    ctx->warm_staging = strdup(staging);
    ctx->warm_tmp = strdup(shown_tmp);
    int rc = -1;
    if (!ctx->warm_helper || !ctx->warm_python || !ctx->warm_staging || !ctx->warm_tmp)
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    else
        rc = warm_servers_start(ctx, servers, err);
    if (rc != 0) {
        servers_drop(ctx);
        ctx->nslots = 1;
        free(ctx->warm_helper);
        free(ctx->warm_python);
        free(ctx->warm_staging);
        free(ctx->warm_tmp);
        ctx->warm_helper = ctx->warm_python = ctx->warm_staging = ctx->warm_tmp = NULL;
    } else if (geteuid() == 0) {
        warm_block_taken = true;
    }
    return rc;
}

bool bd_exec_ctx_warm(const bd_exec_ctx *ctx)
{
    return ctx->warm_helper != NULL;
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
