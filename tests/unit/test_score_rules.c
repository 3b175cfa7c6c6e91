/*
 * test_score_rules.c — score.c's parser and history.c's record checker hold a BenchScore
 * to one table of rules (score_rules.h). For every rule, a value at its boundary is
 * accepted by both and a value one past it is refused by both: the parser says
 * rubric.malformed_output, the checker refuses the record with an exact reason. Records
 * of version 1, written before the caps, are still accepted past a cap (the chain is
 * append-only), never past a rule as old as the format. Harness-failure scores verify.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "history.h"
#include "score.h"
#include "score_rules.h"

#define DIGEST "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FPR    "0123456789ABCDEF0123456789ABCDEF01234567"
#define ZEROS  "0000000000000000000000000000000000000000000000000000000000000000"

/* A growing string. */
typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* A BenchScore document with these parts; NULL takes the default. It is in the form a
 * record stores (failure modes as objects), so the same text goes to both readers. */
typedef struct doc {
    const char *score, *cost, *wall, *breakdown, *failure_modes, *checks;
} doc;

static char *render(const doc *d)
{
    buf b = {0};
    put(&b, "{\"breakdown\":%s,", d->breakdown ? d->breakdown : "{\"a\":0.5}");
    if (d->checks)
        put(&b, "\"checks\":%s,", d->checks);
    put(&b, "\"cost_usd\":%s,\"failure_modes\":%s,\"passed\":false,", d->cost ? d->cost : "0",
        d->failure_modes ? d->failure_modes : "[]");
    put(&b, "\"score\":%s,\"wall_clock_ms\":%s}", d->score ? d->score : "0.5",
        d->wall ? d->wall : "0");
    return b.p;
}

/* The bytes of a canonical score record of `version` holding `score` (taken). */
static char *record_with(cJSON *score, int version, size_t *len)
{
    cJSON *r = cJSON_CreateObject();
    assert_non_null(r);
    cJSON_AddNumberToObject(r, "schema_version", version);
    cJSON_AddNumberToObject(r, "seq", 1);
    cJSON_AddStringToObject(r, "task_class", "vuln-remediation");
    cJSON_AddStringToObject(r, "harness_version", "0.1.0");
    cJSON_AddStringToObject(r, "operator_fingerprint", FPR);
    cJSON_AddStringToObject(r, "prev_hash", ZEROS);
    cJSON_AddStringToObject(r, "run_id", "20260512T140000Z-ab12");
    cJSON_AddStringToObject(r, "case_id", "case-001");
    cJSON_AddStringToObject(r, "case_digest", DIGEST);
    cJSON_AddNullToObject(r, "cassette_digest");
    cJSON_AddStringToObject(r, "isolation_class", "subprocess");
    cJSON_AddBoolToObject(r, "provenance_verified", true);
    cJSON_AddStringToObject(r, "started_at", "2026-05-12T14:00:00Z");
    cJSON_AddStringToObject(r, "finished_at", "2026-05-12T14:00:01Z");
    if (version >= 2) {
        cJSON_AddStringToObject(r, "task_class_digest", DIGEST);
        cJSON_AddStringToObject(r, "run_scope", "full");
        cJSON_AddNumberToObject(r, "run_cases", 1);
    } else {
        cJSON_AddStringToObject(r, "rubric_digest", DIGEST);
    }
    cJSON_AddItemToObject(r, "score", score);
    char *bytes = bd_canon_json(r, len);
    assert_non_null(bytes);
    cJSON_Delete(r);
    return bytes;
}

/* The checker's verdict on a record of `version` whose score is the JSON `text`;
 * its reason in `why` ("" when accepted). */
static bd_chain_reason check_record(const char *text, int version, char why[256])
{
    cJSON *score = cJSON_Parse(text);
    assert_non_null(score);
    size_t len;
    char *rec = record_with(score, version, &len);
    bd_history_record r;
    bd_chain_reason c = bd_history_record_parse(&r, rec, len, why);
    if (c == BD_CHAIN_OK)
        bd_history_record_release(&r);
    free(rec);
    return c;
}

