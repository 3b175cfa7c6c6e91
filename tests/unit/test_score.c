/*
 * test_score.c — BenchScore validation (src/bench/score.h, docs/formats.md#benchscore): the corpus
 * in tests/corpus/benchscore/ (each file with its expected harness mode and detail), the precedence
 * of the modes, what a detail may and may not contain, and the scores the harness builds itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_locale.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "canon.h"
#include "text.h"
#include "score.h"

/* ---- a registration built by hand (no dependency on the YAML loaders) -------------- */

static char *bkeys[] = {"recipe_match", "cve_delta", "validator"};
static bd_failure_mode_def taxonomy[] = {
    {"recipe.wrong", BD_SEV_BLOCK, "Picked the wrong recipe"},
    {"cve.not_removed", BD_SEV_BLOCK, "The CVE is still reachable"},
    {"style.nit", BD_SEV_WARN, "Cosmetic"},
    {"note.info", BD_SEV_INFO, "For the record"},
};

static bd_registration make_reg(void)
{
    bd_registration r;
    memset(&r, 0, sizeof(r));
    r.schema_version = 1;
    r.name = "vuln-remediation";
    r.breakdown_keys = bkeys;
    r.n_breakdown_keys = sizeof(bkeys) / sizeof(bkeys[0]);
    r.failure_modes = taxonomy;
    r.n_failure_modes = sizeof(taxonomy) / sizeof(taxonomy[0]);
    r.rubric_wall_clock_s = 60;
    r.rubric_memory_mb = 1024;
    return r;
}

/* ---- helpers ------------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 65536) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

static const char *corpus_dir(void)
{
    static char dir[1024];
    const char *src = getenv("BD_SOURCE_DIR");
    if (!src)
        fail_msg("BD_SOURCE_DIR is not set (run through ctest)");
    snprintf(dir, sizeof(dir), "%s/tests/corpus/benchscore", src);
    return dir;
}

/* A detail is one line of printable text, shorter than the buffer. */
static void assert_detail_clean(const char *detail)
{
    size_t n = strnlen(detail, BD_SCORE_DETAIL_MAX);
    assert_true(n < BD_SCORE_DETAIL_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)detail[i];
        if (c < 0x20 || c == 0x7F)
            fail_msg("control byte 0x%02x in detail '%s'", c, detail);
    }
}

/* Valid score: it must serialize canonically, and re-parsing those bytes must give a
 * valid score with the same canonical bytes. */
static void assert_round_trip(const bd_score *s, const bd_registration *reg)
{
    cJSON *j = bd_score_to_json(s);
    assert_non_null(j);
    size_t len;
    char *canon = bd_canon_json(j, &len);
    cJSON_Delete(j);
    assert_non_null(canon);
    bd_score again;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(bd_score_parse(&again, canon, len, reg, detail), BD_HM_NONE);
    cJSON *j2 = bd_score_to_json(&again);
    assert_non_null(j2);
    char *canon2 = bd_canon_json(j2, NULL);
    cJSON_Delete(j2);
    assert_non_null(canon2);
    assert_string_equal(canon, canon2);
    free(canon);
    free(canon2);
    bd_score_free(&again);
}

static bd_harness_mode parse_str(bd_score *s, const char *json, const bd_registration *reg,
                                 char *detail)
{
    return bd_score_parse(s, json, strlen(json), reg, detail);
}

/* ---- the corpus ------------------------------------------------------------------------- */

