/*
 * runsign.h — the operator's key on a run (docs/formats.md#signed-runs): choosing it,
 * checking before the first case that it can sign without a prompt, and signing the run
 * when it ends (the `run.signed` audit record, runsigned.h).
 *
 * Threads: as sign.h (bd_provenance_init first). Nothing here prints.
 */
#ifndef BD_RUNSIGN_H
#define BD_RUNSIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "exec.h"
#include "history.h"
#include "sign.h"

/* What a run needs to know about signing. */
typedef struct bd_run_operator_req {
    const char *key;        /* --operator-key, else signing_key of the config, else NULL */
    bool require_config;    /* require_signed_runs: true in the config */
    bool require_tc;        /* run: {require_signed: true} in the registration */
    const char *task_class; /* for the messages */
    bd_isolation isolation;
    const char *gnupg_home; /* NULL: the user's default home */
    bool no_rubrics;        /* an import: nothing runs, so any isolation will do */
} bd_run_operator_req;

/* Decide and check the run's operator key before anything runs. With no key: 0 and
 * *signs false, unless signed runs are required (run.unsigned_refused, exit 3). With a
 * key: refuse subprocess isolation (run.signing_isolation, exit 3: a rubric there can
 * reach the user's gpg-agent), resolve the key (gpg.key_not_found) and make a trial
 * signature that may not ask for a passphrase (run.operator_key_locked, exit 3, when it
 * would: unlock it in gpg-agent first), whose run.signed detail would fit an audit record
 * (run.operator_key_unusable, exit 3, when it would not). Returns 0 with *key and *signs true, or
 * -1. */
int bd_run_operator_check(bd_sign_key *key, bool *signs, const bd_run_operator_req *req,
                          bd_err *err);

/* The check for an import (`history import`, `run --out`): the key `key_arg`, else
 * signing_key of <root>/.benchdesk/config.yaml, and its require_signed_runs. Returns 0
 * with *signs (and *key when true), or -1 (the config's errors, bd_run_operator_check's). */
int bd_run_operator_for_import(bd_sign_key *key, bool *signs, const char *root, const char *key_arg,
                               bd_err *err);

/* Sign the run `run_id` of `task_class` whose `records` records (records >= 1) start at
 * `first_seq` and end with the record `last_hash`: the message (runsigned.h) signed by
 * `key` without a prompt, then the `run.signed` audit record appended to `h`. *seq_out
 * (may be NULL) gets its seq. Returns 0 or -1 (gpg.sign_failed, the append's errors). */
int bd_run_operator_sign(bd_history *h, const bd_sign_key *key, const char *gnupg_home,
                         const char *task_class, const char *run_id, uint64_t records,
                         uint64_t first_seq, const char *last_hash, uint64_t *seq_out, bd_err *err);

#endif
