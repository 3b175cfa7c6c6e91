/*
 * yfast.c — the plain subset of YAML, scanned in one pass (see yfast.h).
 *
 * Every function returns OK, DECLINE (not in the subset) or FAIL (the emitter stopped),
 * and anything that is not OK goes straight back to bd_yfast_scan. Whatever libyaml might
 * read differently, or refuse, is declined, not guessed: a plain scalar that could go on
 * to the next line, a '#' that is not a comment, a ':' inside [] or {} that is not
 * followed by a letter or a digit, a key whose ':' is far from its start, an empty value,
 * a block scalar other than a plain `|` one (folded, chomping or indentation indicators,
 * leading empty lines, lines of spaces libyaml would read as text), escapes, tabs, CR,
 * non-ASCII bytes, anchors, tags and directives. tests/unit/test_yfast.c
 * and tests/fuzz/fuzz_yfast.c hold every input it accepts to libyaml: libyaml accepts it
 * too and builds the same tree.
 */
#include "yfast.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { FAIL = -1, DECLINE = 0, OK = 1 };

/* Collections nested deeper than this are declined (ydoc refuses far earlier); it bounds
 * the recursion whatever the input. */
#define MAX_NEST 40
/* libyaml forgets a possible simple key once the scan is more than 1024 characters past
 * its first one (yaml_parser_stale_simple_keys: the key's start index + 1024 < the
 * current index, characters counted, not bytes), and then refuses the ':' that follows.
 * A key whose ':' is more than MAX_KEY characters from its start is declined, and so is
 * a line indented that far: a margin under 1024, not a bet on the exact boundary. */
#define MAX_KEY 1000

typedef struct scan {
    const unsigned char *s;
    size_t len, pos;
    size_t line;       /* 0-based, as libyaml's marks */
    size_t line_start; /* offset of the current line's first byte */
    int depth;
    bd_yfast_emit emit;
    void *ctx;
} scan;

#define TRY(x)                                                                                     \
    do {                                                                                           \
        int r_ = (x);                                                                              \
        if (r_ != OK)                                                                              \
            return r_;                                                                             \
    } while (0)

static unsigned char peek(const scan *p, size_t ahead)
{
    return p->pos + ahead < p->len ? p->s[p->pos + ahead] : '\n';
}

static bool is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static void skip_spaces(scan *p)
{
    while (p->pos < p->len && p->s[p->pos] == ' ')
        p->pos++;
}

static void new_line(scan *p, size_t next)
{
    p->pos = next;
    p->line++;
    p->line_start = next;
}

static int emit_at(scan *p, yaml_event_t *ev, size_t at)
{
    ev->start_mark.index = at;
    ev->start_mark.line = p->line;
    ev->start_mark.column = at - p->line_start; /* ASCII only: bytes are characters */
    ev->end_mark = ev->start_mark;
    return p->emit(p->ctx, ev) == 0 ? OK : FAIL;
}

static int emit_start(scan *p, yaml_event_type_t type, bool flow)
{
    if (++p->depth > MAX_NEST)
        return DECLINE;
    yaml_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    if (type == YAML_MAPPING_START_EVENT) {
        ev.data.mapping_start.implicit = 1;
        ev.data.mapping_start.style = flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE;
    } else {
        ev.data.sequence_start.implicit = 1;
        ev.data.sequence_start.style = flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE;
    }
    return emit_at(p, &ev, p->pos);
}

static int emit_end(scan *p, yaml_event_type_t type)
{
    p->depth--;
    yaml_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    return emit_at(p, &ev, p->pos < p->len ? p->pos : p->len);
}

/* A scalar event whose value is the `n` bytes at `v`, marked at `at` of this line. */
static int emit_value(scan *p, size_t at, const unsigned char *v, size_t n,
                      yaml_scalar_style_t style)
{
    yaml_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = YAML_SCALAR_EVENT;
    ev.data.scalar.value = (yaml_char_t *)v;
    ev.data.scalar.length = n;
    ev.data.scalar.plain_implicit = style == YAML_PLAIN_SCALAR_STYLE;
    ev.data.scalar.quoted_implicit = style != YAML_PLAIN_SCALAR_STYLE;
    ev.data.scalar.style = style;
    return emit_at(p, &ev, at);
}

static int emit_scalar(scan *p, size_t at, size_t from, size_t to, yaml_scalar_style_t style)
{
    return emit_value(p, at, p->s + from, to - from, style);
}

/* Whether a plain scalar may start at `i`: no indicator (YAML 1.1 §4.1.3), and a '-' only
 * before a letter, a digit or a '.', so "-1" is a scalar and "- x" an entry. */
