/*
 * Unit tests for provenance (docs/provenance.md): the exact v2 message, signing cases and task
 * classes into provenance.yaml without touching the signed files, and verification against a
 * private GnuPG home — every failure with its own code. Keys are generated at test time by
 * tests/fixtures/gpg/make-keys.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/gpg/fixture.h"
#include "digest.h"
#include "provenance.h"
#include "sign.h"
#include "verify.h"

static char T[512];   /* scratch root */
static fx_keys K;     /* throwaway keys */
static int bench_seq; /* one fresh bench per test */

static const char *DG = "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static int group_setup(void **state)
{
    (void)state;
    fx_tmpdir(T, sizeof(T), "prov");
    fx_make_keys(&K, T);
    /* The user's keyring is the fixture's: verification must ignore it anyway. */
    setenv("GNUPGHOME", K.home, 1);
    bd_err err = BD_ERR_INIT;
    if (bd_provenance_init(&err) < 0) {
        fprintf(stderr, "GPGME unavailable: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fx_cleanup(&K, T);
    return 0;
}

/* A fresh pinned bench with alice, bob (both roles), carol (reviewer only), mallory
 * (keys only, untrusted), dave (expired), eve (revoked). */
static void new_bench(char *root, size_t cap)
{
    char sy[2048];
    snprintf(root, cap, "%s/b%d", T, ++bench_seq);
    fx_signers_yaml(sy, sizeof(sy), K.alice, "author, reviewer", K.bob, "author, reviewer", K.carol,
                    "reviewer", K.dave, "author, reviewer", K.eve, "author, reviewer",
                    (const char *)NULL);
    fx_make_bench(root, &K, "alice bob carol mallory dave eve", sy, 3);
}

typedef struct env {
    bd_bench *b;
    bd_task_class *tc;
    bd_prov_ctx *ctx;
} env;

static void open_env(env *e, const char *root)
{
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bench_open(&e->b, root, &err), 0);
    assert_int_equal(bd_task_class_load(&e->tc, e->b, "tc", &err), 0);
    assert_int_equal(bd_prov_ctx_new(&e->ctx, e->b->bench_dir, &err), 0);
}

static void close_env(env *e)
{
    bd_prov_ctx_free(e->ctx);
    bd_task_class_free(e->tc);
    bd_bench_free(e->b);
}

/* Sign subject `id` (a case id, or NULL: the task class) as `role` with key `fpr`
 * through the core; returns the error code. */
static bd_code sign_opt(const char *root, const char *id, int role, const char *fpr, bool replace)
{
    env e;
    open_env(&e, root);
    bd_sign_opts o = BD_SIGN_OPTS_INIT;
    o.key = fpr;
    o.replace = replace;
    o.gnupg_home = K.home;
    bd_sign_result r;
    memset(&r, 0, sizeof(r));
    bd_err err = BD_ERR_INIT;
    int rc = bd_sign_subject(&r, e.ctx, e.tc, id, role, &o, &err);
    if (rc < 0)
        print_message("sign: %s: %s\n", bd_code_str(err.code), err.msg);
    bd_sign_result_release(&r);
    close_env(&e);
    return rc == 0 ? BD_OK : err.code;
}

static bd_code sign(const char *root, const char *id, int role, const char *fpr)
{
    return sign_opt(root, id, role, fpr, false);
}

/* provenance.yaml of subject `id` (NULL: the task class). */
static void prov_path(char *out, size_t cap, const char *root, const char *id)
{
    if (id)
        snprintf(out, cap, "%s/bench/tc/cases/%s/provenance.yaml", root, id);
    else
        snprintf(out, cap, "%s/bench/tc/provenance.yaml", root);
}

static bd_provfile *load_prov(const char *root, const char *id)
{
    char p[1024];
    prov_path(p, sizeof(p), root, id);
    bd_provfile *pf = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_provfile_load(&pf, p, &err), 0);
    return pf;
}

/* The current digest of subject `id` (NULL: the task class) into `dg`. */
static void current_digest(char dg[BD_DIGEST_BUF], const char *root, const char *id)
{
    char dir[1024];
    bd_err err = BD_ERR_INIT;
    if (id) {
        snprintf(dir, sizeof(dir), "%s/bench/tc/cases/%s", root, id);
        assert_int_equal(bd_digest_case_dir(dg, dir, NULL, &err), 0);
    } else {
        snprintf(dir, sizeof(dir), "%s/bench/tc", root);
        assert_int_equal(bd_digest_task_class_dir(dg, dir, &err), 0);
    }
}

/* The pin of subject `id` (NULL: the task class) in `tc`, or "". */
static const char *pin_of(const bd_task_class *tc, const char *id)
{
    if (!tc->digests)
        return "";
    if (!id)
        return tc->digests->task_class;
    const bd_pin *p = bd_digests_find(tc->digests, id);
    return p ? p->digest : "";
}

