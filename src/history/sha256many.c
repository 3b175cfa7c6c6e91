/*
 * sha256many.c — SHA-256 of many short messages at once (see sha256many.h): one message
 * per vector lane, the same compression compiled for AVX-512, AVX2 and plain C, picked
 * once by what the CPU says it has.
 */
#include "sha256many.h"

#include <pthread.h>
#include <string.h>

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

static int lanes, lanes_max;
static pthread_once_t lanes_once = PTHREAD_ONCE_INIT;

static void pick_lanes(void)
{
    lanes = 1;
#ifdef BD_SHA256_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        lanes = 16;
    else if (__builtin_cpu_supports("avx2"))
        lanes = 8;
#endif
    lanes_max = lanes;
}

int bd_sha256_many_test_lanes(int want)
{
    pthread_once(&lanes_once, pick_lanes);
    int w = want >= 16 ? 16 : want >= 8 ? 8 : 1;
    lanes = w < lanes_max ? w : lanes_max;
    return lanes;
}

void bd_sha256_many(const uint8_t *const *msgs, size_t len, size_t n, uint8_t (*out)[32])
{
    pthread_once(&lanes_once, pick_lanes);
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
