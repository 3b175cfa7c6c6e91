/* Recommendations from the history (docs/history.md#promotion-recommend-never-apply): which records
 * are evidence (current records of cases signed today), which are excluded and counted, the tier
 * rules, determinism of the interval, nothing recommended for a task class not signed today, and
 * the refusal to read a history that does not verify. The signature state is given
 * (bd_recommend_given); checking it against GnuPG is bd_verify's and is covered by
 * cli.test_history_query on the signed demo bench. */
#include "test_history_util.h"

#include <time.h>

#include "bench.h"
#include "evidence.h"
#include "promote.h"
#include "stats.h"
#include "fsutil.h"

/* 2026-05-12T14:00:00Z */
#define NOW ((time_t)1778594400)

static const char registration[] =
    "schema_version: 2\nname: tc\ndescription: Test task class.\ncurrent_tier: bronze\n"
    "min_cases_for_promotion: {bronze: 2, silver: 3, gold: 5}\n"
    "promotion_threshold: {silver: 0.50, gold: 0.95}\nbreakdown_keys: [a]\n"
    "failure_modes:\n  - {code: x.wrong, severity: block, description: Wrong}\n"
    "rubric: {wall_clock_seconds: 10, memory_mb: 256}\nsut: {kind: cassette}\n";

/* Pins: the digests th_fields writes into every record, so its records are current. */
static const char digests[] =
    "schema_version: 2\ntask_class: " TH_DIGEST_B "\ncases:\n"
    "  c1: " TH_DIGEST_A "\n  c2: " TH_DIGEST_A "\n  c3: " TH_DIGEST_A "\n  c4: " TH_DIGEST_A
    "\n  c5: " TH_DIGEST_A "\n  c6: " TH_DIGEST_A "\n";

static bool all_signed[6] = {true, true, true, true, true, true};
static const bd_signed_today signed_today = {true, "signed", all_signed};

typedef struct fixture {
    char *root;
    bd_bench *bench;
    bd_task_class *tc;
    bd_history *h;
} fixture;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    fx->root = th_tmpdir();
    char p[1024];
    snprintf(p, sizeof(p), "%s/bench/tc/cases", fx->root);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_mkdir_p(p, 0700, &err), 0);
    for (int i = 1; i <= 6; i++) {
        snprintf(p, sizeof(p), "%s/bench/tc/cases/c%d", fx->root, i);
        assert_int_equal(mkdir(p, 0700), 0);
    }
    snprintf(p, sizeof(p), "%s/bench/tc/registration.yaml", fx->root);
    write_text(p, registration);
    snprintf(p, sizeof(p), "%s/bench/tc/rubric.py", fx->root);
    write_text(p, "print('{}')\n");
    snprintf(p, sizeof(p), "%s/bench/tc/cases/digests.yaml", fx->root);
    write_text(p, digests);
    if (bd_bench_open(&fx->bench, fx->root, &err) != 0 ||
        bd_task_class_load(&fx->tc, fx->bench, "tc", &err) != 0 ||
        bd_history_open(&fx->h, fx->root, BD_HISTORY_CREATE, &err) != 0) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    *state = fx;
    return 0;
}

static int recommend(bd_recommendation *r, const fixture *fx, bd_err *err)
{
    return bd_recommend_given(r, fx->bench, fx->tc, NOW, &signed_today, err);
}

static int teardown(void **state)
{
    fixture *fx = *state;
    bd_history_free(fx->h);
    bd_task_class_free(fx->tc);
    bd_bench_free(fx->bench);
    th_rmtree(fx->root);
    free(fx->root);
    free(fx);
    return 0;
}

/* Append a score record for case `id` finished `age` seconds before NOW. */
static void add(fixture *fx, const char *id, double score, bool passed, bool signed_,
                const char *iso, long age)
{
    bd_history_score_fields f;
    char cid[32];
    th_fields(&f, cid, "x", 1);
    f.task_class = "tc";
    f.case_id = id;
    f.provenance_verified = signed_;
    f.isolation_class = iso;
    char at[32];
    time_t t = NOW - age;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    f.started_at = at;
    f.finished_at = at;
    bd_score s;
    th_score(&s, 1);
    s.score = score;
    s.passed = passed;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_append_score(fx->h, &f, &s, NULL, NULL, &err), 0);
    bd_score_free(&s);
}

#define DAY 86400L

