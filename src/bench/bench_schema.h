/*
 * bench_schema.h — the typing and the validation engine the bench's YAML loaders share
 * (bench_load.c, bench_digests.c); not for callers outside the bench domain, who use
 * bench.h.
 *
 * Typing follows the YAML 1.2 core schema: a plain `1` is an integer, a quoted "1" a
 * string, so a field never means one thing to us and another to a second reader of the
 * same signed file. Every bd_v_* check fails through bd_v_fail: one line naming the file,
 * the node's line and column, what is wrong and what to do, under the file kind's own
 * *.schema_invalid code unless another is named. Each returns 0, or -1 with the error set
 * (bd_v_need: the node, or NULL with the error set). Nothing here keeps a node.
 */
#ifndef BD_BENCH_SCHEMA_H
#define BD_BENCH_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "bench.h"
#include "err.h"
#include "ydoc.h"

/* One document being validated: its name in messages, its kind's schema code, where
 * errors go. */
typedef struct bd_vctx {
    const char *file;
    bd_code code; /* this file kind's *.schema_invalid */
    bd_err *err;
} bd_vctx;

/* Fail at node `at` (or the file when NULL) with `code`, or the file's schema code when
 * `code` is BD_OK. Returns -1. */
__attribute__((format(printf, 4, 5))) int bd_v_fail(const bd_vctx *v, bd_code code,
                                                    const bd_ynode *at, const char *fmt, ...);
/* Out of memory (BD_E_NOMEM). Returns -1. */
int bd_v_nomem(const bd_vctx *v);

/* `n` must be a mapping / a list; `what` names it in the message. */
int bd_v_map(const bd_vctx *v, const bd_ynode *n, const char *what);
int bd_v_seq(const bd_vctx *v, const bd_ynode *n, const char *what);
/* Refuse any key of `map` not in `allowed` (NULL-terminated), naming key and line. */
int bd_v_keys(const bd_vctx *v, const bd_ynode *map, const char *what, const char *const *allowed);
/* The value of required key `key`, or NULL after failing. */
const bd_ynode *bd_v_need(const bd_vctx *v, const bd_ynode *map, const char *key, const char *what);
/* A string (quoted, or plain text that is not null/boolean/number). */
int bd_v_str(const bd_vctx *v, const bd_ynode *n, const char *what, bool allow_empty);
/* bd_v_str, then *out a new copy (caller frees). */
int bd_v_dup_str(const bd_vctx *v, const bd_ynode *n, const char *what, bool allow_empty,
                 char **out);
/* An integer in [lo, hi]. */
int bd_v_int(const bd_vctx *v, const bd_ynode *n, const char *what, long long lo, long long hi,
             int *out);
/* A number (integer or float) in [lo, hi]; NaN never is. */
int bd_v_num(const bd_vctx *v, const bd_ynode *n, const char *what, double lo, double hi,
             double *out);
/* A boolean (true/false in the core schema's spellings, unquoted). */
int bd_v_bool(const bd_vctx *v, const bd_ynode *n, const char *what, bool *out);
/* One of the `count` strings `names`; *out its index. */
int bd_v_enum(const bd_vctx *v, const bd_ynode *n, const char *what, const char *const *names,
              size_t count, int *out);
/* A digest "blake3:<64 lower-case hex>"; with `nullable`, null gives "" and *has=false. */
int bd_v_digest(const bd_vctx *v, const bd_ynode *n, const char *what, bool nullable,
                char out[BD_DIGEST_STR_LEN + 1], bool *has);
/* A 40-hex-digit fingerprint, stored upper case. */
int bd_v_fpr(const bd_vctx *v, const bd_ynode *n, const char *what, char out[BD_FPR_LEN + 1]);
/* A UTC time "YYYY-MM-DDTHH:MM:SSZ" with a real date; *out a new copy (caller frees). */
int bd_v_timestamp(const bd_vctx *v, const bd_ynode *n, const char *what, char **out);
/* The root must be a mapping whose schema_version is `version`. A format-v1 file where
 * v2 is wanted is bench.format_v1 with the one command that converts it. */
int bd_v_root(const bd_vctx *v, const bd_ydoc *doc, int version);
/* Whether `n` is a plain scalar the core schema reads as the boolean false. */
bool bd_v_is_false(const bd_ynode *n);

/* Index of the first string (in input order) equal to an earlier one, or -1, in *dup;
 * O(n log n) on hostile input. Returns 0, or -1 on out-of-memory. */
int bd_v_find_dup(const char *const *strs, size_t n, long *dup);

/* A digest's 71 bytes at `s` (not NUL-terminated): "blake3:" and 64 lower-case hex
 * digits. Range tests without branches, which the compiler turns into vector compares: a
 * 100,000-pin digests.yaml checks 6.4 million digits. */
static inline bool bd_v_digest_bytes_ok(const char *s)
{
    if (memcmp(s, "blake3:", 7) != 0)
        return false;
    const unsigned char *p = (const unsigned char *)s + 7;
    unsigned char bad = 0;
    for (int i = 0; i < BD_DIGEST_STR_LEN - 7; i++)
        bad |= (unsigned char)((unsigned char)(p[i] - '0') > 9) &
               (unsigned char)((unsigned char)(p[i] - 'a') > 5);
    return !bad;
}

/* The same for a NUL-terminated string of exactly 71 bytes. */
static inline bool bd_v_digest_ok(const char *s)
{
    return strnlen(s, BD_DIGEST_STR_LEN + 1) == BD_DIGEST_STR_LEN && bd_v_digest_bytes_ok(s);
}

/* ---- reading a document as one of the bench's files ------------------------------------ */

/* Where a document comes from: the file `path` (from_file), else buf/len shown as `name`. */
typedef struct bd_doc_src {
    bool from_file;
    const char *path;
    const char *buf;
    size_t len;
    const char *name;
} bd_doc_src;

/* A kind of file: its size limit, how the limit's message names it (NULL: the default),
 * its *.schema_invalid code, and its validator. `check` validates `doc` into `out` (a
 * bd_<kind> **); it takes the document when `keeps_doc`, else bd_doc_read frees it. */
typedef struct bd_doc_kind {
    bd_ykind_limit limit;
    const char *what;
    bd_code schema_code;
    bool keeps_doc;
    int (*check)(void *out, bd_ydoc *doc, const char *expect, bd_err *err);
} bd_doc_kind;

/* Read `src` and validate it as `kind` into `out` (set to NULL first by the caller);
 * `expect` is the expected name or case id where the kind has one. The parse and load
 * entry points differ only in where the text comes from, so they all come through here.
 * A directory where the file belongs is the kind's schema code (invalid input, not I/O). */
int bd_doc_read(const bd_doc_kind *kind, void *out, const bd_doc_src *src, const char *expect,
                bd_err *err);

#endif
