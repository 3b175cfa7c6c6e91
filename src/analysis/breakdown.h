/*
 * breakdown.h — what drags a run down (docs/user-guide.md, the run view's breakdown panel):
 * over the scored cases of a run, how often each failure mode was reported (with its
 * worst severity) and the mean of each breakdown key, plus which cases each concerns.
 */
#ifndef BD_BREAKDOWN_H
#define BD_BREAKDOWN_H

#include <stdbool.h>
#include <stddef.h>

#include "score.h"

typedef struct bd_bdown_mode {
    const char *code;     /* borrowed from the scores */
    bd_severity severity; /* the worst severity it was reported with */
    size_t count;         /* cases reporting it */
} bd_bdown_mode;

typedef struct bd_bdown_key {
    const char *key; /* borrowed from the scores */
    double mean;     /* over the cases that report the key */
    size_t n;        /* cases that report it */
    size_t n_below;  /* of those, cases below 1.0 */
} bd_bdown_key;

typedef struct bd_bdown {
    bd_bdown_mode *modes; /* most frequent first; ties: worse severity, then code */
    size_t n_modes;
    bd_bdown_key *keys; /* lowest mean first; ties: key */
    size_t n_keys;
    size_t n_scored;
} bd_bdown;

/* Aggregate `scores[0..n)` (NULL entries are cases without a score and are skipped).
 * The strings in *out are borrowed from the scores: keep them alive while *out is used.
 * Returns 0, or -1 when out of memory (*out is then empty). Release with
 * bd_bdown_release. */
int bd_bdown_build(bd_bdown *out, const bd_score *const *scores, size_t n);

/* True when `s` concerns failure mode `code` (reports it). */
bool bd_bdown_has_mode(const bd_score *s, const char *code);

/* True when `s` reports breakdown key `key` below 1.0. */
bool bd_bdown_key_below(const bd_score *s, const char *key);

void bd_bdown_release(bd_bdown *b);

#endif
