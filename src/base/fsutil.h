/*
 * fsutil.h — small, careful file helpers shared by the core.
 */
#ifndef BD_FSUTIL_H
#define BD_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Read the regular file `path` (O_NOFOLLOW) into a new NUL-terminated buffer (caller
 * frees); *len gets its size. Files over `max` bytes are refused with `too_big_code`.
 * Returns 0, or -1 with `err` (io.error, case.unsupported_entry for a non-regular file). */
int bd_read_file(char **out, size_t *len, const char *path, size_t max, bd_code too_big_code,
                 bd_err *err);

/* The first bytes of the regular file `path` (O_NOFOLLOW, never blocking on a FIFO): at
 * most `max` bytes into a new buffer of `max`-or-fewer bytes plus `spare` + 1 (caller
 * frees; NUL-terminated after the bytes read, so `spare` bytes more may be written by the
 * caller). *len gets the bytes read and *size the file's size (larger when cut). For
 * previews of files too big to read whole. Returns 0, or -1 with `err` (io.error,
 * case.unsupported_entry for a link or a non-regular file). */
int bd_read_file_head(char **out, size_t *len, unsigned long long *size, const char *path,
                      size_t max, size_t spare, bd_err *err);

/* One entry under a directory tree (bd_list_tree). */
typedef struct bd_tree_entry {
    char *rel;               /* path relative to the root given, "input/a/b.txt" */
    unsigned long long size; /* lstat's size */
    bool regular;            /* a regular file (else a link, a FIFO, ...: never followed) */
} bd_tree_entry;

/* Every non-directory entry below `root`/`rel` (directories are descended, never through
 * a symbolic link), at most `max_depth` levels and `max_entries` entries, into a new
 * array (*out, *n; free with bd_tree_entries_free), in directory order. A missing or
 * unreadable directory gives no entries. Returns 0, or -1 on out of memory (`err`). */
int bd_list_tree(bd_tree_entry **out, size_t *n, const char *root, const char *rel, int max_depth,
                 size_t max_entries, bd_err *err);
void bd_tree_entries_free(bd_tree_entry *e, size_t n);

/* Prefix of every temporary file an atomic write creates. */
#define BD_TMP_PREFIX ".benchdesk-tmp."

/* Write `len` bytes to `path` atomically: a temp file in the same directory (mkostemp,
 * named BD_TMP_PREFIX<file>.<pid>.XXXXXX), fsync, rename over `path`, fsync of the
 * directory. On any failure the temp file is removed and `path` is untouched. Returns 0
 * or -1 (io.error). Never for a file inside a hashed scope: see bd_write_file_atomic_in. */
int bd_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode,
                         bd_err *err);

/* The same with the temp file in `tmp_dir` (NULL: the file's own directory), which must be
 * on the same file system. Writers into a case directory (a hashed scope, docs/formats.md#digests)
 * pass the task class's cases/ folder, so a crash between create and rename leaves
 * nothing inside the case that its digest would take in. */
int bd_write_file_atomic_in(const char *path, const char *tmp_dir, const void *data, size_t len,
                            unsigned mode, bd_err *err);

/* One atomic write made in pieces (a file too large to hold whole first): open creates the
 * temp file as bd_write_file_atomic_in does; write appends (buffered, 64 KiB); commit
 * flushes, fsyncs, renames over `path` and fsyncs its directory; abort removes the temp
 * file. Commit and abort free the handle, commit's failure included; `path` is untouched
 * until commit's rename. open/write/commit return 0 or -1 (io.error, env.out_of_memory). */
typedef struct bd_atomic_file bd_atomic_file;
int bd_atomic_file_open(bd_atomic_file **out, const char *path, const char *tmp_dir, unsigned mode,
                        bd_err *err);
int bd_atomic_file_write(bd_atomic_file *f, const void *data, size_t len, bd_err *err);
int bd_atomic_file_commit(bd_atomic_file *f, bd_err *err);
void bd_atomic_file_abort(bd_atomic_file *f);

