/*
 * test_digest.c — digests of case directories and files (docs/formats.md#digests).
 *
 * The fixture trees are built here exactly as tests/kat/make_fixtures.py builds them; the
 * expected digests come from the independent reference (python stream + b3sum). To
 * regenerate them, from the source root:
 *
 *   d=$(mktemp -d) && python3 tests/kat/make_fixtures.py "$d" >/dev/null &&
 *   for f in empty basic sort unicode big; do
 *       echo "$f $(python3 tests/kat/case_digest.py "$d/$f")"; done; rm -rf "$d"
 *
 * Adversarial cases (links, FIFOs, sockets, devices, unreadable files, files swapped or
 * resized mid-digest, depth and path limits) each assert the exact error code.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include <cmocka.h>

#include "digest.h"

/* ---- expected values (see the command above) ------------------------------------- */

#define KAT_EMPTY   "blake3:8c22b023d07bae20bcec56f47028dce525afd8fee39f10da3e6ac4a4ad89a9bc"
#define KAT_BASIC   "blake3:da9980035bf1720a31fec4d8d4179b2b55b768e9511d7b52d9bbdb0cf1447584"
#define KAT_SORT    "blake3:3ffbcc0d2b83ec3c172ffa73f23aa1049205e330dc18d6893f73cb1466d2573b"
#define KAT_UNICODE "blake3:527ca60d8edd0e95af2ba10098e62cc6507cae43331c6315a8e29b08c30811fb"
#define KAT_BIG     "blake3:ddc6801c7e8ac18fc502927277d9ed40b265480cf4360afc98f5b2b80abc21a8"
/* The task-class fixture "tclass" of make_fixtures.py (registration.yaml + rubric.py). */
#define KAT_TCLASS "blake3:4c20f553fd4d32a3fd88702f7d5dbd94bb6a57071b1c3ba75325794081eb5622"

/* Published BLAKE3 test vectors. */
#define B3_EMPTY "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
#define B3_ABC   "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"

#define BIG_SIZE (3u * 1024u * 1024u + 12345u)

/* ---- fixture building (mirrors tests/kat/make_fixtures.py) ------------------------ */

typedef struct {
    const char *rel; /* ends in '/' for a directory */
    const char *data;
    size_t len;
    int lcg_seed; /* > 0: content is lcg_bytes(seed, lcg_len) */
    size_t lcg_len;
    mode_t mode;
} fx_entry;

#define FX_S(rel, str, mode)                                                                       \
    {                                                                                              \
        rel, str, sizeof(str) - 1, 0, 0, mode                                                      \
    }
#define FX_D(rel)                                                                                  \
    {                                                                                              \
        rel, NULL, 0, 0, 0, 0755                                                                   \
    }
#define FX_L(rel, seed, len, mode)                                                                 \
    {                                                                                              \
        rel, NULL, 0, seed, len, mode                                                              \
    }
#define FX_END                                                                                     \
    {                                                                                              \
        NULL, NULL, 0, 0, 0, 0                                                                     \
    }

static const fx_entry FX_EMPTY[] = {FX_END};
static const fx_entry FX_BASIC[] = {
    FX_S("case.yaml", "schema_version: 2\ncase_id: basic\n", 0644),
    FX_S("provenance.yaml", "schema_version: 2\n", 0644),
    FX_S("input/prompt.txt", "hello, bench\n", 0644),
    FX_S("expected/answer.txt", "42\n", 0644),
    FX_S("run.sh", "#!/bin/sh\necho hi\n", 0755),
    FX_S("tool", "u", 0700),
    FX_S("grp", "g", 0610),
    FX_S("oth", "o", 0601),
    FX_S("plain", "p", 0644),
    FX_S("empty.txt", "", 0644),
    FX_D("emptydir/"),
    FX_S("nested/case.yaml", "nested: true\n", 0644),
    FX_S("nested/provenance.yaml", "nested: signatures\n", 0644),
    FX_S("nested/deep/x/y/z.txt", "deep\n", 0644),
    FX_S(".hidden", "dot\n", 0644),
    FX_END,
};
static const fx_entry FX_SORT[] = {
    FX_S("a/b", "1", 0644),   FX_S("a/b.c", "2", 0644),
    FX_S("a/b-c", "3", 0644), FX_S("a/c/d", "4", 0644),
    FX_S("a.b", "5", 0644),   FX_S("a-b", "6", 0644),
    FX_S("a0", "7", 0644),    FX_S("ab", "8", 0644),
    FX_S("A", "9", 0644),     FX_S("b/x", "10", 0644),
    FX_S("b.x", "11", 0644),  FX_S("b0/x", "12", 0644),
    FX_S("b-/x", "13", 0644), FX_END,
};
static const fx_entry FX_UNICODE[] = {
    FX_S("donn\xc3\xa9"
         "es/r\xc3\xa9sum\xc3\xa9.txt",
         "\xc3\xa9\n", 0644),
    FX_S("\xe6\x97\xa5\xe6\x9c\xac.txt", "nihon\n", 0644),
    FX_S("\xce\xa9mega", "", 0755),
    FX_S("\xc3\xa9.txt", "composed\n", 0644),
    FX_S("e\xcc\x81.txt", "decomposed\n", 0644),
    FX_S("raw-\xff.bin", "\xff\x00\x01", 0644),
    FX_END,
};
static const fx_entry FX_BIG[] = {
    FX_S("case.yaml", "case_id: big\n", 0644),
    FX_S("provenance.yaml", "author: null\n", 0644),
    FX_L("big.bin", 1, BIG_SIZE, 0644),
    FX_L("chunk.bin", 2, 1024, 0644),
    FX_L("chunk1.bin", 3, 1025, 0755),
    FX_L("sub/mid.bin", 4, 65537, 0644),
    FX_END,
};

static void lcg_fill(uint8_t *out, int seed, size_t n)
{
    uint32_t x = (uint32_t)seed;
    for (size_t i = 0; i < n; i++) {
        x = (x * 1103515245u + 12345u) & 0x7fffffffu;
        out[i] = (uint8_t)((x >> 16) & 0xff);
    }
}

static char g_root[4096]; /* per-run temp dir, removed by the group teardown */
static int g_seq;

static char *join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    assert_non_null(p);
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

/* A fresh empty directory under the run's temp dir; caller frees. */
static char *fresh_dir(const char *tag)
{
    char name[128];
    snprintf(name, sizeof(name), "%s-%d", tag, ++g_seq);
    char *p = join(g_root, name);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(chmod(p, 0755), 0);
    return p;
}

static void mkdir_p(const char *path)
{
    char *p = strdup(path);
    assert_non_null(p);
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0755) != 0)
                assert_int_equal(errno, EEXIST);
            *s = '/';
        }
    }
    if (mkdir(p, 0755) != 0)
        assert_int_equal(errno, EEXIST);
    free(p);
}

static void write_bytes(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
    assert_int_equal(fchmod(fd, mode), 0);
    assert_int_equal(close(fd), 0);
}

