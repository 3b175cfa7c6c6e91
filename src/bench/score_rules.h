/*
 * score_rules.h — the rules of a BenchScore (docs/formats.md#benchscore), written once.
 *
 * Two readers hold a BenchScore to them: score.c's parser (a rubric's stdout) and
 * history.c's record checker (the `score` member of a history record). Both take the
 * member names, the ranges, the length limits and the caps from here, so a rule changed
 * here changes both and a score the parser accepts is a score the checker accepts.
 *
 * What stays with each reader is only what differs by nature: the parser reads untrusted
 * input (strict JSON syntax, bare-string failure modes that take the taxonomy's
 * severity, the registration's breakdown keys and taxonomy); the checker reads the
 * normalized form score.c writes (every failure mode an object) and its own exact
 * one-line reasons.
 */
#ifndef BD_SCORE_RULES_H
#define BD_SCORE_RULES_H

#include <stdbool.h>
#include <stddef.h>

/* Caps on a BenchScore (docs/formats.md#benchscore): past any of them the score is
 * rubric.malformed_output, so a score that validates always fits in one history record and sums
 * stay finite. */
#define BD_SCORE_MAX_FAILURE_MODES 64
#define BD_SCORE_MAX_BREAKDOWN     64
#define BD_SCORE_MAX_FM_DETAIL     1024
#define BD_SCORE_MAX_COST_USD      1e9
/* A failure-mode code and a breakdown key: 1 to this many bytes. */
#define BD_SCORE_MAX_NAME 256
/* The optional `checks` list (docs/formats.md#what-the-rubric-compared): at most this many
 * entries, a name of 1 to BD_SCORE_MAX_CHECK_NAME bytes of [a-z0-9_], and `expected` and
 * `actual` each at most BD_SCORE_MAX_CHECK_VALUE bytes in canonical JSON. */
#define BD_SCORE_MAX_CHECKS      64
#define BD_SCORE_MAX_CHECK_NAME  128
#define BD_SCORE_MAX_CHECK_VALUE 4096
/* wall_clock_ms: an integer exactly representable as a double (below 2^53). */
#define BD_SCORE_MAX_WALL_MS 9007199254740991.0

/* The members of a BenchScore in canonical (bytewise) order: the order a record stores them
 * in. All are required but `checks` (bd_score_member_optional). */
#define BD_SCORE_MEMBERS(X)                                                                        \
    X(BD_SM_BREAKDOWN, "breakdown")                                                                \
    X(BD_SM_CHECKS, "checks")                                                                      \
    X(BD_SM_COST, "cost_usd")                                                                      \
    X(BD_SM_FAILURE_MODES, "failure_modes")                                                        \
    X(BD_SM_PASSED, "passed")                                                                      \
    X(BD_SM_SCORE, "score")                                                                        \
    X(BD_SM_WALL, "wall_clock_ms")

typedef enum {
#define BD_X(name, str) name,
    BD_SCORE_MEMBERS(BD_X)
#undef BD_X
        BD_SM__COUNT
} bd_score_member;

/* The members of a failure-mode object: code and severity required, detail optional. */
#define BD_SCORE_FM_MEMBERS(X)                                                                     \
    X(BD_SFM_CODE, "code")                                                                         \
    X(BD_SFM_DETAIL, "detail")                                                                     \
    X(BD_SFM_SEVERITY, "severity")

typedef enum {
#define BD_X(name, str) name,
    BD_SCORE_FM_MEMBERS(BD_X)
#undef BD_X
        BD_SFM__COUNT
} bd_score_fm_member;

/* Name of member `m` ("breakdown", ...; "code", ...). Out of range: "". */
const char *bd_score_member_name(bd_score_member m);
const char *bd_score_fm_member_name(bd_score_fm_member m);

/* True for a member a BenchScore may leave out (`checks`); false for the required ones and
 * out of range. */
bool bd_score_member_optional(bd_score_member m);

/* The members of one `checks` entry, all required. */
#define BD_SCORE_CHECK_MEMBERS(X)                                                                  \
    X(BD_SCK_ACTUAL, "actual")                                                                     \
    X(BD_SCK_EXPECTED, "expected")                                                                 \
    X(BD_SCK_NAME, "name")                                                                         \
    X(BD_SCK_PASSED, "passed")

typedef enum {
#define BD_X(name, str) name,
    BD_SCORE_CHECK_MEMBERS(BD_X)
#undef BD_X
        BD_SCK__COUNT
} bd_score_check_member;

/* The member named `name` (exact, case-sensitive), or -1 when it is none. */
int bd_score_member_lookup(const char *name);
int bd_score_fm_member_lookup(const char *name);
int bd_score_check_member_lookup(const char *name);
const char *bd_score_check_member_name(bd_score_check_member m);

/* The bounded quantities of a BenchScore: a value, an entry count or a byte length. */
typedef enum {
    BD_SR_SCORE,           /* score: a number */
    BD_SR_BREAKDOWN_VALUE, /* a breakdown value: a number */
    BD_SR_COST,            /* cost_usd: a number */
    BD_SR_WALL,            /* wall_clock_ms: an integer */
    BD_SR_BREAKDOWN_COUNT, /* entries of breakdown */
    BD_SR_FM_COUNT,        /* entries of failure_modes */
    BD_SR_BREAKDOWN_KEY,   /* bytes of a breakdown key */
    BD_SR_FM_CODE,         /* bytes of a failure-mode code */
    BD_SR_FM_DETAIL,       /* bytes of a failure-mode detail */
    BD_SR_CHECK_COUNT,     /* entries of checks */
    BD_SR_CHECK_NAME,      /* bytes of a check's name */
    BD_SR_CHECK_VALUE,     /* bytes of a check's expected or actual, canonical JSON */
    BD_SR__COUNT
} bd_score_rule;

typedef struct bd_score_rule_def {
    double min, max; /* the closed range the quantity must lie in */
    bool integer;    /* whole numbers only */
    /* The upper bound history records of version 1 are held to. Those were written
     * before the caps existed, and an append-only chain cannot be rewritten: a cap holds
     * for version 2 on; rules as old as the format have legacy_max == max. */
    double legacy_max;
} bd_score_rule_def;

/* The table, indexed by bd_score_rule. */
extern const bd_score_rule_def bd_score_rules[BD_SR__COUNT];

/* True when `v` satisfies rule `r` for a record of `version` (1 for a history record of
 * version 1; any larger number — or BD_SCORE_RULES_CURRENT for a rubric's output — for
 * the current rules). NaN and infinities never satisfy a rule. */
#define BD_SCORE_RULES_CURRENT 2
bool bd_score_rule_ok(bd_score_rule r, double v, int version);

/* The banned word `key` (n bytes) contains, case-insensitively — "confidence", "llm",
 * "self_reported" or "model_says": a rubric must not smuggle a self-assessment into a
 * score under any name — or NULL when it contains none. */
const char *bd_score_banned_word(const char *key, size_t n);

/* True when the `n` bytes at `s` are a check name by its character rule: [a-z0-9_] only (the
 * length is rule BD_SR_CHECK_NAME). */
bool bd_score_check_name_chars_ok(const char *s, size_t n);

#endif
