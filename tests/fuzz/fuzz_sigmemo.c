/*
 * fuzz_sigmemo.c — libFuzzer target for the reader of this user's memo file
 * (src/provenance/sigmemo.h; docs/provenance.md#verifying-many-signatures and
 * docs/provenance.md#the-case-memo): its `entries`, which a torn write, a full disk or
 * another program can leave in any state.
 *
 * The input is the file's bytes, read as 176-byte records. So that the decoders see
 * authentic records of any content, the harness (which knows the memo's secret) helps:
 * a record whose byte 142 has bit 0 set gets a signature record's magic, bit 1 a case
 * record's; one whose byte 143 is odd gets the tag that makes it authentic.
 * Invariants:
 *   - reading, indexing and looking up neither crash, leak nor read out of bounds;
 *   - a key no record carries is never found;
 *   - a signature entry found has a 40-hex fingerprint; a case entry found has a status of
 *     0 to 2 and a fingerprint for exactly the blocks it says are present;
 *   - a key whose records are all unauthentic is never found;
 *   - what is put is then found, exactly, whatever the file held before.
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

#define REC_LEN  176
#define MAX_RECS 64

static char dir[64];
static const uint8_t secret[32] = {0x5e, 0xc7, 0x01};

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    make_dir();
    size_t n = size / REC_LEN;
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
            memcpy(rec, "bdcm0001", 8);
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
    for (size_t i = 0; i < n; i++) {
        const uint8_t *key = buf + i * REC_LEN + 8;
        bool any_authentic = false;
        for (size_t j = 0; j < n; j++)
            if (memcmp(buf + j * REC_LEN + 8, key, 32) == 0 && authentic(buf + j * REC_LEN))
                any_authentic = true;
        bd_sigmemo_entry se;
        bd_casememo_entry ce;
        if (bd_sigmemo_get(m, key, 1000, &se)) {
            check(any_authentic, "only an authentic record is believed");
            check(fpr_ok(se.fingerprint), "a signature entry's fingerprint is 40 hex");
        }
        if (bd_casememo_get(m, key, 1000, &ce)) {
            check(any_authentic, "only an authentic record is believed");
            check(ce.status >= 0 && ce.status <= 2, "a case entry's status is one a pass has");
            check(ce.author ? fpr_ok(ce.author_fpr) : ce.author_fpr[0] == '\0',
                  "an author fingerprint exactly when an author block is present");
            check(ce.reviewer ? fpr_ok(ce.reviewer_fpr) : ce.reviewer_fpr[0] == '\0',
                  "a reviewer fingerprint exactly when a reviewer block is present");
            check(ce.expires == 0 || ce.expires > 1000, "an expired entry is not believed");
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
    bd_sigmemo_close(m);
    /* Read back from the file: the same. */
    m = bd_sigmemo_open_at(dir);
    check(m != NULL, "a memo");
    check(bd_casememo_get(m, absent, 1000, &ce) && ce.status == 1, "the put survives a reopen");
    bd_sigmemo_close(m);
    free(buf);
    return 0;
}
