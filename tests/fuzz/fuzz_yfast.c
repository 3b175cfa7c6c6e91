/*
 * fuzz_yfast.c — libFuzzer target holding the fast reader of the plain YAML subset
 * (src/base/yfast.c) to libyaml. A refusal difference is a finding as much as a tree
 * difference:
 *
 *  - the scanner alone: whenever bd_yfast_scan takes an input, libyaml's parser reads the
 *    same bytes to the end without an error and emits the same events (kinds, scalar
 *    texts and styles, collection styles, node marks). ydoc's own refusals (duplicate
 *    keys, depth) cannot hide an input yfast takes and libyaml refuses;
 *  - through ydoc: whatever the fast reader accepts, libyaml accepts and reads to the same
 *    tree, node for node with lines and columns; the fast reader never refuses what
 *    libyaml reads (its only refusals are the byte checks both share); and the default
 *    reader answers exactly as libyaml does, error message and position included.
 *
 * libyaml's limits are counted in characters (a simple key's ':' at most 1024 characters
 * from its start), which random edits rarely reach. So a 0x01 byte followed by a byte n
 * also stands for 992 + n % 48 spaces, and 0x02 n for as many letters 'k', and every input
 * holding one is checked a second time with those runs written out (0x01 and 0x02 are
 * never valid YAML, so the literal input stays a refusal for both readers).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "fuzz_util.h"
#include "ydoc.h"
#include "yfast.h"

/* An expanded input stays under this (well under ydoc's 1 MiB). */
#define EXPANDED_MAX (64 * 1024)

typedef struct fast_events {
    yaml_event_t *ev;
    size_t n, cap;
} fast_events;

static int keep_event(void *ctx, const yaml_event_t *ev)
{
    fast_events *fe = ctx;
    if (fe->n == fe->cap) {
        size_t cap = fe->cap ? fe->cap * 2 : 64;
        yaml_event_t *grown = realloc(fe->ev, cap * sizeof(*grown));
        check(grown != NULL, "out of memory");
        fe->ev = grown;
        fe->cap = cap;
    }
    yaml_event_t *kept = &fe->ev[fe->n++];
    *kept = *ev;
    /* A value is valid only during the call (a literal block's is built in a buffer of the
     * scan's): the kept event holds its own copy. */
    if (ev->type == YAML_SCALAR_EVENT) {
        size_t n = ev->data.scalar.length;
        unsigned char *copy = malloc(n ? n : 1);
        check(copy != NULL, "out of memory");
        if (n)
            memcpy(copy, ev->data.scalar.value, n);
        kept->data.scalar.value = copy;
    }
    return 0;
}

static int same_mark(const yaml_mark_t *a, const yaml_mark_t *b)
{
    return a->index == b->index && a->line == b->line && a->column == b->column;
}

/* One event of yfast's against libyaml's: what ydoc builds the tree from. */
static int same_event(const yaml_event_t *f, const yaml_event_t *l)
{
    if (f->type != l->type)
        return 0;
    switch (f->type) {
    case YAML_SCALAR_EVENT:
        return same_mark(&f->start_mark, &l->start_mark) &&
               f->data.scalar.length == l->data.scalar.length &&
               memcmp(f->data.scalar.value, l->data.scalar.value, f->data.scalar.length) == 0 &&
               f->data.scalar.style == l->data.scalar.style && !l->data.scalar.anchor &&
               !l->data.scalar.tag;
    case YAML_SEQUENCE_START_EVENT:
        return same_mark(&f->start_mark, &l->start_mark) &&
               f->data.sequence_start.style == l->data.sequence_start.style &&
               !l->data.sequence_start.anchor && !l->data.sequence_start.tag;
    case YAML_MAPPING_START_EVENT:
        return same_mark(&f->start_mark, &l->start_mark) &&
               f->data.mapping_start.style == l->data.mapping_start.style &&
               !l->data.mapping_start.anchor && !l->data.mapping_start.tag;
    default:
        return 1;
    }
}

