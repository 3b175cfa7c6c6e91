/*
 * Unit tests for checking many signatures with one gpg process (src/provenance/sigbatch.c,
 * docs/provenance.md#verifying-many-signatures): only the plain armor shape is wrapped,
 * only a lone good signature is settled from gpg's status lines, and — checked against
 * real GnuPG with keys made here — a context that prefetched reaches exactly the verdicts
 * of one that checked every signature alone, for good, forged, tampered, text-mode,
 * doubled, unknown-key, expired-key and revoked-key signatures; and so does the in-process
 * check of plain Ed25519 signatures (src/provenance/openpgp.c), which settles only the
 * good ones by usable keys (SHA-256 and SHA-512) and leaves to GnuPG a relabelled issuer,
 * SHA-384, a notation, an expiring signature and one dated a month ahead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../fixtures/gpg/armor.h"
#include "../fixtures/gpg/fixture.h"
#include "provenance.h"
#include "sigbatch.h"
#include "sign.h"
#include "verify.h"

static char T[512];    /* scratch root */
static char ROOT[700]; /* the bench: keys of alice, bob, mallory, dave, eve (not carol) */
static fx_keys K;

static const char *MSG = "benchdesk-provenance-v2\nrole: author\nsubject: case\ntask_class: tc\n"
                         "case_id: c1\ndigest: blake3:"
                         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";

static int group_setup(void **state)
{
    (void)state;
    fx_tmpdir(T, sizeof(T), "sigbatch");
    fx_make_keys(&K, T);
    setenv("GNUPGHOME", K.home, 1);
    char st[600], sy[2048];
    snprintf(st, sizeof(st), "%s/state", T);
    mkdir(st, 0700);
    setenv("XDG_STATE_HOME", st, 1); /* this test's own signature memo */
    bd_err err = BD_ERR_INIT;
    if (bd_provenance_init(&err) < 0) {
        fprintf(stderr, "GPGME unavailable: %s\n", err.msg);
        return -1;
    }
    snprintf(ROOT, sizeof(ROOT), "%s/b", T);
    fx_signers_yaml(sy, sizeof(sy), K.alice, "author, reviewer", K.bob, "author, reviewer", K.dave,
                    "author, reviewer", K.eve, "author, reviewer", (const char *)NULL);
    fx_make_bench(ROOT, &K, "alice bob mallory dave eve", sy, 3);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fx_cleanup(&K, T);
    return 0;
}

/* `msg` signed by gpg itself, ASCII-armored; `extra` adds options. */
static char *sign_cli(const char *extra, const char *msg)
{
    return fx_detach_sign(&K, T, extra, msg);
}

static char *sign_by(const char *fpr, const char *msg)
{
    char extra[128];
    snprintf(extra, sizeof(extra), "-u %s", fpr);
    return sign_cli(extra, msg);
}

/* ---- armor, written the test's own way (../fixtures/gpg/armor.h) ------------------- */

static char *armor(const uint8_t *bin, size_t n)
{
    char *a = fx_armor(bin, n, 64, true);
    assert_non_null(a);
    return a;
}

/* The signature packet an armored signature carries (gpg --dearmor). */
static uint8_t *dearmor_cli(const char *armored, size_t *n)
{
    char ap[700], bp[700];
    snprintf(ap, sizeof(ap), "%s/sig.asc", T);
    snprintf(bp, sizeof(bp), "%s/sig.bin", T);
    fx_write(ap, armored);
    unlink(bp);
    assert_int_equal(fx_sh("gpg --batch --yes --quiet --dearmor -o '%s' '%s'", bp, ap), 0);
    FILE *f = fopen(bp, "rb");
    assert_non_null(f);
    uint8_t *buf = malloc(4096);
    *n = fread(buf, 1, 4096, f);
    fclose(f);
    return buf;
}

/* ---- wrapping ------------------------------------------------------------------------ */

static bool wraps(const char *armored)
{
    uint8_t *out = NULL;
    size_t n = 0;
    bool ok = bd_sigbatch_wrap(&out, &n, armored, MSG, strlen(MSG));
    assert_true(ok == (out != NULL));
    free(out);
    return ok;
}

