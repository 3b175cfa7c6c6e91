/*
 * fuzz_sigbatch.c — libFuzzer target for the two readers of a signature batch
 * (src/provenance/sigbatch.h, docs/provenance.md#verifying-many-signatures): the armor of
 * a signature, which any contributor to the bench writes, and gpg's status lines about it.
 *
 * The first byte chooses the reader; the rest is its input: armor text, gpg's status text,
 * or (so that the packet reader is reached past the CRC) raw bytes armored here first.
 * Invariants:
 *   - neither reader crashes, leaks or reads past its input (ASan/UBSan);
 *   - a wrapped signature is its input's one signature packet (version 4, class 0x00)
 *     followed by a literal data packet of mode 'b' holding exactly the message, and
 *     wrapping the same text again gives the same bytes;
 *   - a settled file has a 40-hex fingerprint, and nothing is settled from a status text
 *     holding no GOODSIG.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../fixtures/gpg/armor.h"
#include "sigbatch.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char MSG[] = "benchdesk-provenance-v2\nrole: author\n";

static void wrap(const char *text)
{
    uint8_t *out = NULL, *again = NULL;
    size_t n = 0, n2 = 0;
    size_t ml = sizeof(MSG) - 1;
    if (!bd_sigbatch_wrap(&out, &n, text, MSG, ml)) {
        check(out == NULL && n == 0, "a refusal gives nothing");
        return;
    }
    check(n > 8 + ml, "room for both packets");
    const uint8_t *lit = out + n - ml - 8;
    check(lit[0] == 0xCB && lit[1] == 6 + ml, "a literal packet closes it");
    check(memcmp(lit + 2, "b\0\0\0\0\0", 6) == 0, "mode b, no name, time 0");
    check(memcmp(out + n - ml, MSG, ml) == 0, "the message, byte for byte");
    size_t hdr = (out[0] & 0x40) ? (out[1] < 192   ? 2
                                    : out[1] < 224 ? 3
                                                   : 6)
                                 : 1 + ((size_t)1 << (out[0] & 3));
    check(hdr < n && out[hdr] == 4 && out[hdr + 1] == 0, "a v4 signature of a binary document");
    check(bd_sigbatch_wrap(&again, &n2, text, MSG, ml), "wrapping is repeatable");
    check(n2 == n && memcmp(again, out, n) == 0, "the same bytes again");
    free(again);
    free(out);
}

static void parse(const char *text, size_t len)
{
    const char *paths[3] = {"/b/0.gpg", "/b/1.gpg", "/b/2.gpg"};
    bd_sigbatch_result r[3];
    bd_sigbatch_parse(r, paths, 3, text, len);
    bool any_good = memmem(text, len, "GOODSIG", 7) != NULL;
    for (int i = 0; i < 3; i++) {
        if (!r[i].settled)
            continue;
        check(any_good, "settled without a GOODSIG");
        check(strlen(r[i].fpr) == 40, "a settled file has a fingerprint");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *buf = malloc(size); /* the rest, NUL-terminated: exact size for ASan */
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    if (data[0] % 3 == 1) {
        parse(buf, size - 1);
    } else if (data[0] % 3 == 2) {
        char *a = size > 1 ? fx_armor(data + 1, size - 1, 64, true) : NULL;
        if (a)
            wrap(a);
        free(a);
    } else {
        wrap(buf);
    }
    free(buf);
    return 0;
}
