/*
 * jail_defs.h — the numbers of the `namespaces` jail (jail.h): the ids, the host uid range,
 * the caps of its /tmp, the host name. Its own header so that the jail's files that build
 * the root and the filters need nothing else of jail.h.
 */
#ifndef BD_JAIL_DEFS_H
#define BD_JAIL_DEFS_H

/* The rubric's uid and gid inside the jail. */
#define BD_JAIL_UID 1000
/* When benchdesk runs as root, each case runs as a host uid and gid of its own:
 * BD_JAIL_HOST_BASE + the pid of the case's supervisor. Pids of live processes are
 * distinct and below 2^22 (the kernel's pid_max ceiling), so concurrent cases — of this
 * run or of another benchdesk — never share a uid, no host process runs as one (the
 * range 1879048192..1883242495 is outside every distribution's system and user ranges
 * and the usual /etc/subuid allocations), and RLIMIT_NPROC counts that case alone. */
#define BD_JAIL_HOST_BASE  1879048192u
#define BD_JAIL_HOST_RANGE 4194304u
/* Size caps of the jail's private /tmp. */
#define BD_JAIL_TMP_SIZE   "256m"
#define BD_JAIL_TMP_INODES "16384"
/* At most this many files of a command line are shown in the jail (see bd_jail_prepare). */
#define BD_JAIL_MAX_SHOWN 8
/* Instructions the compiled seccomp filter may have, and the text of one handed to the
 * supervisor program (bd_jail_filter_hex: 16 hex digits an instruction, NUL). */
#define BD_JAIL_BPF_MAX        2048
#define BD_JAIL_FILTER_HEX_MAX (BD_JAIL_BPF_MAX * 16 + 1)
/* The host name inside the jail. */
#define BD_JAIL_HOSTNAME "benchdesk-jail"

#endif
