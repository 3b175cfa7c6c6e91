/* This user's signature memo (sigmemo.h): an entry is believed only when this user's
 * secret key authenticated it, only for the exact (context, message, signature), and only
 * while the signing key has not expired; a memo nobody else may write is required. The
 * same holds for the case verdicts kept beside the signatures, each for the exact bytes
 * and build it was reached on, and for an unchanged case's stamp entry and shape, which
 * never expire and whose shape is returned only when all of its parts agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
    assert_memory_equal(rec, "bdcm0002", 8);
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
        memcpy(rec, "bdcm0002", 8);
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

/* ---- unchanged cases: stamp entries and shapes (docs/provenance.md#unchanged-cases) -- */

static const uint8_t stamps_a[32] = {0x51}, stamps_b[32] = {0x52};

static bd_stampmemo_subject stamp_subject(void)
{
    return (bd_stampmemo_subject){ctx_a, build_a, "tc", "case-1", "blake3:aa", 1, stamps_a};
}

static bd_stampmemo_entry stamp_entry(bool cassette, uint8_t seed)
{
    bd_stampmemo_entry e = {.cassette = cassette};
    for (int i = 0; i < 32; i++)
        e.case_key[i] = (uint8_t)(seed + 3 * i);
    if (cassette)
        for (int i = 0; i < 64; i++)
            e.cassette_hex[i] = "0123456789abcdef"[(seed + i) % 16];
    return e;
}

static void assert_stamp_entry_equal(const bd_stampmemo_entry *got, const bd_stampmemo_entry *want)
{
    assert_memory_equal(got->case_key, want->case_key, 32);
    assert_int_equal(got->cassette, want->cassette);
    assert_string_equal(got->cassette_hex, want->cassette ? want->cassette_hex : "");
}

/* The memo's secret, as this user's records are tagged with it. */
static void read_secret(const fixture *f, uint8_t secret[32])
{
    char kp[200];
    snprintf(kp, sizeof(kp), "%s/key", f->path);
    int fd = open(kp, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, secret, 32), 32);
    close(fd);
}

/* `rec` appended to the entries file as it is. */
static void append_raw(const fixture *f, const uint8_t rec[REC_LEN])
{
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    int fd = open(ent, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, rec, REC_LEN), REC_LEN);
    close(fd);
}

/* `rec` tagged with `secret` and appended to the entries file, as the memo writes one. */
static void append_tagged(const fixture *f, const uint8_t secret[32], uint8_t rec[REC_LEN])
{
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, secret);
    blake3_hasher_update(&h, rec, 144);
    blake3_hasher_finalize(&h, rec + 144, 32);
    append_raw(f, rec);
}

/* Record `i` of the entries file, with byte `at` xor-ed with `mask` (0: left as it is). */
static void alter_record(const fixture *f, size_t i, size_t at, uint8_t mask, uint8_t rec[REC_LEN])
{
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    int fd = open(ent, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, rec, REC_LEN, (off_t)(i * REC_LEN)), REC_LEN);
    uint8_t b = rec[at] ^ mask;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)(i * REC_LEN + at)), 1);
    close(fd);
}

static off_t entries_size(const fixture *f)
{
    char ent[200];
    struct stat st;
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    if (stat(ent, &st) != 0)
        return 0;
    return st.st_size;
}

/* Records are believed at once and written in batches: by bd_sigmemo_flush, by close, and
 * whenever 256 are waiting, each batch whole records only. */
static void puts_are_written_in_batches(void **state)
{
    fixture *f = *state;
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    uint8_t key[32] = {0};
    bd_sigmemo_entry e = good_entry(0), got;
    for (int i = 0; i < 10; i++) {
        key[0] = (uint8_t)i;
        bd_sigmemo_put(m, key, &e);
        assert_true(bd_sigmemo_get(m, key, time(NULL), &got));
    }
    assert_int_equal(entries_size(f), 0);
    bd_sigmemo_flush(m);
    assert_int_equal(entries_size(f), 10 * REC_LEN);
    bd_sigmemo_flush(m); /* nothing waiting: nothing written */
    assert_int_equal(entries_size(f), 10 * REC_LEN);
    for (int i = 0; i < 256; i++) {
        key[0] = (uint8_t)i;
        key[1] = 1;
        bd_sigmemo_put(m, key, &e);
    }
    assert_int_equal(entries_size(f), (10 + 256) * REC_LEN);
    key[1] = 2;
    bd_sigmemo_put(m, key, &e);
    assert_int_equal(entries_size(f), (10 + 256) * REC_LEN);
    bd_sigmemo_close(m);
    assert_int_equal(entries_size(f), (10 + 256 + 1) * REC_LEN);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_sigmemo_get(m, key, time(NULL), &got));
    bd_sigmemo_close(m);
}