/* Both readers accept `d`; the parser's normalized score makes a record that verifies. */
static void both_accept(const doc *d)
{
    char *text = render(d);
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    bd_harness_mode m = bd_score_parse(&s, text, strlen(text), NULL, detail);
    if (m != BD_HM_NONE)
        fail_msg("parser refused a boundary value: %s (%.120s)", detail, text);
    char why[256];
    bd_chain_reason c = check_record(text, 2, why);
    if (c != BD_CHAIN_OK)
        fail_msg("checker refused a boundary value: %s (%.120s)", why, text);
    /* the form score.c writes into a record */
    cJSON *j = bd_score_to_json(&s);
    assert_non_null(j);
    size_t len;
    char *rec = record_with(j, 2, &len);
    bd_history_record r;
    c = bd_history_record_parse(&r, rec, len, why);
    if (c != BD_CHAIN_OK)
        fail_msg("checker refused the parser's own score: %s", why);
    bd_history_record_release(&r);
    free(rec);
    bd_score_free(&s);
    free(text);
}

/* Both refuse `d`: the parser as malformed output with a detail holding `parser_says`,
 * the checker with exactly `checker_says`. A version-1 record is accepted when
 * `v1_ok` (a cap), refused with the same reason otherwise. */
static void both_refuse(const doc *d, const char *parser_says, const char *checker_says, bool v1_ok)
{
    char *text = render(d);
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    bd_harness_mode m = bd_score_parse(&s, text, strlen(text), NULL, detail);
    if (m != BD_HM_MALFORMED)
        fail_msg("parser gave %s past a rule (%.120s)", bd_harness_mode_str(m), text);
    if (!strstr(detail, parser_says))
        fail_msg("parser detail '%s' does not say '%s'", detail, parser_says);
    char why[256];
    bd_chain_reason c = check_record(text, 2, why);
    if (c != BD_CHAIN_SCHEMA_INVALID)
        fail_msg("checker gave %s past a rule (%.120s)", bd_chain_reason_str(c), text);
    assert_string_equal(why, checker_says);
    c = check_record(text, 1, why);
    if (v1_ok && c != BD_CHAIN_OK)
        fail_msg("a version-1 record past a cap is refused: %s", why);
    if (!v1_ok) {
        assert_int_equal(c, BD_CHAIN_SCHEMA_INVALID);
        assert_string_equal(why, checker_says);
    }
    free(text);
}

static char *num(double v)
{
    buf b = {0};
    put(&b, "%.17g", v);
    return b.p;
}

static void unit_interval(void **state)
{
    (void)state;
    char *past_hi = num(nextafter(1.0, 2.0)), *past_lo = num(nextafter(0.0, -1.0));
    both_accept(&(doc){.score = "1"});
    both_accept(&(doc){.score = "0"});
    both_refuse(&(doc){.score = past_hi}, "outside [0,1]", "score.score: not a number in [0,1]",
                false);
    both_refuse(&(doc){.score = past_lo}, "outside [0,1]", "score.score: not a number in [0,1]",
                false);
    both_accept(&(doc){.breakdown = "{\"a\":1,\"b\":0}"});
    buf b = {0};
    put(&b, "{\"a\":%s}", past_hi);
    both_refuse(&(doc){.breakdown = b.p}, "outside [0,1]",
                "score.breakdown.a: not a number in [0,1]", false);
    free(b.p);
    free(past_hi);
    free(past_lo);
}

static void cost_cap(void **state)
{
    (void)state;
    assert_true(bd_score_rules[BD_SR_COST].max == 1e9);
    char *past = num(nextafter(1e9, 2e9)), *neg = num(nextafter(0.0, -1.0));
    both_accept(&(doc){.cost = "1000000000"});
    both_accept(&(doc){.cost = "0"});
    buf why = {0};
    put(&why, "score.cost_usd: %s is over 1e+09", past);
    both_refuse(&(doc){.cost = past}, "is over 1e+09", why.p, true);
    both_refuse(&(doc){.cost = neg}, "is negative", "score.cost_usd: not a finite number >= 0",
                false);
    free(why.p);
    free(past);
    free(neg);
}

