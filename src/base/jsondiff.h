/*
 * jsondiff.h — a field-aligned structural diff of two JSON documents (the expected answer
 * of a case beside the harness output, docs/user-guide.md): both are flattened to leaf paths
 * ("fix.version", "steps[2]") and the same path is put on the same row, so keys line up
 * whatever order or nesting each side wrote them in.
 */
#ifndef BD_JSONDIFF_H
#define BD_JSONDIFF_H

#include <stddef.h>

typedef enum {
    BD_JD_SAME,          /* both sides, equal */
    BD_JD_CHANGED,       /* both sides, different */
    BD_JD_ONLY_EXPECTED, /* the expected side only */
    BD_JD_ONLY_ACTUAL,   /* the actual side only */
} bd_jd_status;

typedef struct bd_jd_row {
    char *path;     /* "a.b[0]"; "" for a document that is one value */
    char *expected; /* the leaf as compact JSON (strings quoted), or NULL */
    char *actual;   /* likewise */
    bd_jd_status status;
} bd_jd_row;

typedef struct bd_jd {
    bd_jd_row *rows; /* expected's order, then paths only the actual side has */
    size_t n;
    size_t n_diff; /* rows that are not BD_JD_SAME */
} bd_jd;

/* Diff `expected` against `actual` (JSON text of `elen`/`alen` bytes; either may be NULL).
 * A side that is not JSON is taken as one string value at path "". Returns 0 and fills
 * *out (release with bd_jd_release), or -1 when out of memory. The texts are untrusted:
 * callers show them through text.h. */
int bd_jd_diff(bd_jd *out, const char *expected, size_t elen, const char *actual, size_t alen);

/* Free what bd_jd_diff allocated; *d is zeroed. */
void bd_jd_release(bd_jd *d);

#endif
