/*
 * sigmemo.h — this user's memo of signatures already verified (docs/provenance.md
 * "Verifying many signatures").
 *
 * GnuPG checks one signature per process (milliseconds each), so a bench of many signed
 * cases would cost minutes on every check. A verdict GnuPG reached is remembered outside
 * the bench, in $XDG_STATE_HOME/benchdesk/sig-memo/, keyed by a digest of everything the
 * verdict depends on (the signature, the signed message, every public key of the bench,
 * trusted-signers.yaml) and authenticated with a secret key of this user's kept beside it:
 * a bench, a contributor or another user cannot write an entry this user believes, and
 * the memo is never shared or committed. An entry only ever stands for a verdict GnuPG
 * gave on the same bytes; `verify --full` does not read it. Beside the signatures it keeps
 * the verdicts of whole cases (the case memo), each for the exact bytes and build it was
 * reached on.
 *
 * Thread-safe. No failure is an error: a memo that cannot be read or written is simply
 * not used (the signature is checked by GnuPG).
 */
#ifndef BD_SIGMEMO_H
#define BD_SIGMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "hash.h"

typedef struct bd_sigmemo bd_sigmemo;

/* What is remembered of one cryptographically good signature. */
typedef struct bd_sigmemo_entry {
    int verdict;                          /* a bd_prov_det_verdict with crypto_good set */
    int64_t expires;                      /* the signing key's expiry (UTC seconds), 0: none */
    char fingerprint[BD_FPR_HEX_LEN + 1]; /* the signer's primary fingerprint */
    char key_id[41];                      /* the (sub)key GnuPG reported */
} bd_sigmemo_entry;

/* This user's memo, read lazily on the first lookup. NULL when the user has no state
 * directory or out of memory (then nothing is remembered). Free with bd_sigmemo_close. */
bd_sigmemo *bd_sigmemo_open(void);

/* Same, in directory `dir` (tests). */
bd_sigmemo *bd_sigmemo_open_at(const char *dir);

/* Write what is pending, rewrite the file when older builds' records are worth dropping
 * (bd_sigmemo_set_build), and free `m` (NULL: nothing). */
void bd_sigmemo_close(bd_sigmemo *m);

/* The program whose case verdicts and stamps this process reads and writes: `build` is
 * the 32 bytes its case and stamp keys take (bd_casememo_subject.build), and its records
 * carry the first 8 as their build tag. Takes effect only before the memo is first read
 * (the first lookup or put). With it, no other build's case or stamp record is read, and
 * bd_sigmemo_close rewrites the file without older builds' records when they are a
 * quarter of it or more (docs/provenance.md#the-memo-file); without it, every build's
 * records are read and none is dropped. */
void bd_sigmemo_set_build(bd_sigmemo *m, const uint8_t build[32]);

/* Read the memo now rather than on the first lookup or put: a thread may do this while
 * its caller does other work (bd_prov_ctx_preload). bd_sigmemo_set_build must come first;
 * after it, the build no longer changes. NULL: nothing. */
void bd_sigmemo_load(bd_sigmemo *m);

/* The memo key of a verification: a digest of the message, the signature and the
 * verification's `context` (a digest of the public keys and the trusted signers). */
void bd_sigmemo_key(uint8_t out[32], const uint8_t context[32], const char *msg, size_t mlen,
                    const char *sig, size_t slen);

/* True with *out when `key` was remembered and still holds at `now` (an entry whose key
 * has expired since is not believed: GnuPG is asked again). */
bool bd_sigmemo_get(bd_sigmemo *m, const uint8_t key[32], time_t now, bd_sigmemo_entry *out);

/* Remember `e` under `key`: believed by this process at once, appended to the memo file
 * (best effort) with the next bd_sigmemo_flush, on bd_sigmemo_close, or when 256 records
 * are waiting. */
void bd_sigmemo_put(bd_sigmemo *m, const uint8_t key[32], const bd_sigmemo_entry *e);

/* Write the records put and not yet written (best effort). */
void bd_sigmemo_flush(bd_sigmemo *m);

/* ---- the case memo (docs/provenance.md#the-case-memo) ------------------------------- */

/* What is remembered of one case whose whole check passed: its files matched their pins,
 * its case.yaml and provenance.yaml were valid, and every signature present verified for
 * the pin, by a trusted key, superseded by none. Kept in the same files as the signatures,
 * tagged with the same secret. */
typedef struct bd_casememo_entry {
    int status;                          /* a bd_prov_status: draft, awaiting review or signed */
    bool author, reviewer;               /* which signature blocks are present */
    int64_t expires;                     /* the earliest expiry of the keys that signed, 0: none */
    char author_fpr[BD_FPR_HEX_LEN + 1]; /* the author's primary fingerprint, "" if none */
    char reviewer_fpr[BD_FPR_HEX_LEN + 1]; /* the reviewer's, "" if none */
} bd_casememo_entry;

