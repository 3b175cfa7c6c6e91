/*
 * hash.h — BLAKE3 of a buffer, lower-case hex, and the one check of every hex-shaped
 * value the formats use (digests, record hashes, key fingerprints): docs/formats.md#digests.
 *
 * Reentrant, no state. The digests of case directories and task classes, which build on
 * these, are the bench domain's (bench/digest.h).
 */
#ifndef BD_HASH_H
#define BD_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BD_DIGEST_HEX_LEN 64
#define BD_DIGEST_PREFIX  "blake3:"
/* "blake3:" + 64 hex + NUL */
#define BD_DIGEST_BUF 72
/* An OpenPGP v4 primary-key fingerprint: 40 upper-case hex digits. */
#define BD_FPR_HEX_LEN 40

/* Raw 32-byte BLAKE3 of a buffer. */
void bd_blake3_raw(uint8_t out[32], const void *data, size_t len);

/* Lower-case hex of `len` bytes into `out` (2*len+1 bytes). */
void bd_hex(char *out, const uint8_t *bytes, size_t len);

/* "blake3:" + the lower-case hex of BLAKE3(data). Never fails. */
void bd_digest_bytes(char out[BD_DIGEST_BUF], const void *data, size_t len);

/* True when s[0..n) are n lower-case hex digits (s may be shorter: then false). */
bool bd_hex_lower(const char *s, size_t n);

/* True when `s` is exactly n lower-case hex digits and nothing after them. */
bool bd_hex_lower_str(const char *s, size_t n);

/* True when `s` is "blake3:" followed by exactly 64 lower-case hex digits. */
int bd_digest_str_valid(const char *s);

/* True when `s` is exactly 40 upper-case hex digits (a key fingerprint as the formats
 * write it). */
bool bd_fpr_valid(const char *s);

#endif
