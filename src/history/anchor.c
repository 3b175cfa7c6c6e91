/*
 * anchor.c — publishing and verifying signed chain-head anchors (anchor.h, docs/history.md).
 *
 * Signatures are checked with provenance.h's context (bd_prov_verify_detached): a private
 * GnuPG home holding only the bench's own public keys, whose gpg.conf turns off agent
 * autostart and key retrieval, so verifying starts no daemon and touches no network.
 * Signing uses the curator's keyring through provenance.h.
 */
#include "anchor.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "canon.h"
#include "fsutil.h"
#include "hash.h"

#define ANCHOR_FILE_MAX (256 * 1024)

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

/* ---- formats ------------------------------------------------------------------------ */

static bool valid_date(const char *s)
{
    if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return false;
    int v[3] = {0, 0, 0}, pos[3] = {0, 5, 8}, len[3] = {4, 2, 2};
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < len[f]; i++) {
            char c = s[pos[f] + i];
            if (c < '0' || c > '9')
                return false;
            v[f] = v[f] * 10 + (c - '0');
        }
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (v[1] < 1 || v[1] > 12 || v[2] < 1)
        return false;
    bool leap = (v[0] % 4 == 0 && v[0] % 100 != 0) || v[0] % 400 == 0;
    return v[2] <= mdays[v[1] - 1] + (v[1] == 2 && leap ? 1 : 0);
}

void bd_anchor_release(bd_anchor *a)
{
    if (!a)
        return;
    free(a->signature);
    memset(a, 0, sizeof(*a));
}

int bd_anchor_message(char **out, size_t *len, const char *date, uint64_t count,
                      const char *chain_head, bd_err *err)
{
    *out = NULL;
    if (!valid_date(date) || count == 0 || !bd_hex_lower_str(chain_head, BD_HASH_HEX_LEN))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "an anchor needs a date YYYY-MM-DD, a count of at least 1 and a "
                          "64-hex chain head");
    size_t cap = 160;
    char *m = malloc(cap);
    if (!m)
        return nomem(err);
    int n = snprintf(m, cap, BD_ANCHOR_MAGIC "\ndate: %s\ncount: %llu\nchain_head: %s\n", date,
                     (unsigned long long)count, chain_head);
    if (n < 0 || (size_t)n >= cap) {
        free(m);
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "anchor message too long");
    }
    *out = m;
    if (len)
        *len = (size_t)n;
    return 0;
}

