/*
 * exec.h — the one chokepoint that creates processes (docs/runner.md).
 *
 * No other file in src/ or ui/ may call fork, vfork, exec*, system, popen, posix_spawn
 * or uv_spawn (tests/cli/test_chokepoint.sh scans the tree). Everything that runs an
 * untrusted or external program goes through bd_exec_start / bd_exec_run, which enforce:
 *   - argv[0] absolute and on the context's allowlist; no shell, ever;
 *   - exactly the four-key scrubbed environment (BD_EXEC_ENV), never the parent's;
 *   - a mandatory wall-clock deadline, then SIGKILL of the program's process group and
 *     of every descendant that outlived it (the supervisor is a child subreaper, so a
 *     grandchild that called setsid and double-forked is still found and killed);
 *   - rlimits: address space, CPU seconds, processes, file size, open files, core 0;
 *   - stdio as pipes only: stdin is a buffer written then closed; stdout is capped (the
 *     program is killed at the cap); stderr keeps its first 256 and its last 64 KiB.
 *
 * How a program is started (one design for every isolation class):
 *
 *   benchdesk (libuv loop) ──control socket──> exec server ──fork──> supervisor ──fork──> program
 *
 * The exec server is the benchdesk binary itself in a hidden mode (argv[1] ==
 * BD_EXEC_HELPER_ARG), spawned once per context with uv_spawn — the only uv_spawn in
 * the tree. Per case, the parent sends the spec and the four pipe ends (SCM_RIGHTS)
 * over a SOCK_SEQPACKET socket; the server forks a supervisor, which applies the
 * isolation class, forks the program, sets its rlimits and execve()s it, enforces the
 * deadline, reaps it with wait4 (exact exit status, CPU time and peak RSS), kills what
 * is left, and reports one status line on a fourth pipe. Forking from the small,
 * long-lived server keeps the per-case cost independent of the size of the parent
 * (the TUI with a large bench loaded) and of the parent's shared libraries.
 *
 * Isolation classes plug in at the supervisor: `subprocess` is what is described
 * above; `namespaces` starts the program with clone() into new user, PID, mount,
 * network, IPC, UTS and cgroup namespaces and builds the jail of jail.h (minimal
 * read-only root, Landlock, seccomp, unprivileged uid) before the execve. An external
 * wrapper given with bd_exec_ctx_set_wrapper is put in front of the real argv (the real
 * interpreter after it); the rlimits apply to the wrapper and whatever it execs. The
 * class is chosen once per context (per run) and reported in every result.
 *
 * Threading: a context and its execs belong to one thread — the one that runs the
 * loop; that thread must outlive the context (the server dies with it by
 * PR_SET_PDEATHSIG). bd_exec_ctx_new ignores SIGPIPE for the whole process (a program
 * that closes its stdin early must not kill benchdesk) and marks the process
 * non-dumpable, so a same-uid program cannot read /proc/<benchdesk>/environ (root can).
 */
#ifndef BD_EXEC_H
#define BD_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "err.h"

/* argv[1] of the benchdesk binary that selects the hidden exec-server mode
 * (`benchdesk __exec-server v1 <parent pid>`). exec.c enters it from a constructor,
 * before main() runs, in every program linked with the core — benchdesk and the test
 * programs alike; main() need not (but may) dispatch it itself. */
#define BD_EXEC_HELPER_ARG "__exec-server"

/* The scrubbed environment, exactly (docs/runner.md#the-environment). */
#define BD_EXEC_ENV_PATH     "PATH=/usr/bin:/bin"
#define BD_EXEC_ENV_LANG     "LANG=C.UTF-8"
#define BD_EXEC_ENV_HASHSEED "PYTHONHASHSEED=0"
#define BD_EXEC_ENV_IOENC    "PYTHONIOENCODING=utf-8"
#define BD_EXEC_ENV_COUNT    4