/* `s` with the first `what` replaced by `with` (a new string). */
static char *replaced(const char *s, const char *what, const char *with)
{
    char *r = fx_replaced(s, what, with);
    assert_non_null(r);
    return r;
}

static void only_the_plain_shape_is_wrapped(void **state)
{
    (void)state;
    char *sig = sign_by(K.alice, MSG);
    size_t bn = 0;
    uint8_t *bin = dearmor_cli(sig, &bn);

    /* The plain shape: the signature packet, then a literal packet holding the message. */
    uint8_t *w = NULL;
    size_t wn = 0;
    assert_true(bd_sigbatch_wrap(&w, &wn, sig, MSG, strlen(MSG)));
    size_t ml = strlen(MSG);
    assert_int_equal(wn, bn + 2 + 6 + ml);
    assert_memory_equal(w, bin, bn);
    assert_int_equal(w[bn], 0xCB);
    assert_int_equal(w[bn + 1], 6 + ml);
    assert_memory_equal(w + bn + 2, "b\0\0\0\0\0", 6);
    assert_memory_equal(w + bn + 8, MSG, ml);
    free(w);
    /* Our own armor of the same bytes (no trailing newline after END is fine too). */
    char *again = armor(bin, bn);
    assert_true(wraps(again));
    again[strlen(again) - 1] = '\0';
    assert_true(wraps(again));
    free(again);

    /* Every other shape is left to the one-at-a-time check. */
    const char *bad_edits[][2] = {
        {"-----BEGIN PGP SIGNATURE-----\n\n", "-----BEGIN PGP SIGNATURE-----\nComment: x\n\n"},
        {"-----BEGIN PGP SIGNATURE-----\n\n", "-----BEGIN PGP SIGNATURE-----\n"},
        {"-----BEGIN PGP SIGNATURE-----\n", "-----BEGIN PGP SIGNATURE-----\r\n"},
        {"-----BEGIN PGP SIGNATURE-----", "-----BEGIN PGP MESSAGE-----"},
        {"-----END PGP SIGNATURE-----", "-----END PGP SIGNATURE----- "},
        {"-----END PGP SIGNATURE-----\n", "-----END PGP SIGNATURE-----\n\n"},
        {"-----END PGP SIGNATURE-----\n", "-----END PGP SIGNATURE-----\ntrailing\n"},
        {"\n=", "\n"},         /* no CRC line */
        {"\n=", "\n=A"},       /* a CRC line of the wrong length */
        {"\n\n", "\n\n \n"},   /* a blank-looking line inside */
        {"\n\n", "\n\n!!!!\n"} /* not base64 */
    };
    for (size_t i = 0; i < sizeof(bad_edits) / sizeof(bad_edits[0]); i++) {
        char *v = replaced(sig, bad_edits[i][0], bad_edits[i][1]);
        if (wraps(v))
            fail_msg("edit %zu was wrapped:\n%s", i, v);
        free(v);
    }
    /* A CRC that does not match. */
    char *v = strdup(sig);
    char *crc = strstr(v, "\n=") + 2;
    crc[0] = crc[0] == 'A' ? 'B' : 'A';
    assert_false(wraps(v));
    free(v);
    /* A signature with one byte more, or two signature packets. */
    uint8_t two[8192];
    memcpy(two, bin, bn);
    two[bn] = 0;
    char *a = armor(two, bn + 1);
    assert_false(wraps(a));
    free(a);
    memcpy(two + bn, bin, bn);
    a = armor(two, 2 * bn);
    assert_false(wraps(a));
    free(a);
    /* Class 0x01 (a text-mode signature), version 3, another packet type. */
    size_t hdr = (bin[0] & 0x40) ? (bin[1] < 192 ? 2 : 3) : 1 + ((size_t)1 << (bin[0] & 3));
    memcpy(two, bin, bn);
    two[hdr + 1] = 0x01;
    a = armor(two, bn);
    assert_false(wraps(a));
    free(a);
    memcpy(two, bin, bn);
    two[hdr] = 3;
    a = armor(two, bn);
    assert_false(wraps(a));
    free(a);
    memcpy(two, bin, bn);
    two[0] = (bin[0] & 0x40) ? 0xC0 | 11 : (uint8_t)((bin[0] & 0xC3) | 11 << 2);
    a = armor(two, bn);
    assert_false(wraps(a));
    free(a);
    assert_false(wraps(""));
    assert_false(wraps("-----BEGIN PGP SIGNATURE-----\n\n"));
    free(bin);
    free(sig);
}

