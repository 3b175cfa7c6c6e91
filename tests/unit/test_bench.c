/*
 * test_bench.c — the bench on disk: names, the typed loaders of registration.yaml,
 * case.yaml, provenance.yaml, digests.yaml and trusted-signers.yaml, format v2 (every rule,
 * exact code and line; format-v1 files are bench.format_v1), the
 * hostile corpus in tests/corpus/yaml (walked through its MANIFEST), JSON export, and
 * finding/opening a bench and its task classes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

/* ---- helpers ------------------------------------------------------------------------ */

static const char *source_dir(void)
{
    const char *d = getenv("BD_SOURCE_DIR");
    if (!d || !*d) {
        print_error("BD_SOURCE_DIR is not set: run this test through ctest\n");
        fail();
    }
    return d;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        print_error("cannot open %s: %s\n", path, strerror(errno));
    assert_non_null(f);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static char *corpus_path(const char *name)
{
    static char p[4][PATH_MAX];
    static int next;
    char *out = p[next++ % 4];
    snprintf(out, PATH_MAX, "%s/tests/corpus/yaml/%s", source_dir(), name);
    return out;
}

static char *corpus_text(const char *name)
{
    return read_all(corpus_path(name), NULL);
}

/* `base` with the first `old` replaced by `new` (which must be there). Caller frees. */
static char *subst(const char *base, const char *old, const char *new)
{
    const char *at = strstr(base, old);
    if (!at)
        print_error("'%s' not found in the base text\n", old);
    assert_non_null(at);
    size_t lb = strlen(base), lo = strlen(old), ln = strlen(new);
    char *s = malloc(lb - lo + ln + 1);
    assert_non_null(s);
    memcpy(s, base, (size_t)(at - base));
    memcpy(s + (at - base), new, ln);
    strcpy(s + (at - base) + ln, at + lo);
    return s;
}

/* `base` with the text from the first `from` up to (not including) the next `to` after
 * it replaced by `new`; `to` "" means up to the end. Caller frees. */
static char *subst_range(const char *base, const char *from, const char *to, const char *new)
{
    const char *a = strstr(base, from);
    if (!a)
        print_error("'%s' not found in the base text\n", from);
    assert_non_null(a);
    const char *b = *to ? strstr(a, to) : a + strlen(a);
    if (!b)
        print_error("'%s' not found after '%s'\n", to, from);
    assert_non_null(b);
    size_t head = (size_t)(a - base), ln = strlen(new);
    char *s = malloc(head + ln + strlen(b) + 1);
    assert_non_null(s);
    memcpy(s, base, head);
    memcpy(s + head, new, ln);
    strcpy(s + head + ln, b);
    return s;
}

typedef enum { K_REG, K_CASE, K_DIGESTS, K_SIGNERS, K_PROV } kind;

/* Parse `text` as `k`; returns rc and fills err, freeing any result. */
static int parse_as(kind k, const char *text, bd_err *err)
{
    bd_err_clear(err);
    int rc = -1;
    size_t len = strlen(text);
    switch (k) {
    case K_REG: {
        bd_registration *r = (bd_registration *)0x1;
        rc = bd_registration_parse(&r, text, len, "t.yaml", NULL, err);
        assert_true(rc == 0 ? r != NULL : r == NULL);
        bd_registration_free(r);
        break;
    }
    case K_CASE: {
        bd_case *c = (bd_case *)0x1;
        rc = bd_case_parse(&c, text, len, "t.yaml", NULL, err);
        assert_true(rc == 0 ? c != NULL : c == NULL);
        bd_case_free(c);
        break;
    }
    case K_DIGESTS: {
        bd_digests *d = (bd_digests *)0x1;
        rc = bd_digests_parse(&d, text, len, "t.yaml", err);
        assert_true(rc == 0 ? d != NULL : d == NULL);
        bd_digests_free(d);
        break;
    }
    case K_SIGNERS: {
        bd_signers *s = (bd_signers *)0x1;
        rc = bd_signers_parse(&s, text, len, "t.yaml", err);
        assert_true(rc == 0 ? s != NULL : s == NULL);
        bd_signers_free(s);
        break;
    }
    case K_PROV: {
        bd_provfile *p = (bd_provfile *)0x1;
        rc = bd_provfile_parse(&p, text, len, "t.yaml", err);
        assert_true(rc == 0 ? p != NULL : p == NULL);
        bd_provfile_free(p);
        break;
    }
    }
    return rc;
}

/* Edit the good file of kind `k` (replace `old` by `new`, or with `to` non-NULL the range
 * from `old` up to `to`) and expect `code` at `line` (0: line not checked), or success
 * when code is BD_OK. */
static void check_edit(kind k, const char *old, const char *to, const char *new, bd_code code,
                       int line)
{
    static const char *const good[] = {"good_registration.yaml", "good_case.yaml",
                                       "good_digests.yaml", "good_signers.yaml",
                                       "good_provenance.yaml"};
    char *base = corpus_text(good[k]);
    char *text = to ? subst_range(base, old, to, new) : subst(base, old, new);
    bd_err err;
    int rc = parse_as(k, text, &err);
    if ((code == BD_OK) != (rc == 0) || err.code != code || (line && err.line != line))
        print_error("[%s -> %s] expected %s at line %d, got rc=%d %s: %s\n", old, new,
                    bd_code_str(code), line, rc, bd_code_str(err.code), err.msg);
    assert_int_equal(rc, code == BD_OK ? 0 : -1);
    assert_int_equal(err.code, code);
    if (line)
        assert_int_equal(err.line, line);
    if (code != BD_OK) {
        assert_int_equal(strncmp(err.msg, "t.yaml:", 7), 0);
        assert_non_null(strchr(err.msg, ';'));
        assert_null(strchr(err.msg, '\n'));
    }
    free(text);
    free(base);
}

static void check_mut(kind k, const char *old, const char *new, bd_code code, int line)
{
    check_edit(k, old, NULL, new, code, line);
}

#define REG_BAD(old, new, line)  check_mut(K_REG, old, new, BD_E_REGISTRATION_SCHEMA, line)
#define REG_OK(old, new)         check_mut(K_REG, old, new, BD_OK, 0)
#define CASE_BAD(old, new, line) check_mut(K_CASE, old, new, BD_E_CASE_SCHEMA, line)
#define CASE_OK(old, new)        check_mut(K_CASE, old, new, BD_OK, 0)
#define DIG_BAD(old, new, line)  check_mut(K_DIGESTS, old, new, BD_E_DIGESTS_SCHEMA, line)
#define SIG_BAD(old, new, line)  check_mut(K_SIGNERS, old, new, BD_E_SIGNERS_SCHEMA, line)
#define PROV_BAD(old, new, line) check_mut(K_PROV, old, new, BD_E_PROVENANCE_SCHEMA, line)
#define PROV_OK(old, new)        check_mut(K_PROV, old, new, BD_OK, 0)

#define FA "6A1F0C3B9E2D47A8B5C4D3E2F1A0B9C8D7E6F5A4"
#define FB "0F9E8D7C6B5A49382716F5E4D3C2B1A09F8E7D6C"
#define D1 "blake3:3f0a9b6c1d2e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c"
#define D2 "blake3:a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define D3 "blake3:0000000000000000000000000000000000000000000000000000000000000001"

/* ---- names and small helpers ------------------------------------------------------- */

static void test_name_valid(void **state)
{
    (void)state;
    char long128[130], long129[131];
    memset(long128, 'a', 128);
    long128[128] = '\0';
    memset(long129, 'a', 129);
    long129[129] = '\0';
    static const char *const good[] = {
        "a",     "0",     "vuln-remediation", "ghsa-2024-0001-axios-ssrf", "a.b", "a_b", "a-",
        "1.2.3", "x.yaml"};
    static const char *const bad[] = {"",        ".",     "..",       "../x",  "a/b",   "/abs",
                                      ".hidden", "UPPER", "aB",       "-lead", "_lead", "a b",
                                      "a..b",    "a\n",   "\xC3\xA9", "a\\b",  "a:b",   "x/.."};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(bd_name_valid(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (bd_name_valid(bad[i]))
            print_error("'%s' should be invalid\n", bad[i]);
        assert_false(bd_name_valid(bad[i]));
    }
    assert_true(bd_name_valid(long128));
    assert_false(bd_name_valid(long129));
    assert_false(bd_name_valid(NULL));
}

static void test_path_join_and_enums(void **state)
{
    (void)state;
    char *p = bd_path_join("a/b", "c");
    assert_string_equal(p, "a/b/c");
    free(p);
    p = bd_path_join("a/b/", "c");
    assert_string_equal(p, "a/b/c");
    free(p);
    p = bd_path_join("/", "bench");
    assert_string_equal(p, "/bench");
    free(p);
    p = bd_path_join("", "x");
    assert_string_equal(p, "/x");
    free(p);
    assert_null(bd_path_join(NULL, "x"));

    assert_string_equal(bd_tier_str(BD_TIER_BRONZE), "bronze");
    assert_string_equal(bd_tier_str(BD_TIER_GOLD), "gold");
    assert_string_equal(bd_severity_str(BD_SEV_WARN), "warn");
    assert_string_equal(bd_sut_kind_str(BD_SUT_COMMAND), "command");
    assert_string_equal(bd_disposition_str(BD_DISP_AMBIGUOUS), "ambiguous");
    assert_string_equal(bd_difficulty_str(BD_DIFF_HARD), "hard");
    assert_string_equal(bd_tier_str((bd_tier)7), "?");
    bd_severity s = BD_SEV_BLOCK;
    assert_int_equal(bd_severity_parse("info", &s), 0);
    assert_int_equal(s, BD_SEV_INFO);
    assert_int_equal(bd_severity_parse("Info", &s), -1);
    assert_int_equal(bd_severity_parse(NULL, &s), -1);
}

/* ---- good files --------------------------------------------------------------------- */

static void test_good_registration(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_registration *r = NULL;
    assert_int_equal(
        bd_registration_load(&r, corpus_path("good_registration.yaml"), "vuln-remediation", &err),
        0);
    assert_int_equal(r->schema_version, 2);
    assert_string_equal(r->name, "vuln-remediation");
    assert_string_equal(r->description, "Dependency bumps that remove a known CVE.");
    assert_int_equal(r->current_tier, BD_TIER_BRONZE);
    assert_int_equal(r->min_cases[BD_TIER_BRONZE], 10);
    assert_int_equal(r->min_cases[BD_TIER_SILVER], 30);
    assert_int_equal(r->min_cases[BD_TIER_GOLD], 100);
    assert_true(r->threshold[BD_TIER_BRONZE] == 0.0);
    assert_true(r->threshold[BD_TIER_SILVER] == 0.80);
    assert_true(r->threshold[BD_TIER_GOLD] == 0.90);
    assert_int_equal(r->n_breakdown_keys, 3);
    assert_string_equal(r->breakdown_keys[1], "cve_delta");
    assert_int_equal(r->n_failure_modes, 2);
    assert_string_equal(r->failure_modes[1].code, "cve.not_removed");
    assert_int_equal(r->failure_modes[1].severity, BD_SEV_BLOCK);
    assert_string_equal(r->failure_modes[1].description, "The CVE is still reachable");
    assert_int_equal(r->rubric_wall_clock_s, 60);
    assert_int_equal(r->rubric_memory_mb, 1024);
    assert_int_equal(r->sut_kind, BD_SUT_CASSETTE);
    assert_null(r->sut_argv);
    assert_int_equal(r->sut_argc, 0);
    assert_ptr_equal(bd_registration_failure_mode(r, "recipe.wrong"), &r->failure_modes[0]);
    assert_null(bd_registration_failure_mode(r, "recipe"));
    assert_null(bd_registration_failure_mode(r, NULL));
    assert_true(bd_registration_has_breakdown_key(r, "validator"));
    assert_false(bd_registration_has_breakdown_key(r, "validators"));
    bd_registration_free(r);

    /* The directory name must match. */
    assert_int_equal(bd_registration_load(&r, corpus_path("good_registration.yaml"), "other", &err),
                     -1);
    assert_null(r);
    assert_int_equal(err.code, BD_E_REGISTRATION_SCHEMA);
    assert_int_equal(err.line, 2);

    assert_int_equal(
        bd_registration_load(&r, corpus_path("good_registration_command.yaml"), NULL, &err), 0);
    assert_int_equal(r->sut_kind, BD_SUT_COMMAND);
    assert_int_equal(r->sut_argc, 3);
    assert_string_equal(r->sut_argv[0], "/usr/bin/python3");
    assert_string_equal(r->sut_argv[2], "sut.py");
    assert_null(r->sut_argv[3]);
    assert_int_equal(r->sut_wall_clock_s, 120);
    bd_registration_free(r);
    bd_registration_free(NULL);
}

static void test_good_case(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_case *c = NULL;
    const char *path = corpus_path("good_case.yaml");
    assert_int_equal(bd_case_load(&c, path, "ghsa-2024-0001-axios-ssrf", &err), 0);
    assert_int_equal(c->schema_version, 2);
    assert_string_equal(c->case_id, "ghsa-2024-0001-axios-ssrf");
    assert_string_equal(c->title, "Axios SSRF, minor bump available");
    assert_int_equal(c->disposition, BD_DISP_POSITIVE);
    assert_int_equal(c->difficulty, BD_DIFF_EASY);
    assert_string_equal(c->source, "curated");
    assert_string_equal(c->source_ref_type, "ghsa");
    assert_string_equal(c->source_ref_value, "GHSA-8hc4-vh64-cxmj");
    assert_string_equal(c->added_at, "2026-05-12T14:00:00Z");
    assert_int_equal(c->wall_clock_s, 90);
    assert_int_equal(c->memory_mb, 0);
    assert_true(c->has_cassette_digest);
    assert_string_equal(c->cassette_digest, D2);
    assert_string_equal(c->path, path);
    assert_non_null(c->doc);
    assert_int_equal(c->expected->kind, BD_Y_MAP);
    assert_string_equal(bd_ynode_get(c->expected, "recipe_id")->str, "axios-bump-minor");
    bd_case_free(c);

    /* case_id must equal its directory: case.id_mismatch. */
    assert_int_equal(bd_case_load(&c, path, "ghsa-2024-0002-other", &err), -1);
    assert_null(c);
    assert_int_equal(err.code, BD_E_CASE_ID_MISMATCH);
    assert_int_equal(err.line, 2);

    /* A draft: digests null, plain timestamp, empty expected. */
    assert_int_equal(bd_case_load(&c, corpus_path("good_case_draft.yaml"), NULL, &err), 0);
    assert_false(c->has_cassette_digest);
    assert_string_equal(c->cassette_digest, "");
    assert_string_equal(c->added_at, "2024-02-29T23:59:59Z");
    assert_string_equal(c->source, "regression-converted");
    assert_string_equal(c->source_ref_value, "4f1c2e9");
    assert_int_equal(c->disposition, BD_DISP_NEGATIVE);
    assert_int_equal(c->difficulty, BD_DIFF_HARD);
    assert_int_equal(c->expected->n, 0);
    bd_case_free(c);
    bd_case_free(NULL);

    /* A format-v1 case.yaml (signatures inside, case_digest) is refused, naming migrate. */
    assert_int_equal(bd_case_load(&c, corpus_path("v1_case.yaml"), NULL, &err), -1);
    assert_null(c);
    assert_int_equal(err.code, BD_E_FORMAT_V1);
    assert_int_equal(err.action, BD_ACT_MIGRATE);
}

static void test_good_provenance(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_provfile *p = NULL;
    const char *path = corpus_path("good_provenance.yaml");
    assert_int_equal(bd_provfile_load(&p, path, &err), 0);
    assert_int_equal(p->schema_version, 2);
    assert_true(p->author.present);
    assert_string_equal(p->author.identity, "alice@example.org");
    /* Written lower-case in the file, stored upper-case. */
    assert_string_equal(p->author.fingerprint, FA);
    assert_string_equal(p->author.signed_at, "2026-05-12T14:00:00Z");
    assert_int_equal(p->author.line, 4);
    assert_string_equal(p->author.signature, "-----BEGIN PGP SIGNATURE-----\n\n"
                                             "iHUEABYKAB0WIQRqHww7ni1HqLXE0+LxoLnI1+b1pAUCZkDGk"
                                             "AAKCRDX5vWkAAAA\n=Qx7d\n"
                                             "-----END PGP SIGNATURE-----\n");
    assert_true(p->reviewer.present);
    assert_string_equal(p->reviewer.identity, "bob@example.org");
    assert_string_equal(p->reviewer.fingerprint, FB);
    assert_string_equal(p->last_validated_at, "2026-05-12T14:00:00Z");
    bd_provfile_free(p);
    /* Only an author; null reviewer. */
    const char *one = "schema_version: 2\nreviewer: null\n";
    assert_int_equal(bd_provfile_parse(&p, one, strlen(one), "o", &err), 0);
    assert_false(p->author.present);
    assert_false(p->reviewer.present);
    assert_null(p->author.identity);
    assert_null(p->last_validated_at);
    bd_provfile_free(p);
    bd_provfile_free(NULL);
}

static void test_good_digests_and_signers(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_digests *d = NULL;
    assert_int_equal(bd_digests_load(&d, corpus_path("good_digests.yaml"), &err), 0);
    assert_int_equal(d->schema_version, 2);
    assert_string_equal(d->task_class, D3);
    assert_int_equal(d->n_pins, 2);
    /* Sorted by case id, whatever the file's order. */
    assert_string_equal(d->pins[0].case_id, "ghsa-2023-0042-lodash-proto");
    assert_string_equal(d->pins[0].digest, D2);
    assert_int_equal(d->pins[0].line, 5);
    assert_string_equal(d->pins[1].case_id, "ghsa-2024-0001-axios-ssrf");
    const bd_pin *p = bd_digests_find(d, "ghsa-2024-0001-axios-ssrf");
    assert_non_null(p);
    assert_string_equal(p->digest, D1);
    assert_null(bd_digests_find(d, "ghsa-2024-0001"));
    assert_null(bd_digests_find(d, NULL));
    assert_null(bd_digests_find(NULL, "x"));
    bd_digests_free(d);

    /* No cases yet: null or {} */
    static const char *const empty[] = {"schema_version: 2\ntask_class: " D3 "\ncases:\n",
                                        "schema_version: 2\ntask_class: " D3 "\ncases: {}\n"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(bd_digests_parse(&d, empty[i], strlen(empty[i]), "e", &err), 0);
        assert_int_equal(d->n_pins, 0);
        assert_null(bd_digests_find(d, "a"));
        bd_digests_free(d);
    }

    bd_signers *s = NULL;
    assert_int_equal(bd_signers_load(&s, corpus_path("good_signers.yaml"), &err), 0);
    assert_int_equal(s->n, 2);
    assert_string_equal(s->signers[0].fingerprint, FA);
    assert_string_equal(s->signers[0].identity, "alice@example.org");
    assert_int_equal(s->signers[0].roles, BD_ROLE_AUTHOR | BD_ROLE_REVIEWER);
    assert_int_equal(s->signers[1].roles, BD_ROLE_REVIEWER);
    /* Found in either case, never by a prefix. */
    assert_ptr_equal(bd_signers_find(s, FB), &s->signers[1]);
    assert_ptr_equal(bd_signers_find(s, "6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4"),
                     &s->signers[0]);
    assert_null(bd_signers_find(s, "6A1F0C3B"));
    assert_null(bd_signers_find(s, NULL));
    bd_signers_free(s);
    const char *none = "schema_version: 1\nsigners: []\n";
    assert_int_equal(bd_signers_parse(&s, none, strlen(none), "n", &err), 0);
    assert_int_equal(s->n, 0);
    assert_null(bd_signers_find(s, FA));
    bd_signers_free(s);
}

/* ---- the corpus --------------------------------------------------------------------- */

static void test_corpus_manifest(void **state)
{
    (void)state;
    char mpath[PATH_MAX];
    snprintf(mpath, sizeof(mpath), "%s/tests/corpus/yaml/MANIFEST", source_dir());
    FILE *m = fopen(mpath, "r");
    assert_non_null(m);
    char line[512];
    int entries = 0, hostile = 0, wrong = 0;
    while (fgets(line, sizeof(line), m)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char file[256], kind_s[32], code_s[64];
        int want_line = 0;
        int got = sscanf(line, "%255s %31s %63s %d", file, kind_s, code_s, &want_line);
        assert_true(got >= 3);
        entries++;
        bd_err err = BD_ERR_INIT;
        int rc = -1;
        const char *path = corpus_path(file);
        if (!strcmp(kind_s, "registration")) {
            bd_registration *r = NULL;
            rc = bd_registration_load(&r, path, NULL, &err);
            bd_registration_free(r);
        } else if (!strcmp(kind_s, "case")) {
            bd_case *c = NULL;
            rc = bd_case_load(&c, path, NULL, &err);
            bd_case_free(c);
        } else if (!strcmp(kind_s, "digests")) {
            bd_digests *d = NULL;
            rc = bd_digests_load(&d, path, &err);
            bd_digests_free(d);
        } else if (!strcmp(kind_s, "signers")) {
            bd_signers *s = NULL;
            rc = bd_signers_load(&s, path, &err);
            bd_signers_free(s);
        } else if (!strcmp(kind_s, "provenance")) {
            bd_provfile *p = NULL;
            rc = bd_provfile_load(&p, path, &err);
            bd_provfile_free(p);
        } else {
            print_error("MANIFEST: unknown loader '%s'\n", kind_s);
            fail();
        }
        bool want_ok = !strcmp(code_s, "ok");
        const char *got_code = rc == 0 ? "ok" : bd_code_str(err.code);
        /* Every entry is checked and reported before the test fails. */
        if (strcmp(got_code, code_s) != 0 || (want_line && err.line != want_line)) {
            print_error("%s: expected %s line %d, got %s line %d: %s\n", file, code_s, want_line,
                        got_code, err.line, err.msg);
            wrong++;
            continue;
        }
        if (!want_ok) {
            hostile++;
            /* Every refusal names the file, and is one line that says what to do. */
            assert_non_null(strstr(err.msg, file));
            assert_non_null(strchr(err.msg, ';'));
            assert_null(strchr(err.msg, '\n'));
        }
    }
    fclose(m);
    assert_int_equal(wrong, 0);
    assert_true(entries >= 26);
    assert_true(hostile >= 20);
}

/* A corpus-style oversize case.yaml, generated here (never committed). */
static void test_corpus_oversize(void **state)
{
    (void)state;
    char dir[] = "/tmp/bd-test-bench-big-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/case.yaml", dir);
    char *good = corpus_text("good_case.yaml");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(good, f);
    for (int i = 0; ftell(f) <= BD_YAML_MAX_BYTES; i++)
        fprintf(f, "# padding line %d ......................................................\n", i);
    fclose(f);
    bd_err err = BD_ERR_INIT;
    bd_case *c = NULL;
    assert_int_equal(bd_case_load(&c, path, NULL, &err), -1);
    assert_null(c);
    assert_int_equal(err.code, BD_E_YAML_TOO_LARGE);
    unlink(path);
    rmdir(dir);
    free(good);
}

/* ---- registration.yaml rules -------------------------------------------------------- */

static void test_registration_rules(void **state)
{
    (void)state;
    /* schema_version */
    REG_BAD("schema_version: 2", "schema_version: 3", 1);
    REG_BAD("schema_version: 2", "schema_version: '2'", 1);
    REG_BAD("schema_version: 2", "schema_version: 2.0", 1);
    REG_BAD("schema_version: 2", "schema_version: true", 1);
    REG_BAD("schema_version: 2\n", "", 1);
    REG_OK("schema_version: 2", "schema_version: +2");
    check_mut(K_REG, "schema_version: 2", "schema_version: 1", BD_E_FORMAT_V1, 1);
    /* unknown keys, at every level, named with their line */
    REG_BAD("sut: {kind: cassette}", "sut: {kind: cassette}\nnotes: x", 13);
    REG_BAD("{bronze: 10,", "{bronze: 10, platinum: 500,", 5);
    REG_BAD("{silver: 0.80,", "{bronze: 0.1, silver: 0.80,", 6);
    REG_BAD("severity: block, description: Picked",
            "severity: block, weight: 2, description: Picked", 9);
    REG_BAD("rubric: {wall_clock_seconds: 60,", "rubric: {cpu_seconds: 5, wall_clock_seconds: 60,",
            11);
    /* required keys */
    REG_BAD("name: vuln-remediation\n", "", 1);
    REG_BAD("description: Dependency bumps that remove a known CVE.\n", "", 1);
    REG_BAD("current_tier: bronze", "#", 1);
    REG_BAD("breakdown_keys: [recipe_match, cve_delta, validator]\n", "", 1);
    REG_BAD("sut: {kind: cassette}", "", 1);
    REG_BAD("gold: 100}", "}", 5);
    REG_BAD("gold: 0.90}", "}", 6);
    REG_BAD("{code: recipe.wrong, severity: block,", "{severity: block,", 9);
    REG_BAD("{code: recipe.wrong, severity: block,", "{code: recipe.wrong,", 9);
    REG_BAD("sut: {kind: cassette}", "sut: {}", 12);
    REG_BAD("sut: {kind: cassette}", "sut: {kind: command}", 12);
    /* wrong types */
    REG_BAD("name: vuln-remediation", "name: [vuln-remediation]", 2);
    REG_BAD("description: Dependency bumps that remove a known CVE.", "description: 42", 3);
    REG_BAD("current_tier: bronze", "current_tier: 1", 4);
    REG_BAD("min_cases_for_promotion: {bronze: 10, silver: 30, gold: 100}",
            "min_cases_for_promotion: [10, 30, 100]", 5);
    REG_BAD("bronze: 10", "bronze: '10'", 5);
    REG_BAD("bronze: 10", "bronze: 10.5", 5);
    REG_BAD("breakdown_keys: [recipe_match, cve_delta, validator]", "breakdown_keys: recipe_match",
            7);
    REG_BAD("[recipe_match, cve_delta, validator]", "[recipe_match, [cve_delta], validator]", 7);
    check_edit(K_REG, "failure_modes:", "rubric:", "failure_modes: {}\n", BD_E_REGISTRATION_SCHEMA,
               8);
    check_edit(K_REG, "failure_modes:", "rubric:", "failure_modes:\n", BD_E_REGISTRATION_SCHEMA, 8);
    REG_BAD("  - {code: cve.not_removed", "  - cve.not_removed\n  - {code: cve.x", 10);
    REG_BAD("rubric: {wall_clock_seconds: 60, memory_mb: 1024}", "rubric: 60", 11);
    REG_BAD("wall_clock_seconds: 60", "wall_clock_seconds: '60'", 11);
    REG_BAD("sut: {kind: cassette}", "sut: cassette", 12);
    /* enums */
    REG_BAD("current_tier: bronze", "current_tier: Bronze", 4);
    REG_OK("current_tier: bronze", "current_tier: gold");
    REG_OK("severity: block, description: The", "severity: info, description: The");
    REG_BAD("severity: block, description: The", "severity: BLOCK, description: The", 10);
    /* ranges */
    REG_OK("wall_clock_seconds: 60", "wall_clock_seconds: 1");
    REG_OK("wall_clock_seconds: 60", "wall_clock_seconds: 300");
    REG_BAD("wall_clock_seconds: 60", "wall_clock_seconds: 301", 11);
    REG_BAD("wall_clock_seconds: 60", "wall_clock_seconds: -5", 11);
    REG_OK("memory_mb: 1024", "memory_mb: 16");
    REG_OK("memory_mb: 1024", "memory_mb: 4096");
    REG_BAD("memory_mb: 1024", "memory_mb: 15", 11);
    REG_BAD("memory_mb: 1024", "memory_mb: 4097", 11);
    REG_OK("gold: 0.90}", "gold: 1}");
    REG_OK("silver: 0.80", "silver: 0");
    REG_BAD("silver: 0.80", "silver: -0.01", 6);
    REG_BAD("silver: 0.80", "silver: 1.0000001", 6);
    REG_BAD("silver: 0.80", "silver: .inf", 6);
    REG_BAD("silver: 0.80", "silver: 80%", 6);
    REG_OK("bronze: 10", "bronze: 1");
    REG_BAD("bronze: 10", "bronze: 0", 5);
    REG_BAD("bronze: 10", "bronze: -3", 5);
    REG_BAD("gold: 100}", "gold: 3000000000}", 5);
    /* breakdown keys */
    REG_OK("breakdown_keys: [recipe_match, cve_delta, validator]", "breakdown_keys: []");
    REG_BAD("cve_delta, validator]", "cve_delta, Validator]", 7);
    REG_BAD("cve_delta, validator]", "cve_delta, \"\"]", 7);
    REG_BAD("cve_delta, validator]", "cve.delta, validator]", 7);
    REG_BAD("breakdown_keys: [recipe_match, cve_delta, validator]",
            "breakdown_keys:\n  - recipe_match\n  - cve_delta\n  - cve_delta", 10);
    /* failure-mode codes */
    REG_OK("code: recipe.wrong", "code: recipe.wrong.v2_1");
    REG_BAD("code: recipe.wrong", "code: recipe", 9);
    REG_BAD("code: recipe.wrong", "code: recipe.", 9);
    REG_BAD("code: recipe.wrong", "code: .wrong", 9);
    REG_BAD("code: recipe.wrong", "code: recipe..wrong", 9);
    REG_BAD("code: recipe.wrong", "code: Recipe.wrong", 9);
    REG_BAD("code: recipe.wrong", "code: recipe.wrong-x", 9);
    REG_BAD("code: recipe.wrong", "code: rubric.malformed_output", 9);
    REG_BAD("code: cve.not_removed", "code: sut.timeout", 10);
    REG_OK("code: recipe.wrong", "code: rubrics.wrong");
    REG_BAD("code: cve.not_removed", "code: recipe.wrong", 10);
    check_edit(K_REG, "failure_modes:", "rubric:", "failure_modes: []\n", BD_OK, 0);
    REG_OK(", description: Picked the wrong recipe}", "}");
    /* sut */
    REG_OK("sut: {kind: cassette}", "sut: {kind: command, argv: [/opt/sut/run]}");
    REG_BAD("sut: {kind: cassette}", "sut: {kind: command, argv: []}", 12);
    REG_BAD("sut: {kind: cassette}", "sut: {kind: command, argv: [./run]}", 12);
    REG_BAD("sut: {kind: cassette}", "sut: {kind: command, argv: [\"\"]}", 12);
    REG_BAD("sut: {kind: cassette}", "sut: {kind: command, argv: /bin/run}", 12);
    REG_BAD("sut: {kind: cassette}", "sut: {kind: command, argv: [/bin/run, 5]}", 12);
    REG_BAD("sut: {kind: cassette}",
            "sut: {kind: command, argv: [/bin/run], wall_clock_seconds: 0}", 12);
    REG_BAD("sut: {kind: cassette}",
            "sut: {kind: command, argv: [/bin/run], wall_clock_seconds: 301}", 12);
    REG_BAD("sut: {kind: cassette}", "sut: {kind: command, argv: [/bin/run], env: {}}", 12);
    REG_BAD("sut: {kind: cassette}", "sut: {kind: cassette, wall_clock_seconds: 5}", 12);
    /* name */
    check_mut(K_REG, "name: vuln-remediation", "name: ../escape", BD_E_BAD_ID, 2);
    check_mut(K_REG, "name: vuln-remediation", "name: a/b", BD_E_BAD_ID, 2);
    check_mut(K_REG, "name: vuln-remediation", "name: .hidden", BD_E_BAD_ID, 2);
    /* description may be empty */
    REG_OK("description: Dependency bumps that remove a known CVE.", "description: ''");
}

/* The good registration with its sut line replaced by `sut_and_run` (NULL: as it is)
 * loads with this run policy. */
static void run_policy_is(const char *sut_and_run, double cap, bool require_signed)
{
    char *base = corpus_text("good_registration.yaml");
    char *text = sut_and_run ? subst(base, "sut: {kind: cassette}", sut_and_run) : strdup(base);
    bd_err err = BD_ERR_INIT;
    bd_registration *r = NULL;
    assert_int_equal(bd_registration_parse(&r, text, strlen(text), "t.yaml", NULL, &err), 0);
    if (cap < 0)
        assert_true(r->run_cost_cap_usd < 0);
    else
        assert_true(r->run_cost_cap_usd == cap);
    assert_int_equal(r->run_require_signed, require_signed);
    bd_registration_free(r);
    free(text);
    free(base);
}

/* registration.yaml's run: mapping: cost_cap_usd (a number >= 0) and require_signed (a
 * boolean), both optional; absent, no cap and false. */
static void test_registration_run(void **state)
{
    (void)state;
    /* Each run: value, and whether it loads (else schema_invalid at line 13). */
    static const struct {
        const char *run;
        bool ok;
    } rows[] = {
        {"{cost_cap_usd: 1.5, require_signed: true}", true},
        {"{cost_cap_usd: 0}", true},
        {"{cost_cap_usd: 1000000000}", true},
        {"{require_signed: false}", true},
        {"{}", true},
        {"{cost_cap_usd: -0.01}", false},
        {"{cost_cap_usd: '1.5'}", false},
        {"{cost_cap_usd: .inf}", false},
        {"{cost_cap_usd: .nan}", false},
        {"{cost_cap_usd: 1e10}", false},
        {"{cost_cap_usd: $1}", false},
        {"{cost_cap_usd: null}", false},
        {"{require_signed: 'true'}", false},
        {"{require_signed: yes}", false},
        {"{require_signed: 1}", false},
        {"{budget_usd: 3}", false},
        {"1.5", false},
        {"[1.5]", false},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char to[128];
        snprintf(to, sizeof(to), "sut: {kind: cassette}\nrun: %s", rows[i].run);
        if (rows[i].ok)
            REG_OK("sut: {kind: cassette}", to);
        else
            REG_BAD("sut: {kind: cassette}", to, 13);
    }

    run_policy_is(NULL, -1.0, false);
    run_policy_is("sut: {kind: cassette}\nrun:\n  cost_cap_usd: 2.25\n  require_signed: True", 2.25,
                  true);
    run_policy_is("sut: {kind: cassette}\nrun: {cost_cap_usd: 0, require_signed: false}", 0.0,
                  false);
}

static void test_registration_sut_default_wall_clock(void **state)
{
    (void)state;
    char *base = corpus_text("good_registration.yaml");
    char *text =
        subst(base, "sut: {kind: cassette}",
              "sut:\n  kind: command\n  argv: [/bin/sut, --json]\n  wall_clock_seconds: 7");
    bd_err err = BD_ERR_INIT;
    bd_registration *r = NULL;
    assert_int_equal(bd_registration_parse(&r, text, strlen(text), "t.yaml", NULL, &err), 0);
    assert_int_equal(r->sut_wall_clock_s, 7);
    assert_int_equal(r->sut_argc, 2);
    bd_registration_free(r);
    free(text);
    text = subst(base, "rubric: {wall_clock_seconds: 60, memory_mb: 1024}", "rubric: {}");
    assert_int_equal(bd_registration_parse(&r, text, strlen(text), "t.yaml", NULL, &err), 0);
    assert_int_equal(r->rubric_wall_clock_s, BD_RUBRIC_DEFAULT_WALL_S);
    assert_int_equal(r->rubric_memory_mb, BD_RUBRIC_DEFAULT_MEMORY_MB);
    assert_string_equal(r->failure_modes[0].description, "Picked the wrong recipe");
    bd_registration_free(r);
    free(text);
    free(base);
}

/* ---- case.yaml rules ---------------------------------------------------------------- */

static void test_case_rules(void **state)
{
    (void)state;
    /* unknown keys at each level */
    CASE_BAD("difficulty: easy", "difficulty: easy\nllm_judge: true", 6);
    CASE_BAD("  source: curated", "  source: curated\n  trusted: true", 8);
    CASE_BAD("{type: ghsa,", "{type: ghsa, url: x,", 8);
    CASE_BAD("{wall_clock_seconds: 90}", "{wall_clock_seconds: 90, cpu: 1}", 11);
    /* v1 members: the signatures and the case digest moved out of case.yaml */
    check_mut(K_CASE, "schema_version: 2", "schema_version: 1", BD_E_FORMAT_V1, 0);
    check_mut(K_CASE, "cassette_digest: " D2, "cassette_digest: " D2 "\ncase_digest: " D1,
              BD_E_FORMAT_V1, 0);
    check_mut(K_CASE, "origin:", "provenance:", BD_E_FORMAT_V1, 0);
    CASE_BAD("  added_at: \"2026-05-12T14:00:00Z\"",
             "  added_at: \"2026-05-12T14:00:00Z\"\n  added_by: {identity: a}", 10);
    /* required keys */
    CASE_BAD("case_id: ghsa-2024-0001-axios-ssrf\n", "", 1);
    CASE_BAD("disposition: positive", "#", 1);
    CASE_BAD("difficulty: easy", "#", 1);
    CASE_BAD("  source: curated", "  #", 8);
    CASE_BAD("  source_ref: {type: ghsa, value: GHSA-8hc4-vh64-cxmj}\n", "", 7);
    CASE_BAD("{type: ghsa, value: GHSA-8hc4-vh64-cxmj}", "{type: ghsa}", 8);
    CASE_BAD("{type: ghsa, value: GHSA-8hc4-vh64-cxmj}", "{value: GHSA-8hc4-vh64-cxmj}", 8);
    CASE_BAD("  added_at: \"2026-05-12T14:00:00Z\"\n", "", 7);
    CASE_BAD("expected: {recipe_id: axios-bump-minor, cve_delta: -1, validator_verdict: pass}\n",
             "", 1);
    /* types */
    CASE_BAD("title: Axios SSRF, minor bump available", "title:", 3);
    CASE_BAD("title: Axios SSRF, minor bump available", "title: ''", 3);
    CASE_BAD("title: Axios SSRF, minor bump available", "title: true", 3);
    CASE_BAD("title: Axios SSRF, minor bump available", "title: [a]", 3);
    CASE_OK("title: Axios SSRF, minor bump available", "title: '12.5'");
    CASE_BAD("case_id: ghsa-2024-0001-axios-ssrf", "case_id: 2024", 2);
    CASE_OK("case_id: ghsa-2024-0001-axios-ssrf", "case_id: '2024'");
    check_edit(K_CASE, "origin:", "expected:", "origin: curated\n", BD_E_CASE_SCHEMA, 6);
    CASE_BAD("{type: ghsa, value: GHSA-8hc4-vh64-cxmj}", "[ghsa, x]", 8);
    CASE_BAD("value: GHSA-8hc4-vh64-cxmj", "value: 12345", 8);
    CASE_OK("value: GHSA-8hc4-vh64-cxmj", "value: '12345'");
    CASE_BAD("expected: {recipe_id: axios-bump-minor, cve_delta: -1, validator_verdict: pass}",
             "expected: pass", 10);
    CASE_BAD("expected: {recipe_id: axios-bump-minor, cve_delta: -1, validator_verdict: pass}",
             "expected:", 10);
    CASE_OK("expected: {recipe_id: axios-bump-minor, cve_delta: -1, validator_verdict: pass}",
            "expected: {}");
    CASE_BAD("rubric_limits: {wall_clock_seconds: 90}", "rubric_limits: 90", 11);
    /* enums */
    CASE_BAD("disposition: positive", "disposition: Positive", 4);
    CASE_OK("disposition: positive", "disposition: ambiguous");
    CASE_BAD("difficulty: easy", "difficulty: trivial", 5);
    CASE_OK("difficulty: easy", "difficulty: medium");
    CASE_BAD("  source: curated", "  source: scraped", 7);
    CASE_OK("  source: curated", "  source: outcome-ledger-derived");
    CASE_OK("{type: ghsa,", "{type: ledger,");
    CASE_OK("{type: ghsa,", "{type: synthetic,");
    CASE_BAD("{type: ghsa,", "{type: GHSA,", 8);
    /* timestamps */
    static const char *const bad_times[] = {"\"2026-05-12 14:00:00Z\"",
                                            "\"2026-05-12T14:00:00\"",
                                            "\"2026-05-12T14:00:00.5Z\"",
                                            "\"2026-13-01T00:00:00Z\"",
                                            "\"2026-00-10T00:00:00Z\"",
                                            "\"2026-04-31T00:00:00Z\"",
                                            "\"2026-05-12T24:00:00Z\"",
                                            "\"2026-05-12T14:60:00Z\"",
                                            "\"2026-05-12T14:00:60Z\"",
                                            "\"1900-02-29T00:00:00Z\"",
                                            "\"26-05-12T14:00:00Z\"",
                                            "\"2026-5-12T14:00:00Z\"",
                                            "\"2026-05-12t14:00:00z\"",
                                            "2026-05-12",
                                            "\"2026-05-00T00:00:00Z\"",
                                            "\"0000-01-01T00:00:00Z\"",
                                            "1778594400",
                                            "\"\""};
    for (size_t i = 0; i < sizeof(bad_times) / sizeof(bad_times[0]); i++) {
        char repl[96];
        snprintf(repl, sizeof(repl), "added_at: %s", bad_times[i]);
        CASE_BAD("added_at: \"2026-05-12T14:00:00Z\"", repl, 9);
    }
    CASE_OK("added_at: \"2026-05-12T14:00:00Z\"", "added_at: \"2000-02-29T00:00:00Z\"");
    CASE_OK("added_at: \"2026-05-12T14:00:00Z\"", "added_at: 2026-12-31T23:59:59Z");
    /* rubric_limits */
    CASE_OK("rubric_limits: {wall_clock_seconds: 90}", "rubric_limits: {wall_clock_seconds: 300}");
    CASE_OK("rubric_limits: {wall_clock_seconds: 90}", "rubric_limits: {memory_mb: 4096}");
    CASE_OK("rubric_limits: {wall_clock_seconds: 90}", "rubric_limits: null");
    CASE_OK("rubric_limits: {wall_clock_seconds: 90}\n", "");
    CASE_BAD("rubric_limits: {wall_clock_seconds: 90}", "rubric_limits: {wall_clock_seconds: 0}",
             11);
    CASE_BAD("rubric_limits: {wall_clock_seconds: 90}", "rubric_limits: {memory_mb: 4097}", 11);
    CASE_BAD("rubric_limits: {wall_clock_seconds: 90}",
             "rubric_limits: {wall_clock_seconds: 99999999999999999999}", 11);
    /* the cassette digest */
    CASE_OK("cassette_digest: " D2, "cassette_digest: null");
    CASE_OK("cassette_digest: " D2 "\n", "");
    CASE_OK("cassette_digest: " D2, "cassette_digest: ~");
    CASE_OK("cassette_digest: " D2, "cassette_digest: \"" D2 "\"");
    CASE_BAD("cassette_digest: " D2, "cassette_digest: 'null'", 12);
    CASE_BAD("cassette_digest: " D2, "cassette_digest: ''", 12);
    CASE_BAD("cassette_digest: " D2, "cassette_digest: 'blake3:'", 12);
    CASE_BAD("cassette_digest: " D2, "cassette_digest: " D2 "0", 12);
    CASE_BAD("cassette_digest: " D2,
             "cassette_digest: BLAKE3:a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c"
             "6d7e8f90",
             12);
    CASE_BAD("cassette_digest: " D2,
             "cassette_digest: blake3:a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c"
             "6d7e8f9g",
             12);
    CASE_BAD("cassette_digest: " D2, "cassette_digest: [" D2 "]", 12);
    /* case_id */
    check_mut(K_CASE, "case_id: ghsa-2024-0001-axios-ssrf", "case_id: x..y", BD_E_BAD_ID, 2);
    check_mut(K_CASE, "case_id: ghsa-2024-0001-axios-ssrf", "case_id: ''", BD_E_CASE_SCHEMA, 2);
}

/* ---- provenance.yaml rules ---------------------------------------------------------- */

static void test_provenance_rules(void **state)
{
    (void)state;
    PROV_BAD("schema_version: 2", "schema_version: 3", 2);
    PROV_BAD("schema_version: 2", "schema_version: '2'", 2);
    check_mut(K_PROV, "schema_version: 2", "schema_version: 1", BD_E_FORMAT_V1, 0);
    /* unknown keys, v1 key names included */
    PROV_BAD("last_validated_at:", "comment: x\nlast_validated_at:", 23);
    PROV_BAD("  identity: bob@example.org", "  identity: bob@example.org\n  key: x", 15);
    PROV_BAD("author:", "added_by:", 3);
    PROV_BAD("reviewer:", "reviewed_by:", 13);
    /* timestamps */
    PROV_BAD("last_validated_at: \"2026-05-12T14:00:00Z\"", "last_validated_at: yesterday", 23);
    PROV_OK("last_validated_at: \"2026-05-12T14:00:00Z\"", "last_validated_at: null");
    PROV_OK("last_validated_at: \"2026-05-12T14:00:00Z\"\n", "");
    PROV_BAD("signed_at: \"2026-05-12T15:00:00Z\"", "signed_at: \"2026-05-12 15:00:00\"", 16);
    /* signature blocks */
    check_edit(K_PROV, "reviewer:", "last_validated_at", "reviewer: null\n", BD_OK, 0);
    check_edit(K_PROV, "reviewer:", "last_validated_at", "", BD_OK, 0);
    check_edit(K_PROV, "reviewer:", "last_validated_at", "reviewer: bob\n", BD_E_PROVENANCE_SCHEMA,
               13);
    check_edit(K_PROV, "reviewer:", "last_validated_at", "reviewer: [bob]\n",
               BD_E_PROVENANCE_SCHEMA, 13);
    PROV_BAD("  identity: alice@example.org\n", "", 4);
    PROV_BAD("  fingerprint: 6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4\n", "", 4);
    PROV_BAD("  signed_at: \"2026-05-12T14:00:00Z\"\n", "", 4);
    PROV_BAD("  identity: alice@example.org", "  identity: [alice]", 4);
    PROV_BAD("6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4", "6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a",
             5);
    PROV_BAD("6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4",
             "6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4a", 5);
    PROV_BAD("6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4", "0x1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4",
             5);
    /* A digits-only fingerprint is still a fingerprint. */
    PROV_OK("6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4", "1234567890123456789012345678901234567890");
    PROV_BAD("  signature: |\n    -----BEGIN PGP SIGNATURE-----\n\n"
             "    iHUEABYKAB0WIQRqHww7ni1HqLXE0+LxoLnI1+b1pAUCZkDGkAAKCRDX5vWkAAAA\n"
             "    =Qx7d\n    -----END PGP SIGNATURE-----\n",
             "  signature: ''\n", 7);
}

static void test_case_parse_expect_id_and_limits(void **state)
{
    (void)state;
    char *text = corpus_text("good_case.yaml");
    bd_err err = BD_ERR_INIT;
    bd_case *c = NULL;
    assert_int_equal(
        bd_case_parse(&c, text, strlen(text), "mem", "ghsa-2024-0001-axios-ssrf", &err), 0);
    assert_string_equal(c->path, "mem");
    bd_case_free(c);
    assert_int_equal(bd_case_parse(&c, text, strlen(text), "mem", "other", &err), -1);
    assert_int_equal(err.code, BD_E_CASE_ID_MISMATCH);
    /* YAML limits pass through the typed loader with their own codes. */
    char *dup = subst(text, "title: Axios", "title: x\ntitle: Axios");
    assert_int_equal(bd_case_parse(&c, dup, strlen(dup), "mem", NULL, &err), -1);
    assert_int_equal(err.code, BD_E_YAML_DUPLICATE_KEY);
    assert_int_equal(err.line, 4);
    free(dup);
    assert_int_equal(bd_case_parse(&c, text, strlen(text) + 1, "mem", NULL, &err), -1);
    assert_int_equal(err.code, BD_E_YAML_ENCODING); /* the trailing NUL */
    free(text);
}

/* ---- digests.yaml and trusted-signers.yaml rules ----------------------------------- */

static void test_digests_rules(void **state)
{
    (void)state;
    DIG_BAD("schema_version: 2", "schema_version: 0", 1);
    check_mut(K_DIGESTS, "schema_version: 2", "schema_version: 1", BD_E_FORMAT_V1, 0);
    check_mut(K_DIGESTS, "task_class: " D3, "rubric: " D3, BD_E_FORMAT_V1, 0);
    DIG_BAD("cases:", "pins: {}\ncases:", 3);
    DIG_BAD("task_class: " D3, "task_class: null", 2);
    DIG_BAD("task_class: " D3, "task_class: sha256:abc", 2);
    DIG_BAD("task_class: " D3 "\n", "", 1);
    DIG_BAD("cases:\n  ghsa-2024-0001-axios-ssrf: " D1 "\n  ghsa-2023-0042-lodash-proto: " D2 "\n",
            "", 1);
    check_edit(K_DIGESTS, "cases:", "", "cases: [a]\n", BD_E_DIGESTS_SCHEMA, 3);
    check_edit(K_DIGESTS, "cases:", "", "cases: " D1 "\n", BD_E_DIGESTS_SCHEMA, 3);
    DIG_BAD("ghsa-2024-0001-axios-ssrf: " D1, "ghsa-2024-0001-axios-ssrf: [" D1 "]", 4);
    DIG_BAD("ghsa-2024-0001-axios-ssrf: " D1, "ghsa-2024-0001-axios-ssrf: {d: x}", 4);
    /* Case ids in pins: names, before anything else is trusted. */
    static const char *const bad_ids[] = {"../x", "a/b", ".hidden", "UPPER", "'a b'", "\"\""};
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
        char repl[64];
        snprintf(repl, sizeof(repl), "%s:", bad_ids[i]);
        check_mut(K_DIGESTS, "ghsa-2023-0042-lodash-proto:", repl, BD_E_BAD_ID, 5);
    }
    char long_id[140];
    memset(long_id, 'a', 129);
    strcpy(long_id + 129, ":");
    check_mut(K_DIGESTS, "ghsa-2023-0042-lodash-proto:", long_id, BD_E_BAD_ID, 5);
    /* Unique ids: a repeated pin is a duplicate key. */
    check_mut(K_DIGESTS, "ghsa-2023-0042-lodash-proto:", "'ghsa-2024-0001-axios-ssrf':",
              BD_E_YAML_DUPLICATE_KEY, 5);
}

