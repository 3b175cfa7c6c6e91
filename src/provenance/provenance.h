/*
 * provenance.h — verifying the two-person provenance of a case or a task class
 * (docs/provenance.md), with GPGME. Signing is sign.h's.
 *
 * The signed message is exactly these bytes, every line ending in "\n" (the last one
 * too), nothing before or after:
 *
 *     benchdesk-provenance-v2\n
 *     role: <author|reviewer>\n
 *     subject: <case|task-class>\n
 *     task_class: <task-class name>\n
 *     case_id: <case id>\n                 (only when the subject is a case)
 *     digest: blake3:<64 hex>\n
 *
 * Signatures live in the subject's provenance.yaml (bench.h: bd_provfile). Verification
 * never touches the
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
#include <stdint.h>

#include "bench.h"
#include "digest.h"
#include "err.h"

#define BD_PROV_MAGIC "benchdesk-provenance-v2"

/* Initialise GPGME (gpgme_check_version, locale). Idempotent; call it from the main
 * thread before starting threads. Starts no process: the gpg engine is looked for (and a
 * missing or too old one reported as gpg.unavailable) the first time a signature or key
 * needs GnuPG. Returns 0, or -1 with gpg.unavailable when GPGME is too old. */
int bd_provenance_init(bd_err *err);

/* "author" / "reviewer" for BD_ROLE_AUTHOR / BD_ROLE_REVIEWER, NULL otherwise. */
const char *bd_provenance_role_str(int role);

/* Parse "author" / "reviewer" into BD_ROLE_*. Returns 0, or -1 for anything else. */
int bd_provenance_role_parse(const char *s, int *role);

/* What is signed: a case (its case digest) or a task class (its task-class digest). */
typedef enum { BD_SUBJECT_CASE, BD_SUBJECT_TASK_CLASS } bd_subject_kind;

/* "case" | "task-class", as in the message. */
const char *bd_subject_kind_str(bd_subject_kind k);

/* One subject and what is known of it now. Every pointer is borrowed. */
typedef struct bd_subject {
    bd_subject_kind kind;
    const char *task_class;  /* its name (for a case: the task class it belongs to) */
    const char *case_id;     /* BD_SUBJECT_CASE only */
    const char *current;     /* its digest computed now, or NULL/"" when it could not be */
    const char *pinned;      /* its pin in digests.yaml, or NULL/"" when none */
    const bd_provfile *prov; /* its provenance.yaml (NULL: no signatures) */
} bd_subject;

/* The exact message above for `role` over subject `s` with `digest` ("blake3:<hex>").
 * *out is a new NUL-terminated string (caller frees), *len (may be NULL) its length.
 * Refuses a bad role (usage.bad_args), a bad name (case.bad_id), a missing or malformed
 * digest (case.digest_missing / task_class.digest_missing: pin first). Returns 0 or -1. */
int bd_provenance_message(char **out, size_t *len, int role, const bd_subject *s,
                          const char *digest, bd_err *err);

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

/* Start reading this user's signature memo (sigmemo.h) on a thread of its own, so the
 * first signature looked up does not wait for it: for a check about to list and read a
 * large bench first. Nothing when the context checks fully, or has begun checking. The
 * thread is joined by the first lookup, bd_prov_ctx_full or bd_prov_ctx_free. NULL: nothing. */
void bd_prov_ctx_preload(bd_prov_ctx *ctx);

/* From now on this context checks fully (`verify --full`): it neither reads nor writes
 * this user's signature memo (sigmemo.h) nor checks any signature in-process
 * (openpgp.h): every signature goes to GnuPG. */
