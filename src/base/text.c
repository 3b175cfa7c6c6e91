/*
 * text.c — the one sanitizer for untrusted text, and the UTF-8, number, JSON and
 * suggestion helpers around it (contracts in text.h).
 */
#include <locale.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

bool bd_text_is_unsafe_cp(unsigned cp)
{
    if (cp < 0x20 || cp == 0x7f)
        return true;
    if (cp >= 0x80 && cp <= 0x9f)
        return true;
    if (cp == 0x061c || cp == 0xfeff)
        return true;
    if (cp >= 0x200b && cp <= 0x200f)
        return true;
    if (cp >= 0x202a && cp <= 0x202e)
        return true;
    if (cp >= 0x2060 && cp <= 0x2069)
        return true;
    return false;
}

size_t bd_text_utf8_decode(const char *s, size_t n, unsigned *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0)
        return 0;
    unsigned c = u[0];
    size_t len;
    unsigned min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        len = 2, c &= 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, c &= 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, c &= 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (u[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

void bd_text_vis_into(bd_strbuf *b, const char *s, size_t n, int flags)
{
    char tmp[16];
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        /* Copy the longest run of plain printable ASCII at once. */
        while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f)
            i++;
        if (i > start)
            bd_strbuf_add(b, s + start, i - start);
        if (i >= n)
            break;
        unsigned cp;
        size_t len = bd_text_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            snprintf(tmp, sizeof(tmp), "\\x%02x", (unsigned char)s[i]);
            bd_strbuf_str(b, tmp);
            i++;
            continue;
        }
        if ((cp == '\n' && (flags & BD_TEXT_KEEP_NL)) ||
            (cp == '\t' && (flags & BD_TEXT_KEEP_TAB))) {
            bd_strbuf_add(b, s + i, 1);
        } else if (bd_text_is_unsafe_cp(cp)) {
            if (cp < 0x80)
                snprintf(tmp, sizeof(tmp), "\\x%02x", cp);
            else
                snprintf(tmp, sizeof(tmp), "<U+%04X>", cp);
            bd_strbuf_str(b, tmp);
        } else {
            bd_strbuf_add(b, s + i, len);
        }
        i += len;
    }
}

char *bd_text_vis(const char *s, int flags)
{
    bd_strbuf b = BD_STRBUF_INIT;
    if (!s)
        s = "";
    bd_text_vis_into(&b, s, strlen(s), flags);
    return bd_strbuf_take(&b);
}

char *bd_text_vis_buf(char *dst, size_t cap, const char *s, int flags)
{
    if (cap == 0)
        return dst;
    char *v = bd_text_vis(s, flags);
    if (!v) {
        /* Out of memory: show nothing rather than the raw bytes. */
        dst[0] = '\0';
        return dst;
    }
    size_t len = strlen(v);
    if (len >= cap) {
        len = cap - 1;
        /* Step back off a UTF-8 continuation byte so no character is split. */
        while (len > 0 && ((unsigned char)v[len] & 0xc0) == 0x80)
            len--;
    }
    memcpy(dst, v, len);
    dst[len] = '\0';
    free(v);
    return dst;
}

bool bd_text_needs_vis(const char *s, int flags)
{
    size_t n = s ? strlen(s) : 0;
    size_t i = 0;
    while (i < n) {
        unsigned cp;
        size_t len = bd_text_utf8_decode(s + i, n - i, &cp);
        if (len == 0)
            return true;
        if (bd_text_is_unsafe_cp(cp) && !(cp == '\n' && (flags & BD_TEXT_KEEP_NL)) &&
            !(cp == '\t' && (flags & BD_TEXT_KEEP_TAB)))
            return true;
        i += len;
    }
    return false;
}

typedef struct cp_range {
    unsigned lo, hi;
} cp_range;

static const cp_range zero_width[] = {
    {0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd}, {0x0610, 0x061a}, {0x064b, 0x065f},
    {0x0e31, 0x0e31}, {0x0e34, 0x0e3a}, {0x1ab0, 0x1aff}, {0x1dc0, 0x1dff}, {0x200b, 0x200f},
    {0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f},
};

