/*
 * fuzz_case_yaml.c — libFuzzer target for the YAML reader and the case.yaml loader (and,
 * on the same bytes, the other typed loaders: registration, digests, trusted signers and
 * provenance.yaml).
 *
 * Beyond "no crash, no leak, no UB" it checks the contracts that hold for any input: a
 * failure has a code and a one-line message naming the file; a success yields values the
 * loader promised (valid id, well-formed digests and fingerprints, a mapping for
 * `expected`), and the JSON export never fails on a loaded case. digests.yaml bytes that
 * the line reader takes (the layout `pin` writes) give libyaml's reading exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ydoc.h"

static void check_err(int rc, const bd_err *err)
{
    if (rc == 0)
        return;
    if (rc != -1 || err->code == BD_OK || err->code >= BD_E__COUNT || err->msg[0] == '\0' ||
        strchr(err->msg, '\n') || strncmp(err->msg, "fuzz.yaml", 9) != 0)
        abort();
}

static void check_digest(const char *d, bool allow_empty)
{
    size_t n = strlen(d);
    if (n == 0 && allow_empty)
        return;
    if (n != BD_DIGEST_STR_LEN || strncmp(d, "blake3:", 7) != 0)
        abort();
    for (size_t i = 7; i < n; i++)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
            abort();
}

static void check_fpr(const char *f)
{
    if (strlen(f) != BD_FPR_LEN)
        abort();
    for (size_t i = 0; i < BD_FPR_LEN; i++)
        if (!((f[i] >= '0' && f[i] <= '9') || (f[i] >= 'A' && f[i] <= 'F')))
            abort();
}

static void walk(const bd_ynode *n, int depth)
{
    if (!n)
        return;
    if (depth > BD_YAML_MAX_DEPTH)
        abort();
    switch (n->kind) {
    case BD_Y_SCALAR:
        if (strlen(n->str) != n->len)
            abort();
        break;
    case BD_Y_MAP:
        for (size_t i = 0; i < n->n; i++) {
            if (n->pairs[i].key->kind != BD_Y_SCALAR)
                abort();
            walk(n->pairs[i].value, depth + (n->pairs[i].value->kind != BD_Y_SCALAR));
        }
        break;
    case BD_Y_SEQ:
        for (size_t i = 0; i < n->n; i++)
            walk(n->items[i], depth + (n->items[i]->kind != BD_Y_SCALAR));
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    bd_err err = BD_ERR_INIT;

    bd_ydoc *doc = NULL;
    int rc = bd_ydoc_parse(&doc, buf, size, "fuzz.yaml", &err);
    check_err(rc, &err);
    if (rc == 0) {
        walk(doc->root, doc->root && doc->root->kind != BD_Y_SCALAR);
        cJSON *j = bd_ynode_to_json(doc->root);
        if (!j)
            abort();
        cJSON_Delete(j);
        bd_ydoc_free(doc);
    }

    bd_case *c = NULL;
    rc = bd_case_parse(&c, buf, size, "fuzz.yaml", NULL, &err);
    check_err(rc, &err);
    if (rc == 0) {
        if (!bd_name_valid(c->case_id) || !c->expected || c->expected->kind != BD_Y_MAP)
            abort();
        check_digest(c->cassette_digest, !c->has_cassette_digest);
        cJSON *j = bd_case_to_json(c);
        if (!j)
            abort();
        cJSON_Delete(j);
        bd_case_free(c);
    }

    bd_registration *r = NULL;
    rc = bd_registration_parse(&r, buf, size, "fuzz.yaml", NULL, &err);
    check_err(rc, &err);
    bd_registration_free(r);

    bd_provfile *p = NULL;
    rc = bd_provfile_parse(&p, buf, size, "fuzz.yaml", &err);
    check_err(rc, &err);
    if (rc == 0) {
        if (p->author.present) {
            check_fpr(p->author.fingerprint);
            if (!p->author.signature || !p->author.signed_at)
                abort();
        }
        if (p->reviewer.present) {
            check_fpr(p->reviewer.fingerprint);
            if (!p->reviewer.signature || !p->reviewer.signed_at)
                abort();
        }
    }
    bd_provfile_free(p);

    bd_digests *d = NULL;
    rc = bd_digests_parse(&d, buf, size, "fuzz.yaml", &err);
    check_err(rc, &err);
    if (rc == 0) {
        check_digest(d->task_class, false);
        for (size_t i = 0; i < d->n_pins; i++)
            if (!bd_name_valid(d->pins[i].case_id) ||
                bd_digests_find(d, d->pins[i].case_id) != &d->pins[i])
                abort();
    }
    /* Bytes the line reader takes, libyaml reads the same way: the same pins, in order. */
    if (bd_digests_canonical_ok(buf, size)) {
        bd_digests *y = NULL;
        bd_err yerr = BD_ERR_INIT;
        if (rc != 0 || bd_digests_parse_yaml(&y, buf, size, "fuzz.yaml", &yerr) != 0 ||
            strcmp(y->task_class, d->task_class) != 0 || y->n_pins != d->n_pins)
            abort();
        for (size_t i = 0; i < d->n_pins; i++)
            if (strcmp(y->pins[i].case_id, d->pins[i].case_id) != 0 ||
                strcmp(y->pins[i].digest, d->pins[i].digest) != 0 ||
                y->pins[i].line != d->pins[i].line)
                abort();
        bd_digests_free(y);
    }
    bd_digests_free(d);

    bd_signers *s = NULL;
    rc = bd_signers_parse(&s, buf, size, "fuzz.yaml", &err);
    check_err(rc, &err);
    if (rc == 0)
        for (size_t i = 0; i < s->n; i++)
            check_fpr(s->signers[i].fingerprint);
    bd_signers_free(s);
    return 0;
}
