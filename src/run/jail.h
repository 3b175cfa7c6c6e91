/*
 * jail.h — the `namespaces` isolation class (docs/runner.md): what the per-case supervisor
 * (exec.c) does around the program's process so a rubric sees a minimal, read-only,
 * offline, private world.
 *
 * exec.c owns every process; this module only sets up the one it is handed. The order,
 * in the supervisor of one case (a single-threaded fork of the exec server):
 *
 *   bd_jail_prepare(cwd, argv[0])   open what the jail will show, hand the case's temp
 *                                    dir to the jail uid (when root), make the sync pipe
 *   clone(bd_jail_clone_flags())    exec.c: the program starts in new user, PID, mount,
 *                                    network, IPC and UTS namespaces — PID 1 of its own
 *                                    PID namespace, so when it dies the kernel kills every
 *                                    process left in it (setsid and double-fork included)
 *   bd_jail_parent(pid)             supervisor: write the uid/gid maps, release the child
 *   bd_jail_child()                 program: become the jail uid, build the root (tmpfs +
 *                                    read-only binds + fresh /proc + private /tmp +
 *                                    the writable cwd at its own path, its case/ and
 *                                    rubric.py read-only), pivot_root into it, Landlock
 *   (rlimits, PR_SET_NO_NEW_PRIVS)  exec.c
 *   bd_jail_lockdown()              program: the seccomp filter, last thing before execve
 *
 * Identity: inside the jail the program is uid/gid BD_JAIL_UID with no capabilities.
 * Outside it is the invoking user, or (when benchdesk runs as root) a uid of the case's
 * own from the BD_JAIL_HOST_BASE range — then the case's temp dir is chowned to that uid
 * first so the rubric can write its own cwd.
 *
 * State lives in one structure per process (jail_state.c): one jail per process (the
 * supervisor of one case, or the availability probe). Nothing here creates a process.
 */
#ifndef BD_JAIL_H
#define BD_JAIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "jail_defs.h"

/* Exec server, once at its start: compile the seccomp filter so each case's
 * bd_jail_prepare only copies it (a failure here is retried, and reported, per case). */
void bd_jail_server_init(void);

/* The compiled seccomp filter as text, for the supervisor program's command line: 16 hex
 * digits an instruction into out (cap bytes, NUL included). Returns the digits written, or
 * -1 when no filter was compiled or cap is too small (BD_JAIL_FILTER_HEX_MAX always fits). */
int bd_jail_filter_hex(char *out, size_t cap);
/* The supervisor program, at its start: take the filter bd_jail_filter_hex wrote as this
 * process's compiled filter. Returns 0, or -1 for text that is no filter (not taken: no filter is
 * loaded from it). */
int bd_jail_filter_from_hex(const char *hex);

/* Supervisor, before bd_jail_prepare: whether the program keeps the host network
 * (`record --unsafe-network`, docs/recording.md). When on: no new network namespace, the
 * seccomp filter and Landlock allow AF_INET/AF_INET6 sockets and TCP, and the resolver
 * files (/etc/resolv.conf, /etc/hosts, /etc/ssl) are shown with "hosts: files dns";
 * every other namespace, the minimal root, the rest of the filter and the limits stay.
 * Off by default; a supervisor serves one program, so it is never reset. */
void bd_jail_set_host_network(bool on);

/* Flags for the program's clone(): CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS |
 * CLONE_NEWNET (not with the host network) | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP
 * (the caller adds SIGCHLD). */
unsigned long bd_jail_clone_flags(void);

/* Supervisor, before the program's clone. `cwd` is the program's working directory
 * (absolute; not "/", "/tmp", nor in the system dirs, /etc, /proc or /dev; as root it
 * must be mode 0700 and root's or already the case uid's, as mkdtemp makes it; NULL
 * for the availability probe). It appears at the same path in the jail (inside the
 * private /tmp when under /tmp). `argv` is the program's NULL-terminated command line
 * (may be NULL): argv[0] and every other argument that names a regular file by absolute
 * path (a command SUT's script) are bound read-only at the same path when they are not
 * under the system directories the jail shows (at most BD_JAIL_MAX_SHOWN; directories
 * are never shown). As root, the cwd tree (same file system, no symlinks followed) and
 * the stdio pipes are chowned to the case's host uid. Returns 0, or -1 with
 * isolation.unavailable; the errno of the failing call is kept for bd_jail_errno(). */
int bd_jail_prepare(const char *cwd, const char *const *argv, bd_err *err);

