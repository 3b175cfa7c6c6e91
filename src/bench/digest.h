/*
 * digest.h — BLAKE3 digests of case directories and files, exactly as docs/formats.md#digests.
 *
 * Reentrant: no global state, each call uses its own hasher and buffers, so digests
 * may be computed on libuv's thread pool while the loop thread draws.
 *
 * Case digest stream (format v2):
 *   "benchdesk-case-v2\n", then for every regular file below the case dir except the
 *   top-level provenance.yaml (case.yaml included), sorted bytewise by relative path
 *   ('/' separator):
 *   T "\0" relpath "\0" size-in-decimal "\0" bytes     (T = "x" if any execute bit, else "f")
 * Task-class digest stream:
 *   "benchdesk-task-class-v2\n", then the entries of exactly registration.yaml and
 *   rubric.py of the task-class dir, in that (sorted) order.
 * What a case digest covers is decided once, for a directory, the git index and a git
 * tree alike: case_source.h (bd_case_membership, bd_case_source_digest).
 * Symlinks, devices, sockets, FIFOs anywhere: case.unsupported_entry. Files and
 * directories are opened with O_NOFOLLOW. A file that changes size while being read is
 * io.error (never a silently wrong digest).
 */
#ifndef BD_DIGEST_H
#define BD_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "hash.h"

/* The one file of a case (and of a task class) outside its digest: the signatures. */
#define BD_PROVENANCE_FILE "provenance.yaml"
/* Largest registration.yaml (the YAML limit) and rubric.py a task class may hold. */
#define BD_TC_REGISTRATION_MAX (1u << 20)
#define BD_TC_RUBRIC_MAX       (16u << 20)

/* Limits of a case tree. Deeper nesting or a longer relative path is refused with
 * case.unsupported_entry naming the entry (never truncated, never skipped). */
#define BD_DIGEST_MAX_DEPTH   64   /* directories nested below the case dir */
#define BD_DIGEST_MAX_RELPATH 4095 /* bytes of a relative path, '/' separated */

/* Bytes read and hashed at a time (one heap buffer per call). */
#define BD_DIGEST_BLOCK (1u << 20)

/* Digest of the case directory at `dir` into `out` ("blake3:<64 hex>"). Returns 0 or -1
 * (case.unsupported_entry naming the entry, io.error). `bytes_hashed` (may be NULL)
 * receives the number of file-content bytes read. `out` is untouched on failure.
 * Trailing slashes of `dir` are ignored; `dir` itself must not be a symlink. */
int bd_digest_case_dir(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                       bd_err *err);

/* What a progress callback sees: the file being read (relative path, borrowed, valid only
 * during the call), how much of it has been read, and the running total for the case. */
typedef struct bd_digest_progress {
    const char *relpath;
    uint64_t file_bytes; /* bytes of this file read so far */
    uint64_t file_size;  /* its size when it was opened */
    uint64_t total_bytes;
} bd_digest_progress;

/* Called after every read (at most BD_DIGEST_BLOCK bytes). Return 0 to go on, non-zero to stop:
 * the digest then fails with run.cancelled. Runs on the hashing thread. */
typedef int (*bd_digest_progress_cb)(const bd_digest_progress *p, void *payload);

/* bd_digest_case_dir with a progress/cancel callback (`cb` may be NULL), for the TUI's
 * progress bar when hashing on the thread pool. Same result, same errors, plus
 * run.cancelled. */
int bd_digest_case_dir_progress(char out[BD_DIGEST_BUF], const char *dir, uint64_t *bytes_hashed,
                                bd_digest_progress_cb cb, void *payload, bd_err *err);

/* ---- one pass over a case (list, verify, pin, the run gate) ------------------------- */

/* What bd_case_scan read from one case directory, each file opened and read once. */
typedef struct bd_scanned_case {
    size_t yaml_max;               /* in: largest case.yaml / provenance.yaml to keep (1 MiB) */
    struct bd_case_stamps *stamps; /* in: where to stamp each entry as it is stat'ed, or NULL
                                      (case_stamp.h); ok only when the scan returned 0 */
    char digest[BD_DIGEST_BUF]; /* the case digest (docs/formats.md#digests), "" when it could not
                                   be made */
    bool leftover;              /* a temp file of an interrupted write is at the top: the
                                   case was not hashed (case.leftover_temp) */
    bool unusual;               /* something only the path-based loaders judge (a link or
                                   special file, a file over the limit, an I/O error) */
    bool case_yaml_present;
    bool case_yaml_too_big;
    char *case_yaml; /* the hashed bytes of case.yaml, NUL-terminated, or NULL */
    size_t case_yaml_len;
    bool cassette_present;        /* a regular top-level cassette.json was hashed */
    char cassette[BD_DIGEST_BUF]; /* BLAKE3 of its bytes (the same read as the digest) */
    bool prov_present;            /* a regular top-level provenance.yaml was read */
    char *prov_yaml;              /* its bytes, NUL-terminated (never hashed), or NULL */
    size_t prov_len;
} bd_scanned_case;

/* How many threads to scan `n` cases on: one per online core, at most 4, and one (no
 * thread started) below `min_n` cases, where starting threads costs more than it saves. */
size_t bd_case_scan_threads(size_t n, size_t min_n);