static cJSON *anchor_json(const bd_anchor *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "chain_head", a->chain_head) ||
        !cJSON_AddNumberToObject(o, "count", (double)a->count) ||
        !cJSON_AddStringToObject(o, "date", a->date) ||
        !cJSON_AddNumberToObject(o, "schema_version", 1) ||
        !cJSON_AddStringToObject(o, "signature", a->signature) ||
        !cJSON_AddStringToObject(o, "signer", a->signer)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int bd_anchor_parse(bd_anchor *out, const char *buf, size_t len, const char *expect_date,
                    const char *path, bd_err *err)
{
    int rc = -1;
    cJSON *root = NULL;
    char *canon = NULL;
    memset(out, 0, sizeof(*out));
    const char *bad = NULL;
    if (len == 0 || buf[len - 1] != '\n') {
        bad = "does not end with a newline";
        goto out;
    }
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(buf, len - 1, &end, 0);
    if (!root || (size_t)(end - buf) != len - 1 || !cJSON_IsObject(root)) {
        bad = "is not one JSON object";
        goto out;
    }
    static const char *const keys[] = {"chain_head",     "count",     "date",
                                       "schema_version", "signature", "signer"};
    const cJSON *v[6] = {0};
    for (const cJSON *c = root->child; c; c = c->next) {
        int k = -1;
        for (int i = 0; i < 6; i++)
            if (strcmp(c->string, keys[i]) == 0)
                k = i;
        if (k < 0 || v[k]) {
            bad = k < 0 ? "has an unexpected member" : "has a duplicate member";
            goto out;
        }
        v[k] = c;
    }
    for (int i = 0; i < 6; i++)
        if (!v[i]) {
            bad = "lacks a member (chain_head, count, date, schema_version, signature, signer)";
            goto out;
        }
    double cnt = cJSON_IsNumber(v[1]) ? v[1]->valuedouble : -1;
    if (!cJSON_IsString(v[0]) || !bd_hex_lower_str(v[0]->valuestring, BD_HASH_HEX_LEN)) {
        bad = "has a chain_head that is not 64 lower-case hex";
    } else if (!(cnt >= 1 && cnt <= (double)BD_HISTORY_SEQ_MAX && cnt == (double)(uint64_t)cnt)) {
        bad = "has a count that is not an integer of at least 1";
    } else if (!cJSON_IsString(v[2]) || !valid_date(v[2]->valuestring)) {
        bad = "has a date that is not YYYY-MM-DD";
    } else if (!cJSON_IsNumber(v[3]) || v[3]->valuedouble != 1) {
        bad = "has a schema_version other than 1";
    } else if (!cJSON_IsString(v[4]) || v[4]->valuestring[0] == '\0') {
        bad = "has no signature";
    } else if (!cJSON_IsString(v[5]) || !bd_fpr_valid(v[5]->valuestring)) {
        bad = "has a signer that is not 40 upper-case hex";
    } else if (expect_date && strcmp(expect_date, v[2]->valuestring) != 0) {
        bad = "has a date that is not its file name's";
    }
    if (bad)
        goto out;
    size_t clen;
    canon = bd_canon_json(root, &clen);
    if (!canon || clen != len - 1 || memcmp(canon, buf, clen) != 0) {
        bad = "is not in canonical form";
        goto out;
    }
    memcpy(out->chain_head, v[0]->valuestring, BD_HASH_BUF);
    out->count = (uint64_t)cnt;
    memcpy(out->date, v[2]->valuestring, sizeof(out->date));
    memcpy(out->signer, v[5]->valuestring, sizeof(out->signer));
    if (!(out->signature = strdup(v[4]->valuestring))) {
        nomem(err);
        goto out;
    }
    rc = 0;
out:
    if (bad)
        bd_err_set(err, BD_E_ANCHOR_MISMATCH, path, 0, 0,
                   "%s: this anchor file %s; restore it from git (`git checkout -- %s`)",
                   "not a valid anchor", bad, path ? path : "the file");
    if (rc != 0)
        bd_anchor_release(out);
    free(canon);
    cJSON_Delete(root);
    return rc;
}

/* ---- checking a signature ----------------------------------------------------------- */

/* Check `sig` over `msg` against bench/keys (provenance's private home). Returns 0 with
 * the verdict in *verdict (BD_OK or an anchor.* code with a message) and the signer's
 * primary fingerprint in fpr_out ("" if unknown); -1 when GnuPG could not run (err). */
static int check_signature(bd_prov_ctx *prov, const char *msg, size_t mlen, const char *sig,
                           const char *path, bd_err *verdict, char fpr_out[BD_FPR_LEN + 1],
                           bd_err *err)
{
    bd_prov_detached d;
    bd_err_clear(verdict);
    fpr_out[0] = '\0';
    if (bd_prov_verify_detached(&d, prov, msg, mlen, sig, err) != 0)
        return -1;
    memcpy(fpr_out, d.fingerprint, BD_FPR_LEN + 1);
    switch (d.verdict) {
    case BD_PROV_DET_GOOD:
        break;
    case BD_PROV_DET_NOT_SIGNATURE:
        bd_err_set(verdict, BD_E_ANCHOR_BAD_SIGNATURE, path, 0, 0,
                   "the anchor's signature is not a valid OpenPGP signature (%s)",
                   d.detail[0] ? d.detail : "no signature found");
        break;
    case BD_PROV_DET_SEVERAL:
        bd_err_set(verdict, BD_E_ANCHOR_BAD_SIGNATURE, path, 0, 0,
                   "the anchor holds %d signatures; exactly one is allowed", d.nsigs);
        break;
    case BD_PROV_DET_UNKNOWN_KEY:
        bd_err_set(verdict, BD_E_ANCHOR_UNTRUSTED, path, 0, 0,
                   "the anchor was signed by key %s, which is not in bench/keys/; only the "
                   "bench's own keys are trusted",
                   d.key_id[0] ? d.key_id : "?");
        break;
    case BD_PROV_DET_BAD:
        bd_err_set(verdict, BD_E_ANCHOR_BAD_SIGNATURE, path, 0, 0,
                   "the anchor's signature does not verify over its date, count and "
                   "chain_head: the anchor was altered or its signature replaced");
        break;
    case BD_PROV_DET_REVOKED:
        bd_err_set(verdict, BD_E_ANCHOR_BAD_SIGNATURE, path, 0, 0,
                   "the anchor was signed by key %s, which is revoked; publish a new anchor "
                   "with a current key",
                   fpr_out);
        break;
    case BD_PROV_DET_EXPIRED:
        bd_err_set(verdict, BD_E_ANCHOR_BAD_SIGNATURE, path, 0, 0,
                   "the anchor was signed by key %s, which has expired", fpr_out);
        break;
    case BD_PROV_DET_UNUSABLE:
        bd_err_set(verdict, BD_E_ANCHOR_BAD_SIGNATURE, path, 0, 0,
                   "the anchor was signed by key %s, which GnuPG reports unusable", fpr_out);
        break;
    }
    return 0;
}

