/*
 * breakdown.c — failure-mode histogram and breakdown-key means over a run (breakdown.h).
 */
#include <stdlib.h>
#include <string.h>

#include "breakdown.h"

static int sev_rank(bd_severity s)
{
    return s == BD_SEV_BLOCK ? 0 : s == BD_SEV_WARN ? 1 : 2;
}

static int mode_cmp(const void *a, const void *b)
{
    const bd_bdown_mode *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (sev_rank(x->severity) != sev_rank(y->severity))
        return sev_rank(x->severity) - sev_rank(y->severity);
    return strcmp(x->code, y->code);
}

static int key_cmp(const void *a, const void *b)
{
    const bd_bdown_key *x = a, *y = b;
    if (x->mean != y->mean)
        return x->mean < y->mean ? -1 : 1;
    return strcmp(x->key, y->key);
}

int bd_bdown_build(bd_bdown *out, const bd_score *const *scores, size_t n)
{
    memset(out, 0, sizeof(*out));
    size_t cap_m = 0, cap_k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!scores[i])
            continue;
        cap_m += scores[i]->n_failure_modes;
        cap_k += scores[i]->n_breakdown;
    }
    out->modes = calloc(cap_m + 1, sizeof(*out->modes));
    out->keys = calloc(cap_k + 1, sizeof(*out->keys));
    if (!out->modes || !out->keys) {
        bd_bdown_release(out);
        return -1;
    }
    /* Linear lookups: a task class declares a handful of modes and keys. */
    for (size_t i = 0; i < n; i++) {
        const bd_score *s = scores[i];
        if (!s)
            continue;
        out->n_scored++;
        for (size_t f = 0; f < s->n_failure_modes; f++) {
            const bd_score_fm *fm = &s->failure_modes[f];
            bool dup = false; /* one case counts once per mode */
            for (size_t g = 0; g < f && !dup; g++)
                dup = strcmp(s->failure_modes[g].code, fm->code) == 0;
            if (dup)
                continue;
            size_t k = 0;
            while (k < out->n_modes && strcmp(out->modes[k].code, fm->code) != 0)
                k++;
            if (k == out->n_modes) {
                out->modes[k].code = fm->code;
                out->modes[k].severity = fm->severity;
                out->n_modes++;
            } else if (sev_rank(fm->severity) < sev_rank(out->modes[k].severity)) {
                out->modes[k].severity = fm->severity;
            }
            out->modes[k].count++;
        }
        for (size_t b = 0; b < s->n_breakdown; b++) {
            const bd_score_breakdown *kv = &s->breakdown[b];
            size_t k = 0;
            while (k < out->n_keys && strcmp(out->keys[k].key, kv->key) != 0)
                k++;
            if (k == out->n_keys) {
                out->keys[k].key = kv->key;
                out->n_keys++;
            }
            bd_bdown_key *o = &out->keys[k];
            o->n++;
            o->mean += (kv->value - o->mean) / (double)o->n; /* running mean */
            o->n_below += kv->value < 1.0;
        }
    }
    qsort(out->modes, out->n_modes, sizeof(*out->modes), mode_cmp);
    qsort(out->keys, out->n_keys, sizeof(*out->keys), key_cmp);
    return 0;
}

bool bd_bdown_has_mode(const bd_score *s, const char *code)
{
    for (size_t f = 0; s && f < s->n_failure_modes; f++)
        if (strcmp(s->failure_modes[f].code, code) == 0)
            return true;
    return false;
}

bool bd_bdown_key_below(const bd_score *s, const char *key)
{
    for (size_t b = 0; s && b < s->n_breakdown; b++)
        if (strcmp(s->breakdown[b].key, key) == 0)
            return s->breakdown[b].value < 1.0;
    return false;
}

void bd_bdown_release(bd_bdown *b)
{
    free(b->modes);
    free(b->keys);
    memset(b, 0, sizeof(*b));
}
