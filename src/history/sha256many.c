/*
 * sha256many.c — SHA-256 of many short messages at once (see sha256many.h): one message
 * per vector lane, the same compression compiled for AVX-512, AVX2 and plain C, picked
 * once by what the CPU says it has.
 */
#include "sha256many.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static const uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

typedef uint32_t v1 __attribute__((vector_size(4)));
typedef uint32_t v8 __attribute__((vector_size(32)));
typedef uint32_t v16 __attribute__((vector_size(64)));

#define VEC      v1
#define LANES    1
#define COMPRESS compress1
#define MANY     many1
#define TARGET
#include "sha256many_impl.h"
#undef VEC
#undef LANES
#undef COMPRESS
#undef MANY
#undef TARGET

#if defined(__x86_64__) && defined(__GNUC__)
#define BD_SHA256_X86 1
#define VEC           v8
#define LANES         8
#define COMPRESS      compress8
#define MANY          many8
#define TARGET        __attribute__((target("avx2")))
#include "sha256many_impl.h"
#undef VEC
#undef LANES
#undef COMPRESS
#undef MANY
#undef TARGET

#define VEC      v16
#define LANES    16
#define COMPRESS compress16
#define MANY     many16
#define TARGET   __attribute__((target("avx512f")))
#include "sha256many_impl.h"
#undef VEC
#undef LANES
#undef COMPRESS
#undef MANY
#undef TARGET
#endif

#ifdef BD_SHA256_X86
/* The SHA extensions (SHA-NI): four rounds an instruction pair, one message at a time;
 * where the CPU has them they beat every lane width. `st` in the usual a..h order. */
__attribute__((target("sha,sse4.1,ssse3"))) static void
compress_shani(uint32_t st[8], const uint8_t *blk, size_t nblocks)
{
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)(const void *)&st[0]);
    __m128i s1 = _mm_loadu_si128((const __m128i *)(const void *)&st[4]);
    tmp = _mm_shuffle_epi32(tmp, 0xB1);       /* CDAB */
    s1 = _mm_shuffle_epi32(s1, 0x1B);         /* EFGH */
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8); /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);      /* CDGH */
    for (size_t b = 0; b < nblocks; b++, blk += 64) {
        __m128i save0 = s0, save1 = s1, m[4];
        for (int g = 0; g < 16; g++) {
            __m128i w;
            if (g < 4) {
                w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(blk + 16 * g)),
                                     swap);
            } else {
                /* W[t..t+3] from the groups g-4 .. g-1 (m[g&3] .. m[(g+3)&3]). */
                __m128i t = _mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
                w = _mm_sha256msg2_epu32(t, m[(g + 3) & 3]);
            }
            m[g & 3] = w;
            __m128i msg =
                _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)(const void *)&K[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(msg, 0x0E));
        }
        s0 = _mm_add_epi32(s0, save0);
        s1 = _mm_add_epi32(s1, save1);
    }
    tmp = _mm_shuffle_epi32(s0, 0x1B);   /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);    /* DCHG */
    s0 = _mm_blend_epi16(tmp, s1, 0xF0); /* DCBA */
    s1 = _mm_alignr_epi8(s1, tmp, 8);    /* HGFE */
    _mm_storeu_si128((__m128i *)(void *)&st[0], s0);
    _mm_storeu_si128((__m128i *)(void *)&st[4], s1);
}

static void many_shani(const uint8_t *const *msgs, size_t len, size_t n, uint8_t (*out)[32])
{
    size_t nblocks = len + 9 <= 64 ? 1 : 2;
    for (size_t l = 0; l < n; l++) {
        uint8_t pad[128];
        uint32_t st[8];
        memcpy(st, IV, sizeof(st));
        memcpy(pad, msgs[l], len);
        memset(pad + len, 0, sizeof(pad) - len);
        pad[len] = 0x80;
        uint64_t bits = (uint64_t)len * 8;
        for (int j = 0; j < 8; j++)
            pad[nblocks * 64 - 1 - j] = (uint8_t)(bits >> (8 * j));
        compress_shani(st, pad, nblocks);
        for (int i = 0; i < 8; i++) {
            out[l][4 * i] = (uint8_t)(st[i] >> 24);
            out[l][4 * i + 1] = (uint8_t)(st[i] >> 16);
            out[l][4 * i + 2] = (uint8_t)(st[i] >> 8);
            out[l][4 * i + 3] = (uint8_t)st[i];
        }
    }
}

static bool cpu_has_sha(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29) & 1;
}
#endif

/* The width in use: 1, 8 or 16 lanes, or LANES_SHANI. */
#define LANES_SHANI 2
static int lanes;
static bool has_shani, has_avx2, has_avx512;
static pthread_once_t lanes_once = PTHREAD_ONCE_INIT;

static void pick_lanes(void)
{
    lanes = 1;
#ifdef BD_SHA256_X86
    __builtin_cpu_init();
    has_shani =
        cpu_has_sha() && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3");
    has_avx512 = __builtin_cpu_supports("avx512f");
    has_avx2 = __builtin_cpu_supports("avx2");
    lanes = has_shani ? LANES_SHANI : has_avx512 ? 16 : has_avx2 ? 8 : 1;
#endif
}

int bd_sha256_many_test_lanes(int want)
{
    pthread_once(&lanes_once, pick_lanes);
    switch (want) {
    case LANES_SHANI:
        lanes = has_shani ? LANES_SHANI : 1;
        break;
    case 16:
        lanes = has_avx512 ? 16 : has_avx2 ? 8 : 1;
        break;
    case 8:
        lanes = has_avx2 ? 8 : 1;
        break;
    default:
        lanes = 1;
    }
    return lanes;
}

void bd_sha256_many(const uint8_t *const *msgs, size_t len, size_t n, uint8_t (*out)[32])
{
    pthread_once(&lanes_once, pick_lanes);
#ifdef BD_SHA256_X86
    if (lanes == LANES_SHANI) {
        many_shani(msgs, len, n, out);
        return;
    }
#endif
    while (n > 0) {
        size_t k;
#ifdef BD_SHA256_X86
        if (lanes == 16 && n > 4) {
            k = n < 16 ? n : 16;
            many16(msgs, len, k, out);
        } else if (lanes >= 8 && n > 2) {
            k = n < 8 ? n : 8;
            many8(msgs, len, k, out);
        } else
#endif
        {
            k = 1;
            many1(msgs, len, 1, out);
        }
        msgs += k;
        out += k;
        n -= k;
    }
}