/* The scanner alone against libyaml's parser. */
static void scanner_against_libyaml(const char *text, size_t size)
{
    fast_events fe = {NULL, 0, 0};
    int r = bd_yfast_scan(text, size, keep_event, &fe);
    check(r == 0 || r == 1, "bd_yfast_scan returns 1 or 0 when its emitter never stops");
    if (r == 1) {
        yaml_parser_t parser;
        check(yaml_parser_initialize(&parser), "out of memory");
        yaml_parser_set_input_string(&parser, (const unsigned char *)text, size);
        yaml_event_t ev;
        check(yaml_parser_parse(&parser, &ev), "yfast scanned what libyaml refuses");
        check(ev.type == YAML_STREAM_START_EVENT, "libyaml starts with STREAM-START");
        yaml_event_delete(&ev);
        for (size_t i = 0; i < fe.n; i++) {
            check(yaml_parser_parse(&parser, &ev), "yfast scanned what libyaml refuses");
            check(same_event(&fe.ev[i], &ev), "yfast and libyaml emitted different events");
            yaml_event_delete(&ev);
        }
        check(fe.n > 0 && fe.ev[fe.n - 1].type == YAML_STREAM_END_EVENT,
              "yfast ends with STREAM-END");
        yaml_parser_delete(&parser);
    }
    for (size_t i = 0; i < fe.n; i++)
        if (fe.ev[i].type == YAML_SCALAR_EVENT)
            free(fe.ev[i].data.scalar.value);
    free(fe.ev);
}

/* The three readers of ydoc against each other. */
static void readers_agree(const char *text, size_t size)
{
    bd_ydoc *fast = NULL, *lib = NULL, *any = NULL;
    bd_err ef = BD_ERR_INIT, el = BD_ERR_INIT, ea = BD_ERR_INIT;
    int rf = bd_ydoc_parse_mode(&fast, text, size, "fuzz.yaml", BD_YAML_MAX_BYTES, NULL,
                                BD_YDOC_FAST, &ef);
    int rl = bd_ydoc_parse_mode(&lib, text, size, "fuzz.yaml", BD_YAML_MAX_BYTES, NULL,
                                BD_YDOC_LIBYAML, &el);
    int ra = bd_ydoc_parse_mode(&any, text, size, "fuzz.yaml", BD_YAML_MAX_BYTES, NULL, BD_YDOC_ANY,
                                &ea);
    check(rf == 0 || rf == 1 || rf == -1, "yfast returns 0, 1 or -1");
    check(rf != 1 || !fast, "a declined input builds nothing");
    if (rf == 0) {
        check(rl == 0, "yfast accepted what libyaml refuses");
        check(bd_ynode_equal(fast->root, lib->root), "yfast and libyaml built different trees");
    }
    if (rf == -1) {
        /* Only the byte checks before either reader refuse in the fast mode. */
        check(rl == -1, "yfast refused what libyaml reads");
        check(ef.code == el.code && strcmp(ef.msg, el.msg) == 0,
              "yfast refused with another error than libyaml");
    }
    check(ra == rl, "the default reader and libyaml disagree on success");
    if (rl == 0) {
        check(bd_ynode_equal(any->root, lib->root), "the default reader built another tree");
    } else {
        check(ea.code == el.code && strcmp(ea.msg, el.msg) == 0,
              "the default reader gave another error");
        check(ea.line == el.line && ea.col == el.col,
              "the default reader placed its error elsewhere");
    }
    bd_ydoc_free(fast);
    bd_ydoc_free(lib);
    bd_ydoc_free(any);
}

static void one_input(const char *text, size_t size)
{
    scanner_against_libyaml(text, size);
    readers_agree(text, size);
}

/* The input with each 0x01 n written out as 992 + n % 48 spaces and each 0x02 n as as
 * many 'k'; 0 when there is none (or the result would pass EXPANDED_MAX). */
static size_t expand(const uint8_t *data, size_t size, char *out)
{
    size_t o = 0;
    int runs = 0;
    for (size_t i = 0; i < size; i++) {
        if ((data[i] == 0x01 || data[i] == 0x02) && i + 1 < size) {
            size_t count = 992 + data[i + 1] % 48;
            if (o + count > EXPANDED_MAX)
                return 0;
            memset(out + o, data[i] == 0x01 ? ' ' : 'k', count);
            o += count;
            i++;
            runs++;
            continue;
        }
        if (o + 1 > EXPANDED_MAX)
            return 0;
        out[o++] = (char)data[i];
    }
    return runs ? o : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_input((const char *)data, size);
    if (memchr(data, 0x01, size) || memchr(data, 0x02, size)) {
        static char expanded[EXPANDED_MAX];
        size_t n = expand(data, size, expanded);
        if (n)
            one_input(expanded, n);
    }
    return 0;
}