/* Verify subject `id` (NULL: the task class) with its current digest. */
static bd_prov_result verify(const char *root, const char *id)
{
    env e;
    open_env(&e, root);
    bd_err err = BD_ERR_INIT;
    char dg[BD_DIGEST_BUF];
    current_digest(dg, root, id);
    bd_provfile *pf = load_prov(root, id);
    bd_subject s = {
        id ? BD_SUBJECT_CASE : BD_SUBJECT_TASK_CLASS, "tc", id, dg, pin_of(e.tc, id), pf};
    bd_prov_result r;
    int rc = bd_provenance_verify(&r, e.ctx, &s, &err);
    assert_int_not_equal(rc, -1);
    assert_int_equal(rc, r.status == BD_PROV_ST_BAD ? 1 : 0);
    if (r.status == BD_PROV_ST_BAD)
        print_message("verify %s: %s: %s\n", id ? id : "(task class)", bd_code_str(r.err.code),
                      r.err.msg);
    bd_provfile_free(pf);
    close_env(&e);
    return r;
}

static void case_path(char *out, size_t cap, const char *root, const char *id, const char *f)
{
    snprintf(out, cap, "%s/bench/tc/cases/%s/%s", root, id, f);
}

static char *read_case(const char *root, const char *id)
{
    char p[1024];
    case_path(p, sizeof(p), root, id, "case.yaml");
    return fx_read(p);
}

/* Write a signature block straight into provenance.yaml of subject `id` (NULL: the task
 * class) — what a forger could do. */
static void put_block(const char *root, const char *id, int role, const char *identity,
                      const char *fpr, const char *sig)
{
    char p[1024];
    prov_path(p, sizeof(p), root, id);
    bd_provfile *pf = load_prov(root, id);
    bd_signature_block *b = role == BD_ROLE_AUTHOR ? &pf->author : &pf->reviewer;
    free(b->identity);
    free(b->signed_at);
    free(b->signature);
    b->present = true;
    b->identity = strdup(identity);
    snprintf(b->fingerprint, sizeof(b->fingerprint), "%s", fpr);
    b->signed_at = strdup("2026-05-12T14:00:00Z");
    b->signature = strdup(sig);
    char *text = bd_provfile_format(pf);
    assert_non_null(text);
    fx_write(p, text);
    free(text);
    bd_provfile_free(pf);
}

/* The exact message for subject `id` (NULL: the task class) of `root` as `role` over
 * `digest` (NULL: its pin). */
static char *message_for(const char *root, const char *id, int role, const char *digest)
{
    env e;
    open_env(&e, root);
    bd_subject s = {id ? BD_SUBJECT_CASE : BD_SUBJECT_TASK_CLASS, "tc", id, NULL, NULL, NULL};
    char *m = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(
        bd_provenance_message(&m, NULL, role, &s, digest ? digest : pin_of(e.tc, id), &err), 0);
    close_env(&e);
    return m;
}

/* Sign `msg` with `fpr` through the core's signer. */
static char *sign_msg(const char *fpr, const char *msg)
{
    bd_sign_opts o = BD_SIGN_OPTS_INIT;
    o.key = fpr;
    o.gnupg_home = K.home;
    bd_sign_key key;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_sign_resolve_key(&key, &o, &err), 0);
    char *sig = NULL;
    assert_int_equal(bd_sign_bytes(&sig, &key, &o, msg, strlen(msg), &err), 0);
    return sig;
}

/* Sign `msg` with gpg itself: `extra` adds options (a faked clock, a second -u). */
static char *sign_msg_cli(const char *extra, const char *msg)
{
    return fx_detach_sign(&K, T, extra, msg);
}

/* ---- the message ------------------------------------------------------------------- */

static void message_is_exact(void **state)
{
    (void)state;
    char *m = NULL;
    size_t len = 0;
    bd_err err = BD_ERR_INIT;
    bd_subject cs = {BD_SUBJECT_CASE, "vuln-remediation", "ghsa-1", NULL, NULL, NULL};
    assert_int_equal(bd_provenance_message(&m, &len, BD_ROLE_AUTHOR, &cs, DG, &err), 0);
    char want[512];
    snprintf(want, sizeof(want),
             "benchdesk-provenance-v2\nrole: author\nsubject: case\ntask_class: vuln-remediation\n"
             "case_id: ghsa-1\ndigest: %s\n",
             DG);
    assert_string_equal(m, want);
    assert_int_equal(len, strlen(want));
    free(m);
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_REVIEWER, &cs, DG, &err), 0);
    assert_non_null(strstr(m, "\nrole: reviewer\n"));
    free(m);
    /* A task class: no case_id line. */
    bd_subject ts = {BD_SUBJECT_TASK_CLASS, "vuln-remediation", NULL, NULL, NULL, NULL};
    assert_int_equal(bd_provenance_message(&m, &len, BD_ROLE_REVIEWER, &ts, DG, &err), 0);
    snprintf(want, sizeof(want),
             "benchdesk-provenance-v2\nrole: reviewer\nsubject: task-class\n"
             "task_class: vuln-remediation\ndigest: %s\n",
             DG);
    assert_string_equal(m, want);
    assert_int_equal(len, strlen(want));
    free(m);
    assert_string_equal(bd_subject_kind_str(BD_SUBJECT_CASE), "case");
    assert_string_equal(bd_subject_kind_str(BD_SUBJECT_TASK_CLASS), "task-class");
}

