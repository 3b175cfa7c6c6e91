/*
 * test_record_members.c — reading members of verified record bytes without a parse
 * (history.h): bd_record_members_scored, which reads a version-2 score record from both
 * ends, gives what the general bd_record_members + bd_record_score_of give, on records
 * whose strings, breakdown keys and checks imitate the members it looks for; it declines
 * every other shape. bd_record_number's shortcut for plain decimals gives strtod's double.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

/* Every member a record may hold, and two it never does (event, detail: audit only). */
static const char *const all_keys[] = {"case_digest",
                                       "case_id",
                                       "cassette_digest",
                                       "finished_at",
                                       "harness_version",
                                       "isolation_class",
                                       "operator_fingerprint",
                                       "origin",
                                       "prev_hash",
                                       "provenance_verified",
                                       "run_cases",
                                       "run_id",
                                       "run_scope",
                                       "schema_version",
                                       "score",
                                       "seq",
                                       "started_at",
                                       "task_class",
                                       "task_class_digest",
                                       "event",
                                       "detail"};
#define N_KEYS (sizeof(all_keys) / sizeof(all_keys[0]))

#define HEAD                                                                                       \
    "{\"case_digest\":\"blake3:662710f65bbaa104f30982e8b07c3e588e3baa76ed6f896794b1af79f2925"      \
    "5dc\",\"case_id\":\"ghsa-demo-0012-tar\",\"cassette_digest\":null,\"finished_at\":\"2026"     \
    "-11-23T08:13:07Z\",\"harness_version\":\"0.1.0\",\"isolation_class\":\"namespaces\","         \
    "\"operator_fingerprint\":null,"
#define MID                                                                                        \
    "\"prev_hash\":\"f5fd35457edefeb1c977bb6c07557f685eddd1df242e6dd1d634a4d957666d54\","          \
    "\"provenance_verified\":true,\"run_cases\":18,\"run_id\":\"20260512T140000Z-ab12\","          \
    "\"run_scope\":\"full\",\"schema_version\":2,"
#define TAIL                                                                                       \
    ",\"seq\":262145,\"started_at\":\"2026-11-23T08:13:07Z\",\"task_class\":\"vuln-"               \
    "remediation\",\"task_class_digest\":\"blake3:fc8f1321d4ee526566461e3622d1d72906086c14919"     \
    "0718147813ce92d2e5c72\"}"

/* Score records whose BenchScore imitates, inside strings and nested members, the bytes
 * the backwards reader looks for. */
static const char *const scored[] = {
    HEAD MID "\"score\":{\"breakdown\":{\"cve_delta\":0.5,\"recipe_match\":1},\"cost_usd\":"
             "0.0125,\"failure_modes\":[{\"code\":\"cve.not_removed\",\"detail\":\"the CVE is "
             "still reachable\",\"severity\":\"block\"}],\"passed\":true,\"score\":0.45,"
             "\"wall_clock_ms\":1234}" TAIL,
    HEAD MID "\"score\":{\"breakdown\":{\"passed\":1,\"score\":0},\"checks\":[{\"actual\":"
             "{\"passed\":true,\"score\":1},\"expected\":\"},\\\"passed\\\":true,\\\"score\\\""
             ":1,\\\"wall_clock_ms\\\":1}\",\"name\":\"score\",\"passed\":true}],\"cost_usd\":0,"
             "\"failure_modes\":[{\"code\":\"x.y\",\"detail\":\",\\\"seq\\\":1,\\\"task_class\\\""
             ":\\\"z\\\"}\",\"severity\":\"warn\"}],\"passed\":false,\"score\":0,"
             "\"wall_clock_ms\":0}" TAIL,
    /* an imported record: origin (an object) among the members before score */
    HEAD "\"origin\":{\"bundle_record_hash\":\"00\",\"host\":\"h\",\"run_id\":\"other-run\","
         "\"shard\":1,\"shards\":3}," MID
         "\"score\":{\"breakdown\":{},\"cost_usd\":1e-05,\"failure_modes\":[],\"passed\":true,"
         "\"score\":1,\"wall_clock_ms\":7}" TAIL,
    /* numbers past the shortcut: an exponent, seventeen digits */
    HEAD MID "\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":false,"
             "\"score\":0.81730769230769229,\"wall_clock_ms\":3}" TAIL,
    HEAD MID "\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":true,"
             "\"score\":1.5e-1,\"wall_clock_ms\":3}" TAIL,
};