/* ---- gpg's status lines -------------------------------------------------------------- */

#define FPR_A "DBE9FFB58A1262A168FFBC352562D56F80A1C64F"
#define GOOD_BLOCK(path)                                                                           \
    "[GNUPG:] FILE_START 1 " path "\n[GNUPG:] NEWSIG\n[GNUPG:] KEY_CONSIDERED " FPR_A " 0\n"       \
    "[GNUPG:] SIG_ID x 2026-11-28 1\n[GNUPG:] GOODSIG 2562D56F80A1C64F Alice <a@x>\n"              \
    "[GNUPG:] VALIDSIG " FPR_A " 2026-11-28 1 0 4 0 22 8 00 " FPR_A "\n[GNUPG:] FILE_DONE\n"

static bool settles(const char *status, const char *path)
{
    const char *paths[1] = {path};
    bd_sigbatch_result r;
    bd_sigbatch_parse(&r, paths, 1, status, strlen(status));
    if (r.settled)
        assert_string_equal(r.fpr, FPR_A);
    return r.settled;
}

static void only_a_lone_good_signature_is_settled(void **state)
{
    (void)state;
    const char *good = GOOD_BLOCK("/d/0.gpg");
    assert_true(settles(good, "/d/0.gpg"));
    assert_false(settles(good, "/d/1.gpg")); /* another file's block */
    assert_false(settles(good, "/d/0.gp"));
    /* One line more or changed, each of which may carry a verdict. */
    const char *edits[][2] = {
        {"[GNUPG:] NEWSIG\n", "[GNUPG:] NEWSIG\n[GNUPG:] NEWSIG\n"},
        {"[GNUPG:] GOODSIG", "[GNUPG:] BADSIG"},
        {"[GNUPG:] GOODSIG", "[GNUPG:] EXPKEYSIG"},
        {"[GNUPG:] GOODSIG", "[GNUPG:] REVKEYSIG"},
        {"[GNUPG:] FILE_DONE", "[GNUPG:] KEYREVOKED\n[GNUPG:] FILE_DONE"},
        {"[GNUPG:] FILE_DONE", "[GNUPG:] TRUST_NEVER 0 pgp\n[GNUPG:] FILE_DONE"},
        {"[GNUPG:] FILE_DONE", "[GNUPG:] TRUST_UNDEFINED 58 pgp\n[GNUPG:] FILE_DONE"},
        {"[GNUPG:] FILE_DONE", "[GNUPG:] ERROR verify.x 1\n[GNUPG:] FILE_DONE"},
        {"[GNUPG:] FILE_DONE", "[GNUPG:] ERRSIG 1 2 3 4 5 9\n[GNUPG:] FILE_DONE"},
        {"[GNUPG:] FILE_DONE\n", "[GNUPG:] FILE_DONE"}, /* cut short */
        {"[GNUPG:] FILE_DONE\n", ""},                   /* never done */
        {"GOODSIG 2562D56F80A1C64F", "GOODSIG 1111111111111111"},
        {"VALIDSIG " FPR_A, "VALIDSIG 2562D56F80A1C64F"},
        {"[GNUPG:] VALIDSIG", "[GNUPG:] VALIDSIG " FPR_A "\n[GNUPG:] VALIDSIG"},
        {"[GNUPG:] NEWSIG\n", ""},
        {"[GNUPG:] FILE_START", "gpg: noise\n[GNUPG:] FILE_START"},
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        char *v = replaced(good, edits[i][0], edits[i][1]);
        if (settles(v, "/d/0.gpg"))
            fail_msg("edit %zu settled:\n%s", i, v);
        free(v);
    }
    /* Lines that carry no verdict are fine. */
    char *ok =
        replaced(good, "[GNUPG:] FILE_DONE", "[GNUPG:] TRUST_UNDEFINED 0 pgp\n[GNUPG:] FILE_DONE");
    assert_true(settles(ok, "/d/0.gpg"));
    free(ok);

    /* Several files in order; the first one out of order stops the reading. */
    const char *paths[3] = {"/d/0.gpg", "/d/1.gpg", "/d/2.gpg"};
    bd_sigbatch_result r[3];
    const char *three = GOOD_BLOCK("/d/0.gpg") GOOD_BLOCK("/d/1.gpg") GOOD_BLOCK("/d/2.gpg");
    bd_sigbatch_parse(r, paths, 3, three, strlen(three));
    assert_true(r[0].settled && r[1].settled && r[2].settled);
    const char *skip = GOOD_BLOCK("/d/0.gpg") GOOD_BLOCK("/d/2.gpg");
    bd_sigbatch_parse(r, paths, 3, skip, strlen(skip));
    assert_true(r[0].settled);
    assert_false(r[1].settled || r[2].settled);
    bd_sigbatch_parse(r, paths, 3, "", 0);
    assert_false(r[0].settled || r[1].settled || r[2].settled);
}