static void message_refuses_bad_input(void **state)
{
    (void)state;
    char *m = NULL;
    bd_err err = BD_ERR_INIT;
    bd_subject cs = {BD_SUBJECT_CASE, "tc", "a", NULL, NULL, NULL};
    assert_int_equal(bd_provenance_message(&m, NULL, 3, &cs, DG, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    cs.case_id = "../x";
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, &cs, DG, &err), -1);
    assert_int_equal(err.code, BD_E_BAD_ID);
    cs.case_id = "a\ndigest: x";
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, &cs, DG, &err), -1);
    assert_int_equal(err.code, BD_E_BAD_ID);
    cs.case_id = "a";
    cs.task_class = "tc\ncase_id: b";
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, &cs, DG, &err), -1);
    assert_int_equal(err.code, BD_E_BAD_ID);
    cs.task_class = "tc";
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, &cs, "", &err), -1);
    assert_int_equal(err.code, BD_E_DIGEST_MISSING);
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, &cs, "blake3:xyz", &err), -1);
    assert_int_equal(err.code, BD_E_DIGEST_MISSING);
    bd_subject ts = {BD_SUBJECT_TASK_CLASS, "tc", NULL, NULL, NULL, NULL};
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, &ts, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_TC_DIGEST_MISSING);
    assert_null(m);
    int role = 0;
    assert_int_equal(bd_provenance_role_parse("author", &role), 0);
    assert_int_equal(role, BD_ROLE_AUTHOR);
    assert_int_equal(bd_provenance_role_parse("Author", &role), -1);
}

/* ---- provenance.yaml ---------------------------------------------------------------- */

static const char SIG[] = "-----BEGIN PGP SIGNATURE-----\n\nabc\n-----END PGP SIGNATURE-----\n";

/* provenance.yaml is written whole: what bd_provfile_format writes loads back to the same
 * values, blocks absent stay absent. */
static void provfile_round_trips(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    bd_provfile *p = NULL;
    assert_int_equal(bd_provfile_parse(&p, "schema_version: 2\n", 18, "p.yaml", &err), 0);
    assert_false(p->author.present);
    assert_false(p->reviewer.present);
    p->author.present = true;
    p->author.identity = strdup("q\"@x");
    snprintf(p->author.fingerprint, sizeof(p->author.fingerprint), "%s",
             "6A1F0C3B9E2D47A8B5C4D3E2F1A0B9C8D7E6F5A4");
    p->author.signed_at = strdup("2026-05-12T14:00:00Z");
    p->author.signature = strdup(SIG);
    char *text = bd_provfile_format(p);
    assert_non_null(text);
    /* The header names where the signed message is documented, inside the repository. */
    static const char head[] = "# Signatures over this subject's digest "
                               "(docs/provenance.md#the-signed-message), written by "
                               "`benchdesk sign`.\nschema_version: 2\n";
    assert_memory_equal(text, head, sizeof(head) - 1);
    assert_null(strstr(text, "reviewer"));
    bd_provfile *q = NULL;
    assert_int_equal(bd_provfile_parse(&q, text, strlen(text), "p.yaml", &err), 0);
    assert_true(q->author.present);
    assert_false(q->reviewer.present);
    assert_string_equal(q->author.identity, "q\"@x");
    assert_string_equal(q->author.fingerprint, p->author.fingerprint);
    assert_string_equal(q->author.signed_at, "2026-05-12T14:00:00Z");
    assert_string_equal(q->author.signature, SIG);
    assert_null(q->last_validated_at);
    bd_provfile_free(q);
    free(text);
    bd_provfile_free(p);

    /* An absent file is a valid empty one. */
    char path[700];
    snprintf(path, sizeof(path), "%s/no-such-provenance.yaml", T);
    assert_int_equal(bd_provfile_load(&p, path, &err), 0);
    assert_false(p->author.present);
    bd_provfile_free(p);
    /* v1 keys or unknown keys are refused. */
    static const struct {
        const char *text;
        bd_code code;
    } bad[] = {{"schema_version: 2\nadded_by: {}\n", BD_E_PROVENANCE_SCHEMA},
               {"schema_version: 1\n", BD_E_FORMAT_V1},
               {"schema_version: 2\nauthor: {identity: a}\n", BD_E_PROVENANCE_SCHEMA}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        p = (bd_provfile *)0x1;
        assert_int_equal(bd_provfile_parse(&p, bad[i].text, strlen(bad[i].text), "p.yaml", &err),
                         -1);
        assert_null(p);
        if (err.code != bad[i].code)
            print_error("[%s] %s: %s\n", bad[i].text, bd_code_str(err.code), err.msg);
        assert_int_equal(err.code, bad[i].code);
    }
}

/* ---- signing ------------------------------------------------------------------------ */

