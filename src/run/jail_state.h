/*
 * jail_state.h — what the files of the `namespaces` jail share (jail.c, jail_state.c,
 * jail_root.c, jail_filter.c, jail_probe.c), and nothing else includes: the one jail of this
 * process and the steps one file does for another. jail.h is the jail's interface.
 */
#ifndef BD_JAIL_STATE_H
#define BD_JAIL_STATE_H

#include <limits.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <sys/types.h>

#include "err.h"
#include "jail_defs.h"

/* ---- the mount API (open_tree, move_mount), for older headers ----------------------- */

#ifndef SYS_open_tree
#define SYS_open_tree  428
#define SYS_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* ---- the state of this process's one jail (jail_state.c) --------------------------- */

typedef struct bd_jail_state {
    bool ready;     /* bd_jail_prepare succeeded */
    bool probe;     /* availability probe: no cwd, report pipe */
    bool as_root;   /* benchdesk's effective uid is 0 */
    uid_t host_uid; /* what BD_JAIL_UID maps to */
    gid_t host_gid;
    int sync_rd, sync_wr;     /* supervisor -> program: "maps written" */
    int report_rd, report_wr; /* probe child -> probe parent: why it failed */
    int cwd_fd;               /* O_PATH of the program's cwd (in its mount namespace), or -1 */
    int shown_fd[BD_JAIL_MAX_SHOWN]; /* O_PATH of each file of argv shown, or -1 */
    dev_t cwd_dev;                   /* what the supervisor checked, so the child opens the same */
    ino_t cwd_ino;
    char cwd_path[PATH_MAX];
    char jail_cwd[PATH_MAX]; /* where the cwd appears in the jail (see bd_jail_prepare) */
    char shown[BD_JAIL_MAX_SHOWN][PATH_MAX]; /* argv's files outside the system dirs */
    int n_shown;
    int landlock_abi;
    struct sock_filter bpf[BD_JAIL_BPF_MAX]; /* the compiled seccomp filter */
    unsigned short bpf_len;
    bool bpf_cached;   /* compiled once by bd_jail_server_init: kept across prepares */
    bool host_network; /* record --unsafe-network: see bd_jail_set_host_network */
    bool warm_root;    /* building the warm interpreter's own jail (bd_jail_warm_prepare) */
    bool ident_set;    /* bd_jail_set_case_identity: as_root and the uid below are given */
    bool ident_root;
    uid_t ident_uid;
    const char *ident_tmp; /* the directory a case's cwd appears in (the run's temp root) */
    bool built;            /* bd_jail_child_ahead built the root: the cwd comes with the case */
    int tree_fd[2];        /* built: the detached mounts of the cwd's case/ and rubric.py, or -1 */
    uid_t warm_map_base;   /* warm root: what uid/gid 0 of the warm jail maps to */
    unsigned warm_map_count;
    bool warm_shm; /* warm root: the staging dir lies in /dev/shm (a directory there) */
} bd_jail_state;

extern bd_jail_state bd_jail;

/* Record errno (bd_jail_errno) and fill err with "what" (no strerror: the caller pairs it
 * with errno). Returns -1 with errno kept. */
int bd_jail_fail(bd_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Close *fd when open; *fd becomes -1. */
void bd_jail_close_fd(int *fd);
/* bd_jail_errno (jail.h) becomes 0: a new step starts. */
void bd_jail_errno_clear(void);
/* Close the descriptors of the files shown (bd_jail.shown_fd). */
void bd_jail_close_shown(void);
/* Close every descriptor the jail holds (the sync and report pipes, the cwd, the files
 * shown, the detached trees). */
void bd_jail_release_all(void);

/* ---- jail_root.c: the program side's root ------------------------------------------ */

/* Directories of the host shown read-only (or re-created as the same symlink). */
#define BD_JAIL_N_SYSTEM_DIRS 7
extern const char *const bd_jail_system_dirs[BD_JAIL_N_SYSTEM_DIRS];
/* The two entries of the case's dir shown in its jail, read-only. */
#define BD_JAIL_N_CWD_RO 2
extern const char *const bd_jail_cwd_ro[BD_JAIL_N_CWD_RO];

/* The root's fixed part in a tmpfs over /tmp of this mount namespace, entered: the
 * system dirs, /etc, /dev, a fresh /proc, the private /tmp. Returns 0 or -1 (err). */
int bd_jail_root_base(bd_err *err);
/* The case's cwd in the root (before or after the pivot): its read-only entries from
 * bd_jail.cwd_fd, or from the detached mounts in `trees` (-1: absent). 0 or -1. */
int bd_jail_root_cwd(const int *trees, bd_err *err);
/* The files of the command line shown (and the warm jail's staging dir). 0 or -1. */
int bd_jail_root_shown(bd_err *err);
/* The host name, then pivot into the new root and make it read-only. 0 or -1. */
int bd_jail_root_pivot(bd_err *err);
/* The four above in order (the cwd when bd_jail.cwd_fd is open). 0 or -1. */
int bd_jail_build_root(bd_err *err);

/* ---- jail_filter.c: Landlock and the seccomp filter (jail_seccomp.c compiles it) ---- */

/* Inside the new root: read and execute everywhere; write only the cwd, /tmp and the
 * /dev nodes; no TCP; with `scoped` (ABI 6) no abstract unix socket or signal beyond the
 * jail. Sets no_new_privs. Nothing when the kernel has no Landlock. 0 or -1. */
int bd_jail_apply_landlock(bool scoped, bd_err *err);
/* jail_seccomp.c: compile the seccomp filter into bd_jail.bpf (libseccomp allocates:
 * called in the supervisor, before the program's rlimits). 0 or -1. The supervisor
 * program's jail_seccomp_handed.c compiles none: it fails. */
int bd_jail_build_filter(bd_err *err);
/* The same filter, laid out as a binary tree of call numbers (`tree`, what
 * bd_jail_build_filter compiles) or as libseccomp's plain list (the reference the unit
 * test compares the tree with, decision by decision). jail_seccomp_handed.c: fails. */
int bd_jail_build_filter_laid_out(bool tree, bd_err *err);

#endif