/* ---- against GnuPG ------------------------------------------------------------------- */

typedef struct variant {
    const char *what;
    char *msg, *sig;
    bool batched; /* settled by the batch (a lone good signature by a key of the home) */
    bool inproc;  /* settled in-process (openpgp.h): plain Ed25519 by a usable primary key */
} variant;

/* A context on the bench; `full`: every signature to GnuPG (no user memo, no in-process
 * check), else this test's own user memo, emptied first. */
static bd_prov_ctx *new_ctx_mode(bool full)
{
    bd_bench *b = NULL;
    bd_prov_ctx *ctx = NULL;
    bd_err err = BD_ERR_INIT;
    if (!full)
        assert_int_equal(fx_sh("rm -rf '%s/state/benchdesk'", T), 0);
    assert_int_equal(bd_bench_open(&b, ROOT, &err), 0);
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_bench_free(b);
    if (full)
        bd_prov_ctx_full(ctx);
    return ctx;
}

static bd_prov_ctx *new_ctx(void)
{
    return new_ctx_mode(true);
}

/* `bin` with every occurrence of the `n` bytes `from` replaced by `to`. */
static void swap_bytes(uint8_t *bin, size_t bn, const uint8_t *from, const uint8_t *to, size_t n)
{
    for (size_t i = 0; i + n <= bn; i++)
        if (memcmp(bin + i, from, n) == 0)
            memcpy(bin + i, to, n);
}

static void fpr_bytes(uint8_t out[20], const char *hex)
{
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(sscanf(hex + 2 * i, "%2hhx", &out[i]), 1);
}

static void check(bd_prov_detached *out, bd_prov_ctx *ctx, const variant *v)
{
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_prov_verify_detached(out, ctx, v->msg, strlen(v->msg), v->sig, &err), 0);
}

/* Fails the test when `b` (reached by `how`) is not `a`, GnuPG's verdict alone. */
static void same_verdict(const bd_prov_detached *a, const bd_prov_detached *b, const char *what,
                         const char *how)
{
    if (a->verdict != b->verdict || a->crypto_good != b->crypto_good || a->nsigs != b->nsigs ||
        strcmp(a->fingerprint, b->fingerprint) != 0 || strcmp(a->key_id, b->key_id) != 0 ||
        strcmp(a->detail, b->detail) != 0)
        fail_msg("%s: alone %d %d %d %s %s '%s', %s %d %d %d %s %s '%s'", what, a->verdict,
                 a->crypto_good, a->nsigs, a->fingerprint, a->key_id, a->detail, how, b->verdict,
                 b->crypto_good, b->nsigs, b->fingerprint, b->key_id, b->detail);
}

/* GnuPG alone for each signature, a batch, and the in-process check (both through a
 * prefetch and one signature at a time) reach the same verdicts, field for field. */