/* Write root/rel, creating parent directories. */
static void put(const char *root, const char *rel, const void *data, size_t len, mode_t mode)
{
    char *full = join(root, rel);
    char *slash = strrchr(full, '/');
    *slash = '\0';
    mkdir_p(full);
    *slash = '/';
    write_bytes(full, data, len, mode);
    free(full);
}

static void put_str(const char *root, const char *rel, const char *s, mode_t mode)
{
    put(root, rel, s, strlen(s), mode);
}

static void build(const char *root, const fx_entry *fx)
{
    mkdir_p(root);
    assert_int_equal(chmod(root, 0755), 0);
    for (; fx->rel; fx++) {
        size_t rl = strlen(fx->rel);
        if (fx->rel[rl - 1] == '/') {
            char *full = join(root, fx->rel);
            mkdir_p(full);
            assert_int_equal(chmod(full, fx->mode), 0);
            free(full);
        } else if (fx->lcg_seed > 0) {
            uint8_t *buf = malloc(fx->lcg_len);
            assert_non_null(buf);
            lcg_fill(buf, fx->lcg_seed, fx->lcg_len);
            put(root, fx->rel, buf, fx->lcg_len, fx->mode);
            free(buf);
        } else {
            put(root, fx->rel, fx->data, fx->len, fx->mode);
        }
    }
}

/* Remove a tree through descriptors (works for paths longer than PATH_MAX and for
 * directories left unreadable). */
static void rm_at(int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        (void)fchmodat(dfd, name, 0700, 0);
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            DIR *d = fdopendir(fd);
            if (d) {
                struct dirent *de;
                while ((de = readdir(d)) != NULL) {
                    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        rm_at(dirfd(d), de->d_name);
                }
                closedir(d);
            } else {
                close(fd);
            }
        }
        (void)unlinkat(dfd, name, AT_REMOVEDIR);
    } else {
        (void)unlinkat(dfd, name, 0);
    }
}

static void rm_rf(const char *path)
{
    rm_at(AT_FDCWD, path);
}

static int group_setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0] || strlen(tmp) > 200)
        tmp = "/tmp";
    snprintf(g_root, sizeof(g_root), "%s/bd-digest-XXXXXX", tmp);
    if (!mkdtemp(g_root))
        return -1;
    /* Readable by the unprivileged user of the unreadable-file test. */
    return chmod(g_root, 0755);
}

static int group_teardown(void **state)
{
    (void)state;
    rm_rf(g_root);
    return 0;
}

/* ---- an independent in-memory entry stream (docs/formats.md#digests), small trees ---- */

typedef struct {
    uint8_t *p;
    size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const void *data, size_t len)
{
    if (b->len + len > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + len)
            nc *= 2;
        b->p = realloc(b->p, nc);
        assert_non_null(b->p);
        b->cap = nc;
    }
    if (len)
        memcpy(b->p + b->len, data, len);
    b->len += len;
}

static void sb_file(sbuf *b, char type, const char *rel, const char *data)
{
    char size[32];
    snprintf(size, sizeof(size), "%zu", strlen(data));
    sb_add(b, &type, 1);
    sb_add(b, "", 1);
    sb_add(b, rel, strlen(rel) + 1);
    sb_add(b, size, strlen(size) + 1);
    sb_add(b, data, strlen(data));
}

static void sb_digest(sbuf *b, char out[BD_DIGEST_BUF])
{
    bd_digest_bytes(out, b->p, b->len);
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* ---- helpers for assertions -------------------------------------------------------- */

static void digest_ok(const char *dir, char out[BD_DIGEST_BUF], uint64_t *bytes)
{
    bd_err err = BD_ERR_INIT;
    int rc = bd_digest_case_dir(out, dir, bytes, &err);
    if (rc != 0)
        print_error("unexpected failure: %s: %s\n", bd_code_str(err.code), err.msg);
    assert_int_equal(rc, 0);
    assert_true(bd_digest_str_valid(out));
}

/* Assert digesting `dir` fails with `code` and the message contains `needle`. */
static void digest_fails(const char *dir, bd_code code, const char *needle)
{
    char out[BD_DIGEST_BUF] = "untouched";
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_digest_case_dir(out, dir, NULL, &err), -1);
    if (err.code != code)
        print_error("got %s: %s\n", bd_code_str(err.code), err.msg);
    assert_string_equal(bd_code_str(err.code), bd_code_str(code));
    assert_string_equal(out, "untouched");
    assert_null(strchr(err.msg, '\n'));
    if (needle && !strstr(err.msg, needle)) {
        print_error("message lacks '%s': %s\n", needle, err.msg);
        fail();
    }
}

/* ---- known answers ---------------------------------------------------------------- */

static void check_fixture(const char *tag, const fx_entry *fx, const char *expected,
                          uint64_t expected_bytes)
{
    char *dir = fresh_dir(tag);
    build(dir, fx);
    char out[BD_DIGEST_BUF];
    uint64_t bytes = 12345;
    digest_ok(dir, out, &bytes);
    assert_string_equal(out, expected);
    assert_int_equal(bytes, expected_bytes);
    rm_rf(dir);
    free(dir);
}

static void test_kat_empty(void **state)
{
    (void)state;
    check_fixture("empty", FX_EMPTY, KAT_EMPTY, 0);
    /* An empty case is the digest of the header alone. */
    char hdr[BD_DIGEST_BUF];
    bd_digest_bytes(hdr, "benchdesk-case-v2\n", 18);
    assert_string_equal(hdr, KAT_EMPTY);
}

static void test_kat_basic(void **state)
{
    (void)state;
    /* every file but the top-level provenance.yaml (case.yaml included) */
    uint64_t bytes = 33 + 13 + 3 + 18 + 1 + 1 + 1 + 1 + 0 + 13 + 19 + 5 + 4;
    check_fixture("basic", FX_BASIC, KAT_BASIC, bytes);
}

static void test_kat_sort(void **state)
{
    (void)state;
    check_fixture("sort", FX_SORT, KAT_SORT, 17);
    /* The same digest from a stream written by hand in bytewise order of full paths
     * ("a-b" < "a.b" < "a/..." < "a0"), not per-directory order. */
    sbuf b = {0};
    char want[BD_DIGEST_BUF];
    sb_add(&b, "benchdesk-case-v2\n", 18);
    sb_file(&b, 'f', "A", "9");
    sb_file(&b, 'f', "a-b", "6");
    sb_file(&b, 'f', "a.b", "5");
    sb_file(&b, 'f', "a/b", "1");
    sb_file(&b, 'f', "a/b-c", "3");
    sb_file(&b, 'f', "a/b.c", "2");
    sb_file(&b, 'f', "a/c/d", "4");
    sb_file(&b, 'f', "a0", "7");
    sb_file(&b, 'f', "ab", "8");
    sb_file(&b, 'f', "b-/x", "13");
    sb_file(&b, 'f', "b.x", "11");
    sb_file(&b, 'f', "b/x", "10");
    sb_file(&b, 'f', "b0/x", "12");
    sb_digest(&b, want);
    assert_string_equal(want, KAT_SORT);
}

