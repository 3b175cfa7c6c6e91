/*
 * recscan.h — a reader of canonical JSON (canon.h), a token at a time, that accepts only
 * bytes bd_canon_json would write. history.c's fast record check walks a record with it:
 * no tree is built and nothing is re-serialised, so a record is checked in one pass over
 * its bytes (docs/history.md, "Verifying").
 *
 * Every reader returns false for anything it cannot prove canonical; that is "not
 * accepted here", never "invalid": the caller then asks the full parser (cJSON +
 * bd_canon_json), which gives the verdict and the reason. What is accepted:
 *   - strings: raw bytes 0x20..0xff except `"` and `\`, valid UTF-8 (text.h), and the
 *     escapes canon.c writes: \" \\ \b \f \n \r \t and \u00xx (lower-case hex) for the
 *     other bytes 0x01..0x1f; never \u0000, \/, other \u escapes or upper-case hex;
 *   - numbers, only in the forms below; anything else (a large exponent, more digits)
 *     is left to the full parser:
 *       integers: "0" or -?[1-9][0-9]{0,14} (exact, below 2^53, as "%lld" prints them);
 *       decimals: -?(0|[1-9][0-9]*)\.[0-9]*[1-9] with 1..17 significant digits and a
 *         value of at least 1e-4 and below 1e15, accepted only when the shortest of
 *         "%.15g", "%.16g", "%.17g" that reads back as the same double (canon.c) prints
 *         exactly these bytes;
 *       small: -?[1-9](\.[0-9]*[1-9])?e-[0-9][0-9], 1..15 significant digits, e-05 to
 *         e-99 ("1e-07", "1.5e-05"), as "%.15g" prints them;
 *     the double is the one strtod() reads.
 */
#ifndef BD_RECSCAN_H
#define BD_RECSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct bd_rscan {
    const char *p;   /* next byte */
    const char *end; /* one past the last */
} bd_rscan;

/* The exact bytes `lit` (n of them) come next: consume them. */
static inline bool bd_rs_lit(bd_rscan *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return false;
    s->p += n;
    return true;
}

/* The byte `c` comes next: consume it. */
static inline bool bd_rs_byte(bd_rscan *s, char c)
{
    if (s->p == s->end || *s->p != c)
        return false;
    s->p++;
    return true;
}

/* The next byte, or -1 at the end. */
static inline int bd_rs_peek(const bd_rscan *s)
{
    return s->p == s->end ? -1 : (unsigned char)*s->p;
}

/* A canonical string: decoded into `dec` (NUL-terminated, at most cap - 1 bytes), its
 * decoded length in *n. False when the string is not canonical or does not fit. */
bool bd_rs_string(bd_rscan *s, char *dec, size_t cap, size_t *n);

/* A number in one of the forms above: its double (the one strtod reads) in *v. */
bool bd_rs_number(bd_rscan *s, double *v);

/* true / false. */
bool bd_rs_bool(bd_rscan *s, bool *v);

#endif