static bool plain_start(const scan *p, size_t i)
{
    unsigned char c = p->s[i];
    if (c == '-') {
        unsigned char n = i + 1 < p->len ? p->s[i + 1] : '\n';
        return is_alnum(n) || n == '.';
    }
    return c > ' ' && c < 0x7F && !strchr("-?:,[]{}#&*!|>'\"%@`", c);
}

/* A plain scalar at p->pos, on this line: [*from, *to) without trailing spaces; p->pos
 * ends after its last character. It stops before ": ", " #", the end of the line, and in
 * a flow collection before ",[]{}". */
static int plain(scan *p, bool flow, size_t *from, size_t *to)
{
    size_t i = p->pos, end = p->pos;
    for (; i < p->len; i++) {
        unsigned char c = p->s[i];
        if (c == '\n')
            break;
        if (c == ' ')
            continue;
        if (c == ':') {
            unsigned char n = i + 1 < p->len ? p->s[i + 1] : '\n';
            if (n == ' ' || n == '\n')
                break;
            /* Inside [] and {} libyaml's reading of "x:," or "x:]" has changed between
             * versions: only a letter or a digit after it is plainly part of the word. */
            if (flow && !is_alnum(n))
                return DECLINE;
        } else if (c == '#') {
            if (p->s[i - 1] == ' ') /* never the first character: not a plain start */
                break;
            return DECLINE;
        } else if (c == '[' || c == ']' || c == '{' || c == '}') {
            if (!flow)
                return DECLINE;
            break;
        } else if (c == ',' && flow) {
            break;
        }
        end = i + 1;
    }
    *from = p->pos;
    *to = end;
    p->pos = end;
    return OK;
}

/* A quoted scalar at p->pos, closed on this line, without escapes: [*from, *to) is its
 * content; p->pos ends after the closing quote. */
static int quoted(scan *p, size_t *from, size_t *to)
{
    unsigned char q = p->s[p->pos];
    size_t i = p->pos + 1;
    for (; i < p->len; i++) {
        unsigned char c = p->s[i];
        if (c == '\n' || (c == '\\' && q == '"'))
            return DECLINE;
        if (c == q)
            break;
    }
    if (i >= p->len || (q == '\'' && i + 1 < p->len && p->s[i + 1] == '\''))
        return DECLINE;
    *from = p->pos + 1;
    *to = i;
    p->pos = i + 1;
    return OK;
}

/* A scalar at p->pos (quoted or plain), emitted. */
static int scalar(scan *p, bool flow)
{
    size_t at = p->pos, from, to;
    unsigned char c = p->s[at];
    yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;
    if (c == '"' || c == '\'') {
        TRY(quoted(p, &from, &to));
        style = c == '"' ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_SINGLE_QUOTED_SCALAR_STYLE;
    } else if (plain_start(p, at)) {
        TRY(plain(p, flow, &from, &to));
    } else {
        return DECLINE;
    }
    return emit_scalar(p, at, from, to, style);
}

/* A simple key at p->pos, emitted, then spaces and its ':', all on this line; p->pos ends
 * after the ':'. The ':' must be followed by a space (or, in a block mapping, end the
 * line) and lie at most MAX_KEY characters from the key's first one: a key padded past
 * libyaml's 1024 is libyaml's to refuse. */
static int simple_key(scan *p, bool flow)
{
    size_t at = p->pos;
    TRY(scalar(p, flow));
    skip_spaces(p);
    if (peek(p, 0) != ':' || p->pos - at > MAX_KEY)
        return DECLINE;
    p->pos++;
    unsigned char c = peek(p, 0);
    if (c != ' ' && (flow || c != '\n'))
        return DECLINE;
    return OK;
}

static int inline_node(scan *p, bool flow);

/* `{k: v, ...}` (`map`) or `[a, b, ...]` on this line, from its opening bracket. */
static int flow_collection(scan *p, bool map)
{
    unsigned char close = map ? '}' : ']';
    TRY(emit_start(p, map ? YAML_MAPPING_START_EVENT : YAML_SEQUENCE_START_EVENT, true));
    p->pos++;
    skip_spaces(p);
    if (peek(p, 0) != close) {
        for (;;) {
            if (map) {
                if (p->pos >= p->len)
                    return DECLINE;
                TRY(simple_key(p, true));
                skip_spaces(p);
            }
            TRY(inline_node(p, true));
            skip_spaces(p);
            unsigned char c = peek(p, 0);
            if (c == close)
                break;
            if (c != ',')
                return DECLINE; /* in a sequence, ':' here would be a single-pair mapping */
            p->pos++;
            skip_spaces(p);
            if (peek(p, 0) == close)
                return DECLINE; /* a trailing comma */
        }
    }
    p->pos++;
    return emit_end(p, map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT);
}

