/*
 * b3many.c — BLAKE3 of many short inputs at once (b3many.h). Uses the BLAKE3 sources'
 * internal interface (blake3_impl.h: blake3_hash_many, blake3_compress_in_place), which
 * the build compiles from Debian's librust-blake3-dev together with the public one.
 */
#include "b3many.h"

#include <stdbool.h>
#include <string.h>

#include <blake3.h>
#include <blake3_impl.h>

#include "digest.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define B3_LAST8 1
#endif

/* Inputs handled together: a multiple of the widest SIMD degree (16). */
#define B3_GROUP 64

/* The last block of a single-chunk input of `len` bytes whose first `m` blocks are
 * hashed: copied into `block`, zero-padded. Returns its length; *flags gets its flags as
 * the root. */
static size_t last_block(uint8_t block[BLAKE3_BLOCK_LEN], const uint8_t *in, size_t len, size_t m,
                         uint8_t *flags)
{
    size_t rest = len - m * BLAKE3_BLOCK_LEN;
    memset(block, 0, BLAKE3_BLOCK_LEN);
    memcpy(block, in + m * BLAKE3_BLOCK_LEN, rest);
    *flags = CHUNK_END | ROOT | (m == 0 ? CHUNK_START : 0);
    return rest;
}

/* BLAKE3 of a single-chunk input whose first `m` blocks gave the chaining value `cvb`
 * (little-endian bytes; the key when m is 0): its last block, as the root. */
static void finish(uint8_t out[32], const uint8_t cvb[32], const uint8_t *in, size_t len, size_t m)
{
    uint32_t cv[8];
    uint8_t block[BLAKE3_BLOCK_LEN], flags;
    for (int i = 0; i < 8; i++)
        cv[i] = load32(cvb + 4 * i);
    size_t rest = last_block(block, in, len, m, &flags);
    blake3_compress_in_place(cv, block, (uint8_t)rest, 0, flags);
    store_cv_words(out, cv);
}

static bool last8_allowed = true;

void bd_blake3_many_test_lanes(bool on)
{
    last8_allowed = on;
}

#ifdef B3_LAST8
/* The last blocks of eight inputs at once, one per 32-bit lane of AVX2 registers: the
 * compression function of the BLAKE3 specification (seven rounds of the G function over
 * the columns and the diagonals, the message words permuted by MSG_SCHEDULE) with each
 * lane's own chaining value and block length. The blake3_hash_many kernels cannot do this
 * step: they give every lane the same key and full 64-byte blocks. */
#define B3_AVX2 __attribute__((target("avx2")))

B3_AVX2 static inline __m256i rotr16(__m256i x)
{
    const __m256i k = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3,
                                       0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    return _mm256_shuffle_epi8(x, k);
}

B3_AVX2 static inline __m256i rotr8(__m256i x)
{
    const __m256i k = _mm256_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12, 1, 2,
                                       3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12);
    return _mm256_shuffle_epi8(x, k);
}

B3_AVX2 static inline __m256i rotr12(__m256i x)
{
    return _mm256_or_si256(_mm256_srli_epi32(x, 12), _mm256_slli_epi32(x, 20));
}

B3_AVX2 static inline __m256i rotr7(__m256i x)
{
    return _mm256_or_si256(_mm256_srli_epi32(x, 7), _mm256_slli_epi32(x, 25));
}

#define B3_G(a, b, c, d, x, y)                                                                     \
    do {                                                                                           \
        v[a] = _mm256_add_epi32(_mm256_add_epi32(v[a], v[b]), x);                                  \
        v[d] = rotr16(_mm256_xor_si256(v[d], v[a]));                                               \
        v[c] = _mm256_add_epi32(v[c], v[d]);                                                       \
        v[b] = rotr12(_mm256_xor_si256(v[b], v[c]));                                               \
        v[a] = _mm256_add_epi32(_mm256_add_epi32(v[a], v[b]), y);                                  \
        v[d] = rotr8(_mm256_xor_si256(v[d], v[a]));                                                \
        v[c] = _mm256_add_epi32(v[c], v[d]);                                                       \
        v[b] = rotr7(_mm256_xor_si256(v[b], v[c]));                                                \
    } while (0)

/* out[j] = the root output of lane j: chaining value words cvw[i][j], message words
 * mw[w][j], block length lens[j], all lanes with `flags` and a counter of 0. */
B3_AVX2 static void compress8(uint32_t out[8][8], const uint32_t cvw[8][8],
                              const uint32_t mw[16][8], const uint32_t lens[8], uint8_t flags)
{
    __m256i v[16], m[16];
    for (int w = 0; w < 16; w++)
        m[w] = _mm256_loadu_si256((const __m256i *)mw[w]);
    for (int i = 0; i < 8; i++)
        v[i] = _mm256_loadu_si256((const __m256i *)cvw[i]);
    for (int i = 0; i < 4; i++)
        v[8 + i] = _mm256_set1_epi32((int)IV[i]);
    v[12] = _mm256_setzero_si256(); /* the counter: a single chunk is chunk 0 */
    v[13] = _mm256_setzero_si256();
    v[14] = _mm256_loadu_si256((const __m256i *)lens);
    v[15] = _mm256_set1_epi32(flags);
    for (int r = 0; r < 7; r++) {
        const uint8_t *s = MSG_SCHEDULE[r];
        B3_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B3_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B3_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B3_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B3_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B3_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B3_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B3_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++)
        _mm256_storeu_si256((__m256i *)out[i], _mm256_xor_si256(v[i], v[i + 8]));
}

/* finish() for inputs idx[0..7], whose first `m` blocks gave cvs[0..7] (the key bytes
 * `key` when m is 0), eight at once. */
static void finish8(uint8_t (*out)[32], const uint8_t (*cvs)[32], const uint8_t key[32],
                    const uint8_t *const *inputs, const size_t *lens, const size_t *idx, size_t m)
{
    uint32_t cvw[8][8], mw[16][8], bl[8], res[8][8];
    uint8_t flags = 0;
    for (int j = 0; j < 8; j++) {
        const uint8_t *cvb = m > 0 ? cvs[j] : key;
        uint8_t block[BLAKE3_BLOCK_LEN];
        bl[j] = (uint32_t)last_block(block, inputs[idx[j]], lens[idx[j]], m, &flags);
        for (int i = 0; i < 8; i++)
            cvw[i][j] = load32(cvb + 4 * i);
        for (int w = 0; w < 16; w++)
            mw[w][j] = load32(block + 4 * w);
    }
    compress8(res, cvw, mw, bl, flags); /* one m: the same flags in every lane */
    for (int j = 0; j < 8; j++) {
        uint32_t words[8];
        for (int i = 0; i < 8; i++)
            words[i] = res[i][j];
        store_cv_words(out[idx[j]], words);
    }
}
#endif

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
            size_t j = 0;
#ifdef B3_LAST8
            if (ng >= 8 && last8_allowed && __builtin_cpu_supports("avx2"))
                for (; j + 8 <= ng; j += 8)
                    finish8(out, cvs + j, iv, inputs, lens, idx + j, m);
#endif
            for (; j < ng; j++)
                finish(out[idx[j]], m > 0 ? cvs[j] : iv, inputs[idx[j]], lens[idx[j]], m);
        }
        done += cnt;
    }
}