static void test_signers_rules(void **state)
{
    (void)state;
    SIG_BAD("schema_version: 1", "schema_version: '1'", 1);
    SIG_BAD("signers:", "keys: []\nsigners:", 2);
    SIG_BAD("signers:\n", "signerz:\n", 2);
    SIG_BAD("identity: bob@example.org,", "identity: bob@example.org, email: b,", 4);
    SIG_BAD("identity: bob@example.org, ", "", 4);
    SIG_BAD(", roles: [reviewer]", "", 4);
    SIG_BAD("{fingerprint: 0F9E8D7C6B5A49382716F5E4D3C2B1A09F8E7D6C, ", "{", 4);
    SIG_BAD("roles: [reviewer]", "roles: reviewer", 4);
    SIG_BAD("roles: [reviewer]", "roles: [reviewer, reviewer]", 4);
    SIG_BAD("roles: [reviewer]", "roles: [Reviewer]", 4);
    SIG_BAD(FB, "0F9E8D7C6B5A49382716F5E4D3C2B1A09F8E7D6Z", 4);
    SIG_BAD(FB, "0F9E8D7C6B5A4938 2716F5E4D3C2B1A09F8E7D6", 4);
    SIG_BAD("  - {fingerprint: " FB, "  - x\n  - {fingerprint: " FB, 4);
    /* Fingerprints are compared upper-cased: the same key in two cases is a repeat. */
    SIG_BAD(FB, "6a1f0c3b9e2d47a8b5c4d3e2f1a0b9c8d7e6f5a4", 4);
    check_mut(K_SIGNERS, "roles: [reviewer]", "roles: [author]", BD_OK, 0);
}

