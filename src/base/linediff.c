#include "linediff.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    const char *p;
    size_t len;
} span;

/* Split into lines (a final newline does not start an empty line). */
static span *split(const char *t, size_t len, size_t *n)
{
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += t[i] == '\n';
    span *s = calloc(cap, sizeof(*s));
    if (!s)
        return NULL;
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || t[i] == '\n') {
            if (i == len && start == len)
                break;
            s[k].p = t + start;
            s[k].len = i - start;
            k++;
            start = i + 1;
        }
    }
    *n = k;
    return s;
}

static int same(const span *x, const span *y)
{
    return x->len == y->len && memcmp(x->p, y->p, x->len) == 0;
}

int bd_line_diff(bd_diff_line **out, size_t *n, const char *a, size_t alen, const char *b,
                 size_t blen, bd_err *err)
{
    *out = NULL;
    *n = 0;
    size_t na = 0, nb = 0;
    span *la = split(a ? a : "", a ? alen : 0, &na);
    span *lb = split(b ? b : "", b ? blen : 0, &nb);
    bd_diff_line *d = calloc(na + nb + 1, sizeof(*d));
    uint16_t *t = NULL;
    bool exact = na <= BD_LINEDIFF_MAX_LINES && nb <= BD_LINEDIFF_MAX_LINES;
    if (exact)
        t = calloc((na + 1) * (nb + 1), sizeof(*t));
    if (!la || !lb || !d || (exact && !t)) {
        free(la);
        free(lb);
        free(d);
        free(t);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    size_t k = 0;
    if (exact) {
        /* t[i][j]: length of the LCS of la[i..] and lb[j..]. */
        size_t w = nb + 1;
        for (size_t i = na; i-- > 0;)
            for (size_t j = nb; j-- > 0;)
                t[i * w + j] = same(&la[i], &lb[j]) ? (uint16_t)(t[(i + 1) * w + j + 1] + 1)
                               : t[(i + 1) * w + j] >= t[i * w + j + 1] ? t[(i + 1) * w + j]
                                                                        : t[i * w + j + 1];
        size_t i = 0, j = 0;
        while (i < na || j < nb) {
            if (i < na && j < nb && same(&la[i], &lb[j])) {
                d[k++] = (bd_diff_line){BD_DIFF_SAME, la[i].p, la[i].len};
                i++;
                j++;
            } else if (j < nb && (i == na || t[i * w + j + 1] > t[(i + 1) * w + j])) {
                d[k++] = (bd_diff_line){BD_DIFF_ADD, lb[j].p, lb[j].len};
                j++;
            } else {
                d[k++] = (bd_diff_line){BD_DIFF_DEL, la[i].p, la[i].len};
                i++;
            }
        }
    } else {
        for (size_t i = 0; i < na; i++)
            d[k++] = (bd_diff_line){BD_DIFF_DEL, la[i].p, la[i].len};
        for (size_t j = 0; j < nb; j++)
            d[k++] = (bd_diff_line){BD_DIFF_ADD, lb[j].p, lb[j].len};
    }
    free(la);
    free(lb);
    free(t);
    *out = d;
    *n = k;
    return 0;
}
