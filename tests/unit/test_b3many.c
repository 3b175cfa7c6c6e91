/* bd_blake3_many (b3many.h) gives exactly BLAKE3's digest for every length around the
 * block and chunk boundaries, in groups that mix lengths (as verify's batches do). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "b3many.h"
#include "digest.h"

#define MAXLEN 2100

static void every_length_as_the_one_input_api(void **state)
{
    (void)state;
    uint8_t *data = malloc(MAXLEN);
    assert_non_null(data);
    for (size_t i = 0; i < MAXLEN; i++)
        data[i] = (uint8_t)(i * 131 + 7);
    enum { N = 150 };
    const uint8_t *in[N];
    size_t lens[N];
    uint8_t out[N][32], want[32];
    /* Lengths 0..MAXLEN-1 in groups of N, shuffled so each group mixes block counts. */
    for (size_t base = 0; base < MAXLEN; base += N) {
        size_t n = MAXLEN - base < N ? MAXLEN - base : N;
        for (size_t j = 0; j < n; j++) {
            lens[j] = base + (j * 37) % n;
            in[j] = data + (j % 5); /* different start offsets too */
            if (lens[j] + 5 > MAXLEN)
                lens[j] = MAXLEN - 5;
        }
        bd_blake3_many(in, lens, n, out);
        for (size_t j = 0; j < n; j++) {
            bd_blake3_raw(want, in[j], lens[j]);
            assert_memory_equal(out[j], want, 32);
        }
    }
    free(data);
}

/* Groups of one block count whose last blocks differ in length (1..64 bytes, and whole
 * inputs of 1..64 bytes: the key as the chaining value), more than eight at a time and a
 * remainder: the same digests with the last blocks finished eight at once (AVX2, where the
 * CPU has it) and one at a time. */
static void last_blocks_eight_at_once_and_alone(void **state)
{
    (void)state;
    enum { N = 64 + 7 };
    uint8_t *data = malloc(MAXLEN);
    assert_non_null(data);
    for (size_t i = 0; i < MAXLEN; i++)
        data[i] = (uint8_t)(i * 29 + 3);
    const uint8_t *in[N];
    size_t lens[N];
    uint8_t lanes[N][32], alone[N][32], want[32];
    for (size_t blocks = 0; blocks < 16; blocks++) {
        for (size_t j = 0; j < N; j++) {
            lens[j] = blocks * 64 + 1 + (j * 13) % 64; /* 1..64 bytes in the last block */
            in[j] = data + j % 17;
        }
        bd_blake3_many_test_lanes(true);
        bd_blake3_many(in, lens, N, lanes);
        bd_blake3_many_test_lanes(false);
        bd_blake3_many(in, lens, N, alone);
        bd_blake3_many_test_lanes(true);
        for (size_t j = 0; j < N; j++) {
            bd_blake3_raw(want, in[j], lens[j]);
            assert_memory_equal(lanes[j], want, 32);
            assert_memory_equal(alone[j], want, 32);
        }
    }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_length_as_the_one_input_api),
        cmocka_unit_test(last_blocks_eight_at_once_and_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
