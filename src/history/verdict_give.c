/*
 * verdict_give.c — giving verdicts (verdict.h, docs/provenance.md#verdicts): the subjects
 * taken from the verified walk, the reviewer's key held to the reviewer role, one signed
 * file per subject, checked as verify will check it before anything is written.
 */
#include "verdict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fsutil.h"
#include "hash.h"
#include "path.h"
#include "text.h"

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory giving a verdict");
}

/* ---- the subjects ------------------------------------------------------------------------ */

typedef struct pick {
    bd_verdict_subject *s; /* sorted by seq */
    bool *found, *audit;
    size_t n;
} pick;

static int pick_one(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *arg)
{
    (void)hash;
    pick *p = arg;
    for (size_t i = 0; i < p->n; i++) {
        if (p->s[i].seq != seq)
            continue;
        bd_verdict_subject *s = &p->s[i];
        p->found[i] = true;
        bd_err e = BD_ERR_INIT;
        p->audit[i] =
            !bd_verdict_record_str(rec, len, "case_id", s->case_id, sizeof(s->case_id)) ||
            !bd_verdict_record_str(rec, len, "run_id", s->run_id, sizeof(s->run_id)) ||
            !bd_verdict_record_str(rec, len, "task_class", s->task_class, sizeof(s->task_class)) ||
            bd_score_id(s->score_id, rec, len, &e) != 0;
    }
    return 0;
}

static void pick_reset(void *arg)
{
    pick *p = arg;
    memset(p->found, 0, p->n * sizeof(bool));
}

int bd_verdict_subjects(bd_verdict_subject **out, const char *bench_root, const uint64_t *seqs,
                        size_t n, bd_err *err)
{
    *out = NULL;
    pick p = {calloc(n ? n : 1, sizeof(bd_verdict_subject)), calloc(n ? n : 1, sizeof(bool)),
              calloc(n ? n : 1, sizeof(bool)), n};
    bd_history *h = NULL;
    bd_history_verify_result res;
    memset(&res, 0, sizeof(res));
    int rc = -1;
    if (!p.s || !p.found || !p.audit) {
        nomem(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        p.s[i].seq = seqs[i];
    bd_history_visit visit = {.fn = pick_one, .reset = pick_reset, .ctx = &p};
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.visit = &visit;
    if (bd_history_open(&h, bench_root, BD_HISTORY_READ, err) != 0 ||
        bd_history_verify_with(h, &o, &res, err) != 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (!p.found[i]) {
            bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                       "record %llu is past the chain (it holds %llu records)",
                       (unsigned long long)seqs[i], (unsigned long long)res.count);
            bd_err_advise(err, BD_ACT_HISTORY_LOG, NULL);
            goto out;
        }
        if (p.audit[i]) {
            bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                       "record %llu is not a score record: a verdict is given on a score",
                       (unsigned long long)seqs[i]);
            bd_err_advise(err, BD_ACT_HISTORY_LOG, NULL);
            goto out;
        }
    }
    *out = p.s;
    p.s = NULL;
    rc = 0;
out:
    free(p.s);
    free(p.found);
    free(p.audit);
    bd_history_verify_result_release(&res);
    bd_history_free(h);
    return rc;
}

/* ---- this reviewer's latest verdict on a subject ------------------------------------------- */

/* The latest good verdict file by `fpr` on `s` (its kind into *kind and its note into
 * note_out, new) ; *found false when none. -1: GnuPG or I/O failed. */
