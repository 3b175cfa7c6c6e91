/*
 * reccheck.h — the two checks of one history record that history.c runs (history.h,
 * docs/history.md "Verifying"), declared for the tests that hold them to each other
 * (tests/unit/test_history_parse.c, tests/fuzz/fuzz_history_record.c).
 *
 * The full check parses the bytes with cJSON, checks the schema on the tree and
 * re-serialises it (canon.h), comparing byte for byte: it gives every verdict and reason.
 * The fast check reads the bytes once (recscan.h) and accepts only a record that is
 * canonical and valid by the same rules; it never rejects, it only declines, and then the
 * full check decides. A record the fast check accepts is one the full check accepts,
 * with the same core.
 */
#ifndef BD_RECCHECK_H
#define BD_RECCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "history.h"

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

#endif