/* Shapes it must decline: an audit record, a version-1 record, and bytes that are not a
 * whole score record. */
static const char *const declined[] = {
    "{\"detail\":\"x\",\"event\":\"run.started\",\"prev_hash\":\"00\",\"schema_version\":2,"
    "\"seq\":3,\"task_class\":\"tc\"}",
    "{\"case_id\":\"c\",\"prev_hash\":\"00\",\"rubric_digest\":\"blake3:00\",\"schema_version\""
    ":1,\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":true,\"score\""
    ":1,\"wall_clock_ms\":1},\"seq\":1,\"started_at\":\"2026-01-01T00:00:00Z\",\"task_class\":"
    "\"tc\"}",
    "{\"seq\":1,\"started_at\":\"a\",\"task_class\":\"b\",\"task_class_digest\":\"c\"}",
    "{\"score\":1,\"seq\":1,\"started_at\":\"a\",\"task_class\":\"b\",\"task_class_digest\":\"c\"}",
    "{\"zeta\":{\"passed\":true,\"score\":1,\"wall_clock_ms\":1},\"seq\":1,\"started_at\":\"a\","
    "\"task_class\":\"b\",\"task_class_digest\":\"c\"}",
    /* a member's name a byte off one read from the end: in the record, in its BenchScore */
    HEAD MID "\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":true,"
             "\"score\":1,\"wall_clock_ms\":1},\"seq\":1,\"started_at\":\"a\",\"task_class\":"
             "\"b\",\"task_class_digesX\":\"c\"}",
    HEAD MID "\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":true,"
             "\"score\":1,\"wall_clock_mX\":1}" TAIL,
    "",
    "}",
    "\"}",
    ",\"seq\":1}",
};

static void test_scored_agrees_with_the_general_reader(void **state)
{
    (void)state;
    for (size_t r = 0; r < sizeof(scored) / sizeof(scored[0]); r++) {
        const char *rec = scored[r];
        size_t len = strlen(rec);
        const char *qv[N_KEYS], *gv[N_KEYS];
        size_t ql[N_KEYS], gl[N_KEYS];
        bool qp = false, gp = true;
        double qs = -1, gs = -2;
        bd_record_keys ks;
        bd_record_keys_init(&ks, all_keys, N_KEYS);
        assert_true(bd_record_members_scored(rec, len, &ks, qv, ql, &qp, &qs));
        bd_record_members(rec, len, all_keys, N_KEYS, gv, gl);
        size_t si = 14; /* "score" */
        assert_string_equal(all_keys[si], "score");
        assert_true(bd_record_score_of(gv[si], gl[si], &gp, &gs));
        for (size_t i = 0; i < N_KEYS; i++) {
            if (!gv[i]) {
                assert_null(qv[i]);
                continue;
            }
            assert_non_null(qv[i]);
            assert_int_equal(ql[i], gl[i]);
            assert_ptr_equal(qv[i], gv[i]);
        }
        assert_int_equal(qp, gp);
        assert_memory_equal(&qs, &gs, sizeof(double));
    }
}

static void test_scored_declines_other_shapes(void **state)
{
    (void)state;
    for (size_t r = 0; r < sizeof(declined) / sizeof(declined[0]); r++) {
        const char *v[N_KEYS];
        size_t vl[N_KEYS];
        bool p;
        double s;
        /* an exact-size copy: ASan sees a read past the end */
        size_t len = strlen(declined[r]);
        char *buf = malloc(len ? len : 1);
        assert_non_null(buf);
        memcpy(buf, declined[r], len);
        bd_record_keys ks;
        bd_record_keys_init(&ks, all_keys, N_KEYS);
        assert_false(bd_record_members_scored(buf, len, &ks, v, vl, &p, &s));
        free(buf);
    }
}

/* Every prefix and every one-byte change of a scored record: never a read outside it (ASan),
 * and whatever it answers for a changed record, never a crash. */
