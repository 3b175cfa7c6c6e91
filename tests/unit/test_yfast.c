/*
 * test_yfast.c — the fast reader of the plain YAML subset (src/base/yfast.c) builds, for every
 * input it accepts, exactly the tree libyaml builds: every node's kind, text, quoting,
 * line and column; it never accepts what libyaml refuses. What it declines is read by
 * libyaml, so errors stay libyaml's. Checked on hand-written inputs, on keys padded to
 * either side of libyaml's 1,024-character simple-key limit (against libyaml itself), on
 * every YAML file of the repository's benches and fixtures, and on 90,000 random
 * mutations of real case.yaml and provenance.yaml files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ydoc.h"
#include "yfast.h"

#include <yaml.h>

/* Parse `text` both ways. Returns 0 when yfast accepted it (and its tree is libyaml's),
 * 1 when it declined (and the default reader's answer is libyaml's). */
static int differential(const char *text, size_t len)
{
    bd_ydoc *fast = NULL, *lib = NULL, *any = NULL;
    bd_err ef = BD_ERR_INIT, el = BD_ERR_INIT, ea = BD_ERR_INIT;
    int rf =
        bd_ydoc_parse_mode(&fast, text, len, "t.yaml", BD_YAML_MAX_BYTES, NULL, BD_YDOC_FAST, &ef);
    int rl = bd_ydoc_parse_mode(&lib, text, len, "t.yaml", BD_YAML_MAX_BYTES, NULL, BD_YDOC_LIBYAML,
                                &el);
    int ra =
        bd_ydoc_parse_mode(&any, text, len, "t.yaml", BD_YAML_MAX_BYTES, NULL, BD_YDOC_ANY, &ea);
    if (rf == 0 && (rl != 0 || !bd_ynode_equal(fast->root, lib->root)))
        print_error("yfast accepted what libyaml reads otherwise (libyaml rc %d: %s):\n%.*s\n", rl,
                    el.msg, (int)len, text);
    if (rf == 0) {
        assert_int_equal(rl, 0);
        assert_true(bd_ynode_equal(fast->root, lib->root));
    }
    /* The default reader answers as libyaml does, error text included. */
    assert_int_equal(ra, rl);
    if (rl == 0)
        assert_true(bd_ynode_equal(any->root, lib->root));
    else
        assert_string_equal(ea.msg, el.msg);
    if (rf == 1)
        assert_null(fast);
    bd_ydoc_free(fast);
    bd_ydoc_free(lib);
    bd_ydoc_free(any);
    return rf == 0 ? 0 : 1;
}

static const char generated_case[] =
    "schema_version: 2\n"
    "case_id: case-000500\n"
    "title: \"Generated case 500\"\n"
    "disposition: positive\n"
    "difficulty: easy\n"
    "origin:\n"
    "  source: curated\n"
    "  source_ref: {type: synthetic, value: \"gen-500\"}\n"
    "  added_at: \"2026-05-12T14:00:00Z\"\n"
    "expected: {answer: 42}\n"
    "cassette_digest: blake3:0f5f586d0ce3e196a7eb735c076b6ca27f1b0ed5b1cf7a332d25ca2946a7e0af\n";

static const char demo_case[] =
    "# a comment first\n"
    "schema_version: 2\n"
    "case_id: ghsa-demo-0014\n"
    "title: \"node-fetch forwards secure headers; 2.6.7 fixes it on 2.x\"\n"
    "\n"
    "expected:\n"
    "  decision: \"bump\"   # why\n"
    "  advisories: [\"GHSA-demo-0014-0001\"]\n"
    "  cve_delta: -1\n"
    "  allowed_files: ['package.json', package-lock.json]\n"
    "  nested: {a: [1, [2, {b: c}]], 'd e': \"f\", empty: [], none: {}}\n"
    "tags:\n"
    "- one\n"
    "- \"two\"\n"
    "list:\n"
    "    - [x, y]\n"
    "    - {k: v}\n"
    "    - plain words, with a comma\n"
    "url: http://example.org/a:b\n"
    "time: 14:00:00\n"
    "key with spaces : value with  two spaces   \n"
    "'quoted key': x\n"
    "\"dq key\": it's fine\n"
    "last: end";

