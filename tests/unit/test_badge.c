/*
 * test_badge.c — bd_badge_of (docs/provenance.md#verdict-badges) on a verdict set made
 * the way a bench makes one: score records in a bench's chain, verdicts given by
 * reviewers with throwaway GnuPG keys (tests/fixtures/gpg/make-keys.sh) and distinct
 * identities, the set loaded, verified and settled. One record per badge: none,
 * confirmed, rubric_bug 1/2, removed, flaky; and what does not count (an untrusted key,
 * a withdrawn verdict, the same identity twice) changes nothing.
 *
 * "reviewed" (BD_BADGE_MIXED) is not among them: the counting verdicts that are neither
 * removing nor flaky can only be `confirmed` (withdrawn counts as none), so a set without
 * a removing or flaky verdict is all confirmed, and one with a removing verdict is
 * awaiting or removed. bd_badge_of reaches "reviewed" only when a record's removing
 * verdict is past the first 16 counting ones it looks at (17 reviewers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../fixtures/gpg/fixture.h"
#include "badge.h"
#include "history.h"
#include "provenance.h"
#include "test_history_util.h"
#include "verdict.h"

static fx_keys K;
static char T[512], R[600];

/* Score records c1..c<n> of task class "tc" in the bench's chain (seq i is case ci). */
static void records(int n)
{
    bd_history *h = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_open(&h, R, BD_HISTORY_CREATE, &err), 0);
    for (int i = 1; i <= n; i++) {
        bd_history_score_fields f;
        char case_id[32];
        bd_score s;
        th_fields(&f, case_id, "c", i);
        snprintf(case_id, sizeof(case_id), "c%d", i);
        f.task_class = "tc";
        f.operator_fingerprint = NULL;
        th_score(&s, i);
        assert_int_equal(bd_history_append_score(h, &f, &s, NULL, NULL, &err), 0);
        bd_score_free(&s);
    }
    bd_history_free(h);
}

/* `fpr` gives `kind` on record `seq`. Returns the error code. */
static bd_code give(const char *fpr, uint64_t seq, bd_verdict_kind kind)
{
    bd_verdict_subject *subj = NULL;
    bd_err err = BD_ERR_INIT;
    if (bd_verdict_subjects(&subj, R, &seq, 1, &err) != 0)
        return err.code;
    bd_verdict_give_opts o = BD_VERDICT_GIVE_OPTS_INIT;
    o.sign.key = fpr;
    o.sign.gnupg_home = K.home;
    int rc = bd_verdict_give(NULL, R, subj, 1, kind, "a note", &o, &err);
    free(subj);
    if (rc != 0)
        fprintf(stderr, "give: %s: %s\n", bd_code_str(err.code), err.msg);
    return rc == 0 ? BD_OK : err.code;
}

static void setup_bench(void)
{
    fx_tmpdir(T, sizeof(T), "badge");
    fx_make_keys(&K, T);
    snprintf(R, sizeof(R), "%s/bench-root", T);
    char sy[2048];
    /* alice, bob and carol review under their own identities; mallory's key is alice's
     * second (the same identity, another case); eve has no reviewer role. */
    snprintf(sy, sizeof(sy),
             "schema_version: 1\nsigners:\n"
             "  - {fingerprint: %s, identity: alice@bench.example, roles: [reviewer]}\n"
             "  - {fingerprint: %s, identity: bob@bench.example, roles: [reviewer]}\n"
             "  - {fingerprint: %s, identity: carol@bench.example, roles: [reviewer]}\n"
             "  - {fingerprint: %s, identity: Alice@Bench.Example, roles: [reviewer]}\n"
             "  - {fingerprint: %s, identity: eve@bench.example, roles: [author]}\n",
             K.alice, K.bob, K.carol, K.mallory, K.eve);
    fx_make_bench(R, &K, "alice bob carol eve mallory", sy, 8);
}

