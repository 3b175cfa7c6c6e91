/*
 * sigbatch.h — many detached signatures checked by one gpg process
 * (docs/provenance.md#verifying-many-signatures).
 *
 * GnuPG checks one detached signature per process, and starting gpg costs several times
 * what checking an Ed25519 or RSA signature does. gpg's --multifile mode checks many
 * files in one process, but only complete signed messages, never detached signatures.
 * So each detached signature of the plain shape is rewritten as the signed message it
 * stands for — its signature packet followed by a literal data packet holding the
 * message, which a version-4 signature of a binary document hashes byte for byte as the
 * detached check does — and gpg reads a batch of them at once.
 *
 * A batch only ever settles a signature GnuPG reports good and nothing else about; any
 * other outcome, shape or failure leaves it unsettled, and the caller checks it alone
 * the usual way. So batching decides when a verdict is reached, never which one.
 * Internal to the provenance domain.
 */
#ifndef BD_SIGBATCH_H
#define BD_SIGBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The signed message standing for detached signature `armored_sig` over the `mlen` bytes
 * of `msg`. Only the plain shape is wrapped: ASCII armor with no header line, lines of
 * base64 and a CRC-24 that matches, holding exactly one version-4 signature packet of
 * class 0x00 (a binary document). Returns true with *out (malloc'd, `*out_len` bytes;
 * the caller frees), false for any other shape or when out of memory. */
bool bd_sigbatch_wrap(uint8_t **out, size_t *out_len, const char *armored_sig, const char *msg,
                      size_t mlen);

typedef struct bd_sigbatch_result {
    bool settled; /* exactly one signature, good, and nothing else reported */
    char fpr[41]; /* the signing key's fingerprint as VALIDSIG gives it (40 hex) */
} bd_sigbatch_result;

/* Read gpg's status lines (`status`, `len` bytes) for the files `paths[0..n)`, given to
 * gpg in that order, into res[0..n) (all unsettled first). A file is settled only when
 * its FILE_START … FILE_DONE block, in order, holds one NEWSIG, one GOODSIG, one VALIDSIG
 * whose fingerprint ends in GOODSIG's key id, and otherwise only lines known to carry no
 * verdict; the first line out of order stops the reading. Never fails. */
void bd_sigbatch_parse(bd_sigbatch_result *res, const char *const *paths, size_t n,
                       const char *status, size_t len);

/* Run `gpg_path` on GnuPG home `home` over the signed-message files `paths[0..n)`
 * (--multifile --verify, batch, no tty, no dirmngr), its status lines into *status
 * (malloc'd, `*slen` bytes; the caller frees). The process is started by GPGME, as every
 * gpg of the verification home is. Returns 0, or -1 when gpg could not be run (nothing
 * is settled then). */
int bd_sigbatch_run(char **status, size_t *slen, const char *gpg_path, const char *home,
                    const char *const *paths, size_t n);

#endif