static void selects_and_counts_evidence(void **state)
{
    fixture *fx = *state;
    add(fx, "c1", 0.2, false, true, "namespaces", 5 * DAY);  /* superseded by the next */
    add(fx, "c1", 0.9, true, true, "namespaces", 4 * DAY);   /* evidence */
    add(fx, "c2", 0.8, true, true, "namespaces", 3 * DAY);   /* evidence */
    add(fx, "c3", 1.0, true, false, "namespaces", 2 * DAY);  /* unsigned */
    add(fx, "c4", 0.7, true, true, "subprocess", 1 * DAY);   /* weaker isolation */
    add(fx, "c5", 0.6, true, true, "namespaces", 31 * DAY);  /* too old */
    add(fx, "gone", 0.6, true, true, "namespaces", 1 * DAY); /* not a case any more */
    add(fx, "c6", 0.1, false, true, "namespaces", -3600);    /* a clock ahead: kept */
    bd_history_audit_fields a = {.event = "promotion.refused", .task_class = "tc"};
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_append_audit(fx->h, &a, NULL, NULL, &err), 0);

    bd_recommendation r;
    assert_int_equal(recommend(&r, fx, &err), 0);
    assert_string_equal(r.isolation_class, "namespaces");
    assert_int_equal(r.cases, 3);
    assert_string_equal(r.evidence[0].case_id, "c1");
    assert_true(r.evidence[0].score == 0.9);
    assert_int_equal(r.evidence[0].seq, 2);
    assert_string_equal(r.evidence[1].case_id, "c2");
    assert_string_equal(r.evidence[2].case_id, "c6");
    assert_int_equal(r.passed, 2);
    assert_true(r.pass_rate == 2.0 / 3.0);
    assert_true(r.mean_score == (0.9 + 0.8 + 0.1) / 3);
    assert_int_equal(r.superseded, 1);
    assert_int_equal(r.excluded_unsigned, 1);
    assert_int_equal(r.excluded_isolation, 1);
    assert_int_equal(r.excluded_outside_window, 1);
    assert_int_equal(r.excluded_unknown_case, 1);
    assert_int_equal(r.chain_count, 9);

    /* the interval: the evidence scores in case-id order, seeded from the chain head */
    double x[3] = {0.9, 0.8, 0.1}, lo, hi;
    assert_int_equal(r.seed, bd_stats_seed_from(r.chain_head, 64));
    assert_int_equal(bd_stats_bca(x, 3, 0.95, 0, r.seed, &lo, &hi, &err), 0);
    assert_true(r.has_ci && r.ci_lo == lo && r.ci_hi == hi);
    /* same history, same numbers */
    bd_recommendation r2;
    assert_int_equal(recommend(&r2, fx, &err), 0);
    assert_true(r2.ci_lo == r.ci_lo && r2.ci_hi == r.ci_hi && r2.seed == r.seed);
    bd_recommendation_release(&r2);

    /* tiers: 3 cases meet bronze (2) and silver's count (3); silver's threshold is on
     * the lower bound */
    assert_true(r.tiers[BD_TIER_BRONZE].met);
    assert_true(r.tiers[BD_TIER_SILVER].cases_met);
    assert_int_equal(r.tiers[BD_TIER_SILVER].threshold_met, r.ci_lo >= 0.50);
    assert_false(r.tiers[BD_TIER_GOLD].cases_met);
    assert_true(r.has_recommended);
    assert_int_equal(r.recommended, r.ci_lo >= 0.50 ? BD_TIER_SILVER : BD_TIER_BRONZE);

    /* the file: requires_human_approval, 0600, never replaced */
    char *p1 = NULL, *p2 = NULL;
    assert_int_equal(bd_recommendation_write(&r, fx->root, &p1, &err), 0);
    assert_int_equal(bd_recommendation_write(&r, fx->root, &p2, &err), 0);
    assert_string_not_equal(p1, p2);
    assert_non_null(strstr(p1, "/.benchdesk/recommendations/20260512T140000Z.json"));
    struct stat st;
    assert_int_equal(stat(p1, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    size_t len;
    char *text = th_read(p1, &len);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "requires_human_approval")));
    assert_string_equal(cJSON_GetObjectItem(j, "current_tier")->valuestring, "bronze");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "evidence")), 3);
    cJSON_Delete(j);
    free(text);
    free(p1);
    free(p2);
    bd_recommendation_release(&r);
}

