/*
 * fuzz_openpgp.c — libFuzzer target for the OpenPGP readers (src/provenance/openpgp.h,
 * docs/provenance.md#verifying-many-signatures): the armor of a signature, its packet and a
 * keyring, all of which anyone contributing to a bench writes.
 *
 * The first byte chooses the reader (modulo 4); the rest is its input: armor text, or raw
 * bytes for the signature, keyring or packet-header readers. Invariants:
 *   - no reader crashes, leaks or reads past its input (ASan/UBSan);
 *   - armor: what is read is not empty, came from nothing but base64 lines of at most 76
 *     characters between the BEGIN and END lines, and armored again the plain way reads
 *     back the same bytes (which then go to the signature reader);
 *   - a parsed signature: hash 8 or 10; `hashed` is the body, 6 <= hashed_len <= the
 *     body's length; the packet is a binary v4 signature; parsing again gives the same
 *     fields; checking it under a fixed key (the seeds' signer) does not crash;
 *   - a keyring: at most one key per 53 bytes (a 2-byte header and a 51-byte body); each
 *     key's body (version 4, its time, algorithm 22, the Ed25519 OID, 0x40 ‖ point) is in
 *     the input, and SHA-1 over 0x99 ‖ 0x00 0x33 ‖ that body is its fingerprint;
 *   - a packet header: hdr is 2, 3, 5 or 6, hdr + len <= n; a binary v4 signature is one
 *     packet of tag 2 filling the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "../fixtures/gpg/armor.h"
#include "openpgp.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char MSG[] = "benchdesk-provenance-v2\nrole: author\n";
#define B64 "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
static const uint8_t OID_ED25519[] = {0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01};

/* The seeds' signer: Ed25519 from the seed 0x01 * 32 (the corpus was written with it). */
static uint8_t POINT[32];

static void sig(const uint8_t *p, size_t n)
{
    bd_pgp_eddsa_sig s, again;
    if (!bd_pgp_eddsa_sig_parse(&s, p, n))
        return;
    check(s.hash_algo == 8 || s.hash_algo == 10, "hash SHA-256 or SHA-512");
    check(s.hashed > p && s.hashed < p + n && s.hashed[0] == 4, "hashed is the v4 body");
    size_t hdr = (size_t)(s.hashed - p);
    check(s.hashed_len >= 6 && s.hashed_len <= n - hdr, "hashed_len within the body");
    check(bd_pgp_one_binary_v4_signature(p, n), "a binary v4 signature packet");
    check(bd_pgp_eddsa_sig_parse(&again, p, n), "parses again");
    check(again.hashed == s.hashed && again.hashed_len == s.hashed_len &&
              again.hash_algo == s.hash_algo && again.created == s.created &&
              memcmp(again.left16, s.left16, 2) == 0 &&
              memcmp(again.issuer_fpr, s.issuer_fpr, 20) == 0 && memcmp(again.sig, s.sig, 64) == 0,
          "the same fields again");
    bool ok = bd_pgp_eddsa_verify(&s, POINT, MSG, sizeof(MSG) - 1);
    check(bd_pgp_eddsa_verify(&again, POINT, MSG, sizeof(MSG) - 1) == ok, "checks alike");
}

static void keys(const uint8_t *p, size_t n)
{
    bd_pgp_edkey *out = (bd_pgp_edkey *)1;
    size_t nk = 99;
    check(bd_pgp_edkeys(&out, &nk, p, n), "no allocation failure here");
    check((nk == 0) == (out == NULL), "NULL exactly when none");
    check(nk <= n / 53, "one key per 53 bytes at most");
    for (size_t i = 0; i < nk; i++) {
        uint8_t pre[3 + 51] = {0x99, 0, 51}, fpr[20];
        pre[3] = 4;
        for (int b = 0; b < 4; b++)
            pre[4 + b] = (uint8_t)(out[i].created >> (24 - 8 * b));
        pre[8] = 22, pre[9] = sizeof(OID_ED25519);
        memcpy(pre + 10, OID_ED25519, sizeof(OID_ED25519));
        pre[19] = 263 >> 8, pre[20] = 263 & 0xff, pre[21] = 0x40;
        memcpy(pre + 22, out[i].point, 32);
        check(memmem(p, n, pre + 3, 51) != NULL, "the key's body is in the input");
        check(EVP_Digest(pre, sizeof(pre), fpr, NULL, EVP_sha1(), NULL) == 1, "SHA-1");
        check(memcmp(fpr, out[i].fpr, 20) == 0, "the fingerprint is SHA-1 of the body");
    }
    free(out);
}

static void packets(const uint8_t *p, size_t n)
{
    int tag = -1;
    size_t hdr = 0, len = 0;
    bool one = bd_pgp_one_binary_v4_signature(p, n);
    for (size_t i = 0; i < n && bd_pgp_packet(p + i, n - i, &tag, &hdr, &len); i += hdr + len) {
        check(hdr == 2 || hdr == 3 || hdr == 5 || hdr == 6, "a header of 2, 3, 5 or 6 bytes");
        check(hdr + len <= n - i, "the packet within the input");
        check(tag >= 0 && tag < 64, "a tag of six bits");
        check(!one || i > 0 ||
                  (tag == 2 && hdr + len == n && len >= 6 && p[hdr] == 4 && p[hdr + 1] == 0),
              "a binary v4 signature is one packet of tag 2");
    }
    check(!one || n >= 8, "a signature packet was read");
}

static void dearmor(const char *text, size_t tlen)
{
    uint8_t *out = NULL, *again = NULL;
    size_t n = 0, n2 = 0;
    if (!bd_pgp_dearmor(&out, &n, text))
        return;
    check(n > 0 && n <= tlen, "something, and no more than the text");
    /* between the BEGIN line's empty line and the END line: base64 lines of at most 76 */
    const char *body = text + 31, *end = strstr(body, "\n-----END PGP SIGNATURE-----");
    check(strncmp(text, "-----BEGIN PGP SIGNATURE-----\n\n", 31) == 0 && end, "BEGIN, END");
    for (size_t col = 0; body < end; body++, col++) {
        check(*body == '\n' || strchr(B64 "=", *body), "only base64 between them");
        check(col < 76 || *body == '\n', "lines of at most 76");
        col = *body == '\n' ? (size_t)-1 : col;
    }
    char *a = fx_armor(out, n, 64, true);
    if (a) {
        check(bd_pgp_dearmor(&again, &n2, a), "the plain armor of it reads");
        check(n2 == n && memcmp(again, out, n) == 0, "the same bytes back");
        free(again);
        free(a);
    }
    sig(out, n);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static bool init;
    if (!init) {
        uint8_t seed[32], sk[64];
        memset(seed, 1, sizeof(seed));
        crypto_sign_seed_keypair(POINT, sk, seed);
        init = true;
    }
    /* The rest, in a buffer of its exact size (text: and its terminator) so that ASan sees
     * any read past it. */
    size_t n = size - 1;
    bool text = data[0] % 4 == 0;
    uint8_t *buf = malloc(n + text + !n);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, n);
    if (text)
        buf[n] = '\0';
    switch (data[0] % 4) {
    case 0:
        dearmor((const char *)buf, n);
        break;
    case 1:
        sig(buf, n);
        break;
    case 2:
        keys(buf, n);
        break;
    default:
        packets(buf, n);
    }
    free(buf);
    return 0;
}