static void test_corpus(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    char path[2048];
    snprintf(path, sizeof(path), "%s/MANIFEST", corpus_dir());
    FILE *m = fopen(path, "r");
    if (!m)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    char line[1024];
    int count = 0, valid = 0;
    while (fgets(line, sizeof(line), m)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *name = line;
        char *mode = strchr(name, ' ');
        assert_non_null(mode);
        *mode++ = '\0';
        char *want_detail = strchr(mode, ' ');
        if (want_detail)
            *want_detail++ = '\0';
        snprintf(path, sizeof(path), "%s/%s", corpus_dir(), name);
        size_t len;
        char *buf = read_file(path, &len);
        bd_score s;
        memset(&s, 0xA5, sizeof(s)); /* must come back zeroed on failure */
        char detail[BD_SCORE_DETAIL_MAX];
        memset(detail, 'Z', sizeof(detail));
        bd_harness_mode got = bd_score_parse(&s, buf, len, &reg, detail);
        const char *got_str = got == BD_HM_NONE ? "ok" : bd_harness_mode_str(got);
        if (strcmp(got_str, mode) != 0)
            fail_msg("%s: expected %s, got %s (%s)", name, mode, got_str, detail);
        assert_detail_clean(detail);
        if (want_detail && !strstr(detail, want_detail))
            fail_msg("%s: detail '%s' lacks '%s'", name, detail, want_detail);
        if (got == BD_HM_NONE) {
            assert_string_equal(detail, "");
            assert_round_trip(&s, &reg);
            bd_score_free(&s);
            valid++;
        } else {
            assert_true(detail[0] != '\0');
            bd_score zero;
            memset(&zero, 0, sizeof(zero));
            assert_memory_equal(&s, &zero, sizeof(s));
        }
        free(buf);
        count++;
    }
    fclose(m);
    /* the corpus is the proof: it must not silently shrink */
    assert_true(count >= 30);
    assert_true(valid >= 5);
    printf("corpus: %d files, %d valid\n", count, valid);
}

/* ---- values ------------------------------------------------------------------------------ */

static void test_valid_full_values(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    char path[2048];
    snprintf(path, sizeof(path), "%s/valid_full.json", corpus_dir());
    size_t len;
    char *buf = read_file(path, &len);
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(bd_score_parse(&s, buf, len, &reg, detail), BD_HM_NONE);
    free(buf);
    assert_true(s.passed);
    assert_true(s.score == 0.75);
    assert_int_equal(s.n_breakdown, 3);
    /* sorted by key */
    assert_string_equal(s.breakdown[0].key, "cve_delta");
    assert_true(s.breakdown[0].value == 0.5);
    assert_string_equal(s.breakdown[1].key, "recipe_match");
    assert_true(s.breakdown[1].value == 1.0);
    assert_string_equal(s.breakdown[2].key, "validator");
    assert_true(s.breakdown[2].value == 0.0);
    assert_int_equal(s.n_failure_modes, 2);
    assert_string_equal(s.failure_modes[0].code, "style.nit");
    assert_int_equal(s.failure_modes[0].severity, BD_SEV_WARN);
    assert_string_equal(s.failure_modes[0].detail, "indentation");
    assert_string_equal(s.failure_modes[1].code, "note.info");
    assert_int_equal(s.failure_modes[1].severity, BD_SEV_INFO);
    assert_null(s.failure_modes[1].detail);
    assert_true(s.cost_usd == 0.0125);
    assert_int_equal(s.wall_clock_ms, 1234);

    cJSON *j = bd_score_to_json(&s);
    assert_non_null(j);
    char *canon = bd_canon_json(j, NULL);
    assert_non_null(canon);
    assert_string_equal(canon, "{\"breakdown\":{\"cve_delta\":0.5,\"recipe_match\":1,"
                               "\"validator\":0},\"cost_usd\":0.0125,\"failure_modes\":[{"
                               "\"code\":\"style.nit\",\"detail\":\"indentation\",\"severity\":"
                               "\"warn\"},{\"code\":\"note.info\",\"severity\":\"info\"}],"
                               "\"passed\":true,\"score\":0.75,\"wall_clock_ms\":1234}");
    free(canon);
    cJSON_Delete(j);
    bd_score_free(&s);
    /* freeing twice is harmless: bd_score_free zeroes */
    bd_score_free(&s);
    bd_score_free(NULL);
}

