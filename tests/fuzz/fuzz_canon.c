/*
 * fuzz_canon.c — libFuzzer target for canonical JSON (src/base/canon.h).
 *
 * Any document cJSON accepts either is refused by bd_canon_json (duplicate keys,
 * invalid UTF-8, numbers beyond a double) or canonicalizes to strict UTF-8 bytes that
 * cJSON parses again into a tree whose canonical bytes are the same (idempotence).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "text.h"
#include "score.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* cJSON gets a NUL-terminated copy: the target is canon, not cJSON's bounds. */
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    cJSON *t1 = cJSON_ParseWithLength(buf, size);
    free(buf);
    if (!t1)
        return 0;
    size_t len1;
    char *c1 = bd_canon_json(t1, &len1);
    cJSON_Delete(t1);
    if (!c1)
        return 0;
    check(strlen(c1) == len1, "the length matches and there is no NUL inside");
    check(bd_utf8_valid(c1, len1), "canonical bytes are strict UTF-8");
    for (size_t i = 0; i < len1; i++) {
        unsigned char ch = (unsigned char)c1[i];
        check(ch >= 0x20, "no raw control character (all escaped)");
    }
    cJSON *t2 = cJSON_ParseWithLength(c1, len1);
    check(t2 != NULL, "canonical bytes parse again");
    size_t len2;
    char *c2 = bd_canon_json(t2, &len2);
    cJSON_Delete(t2);
    check(c2 != NULL, "canonical bytes canonicalize again");
    check(len1 == len2 && memcmp(c1, c2, len1) == 0, "canonicalization is idempotent");
    free(c1);
    free(c2);
    return 0;
}