/* What a case's verdict depends on, all of it in its memo key. */
typedef struct bd_casememo_subject {
    const uint8_t *context; /* 32 bytes: the public keys and the trusted signers */
    const uint8_t *build;   /* 32 bytes: the program that judged (its rules) */
    const char *task_class; /* its name */
    const char *case_id;
    const char *digest; /* the case digest computed from the bytes just read */
    const char *pinned; /* its pin in digests.yaml */
    int sut_kind;       /* the task class's SUT kind (whether a cassette must exist) */
    const char *prov;   /* provenance.yaml's bytes as read, NULL when it is absent */
    size_t prov_len;
} bd_casememo_subject;

/* BLAKE3("benchdesk-casememo-1\0" ‖ context ‖ build ‖ each of task_class, case_id,
 * digest, pinned as len ‖ bytes ‖ sut_kind ‖ present ‖ len ‖ provenance.yaml), lengths and
 * sut_kind as 8-byte little-endian, present one byte. */
void bd_casememo_key(uint8_t out[32], const bd_casememo_subject *s);

/* True with *out when a case verdict was remembered under `key` and still holds at `now`
 * (not past the earliest expiry of its keys). */
bool bd_casememo_get(bd_sigmemo *m, const uint8_t key[32], time_t now, bd_casememo_entry *out);

/* Remember `e` under `key` (best effort, as bd_sigmemo_put). */
void bd_casememo_put(bd_sigmemo *m, const uint8_t key[32], const bd_casememo_entry *e);

/* ---- unchanged cases (docs/provenance.md#unchanged-cases) ------------------------- */

/* What a case's stamps (case_stamp.h) stand for: the case memo key its bytes gave when
 * they were read and judged, and its cassette's digest. */
typedef struct bd_stampmemo_entry {
    uint8_t case_key[32];  /* bd_casememo_key of the bytes read */
    bool cassette;         /* a top-level cassette.json was hashed */
    char cassette_hex[65]; /* its BLAKE3, 64 lower-case hex, when `cassette` */
} bd_stampmemo_entry;

/* What an unchanged case's entry depends on, all of it in its memo key. */
typedef struct bd_stampmemo_subject {
    const uint8_t *context; /* 32 bytes, as bd_casememo_subject */
    const uint8_t *build;   /* 32 bytes */
    const char *task_class;
    const char *case_id;
    const char *pinned; /* its pin in digests.yaml */
    int sut_kind;
    const uint8_t *stamps; /* 32 bytes: the case's stamp digest (bd_case_stamps.digest) */
} bd_stampmemo_subject;

/* BLAKE3("benchdesk-stampmemo-1\0" ‖ context ‖ build ‖ each of task_class, case_id,
 * pinned as len ‖ bytes ‖ sut_kind ‖ stamps), lengths and sut_kind 8-byte little-endian. */
void bd_stampmemo_key(uint8_t out[32], const bd_stampmemo_subject *s);

/* True with *out when an entry was remembered under `key` (it never expires: the case
 * memo entry it names does). */
bool bd_stampmemo_get(bd_sigmemo *m, const uint8_t key[32], bd_stampmemo_entry *out);

/* Remember `e` under `key` (best effort, as bd_sigmemo_put). */
void bd_stampmemo_put(bd_sigmemo *m, const uint8_t key[32], const bd_stampmemo_entry *e);

/* Whose shape: a case directory (its device and inode) of a task class. */
typedef struct bd_shapememo_subject {
    uint64_t dir_dev;
    uint64_t dir_ino;
    const char *task_class;
    const char *case_id;
} bd_shapememo_subject;

/* The key of part `part` of a shape: BLAKE3("benchdesk-shapememo-1\0" ‖ dir_dev(8) ‖
 * dir_ino(8) ‖ len ‖ task_class ‖ len ‖ case_id ‖ part(1)), numbers little-endian. */
void bd_shapememo_key(uint8_t out[32], const bd_shapememo_subject *s, unsigned part);

/* The shape remembered for `s`, its parts joined into out[0..*len) (at most `cap`
 * bytes). False when none is, or it does not fit. */
bool bd_shapememo_get(bd_sigmemo *m, const bd_shapememo_subject *s, char *out, size_t cap,
                      size_t *len);

/* Remember `shape` (len bytes, 1 to 800) for `s`, in as many parts as it takes. */
void bd_shapememo_put(bd_sigmemo *m, const bd_shapememo_subject *s, const char *shape, size_t len);

#endif