static void the_curator_and_reviewer_loop(void **state)
{
    (void)state;
    char root[700], dg_before[BD_DIGEST_BUF], dg_after[BD_DIGEST_BUF];
    new_bench(root, sizeof(root));
    char *before = read_case(root, "c1");
    current_digest(dg_before, root, "c1");

    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_DRAFT);

    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_AWAITING);
    assert_string_equal(r.author.fingerprint, K.alice);

    /* Signing writes provenance.yaml only: case.yaml and the digest are untouched. */
    char *after = read_case(root, "c1");
    assert_string_equal(after, before);
    free(after);
    current_digest(dg_after, root, "c1");
    assert_string_equal(dg_after, dg_before);

    assert_int_equal(sign(root, "c1", BD_ROLE_REVIEWER, K.bob), BD_OK);
    r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_SIGNED);
    assert_int_equal(r.err.code, BD_OK);
    assert_string_equal(r.reviewer.fingerprint, K.bob);

    bd_provfile *pf = load_prov(root, "c1");
    assert_string_equal(pf->author.identity, "alice@bench.example");
    assert_string_equal(pf->author.fingerprint, K.alice);
    assert_string_equal(pf->reviewer.identity, "bob@bench.example");
    assert_non_null(strstr(pf->reviewer.signature, "-----BEGIN PGP SIGNATURE-----\n"));
    bd_provfile_free(pf);

    /* A valid signature is never replaced silently; with replace, the author signing
     * again (same digest) keeps the review valid. */
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_E_PROVENANCE_SIGNED_ALREADY);
    assert_int_equal(sign_opt(root, "c1", BD_ROLE_AUTHOR, K.alice, true), BD_OK);
    assert_int_equal(verify(root, "c1").status, BD_PROV_ST_SIGNED);
    free(before);
}

/* The task class is a subject of its own: two people sign registration + rubric. */
static void the_task_class_is_signed_by_two(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_bench(root, sizeof(root));
    assert_int_equal(verify(root, NULL).status, BD_PROV_ST_DRAFT);
    assert_int_equal(sign(root, NULL, BD_ROLE_REVIEWER, K.bob), BD_E_PROVENANCE_MISSING);
    assert_int_equal(sign(root, NULL, BD_ROLE_AUTHOR, K.alice), BD_OK);
    assert_int_equal(verify(root, NULL).status, BD_PROV_ST_AWAITING);
    assert_int_equal(sign(root, NULL, BD_ROLE_REVIEWER, K.alice), BD_E_PROVENANCE_SAME_SIGNER);
    assert_int_equal(sign(root, NULL, BD_ROLE_REVIEWER, K.bob), BD_OK);
    bd_prov_result r = verify(root, NULL);
    assert_int_equal(r.status, BD_PROV_ST_SIGNED);
    assert_string_equal(r.author.fingerprint, K.alice);
    assert_string_equal(r.reviewer.fingerprint, K.bob);
    /* No case became signed by it. */
    assert_int_equal(verify(root, "c1").status, BD_PROV_ST_DRAFT);

    /* A task-class signature moved onto a case is bad (the message says task-class). */
    bd_provfile *tp = load_prov(root, NULL);
    put_block(root, "c1", BD_ROLE_AUTHOR, tp->author.identity, tp->author.fingerprint,
              tp->author.signature);
    bd_provfile_free(tp);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);

    /* A rubric edit makes both signatures stale, and signing refuses until re-pinned. */
    snprintf(p, sizeof(p), "%s/bench/tc/rubric.py", root);
    fx_write(p, "print('{\"passed\": true}')\n");
    r = verify(root, NULL);
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_STALE);
    assert_int_equal(sign(root, NULL, BD_ROLE_AUTHOR, K.alice), BD_E_TC_DIGEST_MISMATCH);
}

static void reviewer_rules_are_checked_before_signing(void **state)
{
    (void)state;
    char root[700], pp[1024];
    new_bench(root, sizeof(root));
    /* No author yet. */
    assert_int_equal(sign(root, "c1", BD_ROLE_REVIEWER, K.bob), BD_E_PROVENANCE_MISSING);
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    prov_path(pp, sizeof(pp), root, "c1");
    char *before = fx_read(pp);
    /* Same key as the author. */
    assert_int_equal(sign(root, "c1", BD_ROLE_REVIEWER, K.alice), BD_E_PROVENANCE_SAME_SIGNER);
    char *after = fx_read(pp);
    assert_string_equal(before, after);
    free(after);
    /* The reviewer's key re-signing the author role: refused, nothing written. */
    assert_int_equal(sign(root, "c1", BD_ROLE_REVIEWER, K.bob), BD_OK);
    free(before);
    before = fx_read(pp);
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.bob), BD_E_PROVENANCE_SAME_SIGNER);
    after = fx_read(pp);
    assert_string_equal(before, after);
    assert_int_equal(verify(root, "c1").status, BD_PROV_ST_SIGNED);
    free(after);
    free(before);
    /* carol is trusted as reviewer only. */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.carol), BD_E_PROVENANCE_UNTRUSTED);
    /* mallory is not trusted at all; dave's key has expired (not usable to sign). */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.mallory), BD_E_PROVENANCE_UNTRUSTED);
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.dave), BD_E_GPG_KEY_NOT_FOUND);
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, "not-a-fingerprint"), BD_E_USAGE);
    /* A reviewer refuses to countersign a bad author signature. */
    put_block(root, "c2", BD_ROLE_AUTHOR, "alice@bench.example", K.alice, SIG);
    assert_int_equal(sign(root, "c2", BD_ROLE_REVIEWER, K.bob), BD_E_PROVENANCE_BAD_SIGNATURE);
}