/* A memo file full (256 MB) starts over when the next batch does not fit: with the records
 * this process put, not from nothing, so the check that filled it leaves a warm memo. */
static void build_of(uint8_t out[32], uint8_t which);
static void put_cases(bd_sigmemo *m, int first, int n);
static int found_cases(bd_sigmemo *m, int first, int n);

/* This fixture's memo, opened for `build`. */
static bd_sigmemo *open_as(const fixture *f, const uint8_t build[32])
{
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_sigmemo_set_build(m, build);
    return m;
}

/* put_cases(first, n) into the fixture's memo opened for `build`, then closed. */
static void put_as(const fixture *f, const uint8_t build[32], int first, int n)
{
    bd_sigmemo *m = open_as(f, build);
    put_cases(m, first, n);
    bd_sigmemo_close(m);
}

/* How many of `first`..`first`+n-1's case verdicts and stamp entries the fixture's memo,
 * opened for `build`, finds (found_cases). */
static int found_as(const fixture *f, const uint8_t build[32], int first, int n)
{
    bd_sigmemo *m = open_as(f, build);
    int found = found_cases(m, first, n);
    bd_sigmemo_close(m);
    return found;
}

/* The entries file filled up to `room` records short of 256 MB with copies of `rec`,
 * after what it holds. */