static void test_kat_unicode(void **state)
{
    (void)state;
    check_fixture("unicode", FX_UNICODE, KAT_UNICODE, 3 + 6 + 0 + 9 + 11 + 3);
}

static void test_kat_big(void **state)
{
    (void)state;
    check_fixture("big", FX_BIG, KAT_BIG, (uint64_t)BIG_SIZE + 1024 + 1025 + 65537 + 13);
}

/* The task-class digest: exactly registration.yaml and rubric.py, under its own header;
 * provenance.yaml, cases/ and any other file are outside it. */
static void test_kat_task_class(void **state)
{
    (void)state;
    char *dir = fresh_dir("tclass");
    put_str(dir, "registration.yaml", "schema_version: 2\nname: tclass\n", 0644);
    put_str(dir, "rubric.py", "print('{}')\n", 0755);
    put_str(dir, "provenance.yaml", "schema_version: 2\n", 0644);
    put_str(dir, "notes.txt", "not hashed\n", 0644);
    put_str(dir, "cases/digests.yaml", "schema_version: 2\n", 0644);
    char got[BD_DIGEST_BUF], want[BD_DIGEST_BUF];
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_digest_task_class_dir(got, dir, &err), 0);
    assert_string_equal(got, KAT_TCLASS);
    sbuf b = {0};
    sb_add(&b, "benchdesk-task-class-v2\n", 24);
    sb_file(&b, 'f', "registration.yaml", "schema_version: 2\nname: tclass\n");
    sb_file(&b, 'x', "rubric.py", "print('{}')\n");
    sb_digest(&b, want);
    assert_string_equal(got, want);
    /* Files outside the two change nothing; either of the two changes it. */
    put_str(dir, "notes.txt", "edited\n", 0644);
    put_str(dir, "provenance.yaml", "author: null\n", 0644);
    assert_int_equal(bd_digest_task_class_dir(got, dir, &err), 0);
    assert_string_equal(got, KAT_TCLASS);
    char *rub = join(dir, "rubric.py");
    assert_int_equal(chmod(rub, 0644), 0);
    assert_int_equal(bd_digest_task_class_dir(got, dir, &err), 0);
    assert_string_not_equal(got, KAT_TCLASS);
    assert_int_equal(chmod(rub, 0755), 0);
    put_str(dir, "registration.yaml", "schema_version: 2\nname: tclasz\n", 0644);
    assert_int_equal(bd_digest_task_class_dir(got, dir, &err), 0);
    assert_string_not_equal(got, KAT_TCLASS);
    /* A rubric that is a symbolic link is refused, never followed. */
    assert_int_equal(unlink(rub), 0);
    assert_int_equal(symlink("notes.txt", rub), 0);
    assert_int_equal(bd_digest_task_class_dir(got, dir, &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    free(rub);
    rm_rf(dir);
    free(dir);
}

/* The exec bit from any of user/group/other gives "x"; other mode bits don't matter. */
static void test_exec_bits_by_hand(void **state)
{
    (void)state;
    static const struct {
        mode_t mode;
        char type;
    } cases[] = {{0644, 'f'}, {0600, 'f'}, {0666, 'f'}, {0744, 'x'},
                 {0654, 'x'}, {0645, 'x'}, {0755, 'x'}, {04644, 'f'}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *dir = fresh_dir("mode");
        put_str(dir, "f", "data", 0644);
        char *f = join(dir, "f");
        assert_int_equal(chmod(f, cases[i].mode), 0);
        char got[BD_DIGEST_BUF], want[BD_DIGEST_BUF];
        digest_ok(dir, got, NULL);
        sbuf b = {0};
        sb_add(&b, "benchdesk-case-v2\n", 18);
        sb_file(&b, cases[i].type, "f", "data");
        sb_digest(&b, want);
        assert_string_equal(got, want);
        rm_rf(dir);
        free(f);
        free(dir);
    }
}

/* A top-level provenance.yaml that is a directory is not "the top-level provenance.yaml
 * file": what is below it is hashed. */
static void test_case_yaml_dir_included(void **state)
{
    (void)state;
    char *dir = fresh_dir("yamldir");
    put_str(dir, "provenance.yaml/x", "1", 0644);
    char got[BD_DIGEST_BUF], want[BD_DIGEST_BUF];
    digest_ok(dir, got, NULL);
    sbuf b = {0};
    sb_add(&b, "benchdesk-case-v2\n", 18);
    sb_file(&b, 'f', "provenance.yaml/x", "1");
    sb_digest(&b, want);
    assert_string_equal(got, want);
    rm_rf(dir);
    free(dir);
}

/* ---- what changes the digest, and what doesn't ------------------------------------ */

static void test_changes(void **state)
{
    (void)state;
    char *dir = fresh_dir("changes");
    build(dir, FX_BASIC);
    char base[BD_DIGEST_BUF], now[BD_DIGEST_BUF];
    digest_ok(dir, base, NULL);
    assert_string_equal(base, KAT_BASIC);
    char *plain = join(dir, "plain");
    char *plain2 = join(dir, "plain2");

    /* one byte */
    write_bytes(plain, "q", 1, 0644);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);
    write_bytes(plain, "p", 1, 0644);
    digest_ok(dir, now, NULL);
    assert_string_equal(now, base);

    /* one exec bit; a non-exec mode change is invisible */
    assert_int_equal(chmod(plain, 0645), 0);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);
    assert_int_equal(chmod(plain, 0664), 0);
    digest_ok(dir, now, NULL);
    assert_string_equal(now, base);
    assert_int_equal(chmod(plain, 0644), 0);

    /* a rename */
    assert_int_equal(rename(plain, plain2), 0);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);
    assert_int_equal(rename(plain2, plain), 0);

    /* a move to another directory, same name */
    put_str(dir, "expected/plain", "p", 0644);
    assert_int_equal(unlink(plain), 0);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);
    put_str(dir, "plain", "p", 0644);
    char *moved = join(dir, "expected/plain");
    assert_int_equal(unlink(moved), 0);
    free(moved);
    digest_ok(dir, now, NULL);
    assert_string_equal(now, base);

    /* an empty file is an entry */
    put_str(dir, "new-empty", "", 0644);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);
    char *ne = join(dir, "new-empty");
    assert_int_equal(unlink(ne), 0);
    free(ne);

    /* empty directories add nothing */
    char *ed = join(dir, "more/empty/dirs");
    mkdir_p(ed);
    free(ed);
    digest_ok(dir, now, NULL);
    assert_string_equal(now, base);

    /* the top-level provenance.yaml is outside the digest, edited or gone */
    put_str(dir, "provenance.yaml", "schema_version: 2\nauthor: null\n", 0644);
    digest_ok(dir, now, NULL);
    assert_string_equal(now, base);
    char *py = join(dir, "provenance.yaml");
    assert_int_equal(unlink(py), 0);
    free(py);
    digest_ok(dir, now, NULL);
    assert_string_equal(now, base);
    put_str(dir, "provenance.yaml", "schema_version: 2\n", 0644);

    /* case.yaml is inside it (format v2): one byte of it changes the digest */
    put_str(dir, "case.yaml", "schema_version: 2\ncase_id: basix\n", 0644);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);
    put_str(dir, "case.yaml", "schema_version: 2\ncase_id: basic\n", 0644);
    digest_ok(dir, now, NULL);
    assert_string_equal(now, base);

    /* a nested provenance.yaml is inside it, and so is a nested case.yaml */
    put_str(dir, "nested/provenance.yaml", "nested: forged\n", 0644);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);
    put_str(dir, "nested/provenance.yaml", "nested: signatures\n", 0644);
    put_str(dir, "nested/case.yaml", "nested: false\n", 0644);
    digest_ok(dir, now, NULL);
    assert_string_not_equal(now, base);

    free(plain);
    free(plain2);
    rm_rf(dir);
    free(dir);
}

