/* This user's signature memo (sigmemo.h): an entry is believed only when this user's
 * secret key authenticated it, only for the exact (context, message, signature), and only
 * while the signing key has not expired; a memo nobody else may write is required. The
 * same holds for the case verdicts kept beside the signatures, each for the exact bytes
 * and build it was reached on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blake3.h>

#include "sigmemo.h"

#define REC_LEN 176

typedef struct fixture {
    char dir[64];
    char path[128];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    strcpy(f->dir, "/tmp/bd-sigmemo-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof(f->path), "%s/m", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static const uint8_t ctx_a[32] = {1}, ctx_b[32] = {2};

static bd_sigmemo_entry good_entry(int64_t expires)
{
    bd_sigmemo_entry e = {.verdict = 1, .expires = expires};
    strcpy(e.fingerprint, "0123456789ABCDEF0123456789ABCDEF01234567");
    strcpy(e.key_id, "89ABCDEF0123456789ABCDEF0123456789ABCDEF");
    return e;
}

static void remembered_across_opens_for_the_same_bytes_only(void **state)
{
    fixture *f = *state;
    uint8_t k[32], other[32], moved[32];
    bd_sigmemo_key(k, ctx_a, "msg", 3, "sig", 3);
    bd_sigmemo_key(other, ctx_a, "msG", 3, "sig", 3);
    bd_sigmemo_key(moved, ctx_b, "msg", 3, "sig", 3);
    assert_memory_not_equal(k, other, 32);
    assert_memory_not_equal(k, moved, 32);
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_sigmemo_entry e = good_entry(0), got;
    bd_sigmemo_put(m, k, &e);
    bd_sigmemo_close(m);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_sigmemo_get(m, k, time(NULL), &got));
    assert_string_equal(got.fingerprint, e.fingerprint);
    assert_string_equal(got.key_id, e.key_id);
    assert_int_equal(got.verdict, 1);
    assert_false(bd_sigmemo_get(m, other, time(NULL), &got));
    assert_false(bd_sigmemo_get(m, moved, time(NULL), &got));
    bd_sigmemo_close(m);
    /* The key and the entries are this user's alone. */
    char p[200];
    struct stat st;
    snprintf(p, sizeof(p), "%s/key", f->path);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 32);
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
}

/* The memo of the fixture, opened, with `e` remembered for ("m", "s") under key `k`. */
static bd_sigmemo *memo_with(const fixture *f, uint8_t k[32], const bd_sigmemo_entry *e)
{
    bd_sigmemo_key(k, ctx_a, "m", 1, "s", 1);
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_sigmemo_put(m, k, e);
    return m;
}

static void an_expired_key_is_asked_again(void **state)
{
    uint8_t k[32];
    bd_sigmemo_entry e = good_entry(1000), got;
    bd_sigmemo *m = memo_with(*state, k, &e);
    assert_true(bd_sigmemo_get(m, k, 999, &got));
    assert_false(bd_sigmemo_get(m, k, 1000, &got));
    bd_sigmemo_close(m);
}

/* Entries written without this user's secret, altered, or torn, are not believed. */
static void forged_altered_and_torn_entries_are_ignored(void **state)
{
    fixture *f = *state;
    uint8_t k1[32], k2[32];
    bd_sigmemo_key(k1, ctx_a, "one", 3, "s", 1);
    bd_sigmemo_key(k2, ctx_a, "two", 3, "s", 1);
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_sigmemo_entry e = good_entry(0), got;
    bd_sigmemo_put(m, k1, &e);
    bd_sigmemo_put(m, k2, &e);
    bd_sigmemo_close(m);
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    int fd = open(ent, O_RDWR);
    assert_true(fd >= 0);
    /* Record 1's verdict flipped (its tag no longer holds); a torn half record after. */
    uint8_t b = 3;
    assert_int_equal(pwrite(fd, &b, 1, 40), 1);
    uint8_t junk[REC_LEN / 2];
    memset(junk, 'x', sizeof(junk));
    assert_int_equal(pwrite(fd, junk, sizeof(junk), 2 * REC_LEN), (ssize_t)sizeof(junk));
    close(fd);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_sigmemo_get(m, k1, time(NULL), &got));
    assert_true(bd_sigmemo_get(m, k2, time(NULL), &got));
    /* A new entry after the torn tail is read back in step. */
    uint8_t k3[32];
    bd_sigmemo_key(k3, ctx_a, "three", 5, "s", 1);
    bd_sigmemo_put(m, k3, &e);
    bd_sigmemo_close(m);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_sigmemo_get(m, k3, time(NULL), &got));
    bd_sigmemo_close(m);
    /* Another secret (another user, or a key replaced): nothing of the old file holds. */
    char key[200];
    snprintf(key, sizeof(key), "%s/key", f->path);
    assert_int_equal(unlink(key), 0);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_sigmemo_get(m, k2, time(NULL), &got));
    assert_false(bd_sigmemo_get(m, k3, time(NULL), &got));
    bd_sigmemo_close(m);
}