/* ---- JSON --------------------------------------------------------------------------- */

static void test_ynode_to_json(void **state)
{
    (void)state;
    const char *y = "n1: null\nn2: ~\nn3:\nn4: 'null'\n"
                    "b1: true\nb2: False\nb3: TRUE\nb4: yes\nb5: 'true'\n"
                    "i1: 42\ni2: -7\ni3: 0o17\ni4: 0x1F\ni5: '42'\ni6: 9007199254740993\n"
                    "i7: 99999999999999999999999\ni8: +3\n"
                    "f1: 1.5\nf2: -.5e3\nf3: .inf\nf4: -.Inf\nf5: .nan\nf6: 1e999\nf7: 2.\n"
                    "s1: hello\ns2: \"multi\\nline\"\ns3: 1.2.3\ns4: 0o9\n"
                    "seq: [1, a, {k: v}]\nmap: {x: [], y: {}}\n";
    bd_err err = BD_ERR_INIT;
    bd_ydoc *doc = NULL;
    assert_int_equal(bd_ydoc_parse(&doc, y, strlen(y), "j", &err), 0);
    cJSON *j = bd_ynode_to_json(doc->root);
    assert_non_null(j);
#define ITEM(k) cJSON_GetObjectItemCaseSensitive(j, k)
    assert_true(cJSON_IsNull(ITEM("n1")));
    assert_true(cJSON_IsNull(ITEM("n2")));
    assert_true(cJSON_IsNull(ITEM("n3")));
    assert_string_equal(cJSON_GetStringValue(ITEM("n4")), "null");
    assert_true(cJSON_IsTrue(ITEM("b1")));
    assert_true(cJSON_IsFalse(ITEM("b2")));
    assert_true(cJSON_IsTrue(ITEM("b3")));
    assert_string_equal(cJSON_GetStringValue(ITEM("b4")), "yes"); /* YAML 1.2, not 1.1 */
    assert_string_equal(cJSON_GetStringValue(ITEM("b5")), "true");
    assert_true(cJSON_GetNumberValue(ITEM("i1")) == 42.0);
    assert_true(cJSON_GetNumberValue(ITEM("i2")) == -7.0);
    assert_true(cJSON_GetNumberValue(ITEM("i3")) == 15.0);
    assert_true(cJSON_GetNumberValue(ITEM("i4")) == 31.0);
    assert_string_equal(cJSON_GetStringValue(ITEM("i5")), "42");
    /* Past 2^53 or past 64 bits: kept as text, never silently rounded. */
    assert_string_equal(cJSON_GetStringValue(ITEM("i6")), "9007199254740993");
    assert_string_equal(cJSON_GetStringValue(ITEM("i7")), "99999999999999999999999");
    assert_true(cJSON_GetNumberValue(ITEM("i8")) == 3.0);
    assert_true(cJSON_GetNumberValue(ITEM("f1")) == 1.5);
    assert_true(cJSON_GetNumberValue(ITEM("f2")) == -500.0);
    assert_string_equal(cJSON_GetStringValue(ITEM("f3")), ".inf");
    assert_string_equal(cJSON_GetStringValue(ITEM("f4")), "-.Inf");
    assert_string_equal(cJSON_GetStringValue(ITEM("f5")), ".nan");
    assert_string_equal(cJSON_GetStringValue(ITEM("f6")), "1e999");
    assert_true(cJSON_GetNumberValue(ITEM("f7")) == 2.0);
    assert_string_equal(cJSON_GetStringValue(ITEM("s1")), "hello");
    assert_string_equal(cJSON_GetStringValue(ITEM("s2")), "multi\nline");
    assert_string_equal(cJSON_GetStringValue(ITEM("s3")), "1.2.3");
    assert_string_equal(cJSON_GetStringValue(ITEM("s4")), "0o9");
    cJSON *seq = ITEM("seq");
    assert_int_equal(cJSON_GetArraySize(seq), 3);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(seq, 1)), "a");
    assert_true(cJSON_IsObject(cJSON_GetArrayItem(seq, 2)));
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(ITEM("map"), "x")));
    /* Document order is kept. */
    assert_string_equal(j->child->string, "n1");