/* Defaults and caps (docs/runner.md#limits). */
#define BD_EXEC_STDOUT_MAX     (1024u * 1024u)
#define BD_EXEC_STDERR_KEEP    (64u * 1024u)
#define BD_EXEC_STDERR_HEAD    256u
#define BD_EXEC_FSIZE_DEFAULT  (64ull * 1024 * 1024)
#define BD_EXEC_NOFILE_DEFAULT 256u
#define BD_EXEC_NPROC_EXTRA    64u
#define BD_EXEC_MAX_ARGV_BYTES (60u * 1024u)
/* How long after the deadline the parent waits for the supervisor before killing it
 * itself (the supervisor enforces the deadline; this is the backstop). */
#define BD_EXEC_BACKSTOP_MS 2000

/* ---- isolation classes ------------------------------------------------------------- */

#define BD_ISOLATION_CLASSES(X)                                                                    \
    X(BD_ISO_SUBPROCESS, "subprocess")                                                             \
    X(BD_ISO_NAMESPACES, "namespaces")

typedef enum {
#define BD_X(name, str) name,
    BD_ISOLATION_CLASSES(BD_X)
#undef BD_X
        BD_ISO__COUNT
} bd_isolation;

/* "subprocess" / "namespaces"; "?" for an invalid value. */
const char *bd_isolation_str(bd_isolation iso);

/* Parse a class name. Returns 0 or -1 (unknown name). */
int bd_isolation_parse(const char *s, bd_isolation *out);

/* True when this build and this machine can provide `iso`. When false and `why` is
 * non-NULL, writes a one-line reason (at most `whylen` bytes). The namespaces class is
 * probed for real once per process by a clone of it; a clone of a process running other
 * threads can hang for good in libc (set*id waits on threads the clone does not have, a
 * lock another thread held stays held), so the probe is made only while the process runs
 * one thread — a program that starts threads first (the TUI) calls
 * bd_isolation_probe_early() before it does; later, with threads, an unprobed class is
 * reported unavailable with that reason rather than risk the hang. */
bool bd_isolation_available(bd_isolation iso, char *why, size_t whylen);

/* Probe the namespaces class now (see bd_isolation_available). Call before any thread
 * starts. Never fails: the result is kept for bd_isolation_available. */
void bd_isolation_probe_early(void);

/* Choose the class for a run from the operator's request: "auto" (the strongest
 * available class), "subprocess" or "namespaces". A requested class that is not
 * available is refused (isolation.unavailable, exit 3) unless `allow_weaker`, in which
 * case the strongest available class is chosen and *weakened is set (may be NULL).
 * usage.bad_args for an unknown name. */
int bd_isolation_choose(bd_isolation *out, bool *weakened, const char *requested, bool allow_weaker,
                        bd_err *err);

/* ---- limits and specs -------------------------------------------------------------- */

typedef struct bd_exec_limits {
    int64_t wall_ms;      /* mandatory, > 0: the deadline from start */
    uint64_t as_bytes;    /* RLIMIT_AS; 0 = leave unchanged */
    uint64_t cpu_s;       /* RLIMIT_CPU soft (hard = soft + 1); 0 = leave unchanged */
    uint64_t nproc;       /* RLIMIT_NPROC; 0 = the context's default (see below) */
    uint64_t fsize_bytes; /* RLIMIT_FSIZE; 0 = leave unchanged */
    uint64_t nofile;      /* RLIMIT_NOFILE; 0 = leave unchanged */
    size_t stdout_max;    /* kill when stdout exceeds this; 0 = BD_EXEC_STDOUT_MAX */
    size_t stderr_keep;   /* keep the last bytes of stderr; 0 = BD_EXEC_STDERR_KEEP */
} bd_exec_limits;

/* Defaults for a rubric: 60 s, 1024 MB, CPU = wall clock, file size 64 MB, 256 files. */
#define BD_EXEC_LIMITS_INIT                                                                        \
    {                                                                                              \
        60000, 1024ull * 1024 * 1024, 60, 0, BD_EXEC_FSIZE_DEFAULT, BD_EXEC_NOFILE_DEFAULT, 0, 0   \
    }