/* A signed case's provenance.yaml as `benchdesk sign` writes it: two literal blocks. */
static const char signed_provenance[] =
    "# Signatures over this subject's digest (docs/provenance.md#the-signed-message), written "
    "by `benchdesk sign`.\n"
    "schema_version: 2\n"
    "author:\n"
    "  identity: \"alice@bench.example\"\n"
    "  fingerprint: DBE9FFB58A1262A168FFBC352562D56F80A1C64F\n"
    "  signed_at: \"2026-11-28T14:00:34Z\"\n"
    "  digest: \"blake3:13a6cff2303ec26b75d160cdfc9fe12e11c83ad0ebfd7800a56c994ab6d5c76e\"\n"
    "  signature: |\n"
    "    -----BEGIN PGP SIGNATURE-----\n"
    "\n"
    "    iHUEABYIAB0WIQTb6f+1ihJioWj/vDUlYtVvgKHGTwUCawreggAKCRAlYtVvgKHG\n"
    "    fDSlKvJ62WN/q0C41Jefo0i4NnU82Q4=\n"
    "    =cmF/\n"
    "    -----END PGP SIGNATURE-----\n"
    "reviewer:\n"
    "  identity: \"bob@bench.example\"\n"
    "  fingerprint: BEE57985FA022DB2AD33BA80AED9F4F02840771F\n"
    "  signed_at: \"2026-11-28T14:00:35Z\"\n"
    "  digest: \"blake3:13a6cff2303ec26b75d160cdfc9fe12e11c83ad0ebfd7800a56c994ab6d5c76e\"\n"
    "  signature: |\n"
    "    -----BEGIN PGP SIGNATURE-----\n"
    "\n"
    "    iHUEABYIAB0WIQS+5XmF+gItsq0zuoCu2fTwKEB3HwUCawregwAKCRCu2fTwKEB3\n"
    "    =TwFV\n"
    "    -----END PGP SIGNATURE-----";

static void accepts_what_bench_files_are_made_of(void **state)
{
    (void)state;
    assert_int_equal(differential(generated_case, strlen(generated_case)), 0);
    assert_int_equal(differential(demo_case, strlen(demo_case)), 0);
    assert_int_equal(differential(signed_provenance, strlen(signed_provenance)), 0);
    const char *accepted[] = {
        "a: b\n",
        "a: b",
        "- a\n- b\n",
        "a:\n  b:\n    c: d\n  e: f\ng: h\n",
        "a:\n- 1\n- 2\nb: 3\n",
        "a: {}\nb: []\n",
        "a: ~\nb: null\nc: true\n",
        "a: -1\nb: .5\nc: -.5\n",
        "a: x # comment\n# another\n\n  # indented comment\nb: y\n",
        "a: \"\"\nb: ''\n",
        "a: {x: 'y', \"z\": [1,2 , 3]}\n",
        /* literal block scalars, as provenance.yaml holds signatures */
        "a: |\n  text\n",
        "a: |\n  text",
        "a: |\n  one\n  two\nb: c\n",
        "a: |\n  one\n\n  two\n\n\nb: c\n",
        "a: |\n  one\n \n  \n  two\n",
        "a: |\n    deep\n      deeper  \n    # not a comment\n  # a comment\nb: c\n",
        "a:\n  b: |\n    x\n    y\n  c: d\ne: f\n",
        "a:\n  b: |\n     x\n  c: |\n   y\n",
        "a: |\n  x: [y, {z\n  - w #'\"|>\n",
        "a: |\n  last\n\n\n",
    };
    for (size_t i = 0; i < sizeof(accepted) / sizeof(*accepted); i++) {
        if (differential(accepted[i], strlen(accepted[i])) != 0)
            fail_msg("declined: %s", accepted[i]);
    }
}