/* Supervisor, after the clone returned `child` (> 0): write the child's uid and gid
 * maps and let it go on. Closes the module's descriptors the supervisor no longer needs
 * (it keeps the sync pipe's write end until it exits: the child watches it to learn of
 * the supervisor's death). Returns 0 or -1 (err set; the caller kills the child). */
int bd_jail_parent(pid_t child, bd_err *err);

/* Program, right after the clone: wait for the maps, become BD_JAIL_UID, build the
 * jail's root and pivot into it, chdir to the cwd (same path), set PR_SET_PDEATHSIG
 * (SIGKILL) again (a change of credentials clears it), PR_SET_NO_NEW_PRIVS, and apply
 * Landlock when the kernel has it. Only system calls and stack buffers: it may run in
 * the child of a multi-threaded process (the probe). Returns 0 or -1 (err set). */
int bd_jail_child(bd_err *err);

/* The two halves of bd_jail_child, for an init started ahead of its case (the prepared
 * spare, docs/runner.md#how-a-warm-case-runs). bd_jail_child_wait: wait for the maps (as
 * bd_jail_child). bd_jail_child_finish: the rest of bd_jail_child, once the case's cwd is
 * known (bd_jail_cwd_set). Each returns 0 or -1 (err set). */
int bd_jail_child_wait(bd_err *err);
int bd_jail_child_finish(bd_err *err);

/* ---- a jail prepared ahead of its case ------------------------------------------------
 * The spare supervisor of a warm server prepares what does not depend on the request
 * before it arrives (docs/runner.md#how-a-warm-case-runs):
 *
 *   bd_jail_prepare_ahead(argv)     spare: bd_jail_prepare without the cwd and the stdio
 *                                    hand-over (argv: the command line it expects)
 *   clone, bd_jail_parent(pid)      spare: the init's namespaces and maps
 *   bd_jail_child_wait()            init: as bd_jail_child
 *   bd_jail_child_ahead()           init: the identity, the whole root but the cwd,
 *                                    pivot_root; then it waits for its case
 *   bd_jail_prepare_cwd(cwd)        supervisor, on the request: the cwd's part of
 *                                    bd_jail_prepare (same checks, same errors; as root the
 *                                    cwd tree and the stdio pipes handed over)
 *   bd_jail_case_trees(trees)       supervisor: the cwd's case/ and rubric.py as detached
 *                                    mounts (open_tree)
 *   bd_jail_cwd_get / _set          what the supervisor checked, and the trees, passed on
 *   bd_jail_child_finish()          init: the cwd (the trees moved in read-only), chdir,
 *                                    no_new_privs, Landlock — as bd_jail_child ends */

/* What the init needs of the case's cwd: its identity as the supervisor checked it, its
 * host path and where it appears in the jail. */
typedef struct bd_jail_cwd {
    dev_t dev;
    ino_t ino;
    char path[PATH_MAX];
    char jail[PATH_MAX];
} bd_jail_cwd;

/* Spare: bd_jail_prepare for a case whose cwd comes later. Returns 0 or -1
 * (isolation.unavailable; nothing held). */
int bd_jail_prepare_ahead(const char *const *argv, bd_err *err);

/* Init prepared ahead, after bd_jail_child_wait: become the jail's user and build the
 * root but the cwd, pivot into it (read-only). Returns 0 or -1 (err set). */
int bd_jail_child_ahead(bd_err *err);

/* Supervisor, after bd_jail_prepare_ahead and the request: the cwd's part. Returns 0 or
 * -1 with bd_jail_prepare's error for the same cwd. */
int bd_jail_prepare_cwd(const char *cwd, bd_err *err);

/* Supervisor, after bd_jail_prepare_cwd: open the cwd's case/ and rubric.py (each when a
 * directory or regular file, else -1) as detached mounts into trees[0..1] (close-on-exec;
 * the caller closes them). Returns 0; 1 when a root built ahead cannot take this cwd (not
 * under /tmp, or no mount API: nothing open, take the ordinary way); -1 (err set) when the
 * cwd cannot be opened or changed since bd_jail_prepare_cwd, as bd_jail_child reports. */
int bd_jail_case_trees(int trees[2], bd_err *err);

/* Copy the cwd's fields out (supervisor) or in (init, with the trees it received, which
 * it then owns; -1 entries for none). */
void bd_jail_cwd_get(bd_jail_cwd *out);
void bd_jail_cwd_set(const bd_jail_cwd *in, const int trees[2]);

