/*
 * fuzz_sigmemo.c — libFuzzer target for the reader of this user's memo file
 * (src/provenance/sigmemo.h; docs/provenance.md#verifying-many-signatures,
 * docs/provenance.md#the-case-memo and docs/provenance.md#unchanged-cases): its `entries`,
 * which a torn write, a full disk or another program can leave in any state.
 *
 * The input is the file's bytes, read as 176-byte records. So that the decoders see
 * authentic records of any content, the harness (which knows the memo's secret) helps:
 * a record whose byte 142 has bit 0 set gets a signature record's magic, else bit 1 a case
 * record's, else bit 2 an unchanged case's stamp record's, else bit 3 a shape record's;
 * a shape record whose byte 142 also has bit 4 set is filed under the key of part
 * (byte 141 % 8) of one of four fixed case directories (byte 140 % 4), so that lookups by
 * case directory land on it; a case or stamp record whose byte 141 has bit 5 set gets the
 * build tag of the build the memo is opened for (BUILD), which alone reads them; one whose
 * byte 143 is odd gets the tag that makes it authentic.
 * Invariants:
 *   - reading, indexing and looking up neither crash, leak nor read out of bounds;
 *   - a key no record carries is never found;
 *   - a signature entry found has a 40-hex fingerprint; a case entry found has a status of
 *     0 to 2 and a fingerprint for exactly the blocks it says are present;
 *   - a case or stamp entry found is of the build the memo was opened for;
 *   - a stamp entry found has, when it has a cassette, 64 lower-case hex; it is the newest
 *     authentic well-formed stamp record of its key and build, exactly;
 *   - a shape found has at most 800 bytes, and is exactly the parts the newest authentic
 *     well-formed record of each part's key holds, when they agree on their count;
 *   - a key whose records are all unauthentic is never found;
 *   - what is put is then found, exactly, whatever the file held before: a signature, a
 *     case verdict, a stamp entry and a shape made from the input.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blake3.h>

#include "hash.h"
#include "sigmemo.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REC_LEN     176
#define MAX_RECS    64
#define SHAPE_MAX   800
#define SHAPE_PART  100
#define SHAPE_PARTS 8
#define N_WHOSE     4

static char dir[64];
static const uint8_t secret[32] = {0x5e, 0xc7, 0x01};
/* The build the memo is opened for: its records carry BUILD's first 8 bytes. */
static const uint8_t BUILD[32] = {0xb1, 0x1d, 0x07, 0x42, 0x99, 0x10, 0x20, 0x30};

/* The case directories whose shapes the input can hold (byte 140 of a shape record),
 * and the keys of their parts. */
static const bd_shapememo_subject whose[N_WHOSE] = {
    {1, 2, "tc", "c1"}, {1, 3, "tc", "c1"}, {1, 2, "tc", "c2"}, {1, 2, "tc2", "c1"}};
static uint8_t whose_key[N_WHOSE][SHAPE_PARTS][32];