/* ---- refused entries ---------------------------------------------------------------- */

static void test_symlink_to_file(void **state)
{
    (void)state;
    char *dir = fresh_dir("symf");
    build(dir, FX_BASIC);
    char *l = join(dir, "input/link");
    assert_int_equal(symlink("prompt.txt", l), 0);
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "'input/link' is a symbolic link");
    free(l);
    rm_rf(dir);
    free(dir);
}

static void test_symlink_to_dir(void **state)
{
    (void)state;
    char *dir = fresh_dir("symd");
    build(dir, FX_BASIC);
    char *l = join(dir, "nested/deep/up");
    assert_int_equal(symlink("..", l), 0);
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "'nested/deep/up' is a symbolic link");
    free(l);
    rm_rf(dir);
    free(dir);
}

static void test_dangling_symlink(void **state)
{
    (void)state;
    char *dir = fresh_dir("dangle");
    put_str(dir, "a", "1", 0644);
    char *l = join(dir, "zz");
    assert_int_equal(symlink("/nonexistent/target", l), 0);
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "'zz' is a symbolic link");
    free(l);
    rm_rf(dir);
    free(dir);
}

/* "Anywhere" includes the excluded top-level provenance.yaml. */
static void test_symlink_case_yaml(void **state)
{
    (void)state;
    char *dir = fresh_dir("symyaml");
    put_str(dir, "real.yaml", "x: 1\n", 0644);
    char *l = join(dir, "provenance.yaml");
    assert_int_equal(symlink("real.yaml", l), 0);
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "'provenance.yaml' is a symbolic link");
    free(l);
    rm_rf(dir);
    free(dir);
}

static void test_fifo(void **state)
{
    (void)state;
    char *dir = fresh_dir("fifo");
    build(dir, FX_BASIC);
    char *p = join(dir, "expected/pipe");
    assert_int_equal(mkfifo(p, 0644), 0);
    /* must not block on the FIFO */
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "'expected/pipe' is a FIFO");
    free(p);
    rm_rf(dir);
    free(dir);
}

static void test_socket(void **state)
{
    (void)state;
    char *dir = fresh_dir("sock");
    put_str(dir, "a", "1", 0644);
    char *p = join(dir, "s");
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(p) >= sizeof(sa.sun_path)) {
        print_message("SKIP socket test: temp path too long for a unix socket: %s\n", p);
        free(p);
        rm_rf(dir);
        free(dir);
        skip();
        return;
    }
    memcpy(sa.sun_path, p, strlen(p) + 1);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s >= 0);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "'s' is a socket");
    close(s);
    free(p);
    rm_rf(dir);
    free(dir);
}

static void test_device(void **state)
{
    (void)state;
    char *dir = fresh_dir("dev");
    put_str(dir, "a", "1", 0644);
    char *p = join(dir, "null");
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        print_message("SKIP device test: mknod needs CAP_MKNOD (%s)\n", strerror(errno));
        free(p);
        rm_rf(dir);
        free(dir);
        skip();
    }
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "'null' is a character device");
    char out[BD_DIGEST_BUF];
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_digest_file(out, p, &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    free(p);
    rm_rf(dir);
    free(dir);
}

static void test_symlinked_case_dir(void **state)
{
    (void)state;
    char *dir = fresh_dir("realcase");
    build(dir, FX_BASIC);
    char *l = join(g_root, "linkcase");
    assert_int_equal(symlink(dir, l), 0);
    digest_fails(l, BD_E_UNSUPPORTED_ENTRY, "symbolic link");
    /* a trailing slash would make the kernel follow it: still refused */
    char *ls = join(l, "");
    digest_fails(ls, BD_E_UNSUPPORTED_ENTRY, "symbolic link");
    char *lss = join(ls, "/");
    digest_fails(lss, BD_E_UNSUPPORTED_ENTRY, "symbolic link");
    /* the real directory, with trailing slashes, is fine */
    char *ds = join(dir, "/");
    char out[BD_DIGEST_BUF];
    digest_ok(ds, out, NULL);
    assert_string_equal(out, KAT_BASIC);
    assert_int_equal(unlink(l), 0);
    free(ds);
    free(lss);
    free(ls);
    free(l);
    rm_rf(dir);
    free(dir);
}

static void test_not_a_dir(void **state)
{
    (void)state;
    char *dir = fresh_dir("notdir");
    put_str(dir, "f", "1", 0644);
    char *f = join(dir, "f");
    digest_fails(f, BD_E_IO, "not a directory");
    char *missing = join(dir, "missing");
    digest_fails(missing, BD_E_IO, "No such file");
    digest_fails("", BD_E_USAGE, NULL);
    free(missing);
    free(f);
    rm_rf(dir);
    free(dir);
}

/* Hostile names can't break the one-line message. */
static void test_hostile_name_in_message(void **state)
{
    (void)state;
    char *dir = fresh_dir("hostile");
    char *l = join(dir, "evil\nname\x1b[2J\xff");
    assert_int_equal(symlink("x", l), 0);
    digest_fails(dir, BD_E_UNSUPPORTED_ENTRY, "evil\\x0aname\\x1b[2J\\xff");
    free(l);
    rm_rf(dir);
    free(dir);
}

/* Run `bd_digest_case_dir(dir)` as an unprivileged user in a child (root reads anything);
 * returns the error code, or -1 when the privileges can't be dropped. */
static int digest_code_as_nobody(const char *dir)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
            _exit(200);
        char out[BD_DIGEST_BUF];
        bd_err err = BD_ERR_INIT;
        if (bd_digest_case_dir(out, dir, NULL, &err) == 0)
            _exit(0);
        _exit((int)err.code);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status) == 200 ? -1 : WEXITSTATUS(status);
}