/* A prepared init handed to another supervisor process (docs/runner.md#how-a-warm-case-runs):
 * the warm server prepares ahead (bd_jail_prepare_ahead) and clones the init from a child
 * that shares its memory, which then executes the small supervisor program. The program
 * takes the jail over with bd_jail_set_case_identity (the same identity) and
 * bd_jail_adopt_ahead; the server forgets its copy with bd_jail_forget. */

/* The warm server's prepared init is a small program too, and the rubric is forked before
 * it (docs/runner.md#how-a-warm-case-runs): the init, cloned sharing the server's memory,
 * forks the rubric's process (the one copy of the interpreter) and then executes
 * `benchdesk-supervisor init1`. So the jail's mount namespace is built by one process and
 * entered by another:
 *
 *   bd_jail_adopt_init(sync_rd, argv) init program: the jail as bd_jail_prepare_ahead
 *                                     left it for the child (identity given first by
 *                                     bd_jail_set_case_identity)
 *   bd_jail_child_wait, _child_ahead  init: as above (the rubric's root moves with the pivot)
 *   bd_jail_init_finish()            init, with its case: the cwd and its read-only trees
 *   bd_jail_rubric_enter(root)       rubric: the jail's user, checked to be in the jail's
 *                                     root, into the cwd, no_new_privs, Landlock */

/* The init, before it executes the init program: its capabilities in the case's user
 * namespace (all of them, from the clone) made inheritable and ambient, so that they
 * survive the execve — its uid there is not 0 (nothing is mapped yet), and an execve
 * would otherwise drop them all. Returns 0 or -1 (errno set). */
int bd_jail_keep_caps_across_exec(void);

/* Drop every capability: none effective, permitted, inheritable (nor ambient), as an
 * execve as an unprivileged uid leaves a process. Returns 0 or -1 (errno set). */
int bd_jail_drop_caps(void);

/* The init, before it forks the rubric (Landlock ABI 6 and later; else nothing): a
 * Landlock layer of its own that handles no access but scopes signals and abstract unix
 * sockets, which the rubric inherits. Its own layer (bd_jail_rubric_enter) then leaves the
 * scope out, so the two share the scoped domain as a cold start's init and rubric do: the
 * rubric may signal its init (which relays what it gets), and nothing outside. Mounts stay
 * allowed: the layer handles no file-system access. Returns 0 or -1 (errno set); the
 * rubric must then not run (its own layer would not scope). */
int bd_jail_scope_self(void);

/* Init program: adopt the prepared jail, with the sync pipe's read end `sync_rd` (which it
 * then owns) and the command line it was prepared for. Returns 0 or -1 (err set). */
int bd_jail_adopt_init(int sync_rd, const char *const *argv, bd_err *err);

/* Init built ahead (bd_jail_child_ahead), after bd_jail_cwd_set: make the cwd and move its
 * trees in read-only, as bd_jail_child_finish does, without entering it or locking the
 * init itself. Returns 0 or -1 (err set). */
int bd_jail_init_finish(bd_err *err);

/* The rubric's process, a child of the init forked before the jail was built, once the
 * init finished it (after bd_jail_cwd_set with the case's cwd): become BD_JAIL_UID, check
 * that the init is still its parent and that "/" is the jail's root (`root_dev`,
 * `root_ino`, as the init stat()ed it), then as bd_jail_child_finish ends: into the cwd,
 * PR_SET_NO_NEW_PRIVS, Landlock (without the scope, which bd_jail_scope_self gave). Returns
 * 0 or -1 (err set). */
int bd_jail_rubric_enter(dev_t root_dev, ino_t root_ino, bd_err *err);

/* The sync pipe's write end of a prepared jail (what the adopting process gets), or -1. */
int bd_jail_sync_write_fd(void);

/* In a process that did not prepare: the jail as bd_jail_prepare_ahead left it, from the
 * identity given by bd_jail_set_case_identity and the sync pipe's write end `sync_wr`
 * (which it then owns). bd_jail_parent, bd_jail_prepare_cwd, bd_jail_case_trees and a
 * fresh bd_jail_prepare work as in the process that prepared. */
void bd_jail_adopt_ahead(int sync_wr);

/* Close this process's descriptors of its prepared jail and forget it (the identity and
 * the compiled filter stay). */
void bd_jail_forget(void);

/* The descriptor of the sync pipe this process still holds (its read end in the program
 * until the identity switch, its write end in the supervisor), or -1: one to keep open
 * when closing the rest. */
int bd_jail_sync_fd(void);

