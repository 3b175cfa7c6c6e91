/*
 * ydoc.c — a strict, bounded YAML reader over libyaml's event parser (docs/formats.md).
 *
 * The bytes are checked before libyaml sees them (size, BOMs, NUL, UTF-8), then events
 * are folded into a tree allocated from one arena, so freeing a document is one walk over
 * a chunk list. Every refusal happens at the first event that shows it: an alias bomb
 * dies at its first anchor, before anything is expanded or even stored.
 */
#include "ydoc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "yfast.h"

/* ---- arena ---------------------------------------------------------------------------- */

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
} arena_chunk;

typedef struct arena {
    arena_chunk *head;
    size_t first_cap; /* size of the first chunk (0: ARENA_CHUNK_MIN) */
} arena;

#define ARENA_CHUNK_MIN (64 * 1024)

static void *arena_alloc(arena *a, size_t size)
{
    size = (size + 15u) & ~(size_t)15u;
    if (size == 0)
        size = 16;
    if (!a->head || a->head->cap - a->head->used < size) {
        /* The first chunk is sized from the input: a 500-byte case.yaml must not hold
         * 64 KiB while it stays loaded (a verify report keeps one per case). */
        size_t min = a->head || !a->first_cap ? ARENA_CHUNK_MIN : a->first_cap;
        size_t cap = size > min ? size : min;
        arena_chunk *c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->cap = cap;
        c->used = 0;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += size;
    return p;
}

static char *arena_strndup(arena *a, const char *s, size_t len)
{
    char *p = arena_alloc(a, len + 1);
    if (!p)
        return NULL;
    if (len)
        memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

static void arena_free(arena *a)
{
    if (!a)
        return;
    arena_chunk *c = a->head;
    while (c) {
        arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(a);
}

/* ---- byte checks before libyaml ------------------------------------------------------- */

/* Line and column (1-based, columns in characters as libyaml counts them) of byte
 * offset `off`. */
static void locate(const unsigned char *buf, size_t len, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    if (off > len)
        off = len;
    for (size_t i = 0; i < off; i++) {
        if (buf[i] == '\n') {
            l++;
            c = 1;
        } else if ((buf[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* Length of the valid UTF-8 sequence at s[0..avail), or 0 when it is not one (overlong,
 * surrogate, above U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned char b = s[0];
    if (b < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        if (b == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (b == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

static int check_bytes(const unsigned char *buf, size_t len, const char *name, bd_err *err)
{
    if ((len >= 4 && buf[0] == 0x00 && buf[1] == 0x00 && buf[2] == 0xFE && buf[3] == 0xFF) ||
        (len >= 4 && buf[0] == 0xFF && buf[1] == 0xFE && buf[2] == 0x00 && buf[3] == 0x00))
        return bd_err_set(err, BD_E_YAML_ENCODING, name, 1, 1,
                          "the file starts with a UTF-32 byte-order mark; save it as UTF-8");
    if (len >= 2 && ((buf[0] == 0xFE && buf[1] == 0xFF) || (buf[0] == 0xFF && buf[1] == 0xFE)))
        return bd_err_set(err, BD_E_YAML_ENCODING, name, 1, 1,
                          "the file starts with a UTF-16 byte-order mark; save it as UTF-8");
    size_t i = 0;
    while (i < len) {
        int line, col;
        if (buf[i] == 0) {
            locate(buf, len, i, &line, &col);
            return bd_err_set(err, BD_E_YAML_ENCODING, name, line, col,
                              "NUL byte in the file; YAML files must be UTF-8 text without NUL");
        }
        size_t n = utf8_seq(buf + i, len - i);
        if (n == 0) {
            locate(buf, len, i, &line, &col);
            return bd_err_set(err, BD_E_YAML_ENCODING, name, line, col,
                              "invalid UTF-8 byte 0x%02X; save the file as UTF-8", buf[i]);
        }
        i += n;
    }
    return 0;
}

void bd_ydoc_clip(char *out, size_t cap, const char *s)
{
    if (!out || cap == 0)
        return;
    out[0] = '\0';
    if (!s || cap < 5)
        return;
    size_t slen = strlen(s);
    size_t room = cap - 1;
    size_t take = slen;
    bool cut = false;
    if (slen > room) {
        take = room - 3;
        /* Cut at a character boundary so the message stays valid UTF-8. */
        while (take > 0 && ((unsigned char)s[take] & 0xC0) == 0x80)
            take--;
        cut = true;
    }
    for (size_t i = 0; i < take; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c == 0x7F) ? '?' : (char)c;
    }
    if (cut) {
        memcpy(out + take, "...", 3);
        take += 3;
    }
    out[take] = '\0';
}

/* ---- tree building -------------------------------------------------------------------- */

/* Entries of a collection held in its frame before any is allocated: the maps of bench
 * files have a few keys each, and a case is parsed twice per check. */
#define FRAME_INLINE 16

/* One open collection. Maps keep a hash set of their keys (indices into pairs, +1, 0 is
 * empty) so duplicate detection stays linear even for a 1 MiB flat mapping. The first
 * FRAME_INLINE entries and their set live in the frame itself. */
typedef struct frame {
    bd_ynode *node;
    bd_ypair *pairs;
    bd_ynode **items;
    size_t n, cap;
    bd_ynode *pending_key;
    uint32_t *set;
    size_t set_cap;
    union {
        bd_ypair pairs[FRAME_INLINE];
        bd_ynode *items[FRAME_INLINE];
    } in;
    uint32_t set_in[2 * FRAME_INLINE];
} frame;

typedef struct builder {
    arena *ar;
    const char *name;
    const unsigned char *buf;
    size_t len;
    frame stack[BD_YAML_MAX_DEPTH];
    int depth;
    bd_ynode *root;
    bool have_root;
    bd_err *err;
} builder;

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* An empty frame for `node` (its inline storage is not cleared: used as it fills). */
static void frame_reset(frame *f, bd_ynode *node)
{
    f->node = node;
    f->pairs = NULL;
    f->items = NULL;
    f->n = f->cap = 0;
    f->pending_key = NULL;
    f->set = NULL;
    f->set_cap = 0;
}

static void frame_release(frame *f)
{
    if (f->pairs != f->in.pairs)
        free(f->pairs);
    if (f->items != f->in.items)
        free(f->items);
    if (f->set != f->set_in)
        free(f->set);
    frame_reset(f, NULL);
}

static int nomem(builder *b)
{
    return bd_err_set(b->err, BD_E_NOMEM, b->name, 0, 0,
                      "out of memory while reading YAML; free memory and retry");
}

/* Insert key index `idx` of frame `f` into its set; returns the index of an equal key
 * already present (>= 0), -1 when inserted, -2 on out-of-memory. */
static long set_insert(frame *f, size_t idx, const bd_ynode *key)
{
    if (!f->set_cap) {
        memset(f->set_in, 0, sizeof(f->set_in));
        f->set = f->set_in;
        f->set_cap = 2 * FRAME_INLINE;
    }
    if ((f->n + 1) * 2 > f->set_cap) {
        size_t ncap = f->set_cap * 2;
        uint32_t *ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return -2;
        for (size_t i = 0; i < f->set_cap; i++) {
            if (!f->set[i])
                continue;
            const bd_ynode *k = f->pairs[f->set[i] - 1].key;
            size_t h = (size_t)hash_bytes(k->str, k->len) & (ncap - 1);
            while (ns[h])
                h = (h + 1) & (ncap - 1);
            ns[h] = f->set[i];
        }
        if (f->set != f->set_in)
            free(f->set);
        f->set = ns;
        f->set_cap = ncap;
    }
    size_t h = (size_t)hash_bytes(key->str, key->len) & (f->set_cap - 1);
    while (f->set[h]) {
        const bd_ynode *k = f->pairs[f->set[h] - 1].key;
        if (k->len == key->len && memcmp(k->str, key->str, key->len) == 0)
            return (long)(f->set[h] - 1);
        h = (h + 1) & (f->set_cap - 1);
    }
    f->set[h] = (uint32_t)(idx + 1);
    return -1;
}

static int frame_grow(builder *b, frame *f)
{
    if (f->n < f->cap)
        return 0;
    bool map = f->node->kind == BD_Y_MAP;
    if (!f->cap) {
        if (map)
            f->pairs = f->in.pairs;
        else
            f->items = f->in.items;
        f->cap = FRAME_INLINE;
        return 0;
    }
    size_t ncap = f->cap * 2;
    if (map) {
        bd_ypair *np = f->pairs == f->in.pairs ? malloc(ncap * sizeof(*np))
                                               : realloc(f->pairs, ncap * sizeof(*np));
        if (!np)
            return nomem(b);
        if (f->pairs == f->in.pairs)
            memcpy(np, f->in.pairs, f->n * sizeof(*np));
        f->pairs = np;
    } else {
        bd_ynode **ni = f->items == f->in.items ? malloc(ncap * sizeof(*ni))
                                                : realloc(f->items, ncap * sizeof(*ni));
        if (!ni)
            return nomem(b);
        if (f->items == f->in.items)
            memcpy(ni, f->in.items, f->n * sizeof(*ni));
        f->items = ni;
    }
    f->cap = ncap;
    return 0;
}

/* Hang a finished node on the open collection (or make it the root). */
static int attach(builder *b, bd_ynode *node)
{
    if (b->depth == 0) {
        b->root = node;
        b->have_root = true;
        return 0;
    }
    frame *f = &b->stack[b->depth - 1];
    if (f->node->kind == BD_Y_SEQ) {
        if (frame_grow(b, f) < 0)
            return -1;
        f->items[f->n++] = node;
        return 0;
    }
    if (!f->pending_key) {
        /* Non-scalar keys are refused when their collection starts (see open_frame). */
        if (frame_grow(b, f) < 0)
            return -1;
        /* The key occupies slot n until its value arrives, so the set can see it. */
        f->pairs[f->n].key = node;
        f->pairs[f->n].value = NULL;
        long dup = set_insert(f, f->n, node);
        if (dup == -2)
            return nomem(b);
        if (dup >= 0) {
            const bd_ynode *first = f->pairs[dup].key;
            char shown[72];
            bd_ydoc_clip(shown, sizeof(shown), node->str);
            return bd_err_set(b->err, BD_E_YAML_DUPLICATE_KEY, b->name, node->line, node->col,
                              "duplicate key '%s' (first at line %d); keep only one", shown,
                              first->line);
        }
        f->pending_key = node;
        return 0;
    }
    f->pairs[f->n].value = node;
    f->n++;
    f->pending_key = NULL;
    return 0;
}

static bd_ynode *new_node(builder *b, bd_ykind kind, const yaml_mark_t *mark)
{
    bd_ynode *n = arena_alloc(b->ar, sizeof(*n));
    if (!n)
        return NULL;
    memset(n, 0, sizeof(*n));
    n->kind = kind;
    n->line = (int)mark->line + 1;
    n->col = (int)mark->column + 1;
    return n;
}

static bool in_key_position(const builder *b)
{
    if (b->depth == 0)
        return false;
    const frame *f = &b->stack[b->depth - 1];
    return f->node->kind == BD_Y_MAP && !f->pending_key;
}

static int refuse_anchor_tag(builder *b, const yaml_mark_t *m, const yaml_char_t *anchor,
                             const yaml_char_t *tag)
{
    char shown[72];
    if (anchor) {
        bd_ydoc_clip(shown, sizeof(shown), (const char *)anchor);
        return bd_err_set(b->err, BD_E_YAML_ALIAS, b->name, (int)m->line + 1, (int)m->column + 1,
                          "anchor '&%s' refused (anchors and aliases are not allowed); "
                          "write the value out in full",
                          shown);
    }
    if (tag) {
        bd_ydoc_clip(shown, sizeof(shown), (const char *)tag);
        return bd_err_set(b->err, BD_E_YAML_SYNTAX, b->name, (int)m->line + 1, (int)m->column + 1,
                          "explicit tag '%s' refused; remove the tag and write a plain value",
                          shown);
    }
    return 0;
}

static int open_frame(builder *b, bd_ykind kind, const yaml_mark_t *m)
{
    if (in_key_position(b))
        return bd_err_set(b->err, BD_E_YAML_SYNTAX, b->name, (int)m->line + 1, (int)m->column + 1,
                          "a mapping key must be a plain or quoted string, not a %s; "
                          "use a scalar key",
                          kind == BD_Y_MAP ? "mapping" : "sequence");
    if (b->depth >= BD_YAML_MAX_DEPTH)
        return bd_err_set(b->err, BD_E_YAML_TOO_DEEP, b->name, (int)m->line + 1, (int)m->column + 1,
                          "nesting deeper than %d levels; flatten the data", BD_YAML_MAX_DEPTH);
    bd_ynode *n = new_node(b, kind, m);
    if (!n)
        return nomem(b);
    frame_reset(&b->stack[b->depth++], n);
    return 0;
}

static int close_frame(builder *b)
{
    frame *f = &b->stack[b->depth - 1];
    bd_ynode *n = f->node;
    n->n = f->n;
    if (f->n) {
        if (n->kind == BD_Y_MAP) {
            n->pairs = arena_alloc(b->ar, f->n * sizeof(*n->pairs));
            if (!n->pairs)
                return nomem(b);
            memcpy(n->pairs, f->pairs, f->n * sizeof(*n->pairs));
        } else {
            n->items = arena_alloc(b->ar, f->n * sizeof(*n->items));
            if (!n->items)
                return nomem(b);
            memcpy(n->items, f->items, f->n * sizeof(*n->items));
        }
    }
    frame_release(f);
    b->depth--;
    return attach(b, n);
}

static int scalar(builder *b, const yaml_event_t *ev)
{
    const yaml_mark_t *m = &ev->start_mark;
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (len && memchr(v, 0, len))
        return bd_err_set(b->err, BD_E_YAML_ENCODING, b->name, (int)m->line + 1, (int)m->column + 1,
                          "a string holds a NUL character (\\0 escape); remove it");
    bd_ynode *n = new_node(b, BD_Y_SCALAR, m);
    if (!n)
        return nomem(b);
    n->str = arena_strndup(b->ar, v, len);
    if (!n->str)
        return nomem(b);
    n->len = len;
    n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    return attach(b, n);
}

static int parser_error(builder *b, const yaml_parser_t *p)
{
    int line, col;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        return nomem(b);
    case YAML_READER_ERROR:
        locate(b->buf, b->len, p->problem_offset, &line, &col);
        return bd_err_set(b->err, BD_E_YAML_SYNTAX, b->name, line, col,
                          "%s; remove the character or quote it as an escape", problem);
    default:
        line = (int)p->problem_mark.line + 1;
        col = (int)p->problem_mark.column + 1;
        if (p->context)
            return bd_err_set(b->err, BD_E_YAML_SYNTAX, b->name, line, col,
                              "%s %s (line %d); fix the YAML syntax", problem, p->context,
                              (int)p->context_mark.line + 1);
        return bd_err_set(b->err, BD_E_YAML_SYNTAX, b->name, line, col, "%s; fix the YAML syntax",
                          problem);
    }
}

static int handle_event(builder *b, const yaml_event_t *ev, int *docs, bool *done)
{
    const yaml_mark_t *m = &ev->start_mark;
    switch (ev->type) {
    case YAML_STREAM_START_EVENT:
    case YAML_DOCUMENT_END_EVENT:
    case YAML_NO_EVENT:
        return 0;
    case YAML_STREAM_END_EVENT:
        *done = true;
        return 0;
    case YAML_DOCUMENT_START_EVENT:
        if (++*docs > 1)
            return bd_err_set(b->err, BD_E_YAML_SYNTAX, b->name, (int)m->line + 1,
                              (int)m->column + 1,
                              "a second YAML document ('---'); one file holds one document");
        if (ev->data.document_start.tag_directives.start !=
            ev->data.document_start.tag_directives.end)
            return bd_err_set(b->err, BD_E_YAML_SYNTAX, b->name, (int)m->line + 1,
                              (int)m->column + 1,
                              "%%TAG directive refused (explicit tags are not allowed); "
                              "remove it");
        return 0;
    case YAML_ALIAS_EVENT: {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), (const char *)ev->data.alias.anchor);
        return bd_err_set(b->err, BD_E_YAML_ALIAS, b->name, (int)m->line + 1, (int)m->column + 1,
                          "alias '*%s' refused (anchors and aliases are not allowed); "
                          "write the value out in full",
                          shown);
    }
    case YAML_SCALAR_EVENT:
        if (refuse_anchor_tag(b, m, ev->data.scalar.anchor, ev->data.scalar.tag) < 0)
            return -1;
        return scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT:
        if (refuse_anchor_tag(b, m, ev->data.sequence_start.anchor, ev->data.sequence_start.tag) <
            0)
            return -1;
        return open_frame(b, BD_Y_SEQ, m);
    case YAML_MAPPING_START_EVENT:
        if (refuse_anchor_tag(b, m, ev->data.mapping_start.anchor, ev->data.mapping_start.tag) < 0)
            return -1;
        return open_frame(b, BD_Y_MAP, m);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (b->depth == 0)
            return bd_err_set(b->err, BD_E_INTERNAL, b->name, (int)m->line + 1, (int)m->column + 1,
                              "unbalanced YAML events; report this bug");
        return close_frame(b);
    }
    return 0;
}

/* The message for a file over its kind's limit: the size, the limit and where it is
 * documented, so the curator knows which number was hit and why it exists. */
static int too_large(bd_err *err, const char *name, unsigned long long size, const char *grew,
                     size_t max_bytes, const char *what)
{
    return bd_err_set(err, BD_E_YAML_TOO_LARGE, name, 0, 0,
                      "%llu bytes%s is over the %zu-byte (%zu KiB) limit for %s "
                      "(docs/formats.md, \"Large benches\"); split or shrink it",
                      size, grew, max_bytes, max_bytes / 1024, what ? what : "YAML files");
}

int bd_ydoc_parse(bd_ydoc **out, const char *buf, size_t len, const char *name, bd_err *err)
{
    return bd_ydoc_parse_max(out, buf, len, name, BD_YAML_MAX_BYTES, NULL, err);
}

int bd_ydoc_parse_max(bd_ydoc **out, const char *buf, size_t len, const char *name,
                      size_t max_bytes, const char *what, bd_err *err)
{
    return bd_ydoc_parse_mode(out, buf, len, name, max_bytes, what, BD_YDOC_ANY, err);
}

typedef struct fast_ctx {
    builder *b;
    int docs;
    bool done;
} fast_ctx;

static int fast_event(void *ctx, const yaml_event_t *ev)
{
    fast_ctx *c = ctx;
    return handle_event(c->b, ev, &c->docs, &c->done) < 0 ? -1 : 0;
}

/* Build the tree of `len` checked bytes, with yfast (`fast`) or libyaml. Returns 0 with
 * *out set; -1 with `err` (libyaml); 1 when yfast declined or its events were refused:
 * only libyaml's reading of the same bytes may refuse them, so its error is the one a
 * user sees. */
static int build(bd_ydoc **out, const char *buf, size_t len, const char *name, bool fast,
                 bd_err *err)
{
    int rc = fast ? 1 : -1;
    bd_ydoc *doc = NULL;
    arena *ar = NULL;
    builder b;
    yaml_parser_t parser;
    bool parser_ready = false;
    bd_err scratch = BD_ERR_INIT;
    bd_err *e = fast ? &scratch : err; /* yfast's failures are never shown */

    /* The frames are set up as they open (frame_reset): not cleared here. */
    b.ar = NULL;
    b.name = NULL;
    b.buf = NULL;
    b.len = 0;
    b.depth = 0;
    b.root = NULL;
    b.have_root = false;
    b.err = e;
    ar = calloc(1, sizeof(*ar));
    if (!ar) {
        bd_err_set(e, BD_E_NOMEM, name, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    /* Nodes and strings take a few times the text: start there, grow by 64 KiB chunks. */
    ar->first_cap = len < ARENA_CHUNK_MIN / 8 ? len * 6 + 1024 : ARENA_CHUNK_MIN;
    doc = arena_alloc(ar, sizeof(*doc));
    if (!doc || !(doc->name = arena_strndup(ar, name, strlen(name)))) {
        bd_err_set(e, BD_E_NOMEM, name, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    doc->root = NULL;
    doc->arena = ar;
    b.ar = ar;
    b.name = doc->name;
    b.buf = (const unsigned char *)buf;
    b.len = len;
    b.err = e;

    if (fast) {
        fast_ctx fc = {&b, 0, false};
        if (bd_yfast_scan(buf, len, fast_event, &fc) != 1 || !fc.done || b.depth != 0)
            goto out;
    } else {
        if (!yaml_parser_initialize(&parser)) {
            bd_err_set(e, BD_E_NOMEM, name, 0, 0, "out of memory; free memory and retry");
            goto out;
        }
        parser_ready = true;
        yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
        /* Left to libyaml's detection (the bytes are known UTF-8 by now): forcing UTF-8
         * makes libyaml 0.2.5 choke on a leading UTF-8 BOM. */
        int docs = 0;
        bool done = false;
        while (!done) {
            yaml_event_t ev;
            if (!yaml_parser_parse(&parser, &ev)) {
                parser_error(&b, &parser);
                goto out;
            }
            int r = handle_event(&b, &ev, &docs, &done);
            yaml_event_delete(&ev);
            if (r < 0)
                goto out;
        }
        if (b.depth != 0) {
            bd_err_set(e, BD_E_INTERNAL, name, 0, 0, "unbalanced YAML events; report this bug");
            goto out;
        }
    }
    doc->root = b.root;
    *out = doc;
    rc = 0;
out:
    for (int i = 0; i < b.depth; i++)
        frame_release(&b.stack[i]);
    if (parser_ready)
        yaml_parser_delete(&parser);
    if (rc != 0)
        arena_free(ar);
    return rc;
}

int bd_ydoc_parse_mode(bd_ydoc **out, const char *buf, size_t len, const char *name,
                       size_t max_bytes, const char *what, bd_ydoc_mode mode, bd_err *err)
{
    *out = NULL;
    if (!name)
        name = "<yaml>";
    if (!buf) {
        buf = "";
        len = 0;
    }
    if (len > max_bytes)
        return too_large(err, name, (unsigned long long)len, "", max_bytes, what);
    if (check_bytes((const unsigned char *)buf, len, name, err) < 0)
        return -1;
    if (mode != BD_YDOC_LIBYAML) {
        int r = build(out, buf, len, name, true, err);
        if (r == 0 || mode == BD_YDOC_FAST)
            return r;
    }
    return build(out, buf, len, name, false, err);
}

int bd_ydoc_load(bd_ydoc **out, const char *path, bd_err *err)
{
    return bd_ydoc_load_max(out, path, BD_YAML_MAX_BYTES, NULL, err);
}

int bd_ydoc_load_max(bd_ydoc **out, const char *path, size_t max_bytes, const char *what,
                     bd_err *err)
{
    int rc = -1;
    int fd = -1;
    char *buf = NULL;

    *out = NULL;
    /* O_NONBLOCK so a FIFO planted in place of the file cannot hang the open; O_NOCTTY so
     * a terminal device never becomes ours. */
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, path, 0, 0,
                       "is a symbolic link; refused (never followed): replace it with the file");
        else
            bd_err_errno(err, BD_E_IO, e, path, "cannot open");
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot stat");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        bd_err_set(err, S_ISDIR(st.st_mode) ? BD_E_IO : BD_E_UNSUPPORTED_ENTRY, path, 0, 0,
                   "is not a regular file; replace it with a regular YAML file");
        goto out;
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        too_large(err, path, (unsigned long long)st.st_size, "", max_bytes, what);
        goto out;
    }
    /* Read one byte past the limit: a file that grew since fstat is still refused. */
    size_t cap = max_bytes + 1;
    size_t want = (size_t)st.st_size + 1;
    buf = malloc(want < cap ? want : cap);
    if (!buf) {
        bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory; free memory and retry");
        goto out;
    }
    size_t bufcap = want < cap ? want : cap;
    size_t len = 0;
    for (;;) {
        if (len == bufcap) {
            if (bufcap >= cap)
                break;
            size_t ncap = bufcap * 2 < cap ? bufcap * 2 : cap;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory; free memory and retry");
                goto out;
            }
            buf = nb;
            bufcap = ncap;
        }
        ssize_t r = read(fd, buf + len, bufcap - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            bd_err_errno(err, BD_E_IO, errno, path, "cannot read");
            goto out;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (len > max_bytes) {
        too_large(err, path, (unsigned long long)len, " (it grew while read)", max_bytes, what);
        goto out;
    }
    rc = bd_ydoc_parse_max(out, buf, len, path, max_bytes, what, err);
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return rc;
}

void bd_ydoc_free(bd_ydoc *doc)
{
    if (!doc)
        return;
    /* The document itself lives in its arena. */
    arena_free(doc->arena);
}

bd_ynode *bd_ynode_get(const bd_ynode *map, const char *key)
{
    if (!map || map->kind != BD_Y_MAP || !key)
        return NULL;
    size_t klen = strlen(key);
    for (size_t i = 0; i < map->n; i++) {
        const bd_ynode *k = map->pairs[i].key;
        if (k->len == klen && memcmp(k->str, key, klen) == 0)
            return map->pairs[i].value;
    }
    return NULL;
}

bool bd_ynode_is_null(const bd_ynode *node)
{
    if (!node || node->kind != BD_Y_SCALAR || !node->plain)
        return false;
    const char *s = node->str;
    return node->len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

bool bd_ynode_equal(const bd_ynode *a, const bd_ynode *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->line != b->line || a->col != b->col || a->n != b->n ||
        a->plain != b->plain)
        return false;
    if (a->kind == BD_Y_SCALAR)
        return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    for (size_t i = 0; i < a->n; i++) {
        bool same = a->kind == BD_Y_MAP ? bd_ynode_equal(a->pairs[i].key, b->pairs[i].key) &&
                                              bd_ynode_equal(a->pairs[i].value, b->pairs[i].value)
                                        : bd_ynode_equal(a->items[i], b->items[i]);
        if (!same)
            return false;
    }
    return true;
}