static void test_escapes_decoded(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    char path[2048];
    snprintf(path, sizeof(path), "%s/valid_escapes.json", corpus_dir());
    size_t len;
    char *buf = read_file(path, &len);
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(bd_score_parse(&s, buf, len, &reg, detail), BD_HM_NONE);
    free(buf);
    assert_true(s.score == 0.1);
    assert_true(s.cost_usd == 0.0025);
    assert_int_equal(s.wall_clock_ms, 1000);
    assert_string_equal(s.failure_modes[0].detail,
                        "caf\xc3\xa9 \xf0\x9f\x98\x80 a/b \"q\" \n \xc3\xa9");
    bd_score_free(&s);
}

static void test_bare_string_severity(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    const char *doc = "{\"passed\":false,\"score\":0,\"breakdown\":{},\"failure_modes\":"
                      "[\"style.nit\",\"note.info\",\"recipe.wrong\"],\"cost_usd\":0,"
                      "\"wall_clock_ms\":0}";
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(parse_str(&s, doc, &reg, detail), BD_HM_NONE);
    assert_int_equal(s.n_failure_modes, 3);
    assert_int_equal(s.failure_modes[0].severity, BD_SEV_WARN);
    assert_int_equal(s.failure_modes[1].severity, BD_SEV_INFO);
    assert_int_equal(s.failure_modes[2].severity, BD_SEV_BLOCK);
    assert_null(s.failure_modes[0].detail);
    bd_score_free(&s);
}

/* Without a registration only the structural rules apply; unknown bare codes are block. */
static void test_no_registration(void **state)
{
    (void)state;
    const char *doc = "{\"passed\":true,\"score\":1,\"breakdown\":{\"vibes\":0.5},"
                      "\"failure_modes\":[\"made.up\",{\"code\":\"x\",\"severity\":\"info\"}],"
                      "\"cost_usd\":0,\"wall_clock_ms\":0}";
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(parse_str(&s, doc, NULL, detail), BD_HM_NONE);
    assert_int_equal(s.failure_modes[0].severity, BD_SEV_BLOCK);
    assert_int_equal(s.failure_modes[1].severity, BD_SEV_INFO);
    bd_score_free(&s);
    /* structural rules still apply */
    const char *bad = "{\"passed\":true,\"score\":1,\"breakdown\":{\"vibes\":0.5},"
                      "\"failure_modes\":[],\"cost_usd\":0,\"wall_clock_ms\":0,\"llm\":1}";
    assert_int_equal(parse_str(&s, bad, NULL, detail), BD_HM_MALFORMED);
    /* NULL detail is allowed */
    assert_int_equal(parse_str(&s, bad, NULL, NULL), BD_HM_MALFORMED);
    assert_int_equal(bd_score_parse(&s, NULL, 0, NULL, detail), BD_HM_MALFORMED);
    assert_string_equal(detail, "empty output");
}

/* malformed_output > unknown_breakdown_key > unknown_failure_mode, whatever the order of
 * the keys in the document. */