#undef ITEM
    cJSON_Delete(j);
    j = bd_ynode_to_json(NULL);
    assert_true(cJSON_IsNull(j));
    cJSON_Delete(j);
    bd_ydoc_free(doc);
}

static void test_case_to_json(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_case *c = NULL;
    assert_int_equal(bd_case_load(&c, corpus_path("good_case.yaml"), NULL, &err), 0);
    cJSON *j = bd_case_to_json(c);
    assert_non_null(j);
    char *text = cJSON_PrintUnformatted(j);
    assert_non_null(text);
    /* Every key of case.yaml, as written (the JSON is the file, not the normalised struct). */
    assert_null(strstr(text, "signature"));
    cJSON *origin = cJSON_GetObjectItemCaseSensitive(j, "origin");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(origin, "source")), "curated");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(origin, "added_at")),
                        "2026-05-12T14:00:00Z");
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "schema_version")) == 2.0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "cassette_digest")), D2);
    assert_null(cJSON_GetObjectItem(j, "case_digest"));
    cJSON *exp = cJSON_GetObjectItemCaseSensitive(j, "expected");
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(exp, "cve_delta")) == -1.0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(exp, "validator_verdict")),
                        "pass");
    free(text);
    cJSON_Delete(j);
    bd_case_free(c);

    /* A draft: null stays null. */
    assert_int_equal(bd_case_load(&c, corpus_path("good_case_draft.yaml"), NULL, &err), 0);
    j = bd_case_to_json(c);
    assert_non_null(j);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "cassette_digest")));
    cJSON_Delete(j);
    bd_case_free(c);
    assert_null(bd_case_to_json(NULL));
}

