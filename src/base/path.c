/*
 * path.c — joining path parts and the name rule (path.h).
 */
#include "path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool bd_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t len = strlen(name);
    if (len == 0 || len > 128)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
        if (i == 0 ? !(lower || digit) : !(lower || digit || c == '.' || c == '_' || c == '-'))
            return false;
    }
    /* No ".." anywhere: a name is never a path step, not even a confusing-looking one. */
    return strstr(name, "..") == NULL;
}

char *bd_path_join(const char *a, const char *b)
{
    if (!a || !b)
        return NULL;
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/')
        la--;
    bool slash = !(la > 0 && a[la - 1] == '/');
    char *p = malloc(la + (slash ? 1 : 0) + lb + 1);
    if (!p)
        return NULL;
    memcpy(p, a, la);
    size_t o = la;
    if (slash)
        p[o++] = '/';
    memcpy(p + o, b, lb);
    p[o + lb] = '\0';
    return p;
}

size_t bd_user_state_path(char *buf, size_t size, const char *sub)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int n;
    if (state && state[0] == '/')
        n = snprintf(buf, size, "%s/benchdesk/%s", state, sub);
    else if (home && home[0] == '/')
        n = snprintf(buf, size, "%s/.local/state/benchdesk/%s", home, sub);
    else
        return 0;
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}
