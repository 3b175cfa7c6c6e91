/*
 * strindex.c — an index of string keys over the caller's array (strindex.h).
 */
#include "strindex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a. */
static size_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

void bd_strindex_init(bd_strindex *ix, bd_strindex_key_fn key_of)
{
    memset(ix, 0, sizeof(*ix));
    ix->key_of = key_of;
}

size_t bd_strindex_find(const bd_strindex *ix, const void *entries, size_t n, const char *key)
{
    if (!ix->n_slots)
        return n;
    for (size_t k = key_hash(key) & (ix->n_slots - 1); ix->slots[k];
         k = (k + 1) & (ix->n_slots - 1))
        if (strcmp(ix->key_of(entries, ix->slots[k] - 1), key) == 0)
            return ix->slots[k] - 1;
    return n;
}

/* Entry i into the slots (there is a free one: the table is at most half full). */
static void place(bd_strindex *ix, const void *entries, size_t i)
{
    size_t k = key_hash(ix->key_of(entries, i)) & (ix->n_slots - 1);
    while (ix->slots[k])
        k = (k + 1) & (ix->n_slots - 1);
    ix->slots[k] = i + 1;
}

int bd_strindex_add(bd_strindex *ix, const void *entries, size_t n)
{
    if (2 * n <= ix->n_slots) {
        place(ix, entries, n - 1);
        return 0;
    }
    size_t ns = ix->n_slots ? ix->n_slots * 2 : 64;
    size_t *s = calloc(ns, sizeof(*s));
    if (!s)
        return -1;
    free(ix->slots);
    ix->slots = s;
    ix->n_slots = ns;
    for (size_t i = 0; i < n; i++)
        place(ix, entries, i);
    return 0;
}

void bd_strindex_clear(bd_strindex *ix)
{
    if (ix->slots)
        memset(ix->slots, 0, ix->n_slots * sizeof(*ix->slots));
}

void bd_strindex_release(bd_strindex *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->n_slots = 0;
}