static void test_precedence(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    /* failure modes before breakdown in the document: breakdown still wins */
    const char *both = "{\"failure_modes\":[\"made.up\"],\"breakdown\":{\"vibes\":0.5},"
                       "\"passed\":false,\"score\":0,\"cost_usd\":0,\"wall_clock_ms\":0}";
    assert_int_equal(parse_str(&s, both, &reg, detail), BD_HM_UNKNOWN_BREAKDOWN_KEY);
    assert_string_equal(detail, "breakdown key 'vibes' is not in the registration's "
                                "breakdown_keys");
    /* a malformed field after the unknown ones: malformed wins */
    const char *mal = "{\"failure_modes\":[\"made.up\"],\"breakdown\":{\"vibes\":0.5},"
                      "\"passed\":false,\"score\":0,\"cost_usd\":-1,\"wall_clock_ms\":0}";
    assert_int_equal(parse_str(&s, mal, &reg, detail), BD_HM_MALFORMED);
    assert_string_equal(detail, "cost_usd -1 is negative");
    /* a missing key with unknown ones: malformed */
    const char *missing = "{\"failure_modes\":[\"made.up\"],\"breakdown\":{\"vibes\":0.5},"
                          "\"passed\":false,\"score\":0,\"cost_usd\":0}";
    assert_int_equal(parse_str(&s, missing, &reg, detail), BD_HM_MALFORMED);
    assert_string_equal(detail, "missing key 'wall_clock_ms'");
    /* only the failure mode unknown */
    const char *fm = "{\"failure_modes\":[\"style.nit\",{\"code\":\"made.up\",\"severity\":"
                     "\"block\"}],\"breakdown\":{\"validator\":0.5},\"passed\":false,"
                     "\"score\":0,\"cost_usd\":0,\"wall_clock_ms\":0}";
    assert_int_equal(parse_str(&s, fm, &reg, detail), BD_HM_UNKNOWN_FAILURE_MODE);
    assert_string_equal(detail, "failure-mode code 'made.up' is not in the registration's "
                                "taxonomy");
    /* keys match exactly: case matters */
    const char *upper = "{\"passed\":false,\"score\":0,\"breakdown\":{\"Validator\":0.5},"
                        "\"failure_modes\":[],\"cost_usd\":0,\"wall_clock_ms\":0}";
    assert_int_equal(parse_str(&s, upper, &reg, detail), BD_HM_UNKNOWN_BREAKDOWN_KEY);
    const char *upper_top = "{\"Passed\":false,\"score\":0,\"breakdown\":{},"
                            "\"failure_modes\":[],\"cost_usd\":0,\"wall_clock_ms\":0}";
    assert_int_equal(parse_str(&s, upper_top, &reg, detail), BD_HM_MALFORMED);
    assert_string_equal(detail, "unexpected key 'Passed' at $");
}

/* ---- details ------------------------------------------------------------------------------ */

static size_t longest_run(const char *s, char c)
{
    size_t best = 0, cur = 0;
    for (; *s; s++) {
        cur = *s == c ? cur + 1 : 0;
        if (cur > best)
            best = cur;
    }
    return best;
}

static size_t count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

static char *doc_with_breakdown_key(const char *key)
{
    const char *fmt = "{\"passed\":false,\"score\":0,\"breakdown\":{\"%s\":0.5},"
                      "\"failure_modes\":[],\"cost_usd\":0,\"wall_clock_ms\":0}";
    size_t n = strlen(fmt) + strlen(key) + 1;
    char *doc = malloc(n);
    assert_non_null(doc);
    snprintf(doc, n, fmt, key);
    return doc;
}

static void test_detail_never_echoes_much(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    const size_t big = 1u << 20;
    char *key = malloc(big + 1);
    assert_non_null(key);

    /* a 1 MiB banned key */
    memcpy(key, "confidence", 10);
    memset(key + 10, 'X', big - 10);
    key[big] = '\0';
    char *doc = doc_with_breakdown_key(key);
    assert_int_equal(parse_str(&s, doc, &reg, detail), BD_HM_MALFORMED);
    assert_detail_clean(detail);
    assert_non_null(strstr(detail, "banned key 'confidence"));
    assert_true(count_char(detail, 'X') <= 64 - 10);
    free(doc);

    /* a 1 MiB breakdown key: past the key length rule (score_rules.h), so malformed */
    memset(key, 'Y', big);
    doc = doc_with_breakdown_key(key);
    assert_int_equal(parse_str(&s, doc, &reg, detail), BD_HM_MALFORMED);
    assert_non_null(strstr(detail, "is not 1 to 256 bytes long"));
    assert_detail_clean(detail);
    assert_true(longest_run(detail, 'Y') <= 64);
    assert_true(count_char(detail, 'Y') <= 64);
    free(doc);

    /* a duplicate 1 MiB key, inside a nested path of long keys */
    memset(key, 'Q', big);
    const char *fmt = "{\"%s\":{\"%s\":1,\"%s\":2}}";
    size_t n = 3 * big + 64;
    doc = malloc(n);
    assert_non_null(doc);
    snprintf(doc, n, fmt, key, key, key);
    assert_int_equal(parse_str(&s, doc, &reg, detail), BD_HM_MALFORMED);
    assert_detail_clean(detail);
    assert_non_null(strstr(detail, "duplicate key"));
    assert_true(count_char(detail, 'Q') <= 64);
    free(doc);
    free(key);
}

