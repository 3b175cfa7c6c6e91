/*
 * digest.h — BLAKE3 digests of case directories and files, exactly as DESIGN.md §2.
 *
 * Reentrant: no global state, each call uses its own hasher and buffers, so digests
 * may be computed on libuv's thread pool while the loop thread draws.
 *
 * Case digest stream:
 *   "benchdesk-case-v1\n", then for every regular file below the case dir except the
 *   top-level case.yaml, sorted bytewise by relative path ('/' separator):
 *   T "\0" relpath "\0" size-in-decimal "\0" bytes     (T = "x" if any execute bit, else "f")
 * Symlinks, devices, sockets, FIFOs anywhere: case.unsupported_entry. Files and
 * directories are opened with O_NOFOLLOW. A file that changes size while being read is
 * io.error (never a silently wrong digest).
 */
#ifndef BD_DIGEST_H
#define BD_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define BD_DIGEST_HEX_LEN 64
#define BD_DIGEST_PREFIX  "blake3:"
/* "blake3:" + 64 hex + NUL */
#define BD_DIGEST_BUF 72

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

/* Digest of the bytes of the regular file `path` (O_NOFOLLOW; a symlink or special file
 * is case.unsupported_entry and is never opened; a missing file or one that changes size
 * while being read is io.error). Returns 0 or -1; `out` is untouched on failure. */
int bd_digest_file(char out[BD_DIGEST_BUF], const char *path, bd_err *err);

/* Digest of a memory buffer. Never fails. */
void bd_digest_bytes(char out[BD_DIGEST_BUF], const void *data, size_t len);

/* Raw 32-byte BLAKE3 of a buffer. */
void bd_blake3_raw(uint8_t out[32], const void *data, size_t len);

/* True when `s` is "blake3:" followed by exactly 64 lower-case hex digits. */
int bd_digest_str_valid(const char *s);

/* Lower-case hex of `len` bytes into `out` (2*len+1 bytes). */
void bd_hex(char *out, const uint8_t *bytes, size_t len);

#endif
