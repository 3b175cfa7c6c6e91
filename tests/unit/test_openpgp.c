/*
 * Unit tests for the OpenPGP shapes benchdesk reads itself (src/provenance/openpgp.c,
 * docs/provenance.md#verifying-many-signatures). Every packet here comes from the test's
 * own writer — keys and signatures from libsodium, digests and fingerprints from OpenSSL,
 * armor written here — never from the reader under test. Proven:
 *   - a good Ed25519 signature (SHA-256 and SHA-512, either hashed subpacket order, with
 *     or without the unhashed issuer) parses to exactly the fields written and verifies,
 *     also when R or S is an MPI shorter than 32 bytes;
 *   - the keys read from a keyring are exactly its Ed25519 (sub)keys, with the fingerprint
 *     SHA-1 gives, and a keyring cut short keeps the keys before the cut;
 *   - verification fails after one flipped bit in the message, the hashed area, R or S
 *     (also with left16 made to match), with a wrong left16, another key, or S >= L;
 *   - every shape but the plain one is refused, each for its own reason; the header
 *     formats of RFC 4880 read the same body alike, partial lengths are refused;
 *   - only the plain armor is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "../fixtures/gpg/armor.h"
#include "openpgp.h"

static const char MSG[] = "benchdesk-provenance-v2\nrole: author\nsubject: case\ncase_id: c1\n";
static const uint8_t OID_ED25519[] = {0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01};
/* The order of Ed25519's base point, little-endian as S is encoded. */
static const uint8_t L_LE[32] = "\xed\xd3\xf5\x5c\x1a\x63\x12\x58\xd6\x9c\xf7\xa2\xde\xf9\xde\x14"
                                "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x10";
enum { T0 = 1700000000 };

/* ---- the test's own writer ------------------------------------------------------------- */

typedef struct buf {
    uint8_t b[1024];
    size_t n;
} buf;