static void wall_clock(void **state)
{
    (void)state;
    const char *why = "score.wall_clock_ms: not an integer >= 0";
    both_accept(&(doc){.wall = "9007199254740991"});
    both_refuse(&(doc){.wall = "9007199254740992"}, "not a non-negative integer", why, false);
    both_refuse(&(doc){.wall = "1.5"}, "not a non-negative integer", why, false);
    both_refuse(&(doc){.wall = "-1"}, "not a non-negative integer", why, false);
}

static char *breakdown_of(size_t n)
{
    buf b = {0};
    put(&b, "{");
    for (size_t i = 0; i < n; i++)
        put(&b, "%s\"k%03zu\":0.5", i ? "," : "", i);
    put(&b, "}");
    return b.p;
}

static char *failure_modes_of(size_t n, const char *code, const char *detail)
{
    buf b = {0};
    put(&b, "[");
    for (size_t i = 0; i < n; i++)
        put(&b, "%s{\"code\":\"%s\",\"severity\":\"warn\"%s%s%s}", i ? "," : "", code,
            detail ? ",\"detail\":\"" : "", detail ? detail : "", detail ? "\"" : "");
    put(&b, "]");
    return b.p;
}

static void entry_caps(void **state)
{
    (void)state;
    assert_true(bd_score_rules[BD_SR_BREAKDOWN_COUNT].max == 64);
    assert_true(bd_score_rules[BD_SR_FM_COUNT].max == 64);
    char *ok = breakdown_of(64), *past = breakdown_of(65);
    both_accept(&(doc){.breakdown = ok});
    both_refuse(&(doc){.breakdown = past}, "breakdown has 65 keys, more than 64",
                "score.breakdown: 65 keys, more than 64", true);
    free(ok);
    free(past);
    ok = failure_modes_of(64, "x.y", NULL);
    past = failure_modes_of(65, "x.y", NULL);
    both_accept(&(doc){.failure_modes = ok});
    both_refuse(&(doc){.failure_modes = past}, "failure_modes has 65 entries, more than 64",
                "score.failure_modes: 65 entries, more than 64", true);
    free(ok);
    free(past);
}

static void lengths(void **state)
{
    (void)state;
    /* a detail: 1 KiB, a cap */
    char *d_ok = repeat('d', 1024), *d_past = repeat('d', 1025);
    char *ok = failure_modes_of(1, "x.y", d_ok), *past = failure_modes_of(1, "x.y", d_past);
    both_accept(&(doc){.failure_modes = ok});
    both_refuse(&(doc){.failure_modes = past}, "detail is over 1024 bytes",
                "score.failure_modes[0].detail: longer than 1024 bytes", true);
    free(ok);
    free(past);
    free(d_ok);
    free(d_past);

    /* a failure-mode code: 1..256 bytes, as old as the format */
    const char *code_why = "score.failure_modes[0].code: not a non-empty string of at most 256 "
                           "bytes";
    char *c_ok = repeat('c', 256), *c_past = repeat('c', 257);
    ok = failure_modes_of(1, c_ok, NULL);
    past = failure_modes_of(1, c_past, NULL);
    both_accept(&(doc){.failure_modes = ok});
    both_refuse(&(doc){.failure_modes = past}, "code is over 256 bytes", code_why, false);
    free(past);
    past = failure_modes_of(1, "", NULL);
    both_refuse(&(doc){.failure_modes = past}, "code is not a non-empty string", code_why, false);
    free(ok);
    free(past);
    free(c_ok);
    free(c_past);

    /* a breakdown key: 1..256 bytes */
    const char *key_why = "score.breakdown: a key is empty or longer than 256 bytes";
    char *k_ok = repeat('k', 256), *k_past = repeat('k', 257);
    buf b1 = {0}, b2 = {0};
    put(&b1, "{\"%s\":0.5}", k_ok);
    put(&b2, "{\"%s\":0.5}", k_past);
    both_accept(&(doc){.breakdown = b1.p});
    both_refuse(&(doc){.breakdown = b2.p}, "is not 1 to 256 bytes long", key_why, false);
    both_refuse(&(doc){.breakdown = "{\"\":0.5}"}, "is not 1 to 256 bytes long", key_why, false);
    free(b1.p);
    free(b2.p);
    free(k_ok);
    free(k_past);
}

