#include "result_cols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "app.h"
#include "text.h"

char *bd_rc_leaf_text(const char *leaf)
{
    if (leaf[0] == '"' && strstr(leaf, "\\n")) {
        cJSON *j = cJSON_Parse(leaf);
        char *t = cJSON_IsString(j) ? strdup(j->valuestring) : NULL;
        cJSON_Delete(j);
        if (t)
            return t;
    }
    return strdup(leaf);
}

/* Take `piece_text` (may be NULL: out of memory) into *ps. */
static void push(bd_rc_pieces *ps, char *piece_text)
{
    if (!piece_text)
        return;
    if (ps->n == ps->cap) {
        size_t nc = ps->cap ? ps->cap * 2 : 8;
        char **g = realloc(ps->p, nc * sizeof(*g));
        if (!g) {
            free(piece_text);
            return;
        }
        ps->p = g;
        ps->cap = nc;
    }
    ps->p[ps->n++] = piece_text;
}

void bd_rc_pieces_free(bd_rc_pieces *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->p[i]);
    free(ps->p);
    memset(ps, 0, sizeof(*ps));
}

/* The next piece of `s` (at most `w` columns, whole words when it can) as a new string;
 * advances *off. Never returns an empty piece for non-empty rest. */
static char *piece(const char *s, size_t len, size_t *off, int w)
{
    size_t take = bd_wrap_next(s + *off, len - *off, w > 1 ? w : 1);
    if (take == 0 && *off < len)
        take = 1;
    char *p = strndup(s + *off, take);
    *off += take;
    return p;
}

void bd_rc_pieces_value(bd_rc_pieces *ps, const char *text, int w)
{
    const char *line = text;
    for (;;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char *raw = strndup(line, n);
        char *vis = raw ? bd_text_vis(raw, 0) : NULL;
        free(raw);
        if (vis) {
            size_t len = strlen(vis), off = 0;
            if (len == 0)
                push(ps, strdup(""));
            while (off < len)
                push(ps, piece(vis, len, &off, w));
            free(vis);
        }
        if (!nl)
            break;
        line = nl + 1;
    }
}

void bd_rc_pieces_name(bd_rc_pieces *ps, const char *mark, const char *name, int w)
{
    size_t len = strlen(name), cw = w > 4 ? (size_t)w - 2 : 2, off = 0;
    do {
        size_t take = len - off < cw ? len - off : cw;
        char buf[192];
        snprintf(buf, sizeof(buf), "%s %.*s", off ? " " : mark, (int)take, name + off);
        push(ps, strdup(buf));
        off += take;
    } while (off < len);
}
