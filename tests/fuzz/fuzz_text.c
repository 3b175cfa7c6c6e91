/*
 * fuzz_text.c — libFuzzer target for the untrusted-text sanitizer (src/base/text.h).
 *
 * Whatever the bytes: the visible form holds no unsafe code point and is valid UTF-8
 * (sanitizing it again changes nothing); width/fit never overrun and the fitted text is
 * no wider than asked; the JSON-safe form of a cJSON string holds nothing unsafe and
 * still parses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "text.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';

    bd_strbuf b = BD_STRBUF_INIT;
    bd_text_vis_into(&b, buf, size, 0);
    char *vis = bd_strbuf_take(&b);
    if (vis) {
        check(!bd_text_needs_vis(vis, 0), "visible form still unsafe");
        char *again = bd_text_vis(vis, 0);
        check(again && strcmp(again, vis) == 0, "sanitizing twice changed the text");
        free(again);
        int cols = (int)(size % 40);
        char fit[64];
        bd_text_fit(fit, sizeof(fit), vis, cols, size & 1);
        check(bd_text_width(fit) <= (cols > 0 ? cols : 0), "fitted text too wide");
        free(vis);
    }

    cJSON *s = cJSON_CreateString(buf);
    if (s) {
        char *raw = cJSON_PrintUnformatted(s);
        char *safe = raw ? bd_text_json_safe(raw) : NULL;
        if (safe) {
            check(!bd_text_needs_vis(safe, 0), "JSON form still unsafe");
            cJSON *back = cJSON_Parse(safe);
            check(back != NULL, "JSON form does not parse");
            cJSON_Delete(back);
        }
        free(safe);
        free(raw);
        cJSON_Delete(s);
    }
    free(buf);
    return 0;
}