static void put(buf *b, const void *p, size_t n)
{
    assert_true(b->n + n <= sizeof(b->b));
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static void put1(buf *b, unsigned v)
{
    uint8_t c = (uint8_t)v;
    put(b, &c, 1);
}

static void put_be(buf *b, uint32_t v, int bytes)
{
    while (bytes--)
        put1(b, v >> (8 * bytes) & 0xff);
}

/* One subpacket with a one-byte length (which counts the type byte). */
static void sub(buf *a, unsigned type, const void *body, size_t n)
{
    assert_true(n + 1 < 192);
    put1(a, (unsigned)n + 1), put1(a, type), put(a, body, n);
}

/* `v` (n bytes, big-endian) as a minimal MPI: leading zero bytes dropped, the bit count
 * ending at the highest set bit of the first byte left. */
static void put_mpi(buf *b, const uint8_t *v, size_t n)
{
    while (n && !v[0])
        v++, n--;
    unsigned bits = 0;
    if (n) {
        bits = 8 * (unsigned)(n - 1);
        for (unsigned t = v[0]; t; t >>= 1)
            bits++;
    }
    put_be(b, bits, 2), put(b, v, n);
}

enum form { NEW1, NEW2, NEW5, OLD1, OLD2, OLD4 };

static void put_packet(buf *out, unsigned tag, enum form f, const uint8_t *body, size_t n)
{
    int lt = f - OLD1; /* old format: length type 0, 1, 2 for 1, 2, 4 bytes */
    if (f >= OLD1) {
        assert_true(tag < 16 && (lt || n < 256));
        put1(out, 0x80 | tag << 2 | (unsigned)lt);
        put_be(out, (uint32_t)n, 1 << lt);
    } else if (put1(out, 0xC0 | tag), f == NEW1) {
        assert_true(n < 192);
        put1(out, (unsigned)n);
    } else if (f == NEW2) {
        assert_true(n >= 192 && n < 8384);
        put_be(out, (uint32_t)(n - 192 + (192 << 8)), 2);
    } else {
        put1(out, 0xff);
        put_be(out, (uint32_t)n, 4);
    }
    put(out, body, n);
}

/* ---- keys ---------------------------------------------------------------------------- */

typedef struct key {
    uint8_t pk[32], sk[64], fpr[20];
    uint32_t created;
} key;

static key K, K2, KS; /* the signer, another key, a subkey */

/* A key packet body of the Ed25519 layout: `algo` 22 and OID_ED25519 make it one. */
static void key_body(buf *b, unsigned version, unsigned algo, uint32_t created, const uint8_t *oid,
                     size_t oid_len, const uint8_t point[32])
{
    put1(b, version), put_be(b, created, 4), put1(b, algo), put1(b, (unsigned)oid_len);
    put(b, oid, oid_len), put_be(b, 263 << 8 | 0x40, 3), put(b, point, 32); /* 0x40 ‖ point */
}

static void put_key(buf *ring, unsigned tag, enum form f, unsigned version, unsigned algo,
                    const key *k, const uint8_t *oid, size_t oid_len)
{
    buf b = {.n = 0};
    key_body(&b, version, algo, k->created, oid, oid_len, k->pk);
    put_packet(ring, tag, f, b.b, b.n);
}

/* A new key; its fingerprint as RFC 4880, 12.2 gives it, by OpenSSL: SHA-1 over 0x99, the
 * two-byte body length, the body. */
static void make_key(key *k, uint32_t created)
{
    buf b = {.b = {0x99, 0, 51}, .n = 3};
    crypto_sign_keypair(k->pk, k->sk);
    k->created = created;
    key_body(&b, 4, 22, created, OID_ED25519, sizeof(OID_ED25519), k->pk);
    assert_int_equal(b.n, 3 + 51);
    unsigned l = 0;
    assert_int_equal(EVP_Digest(b.b, b.n, k->fpr, &l, EVP_sha1(), NULL), 1);
    assert_int_equal(l, 20);
}

static int group_setup(void **state)
{
    (void)state;
    if (sodium_init() < 0)
        return -1;
    make_key(&K, T0 - 1000);
    make_key(&K2, T0 - 2000);
    make_key(&KS, T0 - 500);
    return 0;
}

/* ---- signatures -------------------------------------------------------------------- */

typedef struct parts {
    uint8_t head[4];      /* version, class, public-key algorithm, hash algorithm */
    buf hashed, unhashed; /* the two subpacket areas */
    uint8_t left16[2];
    uint8_t sig[64]; /* R ‖ S as signed */
    buf r, s;        /* their MPIs as written */
    buf tail;        /* bytes after S */
} parts;

static void std_hashed(buf *a, uint32_t created, const key *k, bool fpr_first)
{
    uint8_t t[4] = {created >> 24, created >> 16 & 0xff, created >> 8 & 0xff, created & 0xff};
    uint8_t f[21] = {4};
    memcpy(f + 1, k->fpr, 20);
    if (fpr_first)
        sub(a, 33, f, 21);
    sub(a, 2, t, 4);
    if (!fpr_first)
        sub(a, 33, f, 21);
}

/* The v4 digest (OpenSSL): the message, the hashed part, 0x04 0xFF, that part's length. */
static unsigned digest_of(uint8_t d[64], const parts *p, const char *msg)
{
    buf h = {.n = 0};
    put(&h, p->head, 4), put_be(&h, (uint32_t)p->hashed.n, 2), put(&h, p->hashed.b, p->hashed.n);
    put_be(&h, 0x04FF, 2), put_be(&h, (uint32_t)h.n - 2, 4);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned l = 0;
    assert_true(EVP_DigestInit_ex(c, p->head[3] == 10 ? EVP_sha512() : EVP_sha256(), NULL) &&
                EVP_DigestUpdate(c, msg, strlen(msg)) && EVP_DigestUpdate(c, h.b, h.n) &&
                EVP_DigestFinal_ex(c, d, &l));
    EVP_MD_CTX_free(c);
    return l;
}

static void set_sig(parts *p, const uint8_t sig[64])
{
    memcpy(p->sig, sig, 64);
    p->r.n = p->s.n = 0;
    put_mpi(&p->r, sig, 32);
    put_mpi(&p->s, sig + 32, 32);
}

/* Sign `p` with `k` over `msg` (left16, then R ‖ S as minimal MPIs); with no key, only set
 * left16 from the digest. */
static void sign(parts *p, const key *k, const char *msg)
{
    uint8_t d[64], sig[64];
    unsigned dl = digest_of(d, p, msg);
    memcpy(p->left16, d, 2);
    if (k)
        crypto_sign_detached(sig, NULL, d, dl, k->sk), set_sig(p, sig);
}

/* The plain shape by K at `created`: creation time, then issuer fingerprint; issuer key id
 * unhashed. */
static parts plain(uint8_t hash, uint32_t created)
{
    parts p = {.head = {4, 0x00, 22, hash}};
    std_hashed(&p.hashed, created, &K, false);
    sub(&p.unhashed, 16, K.fpr + 12, 8);
    sign(&p, &K, MSG);
    return p;
}

static void body_of(buf *b, const parts *p)
{
    put(b, p->head, 4), put_be(b, (uint32_t)p->hashed.n, 2), put(b, p->hashed.b, p->hashed.n);
    put_be(b, (uint32_t)p->unhashed.n, 2), put(b, p->unhashed.b, p->unhashed.n);
    put(b, p->left16, 2), put(b, p->r.b, p->r.n), put(b, p->s.b, p->s.n);
    put(b, p->tail.b, p->tail.n);
}

static buf packet_of(const parts *p, enum form f)
{
    buf body = {.n = 0}, pkt = {.n = 0};
    body_of(&body, p);
    put_packet(&pkt, 2, f, body.b, body.n);
    return pkt;
}

static void refused(const parts *p, const char *why)
{
    buf pkt = packet_of(p, NEW1);
    bd_pgp_eddsa_sig s;
    if (bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n))
        fail_msg("accepted: %s", why);
}