/* Each of these is outside the subset: declined, and read by libyaml (some are errors). */
static void declines_and_libyaml_decides(void **state)
{
    (void)state;
    const char *declined[] = {
        "a: b\n  c\n",     /* a plain scalar going on */
        "a: >\n  text\n",  /* a folded block scalar */
        "a: |-\n  text\n", /* chomping */
        "a: |+\n  text\n\n",
        "a: |2\n   text\n",   /* an indentation indicator */
        "a: | # c\n  text\n", /* a comment after the header */
        "a: |\n\n  text\n",   /* an empty line first */
        "a: |\n  \n  text\n",
        "a: |\n  x\n     \n", /* spaces past the scalar's column (text to libyaml) */
        "a: |\n  x\n ",       /* spaces with no line break */
        "a: |\nb: c\n",       /* an empty scalar */
        "a: |",
        "a: |\n  x\n y: z\n", /* a line between two indentations */
        "a:\n  b: |\n  x\n",  /* text no deeper than the keys (refused) */
        "- |\n  x\n",         /* in a sequence entry */
        "a: [|]\n",
        "a: \"x\\ty\"\n",         /* an escape */
        "a: \"x\n  y\"\n",        /* a quoted scalar over two lines */
        "a: 'it''s'\n",           /* a quoted quote */
        "a: &x 1\nb: *x\n",       /* anchors and aliases (refused by libyaml's reading) */
        "a: !!str 1\n",           /* a tag (refused) */
        "a:\tb\n",                /* a tab */
        "a: b\r\n",               /* CR */
        "a: caf\xc3\xa9\n",       /* non-ASCII */
        "a:\nb: c\n",             /* an empty value */
        "a: b\na: c\n",           /* a duplicate key (refused) */
        "---\na: b\n",            /* a document marker */
        "a: b\n---\nc: d\n",      /* two documents (refused) */
        "%YAML 1.1\n---\na: b\n", /* a directive */
        "  a: b\n",               /* an indented root */
        "a: [1,\n 2]\n",          /* a flow collection over two lines */
        "a: {x: 1,}\n",           /* a trailing comma */
        "a: [x: 1]\n",            /* a single-pair mapping */
        "a: b#c\n",               /* '#' inside a word */
        "a: b: c\n",              /* a mapping value where none may be (refused) */
        "a:b\n",                  /* no space after ':' */
        "? a\n: b\n",             /* a complex key */
        "- a: b\n",               /* a mapping in an entry */
        "-\n  a\n",               /* a nested entry */
        "a:\n  - x\n  b: y\n",    /* a key where an entry belongs (refused) */
        "a: x\n b: y\n",          /* a line between two indentations */
        "a: [b, {c: d]\n",        /* unbalanced (refused) */
        "",                       /* an empty document */
        "# only a comment\n",
        "plain\n",     /* a scalar document */
        "a: \"x\"y\n", /* text after a quoted scalar (refused) */
        "a: @x\n",     /* a reserved indicator (refused) */
    };
    for (size_t i = 0; i < sizeof(declined) / sizeof(*declined); i++) {
        if (differential(declined[i], strlen(declined[i])) != 1)
            fail_msg("accepted: %s", declined[i]);
    }
}

/* ---- simple keys: one line, and the ':' within 1024 characters of the key's start ---- */