static void test_detail_sanitized(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    /* control characters, a newline and an escape sequence in keys reach no detail */
    const char *docs[] = {
        "{\"passed\":false,\"score\":0,\"breakdown\":{\"a\\nb\\u001b[31m\\u2028\":0.5},"
        "\"failure_modes\":[],\"cost_usd\":0,\"wall_clock_ms\":0}",
        "{\"passed\":false,\"score\":0,\"breakdown\":{},\"failure_modes\":[],\"cost_usd\":0,"
        "\"wall_clock_ms\":0,\"x\\r\\n\\u007f\\t\":1}",
        "{\"LLM\\n\\u001b]0;pwned\\u0007\":1}",
        "{\"a\\n\":{\"b\\t\":1,\"b\\t\":1}}",
        "{\"passed\":false,\"score\":0,\"breakdown\":{},\"failure_modes\":[\"\\u001b[2J\"],"
        "\"cost_usd\":0,\"wall_clock_ms\":0}",
    };
    const bd_harness_mode want[] = {BD_HM_UNKNOWN_BREAKDOWN_KEY, BD_HM_MALFORMED, BD_HM_MALFORMED,
                                    BD_HM_MALFORMED, BD_HM_UNKNOWN_FAILURE_MODE};
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        assert_int_equal(parse_str(&s, docs[i], &reg, detail), want[i]);
        assert_detail_clean(detail);
        assert_null(strchr(detail, '\x1b'));
    }
    /* the raw bytes of the key came back as '?' */
    assert_int_equal(parse_str(&s, docs[0], &reg, detail), BD_HM_UNKNOWN_BREAKDOWN_KEY);
    assert_string_equal(detail, "breakdown key 'a?b?[31m\?\?\?' is not in the registration's "
                                "breakdown_keys");
}

/* A detail of exactly the cap (1 KiB) is fine; one byte more is malformed
 * (docs/formats.md#benchscore). */
static void test_one_mib_string(void **state)
{
    (void)state;
    bd_registration reg = make_reg();
    const size_t big = BD_SCORE_MAX_FM_DETAIL;
    const char *head = "{\"passed\":false,\"score\":0,\"breakdown\":{},\"failure_modes\":[{"
                       "\"code\":\"cve.not_removed\",\"severity\":\"block\",\"detail\":\"";
    const char *tail = "\"}],\"cost_usd\":0,\"wall_clock_ms\":0}";
    size_t n = strlen(head) + big + strlen(tail);
    char *doc = malloc(n + 1);
    assert_non_null(doc);
    memcpy(doc, head, strlen(head));
    memset(doc + strlen(head), 'd', big);
    memcpy(doc + strlen(head) + big, tail, strlen(tail) + 1);
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(bd_score_parse(&s, doc, n, &reg, detail), BD_HM_NONE);
    assert_int_equal(strlen(s.failure_modes[0].detail), big);
    assert_round_trip(&s, &reg);
    bd_score_free(&s);
    /* the same document cut one byte short */
    assert_int_equal(bd_score_parse(&s, doc, n - 1, &reg, detail), BD_HM_MALFORMED);
    free(doc);
    /* one byte over the cap */
    n++;
    doc = malloc(n + 1);
    assert_non_null(doc);
    memcpy(doc, head, strlen(head));
    memset(doc + strlen(head), 'd', big + 1);
    memcpy(doc + strlen(head) + big + 1, tail, strlen(tail) + 1);
    assert_int_equal(bd_score_parse(&s, doc, n, &reg, detail), BD_HM_MALFORMED);
    assert_non_null(strstr(detail, "over 1024 bytes"));
    free(doc);
}

