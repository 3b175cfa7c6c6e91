/*
 * sign.h — signing the two-person provenance of a case or a task class (docs/provenance.md):
 * the curator's keys (GPGME, their own keyring), preparing the exact message, refusing
 * what would not verify before anything is signed, and writing provenance.yaml whole and
 * atomically. Verification is provenance.h's, below this.
 *
 * Threads: as provenance.h (call bd_provenance_init first); every call may run on
 * libuv's thread pool. Nothing here prints.
 */
#ifndef BD_SIGN_H
#define BD_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "digest.h"
#include "err.h"
#include "provenance.h"

/* Ask for the passphrase of `uid_hint` (a key id and user id, for display). Write it,
 * without a newline, into `buf` (`cap` bytes, NUL-terminated) and return 0; return
 * non-zero to cancel. `bad_before` is true when the previous try was wrong. Runs on the
 * signing thread. */
typedef int (*bd_passphrase_cb)(char *buf, size_t cap, const char *uid_hint, bool bad_before,
                                void *payload);

typedef struct bd_sign_opts {
    const char *key;             /* signing key fingerprint (40 hex), or NULL: default */
    bd_passphrase_cb passphrase; /* NULL: gpg-agent and its pinentry ask */
    void *payload;               /* passed to `passphrase` */
    const char *gnupg_home;      /* NULL: the user's default home ($GNUPGHOME) */
    bool replace;                /* replace a valid signature in the role (--replace) */
} bd_sign_opts;

#define BD_SIGN_OPTS_INIT                                                                          \
    {                                                                                              \
        NULL, NULL, NULL, NULL, false                                                              \
    }

/* A secret key usable for signing. */
typedef struct bd_sign_key {
    char fingerprint[BD_FPR_LEN + 1]; /* primary */
    char identity[256];               /* primary user id's email, else its full text */
    char uid[512];                    /* primary user id as written */
    bool is_default;                  /* what signing picks without an explicit key */
} bd_sign_key;

/* List the secret keys of the user's keyring that can sign now (not expired, revoked,
 * disabled or invalid), default key first. *out is a new array (caller frees), *n its
 * length (0 is not an error). `gnupg_home` NULL means the user's default home.
 * Returns 0 or -1 (gpg.error). */
int bd_sign_list_keys(bd_sign_key **out, size_t *n, const char *gnupg_home, bd_err *err);

/* Resolve the key signing will use: opts->key when set (it must be a usable secret key:
 * gpg.key_not_found otherwise), else the first `default-key` of gpg.conf that is usable,
 * else the first usable secret key (gpg.key_not_found when there is none). */
int bd_sign_resolve_key(bd_sign_key *out, const bd_sign_opts *opts, bd_err *err);

/* Detached, ASCII-armored signature over `len` bytes at `data` with `key` (resolved by
 * bd_sign_resolve_key). *sig is a new NUL-terminated string (caller frees).
 * gpg.sign_failed (a cancelled or wrong passphrase says so), gpg.error otherwise. */
int bd_sign_bytes(char **sig, const bd_sign_key *key, const bd_sign_opts *opts, const void *data,
                  size_t len, bd_err *err);

/* What signing a subject does or did. */
typedef struct bd_sign_result {
    int role;
    bd_subject_kind kind;
    char task_class[129];
    char case_id[129]; /* "" for a task class */
    bd_sign_key key;
    char digest[BD_DIGEST_BUF]; /* the digest the message carries (equal to the pin) */
    char *message;              /* the exact bytes to sign (owned) */
    char *signature;            /* the armored signature written (owned) */
    char *prov_path;            /* the provenance.yaml written (owned) */
    /* The role's block before: a valid signature it replaces (only with opts->replace),
     * or a superseded one it replaces silently. "" when the role was unsigned. */
    bool replaces_valid;
    char replaces[320]; /* "<identity> (<fingerprint>)" of the block replaced, or "" */
    bool other_valid;   /* the other role holds a valid signature: signed once this is */
} bd_sign_result;

void bd_sign_result_release(bd_sign_result *r);

/* Prepare to sign, as `role`, the case `case_id` of `tc`, or the task class itself when
 * case_id is NULL. Refuses before anything is signed:
 *   - a subject whose digest now differs from its pin, or that has no pin
 *     (case.digest_mismatch / case.digest_missing, task_class.digest_mismatch /
 *     task_class.digest_missing: pin it first), or whose files cannot be hashed;
 *   - a key that cannot be resolved (gpg.key_not_found), or that is not listed in
 *     trusted-signers.yaml with `role` (provenance.untrusted_signer);
 *   - the key that already holds the other role on this subject (provenance.same_signer;
 *     a superseded signature in the other role does not count);
 *   - a valid signature in `role` already, unless opts->replace
 *     (provenance.signature_exists, naming whose it is); a superseded one is replaced
 *     without asking (out->replaces names it either way);
 *   - for a reviewer: no valid author signature (provenance.missing: the author signs
 *     first, again after an edit), or one that does not verify (its own code).
 * Fills out (role, kind, names, key, digest, message): what the TUI shows before the
 * signer confirms. `ctx` supplies the trusted signers and verifies the author. Returns 0
 * or -1. Release *out with bd_sign_result_release either way. */
int bd_sign_prepare(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                    const char *case_id, int role, const bd_sign_opts *opts, bd_err *err);

/* Sign a prepared subject: sign out->message, check the subject still has the prepared
 * digest (else case.digest_mismatch / task_class.digest_mismatch and nothing is
 * written), then write the subject's provenance.yaml whole and atomically with the
 * role's block replaced, naming the digest it signed (`digest:`; the other block and
 * last_validated_at kept), after proving the
 * new text loads back to exactly those values. Returns 0 or -1. */
int bd_sign_prepared(bd_sign_result *prep, const bd_task_class *tc, const bd_sign_opts *opts,
                     bd_err *err);

/* bd_sign_prepare then bd_sign_prepared: `benchdesk sign`. */
int bd_sign_subject(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                    const char *case_id, int role, const bd_sign_opts *opts, bd_err *err);

/* provenance.yaml text for `p` (schema_version 2, author, reviewer — each with its
 * `digest` when it has one — last_validated_at; absent blocks are left out). New string (caller
 * frees) or NULL (out of memory). */
char *bd_provfile_format(const bd_provfile *p);

#endif
