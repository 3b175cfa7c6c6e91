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

static const char *const action_kinds[] = {
#define BD_X(name, kind) kind,
    BD_ERROR_ACTIONS(BD_X)
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

const char *bd_action_kind(bd_err_action action)
{
    if ((int)action < 0 || action >= BD_ACT__COUNT)
        return "none";
    return action_kinds[action];
}

static void set_location(bd_err *err, const char *file, int line, int col, size_t *off)
{
    *off = 0;
    err->action = BD_ACT_NONE;
    err->action_arg[0] = '\0';
    err->action_at = 0;
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

int bd_err_advise(bd_err *err, bd_err_action action, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->action = action;
    err->action_at = strlen(err->msg);
    err->action_arg[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->action_arg, sizeof(err->action_arg), fmt, ap);
        va_end(ap);
        one_line(err->action_arg, sizeof(err->action_arg));
    }
    return -1;
}

int bd_err_append(bd_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    size_t len = strlen(err->msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + len, sizeof(err->msg) - len, fmt, ap);
    va_end(ap);
    one_line(err->msg, sizeof(err->msg));
    return -1;
}

int bd_err_wrap(bd_err *err, bd_code code, const char *file, const char *before, const char *after)
{
    if (!err)
        return -1;
    bd_err old = *err;
    size_t old_at = old.action_at < strlen(old.msg) ? old.action_at : strlen(old.msg);
    bd_err_set(err, code, file, 0, 0, "%s", before);
    size_t off = strlen(err->msg);
    bd_err_append(err, "%s%s", old.msg, after);
    if (old.action != BD_ACT_NONE && off + old_at <= strlen(err->msg)) {
        err->action = old.action;
        err->action_at = off + old_at;
        memcpy(err->action_arg, old.action_arg, sizeof(err->action_arg));
    }
    return -1;
}

/* Append `s` (`n` bytes) to `out` at *o, cut to fit `cap`. */
static void put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
    if (*o + 1 >= cap)
        return;
    if (n > cap - 1 - *o)
        n = cap - 1 - *o;
    memcpy(out + *o, s, n);
    *o += n;
    out[*o] = '\0';
}

const char *bd_err_render(const bd_err *err, const char *const words[BD_ACT__COUNT], char *out,
                          size_t cap)
{
    if (!out || cap == 0)
        return out;
    out[0] = '\0';
    if (!err)
        return out;
    size_t len = strlen(err->msg), at = err->action_at < len ? err->action_at : len, o = 0;
    const char *w = NULL;
    if (err->action > BD_ACT_NONE && err->action < BD_ACT__COUNT && words)
        w = words[err->action];
    if (!w)
        at = len;
    put(out, cap, &o, err->msg, at);
    while (w && *w) {
        const char *pc = strstr(w, "%s");
        size_t n = pc ? (size_t)(pc - w) : strlen(w);
        put(out, cap, &o, w, n);
        if (!pc)
            break;
        put(out, cap, &o, err->action_arg, strlen(err->action_arg));
        w = pc + 2;
    }
    put(out, cap, &o, err->msg + at, len - at);
    return out;
}
