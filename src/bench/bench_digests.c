/*
 * bench_digests.c — digests.yaml (bench.h): the YAML loader, and the line reader that
 * takes the exact layout `benchdesk pin` writes without a YAML parser, so that 100,000
 * pins load in milliseconds; both give the same result for the same bytes.
 */
#include "bench.h"
#include "bench_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fsutil.h"

/* ---- digests.yaml --------------------------------------------------------------------- */

void bd_digests_free(bd_digests *d)
{
    if (!d)
        return;
    if (d->ids)
        free(d->ids);
    else
        for (size_t i = 0; i < d->n_pins; i++)
            free(d->pins[i].case_id);
    free(d->pins);
    free(d->raw);
    free(d);
}

static int pin_cmp(const void *a, const void *b)
{
    return strcmp(((const bd_pin *)a)->case_id, ((const bd_pin *)b)->case_id);
}

static int digests_from_doc(void *outp, bd_ydoc *doc, const char *expect, bd_err *err)
{
    bd_digests **out = outp;
    (void)expect;
    static const char *const keys[] = {"schema_version", "task_class", "cases", NULL};
    bd_vctx v = {doc->name, BD_E_DIGESTS_SCHEMA, err};
    int rc = -1;
    const bd_ynode *n, *root = doc->root;
    bd_digests *d = calloc(1, sizeof(*d));

    *out = NULL;
    if (!d) {
        bd_v_nomem(&v);
        goto out;
    }
    if (bd_v_root(&v, doc, 2) < 0)
        goto out;
    if (bd_ynode_get(root, "rubric"))
        goto v1;
    if (bd_v_keys(&v, root, "digests.yaml", keys) < 0)
        goto out;
    d->schema_version = 2;
    if (!(n = bd_v_need(&v, root, "task_class", "digests.yaml")) ||
        bd_v_digest(&v, n, "task_class", false, d->task_class, NULL) < 0)
        goto out;
    const bd_ynode *cases = bd_v_need(&v, root, "cases", "digests.yaml");
    if (!cases)
        goto out;
    if (!bd_ynode_is_null(cases)) {
        if (bd_v_map(&v, cases, "cases") < 0)
            goto out;
        if (cases->n && !(d->pins = calloc(cases->n, sizeof(*d->pins)))) {
            bd_v_nomem(&v);
            goto out;
        }
        for (size_t i = 0; i < cases->n; i++) {
            const bd_ynode *k = cases->pairs[i].key;
            if (!bd_name_valid(k->str)) {
                char shown[72];
                bd_ydoc_clip(shown, sizeof(shown), k->str);
                bd_v_fail(&v, BD_E_BAD_ID, k,
                          "case id '%s' must match ^[a-z0-9][a-z0-9._-]{0,127}$ without '..'; "
                          "fix the pin",
                          shown);
                goto out;
            }
            char what[160];
            snprintf(what, sizeof(what), "the pin of case '%s'", k->str);
            bd_pin *p = &d->pins[i];
            if (bd_v_digest(&v, cases->pairs[i].value, what, false, p->digest, NULL) < 0)
                goto out;
            p->line = k->line;
            if (!(p->case_id = strdup(k->str))) {
                bd_v_nomem(&v);
                goto out;
            }
            d->n_pins = i + 1;
        }
        /* Duplicate ids were refused by ydoc (yaml.duplicate_key). */
        if (d->n_pins > 1)
            qsort(d->pins, d->n_pins, sizeof(*d->pins), pin_cmp);
    }
    *out = d;
    d = NULL;
    rc = 0;
    goto out;
v1:
    bd_v_fail(&v, BD_E_FORMAT_V1, bd_ynode_get(root, "rubric"),
              "this file pins the rubric alone (bench format v1); convert the bench with ");
    bd_err_advise(v.err, BD_ACT_MIGRATE, NULL);
    bd_err_append(v.err, " (every signature must then be made again)");
out:
    bd_digests_free(d);
    return rc;
}

static const bd_doc_kind digests_kind = {BD_YKIND_DIGESTS, "digests.yaml files",
                                         BD_E_DIGESTS_SCHEMA, false, digests_from_doc};

/* A block for one of the tables of a large digests.yaml (ids, pins: 10 MB at 100,000
 * cases), which are written once from start to end. From 4 MiB on it is aligned to 2 MiB
 * and the kernel is asked for huge pages: a command reading 100,000 pins then takes a
 * handful of page faults instead of thousands, the largest part of its time (the advice
 * may be ignored; the memory is the same). Free with free(). */