/* ---- verifying ---------------------------------------------------------------------- */

typedef struct anchor_ctx {
    bd_history_verify_result chain;
    char *bench_dir;
    bd_prov_ctx *prov; /* trusted signers and the private GnuPG home: made on first use
                          (ctx_prov), so a bench without anchors starts no GnuPG */
    bool full;         /* BD_VERIFY_FULL: every signature to GnuPG, no user memo */
} anchor_ctx;

static bd_prov_ctx *ctx_prov(anchor_ctx *c, bd_err *err)
{
    if (!c->prov && bd_prov_ctx_new(&c->prov, c->bench_dir, err) != 0)
        return NULL;
    if (c->full)
        bd_prov_ctx_full(c->prov);
    return c->prov;
}

static void ctx_close(anchor_ctx *c)
{
    bd_history_verify_result_release(&c->chain);
    bd_prov_ctx_free(c->prov);
    free(c->bench_dir);
    memset(c, 0, sizeof(*c));
}

/* One parsed anchor's signature and signer (not yet the chain). Returns 0 with the
 * verdict in ck->err, -1 when GnuPG could not run (err). */
static int check_anchor_signature(anchor_ctx *c, bd_anchor_check *ck, bd_err *err)
{
    const bd_anchor *a = &ck->anchor;
    char *msg = NULL;
    size_t mlen;
    char fpr[BD_FPR_LEN + 1];
    int rc = -1;
    if (bd_anchor_message(&msg, &mlen, a->date, a->count, a->chain_head, err) != 0)
        goto out;
    bd_prov_ctx *prov = ctx_prov(c, err);
    if (!prov || check_signature(prov, msg, mlen, a->signature, ck->path, &ck->err, fpr, err) != 0)
        goto out;
    rc = 0;
    if (ck->err.code != BD_OK)
        goto out;
    if (strcmp(fpr, a->signer) != 0) {
        bd_err_set(&ck->err, BD_E_ANCHOR_BAD_SIGNATURE, ck->path, 0, 0,
                   "the anchor names signer %s but was signed by %s", a->signer, fpr);
        goto out;
    }
    const bd_signer *s = bd_signers_find(bd_prov_ctx_signers(prov), fpr);
    if (!s) {
        bd_err_set(&ck->err, BD_E_ANCHOR_UNTRUSTED, ck->path, 0, 0,
                   "the anchor was signed by %s, which is not in bench/trusted-signers.yaml", fpr);
        goto out;
    }
    snprintf(ck->identity, sizeof(ck->identity), "%s", s->identity ? s->identity : "");
out:
    free(msg);
    return rc;
}

/* A signed anchor against the verified chain: it holds `count` records and record `count`
 * has hash `chain_head` (`hash`: that record's hash from the walk). */
