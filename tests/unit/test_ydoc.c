/*
 * test_ydoc.c — the strict YAML reader: tree shape, positions, and every refusal with its
 * exact code and line (docs/formats.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ydoc.h"

/* Parse `text` expecting failure with `code` at `line` (0: don't check); returns err. */
static bd_err expect_fail_n(const char *text, size_t len, bd_code code, int line)
{
    bd_err err = BD_ERR_INIT;
    bd_ydoc *doc = (bd_ydoc *)0x1;
    int rc = bd_ydoc_parse(&doc, text, len, "t.yaml", &err);
    if (rc == 0 || err.code != code || (line && err.line != line))
        print_error("expected %s, got rc=%d %s: %s\n", bd_code_str(code), rc, bd_code_str(err.code),
                    err.msg);
    assert_int_equal(rc, -1);
    assert_null(doc);
    assert_int_equal(err.code, code);
    if (line)
        assert_int_equal(err.line, line);
    /* One line: "<file>:<line>:<col>: <what>; <what to do>" */
    assert_non_null(strstr(err.msg, "t.yaml"));
    assert_null(strchr(err.msg, '\n'));
    assert_non_null(strchr(err.msg, ';'));
    assert_string_equal(err.file, "t.yaml");
    return err;
}

static bd_err expect_fail(const char *text, bd_code code, int line)
{
    return expect_fail_n(text, strlen(text), code, line);
}

static bd_ydoc *parse_ok(const char *text)
{
    bd_err err = BD_ERR_INIT;
    bd_ydoc *doc = NULL;
    if (bd_ydoc_parse(&doc, text, strlen(text), "t.yaml", &err) != 0)
        print_error("unexpected failure: %s: %s\n", bd_code_str(err.code), err.msg);
    assert_non_null(doc);
    return doc;
}

static void test_tree_shape(void **state)
{
    (void)state;
    bd_ydoc *doc = parse_ok("a: 1\n"
                            "b:\n"
                            "  - x\n"
                            "  - 'quoted'\n"
                            "c: {d: ~, e: }\n"
                            "f: \"null\"\n");
    const bd_ynode *r = doc->root;
    assert_int_equal(r->kind, BD_Y_MAP);
    assert_int_equal(r->n, 4);
    assert_string_equal(doc->name, "t.yaml");
    const bd_ynode *a = bd_ynode_get(r, "a");
    assert_int_equal(a->kind, BD_Y_SCALAR);
    assert_string_equal(a->str, "1");
    assert_int_equal(a->len, 1);
    assert_true(a->plain);
    assert_int_equal(a->line, 1);
    assert_int_equal(a->col, 4);
    assert_int_equal(r->pairs[0].key->line, 1);
    assert_int_equal(r->pairs[0].key->col, 1);
    const bd_ynode *b = bd_ynode_get(r, "b");
    assert_int_equal(b->kind, BD_Y_SEQ);
    assert_int_equal(b->n, 2);
    assert_string_equal(b->items[0]->str, "x");
    assert_false(b->items[1]->plain);
    assert_int_equal(b->items[1]->line, 4);
    assert_int_equal(b->items[1]->col, 5);
    const bd_ynode *c = bd_ynode_get(r, "c");
    assert_int_equal(c->kind, BD_Y_MAP);
    assert_true(bd_ynode_is_null(bd_ynode_get(c, "d")));
    assert_true(bd_ynode_is_null(bd_ynode_get(c, "e")));
    /* A quoted "null" is a string, not null. */
    assert_false(bd_ynode_is_null(bd_ynode_get(r, "f")));
    assert_null(bd_ynode_get(r, "zz"));
    assert_null(bd_ynode_get(a, "a")); /* not a map */
    assert_null(bd_ynode_get(NULL, "a"));
    assert_false(bd_ynode_is_null(NULL));
    assert_false(bd_ynode_is_null(b));
    bd_ydoc_free(doc);
    bd_ydoc_free(NULL);
}

static void test_null_spellings(void **state)
{
    (void)state;
    bd_ydoc *doc = parse_ok("[null, Null, NULL, ~, '', nULL, 'null']");
    const bd_ynode *s = doc->root;
    assert_int_equal(s->n, 7);
    for (int i = 0; i < 4; i++)
        assert_true(bd_ynode_is_null(s->items[i]));
    assert_false(bd_ynode_is_null(s->items[4]));
    assert_false(bd_ynode_is_null(s->items[5]));
    assert_false(bd_ynode_is_null(s->items[6]));
    bd_ydoc_free(doc);
}