static void fill_up(const fixture *f, const uint8_t rec[REC_LEN], size_t room)
{
    enum { CHUNK = 4096 };
    static uint8_t buf[CHUNK * REC_LEN];
    for (size_t i = 0; i < CHUNK; i++)
        memcpy(buf + i * REC_LEN, rec, REC_LEN);
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    int fd = open(ent, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    size_t want = (256u << 20) / REC_LEN - room, have = (size_t)entries_size(f) / REC_LEN;
    while (have < want) {
        size_t n = want - have < CHUNK ? want - have : CHUNK;
        assert_int_equal(write(fd, buf, n * REC_LEN), (ssize_t)(n * REC_LEN));
        have += n;
    }
    close(fd);
}

/* A full memo whose records all stay when it is rewritten (here a newer layout's, kept as
 * they are) starts over, with what this process put. */
static void a_full_memo_starts_over_with_what_this_process_put(void **state)
{
    fixture *f = *state;
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    uint8_t key[32] = {0}, newer[REC_LEN] = "bdzz0009";
    bd_sigmemo_entry e = good_entry(0), got;
    bd_sigmemo_put(m, key, &e); /* makes the directory, the secret and the file */
    bd_sigmemo_close(m);
    fill_up(f, newer, 300); /* room for 300 more records */
    m = bd_sigmemo_open_at(f->path);
    for (int i = 0; i < 600; i++) {
        key[0] = (uint8_t)i;
        key[1] = (uint8_t)(i >> 8);
        key[2] = 1;
        bd_sigmemo_put(m, key, &e);
    }
    /* The first batch of 256 fitted; the second did not: the file starts over with both. */
    assert_int_equal(entries_size(f), 512 * REC_LEN);
    bd_sigmemo_close(m);
    assert_int_equal(entries_size(f), 600 * REC_LEN);
    m = bd_sigmemo_open_at(f->path);
    for (int i = 0; i < 600; i++) {
        key[0] = (uint8_t)i;
        key[1] = (uint8_t)(i >> 8);
        if (!bd_sigmemo_get(m, key, time(NULL), &got))
            fail_msg("record %d of this process lost when the memo started over", i);
    }
    bd_sigmemo_close(m);
}

/* A full memo is first rewritten without older builds' records and whatever is not
 * benchdesk's: when that makes room, nothing of the current builds is lost. */
static void a_full_memo_drops_older_builds_before_starting_over(void **state)
{
    fixture *f = *state;
    uint8_t a[32], b[32], c[32], key[32] = {0}, older[REC_LEN] = "bdcm0002", junk[REC_LEN];
    build_of(a, 'A');
    build_of(b, 'B');
    build_of(c, 'C');
    memcpy(older + 136, a, 8); /* A's: not authentic, and dropped whatever it holds */
    memset(junk, 0x11, sizeof(junk));
    bd_sigmemo_entry e = good_entry(0), got;
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_sigmemo_put(m, key, &e);
    bd_sigmemo_close(m);
    fill_up(f, older, 2000);
    fill_up(f, junk, 1000);
    put_as(f, b, 1000, 100); /* B's 200: the build that wrote last, for C */
    assert_true(entries_size(f) > (off_t)(256u << 20) - 1000 * REC_LEN);
    m = open_as(f, c);
    for (int i = 1; i <= 1200; i++) {
        key[0] = (uint8_t)i;
        key[1] = (uint8_t)(i >> 8);
        bd_sigmemo_put(m, key, &e);
    }
    bd_sigmemo_close(m);
    /* The first signature, B's 200 and C's 1,200: nothing else. */
    assert_int_equal(entries_size(f), (off_t)(1 + 200 + 1200) * REC_LEN);
    m = open_as(f, c);
    for (int i = 0; i <= 1200; i++) {
        key[0] = (uint8_t)i;
        key[1] = (uint8_t)(i >> 8);
        if (!bd_sigmemo_get(m, key, time(NULL), &got))
            fail_msg("signature %d lost when the full memo was rewritten", i);
    }
    bd_sigmemo_close(m);
    assert_int_equal(found_as(f, b, 1000, 100), 200);
}

static void a_stamp_entry_is_remembered_across_opens(void **state)
{
    fixture *f = *state;
    bd_stampmemo_subject s = stamp_subject();
    uint8_t kc[32], kn[32];
    bd_stampmemo_key(kc, &s);
    s.case_id = "case-2";
    bd_stampmemo_key(kn, &s);
    bd_stampmemo_entry with = stamp_entry(true, 9), without = stamp_entry(false, 77), got;
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    assert_false(bd_stampmemo_get(m, kc, &got));
    bd_stampmemo_put(m, kc, &with);
    bd_stampmemo_put(m, kn, &without);
    for (int round = 0; round < 2; round++) { /* as put, then as read back from the file */
        memset(&got, 0x7f, sizeof(got));
        assert_true(bd_stampmemo_get(m, kc, &got));
        assert_stamp_entry_equal(&got, &with);
        memset(&got, 0x7f, sizeof(got));
        assert_true(bd_stampmemo_get(m, kn, &got));
        assert_stamp_entry_equal(&got, &without);
        bd_sigmemo_close(m);
        m = bd_sigmemo_open_at(f->path);
    }
    /* A stamp record stands for no signature and no case verdict, nor they for it. */
    bd_sigmemo_entry sgot;
    bd_casememo_entry cgot;
    assert_false(bd_sigmemo_get(m, kc, time(NULL), &sgot));
    assert_false(bd_casememo_get(m, kc, time(NULL), &cgot));
    uint8_t kcase[32];
    bd_casememo_subject cs = case_subject();
    bd_casememo_key(kcase, &cs);
    bd_casememo_entry ce = signed_case(0);
    bd_casememo_put(m, kcase, &ce);
    assert_false(bd_stampmemo_get(m, kcase, &got));
    bd_sigmemo_close(m);
    /* Two stamp records and a case record: one record each, nothing more. */
    assert_int_equal(entries_size(f), 3 * REC_LEN);
}

/* Everything an unchanged case's entry depends on is in its key. */
static void every_part_of_a_stamp_subject_is_in_its_key(void **state)
{
    (void)state;
    bd_stampmemo_subject s = stamp_subject();
    uint8_t base[32], k[32];
    bd_stampmemo_key(base, &s);
    bd_stampmemo_key(k, &s);
    assert_memory_equal(base, k, 32);
    uint8_t stamps_last[32] = {0x51};
    stamps_last[31] = 1;
    for (int part = 0; part < 9; part++) {
        bd_stampmemo_subject t = stamp_subject();
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
            t.pinned = "blake3:ab";
            break;
        case 5:
            t.sut_kind = 2;
            break;
        case 6:
            t.stamps = stamps_b;
            break;
        case 7:
            t.stamps = stamps_last; /* the last byte of the stamps counts too */
            break;
        case 8:
            t.task_class = "tccase-1";
            t.case_id = "";
            break; /* parts run together */
        }
        bd_stampmemo_key(k, &t);
        if (memcmp(base, k, 32) == 0)
            fail_msg("part %d of the stamp subject is not in its key", part);
    }
    /* Not the case memo's key of the same names either. */
    bd_casememo_subject cs = case_subject();
    bd_casememo_key(k, &cs);
    assert_memory_not_equal(base, k, 32);
}

static bd_shapememo_subject shape_subject(void)
{
    return (bd_shapememo_subject){0x801, 123456789, "tc", "case-1"};
}

/* A shape of `len` bytes, NULs and all, different for each length. */
static void shape_bytes(char *out, size_t len)
{
    for (size_t i = 0; i < len; i++)
        out[i] = (char)(i % 13 == 12 ? 0 : 'a' + (i * 7 + len) % 26);
}