static void *table_alloc(size_t n)
{
    enum { HUGE = 2 << 20 };
    void *p = NULL;
    if (n < 2 * HUGE)
        return malloc(n);
    if (posix_memalign(&p, HUGE, n) != 0)
        return NULL;
    (void)madvise(p, n & ~(size_t)(HUGE - 1), MADV_HUGEPAGE);
    return p;
}

/* What may stand in a case id (bd_name_valid): 1 first and later, 2 later only. A
 * table, not range tests: a 100,000-pin digests.yaml checks over a million of them. */
#define ID_L(c) [c] = 3
static const unsigned char id_class[256] = {
    ID_L('a'), ID_L('b'), ID_L('c'), ID_L('d'), ID_L('e'), ID_L('f'), ID_L('g'), ID_L('h'),
    ID_L('i'), ID_L('j'), ID_L('k'), ID_L('l'), ID_L('m'), ID_L('n'), ID_L('o'), ID_L('p'),
    ID_L('q'), ID_L('r'), ID_L('s'), ID_L('t'), ID_L('u'), ID_L('v'), ID_L('w'), ID_L('x'),
    ID_L('y'), ID_L('z'), ID_L('0'), ID_L('1'), ID_L('2'), ID_L('3'), ID_L('4'), ID_L('5'),
    ID_L('6'), ID_L('7'), ID_L('8'), ID_L('9'), ['.'] = 2, ['_'] = 2, ['-'] = 2};
#undef ID_L

/* The exact layout `benchdesk pin` writes, read without a YAML parser: comment lines of
 * printable ASCII, "schema_version: 2", "task_class: <digest>", "cases:" (or "cases: {}")
 * and one "  <id>: <digest>" line per case, ids valid and strictly increasing, every
 * line ending in "\n". Within this subset YAML has one reading, the one below, so the
 * result equals what libyaml and digests_from_doc make of the same bytes (a unit test
 * and the fuzz target compare both). One pass over the bytes, each id checked by table
 * and against the one before (the order and the absence of duplicates in the same
 * compare, no sort), the ids in one block: a 100,000-case file is read in a few
 * milliseconds. Any other text, however valid, returns 1 and goes through the YAML
 * parser. With `keep` the result takes `buf` (a malloc'd buffer of the caller's) as its
 * raw bytes on success; with `out` NULL the bytes are only judged (nothing is allocated,
 * nothing copied). Returns 0 with *out, 1 when the text is not in the subset, -1 when out
 * of memory. */