void bd_prov_ctx_full(bd_prov_ctx *ctx);

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
    bool expiry_known;                /* the key was listed: `expires` is its expiry */
    int64_t expires;                  /* the earlier of the key's and the subkey's, 0: never */
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
    bool present;                     /* the block is in provenance.yaml */
    bool superseded;                  /* genuine, over a digest that is no longer the pin */
    bool pin_ok;                      /* holds for the pin; only the content moved since
                                       * (err is then provenance.stale_digest) */
    bd_err err;                       /* BD_OK when it verified (and when superseded) */
    char digest[BD_DIGEST_BUF];       /* the digest it signed (its block's, or the one it
                                       * was judged against), "" if unknown */
    char fingerprint[BD_FPR_LEN + 1]; /* the primary fingerprint that signed, "" if unknown */
    char identity[256];               /* the block's identity (informational; "" when
                                       * the verdict came from the case memo) */
    bool expiry_known;                /* a good signature's key expiry is known: */
    int64_t expires;                  /* that expiry (UTC seconds), 0: never */
} bd_prov_sig;

typedef struct bd_prov_result {
    bd_prov_status status;
    /* The status the signatures give against the pin alone, as if the content still
     * matched it: what the subject claims to be. A run selects by it (rungate.h). */
    bd_prov_status pin_status;
    bd_prov_sig author;
    bd_prov_sig reviewer;
    bd_err err; /* the case's first failure (BD_OK unless status is BD_PROV_ST_BAD) */
} bd_prov_result;

/* Verify the provenance of subject `s` (docs/provenance.md#editing-is-not-tampering).
 * A present block that names the digest it signed (`digest:`) is judged on its own:
 *   - its signature must verify, exactly one signature, over the message for its role and
 *     subject with that digest (else provenance.bad_signature: forged or altered);
 *   - when that digest is not the subject's pin the block is superseded (out->*.superseded:
 *     it counts for nothing, and is no error);
 *   - when it is the pin, the key must be in bench/keys, not expired or revoked, its
 *     primary fingerprint the block's and trusted for the role (provenance.untrusted_signer,
 *     key_expired, key_revoked, bad_signature), and the content must still match the pin
 *     (provenance.stale_digest, with pin_ok set).
 * A block without `digest` is judged against the pin: good over the current digest, or
 * stale_digest when good over the pinned digest only, else bad_signature; then the same
 * key checks.
 * Then, over the blocks that count: a valid review without any author block is
 * provenance.missing; valid author and reviewer with the same primary fingerprint is
 * provenance.same_signer. Both valid: signed; one: awaiting review; none: draft.
 * Always fills *out. Returns 0 when the status is draft, awaiting_review or signed, 1 when
 * it is bad (out->err says why), -1 when verification could not run (GnuPG failure,
 * out of memory: `err`, and out->status is BD_PROV_ST_BAD with the same error). */
int bd_provenance_verify(bd_prov_result *out, bd_prov_ctx *ctx, const bd_subject *s, bd_err *err);

/* ---- the case memo (docs/provenance.md#the-case-memo) ------------------------------ */

/* The memo key of case subject `sj` (its current digest computed from the bytes just
 * read, equal to its pin) in this context, for a task class of SUT kind `sut_kind` and
 * provenance.yaml's bytes `prov` (NULL: no such file), into key. False when this context
 * keeps no memo: `verify --full`, no usable state directory, or the program's own bytes
 * (whose rules judged the entry) cannot be read. */
bool bd_prov_case_key(bd_prov_ctx *ctx, uint8_t key[32], const bd_subject *sj, int sut_kind,
                      const char *prov, size_t prov_len);

/* True when this user's memo holds a passing verdict under `key` that still holds now;
 * *out is then filled as bd_provenance_verify fills it for that case (both blocks' digest
 * the subject's current one, their identity ""). */
bool bd_prov_case_recall(bd_prov_ctx *ctx, const uint8_t key[32], const bd_subject *sj,
                         bd_prov_result *out);

/* Remember `res` under `key` when it is the verdict of a case whose whole check passed
 * (the caller's to know: files, pins, case.yaml, cassette) and is clean: draft, awaiting
 * review or signed, against the pin too, every block present valid for the pin (none
 * superseded or stale) and its key's expiry known. Anything else is not remembered.
 * Returns whether it was (as far as this process knows: the memo file is best effort). */
bool bd_prov_case_remember(bd_prov_ctx *ctx, const uint8_t key[32], const bd_prov_result *res);

/* Write what this user's memo was told to remember and has not written yet (it writes in
 * batches; closing the context writes the rest). A check calls it when it ends, so a
 * long-lived context (the TUI's) leaves nothing unwritten between checks. */