/* The packet parses (else the test fails) and verifies over `msg` under `point`. */
static bool verifies(const buf *pkt, const uint8_t point[32], const char *msg)
{
    bd_pgp_eddsa_sig s;
    assert_true(bd_pgp_eddsa_sig_parse(&s, pkt->b, pkt->n));
    return bd_pgp_eddsa_verify(&s, point, msg, strlen(msg));
}

enum shape { R_SHORT, S_SHORT, R_TOP_CLEAR };

/* A plain signature whose R ‖ S has `shape`, retrying creation times: R or S starting with
 * a zero byte (a short MPI), or R's first byte in 1..0x7f. */
static parts find(uint8_t hash, enum shape shape)
{
    for (uint32_t t = T0; t < T0 + 20000; t++) {
        parts p = plain(hash, t);
        if (shape == R_SHORT ? !p.sig[0] : shape == S_SHORT ? !p.sig[32] : p.sig[0] - 1u < 0x7f)
            return p;
    }
    fail_msg("no signature of that shape in 20000 tries");
    return plain(hash, T0);
}

/* ---- good signatures ------------------------------------------------------------------ */

static void good_signatures_parse_and_verify(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++) {
        uint8_t hash = i & 1 ? 10 : 8;
        parts p = {.head = {4, 0x00, 22, hash}};
        std_hashed(&p.hashed, T0 + 0x1234, &K, i & 2);
        if (i & 4)
            sub(&p.unhashed, 16, K.fpr + 12, 8);
        sign(&p, &K, MSG);
        buf pkt = packet_of(&p, NEW1);
        bd_pgp_eddsa_sig s;
        assert_true(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
        assert_int_equal(s.hash_algo, hash);
        assert_int_equal(s.created, T0 + 0x1234);
        assert_memory_equal(s.issuer_fpr, K.fpr, 20);
        assert_memory_equal(s.left16, p.left16, 2);
        assert_memory_equal(s.sig, p.sig, 64);
        assert_ptr_equal(s.hashed, pkt.b + 2);
        assert_int_equal(s.hashed_len, 6 + p.hashed.n);
        assert_true(bd_pgp_eddsa_verify(&s, K.pk, MSG, strlen(MSG)));
        assert_true(bd_pgp_one_binary_v4_signature(pkt.b, pkt.n));
    }
}

static void short_mpis_are_padded(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++) {
        parts p = find(i & 1 ? 10 : 8, i >> 1 ? S_SHORT : R_SHORT);
        assert_true((i >> 1 ? p.s.n : p.r.n) < 2 + 32); /* the MPI really is short */
        buf pkt = packet_of(&p, NEW1);
        bd_pgp_eddsa_sig s;
        assert_true(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
        assert_memory_equal(s.sig, p.sig, 64);
        assert_true(bd_pgp_eddsa_verify(&s, K.pk, MSG, strlen(MSG)));
    }
}

/* ---- keyrings ---------------------------------------------------------------------------- */