/* Many atomic writes with one sync (`pin` rewriting thousands of case.yaml files):
 * bd_atomic_batch_add writes each file's temp file in `tmp_dir` (outside every hashed
 * scope, as bd_write_file_atomic_in) without syncing it; bd_atomic_batch_commit makes all
 * of them durable with one syncfs() of their file system (each fsynced where syncfs
 * fails), then renames each over its target, then fsyncs the target directories. Crash
 * safety is that of bd_write_file_atomic_in: before its rename a target is the old file
 * (a crash leaves a temp file in tmp_dir, harmless there), after it the new one, whole.
 * bd_atomic_batch_free removes the temp files not renamed. All return 0 or -1 (io.error,
 * env.out_of_memory). */
typedef struct bd_atomic_batch bd_atomic_batch;
int bd_atomic_batch_new(bd_atomic_batch **out, bd_err *err);
int bd_atomic_batch_add(bd_atomic_batch *b, const char *path, const char *tmp_dir, const void *data,
                        size_t len, unsigned mode, bd_err *err);
int bd_atomic_batch_commit(bd_atomic_batch *b, bd_err *err);
void bd_atomic_batch_free(bd_atomic_batch *b);

/* True when the directory entry `name` is a temp file an interrupted atomic write left
 * behind: BD_TMP_PREFIX..., or the older "<file>.<pid>.tmp". */
bool bd_tmp_is_leftover(const char *name);

/* mkdir -p with `mode` for each created component. Returns 0 or -1 (io.error). */
int bd_mkdir_p(const char *path, unsigned mode, bd_err *err);

/* Remove `path` and everything below it: never follows a symlink, never leaves the file
 * system it starts on, makes unreadable directories readable to get through them. A
 * missing `path` is success. Returns 0 or -1 (io.error; internal.bug for a path with no
 * parent component). */
int bd_remove_tree(const char *path, bd_err *err);

/* Ask the kernel to start reading every regular file under the directory `path` (down to
 * `max_depth` levels of subdirectories) into the page cache: each is opened and given
 * POSIX_FADV_WILLNEED, which queues the reads and returns. Follows no symlink. A hint
 * only: it changes no file and reports no error (whoever reads the files later reports
 * theirs); a missing or unreadable entry is passed over. Safe on any thread. */
void bd_read_ahead_tree(const char *path, int max_depth);

/* Create `name` in the directory `dfd` (O_EXCL, O_NOFOLLOW), write `len` bytes, then set
 * `mode`. Returns 0 or -1 (io.error). */
int bd_write_file_at(int dfd, const char *name, const void *data, size_t len, unsigned mode,
                     bd_err *err);

/* Owner tags: every temp dir benchdesk makes (per-case dirs, private GnuPG homes) is named
 * "benchdesk-<kind>-<tag>-..." where <kind> holds no '-' and <tag> is "p<pid>s<start>" of
 * the process that made it (its start time from /proc, so a reused pid is told apart).
 * After a SIGKILL nothing removes such a dir; the next benchdesk start does. */
#define BD_OWNER_TAG_MAX 48
void bd_owner_tag(char out[BD_OWNER_TAG_MAX]);

/* Remove every "benchdesk-<kind>-<tag>-*" directory right below `tmp_root` whose owner
 * process is gone (or is another process with the same pid). Only the caller's own dirs
 * unless it runs as root (then also those handed to a jail uid). Best effort: a dir that
 * cannot be removed is left for the next sweep. Returns how many were removed. */
int bd_tmp_sweep(const char *tmp_root);

/* $TMPDIR when it is an absolute path, else "/tmp". Borrowed. */
const char *bd_tmp_root(void);

/* Current UTC time as "YYYY-MM-DDTHH:MM:SSZ" into `out` (21 bytes). */
void bd_utc_now(char out[21]);

#endif