/* The length is the bound: bytes past `len` are never read. */
static void test_length_bounds_input(void **state)
{
    (void)state;
    const char *doc = "{\"passed\":false,\"score\":0,\"breakdown\":{},\"failure_modes\":[],"
                      "\"cost_usd\":0,\"wall_clock_ms\":0}GARBAGE";
    size_t len = strlen(doc) - strlen("GARBAGE");
    char *exact = malloc(len); /* no NUL after it: ASan catches any over-read */
    assert_non_null(exact);
    memcpy(exact, doc, len);
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(bd_score_parse(&s, exact, len, NULL, detail), BD_HM_NONE);
    bd_score_free(&s);
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(bd_score_parse(&s, exact, cut, NULL, detail), BD_HM_MALFORMED);
    free(exact);
    assert_int_equal(bd_score_parse(&s, doc, strlen(doc), NULL, detail), BD_HM_MALFORMED);
}

static void test_locale_independent(void **state)
{
    (void)state;
    if (bd_test_comma_locale("score") != 0) {
        printf("SKIP test_locale_independent: no comma-decimal locale installed and "
               "localedef could not build de_DE.UTF-8\n");
        skip();
    }
    const char *doc = "{\"passed\":false,\"score\":0.75,\"breakdown\":{\"validator\":0.25},"
                      "\"failure_modes\":[],\"cost_usd\":1.5e-3,\"wall_clock_ms\":0}";
    bd_score s;
    char detail[BD_SCORE_DETAIL_MAX];
    assert_int_equal(parse_str(&s, doc, NULL, detail), BD_HM_NONE);
    assert_true(s.score == 0.75);
    assert_true(s.breakdown[0].value == 0.25);
    assert_true(s.cost_usd == 0.0015);
    bd_score_free(&s);
    const char *bad = "{\"passed\":false,\"score\":1.25,\"breakdown\":{},"
                      "\"failure_modes\":[],\"cost_usd\":0,\"wall_clock_ms\":0}";
    assert_int_equal(parse_str(&s, bad, NULL, detail), BD_HM_MALFORMED);
    setlocale(LC_NUMERIC, "C");
    assert_string_equal(detail, "score 1.25 outside [0,1]");
}

/* ---- harness failures, JSON form, mode strings -------------------------------------------- */