/* Buffers for bd_case_scan, reused from case to case: one per thread. */
typedef struct bd_case_scanner bd_case_scanner;
int bd_case_scanner_new(bd_case_scanner **out, bd_err *err); /* env.out_of_memory */
void bd_case_scanner_free(bd_case_scanner *sc);

/* Digest the case `case_id` below the directory open on `cases_fd` (named `cases_dir` in
 * messages) exactly as bd_digest_case_dir does, opening everything relative to that
 * descriptor (O_NOFOLLOW) and reading each directory with getdents64 (the entry type
 * from the directory record; DT_UNKNOWN falls back to lstat). In the same pass it keeps
 * the bytes of the top-level case.yaml (at most r->yaml_max), the digest of
 * cassette.json's bytes, and reads provenance.yaml. A top-level temp file of an
 * interrupted write stops it before anything is hashed (r->leftover). Returns 0; 1 for a
 * leftover; -1 with `err` and r->unusual set when the case could not be hashed. Release
 * *r with bd_case_scan_release whatever the result. Thread-safe with one scanner per
 * thread. */
int bd_case_scan(bd_case_scanner *sc, bd_scanned_case *r, int cases_fd, const char *cases_dir,
                 const char *case_id, bd_err *err);
void bd_case_scan_release(bd_scanned_case *r);

/* Use-time integrity (docs/runner.md#use-time-integrity-and-leftovers): digest the case directory
 * `dir` exactly as bd_digest_case_dir does and, in the same pass, copy the top-level directories
 * named in `tops` (NULL-terminated, e.g. {"input", "expected", NULL}; absent ones are skipped)
 * below the open directory `dst_dirfd`, every byte written being a byte hashed (read
 * once, never re-read). Copies are 0444 (0555 with an execute bit), directories 0555.
 * The caller compares `out` with the pin before anyone sees the copy, and removes the
 * copy on a mismatch or an error. When `kept` is not NULL it also keeps, from the same
 * read, the bytes of the top-level case.yaml (at most kept->yaml_max; case_yaml_present,
 * case_yaml_too_big) and the cassette's digest, as bd_case_scan does — so what the run
 * parses is what it hashed; provenance.yaml is not read. Release *kept with
 * bd_case_scan_release whatever the result. Returns 0 or -1 (bd_digest_case_dir's errors;
 * io.error when the copy cannot be written). */
int bd_digest_case_copy(char out[BD_DIGEST_BUF], const char *dir, int dst_dirfd,
                        const char *const *tops, bd_scanned_case *kept, bd_err *err);

/* Digest of the bytes of the regular file `path` (O_NOFOLLOW; a symlink or special file
 * is case.unsupported_entry and is never opened; a missing file or one that changes size
 * while being read is io.error). Returns 0 or -1; `out` is untouched on failure. */
int bd_digest_file(char out[BD_DIGEST_BUF], const char *path, bd_err *err);

/* The two hashed files of a task class, read once: what the digest covers is what a
 * run executes and parses (docs/formats.md#digests use-time integrity). Buffers are NUL-terminated
 * and owned; release with bd_tc_files_release. */
typedef struct bd_tc_files {
    char *registration;
    size_t registration_len;
    bool registration_exec;
    char *rubric;
    size_t rubric_len;
    bool rubric_exec;
} bd_tc_files;

/* Read registration.yaml and rubric.py of the task-class dir `tc_dir` (O_NOFOLLOW, each
 * re-checked after open). Returns 0, or -1: rubric.missing, io.error (a missing
 * registration.yaml, a file over its limit, a read failure), case.unsupported_entry (a
 * link or special file), env.out_of_memory. *out is zeroed on failure. */
int bd_tc_files_read(bd_tc_files *out, const char *tc_dir, bd_err *err);
void bd_tc_files_release(bd_tc_files *f);

/* Task-class digest of files already read. Never fails. */
void bd_digest_task_class_files(char out[BD_DIGEST_BUF], const bd_tc_files *f);

/* Task-class digest of the directory `tc_dir` (bd_tc_files_read's errors). */
int bd_digest_task_class_dir(char out[BD_DIGEST_BUF], const char *tc_dir, bd_err *err);

/* ---- the entry stream (docs/formats.md#digests) over bytes in memory (staged git blobs) -- */

/* Which digest a stream computes. */
typedef enum { BD_DIGEST_CASE, BD_DIGEST_TASK_CLASS } bd_digest_kind;

/* A digest being computed: begin, then entries in bytewise-sorted path order, then end.
 * Opaque; lives on the caller's stack. */
typedef struct bd_digest_stream {
    _Alignas(16) unsigned char state[2048];
} bd_digest_stream;

void bd_digest_stream_begin(bd_digest_stream *ds, bd_digest_kind kind);
/* One regular file: T "\0" rel "\0" size "\0" bytes (T "x" when `exec`). */
void bd_digest_stream_entry(bd_digest_stream *ds, const char *rel, bool exec, const void *data,
                            size_t len);
void bd_digest_stream_end(bd_digest_stream *ds, char out[BD_DIGEST_BUF]);

/* bd_digest_bytes, bd_blake3_raw, bd_hex and the hex checks: hash.h. */

#endif