/* libyaml's own answer, with no ydoc around it: 1 when it reads `text` to the end. */
static int libyaml_reads(const char *text, size_t len)
{
    yaml_parser_t p;
    assert_true(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int ok = 1;
    for (bool end = false; !end;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            ok = 0;
            break;
        }
        end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return ok;
}

static int count_event(void *ctx, const yaml_event_t *ev)
{
    (void)ev;
    ++*(size_t *)ctx;
    return 0;
}

/* `before` + a key + spaces + `after`, the ':' of `after` `dist` characters from the key's
 * first character. The key is `klen` characters: a quoted one when `quote`. */
static size_t padded(char *buf, size_t cap, const char *before, size_t klen, char quote,
                     size_t dist, const char *after)
{
    size_t n = strlen(before), a = strlen(after);
    assert_true(klen >= 1 && dist >= klen && n + dist + a < cap);
    memcpy(buf, before, n);
    size_t k = n;
    for (size_t i = 0; i < klen; i++)
        buf[k + i] = quote && (i == 0 || i == klen - 1) ? quote : (char)('a' + i % 26);
    memset(buf + k + klen, ' ', dist - klen);
    memcpy(buf + k + dist, after, a);
    buf[k + dist + a] = '\0';
    return k + dist + a;
}

static void padded_keys_are_refused_as_libyaml_refuses(void **state)
{
    (void)state;
    /* Where the key is: the root mapping, a nested one (there its key is required and
     * libyaml's message differs), a flow mapping, a flow mapping in a sequence entry. */
    static const struct {
        const char *before, *after;
    } where[] = {
        {"", ": v\n"},      {"a: 1\nb:\n  ", ": v\n"},
        {"a: {", ": v}\n"}, {"a: {x: y, ", ": v, z: w}\n"},
        {"- {", ": v}\n"},
    };
    static const struct {
        size_t klen;
        char quote;
    } keys[] = {{1, 0}, {3, '"'}, {3, '\''}, {990, 0}, {1020, 0}};
    static const size_t dists[] = {1, 1000, 1001, 1023, 1024, 1025, 1026, 1030, 2048};
    static char buf[4096];
    size_t cases = 0;
    for (size_t w = 0; w < sizeof(where) / sizeof(*where); w++)
        for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++)
            for (size_t d = 0; d < sizeof(dists) / sizeof(*dists); d++) {
                if (dists[d] < keys[k].klen)
                    continue;
                size_t len = padded(buf, sizeof(buf), where[w].before, keys[k].klen, keys[k].quote,
                                    dists[d], where[w].after);
                /* The boundary is libyaml's, checked here against libyaml itself. */
                int lib = libyaml_reads(buf, len);
                if (lib != (dists[d] <= 1024))
                    fail_msg("libyaml %s a key with its ':' %zu characters on: %.60s...",
                             lib ? "reads" : "refuses", dists[d], buf);
                /* yfast declines every one libyaml refuses (and those near the limit). */
                size_t events = 0;
                int r = bd_yfast_scan(buf, len, count_event, &events);
                if (!lib && r != 0)
                    fail_msg("yfast scanned a key with its ':' %zu characters on: %.60s...",
                             dists[d], buf);
                /* The default reader answers as libyaml does. */
                bd_ydoc *doc = NULL;
                bd_err err = BD_ERR_INIT;
                int rc = bd_ydoc_parse(&doc, buf, len, "t.yaml", &err);
                assert_int_equal(rc, lib ? 0 : -1);
                if (!lib) {
                    assert_int_equal(err.code, BD_E_YAML_SYNTAX);
                    assert_true(err.line >= 1);
                }
                bd_ydoc_free(doc);
                (void)differential(buf, len);
                cases++;
            }
    print_message("%zu padded keys\n", cases);

    /* The 1024 are characters, not bytes: a key of 600 two-byte characters (yfast
     * declines non-ASCII; libyaml decides) is still a key with its ':' 1,624 bytes on. */
    for (size_t dist = 1023; dist <= 1026; dist++) {
        size_t len = 0;
        for (int i = 0; i < 600; i++) {
            buf[len++] = (char)0xC3;
            buf[len++] = (char)0xA9;
        }
        memset(buf + len, ' ', dist - 600);
        len += dist - 600;
        memcpy(buf + len, ": v\n", 4);
        len += 4;
        int lib = libyaml_reads(buf, len);
        assert_int_equal(lib, dist <= 1024);
        bd_ydoc *doc = NULL;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_ydoc_parse(&doc, buf, len, "t.yaml", &err), lib ? 0 : -1);
        bd_ydoc_free(doc);
        assert_int_equal(differential(buf, len), 1);
    }
}

/* Every YAML file in the repository's benches and fixtures. */
static size_t n_files, n_fast;

static int one_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    size_t l = strlen(path);
    if (type != FTW_F || l < 5 || strcmp(path + l - 5, ".yaml") != 0)
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    static char buf[BD_YAML_MAX_BYTES + 1];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    if (n > BD_YAML_MAX_BYTES)
        return 0;
    n_files++;
    if (differential(buf, n) == 0)
        n_fast++;
    return 0;
}

