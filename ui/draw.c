/*
 * draw.c — text, bars and rules; UTF-8 glyphs with an ASCII fallback.
 *
 * Everything drawn passes through bd_draw_textn, which shows untrusted text through the
 * core sanitizer (text.h: controls, escape sequences, bidi and format characters and
 * invalid bytes made visible) and clips by display width: text from a case, a rubric's
 * stderr or a cassette can never move the cursor, change the terminal or reorder a line.
 */
#include <langinfo.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "app.h"
#include "text.h"

static const char *const spin_utf8[] = {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"};
static const char *const spin_ascii[] = {"|", "/", "-", "\\"};

static const bd_glyphs glyphs_utf8 = {"✓", "✗", "·", "─", "│", "█",       "░",
                                      "…", "▸", "▲", "▼", "⎇", spin_utf8, 10};
static const bd_glyphs glyphs_ascii = {"+", "x", ".", "-", "|", "#",        ".",
                                       "~", ">", "^", "v", "@", spin_ascii, 4};

const bd_glyphs *bd_gl = &glyphs_ascii;

const bd_glyphs *bd_glyphs_pick(void)
{
    const char *cs = nl_langinfo(CODESET);
    bd_gl =
        cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0) ? &glyphs_utf8 : &glyphs_ascii;
    return bd_gl;
}

/* Decode one character of s[0..len): its wide char (or '?' for anything the locale
 * cannot show), its display width, and the bytes it took. Callers pass text that went
 * through bd_text_vis (bd_draw_textn does so itself), so no control, bidi or format
 * character is left; the checks here are the second line of defence. */
static size_t decode(const char *s, size_t len, wchar_t *wc, int *width)
{
    unsigned cp = 0;
    size_t n = bd_text_utf8_decode(s, len, &cp);
    if (n == 0) {
        *wc = L'?';
        *width = 1;
        return 1;
    }
    if (cp == '\t') {
        *wc = L' ';
        *width = 1;
        return n;
    }
    if (bd_text_is_unsafe_cp(cp) || (cp >= 0x80 && bd_gl == &glyphs_ascii)) {
        *wc = L'?';
        *width = 1;
        return n;
    }
    *wc = (wchar_t)cp;
    *width = bd_text_cp_width(cp);
    return n;
}

size_t bd_wrap_next(const char *s, size_t len, int width)
{
    size_t i = 0, last_space = 0;
    int used = 0;
    while (i < len) {
        wchar_t wc;
        int cw;
        size_t n = decode(s + i, len - i, &wc, &cw);
        if (used + cw > width && i > 0)
            return last_space ? last_space : i;
        if (s[i] == ' ')
            last_space = i + 1;
        used += cw;
        i += n;
    }
    return len;
}

int bd_draw_textn(WINDOW *w, int y, int x, int width, const char *s, size_t len, attr_t attr,
                  bool pad)
{
    if (width <= 0)
        return 0;
    /* Untrusted text is made visible here, once, for every view (docs/benchdesk.1). */
    bd_strbuf vb = BD_STRBUF_INIT;
    bd_text_vis_into(&vb, s ? s : "", s ? len : 0, BD_TEXT_KEEP_TAB);
    char *vis = bd_strbuf_take(&vb);
    s = vis ? vis : "";
    len = strlen(s);
    wchar_t buf[512];
    size_t nb = 0;
    int used = 0;
    size_t i = 0;
    /* Reserve one column for the ellipsis when the text does not fit. */
    int total = 0;
    for (size_t k = 0; k < len && total <= width;) {
        wchar_t wc;
        int cw;
        k += decode(s + k, len - k, &wc, &cw);
        total += cw;
    }
    bool clip = total > width;
    int limit = clip ? width - 1 : width;
    while (i < len && nb < sizeof(buf) / sizeof(buf[0]) - 2) {
        wchar_t wc;
        int cw;
        size_t n = decode(s + i, len - i, &wc, &cw);
        if (used + cw > limit)
            break;
        if (cw == 0 && nb == 0) { /* a combining mark cannot start the text */
            i += n;
            continue;
        }
        buf[nb++] = wc;
        used += cw;
        i += n;
    }
    buf[nb] = L'\0';
    wattrset(w, attr);
    mvwaddnwstr(w, y, x, buf, (int)nb);
    if (clip && used < width) {
        waddstr(w, bd_gl->ellipsis);
        used++;
    }
    if (pad)
        for (; used < width; used++)
            waddch(w, ' ');
    wattrset(w, A_NORMAL);
    free(vis);
    return used;
}

int bd_draw_text(WINDOW *w, int y, int x, int width, const char *s, attr_t attr, bool pad)
{
    return bd_draw_textn(w, y, x, width, s ? s : "", s ? strlen(s) : 0, attr, pad);
}

int bd_draw_right(WINDOW *w, int y, int x_end, const char *s, attr_t attr)
{
    int tw = bd_text_width(s);
    int x = x_end - tw;
    if (x < 0)
        x = 0;
    bd_draw_text(w, y, x, x_end - x, s, attr, false);
    return x;
}

void bd_draw_bar(WINDOW *w, int y, int x, int width, double frac, bd_role fill, bd_role empty)
{
    if (width <= 0)
        return;
    if (!(frac >= 0))
        frac = 0;
    if (frac > 1)
        frac = 1;
    int full = (int)(frac * width + 0.5);
    wmove(w, y, x);
    wattrset(w, bd_role_attr(fill));
    for (int i = 0; i < full; i++)
        waddstr(w, bd_gl->bar_full);
    wattrset(w, bd_role_attr(empty));
    for (int i = full; i < width; i++)
        waddstr(w, bd_gl->bar_empty);
    wattrset(w, A_NORMAL);
}

void bd_draw_rule(WINDOW *w, int y, const char *title, attr_t attr)
{
    int cols = getmaxx(w);
    wmove(w, y, 0);
    wattrset(w, attr);
    int x = 0;
    if (title && title[0]) {
        waddstr(w, bd_gl->hline);
        waddstr(w, bd_gl->hline);
        x = 2;
        x += bd_draw_text(w, y, x, cols - x, " ", attr, false);
        x += bd_draw_text(w, y, x, cols - x - 1, title, attr | A_BOLD, false);
        x += bd_draw_text(w, y, x, cols - x, " ", attr, false);
        wattrset(w, attr);
    }
    for (; x < cols; x++)
        waddstr(w, bd_gl->hline);
    wattrset(w, A_NORMAL);
}

int bd_wrap_count(const char *s, int width)
{
    char *vis = bd_text_vis(s, 0); /* widths as drawn: controls are made visible */
    const char *t = vis ? vis : s;
    size_t len = strlen(t), off = 0;
    int n = 0;
    while (off < len) {
        off += bd_wrap_next(t + off, len - off, width > 1 ? width : 1);
        while (off < len && t[off] == ' ')
            off++;
        n++;
    }
    free(vis);
    return n ? n : 1;
}

int bd_draw_wrapped(WINDOW *w, int y, int x, int width, int max_lines, const char *s, attr_t attr)
{
    char *vis = bd_text_vis(s, 0);
    const char *t = vis ? vis : s;
    size_t len = strlen(t), off = 0;
    int n = 0;
    while (off < len && n < max_lines) {
        size_t take = bd_wrap_next(t + off, len - off, width > 1 ? width : 1);
        bd_draw_textn(w, y + n, x, width, t + off, take, attr, false);
        off += take;
        while (off < len && t[off] == ' ')
            off++;
        n++;
    }
    free(vis);
    return n;
}
