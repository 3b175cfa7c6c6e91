#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

void bd_strbuf_add(bd_strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > nc)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void bd_strbuf_str(bd_strbuf *b, const char *s)
{
    bd_strbuf_add(b, s, strlen(s));
}

char *bd_strbuf_take(bd_strbuf *b)
{
    if (!b->oom && !b->p)
        bd_strbuf_add(b, "", 0);
    char *p = b->oom ? NULL : b->p;
    if (b->oom)
        free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    return p;
}

void bd_strbuf_release(bd_strbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

int bd_str_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool bd_str_sorted_has(const char *const *sorted, size_t n, const char *s)
{
    return n && s && bsearch(&s, sorted, n, sizeof(*sorted), bd_str_ptr_cmp) != NULL;
}
