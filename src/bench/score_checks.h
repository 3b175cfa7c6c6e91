/*
 * score_checks.h — the optional `checks` list of a BenchScore: what the rubric actually
 * compared, in its own terms (docs/formats.md#what-the-rubric-compared).
 *
 * One reader for both places a list is held to its rules (score_rules.h): score.c's parser
 * (a rubric's stdout) and the history's record checker (a record's `score`). An entry is
 * exactly {name, expected, actual, passed}: `name` 1..128 bytes of [a-z0-9_] with no banned
 * word, unique in the list; `expected` and `actual` any JSON value of at most 4 KiB in
 * canonical JSON (canon.h); `passed` a boolean. At most 64 entries.
 */
#ifndef BD_SCORE_CHECKS_H
#define BD_SCORE_CHECKS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* One entry. expected and actual are their values in canonical JSON (NUL-terminated). */
typedef struct bd_score_check {
    char *name;
    char *expected;
    char *actual;
    bool passed;
} bd_score_check;

/* Read the `checks` array `arr` of a score of record `version` (BD_SCORE_RULES_CURRENT for
 * a rubric's output; `checks` exists from version 2 on). On success returns 0 and, when
 * `out` is non-NULL, sets *out to a new array of *n entries (NULL when *n is 0; free with
 * bd_score_checks_free). Returns -1 when the list breaks a rule, with a one-line reason in
 * `why` (`whylen` bytes, may be NULL) that starts with `where` ("$.checks",
 * "score.checks") and echoes no byte of the input but indices and valid names; -2 on
 * out-of-memory. On failure *out is NULL and *n 0. */
int bd_score_checks_read(bd_score_check **out, size_t *n, const cJSON *arr, int version,
                         const char *where, char *why, size_t whylen);

/* The list as a new cJSON array of {actual, expected, name, passed}, or NULL on
 * out-of-memory. Caller frees with cJSON_Delete. */
cJSON *bd_score_checks_to_json(const bd_score_check *c, size_t n);

/* Free the `n` entries of `c` and `c` itself. NULL is allowed. */
void bd_score_checks_free(bd_score_check *c, size_t n);

/* The first check in `c` (n entries) that failed, or NULL when every one passed. */
const bd_score_check *bd_score_checks_first_failed(const bd_score_check *c, size_t n);

#endif