static void shapes_of_1_to_800_bytes_round_trip(void **state)
{
    fixture *f = *state;
    static const size_t lens[] = {1, 100, 101, 250, 800};
    enum { N = sizeof(lens) / sizeof(lens[0]) };
    char want[801], got[1024];
    char ids[N][16];
    size_t len;
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    for (size_t i = 0; i < N; i++) {
        bd_shapememo_subject s = shape_subject();
        snprintf(ids[i], sizeof(ids[i]), "case-%zu", lens[i]);
        s.case_id = ids[i];
        shape_bytes(want, lens[i]);
        bd_shapememo_put(m, &s, want, lens[i]);
    }
    /* 801 bytes (nine parts) and 0 bytes: nothing is written. */
    bd_sigmemo_flush(m);
    off_t before = entries_size(f);
    assert_int_equal(before, (1 + 1 + 2 + 3 + 8) * REC_LEN);
    bd_shapememo_subject big = shape_subject(), none = shape_subject();
    big.case_id = "case-801";
    none.case_id = "case-0";
    shape_bytes(want, 801);
    bd_shapememo_put(m, &big, want, 801);
    bd_shapememo_put(m, &none, want, 0);
    bd_sigmemo_flush(m);
    assert_int_equal(entries_size(f), before);
    for (int round = 0; round < 2; round++) { /* as put, then as read back from the file */
        for (size_t i = 0; i < N; i++) {
            bd_shapememo_subject s = shape_subject();
            s.case_id = ids[i];
            shape_bytes(want, lens[i]);
            memset(got, 0x7f, sizeof(got));
            len = 0;
            if (!bd_shapememo_get(m, &s, got, 800, &len))
                fail_msg("a shape of %zu bytes is not found (round %d)", lens[i], round);
            assert_int_equal(len, lens[i]);
            assert_memory_equal(got, want, lens[i]);
            /* Exactly its length is room enough; a byte less is not. */
            assert_true(bd_shapememo_get(m, &s, got, lens[i], &len));
            assert_false(bd_shapememo_get(m, &s, got, lens[i] - 1, &len));
        }
        assert_false(bd_shapememo_get(m, &big, got, sizeof(got), &len));
        assert_false(bd_shapememo_get(m, &none, got, sizeof(got), &len));
        bd_sigmemo_close(m);
        m = bd_sigmemo_open_at(f->path);
    }
    /* A newer, shorter shape for the same case replaces the longer one. */
    bd_shapememo_subject s = shape_subject();
    s.case_id = ids[3];
    shape_bytes(want, 150);
    bd_shapememo_put(m, &s, want, 150);
    assert_true(bd_shapememo_get(m, &s, got, sizeof(got), &len));
    assert_int_equal(len, 150);
    assert_memory_equal(got, want, 150);
    bd_sigmemo_close(m);
}

static void a_shape_is_found_for_its_own_case_directory_only(void **state)
{
    fixture *f = *state;
    char want[250], got[800];
    size_t len;
    shape_bytes(want, sizeof(want));
    bd_shapememo_subject s = shape_subject();
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_shapememo_put(m, &s, want, sizeof(want));
    assert_true(bd_shapememo_get(m, &s, got, sizeof(got), &len));
    for (int part = 0; part < 5; part++) {
        bd_shapememo_subject t = shape_subject();
        switch (part) {
        case 0:
            t.dir_dev++;
            break;
        case 1:
            t.dir_ino++;
            break;
        case 2:
            t.task_class = "tc2";
            break;
        case 3:
            t.case_id = "case-2";
            break;
        case 4:
            t.task_class = "tccase-1";
            t.case_id = "";
            break; /* parts run together */
        }
        if (bd_shapememo_get(m, &t, got, sizeof(got), &len))
            fail_msg("a shape is found under another subject (part %d)", part);
    }
    /* Each part has its own key. */
    uint8_t k0[32], k1[32];
    bd_shapememo_key(k0, &s, 0);
    bd_shapememo_key(k1, &s, 1);
    assert_memory_not_equal(k0, k1, 32);
    bd_sigmemo_close(m);
}

/* A stamp or shape record altered in the file (its tag no longer holds) is not believed;
 * the records beside it still are. */
static void altered_stamp_and_shape_records_are_not_believed(void **state)
{
    fixture *f = *state;
    bd_stampmemo_subject ss = stamp_subject();
    uint8_t k[32];
    bd_stampmemo_key(k, &ss);
    bd_stampmemo_entry e = stamp_entry(true, 1), got;
    bd_shapememo_subject a = shape_subject(), b = shape_subject();
    b.case_id = "case-b";
    char want[150], out[800];
    size_t len;
    shape_bytes(want, sizeof(want));
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_stampmemo_put(m, k, &e);                  /* record 0 */
    bd_shapememo_put(m, &a, want, sizeof(want)); /* records 1, 2 */
    bd_shapememo_put(m, &b, want, sizeof(want)); /* records 3, 4 */
    bd_sigmemo_close(m);
    uint8_t rec[REC_LEN];
    /* One bit of the stamp record's case key; one byte of a's second part. */
    alter_record(f, 0, 50, 0x01, rec);
    assert_memory_equal(rec, "bdcu0002", 8);
    alter_record(f, 2, 60, 0x20, rec);
    assert_memory_equal(rec, "bdcs0001", 8);
    assert_int_equal(rec[40], 1); /* part 1 of 2 */
    assert_int_equal(rec[41], 2);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_stampmemo_get(m, k, &got));
    assert_false(bd_shapememo_get(m, &a, out, sizeof(out), &len));
    assert_true(bd_shapememo_get(m, &b, out, sizeof(out), &len));
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(out, want, sizeof(want));
    bd_sigmemo_close(m);
    /* Flipped back, both hold again: it was the altered byte that was not believed. */
    alter_record(f, 0, 50, 0x01, rec);
    alter_record(f, 2, 60, 0x20, rec);
    m = bd_sigmemo_open_at(f->path);
    assert_true(bd_stampmemo_get(m, k, &got));
    assert_true(bd_shapememo_get(m, &a, out, sizeof(out), &len));
    bd_sigmemo_close(m);
}