/* Program, the last step before execve (after the rlimits): install the seccomp filter
 * (libseccomp): ptrace, process_vm_readv/writev, bpf, keyctl, add_key, request_key,
 * io_uring_*, perf_event_open, kexec_*, mount and the other mount-API calls, umount2,
 * pivot_root, chroot, setns, module loading, userfaultfd, open_by_handle_at, reboot,
 * swapon/off, acct, unshare and clone with CLONE_NEWUSER, and socket/socketpair of
 * any family but AF_UNIX all kill the process (SIGSYS, which the runner reports as
 * rubric.sandbox_violation); clone3 fails with ENOSYS (its flags cannot be inspected;
 * libc falls back to clone). Returns 0 or -1 (err set). */
int bd_jail_lockdown(bd_err *err);

/* The errno of the last failing step (0 when none). */
int bd_jail_errno(void);

/* ---- availability ------------------------------------------------------------------ */

/* The availability probe's child: the whole of bd_jail_child (in probe mode: no cwd)
 * plus loading a trivial seccomp filter, then returns the exit status to _exit with
 * (0 = everything worked). On failure it writes the reason to the module's report pipe. */
int bd_jail_probe_child(void);

/* The probe's parent side, after the clone returned `child` (or -1 with `clone_errno`):
 * write the maps, release the child, reap it, and read its report. Returns true when
 * the jail works on this machine; otherwise false with a one-line reason in `why` that
 * says what is missing and what to do (kernel knobs checked: user.max_user_namespaces,
 * kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns). */
bool bd_jail_probe_finish(pid_t child, int clone_errno, char *why, size_t whylen);

/* The Landlock ABI version the kernel offers, 0 when none (not built, or disabled). */
int bd_jail_landlock_abi(void);

/* ---- warm starts (docs/isolation.md, "The warm interpreter's jail") ------------------
 * The warm interpreter runs jailed itself: its launcher (host side) calls
 * bd_jail_warm_prepare, clones with bd_jail_clone_flags() and calls bd_jail_warm_parent;
 * the clone calls bd_jail_warm_child and is then uid 0 of a user namespace of its own
 * (an unprivileged host uid: the invoking user's, or as root the first of the range
 * [map_base, map_base + map_count)), in new PID, mount, network, IPC, UTS and cgroup
 * namespaces, on the same minimal read-only root as a case — with a whole /proc of its
 * PID namespace, no Landlock and no seccomp filter (each case builds its own jail inside
 * this one and loads them) — plus `staging` (a private directory under /tmp, or one
 * level below /dev/shm) at its own path: the host directory the cases' verified bytes
 * are laid out in (docs/runner.md#the-staging-directory). Each case's
 * supervisor (benchdesk-supervisor, or a fork of the warm interpreter) then runs the
 * ordinary sequence above with bd_jail_set_case_identity, prepared ahead. */

/* Launcher: check `staging`, make the sync pipe. Returns 0 or -1 (isolation.unavailable). */
int bd_jail_warm_prepare(const char *staging, uid_t map_base, unsigned map_count, bd_err *err);

/* Launcher, after the clone: write the maps ("0 map_base map_count"; setgroups denied
 * unless root) and release the child. Returns 0 or -1 (err set; the caller kills it). */
int bd_jail_warm_parent(pid_t child, bd_err *err);

/* The warm interpreter, right after the clone: wait for the maps, build the root and
 * pivot into it, PR_SET_PDEATHSIG(SIGKILL), PR_SET_NO_NEW_PRIVS. Returns 0 or -1. */
int bd_jail_warm_child(bd_err *err);

/* A case's supervisor inside the warm jail, before bd_jail_prepare: the identity its
 * program gets — `as_root` (benchdesk is root: chown the case's tree and pipes, keep
 * setgroups), the uid of the warm jail BD_JAIL_UID maps to, and `shown_tmp` (kept, not
 * copied): the run's temp root, where the case's cwd, made in the staging dir, appears
 * in its jail ("<shown_tmp>/<the cwd's last name>", as a cold start's would). */
void bd_jail_set_case_identity(bool as_root, uid_t uid, const char *shown_tmp);

/* Host side, as root: hand the private directory `cwd` (root's, 0700, or already
 * `uid`'s) and its tree, and the pipes among fds[0..nfds), to `uid` (and the same gid),
 * as bd_jail_prepare does for a case. Returns 0 or -1 (isolation.unavailable). */
int bd_jail_hand_over(const char *cwd, const int *fds, int nfds, uid_t uid, bd_err *err);

#endif