static void batched_verdicts_equal_single_ones(void **state)
{
    (void)state;
    char extra[256];
    variant v[24];
    size_t n = 0;
    v[n++] = (variant){"alice", strdup(MSG), sign_by(K.alice, MSG), true, true};
    v[n++] = (variant){"bob", strdup(MSG), sign_by(K.bob, MSG), true, true};
    v[n++] = (variant){"mallory (in keys, trusted by nobody)", strdup(MSG), sign_by(K.mallory, MSG),
                       true, true};
    /* Good by GnuPG; the in-process check leaves some of them to it. */
    snprintf(extra, sizeof(extra), "--digest-algo SHA512 -u %s", K.alice);
    v[n++] = (variant){"alice, SHA-512", strdup(MSG), sign_cli(extra, MSG), true, true};
    snprintf(extra, sizeof(extra), "--digest-algo SHA384 -u %s", K.alice);
    v[n++] = (variant){"alice, SHA-384", strdup(MSG), sign_cli(extra, MSG), true, false};
    snprintf(extra, sizeof(extra), "--sig-notation test@bench.example=1 -u %s", K.alice);
    v[n++] = (variant){"alice, with a notation", strdup(MSG), sign_cli(extra, MSG), false, false};
    snprintf(extra, sizeof(extra), "--default-sig-expire 1y -u %s", K.alice);
    v[n++] = (variant){"alice, a signature that expires", strdup(MSG), sign_cli(extra, MSG), true,
                       false};
    /* A month ahead: within her key's year, after now. */
    char later[32];
    time_t month = time(NULL) + 30 * 86400;
    strftime(later, sizeof(later), "%Y%m%dT%H%M%S", gmtime(&month));
    snprintf(extra, sizeof(extra), "--faked-system-time %s -u %s", later, K.alice);
    v[n++] =
        (variant){"alice, dated a month ahead", strdup(MSG), sign_cli(extra, MSG), true, false};

    v[n++] =
        (variant){"carol (not in bench/keys)", strdup(MSG), sign_by(K.carol, MSG), false, false};
    snprintf(extra, sizeof(extra), "--faked-system-time %s -u %s", K.dave_time, K.dave);
    v[n++] = (variant){"dave (expired since)", strdup(MSG), sign_cli(extra, MSG), false, false};
    v[n++] = (variant){"eve (revoked since)", strdup(MSG), sign_by(K.eve, MSG), false, false};
    char *other = strdup(MSG);
    other[strlen(other) - 2] = '0';
    v[n++] = (variant){"alice, over another message", other, sign_by(K.alice, MSG), false, false};
    snprintf(extra, sizeof(extra), "--textmode -u %s", K.alice);
    v[n++] = (variant){"alice, text mode", strdup(MSG), sign_cli(extra, MSG), false, false};
    snprintf(extra, sizeof(extra), "-u %s -u %s", K.alice, K.bob);
    v[n++] = (variant){"alice and bob in one", strdup(MSG), sign_cli(extra, MSG), false, false};
    char *hdr = replaced(v[0].sig, "-----\n\n", "-----\nComment: hi\n\n");
    v[n++] = (variant){"alice, an armor header", strdup(MSG), hdr, false, false};
    v[n++] = (variant){"garbage", strdup(MSG),
                       strdup("-----BEGIN PGP SIGNATURE-----\n\nAAAA\n"
                              "=AAAA\n-----END PGP SIGNATURE-----\n"),
                       false, false};
    /* A byte of the signature value changed, armored again with a matching CRC. */
    size_t bn = 0;
    uint8_t *bin = dearmor_cli(v[0].sig, &bn);
    bin[bn - 3] ^= 0x01;
    v[n++] = (variant){"alice, one bit of the signature flipped", strdup(MSG), armor(bin, bn),
                       false, false};
    free(bin);
    assert_true(wraps(v[n - 1].sig)); /* the batch does see it, and must not settle it */
    /* Bob's signature relabelled as alice's: her fingerprint and key id in its subpackets. */
    uint8_t af[20], bf[20];
    fpr_bytes(af, K.alice);
    fpr_bytes(bf, K.bob);
    bin = dearmor_cli(v[1].sig, &bn);
    swap_bytes(bin, bn, bf, af, 20);
    swap_bytes(bin, bn, bf + 12, af + 12, 8);
    v[n++] = (variant){"bob's signature naming alice as its issuer", strdup(MSG), armor(bin, bn),
                       false, false};
    free(bin);
    bd_prov_ctx *single = new_ctx(), *batch = new_ctx();
    bd_prov_reqs reqs = BD_PROV_REQS_INIT;
    reqs.v = calloc(n, sizeof(*reqs.v));
    for (size_t i = 0; i < n; i++)
        reqs.v[reqs.n++] = (bd_prov_req){strdup(v[i].msg), strlen(v[i].msg), v[i].sig};
    assert_int_equal(bd_prov_prefetch(batch, &reqs), n);
    size_t want = 0, want_inproc = 0, want_batched_after = 0;
    for (size_t i = 0; i < n; i++) {
        want += v[i].batched;
        want_inproc += v[i].inproc;
        want_batched_after += v[i].batched && !v[i].inproc;
    }
    assert_int_equal(bd_prov_ctx_batched(batch), want);
    assert_int_equal(bd_prov_ctx_inproc(batch), 0); /* a full check never settles in-process */
    for (size_t i = 0; i < n; i++) {
        bd_prov_detached a, b, again;
        check(&a, single, &v[i]);
        check(&b, batch, &v[i]);
        /* Asked again, the context's memo answers: every field as GnuPG gave it. */
        check(&again, single, &v[i]);
        if (memcmp(&a, &again, sizeof(a)) != 0)
            fail_msg("%s: the memo's answer differs from GnuPG's", v[i].what);
        same_verdict(&a, &b, v[i].what, "batched");
    }
    /* What the batch did not settle went to GnuPG alone, once each. */
    assert_int_equal(bd_prov_ctx_alone(batch), n - want);
    assert_int_equal(bd_prov_ctx_alone(single), n);

    /* The in-process check first, then batches for what it leaves, then GnuPG alone. */
    bd_prov_ctx *inproc = new_ctx_mode(false);
    assert_int_equal(bd_prov_prefetch(inproc, &reqs), n);
    assert_int_equal(bd_prov_ctx_inproc(inproc), want_inproc);
    assert_int_equal(bd_prov_ctx_batched(inproc), want_batched_after);
    for (size_t i = 0; i < n; i++) {
        bd_prov_detached a, c;
        check(&a, single, &v[i]);
        check(&c, inproc, &v[i]);
        same_verdict(&a, &c, v[i].what, "in-process after a prefetch");
    }
    assert_int_equal(bd_prov_ctx_alone(inproc), n - want_inproc - want_batched_after);
    bd_prov_ctx_free(inproc);
    /* One signature at a time, no prefetch (and a fresh user memo): the in-process
     * check, else GnuPG alone. */
    bd_prov_ctx *each = new_ctx_mode(false);
    for (size_t i = 0; i < n; i++) {
        bd_prov_detached a, e;
        check(&a, single, &v[i]);
        check(&e, each, &v[i]);
        same_verdict(&a, &e, v[i].what, "in-process, one at a time");
    }
    assert_int_equal(bd_prov_ctx_inproc(each), want_inproc);
    assert_int_equal(bd_prov_ctx_alone(each), n - want_inproc);
    bd_prov_ctx_free(each);
    /* The verdicts themselves, so that equal is also right. */
    bd_prov_detached d;
    check(&d, batch, &v[0]);
    assert_int_equal(d.verdict, BD_PROV_DET_GOOD);
    assert_string_equal(d.fingerprint, K.alice);
    check(&d, batch, &v[8]);
    assert_int_equal(d.verdict, BD_PROV_DET_UNKNOWN_KEY);
    check(&d, batch, &v[9]);
    assert_int_equal(d.verdict, BD_PROV_DET_EXPIRED);
    check(&d, batch, &v[10]);
    assert_int_equal(d.verdict, BD_PROV_DET_REVOKED);
    check(&d, batch, &v[11]);
    assert_int_equal(d.verdict, BD_PROV_DET_BAD);
    check(&d, batch, &v[13]);
    assert_int_equal(d.verdict, BD_PROV_DET_SEVERAL);
    check(&d, batch, &v[16]);
    assert_int_equal(d.verdict, BD_PROV_DET_BAD);
    /* A second prefetch asks GnuPG for nothing the context knows. */
    bd_prov_prefetch(batch, &reqs);
    assert_int_equal(bd_prov_ctx_batched(batch), want);
    bd_prov_reqs_release(&reqs);
    assert_null(reqs.v);
    bd_prov_ctx_free(single);
    bd_prov_ctx_free(batch);
    for (size_t i = 0; i < n; i++) {
        free(v[i].msg);
        free(v[i].sig);
    }
}