static const cp_range wide[] = {
    {0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff},   {0x3400, 0x4dbf},
    {0x4e00, 0x9fff},   {0xa000, 0xa4cf},   {0xac00, 0xd7a3},   {0xf900, 0xfaff},
    {0xfe30, 0xfe4f},   {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x1f300, 0x1f64f},
    {0x1f900, 0x1f9ff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
};

static bool in_ranges(unsigned cp, const cp_range *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i].lo && cp <= r[i].hi)
            return true;
    return false;
}

int bd_text_cp_width(unsigned cp)
{
    if (cp == 0)
        return 0;
    if (in_ranges(cp, zero_width, sizeof(zero_width) / sizeof(zero_width[0])))
        return 0;
    if (in_ranges(cp, wide, sizeof(wide) / sizeof(wide[0])))
        return 2;
    return 1;
}

int bd_text_width(const char *s)
{
    int w = 0;
    size_t n = strlen(s), i = 0;
    while (i < n) {
        unsigned cp;
        size_t len = bd_text_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            w++;
            i++;
            continue;
        }
        w += bd_text_cp_width(cp);
        i += len;
    }
    return w;
}

size_t bd_text_prefix_bytes(const char *s, int cols)
{
    int w = 0;
    size_t n = strlen(s), i = 0;
    while (i < n) {
        unsigned cp;
        size_t len = bd_text_utf8_decode(s + i, n - i, &cp);
        int cw = 1;
        if (len == 0)
            len = 1;
        else
            cw = bd_text_cp_width(cp);
        if (w + cw > cols)
            break;
        w += cw;
        i += len;
    }
    return i;
}

bool bd_text_fit(char *dst, size_t cap, const char *s, int cols, bool ascii)
{
    if (cap == 0)
        return false;
    if (cols < 0)
        cols = 0;
    bool cut = bd_text_width(s) > cols;
    size_t keep = bd_text_prefix_bytes(s, cut && cols > 0 ? cols - 1 : cols);
    const char *mark = cut && cols > 0 ? (ascii ? "~" : "\xe2\x80\xa6") : "";
    size_t mlen = strlen(mark);
    while (keep + mlen + 1 > cap && keep > 0) {
        keep--;
        while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
            keep--;
    }
    memcpy(dst, s, keep);
    if (keep + mlen + 1 <= cap)
        memcpy(dst + keep, mark, mlen);
    else
        mlen = 0;
    dst[keep + mlen] = '\0';
    return cut;
}

/* Replace the locale's decimal point (which may be "," or longer) by '.'. */
static void c_locale_point(char *s, size_t cap)
{
    const char *dp = localeconv()->decimal_point;
    if (!dp || !dp[0] || strcmp(dp, ".") == 0)
        return;
    char *p = strstr(s, dp);
    if (!p)
        return;
    size_t dl = strlen(dp);
    *p = '.';
    memmove(p + 1, p + dl, strlen(p + dl) + 1);
    (void)cap;
}

char *bd_text_fmt_double(char *dst, size_t cap, double v)
{
    if (cap == 0)
        return dst;
    if (isnan(v)) {
        snprintf(dst, cap, "nan");
        return dst;
    }
    if (isinf(v)) {
        snprintf(dst, cap, v < 0 ? "-inf" : "inf");
        return dst;
    }
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        /* strtod reads the same locale snprintf wrote, so the round trip is exact. */
        if (strtod(tmp, NULL) == v)
            break;
    }
    c_locale_point(tmp, sizeof(tmp));
    snprintf(dst, cap, "%s", tmp);
    return dst;
}

char *bd_text_fmt_fixed(char *dst, size_t cap, double v, int prec)
{
    if (cap == 0)
        return dst;
    char tmp[384];
    snprintf(tmp, sizeof(tmp), "%.*f", prec < 0 ? 0 : prec > 17 ? 17 : prec, v);
    c_locale_point(tmp, sizeof(tmp));
    snprintf(dst, cap, "%s", tmp);
    return dst;
}

