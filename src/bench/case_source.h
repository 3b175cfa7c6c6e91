/*
 * case_source.h — a case as a sorted stream of entries, wherever its bytes live, and the
 * one place that decides what a case digest covers (docs/formats.md#digests).
 *
 * A source yields the entries of one case in bytewise order of their relative paths
 * ('/' separator): a directory on disk (digest.c), the git index or a git tree
 * (gitops.c). bd_case_source_digest applies the membership rule to every entry and feeds
 * the members to the case digest stream. The rule (bd_case_membership):
 *   - every regular file below the case dir is a member (case.yaml included);
 *   - the top-level provenance.yaml (a regular file) is not: it holds the signatures;
 *   - a link, a device, a socket, a FIFO, a submodule anywhere is refused
 *     (case.unsupported_entry, said by the source in its own words).
 */
#ifndef BD_CASE_SOURCE_H
#define BD_CASE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "err.h"

/* What an entry is, as far as the rule cares. */
typedef enum {
    BD_CASE_FILE,  /* a regular file (a git blob) */
    BD_CASE_OTHER, /* anything else: link, device, socket, FIFO, submodule */
} bd_case_kind;

typedef enum {
    BD_CASE_MEMBER,  /* hashed */
    BD_CASE_OUTSIDE, /* the top-level provenance.yaml: skipped */
    BD_CASE_REFUSED, /* case.unsupported_entry */
} bd_case_member;

/* The membership rule of the case digest for an entry named `name` (its last path
 * component) of kind `kind`, `top` when it lies directly in the case dir. */
bd_case_member bd_case_membership(bool top, const char *name, bd_case_kind kind);

/* One entry, filled by a source's `next`; everything borrowed until the next call. */
typedef struct bd_case_entry {
    const char *rel; /* relative path, NUL-terminated */
    size_t rel_len;
    const char *name; /* its last component (points into rel) */
    bool top;         /* directly in the case dir */
    bd_case_kind kind;
    bool exec;         /* any execute bit (git: mode 100755) */
    uint64_t size;     /* bytes the entry holds (members only) */
    const void *bytes; /* all of them when the source holds them; NULL: `read` them */
} bd_case_entry;

/* Where a source's `read` puts the bytes of the entry (digest.c's buffered hasher). */
typedef struct bd_digest_sink bd_digest_sink;

typedef struct bd_case_source bd_case_source;
struct bd_case_source {
    /* The next entry in bytewise path order: 1, 0 at the end, -1 with `err` set. A
     * source may refuse an entry itself (with its own message) before yielding it. */
    int (*next)(bd_case_source *src, bd_case_entry *e, bd_err *err);
    /* For an entry without `bytes`: hash exactly e->size bytes into `sink`. 0 or -1. */
    int (*read)(bd_case_source *src, const bd_case_entry *e, bd_digest_sink *sink, bd_err *err);
    /* The case.unsupported_entry error for an entry the rule refuses. Returns -1. */
    int (*refuse)(bd_case_source *src, const bd_case_entry *e, bd_err *err);
    /* Where the case is, for an internal error's message. */
    const char *where;
};

/* The case digest of `src` into `out`: every entry from `next`, in order (checked: an
 * entry out of bytewise order is internal.bug), judged by bd_case_membership, members
 * fed as T "\0" rel "\0" size "\0" bytes. `bytes_hashed` (may be NULL) gets the content
 * bytes hashed. Returns 0, or the source's -1 (or 1, passed through) with `err` set;
 * `out` is untouched on failure. */
int bd_case_source_digest(char out[BD_DIGEST_BUF], bd_case_source *src, uint64_t *bytes_hashed,
                          bd_err *err);

#endif
