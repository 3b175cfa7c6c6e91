#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    return -1;
}