char *bd_text_json_safe(const char *json)
{
    bd_strbuf b = BD_STRBUF_INIT;
    char tmp[16];
    size_t n = json ? strlen(json) : 0, i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)json[i];
        if (c >= 0x20 && c < 0x7f) {
            size_t start = i;
            while (i < n && (unsigned char)json[i] >= 0x20 && (unsigned char)json[i] < 0x7f)
                i++;
            bd_strbuf_add(&b, json + start, i - start);
            continue;
        }
        unsigned cp;
        size_t len = bd_text_utf8_decode(json + i, n - i, &cp);
        if (len == 0) {
            bd_strbuf_str(&b, "\\ufffd");
            i++;
            continue;
        }
        if (bd_text_is_unsafe_cp(cp)) {
            /* Only reachable inside a string: outside strings cJSON writes ASCII. */
            snprintf(tmp, sizeof(tmp), "\\u%04x", cp);
            bd_strbuf_str(&b, tmp);
        } else {
            bd_strbuf_add(&b, json + i, len);
        }
        i += len;
    }
    return bd_strbuf_take(&b);
}

char *bd_text_did_you_mean(char *buf, size_t cap, const char *word, const char *const *names,
                           size_t n)
{
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    const char *near = bd_text_nearest(word, names, n);
    if (near) {
        char shown[160];
        bd_text_vis_buf(shown, sizeof(shown), near, 0);
        snprintf(buf, cap, " did you mean '%s'?", shown);
    }
    return buf;
}

int bd_text_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 254 || lb > 254)
        return 255;
    unsigned char row[256];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (unsigned char)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned char diag = row[0];
        row[0] = (unsigned char)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned char up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            if ((unsigned)up + 1 < best)
                best = up + 1u;
            if ((unsigned)row[j - 1] + 1 < best)
                best = row[j - 1] + 1u;
            diag = up;
            row[j] = (unsigned char)(best > 255 ? 255 : best);
        }
    }
    return row[lb];
}

const char *bd_text_nearest(const char *word, const char *const *names, size_t n)
{
    if (!word || !word[0])
        return NULL;
    size_t wl = strlen(word);
    int limit = (int)(wl / 3) > 2 ? (int)(wl / 3) : 2;
    const char *best = NULL;
    int best_d = 256;
    const char *prefix = NULL;
    size_t n_prefix = 0;
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        int d = bd_text_distance(word, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
        if (strncmp(names[i], word, wl) == 0) {
            prefix = names[i];
            n_prefix++;
        }
    }
    /* A unique prefix says more than an edit distance ("hist" is history, not list). */
    if (n_prefix == 1)
        return prefix;
    if (best && best_d <= limit)
        return best;
    return NULL;
}

/* ---- strict UTF-8 and the C locale (used by canon.c and score.c) ---------------- */

/* Offset of the first byte that breaks strict UTF-8 (or is NUL), or `len` when valid. */
size_t bd_utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c == 0)
            return i;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c == 0xE0) {
            need = 2;
            lo = 0xA0; /* no overlongs */
        } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
            need = 2;
        } else if (c == 0xED) {
            need = 2;
            hi = 0x9F; /* no surrogates */
        } else if (c == 0xF0) {
            need = 3;
            lo = 0x90; /* no overlongs */
        } else if (c >= 0xF1 && c <= 0xF3) {
            need = 3;
        } else if (c == 0xF4) {
            need = 3;
            hi = 0x8F; /* nothing above U+10FFFF */
        } else {
            return i; /* continuation byte, C0/C1 overlong lead, or F5..FF */
        }
        if (len - i <= need)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += need + 1;
    }
    return len;
}

bool bd_utf8_valid(const char *buf, size_t len)
{
    if (!buf)
        return len == 0;
    return bd_utf8_invalid_at((const unsigned char *)buf, len) == len;
}

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

locale_t bd_text_c_locale(void)
{
    pthread_once(&c_locale_once, c_locale_init);
    return c_locale;
}
