/*
 * openpgp.c — the few OpenPGP shapes benchdesk reads itself (RFC 4880): the plain armor,
 * packet headers, an Ed25519 signature and Ed25519 public keys, and the in-process check
 * of such a signature (docs/provenance.md#verifying-many-signatures). See openpgp.h:
 * whatever is not exactly the plain shape is refused, and a refusal only sends the
 * signature to GnuPG.
 */
#include "openpgp.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

/* ---- the armor, strictly (RFC 4880, 6.2: no header line, CRC-24 required) ------------ */

static const char ARMOR_BEGIN[] = "-----BEGIN PGP SIGNATURE-----\n";
static const char ARMOR_END[] = "-----END PGP SIGNATURE-----";
#define ARMOR_LINE_MAX 76

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decode `n` base64 characters (a multiple of 4; '=' only as the last one or two) into
 * out (room for 3n/4 bytes). Returns the byte count, or -1. */
static long b64_decode(uint8_t *out, const char *s, size_t n)
{
    if (n == 0 || n % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int j = 0; j < 4; j++) {
            if (s[i + j] == '=' && i + 4 == n && j >= 2) {
                v[j] = 0;
                pad++;
                continue;
            }
            if (pad || (v[j] = b64_value((unsigned char)s[i + j])) < 0)
                return -1;
        }
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2)
            out[o++] = (uint8_t)(w >> 8);
        if (pad < 1)
            out[o++] = (uint8_t)w;
    }
    return (long)o;
}

static uint32_t crc24(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xB704CEu;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint32_t)p[i] << 16;
        for (int b = 0; b < 8; b++) {
            crc <<= 1;
            if (crc & 0x1000000u)
                crc ^= 0x1864CFBu;
        }
    }
    return crc & 0xFFFFFFu;
}

bool bd_pgp_dearmor(uint8_t **out, size_t *out_len, const char *armored)
{
    size_t blen = sizeof(ARMOR_BEGIN) - 1, elen = sizeof(ARMOR_END) - 1;
    if (strncmp(armored, ARMOR_BEGIN, blen) != 0 || armored[blen] != '\n')
        return false;
    const char *p = armored + blen + 1;
    size_t total = strlen(p);
    char *data = malloc(total + 1);
    uint8_t *bin = malloc(total + 1);
    size_t dn = 0;
    bool ok = false;
    uint8_t crc[3];
    if (!data || !bin)
        goto out;
    for (;;) {
        const char *nl = strchr(p, '\n');
        if (!nl)
            goto out;
        size_t l = (size_t)(nl - p);
        if (l == 0 || l > ARMOR_LINE_MAX)
            goto out;
        if (p[0] == '=') { /* the CRC line, then the end line */
            if (l != 5 || b64_decode(crc, p + 1, 4) != 3)
                goto out;
            p = nl + 1;
            if (strncmp(p, ARMOR_END, elen) != 0 || (p[elen] && strcmp(p + elen, "\n") != 0))
                goto out;
            break;
        }
        memcpy(data + dn, p, l);
        dn += l;
        p = nl + 1;
    }
    long bn = b64_decode(bin, data, dn);
    if (bn <= 0)
        goto out;
    uint32_t want = (uint32_t)crc[0] << 16 | (uint32_t)crc[1] << 8 | crc[2];
    if (crc24(bin, (size_t)bn) != want)
        goto out;
    *out = bin;
    *out_len = (size_t)bn;
    bin = NULL;
    ok = true;
out:
    free(data);
    free(bin);
    return ok;
}

/* ---- packets ------------------------------------------------------------------------- */

bool bd_pgp_packet(const uint8_t *p, size_t n, int *tag, size_t *hdr, size_t *len)
{
    size_t h, l;
    if (n < 2 || !(p[0] & 0x80))
        return false;
    if (p[0] & 0x40) { /* new format */
        *tag = p[0] & 0x3f;
        if (p[1] < 192) {
            h = 2, l = p[1];
        } else if (p[1] < 224) {
            if (n < 3)
                return false;
            h = 3, l = ((size_t)(p[1] - 192) << 8) + p[2] + 192;
        } else if (p[1] == 255) {
            if (n < 6)
                return false;
            h = 6, l = (size_t)p[2] << 24 | (size_t)p[3] << 16 | (size_t)p[4] << 8 | p[5];
        } else {
            return false; /* a partial length */
        }
    } else { /* old format */
        *tag = (p[0] >> 2) & 0x0f;
        int lt = p[0] & 3;
        if (lt == 3)
            return false; /* indeterminate */
        h = 1 + ((size_t)1 << lt);
        if (n < h)
            return false;
        l = 0;
        for (size_t i = 1; i < h; i++)
            l = l << 8 | p[i];
    }
    if (l > n - h)
        return false;
    *hdr = h;
    *len = l;
    return true;
}

