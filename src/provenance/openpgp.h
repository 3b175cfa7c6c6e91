/*
 * openpgp.h — the few OpenPGP shapes benchdesk reads itself (RFC 4880), strictly
 * (docs/provenance.md#verifying-many-signatures).
 *
 * GnuPG stays the judge of keys and of every signature outside one plain shape. This
 * file reads that shape: ASCII armor with no header line and a CRC-24 that matches,
 * holding one version-4 signature packet of a binary document; and, for the in-process
 * check of Ed25519 signatures, the public-key packets of an exported keyring and the
 * fields of an EdDSA signature. Every reader refuses what it does not know rather than
 * guessing: a refusal only sends the signature to GnuPG. Pure functions of their bytes,
 * thread-safe. Internal to the provenance domain.
 */
#ifndef BD_OPENPGP_H
#define BD_OPENPGP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The binary packets of `armored` (malloc'd into *out, *out_len bytes; the caller
 * frees), or false for anything but the plain armor: the BEGIN PGP SIGNATURE line, an
 * empty line, base64 lines of at most 76 characters, a "=" CRC-24 line that matches,
 * the END line, then the end of the text (one final newline allowed). */
bool bd_pgp_dearmor(uint8_t **out, size_t *out_len, const char *armored);

/* The packet starting at `p` (`n` bytes left): its tag, header length and body length.
 * False when the header is malformed, uses a partial or indeterminate length (never a
 * signature's or a key's), or the body runs past `n`. */
bool bd_pgp_packet(const uint8_t *p, size_t n, int *tag, size_t *hdr, size_t *len);

/* True when `p` (n bytes) is exactly one signature packet (tag 2, nothing after it) of
 * version 4 and class 0x00 (a binary document), whatever its algorithms. */
bool bd_pgp_one_binary_v4_signature(const uint8_t *p, size_t n);

/* An Ed25519 signature of the plain shape, read by bd_pgp_eddsa_sig_parse. The pointers
 * point into the packet given, which must outlive this. */
typedef struct bd_pgp_eddsa_sig {
    uint8_t hash_algo;      /* 8 (SHA-256) or 10 (SHA-512) */
    const uint8_t *hashed;  /* version byte .. end of the hashed subpackets */
    size_t hashed_len;      /* what the v4 trailer counts: 6 + the subpacket area */
    uint8_t left16[2];      /* the digest's first two bytes, as the packet states them */
    uint32_t created;       /* the signature creation time subpacket */
    uint8_t issuer_fpr[20]; /* the hashed issuer fingerprint subpacket (version 4) */
    uint8_t sig[64];        /* R ‖ S, each left-padded to 32 bytes */
} bd_pgp_eddsa_sig;

/* Read `p` (n bytes, the whole of one signature packet) as the plain Ed25519 shape: one
 * version-4 signature of class 0x00 by public-key algorithm 22 (EdDSA), hash SHA-256 or
 * SHA-512; hashed subpackets exactly one creation time (2) and one version-4 issuer
 * fingerprint (33), unhashed at most one issuer key id (16) that matches the fingerprint,
 * none of them critical; R and S minimal MPIs of at most 256 bits. False for anything
 * else (GnuPG then decides). */
bool bd_pgp_eddsa_sig_parse(bd_pgp_eddsa_sig *out, const uint8_t *p, size_t n);

/* One version-4 Ed25519 public (sub)key packet of a keyring. */
typedef struct bd_pgp_edkey {
    uint8_t fpr[20];   /* its v4 fingerprint: SHA-1(0x99 ‖ length ‖ body) */
    uint32_t created;  /* its creation time */
    uint8_t point[32]; /* the public key, native Ed25519 encoding */
    bool primary;      /* a public-key packet (tag 6), not a subkey (tag 14) */
} bd_pgp_edkey;

/* Every version-4 EdDSA key on curve Ed25519 in the binary keyring `p` (n bytes), in
 * order, into *out (malloc'd, *n_out entries; the caller frees; NULL and 0 when none).
 * Other packets and keys of other algorithms are skipped; reading stops at the first
 * malformed packet header (what came before stands). Returns false only when out of
 * memory. */
bool bd_pgp_edkeys(bd_pgp_edkey **out, size_t *n_out, const uint8_t *p, size_t n);

/* Whether the Ed25519 signature `s` over the `mlen` bytes of `msg` verifies under
 * `point`: the v4 digest (hash of the message, the hashed part of the packet, then
 * 0x04 0xFF and that part's length as 4 big-endian bytes) must begin with s->left16, and
 * the EdDSA signature over that digest must hold (libsodium: canonical S, no small-order
 * points). Thread-safe. */
bool bd_pgp_eddsa_verify(const bd_pgp_eddsa_sig *s, const uint8_t point[32], const char *msg,
                         size_t mlen);

#endif