static void members_and_words(void **state)
{
    (void)state;
    /* a banned word in a breakdown key, the one place a record holds a rubric's name */
    both_refuse(&(doc){.breakdown = "{\"my_LLM_grade\":0.5}"}, "contains 'llm'",
                "score.breakdown: a key contains \"llm\"", false);
    both_refuse(&(doc){.breakdown = "{\"confidence\":0.5}"}, "contains 'confidence'",
                "score.breakdown: a key contains \"confidence\"", false);
    /* an extra failure-mode member; a severity outside the set */
    both_refuse(&(doc){.failure_modes = "[{\"code\":\"x\",\"hint\":\"h\",\"severity\":\"warn\"}]"},
                "unexpected key 'hint'",
                "score.failure_modes[0]: unexpected or duplicate member \"hint\"", false);
    both_refuse(&(doc){.failure_modes = "[{\"code\":\"x\",\"severity\":\"fatal\"}]"},
                "severity is not block|warn|info",
                "score.failure_modes[0].severity: not block, warn or info", false);
    /* every member is in the table, once */
    for (int m = 0; m < BD_SM__COUNT; m++)
        assert_int_equal(bd_score_member_lookup(bd_score_member_name((bd_score_member)m)), m);
    assert_int_equal(bd_score_member_lookup("notes"), -1);
    for (int m = 1; m < BD_SM__COUNT; m++) /* canonical order: a record's order */
        assert_true(strcmp(bd_score_member_name((bd_score_member)(m - 1)),
                           bd_score_member_name((bd_score_member)m)) < 0);
    /* an extra and a missing member */
    char *text = render(&(doc){0});
    char *extra = malloc(strlen(text) + 32);
    assert_non_null(extra);
    snprintf(extra, strlen(text) + 32, "{\"notes\":\"n\",%s", text + 1);
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX], why[256];
    assert_int_equal(bd_score_parse(&s, extra, strlen(extra), NULL, detail), BD_HM_MALFORMED);
    assert_string_equal(detail, "unexpected key 'notes' at $");
    assert_int_equal(check_record(extra, 2, why), BD_CHAIN_SCHEMA_INVALID);
    assert_string_equal(why, "score: unexpected member \"notes\"");
    free(extra);
    char *cut = strstr(text, ",\"wall_clock_ms\"");
    assert_non_null(cut);
    strcpy(cut, "}");
    assert_int_equal(bd_score_parse(&s, text, strlen(text), NULL, detail), BD_HM_MALFORMED);
    assert_string_equal(detail, "missing key 'wall_clock_ms'");
    assert_int_equal(check_record(text, 2, why), BD_CHAIN_SCHEMA_INVALID);
    assert_string_equal(why, "score: member \"wall_clock_ms\" is missing");
    free(text);
}

/* The scores the harness records itself verify, with the longest detail it writes. */
/* A checks list of `n` entries named c0, c1, ...; entry `odd` (when < n) gets `extra`
 * spliced in after its name. */
static char *checks_list(size_t n, const char *value)
{
    buf b = {0};
    put(&b, "[");
    for (size_t i = 0; i < n; i++)
        put(&b, "%s{\"actual\":%s,\"expected\":%s,\"name\":\"c%zu\",\"passed\":true}", i ? "," : "",
            value, value, i);
    put(&b, "]");
    return b.p;
}