/* The scratch directory goes when the fuzzer exits. */
static void remove_dir(void)
{
    char p[96];
    const char *files[] = {"key", "entries"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* The memo directory, made once, with its secret in place. */
static void make_dir(void)
{
    if (dir[0])
        return;
    strcpy(dir, "/tmp/bd-fuzz-sigmemo-XXXXXX");
    check(mkdtemp(dir) != NULL, "a scratch directory");
    atexit(remove_dir);
    char p[96];
    snprintf(p, sizeof(p), "%s/key", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    check(fd >= 0 && write(fd, secret, 32) == 32, "the secret written");
    close(fd);
    for (int w = 0; w < N_WHOSE; w++)
        for (unsigned part = 0; part < SHAPE_PARTS; part++)
            bd_shapememo_key(whose_key[w][part], &whose[w], part);
}

static bool authentic(const uint8_t *rec)
{
    uint8_t tag[32];
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, secret);
    blake3_hasher_update(&h, rec, 144);
    blake3_hasher_finalize(&h, tag, 32);
    return memcmp(tag, rec + 144, 32) == 0;
}

static bool fpr_ok(const char *f)
{
    return strlen(f) == 40 && bd_fpr_valid(f);
}

static bool lower_hex(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* What the layouts (sigmemo.c) call a well-formed stamp record of BUILD, and shape part. */
static bool stamp_rec_ok(const uint8_t *rec)
{
    return memcmp(rec + 72, BUILD, 8) == 0 && (all_zero(rec + 80, 64) || lower_hex(rec + 80, 64));
}

static bool shape_rec_ok(const uint8_t *rec)
{
    unsigned part = rec[40], parts = rec[41], len = rec[42] | (unsigned)rec[43] << 8;
    return parts >= 1 && parts <= SHAPE_PARTS && part < parts && len >= 1 && len <= SHAPE_PART &&
           (part + 1 == parts || len == SHAPE_PART);
}

/* The newest of the n records of `buf` with `key`, `magic`, an authentic tag and
 * `ok` fields, or NULL: what the memo must believe. */
static const uint8_t *newest(const uint8_t *buf, size_t n, const uint8_t *key, const char magic[8],
                             bool (*ok)(const uint8_t *rec))
{
    for (size_t j = n; j-- > 0;) {
        const uint8_t *rec = buf + j * REC_LEN;
        if (memcmp(rec, magic, 8) == 0 && memcmp(rec + 8, key, 32) == 0 && authentic(rec) &&
            ok(rec))
            return rec;
    }
    return NULL;
}

/* The shape of case directory `w` the records of `buf` make, as the memo must join it. */
static bool model_shape(const uint8_t *buf, size_t n, int w, char *out, size_t *len)
{
    size_t got = 0;
    unsigned parts = 1;
    for (unsigned i = 0; i < parts; i++) {
        const uint8_t *rec = newest(buf, n, whose_key[w][i], "bdcs0001", shape_rec_ok);
        if (!rec || rec[40] != i || (i > 0 && rec[41] != parts))
            return false;
        parts = rec[41];
        size_t l = rec[42] | (size_t)rec[43] << 8;
        memcpy(out + got, rec + 44, l);
        got += l;
    }
    *len = got;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    make_dir();
    /* Only the first MAX_RECS records are helped, but every record is read: one past them
     * may still carry a tag the fuzzer learnt from a comparison. */
    size_t n_all = size / REC_LEN, n = n_all;
    if (n > MAX_RECS)
        n = MAX_RECS;
    uint8_t *buf = malloc(size ? size : 1);
    check(buf != NULL, "memory");
    memcpy(buf, data, size);
    for (size_t i = 0; i < n; i++) {
        uint8_t *rec = buf + i * REC_LEN;
        if (rec[142] & 1)
            memcpy(rec, "bdsm0001", 8);
        else if (rec[142] & 2)
            memcpy(rec, "bdcm0002", 8);
        else if (rec[142] & 4)
            memcpy(rec, "bdcu0002", 8);
        if ((rec[142] & 6) && (rec[141] & 32))
            memcpy(rec + ((rec[142] & 2) ? 136 : 72), BUILD, 8);
        else if (rec[142] & 8) {
            memcpy(rec, "bdcs0001", 8);
            if (rec[142] & 16)
                memcpy(rec + 8, whose_key[rec[140] % N_WHOSE][rec[141] % SHAPE_PARTS], 32);
        }
        if (rec[143] & 1) {
            blake3_hasher h;
            blake3_hasher_init_keyed(&h, secret);
            blake3_hasher_update(&h, rec, 144);
            blake3_hasher_finalize(&h, rec + 144, 32);
        }
    }
    char p[96];
    snprintf(p, sizeof(p), "%s/entries", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    check(fd >= 0, "the entries file");
    check(write(fd, buf, size) == (ssize_t)size, "the entries written");
    close(fd);

    bd_sigmemo *m = bd_sigmemo_open_at(dir);
    check(m != NULL, "a memo");
    bd_sigmemo_set_build(m, BUILD);
    bool had_sig[MAX_RECS] = {0}, had_case[MAX_RECS] = {0}, had_stamp[MAX_RECS] = {0};
    for (size_t i = 0; i < n; i++) {
        const uint8_t *key = buf + i * REC_LEN + 8;
        bool any_authentic = false;
        for (size_t j = 0; j < n_all; j++)
            if (memcmp(buf + j * REC_LEN + 8, key, 32) == 0 && authentic(buf + j * REC_LEN))
                any_authentic = true;
        bd_sigmemo_entry se;
        bd_casememo_entry ce;
        if ((had_sig[i] = bd_sigmemo_get(m, key, 1000, &se))) {
            check(any_authentic, "only an authentic record is believed");
            check(fpr_ok(se.fingerprint), "a signature entry's fingerprint is 40 hex");
        }
        if ((had_case[i] = bd_casememo_get(m, key, 1000, &ce))) {
            bool of_build = false;
            for (size_t j = 0; j < n_all; j++) {
                const uint8_t *r = buf + j * REC_LEN;
                of_build |= memcmp(r, "bdcm0002", 8) == 0 && memcmp(r + 8, key, 32) == 0 &&
                            authentic(r) && memcmp(r + 136, BUILD, 8) == 0;
            }
            check(of_build, "only an authentic case record of the build is believed");
            check(ce.status >= 0 && ce.status <= 2, "a case entry's status is one a pass has");
            check(ce.author ? fpr_ok(ce.author_fpr) : ce.author_fpr[0] == '\0',
                  "an author fingerprint exactly when an author block is present");
            check(ce.reviewer ? fpr_ok(ce.reviewer_fpr) : ce.reviewer_fpr[0] == '\0',
                  "a reviewer fingerprint exactly when a reviewer block is present");
            check(ce.expires == 0 || ce.expires > 1000, "an expired entry is not believed");
        }
        bd_stampmemo_entry te;
        const uint8_t *want = newest(buf, n_all, key, "bdcu0002", stamp_rec_ok);
        bool found = had_stamp[i] = bd_stampmemo_get(m, key, &te);
        check(found == (want != NULL), "a stamp entry is found when a believable record is");
        if (found) {
            unsigned char flag;
            memcpy(&flag, &te.cassette, 1);
            check(any_authentic, "only an authentic record is believed");
            check(flag <= 1, "a stamp entry's cassette flag is 0 or 1");
            check(te.cassette ? strlen(te.cassette_hex) == 64 &&
                                    lower_hex((const uint8_t *)te.cassette_hex, 64)
                              : te.cassette_hex[0] == '\0',
                  "a cassette digest, 64 lower-case hex, exactly when a cassette is said");
            check(memcmp(te.case_key, want + 40, 32) == 0 &&
                      te.cassette == !all_zero(want + 80, 64) &&
                      (!te.cassette || memcmp(te.cassette_hex, want + 80, 64) == 0),
                  "the stamp entry is the newest believable record's");
        }
    }
    /* The shapes of the case directories the input may hold. */
    for (int w = 0; w < N_WHOSE; w++) {
        char got[2 * SHAPE_MAX], want[2 * SHAPE_MAX];
        size_t got_len = 0, want_len = 0;
        bool found = bd_shapememo_get(m, &whose[w], got, sizeof(got), &got_len);
        bool made = model_shape(buf, n_all, w, want, &want_len);
        check(found == made, "a shape is found exactly when its parts agree");
        if (found) {
            check(got_len >= 1 && got_len <= SHAPE_MAX, "a shape has 1 to 800 bytes");
            check(got_len == want_len && memcmp(got, want, got_len) == 0,
                  "a shape is its parts' bytes, joined in order");
        }
    }
    /* A key no record carries. */
    uint8_t absent[32];
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, data, size);
    blake3_hasher_update(&h, "absent", 6);
    blake3_hasher_finalize(&h, absent, 32);
    bd_sigmemo_entry se;
    bd_casememo_entry ce;
    check(!bd_sigmemo_get(m, absent, 1000, &se), "an absent key is not found");
    check(!bd_casememo_get(m, absent, 1000, &ce), "an absent key is not found");
    bd_stampmemo_entry te;
    check(!bd_stampmemo_get(m, absent, &te), "an absent key is not found");
    bd_shapememo_subject nobody = {absent[0], absent[1], "tc", "nobody"};
    char shape[SHAPE_MAX], got[2 * SHAPE_MAX];
    size_t got_len;
    check(!bd_shapememo_get(m, &nobody, got, sizeof(got), &got_len),
          "a case directory without a shape has none");
    /* Put under it, after whatever the file held (a torn tail included): found exactly. */
    bd_sigmemo_entry want = {.verdict = 1, .expires = 0};
    memcpy(want.fingerprint, "0123456789ABCDEF0123456789ABCDEF01234567", 41);
    memcpy(want.key_id, "0123456789ABCDEF", 17);
    bd_sigmemo_put(m, absent, &want);
    check(bd_sigmemo_get(m, absent, 1000, &se), "a put signature is found");
    check(se.verdict == 1 && strcmp(se.fingerprint, want.fingerprint) == 0 &&
              strcmp(se.key_id, want.key_id) == 0,
          "and is what was put");
    check(!bd_casememo_get(m, absent, 1000, &ce), "a signature record is no case record");
    absent[0] ^= 1;
    bd_casememo_entry cw = {.status = 1, .author = true, .expires = 5000};
    memcpy(cw.author_fpr, want.fingerprint, 41);
    bd_casememo_put(m, absent, &cw);
    check(bd_casememo_get(m, absent, 1000, &ce), "a put case verdict is found");
    check(ce.status == 1 && ce.author && !ce.reviewer && ce.expires == 5000 &&
              strcmp(ce.author_fpr, cw.author_fpr) == 0 && ce.reviewer_fpr[0] == '\0',
          "and is what was put");
    check(!bd_casememo_get(m, absent, 5000, &ce), "not past its expiry");
    /* A stamp entry made from the input, put under the key of the input's first record
     * (whatever records that key has already) and found exactly. */
    uint8_t stamp_key[32], seed[32];
    memcpy(stamp_key, n ? buf + 8 : absent, 32);
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, data, size);
    blake3_hasher_update(&h, "stamp", 5);
    blake3_hasher_finalize(&h, seed, 32);
    bd_stampmemo_entry tw = {.cassette = seed[0] & 1};
    memcpy(tw.case_key, seed, 32);
    if (tw.cassette)
        for (int i = 0; i < 64; i++)
            tw.cassette_hex[i] = "0123456789abcdef"[(seed[i % 32] >> (i & 4)) & 15];
    bd_stampmemo_put(m, stamp_key, &tw);
    check(bd_stampmemo_get(m, stamp_key, &te), "a put stamp entry is found");
    check(memcmp(te.case_key, tw.case_key, 32) == 0 && te.cassette == tw.cassette &&
              strcmp(te.cassette_hex, tw.cassette_hex) == 0,
          "and is what was put");
    /* A shape of 1 to 800 bytes of the input, put for one of the case directories the
     * input may hold shapes of (newer than all of them) and found exactly. */
    size_t shape_len = 1 + (seed[1] | (size_t)seed[2] << 8) % SHAPE_MAX;
    for (size_t i = 0; i < shape_len; i++)
        shape[i] = (char)(size ? data[i % size] : seed[i % 32]);
    const bd_shapememo_subject *pw = &whose[seed[3] % N_WHOSE];
    bd_shapememo_put(m, pw, shape, shape_len);
    check(bd_shapememo_get(m, pw, got, sizeof(got), &got_len), "a put shape is found");
    check(got_len == shape_len && memcmp(got, shape, shape_len) == 0, "and is what was put");
    bd_sigmemo_close(m);
    /* Read back from the file (rewritten on close when older builds' records were worth
     * dropping): the same. */
    m = bd_sigmemo_open_at(dir);
    check(m != NULL, "a memo");
    bd_sigmemo_set_build(m, BUILD);
    check(bd_casememo_get(m, absent, 1000, &ce) && ce.status == 1, "the put survives a reopen");
    check(bd_stampmemo_get(m, stamp_key, &te) && memcmp(te.case_key, tw.case_key, 32) == 0 &&
              strcmp(te.cassette_hex, tw.cassette_hex) == 0,
          "the put stamp entry survives a reopen");
    check(bd_shapememo_get(m, pw, got, sizeof(got), &got_len) && got_len == shape_len &&
              memcmp(got, shape, shape_len) == 0,
          "the put shape survives a reopen");
    /* Whatever was believed before is still (a rewrite drops only older builds'). */
    for (size_t i = 0; i < n; i++) {
        const uint8_t *key = buf + i * REC_LEN + 8;
        check(!had_sig[i] || bd_sigmemo_get(m, key, 1000, &se), "a signature survives a reopen");
        check(!had_case[i] || bd_casememo_get(m, key, 1000, &ce),
              "a case verdict survives a reopen");
        check(!had_stamp[i] || bd_stampmemo_get(m, key, &te), "a stamp entry survives a reopen");
    }
    bd_sigmemo_close(m);
    free(buf);
    return 0;
}