static void test_scored_on_damaged_bytes(void **state)
{
    (void)state;
    const char *rec = scored[1];
    size_t len = strlen(rec);
    const char *v[N_KEYS];
    size_t vl[N_KEYS];
    bool p;
    double s;
    bd_record_keys ks;
    bd_record_keys_init(&ks, all_keys, N_KEYS);
    for (size_t cut = 0; cut < len; cut++) {
        char *buf = malloc(cut ? cut : 1);
        assert_non_null(buf);
        memcpy(buf, rec, cut);
        (void)bd_record_members_scored(buf, cut, &ks, v, vl, &p, &s);
        free(buf);
    }
    static const char bytes[] = "\"\\{}[],:0a";
    char *buf = malloc(len);
    assert_non_null(buf);
    for (size_t at = 0; at < len; at++)
        for (size_t b = 0; b < sizeof(bytes) - 1; b++) {
            memcpy(buf, rec, len);
            buf[at] = bytes[b];
            (void)bd_record_members_scored(buf, len, &ks, v, vl, &p, &s);
        }
    free(buf);
}

/* Records the members-by-name reading must decline or read exactly as the general loop:
 * an unknown member before score, a key that starts with a known name, a known key twice,
 * members out of order, known names and `"score":` inside strings (escaped quotes), an
 * object where a string is expected, empty strings. */
static const char *const shaped[] = {
    HEAD "\"case_idx\":1," MID
         "\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":true,"
         "\"score\":1,\"wall_clock_ms\":1}" TAIL,
    HEAD MID "\"run_id_x\":\"r\",\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\""
             ":[],\"passed\":true,\"score\":1,\"wall_clock_ms\":1}" TAIL,
    "{\"case_id\":\"a\",\"case_id\":\"b\"," MID
    "\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":false,\"score\":"
    "0.5,\"wall_clock_ms\":1}" TAIL,
    "{\"run_id\":\"r1\",\"case_id\":\"c\",\"finished_at\":\"2026-11-23T08:13:07Z\","
    "\"isolation_class\":\"subprocess\",\"score\":{\"breakdown\":{},\"cost_usd\":0,"
    "\"failure_modes\":[],\"passed\":true,\"score\":1,\"wall_clock_ms\":1}" TAIL,
    "{\"case_digest\":\"x\\\",\\\"case_id\\\":\\\"evil\\\",\\\"score\\\":{\",\"case_id\":\"c\\\\\","
    "\"finished_at\":\"\",\"isolation_class\":\"namespaces\",\"run_id\":\"\\\"score\\\":\","
    "\"run_scope\":\"full\",\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],"
    "\"passed\":true,\"score\":0.25,\"wall_clock_ms\":1}" TAIL,
    "{\"case_digest\":{\"case_id\":\"n\"},\"case_id\":[\"c\"],\"run_cases\":\"18\",\"run_id\":"
    "null,\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":true,"
    "\"score\":1,\"wall_clock_ms\":1}" TAIL,
    "{\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\":[],\"passed\":true,\"score\":"
    "1,\"wall_clock_ms\":1}" TAIL,
    "{\"case_id\":\"c\",\"scorex\":1,\"score\":{\"breakdown\":{},\"cost_usd\":0,\"failure_modes\""
    ":[],\"passed\":true,\"score\":1,\"wall_clock_ms\":1}" TAIL,
};

/* One record read with the members before score taken by their known names, and the
 * general way: the same answer, the same members (pointers and lengths). */
static void known_agrees(const char *rec, size_t len, const bd_record_keys *ks)
{
    const char *kv[N_KEYS + 2], *gv[N_KEYS + 2];
    size_t kl[N_KEYS + 2], gl[N_KEYS + 2];
    bool kp = false, gp = false;
    double ks_ = 0, gs = 0;
    bd_record_test_members_known(true);
    bool kr = bd_record_members_scored(rec, len, ks, kv, kl, &kp, &ks_);
    bd_record_test_members_known(false);
    bool gr = bd_record_members_scored(rec, len, ks, gv, gl, &gp, &gs);
    bd_record_test_members_known(true);
    assert_int_equal(kr, gr);
    if (!kr)
        return;
    for (size_t i = 0; i < ks->n; i++) {
        assert_ptr_equal(kv[i], gv[i]);
        assert_int_equal(kl[i], gl[i]);
    }
    assert_int_equal(kp, gp);
    assert_memory_equal(&ks_, &gs, sizeof(double));
}

