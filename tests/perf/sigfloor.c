/*
 * sigfloor.c — the floor of checking many Ed25519 signatures in-process
 * (docs/provenance.md#verifying-many-signatures).
 *
 *   bd_perf_sigfloor COUNT [THREADS]
 *
 * Checks COUNT Ed25519 signatures over 32-byte digests (as an OpenPGP EdDSA signature
 * over a SHA-256 digest is checked) with libsodium, the call benchdesk's in-process check
 * makes, on THREADS threads (default: the online CPUs) taking them from one shared
 * counter — and nothing else: no armor, no packet, no key lookup, no file. A cold verify
 * of a bench with COUNT signatures, each checked in-process, cannot take less wall time
 * than this beside the walk floor (walkfloor.c).
 *
 * Prints one line: signatures, threads, wall seconds, microseconds of one CPU per
 * signature. Exit 0, or 1 when a signature does not verify or libsodium cannot start.
 */
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DISTINCT 64 /* signatures over distinct digests, checked in turn */

static uint8_t pk[32], digests[DISTINCT][32], sigs[DISTINCT][64];
static atomic_long next_sig, failures;
static long total;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        long i = atomic_fetch_add(&next_sig, 1);
        if (i >= total)
            return NULL;
        if (crypto_sign_ed25519_verify_detached(sigs[i % DISTINCT], digests[i % DISTINCT], 32,
                                                pk) != 0)
            atomic_fetch_add(&failures, 1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (total = atol(argv[1])) <= 0) {
        fprintf(stderr, "usage: bd_perf_sigfloor COUNT [THREADS]\n");
        return 2;
    }
    long threads = argc == 3 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1 || threads > 256 || sodium_init() < 0) {
        fprintf(stderr, "sigfloor: bad THREADS or libsodium did not start\n");
        return 1;
    }
    uint8_t sk[64];
    crypto_sign_ed25519_keypair(pk, sk);
    for (int i = 0; i < DISTINCT; i++) {
        randombytes_buf(digests[i], 32);
        crypto_sign_ed25519_detached(sigs[i], NULL, digests[i], 32, sk);
    }
    pthread_t tid[256];
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double t0 = now();
    for (long i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, NULL) != 0) {
            fprintf(stderr, "sigfloor: cannot start a thread\n");
            return 1;
        }
    for (long i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    double wall = now() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    if (atomic_load(&failures)) {
        fprintf(stderr, "sigfloor: %ld signatures did not verify\n", atomic_load(&failures));
        return 1;
    }
    printf("sigfloor: %ld signatures, %ld threads, %.3f s wall, %.1f us CPU per signature\n", total,
           threads, wall, cpu * 1e6 / (double)total);
    return 0;
}