static void check_unreadable(const char *tag, const char *rel, int is_dir)
{
    char *dir = fresh_dir(tag);
    build(dir, FX_BASIC);
    char *p = join(dir, rel);
    if (is_dir)
        mkdir_p(p);
    else
        put_str(dir, rel, "secret", 0644);
    assert_int_equal(chmod(p, 0), 0);
    int code;
    if (geteuid() == 0) {
        code = digest_code_as_nobody(dir);
        if (code < 0) {
            print_message("SKIP unreadable %s test: running as root and cannot drop to "
                          "uid 65534 to make the file unreadable\n",
                          is_dir ? "dir" : "file");
            free(p);
            rm_rf(dir);
            free(dir);
            skip();
        }
    } else {
        char out[BD_DIGEST_BUF];
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_digest_case_dir(out, dir, NULL, &err), -1);
        assert_true(strstr(err.msg, "Permission denied") != NULL);
        code = (int)err.code;
    }
    assert_string_equal(bd_code_str((bd_code)code), bd_code_str(BD_E_IO));
    free(p);
    rm_rf(dir);
    free(dir);
}

static void test_unreadable_file(void **state)
{
    (void)state;
    check_unreadable("unreadf", "input/secret.txt", 0);
}

static void test_unreadable_dir(void **state)
{
    (void)state;
    check_unreadable("unreadd", "input/locked", 1);
}

/* ---- limits ------------------------------------------------------------------------ */

/* root/d/d/.../d (levels deep) with a file "f" at the bottom, built through descriptors. */
static void build_chain(const char *root, int levels, const char *comp, const char *leaf)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    for (int i = 0; i < levels; i++) {
        assert_int_equal(mkdirat(fd, comp, 0755), 0);
        int sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(sub >= 0);
        close(fd);
        fd = sub;
    }
    int f = openat(fd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(f >= 0);
    assert_int_equal(write(f, "z", 1), 1);
    close(f);
    close(fd);
}

static void test_depth_limit(void **state)
{
    (void)state;
    char *ok = fresh_dir("deep-ok");
    build_chain(ok, BD_DIGEST_MAX_DEPTH, "d", "f");
    char out[BD_DIGEST_BUF];
    uint64_t bytes = 0;
    digest_ok(ok, out, &bytes);
    assert_int_equal(bytes, 1);
    /* by hand: "d/d/.../d/f" */
    char rel[2 * BD_DIGEST_MAX_DEPTH + 2];
    size_t n = 0;
    for (int i = 0; i < BD_DIGEST_MAX_DEPTH; i++) {
        rel[n++] = 'd';
        rel[n++] = '/';
    }
    rel[n++] = 'f';
    rel[n] = '\0';
    sbuf b = {0};
    char want[BD_DIGEST_BUF];
    sb_add(&b, "benchdesk-case-v2\n", 18);
    sb_file(&b, 'f', rel, "z");
    sb_digest(&b, want);
    assert_string_equal(out, want);

    char *bad = fresh_dir("deep-bad");
    build_chain(bad, BD_DIGEST_MAX_DEPTH + 1, "d", "f");
    digest_fails(bad, BD_E_UNSUPPORTED_ENTRY, "nested more than 64 levels");
    rm_rf(ok);
    rm_rf(bad);
    free(ok);
    free(bad);
}

static void test_path_limit(void **state)
{
    (void)state;
    /* 20 directories of 200 bytes = 4020 bytes of "dir/", then the leaf */
    char comp[201];
    memset(comp, 'p', 200);
    comp[200] = '\0';
    char leaf_ok[80], leaf_bad[80];
    memset(leaf_ok, 'l', 75);
    leaf_ok[75] = '\0'; /* 4020 + 75 = 4095 bytes: the limit */
    memset(leaf_bad, 'l', 76);
    leaf_bad[76] = '\0';

    char *ok = fresh_dir("long-ok");
    build_chain(ok, 20, comp, leaf_ok);
    char out[BD_DIGEST_BUF];
    digest_ok(ok, out, NULL);

    char *bad = fresh_dir("long-bad");
    build_chain(bad, 20, comp, leaf_bad);
    digest_fails(bad, BD_E_UNSUPPORTED_ENTRY, "longer than 4095 bytes");
    rm_rf(ok);
    rm_rf(bad);
    free(ok);
    free(bad);
}

/* ---- files that change while being hashed (through the progress callback) -------- */

typedef enum {
    ACT_NONE,
    ACT_SHRINK,
    ACT_SHRINK_TO_BLOCK,
    ACT_GROW,
    ACT_GROW_AT_END,
    ACT_REPLACE,
    ACT_SYMLINK,
    ACT_FIFO,
    ACT_DIRLINK,
    ACT_TODIR,
    ACT_CANCEL
} act;

typedef struct {
    act action;
    const char *trigger; /* relpath whose first block triggers the action */
    char *target;        /* absolute path acted on */
    int fired;
    int calls;
    uint64_t last_total;
} tamper;

static int tamper_cb(const bd_digest_progress *p, void *payload)
{
    tamper *t = payload;
    t->calls++;
    t->last_total = p->total_bytes;
    if (t->fired || strcmp(p->relpath, t->trigger) != 0)
        return 0;
    switch (t->action) {
    case ACT_NONE:
        return 0;
    case ACT_SHRINK:
        t->fired = 1;
        return truncate(t->target, 10) == 0 ? 0 : 1;
    case ACT_SHRINK_TO_BLOCK:
        t->fired = 1;
        return truncate(t->target, (off_t)p->file_bytes) == 0 ? 0 : 1;
    case ACT_GROW:
    case ACT_GROW_AT_END:
        if (t->action == ACT_GROW_AT_END && p->file_bytes != p->file_size)
            return 0;
        t->fired = 1;
        {
            int fd = open(t->target, O_WRONLY | O_APPEND | O_CLOEXEC);
            if (fd < 0)
                return 1;
            int ok = write(fd, "+", 1) == 1;
            close(fd);
            return ok ? 0 : 1;
        }
    case ACT_REPLACE: {
        t->fired = 1;
        size_t l = strlen(t->target);
        char *tmp = malloc(l + 5);
        if (!tmp)
            return 1;
        memcpy(tmp, t->target, l);
        memcpy(tmp + l, ".new", 5);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int ok = fd >= 0 && write(fd, "b", 1) == 1;
        if (fd >= 0)
            close(fd);
        ok = ok && rename(tmp, t->target) == 0;
        free(tmp);
        return ok ? 0 : 1;
    }
    case ACT_SYMLINK:
        t->fired = 1;
        return unlink(t->target) == 0 && symlink("a", t->target) == 0 ? 0 : 1;
    case ACT_FIFO:
        t->fired = 1;
        return unlink(t->target) == 0 && mkfifo(t->target, 0644) == 0 ? 0 : 1;
    case ACT_DIRLINK: {
        t->fired = 1;
        /* swap directory c/ for a symlink to a directory elsewhere */
        size_t l = strlen(t->target);
        char *moved = malloc(l + 5);
        if (!moved)
            return 1;
        memcpy(moved, t->target, l);
        memcpy(moved + l, ".old", 5);
        int ok = rename(t->target, moved) == 0 && symlink(moved, t->target) == 0;
        free(moved);
        return ok ? 0 : 1;
    }
    case ACT_TODIR:
        t->fired = 1;
        return unlink(t->target) == 0 && mkdir(t->target, 0755) == 0 ? 0 : 1;
    case ACT_CANCEL:
        t->fired = 1;
        return 1;
    }
    return 1;
}