/* A node that fits on this line: a scalar or a flow collection. Outside a flow collection
 * (a block value or entry) `flow` is false. */
static int inline_node(scan *p, bool flow)
{
    if (p->pos >= p->len)
        return DECLINE;
    unsigned char c = p->s[p->pos];
    if (c == '{' || c == '[')
        return flow_collection(p, c == '{');
    return scalar(p, flow);
}

/* After a node: spaces, maybe a comment after a space, then the end of the line (or of
 * the input). p->pos moves to the next line. */
static int finish_line(scan *p)
{
    size_t i = p->pos;
    while (i < p->len && p->s[i] == ' ')
        i++;
    if (i < p->len && p->s[i] == '#') {
        if (i == p->pos)
            return DECLINE;
        while (i < p->len && p->s[i] != '\n')
            i++;
    }
    if (i >= p->len) {
        p->pos = p->len;
        return OK;
    }
    if (p->s[i] != '\n')
        return DECLINE;
    new_line(p, i + 1);
    return OK;
}

/* From the start of a line, move to the first character of the next line with content
 * (blank lines and comment lines skipped); *indent is its column, -1 at the end. */
static int next_content(scan *p, int *indent)
{
    for (;;) {
        size_t i = p->pos;
        while (i < p->len && p->s[i] == ' ')
            i++;
        if (i >= p->len) {
            p->pos = p->len;
            *indent = -1;
            return OK;
        }
        if (p->s[i] == '#') {
            while (i < p->len && p->s[i] != '\n')
                i++;
            if (i >= p->len) {
                p->pos = p->len;
                *indent = -1;
                return OK;
            }
        }
        if (p->s[i] == '\n') {
            new_line(p, i + 1);
            continue;
        }
        /* Document markers and directives are libyaml's. */
        if (i == p->pos && (p->s[i] == '%' || (p->len - i >= 3 && (!memcmp(p->s + i, "---", 3) ||
                                                                   !memcmp(p->s + i, "...", 3)))))
            return DECLINE;
        if (i - p->pos > MAX_KEY)
            return DECLINE;
        *indent = (int)(i - p->pos);
        p->pos = i;
        return OK;
    }
}

static bool at_entry(const scan *p)
{
    return peek(p, 0) == '-' && (p->pos + 1 >= p->len || peek(p, 1) == ' ' || peek(p, 1) == '\n');
}

static int block_seq(scan *p, int indent, bool indentless, int *next);

/* The spaces opening the line at `ls`: their count; *blank when nothing else is on it. */
static size_t line_spaces(const scan *p, size_t ls, bool *blank)
{
    size_t i = ls;
    while (i < p->len && p->s[i] == ' ')
        i++;
    *blank = i >= p->len || p->s[i] == '\n';
    return i - ls;
}

/* A literal block scalar ('|': clip chomping, indentation detected), the value of a key of
 * the block mapping at column `indent`, from its '|'. In the subset: the '|' ends its line;
 * the line below holds text, indented past the keys, which sets the scalar's column; every
 * later line is text at least that indented, or spaces alone (an empty line) no more
 * indented than that and ended by a line break. The scalar ends at the first line of text
 * less indented, where p->pos then is (its column in *next, -1 at the end, as
 * next_content leaves it). The value is each text line from the scalar's column, the line
 * breaks between them kept, and one final line break when the last text line had one. */
static int literal(scan *p, int indent, int *next)
{
    size_t at = p->pos, ls = at + 2, nl = 1;
    bool blank;
    if (ls > p->len || p->s[at + 1] != '\n')
        return DECLINE; /* an indicator, a comment or the end of the input after '|' */
    size_t col = line_spaces(p, ls, &blank);
    if (blank || col <= (size_t)indent || col > MAX_KEY)
        return DECLINE;
    /* The value is at most the rest of the input and a line break: a signature fits on
     * the stack. */
    unsigned char small[1024];
    size_t room = p->len - ls + 1;
    unsigned char *v = room <= sizeof(small) ? small : malloc(room);
    if (!v)
        return DECLINE;
    size_t n = 0, pending = 0; /* line breaks to put before the next text line */
    int r = OK;
    while (ls < p->len) {
        size_t k = line_spaces(p, ls, &blank);
        if (blank && (k > col || ls + k >= p->len)) {
            r = DECLINE; /* spaces that libyaml would read as text, or with no line break */
            break;
        }
        if (!blank && k < col)
            break;
        size_t eol = ls + k;
        if (!blank) {
            for (; pending; pending--)
                v[n++] = '\n';
            for (eol = ls + col; eol < p->len && p->s[eol] != '\n'; eol++)
                v[n++] = p->s[eol];
        }
        if (eol >= p->len) {
            ls = p->len;
            pending = 0;
            break;
        }
        pending++;
        ls = eol + 1;
        nl++;
    }
    if (r == OK) {
        if (pending)
            v[n++] = '\n';
        r = emit_value(p, at, v, n, YAML_LITERAL_SCALAR_STYLE);
    }
    if (v != small)
        free(v);
    if (r != OK)
        return r;
    p->line += nl;
    p->line_start = ls;
    p->pos = ls;
    return next_content(p, next);
}

