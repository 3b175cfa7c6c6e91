/*
 * hindex.h — the history's derived index (docs/history.md): one SQLite file,
 * <bench root>/.benchdesk/index/history.sqlite, holding for every record its place in
 * its segment and the few fields queries filter on (task class, case, run, failure-mode
 * codes, pass/fail, digests, isolation class, finished_at), with the strings interned.
 *
 * It is disposable and never trusted for integrity: it stores the chain head it was built
 * from (seq, record hash, and where that record is), and history.c extends it when the
 * chain has grown past that head, or rebuilds it when that head is no longer on the
 * chain. Whatever it answers is only a list of places to read: the records themselves
 * are read from the segments and checked again (bd_history_read_at). Deleting it costs
 * one rebuild. This module knows SQLite and rows; what a record is, and when the index
 * is current, is history.c's (so the history can use it without a cycle).
 */
#ifndef BD_HINDEX_H
#define BD_HINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define BD_HINDEX_DIR  ".benchdesk/index"
#define BD_HINDEX_FILE "history.sqlite"
#define BD_HINDEX_LOCK "history.lock"

typedef struct bd_hindex bd_hindex;

enum {
    BD_HX_AUDIT = 1,  /* an audit record */
    BD_HX_PASSED = 2, /* score.passed */
    BD_HX_BAD = 4,    /* its fields could not be read: never filtered out by the index */
    BD_HX_PROV = 8,   /* provenance_verified */
};

/* One record as the index keeps it. Strings are NUL-terminated (NULL: absent / null). */
typedef struct bd_hindex_row {
    uint64_t seq;
    uint64_t off; /* byte offset of the record in its segment */
    uint32_t len; /* its length without the '\n' */
    unsigned flags;
    /* run_id of an audit record: the run its detail names (bd_history_audit_run) */
    const char *task_class, *case_id, *run_id, *case_digest, *tc_digest, *isolation;
    int64_t finished; /* finished_at in seconds since the epoch, -1 when unreadable */
    const char *const *fm_codes;
    size_t n_fm;
} bd_hindex_row;

/* The head an index was built from. */
typedef struct bd_hindex_head {
    uint64_t seq; /* 0: an empty index */
    uint8_t hash[32];
    uint64_t off;
    uint32_t len;
} bd_hindex_head;

/* Open (creating if absent) the index file `path`. A file that is not a usable index of
 * this schema (corrupt, half-written by a crash, another version) is removed and created
 * empty. Returns 0 and *out (bd_hindex_close), or -1 with io.error (the directory cannot
 * hold it). */
int bd_hindex_open(bd_hindex **out, const char *path, bd_err *err);

void bd_hindex_close(bd_hindex *ix);

/* The head the index was built from (seq 0 when empty). Returns 0, or -1 when the file
 * cannot be read (the caller resets it). */
int bd_hindex_get_head(bd_hindex *ix, bd_hindex_head *head);

/* Start the index again from nothing: the file is replaced by a new, empty one (a process
 * that still has the old one open keeps reading that). Call it holding the index lock
 * (history.c). Returns 0, or -1 (the handle is then only fit for bd_hindex_close). */
int bd_hindex_reset(bd_hindex *ix);

/* Open the file again (after waiting for the lock, another process may have replaced
 * it); one that is not usable is reset. Returns 0 or -1 as bd_hindex_reset. */
int bd_hindex_reopen(bd_hindex *ix);

/* Adding rows: begin, add in seq order, commit with the new head (all or nothing: a crash
 * or a failure before commit leaves the index as it was). Each returns 0 or -1. */
int bd_hindex_begin(bd_hindex *ix);
int bd_hindex_add(bd_hindex *ix, const bd_hindex_row *row);
int bd_hindex_commit(bd_hindex *ix, const bd_hindex_head *head);
void bd_hindex_rollback(bd_hindex *ix);

/* Whether any row is BD_HX_BAD (the history holds something that is not a record: its
 * readers take the slow path, which reports it). */
bool bd_hindex_has_bad(bd_hindex *ix);

/* A place to read a record from. */
typedef struct bd_hindex_hit {
    uint64_t seq, off;
    uint32_t len;
} bd_hindex_hit;

/* history log's filters (NULL / false: not filtered). */
typedef struct bd_hindex_filter {
    const char *task_class, *case_id, *run_id, *failure_mode;
    bool failed_only;
} bd_hindex_filter;

/* Up to `max` records matching `f` with seq < before, newest first, into hits[]. Returns
 * how many (0..max), or -1 on an SQLite failure. */
long bd_hindex_find(bd_hindex *ix, const bd_hindex_filter *f, uint64_t before, bd_hindex_hit *hits,
                    size_t max);

/* For each (task class, case) with a score record — of `task_class` only, or of all when
 * NULL — its newest record: fn(task_class, case_id, hit, ctx), in (task class, case)
 * order; fn returns non-zero to stop (returned). Returns 0, fn's value, or -1. */
int bd_hindex_latest(bd_hindex *ix, const char *task_class,
                     int (*fn)(const char *tc, const char *case_id, const bd_hindex_hit *hit,
                               void *ctx),
                     void *ctx);

/* The seal: whether the index file at `path` is exactly as this user's benchdesk last
 * left it. Anyone who can write the bench's .benchdesk/ can edit the index, and a view
 * fed by an edited index would hide or misplace rows; so after every change benchdesk
 * records the file's device, inode, size, modification and change times in the user's
 * own state directory ($XDG_STATE_HOME/benchdesk/index-seals/, else
 * ~/.local/state/...), outside the bench. A user cannot set a file's change time, so an
 * edit, a replacement or a planted journal breaks the seal, and the index is rebuilt from
 * the records (docs/security.md). */
typedef enum {
    BD_HX_SEAL_OK,     /* as this user's benchdesk left it */
    BD_HX_SEAL_NONE,   /* no seal (first use, another user, no state directory) */
    BD_HX_SEAL_BROKEN, /* changed since (or a journal lies beside it) */
} bd_hindex_seal_state;

bd_hindex_seal_state bd_hindex_sealed(const char *path);

/* Seal the file as it is now; call holding the index lock, after the last change. 0, or
 * -1 when the user has no writable state directory (the index is then never trusted). */
int bd_hindex_seal(const char *path);

/* Remove the seal (the index disagreed with the records: rebuilt on next use). */
void bd_hindex_unseal(const char *path);

#endif
