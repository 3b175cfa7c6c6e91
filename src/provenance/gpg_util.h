/*
 * gpg_util.h — the few GPGME helpers provenance.c (verifying) and sign.c (signing)
 * share. Internal to the core; nothing outside src/ includes it.
 */
#ifndef BD_GPG_UTIL_H
#define BD_GPG_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <gpgme.h>

#include "bench.h"
#include "err.h"

/* A GPGME OpenPGP context on `home` (NULL: the user's default home), ASCII armor when
 * `armor`. Calls bd_provenance_init first. Returns 0 with *out (gpgme_release), or -1
 * with gpg.unavailable / gpg.error. */
int bd_gpg_new(gpgme_ctx_t *out, const char *home, bool armor, bd_err *err);

/* GnuPG's text for `e` into buf. */
void bd_gpg_err_text(gpgme_error_t e, char *buf, size_t cap);

/* Set `err` to `code` with "what: <GnuPG's text>"; returns -1. */
int bd_gpg_fail(bd_err *err, bd_code code, gpgme_error_t e, const char *what);

/* The key's first usable user id (else its first): its e-mail (else the whole uid) into
 * `identity` and the uid as written into `uid` (either may be NULL), clipped to fit. */
void bd_gpg_key_identity(gpgme_key_t k, char *identity, size_t icap, char *uid, size_t ucap);

/* Upper-case copy of a fingerprint (at most 40 characters). */
void bd_gpg_fpr_upper(char out[BD_FPR_LEN + 1], const char *fpr);

#endif
