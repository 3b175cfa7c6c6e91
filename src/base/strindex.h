/*
 * strindex.h — finding an entry by its string key in an array the caller keeps: open
 * addressing over entry numbers (no key is copied), grown as entries are added. For
 * tables filled once per walk, such as the runs a history walk meets.
 */
#ifndef BD_STRINDEX_H
#define BD_STRINDEX_H

#include <stddef.h>

/* The key of entries[i] (the caller's array, whatever its element type). */
typedef const char *(*bd_strindex_key_fn)(const void *entries, size_t i);

typedef struct bd_strindex {
    bd_strindex_key_fn key_of;
    size_t *slots; /* entry number + 1; 0: empty */
    size_t n_slots;
} bd_strindex;

/* An empty index over keys read with key_of. Owns nothing yet. */
void bd_strindex_init(bd_strindex *ix, bd_strindex_key_fn key_of);

/* The number of the entry of entries[0..n) whose key is `key`; n when there is none. */
size_t bd_strindex_find(const bd_strindex *ix, const void *entries, size_t n, const char *key);

/* Index entries[n - 1], just appended (its key not in the index yet). Returns 0, or -1 when
 * out of memory: then the entry is not indexed and the caller drops it. */
int bd_strindex_add(bd_strindex *ix, const void *entries, size_t n);

/* Forget every entry (the memory is kept for the next fill). */
void bd_strindex_clear(bd_strindex *ix);

/* Free the index's memory; it is then empty. */
void bd_strindex_release(bd_strindex *ix);

#endif