/* ---- the bench on disk -------------------------------------------------------------- */

static char root[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void mkdirs(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    for (char *s = p + strlen(root) + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0700);
            *s = '/';
        }
    }
    mkdir(p, 0700);
}

static void put(const char *rel, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    FILE *f = fopen(p, "wb");
    if (!f)
        print_error("cannot write %s: %s\n", p, strerror(errno));
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *reg_named(const char *name)
{
    char *base = corpus_text("good_registration.yaml");
    char repl[200];
    snprintf(repl, sizeof(repl), "name: %s", name);
    char *t = subst(base, "name: vuln-remediation", repl);
    free(base);
    return t;
}

static void put_reg(const char *dir, const char *name)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof(rel), "%s/registration.yaml", dir);
    char *t = reg_named(name);
    put(rel, t);
    free(t);
}

static int setup_bench(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/bd-test-bench-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    /* bench/
     *   trusted-signers.yaml, README.md      files: not task classes
     *   keys/registration.yaml               `keys` is skipped
     *   zeta/, alpha/                        task classes (listed sorted)
     *   notes/                               no registration.yaml: not a task class
     *   .git/                                invalid name, no registration: ignored
     *   alpha/cases/<two cases>, digests.yaml, README (a file) */
    mkdirs("bench/keys");
    mkdirs("bench/zeta/cases");
    mkdirs("bench/alpha/cases/ghsa-2024-0001-axios-ssrf/input");
    mkdirs("bench/alpha/cases/ghsa-2023-0042-lodash-proto");
    mkdirs("bench/notes");
    mkdirs("bench/.git");
    mkdirs("sub/deeper");
    put("bench/trusted-signers.yaml", "schema_version: 1\nsigners: []\n");
    put("bench/README.md", "# bench\n");
    put("bench/keys/registration.yaml", "not: a task class\n");
    put_reg("bench/zeta", "zeta");
    put_reg("bench/alpha", "alpha");
    put("bench/alpha/cases/README", "cases live here\n");
    char *dig = corpus_text("good_digests.yaml");
    put("bench/alpha/cases/digests.yaml", dig);
    free(dig);
    char *c = corpus_text("good_case.yaml");
    put("bench/alpha/cases/ghsa-2024-0001-axios-ssrf/case.yaml", c);
    /* A case whose case_id disagrees with its directory. */
    put("bench/alpha/cases/ghsa-2023-0042-lodash-proto/case.yaml", c);
    free(c);
    return 0;
}