static void signing_refuses_a_case_off_its_pin(void **state)
{
    (void)state;
    char root[700], p[1024], pp[1024];
    new_bench(root, sizeof(root));
    case_path(p, sizeof(p), root, "c1", "input/prompt.txt");
    fx_write(p, "edited after pinning\n");
    prov_path(pp, sizeof(pp), root, "c1");
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_E_DIGEST_MISMATCH);
    assert_int_not_equal(access(pp, F_OK), 0);
    /* An edit of case.yaml itself (expected:) is inside the digest too. */
    case_path(p, sizeof(p), root, "c2", "case.yaml");
    char *y = fx_read(p);
    char *at = strstr(y, "answer: 42");
    assert_non_null(at);
    at[9] = '3';
    fx_write(p, y);
    free(y);
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.alice), BD_E_DIGEST_MISMATCH);
    /* A fresh, unpinned case. */
    env e;
    open_env(&e, root);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_case_scaffold(NULL, e.tc, "fresh", &err), 0);
    close_env(&e);
    assert_int_equal(sign(root, "fresh", BD_ROLE_AUTHOR, K.alice), BD_E_DIGEST_MISSING);
}

static void default_key_follows_gpg_conf(void **state)
{
    (void)state;
    bd_sign_key *keys = NULL;
    size_t n = 0;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_sign_list_keys(&keys, &n, NULL, &err), 0);
    /* alice bob carol mallory eve; dave's key expired. */
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        assert_string_not_equal(keys[i].fingerprint, K.dave);
    assert_true(keys[0].is_default);
    free(keys);

    char conf[700];
    snprintf(conf, sizeof(conf), "%s/gpg.conf", K.home);
    char line[128];
    snprintf(line, sizeof(line), "# test\ndefault-key %s\n", K.bob);
    fx_write(conf, line);
    bd_sign_key k;
    assert_int_equal(bd_sign_resolve_key(&k, NULL, &err), 0);
    assert_string_equal(k.fingerprint, K.bob);
    assert_string_equal(k.identity, "bob@bench.example");
    unlink(conf);
}

/* ---- verification: each failure its own code ----------------------------------------- */

static void forged_signature_is_bad(void **state)
{
    (void)state;
    char root[700], in[700], out[700];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    bd_provfile *pf = load_prov(root, "c1");
    /* One byte of the signature altered, the armor (and its CRC) still well-formed. */
    snprintf(in, sizeof(in), "%s/good.asc", root);
    snprintf(out, sizeof(out), "%s/forged.asc", root);
    fx_write(in, pf->author.signature);
    bd_provfile_free(pf);
    assert_int_equal(fx_sh("python3 '%s/tests/fixtures/gpg/forge.py' '%s' '%s'",
                           getenv("BD_SOURCE_DIR"), in, out),
                     0);
    char *forged = fx_read(out);
    put_block(root, "c1", BD_ROLE_AUTHOR, "alice@bench.example", K.alice, forged);
    free(forged);
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    if (!strstr(r.err.msg, "does not verify over the digest its block names"))
        print_error("message: %s\n", r.err.msg);
    assert_non_null(strstr(r.err.msg, "does not verify over the digest its block names"));
    /* A byte altered in the armor itself. */
    char *sig = fx_read(in);
    char *body = strstr(sig, "\n\n") + 2;
    body[8] = body[8] == 'A' ? 'B' : 'A';
    put_block(root, "c1", BD_ROLE_AUTHOR, "alice@bench.example", K.alice, sig);
    free(sig);
    r = verify(root, "c1");
    assert_int_equal(r.err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    assert_int_equal(r.status, BD_PROV_ST_BAD); /* never downgraded to draft */
    /* Not a signature at all. */
    put_block(root, "c1", BD_ROLE_AUTHOR, "alice@bench.example", K.alice, SIG);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
}

static void signature_over_another_cases_digest_is_bad(void **state)
{
    (void)state;
    char root[700], dg2[BD_DIGEST_BUF];
    new_bench(root, sizeof(root));
    current_digest(dg2, root, "c2");
    char *m = message_for(root, "c1", BD_ROLE_AUTHOR, dg2);
    char *sig = sign_msg(K.alice, m);
    put_block(root, "c1", BD_ROLE_AUTHOR, "alice@bench.example", K.alice, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    free(sig);
    free(m);
    /* Another case's whole signature block, copied over. */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.alice), BD_OK);
    bd_provfile *p2 = load_prov(root, "c2");
    put_block(root, "c3", BD_ROLE_AUTHOR, p2->author.identity, p2->author.fingerprint,
              p2->author.signature);
    bd_provfile_free(p2);
    assert_int_equal(verify(root, "c3").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    assert_int_equal(verify(root, "c2").status, BD_PROV_ST_AWAITING);
}

static void author_signature_replayed_as_reviewer_is_bad(void **state)
{
    (void)state;
    char root[700];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    bd_provfile *pf = load_prov(root, "c1");
    put_block(root, "c1", BD_ROLE_REVIEWER, pf->author.identity, pf->author.fingerprint,
              pf->author.signature);
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    assert_int_equal(r.author.err.code, BD_OK);
    /* Claiming to be bob changes nothing: the bytes still say "author". */
    put_block(root, "c1", BD_ROLE_REVIEWER, "bob@bench.example", K.bob, pf->author.signature);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    bd_provfile_free(pf);
}

static void same_signer_twice_is_refused(void **state)
{
    (void)state;
    char root[700];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    char *m = message_for(root, "c1", BD_ROLE_REVIEWER, NULL);
    char *sig = sign_msg(K.alice, m);
    put_block(root, "c1", BD_ROLE_REVIEWER, "alice@bench.example", K.alice, sig);
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_SAME_SIGNER);
    free(sig);
    free(m);
}

