/*
 * runsign.c — the operator's key on a run: the check before the first case and the
 * run.signed record at its end (runsign.h).
 */
#include "runsign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "provenance.h"
#include "runsigned.h"

/* The passphrase callback of a run: never ask. A key that needs one mid-run would stop
 * the run unsigned, so the trial signature fails instead. */
static int no_prompt(char *buf, size_t cap, const char *uid_hint, bool bad_before, void *payload)
{
    (void)buf;
    (void)cap;
    (void)uid_hint;
    (void)bad_before;
    (void)payload;
    return 1;
}

static void sign_opts(bd_sign_opts *o, const char *fpr, const char *home)
{
    *o = (bd_sign_opts)BD_SIGN_OPTS_INIT;
    o->key = fpr;
    o->passphrase = no_prompt;
    o->gnupg_home = home;
}

int bd_run_operator_check(bd_sign_key *key, bool *signs, const bd_run_operator_req *req,
                          bd_err *err)
{
    memset(key, 0, sizeof(*key));
    *signs = false;
    if (!req->key || !req->key[0]) {
        if (!req->require_config && !req->require_tc)
            return 0;
        return bd_err_set(err, BD_E_RUN_UNSIGNED_REFUSED, NULL, 0, 0,
                          "%s requires signed runs (%s) and no operator key is set: give "
                          "--operator-key FPR or signing_key in .benchdesk/config.yaml",
                          req->task_class ? req->task_class : "this run",
                          req->require_tc ? "run: {require_signed: true} in its registration"
                                          : "require_signed_runs: true in .benchdesk/config.yaml");
    }
    if (!req->no_rubrics && req->isolation == BD_ISO_SUBPROCESS)
        return bd_err_set(err, BD_E_RUN_SIGNING_ISOLATION, NULL, 0, 0,
                          "a run signed by an operator key does not run under subprocess "
                          "isolation (a rubric there could reach your gpg-agent): run it with "
                          "--isolation namespaces, or without the key");
    if (bd_provenance_init(err) != 0)
        return -1;
    bd_sign_opts o;
    sign_opts(&o, req->key, req->gnupg_home);
    if (bd_sign_resolve_key(key, &o, err) != 0)
        return -1;
    static const char trial[] = "benchdesk-run-v1\ntrial\n";
    char *sig = NULL;
    bd_err e = BD_ERR_INIT;
    if (bd_sign_bytes(&sig, key, &o, trial, sizeof(trial) - 1, &e) != 0) {
        if (e.code == BD_E_GPG_SIGN_FAILED)
            return bd_err_set(err, BD_E_RUN_KEY_LOCKED, NULL, 0, 0,
                              "the operator key %s cannot sign without asking for its "
                              "passphrase, which a run cannot do mid-way: unlock it in "
                              "gpg-agent first (sign anything once, e.g. `echo | gpg -u %s "
                              "--clearsign >/dev/null`, or gpg-preset-passphrase), then run again",
                              key->fingerprint, key->fingerprint);
        *err = e;
        return -1;
    }
    /* The run.signed detail must fit an audit record: try the largest one this key makes
     * (a run id of 128 characters, ten-digit counts). */
    static const char id[] = "r0123456789012345678901234567890123456789012345678901234567890123"
                             "456789012345678901234567890123456789012345678901234567890123456";
    size_t dlen = 0;
    char *d = bd_run_signed_detail(
        id, BD_HISTORY_SEQ_MAX, BD_HISTORY_SEQ_MAX,
        "0000000000000000000000000000000000000000000000000000000000000000", sig, &dlen);
    free(sig);
    bool made = d != NULL;
    free(d);
    if (!made)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    if (dlen + 64 > BD_RUN_SIGNED_DETAIL_MAX) /* 64: room for a longer signature */
        return bd_err_set(err, BD_E_RUN_KEY_UNUSABLE, NULL, 0, 0,
                          "the operator key %s makes signatures too large for a history record "
                          "(about %zu bytes of the %d a run.signed detail may hold): use an "
                          "Ed25519 key, or RSA of at most 4096 bits",
                          key->fingerprint, dlen, BD_RUN_SIGNED_DETAIL_MAX);
    *signs = true;
    return 0;
}

int bd_run_operator_for_import(bd_sign_key *key, bool *signs, const char *root, const char *key_arg,
                               bd_err *err)
{
    bd_config cfg;
    if (bd_config_load(&cfg, root, err) != 0)
        return -1;
    bd_run_operator_req req = {.key = key_arg ? key_arg : cfg.signing_key,
                               .require_config = cfg.require_signed_runs,
                               .task_class = "an imported run",
                               .no_rubrics = true};
    int rc = bd_run_operator_check(key, signs, &req, err);
    bd_config_release(&cfg);
    return rc;
}

int bd_run_operator_sign(bd_history *h, const bd_sign_key *key, const char *gnupg_home,
                         const char *task_class, const char *run_id, uint64_t records,
                         uint64_t first_seq, const char *last_hash, uint64_t *seq_out, bd_err *err)
{
    char *msg = NULL, *sig = NULL, *detail = NULL;
    size_t mlen = 0, dlen = 0;
    int rc = -1;
    bd_sign_opts o;
    sign_opts(&o, key->fingerprint, gnupg_home);
    if (bd_run_signed_message(&msg, &mlen, run_id, records, first_seq, last_hash, err) != 0 ||
        bd_sign_bytes(&sig, key, &o, msg, mlen, err) != 0)
        goto out;
    if (!(detail = bd_run_signed_detail(run_id, records, first_seq, last_hash, sig, &dlen))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory signing the run");
        goto out;
    }
    if (dlen > BD_RUN_SIGNED_DETAIL_MAX) {
        bd_err_set(err, BD_E_RUN_KEY_UNUSABLE, NULL, 0, 0,
                   "the operator key %s made a signature too large for a history record "
                   "(%zu bytes of detail, at most %d): use an Ed25519 key, or RSA of at most "
                   "4096 bits",
                   key->fingerprint, dlen, BD_RUN_SIGNED_DETAIL_MAX);
        goto out;
    }
    bd_history_audit_fields f = {.event = BD_RUN_SIGNED_EVENT,
                                 .task_class = task_class,
                                 .detail = detail,
                                 .operator_fingerprint = key->fingerprint};
    rc = bd_history_append_audit(h, &f, seq_out, NULL, err);
out:
    free(msg);
    free(sig);
    free(detail);
    return rc;
}