typedef struct bd_exec_spec {
    const char *const *argv; /* NULL-terminated; argv[0] absolute and allowlisted */
    const char *cwd;         /* absolute directory the program starts in */
    const void *stdin_buf;   /* written to the program's stdin, then closed; may be NULL */
    size_t stdin_len;
    bd_exec_limits limits;
    /* "NAME=value" entries added after the four scrubbed keys (a command SUT's
     * sut.env_pass, docs/recording.md#secrets-only-what-the-signed-registration-names),
     * NULL-terminated; NULL for none. A name the scrubbed set already has is refused
     * (exec.not_allowed). */
    const char *const *env_extra;
    /* Keep the host network namespace and allow AF_INET/AF_INET6 sockets (record
     * --unsafe-network only); every other protection of the class stays. */
    bool host_network;
} bd_exec_spec;

/* What happened. All buffers are owned by the result (bd_exec_result_free). */
typedef struct bd_exec_result {
    bd_isolation isolation; /* the class the program ran under */
    bool started;           /* the program was exec'd (false: see setup_error) */
    char setup_error[256];  /* why the program could not be started, or "" */
    bool exited;            /* exited normally: exit_code valid */
    int exit_code;
    int term_signal; /* killed by this signal, or 0 */
    bool timed_out;  /* the wall-clock deadline was reached */
    bool killed;     /* killed on the parent's request (output limit or cancel) */
    bool output_limit;
    bool cancelled;
    bool supervisor_lost; /* the supervisor died without reporting (parent backstop) */
    int64_t wall_ms;      /* the parent's measurement: start to everything gone */
    int64_t run_wall_us;  /* the supervisor's: fork of the program to its exit */
    int64_t cpu_us;       /* user + system CPU of the program (and reaped children) */
    int64_t maxrss_kb;    /* peak resident set */
    int leftovers;        /* descendants that outlived the program and were killed */
    char *out;            /* stdout, NUL-terminated, at most stdout_max bytes */
    size_t out_len;
    char *err; /* the last stderr_keep bytes of stderr, NUL-terminated */
    size_t err_len;
    uint64_t err_total;                 /* bytes the program wrote to stderr in all */
    char err_head[BD_EXEC_STDERR_HEAD]; /* the first bytes of stderr (not NUL-terminated) */
    size_t err_head_len;
} bd_exec_result;

/* Free the buffers of `res` (not the struct itself). */
void bd_exec_result_free(bd_exec_result *res);

/* Free the buffers of `res` and `res` itself (for the result handed to a done callback). */
void bd_exec_result_delete(bd_exec_result *res);

/* ---- contexts ---------------------------------------------------------------------- */

typedef struct bd_exec_ctx bd_exec_ctx;

/* New context running programs under `iso`. `helper` is the absolute path of the
 * benchdesk binary that provides the exec server (NULL: this process's own executable).
 * The server is started on first use. The RLIMIT_NPROC default is computed here: the
 * number of processes the real uid runs now plus BD_EXEC_NPROC_EXTRA (RLIMIT_NPROC
 * counts every process of the uid, so a plain 64 would forbid any fork to a user with a
 * desktop session; as root the kernel does not enforce it at all). Refuses a class that
 * is not available (isolation.unavailable). Caller frees with bd_exec_ctx_free. */
int bd_exec_ctx_new(bd_exec_ctx **out, bd_isolation iso, const char *helper, bd_err *err);

/* Put the absolute path `path` on the allowlist (must name an executable regular file).
 * exec.not_allowed otherwise. */
int bd_exec_ctx_allow(bd_exec_ctx *ctx, const char *path, bd_err *err);

/* Run every program through `wrapper` (a NULL-terminated argv whose [0] is absolute and
 * allowlisted): the program's argv is appended after it. NULL removes the wrapper. */
int bd_exec_ctx_set_wrapper(bd_exec_ctx *ctx, const char *const *wrapper, bd_err *err);

bd_isolation bd_exec_ctx_isolation(const bd_exec_ctx *ctx);

/* The RLIMIT_NPROC applied when a spec leaves nproc at 0. */
uint64_t bd_exec_ctx_nproc(const bd_exec_ctx *ctx);