static void untrusted_signers_are_refused(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_bench(root, sizeof(root));
    /* mallory: key shipped in bench/keys, not in trusted-signers.yaml (yet ultimately
     * trusted in the user's keyring, which verification must not consult). */
    char *m = message_for(root, "c1", BD_ROLE_AUTHOR, NULL);
    char *sig = sign_msg(K.mallory, m);
    put_block(root, "c1", BD_ROLE_AUTHOR, "mallory@bench.example", K.mallory, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_UNTRUSTED);
    free(sig);
    /* carol: trusted, but only as reviewer. */
    sig = sign_msg(K.carol, m);
    put_block(root, "c1", BD_ROLE_AUTHOR, "carol@bench.example", K.carol, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_UNTRUSTED);
    free(sig);
    free(m);
    /* alice: trusted, but her key is not in bench/keys. */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.alice), BD_OK);
    snprintf(p, sizeof(p), "%s/bench/keys/alice.asc", root);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(verify(root, "c2").err.code, BD_E_PROVENANCE_UNTRUSTED);
    /* The block must name the key that signed. */
    fx_sh("cp '%s/keys/alice.asc' '%s'", K.dir, p);
    bd_provfile *pf = load_prov(root, "c2");
    put_block(root, "c2", BD_ROLE_AUTHOR, "bob@bench.example", K.bob, pf->author.signature);
    bd_provfile_free(pf);
    assert_int_equal(verify(root, "c2").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
}

static void expired_and_revoked_keys_are_refused(void **state)
{
    (void)state;
    char root[700], extra[256];
    new_bench(root, sizeof(root));
    /* dave signed while his key was valid (faked clock); it has expired since. */
    char *m = message_for(root, "c1", BD_ROLE_AUTHOR, NULL);
    snprintf(extra, sizeof(extra), "--faked-system-time %s -u %s", K.dave_time, K.dave);
    char *sig = sign_msg_cli(extra, m);
    put_block(root, "c1", BD_ROLE_AUTHOR, "dave@bench.example", K.dave, sig);
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.err.code, BD_E_PROVENANCE_KEY_EXPIRED);
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    free(sig);
    /* eve signed before her key was revoked; bench/keys/eve.asc carries the revocation. */
    sig = sign_msg(K.eve, m);
    put_block(root, "c1", BD_ROLE_AUTHOR, "eve@bench.example", K.eve, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_KEY_REVOKED);
    free(sig);
    free(m);
}

static void edited_case_after_signing_is_stale(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    case_path(p, sizeof(p), root, "c1", "expected/answer.txt");
    fx_write(p, "43\n");
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_STALE);
    /* expected: in case.yaml is signed too. */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.alice), BD_OK);
    case_path(p, sizeof(p), root, "c2", "case.yaml");
    char *y = fx_read(p);
    char *at = strstr(y, "answer: 42");
    assert_non_null(at);
    at[9] = '3';
    fx_write(p, y);
    free(y);
    r = verify(root, "c2");
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_STALE);
    /* provenance.yaml is outside the digest: editing its last_validated_at changes nothing. */
    assert_int_equal(sign(root, "c3", BD_ROLE_AUTHOR, K.alice), BD_OK);
    char pp[1024];
    prov_path(pp, sizeof(pp), root, "c3");
    fx_sh("printf 'last_validated_at: \"2026-05-13T10:00:00Z\"\\n' >>'%s'", pp);
    assert_int_equal(verify(root, "c3").status, BD_PROV_ST_AWAITING);
}

