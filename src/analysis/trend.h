/*
 * trend.h — "is it getting better?": the mean score of a task class over its last full
 * runs (docs/compare.md), from the runs of the verified chain (compare.h). The task classes
 * view and the compare header draw it as a sparkline; `history log --trend` prints it as
 * a table.
 */
#ifndef BD_TREND_H
#define BD_TREND_H

#include <stdbool.h>
#include <stddef.h>

#include "compare.h"

/* Full runs in a trend. */
#define BD_TREND_RUNS 20

typedef struct bd_trend_point {
    const bd_run *run; /* borrowed */
    size_t cases, passed;
    double pass_rate, mean;
    double ci_lo, ci_hi; /* 95% BCa of the mean, seeded as a run summary (stats.h) */
} bd_trend_point;

/* The last `max` (0: BD_TREND_RUNS) full runs of `task_class`, oldest first, into a new
 * array *out of *n points (free with free(); it borrows from `runs`). Returns 0 (n may be
 * 0), or -1 with env.out_of_memory. */
int bd_trend(const bd_runs *runs, const char *task_class, size_t max, bd_trend_point **out,
             size_t *n, bd_err *err);

/* The points' means as a sparkline, one cell per point scaled to [0, 1]: the Unicode
 * blocks U+2581..U+2588 when `utf8`, else the ASCII digits 0..9. Writes at most len - 1
 * bytes and a NUL into buf (a cell that does not fit is left out). Returns buf. */
char *bd_trend_sparkline(const bd_trend_point *p, size_t n, bool utf8, char *buf, size_t len);

#endif
