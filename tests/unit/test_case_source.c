/*
 * test_case_source.c — the case as a source of entries (src/bench/case_source.h): the
 * membership rule of the case digest (docs/formats.md#digests) and the one digest loop,
 * fed by a source held in memory, give the digest of the same files on disk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "case_source.h"
#include "digest.h"

/* A source over a fixed list of entries, bytes in memory. */
typedef struct {
    const char *rel;
    bool other; /* a link or special entry */
    bool exec;
    const char *bytes;
} mem_entry;

typedef struct {
    bd_case_source src;
    const mem_entry *ents;
    size_t n, next;
    int refused; /* how many entries `refuse` was asked about */
} mem_source;

static int mem_next(bd_case_source *src, bd_case_entry *e, bd_err *err)
{
    (void)err;
    mem_source *s = (mem_source *)src;
    if (s->next == s->n)
        return 0;
    const mem_entry *m = &s->ents[s->next++];
    const char *slash = strrchr(m->rel, '/');
    e->rel = m->rel;
    e->rel_len = strlen(m->rel);
    e->name = slash ? slash + 1 : m->rel;
    e->top = slash == NULL;
    e->kind = m->other ? BD_CASE_OTHER : BD_CASE_FILE;
    e->exec = m->exec;
    e->bytes = m->bytes;
    e->size = strlen(m->bytes);
    return 1;
}

static int mem_refuse(bd_case_source *src, const bd_case_entry *e, bd_err *err)
{
    ((mem_source *)src)->refused++;
    return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, e->rel, 0, 0, "refused");
}

static mem_source mem(const mem_entry *ents, size_t n)
{
    mem_source s;
    memset(&s, 0, sizeof(s));
    s.src.next = mem_next;
    s.src.refuse = mem_refuse;
    s.src.where = "mem";
    s.ents = ents;
    s.n = n;
    return s;
}

static void write_file(const char *dir, const char *rel, const char *bytes, bool exec)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", p);
    assert_int_equal(system(cmd), 0);
    *slash = '/';
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(bytes, f);
    fclose(f);
    assert_int_equal(chmod(p, exec ? 0755 : 0644), 0);
}

static void membership_rule(void **state)
{
    (void)state;
    assert_int_equal(bd_case_membership(true, "case.yaml", BD_CASE_FILE), BD_CASE_MEMBER);
    assert_int_equal(bd_case_membership(true, "provenance.yaml", BD_CASE_FILE), BD_CASE_OUTSIDE);
    /* Only the top-level one is outside; deeper down it is a file like any other. */
    assert_int_equal(bd_case_membership(false, "provenance.yaml", BD_CASE_FILE), BD_CASE_MEMBER);
    assert_int_equal(bd_case_membership(true, "provenance.yaml", BD_CASE_OTHER), BD_CASE_REFUSED);
    assert_int_equal(bd_case_membership(false, "x", BD_CASE_OTHER), BD_CASE_REFUSED);
}

/* Nested files, an executable, names sorting around '/', a top-level provenance.yaml
 * (outside) and a nested one (inside): the memory source and the directory agree. */
static void memory_source_matches_the_directory(void **state)
{
    (void)state;
    static const mem_entry ents[] = {
        {"case.yaml", false, false, "id: c1\n"},
        {"input/a.b", false, false, "dot\n"},
        {"input/a/provenance.yaml", false, false, "nested\n"},
        {"input/a0", false, true, "#!/bin/sh\n"},
        {"provenance.yaml", false, false, "signatures: []\n"},
    };
    char dir[] = "/tmp/bd-case-source-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
        write_file(dir, ents[i].rel, ents[i].bytes, ents[i].exec);

    char want[BD_DIGEST_BUF], got[BD_DIGEST_BUF];
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_digest_case_dir(want, dir, NULL, &err), 0);
    mem_source s = mem(ents, sizeof(ents) / sizeof(ents[0]));
    uint64_t bytes = 0;
    assert_int_equal(bd_case_source_digest(got, &s.src, &bytes, &err), 0);
    assert_string_equal(got, want);
    assert_int_equal(bytes, strlen("id: c1\n") + strlen("dot\n") + strlen("nested\n") +
                                strlen("#!/bin/sh\n"));

    /* Changing the top-level provenance.yaml changes nothing. */
    mem_entry resigned[sizeof(ents) / sizeof(ents[0])];
    memcpy(resigned, ents, sizeof(ents));
    resigned[4].bytes = "signatures: [other]\n";
    s = mem(resigned, 5);
    assert_int_equal(bd_case_source_digest(got, &s.src, NULL, &err), 0);
    assert_string_equal(got, want);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void refused_and_out_of_order_entries(void **state)
{
    (void)state;
    char out[BD_DIGEST_BUF] = "untouched";
    bd_err err = BD_ERR_INIT;
    static const mem_entry link[] = {{"a", false, false, "x"}, {"b", true, false, ""}};
    mem_source s = mem(link, 2);
    assert_int_not_equal(bd_case_source_digest(out, &s.src, NULL, &err), 0);
    assert_int_equal(err.code, BD_E_UNSUPPORTED_ENTRY);
    assert_int_equal(s.refused, 1);
    assert_string_equal(out, "untouched");

    static const mem_entry unordered[] = {{"b", false, false, "x"}, {"a", false, false, "y"}};
    bd_err err2 = BD_ERR_INIT;
    s = mem(unordered, 2);
    assert_int_not_equal(bd_case_source_digest(out, &s.src, NULL, &err2), 0);
    assert_int_equal(err2.code, BD_E_INTERNAL);
    assert_string_equal(out, "untouched");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(membership_rule),
        cmocka_unit_test(memory_source_matches_the_directory),
        cmocka_unit_test(refused_and_out_of_order_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
