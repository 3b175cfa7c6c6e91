/*
 * hrecord_internal.h — what hrecord.c gives the other rooms of the history about one
 * record, below the public hrecord.h: the two checks of its bytes that verify runs
 * (docs/history.md "Verifying"), declared also for the tests that hold them to each
 * other (tests/unit/test_history_parse.c, tests/fuzz/fuzz_history_record.c); the record
 * core; parse_record; the chain tag; the reason writer. history_internal.h includes it.
 *
 * The full check parses the bytes with cJSON, checks the schema on the tree and
 * re-serialises it (canon.h), comparing byte for byte: it gives every verdict and reason.
 * The fast check reads the bytes once (recscan.h) and accepts only a record that is
 * canonical and valid by the same rules; it never rejects, it only declines, and then the
 * full check decides. A record the fast check accepts is one the full check accepts,
 * with the same core.
 */
#ifndef BD_HRECORD_INTERNAL_H
#define BD_HRECORD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hrecord.h"

/* What verify needs from every record. */
typedef struct bd_rec_core {
    uint64_t seq;
    uint8_t prev[32];
    bool is_audit;
} bd_rec_core;

/* The fast check: true, with *core filled, when the record is accepted; false (core
 * untouched) when the full check must decide. */
bool bd_history_record_fast(const char *buf, size_t len, bd_rec_core *core);

/* The full check alone: the verdict, *core filled on BD_CHAIN_OK, the reason in `why`
 * (may be NULL; "" on BD_CHAIN_OK). */
bd_chain_reason bd_history_record_full(const char *buf, size_t len, bd_rec_core *core,
                                       char why[256]);

/* What verify runs on a record: the fast check, and the full one when it declines. */
bd_chain_reason bd_history_record_check(const char *buf, size_t len, bd_rec_core *core,
                                        char why[256]);

/* ---- for the rooms of the history (through history_internal.h) ------------------------ */

#define CHAIN_TAG "benchdesk-chain-v1"
/* The tag is hashed with its terminating NUL: "benchdesk-chain-v1\0" is 19 bytes. */
#define CHAIN_TAG_LEN (sizeof(CHAIN_TAG))

/* bd_rec_core, by the name the rooms use. */
typedef bd_rec_core rec_core;

#define WHY(...) (why ? (void)snprintf(why, 256, __VA_ARGS__) : (void)0)

/* The full check of `len` bytes of one record (cJSON, schema, canonical form). Fills core
 * on BD_CHAIN_OK; fills *out (zeroed first) when non-NULL; the reason in `why` (may be
 * NULL). */
bd_chain_reason hist_parse_full(const char *buf, size_t len, rec_core *core, bd_history_record *out,
                                char *why);

/* Parse `len` bytes of one record: the fast check when only the core is wanted (verify
 * reads a million records), the full check when it declines or a record is filled (the
 * tree is kept in out->json). Fills core on BD_CHAIN_OK; fills *out (zeroed first) when
 * non-NULL. Inline: verify's workers call it once per record. */
static inline bd_chain_reason parse_record(const char *buf, size_t len, rec_core *core,
                                           bd_history_record *out, char *why)
{
    if (!out && bd_history_record_fast(buf, len, core)) {
        if (why)
            why[0] = '\0';
        return BD_CHAIN_OK;
    }
    return hist_parse_full(buf, len, core, out, why);
}

#endif