static void checks_rules(void **state)
{
    (void)state;
    /* boundaries: 64 entries; a value of exactly 4 KiB in canonical JSON; a name of 128 */
    char *many = checks_list(BD_SCORE_MAX_CHECKS, "1");
    char *too_many = checks_list(BD_SCORE_MAX_CHECKS + 1, "1");
    both_accept(&(doc){.checks = many});
    both_refuse(&(doc){.checks = too_many}, "$.checks has 65 entries, more than 64",
                "score.checks has 65 entries, more than 64", false);
    char *a4094 = repeat('a', BD_SCORE_MAX_CHECK_VALUE - 2), *a4095 = repeat('a', 4095);
    buf v_ok = {0}, v_past = {0};
    put(&v_ok, "\"%s\"", a4094);
    put(&v_past, "\"%s\"", a4095);
    char *c_ok = checks_list(1, v_ok.p), *c_past = checks_list(1, v_past.p);
    both_accept(&(doc){.checks = c_ok});
    both_refuse(&(doc){.checks = c_past},
                "$.checks[0].expected is 4097 bytes in canonical JSON, more than 4096",
                "score.checks[0].expected is 4097 bytes in canonical JSON, more than 4096", false);
    char *n128 = repeat('n', BD_SCORE_MAX_CHECK_NAME), *n129 = repeat('n', 129);
    buf nm_ok = {0}, nm_past = {0};
    put(&nm_ok, "[{\"actual\":1,\"expected\":2,\"name\":\"%s\",\"passed\":false}]", n128);
    put(&nm_past, "[{\"actual\":1,\"expected\":2,\"name\":\"%s\",\"passed\":false}]", n129);
    both_accept(&(doc){.checks = nm_ok.p});
    const char *name_rule = "[0].name is not 1 to 128 characters of [a-z0-9_]";
    both_refuse(&(doc){.checks = nm_past.p}, name_rule,
                "score.checks[0].name is not 1 to 128 characters of [a-z0-9_]", false);
    /* names: characters, emptiness, banned words, repeats */
    const char *bad_names[] = {"\"Cve\"", "\"\"", "\"a-b\"", "\"a\\u001b[2J\"", "7"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        buf b = {0};
        put(&b, "[{\"actual\":1,\"expected\":1,\"name\":%s,\"passed\":true}]", bad_names[i]);
        both_refuse(&(doc){.checks = b.p}, name_rule,
                    "score.checks[0].name is not 1 to 128 characters of [a-z0-9_]", false);
        free(b.p);
    }
    both_refuse(&(doc){.checks = "[{\"actual\":1,\"expected\":1,\"name\":\"llm_grade\","
                                 "\"passed\":true}]"},
                "$.checks[0].name contains 'llm'", "score.checks[0].name contains 'llm'", false);
    both_refuse(&(doc){.checks = "[{\"actual\":1,\"expected\":1,\"name\":\"x\",\"passed\":true},"
                                 "{\"actual\":1,\"expected\":1,\"name\":\"x\",\"passed\":true}]"},
                "$.checks[1].name 'x' repeats $.checks[0].name",
                "score.checks[1].name 'x' repeats score.checks[0].name", false);
    /* members and types */
    both_refuse(&(doc){.checks = "{}"}, "$.checks is not an array", "score.checks is not an array",
                false);
    both_refuse(&(doc){.checks = "[1]"}, "$.checks[0] is not an object",
                "score.checks[0] is not an object", false);
    both_refuse(&(doc){.checks = "[{\"actual\":1,\"expected\":1,\"name\":\"x\"}]"},
                "$.checks[0] has no member 'passed'", "score.checks[0] has no member 'passed'",
                false);
    both_refuse(&(doc){.checks = "[{\"actual\":1,\"expected\":1,\"name\":\"x\",\"passed\":1}]"},
                "$.checks[0].passed is not a boolean", "score.checks[0].passed is not a boolean",
                false);
    both_refuse(&(doc){.checks = "[{\"actual\":1,\"expected\":1,\"name\":\"x\",\"note\":\"n\","
                                 "\"passed\":true}]"},
                "$.checks[0] has an unexpected or duplicate member",
                "score.checks[0] has an unexpected or duplicate member", false);
    /* the banned words bind the members, not the rubric's data inside expected/actual */
    both_accept(&(doc){.checks =
                           "[{\"actual\":{\"llm_confidence\":[{\"model_says\":1}]},"
                           "\"expected\":{\"confidence\":null},\"name\":\"x\",\"passed\":false}]"});
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    const char *smuggled = "{\"breakdown\":{},\"checks\":[{\"actual\":1,\"confidence\":1,"
                           "\"expected\":1,\"name\":\"x\",\"passed\":true}],\"cost_usd\":0,"
                           "\"failure_modes\":[],\"passed\":true,\"score\":1,\"wall_clock_ms\":0}";
    assert_int_equal(bd_score_parse(&s, smuggled, strlen(smuggled), NULL, detail), BD_HM_MALFORMED);
    assert_non_null(strstr(detail, "banned key 'confidence'"));
    const char *in_bd = "{\"breakdown\":{\"checks\":{\"expected\":{\"llm\":1}}},\"cost_usd\":0,"
                        "\"failure_modes\":[],\"passed\":true,\"score\":1,\"wall_clock_ms\":0}";
    assert_int_equal(bd_score_parse(&s, in_bd, strlen(in_bd), NULL, detail), BD_HM_MALFORMED);
    assert_non_null(strstr(detail, "banned key 'llm'"));
    /* hostile bytes in the data are kept (escaped in the record) and round-trip exactly */
    const char *hostile = "[{\"actual\":\"\\u001b]0;pwn\\u0007\\u202e\\nline2\",\"expected\":"
                          "[1,2.5,null,true],\"name\":\"diff\",\"passed\":false}]";
    both_accept(&(doc){.checks = hostile});
    char *text = render(&(doc){.checks = hostile});
    assert_int_equal(bd_score_parse(&s, text, strlen(text), NULL, detail), BD_HM_NONE);
    assert_int_equal(s.n_checks, 1);
    assert_string_equal(s.checks[0].name, "diff");
    assert_string_equal(s.checks[0].actual, "\"\\u001b]0;pwn\\u0007\u202e\\nline2\"");
    assert_string_equal(s.checks[0].expected, "[1,2.5,null,true]");
    assert_false(s.checks[0].passed);
    assert_ptr_equal(bd_score_checks_first_failed(s.checks, s.n_checks), &s.checks[0]);
    bd_score copy;
    assert_int_equal(bd_score_copy(&copy, &s), 0);
    assert_string_equal(copy.checks[0].actual, s.checks[0].actual);
    bd_score_free(&copy);
    bd_score_free(&s);
    free(text);
    /* a version-1 record never held checks; no checks (or an empty list) stays as it was */
    char why[256];
    assert_int_equal(
        check_record("{\"breakdown\":{},\"checks\":[],\"cost_usd\":0,\"failure_modes\":"
                     "[],\"passed\":true,\"score\":1,\"wall_clock_ms\":0}",
                     1, why),
        BD_CHAIN_SCHEMA_INVALID);
    assert_string_equal(why, "score.checks in a version-1 record");
    both_accept(&(doc){.checks = "[]"});
    text = render(&(doc){.checks = "[]"});
    assert_int_equal(bd_score_parse(&s, text, strlen(text), NULL, detail), BD_HM_NONE);
    cJSON *j = bd_score_to_json(&s);
    assert_null(cJSON_GetObjectItemCaseSensitive(j, "checks"));
    cJSON_Delete(j);
    bd_score_free(&s);
    free(text);
    free(many);
    free(too_many);
    free(a4094);
    free(a4095);
    free(v_ok.p);
    free(v_past.p);
    free(c_ok);
    free(c_past);
    free(n128);
    free(n129);
    free(nm_ok.p);
    free(nm_past.p);
}

