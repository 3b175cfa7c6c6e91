/*
 * sha256many.h — SHA-256 of many short messages of one length at once (verify hashes a
 * million 83-byte chain messages, docs/history.md).
 *
 * OpenSSL hashes one message at a time; on a CPU without the SHA extensions that is most
 * of a warm verify. This uses the SHA extensions where the CPU has them, else runs 16
 * messages through the lanes of AVX-512 (8 with AVX2, one at a time otherwise), chosen
 * at run time. The output is exactly SHA-256's (a test
 * compares it with OpenSSL for every length 0..119 and every group size).
 */
#ifndef BD_SHA256MANY_H
#define BD_SHA256MANY_H

#include <stddef.h>
#include <stdint.h>

/* The longest message: two SHA-256 blocks with the padding. */
#define BD_SHA256_MANY_MAX_LEN 119

/* out[i] = SHA-256(msgs[i][0..len)) for i < n; every message `len` <= 119 bytes long. */
void bd_sha256_many(const uint8_t *const *msgs, size_t len, size_t n, uint8_t (*out)[32]);

/* Tests: from now on use the SHA extensions (2), or at most `lanes` lanes (1, 8 or 16),
 * within what the CPU has; returns the width in effect (2: the SHA extensions). */
int bd_sha256_many_test_lanes(int lanes);

#endif
