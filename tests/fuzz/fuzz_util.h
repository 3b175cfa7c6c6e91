/*
 * fuzz_util.h — what every fuzz target shares: an invariant that does not hold aborts
 * with the target's file and what broke, so libFuzzer keeps the input as a crash.
 */
#ifndef BD_FUZZ_UTIL_H
#define BD_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>

static inline void fuzz_check(int ok, const char *what, const char *file)
{
    if (!ok) {
        fprintf(stderr, "%s: invariant broken: %s\n", file, what);
        abort();
    }
}

#define check(ok, what) fuzz_check((ok), (what), __FILE__)

#endif
