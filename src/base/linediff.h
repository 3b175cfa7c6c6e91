/*
 * linediff.h — a line diff of two texts (longest common subsequence), for showing what a
 * change does before it is made (the TUI's record view: old and new cassette). Core:
 * no curses, no printing. Lines point into the caller's texts.
 */
#ifndef BD_LINEDIFF_H
#define BD_LINEDIFF_H

#include <stddef.h>

#include "err.h"

/* Lines compared exactly; texts with more lines than this on either side are shown as
 * all removed then all added (the table would be too large). */
#define BD_LINEDIFF_MAX_LINES 2000

typedef enum { BD_DIFF_SAME, BD_DIFF_DEL, BD_DIFF_ADD } bd_diff_op;

typedef struct bd_diff_line {
    bd_diff_op op;
    const char *text; /* into a or b; not NUL-terminated at the line end */
    size_t len;       /* without the newline */
} bd_diff_line;

/* Diff `a` (alen bytes) against `b` (blen bytes), line by line. Returns 0 with *out (a
 * new array of *n lines, caller frees; the texts must outlive it), or -1 with
 * env.out_of_memory. */
int bd_line_diff(bd_diff_line **out, size_t *n, const char *a, size_t alen, const char *b,
                 size_t blen, bd_err *err);

#endif
