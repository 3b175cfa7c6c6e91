/*
 * segment.h — history storage v2 (docs/history.md): records as lines of append-only segment
 * files <history>/segments/<seq of its first record, 10 digits>.jsonl, each holding up to
 * BD_SEGMENT_RECORDS records, one per line (the record's bytes, then '\n', which is not
 * part of the record). This module only knows files and lines; what a record is and how
 * the chain links is history.c's.
 */
#ifndef BD_SEGMENT_H
#define BD_SEGMENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define BD_SEGMENT_RECORDS 65536u
#define BD_SEGMENTS_DIR    "segments"
/* The largest segment file benchdesk reads: 65,536 records of 64 KiB each. Larger is a
 * planted file, reported as such rather than read into memory. */
#define BD_SEGMENT_MAX ((size_t)4 << 30)

/* "0000000001.jsonl" (17 bytes with NUL). */
void bd_segment_name(char out[17], uint64_t first);

/* The first seq of a name "<10 digits>.jsonl", or -1 for any other name. */
int64_t bd_segment_parse_name(const char *name);

/* The first seq of the segment that holds record `seq` (>= 1). */
static inline uint64_t bd_segment_first(uint64_t seq)
{
    return ((seq - 1) / BD_SEGMENT_RECORDS) * BD_SEGMENT_RECORDS + 1;
}

/* One segment read into memory, split into lines. Lines are terminated by '\n'; bytes
 * after the last '\n' are the torn tail (a crash during an append). */
typedef struct bd_segbuf {
    uint64_t first; /* 0: nothing loaded */
    uint64_t from;  /* the file offset of p[0]: 0 unless loaded from an offset or a tail */
    char *p;        /* the file's bytes, NUL-terminated (owned) */
    size_t len, cap;
    size_t *off; /* off[i]: start of line i; off[nlines] = end of the last whole line + 1 */
    size_t nlines, offcap;
    size_t torn; /* bytes after the last '\n' */
} bd_segbuf;

enum { BD_SEG_OK = 0, BD_SEG_ABSENT = 1, BD_SEG_BAD = 2, BD_SEG_ERROR = -1 };

/* Read segment `first` from the segments directory `segfd` (path `dir` for messages) into
 * *b (reusing its memory). BD_SEG_OK; BD_SEG_ABSENT (no such file; *b emptied);
 * BD_SEG_BAD (a symbolic link, not a regular file, or larger than BD_SEGMENT_MAX: `why`
 * says which); BD_SEG_ERROR with err (io.error, env.out_of_memory). Never follows a
 * symlink or blocks on a FIFO. */
int bd_segbuf_load(bd_segbuf *b, int segfd, const char *dir, uint64_t first, char why[256],
                   bd_err *err);

/* The same, from byte `from` of the file on (which must start a line: BD_SEG_BAD
 * otherwise); lines are then counted from there. */
int bd_segbuf_load_from(bd_segbuf *b, int segfd, const char *dir, uint64_t first, uint64_t from,
                        char why[256], bd_err *err);

/* The last whole lines of segment `first`, for reading newest first without reading the
 * whole file: the lines that start in its final `want` bytes (the whole file when it is
 * no longer), and its torn tail. b->from is where b->p[0] lies in the file; line numbers
 * count from there (which line of the file it is, the caller works out from a record's
 * own seq). Returns as bd_segbuf_load. */
int bd_segbuf_load_tail(bd_segbuf *b, int segfd, const char *dir, uint64_t first, size_t want,
                        char why[256], bd_err *err);

/* Line i of a loaded segment (without its '\n'). */
static inline const char *bd_segbuf_line(const bd_segbuf *b, size_t i, size_t *len)
{
    *len = b->off[i + 1] - b->off[i] - 1;
    return b->p + b->off[i];
}

void bd_segbuf_release(bd_segbuf *b);

/* A segment read front to back in chunks (verify): memory stays at one chunk whatever the
 * segment's size, and the buffer is reused, so the pages are faulted in once. */
typedef struct bd_segstream {
    int fd;
    bd_segbuf b;  /* the current chunk: b.nlines whole lines, then b.torn bytes */
    uint64_t pos; /* file offset of b.p[0] */
    size_t chunk; /* bytes read per step */
    bool eof;     /* the file is read to its end: b.torn bytes are its torn tail */
    /* The next chunk, read and indexed by a thread of its own while the caller works on
     * b (which it only reads meanwhile); bd_segstream_next takes it. */
    bd_segbuf ahead;
    pthread_t ahead_tid;
    bool ahead_running, ahead_eof;
    int ahead_rc;
    bd_err ahead_err;
    const char *dir; /* for the read ahead's messages */
} bd_segstream;

/* Open segment `first` for streaming: BD_SEG_OK, BD_SEG_ABSENT, BD_SEG_BAD (`why`),
 * BD_SEG_ERROR (err), like bd_segbuf_load. Release with bd_segstream_close. */
int bd_segstream_open(bd_segstream *s, int segfd, const char *dir, uint64_t first, char why[256],
                      bd_err *err);

/* Drop the lines of the current chunk (keeping its torn bytes) and read the next one.
 * Returns 0 (s->b describes the chunk; s->eof at the end), or -1 (io.error,
 * env.out_of_memory). */
int bd_segstream_next(bd_segstream *s, const char *dir, bd_err *err);

void bd_segstream_close(bd_segstream *s);

/* Tests only: bytes a segment is read in per step (0 restores the default), so a small
 * history crosses several chunks, each read ahead while the one before is checked. Not
 * thread-safe. */
void bd_history_test_stream_chunk(size_t bytes);

/* The segments in directory `segfd`, ascending by first seq, in a new array (free()) of
 * *n entries. Names that are not "<10 digits>.jsonl" are skipped, except that a name of
 * that form off the 65,536 grid is returned too (verify reports it). Returns 0 or -1
 * (io.error, env.out_of_memory). */
int bd_segment_list(int segfd, const char *dir, uint64_t **out, size_t *n, bd_err *err);

#endif
