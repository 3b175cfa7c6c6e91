/*
 * b3many.c — BLAKE3 of many short inputs at once (b3many.h). Uses the BLAKE3 sources'
 * internal interface (blake3_impl.h: blake3_hash_many, blake3_compress_in_place), which
 * the build compiles from Debian's librust-blake3-dev together with the public one.
 */
#include "b3many.h"

#include <string.h>

#include <blake3.h>
#include <blake3_impl.h>

#include "digest.h"

/* Inputs handled together: a multiple of the widest SIMD degree (16). */
#define B3_GROUP 64

/* BLAKE3 of a single-chunk input whose first `m` blocks gave the chaining value `cvb`
 * (little-endian bytes; the key when m is 0): its last block, as the root. */
static void finish(uint8_t out[32], const uint8_t cvb[32], const uint8_t *in, size_t len, size_t m)
{
    uint32_t cv[8];
    uint8_t block[BLAKE3_BLOCK_LEN];
    for (int i = 0; i < 8; i++)
        cv[i] = load32(cvb + 4 * i);
    size_t rest = len - m * BLAKE3_BLOCK_LEN;
    memset(block, 0, sizeof(block));
    memcpy(block, in + m * BLAKE3_BLOCK_LEN, rest);
    uint8_t flags = CHUNK_END | ROOT | (m == 0 ? CHUNK_START : 0);
    blake3_compress_in_place(cv, block, (uint8_t)rest, 0, flags);
    store_cv_words(out, cv);
}

void bd_blake3_many(const uint8_t *const *inputs, const size_t *lens, size_t n, uint8_t (*out)[32])
{
    uint8_t iv[32];
    store_cv_words(iv, (uint32_t *)IV);
    size_t done = 0;
    while (done < n) {
        /* Up to B3_GROUP inputs with the same number of leading blocks go through the SIMD
         * lanes together; the others wait for their own round. */
        size_t cnt = n - done < B3_GROUP ? n - done : B3_GROUP;
        const uint8_t *grp[B3_GROUP];
        size_t idx[B3_GROUP], ng = 0;
        uint8_t cvs[B3_GROUP][32];
        bool taken[B3_GROUP] = {false};
        for (size_t left = cnt; left > 0;) {
            size_t m = SIZE_MAX;
            ng = 0;
            for (size_t i = 0; i < cnt; i++) {
                size_t k = done + i, len = lens[k];
                if (taken[i])
                    continue;
                if (len == 0 || len > BLAKE3_CHUNK_LEN) {
                    bd_blake3_raw(out[k], inputs[k], len);
                    taken[i] = true;
                    left--;
                    continue;
                }
                size_t mk = (len - 1) / BLAKE3_BLOCK_LEN; /* blocks before the last */
                if (m == SIZE_MAX)
                    m = mk;
                if (mk != m)
                    continue;
                taken[i] = true;
                left--;
                idx[ng] = k;
                grp[ng++] = inputs[k];
            }
            if (ng == 0)
                continue;
            if (m > 0)
                blake3_hash_many(grp, ng, m, IV, 0, false, 0, CHUNK_START, 0, &cvs[0][0]);
            for (size_t j = 0; j < ng; j++)
                finish(out[idx[j]], m > 0 ? cvs[j] : iv, inputs[idx[j]], lens[idx[j]], m);
        }
        done += cnt;
    }
}