static int digests_canonical(bd_digests **out, char *buf, size_t len, bool keep)
{
    const char *p = buf, *end = buf + len;
    if (out)
        *out = NULL;
    /* A NUL anywhere fails one of the tests below (comment characters, the fixed text,
     * the id characters, the digest digits): no scan of its own. */
    if (len == 0 || buf[len - 1] != '\n')
        return 1;
    int line = 1;
    while (p < end && *p == '#') {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        for (const char *q = p; q < eol; q++)
            if (!((*q >= 0x20 && *q <= 0x7e) || *q == '\t'))
                return 1;
        p = eol + 1;
        line++;
    }
    static const char head[] = "schema_version: 2\ntask_class: ";
    if ((size_t)(end - p) < sizeof(head) - 1 + BD_DIGEST_STR_LEN + 1 ||
        memcmp(p, head, sizeof(head) - 1) != 0)
        return 1;
    p += sizeof(head) - 1;
    if (!bd_v_digest_bytes_ok(p) || p[BD_DIGEST_STR_LEN] != '\n')
        return 1;
    const char *tcd = p;
    p += BD_DIGEST_STR_LEN + 1;
    line += 2;
    bool empty = false;
    if ((size_t)(end - p) >= 10 && memcmp(p, "cases: {}\n", 10) == 0) {
        empty = true;
        p += 10;
    } else if ((size_t)(end - p) >= 7 && memcmp(p, "cases:\n", 7) == 0) {
        p += 7;
    } else {
        return 1;
    }
    line++;
    if (empty && p != end)
        return 1;
    if (!empty && p == end)
        return 1; /* "cases:" with nothing below is null: the YAML parser's to judge */
    /* Each pin line is at least "  x: " + a digest + "\n"; the ids take fewer bytes than
     * their lines (pages of the block never written are never touched). */
    size_t max_pins = (size_t)(end - p) / (5 + BD_DIGEST_STR_LEN + 1), n_pins = 0;
    bd_digests *d = NULL;
    char *ids = NULL;
    if (out) {
        if (!(d = calloc(1, sizeof(*d))) ||
            (max_pins && !(d->pins = table_alloc(max_pins * sizeof(*d->pins)))) ||
            (max_pins && !(d->ids = table_alloc((size_t)(end - p))))) {
            if (d)
                free(d->pins);
            free(d);
            return -1;
        }
        d->schema_version = 2;
        memcpy(d->task_class, tcd, BD_DIGEST_STR_LEN);
        d->task_class[BD_DIGEST_STR_LEN] = '\0';
        ids = d->ids;
    }
    const char *prev = NULL;
    size_t prev_len = 0;
    while (p < end) {
        /* The buffer ends in '\n' (class 0), so every scan below stops inside it. */
        if (p[0] != ' ' || p[1] != ' ')
            goto odd;
        const unsigned char *id = (const unsigned char *)p + 2, *q = id;
        if (!(id_class[*q] & 1))
            goto odd;
        for (q++; id_class[*q]; q++)
            if (*q == '.' && q[-1] == '.') /* no ".." anywhere (bd_name_valid) */
                goto odd;
        size_t id_len = (size_t)(q - id);
        const char *colon = (const char *)q;
        if (id_len > 128 || *colon != ':' || (size_t)(end - colon) < 2 + BD_DIGEST_STR_LEN + 1 ||
            colon[1] != ' ' || colon[2 + BD_DIGEST_STR_LEN] != '\n' ||
            !bd_v_digest_bytes_ok(colon + 2) || n_pins >= max_pins)
            goto odd;
        if (prev) {
            /* strcmp's order for ids (no NUL inside): strictly increasing. */
            int c = memcmp(prev, id, prev_len < id_len ? prev_len : id_len);
            if (c > 0 || (c == 0 && prev_len >= id_len))
                goto odd;
        }
        if (d) {
            bd_pin *pin = &d->pins[d->n_pins++];
            memcpy(ids, id, id_len);
            ids[id_len] = '\0';
            pin->case_id = ids;
            ids += id_len + 1;
            /* 72 bytes (the digest and its '\n'), a size the compiler copies in words. */
            memcpy(pin->digest, colon + 2, BD_DIGEST_STR_LEN + 1);
            pin->digest[BD_DIGEST_STR_LEN] = '\0';
            pin->line = line;
            pin->off = (unsigned)(p - buf); /* len <= BD_DIGESTS_MAX_BYTES */
        }
        n_pins++;
        line++;
        prev = (const char *)id;
        prev_len = id_len;
        p = colon + 2 + BD_DIGEST_STR_LEN + 1;
    }
    if (d && keep) {
        d->raw = buf;
        d->raw_len = len;
    }
    if (out)
        *out = d;
    return 0;
odd:
    bd_digests_free(d);
    return 1;
}

int bd_digests_parse(bd_digests **out, const char *buf, size_t len, const char *name, bd_err *err)
{
    bd_doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    if (len <= BD_DIGESTS_MAX_BYTES) {
        /* Read only: without `keep` the line reader never writes to the buffer. */
        int c = digests_canonical(out, (char *)buf, len, false);
        if (c <= 0)
            return c == 0 ? 0 : bd_err_set(err, BD_E_NOMEM, name, 0, 0, "out of memory");
    }
    return bd_doc_read(&digests_kind, out, &src, NULL, err);
}

bool bd_digests_canonical_ok(const char *buf, size_t len)
{
    return len <= BD_DIGESTS_MAX_BYTES && digests_canonical(NULL, (char *)buf, len, false) == 0;
}

/* The YAML parser alone, for the test that compares it with the canonical reader. */
int bd_digests_parse_yaml(bd_digests **out, const char *buf, size_t len, const char *name,
                          bd_err *err)
{
    bd_doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return bd_doc_read(&digests_kind, out, &src, NULL, err);
}

int bd_digests_load(bd_digests **out, const char *path, bd_err *err)
{
    bd_doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    /* The file as pin writes it is read without the YAML parser, and its bytes are kept;
     * anything else (a read error, a link, over the limit, another layout) goes the YAML
     * way, which reports it. */
    char *buf = NULL;
    size_t len = 0;
    if (bd_read_file(&buf, &len, path, BD_DIGESTS_MAX_BYTES, BD_E_YAML_TOO_LARGE, NULL) == 0) {
        int c = digests_canonical(out, buf, len, true);
        if (c == 0)
            return 0;
        free(buf);
        if (c < 0)
            return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
    }
    return bd_doc_read(&digests_kind, out, &src, NULL, err);
}

const bd_pin *bd_digests_find(const bd_digests *d, const char *case_id)
{
    if (!d || !case_id || d->n_pins == 0)
        return NULL;
    bd_pin key = {.case_id = (char *)case_id};
    return bsearch(&key, d->pins, d->n_pins, sizeof(*d->pins), pin_cmp);
}
