/*
 * fuzz_verdict.c — libFuzzer target for verdict files and score_id (src/history/verdict.h,
 * docs/formats.md#verdict-files): verify reads verdict files that any contributor to the
 * bench repository can write.
 *
 * Invariants checked on every input:
 *   - the parser never crashes, leaks or reads past `size` (ASan/UBSan);
 *   - it refuses only with verdict.invalid (or out of memory), a zeroed verdict and a
 *     one-line printable message;
 *   - an accepted file is canonical and round-trips (bd_verdict_serialize writes exactly
 *     the input bytes back), its fields are in format, its message builds and starts with
 *     the magic line, and its path names its own content;
 *   - bd_score_id over the same bytes never crashes, and when it succeeds gives 64
 *     lower-case hex.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "text.h"
#include "verdict.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1); /* exact size: ASan sees any overread */
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    char sid[BD_HASH_BUF];
    bd_err e2 = BD_ERR_INIT;
    if (bd_score_id(sid, buf, size, &e2) == 0)
        check(bd_hex_lower_str(sid, 64), "score_id is 64 lower-case hex");
    bd_verdict v, zero;
    memset(&zero, 0, sizeof(zero));
    bd_err err = BD_ERR_INIT;
    if (bd_verdict_parse(&v, buf, size, NULL, &err) != 0) {
        check(err.code == BD_E_VERDICT_INVALID || err.code == BD_E_NOMEM,
              "refused as verdict.invalid");
        check(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL, "a one-line message");
        check(!bd_text_needs_vis(err.msg, 0), "a printable message (nothing for a terminal)");
        check(memcmp(&v, &zero, sizeof(v)) == 0, "a refused verdict is zeroed");
        free(buf);
        return 0;
    }
    char *again = NULL, *msg = NULL, *rel = NULL;
    size_t len = 0, mlen = 0;
    check(bd_verdict_serialize(&again, &len, &v, &err) == 0 && len == size &&
              memcmp(again, buf, size) == 0,
          "accepted bytes round-trip");
    check(bd_verdict_message(&msg, &mlen, &v, &err) == 0 &&
              strncmp(msg, BD_VERDICT_MAGIC "\n", sizeof(BD_VERDICT_MAGIC)) == 0,
          "an accepted verdict has a message");
    rel = bd_verdict_rel_path(&v);
    bd_verdict w;
    check(rel && bd_verdict_parse(&w, buf, size, rel, &err) == 0, "its own path is accepted");
    bd_verdict_release(&w);
    free(again);
    free(msg);
    free(rel);
    bd_verdict_release(&v);
    free(buf);
    return 0;
}