/* A shape part as this user's memo would write it: part `part` of `parts`, `len` bytes of
 * `bytes`, under the key of part `key_part` of `s`. */
static void shape_record(uint8_t rec[REC_LEN], const bd_shapememo_subject *s, unsigned key_part,
                         unsigned part, unsigned parts, size_t len, const char *bytes)
{
    memset(rec, 0, REC_LEN);
    memcpy(rec, "bdcs0001", 8);
    bd_shapememo_key(rec + 8, s, key_part);
    rec[40] = (uint8_t)part;
    rec[41] = (uint8_t)parts;
    rec[42] = (uint8_t)(len & 0xff);
    rec[43] = (uint8_t)(len >> 8);
    memcpy(rec + 44, bytes, len);
}

/* Parts, hand-made and tagged with the secret: part `p` of the spec (parts[p] parts, that
 * part's bytes of `all`; 0: not written), for a case of its own. */
static bool shape_from_parts(const fixture *f, const char *id, const unsigned *parts,
                             const size_t *lens, size_t n, const char *all, char *out, size_t *len)
{
    uint8_t secret[32], rec[REC_LEN];
    read_secret(f, secret);
    bd_shapememo_subject s = shape_subject();
    s.case_id = id;
    for (size_t p = 0; p < n; p++) {
        if (!parts[p])
            continue;
        shape_record(rec, &s, (unsigned)p, (unsigned)p, parts[p], lens[p], all + 100 * p);
        append_tagged(f, secret, rec);
    }
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bool found = bd_shapememo_get(m, &s, out, 800, len);
    bd_sigmemo_close(m);
    return found;
}