static int latest_own(bool *found, bd_verdict_kind *kind, char **note_out, const char *root,
                      const bd_verdict_subject *s, const char *fpr, bd_prov_ctx *prov, bd_err *err)
{
    *found = false;
    *note_out = NULL;
    char rel[600];
    snprintf(rel, sizeof(rel), "%s/%s/%s/%s", BD_VERDICT_DIR, s->task_class, s->run_id, s->case_id);
    bd_tree_entry *te = NULL;
    size_t n = 0;
    if (bd_list_tree(&te, &n, root, rel, 0, 1000000, err) != 0)
        return -1;
    char best_at[21] = "";
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *base = strrchr(te[i].rel, '/');
        base = base ? base + 1 : te[i].rel;
        if (strncmp(base, fpr, BD_FPR_HEX_LEN) != 0 || !te[i].regular)
            continue;
        char *full = bd_path_join(root, te[i].rel), *buf = NULL, *msg = NULL;
        size_t len, mlen;
        bd_verdict v;
        bd_err ignore = BD_ERR_INIT;
        memset(&v, 0, sizeof(v));
        if (full &&
            bd_read_file(&buf, &len, full, BD_VERDICT_FILE_MAX, BD_E_VERDICT_INVALID, &ignore) ==
                0 &&
            bd_verdict_parse(&v, buf, len, te[i].rel, &ignore) == 0 &&
            strcmp(v.score_id, s->score_id) == 0 && strcmp(v.at, best_at) > 0 &&
            bd_verdict_message(&msg, &mlen, &v, &ignore) == 0) {
            bd_prov_detached d;
            if (bd_prov_verify_detached(&d, prov, msg, mlen, v.signature, err) != 0)
                rc = -1;
            else if (d.verdict == BD_PROV_DET_GOOD && strcmp(d.fingerprint, fpr) == 0) {
                memcpy(best_at, v.at, sizeof(best_at));
                *found = true;
                *kind = v.verdict;
                free(*note_out);
                *note_out = v.note;
                v.note = NULL;
            }
        }
        bd_verdict_release(&v);
        free(msg);
        free(buf);
        free(full);
    }
    bd_tree_entries_free(te, n);
    return rc;
}

/* ---- giving ------------------------------------------------------------------------------ */