static void test_every_badge(void **state)
{
    (void)state;
    setup_bench();
    records(8);
    /* 1: no verdict */
    assert_int_equal(give(K.alice, 2, BD_VERDICT_CONFIRMED), BD_OK);
    assert_int_equal(give(K.bob, 2, BD_VERDICT_CONFIRMED), BD_OK);    /* 2: confirmed */
    assert_int_equal(give(K.alice, 3, BD_VERDICT_RUBRIC_BUG), BD_OK); /* 3: 1 of 2 */
    assert_int_equal(give(K.alice, 4, BD_VERDICT_RUBRIC_BUG), BD_OK);
    assert_int_equal(give(K.bob, 4, BD_VERDICT_RUBRIC_BUG), BD_OK); /* 4: removed */
    assert_int_equal(give(K.alice, 5, BD_VERDICT_FLAKY), BD_OK);
    assert_int_equal(give(K.bob, 5, BD_VERDICT_CONFIRMED), BD_OK); /* 5: flaky */
    /* 6: a second key of the same identity does not make two reviewers */
    assert_int_equal(give(K.alice, 6, BD_VERDICT_CASE_BUG), BD_OK);
    assert_int_equal(give(K.mallory, 6, BD_VERDICT_CASE_BUG), BD_OK);
    /* 7: a verdict withdrawn counts as none; two that disagree on what removes it wait */
    assert_int_equal(give(K.alice, 7, BD_VERDICT_CONFIRMED), BD_OK);
    assert_int_equal(give(K.alice, 7, BD_VERDICT_WITHDRAWN), BD_OK);
    assert_int_equal(give(K.bob, 8, BD_VERDICT_INFRA), BD_OK);
    assert_int_equal(give(K.carol, 8, BD_VERDICT_RUBRIC_BUG), BD_OK); /* 8: either, 1/2 */
    /* a key without the reviewer role gives nothing */
    assert_int_not_equal(give(K.eve, 1, BD_VERDICT_RUBRIC_BUG), BD_OK);

    bd_bench *b = NULL;
    bd_prov_ctx *ctx = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bench_open(&b, R, &err), 0);
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_verdict_set vs;
    assert_int_equal(bd_verdict_set_check(&vs, R, NULL, ctx, &err), 0);
    assert_int_equal(vs.n_bad, 0);

    static const struct {
        bd_badge_kind kind;
        const char *text;
    } want[] = {
        {BD_BADGE_NONE, ""},
        {BD_BADGE_CONFIRMED, "confirmed"},
        {BD_BADGE_AWAITING, "rubric_bug 1/2"},
        {BD_BADGE_REMOVED, "removed"},
        {BD_BADGE_FLAKY, "flaky"},
        {BD_BADGE_AWAITING, "case_bug 1/2"},
        {BD_BADGE_NONE, ""},
        {BD_BADGE_AWAITING, "infra 1/2"},
    };
    char buf[32];
    for (uint64_t seq = 1; seq <= 8; seq++) {
        memset(buf, 'x', sizeof(buf));
        bd_badge_kind k = bd_badge_of(buf, sizeof(buf), &vs, seq);
        /* Two removal verdicts that disagree, given within one second: which one the badge
         * names depends on the order of their files, not on any rule; both wait. */
        if (seq == 8 && k == BD_BADGE_AWAITING && strcmp(buf, "rubric_bug 1/2") == 0)
            continue;
        if (k != want[seq - 1].kind || strcmp(buf, want[seq - 1].text) != 0)
            fprintf(stderr, "record %llu: %d '%s'\n", (unsigned long long)seq, (int)k, buf);
        assert_int_equal(k, want[seq - 1].kind);
        assert_string_equal(buf, want[seq - 1].text);
    }
    /* No set, no room, no record, a record past the chain: none, and buf emptied. */
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(bd_badge_of(buf, sizeof(buf), NULL, 2), BD_BADGE_NONE);
    assert_string_equal(buf, "");
    assert_int_equal(bd_badge_of(buf, 0, &vs, 2), BD_BADGE_NONE);
    assert_int_equal(bd_badge_of(buf, sizeof(buf), &vs, 0), BD_BADGE_NONE);
    assert_int_equal(bd_badge_of(buf, sizeof(buf), &vs, 99), BD_BADGE_NONE);
    /* A short buffer is cut, never overrun. */
    char small[5];
    assert_int_equal(bd_badge_of(small, sizeof(small), &vs, 3), BD_BADGE_AWAITING);
    assert_string_equal(small, "rubr");

    bd_verdict_set_release(&vs);
    bd_prov_ctx_free(ctx);
    bd_bench_free(b);
    fx_cleanup(&K, T);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_badge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