/* The same key remembered twice: the newer entry holds. A newer record whose tag does not
 * hold (a forged copy with another verdict) hides nothing: the genuine one still holds. */
static void the_newest_genuine_entry_holds(void **state)
{
    fixture *f = *state;
    uint8_t k[32];
    bd_sigmemo_entry e = good_entry(0), got;
    bd_sigmemo *m = memo_with(f, k, &e);
    e.verdict = 2;
    bd_sigmemo_put(m, k, &e);
    assert_true(bd_sigmemo_get(m, k, time(NULL), &got));
    assert_int_equal(got.verdict, 2);
    bd_sigmemo_close(m);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_sigmemo_get(m, k, time(NULL), &got));
    assert_int_equal(got.verdict, 2);
    bd_sigmemo_close(m);
    /* A copy of the newest record with its verdict changed, appended after it. */
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    int fd = open(ent, O_RDWR | O_APPEND);
    assert_true(fd >= 0);
    uint8_t rec[REC_LEN];
    assert_int_equal(pread(fd, rec, REC_LEN, REC_LEN), REC_LEN);
    rec[40] = 5;
    assert_int_equal(write(fd, rec, REC_LEN), REC_LEN);
    close(fd);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_sigmemo_get(m, k, time(NULL), &got));
    assert_int_equal(got.verdict, 2);
    bd_sigmemo_close(m);
}

/* Thousands of entries (the index grows while they are added, and is sized once when they
 * are read back): every one is found, and nothing else. */
static void many_entries_are_all_found(void **state)
{
    fixture *f = *state;
    enum { N = 3000 };
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_sigmemo_entry e = good_entry(0), got;
    char msg[32];
    uint8_t k[32];
    for (int i = 0; i < N; i++) {
        int n = snprintf(msg, sizeof(msg), "message %d", i);
        bd_sigmemo_key(k, ctx_a, msg, (size_t)n, "s", 1);
        e.verdict = i % 7;
        bd_sigmemo_put(m, k, &e);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < N + 100; i++) {
            int n = snprintf(msg, sizeof(msg), "message %d", i);
            bd_sigmemo_key(k, ctx_a, msg, (size_t)n, "s", 1);
            bool hit = bd_sigmemo_get(m, k, time(NULL), &got);
            assert_int_equal(hit, i < N);
            if (hit)
                assert_int_equal(got.verdict, i % 7);
        }
        bd_sigmemo_close(m);
        m = bd_sigmemo_open_at(f->path);
    }
    bd_sigmemo_close(m);
}

/* A memo another user could write is not used at all. */
static void a_memo_others_can_write_is_not_used(void **state)
{
    fixture *f = *state;
    uint8_t k[32];
    bd_sigmemo_entry e = good_entry(0), got;
    bd_sigmemo *m = memo_with(f, k, &e);
    bd_sigmemo_close(m);
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    assert_int_equal(chmod(ent, 0666), 0);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_sigmemo_get(m, k, time(NULL), &got));
    bd_sigmemo_close(m);
    assert_int_equal(chmod(ent, 0600), 0);
    assert_int_equal(chmod(f->path, 0777), 0);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_sigmemo_get(m, k, time(NULL), &got));
    bd_sigmemo_close(m);
}

/* ---- case verdicts (docs/provenance.md#the-case-memo) ------------------------------- */