static void keyring_yields_exactly_its_ed25519_keys(void **state)
{
    (void)state;
    static const uint8_t OID_ED448[] = {0x2B, 0x65, 0x71};
    static const uint8_t OID_OFF[] = {0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x02};
    buf ring = {.n = 0}, b = {.n = 0}; /* the keyring, a key body */
    put_key(&ring, 6, OLD1, 4, 22, &K, OID_ED25519, sizeof(OID_ED25519));
    size_t end_primary = ring.n;
    put_packet(&ring, 13, OLD1, (const uint8_t *)"Alice <alice@example.org>", 25);
    buf sig = packet_of((parts[]){plain(8, T0)}, OLD1);
    put(&ring, sig.b, sig.n);
    /* Skipped: an RSA subkey (version, time, algorithm 1, n, e); an Ed25519 body but for
     * its algorithm (18, ECDH: KDF parameters left out so that only that differs); EdDSA on
     * another curve's OID and on one an arc off Ed25519's; a version-3 body. */
    static const uint8_t E[] = {0, 17, 1, 0, 1};
    put1(&b, 4), put_be(&b, T0, 4), put1(&b, 1), put_be(&b, 512, 2);
    put(&b, K2.sk, 64), put(&b, E, sizeof(E));
    put_packet(&ring, 14, OLD2, b.b, b.n);
    put_key(&ring, 14, NEW1, 4, 18, &K2, OID_ED25519, sizeof(OID_ED25519));
    put_key(&ring, 14, NEW1, 4, 22, &K2, OID_ED448, sizeof(OID_ED448));
    put_key(&ring, 14, NEW1, 4, 22, &K2, OID_OFF, sizeof(OID_OFF));
    put_key(&ring, 6, NEW1, 3, 22, &K2, OID_ED25519, sizeof(OID_ED25519));
    put_key(&ring, 14, NEW5, 4, 22, &KS, OID_ED25519, sizeof(OID_ED25519));
    size_t end_sub = ring.n;
    put_packet(&ring, 2, NEW1, sig.b + 2, sig.n - 2); /* its binding signature */

    const key *want[2] = {&K, &KS};
    for (size_t cut = 0; cut <= ring.n; cut++) {
        bd_pgp_edkey *out = NULL;
        size_t n = 99, expect = (cut >= end_primary) + (cut >= end_sub);
        assert_true(bd_pgp_edkeys(&out, &n, ring.b, cut));
        assert_int_equal(n, expect);
        assert_true((n == 0) == (out == NULL));
        for (size_t i = 0; i < n; i++) {
            assert_memory_equal(out[i].fpr, want[i]->fpr, 20);
            assert_memory_equal(out[i].point, want[i]->pk, 32);
            assert_int_equal(out[i].created, want[i]->created);
            assert_int_equal(out[i].primary, i == 0);
        }
        free(out);
    }
    /* A malformed header (no 0x80 bit) stops the reading: the subkey after it is lost. */
    buf bad = {.n = 0};
    put(&bad, ring.b, end_primary), put1(&bad, 0x00),
        put(&bad, ring.b + end_primary, ring.n - end_primary);
    bd_pgp_edkey *out = NULL;
    size_t n = 0;
    assert_true(bd_pgp_edkeys(&out, &n, bad.b, bad.n));
    assert_int_equal(n, 1);
    assert_memory_equal(out[0].fpr, K.fpr, 20);
    free(out);
}

/* ---- verification --------------------------------------------------------------------- */

static void flipped_bits_fail_verification(void **state)
{
    (void)state;
    for (uint8_t hash = 8; hash <= 10; hash += 2) {
        parts p = plain(hash, T0);
        buf pkt = packet_of(&p, NEW1);
        assert_true(verifies(&pkt, K.pk, MSG)); /* the control */
        size_t at_left = 2 + 6 + p.hashed.n + 2 + p.unhashed.n, at_r = at_left + 2;
        size_t at_s = at_r + p.r.n;
        /* the message */
        char m[sizeof(MSG)];
        memcpy(m, MSG, sizeof(MSG));
        m[9] ^= 0x04;
        assert_false(verifies(&pkt, K.pk, m));
        /* the creation time's low byte (the hashed area) */
        buf t = pkt;
        t.b[2 + 6 + 5] ^= 0x01;
        bd_pgp_eddsa_sig s;
        assert_true(bd_pgp_eddsa_sig_parse(&s, t.b, t.n));
        assert_int_equal(s.created, T0 ^ 1);
        assert_false(verifies(&t, K.pk, MSG));
        /* R and S, one bit in the middle of each */
        t = pkt, t.b[at_r + 2 + 16] ^= 0x10;
        assert_false(verifies(&t, K.pk, MSG));
        t = pkt, t.b[at_s + 2 + 16] ^= 0x10;
        assert_false(verifies(&t, K.pk, MSG));
        /* left16, and another key's point */
        t = pkt, t.b[at_left + 1] ^= 0x80;
        assert_false(verifies(&t, K.pk, MSG));
        assert_false(verifies(&pkt, K2.pk, MSG));
        /* left16 made to match the tampered digest: the EdDSA check itself must refuse */
        parts q = p;
        q.hashed.b[5] ^= 0x01, sign(&q, NULL, MSG), t = packet_of(&q, NEW1);
        assert_false(verifies(&t, K.pk, MSG));
        q = p, sign(&q, NULL, m), t = packet_of(&q, NEW1);
        assert_false(verifies(&t, K.pk, m));
    }
}