static void check_anchor_chain(const anchor_ctx *c, bd_anchor_check *ck, const uint8_t hash[32])
{
    const bd_anchor *a = &ck->anchor;
    if (a->count > c->chain.count) {
        bd_err_set(&ck->err, BD_E_ANCHOR_MISMATCH, ck->path, 0, 0,
                   "the anchor of %s covers %llu records but the local history holds only "
                   "%llu: records were removed from its end (truncated); restore "
                   ".benchdesk/history from a backup and find out who removed them",
                   a->date, (unsigned long long)a->count, (unsigned long long)c->chain.count);
        return;
    }
    char hex[BD_HASH_BUF];
    bd_hex(hex, hash, 32);
    if (strcmp(hex, a->chain_head) != 0)
        bd_err_set(&ck->err, BD_E_ANCHOR_MISMATCH, ck->path, 0, 0,
                   "the anchor of %s says record %llu has hash %s but the local record %llu "
                   "has hash %s: the history was rewritten below the anchor; restore it from "
                   "a backup and find out who rewrote it",
                   a->date, (unsigned long long)a->count, a->chain_head,
                   (unsigned long long)a->count, hex);
}

static int anchor_name_cmp(const void *a, const void *b)
{
    return strcmp(((const bd_anchor_check *)a)->path, ((const bd_anchor_check *)b)->path);
}

/* The anchor files: every *.json under audit/anchors/bench, sorted. */
static int list_anchors(bd_anchor_report *out, const char *bench_root, bd_err *err)
{
    size_t dl = strlen(bench_root) + sizeof("/" BD_ANCHOR_DIR);
    char *dir = malloc(dl);
    if (!dir)
        return nomem(err);
    snprintf(dir, dl, "%s/%s", bench_root, BD_ANCHOR_DIR);
    int rc = -1;
    size_t cap = 0;
    DIR *d = opendir(dir);
    if (!d) {
        rc = errno == ENOENT ? 0 : bd_err_errno(err, BD_E_IO, errno, dir, "cannot list anchors");
        free(dir);
        return rc;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        if (out->n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            bd_anchor_check *p = realloc(out->checks, nc * sizeof(*p));
            if (!p) {
                nomem(err);
                goto out;
            }
            out->checks = p;
            cap = nc;
        }
        bd_anchor_check *ck = &out->checks[out->n++];
        memset(ck, 0, sizeof(*ck));
        if (snprintf(ck->path, sizeof(ck->path), "%s/%s", dir, de->d_name) >=
            (int)sizeof(ck->path)) {
            bd_err_set(err, BD_E_IO, dir, 0, 0, "anchor path too long");
            goto out;
        }
    }
    if (out->n > 1)
        qsort(out->checks, out->n, sizeof(*out->checks), anchor_name_cmp);
    rc = 0;
out:
    closedir(d);
    free(dir);
    return rc;
}

/* Read, parse and check the signature of every anchor file (the chain is not walked yet):
 * 0, or -1 when the check could not be made (err). */
static int read_anchors(bd_anchor_report *out, anchor_ctx *c, const char *bench_root, bd_err *err)
{
    if (list_anchors(out, bench_root, err) != 0)
        return -1;
    for (size_t i = 0; i < out->n; i++) {
        bd_anchor_check *ck = &out->checks[i];
        const char *base = strrchr(ck->path, '/');
        base = base ? base + 1 : ck->path;
        char date[11] = "";
        bool named = strlen(base) == 15 && memcmp(base + 10, ".json", 5) == 0;
        if (named) {
            memcpy(date, base, 10);
            date[10] = '\0';
        }
        char *buf = NULL;
        size_t len = 0;
        if (!named || !valid_date(date)) {
            bd_err_set(&ck->err, BD_E_ANCHOR_MISMATCH, ck->path, 0, 0,
                       "not a valid anchor: an anchor file is named YYYY-MM-DD.json");
        } else if (bd_read_file(&buf, &len, ck->path, ANCHOR_FILE_MAX, BD_E_ANCHOR_MISMATCH,
                                &ck->err) == 0 &&
                   bd_anchor_parse(&ck->anchor, buf, len, date, ck->path, &ck->err) == 0) {
            if (check_anchor_signature(c, ck, err) != 0) {
                free(buf);
                return -1;
            }
        }
        free(buf);
        if (ck->err.code == BD_E_IO || ck->err.code == BD_E_NOMEM) {
            *err = ck->err;
            return -1;
        }
    }
    return 0;
}