static const uint8_t build_a[32] = {7}, build_b[32] = {8};

static bd_casememo_subject case_subject(void)
{
    static const char prov[] = "schema_version: 2\nauthor: {}\n";
    return (bd_casememo_subject){ctx_a,       build_a, "tc", "case-1",        "blake3:aa",
                                 "blake3:aa", 1,       prov, sizeof(prov) - 1};
}

static bd_casememo_entry signed_case(int64_t expires)
{
    bd_casememo_entry e = {.status = 2, .author = true, .reviewer = true, .expires = expires};
    strcpy(e.author_fpr, "0123456789ABCDEF0123456789ABCDEF01234567");
    strcpy(e.reviewer_fpr, "89ABCDEF0123456789ABCDEF0123456789ABCDEF");
    return e;
}

/* Everything a case's verdict depends on is in its key: another value of any one part is
 * another key. */
static void every_part_of_a_case_is_in_its_key(void **state)
{
    (void)state;
    bd_casememo_subject s = case_subject();
    uint8_t base[32], k[32];
    bd_casememo_key(base, &s);
    bd_casememo_key(k, &s);
    assert_memory_equal(base, k, 32);
    for (int part = 0; part < 10; part++) {
        bd_casememo_subject t = case_subject();
        switch (part) {
        case 0:
            t.context = ctx_b;
            break;
        case 1:
            t.build = build_b;
            break;
        case 2:
            t.task_class = "tc2";
            break;
        case 3:
            t.case_id = "case-2";
            break;
        case 4:
            t.digest = "blake3:ab";
            break;
        case 5:
            t.pinned = "blake3:ab";
            break;
        case 6:
            t.sut_kind = 2;
            break;
        case 7:
            t.prov_len--;
            break; /* one byte less of provenance.yaml */
        case 8:
            t.prov = NULL;
            t.prov_len = 0;
            break; /* no provenance.yaml */
        case 9:
            t.task_class = "tccase-1";
            t.case_id = "";
            break; /* parts run together */
        }
        bd_casememo_key(k, &t);
        assert_memory_not_equal(base, k, 32);
    }
    /* An empty provenance.yaml is not an absent one. */
    bd_casememo_subject empty = case_subject(), none = case_subject();
    empty.prov_len = 0;
    none.prov = NULL;
    none.prov_len = 0;
    uint8_t ke[32], kn[32];
    bd_casememo_key(ke, &empty);
    bd_casememo_key(kn, &none);
    assert_memory_not_equal(ke, kn, 32);
}

static void a_case_verdict_is_remembered_until_a_key_expires(void **state)
{
    fixture *f = *state;
    bd_casememo_subject s = case_subject();
    uint8_t k[32];
    bd_casememo_key(k, &s);
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_casememo_entry e = signed_case(5000), got;
    bd_casememo_put(m, k, &e);
    bd_sigmemo_close(m);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_casememo_get(m, k, 4999, &got));
    assert_int_equal(got.status, 2);
    assert_true(got.author && got.reviewer);
    assert_string_equal(got.author_fpr, e.author_fpr);
    assert_string_equal(got.reviewer_fpr, e.reviewer_fpr);
    assert_int_equal(got.expires, 5000);
    assert_false(bd_casememo_get(m, k, 5000, &got));
    /* A draft: no block, no fingerprint, never expires. */
    s.case_id = "case-draft";
    uint8_t kd[32];
    bd_casememo_key(kd, &s);
    bd_casememo_entry d = {.status = 0};
    bd_casememo_put(m, kd, &d);
    assert_true(bd_casememo_get(m, kd, time(NULL), &got));
    assert_int_equal(got.status, 0);
    assert_false(got.author || got.reviewer);
    assert_string_equal(got.author_fpr, "");
    bd_sigmemo_close(m);
}

/* A case record and a signature record never stand for each other, even under the same
 * key bytes; an altered case record is not believed, and neither is one whose tag holds
 * but whose fields no passing case has. */
