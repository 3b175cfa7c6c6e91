/*
 * provenance.h — two-person provenance of a case (DESIGN.md §6), with GPGME.
 *
 * The signed message is exactly these bytes, every line ending in "\n" (the last one
 * too), nothing before or after:
 *
 *     benchdesk-provenance-v1\n
 *     role: <author|reviewer>\n
 *     case_id: <case_id>\n
 *     added_at: <added_at>\n
 *     case_digest: blake3:<64 hex>\n
 *
 * Signing uses the curator's own keyring (GPGME's default home, or $GNUPGHOME) and writes
 * a detached, ASCII-armored signature into case.yaml. Verification never touches the
 * user's keyring or trust database: a bd_prov_ctx imports bench/keys/<name>.asc into a
 * private temporary GnuPG home (mode 0700, removed by bd_prov_ctx_free) and checks each
 * signature against bench/trusted-signers.yaml.
 *
 * Threads: call bd_provenance_init() once from the main thread before any other thread
 * starts (it calls gpgme_check_version). After that every function here may run on
 * libuv's thread pool; a bd_prov_ctx may be shared by several threads (each call uses
 * its own GPGME context). Nothing here prints or spawns a process itself; GPGME runs gpg.
 */
#ifndef BD_PROVENANCE_H
#define BD_PROVENANCE_H

#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "digest.h"
#include "err.h"

#define BD_PROV_MAGIC "benchdesk-provenance-v1"

/* Initialise GPGME (gpgme_check_version, locale). Idempotent; call it from the main
 * thread before starting threads. Returns 0, or -1 with gpg.unavailable when GPGME or
 * its gpg engine is missing or too old. */
int bd_provenance_init(bd_err *err);

/* "author" / "reviewer" for BD_ROLE_AUTHOR / BD_ROLE_REVIEWER, NULL otherwise. */
const char *bd_provenance_role_str(int role);

/* Parse "author" / "reviewer" into BD_ROLE_*. Returns 0, or -1 for anything else. */
int bd_provenance_role_parse(const char *s, int *role);

/* The exact message above for `role` over `case_id`, `added_at` and `case_digest`
 * ("blake3:<hex>"). *out is a new NUL-terminated string (caller frees), *len (may be
 * NULL) its length. Refuses a bad role, a bad id, a value holding a newline, or a
 * malformed digest (usage.bad_args: these come from a loaded case, so a failure here is a
 * caller bug or an unpinned case). Returns 0 or -1. */
int bd_provenance_message(char **out, size_t *len, int role, const char *case_id,
                          const char *added_at, const char *case_digest, bd_err *err);

/* ---- verification -------------------------------------------------------------------- */

typedef struct bd_prov_ctx bd_prov_ctx;

/* A verification context for the bench whose bench/ folder is `bench_dir`: loads
 * bench/trusted-signers.yaml now (a missing file means "no trusted signers"; a malformed
 * one is signers.schema_invalid) and, on first use, creates the private GnuPG home and
 * imports every bench/keys/<name>.asc into it (a file holding a secret key or no key at all is
 * gpg.bad_keyfile). Create one per command or per TUI session. Returns 0 with *out (free
 * with bd_prov_ctx_free), or -1 with `err`. */
int bd_prov_ctx_new(bd_prov_ctx **out, const char *bench_dir, bd_err *err);

/* Remove the private GnuPG home and free the context. NULL is fine. */
void bd_prov_ctx_free(bd_prov_ctx *ctx);

/* Borrowed trusted signers of the context (never NULL; may hold 0 signers). */
const bd_signers *bd_prov_ctx_signers(const bd_prov_ctx *ctx);