static void run_tamper(act action, const char *trigger, const char *target_rel, const fx_entry *fx,
                       bd_code want, const char *needle)
{
    char *dir = fresh_dir("tamper");
    build(dir, fx);
    tamper t = {action, trigger, join(dir, target_rel), 0, 0, 0};
    char out[BD_DIGEST_BUF] = "untouched";
    bd_err err = BD_ERR_INIT;
    int rc = bd_digest_case_dir_progress(out, dir, NULL, tamper_cb, &t, &err);
    assert_true(t.fired);
    assert_int_equal(rc, -1);
    if (err.code != want)
        print_error("got %s: %s\n", bd_code_str(err.code), err.msg);
    assert_string_equal(bd_code_str(err.code), bd_code_str(want));
    assert_string_equal(out, "untouched");
    if (needle && !strstr(err.msg, needle)) {
        print_error("message lacks '%s': %s\n", needle, err.msg);
        fail();
    }
    free(t.target);
    rm_rf(dir);
    free(dir);
}

static const fx_entry FX_TWO[] = {
    FX_L("two.bin", 5, 2u * BD_DIGEST_BLOCK, 0644),
    FX_END,
};

/* "two.bin" sized so that its header and bytes end exactly at the end of the second read
 * buffer: the end of file then needs a read of its own (the other path of hash_fd). */
#define TWO_EXACT (2u * BD_DIGEST_BLOCK - 18u) /* 18 = len of "f\0two.bin\0" SIZE "\0" */
static const fx_entry FX_TWO_EXACT[] = {
    FX_L("two.bin", 6, TWO_EXACT, 0644),
    FX_END,
};

static const fx_entry FX_ABC[] = {
    FX_S("a", "first", 0644),
    FX_S("b", "second", 0644),
    FX_S("c/d", "third", 0644),
    FX_END,
};

static void test_file_shrinks_mid_read(void **state)
{
    (void)state;
    run_tamper(ACT_SHRINK, "big.bin", "big.bin", FX_BIG, BD_E_IO, "shrank");
}

static void test_file_grows_mid_read(void **state)
{
    (void)state;
    run_tamper(ACT_GROW, "big.bin", "big.bin", FX_BIG, BD_E_IO, "grew");
    /* a size that is a whole number of read blocks: growth shows on the end-of-file read */
    char hdr[64];
    assert_int_equal(snprintf(hdr, sizeof(hdr), "f%ctwo.bin%c%u%c", 0, 0, TWO_EXACT, 0), 18);
    run_tamper(ACT_GROW_AT_END, "two.bin", "two.bin", FX_TWO_EXACT, BD_E_IO, "grew");
    /* shrinking to exactly a block boundary */
    run_tamper(ACT_SHRINK_TO_BLOCK, "two.bin", "two.bin", FX_TWO, BD_E_IO, "shrank");
}

/* Entries swapped between the listing (lstat) and the open. */
static void test_swap_after_listing(void **state)
{
    (void)state;
    run_tamper(ACT_REPLACE, "a", "b", FX_ABC, BD_E_IO, "replaced");
    run_tamper(ACT_SYMLINK, "a", "b", FX_ABC, BD_E_UNSUPPORTED_ENTRY, "'b' is a symbolic link");
    run_tamper(ACT_FIFO, "a", "b", FX_ABC, BD_E_UNSUPPORTED_ENTRY, "'b' is a FIFO");
    run_tamper(ACT_TODIR, "a", "b", FX_ABC, BD_E_IO, "replaced");
    run_tamper(ACT_DIRLINK, "a", "c", FX_ABC, BD_E_UNSUPPORTED_ENTRY, "'c' is a symbolic link");
}

static void test_cancel(void **state)
{
    (void)state;
    run_tamper(ACT_CANCEL, "big.bin", "big.bin", FX_BIG, BD_E_RUN_CANCELLED, "cancelled");
}

static void test_progress_totals(void **state)
{
    (void)state;
    char *dir = fresh_dir("progress");
    build(dir, FX_BIG);
    tamper t = {ACT_NONE, "", NULL, 0, 0, 0};
    char out[BD_DIGEST_BUF];
    uint64_t bytes = 0;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_digest_case_dir_progress(out, dir, &bytes, tamper_cb, &t, &err), 0);
    assert_string_equal(out, KAT_BIG);
    assert_int_equal(bytes, (uint64_t)BIG_SIZE + 1024 + 1025 + 65537 + 13);
    assert_int_equal(t.last_total, bytes);
    assert_true(t.calls >= 4 + 4); /* big.bin takes at least 4 blocks of <= 1 MiB */
    rm_rf(dir);
    free(dir);
}

/* ---- bd_case_scan: one pass gives what the separate calls give -------------------- */

/* A case c1 under a fresh cases dir (*cases), with its digest and its cassette's. */
static const char scan_yaml[] = "schema_version: 2\ncase_id: c1\n";

static char *scan_case(const char *tag, char **cases, char want[BD_DIGEST_BUF],
                       char cassette[BD_DIGEST_BUF])
{
    *cases = fresh_dir(tag);
    char *dir = join(*cases, "c1");
    put_str(dir, "case.yaml", scan_yaml, 0644);
    put_str(dir, "cassette.json", "{\"output\": 42}\n", 0644);
    put_str(dir, "input/q.txt", "question\n", 0644);
    put_str(dir, "expected/sub/a.txt", "answer\n", 0755);
    put_str(dir, "provenance.yaml", "schema_version: 2\n", 0644);
    digest_ok(dir, want, NULL);
    char *cpath = join(dir, "cassette.json");
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_digest_file(cassette, cpath, &err), 0);
    free(cpath);
    return dir;
}

