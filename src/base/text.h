/*
 * text.h — untrusted text made safe for a terminal, and the small text helpers every
 * front end shares (docs/benchdesk.1): display width and truncation of UTF-8, numbers in
 * the C locale whatever LC_NUMERIC says, JSON escaping that leaves no control or bidi
 * character raw, and "did you mean" suggestions.
 *
 * Anything a rubric, a SUT or a bench file wrote goes through bd_text_vis (or
 * bd_text_vis_into) before it reaches the CLI's stdout/stderr or a curses window: the
 * result holds only printable ASCII, printable UTF-8, and (when asked) newline and tab.
 * The core never prints; these functions only build strings.
 */
#ifndef BD_TEXT_H
#define BD_TEXT_H

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"

/* Flags for bd_text_vis*. */
enum {
    BD_TEXT_KEEP_NL = 1 << 0,  /* keep '\n' (multi-line panes, pagers) */
    BD_TEXT_KEEP_TAB = 1 << 1, /* keep '\t' */
};

/* True when the code point `cp` must never be drawn raw: C0 controls, DEL, C1 controls,
 * and the bidi and invisible format characters U+061C, U+200B-U+200F, U+202A-U+202E,
 * U+2060-U+2069, U+FEFF. */
bool bd_text_is_unsafe_cp(unsigned cp);

/* Append `n` bytes of `s` to `b` made visible: each unsafe control byte as `\xHH` (ESC
 * as `\x1b`, DEL as `\x7f`), each unsafe code point at or above U+0080 as `<U+XXXX>`,
 * each byte that is not part of valid UTF-8 as `\xHH`; backslash itself stays as it is.
 * `flags` may keep newlines and tabs. */
void bd_text_vis_into(bd_strbuf *b, const char *s, size_t n, int flags);

/* The NUL-terminated `s` (NULL reads as "") made visible as above. Returns a new string
 * the caller frees, or NULL when out of memory. */
char *bd_text_vis(const char *s, int flags);

/* Same, written into `dst` of `cap` bytes (always NUL-terminated when cap > 0; cut on a
 * character boundary when it does not fit). Returns `dst`. For fixed-size labels. */
char *bd_text_vis_buf(char *dst, size_t cap, const char *s, int flags);

/* True when `s` would be changed by bd_text_vis with `flags`. */
bool bd_text_needs_vis(const char *s, int flags);

/* Decode one UTF-8 character from `s` (at most `n` bytes). Returns its length (1..4) and
 * sets *cp, or returns 0 when the bytes are not valid UTF-8 (overlong forms, surrogates
 * and code points above U+10FFFF are invalid). */
size_t bd_text_utf8_decode(const char *s, size_t n, unsigned *cp);

/* Columns the code point takes on a terminal: 0 for combining marks and zero-width
 * characters, 2 for East Asian wide and fullwidth ones and most emoji, 1 otherwise. */
int bd_text_cp_width(unsigned cp);

/* Display columns of the (already sanitized, valid UTF-8) string `s`; an invalid byte
 * counts as one column. */
int bd_text_width(const char *s);

/* Length in bytes of the longest prefix of `s` that fits in `cols` columns without
 * splitting a character. */
size_t bd_text_prefix_bytes(const char *s, int cols);

/* Copy `s` into `dst` (cap bytes) cut to at most `cols` columns; when it had to be cut,
 * the last column is "…" (or "~" when `ascii`). Returns true when it was cut. */
bool bd_text_fit(char *dst, size_t cap, const char *s, int cols, bool ascii);

/* Format `v` in the C locale with the fewest significant digits (up to 17) that read back
 * as the same double, e.g. 0.0976 rather than 0.097599999999999978; "nan"/"inf" as such.
 * Returns `dst`. */
char *bd_text_fmt_double(char *dst, size_t cap, double v);

/* Format `v` in the C locale with exactly `prec` decimals ("%.*f" whatever LC_NUMERIC
 * says). Returns `dst`. */
char *bd_text_fmt_fixed(char *dst, size_t cap, double v, int prec);

/* Rewrite compact JSON text (as cJSON prints it) so that nothing unsafe is left raw in
 * its strings: DEL, C1 controls and the bidi/format characters become \u escapes, bytes
 * that are not valid UTF-8 become \ufffd. Returns a new string the caller frees, or NULL
 * when out of memory. */
char *bd_text_json_safe(const char *json);

/* Write into `buf` (cap bytes) the phrase " did you mean 'NAME'?" for the name nearest
 * to `word` (bd_text_nearest; the name made visible), or "" when there is none. Returns
 * `buf`, for error messages about an unknown command, task class or case. */
char *bd_text_did_you_mean(char *buf, size_t cap, const char *word, const char *const *names,
                           size_t n);

/* Levenshtein distance between `a` and `b` (bytes), capped at 255. */
int bd_text_distance(const char *a, const char *b);

/* The name among `names[0..n)` nearest to `word`, or NULL when none is near enough to be
 * a likely misspelling: the one name `word` is a prefix of, else the nearest by edit
 * distance when that is at most 2 (or a third of the word's length when larger). Borrowed pointer
 * into `names`. */
const char *bd_text_nearest(const char *word, const char *const *names, size_t n);

/* Offset of the first byte of `s` (len bytes) that breaks strict UTF-8 — an overlong, a
 * surrogate, anything above U+10FFFF, a truncated sequence — or is NUL; `len` when valid. */
size_t bd_utf8_invalid_at(const unsigned char *s, size_t len);

/* True when `buf` is valid strict UTF-8 with no NUL (NULL with len 0 is valid). */
bool bd_utf8_valid(const char *buf, size_t len);

/* The "C" locale, made once (thread-safe): numbers formatted and parsed with it never
 * depend on the user's locale. (locale_t)0 when it cannot be made. */
locale_t bd_text_c_locale(void);

#endif