static void a_shape_missing_a_part_or_disagreeing_on_the_count_is_not_returned(void **state)
{
    fixture *f = *state;
    char all[300], out[800];
    size_t len;
    shape_bytes(all, sizeof(all));
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_shapememo_subject s = shape_subject();
    bd_shapememo_put(m, &s, all, 10); /* the memo made: its key and file */
    bd_sigmemo_close(m);
    static const size_t full[3] = {100, 100, 50};
    /* Made by hand, the three parts agree: returned (the records are made right). */
    static const unsigned agree[3] = {3, 3, 3};
    assert_true(shape_from_parts(f, "agree", agree, full, 3, all, out, &len));
    assert_int_equal(len, 250);
    assert_memory_equal(out, all, 250);
    static const struct {
        const char *id;
        unsigned parts[3];
        const char *why;
    } bad[] = {
        {"no-first", {0, 3, 3}, "the first part missing"},
        {"no-middle", {3, 0, 3}, "the middle part missing"},
        {"no-last", {3, 3, 0}, "the last part missing"},
        {"first-says-2", {2, 3, 3}, "the first part counting two"},
        {"middle-says-2", {3, 2, 3}, "the middle part counting two"},
        {"last-says-4", {3, 3, 4}, "the last part counting four"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (shape_from_parts(f, bad[i].id, bad[i].parts, full, 3, all, out, &len))
            fail_msg("a shape with %s was returned", bad[i].why);
    /* A part filed under another part's key. */
    uint8_t secret[32], rec[REC_LEN];
    read_secret(f, secret);
    bd_shapememo_subject t = shape_subject();
    t.case_id = "misfiled";
    shape_record(rec, &t, 0, 0, 2, 100, all);
    append_tagged(f, secret, rec);
    shape_record(rec, &t, 1, 0, 2, 100, all + 100);
    append_tagged(f, secret, rec);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_shapememo_get(m, &t, out, sizeof(out), &len));
    /* A newer shape torn after its first part (two parts, over an older three): the parts
     * disagree, so neither shape is returned. */
    bd_shapememo_subject u = shape_subject();
    u.case_id = "torn";
    bd_shapememo_put(m, &u, all, 250);
    assert_true(bd_shapememo_get(m, &u, out, sizeof(out), &len));
    bd_sigmemo_close(m);
    shape_record(rec, &u, 0, 0, 2, 100, all + 1);
    append_tagged(f, secret, rec);
    m = bd_sigmemo_open_at(f->path);
    assert_false(bd_shapememo_get(m, &u, out, sizeof(out), &len));
    bd_sigmemo_close(m);
}

/* Stamp and shape records carry no expiry: the bytes where a signature or case record
 * keeps one ([48,56)) are a case key's or a shape's, and even read as a time long past
 * they do not make the record stale. */
static void stamp_and_shape_records_never_expire(void **state)
{
    fixture *f = *state;
    bd_stampmemo_subject ss = stamp_subject();
    uint8_t k[32];
    bd_stampmemo_key(k, &ss);
    bd_stampmemo_entry e = stamp_entry(false, 0), got;
    memset(e.case_key + 8, 0xff, 8); /* record bytes [48,56): -1 */
    char want[120], out[800];
    size_t len;
    shape_bytes(want, sizeof(want));
    memset(want + 4, 0xff, 8); /* record bytes [48,56) of part 0 */
    bd_shapememo_subject s = shape_subject();
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    bd_stampmemo_put(m, k, &e);
    bd_shapememo_put(m, &s, want, sizeof(want));
    /* Beside them, a case verdict that expires: stale at a time far ahead, as the stamp
     * and shape records are not. */
    uint8_t kc[32];
    bd_casememo_subject cs = case_subject();
    bd_casememo_key(kc, &cs);
    bd_casememo_entry ce = signed_case(1);
    bd_casememo_put(m, kc, &ce);
    bd_sigmemo_close(m);
    m = bd_sigmemo_open_at(f->path);
    bd_casememo_entry cgot;
    assert_false(bd_casememo_get(m, kc, INT64_MAX, &cgot));
    assert_true(bd_stampmemo_get(m, k, &got));
    assert_stamp_entry_equal(&got, &e);
    assert_true(bd_shapememo_get(m, &s, out, sizeof(out), &len));
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(out, want, sizeof(want));
    bd_sigmemo_close(m);
}

/* ---- builds (docs/provenance.md#the-memo-file) ----------------------------------------- */

/* A build of the program, told apart by its first byte. */
static void build_of(uint8_t out[32], uint8_t which)
{
    memset(out, 0x5a, 32);
    out[0] = which;
}

/* The key of the i-th case or stamp record of a test: told apart by `kind`, `i`. */
static void nth_key(uint8_t out[32], char kind, int i)
{
    char msg[32];
    int n = snprintf(msg, sizeof(msg), "%c-%d", kind, i);
    bd_sigmemo_key(out, ctx_a, msg, (size_t)n, "s", 1);
}

/* Put `n` case verdicts and `n` stamp entries from `first`, keys nth_key('c'/'t', i). */
static void put_cases(bd_sigmemo *m, int first, int n)
{
    bd_casememo_entry ce = signed_case(0);
    for (int i = first; i < first + n; i++) {
        uint8_t k[32];
        nth_key(k, 'c', i);
        bd_casememo_put(m, k, &ce);
        bd_stampmemo_entry te = stamp_entry(i % 2 == 0, (uint8_t)i);
        nth_key(k, 't', i);
        bd_stampmemo_put(m, k, &te);
    }
}

/* How many of `first`..`first`+n-1's case verdicts and stamp entries `m` finds. */
static int found_cases(bd_sigmemo *m, int first, int n)
{
    int found = 0;
    for (int i = first; i < first + n; i++) {
        uint8_t k[32];
        bd_casememo_entry ce;
        bd_stampmemo_entry te;
        nth_key(k, 'c', i);
        found += bd_casememo_get(m, k, time(NULL), &ce);
        nth_key(k, 't', i);
        found += bd_stampmemo_get(m, k, &te);
    }
    return found;
}

/* The records of the entries file with `magic` (and, when tag_at, build tag `build`'s). */
static size_t count_records(const fixture *f, const char *magic, size_t tag_at,
                            const uint8_t *build)
{
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    FILE *fp = fopen(ent, "rb");
    assert_non_null(fp);
    uint8_t rec[REC_LEN];
    size_t n = 0;
    while (fread(rec, 1, REC_LEN, fp) == REC_LEN)
        n += memcmp(rec, magic, 8) == 0 && (!tag_at || memcmp(rec + tag_at, build, 8) == 0);
    fclose(fp);
    return n;
}

/* Records appended by hand, tagged with this memo's secret: `n` case records of the layout
 * before build tags, and one of a layout no build of this program knows (a newer one's). */
static void append_old_and_newer_layouts(const fixture *f, int n)
{
    uint8_t secret[32], rec[REC_LEN];
    read_secret(f, secret);
    for (int i = 0; i <= n; i++) {
        memset(rec, 0, sizeof(rec));
        memcpy(rec, i < n ? "bdcm0001" : "bdzz0009", 8);
        nth_key(rec + 8, 'o', i);
        rec[40] = 2;
        append_tagged(f, secret, rec);
    }
}

/* Each build reads its own case and stamp records only; signatures and shapes are every
 * build's. A file whose older builds' records are a quarter or more is rewritten on close
 * without them: this build's, the build that wrote last before it, signatures, shapes and
 * a newer layout's record stay; older builds', the old layouts and forged records go. */
/* bd_sigmemo_load reads the file then and there: what it read is believed after the file
 * is gone, and a build set after it changes nothing (docs/provenance.md#the-memo-file). */
static void a_memo_read_ahead_keeps_what_it_read(void **state)
{
    fixture *f = *state;
    uint8_t a[32], b[32];
    build_of(a, 'A');
    build_of(b, 'B');
    put_as(f, a, 0, 20);
    put_as(f, b, 100, 20);

    bd_sigmemo *m = open_as(f, a);
    bd_sigmemo_load(m);
    bd_sigmemo_load(m); /* a second read is nothing */
    char moved[sizeof(f->path) + 16];
    snprintf(moved, sizeof(moved), "%s.moved", f->path);
    assert_int_equal(rename(f->path, moved), 0);
    bd_sigmemo_set_build(m, b); /* too late: the records are A's */
    assert_int_equal(found_cases(m, 0, 20), 40);
    assert_int_equal(found_cases(m, 100, 20), 0);
    bd_sigmemo_close(m);
    assert_int_equal(rename(moved, f->path), 0);

    /* Read ahead or on the first lookup, a build finds the same records. */
    m = open_as(f, b);
    bd_sigmemo_load(m);
    assert_int_equal(found_cases(m, 100, 20), 40);
    assert_int_equal(found_cases(m, 0, 20), 0);
    bd_sigmemo_close(m);
    assert_int_equal(found_as(f, b, 100, 20), 40);
    bd_sigmemo_load(NULL);
}

static void older_builds_records_are_dropped_on_close(void **state)
{
    fixture *f = *state;
    uint8_t a[32], b[32], c[32], sk[32];
    build_of(a, 'A');
    build_of(b, 'B');
    build_of(c, 'C');
    bd_sigmemo_entry se = good_entry(0), sgot;
    bd_shapememo_subject sh = shape_subject();
    char shape[150], out[800];
    size_t len;
    shape_bytes(shape, sizeof(shape));

    bd_sigmemo *m = open_as(f, a);
    put_cases(m, 0, 300);
    bd_sigmemo_key(sk, ctx_a, "msg", 3, "sig", 3);
    bd_sigmemo_put(m, sk, &se);
    bd_shapememo_put(m, &sh, shape, sizeof(shape));
    bd_sigmemo_close(m);

    m = open_as(f, b);
    assert_int_equal(found_cases(m, 0, 300), 0); /* A's: another build's */
    assert_true(bd_sigmemo_get(m, sk, time(NULL), &sgot));
    assert_true(bd_shapememo_get(m, &sh, out, sizeof(out), &len));
    put_cases(m, 1000, 100);
    bd_sigmemo_close(m);
    /* For B, A is the build that wrote last before it: nothing is dropped. */
    assert_int_equal(count_records(f, "bdcm0002", 136, a), 300);
    assert_int_equal(count_records(f, "bdcu0002", 72, a), 300);

    m = open_as(f, a);
    assert_int_equal(found_cases(m, 0, 300), 600);
    assert_int_equal(found_cases(m, 1000, 100), 0);
    bd_sigmemo_close(m);

    /* The layout before build tags, and a newer layout's record; last, a case record of
     * A's whose tag does not hold (torn or forged): it does not make A the build that
     * wrote last. */
    append_old_and_newer_layouts(f, 300);
    uint8_t forged[REC_LEN] = "bdcm0002";
    memcpy(forged + 136, a, 8);
    append_raw(f, forged);
    put_as(f, c, 2000, 10);
    /* For C, B wrote last: A's 601 records and the 300 of the old layout (901 of the
     * 1,105 it read) go. */
    assert_int_equal(count_records(f, "bdcm0002", 136, a), 0);
    assert_int_equal(count_records(f, "bdcu0002", 72, a), 0);
    assert_int_equal(count_records(f, "bdcm0001", 0, NULL), 0);
    assert_int_equal(count_records(f, "bdcm0002", 136, b), 100);
    assert_int_equal(count_records(f, "bdcm0002", 136, c), 10);
    assert_int_equal(count_records(f, "bdzz0009", 0, NULL), 1);
    assert_int_equal(count_records(f, "bdsm0001", 0, NULL), 1);
    assert_int_equal(count_records(f, "bdcs0001", 0, NULL), 2);
    assert_int_equal(entries_size(f), (off_t)(100 * 2 + 10 * 2 + 1 + 1 + 2) * REC_LEN);

    m = open_as(f, b);
    assert_int_equal(found_cases(m, 1000, 100), 200);
    assert_true(bd_sigmemo_get(m, sk, time(NULL), &sgot));
    assert_true(bd_shapememo_get(m, &sh, out, sizeof(out), &len));
    assert_int_equal(len, sizeof(shape));
    bd_sigmemo_close(m);
    assert_int_equal(found_as(f, c, 2000, 10), 20);
}

/* Fewer than COMPACT_MIN (256) older records, or fewer than a quarter of the file, and
 * the file is left as it is; a memo opened without a build reads every build's records
 * and never rewrites. */
static void a_small_or_unknown_share_is_not_rewritten(void **state)
{
    fixture *f = *state;
    uint8_t a[32], b[32], c[32];
    build_of(a, 'A');
    build_of(b, 'B');
    build_of(c, 'C');
    put_as(f, a, 0, 100); /* 200 records */
    put_as(f, b, 1000, 10);
    put_as(f, c, 2000, 10);
    /* A's 200 of 240 are older for C, but fewer than 256: kept. */
    assert_int_equal(count_records(f, "bdcm0002", 136, a), 100);
    /* Without a build: every build's records are read, none dropped. */
    bd_sigmemo *m = bd_sigmemo_open_at(f->path);
    assert_int_equal(found_cases(m, 0, 100), 200);
    assert_int_equal(found_cases(m, 1000, 10), 20);
    bd_sigmemo_close(m);
    assert_int_equal(entries_size(f), (off_t)240 * REC_LEN);

    /* From an empty file: A's 300 records are older for B, but under a quarter of 2,300. */
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    assert_int_equal(unlink(ent), 0);
    put_as(f, a, 0, 150);
    put_as(f, c, 3000, 1000);
    put_as(f, b, 5000, 5);
    assert_int_equal(count_records(f, "bdcm0002", 136, a), 150);
    assert_int_equal(entries_size(f), (off_t)2310 * REC_LEN);
}

/* The rewrite takes the file's lock without waiting: held by another, the file is left as
 * it is (the next close tries again). And records another process appended after this one
 * read the file survive the rewrite: it reads the file again under the lock. */
static void the_rewrite_waits_for_no_lock_and_keeps_later_appends(void **state)
{
    fixture *f = *state;
    uint8_t a[32], b[32], c[32], d[32];
    build_of(a, 'A');
    build_of(b, 'B');
    build_of(c, 'C');
    build_of(d, 'D');
    put_as(f, a, 0, 300);
    put_as(f, b, 1000, 10);

    /* C only reads (nothing to append) and closes while another holds the lock. */
    char ent[200];
    snprintf(ent, sizeof(ent), "%s/entries", f->path);
    int held = open(ent, O_RDONLY);
    assert_true(held >= 0);
    assert_int_equal(flock(held, LOCK_EX), 0);
    assert_int_equal(found_as(f, c, 1000, 10), 0);
    assert_int_equal(count_records(f, "bdcm0002", 136, a), 300);
    close(held);

    /* C reads the file; then D appends (and its own close drops A's); then C's close
     * rewrites from the file as it is now: for C, D wrote last, so D's records — appended
     * after C read the file — stay, and B's go. */
    bd_sigmemo *mc = open_as(f, c);
    assert_int_equal(found_cases(mc, 0, 300), 0); /* loaded now */
    bd_sigmemo *md = open_as(f, d);
    put_cases(md, 4000, 5);
    bd_sigmemo_close(md);
    bd_sigmemo_close(mc);
    assert_int_equal(count_records(f, "bdcm0002", 136, a), 0);
    assert_int_equal(count_records(f, "bdcm0002", 136, b), 0);
    assert_int_equal(count_records(f, "bdcm0002", 136, d), 5);
    assert_int_equal(count_records(f, "bdcu0002", 72, d), 5);
    assert_int_equal(found_as(f, d, 4000, 5), 10);
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
        cmocka_unit_test_setup_teardown(a_stamp_entry_is_remembered_across_opens, setup, teardown),
        cmocka_unit_test(every_part_of_a_stamp_subject_is_in_its_key),
        cmocka_unit_test_setup_teardown(shapes_of_1_to_800_bytes_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(puts_are_written_in_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(a_full_memo_starts_over_with_what_this_process_put, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_full_memo_drops_older_builds_before_starting_over, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_shape_is_found_for_its_own_case_directory_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(altered_stamp_and_shape_records_are_not_believed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_shape_missing_a_part_or_disagreeing_on_the_count_is_not_returned, setup, teardown),
        cmocka_unit_test_setup_teardown(stamp_and_shape_records_never_expire, setup, teardown),
        cmocka_unit_test_setup_teardown(a_memo_read_ahead_keeps_what_it_read, setup, teardown),
        cmocka_unit_test_setup_teardown(older_builds_records_are_dropped_on_close, setup, teardown),
        cmocka_unit_test_setup_teardown(a_small_or_unknown_share_is_not_rewritten, setup, teardown),
        cmocka_unit_test_setup_teardown(the_rewrite_waits_for_no_lock_and_keeps_later_appends,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
