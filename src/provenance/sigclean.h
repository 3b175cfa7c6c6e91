/*
 * sigclean.h — private temp dirs removed when a fatal signal ends the process.
 *
 * A private GnuPG home (provenance.c) must not outlive the command that made it, even
 * when Ctrl-C, SIGTERM or SIGHUP ends that command in the middle of a verify. Normal exits
 * remove it through bd_prov_ctx_free; this covers the signals. The handler only uses
 * async-signal-safe calls (openat, getdents64, unlinkat), then restores the default
 * action and raises the signal again, so the exit status still says what killed the
 * process. It is installed only over a default disposition: a program that handles the
 * signal itself (the TUI's and `run`'s libuv loops) exits through its own cleanup path.
 * SIGKILL cannot be caught; bd_tmp_sweep removes what a killed owner left.
 */
#ifndef BD_SIGCLEAN_H
#define BD_SIGCLEAN_H

/* Register directory `path` (absolute, at most PATH_MAX-1 bytes) for removal on SIGINT,
 * SIGTERM, SIGHUP or SIGQUIT, installing the handlers the first time. Returns a slot
 * number (>= 0) for bd_sigclean_remove, or -1 when every slot is taken or the path is too
 * long (the dir is then removed by the normal path and by the sweep only). Thread-safe. */
int bd_sigclean_add(const char *path);

/* Forget slot `slot` (before the caller removes the dir itself). -1 is ignored. */
void bd_sigclean_remove(int slot);

#endif