static void all_equal_scores_and_one_case(void **state)
{
    fixture *fx = *state;
    add(fx, "c1", 0.75, true, true, "subprocess", DAY);
    bd_recommendation r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(recommend(&r, fx, &err), 0);
    assert_int_equal(r.cases, 1);
    assert_string_equal(r.isolation_class, "subprocess");
    assert_true(r.ci_lo == 0.75 && r.ci_hi == 0.75);
    assert_false(r.has_recommended); /* bronze needs 2 cases */
    bd_recommendation_release(&r);
    for (int i = 2; i <= 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        add(fx, id, 0.75, true, true, "subprocess", DAY);
    }
    assert_int_equal(recommend(&r, fx, &err), 0);
    assert_int_equal(r.cases, 6);
    assert_true(r.ci_lo == 0.75 && r.ci_hi == 0.75 && r.mean_score == 0.75);
    assert_true(r.tiers[BD_TIER_SILVER].met);
    assert_false(r.tiers[BD_TIER_GOLD].met); /* 0.75 < 0.95 */
    assert_int_equal(r.recommended, BD_TIER_SILVER);
    bd_recommendation_release(&r);
}

/* Stale records (case or task class changed since) and records of cases not signed today
 * are counted and excluded; a task class not signed today recommends nothing. */
static void stale_and_unsigned_are_excluded(void **state)
{
    fixture *fx = *state;
    bd_history_score_fields f;
    char cid[32];
    bd_score s;
    bd_err err = BD_ERR_INIT;
    for (int i = 1; i <= 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        add(fx, id, 0.9, true, true, "namespaces", DAY);
    }
    th_fields(&f, cid, "x", 1);
    f.task_class = "tc";
    f.case_id = "c1";
    f.case_digest = TH_DIGEST_B; /* not c1's pin: the case changed since */
    th_score(&s, 1);
    assert_int_equal(bd_history_append_score(fx->h, &f, &s, NULL, NULL, &err), 0);
    f.case_digest = TH_DIGEST_A;
    f.task_class_digest = TH_DIGEST_A; /* not the task class's pin */
    assert_int_equal(bd_history_append_score(fx->h, &f, &s, NULL, NULL, &err), 0);
    bd_score_free(&s);
    bool some[6] = {true, true, true, true, false, false};
    bd_signed_today st = {true, "signed", some};
    bd_recommendation r;
    assert_int_equal(bd_recommend_given(&r, fx->bench, fx->tc, NOW, &st, &err), 0);
    assert_int_equal(r.excluded_stale, 2);
    assert_int_equal(r.excluded_unsigned, 2);
    assert_int_equal(r.cases, 4);
    assert_true(r.evidence[0].score == 0.9); /* the stale later records of c1 do not count */
    assert_true(r.tc_signed);
    assert_true(r.has_recommended);
    bd_recommendation_release(&r);
    st.tc_signed = false;
    snprintf(st.tc_status, sizeof(st.tc_status), "awaiting_review");
    assert_int_equal(bd_recommend_given(&r, fx->bench, fx->tc, NOW, &st, &err), 0);
    assert_false(r.has_recommended);
    assert_int_equal(r.cases, 4); /* the evidence is still reported */
    assert_non_null(strstr(r.no_tier_reason, "not signed today (awaiting_review)"));
    cJSON *j = bd_recommendation_json(&r);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "recommended_tier")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "task_class_signed")));
    assert_non_null(cJSON_GetObjectItem(j, "reason"));
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "excluded_records"), "stale")->valueint, 2);
    cJSON_Delete(j);
    bd_recommendation_release(&r);
}

static void empty_history_recommends_nothing(void **state)
{
    fixture *fx = *state;
    bd_recommendation r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(recommend(&r, fx, &err), 0);
    assert_int_equal(r.cases, 0);
    assert_false(r.has_ci);
    assert_false(r.has_recommended);
    cJSON *j = bd_recommendation_json(&r);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "recommended_tier")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "ci95")));
    cJSON_Delete(j);
    bd_recommendation_release(&r);
}

