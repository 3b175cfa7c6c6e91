/*
 * b3many.h — BLAKE3 of many short inputs at once (verify re-hashes a million records).
 *
 * The official C implementation hashes one input at a time with one SIMD lane busy when
 * the input is shorter than a chunk (1 KiB); its internal blake3_hash_many runs up to 16
 * inputs through the lanes together. This drives it for inputs of at most one chunk, and
 * finishes the inputs' last blocks (each with its own length, which those kernels cannot
 * take) eight at a time with AVX2 where the CPU has it, else one at a time. The output is exactly
 * BLAKE3's (tests compare it with the one-input API for every length 0..2048).
 */
#ifndef BD_B3MANY_H
#define BD_B3MANY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* out[i] = BLAKE3(inputs[i][0..lens[i])), 32 bytes, for i < n. Any length works (inputs
 * longer than 1 KiB, or empty, take the one-input path). */
void bd_blake3_many(const uint8_t *const *inputs, const size_t *lens, size_t n, uint8_t (*out)[32]);

/* Tests: whether the last blocks may go eight at a time through AVX2 (on by default; off,
 * each is finished on its own as the one-input API does). */
void bd_blake3_many_test_lanes(bool on);

#endif