/* How one detached signature checked out against the context's bench/keys. */
typedef enum {
    BD_PROV_DET_GOOD,          /* one good signature by a usable key from bench/keys */
    BD_PROV_DET_NOT_SIGNATURE, /* no OpenPGP signature in it (garbage, altered armor) */
    BD_PROV_DET_SEVERAL,       /* more than one signature */
    BD_PROV_DET_BAD,           /* one signature that does not verify over the bytes */
    BD_PROV_DET_UNKNOWN_KEY,   /* made by a key that is not in bench/keys */
    BD_PROV_DET_REVOKED,       /* good, but the (sub)key is revoked */
    BD_PROV_DET_EXPIRED,       /* good, but the (sub)key has expired */
    BD_PROV_DET_UNUSABLE,      /* good, but GnuPG reports the key disabled or invalid */
} bd_prov_det_verdict;

typedef struct bd_prov_detached {
    bd_prov_det_verdict verdict;
    bool crypto_good;                 /* the bytes verify (even if the key is not usable) */
    int nsigs;                        /* signatures found */
    char fingerprint[BD_FPR_LEN + 1]; /* signer's primary fingerprint, upper-case; "" if unknown */
    char key_id[128];                 /* the key (or subkey) id GnuPG reports, "" if none */
    char detail[256];                 /* why it is no signature (NOT_SIGNATURE), else "" */
} bd_prov_detached;

/* Check the detached ASCII-armored signature `armored_sig` over exactly `len` bytes at
 * `msg` in the context's private home (created on first use: never the user's keyring,
 * no agent, no key retrieval). Judges only the signature and its key; whether the
 * fingerprint is trusted (bd_prov_ctx_signers) or the one a file names is the caller's
 * to decide. Always fills *out. Returns 0 with the verdict in *out, or -1 when the check
 * could not run: gpg.* (GnuPG failed, or a bad bench/keys file: gpg.bad_keyfile),
 * io.error (no private home), env.out_of_memory (err). Thread-safe like the context. */
int bd_prov_verify_detached(bd_prov_detached *out, bd_prov_ctx *ctx, const char *msg, size_t len,
                            const char *armored_sig, bd_err *err);

typedef enum {
    BD_PROV_ST_DRAFT,    /* no signature */
    BD_PROV_ST_AWAITING, /* a valid author signature, no review yet */
    BD_PROV_ST_SIGNED,   /* valid author and reviewer signatures, two different keys */
    BD_PROV_ST_BAD,      /* a signature is present and does not verify (never "draft") */
} bd_prov_status;

/* "draft" | "awaiting_review" | "signed" | "bad". */
const char *bd_prov_status_str(bd_prov_status s);

/* What one signature block verified to. */
typedef struct bd_prov_sig {
    bool present;                     /* the block is in case.yaml */
    bd_err err;                       /* BD_OK when it verified */
    char fingerprint[BD_FPR_LEN + 1]; /* the primary fingerprint that signed, "" if unknown */
    char identity[256];               /* the block's identity (informational) */
} bd_prov_sig;

typedef struct bd_prov_result {
    bd_prov_status status;
    bd_prov_sig author;
    bd_prov_sig reviewer;
    bd_err err; /* the case's first failure (BD_OK unless status is BD_PROV_ST_BAD) */
} bd_prov_result;

/* Verify the provenance of the loaded case `c` whose digest, computed now, is
 * `current_digest` (NULL or "" when it could not be computed: then the case's
 * case_digest field is used and no staleness is judged). For each present block:
 *   - the signature must hold exactly one signature, good over the exact message for
 *     its role (provenance.bad_signature; a signature that is good over the message with
 *     the case's recorded case_digest but not the current digest is
 *     provenance.stale_digest);
 *   - the signing key must not be expired (provenance.key_expired) or revoked
 *     (provenance.key_revoked), and must be in bench/keys (provenance.untrusted_signer);
 *   - its primary fingerprint must be the block's `fingerprint` (provenance.bad_signature)
 *     and be listed in trusted-signers.yaml with that role (provenance.untrusted_signer).
 * Then: a review without an author signature is provenance.missing; author and reviewer
 * with the same primary fingerprint is provenance.same_signer.
 * Always fills *out. Returns 0 when the status is draft, awaiting_review or signed, 1 when
 * it is bad (out->err says why), -1 when verification could not run (GnuPG failure,
 * out of memory: `err`, and out->status is BD_PROV_ST_BAD with the same error). */