static void refuses_a_history_that_does_not_verify(void **state)
{
    fixture *fx = *state;
    for (int i = 1; i <= 4; i++)
        add(fx, "c1", 0.5, true, true, "namespaces", DAY);
    char p[1024];
    th_unlink_seq(fx->h, 2);
    bd_recommendation r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(recommend(&r, fx, &err), -1);
    assert_int_equal(err.code, BD_E_CHAIN_TAMPERED);
    assert_int_equal(r.cases, 0);
    /* a history whose anchor does not hold is refused the same way */
    snprintf(p, sizeof(p), "%s/.benchdesk/history", fx->root);
    th_rmtree(p);
    bd_history_free(fx->h);
    assert_int_equal(bd_history_open(&fx->h, fx->root, BD_HISTORY_CREATE, &err), 0);
    add(fx, "c1", 0.5, true, true, "namespaces", DAY);
    snprintf(p, sizeof(p), "%s/audit/anchors/bench", fx->root);
    assert_int_equal(bd_mkdir_p(p, 0755, &err), 0);
    snprintf(p, sizeof(p), "%s/audit/anchors/bench/2026-05-12.json", fx->root);
    write_text(p, "{}\n");
    assert_int_equal(recommend(&r, fx, &err), -1);
    assert_int_equal(err.code, BD_E_ANCHOR_MISMATCH);
}

/* Recommend takes every record from the verified walk, never from the derived index: it
 * builds none, an index full of garbage changes nothing, and the 30-day window is exact
 * to the second (several days, a stale and an unsigned record around the edge). */
static void index_and_stream_agree_to_the_second(void **state)
{
    fixture *fx = *state;
    static const long ages[] = {30 * DAY + 1,    30 * DAY, 30 * DAY - 1, 30 * DAY + 3600,
                                30 * DAY - 3600, 29 * DAY, 31 * DAY,     45 * DAY,
                                2 * DAY,         0};
    static const char *const ids[] = {"c1", "c2", "c3", "c4", "c5", "c6"};
    for (size_t i = 0; i < sizeof(ages) / sizeof(*ages); i++)
        for (size_t c = 0; c < 6; c++)
            add(fx, ids[c], (double)(i + c) / 20.0, (i + c) % 3 != 0, (i + c) % 7 != 0,
                (i + c) % 5 ? "namespaces" : "subprocess", ages[i] + (long)c * 60);
    bd_recommendation a, b;
    bd_err err = BD_ERR_INIT;
    unsetenv("BENCHDESK_NO_INDEX");
    unsigned builds0, extends0, builds, extends;
    bd_history_test_index_counts(&builds0, &extends0);
    assert_int_equal(recommend(&a, fx, &err), 0);
    bd_history_test_index_counts(&builds, &extends);
    assert_int_equal(builds + extends, builds0 + extends0); /* no index was used */
    char p[1024];
    snprintf(p, sizeof(p), "%s/.benchdesk/index", fx->root);
    assert_int_equal(bd_mkdir_p(p, 0700, &err), 0);
    snprintf(p, sizeof(p), "%s/.benchdesk/index/history.sqlite", fx->root);
    write_text(p, "not an index at all");
    assert_int_equal(recommend(&b, fx, &err), 0);
    assert_int_equal(a.cases, b.cases);
    assert_int_equal(a.excluded_outside_window, b.excluded_outside_window);
    assert_int_equal(a.excluded_unknown_case, b.excluded_unknown_case);
    assert_int_equal(a.excluded_stale, b.excluded_stale);
    assert_int_equal(a.excluded_unsigned, b.excluded_unsigned);
    assert_int_equal(a.excluded_isolation, b.excluded_isolation);
    assert_int_equal(a.superseded, b.superseded);
    assert_true(a.excluded_outside_window > 0 && a.cases > 0);
    for (size_t i = 0; i < a.n_evidence; i++) {
        assert_string_equal(a.evidence[i].case_id, b.evidence[i].case_id);
        assert_int_equal(a.evidence[i].seq, b.evidence[i].seq);
        assert_string_equal(a.evidence[i].record_hash, b.evidence[i].record_hash);
        assert_string_equal(a.evidence[i].finished_at, b.evidence[i].finished_at);
        assert_true(a.evidence[i].score == b.evidence[i].score);
    }
    assert_true(a.ci_lo == b.ci_lo && a.ci_hi == b.ci_hi);
    bd_recommendation_release(&a);
    bd_recommendation_release(&b);
}

/* The evidence's shortcuts (a case found by a hash of its id; a record holding exactly its
 * case's pin and today's task class digest current without a copy) answer as the general
 * reading does, on ids that share a prefix with a case's or differ from one in a byte and
 * digests a byte off a pin or naming another one, over both isolation sides. */
