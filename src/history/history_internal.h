/*
 * history_internal.h — what the rooms of the history (history.c, happend.c, hverify.c,
 * hlog.c, hindex_glue.c, hmembers.c) share: the handle, reading records from files and
 * segments, and the names of the files in the history directory. What they share about
 * one record (the record core, parse_record, the chain tag) is hrecord_internal.h's, which this
 * header includes; hrecord.c, below them all, includes only hrecord.h and that. Only the
 * .c files of src/history include it; history.h is the public API (docs/history.md).
 *
 * Every file operation is relative to one directory descriptor opened with O_NOFOLLOW, so
 * a symlink swapped in for the directory after open cannot redirect writes.
 */
#ifndef BD_HISTORY_INTERNAL_H
#define BD_HISTORY_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "history.h"
#include "hrecord_internal.h"
#include "segment.h"

#define HEAD_NAME     "HEAD"
#define VERIFIED_NAME "VERIFIED"
#define SEGTMP_NAME   "segments.tmp"
#define LOCK_NAME     ".lock"
/* How far past a stale HEAD hint append walks before it scans the directory instead. */
#define HEAD_PROBE_MAX 64
/* verify: records per parallel window, per work item, and the most threads it uses
 * (append builds a batch's records on as many). */
#define VERIFY_WINDOW      8192
#define VERIFY_BATCH       64
#define VERIFY_MAX_THREADS 8

struct bd_history {
    char *dir;
    char *segdir;                 /* <dir>/segments */
    int dirfd;                    /* -1 while the directory does not exist (read-only handle) */
    int segfd;                    /* -1 while the history is in the version-1 layout (or empty) */
    char repair[256];             /* what the last append repaired (a torn tail), "" when nothing */
    char ix_note[PATH_MAX + 160]; /* the index was found edited / disagreeing, "" if not */
    char *ixdir;                  /* <bench root>/.benchdesk/index, NULL: no derived index */
    pthread_mutex_t mu; /* guards segfd, set once by whichever thread sees segments first */
};

/* ---- record bytes without a parse (hmembers.c) -------------------------------------- */

/* The end of the JSON string starting at p (its opening quote), or NULL. */
const char *hist_skip_string(const char *p, const char *end);

/* ---- opening and reading (history.c) ------------------------------------------------ */

typedef struct rbuf {
    char *p;
    size_t cap;
} rbuf;

static inline bool is_v2(const bd_history *h)
{
    return h->segfd >= 0;
}

static inline int rec_line(const bd_history *h, uint64_t seq)
{
    return is_v2(h) && seq ? (int)(seq - bd_segment_first(seq) + 1) : 0;
}

/* The threads verify (and a batch append) work on: the processors online, at most
 * VERIFY_MAX_THREADS. */
static inline int verify_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > VERIFY_MAX_THREADS ? VERIFY_MAX_THREADS : (int)n;
}

enum { RD_OK = 0, RD_ABSENT = 1, RD_BAD = 2, RD_ERROR = -1 };

/* Where one operation reads records from: a file buffer (version 1) or one segment held
 * in memory (version 2). Each operation has its own, so a handle needs no lock to read. */
typedef struct src {
    rbuf b;
    bd_segbuf seg;
    /* Newest first (history log without a filter): the segment is read from its end, in
     * windows that grow as older records are asked for, so the first page of a long
     * history reads kilobytes, not the whole segment. tail_last is the own seq of the
     * window's last whole line; any surprise (a record whose own seq is not the one its
     * place says) drops back to reading whole segments. */
    bool newest_first;
    uint64_t tail_last;
    size_t tail_want; /* the bytes the window asked for: the next asks four times as many (its
                         own length can stay put when one long line fills the new bytes) */
} src;

/* The end of one segment, read from its tail without reading the whole file. */
typedef struct segtail {
    uint64_t first; /* the segment */
    off_t whole;    /* bytes up to and including the last '\n' */
    off_t size;     /* the file's size (whole + torn tail) */
    bool has_line;  /* at least one whole line */
    uint64_t seq;   /* the last whole line's record seq */
    uint8_t hash[32];
} segtail;

/* Contracts at the definitions. */
int hist_open_segfd(bd_history *h, bd_err *err);
int hist_open_dirfd(bd_history *h, bool create, bd_err *err);
void hist_record_path(char *out, size_t size, const bd_history *h, uint64_t seq);
int hist_read_record_file(const bd_history *h, uint64_t seq, rbuf *b, size_t *len, char *why,
                          bd_err *err);
void hist_src_release(src *s);
void hist_src_whole(src *s);
int hist_get_rec(const bd_history *h, src *s, uint64_t seq, const char **p, size_t *len, char *why,
                 bd_err *err);
int hist_load_core(const bd_history *h, src *s, uint64_t seq, rec_core *core, uint8_t hash[32],
                   bd_chain_reason *reason, char *why, bd_err *err);
int hist_read_head_hint(const bd_history *h, uint64_t *seq, uint8_t hash[32]);
int hist_scan_dir(const bd_history *h, uint64_t *max_seq, bool *has_zero, bool clean, bd_err *err);
int hist_find_head_v2(const bd_history *h, rbuf *b, uint64_t *seq, uint8_t hash[32], segtail *t,
                      bd_err *err);

#endif
