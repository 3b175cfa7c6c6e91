/* bd_sha256_many (sha256many.h) gives exactly SHA-256 (OpenSSL's) for every length it
 * takes, in groups of every size, at every vector width this CPU has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "sha256many.h"

enum { MAXN = 40 };

static void one_width(int want)
{
    int width = bd_sha256_many_test_lanes(want);
    print_message("width %d lanes (asked %d)\n", width, want);
    uint8_t data[MAXN][BD_SHA256_MANY_MAX_LEN];
    const uint8_t *msgs[MAXN];
    for (int i = 0; i < MAXN; i++) {
        for (int j = 0; j < BD_SHA256_MANY_MAX_LEN; j++)
            data[i][j] = (uint8_t)(i * 197 + j * 31 + 11);
        msgs[i] = data[i];
    }
    uint8_t out[MAXN][32], want_md[32];
    for (size_t len = 0; len <= BD_SHA256_MANY_MAX_LEN; len++) {
        for (size_t n = 1; n <= MAXN; n += (n < 20 ? 1 : 7)) {
            memset(out, 0xAA, sizeof(out));
            bd_sha256_many(msgs, len, n, out);
            for (size_t i = 0; i < n; i++) {
                SHA256(msgs[i], len, want_md);
                if (memcmp(out[i], want_md, 32) != 0)
                    fail_msg("width %d, len %zu, n %zu: message %zu differs", width, len, n, i);
            }
            /* Nothing written past n. */
            for (size_t i = n; i < MAXN; i++)
                for (int b = 0; b < 32; b++)
                    assert_int_equal(out[i][b], 0xAA);
        }
    }
}

static void every_width_matches_openssl(void **state)
{
    (void)state;
    one_width(1);
    one_width(2); /* the SHA extensions, where the CPU has them */
    one_width(8);
    one_width(16);
}

/* The chain's own message: "benchdesk-chain-v1\0" || prev || BLAKE3, 83 bytes. */
static void the_chain_message(void **state)
{
    (void)state;
    bd_sha256_many_test_lanes(16);
    uint8_t msg[83];
    memcpy(msg, "benchdesk-chain-v1", 19);
    for (int i = 19; i < 83; i++)
        msg[i] = (uint8_t)i;
    const uint8_t *msgs[1] = {msg};
    uint8_t out[1][32], want_md[32];
    bd_sha256_many(msgs, sizeof(msg), 1, out);
    SHA256(msg, sizeof(msg), want_md);
    assert_memory_equal(out[0], want_md, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_width_matches_openssl),
        cmocka_unit_test(the_chain_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