static void every_yaml_file_of_the_repository(void **state)
{
    (void)state;
    const char *src = getenv("BD_SOURCE_DIR");
    if (!src)
        skip();
    char dir[4096];
    const char *subs[] = {"bench", "tests/fixtures", "examples"};
    for (size_t i = 0; i < sizeof(subs) / sizeof(*subs); i++) {
        snprintf(dir, sizeof(dir), "%s/%s", src, subs[i]);
        (void)nftw(dir, one_file, 16, FTW_PHYS);
    }
    print_message("%zu YAML files, %zu read by yfast\n", n_files, n_fast);
    assert_true(n_files >= 50);
    /* The bench files are written in the subset: most of them must take the fast path. */
    assert_true(n_fast * 2 >= n_files);
}

/* Random edits of real files with the characters YAML gives meaning to: whatever yfast
 * accepts, libyaml reads to the same tree. */
static void random_mutations_agree_with_libyaml(void **state)
{
    (void)state;
    static const char alphabet[] = " \n:-#,[]{}'\"?&*!|>%@`\\.~ab019";
    const char *seeds[] = {generated_case, demo_case, signed_provenance};
    char buf[4096];
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    size_t accepted = 0, total = 90000;
    for (size_t it = 0; it < total; it++) {
        const char *seed = seeds[it % 3];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int edits = 1 + (int)(it % 3);
        for (int e = 0; e < edits; e++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            size_t at = (size_t)(x % (len + 1));
            char c = alphabet[(x >> 32) % (sizeof(alphabet) - 1)];
            switch ((x >> 48) % 3) {
            case 0: /* insert */
                if (len + 1 < sizeof(buf)) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = c;
                    len++;
                }
                break;
            case 1: /* replace */
                if (at < len)
                    buf[at] = c;
                break;
            default: /* delete */
                if (at < len) {
                    memmove(buf + at, buf + at + 1, len - at - 1);
                    len--;
                }
            }
        }
        if (differential(buf, len) == 0)
            accepted++;
    }
    print_message("%zu of %zu mutations read by yfast\n", accepted, total);
    /* Not vacuous: a good share of the edits stay in the subset. */
    assert_true(accepted * 5 >= total);
}

/* Random documents of literal blocks: lines of text at random indentations, empty lines
 * and lines of spaces alone, keys around them, with or without a last line break. */
static void random_literal_blocks_agree_with_libyaml(void **state)
{
    (void)state;
    static const char *words[] = {
        "x", "-----BEGIN PGP-----", "k: v", "# c", "a #b", "- e", "|", "=cmF/", "[x", "}", "'q\"",
        "t "};
    char buf[2048];
    unsigned long long x = 0xD1B54A32D192ED03ull;
    size_t accepted = 0, total = 20000;
    for (size_t it = 0; it < total; it++) {
        size_t len = 0;
        int lines = 2 + (int)(it % 9);
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "a:\n  s: |\n");
        for (int l = 0; l < lines && len + 64 < sizeof(buf); l++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            int ind = x % 4 ? 4 + (int)((x >> 4) % 3) : (int)(x % 7), kind = (int)((x >> 8) % 8);
            if (l == 0 && kind < 5)
                ind = 4;
            if (kind == 5) /* an empty line, or spaces alone */
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%*s\n", ind % 6, "");
            else if (kind == 6) /* a key after the block */
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%*sk%d: |\n",
                                        (x >> 16) % 2 ? 2 : 0, "", l);
            else
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%*s%s\n", ind, "",
                                        words[(x >> 20) % (sizeof(words) / sizeof(*words))]);
        }
        if ((x >> 40) % 3 == 0 && len && buf[len - 1] == '\n')
            len--; /* no last line break */
        if (differential(buf, len) == 0)
            accepted++;
    }
    print_message("%zu of %zu literal documents read by yfast\n", accepted, total);
    assert_true(accepted * 10 >= total);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_what_bench_files_are_made_of),
        cmocka_unit_test(declines_and_libyaml_decides),
        cmocka_unit_test(padded_keys_are_refused_as_libyaml_refuses),
        cmocka_unit_test(every_yaml_file_of_the_repository),
        cmocka_unit_test(random_mutations_agree_with_libyaml),
        cmocka_unit_test(random_literal_blocks_agree_with_libyaml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