/* ---- a task class through bd_verify --------------------------------------------------- */

/* The bench, opened into *bench, and its task class with c1, c2 and c3 signed by alice
 * (author) and bob (reviewer): signed by the first test that asks, once. */
static bd_task_class *signed_cases(bd_bench **bench)
{
    static bool signed_once;
    bd_task_class *tc = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bench_open(bench, ROOT, &err), 0);
    bd_bench *b = *bench;
    assert_int_equal(bd_task_class_load(&tc, b, "tc", &err), 0);
    if (signed_once)
        return tc;
    signed_once = true;
    bd_prov_ctx *ctx = NULL;
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_prov_ctx_full(ctx);
    const char *ids[] = {"c1", "c2", "c3"};
    for (size_t i = 0; i < 3; i++) {
        for (int role = BD_ROLE_AUTHOR; role <= BD_ROLE_REVIEWER; role <<= 1) {
            bd_sign_opts o = BD_SIGN_OPTS_INIT;
            o.key = role == BD_ROLE_AUTHOR ? K.alice : K.bob;
            o.gnupg_home = K.home;
            bd_sign_result r;
            memset(&r, 0, sizeof(r));
            assert_int_equal(bd_sign_subject(&r, ctx, tc, ids[i], role, &o, &err), 0);
            bd_sign_result_release(&r);
        }
    }
    bd_prov_ctx_free(ctx);
    bd_task_class_free(tc);
    tc = NULL;
    assert_int_equal(bd_task_class_load(&tc, b, "tc", &err), 0);
    return tc;
}