/* S + L is the same scalar mod L: only the canonical-S check tells it apart. */
static void non_canonical_s_fails(void **state)
{
    (void)state;
    parts p = plain(8, T0);
    uint8_t sig[64];
    memcpy(sig, p.sig, 64);
    unsigned carry = 0;
    for (int i = 0; i < 32; i++) {
        unsigned v = sig[32 + i] + L_LE[i] + carry;
        sig[32 + i] = (uint8_t)v;
        carry = v >> 8;
    }
    assert_int_equal(carry, 0); /* S < L < 2^253: S + L fits */
    set_sig(&p, sig);
    buf pkt = packet_of(&p, NEW1);
    bd_pgp_eddsa_sig s;
    assert_true(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
    assert_memory_equal(s.sig + 32, sig + 32, 32);
    assert_false(bd_pgp_eddsa_verify(&s, K.pk, MSG, strlen(MSG)));

    memcpy(sig + 32, L_LE, 32); /* S = L */
    set_sig(&p, sig);
    pkt = packet_of(&p, NEW1);
    assert_false(verifies(&pkt, K.pk, MSG));
}

/* ---- refusals ------------------------------------------------------------------------- */

static void other_shapes_are_refused(void **state)
{
    (void)state;
    const parts g = plain(8, T0);
    buf pkt = packet_of(&g, NEW1);
    assert_true(verifies(&pkt, K.pk, MSG)); /* the control every case departs from */
    uint8_t t4[4] = {0x65, 0x00, 0x00, 0x01}, f[33] = {4}, id9[9] = {0};
    memcpy(f + 1, K.fpr, 20);
    memcpy(id9, K.fpr + 12, 8);
    static const uint8_t NOTE[10] = {0x80, 0, 0, 0, 0, 1, 0, 1, 'a', 'b'}; /* a=b, readable */
    static const uint8_t heads[][4] = {
        {3, 0, 22, 8}, {4, 1, 22, 8}, {4, 0, 1, 8}, {4, 0, 22, 2}, {4, 0, 22, 9}};
    static const char *head_why[] = {"version 3", "class 0x01", "RSA", "SHA-1", "SHA-384"};
    parts p;
#define EDIT(...) (p = g, __VA_ARGS__, &p) /* a copy of g, edited */
/* no unhashed issuer here: it could refuse for its own reason */
#define HASHED(...) EDIT(p.hashed.n = 0, p.unhashed.n = 0, __VA_ARGS__)
    for (int i = 0; i < 5; i++)
        refused(EDIT(memcpy(p.head, heads[i], 4)), head_why[i]);
    refused(HASHED(sub(&p.hashed, 33, f, 21)), "no creation time");
    refused(HASHED(sub(&p.hashed, 2, t4, 4), sub(&p.hashed, 2, t4, 4), sub(&p.hashed, 33, f, 21)),
            "two creation times");
    refused(HASHED(sub(&p.hashed, 2, t4, 4)), "no issuer fingerprint");
    refused(HASHED(std_hashed(&p.hashed, T0, &K, false), sub(&p.hashed, 33, f, 21)),
            "two issuer fingerprints");
    refused(HASHED(sub(&p.hashed, 2, t4, 3), sub(&p.hashed, 33, f, 21)), "a 3-byte time");
    refused(HASHED(sub(&p.hashed, 2, t4, 4), sub(&p.hashed, 33, f, 20)), "19-byte fpr");
    refused(HASHED(sub(&p.hashed, 2, t4, 4), sub(&p.hashed, 33, f, 22)), "21-byte fpr");
    f[0] = 5;
    refused(HASHED(sub(&p.hashed, 2, t4, 4), sub(&p.hashed, 33, f, 21)), "fingerprint v5");
    refused(HASHED(sub(&p.hashed, 2, t4, 4), sub(&p.hashed, 33, f, 33)), "v5, 32 bytes");
    f[0] = 4;
    refused(HASHED(sub(&p.hashed, 2, t4, 4), sub(&p.hashed, 0x80 | 33, f, 21)), "critical 33");
    refused(HASHED(sub(&p.hashed, 0x80 | 2, t4, 4), sub(&p.hashed, 33, f, 21)), "critical 2");
    refused(HASHED(std_hashed(&p.hashed, T0, &K, false), sub(&p.hashed, 3, t4, 4)), "expiry");
    refused(HASHED(std_hashed(&p.hashed, T0, &K, false), sub(&p.hashed, 20, NOTE, 10)), "notation");
    refused(HASHED(std_hashed(&p.hashed, T0, &K, false), put1(&p.hashed, 0)), "zero length");
    refused(HASHED(std_hashed(&p.hashed, T0, &K, false), p.hashed.n--), "sub past its area");
    refused(HASHED(std_hashed(&p.hashed, T0, &K, false), put1(&p.hashed, 0xC0)), "cut length");
#define UNHASHED(...) EDIT(p.unhashed.n = 0, __VA_ARGS__)
    refused(UNHASHED(sub(&p.unhashed, 0x80 | 16, K.fpr + 12, 8)), "critical issuer");
    refused(UNHASHED(sub(&p.unhashed, 33, f, 21)), "unhashed fingerprint");
    refused(UNHASHED(sub(&p.unhashed, 2, t4, 4)), "unhashed creation time");
    refused(UNHASHED(sub(&p.unhashed, 16, K.fpr + 12, 8), sub(&p.unhashed, 16, K.fpr + 12, 8)),
            "two issuers");
    refused(UNHASHED(sub(&p.unhashed, 16, K2.fpr + 12, 8)), "another key's issuer");
    refused(UNHASHED(sub(&p.unhashed, 16, K.fpr + 12, 7)), "a 7-byte issuer");
    refused(UNHASHED(sub(&p.unhashed, 16, id9, 9)), "a 9-byte issuer");
    refused(UNHASHED(put1(&p.unhashed, 0)), "unhashed zero length");
    /* MPIs */
    p = find(8, R_TOP_CLEAR), p.r.n = 0, put_be(&p.r, 256, 2), put(&p.r, p.sig, 32);
    refused(&p, "R's bit count past its top bit"); /* 32 bytes, the first below 0x80 */
    p = find(8, R_SHORT), p.r.n = 0, put_be(&p.r, 256, 2), put(&p.r, p.sig, 32);
    refused(&p, "R with a leading 0x00");
    p = find(8, S_SHORT), p.s.n = 0, put_be(&p.s, 256, 2), put(&p.s, p.sig + 32, 32);
    refused(&p, "S with a leading 0x00");
    refused(EDIT(p.r.n = 0, put_be(&p.r, 257, 2), put1(&p.r, 1), put(&p.r, p.sig, 32)), "257 bits");
    refused(EDIT(p.s.n = 0, put_be(&p.s, 0, 2)), "S of 0 bits");
    refused(EDIT(p.s.n = 0), "no S");
    refused(EDIT(put1(&p.tail, 0)), "a byte after S");

    /* the area lengths, written wrong in the body */
    buf body = {.n = 0};
    bd_pgp_eddsa_sig s;
    body_of(&body, &g);
    size_t ul_at = 6 + g.hashed.n;
    for (int i = 0; i < 2; i++) {
        buf b = body;
        size_t at = i ? ul_at : 4, past = b.n - at - 2 + 1; /* one more than what is left */
        b.b[at] = (uint8_t)(past >> 8), b.b[at + 1] = (uint8_t)past;
        pkt.n = 0;
        put_packet(&pkt, 2, NEW1, b.b, b.n);
        assert_false(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
    }
    /* two packets; the packet cut anywhere; another tag */
    pkt = packet_of(&g, NEW1);
    buf two = pkt;
    put(&two, pkt.b, pkt.n);
    assert_false(bd_pgp_eddsa_sig_parse(&s, two.b, two.n));
    assert_false(bd_pgp_one_binary_v4_signature(two.b, two.n));
    for (size_t cut = 0; cut < pkt.n; cut++)
        assert_false(bd_pgp_eddsa_sig_parse(&s, pkt.b, cut));
    pkt.b[0] = 0xC0 | 4;
    assert_false(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
}

/* ---- packet headers ------------------------------------------------------------------- */

static void header_formats_read_alike(void **state)
{
    (void)state;
    /* Bodies of 100 and 300 bytes (new format's two-byte length needs 192 or more). */
    static const size_t hdrs[] = {2, 3, 6, 2, 3, 5};
    uint8_t body[300] = {0};
    int tag;
    size_t hdr, len;
    for (int i = 0; i < 12; i++) {
        enum form f = (enum form)(i / 2);
        size_t n = i & 1 ? 300 : 100;
        if ((n >= 192 && (f == NEW1 || f == OLD1)) || (n < 192 && f == NEW2))
            continue;
        buf pkt = {.n = 0};
        put_packet(&pkt, 9, f, body, n);
        assert_true(bd_pgp_packet(pkt.b, pkt.n, &tag, &hdr, &len));
        assert_int_equal(tag, 9);
        assert_int_equal(hdr, hdrs[f]);
        assert_int_equal(len, n);
        assert_false(bd_pgp_packet(pkt.b, pkt.n - 1, &tag, &hdr, &len));   /* body cut */
        assert_false(bd_pgp_packet(pkt.b, hdrs[f] - 1, &tag, &hdr, &len)); /* header cut */
        if (f == NEW5 || f == OLD4) { /* the length's high bytes count: 2^16 more */
            pkt.b[hdrs[f] - 3] = 1;
            assert_false(bd_pgp_packet(pkt.b, pkt.n, &tag, &hdr, &len));
        }
    }
    /* The signature (under 192 bytes) under every header that can carry it. */
    parts p = plain(10, T0);
    buf ref = packet_of(&p, NEW1);
    bd_pgp_eddsa_sig want, s;
    assert_true(bd_pgp_eddsa_sig_parse(&want, ref.b, ref.n));
    static const enum form forms[] = {NEW5, OLD1, OLD2, OLD4};
    for (int i = 0; i < 4; i++) {
        buf pkt = packet_of(&p, forms[i]);
        assert_true(bd_pgp_one_binary_v4_signature(pkt.b, pkt.n));
        assert_true(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
        assert_ptr_equal(s.hashed, pkt.b + hdrs[forms[i]]);
        assert_int_equal(s.hashed_len, want.hashed_len);
        assert_int_equal(s.created, want.created);
        assert_memory_equal(s.left16, want.left16, 2);
        assert_memory_equal(s.issuer_fpr, want.issuer_fpr, 20);
        assert_memory_equal(s.sig, want.sig, 64);
        assert_true(bd_pgp_eddsa_verify(&s, K.pk, MSG, strlen(MSG)));
    }
    /* Partial lengths (a 64-byte chunk, then the rest) and old format's indeterminate one. */
    buf body_sig = {.n = 0}, pkt = {.n = 0};
    body_of(&body_sig, &p);
    assert_true(body_sig.n > 64);
    put1(&pkt, 0xC2), put1(&pkt, 0xE0 + 6), put(&pkt, body_sig.b, 64);
    put1(&pkt, (unsigned)body_sig.n - 64), put(&pkt, body_sig.b + 64, body_sig.n - 64);
    assert_false(bd_pgp_packet(pkt.b, pkt.n, &tag, &hdr, &len));
    assert_false(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
    assert_false(bd_pgp_one_binary_v4_signature(pkt.b, pkt.n));
    pkt.n = 0;
    put1(&pkt, 0x80 | 2 << 2 | 3), put(&pkt, body_sig.b, body_sig.n);
    assert_false(bd_pgp_packet(pkt.b, pkt.n, &tag, &hdr, &len));
    assert_false(bd_pgp_eddsa_sig_parse(&s, pkt.b, pkt.n));
    /* Only a binary v4 signature packet is one. */
    ref.b[2 + 1] = 0x01;
    assert_false(bd_pgp_one_binary_v4_signature(ref.b, ref.n));
    ref.b[2 + 1] = 0x00, ref.b[2] = 3;
    assert_false(bd_pgp_one_binary_v4_signature(ref.b, ref.n));
    ref.b[2] = 4, ref.b[0] = 0xC0 | 6;
    assert_false(bd_pgp_one_binary_v4_signature(ref.b, ref.n));
}

/* ---- armor ---------------------------------------------------------------------------- */

/* `bin` armored with `width` base64 characters a line (gpg: 64): the tests' own writer. */
static char *armor(const uint8_t *bin, size_t n, size_t width, bool final_newline)
{
    char *a = fx_armor(bin, n, width, final_newline);
    assert_non_null(a);
    return a;
}

/* `s` with the first `what` replaced by `with` (a new string). */
static char *replaced(const char *s, const char *what, const char *with)
{
    char *r = fx_replaced(s, what, with);
    assert_non_null(r);
    return r;
}

/* `s` with the character at `at` replaced by `c` (a new string). */
static char *with_char(const char *s, size_t at, char c)
{
    char *r = strdup(s);
    r[at] = c;
    return r;
}

/* Reads back exactly `pkt`; takes `a`. */
static bool reads_back(char *a, const buf *pkt)
{
    uint8_t *out = NULL;
    size_t n = 0;
    bool ok = bd_pgp_dearmor(&out, &n, a);
    if (ok) {
        assert_int_equal(n, pkt->n);
        assert_memory_equal(out, pkt->b, n);
    }
    free(out);
    free(a);
    return ok;
}

static void only_the_plain_armor_is_read(void **state)
{
    (void)state;
    parts p = plain(8, T0);
    buf pkt = packet_of(&p, NEW1);
    char *good = armor(pkt.b, pkt.n, 64, true);
    assert_true(reads_back(armor(pkt.b, pkt.n, 64, true), &pkt));
    assert_true(reads_back(armor(pkt.b, pkt.n, 64, false), &pkt));
    assert_true(reads_back(armor(pkt.b, pkt.n, 76, true), &pkt));
    assert_false(reads_back(armor(pkt.b, pkt.n, 77, true), &pkt));
    const char *begin = "-----BEGIN PGP SIGNATURE-----\n\n";
    assert_false(
        reads_back(replaced(good, begin, "-----BEGIN PGP SIGNATURE-----\nComment: x\n\n"), &pkt));
    assert_false(reads_back(replaced(good, begin, "-----BEGIN PGP SIGNATURE-----\n"), &pkt));
    assert_false(reads_back(replaced(good, "BEGIN PGP SIGNATURE", "BEGIN PGP MESSAGE"), &pkt));
    /* the CRC: one character changed, or the line gone */
    char *crc = strstr(good, "\n=") + 2;
    assert_false(
        reads_back(with_char(good, (size_t)(crc - good), crc[0] == 'A' ? 'B' : 'A'), &pkt));
    char line[8];
    snprintf(line, sizeof(line), "=%.4s\n", crc);
    assert_false(reads_back(replaced(good, line, ""), &pkt));
    /* characters outside base64 in place of an 'A' (the class byte, 0x00, starts the second
     * group of three): a reader taking them for 'A' would find the CRC right */
    size_t at = strlen(begin) + 4;
    assert_int_equal(good[at], 'A');
    assert_false(reads_back(with_char(good, at, '*'), &pkt));
    assert_false(reads_back(with_char(good, at, (char)0x80), &pkt));
    char first8[9], spaced[10];
    snprintf(first8, sizeof(first8), "%s", good + strlen(begin));
    snprintf(spaced, sizeof(spaced), "%.4s %s", first8, first8 + 4);
    assert_false(reads_back(replaced(good, first8, spaced), &pkt)); /* a space inserted */
    assert_false(reads_back(replaced(good, "\n=", "\r\n="), &pkt)); /* a CR */
    /* text after the END line */
    const char *end = "-----END PGP SIGNATURE-----\n";
    assert_false(reads_back(replaced(good, end, "-----END PGP SIGNATURE-----\n\n"), &pkt));
    assert_false(reads_back(replaced(good, end, "-----END PGP SIGNATURE-----\nx"), &pkt));
    assert_false(reads_back(replaced(good, end, "-----END PGP SIGNATURE----- \n"), &pkt));
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_signatures_parse_and_verify),
        cmocka_unit_test(short_mpis_are_padded),
        cmocka_unit_test(keyring_yields_exactly_its_ed25519_keys),
        cmocka_unit_test(flipped_bits_fail_verification),
        cmocka_unit_test(non_canonical_s_fails),
        cmocka_unit_test(other_shapes_are_refused),
        cmocka_unit_test(header_formats_read_alike),
        cmocka_unit_test(only_the_plain_armor_is_read),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
