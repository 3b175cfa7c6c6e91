/*
 * signer_add.h — adding a signer to a bench (`benchdesk signer add`, docs/provenance.md
 * #adding-a-signer): the public key exported from the curator's own keyring into
 * bench/keys/, and an entry in bench/trusted-signers.yaml. Who may sign is itself a trust
 * decision: the change is only proposed here; it counts once it is reviewed and committed
 * like any other (status and the stage view flag both files). Nothing here prints.
 */
#ifndef BD_SIGNER_ADD_H
#define BD_SIGNER_ADD_H

#include <stdbool.h>

#include "bench.h"
#include "err.h"

typedef struct bd_signer_added {
    char fingerprint[BD_FPR_LEN + 1]; /* the key's primary fingerprint */
    char identity[256];               /* its primary user id's e-mail (else the uid) */
    char key_path[4096];              /* the bench/keys/<name>.asc written (or kept) */
    bool key_file_new;                /* false: an identical file was already there */
    int roles;                        /* BD_ROLE_* bits written */
} bd_signer_added;

/* Parse "author", "reviewer", "author,reviewer" (any order, spaces allowed) into BD_ROLE_*
 * bits. Returns 0, or -1 with usage.bad_args. */
int bd_signer_roles_parse(int *roles, const char *s, bd_err *err);

/* The roles as trusted-signers.yaml lists them ("author, reviewer", "operator", ...);
 * "" for a combination that is not allowed. Static string. */
const char *bd_signer_roles_str(int roles);

/* Add the key `key` (a fingerprint, key id or e-mail naming exactly one usable key of the
 * keyring in `gnupg_home`, NULL: the user's default) to the bench at `bench_dir`
 * (<root>/bench) with `roles`: its public key (never a secret one) exported armored to
 * bench/keys/<e-mail's local part>.asc (another name when a different key holds that
 * one), then `- {fingerprint, identity, roles}` appended to trusted-signers.yaml (created
 * when absent; comments and order kept; rewritten whole only when the appended text would
 * not load) — each written atomically, and the new file checked with the strict loader
 * first. Refused: no such key or several (gpg.key_not_found, usage.bad_args), a key that
 * is expired, revoked or cannot sign (gpg.key_not_found), a fingerprint already listed
 * (usage.bad_args: edit its roles by hand), a trusted-signers.yaml the loader refuses
 * (its code). Returns 0 with *out, or -1. */
int bd_signer_add(bd_signer_added *out, const char *bench_dir, const char *key, int roles,
                  const char *gnupg_home, bd_err *err);

#endif
