/*
 * test_yfast.c — the fast reader of the plain YAML subset (src/yfast.c) builds, for every
 * input it accepts, exactly the tree libyaml builds: every node's kind, text, quoting,
 * line and column. What it declines is read by libyaml, so errors stay libyaml's.
 * Checked on hand-written inputs, on every YAML file of the repository's benches and
 * fixtures, and on 60,000 random mutations of real case.yaml files.
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

static void accepts_what_bench_files_are_made_of(void **state)
{
    (void)state;
    assert_int_equal(differential(generated_case, strlen(generated_case)), 0);
    assert_int_equal(differential(demo_case, strlen(demo_case)), 0);
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
        "a: b\n  c\n",            /* a plain scalar going on */
        "a: |\n  text\n",         /* a block scalar */
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
    const char *seeds[] = {generated_case, demo_case};
    char buf[4096];
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    size_t accepted = 0, total = 60000;
    for (size_t it = 0; it < total; it++) {
        const char *seed = seeds[it % 2];
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_what_bench_files_are_made_of),
        cmocka_unit_test(declines_and_libyaml_decides),
        cmocka_unit_test(every_yaml_file_of_the_repository),
        cmocka_unit_test(random_mutations_agree_with_libyaml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