/* Warm starts (docs/runner.md, "Warm starts"): from now on every program of `ctx` is a
 * rubric `python -s rubric.py` (python: the interpreter `warm_helper` embeds, absolute)
 * forked from a warm interpreter — the binary `warm_helper` (benchdesk-warm), started
 * now, jailed, with `staging` (a private directory under /tmp or /dev/shm, where every
 * request's cwd must lie) shown in its jail; each request's cwd appears in its case's
 * jail in `shown_tmp` (the run's temp root, under /tmp), as a cold start's would.
 * `servers` warm interpreters are started (one per worker
 * slot; at most 8), each in its own jail; a case goes to the one with the fewest cases
 * running. Only under namespaces. Returns 0 once every warm interpreter is ready, or -1
 * (env.spawn_failed with the reason one could not start; the context is unchanged:
 * cold). */
int bd_exec_ctx_set_warm(bd_exec_ctx *ctx, const char *warm_helper, const char *python,
                         const char *staging, const char *shown_tmp, int servers, bd_err *err);

/* True when `ctx` starts programs warm. */
bool bd_exec_ctx_warm(const bd_exec_ctx *ctx);

/* Stop the exec server and free. Every exec started with `ctx` must have completed. */
void bd_exec_ctx_free(bd_exec_ctx *ctx);

/* ---- running ----------------------------------------------------------------------- */

typedef struct bd_exec bd_exec;

/* Called once per started exec, on the loop thread, after every pipe is closed and the
 * program and all its descendants are gone. `res` is heap-allocated and owned by the
 * callee (release it with bd_exec_result_delete). The bd_exec is already freed. */
typedef void (*bd_exec_done_fn)(bd_exec_result *res, void *payload);

/* Start the program of `spec` on `loop`. `spec` and its buffers are copied; they may be
 * freed on return. On success *out (may be NULL) is the running exec, valid until
 * `done` is called. Errors (nothing started, `done` never called): exec.not_allowed
 * (argv[0] not absolute / not allowlisted, argv too long, no deadline), env.spawn_failed
 * (the exec server could not be started or did not answer), io.error. */
int bd_exec_start(bd_exec **out, uv_loop_t *loop, bd_exec_ctx *ctx, const bd_exec_spec *spec,
                  bd_exec_done_fn done, void *payload, bd_err *err);

/* Kill the program and its descendants now; `done` follows with cancelled = true.
 * No effect after the program finished. */
void bd_exec_cancel(bd_exec *ex);

/* Run `spec` to completion on a private loop. Fills *out (caller frees with
 * bd_exec_result_free). Same errors as bd_exec_start. */
int bd_exec_run(bd_exec_result *out, bd_exec_ctx *ctx, const bd_exec_spec *spec, bd_err *err);

/* ---- helpers ----------------------------------------------------------------------- */

/* Resolve an interpreter or program once: `name` containing '/' must be absolute;
 * otherwise it is searched in /usr/bin then /bin (never the caller's PATH). The result
 * is the canonical absolute path of an executable regular file (new string, caller
 * frees). env.interpreter_missing when not found. */
int bd_exec_find_program(char **out, const char *name, bd_err *err);

/* Number of processes whose owner is the real uid (scans /proc). -1 when /proc is not
 * readable. */
long bd_exec_uid_process_count(void);

/* Name of a signal, e.g. "SIGSEGV", or "signal N" (into buf). */
const char *bd_exec_signal_name(int sig, char buf[24]);

/* Entry point of the hidden exec-server mode (see BD_EXEC_HELPER_ARG). Never returns
 * while the parent keeps the control socket open; returns an exit status on misuse. */
int bd_exec_helper_main(int argc, char **argv);

/* Run the user's `command` (word-split by /bin/sh, e.g. $PAGER) on the file `path` in the
 * foreground, on the inherited terminal, and wait for it. Not for untrusted programs: no
 * isolation, the environment as it is. SIGINT and SIGQUIT are ignored meanwhile, as
 * system(3) does. Returns 0 with *exit_status (127: not found; 128+N: killed by signal
 * N), or -1 with BD_E_SPAWN when it could not be started. The caller gives the terminal
 * up before and takes it back after. */
int bd_exec_foreground(const char *command, const char *path, int *exit_status, bd_err *err);

#endif
