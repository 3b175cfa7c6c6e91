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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_length_as_the_one_input_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