static void at_plus(char at[21], int64_t secs)
{
    time_t t = (time_t)bd_history_time_epoch(at) + (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(at, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Refusals before anything is signed: the key's role, duplicates. */
static int check_policy(const bd_sign_key *key, bd_prov_ctx *prov, const char *root,
                        const bd_verdict_subject *subj, size_t n, bd_verdict_kind kind,
                        const char *note, bd_err *err)
{
    const bd_signer *sg = bd_signers_find(bd_prov_ctx_signers(prov), key->fingerprint);
    if (!sg || !(sg->roles & BD_ROLE_REVIEWER)) {
        bd_err_set(err, BD_E_VERDICT_NOT_REVIEWER, NULL, 0, 0,
                   "key %s (%s) %s: its verdicts would count for nothing; sign with a "
                   "reviewer's key ",
                   key->fingerprint, key->identity,
                   sg ? "does not have the reviewer role in bench/trusted-signers.yaml"
                      : "is not in bench/trusted-signers.yaml");
        return bd_err_advise(err, BD_ACT_SET_KEY, NULL);
    }
    for (size_t i = 0; i < n; i++) {
        bool found;
        bd_verdict_kind last = BD_VERDICT_WITHDRAWN;
        char *last_note = NULL;
        if (latest_own(&found, &last, &last_note, root, &subj[i], key->fingerprint, prov, err) != 0)
            return -1;
        bool same =
            (!found && kind == BD_VERDICT_WITHDRAWN) ||
            (found && last == kind &&
             (kind == BD_VERDICT_WITHDRAWN || strcmp(last_note ? last_note : "", note) == 0));
        free(last_note);
        if (same)
            return bd_err_set(err, BD_E_VERDICT_DUPLICATE, NULL, 0, 0,
                              "record %llu (%s/%s, run %s) already has this verdict from %s: "
                              "%s; nothing was written",
                              (unsigned long long)subj[i].seq, subj[i].task_class, subj[i].case_id,
                              subj[i].run_id, key->identity,
                              found ? bd_verdict_kind_str(kind) : "none to withdraw");
    }
    return 0;
}

typedef struct staged {
    char *rel, *bytes;
    size_t len;
} staged;

/* A free file name for `v` in *rel (new): its `at` moves on by a second while the name is
 * taken on disk or by one of the `n` names staged before it. */
static int free_name(bd_verdict *v, char **rel, const char *root, const staged *st, size_t n,
                     bd_err *err)
{
    for (int tries = 0;; tries++) {
        free(*rel);
        if (!(*rel = bd_verdict_rel_path(v)))
            return nomem(err);
        char *full = bd_path_join(root, *rel);
        struct stat sb;
        bool taken = !full || lstat(full, &sb) == 0;
        free(full);
        for (size_t k = 0; k < n && !taken; k++)
            taken = strcmp(st[k].rel, *rel) == 0;
        if (!taken)
            return 0;
        if (tries == 600)
            return bd_err_set(err, BD_E_IO, *rel, 0, 0, "no free verdict file name near it");
        at_plus(v->at, 1);
    }
}

/* Sign `v` and check the signature as verify will; *bytes new. */
static int sign_one(bd_verdict *v, char **bytes, size_t *blen, const bd_sign_key *key,
                    const bd_verdict_give_opts *opts, bd_prov_ctx *prov, bd_err *err)
{
    char *msg = NULL;
    size_t mlen;
    int rc = -1;
    if (bd_verdict_message(&msg, &mlen, v, err) != 0 ||
        bd_sign_bytes(&v->signature, key, &opts->sign, msg, mlen, err) != 0)
        goto out;
    bd_prov_detached d;
    if (bd_prov_verify_detached(&d, prov, msg, mlen, v->signature, err) != 0)
        goto out;
    if (d.verdict != BD_PROV_DET_GOOD || strcmp(d.fingerprint, v->reviewer) != 0) {
        bd_err_set(err, BD_E_VERDICT_NOT_REVIEWER, NULL, 0, 0,
                   "the signature by %s does not verify against bench/keys/ (is the "
                   "reviewer's public key exported there?); nothing was written",
                   v->reviewer);
        goto out;
    }
    rc = bd_verdict_serialize(bytes, blen, v, err);
out:
    free(msg);
    return rc;
}

static int write_all(staged *st, size_t n, const char *root, bd_err *err)
{
    for (size_t i = 0; i < n; i++) {
        char *full = bd_path_join(root, st[i].rel);
        char *slash = full ? strrchr(full, '/') : NULL;
        if (!slash) {
            free(full);
            return nomem(err);
        }
        *slash = '\0';
        int rc = bd_mkdir_p(full, 0755, err);
        *slash = '/';
        if (rc == 0)
            rc = bd_write_file_atomic(full, st[i].bytes, st[i].len, 0644, err);
        free(full);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int bd_verdict_give(char ***paths_out, const char *bench_root, const bd_verdict_subject *subj,
                    size_t n, bd_verdict_kind kind, const char *note,
                    const bd_verdict_give_opts *opts, bd_err *err)
{
    static const bd_verdict_give_opts defaults = BD_VERDICT_GIVE_OPTS_INIT;
    bd_prov_ctx *prov = NULL;
    staged *st = calloc(n ? n : 1, sizeof(*st));
    char *bench_dir = bd_path_join(bench_root, "bench");
    bd_sign_key key;
    int rc = -1;
    if (paths_out)
        *paths_out = NULL;
    if (!opts)
        opts = &defaults;
    if (!note)
        note = "";
    if (!st || !bench_dir) {
        nomem(err);
        goto out;
    }
    if (strlen(note) > BD_VERDICT_NOTE_MAX || !bd_utf8_valid(note, strlen(note))) {
        bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                   "a verdict's note is UTF-8 of at most %d bytes (this one has %zu)",
                   BD_VERDICT_NOTE_MAX, strlen(note));
        goto out;
    }
    if (bd_sign_resolve_key(&key, &opts->sign, err) != 0 ||
        bd_prov_ctx_new(&prov, bench_dir, err) != 0 ||
        check_policy(&key, prov, bench_root, subj, n, kind, note, err) != 0)
        goto out;
    char at[21];
    if (opts->at)
        snprintf(at, sizeof(at), "%s", opts->at);
    else
        bd_utc_now(at);
    for (size_t i = 0; i < n; i++) {
        bd_verdict v;
        memset(&v, 0, sizeof(v));
        memcpy(v.task_class, subj[i].task_class, sizeof(v.task_class));
        memcpy(v.run_id, subj[i].run_id, sizeof(v.run_id));
        memcpy(v.case_id, subj[i].case_id, sizeof(v.case_id));
        memcpy(v.score_id, subj[i].score_id, sizeof(v.score_id));
        memcpy(v.reviewer, key.fingerprint, sizeof(v.reviewer));
        memcpy(v.at, at, sizeof(v.at));
        v.verdict = kind;
        v.note = (char *)note;
        int r = free_name(&v, &st[i].rel, bench_root, st, i, err);
        if (r == 0)
            r = sign_one(&v, &st[i].bytes, &st[i].len, &key, opts, prov, err);
        free(v.signature);
        if (r != 0)
            goto out;
    }
    if (write_all(st, n, bench_root, err) != 0)
        goto out;
    if (paths_out) {
        char **p = calloc(n ? n : 1, sizeof(char *));
        if (!p) {
            nomem(err);
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            p[i] = st[i].rel;
            st[i].rel = NULL;
        }
        *paths_out = p;
    }
    rc = 0;
out:
    for (size_t i = 0; st && i < n; i++) {
        free(st[i].rel);
        free(st[i].bytes);
    }
    free(st);
    free(bench_dir);
    bd_prov_ctx_free(prov);
    return rc;
}