int bd_provenance_verify_case(bd_prov_result *out, bd_prov_ctx *ctx, const bd_case *c,
                              const char *current_digest, bd_err *err);

/* ---- signing ------------------------------------------------------------------------- */

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
} bd_sign_opts;

#define BD_SIGN_OPTS_INIT                                                                          \
    {                                                                                              \
        NULL, NULL, NULL, NULL                                                                     \
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
int bd_provenance_list_keys(bd_sign_key **out, size_t *n, const char *gnupg_home, bd_err *err);

/* Resolve the key signing will use: opts->key when set (it must be a usable secret key:
 * gpg.key_not_found otherwise), else the first `default-key` of gpg.conf that is usable,
 * else the first usable secret key (gpg.key_not_found when there is none). */
int bd_provenance_resolve_key(bd_sign_key *out, const bd_sign_opts *opts, bd_err *err);

/* Detached, ASCII-armored signature over `len` bytes at `data` with `key` (resolved by
 * bd_provenance_resolve_key). *sig is a new NUL-terminated string (caller frees).
 * gpg.sign_failed (a cancelled or wrong passphrase says so), gpg.error otherwise. */
int bd_provenance_sign_bytes(char **sig, const bd_sign_key *key, const bd_sign_opts *opts,
                             const void *data, size_t len, bd_err *err);

/* What signing a case did. */
typedef struct bd_sign_result {
    int role;
    bd_sign_key key;
    char case_digest[BD_DIGEST_BUF]; /* the digest the message carries */
    char *message;                   /* the exact signed bytes (caller frees via release) */
    char *signature;                 /* the armored signature written */
    char *case_yaml;                 /* path of the case.yaml written */
} bd_sign_result;

void bd_sign_result_release(bd_sign_result *r);

/* Prepare to sign case `case_id` of `tc` as `role`: the case must be intact
 * (bd_verify_case: its digest equals its pin and its case_digest; its code otherwise),
 * the key must be resolvable, and listed in trusted-signers.yaml with `role`
 * (provenance.untrusted_signer). A reviewer additionally needs a valid author signature
 * (provenance.missing when absent, its own code when bad) by a different key
 * (provenance.same_signer). Fills out->role, out->key, out->case_digest and
 * out->message (the exact bytes to sign) — what the TUI shows before confirming.
 * `ctx` (required) supplies the trusted signers and verifies the author signature.
 * Returns 0 or -1. Release *out with bd_sign_result_release either way. */
int bd_provenance_prepare(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                          const char *case_id, int role, const bd_sign_opts *opts, bd_err *err);

/* Sign a prepared case: sign out->message, then write identity, primary fingerprint and
 * signature into provenance.added_by (author) or provenance.reviewed_by (reviewer) of
 * case.yaml — replacing that block if present, leaving every other byte of the file as
 * it was — after proving the new text loads and carries exactly those values. The
 * write is atomic. Refuses (case.digest_mismatch) when the case changed since
 * bd_provenance_prepare. Returns 0 or -1. */
int bd_provenance_sign_prepared(bd_sign_result *prep, const bd_task_class *tc, const char *case_id,
                                const bd_sign_opts *opts, bd_err *err);

/* bd_provenance_prepare then bd_provenance_sign_prepared: `benchdesk sign`. */
int bd_provenance_sign_case(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                            const char *case_id, int role, const bd_sign_opts *opts, bd_err *err);

/* The text of case.yaml `text` with the block `key` ("added_by" or "reviewed_by") under
 * the top-level `provenance:` mapping set to identity / fingerprint / signature (a
 * literal block scalar). Replaces an existing block, else inserts it (added_by after
 * added_at, reviewed_by after added_by, else at the end of the mapping). Every other
 * byte is kept. New string (caller frees), or NULL with case.schema_invalid naming
 * `label` when the provenance mapping is not written in block style. */
char *bd_provenance_set_block(const char *text, const char *key, const char *identity,
                              const char *fingerprint, const char *signature, const char *label,
                              bd_err *err);

#endif
