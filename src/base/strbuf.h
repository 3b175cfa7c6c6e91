/*
 * strbuf.h — a growable, always NUL-terminated byte buffer for building text (YAML
 * files the core writes). Out of memory is sticky: later appends do nothing and
 * bd_strbuf_take returns NULL, so a builder checks once at the end.
 */
#ifndef BD_STRBUF_H
#define BD_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bd_strbuf {
    char *p; /* NULL until the first append */
    size_t len, cap;
    bool oom;
} bd_strbuf;

#define BD_STRBUF_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0, false                                                                          \
    }

/* Append `n` bytes of `s`. */
void bd_strbuf_add(bd_strbuf *b, const char *s, size_t n);
/* Append the string `s`. */
void bd_strbuf_str(bd_strbuf *b, const char *s);
/* The text (caller frees; "" when nothing was appended), or NULL after an allocation
 * failure (the buffer is freed either way). */
char *bd_strbuf_take(bd_strbuf *b);
/* Free without taking. */
void bd_strbuf_release(bd_strbuf *b);

/* qsort/bsearch comparator over an array of `const char *` (strcmp order). */
int bd_str_ptr_cmp(const void *a, const void *b);

/* True when `s` is one of the `n` strings of `sorted` (sorted by bd_str_ptr_cmp). */
bool bd_str_sorted_has(const char *const *sorted, size_t n, const char *s);

#endif