static void test_empty_documents(void **state)
{
    (void)state;
    bd_ydoc *doc = parse_ok("");
    assert_null(doc->root);
    bd_ydoc_free(doc);
    doc = parse_ok("# only a comment\n\n");
    assert_null(doc->root);
    bd_ydoc_free(doc);
    doc = parse_ok("---\n");
    assert_non_null(doc->root);
    assert_true(bd_ynode_is_null(doc->root));
    bd_ydoc_free(doc);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_ydoc_parse(&doc, NULL, 0, "n.yaml", &err), 0);
    assert_null(doc->root);
    bd_ydoc_free(doc);
}

static void test_utf8_values(void **state)
{
    (void)state;
    /* A UTF-8 BOM is UTF-8 and accepted; multi-byte characters count as one column. */
    bd_ydoc *doc = parse_ok("\xEF\xBB\xBFk: caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n"
                            "\xC3\xA9: [1, \"\\u00e9\"]\n");
    const bd_ynode *k = bd_ynode_get(doc->root, "k");
    assert_string_equal(k->str, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    const bd_ynode *e = bd_ynode_get(doc->root, "\xC3\xA9");
    assert_non_null(e);
    assert_int_equal(e->col, 4);
    assert_string_equal(e->items[1]->str, "\xC3\xA9");
    bd_ydoc_free(doc);
}

static void test_too_large(void **state)
{
    (void)state;
    size_t n = BD_YAML_MAX_BYTES + 1;
    char *buf = malloc(n);
    assert_non_null(buf);
    /* All comment lines: valid YAML if it were allowed. */
    memset(buf, '#', n);
    for (size_t i = 79; i < n; i += 80)
        buf[i] = '\n';
    bd_err err = expect_fail_n(buf, n, BD_E_YAML_TOO_LARGE, 0);
    assert_non_null(strstr(err.msg, "1048576"));
    /* Exactly the limit is fine. */
    bd_ydoc *doc = NULL;
    assert_int_equal(bd_ydoc_parse(&doc, buf, n - 1, "t.yaml", &err), 0);
    assert_null(doc->root);
    bd_ydoc_free(doc);
    free(buf);
}

static char *nested(int depth, bool flow)
{
    size_t cap = (size_t)depth * (size_t)(depth + 16) + 64;
    char *s = calloc(1, cap);
    assert_non_null(s);
    if (flow) {
        for (int i = 0; i < depth; i++)
            strcat(s, "[");
        for (int i = 0; i < depth; i++)
            strcat(s, "]");
        strcat(s, "\n");
        return s;
    }
    for (int i = 0; i < depth; i++) {
        size_t l = strlen(s);
        snprintf(s + l, cap - l, "%*sk%d:\n", 2 * i, "", i);
    }
    size_t l = strlen(s);
    snprintf(s + l, cap - l, "%*sleaf\n", 2 * depth, "");
    return s;
}

static void test_depth(void **state)
{
    (void)state;
    char *s = nested(BD_YAML_MAX_DEPTH, true);
    bd_ydoc *doc = parse_ok(s);
    bd_ydoc_free(doc);
    free(s);
    s = nested(BD_YAML_MAX_DEPTH + 1, true);
    bd_err err = expect_fail(s, BD_E_YAML_TOO_DEEP, 1);
    assert_int_equal(err.col, BD_YAML_MAX_DEPTH + 1);
    free(s);
    /* 32 nested block mappings: k0..k31 each open one; the leaf is a scalar. */
    s = nested(BD_YAML_MAX_DEPTH, false);
    doc = parse_ok(s);
    bd_ydoc_free(doc);
    free(s);
    s = nested(40, false);
    expect_fail(s, BD_E_YAML_TOO_DEEP, BD_YAML_MAX_DEPTH + 1);
    free(s);
    /* A huge nesting is refused at level 33, not parsed to the end. */
    size_t n = 900 * 1000;
    char *deep = malloc(n + 1);
    assert_non_null(deep);
    memset(deep, '[', n);
    deep[n] = '\0';
    expect_fail(deep, BD_E_YAML_TOO_DEEP, 1);
    free(deep);
}

static void test_aliases_and_anchors(void **state)
{
    (void)state;
    expect_fail("a: &x 1\nb: *x\n", BD_E_YAML_ALIAS, 1);
    expect_fail("a: 1\nb: *nowhere\n", BD_E_YAML_ALIAS, 2);
    expect_fail("a: 1\nb: &m {c: 1}\n", BD_E_YAML_ALIAS, 2);
    expect_fail("a: 1\nb: &s [1]\n", BD_E_YAML_ALIAS, 2);
    expect_fail("- 1\n- &k key\n", BD_E_YAML_ALIAS, 2);
    expect_fail("base: {x: 1}\nm:\n  <<: *base\n", BD_E_YAML_ALIAS, 3);
    bd_err err = expect_fail("a: &anchor 1\n", BD_E_YAML_ALIAS, 1);
    assert_non_null(strstr(err.msg, "&anchor"));
    assert_int_equal(err.col, 4);
}

static void test_alias_bomb_is_cheap(void **state)
{
    (void)state;
    /* Billion laughs, nine levels of nine: refused at its first anchor, in no time. */
    char buf[4096] = "lol0: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
    for (int i = 1; i < 10; i++) {
        size_t l = strlen(buf);
        l += (size_t)snprintf(buf + l, sizeof(buf) - l, "lol%d: &%c [", i, 'a' + i);
        for (int j = 0; j < 9; j++)
            l += (size_t)snprintf(buf + l, sizeof(buf) - l, "%s*%c", j ? ", " : "", 'a' + i - 1);
        snprintf(buf + l, sizeof(buf) - l, "]\n");
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_fail(buf, BD_E_YAML_ALIAS, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(ms < 500.0);
}

static void test_duplicate_keys(void **state)
{
    (void)state;
    bd_err err = expect_fail("a: 1\nb: 2\na: 3\n", BD_E_YAML_DUPLICATE_KEY, 3);
    assert_int_equal(err.col, 1);
    assert_non_null(strstr(err.msg, "'a'"));
    assert_non_null(strstr(err.msg, "line 1"));
    /* Key style does not matter: one text, one key. */
    expect_fail("a: 1\n'a': 2\n", BD_E_YAML_DUPLICATE_KEY, 2);
    expect_fail("\"a\": 1\nx: 0\na: 2\n", BD_E_YAML_DUPLICATE_KEY, 3);
    expect_fail("m: {k: 1, j: 2, k: 3}\n", BD_E_YAML_DUPLICATE_KEY, 1);
    expect_fail("s:\n  - {k: 1}\n  - k: 1\n    k: 2\n", BD_E_YAML_DUPLICATE_KEY, 4);
    /* Null keys collide too. */
    expect_fail("~: 1\n~: 2\n", BD_E_YAML_DUPLICATE_KEY, 2);
    /* Same key in different mappings is fine; a key equal to a value is fine. */
    bd_ydoc *doc = parse_ok("a: {a: a}\nb: {a: 1}\nc: [{a: 1}, {a: 2}]\n");
    bd_ydoc_free(doc);
    /* Keys differing only past a common prefix or in length are distinct. */
    doc = parse_ok("ab: 1\na: 2\nabc: 3\n");
    assert_int_equal(doc->root->n, 3);
    bd_ydoc_free(doc);
}

static void test_duplicate_key_in_big_mapping(void **state)
{
    (void)state;
    /* 40000 distinct keys then a repeat of the first: still found, still fast (hashed). */
    size_t cap = 40001 * 16 + 64;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t l = 0;
    for (int i = 0; i < 40000; i++)
        l += (size_t)snprintf(buf + l, cap - l, "k%d: %d\n", i, i);
    bd_ydoc *doc = parse_ok(buf);
    assert_int_equal(doc->root->n, 40000);
    assert_string_equal(bd_ynode_get(doc->root, "k39999")->str, "39999");
    bd_ydoc_free(doc);
    snprintf(buf + l, cap - l, "k17: again\n");
    expect_fail(buf, BD_E_YAML_DUPLICATE_KEY, 40001);
    free(buf);
}

/* Collections around the 16 entries a frame holds before it allocates: every item kept in
 * order, and a duplicate found on either side of the boundary. */
static void test_wide_collections(void **state)
{
    (void)state;
    char buf[2048];
    for (int n = 15; n <= 40; n++) {
        size_t l = (size_t)snprintf(buf, sizeof(buf), "s:\n");
        for (int i = 0; i < n; i++)
            l += (size_t)snprintf(buf + l, sizeof(buf) - l, "- v%d\n", i);
        l += (size_t)snprintf(buf + l, sizeof(buf) - l, "f: [");
        for (int i = 0; i < n; i++)
            l += (size_t)snprintf(buf + l, sizeof(buf) - l, "%sw%d", i ? ", " : "", i);
        snprintf(buf + l, sizeof(buf) - l, "]\n");
        bd_ydoc *doc = parse_ok(buf);
        const bd_ynode *seq = bd_ynode_get(doc->root, "s"), *flow = bd_ynode_get(doc->root, "f");
        assert_int_equal(seq->n, n);
        assert_int_equal(flow->n, n);
        for (int i = 0; i < n; i++) {
            char want[16];
            snprintf(want, sizeof(want), "v%d", i);
            assert_string_equal(seq->items[i]->str, want);
            snprintf(want, sizeof(want), "w%d", i);
            assert_string_equal(flow->items[i]->str, want);
        }
        bd_ydoc_free(doc);
        /* n distinct keys, then a repeat of the first and of the last. */
        l = 0;
        for (int i = 0; i < n; i++)
            l += (size_t)snprintf(buf + l, sizeof(buf) - l, "k%d: %d\n", i, i);
        doc = parse_ok(buf);
        assert_int_equal(doc->root->n, n);
        for (int i = 0; i < n; i++)
            assert_int_equal(atoi(doc->root->pairs[i].value->str), i);
        bd_ydoc_free(doc);
        for (int which = 0; which < 2; which++) {
            snprintf(buf + l, sizeof(buf) - l, "k%d: again\n", which ? n - 1 : 0);
            expect_fail(buf, BD_E_YAML_DUPLICATE_KEY, n + 1);
        }
    }
}

static void test_encoding(void **state)
{
    (void)state;
    bd_err err = expect_fail("a: 1\nb: x\xFFy\n", BD_E_YAML_ENCODING, 2);
    assert_int_equal(err.col, 5);
    assert_non_null(strstr(err.msg, "0xFF"));
    expect_fail("a: \xC0\xAF\n", BD_E_YAML_ENCODING, 1);             /* overlong '/' */
    expect_fail("a: \xE0\x80\xAF\n", BD_E_YAML_ENCODING, 1);         /* overlong 3-byte */
    expect_fail("a: \xED\xA0\x80\n", BD_E_YAML_ENCODING, 1);         /* surrogate */
    expect_fail("a: \xF4\x90\x80\x80\n", BD_E_YAML_ENCODING, 1);     /* > U+10FFFF */
    expect_fail("a: \xF5\x80\x80\x80\n", BD_E_YAML_ENCODING, 1);     /* F5 lead */
    expect_fail("a: \x80\n", BD_E_YAML_ENCODING, 1);                 /* lone continuation */
    expect_fail("a: \xC3", BD_E_YAML_ENCODING, 1);                   /* truncated at end */
    expect_fail("a: \xE2\x82x\n", BD_E_YAML_ENCODING, 1);            /* bad continuation */
    err = expect_fail_n("\xFF\xFEz\0:\0", 6, BD_E_YAML_ENCODING, 1); /* UTF-16LE BOM */
    assert_non_null(strstr(err.msg, "UTF-16"));
    expect_fail_n("\xFE\xFF\0z\0:", 6, BD_E_YAML_ENCODING, 1); /* UTF-16BE BOM */
    err = expect_fail_n("\xFF\xFE\0\0z\0\0\0", 8, BD_E_YAML_ENCODING, 1);
    assert_non_null(strstr(err.msg, "UTF-32"));
    expect_fail_n("\0\0\xFE\xFF\0\0\0z", 8, BD_E_YAML_ENCODING, 1);
    /* NUL: raw byte anywhere, or a \0 escape in a double-quoted string. */
    err = expect_fail_n("a: 1\nb: 2\nc: x\0y\n", 15, BD_E_YAML_ENCODING, 3);
    assert_int_equal(err.col, 5);
    expect_fail_n("a: 1\n# comment \0\n", 17, BD_E_YAML_ENCODING, 2);
    expect_fail("a: \"x\\0y\"\n", BD_E_YAML_ENCODING, 1);
    expect_fail("a: \"\\x00\"\n", BD_E_YAML_ENCODING, 1);
    /* UTF-16 without a BOM is full of NULs. */
    expect_fail_n("a\0:\0 \0001\0", 8, BD_E_YAML_ENCODING, 1);
}

static void test_syntax(void **state)
{
    (void)state;
    /* More than one document: refused at the second. */
    bd_err err = expect_fail("a: 1\n---\nb: 2\n", BD_E_YAML_SYNTAX, 2);
    assert_non_null(strstr(err.msg, "document"));
    expect_fail("--- 1\n--- 2\n", BD_E_YAML_SYNTAX, 2);
    expect_fail("a: 1\n...\n---\n", BD_E_YAML_SYNTAX, 3);
    /* Non-scalar keys. */
    expect_fail("? [a, b]\n: c\n", BD_E_YAML_SYNTAX, 1);
    expect_fail("x: 1\n? {a: 1}\n: c\n", BD_E_YAML_SYNTAX, 2);
    expect_fail("m: {[a]: 1}\n", BD_E_YAML_SYNTAX, 1);
    /* Explicit tags and %TAG directives. */
    err = expect_fail("a: !!str 1\n", BD_E_YAML_SYNTAX, 1);
    assert_non_null(strstr(err.msg, "tag"));
    expect_fail("a: !local x\n", BD_E_YAML_SYNTAX, 1);
    expect_fail("a: ! x\n", BD_E_YAML_SYNTAX, 1);
    expect_fail("a: !!map {b: 1}\n", BD_E_YAML_SYNTAX, 1);
    expect_fail("x: 1\na: !!seq [1]\n", BD_E_YAML_SYNTAX, 2);
    expect_fail("!!python/object:os.system\nx: 1\n", BD_E_YAML_SYNTAX, 1);
    expect_fail("%TAG !e! tag:example.com,2000:\n---\na: 1\n", BD_E_YAML_SYNTAX, 1);
    /* Plain syntax errors carry libyaml's position (1-based). */
    err = expect_fail("a: \"unterminated\n", BD_E_YAML_SYNTAX, 2);
    expect_fail("a:\n  b: 1\n c: 2\n", BD_E_YAML_SYNTAX, 3);
    err = expect_fail("a: [1, 2\n", BD_E_YAML_SYNTAX, 2);
    expect_fail("a: 1\n\tb: 2\n", BD_E_YAML_SYNTAX, 2);
    expect_fail("a: b: c\n", BD_E_YAML_SYNTAX, 1);
    err = expect_fail("k: {a: 1, b: 2]\n", BD_E_YAML_SYNTAX, 1);
    assert_true(err.col > 1);
    /* A control character libyaml refuses. */
    err = expect_fail("a: 1\nb: x\x07y\n", BD_E_YAML_SYNTAX, 2);
    assert_int_equal(err.col, 5);
    expect_fail("%YAML 9.9\n---\na: 1\n", BD_E_YAML_SYNTAX, 1);
}

static void test_message_format(void **state)
{
    (void)state;
    bd_err err = expect_fail("a: 1\na: 2\n", BD_E_YAML_DUPLICATE_KEY, 2);
    assert_int_equal(strncmp(err.msg, "t.yaml:2:1: ", 12), 0);
    /* Hostile key text is clipped and made one-line in the message. */
    err = expect_fail("\"x\\ny\": 1\n\"x\\ny\": 2\n", BD_E_YAML_DUPLICATE_KEY, 2);
    assert_non_null(strstr(err.msg, "'x?y'"));
}

static void test_clip(void **state)
{
    (void)state;
    char out[12];
    bd_ydoc_clip(out, sizeof(out), "short");
    assert_string_equal(out, "short");
    bd_ydoc_clip(out, sizeof(out), "a\tb\nc\x7f");
    assert_string_equal(out, "a?b?c?");
    bd_ydoc_clip(out, sizeof(out), "0123456789abcdef");
    assert_string_equal(out, "01234567...");
    /* Never cuts inside a UTF-8 character: 7 bytes of room leave "\xC3\xA9" whole or out. */
    bd_ydoc_clip(out, sizeof(out), "abcdefg\xC3\xA9zzzzzz");
    assert_string_equal(out, "abcdefg...");
    bd_ydoc_clip(out, sizeof(out), "abcdef\xC3\xA9zzzzzz");
    assert_string_equal(out, "abcdef\xC3\xA9...");
    bd_ydoc_clip(out, sizeof(out), NULL);
    assert_string_equal(out, "");
}

/* ---- bd_ydoc_load ------------------------------------------------------------------- */

static char tmpdir[64];

/* Path of `name` in the test's directory; a few rotating buffers so two may be used in
 * one call. */
static char *tpath(const char *name)
{
    static char p[4][256];
    static int next;
    char *out = p[next++ % 4];
    snprintf(out, sizeof(p[0]), "%s/%s", tmpdir, name);
    return out;
}

static int setup_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/bd-test-ydoc-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
    (void)state;
    static const char *const names[] = {"ok.yaml",   "big.yaml", "link.yaml",
                                        "fifo.yaml", "dir.yaml", "grow.yaml"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        unlink(tpath(names[i]));
        rmdir(tpath(names[i]));
    }
    return rmdir(tmpdir);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void test_load(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_ydoc *doc = NULL;
    write_file(tpath("ok.yaml"), "a: [1, 2]\nb: x\nb: y\n");
    assert_int_equal(bd_ydoc_load(&doc, tpath("ok.yaml"), &err), -1);
    assert_int_equal(err.code, BD_E_YAML_DUPLICATE_KEY);
    assert_int_equal(err.line, 3);
    assert_string_equal(err.file, tpath("ok.yaml"));
    write_file(tpath("ok.yaml"), "a: [1, 2]\nb: x\n");
    if (bd_ydoc_load(&doc, tpath("ok.yaml"), &err) != 0)
        print_error("%s\n", err.msg);
    assert_non_null(doc);
    assert_string_equal(doc->name, tpath("ok.yaml"));
    assert_int_equal(bd_ynode_get(doc->root, "a")->n, 2);
    bd_ydoc_free(doc);

    /* Missing file: io.error. */
    assert_int_equal(bd_ydoc_load(&doc, tpath("absent.yaml"), &err), -1);
    assert_null(doc);
    assert_int_equal(err.code, BD_E_IO);

    /* A symlink is never followed, even to a good file. */
    assert_int_equal(symlink(tpath("ok.yaml"), tpath("link.yaml")), 0);
    assert_int_equal(bd_ydoc_load(&doc, tpath("link.yaml"), &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);

    /* A FIFO is refused at once (opening it must not hang waiting for a writer). */
    assert_int_equal(mkfifo(tpath("fifo.yaml"), 0600), 0);
    assert_int_equal(bd_ydoc_load(&doc, tpath("fifo.yaml"), &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);

    /* A directory. */
    assert_int_equal(mkdir(tpath("dir.yaml"), 0700), 0);
    assert_int_equal(bd_ydoc_load(&doc, tpath("dir.yaml"), &err), -1);
    assert_int_equal(err.code, BD_E_IO);
}

static void test_load_oversize_refused_before_reading(void **state)
{
    (void)state;
    /* 64 MiB sparse file of NUL bytes: if it were read, it would be not_utf8 (and slow).
     * too_large proves the size is judged from fstat first. */
    int fd = open(tpath("big.yaml"), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 64 * 1024 * 1024), 0);
    close(fd);
    bd_err err = BD_ERR_INIT;
    bd_ydoc *doc = NULL;
    assert_int_equal(bd_ydoc_load(&doc, tpath("big.yaml"), &err), -1);
    assert_null(doc);
    assert_int_equal(err.code, BD_E_YAML_TOO_LARGE);
    assert_non_null(strstr(err.msg, "67108864"));
    /* One byte over the limit, real text. */
    fd = open(tpath("big.yaml"), O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    char line[64];
    memset(line, '#', sizeof(line));
    line[63] = '\n';
    for (int i = 0; i < BD_YAML_MAX_BYTES / 64; i++)
        assert_int_equal(write(fd, line, sizeof(line)), (ssize_t)sizeof(line));
    close(fd);
    assert_int_equal(bd_ydoc_load(&doc, tpath("big.yaml"), &err), 0); /* exactly 1 MiB */
    bd_ydoc_free(doc);
    fd = open(tpath("big.yaml"), O_WRONLY | O_APPEND);
    assert_int_equal(write(fd, "\n", 1), 1);
    close(fd);
    assert_int_equal(bd_ydoc_load(&doc, tpath("big.yaml"), &err), -1);
    assert_int_equal(err.code, BD_E_YAML_TOO_LARGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_shape),
        cmocka_unit_test(test_null_spellings),
        cmocka_unit_test(test_empty_documents),
        cmocka_unit_test(test_utf8_values),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_aliases_and_anchors),
        cmocka_unit_test(test_alias_bomb_is_cheap),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_duplicate_key_in_big_mapping),
        cmocka_unit_test(test_wide_collections),
        cmocka_unit_test(test_encoding),
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_message_format),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_load_oversize_refused_before_reading),
    };
    return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
