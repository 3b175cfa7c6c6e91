/*
 * anchor.h — signed chain-head anchors (docs/history.md): what a hash chain cannot see on
 * its own (a truncated tail, a rewrite from some record on) an anchor published into the
 * bench's git history can.
 *
 * The signed message is exactly these bytes, every line ending in "\n" (the last one
 * too), nothing before or after:
 *
 *     benchdesk-anchor-v1\n
 *     date: <YYYY-MM-DD>\n
 *     count: <n, decimal, no leading zeros>\n
 *     chain_head: <64 lower-case hex: record_hash of record n>\n
 *
 * The anchor file audit/anchors/bench/<date>.json (mode 0644, committed by the curator)
 * is canonical JSON followed by one "\n":
 *
 *     {"chain_head":"<hex>","count":n,"date":"<date>","schema_version":1,
 *      "signature":"<detached ASCII-armored OpenPGP signature over the message>",
 *      "signer":"<40 upper-case hex: the signing key's primary fingerprint>"}
 *
 * Verification never uses the user's keyring or trust database: it imports
 * bench/keys/<name>.asc into a private temporary GnuPG home (whose gpg.conf forbids
 * starting an agent or fetching keys; removed afterwards) and requires, per anchor:
 * exactly one good signature over the message; made by a key from bench/keys that is not
 * expired or revoked; whose primary fingerprint is the file's `signer` and is listed in
 * bench/trusted-signers.yaml (any role); and a local chain that verifies, holds at least
 * `count` records, and whose record `count` has hash `chain_head`.
 *
 * Threads: call bd_provenance_init() (provenance.h: gpgme_check_version) from the main
 * thread before other threads start. Nothing here prints or spawns a process itself.
 */
#ifndef BD_ANCHOR_H
#define BD_ANCHOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "sign.h"

#define BD_ANCHOR_MAGIC "benchdesk-anchor-v1"
#define BD_ANCHOR_DIR   "audit/anchors/bench"

typedef struct bd_anchor {
    char date[11]; /* YYYY-MM-DD */
    uint64_t count;
    char chain_head[BD_HASH_BUF];
    char signer[BD_FPR_LEN + 1];
    char *signature; /* armored, owned */
} bd_anchor;

void bd_anchor_release(bd_anchor *a);

/* The exact message above. *out is new (caller frees), *len (may be NULL) its length.
 * Refuses a malformed date or hash, or count 0 (usage.bad_args). Returns 0 or -1. */
int bd_anchor_message(char **out, size_t *len, const char *date, uint64_t count,
                      const char *chain_head, bd_err *err);

/* Parse the bytes of an anchor file strictly: exactly the members above with their
 * formats, canonical JSON and a final "\n", and a date equal to `expect_date` (the file
 * name's; may be NULL). Returns 0 and fills *out (release with bd_anchor_release), or -1
 * with anchor.mismatch naming `path` and what is wrong. */
int bd_anchor_parse(bd_anchor *out, const char *buf, size_t len, const char *expect_date,
                    const char *path, bd_err *err);

/* One anchor's verdict. */
typedef struct bd_anchor_check {
    char path[1024];
    bd_anchor anchor;   /* zeroed when the file did not parse */
    bd_err err;         /* BD_OK when the anchor verified */
    char identity[256]; /* trusted-signers.yaml identity of the signer, "" if unknown */
} bd_anchor_check;

typedef struct bd_anchor_report {
    uint64_t chain_count; /* records in the (intact) local chain */
    char chain_head[BD_HASH_BUF];
    bd_anchor_check *checks; /* one per anchor file, in date order */
    size_t n;
    size_t n_failed;
    uint64_t parsed_from; /* records from this seq on were parsed in full by this check;
                             those before it are under a signed anchor (re-hashed only) */
} bd_anchor_report;

/* Verify the local chain of the bench at `bench_root`, then every anchor under
 * audit/anchors/bench/ (files named YYYY-MM-DD.json; other names there are ignored only
 * if they do not end in .json — a .json with another name is anchor.mismatch). Collects
 * every anchor's verdict: anchor.bad_signature (no, several, altered or invalid
 * signature; an expired or revoked key; a signer field that is not the signing key),
 * anchor.untrusted_signer (a key not in bench/keys, or not in trusted-signers.yaml),
 * anchor.mismatch (malformed file; the chain holds fewer than `count` records —
 * truncated; record `count` has another hash — rewritten).
 * Returns 0 when the chain and every anchor verified (also with no anchors), 1 when some
 * anchor failed (out->n_failed > 0; bd_anchor_report_first_failure), -1 when the check
 * could not be made: chain.tampered (the chain itself is broken), io.error, gpg.*,
 * signers.schema_invalid, env.out_of_memory (err). Release *out either way. */
int bd_anchor_verify(bd_anchor_report *out, const char *bench_root, bd_err *err);

/* bd_anchor_verify in one walk of the chain that every decision takes its records from
 * (docs/history.md#the-derived-index): the anchors' signatures are checked first; records
 * under the longest anchor whose signature holds are re-hashed, not re-parsed (they were
 * checked in full when it was published; if their bytes do not hash to its head, every
 * record is parsed), the rest are parsed and checked in full — all of them with
 * BD_VERIFY_FULL in `flags`. `visit` (may be NULL) sees each record of the verified chain
 * (history.h, bd_history_visit); use what it gathered only when this returns 0 or 1. */
int bd_anchor_verify_visit(bd_anchor_report *out, const char *bench_root, int flags,
                           const bd_history_visit *visit, bd_err *err);

void bd_anchor_report_release(bd_anchor_report *r);

/* The first failing check's error, or NULL. */
const bd_err *bd_anchor_report_first_failure(const bd_anchor_report *r);

typedef struct bd_anchor_publish_opts {
    bd_sign_opts sign; /* key (NULL: the default key), passphrase callback, gnupg home */
    const char *date;  /* YYYY-MM-DD; NULL: today (UTC) */
} bd_anchor_publish_opts;

#define BD_ANCHOR_PUBLISH_OPTS_INIT                                                                \
    {                                                                                              \
        BD_SIGN_OPTS_INIT, NULL                                                                    \
    }

/* Publish an anchor of the current chain: verify the chain and every existing anchor
 * (refusing with their error: a broken chain is never anchored), refuse an empty history
 * (usage.bad_args), resolve the signing key (gpg.key_not_found) and require it in
 * trusted-signers.yaml (anchor.untrusted_signer), sign the message, check the signature
 * against bench/keys like verify will (anchor.untrusted_signer when the public key is not
 * there), then write audit/anchors/bench/<date>.json atomically (an anchor of the same
 * date is replaced: same day, longer chain). Fills *out (release with
 * bd_anchor_release) and *path_out (new string, caller frees; may be NULL).
 * Returns 0 or -1. */
int bd_anchor_publish(bd_anchor *out, char **path_out, const char *bench_root,
                      const bd_anchor_publish_opts *opts, bd_err *err);

#endif