static void evidence_shortcuts_agree_with_the_general_reading(void **state)
{
    fixture *fx = *state;
    static const char *const ids[] = {"c1", "c2", "c10", "c", "c1c", "d1", "c6", "c3", "c4", "c5"};
    static const char *const cds[] = {TH_DIGEST_A, TH_DIGEST_B,
                                      ("blake3:0123456789abcdef0123456789abcdef0123456789abcdef"
                                       "0123456789abcdee")};
    static const char *const tcds[] = {TH_DIGEST_B, TH_DIGEST_A,
                                       ("blake3:fedcba9876543210fedcba9876543210fedcba987654321"
                                        "0fedcba9876543211")};
    size_t n_ids = sizeof(ids) / sizeof(ids[0]), n_cd = sizeof(cds) / sizeof(cds[0]);
    static const char more[] = "0789abcdefghijklmnopqrstuvwxyz"; /* c0, c7, ... cz below */
    size_t n_tcd = sizeof(tcds) / sizeof(tcds[0]), k = 0;
    size_t total = n_ids * n_cd * n_tcd * 2 + sizeof(more) - 1;
    bd_err err = BD_ERR_INIT;
    for (size_t side = 0; side < 2; side++)
        for (size_t t = 0; t < n_tcd; t++)
            for (size_t c = 0; c < n_cd; c++)
                for (size_t i = 0; i < n_ids; i++, k++) {
                    bd_history_score_fields f;
                    char cid[32];
                    th_fields(&f, cid, "x", 1);
                    f.task_class = "tc";
                    f.case_id = ids[i];
                    f.case_digest = cds[c];
                    f.task_class_digest = tcds[t];
                    f.run_cases = total;
                    f.isolation_class = side ? "subprocess" : "namespaces";
                    f.provenance_verified = k % 5 != 0;
                    f.finished_at = f.started_at = "2026-05-12T13:00:00Z";
                    bd_score s;
                    th_score(&s, 1);
                    s.score = (double)(k % 7) / 7;
                    s.passed = k % 3 != 0;
                    int rc = bd_history_append_score(fx->h, &f, &s, NULL, NULL, &err);
                    if (rc != 0)
                        fprintf(stderr, "append: %s\n", err.msg);
                    assert_int_equal(rc, 0);
                    bd_score_free(&s);
                }
    /* ids of a case's length and first byte: any slot of the ids' table they meet holds
     * one of them, never theirs */
    for (const char *x = more; *x; x++) {
        char id[3] = {'c', *x, '\0'};
        bd_history_score_fields f;
        char cid[32];
        th_fields(&f, cid, "x", 1);
        f.task_class = "tc";
        f.case_id = id;
        f.task_class_digest = TH_DIGEST_B;
        f.run_cases = total;
        f.isolation_class = "namespaces";
        f.finished_at = f.started_at = "2026-05-12T13:00:00Z";
        bd_score s;
        th_score(&s, 1);
        assert_int_equal(bd_history_append_score(fx->h, &f, &s, NULL, NULL, &err), 0);
        bd_score_free(&s);
    }
    char *json[2];
    for (int on = 0; on < 2; on++) {
        bd_evidence_test_shortcuts(on);
        bd_recommendation r;
        assert_int_equal(recommend(&r, fx, &err), 0);
        cJSON *j = bd_recommendation_json(&r);
        assert_non_null(j);
        json[on] = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        bd_recommendation_release(&r);
    }
    bd_evidence_test_shortcuts(true);
    assert_string_equal(json[1], json[0]);
    /* the history holds evidence, stale records and records of no case */
    assert_non_null(strstr(json[1], "\"stale\":"));
    assert_null(strstr(json[1], "\"stale\":0,"));
    assert_null(strstr(json[1], "\"unknown_case\":0,"));
    assert_null(strstr(json[1], "\"evidence\":[]"));
    free(json[0]);
    free(json[1]);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(selects_and_counts_evidence),
        T(all_equal_scores_and_one_case),
        T(stale_and_unsigned_are_excluded),
        T(empty_history_recommends_nothing),
        T(refuses_a_history_that_does_not_verify),
        T(index_and_stream_agree_to_the_second),
        T(evidence_shortcuts_agree_with_the_general_reading),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