/* A block mapping whose keys are at column `indent`, from its first key. Ends at the
 * first content line less indented (its indentation in *next, -1 at the end). */
static int block_map(scan *p, int indent, int *next)
{
    TRY(emit_start(p, YAML_MAPPING_START_EVENT, false));
    int ind;
    for (;;) {
        TRY(simple_key(p, false));
        skip_spaces(p);
        unsigned char c = peek(p, 0);
        if (c == '|') {
            TRY(literal(p, indent, &ind));
        } else if (c == '\n' || c == '#') {
            /* The value is a block collection on the lines below (an empty one is
             * libyaml's). */
            TRY(finish_line(p));
            TRY(next_content(p, &ind));
            if (ind > indent && at_entry(p))
                TRY(block_seq(p, ind, false, &ind));
            else if (ind > indent)
                TRY(block_map(p, ind, &ind));
            else if (ind == indent && at_entry(p))
                TRY(block_seq(p, ind, true, &ind));
            else
                return DECLINE;
        } else {
            TRY(inline_node(p, false));
            TRY(finish_line(p));
            TRY(next_content(p, &ind));
        }
        if (ind < indent)
            break;
        if (ind > indent || at_entry(p))
            return DECLINE; /* a continuation line, or an entry where a key belongs */
    }
    *next = ind;
    return emit_end(p, YAML_MAPPING_END_EVENT);
}

/* A block sequence whose '-' are at column `indent`, from its first '-'; `indentless`
 * when it is the value of a key at that same column (it then ends at that key's next
 * sibling). Each entry is an inline node. */
static int block_seq(scan *p, int indent, bool indentless, int *next)
{
    TRY(emit_start(p, YAML_SEQUENCE_START_EVENT, false));
    int ind;
    for (;;) {
        if (!at_entry(p) || peek(p, 1) != ' ')
            return DECLINE;
        p->pos++;
        skip_spaces(p);
        unsigned char c = peek(p, 0);
        if (c == '\n' || c == '#')
            return DECLINE; /* a nested or empty entry */
        TRY(inline_node(p, false));
        TRY(finish_line(p));
        TRY(next_content(p, &ind));
        if (ind < indent)
            break;
        if (ind > indent)
            return DECLINE;
        if (!at_entry(p)) {
            if (indentless)
                break;
            return DECLINE;
        }
    }
    *next = ind;
    return emit_end(p, YAML_SEQUENCE_END_EVENT);
}

static int emit_plain(scan *p, yaml_event_type_t type)
{
    yaml_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    if (type == YAML_DOCUMENT_START_EVENT)
        ev.data.document_start.implicit = 1;
    return emit_at(p, &ev, p->pos < p->len ? p->pos : p->len);
}

int bd_yfast_scan(const char *buf, size_t len, bd_yfast_emit emit, void *ctx)
{
    scan p = {.s = (const unsigned char *)buf, .len = len, .emit = emit, .ctx = ctx};
    for (size_t i = 0; i < len; i++)
        if ((p.s[i] < ' ' && p.s[i] != '\n') || p.s[i] >= 0x7F)
            return DECLINE;
    int ind, r = next_content(&p, &ind);
    if (r != OK || ind != 0)
        return r == FAIL ? FAIL : DECLINE; /* an empty or indented document is libyaml's */
    if ((r = emit_plain(&p, YAML_DOCUMENT_START_EVENT)) != OK)
        return r;
    r = at_entry(&p) ? block_seq(&p, 0, false, &ind) : block_map(&p, 0, &ind);
    if (r != OK)
        return r;
    if (ind != -1)
        return DECLINE;
    if ((r = emit_plain(&p, YAML_DOCUMENT_END_EVENT)) != OK)
        return r;
    return emit_plain(&p, YAML_STREAM_END_EVENT);
}