static void more_than_one_signature_is_bad(void **state)
{
    (void)state;
    char root[700], extra[256];
    new_bench(root, sizeof(root));
    char *m = message_for(root, "c1", BD_ROLE_AUTHOR, NULL);
    snprintf(extra, sizeof(extra), "-u %s -u %s", K.alice, K.bob);
    char *sig = sign_msg_cli(extra, m);
    put_block(root, "c1", BD_ROLE_AUTHOR, "alice@bench.example", K.alice, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    free(sig);
    free(m);
}

static void bad_key_files_are_refused(void **state)
{
    (void)state;
    char root[700], p[1024], dg[BD_DIGEST_BUF];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    snprintf(p, sizeof(p), "%s/bench/keys/zz.asc", root);
    fx_write(p,
             "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n-----END PGP PRIVATE KEY BLOCK-----\n");
    current_digest(dg, root, "c1");
    bd_provfile *pf = load_prov(root, "c1");
    bd_subject s = {BD_SUBJECT_CASE, "tc", "c1", dg, dg, pf};
    env e;
    open_env(&e, root);
    bd_prov_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_provenance_verify(&r, e.ctx, &s, &err), -1);
    assert_int_equal(err.code, BD_E_GPG_BAD_KEYFILE);
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    close_env(&e);
    fx_write(p, "not a key\n");
    open_env(&e, root);
    assert_int_equal(bd_provenance_verify(&r, e.ctx, &s, &err), -1);
    assert_int_equal(err.code, BD_E_GPG_BAD_KEYFILE);
    close_env(&e);
    bd_provfile_free(pf);
}

static void private_home_is_removed(void **state)
{
    (void)state;
    char root[700], tmp[800];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    snprintf(tmp, sizeof(tmp), "%s/tmp", root);
    assert_int_equal(mkdir(tmp, 0700), 0);
    char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);
    assert_int_equal(verify(root, "c1").status, BD_PROV_ST_AWAITING);
    if (old)
        setenv("TMPDIR", old, 1);
    else
        unsetenv("TMPDIR");
    free(old);
    /* Nothing is left behind: no home, no agent socket. */
    DIR *d = opendir(tmp);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    assert_int_equal(n, 0);
}

/* The shipped demo bench: every signature verifies, every task class is signed, and every
 * case status is visible. */
static void demo_bench_shows_every_status(void **state)
{
    (void)state;
    const char *src = getenv("BD_SOURCE_DIR");
    assert_non_null(src);
    bd_bench *b = NULL;
    bd_prov_ctx *ctx = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_bench_open(&b, src, &err), 0);
    assert_int_equal(bd_prov_ctx_new(&ctx, b->bench_dir, &err), 0);
    assert_true(bd_prov_ctx_signers(ctx)->n >= 2);
    assert_true(b->n_task_classes >= 3);
    for (size_t t = 0; t < b->n_task_classes; t++) {
        bd_task_class *tc = NULL;
        assert_int_equal(bd_task_class_load(&tc, b, b->task_classes[t], &err), 0);
        bd_verify_report rep;
        bd_verify_opts vopt = {.prov = ctx, .collect = true};
        int rc = bd_verify(&rep, tc, &vopt, NULL, &err);
        const bd_err *f = bd_verify_first_failure(&rep);
        if (rc != 0 || f)
            fail_msg("%s: %s: %s", tc->name, f ? bd_code_str(f->code) : bd_code_str(err.code),
                     f ? f->msg : err.msg);
        assert_true(rep.tc_prov_checked);
        assert_int_equal(rep.tc_prov.status, BD_PROV_ST_SIGNED);
        int count[4] = {0};
        for (size_t i = 0; i < rep.n_cases; i++) {
            assert_true(rep.cases[i].prov_checked);
            count[rep.cases[i].prov.status]++;
        }
        assert_in_range(count[BD_PROV_ST_DRAFT], 1, 2);
        assert_in_range(count[BD_PROV_ST_AWAITING], 2, 3);
        assert_true(count[BD_PROV_ST_SIGNED] > count[BD_PROV_ST_AWAITING]);
        assert_int_equal(count[BD_PROV_ST_BAD], 0);
        bd_verify_report_release(&rep);
        bd_task_class_free(tc);
    }
    bd_prov_ctx_free(ctx);
    bd_bench_free(b);
}

/* What bd_verify's options choose: every case streamed, collected, the task class alone,
 * the cases alone, and a stop at the first failure. */
typedef struct seen {
    int tc, cases, orphans;
} seen;
static void seen_tc(const bd_verify_report *r, void *p)
{
    (void)r;
    ((seen *)p)->tc++;
}
static void seen_case(bd_case_check *c, void *p)
{
    (void)c;
    ((seen *)p)->cases++;
}
static void seen_orphan(const bd_err *e, void *p)
{
    (void)e;
    ((seen *)p)->orphans++;
}