static void test_harness_failure(void **state)
{
    (void)state;
    bd_score s;
    assert_int_equal(bd_score_harness_failure(&s, BD_HM_TIMEOUT, "after 60 s", 60000), 0);
    assert_false(s.passed);
    assert_true(s.score == 0);
    assert_int_equal(s.n_breakdown, 0);
    assert_int_equal(s.n_failure_modes, 1);
    assert_string_equal(s.failure_modes[0].code, "rubric.timeout");
    assert_int_equal(s.failure_modes[0].severity, BD_SEV_BLOCK);
    assert_int_equal(s.wall_clock_ms, 60000);
    cJSON *j = bd_score_to_json(&s);
    char *canon = bd_canon_json(j, NULL);
    assert_non_null(canon);
    assert_string_equal(canon, "{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[{\"code\":"
                               "\"rubric.timeout\",\"detail\":\"after 60 s\",\"severity\":"
                               "\"block\"}],\"passed\":false,\"score\":0,"
                               "\"wall_clock_ms\":60000}");
    free(canon);
    cJSON_Delete(j);
    bd_score_free(&s);

    /* no detail: the key is left out */
    assert_int_equal(bd_score_harness_failure(&s, BD_HM_SANDBOX_VIOLATION, NULL, 5), 0);
    assert_null(s.failure_modes[0].detail);
    j = bd_score_to_json(&s);
    canon = bd_canon_json(j, NULL);
    assert_string_equal(canon, "{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[{\"code\":"
                               "\"rubric.sandbox_violation\",\"severity\":\"block\"}],"
                               "\"passed\":false,\"score\":0,\"wall_clock_ms\":5}");
    free(canon);
    cJSON_Delete(j);
    bd_score_free(&s);

    /* stderr bytes: invalid UTF-8 and escape sequences made safe, newline kept */
    assert_int_equal(bd_score_harness_failure(&s, BD_HM_MALFORMED,
                                              "Traceback\n\xff\xfe\x1b[31mboom\xc3\xa9\r", -3),
                     0);
    assert_string_equal(s.failure_modes[0].detail, "Traceback\n\?\?\?[31mboom\xc3\xa9?");
    assert_int_equal(s.wall_clock_ms, 0);
    j = bd_score_to_json(&s);
    canon = bd_canon_json(j, NULL);
    assert_non_null(canon);
    free(canon);
    cJSON_Delete(j);
    bd_score_free(&s);

    /* every harness mode gives its own code */
    for (int m = BD_HM_TIMEOUT; m < BD_HM__COUNT; m++) {
        assert_int_equal(bd_score_harness_failure(&s, (bd_harness_mode)m, "x", 1), 0);
        assert_string_equal(s.failure_modes[0].code, bd_harness_mode_str((bd_harness_mode)m));
        bd_score_free(&s);
    }
    /* not a failure mode */
    assert_int_equal(bd_score_harness_failure(&s, BD_HM_NONE, "x", 1), -1);
    assert_int_equal(s.n_failure_modes, 0);
    assert_int_equal(bd_score_harness_failure(&s, BD_HM__COUNT, "x", 1), -1);
    assert_int_equal(bd_score_harness_failure(NULL, BD_HM_TIMEOUT, "x", 1), -1);
}

static void test_mode_strings(void **state)
{
    (void)state;
    assert_string_equal(bd_harness_mode_str(BD_HM_NONE), "");
    assert_string_equal(bd_harness_mode_str(BD_HM_TIMEOUT), "rubric.timeout");
    assert_string_equal(bd_harness_mode_str(BD_HM_CPU_LIMIT), "rubric.cpu_limit");
    assert_string_equal(bd_harness_mode_str(BD_HM_KILLED_OOM), "rubric.killed_oom");
    assert_string_equal(bd_harness_mode_str(BD_HM_OUTPUT_LIMIT), "rubric.output_limit");
    assert_string_equal(bd_harness_mode_str(BD_HM_SANDBOX_VIOLATION), "rubric.sandbox_violation");
    assert_string_equal(bd_harness_mode_str(BD_HM_CRASHED), "rubric.crashed");
    assert_string_equal(bd_harness_mode_str(BD_HM_MALFORMED), "rubric.malformed_output");
    assert_string_equal(bd_harness_mode_str(BD_HM_UNKNOWN_BREAKDOWN_KEY),
                        "rubric.unknown_breakdown_key");
    assert_string_equal(bd_harness_mode_str(BD_HM_UNKNOWN_FAILURE_MODE),
                        "rubric.unknown_failure_mode");
    assert_string_equal(bd_harness_mode_str(BD_HM_SUT_TIMEOUT), "sut.timeout");
    assert_string_equal(bd_harness_mode_str(BD_HM_SUT_EXCEPTION), "sut.exception");
    assert_string_equal(bd_harness_mode_str(BD_HM_SUT_MALFORMED), "sut.malformed_output");
    assert_string_equal(bd_harness_mode_str(BD_HM__COUNT), "");
    assert_string_equal(bd_harness_mode_str((bd_harness_mode)-1), "");
    /* precedence is the enum order (docs/formats.md#benchscore) */
    assert_true(BD_HM_TIMEOUT < BD_HM_CPU_LIMIT && BD_HM_CPU_LIMIT < BD_HM_KILLED_OOM &&
                BD_HM_KILLED_OOM < BD_HM_OUTPUT_LIMIT &&
                BD_HM_OUTPUT_LIMIT < BD_HM_SANDBOX_VIOLATION &&
                BD_HM_SANDBOX_VIOLATION < BD_HM_CRASHED && BD_HM_CRASHED < BD_HM_MALFORMED &&
                BD_HM_MALFORMED < BD_HM_UNKNOWN_BREAKDOWN_KEY &&
                BD_HM_UNKNOWN_BREAKDOWN_KEY < BD_HM_UNKNOWN_FAILURE_MODE);
}