/* Walk the chain once, trusting the bytes under the longest anchor whose signature holds
 * (they were checked in full when it was published; the walk parses everything when they
 * do not hash to its head), then hold every signed anchor against the walk. */
static int verify_with(bd_anchor_report *out, anchor_ctx *c, const char *bench_root, int flags,
                       const bd_history_visit *visit, bd_err *err)
{
    uint64_t *want = NULL;
    bd_history *h = NULL;
    int rc = -1;
    c->full = flags & BD_VERIFY_FULL;
    if (read_anchors(out, c, bench_root, err) != 0)
        return -1;
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.flags = flags & BD_VERIFY_FULL;
    o.visit = visit;
    if (out->n > 0 && !(want = calloc(out->n, sizeof(*want))))
        return nomem(err);
    const bd_anchor *trusted = NULL;
    for (size_t i = 0; i < out->n; i++) {
        const bd_anchor_check *ck = &out->checks[i];
        want[i] = ck->err.code == BD_OK ? ck->anchor.count : 0;
        if (ck->err.code == BD_OK && (!trusted || ck->anchor.count > trusted->count))
            trusted = &ck->anchor;
    }
    if (trusted && bd_hash_unhex(o.trusted_head, trusted->chain_head) == 0)
        o.trusted_count = trusted->count;
    o.want = want;
    o.n_want = out->n;
    if (bd_history_open(&h, bench_root, BD_HISTORY_READ, err) != 0)
        goto done;
    if (bd_history_verify_with(h, &o, &c->chain, err) != 0)
        goto done;
    out->chain_count = c->chain.count;
    memcpy(out->chain_head, c->chain.head, BD_HASH_BUF);
    out->parsed_from = c->chain.parsed_from;
    for (size_t i = 0; i < out->n; i++) {
        bd_anchor_check *ck = &out->checks[i];
        if (ck->err.code == BD_OK)
            check_anchor_chain(c, ck, c->chain.want_hashes[i]);
        if (ck->err.code != BD_OK)
            out->n_failed++;
    }
    rc = out->n_failed ? 1 : 0;
done:
    bd_history_free(h);
    free(want);
    return rc;
}

int bd_anchor_verify_visit(bd_anchor_report *out, const char *bench_root, int flags,
                           const bd_history_visit *visit, bd_err *err)
{
    anchor_ctx c;
    memset(out, 0, sizeof(*out));
    memset(&c, 0, sizeof(c));
    int rc = -1;
    if (!(c.bench_dir = bd_path_join(bench_root, "bench")))
        nomem(err);
    else
        rc = verify_with(out, &c, bench_root, flags, visit, err);
    ctx_close(&c);
    return rc;
}

int bd_anchor_verify(bd_anchor_report *out, const char *bench_root, bd_err *err)
{
    return bd_anchor_verify_visit(out, bench_root, 0, NULL, err);
}

void bd_anchor_report_release(bd_anchor_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        bd_anchor_release(&r->checks[i].anchor);
    free(r->checks);
    memset(r, 0, sizeof(*r));
}

const bd_err *bd_anchor_report_first_failure(const bd_anchor_report *r)
{
    for (size_t i = 0; r && i < r->n; i++)
        if (r->checks[i].err.code != BD_OK)
            return &r->checks[i].err;
    return NULL;
}

/* ---- publishing --------------------------------------------------------------------- */