static void test_case_scan(void **state)
{
    (void)state;
    char *cases;
    char want[BD_DIGEST_BUF], cassette[BD_DIGEST_BUF];
    char *dir = scan_case("scan", &cases, want, cassette);
    bd_err err = BD_ERR_INIT;

    bd_case_scanner *sc = NULL;
    assert_int_equal(bd_case_scanner_new(&sc, &err), 0);
    int cfd = open(cases, O_RDONLY | O_DIRECTORY);
    assert_true(cfd >= 0);
    for (int round = 0; round < 2; round++) { /* the scanner's buffers are reused */
        bd_scanned_case r = {.yaml_max = 1024};
        assert_int_equal(bd_case_scan(sc, &r, cfd, cases, "c1", &err), 0);
        assert_string_equal(r.digest, want);
        assert_true(r.case_yaml_present && r.case_yaml);
        assert_int_equal(r.case_yaml_len, sizeof(scan_yaml) - 1);
        assert_memory_equal(r.case_yaml, scan_yaml, sizeof(scan_yaml));
        assert_true(r.cassette_present);
        assert_string_equal(r.cassette, cassette);
        assert_true(r.prov_present);
        assert_string_equal(r.prov_yaml, "schema_version: 2\n");
        assert_false(r.leftover || r.unusual);
        bd_case_scan_release(&r);
    }
    /* case.yaml over the limit: hashed, not kept. */
    bd_scanned_case small = {.yaml_max = 8};
    assert_int_equal(bd_case_scan(sc, &small, cfd, cases, "c1", &err), 0);
    assert_string_equal(small.digest, want);
    assert_true(small.case_yaml_too_big && !small.case_yaml);
    bd_case_scan_release(&small);

    /* A temp file of an interrupted write: nothing hashed, reported. */
    put_str(dir, "case.yaml.4242.tmp", "half", 0644);
    bd_scanned_case left = {.yaml_max = 1024};
    assert_int_equal(bd_case_scan(sc, &left, cfd, cases, "c1", &err), 1);
    assert_true(left.leftover);
    assert_string_equal(left.digest, "");
    bd_case_scan_release(&left);
    char *tmpf = join(dir, "case.yaml.4242.tmp");
    assert_int_equal(unlink(tmpf), 0);

    /* A link: refused, like bd_digest_case_dir. */
    char *lnk = join(dir, "input/l");
    assert_int_equal(symlink("q.txt", lnk), 0);
    bd_scanned_case bad = {.yaml_max = 1024};
    assert_int_equal(bd_case_scan(sc, &bad, cfd, cases, "c1", &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    assert_true(bad.unusual);
    bd_case_scan_release(&bad);
    /* A case dir that is a link is never followed. */
    char *clink = join(cases, "c2");
    assert_int_equal(symlink("c1", clink), 0);
    bd_scanned_case via = {.yaml_max = 1024};
    assert_int_equal(bd_case_scan(sc, &via, cfd, cases, "c2", &err), -1);
    bd_case_scan_release(&via);

    close(cfd);
    bd_case_scanner_free(sc);
    rm_rf(cases);
    free(clink);
    free(lnk);
    free(tmpf);
    free(dir);
    free(cases);
}

/* ---- bd_digest_case_copy: the use-time pass ---------------------------------------- */

static void file_is(int dfd, const char *rel, const char *want, mode_t mode)
{
    int fd = openat(dfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    assert_true(fd >= 0);
    char buf[256];
    ssize_t n = read(fd, buf, sizeof(buf));
    assert_int_equal(n, (ssize_t)strlen(want));
    assert_memory_equal(buf, want, (size_t)n);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_mode & 07777, mode);
    close(fd);
}

static void test_case_copy(void **state)
{
    (void)state;
    char *cases;
    char want[BD_DIGEST_BUF], cassette[BD_DIGEST_BUF], now[BD_DIGEST_BUF];
    char *dir = scan_case("copy", &cases, want, cassette);
    bd_err err = BD_ERR_INIT;
    static const char *const tops[] = {"input", "expected", NULL};

    /* Without `kept`: the digest, and the named tops copied read-only. */
    char *dst1 = fresh_dir("copy-dst1");
    int d1 = open(dst1, O_RDONLY | O_DIRECTORY);
    assert_true(d1 >= 0);
    assert_int_equal(bd_digest_case_copy(now, dir, d1, tops, NULL, &err), 0);
    assert_string_equal(now, want);
    file_is(d1, "input/q.txt", "question\n", 0444);
    file_is(d1, "expected/sub/a.txt", "answer\n", 0555);
    assert_int_equal(faccessat(d1, "case.yaml", F_OK, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(faccessat(d1, "cassette.json", F_OK, AT_SYMLINK_NOFOLLOW), -1);
    close(d1);

    /* With `kept`: the same, plus case.yaml's hashed bytes and the cassette's digest;
     * provenance.yaml is not read. */
    char *dst2 = fresh_dir("copy-dst2");
    int d2 = open(dst2, O_RDONLY | O_DIRECTORY);
    assert_true(d2 >= 0);
    bd_scanned_case kept = {.yaml_max = 1024};
    assert_int_equal(bd_digest_case_copy(now, dir, d2, tops, &kept, &err), 0);
    assert_string_equal(now, want);
    file_is(d2, "input/q.txt", "question\n", 0444);
    assert_true(kept.case_yaml_present && kept.case_yaml && !kept.case_yaml_too_big);
    assert_int_equal(kept.case_yaml_len, sizeof(scan_yaml) - 1);
    assert_memory_equal(kept.case_yaml, scan_yaml, sizeof(scan_yaml));
    assert_true(kept.cassette_present);
    assert_string_equal(kept.cassette, cassette);
    assert_false(kept.prov_present);
    assert_null(kept.prov_yaml);
    bd_case_scan_release(&kept);
    close(d2);

    /* Over the limit: hashed, not kept. A leftover temp file is hashed like any file
     * (the digest then differs from the pin: the caller's mismatch), not refused. */
    put_str(dir, "case.yaml.4242.tmp", "half", 0644);
    char *dst3 = fresh_dir("copy-dst3");
    int d3 = open(dst3, O_RDONLY | O_DIRECTORY);
    assert_true(d3 >= 0);
    bd_scanned_case small = {.yaml_max = 8};
    assert_int_equal(bd_digest_case_copy(now, dir, d3, tops, &small, &err), 0);
    assert_string_not_equal(now, want);
    assert_true(small.case_yaml_too_big && !small.case_yaml);
    assert_false(small.leftover);
    bd_case_scan_release(&small);
    close(d3);

    /* A link: refused; what was kept is released by the caller. */
    char *tmpf = join(dir, "case.yaml.4242.tmp");
    assert_int_equal(unlink(tmpf), 0);
    char *lnk = join(dir, "input/l");
    assert_int_equal(symlink("q.txt", lnk), 0);
    char *dst4 = fresh_dir("copy-dst4");
    int d4 = open(dst4, O_RDONLY | O_DIRECTORY);
    assert_true(d4 >= 0);
    bd_scanned_case bad = {.yaml_max = 1024};
    assert_int_equal(bd_digest_case_copy(now, dir, d4, tops, &bad, &err), -1);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    bd_case_scan_release(&bad);
    close(d4);
    assert_int_equal(bd_digest_case_copy(now, dir, -1, tops, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_INTERNAL);
    free(cases);
    free(dir);
    free(dst1);
    free(dst2);
    free(dst3);
    free(dst4);
    free(tmpf);
    free(lnk);
}

/* ---- reentrancy --------------------------------------------------------------------- */

typedef struct {
    const char *dir;
    char out[BD_DIGEST_BUF];
    int rc;
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    bd_err err = BD_ERR_INIT;
    for (int i = 0; i < 3 && j->rc == 0; i++)
        j->rc = bd_digest_case_dir(j->out, j->dir, NULL, &err);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    char *dir = fresh_dir("threads");
    build(dir, FX_BIG);
    build(dir, FX_UNICODE); /* both trees in one: big files and odd names */
    char single[BD_DIGEST_BUF];
    digest_ok(dir, single, NULL);
    thread_job jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i].dir = dir;
        jobs[i].rc = 0;
        jobs[i].out[0] = '\0';
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(jobs[i].rc, 0);
        assert_string_equal(jobs[i].out, single);
    }
    rm_rf(dir);
    free(dir);
}

/* ---- single files, bytes, strings --------------------------------------------------- */

static void test_vectors(void **state)
{
    (void)state;
    char out[BD_DIGEST_BUF];
    bd_digest_bytes(out, "", 0);
    assert_string_equal(out, "blake3:" B3_EMPTY);
    bd_digest_bytes(out, "abc", 3);
    assert_string_equal(out, "blake3:" B3_ABC);
    uint8_t raw[32];
    char hex[65];
    bd_blake3_raw(raw, "abc", 3);
    bd_hex(hex, raw, 32);
    assert_string_equal(hex, B3_ABC);
    const uint8_t bytes[] = {0x00, 0x0f, 0xa0, 0xff};
    char small[9];
    bd_hex(small, bytes, 4);
    assert_string_equal(small, "000fa0ff");
    bd_hex(small, bytes, 0);
    assert_string_equal(small, "");
}

static void test_digest_file(void **state)
{
    (void)state;
    char *dir = fresh_dir("file");
    put_str(dir, "abc", "abc", 0644);
    put_str(dir, "empty", "", 0755);
    uint8_t *big = malloc(BIG_SIZE);
    assert_non_null(big);
    lcg_fill(big, 1, BIG_SIZE);
    put(dir, "big.bin", big, BIG_SIZE, 0644);
    char want_big[BD_DIGEST_BUF];
    bd_digest_bytes(want_big, big, BIG_SIZE);
    free(big);

    char *abc = join(dir, "abc"), *empty = join(dir, "empty"), *bigp = join(dir, "big.bin");
    char out[BD_DIGEST_BUF];
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_digest_file(out, abc, &err), 0);
    assert_string_equal(out, "blake3:" B3_ABC);
    assert_int_equal(bd_digest_file(out, empty, &err), 0);
    assert_string_equal(out, "blake3:" B3_EMPTY);
    assert_int_equal(bd_digest_file(out, bigp, &err), 0);
    assert_string_equal(out, want_big);

    /* refused: symlink (to a good file), FIFO (without blocking), directory; missing */
    char *l = join(dir, "link"), *fifo = join(dir, "fifo"), *missing = join(dir, "nope");
    assert_int_equal(symlink("abc", l), 0);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    struct {
        const char *path;
        bd_code code;
        const char *needle;
    } bad[] = {{l, BD_E_UNSUPPORTED_ENTRY, "symbolic link"},
               {fifo, BD_E_UNSUPPORTED_ENTRY, "FIFO"},
               {dir, BD_E_UNSUPPORTED_ENTRY, "directory"},
               {missing, BD_E_IO, "No such file"},
               {"", BD_E_USAGE, "no file"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        strcpy(out, "untouched");
        bd_err_clear(&err);
        assert_int_equal(bd_digest_file(out, bad[i].path, &err), -1);
        assert_string_equal(bd_code_str(err.code), bd_code_str(bad[i].code));
        assert_non_null(strstr(err.msg, bad[i].needle));
        assert_string_equal(out, "untouched");
    }
    /* a NULL error struct is allowed */
    assert_int_equal(bd_digest_file(out, l, NULL), -1);
    assert_int_equal(bd_digest_case_dir(out, l, NULL, NULL), -1);

    free(abc);
    free(empty);
    free(bigp);
    free(l);
    free(fifo);
    free(missing);
    rm_rf(dir);
    free(dir);
}

static void test_str_valid(void **state)
{
    (void)state;
    assert_true(bd_digest_str_valid("blake3:" B3_ABC));
    assert_true(bd_digest_str_valid(KAT_BIG));
    assert_false(bd_digest_str_valid(NULL));
    assert_false(bd_digest_str_valid(""));
    assert_false(bd_digest_str_valid("blake3:"));
    assert_false(bd_digest_str_valid(B3_ABC));                /* no prefix */
    assert_false(bd_digest_str_valid("BLAKE3:" B3_ABC));      /* prefix case */
    assert_false(bd_digest_str_valid("sha256:" B3_ABC));      /* other algorithm */
    assert_false(bd_digest_str_valid("blake3:" B3_ABC "0"));  /* 65 hex */
    assert_false(bd_digest_str_valid("blake3:" B3_ABC "\n")); /* trailing newline */
    assert_false(bd_digest_str_valid(" blake3:" B3_ABC));     /* leading space */
    char s[BD_DIGEST_BUF] = "blake3:" B3_ABC;
    s[strlen(s) - 1] = '\0'; /* 63 hex */
    assert_false(bd_digest_str_valid(s));
    strcpy(s, "blake3:" B3_ABC);
    s[10] = 'A'; /* upper case */
    assert_false(bd_digest_str_valid(s));
    s[10] = 'g';
    assert_false(bd_digest_str_valid(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kat_empty),
        cmocka_unit_test(test_kat_basic),
        cmocka_unit_test(test_kat_sort),
        cmocka_unit_test(test_kat_unicode),
        cmocka_unit_test(test_kat_big),
        cmocka_unit_test(test_kat_task_class),
        cmocka_unit_test(test_exec_bits_by_hand),
        cmocka_unit_test(test_case_yaml_dir_included),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_symlink_to_file),
        cmocka_unit_test(test_symlink_to_dir),
        cmocka_unit_test(test_dangling_symlink),
        cmocka_unit_test(test_symlink_case_yaml),
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_socket),
        cmocka_unit_test(test_device),
        cmocka_unit_test(test_symlinked_case_dir),
        cmocka_unit_test(test_not_a_dir),
        cmocka_unit_test(test_hostile_name_in_message),
        cmocka_unit_test(test_unreadable_file),
        cmocka_unit_test(test_unreadable_dir),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_path_limit),
        cmocka_unit_test(test_file_shrinks_mid_read),
        cmocka_unit_test(test_file_grows_mid_read),
        cmocka_unit_test(test_swap_after_listing),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_progress_totals),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_digest_file),
        cmocka_unit_test(test_str_valid),
        cmocka_unit_test(test_case_scan),
        cmocka_unit_test(test_case_copy),
    };
    return cmocka_run_group_tests_name("digest", tests, group_setup, group_teardown);
}
