/*
 * ydoc.h — a strict, bounded YAML reader over libyaml (docs/formats.md).
 *
 * Produces a small tree of scalars, mappings and sequences, each node remembering its
 * line and column (1-based). Refused, each with its own code and the file:line:col:
 *   - files over 1 MiB (or the limit of their kind, *_max)   yaml.too_large
 *   - nesting deeper than 32                 yaml.too_deep
 *   - any alias or anchor                    yaml.alias_refused
 *   - a duplicate key in one mapping         yaml.duplicate_key
 *   - input that is not valid UTF-8, holds a NUL byte (or a \0 escape), or starts
 *     with a UTF-16/UTF-32 byte-order mark                        yaml.not_utf8
 *   - more than one document, non-scalar keys, syntax errors  yaml.syntax
 * Any explicit tag (and any %TAG directive) is refused (yaml.syntax) so a value's type
 * is never smuggled in. Keys compare by their text: `a`, 'a' and "a" are the same key.
 * Control characters libyaml does not accept are yaml.syntax.
 */
#ifndef BD_YDOC_H
#define BD_YDOC_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define BD_YAML_MAX_BYTES (1024 * 1024)
#define BD_YAML_MAX_DEPTH 32

typedef enum { BD_Y_SCALAR, BD_Y_MAP, BD_Y_SEQ } bd_ykind;

typedef struct bd_ynode bd_ynode;

typedef struct bd_ypair {
    bd_ynode *key; /* always a scalar */
    bd_ynode *value;
} bd_ypair;

struct bd_ynode {
    bd_ykind kind;
    int line, col;
    /* BD_Y_SCALAR: NUL-terminated value (may contain no NUL: refused), and whether it
     * was written plain (unquoted). A plain "null", "~" or empty scalar is YAML null. */
    char *str;
    size_t len;
    bool plain;
    /* BD_Y_MAP: pairs in document order. BD_Y_SEQ: items. */
    bd_ypair *pairs;
    bd_ynode **items;
    size_t n;
};

typedef struct bd_ydoc {
    bd_ynode *root; /* NULL for an empty document */
    char *name;     /* the path or label used in error messages */
    void *arena;    /* private */
} bd_ydoc;

/* Parse `len` bytes of YAML named `name` (used in messages). On success *out is a new
 * document the caller frees with bd_ydoc_free. On failure returns -1, *out is NULL and
 * `err` names the code, file, line and column. */
int bd_ydoc_parse(bd_ydoc **out, const char *buf, size_t len, const char *name, bd_err *err);

/* Read and parse the file at `path` (opened O_NOFOLLOW|O_CLOEXEC; over 1 MiB refused from
 * fstat before reading). I/O failures (missing file, a directory, read errors) are
 * io.error; a symlink, FIFO, device or socket in the file's place is
 * case.unsupported_entry (never followed, never read). Same ownership as bd_ydoc_parse. */
int bd_ydoc_load(bd_ydoc **out, const char *path, bd_err *err);

/* The same two with the size limit of a kind of file: `max_bytes` instead of 1 MiB, and
 * `what` (e.g. "digests.yaml files"; NULL: "YAML files") named in the yaml.too_large
 * message with the limit, so the curator sees which limit was hit. The limits of each
 * kind are bench.h's BD_*_MAX_BYTES. */
int bd_ydoc_parse_max(bd_ydoc **out, const char *buf, size_t len, const char *name,
                      size_t max_bytes, const char *what, bd_err *err);
int bd_ydoc_load_max(bd_ydoc **out, const char *path, size_t max_bytes, const char *what,
                     bd_err *err);

/* Which reader builds the tree. BD_YDOC_ANY (what every parse above uses): yfast.c for the
 * plain subset bench files are written in, libyaml for anything else and for every
 * refusal. The other two are for the tests that hold the two to the same trees:
 * BD_YDOC_LIBYAML only libyaml; BD_YDOC_FAST only yfast, returning 1 (and *out NULL,
 * `err` untouched) when it declines. Limits and byte checks apply first in every mode. */
typedef enum { BD_YDOC_ANY, BD_YDOC_LIBYAML, BD_YDOC_FAST } bd_ydoc_mode;
int bd_ydoc_parse_mode(bd_ydoc **out, const char *buf, size_t len, const char *name,
                       size_t max_bytes, const char *what, bd_ydoc_mode mode, bd_err *err);

void bd_ydoc_free(bd_ydoc *doc);

/* Borrowed value for `key` in mapping `map`, or NULL if absent (or `map` not a map). */
bd_ynode *bd_ynode_get(const bd_ynode *map, const char *key);

/* Copy `s` into `out` (`cap` bytes, at least 5) for a one-line message: control
 * characters become '?', and a string too long is cut at a character boundary and ends
 * in "...". Never fails; NULL `s` gives "". */
void bd_ydoc_clip(char *out, size_t cap, const char *s);

/* True when `a` and `b` are the same tree node for node: kinds, texts, quoting, lines
 * and columns (two NULLs are equal). */
bool bd_ynode_equal(const bd_ynode *a, const bd_ynode *b);

/* True for a plain null scalar ("null", "Null", "NULL", "~", or empty). */
bool bd_ynode_is_null(const bd_ynode *node);

#endif
