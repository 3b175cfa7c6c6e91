/*
 * parfor.h — one job per index on a few threads, for work that mostly waits on other
 * processes (GnuPG checking signatures): the calling thread works too.
 */
#ifndef BD_PARFOR_H
#define BD_PARFOR_H

#include <stddef.h>

#include "err.h"

/* Call fn(i, ctx, err) for every i in 0..n-1, on up to `threads` threads (the caller's
 * included; fewer when a thread cannot be started, one when n < `min_parallel`), in no
 * particular order. fn returns 0, or -1 with its error: no new index is started after a
 * failure, and the first failure's error is copied to `err`. fn must be safe to call
 * from several threads at once. Returns 0, or -1. */
int bd_parfor(size_t n, size_t threads, size_t min_parallel,
              int (*fn)(size_t i, void *ctx, bd_err *err), void *ctx, bd_err *err);

#endif
