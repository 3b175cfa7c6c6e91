#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

static const char *const code_strings[] = {
#define BD_X(name, str, exitcode) str,
    BD_ERROR_CODES(BD_X)
#undef BD_X
};

static const int code_exits[] = {
#define BD_X(name, str, exitcode) exitcode,
    BD_ERROR_CODES(BD_X)
#undef BD_X
};

const char *bd_code_str(bd_code code)
{
    if ((int)code < 0 || code >= BD_E__COUNT)
        return "internal.bug";
    return code_strings[code];
}

int bd_code_exit(bd_code code)
{
    if ((int)code < 0 || code >= BD_E__COUNT)
        return 4;
    return code_exits[code];
}

void bd_err_clear(bd_err *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof(*err));
    err->code = BD_OK;
}

static void set_location(bd_err *err, const char *file, int line, int col, size_t *off)
{
    *off = 0;
    err->file[0] = '\0';
    err->line = line;
    err->col = col;
    if (!file)
        return;
    snprintf(err->file, sizeof(err->file), "%s", file);
    int n;
    if (line > 0 && col > 0)
        n = snprintf(err->msg, sizeof(err->msg), "%s:%d:%d: ", file, line, col);
    else if (line > 0)
        n = snprintf(err->msg, sizeof(err->msg), "%s:%d: ", file, line);
    else
        n = snprintf(err->msg, sizeof(err->msg), "%s: ", file);
    if (n > 0)
        *off = (size_t)n < sizeof(err->msg) ? (size_t)n : sizeof(err->msg) - 1;
}

/* Make `msg` one printable line, in place, the way bd_text_vis shows untrusted text (flags
 * 0): each unsafe control byte as `\xHH` (a newline as `\x0a`), each unsafe code point at
 * or above U+0080 as `<U+XXXX>`, each byte that is not valid UTF-8 as `\xHH`. A name or a
 * value quoted from a file, a manifest or a SUT can then never break the one-line rule,
 * whichever front end shows the message. When the escapes make it longer than the buffer,
 * it is cut before the first character or escape that does not fit. No allocation: this
 * runs on out-of-memory paths too. */
static void one_line(char *msg, size_t cap)
{
    size_t n = strlen(msg);
    if (!bd_text_needs_vis(msg, 0))
        return;
    char out[BD_ERR_MSG_MAX];
    size_t o = 0, i = 0;
    if (cap > sizeof(out))
        cap = sizeof(out);
    while (i < n) {
        unsigned cp = 0;
        size_t len = bd_text_utf8_decode(msg + i, n - i, &cp);
        char esc[16];
        const char *piece = msg + i;
        size_t plen = len;
        if (len == 0) {
            snprintf(esc, sizeof(esc), "\\x%02x", (unsigned char)msg[i]);
            len = 1;
            piece = esc;
            plen = strlen(esc);
        } else if (bd_text_is_unsafe_cp(cp)) {
            snprintf(esc, sizeof(esc), cp < 0x80 ? "\\x%02x" : "<U+%04X>", cp);
            piece = esc;
            plen = strlen(esc);
        }
        if (o + plen >= cap)
            break;
        memcpy(out + o, piece, plen);
        o += plen;
        i += len;
    }
    out[o] = '\0';
    memcpy(msg, out, o + 1);
}

int bd_err_set(bd_err *err, bd_code code, const char *file, int line, int col, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = code;
    size_t off;
    set_location(err, file, line, col, &off);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + off, sizeof(err->msg) - off, fmt, ap);
    va_end(ap);
    one_line(err->msg, sizeof(err->msg));
    return -1;
}

int bd_err_errno(bd_err *err, bd_code code, int errnum, const char *file, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = code;
    size_t off;
    set_location(err, file, 0, 0, &off);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + off, sizeof(err->msg) - off, fmt, ap);
    va_end(ap);
    size_t len = strlen(err->msg);
    snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(errnum));
    one_line(err->msg, sizeof(err->msg));
    return -1;
}