static void verify_options_choose_what_is_checked(void **state)
{
    (void)state;
    char root[600], p[1024];
    new_bench(root, sizeof(root));
    /* c1 and c2 off their pins. */
    case_path(p, sizeof(p), root, "c1", "note.txt");
    fx_write(p, "changed\n");
    case_path(p, sizeof(p), root, "c2", "note.txt");
    fx_write(p, "changed\n");
    env e;
    open_env(&e, root);
    bd_err err = BD_ERR_INIT;
    bd_verify_report rep;
    seen sn = {0};
    bd_verify_sink sink = {seen_tc, seen_case, seen_orphan, &sn};

    assert_int_equal(bd_verify(&rep, e.tc, NULL, &sink, &err), 1);
    assert_int_equal(rep.n_cases, 3);
    assert_int_equal(rep.n_failed, 2);
    assert_null(rep.cases); /* streamed */
    assert_int_equal(sn.tc, 1);
    assert_int_equal(sn.cases, 3);
    bd_verify_report_release(&rep);

    bd_verify_opts collect = {.prov = e.ctx, .collect = true};
    assert_int_equal(bd_verify(&rep, e.tc, &collect, NULL, &err), 1);
    assert_int_equal(rep.n_cases, 3);
    assert_true(rep.tc_prov_checked);
    assert_string_equal(rep.cases[2].case_id, "c3");
    assert_int_equal(bd_verify_first_failure(&rep)->code, BD_E_DIGEST_MISMATCH);
    assert_string_equal(bd_verify_first_failure(&rep)->file, rep.cases[0].err.file);
    bd_verify_report_release(&rep);

    sn = (seen){0};
    bd_verify_opts early = {.stop_early = true};
    assert_int_equal(bd_verify(&rep, e.tc, &early, &sink, &err), 1);
    assert_int_equal(rep.n_cases, 1); /* c2 and c3 are not looked at */
    assert_int_equal(rep.n_failed, 1);
    assert_int_equal(sn.cases, 1);
    bd_verify_report_release(&rep);

    sn = (seen){0};
    bd_verify_opts tc_only = {.no_cases = true, .prov = e.ctx};
    assert_int_equal(bd_verify(&rep, e.tc, &tc_only, &sink, &err), 0);
    assert_int_equal(rep.n_cases, 0);
    assert_true(rep.tc_prov_checked);
    assert_int_equal(sn.tc, 1);
    assert_int_equal(sn.cases, 0);
    bd_verify_report_release(&rep);

    sn = (seen){0};
    const char *ids[] = {"c3"};
    bd_verify_opts cases_only = {
        .case_ids = ids, .n_case_ids = 1, .no_task_class = true, .scan_here = true};
    assert_int_equal(bd_verify(&rep, e.tc, &cases_only, &sink, &err), 0);
    assert_int_equal(rep.n_cases, 1);
    assert_string_equal(rep.tc_digest, "");
    assert_int_equal(sn.tc, 0);
    assert_int_equal(sn.cases, 1);
    bd_verify_report_release(&rep);
    close_env(&e);

    /* A pin naming no case: reported after the cases, unless the check stopped first. */
    case_path(p, sizeof(p), root, "c3", "");
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
    assert_int_equal(system(cmd), 0);
    open_env(&e, root);
    collect.prov = e.ctx; /* the new context: the last one was freed with its env */
    sn = (seen){0};
    assert_int_equal(bd_verify(&rep, e.tc, &collect, &sink, &err), 1);
    assert_int_equal(rep.n_orphans, 1);
    assert_int_equal(rep.orphans[0].code, BD_E_PIN_ORPHAN);
    assert_int_equal(sn.orphans, 1);
    bd_verify_report_release(&rep);
    sn = (seen){0};
    assert_int_equal(bd_verify(&rep, e.tc, &early, &sink, &err), 1);
    assert_int_equal(rep.n_orphans, 0);
    assert_int_equal(sn.orphans, 0);
    bd_verify_report_release(&rep);
    close_env(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(message_is_exact),
        cmocka_unit_test(message_refuses_bad_input),
        cmocka_unit_test(provfile_round_trips),
        cmocka_unit_test(the_curator_and_reviewer_loop),
        cmocka_unit_test(the_task_class_is_signed_by_two),
        cmocka_unit_test(reviewer_rules_are_checked_before_signing),
        cmocka_unit_test(signing_refuses_a_case_off_its_pin),
        cmocka_unit_test(default_key_follows_gpg_conf),
        cmocka_unit_test(forged_signature_is_bad),
        cmocka_unit_test(signature_over_another_cases_digest_is_bad),
        cmocka_unit_test(author_signature_replayed_as_reviewer_is_bad),
        cmocka_unit_test(same_signer_twice_is_refused),
        cmocka_unit_test(untrusted_signers_are_refused),
        cmocka_unit_test(expired_and_revoked_keys_are_refused),
        cmocka_unit_test(edited_case_after_signing_is_stale),
        cmocka_unit_test(more_than_one_signature_is_bad),
        cmocka_unit_test(bad_key_files_are_refused),
        cmocka_unit_test(private_home_is_removed),
        cmocka_unit_test(verify_options_choose_what_is_checked),
        cmocka_unit_test(demo_bench_shows_every_status),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