static void harness_failures_verify(void **state)
{
    (void)state;
    char *long_detail = repeat('\x01', BD_SCORE_DETAIL_MAX - 1);
    for (int m = BD_HM_NONE + 1; m < BD_HM__COUNT; m++) {
        for (int with = 0; with < 2; with++) {
            bd_score s;
            assert_int_equal(
                bd_score_harness_failure(&s, (bd_harness_mode)m, with ? long_detail : NULL, 1234),
                0);
            cJSON *j = bd_score_to_json(&s);
            assert_non_null(j);
            for (int version = 1; version <= 2; version++) {
                size_t len;
                char *rec = record_with(cJSON_Duplicate(j, true), version, &len);
                bd_history_record r;
                char why[256];
                if (bd_history_record_parse(&r, rec, len, why) != BD_CHAIN_OK)
                    fail_msg("harness failure %s refused: %s",
                             bd_harness_mode_str((bd_harness_mode)m), why);
                bd_history_record_release(&r);
                free(rec);
            }
            cJSON_Delete(j);
            bd_score_free(&s);
        }
    }
    free(long_detail);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unit_interval),
        cmocka_unit_test(cost_cap),
        cmocka_unit_test(wall_clock),
        cmocka_unit_test(entry_caps),
        cmocka_unit_test(lengths),
        cmocka_unit_test(members_and_words),
        cmocka_unit_test(harness_failures_verify),
        cmocka_unit_test(checks_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