bool bd_pgp_one_binary_v4_signature(const uint8_t *p, size_t n)
{
    int tag;
    size_t hdr, len;
    return bd_pgp_packet(p, n, &tag, &hdr, &len) && tag == 2 && len == n - hdr && len >= 6 &&
           p[hdr] == 4 && p[hdr + 1] == 0x00;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- an Ed25519 signature ------------------------------------------------------------- */

enum { SUB_CREATED = 2, SUB_ISSUER = 16, SUB_ISSUER_FPR = 33 };
enum { PK_EDDSA = 22, HASH_SHA256 = 8, HASH_SHA512 = 10 };

/* The subpackets of one area (`p`, n bytes), each handed to `take`; false when one is
 * malformed or `take` refuses it. */
typedef bool (*subpacket_fn)(void *state, int type, bool critical, const uint8_t *body, size_t len);

static bool subpackets(const uint8_t *p, size_t n, subpacket_fn take, void *state)
{
    size_t i = 0;
    while (i < n) {
        size_t h, l;
        if (p[i] < 192) {
            h = 1, l = p[i];
        } else if (p[i] < 255) {
            if (n - i < 2)
                return false;
            h = 2, l = ((size_t)(p[i] - 192) << 8) + p[i + 1] + 192;
        } else {
            if (n - i < 5)
                return false;
            h = 5, l = be32(p + i + 1);
        }
        if (l == 0 || l > n - i - h) /* the length counts the type byte */
            return false;
        const uint8_t *body = p + i + h;
        if (!take(state, body[0] & 0x7f, (body[0] & 0x80) != 0, body + 1, l - 1))
            return false;
        i += h + l;
    }
    return true;
}

typedef struct sig_seen {
    bd_pgp_eddsa_sig *out;
    int created, issuer_fpr, issuer;
    uint8_t issuer_id[8];
} sig_seen;

static bool take_hashed(void *state, int type, bool critical, const uint8_t *b, size_t l)
{
    sig_seen *s = state;
    if (critical)
        return false;
    if (type == SUB_CREATED && l == 4 && !s->created++) {
        s->out->created = be32(b);
        return true;
    }
    if (type == SUB_ISSUER_FPR && l == 21 && b[0] == 4 && !s->issuer_fpr++) {
        memcpy(s->out->issuer_fpr, b + 1, 20);
        return true;
    }
    return false;
}

static bool take_unhashed(void *state, int type, bool critical, const uint8_t *b, size_t l)
{
    sig_seen *s = state;
    if (critical || type != SUB_ISSUER || l != 8 || s->issuer++)
        return false;
    memcpy(s->issuer_id, b, 8);
    return true;
}

/* A minimal MPI of at most 256 bits at p[*i], left-padded into out[32]. */
static bool mpi32(uint8_t out[32], const uint8_t *p, size_t n, size_t *i)
{
    if (n - *i < 2)
        return false;
    unsigned bits = (unsigned)p[*i] << 8 | p[*i + 1];
    size_t bytes = (bits + 7) / 8;
    *i += 2;
    if (bits == 0 || bits > 256 || bytes > n - *i)
        return false;
    const uint8_t *v = p + *i;
    /* Minimal: the top byte's highest set bit is the count's. */
    unsigned top = bits - 8 * (unsigned)(bytes - 1);
    if (v[0] >> (top - 1) != 1)
        return false;
    memset(out, 0, 32 - bytes);
    memcpy(out + 32 - bytes, v, bytes);
    *i += bytes;
    return true;
}

bool bd_pgp_eddsa_sig_parse(bd_pgp_eddsa_sig *out, const uint8_t *p, size_t n)
{
    int tag;
    size_t hdr, len;
    memset(out, 0, sizeof(*out));
    if (!bd_pgp_packet(p, n, &tag, &hdr, &len) || tag != 2 || len != n - hdr)
        return false;
    const uint8_t *b = p + hdr;
    if (len < 6 || b[0] != 4 || b[1] != 0x00 || b[2] != PK_EDDSA ||
        (b[3] != HASH_SHA256 && b[3] != HASH_SHA512))
        return false;
    out->hash_algo = b[3];
    size_t hl = (size_t)b[4] << 8 | b[5], i = 6;
    if (hl > len - i)
        return false;
    sig_seen seen = {.out = out};
    if (!subpackets(b + i, hl, take_hashed, &seen) || seen.created != 1 || seen.issuer_fpr != 1)
        return false;
    i += hl;
    out->hashed = b;
    out->hashed_len = i;
    if (len - i < 2)
        return false;
    size_t ul = (size_t)b[i] << 8 | b[i + 1];
    i += 2;
    if (ul > len - i || !subpackets(b + i, ul, take_unhashed, &seen))
        return false;
    if (seen.issuer && memcmp(seen.issuer_id, out->issuer_fpr + 12, 8) != 0)
        return false;
    i += ul;
    if (len - i < 2)
        return false;
    memcpy(out->left16, b + i, 2);
    i += 2;
    if (!mpi32(out->sig, b, len, &i) || !mpi32(out->sig + 32, b, len, &i) || i != len)
        return false;
    return true;
}

/* ---- Ed25519 public keys ---------------------------------------------------------------- */

/* The OID of curve Ed25519 in OpenPGP (1.3.6.1.4.1.11591.15.1). */
static const uint8_t OID_ED25519[] = {0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01};

/* A v4 EdDSA Ed25519 key packet body `b` (l bytes) into *k; false for anything else. */
static bool edkey_body(bd_pgp_edkey *k, const uint8_t *b, size_t l)
{
    const size_t ol = sizeof(OID_ED25519);
    /* version, time, algorithm, OID length and OID, then a 263-bit MPI: 0x40 ‖ point */
    if (l != 6 + 1 + ol + 2 + 33 || b[0] != 4 || b[5] != PK_EDDSA || b[6] != ol ||
        memcmp(b + 7, OID_ED25519, ol) != 0)
        return false;
    const uint8_t *m = b + 7 + ol;
    if (((unsigned)m[0] << 8 | m[1]) != 263 || m[2] != 0x40)
        return false;
    k->created = be32(b + 1);
    memcpy(k->point, m + 3, 32);
    /* RFC 4880, 12.2: the v4 fingerprint hashes 0x99, a two-byte length and the body. */
    uint8_t pre[3 + 6 + 1 + sizeof(OID_ED25519) + 2 + 33] = {0x99, (uint8_t)(l >> 8), (uint8_t)l};
    memcpy(pre + 3, b, l);
    return EVP_Digest(pre, sizeof(pre), k->fpr, NULL, EVP_sha1(), NULL) == 1;
}

bool bd_pgp_edkeys(bd_pgp_edkey **out, size_t *n_out, const uint8_t *p, size_t n)
{
    *out = NULL;
    *n_out = 0;
    size_t cap = 0, i = 0;
    int tag;
    size_t hdr, len;
    while (i < n && bd_pgp_packet(p + i, n - i, &tag, &hdr, &len)) {
        bd_pgp_edkey k;
        if ((tag == 6 || tag == 14) && edkey_body(&k, p + i + hdr, len)) {
            k.primary = tag == 6;
            if (*n_out == cap) {
                size_t nc = cap ? 2 * cap : 8;
                bd_pgp_edkey *nv = realloc(*out, nc * sizeof(*nv));
                if (!nv) {
                    free(*out);
                    *out = NULL;
                    *n_out = 0;
                    return false;
                }
                *out = nv;
                cap = nc;
            }
            (*out)[(*n_out)++] = k;
        }
        i += hdr + len;
    }
    return true;
}

/* ---- the check ------------------------------------------------------------------------ */

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static bool sodium_ready;

/* libsodium picks its implementations once, before any other call (its contract). */
static void sodium_start(void)
{
    sodium_ready = sodium_init() >= 0;
}

bool bd_pgp_eddsa_verify(const bd_pgp_eddsa_sig *s, const uint8_t point[32], const char *msg,
                         size_t mlen)
{
    uint8_t trailer[6] = {0x04, 0xFF};
    uint8_t digest[EVP_MAX_MD_SIZE];
    pthread_once(&sodium_once, sodium_start);
    if (!sodium_ready || s->hashed_len > UINT32_MAX)
        return false;
    trailer[2] = (uint8_t)(s->hashed_len >> 24);
    trailer[3] = (uint8_t)(s->hashed_len >> 16);
    trailer[4] = (uint8_t)(s->hashed_len >> 8);
    trailer[5] = (uint8_t)s->hashed_len;
    const EVP_MD *md = s->hash_algo == HASH_SHA256   ? EVP_sha256()
                       : s->hash_algo == HASH_SHA512 ? EVP_sha512()
                                                     : NULL;
    EVP_MD_CTX *h = md ? EVP_MD_CTX_new() : NULL;
    unsigned dlen = 0;
    bool hashed = h && EVP_DigestInit_ex(h, md, NULL) == 1 && EVP_DigestUpdate(h, msg, mlen) == 1 &&
                  EVP_DigestUpdate(h, s->hashed, s->hashed_len) == 1 &&
                  EVP_DigestUpdate(h, trailer, sizeof(trailer)) == 1 &&
                  EVP_DigestFinal_ex(h, digest, &dlen) == 1;
    EVP_MD_CTX_free(h);
    if (!hashed || dlen < 2)
        return false;
    if (digest[0] != s->left16[0] || digest[1] != s->left16[1])
        return false;
    /* OpenPGP's EdDSA signs the digest itself as the Ed25519 message. */
    return crypto_sign_ed25519_verify_detached(s->sig, digest, dlen, point) == 0;
}
