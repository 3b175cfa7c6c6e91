/*
 * fuzz_history_record.c — libFuzzer target for the history record parser (src/history/history.h).
 *
 * Invariants checked on every input:
 *   - the parser never crashes, leaks or reads past `size` (ASan/UBSan);
 *   - it returns only ok / unparseable / schema_invalid, with a non-empty one-line reason
 *     exactly when it refuses, and a refused record is left zeroed;
 *   - validate-only and full parses agree;
 *   - the fast check (hrecord_internal.h) accepts only what the full check accepts, with the same
 *     seq, prev_hash and kind, and what verify runs gives the full check's verdict and
 *     reason;
 *   - an accepted record is canonical: re-serializing its JSON gives the input bytes, its
 *     hash is the chain formula over those bytes, and its fields are consistent (a score
 *     record has a case id and no event; an audit record the reverse);
 *   - the linked parse (what a verified walk's visitors read) gives the same record, field
 *     by field (bd_history_record_same).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "digest.h"
#include "history.h"
#include "hrecord_internal.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* On an accepted record, the both-ends reader of score records answers as the general
 * reader does, or declines (it must not decline a version-2 score record). */
static void check_scored_reader(const char *buf, size_t size, const bd_history_record *r)
{
    static const char *const keys[] = {"case_id", "run_id",     "run_scope",         "origin",
                                       "score",   "started_at", "task_class_digest", "event"};
    enum { NK = sizeof(keys) / sizeof(keys[0]) };
    const char *qv[NK], *gv[NK];
    size_t ql[NK], gl[NK];
    bool qp = false, gp = false;
    double qs = 0, gs = 0;
    bd_record_keys ks;
    bd_record_keys_init(&ks, keys, NK);
    bool q = bd_record_members_scored(buf, size, &ks, qv, ql, &qp, &qs);
    bd_record_members(buf, size, keys, NK, gv, gl);
    bool g = bd_record_score_of(gv[4], gl[4], &gp, &gs);
    check(!q || g, "the both-ends reader reads only score records");
    if (!r->is_audit && r->schema_version >= 2)
        check(q, "the both-ends reader reads every version-2 score record");
    if (!q)
        return;
    for (size_t i = 0; i < NK; i++)
        check(qv[i] == gv[i] && ql[i] == gl[i], "the both-ends reader finds the same members");
    check(qp == gp && memcmp(&qs, &gs, sizeof(double)) == 0,
          "the both-ends reader reads the same score");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1); /* exact size: ASan sees any overread */
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);

    char why[256], why0[256];
    bd_history_record r, zero;
    memset(&zero, 0, sizeof(zero));
    bd_chain_reason c = bd_history_record_parse(&r, buf, size, why);
    check(c == BD_CHAIN_OK || c == BD_CHAIN_UNPARSEABLE || c == BD_CHAIN_SCHEMA_INVALID,
          "the parser returns only its own reasons");
    size_t wl = strnlen(why, sizeof(why));
    check(wl < sizeof(why), "why is NUL-terminated");
    check(c == BD_CHAIN_OK ? wl == 0 : wl > 0, "why is set exactly when refused");
    bd_chain_reason c0 = bd_history_record_parse(NULL, buf, size, why0);
    check(c0 == c || strcmp(why, "out of memory") == 0, "validate-only agrees");

    bd_rec_core fast, full, chk;
    char wfull[256], wchk[256];
    bool f = bd_history_record_fast(buf, size, &fast);
    bd_chain_reason cf = bd_history_record_full(buf, size, &full, wfull);
    bd_chain_reason cc = bd_history_record_check(buf, size, &chk, wchk);
    check(cf == c || strcmp(why, "out of memory") == 0, "the full check is the parser's");
    check(!f || cf == BD_CHAIN_OK, "the fast check accepts only what the full check accepts");
    if (f)
        check(fast.seq == full.seq && fast.is_audit == full.is_audit &&
                  memcmp(fast.prev, full.prev, 32) == 0,
              "the fast check reads the same core");
    check(cc == cf && strcmp(wchk, wfull) == 0, "verify's verdict is the full check's");
    if (cc == BD_CHAIN_OK)
        check(chk.seq == full.seq && chk.is_audit == full.is_audit &&
                  memcmp(chk.prev, full.prev, 32) == 0,
              "verify reads the full check's core");

    if (c != BD_CHAIN_OK) {
        check(memcmp(&r, &zero, sizeof(r)) == 0, "a refused record is zeroed");
        free(buf);
        return 0;
    }
    size_t len;
    char *canon = bd_canon_json(r.json, &len);
    check(canon && len == size && memcmp(canon, buf, size) == 0, "accepted bytes are canonical");
    free(canon);
    uint8_t prev[32], h[32];
    check(bd_hash_unhex(prev, r.prev_hash) == 0, "prev_hash is 64 hex");
    bd_history_record_hash(h, prev, buf, size);
    char hex[BD_HASH_BUF];
    bd_hex(hex, h, 32);
    check(strcmp(hex, r.hash) == 0, "hash follows the chain formula");
    check(r.seq >= 1 && r.seq <= BD_HISTORY_SEQ_MAX, "seq in range");
    if (r.is_audit)
        check(r.event && !r.case_id && r.at, "audit record fields");
    else
        check(r.case_id && !r.event && r.task_class && r.score.score >= 0 && r.score.score <= 1,
              "score record fields");
    check_scored_reader(buf, size, &r);
    /* What a walk's visitor reads from these bytes once linked (the fast check filling the
     * record, cJSON where it declines) is this same record. */
    bd_history_record linked;
    bd_err err = BD_ERR_INIT;
    if (bd_history_record_parse_linked(&linked, r.seq, buf, size, h, &err) == 0) {
        check(bd_history_record_same(&r, &linked), "the linked parse reads the same record");
        bd_history_record_release(&linked);
    } else {
        check(err.code == BD_E_NOMEM, "the linked parse takes every accepted record");
    }
    bd_history_record_release(&r);
    free(buf);
    return 0;
}
