/*
 * score.h — BenchScore: strict parsing and validation of a rubric's stdout
 * (docs/formats.md#benchscore).
 *
 * The parser never trusts the rubric: it reads exactly one JSON object from a bounded
 * buffer and refuses invalid UTF-8, duplicate keys (at any depth), NaN/Infinity (and
 * numbers too large for a double), trailing bytes other than whitespace, wrong types,
 * missing or extra keys, a score outside [0,1], a negative cost, a nested breakdown (a
 * breakdown value that is not a number in [0,1]), and any key at any depth whose name
 * contains `confidence`, `llm`, `self_reported` or `model_says` (case-insensitive) — except
 * inside a check's `expected` and `actual`, which are the rubric's data, not its members.
 * Those give rubric.malformed_output; then breakdown keys outside the registration's
 * breakdown_keys give rubric.unknown_breakdown_key, and failure-mode codes outside its
 * taxonomy rubric.unknown_failure_mode.
 *
 * Exactly (docs/formats.md#benchscore): the top level is an object with exactly the keys passed
 * (bool), score (number in [0,1]), breakdown (object of key -> number in [0,1]; an object or array
 * value is a nested breakdown), failure_modes (array of non-empty code strings or objects {code,
 * severity: block|warn|info, detail?: string} with no other key), cost_usd (number >= 0) and
 * wall_clock_ms (integer >= 0, below 2^53), and optionally checks (score_checks.h: at most 64
 * entries {name, expected, actual, passed}). Before any of that the raw bytes must be strict UTF-8
 * without NUL and one strict JSON value (RFC 8259 grammar; no duplicate key after unescaping; no
 * \u0000 or lone surrogate escape; no number that overflows a double or is longer than 63
 * characters; nesting at most 64; only whitespace after the value) — checked by a scanner of our
 * own, because cJSON silently keeps duplicate keys and is lax about the rest. The member names,
 * ranges, lengths and caps come from score_rules.h, the table the history record checker uses too:
 * at most 64 failure modes and 64 breakdown keys, codes and keys of 1..256 bytes, a detail of at
 * most 1 KiB, cost_usd at most 1e9.
 *
 * Severity: a bare-string entry takes the taxonomy's severity (block when the code is
 * unknown or there is no registration); an object entry keeps the severity the rubric
 * wrote, even when it differs from the taxonomy's. The parser adds no rule of its own
 * about consistency: `passed: true` with a block-severity failure mode is accepted as
 * the rubric said it (policy on such scores belongs to whoever reads them).
 */
#ifndef BD_SCORE_H
#define BD_SCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bench.h"

#include "score_checks.h"
#include "score_rules.h"

#define BD_SCORE_DETAIL_MAX 256

/* Harness failure modes, in precedence order (lower value wins when several apply). */
#define BD_HARNESS_MODES(X)                                                                        \
    X(BD_HM_NONE, "")                                                                              \
    X(BD_HM_TIMEOUT, "rubric.timeout")                                                             \
    X(BD_HM_CPU_LIMIT, "rubric.cpu_limit")                                                         \
    X(BD_HM_KILLED_OOM, "rubric.killed_oom")                                                       \
    X(BD_HM_OUTPUT_LIMIT, "rubric.output_limit")                                                   \
    X(BD_HM_SANDBOX_VIOLATION, "rubric.sandbox_violation")                                         \
    X(BD_HM_CRASHED, "rubric.crashed")                                                             \
    X(BD_HM_MALFORMED, "rubric.malformed_output")                                                  \
    X(BD_HM_UNKNOWN_BREAKDOWN_KEY, "rubric.unknown_breakdown_key")                                 \
    X(BD_HM_UNKNOWN_FAILURE_MODE, "rubric.unknown_failure_mode")                                   \
    X(BD_HM_SUT_TIMEOUT, "sut.timeout")                                                            \
    X(BD_HM_SUT_EXCEPTION, "sut.exception")                                                        \
    X(BD_HM_SUT_MALFORMED, "sut.malformed_output")

typedef enum {
#define BD_X(name, str) name,
    BD_HARNESS_MODES(BD_X)
#undef BD_X
        BD_HM__COUNT
} bd_harness_mode;

/* Stable code string of `m` ("rubric.timeout", ...); "" for BD_HM_NONE or out of range. */
const char *bd_harness_mode_str(bd_harness_mode m);

typedef struct bd_score_fm {
    char *code;
    bd_severity severity;
    char *detail; /* may be NULL */
} bd_score_fm;

typedef struct bd_score_breakdown {
    char *key;
    double value;
} bd_score_breakdown;

/* A normalized BenchScore. Breakdown entries sorted by key; checks in the rubric's order
 * (none when the rubric wrote no `checks`). */
typedef struct bd_score {
    bool passed;
    double score;
    bd_score_breakdown *breakdown;
    size_t n_breakdown;
    bd_score_check *checks;
    size_t n_checks;
    bd_score_fm *failure_modes;
    size_t n_failure_modes;
    double cost_usd;
    int64_t wall_clock_ms;
} bd_score;

/* Parse and validate `len` bytes of rubric stdout against `reg` (may be NULL: then only
 * the structural rules apply and breakdown/taxonomy checks are skipped).
 * Returns BD_HM_NONE and fills *out (caller frees with bd_score_free) when valid; else
 * returns the harness mode, leaves *out zeroed, and writes a short one-line detail
 * (never echoing more than 64 bytes of rubric output) into `detail`.
 * Precedence: rubric.malformed_output over rubric.unknown_breakdown_key over
 * rubric.unknown_failure_mode. The detail names the rule broken ("score 1.5 outside
 * [0,1]", "banned key 'confidence' (contains 'confidence') at $.breakdown"); rubric
 * bytes in it are printable ASCII only (others shown as '?'), so it holds no control
 * character and no newline. `detail` may be NULL. Out of memory while validating is
 * reported as rubric.malformed_output with a detail saying so (the interface has no
 * other failure channel). Breakdown entries come back sorted by key (bytewise). */
bd_harness_mode bd_score_parse(bd_score *out, const char *buf, size_t len,
                               const bd_registration *reg, char detail[BD_SCORE_DETAIL_MAX]);

/* Fill *out with the failing score the harness records for `mode`: passed false, score
 * 0, empty breakdown, one failure mode {code, block, detail}, cost 0. `detail` (may be
 * NULL) is copied with invalid UTF-8 bytes and control characters other than \n and \t
 * replaced by '?', so the record is always canonical JSON. A negative wall_clock_ms is
 * stored as 0. Returns 0, or -1 (with *out zeroed) on out-of-memory or when `mode` is
 * BD_HM_NONE or out of range. Caller frees with bd_score_free. */
int bd_score_harness_failure(bd_score *out, bd_harness_mode mode, const char *detail,
                             int64_t wall_clock_ms);

/* Deep-copy `src` into *dst (overwritten). Returns 0, or -1 on out-of-memory with *dst
 * zeroed. Caller frees with bd_score_free. */
int bd_score_copy(bd_score *dst, const bd_score *src);

/* Free what *s owns (not s itself) and zero it. NULL is allowed. */
void bd_score_free(bd_score *s);

/* The score as a new cJSON object (keys passed, score, breakdown, failure_modes
 * [{code, severity, detail?}], cost_usd, wall_clock_ms, and checks when there is at least
 * one), or NULL on out-of-memory. detail is left out when NULL. Caller frees with cJSON_Delete;
 * bd_canon_json gives the bytes that are stored and hashed. */
cJSON *bd_score_to_json(const bd_score *s);

#endif