int bd_anchor_publish(bd_anchor *out, char **path_out, const char *bench_root,
                      const bd_anchor_publish_opts *opts, bd_err *err)
{
    static const bd_anchor_publish_opts defaults = BD_ANCHOR_PUBLISH_OPTS_INIT;
    anchor_ctx c;
    bd_anchor_report rep;
    bd_sign_key key;
    char *msg = NULL, *json = NULL, *dir = NULL, *path = NULL, *bytes = NULL;
    cJSON *j = NULL;
    size_t mlen = 0, jlen = 0;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    memset(&rep, 0, sizeof(rep));
    if (path_out)
        *path_out = NULL;
    if (!opts)
        opts = &defaults;
    memset(&c, 0, sizeof(c));
    if (!(c.bench_dir = bd_path_join(bench_root, "bench"))) {
        nomem(err);
        goto out;
    }
    /* Never anchor over a broken chain or next to an anchor that does not hold; never
     * anchor a record that was not checked in full (now, or under an earlier anchor). */
    int vr = verify_with(&rep, &c, bench_root, 0, NULL, err);
    if (vr < 0)
        goto out;
    if (vr > 0) {
        *err = *bd_anchor_report_first_failure(&rep);
        goto out;
    }
    if (c.chain.count == 0) {
        bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                   "the history is empty: there is nothing to anchor yet (run a task class "
                   "first)");
        goto out;
    }
    if (opts->date) {
        if (!valid_date(opts->date)) {
            bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "the anchor date '%s' is not YYYY-MM-DD",
                       opts->date);
            goto out;
        }
        memcpy(out->date, opts->date, sizeof(out->date));
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(out->date, sizeof(out->date), "%Y-%m-%d", &tm);
    }
    out->count = c.chain.count;
    memcpy(out->chain_head, c.chain.head, BD_HASH_BUF);
    if (bd_sign_resolve_key(&key, &opts->sign, err) != 0)
        goto out;
    memcpy(out->signer, key.fingerprint, sizeof(out->signer));
    bd_prov_ctx *prov = ctx_prov(&c, err);
    if (!prov)
        goto out;
    if (!bd_signers_find(bd_prov_ctx_signers(prov), key.fingerprint)) {
        bd_err_set(err, BD_E_ANCHOR_UNTRUSTED, NULL, 0, 0,
                   "key %s (%s) is not in bench/trusted-signers.yaml: an anchor it signs "
                   "would not verify; sign with a trusted key ",
                   key.fingerprint, key.identity);
        bd_err_advise(err, BD_ACT_SET_KEY, NULL);
        goto out;
    }
    if (bd_anchor_message(&msg, &mlen, out->date, out->count, out->chain_head, err) != 0 ||
        bd_sign_bytes(&out->signature, &key, &opts->sign, msg, mlen, err) != 0)
        goto out;
    /* The check verify will make, before anything is written. */
    bd_err verdict;
    char fpr[BD_FPR_LEN + 1];
    if (check_signature(prov, msg, mlen, out->signature, NULL, &verdict, fpr, err) != 0)
        goto out;
    if (verdict.code == BD_OK && strcmp(fpr, out->signer) != 0)
        bd_err_set(&verdict, BD_E_ANCHOR_BAD_SIGNATURE, NULL, 0, 0,
                   "the signature was made by %s, not the chosen key %s", fpr, out->signer);
    if (verdict.code != BD_OK) {
        *err = verdict;
        size_t l = strlen(err->msg);
        snprintf(err->msg + l, sizeof(err->msg) - l,
                 "; nothing was written (is the signer's public key exported to "
                 "bench/keys/?)");
        goto out;
    }
    if (!(j = anchor_json(out)) || !(json = bd_canon_json(j, &jlen))) {
        nomem(err);
        goto out;
    }
    if (!(bytes = malloc(jlen + 2))) {
        nomem(err);
        goto out;
    }
    memcpy(bytes, json, jlen);
    bytes[jlen] = '\n';
    size_t dl = strlen(bench_root) + sizeof("/" BD_ANCHOR_DIR) + 16;
    if (!(dir = malloc(dl)) || !(path = malloc(dl))) {
        nomem(err);
        goto out;
    }
    snprintf(dir, dl, "%s/%s", bench_root, BD_ANCHOR_DIR);
    snprintf(path, dl, "%s/%s.json", dir, out->date);
    if (bd_mkdir_p(dir, 0755, err) != 0 ||
        bd_write_file_atomic(path, bytes, jlen + 1, 0644, err) != 0)
        goto out;
    if (path_out) {
        *path_out = path;
        path = NULL;
    }
    rc = 0;
out:
    if (rc != 0)
        bd_anchor_release(out);
    bd_anchor_report_release(&rep);
    ctx_close(&c);
    cJSON_Delete(j);
    free(msg);
    free(json);
    free(bytes);
    free(dir);
    free(path);
    return rc;
}