void bd_prov_ctx_flush(bd_prov_ctx *ctx);

/* ---- unchanged cases (docs/provenance.md#unchanged-cases) --------------------------- */

/* Whose shape a case's stamps follow: its directory (device, inode), task class and id. */
struct bd_shapememo_subject;

/* The memo key of case subject `sj` (its pin) with stamp digest `stamps` (case_stamp.h)
 * in this context, into key. False when this context keeps no case memo (as
 * bd_prov_case_key). */
bool bd_prov_stamp_key(bd_prov_ctx *ctx, uint8_t key[32], const bd_subject *sj, int sut_kind,
                       const uint8_t stamps[32]);

/* True when this user's memo knows the stamps under `key` and the case verdict they stand
 * for still holds now: *out as bd_prov_case_recall fills it (sj->current the pin, which
 * the bytes matched when they were read) and `cassette` the cassette's digest ("" when
 * none). */
bool bd_prov_stamp_recall(bd_prov_ctx *ctx, const uint8_t key[32], const bd_subject *sj,
                          bd_prov_result *out, char cassette[BD_DIGEST_BUF]);

/* Remember that the stamps under `key` stand for the case memo key `case_key` and the
 * cassette digest `cassette` (NULL: none), and that the case directory `whose` has
 * `shape` (shape_len bytes). The caller's to know: the stamps were taken before the bytes
 * that gave case_key were read, settled, and the case passed. */
void bd_prov_stamp_remember(bd_prov_ctx *ctx, const uint8_t key[32], const uint8_t case_key[32],
                            const char *cassette, const struct bd_shapememo_subject *whose,
                            const char *shape, size_t shape_len);

/* The shape remembered for the case directory `whose` into out[0..*len) (at most cap
 * bytes); false when none is or this context keeps no case memo. */
bool bd_prov_shape_recall(bd_prov_ctx *ctx, const struct bd_shapememo_subject *whose, char *out,
                          size_t cap, size_t *len);

/* ---- many subjects at once (docs/provenance.md#verifying-many-signatures) ---------- */

/* A signature check gathered for a batch: the message (owned) and the armoured
 * signature (borrowed from the subject's provenance file, which must outlive it). */
typedef struct bd_prov_req {
    char *msg;
    size_t len;
    const char *sig;
} bd_prov_req;

typedef struct bd_prov_reqs {
    bd_prov_req *v;
    size_t n, cap;
} bd_prov_reqs;

#define BD_PROV_REQS_INIT                                                                          \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Append to `reqs` the signature checks bd_provenance_verify(s) would make that this
 * context has not made yet. Nothing is checked and nothing is judged; a request that
 * cannot be gathered (out of memory) is simply left out. */
void bd_provenance_collect(bd_prov_reqs *reqs, bd_prov_ctx *ctx, const bd_subject *s);

/* Check the gathered signatures with as few GnuPG processes as possible, keeping what
 * is settled in the context (and this user's memo) for the bd_provenance_verify calls
 * that follow. A plain Ed25519 signature is checked in-process first (openpgp.h; not
 * under a full check); only a lone good signature by a key of the private home is
 * settled in a batch; everything else — another shape, another outcome, GnuPG failing,
 * no memory — is left for bd_provenance_verify, which checks it alone. So it changes
 * when a verdict is reached, never which. Returns how many of the requests neither memo
 * could answer (0: gathering the next ones is not worth it). Thread-safe like the
 * context; never fails. */
size_t bd_prov_prefetch(bd_prov_ctx *ctx, const bd_prov_reqs *reqs);

/* Free the requests' messages and the array; `reqs` is empty and reusable after. */
void bd_prov_reqs_release(bd_prov_reqs *reqs);

/* How many signatures this context settled in batches, how many it gave GnuPG one at a
 * time, and how many it settled in-process (openpgp.h) without GnuPG. */
size_t bd_prov_ctx_batched(const bd_prov_ctx *ctx);
size_t bd_prov_ctx_alone(const bd_prov_ctx *ctx);
size_t bd_prov_ctx_inproc(const bd_prov_ctx *ctx);

#endif
