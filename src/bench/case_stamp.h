/*
 * case_stamp.h — a case's stamps: what stat says of each of its entries
 * (docs/provenance.md#unchanged-cases).
 *
 * A stamp is an entry's identity and times: mode, device, inode, size, modification
 * and change time. Any write to a file, a change of its mode, or an entry made, removed
 * or renamed in a directory sets its change time to the clock's present, and no user
 * can set a change time back. So a case whose every stamp equals the stamps taken when
 * its bytes were last read and judged holds the same bytes, names and execute bits. The
 * stamps are taken in the walk's order; the walk's relative paths, in that order, are
 * the case's shape, from which bd_case_restamp takes the same stamps again without
 * listing a directory or reading a byte.
 *
 * Stamp stream (hashed with BLAKE3, lengths and numbers little-endian):
 *   "benchdesk-stamps-1\0", then for the case directory (path "") and each entry in
 *   order: len(8) ‖ path (a directory's with a trailing '/') ‖ mode(4) ‖ dev(8) ‖
 *   ino(8) ‖ size(8) ‖ mtime seconds(8) ‖ nanoseconds(4) ‖ ctime seconds(8) ‖
 *   nanoseconds(4).
 * Shape: each path of the stream but the case directory's, NUL-terminated, in order.
 */
#ifndef BD_CASE_STAMP_H
#define BD_CASE_STAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include <blake3.h>

/* Largest shape kept: a case with longer paths in all is always read. */
#define BD_STAMP_SHAPE_MAX 800
/* A stamp whose times are not this many seconds older than the walk is not settled: a
 * write in the same tick of the file system's clock could leave its times unchanged. */
#define BD_STAMP_SETTLE_SECONDS 2

typedef struct bd_case_stamps {
    bool ok;          /* every entry stamped and the shape fits */
    bool settled;     /* every stamped time settled (BD_STAMP_SETTLE_SECONDS) */
    uint64_t dir_dev; /* the case directory's device and inode (its shape's key) */
    uint64_t dir_ino;
    char shape[BD_STAMP_SHAPE_MAX];
    size_t shape_len;
    uint8_t digest[32]; /* BLAKE3 of the stamp stream, after bd_case_stamps_end */
    /* private */
    blake3_hasher h;
    time_t since;
    bool top_done;
} bd_case_stamps;

/* Start stamping a case walked from `now` (the wall clock before the first stat). */
void bd_case_stamps_begin(bd_case_stamps *s, time_t now);

/* Stamp the entry at relative path rel[0..len) (the case directory first, as ""),
 * stat'ed as `st` before its bytes or listing were read. A path that does not fit the
 * shape leaves s->ok false. */
void bd_case_stamps_add(bd_case_stamps *s, const char *rel, size_t len, const struct stat *st);

/* A stat that failed: the case cannot be stamped. */
void bd_case_stamps_fail(bd_case_stamps *s);

/* Finish: s->digest set when s->ok. */
void bd_case_stamps_end(bd_case_stamps *s);

/* Stat the case directory `case_id` below the directory open on `cases_fd` without
 * following a link. Returns 0, or -1 (errno) when it is not there or not a directory. */
int bd_case_stamp_dir(int cases_fd, const char *case_id, struct stat *st);

/* The stamps of the case `case_id` (its directory stat'ed as `dir_st` by
 * bd_case_stamp_dir) taken again for each path of `shape` (shape_len bytes), each with
 * fstatat relative to `cases_fd`, links not followed: no listing, no read. Only the digest
 * is meant to be compared (s->settled is false: settling is judged when stamps are
 * remembered, from a scan). Returns 0 with *s ended (s->ok); -1 when the shape is not well formed
 * (each path relative, no empty,
 * "." or ".." part, NUL-terminated) or an entry cannot be stat'ed — the case has changed,
 * or never had that shape. */
int bd_case_restamp(bd_case_stamps *s, int cases_fd, const char *case_id, const struct stat *dir_st,
                    const char *shape, size_t shape_len);

#endif