static void test_utf8_valid(void **state)
{
    (void)state;
    assert_true(bd_utf8_valid("", 0));
    assert_true(bd_utf8_valid(NULL, 0));
    assert_false(bd_utf8_valid(NULL, 1));
    assert_true(bd_utf8_valid("plain ascii", 11));
    assert_true(bd_utf8_valid("\xc2\x80", 2));          /* U+0080 */
    assert_true(bd_utf8_valid("\xdf\xbf", 2));          /* U+07FF */
    assert_true(bd_utf8_valid("\xe0\xa0\x80", 3));      /* U+0800 */
    assert_true(bd_utf8_valid("\xed\x9f\xbf", 3));      /* U+D7FF */
    assert_true(bd_utf8_valid("\xee\x80\x80", 3));      /* U+E000 */
    assert_true(bd_utf8_valid("\xef\xbf\xbf", 3));      /* U+FFFF */
    assert_true(bd_utf8_valid("\xf0\x90\x80\x80", 4));  /* U+10000 */
    assert_true(bd_utf8_valid("\xf4\x8f\xbf\xbf", 4));  /* U+10FFFF */
    assert_false(bd_utf8_valid("a\0b", 3));             /* NUL */
    assert_false(bd_utf8_valid("\x80", 1));             /* lone continuation */
    assert_false(bd_utf8_valid("\xc0\x80", 2));         /* overlong NUL */
    assert_false(bd_utf8_valid("\xc1\xbf", 2));         /* overlong */
    assert_false(bd_utf8_valid("\xe0\x9f\xbf", 3));     /* overlong */
    assert_false(bd_utf8_valid("\xf0\x8f\xbf\xbf", 4)); /* overlong */
    assert_false(bd_utf8_valid("\xed\xa0\x80", 3));     /* U+D800 */
    assert_false(bd_utf8_valid("\xed\xbf\xbf", 3));     /* U+DFFF */
    assert_false(bd_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
    assert_false(bd_utf8_valid("\xf5\x80\x80\x80", 4));
    assert_false(bd_utf8_valid("\xff", 1));
    assert_false(bd_utf8_valid("\xe2\x82", 2));     /* truncated */
    assert_false(bd_utf8_valid("\xe2\x82\x41", 3)); /* bad continuation */
    assert_false(bd_utf8_valid("\xf0\x90\x80", 3)); /* truncated */
    /* the length, not a NUL, is the bound */
    assert_true(bd_utf8_valid("ab\xff", 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_valid_full_values),
        cmocka_unit_test(test_escapes_decoded),
        cmocka_unit_test(test_bare_string_severity),
        cmocka_unit_test(test_no_registration),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_detail_never_echoes_much),
        cmocka_unit_test(test_detail_sanitized),
        cmocka_unit_test(test_one_mib_string),
        cmocka_unit_test(test_length_bounds_input),
        cmocka_unit_test(test_locale_independent),
        cmocka_unit_test(test_harness_failure),
        cmocka_unit_test(test_mode_strings),
        cmocka_unit_test(test_utf8_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
