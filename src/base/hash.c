/*
 * hash.c — BLAKE3 of a buffer, hex, and the hex-shaped value checks (hash.h).
 */
#include "hash.h"

#include <string.h>

#include <blake3.h>

void bd_blake3_raw(uint8_t out[32], const void *data, size_t len)
{
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, data, len);
    blake3_hasher_finalize(&h, out, BLAKE3_OUT_LEN);
}

void bd_hex(char *out, const uint8_t *bytes, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0x0f];
    }
    out[2 * len] = '\0';
}

void bd_digest_bytes(char out[BD_DIGEST_BUF], const void *data, size_t len)
{
    uint8_t raw[BLAKE3_OUT_LEN];
    bd_blake3_raw(raw, data, len);
    memcpy(out, BD_DIGEST_PREFIX, sizeof(BD_DIGEST_PREFIX) - 1);
    bd_hex(out + sizeof(BD_DIGEST_PREFIX) - 1, raw, BLAKE3_OUT_LEN);
}

/* 1 for the characters of lower-case hex: one load a character (digests are checked
 * many times a case). */
static const unsigned char hex_lower_ok[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1};

bool bd_hex_lower(const char *s, size_t n)
{
    if (!s)
        return false;
    for (size_t i = 0; i < n; i++) /* stops at a NUL: `s` may be shorter than n */
        if (!hex_lower_ok[(unsigned char)s[i]])
            return false;
    return true;
}

bool bd_hex_lower_str(const char *s, size_t n)
{
    return bd_hex_lower(s, n) && s[n] == '\0';
}

int bd_digest_str_valid(const char *s)
{
    size_t plen = sizeof(BD_DIGEST_PREFIX) - 1;
    return s && strncmp(s, BD_DIGEST_PREFIX, plen) == 0 &&
           bd_hex_lower_str(s + plen, BD_DIGEST_HEX_LEN);
}

bool bd_fpr_valid(const char *s)
{
    if (!s)
        return false;
    for (size_t i = 0; i < BD_FPR_HEX_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return s[BD_FPR_HEX_LEN] == '\0';
}