static void case_records_are_their_own_kind_and_authenticated(void **state)
{
    fixture *f = *state;
    uint8_t k[32];
    bd_sigmemo_key(k, ctx_a, "m", 1, "s", 1);
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_sigmemo_entry se = good_entry(0), sgot;
    bd_casememo_entry got;
    bd_sigmemo_put(m, k, &se);
    assert_false(bd_casememo_get(m, k, time(NULL), &got));
    bd_casememo_entry ce = signed_case(0);
    uint8_t k2[32];
    bd_sigmemo_key(k2, ctx_a, "m2", 2, "s", 1);
    bd_casememo_put(m, k2, &ce);
    assert_false(bd_sigmemo_get(m, k2, time(NULL), &sgot));
    assert_true(bd_casememo_get(m, k2, time(NULL), &got));
    bd_sigmemo_close(m);
    /* The case record (the second) with its status changed: its tag no longer holds. */
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    int fd = open(ent, O_RDWR);
    assert_true(fd >= 0);
    uint8_t rec[REC_LEN];
    assert_int_equal(pread(fd, rec, REC_LEN, REC_LEN), REC_LEN);
    assert_memory_equal(rec, "bdcm0001", 8);
    uint8_t status = 1;
    assert_int_equal(pwrite(fd, &status, 1, REC_LEN + 40), 1);
    close(fd);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_casememo_get(m, k2, time(NULL), &got));
    assert_true(bd_sigmemo_get(m, k, time(NULL), &sgot)); /* the other record still holds */
    bd_sigmemo_close(m);
    /* Tagged with the secret itself, but no passing case has it: status 3 (bad), or a
     * reviewer block without a fingerprint. Neither is believed. */
    char kp[200];
    snprintf(kp, sizeof(kp), "%s/key", f->path);
    uint8_t secret[32];
    fd = open(kp, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, secret, 32), 32);
    close(fd);
    for (int bad = 0; bad < 2; bad++) {
        uint8_t kb[32];
        bd_sigmemo_key(kb, ctx_a, bad ? "b1" : "b0", 2, "s", 1);
        memset(rec, 0, sizeof(rec));
        memcpy(rec, "bdcm0001", 8);
        memcpy(rec + 8, kb, 32);
        rec[40] = bad ? 2 : 3;
        rec[41] = 1;
        memcpy(rec + 56, signed_case(0).author_fpr, 40);
        rec[42] = (uint8_t)bad; /* bad 1: a reviewer, with zeros for a fingerprint */
        blake3_hasher h;
        blake3_hasher_init_keyed(&h, secret);
        blake3_hasher_update(&h, rec, 144);
        blake3_hasher_finalize(&h, rec + 144, 32);
        fd = open(ent, O_WRONLY | O_APPEND);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, rec, REC_LEN), REC_LEN);
        close(fd);
        m = bd_sigmemo_open_at(f->path);
        assert_false(bd_casememo_get(m, kb, time(NULL), &got));
        bd_sigmemo_close(m);
    }
    /* The same record well formed is believed: the tag above was made right. */
    uint8_t kg[32];
    bd_sigmemo_key(kg, ctx_a, "g", 1, "s", 1);
    memcpy(rec + 8, kg, 32);
    rec[42] = 0;
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, secret);
    blake3_hasher_update(&h, rec, 144);
    blake3_hasher_finalize(&h, rec + 144, 32);
    fd = open(ent, O_WRONLY | O_APPEND);
    assert_int_equal(write(fd, rec, REC_LEN), REC_LEN);
    close(fd);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_casememo_get(m, kg, time(NULL), &got));
    assert_int_equal(got.status, 2);
    assert_true(got.author && !got.reviewer);
    bd_sigmemo_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(remembered_across_opens_for_the_same_bytes_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_expired_key_is_asked_again, setup, teardown),
        cmocka_unit_test_setup_teardown(forged_altered_and_torn_entries_are_ignored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_memo_others_can_write_is_not_used, setup, teardown),
        cmocka_unit_test_setup_teardown(the_newest_genuine_entry_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(many_entries_are_all_found, setup, teardown),
        cmocka_unit_test(every_part_of_a_case_is_in_its_key),
        cmocka_unit_test_setup_teardown(a_case_verdict_is_remembered_until_a_key_expires, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(case_records_are_their_own_kind_and_authenticated, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
