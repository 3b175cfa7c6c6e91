/*
 * fuzz_bundle_manifest.c — libFuzzer target for the shard bundle manifest parser
 * (src/run/shard.h, docs/scale.md): import reads manifests that came from other machines.
 *
 * Invariants checked on every input:
 *   - the parser never crashes, leaks or reads past `size` (ASan/UBSan);
 *   - it refuses only with bundle.invalid (or out of memory), a zeroed manifest and a
 *     message that is one printable line: no newline, no control or bidi character, no
 *     byte that is not UTF-8, whatever the manifest quoted (a member name holding an
 *     escaped newline once came through raw: corpus member_key_newline.json);
 *   - an accepted manifest is canonical and round-trips: bd_bundle_manifest_json writes
 *     exactly the input bytes back; its fields are in range (shard < shards <=
 *     BD_SHARDS_MAX, cases sorted and unique, each a valid id with a digest).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "digest.h"
#include "shard.h"
#include "text.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1); /* exact size: ASan sees any overread */
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    bd_bundle_manifest m, zero;
    memset(&zero, 0, sizeof(zero));
    bd_err err = BD_ERR_INIT;
    int rc = bd_bundle_manifest_parse(&m, buf, size, "manifest.json", &err);
    if (rc != 0) {
        check(err.code == BD_E_BUNDLE_INVALID || err.code == BD_E_NOMEM,
              "refused as bundle.invalid");
        check(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL, "a one-line message");
        check(!bd_text_needs_vis(err.msg, 0), "a printable message (nothing for a terminal)");
        check(memcmp(&m, &zero, sizeof(m)) == 0, "a refused manifest is zeroed");
        free(buf);
        return 0;
    }
    check(m.shards >= 1 && m.shards <= BD_SHARDS_MAX && m.shard < m.shards, "shard in range");
    for (size_t i = 0; i < m.n_cases; i++) {
        check(bd_name_valid(m.cases[i].id) && bd_digest_str_valid(m.cases[i].digest),
              "case id and digest valid");
        check(i == 0 || strcmp(m.cases[i - 1].id, m.cases[i].id) < 0, "cases sorted, unique");
    }
    size_t len = 0;
    char *again = bd_bundle_manifest_json(&m, &len);
    check(again && len == size && memcmp(again, buf, size) == 0, "accepted bytes round-trip");
    free(again);
    bd_bundle_manifest_release(&m);
    free(buf);
    return 0;
}