static int teardown_bench(void **state)
{
    (void)state;
    return nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_find_root(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    char *found = NULL;
    char real[PATH_MAX];
    assert_non_null(realpath(root, real));
    char sub[PATH_MAX + 32];
    snprintf(sub, sizeof(sub), "%s/sub/deeper", root);
    /* Walks up from a subdirectory. */
    assert_int_equal(bd_bench_find_root(&found, sub, false, &err), 0);
    assert_string_equal(found, real);
    free(found);
    /* -C must hold bench/ itself. */
    assert_int_equal(bd_bench_find_root(&found, sub, true, &err), -1);
    assert_null(found);
    assert_int_equal(err.code, BD_E_BENCH_NOT_FOUND);
    assert_int_equal(bd_bench_find_root(&found, root, true, &err), 0);
    assert_string_equal(found, real);
    free(found);
    /* From inside bench/alpha, the root is still the one holding bench/. */
    snprintf(sub, sizeof(sub), "%s/bench/alpha/cases", root);
    assert_int_equal(bd_bench_find_root(&found, sub, false, &err), 0);
    assert_string_equal(found, real);
    free(found);
    /* Nonexistent directory. */
    snprintf(sub, sizeof(sub), "%s/nope", root);
    assert_int_equal(bd_bench_find_root(&found, sub, false, &err), -1);
    assert_int_equal(err.code, BD_E_BENCH_NOT_FOUND);
    assert_int_equal(bd_bench_find_root(&found, sub, true, &err), -1);
    assert_int_equal(err.code, BD_E_BENCH_NOT_FOUND);
    /* Nowhere up the tree (the file system root holds no bench/ on a test machine). */
    struct stat st;
    if (stat("/bench", &st) == 0) {
        print_message("skipping the no-bench-anywhere check: /bench exists on this machine\n");
    } else {
        char lone[] = "/tmp/bd-test-bench-lone-XXXXXX";
        assert_non_null(mkdtemp(lone));
        assert_int_equal(bd_bench_find_root(&found, lone, false, &err), -1);
        assert_int_equal(err.code, BD_E_BENCH_NOT_FOUND);
        rmdir(lone);
    }
}

static void test_bench_open(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_bench *b = NULL;
    assert_int_equal(bd_bench_open(&b, root, &err), 0);
    assert_int_equal(b->n_task_classes, 2);
    assert_string_equal(b->task_classes[0], "alpha");
    assert_string_equal(b->task_classes[1], "zeta");
    assert_non_null(strstr(b->bench_dir, "/bench"));
    assert_int_equal(b->root[0], '/');
    bd_bench_free(b);
    bd_bench_free(NULL);

    /* A task-class directory with an invalid name is refused, not skipped. */
    mkdirs("bench/Bad_Name");
    put_reg("bench/Bad_Name", "alpha");
    assert_int_equal(bd_bench_open(&b, root, &err), -1);
    assert_null(b);
    assert_int_equal(err.code, BD_E_BAD_ID);
    assert_non_null(strstr(err.msg, "Bad_Name"));
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/bench/Bad_Name/registration.yaml", root);
    unlink(p);
    snprintf(p, sizeof(p), "%s/bench/Bad_Name", root);
    rmdir(p);

    /* A symlinked task class is refused, never followed. */
    char target[PATH_MAX], link[PATH_MAX];
    snprintf(target, sizeof(target), "%s/bench/alpha", root);
    snprintf(link, sizeof(link), "%s/bench/beta", root);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(bd_bench_open(&b, root, &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    unlink(link);

    /* No bench/ at all. */
    snprintf(p, sizeof(p), "%s/sub", root);
    assert_int_equal(bd_bench_open(&b, p, &err), -1);
    assert_int_equal(err.code, BD_E_BENCH_NOT_FOUND);
}

static void test_task_class_load(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_bench *b = NULL;
    bd_task_class *tc = NULL;
    assert_int_equal(bd_bench_open(&b, root, &err), 0);

    assert_int_equal(bd_task_class_load(&tc, b, "alpha", &err), 0);
    assert_string_equal(tc->name, "alpha");
    assert_string_equal(tc->reg->name, "alpha");
    assert_non_null(strstr(tc->dir, "/bench/alpha"));
    assert_non_null(strstr(tc->cases_dir, "/bench/alpha/cases"));
    assert_non_null(strstr(tc->rubric_path, "/bench/alpha/rubric.py"));
    assert_non_null(tc->digests);
    assert_int_equal(tc->digests->n_pins, 2);
    /* Directories only, sorted; digests.yaml and README are not cases. */
    assert_int_equal(tc->n_cases, 2);
    assert_string_equal(tc->case_ids[0], "ghsa-2023-0042-lodash-proto");
    assert_string_equal(tc->case_ids[1], "ghsa-2024-0001-axios-ssrf");

    bd_case *c = NULL;
    assert_int_equal(bd_task_class_case(&c, tc, "ghsa-2024-0001-axios-ssrf", &err), 0);
    assert_string_equal(c->title, "Axios SSRF, minor bump available");
    assert_non_null(strstr(c->path, "cases/ghsa-2024-0001-axios-ssrf/case.yaml"));
    bd_case_free(c);
    assert_int_equal(bd_task_class_case(&c, tc, "ghsa-2023-0042-lodash-proto", &err), -1);
    assert_null(c);
    assert_int_equal(err.code, BD_E_CASE_ID_MISMATCH);
    assert_int_equal(err.line, 2);
    assert_int_equal(bd_task_class_case(&c, tc, "ghsa-9999", &err), -1);
    assert_int_equal(err.code, BD_E_UNKNOWN_CASE);
    static const char *const bad[] = {"../alpha", "a/b", ".hidden", "UPPER", "", "x..y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(bd_task_class_case(&c, tc, bad[i], &err), -1);
        assert_int_equal(err.code, BD_E_BAD_ID);
    }
    bd_task_class_free(tc);

    /* zeta: no digests.yaml, no cases. */
    assert_int_equal(bd_task_class_load(&tc, b, "zeta", &err), 0);
    assert_null(tc->digests);
    assert_int_equal(tc->n_cases, 0);
    assert_int_equal(bd_task_class_case(&c, tc, "anything", &err), -1);
    assert_int_equal(err.code, BD_E_UNKNOWN_CASE);
    bd_task_class_free(tc);
    bd_task_class_free(NULL);

    /* Unknown task classes. */
    assert_int_equal(bd_task_class_load(&tc, b, "gamma", &err), -1);
    assert_null(tc);
    assert_int_equal(err.code, BD_E_UNKNOWN_TASK_CLASS);
    assert_int_equal(bd_task_class_load(&tc, b, "notes", &err), -1);
    assert_int_equal(err.code, BD_E_UNKNOWN_TASK_CLASS);

    /* Bad names are refused before any file is opened: these all exist on disk with a
     * registration.yaml that would load (bench/../x, bench/UPPER, ...), yet each one is
     * case.bad_id. */
    mkdirs("x");
    put_reg("x", "x");
    mkdirs("bench/UPPER");
    put_reg("bench/UPPER", "UPPER");
    mkdirs("bench/.hidden");
    put_reg("bench/.hidden", "hidden");
    mkdirs("bench/alpha/sub");
    put_reg("bench/alpha/sub", "sub");
    char long129[130];
    memset(long129, 'a', 129);
    long129[129] = '\0';
    const char *const bad_tc[] = {"../x", "alpha/sub", ".hidden", "UPPER", long129, "", "."};
    for (size_t i = 0; i < sizeof(bad_tc) / sizeof(bad_tc[0]); i++) {
        assert_int_equal(bd_task_class_load(&tc, b, bad_tc[i], &err), -1);
        assert_null(tc);
        if (err.code != BD_E_BAD_ID)
            print_error("'%s': %s\n", bad_tc[i], err.msg);
        assert_int_equal(err.code, BD_E_BAD_ID);
    }
    assert_int_equal(bd_task_class_load(&tc, b, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_BAD_ID);
    char p[PATH_MAX];
    static const char *const cleanup[] = {"x", "bench/UPPER", "bench/.hidden", "bench/alpha/sub"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s/%s/registration.yaml", root, cleanup[i]);
        unlink(p);
        snprintf(p, sizeof(p), "%s/%s", root, cleanup[i]);
        rmdir(p);
    }

    /* registration.yaml whose name disagrees with its directory. */
    put_reg("bench/zeta", "alpha");
    assert_int_equal(bd_task_class_load(&tc, b, "zeta", &err), -1);
    assert_int_equal(err.code, BD_E_REGISTRATION_SCHEMA);
    assert_int_equal(err.line, 2);
    put_reg("bench/zeta", "zeta");

    /* A broken digests.yaml fails the load with its own code. */
    put("bench/zeta/cases/digests.yaml", "schema_version: 2\ntask_class: nope\ncases: {}\n");
    assert_int_equal(bd_task_class_load(&tc, b, "zeta", &err), -1);
    assert_int_equal(err.code, BD_E_DIGESTS_SCHEMA);
    assert_int_equal(err.line, 2);
    snprintf(p, sizeof(p), "%s/bench/zeta/cases/digests.yaml", root);
    unlink(p);

    /* Invalid case directory names are refused; symlinked cases are never followed. */
    mkdirs("bench/zeta/cases/Bad Case");
    assert_int_equal(bd_task_class_load(&tc, b, "zeta", &err), -1);
    assert_int_equal(err.code, BD_E_BAD_ID);
    snprintf(p, sizeof(p), "%s/bench/zeta/cases/Bad Case", root);
    rmdir(p);
    char target[PATH_MAX];
    snprintf(target, sizeof(target), "%s/bench/alpha/cases/ghsa-2024-0001-axios-ssrf", root);
    snprintf(p, sizeof(p), "%s/bench/zeta/cases/linked", root);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(bd_task_class_load(&tc, b, "zeta", &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    unlink(p);
    assert_int_equal(bd_task_class_load(&tc, b, "zeta", &err), 0);
    bd_task_class_free(tc);

    /* A symlinked task-class directory is refused, never followed. */
    snprintf(target, sizeof(target), "%s/bench/zeta", root);
    snprintf(p, sizeof(p), "%s/bench/omega", root);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(bd_task_class_load(&tc, b, "omega", &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    unlink(p);

    /* A case directory swapped for a symlink (or removed) after the listing. */
    assert_int_equal(bd_task_class_load(&tc, b, "alpha", &err), 0);
    char moved[PATH_MAX];
    snprintf(p, sizeof(p), "%s/bench/alpha/cases/ghsa-2024-0001-axios-ssrf", root);
    snprintf(moved, sizeof(moved), "%s/moved-case", root);
    assert_int_equal(rename(p, moved), 0);
    assert_int_equal(bd_task_class_case(&c, tc, "ghsa-2024-0001-axios-ssrf", &err), -1);
    assert_int_equal(err.code, BD_E_UNKNOWN_CASE);
    assert_int_equal(symlink(moved, p), 0);
    assert_int_equal(bd_task_class_case(&c, tc, "ghsa-2024-0001-axios-ssrf", &err), -1);
    assert_null(c);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    unlink(p);
    assert_int_equal(rename(moved, p), 0);
    assert_int_equal(bd_task_class_case(&c, tc, "ghsa-2024-0001-axios-ssrf", &err), 0);
    bd_case_free(c);
    bd_task_class_free(tc);

    /* A symlinked registration.yaml is refused by the reader. */
    snprintf(p, sizeof(p), "%s/bench/zeta/registration.yaml", root);
    snprintf(target, sizeof(target), "%s/bench/zeta/registration.real", root);
    assert_int_equal(rename(p, target), 0);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(bd_task_class_load(&tc, b, "zeta", &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    unlink(p);
    assert_int_equal(rename(target, p), 0);
    bd_bench_free(b);
}

/* ---- digests.yaml: the line reader and the YAML parser agree -------------------------- */

/* Both readers on the same bytes: both fail with the same code, or both give the same
 * pins (ids, digests, lines) and task-class digest. */
static void same_reading(const char *text)
{
    bd_digests *a = NULL, *b = NULL;
    bd_err ea = BD_ERR_INIT, eb = BD_ERR_INIT;
    int ra = bd_digests_parse(&a, text, strlen(text), "digests.yaml", &ea);
    int rb = bd_digests_parse_yaml(&b, text, strlen(text), "digests.yaml", &eb);
    if (ra != rb)
        print_error("readers disagree on:\n%s\n(%s / %s)\n", text, ea.msg, eb.msg);
    assert_int_equal(ra, rb);
    if (ra != 0) {
        assert_int_equal(ea.code, eb.code);
        return;
    }
    assert_int_equal(a->schema_version, b->schema_version);
    assert_string_equal(a->task_class, b->task_class);
    assert_int_equal(a->n_pins, b->n_pins);
    for (size_t i = 0; i < a->n_pins; i++) {
        assert_string_equal(a->pins[i].case_id, b->pins[i].case_id);
        assert_string_equal(a->pins[i].digest, b->pins[i].digest);
        assert_int_equal(a->pins[i].line, b->pins[i].line);
    }
    bd_digests_free(a);
    bd_digests_free(b);
}

#define CD1 "blake3:1111111111111111111111111111111111111111111111111111111111111111"
#define CD2 "blake3:2222222222222222222222222222222222222222222222222222222222222222"

static void test_digests_canonical(void **state)
{
    (void)state;
    static const char *const texts[] = {
        /* as pin writes it */
        "# Pins written by `benchdesk pin`.\nschema_version: 2\ntask_class: " CD1
        "\ncases:\n  a: " CD1 "\n  b.c-d_e: " CD2 "\n  z9: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases: {}\n",
        "# one\n# two\nschema_version: 2\ntask_class: " CD2 "\ncases:\n  0: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  null: " CD1 "\n  true: " CD2 "\n",
        /* everything else goes the YAML way, with the same outcome */
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  b: " CD1 "\n  a: " CD2 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1 "\n  a: " CD2 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: \"" CD1 "\"\n",
        "schema_version: 2\r\ntask_class: " CD1 "\r\ncases:\r\n  a: " CD1 "\r\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1 " # c\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1,
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  A: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: blake3:12\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  ..: " CD1 "\n",
        "# caf\xc3\xa9\nschema_version: 2\ntask_class: " CD1 "\ncases: {}\n",
        "# bad \xff\nschema_version: 2\ntask_class: " CD1 "\ncases: {}\n",
        "schema_version: 1\ntask_class: " CD1 "\ncases: {}\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases: {}\nextra: 1\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n   a: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a:  " CD1 "\n",
        /* the order test compares bytes: a prefix sorts first, equal ids are a repeat */
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1 "\n  a-b: " CD2 "\n  ab: " CD1
        "\n  b: " CD2 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a-b: " CD1 "\n  a: " CD2 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  ab: " CD1 "\n  a: " CD2 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1 "\n  b: " CD2 "\n  b: " CD1
        "\n",
        /* ids: the characters, the '..', the length (128 fits, 129 does not) */
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  9.a_b-c: " CD1 "\n  a-: " CD2 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a..b: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a.b: " CD1 "\n  a.b.: " CD2 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  -a: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  _a: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a/b: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a : " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a:\t" CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  "
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: " CD1 "\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  "
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: " CD1 "\n",
        /* digests: the prefix, lower-case hex only, exactly 64 digits */
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: blake3:"
        "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: blake3:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: blake3:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: blake2:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: blake3:"
        "0123456789abcdef0123456789abcdeg0123456789abcdef0123456789abcdef\n",
        "schema_version: 2\ntask_class: blake3:"
        "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\ncases: {}\n",
        /* lines: a trailing blank line, a pin line cut short */
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1 "\n\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1 "\n  b\n",
        "schema_version: 2\ntask_class: " CD1 "\ncases:\n  a: " CD1 "\n  b: blake3:12\n",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        same_reading(texts[i]);
    /* A long generated file, as pin writes it. */
    size_t cap = 200 * 100 + 256, off = 0;
    char *big = malloc(cap);
    assert_non_null(big);
    off += (size_t)snprintf(big, cap, "schema_version: 2\ntask_class: %s\ncases:\n", CD1);
    for (int i = 0; i < 100; i++)
        off += (size_t)snprintf(big + off, cap - off, "  case-%04d: %s\n", i, i % 2 ? CD1 : CD2);
    same_reading(big);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_valid),
        cmocka_unit_test(test_path_join_and_enums),
        cmocka_unit_test(test_good_registration),
        cmocka_unit_test(test_good_case),
        cmocka_unit_test(test_good_provenance),
        cmocka_unit_test(test_good_digests_and_signers),
        cmocka_unit_test(test_corpus_manifest),
        cmocka_unit_test(test_corpus_oversize),
        cmocka_unit_test(test_registration_rules),
        cmocka_unit_test(test_registration_run),
        cmocka_unit_test(test_registration_sut_default_wall_clock),
        cmocka_unit_test(test_case_rules),
        cmocka_unit_test(test_provenance_rules),
        cmocka_unit_test(test_case_parse_expect_id_and_limits),
        cmocka_unit_test(test_digests_rules),
        cmocka_unit_test(test_digests_canonical),
        cmocka_unit_test(test_signers_rules),
        cmocka_unit_test(test_ynode_to_json),
        cmocka_unit_test(test_case_to_json),
        cmocka_unit_test_setup_teardown(test_find_root, setup_bench, teardown_bench),
        cmocka_unit_test_setup_teardown(test_bench_open, setup_bench, teardown_bench),
        cmocka_unit_test_setup_teardown(test_task_class_load, setup_bench, teardown_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
