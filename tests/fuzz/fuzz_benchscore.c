/*
 * fuzz_benchscore.c — libFuzzer target for the BenchScore parser (src/bench/score.h).
 *
 * Invariants checked on every input, against a fixed registration:
 *   - the parser never crashes, leaks or reads past `size` (ASan/UBSan);
 *   - a refusal leaves the score zeroed and a one-line detail of printable text;
 *   - the registration only ever adds unknown_* refusals: a document malformed with it
 *     is malformed without it, and one valid with it is valid without it;
 *   - a valid score serializes (bd_score_to_json + bd_canon_json), those canonical bytes
 *     parse again as a valid score, and give the same canonical bytes;
 *   - the history's record checker accepts a record holding that score: both apply the
 *     rules of score_rules.h, so a score the runner accepts can always be recorded and
 *     verified.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "history.h"
#include "score.h"
#include "fuzz_util.h"

static char *bkeys[] = {"recipe_match", "cve_delta", "validator", "a", "b"};
static bd_failure_mode_def taxonomy[] = {
    {"recipe.wrong", BD_SEV_BLOCK, "Picked the wrong recipe"},
    {"cve.not_removed", BD_SEV_BLOCK, "The CVE is still reachable"},
    {"style.nit", BD_SEV_WARN, "Cosmetic"},
    {"note.info", BD_SEV_INFO, "For the record"},
    {"x", BD_SEV_WARN, "short"},
};

/* A canonical version-2 score record is these bytes around the canonical score: its
 * members sorted bytewise put `score` between `schema_version` and `seq`. */
#define FZ_DIGEST "\"blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\""
static const char rec_head[] =
    "{\"case_digest\":" FZ_DIGEST ",\"case_id\":\"case-001\",\"cassette_digest\":null,"
    "\"finished_at\":\"2026-05-12T14:00:01Z\",\"harness_version\":\"0.1.0\","
    "\"isolation_class\":\"subprocess\",\"operator_fingerprint\":null,\"prev_hash\":\""
    "0000000000000000000000000000000000000000000000000000000000000000\","
    "\"provenance_verified\":true,\"run_cases\":1,\"run_id\":\"r1\",\"run_scope\":\"full\","
    "\"schema_version\":2,\"score\":";
static const char rec_tail[] = ",\"seq\":1,\"started_at\":\"2026-05-12T14:00:00Z\","
                               "\"task_class\":\"fuzz\",\"task_class_digest\":" FZ_DIGEST "}";

static void check_recordable(const char *score, size_t len)
{
    size_t n = sizeof(rec_head) - 1 + len + sizeof(rec_tail) - 1;
    char *rec = malloc(n);
    if (!rec)
        return;
    memcpy(rec, rec_head, sizeof(rec_head) - 1);
    memcpy(rec + sizeof(rec_head) - 1, score, len);
    memcpy(rec + sizeof(rec_head) - 1 + len, rec_tail, sizeof(rec_tail) - 1);
    char why[256];
    bd_chain_reason r = bd_history_record_parse(NULL, rec, n, why);
    if (r != BD_CHAIN_OK && strcmp(why, "out of memory") != 0) {
        fprintf(stderr, "record checker: %s\n", why);
        check(0, "the record checker accepts every score the parser accepts");
    }
    free(rec);
}

static void check_detail(const char *detail, int want_empty)
{
    size_t n = strnlen(detail, BD_SCORE_DETAIL_MAX);
    check(n < BD_SCORE_DETAIL_MAX, "detail is NUL-terminated within its buffer");
    check(want_empty ? n == 0 : n > 0, "detail is set exactly when the score is refused");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)detail[i];
        check(c >= 0x20 && c != 0x7F, "detail holds no control character");
    }
}

static char *canonical(const bd_score *s, size_t *len)
{
    cJSON *j = bd_score_to_json(s);
    check(j != NULL, "bd_score_to_json succeeds on a valid score");
    char *c = bd_canon_json(j, len);
    cJSON_Delete(j);
    check(c != NULL, "bd_canon_json succeeds on a valid score");
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bd_registration reg;
    memset(&reg, 0, sizeof(reg));
    reg.schema_version = 2;
    reg.name = "fuzz";
    reg.breakdown_keys = bkeys;
    reg.n_breakdown_keys = sizeof(bkeys) / sizeof(bkeys[0]);
    reg.failure_modes = taxonomy;
    reg.n_failure_modes = sizeof(taxonomy) / sizeof(taxonomy[0]);

    /* an exact-size heap copy: ASan sees any read past `size` */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);

    bd_score s, zero;
    memset(&zero, 0, sizeof(zero));
    char detail[BD_SCORE_DETAIL_MAX];
    bd_harness_mode m = bd_score_parse(&s, buf, size, &reg, detail);
    check(m == BD_HM_NONE || m == BD_HM_MALFORMED || m == BD_HM_UNKNOWN_BREAKDOWN_KEY ||
              m == BD_HM_UNKNOWN_FAILURE_MODE,
          "the parser returns only its own modes");
    check_detail(detail, m == BD_HM_NONE);

    bd_score s0;
    char detail0[BD_SCORE_DETAIL_MAX];
    bd_harness_mode m0 = bd_score_parse(&s0, buf, size, NULL, detail0);
    if (m == BD_HM_MALFORMED)
        check(m0 == BD_HM_MALFORMED, "malformed does not depend on the registration");
    else
        check(m0 == BD_HM_NONE, "only the registration adds unknown_* refusals");
    bd_score_free(&s0);

    if (m != BD_HM_NONE) {
        check(memcmp(&s, &zero, sizeof(s)) == 0, "a refused score is zeroed");
        free(buf);
        return 0;
    }

    size_t len;
    char *c1 = canonical(&s, &len);
    bd_score s2;
    check(bd_score_parse(&s2, c1, len, &reg, detail) == BD_HM_NONE,
          "canonical bytes of a valid score parse as valid");
    size_t len2;
    char *c2 = canonical(&s2, &len2);
    check(len == len2 && memcmp(c1, c2, len) == 0, "canonical bytes are a fixed point");
    check_recordable(c1, len);
    free(c1);
    free(c2);
    bd_score_free(&s2);
    bd_score_free(&s);
    free(buf);
    return 0;
}