static void test_known_names_agree_with_the_general_loop(void **state)
{
    (void)state;
    /* every key; recommend's few; a key set naming a member twice and names no record has */
    static const char *const few[] = {"case_digest",
                                      "case_id",
                                      "finished_at",
                                      "isolation_class",
                                      "provenance_verified",
                                      "run_cases",
                                      "run_id",
                                      "run_scope",
                                      "score",
                                      "task_class_digest",
                                      "operator_fingerprint",
                                      "event",
                                      "detail"};
    static const char *const twice[] = {"run_id",   "case_id",  "run_id", "origin",
                                        "case_idx", "run_id_x", "seq",    "case_id"};
    bd_record_keys sets[3];
    bd_record_keys_init(&sets[0], all_keys, N_KEYS);
    bd_record_keys_init(&sets[1], few, sizeof(few) / sizeof(few[0]));
    bd_record_keys_init(&sets[2], twice, sizeof(twice) / sizeof(twice[0]));
    static const char bytes[] = "\"\\{}[],:0a";
    size_t n_scored = sizeof(scored) / sizeof(scored[0]);
    size_t n_shaped = sizeof(shaped) / sizeof(shaped[0]);
    for (size_t r = 0; r < n_scored + n_shaped; r++) {
        const char *rec = r < n_scored ? scored[r] : shaped[r - n_scored];
        size_t len = strlen(rec);
        char *buf = malloc(len);
        assert_non_null(buf);
        for (size_t k = 0; k < 3; k++) {
            memcpy(buf, rec, len);
            known_agrees(buf, len, &sets[k]);
            /* every prefix (an exact-size copy: ASan sees a read past the end) */
            for (size_t cut = 1; cut < len; cut++) {
                char *c = malloc(cut);
                assert_non_null(c);
                memcpy(c, rec, cut);
                known_agrees(c, cut, &sets[k]);
                free(c);
            }
            /* every one-byte change to a byte JSON gives meaning to */
            for (size_t at = 0; at < len; at++)
                for (size_t b = 0; b < sizeof(bytes) - 1; b++) {
                    memcpy(buf, rec, len);
                    buf[at] = bytes[b];
                    known_agrees(buf, len, &sets[k]);
                }
        }
        free(buf);
    }
}

/* The plain-decimal shortcut gives strtod's double, bit for bit. */
static void test_number_matches_strtod(void **state)
{
    (void)state;
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    assert_non_null(c);
    srand(7);
    char num[64];
    for (int i = 0; i < 200000; i++) {
        int whole = rand() % 4 == 0 ? rand() : rand() % 2;
        int digits = rand() % 16;
        long frac = rand();
        int n = snprintf(num, sizeof(num), "%s%d", rand() % 5 == 0 ? "-" : "", whole);
        if (digits > 0)
            n += snprintf(num + n, sizeof(num) - (size_t)n, ".%0*ld", digits, frac % 1000000000L);
        double want = strtod_l(num, NULL, c), got = -42;
        assert_true(bd_record_number(num, strlen(num), &got));
        assert_memory_equal(&got, &want, sizeof(double));
    }
    static const char *const edge[] = {"0",
                                       "-0",
                                       "0.0",
                                       "1",
                                       "0.1",
                                       "0.3",
                                       "1.5",
                                       "999999999999999",
                                       "0.000000000000001",
                                       "123456789012345",
                                       "9007199254740993",
                                       "1e-05",
                                       "2.5E3"};
    for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
        double want = strtod_l(edge[i], NULL, c), got = -42;
        assert_true(bd_record_number(edge[i], strlen(edge[i]), &got));
        assert_memory_equal(&got, &want, sizeof(double));
    }
    double d;
    assert_false(bd_record_number("-", 1, &d));
    freelocale(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scored_agrees_with_the_general_reader),
        cmocka_unit_test(test_scored_declines_other_shapes),
        cmocka_unit_test(test_scored_on_damaged_bytes),
        cmocka_unit_test(test_known_names_agree_with_the_general_loop),
        cmocka_unit_test(test_number_matches_strtod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