/* *rep: the task class and its three cases checked with `ctx`, every case signed. */
static void verify_signed(bd_verify_report *rep, bd_task_class *tc, bd_prov_ctx *ctx)
{
    bd_err err = BD_ERR_INIT;
    bd_verify_opts o = {.prov = ctx, .collect = true};
    assert_int_equal(bd_verify(rep, tc, &o, NULL, &err), 0);
    assert_int_equal(rep->n_cases, 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(rep->cases[i].prov.status, BD_PROV_ST_SIGNED);
}

static void verify_gathers_a_run_of_cases_into_one_batch(void **state)
{
    (void)state;
    bd_bench *b = NULL;
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = signed_cases(&b);
    bd_prov_ctx *ctx = NULL;
    const char *ids[] = {"c1", "c2", "c3"};

    /* Gathering: each case asks for its two signatures, then nothing once they are known. */
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_prov_ctx_full(ctx);
    bd_verify_report rep;
    verify_signed(&rep, tc, ctx);
    /* Three cases are one run of a worker: their six signatures went to GnuPG together. */
    assert_int_equal(bd_prov_ctx_batched(ctx), 6);
    assert_int_equal(bd_prov_ctx_alone(ctx), 0);
    bd_prov_reqs reqs = BD_PROV_REQS_INIT;
    bd_subject sj = {
        BD_SUBJECT_CASE,       tc->name, "c1", rep.cases[0].digest, rep.cases[0].pinned,
        rep.cases[0].prov_file};
    bd_provenance_collect(&reqs, ctx, &sj);
    assert_int_equal(reqs.n, 0);
    bd_verify_report_release(&rep);
    bd_prov_ctx_free(ctx);

    /* A fresh context gathers both of c1's signatures, and only them. */
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_prov_ctx_full(ctx);
    bd_verify_opts one = {.prov = ctx, .collect = true, .case_ids = ids, .n_case_ids = 1};
    bd_prov_ctx *probe = NULL;
    assert_int_equal(bd_prov_ctx_new(&probe, b->bench_dir, &err), 0);
    bd_prov_ctx_full(probe);
    assert_int_equal(bd_verify(&rep, tc, &one, NULL, &err), 0);
    bd_subject s1 = {
        BD_SUBJECT_CASE,       tc->name, "c1", rep.cases[0].digest, rep.cases[0].pinned,
        rep.cases[0].prov_file};
    bd_provenance_collect(&reqs, probe, &s1);
    assert_int_equal(reqs.n, 2);
    assert_non_null(strstr(reqs.v[0].msg, "role: author\n"));
    assert_non_null(strstr(reqs.v[1].msg, "role: reviewer\n"));
    bd_prov_reqs_release(&reqs);
    bd_verify_report_release(&rep);
    bd_prov_ctx_free(probe);
    bd_prov_ctx_free(ctx);
    bd_task_class_free(tc);
    bd_bench_free(b);
}

/* Size of this test's memo file, -1 when there is none. */
static long memo_size(void)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/state/benchdesk/sig-memo/entries", T);
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* A check of the task class and its three cases with `ctx`; how many
 * signatures were settled by anything but the user memo. */
static size_t checked_anew(bd_task_class *tc, bd_prov_ctx *ctx)
{
    bd_verify_report rep;
    verify_signed(&rep, tc, ctx);
    bd_verify_report_release(&rep);
    return bd_prov_ctx_batched(ctx) + bd_prov_ctx_alone(ctx) + bd_prov_ctx_inproc(ctx);
}

/* bd_prov_ctx_preload reads the user memo ahead, and only for a context that uses it: its
 * answers are the memo's, a full check neither uses nor writes it, and a context freed
 * unused leaves it as it was (docs/provenance.md#the-memo-file). */
static void the_memo_read_ahead_is_the_one_a_check_uses(void **state)
{
    (void)state;
    bd_bench *b = NULL;
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = signed_cases(&b);

    /* A first check fills the memo with the cases' six signatures. */
    bd_prov_ctx *ctx = new_ctx_mode(false);
    bd_prov_ctx_preload(ctx);
    assert_int_equal(checked_anew(tc, ctx), 6);
    bd_prov_ctx_free(ctx);
    long filled = memo_size();
    assert_true(filled > 0);

    /* Read ahead, twice asked: every signature comes from the memo, nothing is added. */
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_prov_ctx_preload(ctx);
    bd_prov_ctx_preload(ctx);
    assert_int_equal(checked_anew(tc, ctx), 0);
    bd_prov_ctx_preload(ctx); /* after the first lookup: nothing */
    bd_prov_ctx_free(ctx);
    assert_int_equal(memo_size(), filled);

    /* Read ahead, then made full: GnuPG settles all six, the memo is not written. */
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_prov_ctx_preload(ctx);
    bd_prov_ctx_full(ctx);
    bd_prov_ctx_preload(ctx); /* a full context reads no memo */
    assert_int_equal(checked_anew(tc, ctx), 6);
    assert_int_equal(bd_prov_ctx_inproc(ctx), 0);
    bd_prov_ctx_free(ctx);
    assert_int_equal(memo_size(), filled);

    /* Read ahead and never used. */
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    bd_prov_ctx_preload(ctx);
    bd_prov_ctx_free(ctx);
    assert_int_equal(memo_size(), filled);
    bd_prov_ctx_preload(NULL);

    bd_task_class_free(tc);
    bd_bench_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_the_plain_shape_is_wrapped),
        cmocka_unit_test(only_a_lone_good_signature_is_settled),
        cmocka_unit_test(batched_verdicts_equal_single_ones),
        cmocka_unit_test(verify_gathers_a_run_of_cases_into_one_batch),
        cmocka_unit_test(the_memo_read_ahead_is_the_one_a_check_uses),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
