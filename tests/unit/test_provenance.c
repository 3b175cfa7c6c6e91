/*
 * Unit tests for provenance (DESIGN.md §6): the exact message, signing into case.yaml
 * without disturbing it, and verification against a private GnuPG home — every failure
 * with its own code. Keys are generated at test time by tests/fixtures/gpg/make-keys.sh.
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

/* Sign case `id` as `role` with key `fpr` through the core; returns the error code. */
static bd_code sign(const char *root, const char *id, int role, const char *fpr)
{
    env e;
    open_env(&e, root);
    bd_sign_opts o = BD_SIGN_OPTS_INIT;
    o.key = fpr;
    o.gnupg_home = K.home;
    bd_sign_result r;
    bd_err err = BD_ERR_INIT;
    int rc = bd_provenance_sign_case(&r, e.ctx, e.tc, id, role, &o, &err);
    if (rc < 0)
        print_message("sign: %s: %s\n", bd_code_str(err.code), err.msg);
    bd_sign_result_release(&r);
    close_env(&e);
    return rc == 0 ? BD_OK : err.code;
}

/* Verify case `id` with its current digest. */
static bd_prov_result verify(const char *root, const char *id)
{
    env e;
    open_env(&e, root);
    bd_err err = BD_ERR_INIT;
    bd_case *c = NULL;
    assert_int_equal(bd_task_class_case(&c, e.tc, id, &err), 0);
    char dir[1024], dg[BD_DIGEST_BUF];
    snprintf(dir, sizeof(dir), "%s/bench/tc/cases/%s", root, id);
    assert_int_equal(bd_digest_case_dir(dg, dir, NULL, &err), 0);
    bd_prov_result r;
    int rc = bd_provenance_verify_case(&r, e.ctx, c, dg, &err);
    assert_int_not_equal(rc, -1);
    assert_int_equal(rc, r.status == BD_PROV_ST_BAD ? 1 : 0);
    if (r.status == BD_PROV_ST_BAD)
        print_message("verify %s: %s: %s\n", id, bd_code_str(r.err.code), r.err.msg);
    bd_case_free(c);
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

static bd_case *load_case(const char *root, const char *id)
{
    char p[1024];
    case_path(p, sizeof(p), root, id, "case.yaml");
    bd_case *c = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_case_load(&c, p, id, &err), 0);
    return c;
}

/* Write a signature block straight into case.yaml (what a forger could do). */
static void put_block(const char *root, const char *id, const char *key, const char *identity,
                      const char *fpr, const char *sig)
{
    char p[1024];
    case_path(p, sizeof(p), root, id, "case.yaml");
    char *text = fx_read(p);
    bd_err err = BD_ERR_INIT;
    char *next = bd_provenance_set_block(text, key, identity, fpr, sig, p, &err);
    assert_non_null(next);
    fx_write(p, next);
    free(next);
    free(text);
}

/* The exact message for case `id` of `root` as `role` over `digest` (NULL: its pin). */
static char *message_for(const char *root, const char *id, int role, const char *digest)
{
    bd_case *c = load_case(root, id);
    char *m = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_provenance_message(&m, NULL, role, c->case_id, c->added_at,
                                           digest ? digest : c->case_digest, &err),
                     0);
    bd_case_free(c);
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
    char mp[700], sp[700];
    snprintf(mp, sizeof(mp), "%s/msg.txt", T);
    snprintf(sp, sizeof(sp), "%s/msg.asc", T);
    fx_write(mp, msg);
    unlink(sp);
    assert_int_equal(fx_sh("gpg --homedir '%s' --batch --yes --quiet --pinentry-mode loopback "
                           "--passphrase '' %s --armor --detach-sign -o '%s' '%s' 2>/dev/null",
                           K.home, extra, sp, mp),
                     0);
    return fx_read(sp);
}

/* ---- the message ------------------------------------------------------------------- */

static void message_is_exact(void **state)
{
    (void)state;
    char *m = NULL;
    size_t len = 0;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(
        bd_provenance_message(&m, &len, BD_ROLE_AUTHOR, "ghsa-1", "2026-05-12T14:00:00Z", DG, &err),
        0);
    char want[512];
    snprintf(want, sizeof(want),
             "benchdesk-provenance-v1\nrole: author\ncase_id: ghsa-1\n"
             "added_at: 2026-05-12T14:00:00Z\ncase_digest: %s\n",
             DG);
    assert_string_equal(m, want);
    assert_int_equal(len, strlen(want));
    free(m);
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_REVIEWER, "ghsa-1",
                                           "2026-05-12T14:00:00Z", DG, &err),
                     0);
    assert_non_null(strstr(m, "\nrole: reviewer\n"));
    free(m);
}

static void message_refuses_bad_input(void **state)
{
    (void)state;
    char *m = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_provenance_message(&m, NULL, 3, "a", "t", DG, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, "../x", "t", DG, &err), -1);
    assert_int_equal(err.code, BD_E_BAD_ID);
    assert_int_equal(
        bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, "a", "t\ncase_digest: x", DG, &err), -1);
    assert_int_equal(err.code, BD_E_USAGE);
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, "a", "t", "", &err), -1);
    assert_int_equal(err.code, BD_E_DIGEST_MISSING);
    assert_int_equal(bd_provenance_message(&m, NULL, BD_ROLE_AUTHOR, "a", "t", "blake3:xyz", &err),
                     -1);
    assert_int_equal(err.code, BD_E_DIGEST_MISSING);
    assert_null(m);
    int role = 0;
    assert_int_equal(bd_provenance_role_parse("author", &role), 0);
    assert_int_equal(role, BD_ROLE_AUTHOR);
    assert_int_equal(bd_provenance_role_parse("Author", &role), -1);
}

/* ---- editing case.yaml ------------------------------------------------------------- */

static const char SIG[] = "-----BEGIN PGP SIGNATURE-----\n\nabc\n-----END PGP SIGNATURE-----\n";

static void set_block_inserts_and_replaces(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    const char *in = "a: 1\nprovenance:\n  source: curated\n  added_at: \"t\"\n"
                     "  # note\n  last_validated_at: null\nz: 2\n";
    char *o1 = bd_provenance_set_block(in, "added_by", "a@x", "AB", SIG, "c.yaml", &err);
    assert_non_null(o1);
    const char *want1 =
        "a: 1\nprovenance:\n  source: curated\n  added_at: \"t\"\n"
        "  added_by:\n    identity: \"a@x\"\n    fingerprint: \"AB\"\n    signature: |\n"
        "      -----BEGIN PGP SIGNATURE-----\n\n      abc\n      -----END PGP SIGNATURE-----\n"
        "  # note\n  last_validated_at: null\nz: 2\n";
    assert_string_equal(o1, want1);
    /* reviewed_by goes right after added_by. */
    char *o2 = bd_provenance_set_block(o1, "reviewed_by", "b@x", "CD", SIG, "c.yaml", &err);
    assert_non_null(o2);
    assert_non_null(strstr(o2, "END PGP SIGNATURE-----\n  reviewed_by:\n    identity: \"b@x\"\n"));
    /* Replacing added_by touches only that block. */
    char *o3 = bd_provenance_set_block(o2, "added_by", "q\"@x", "EF", SIG, "c.yaml", &err);
    assert_non_null(o3);
    assert_non_null(strstr(o3, "identity: \"q\\\"@x\"\n    fingerprint: \"EF\""));
    assert_null(strstr(o3, "\"AB\""));
    assert_non_null(strstr(o3, "\"CD\""));
    assert_non_null(strstr(o3, "  # note\n  last_validated_at: null\nz: 2\n"));
    free(o1);
    free(o2);
    free(o3);
    /* No trailing newline, provenance last, four-space indentation. */
    char *o4 = bd_provenance_set_block("provenance:\n    added_at: x", "added_by", "a", "AB", SIG,
                                       "c.yaml", &err);
    assert_non_null(o4);
    assert_non_null(strstr(o4, "    added_at: x\n    added_by:\n      identity: \"a\"\n"));
    free(o4);
}

static void set_block_refuses_odd_layouts(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    assert_null(bd_provenance_set_block("provenance: {source: curated}\n", "added_by", "a", "AB",
                                        SIG, "c.yaml", &err));
    assert_int_equal(err.code, BD_E_CASE_SCHEMA);
    assert_int_equal(err.line, 1);
    bd_err_clear(&err);
    assert_null(bd_provenance_set_block("a: 1\n", "added_by", "a", "AB", SIG, "c.yaml", &err));
    assert_int_equal(err.code, BD_E_CASE_SCHEMA);
    bd_err_clear(&err);
    /* Control characters never reach the file. */
    assert_null(bd_provenance_set_block("provenance:\n  a: 1\n", "added_by", "a\x01", "AB", SIG,
                                        "c.yaml", &err));
    assert_int_equal(err.code, BD_E_CASE_SCHEMA);
}

/* ---- signing ------------------------------------------------------------------------ */

static void the_curator_and_reviewer_loop(void **state)
{
    (void)state;
    char root[700];
    new_bench(root, sizeof(root));
    char *before = read_case(root, "c1");

    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_DRAFT);

    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_AWAITING);
    assert_string_equal(r.author.fingerprint, K.alice);

    /* Nothing but the new block changed: cut it out and the file is as it was. */
    char *after = read_case(root, "c1");
    char *s = strstr(after, "  added_by:\n");
    char *e = strstr(after, "  # validated by hand\n");
    assert_non_null(s);
    assert_non_null(e);
    memmove(s, e, strlen(e) + 1);
    assert_string_equal(after, before);
    free(after);

    assert_int_equal(sign(root, "c1", BD_ROLE_REVIEWER, K.bob), BD_OK);
    r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_SIGNED);
    assert_int_equal(r.err.code, BD_OK);
    assert_string_equal(r.reviewer.fingerprint, K.bob);

    bd_case *c = load_case(root, "c1");
    assert_string_equal(c->added_by.identity, "alice@bench.example");
    assert_string_equal(c->added_by.fingerprint, K.alice);
    assert_string_equal(c->reviewed_by.identity, "bob@bench.example");
    assert_non_null(strstr(c->reviewed_by.signature, "-----BEGIN PGP SIGNATURE-----\n"));
    bd_case_free(c);

    /* The author signing again (same digest) keeps the review valid. */
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    assert_int_equal(verify(root, "c1").status, BD_PROV_ST_SIGNED);
    free(before);
}

static void reviewer_rules_are_checked_before_signing(void **state)
{
    (void)state;
    char root[700];
    new_bench(root, sizeof(root));
    /* No author yet. */
    assert_int_equal(sign(root, "c1", BD_ROLE_REVIEWER, K.bob), BD_E_PROVENANCE_MISSING);
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    char *before = read_case(root, "c1");
    /* Same key as the author. */
    assert_int_equal(sign(root, "c1", BD_ROLE_REVIEWER, K.alice), BD_E_PROVENANCE_SAME_SIGNER);
    char *after = read_case(root, "c1");
    assert_string_equal(before, after);
    free(after);
    free(before);
    /* carol is trusted as reviewer only. */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.carol), BD_E_PROVENANCE_UNTRUSTED);
    /* mallory is not trusted at all; dave's key has expired (not usable to sign). */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.mallory), BD_E_PROVENANCE_UNTRUSTED);
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.dave), BD_E_GPG_KEY_NOT_FOUND);
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, "not-a-fingerprint"), BD_E_USAGE);
    /* A reviewer refuses to countersign a bad author signature. */
    put_block(root, "c2", "added_by", "alice@bench.example", K.alice, SIG);
    assert_int_equal(sign(root, "c2", BD_ROLE_REVIEWER, K.bob), BD_E_PROVENANCE_BAD_SIGNATURE);
}

static void signing_refuses_a_case_off_its_pin(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_bench(root, sizeof(root));
    case_path(p, sizeof(p), root, "c1", "input/prompt.txt");
    fx_write(p, "edited after pinning\n");
    char *before = read_case(root, "c1");
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_E_DIGEST_MISMATCH);
    char *after = read_case(root, "c1");
    assert_string_equal(before, after);
    free(after);
    free(before);
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
    bd_case *c = load_case(root, "c1");
    /* One byte of the signature altered, the armor (and its CRC) still well-formed. */
    snprintf(in, sizeof(in), "%s/good.asc", root);
    snprintf(out, sizeof(out), "%s/forged.asc", root);
    fx_write(in, c->added_by.signature);
    bd_case_free(c);
    assert_int_equal(fx_sh("python3 '%s/tests/fixtures/gpg/forge.py' '%s' '%s'",
                           getenv("BD_SOURCE_DIR"), in, out),
                     0);
    char *forged = fx_read(out);
    put_block(root, "c1", "added_by", "alice@bench.example", K.alice, forged);
    free(forged);
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    assert_non_null(strstr(r.err.msg, "does not verify"));
    /* A byte altered in the armor itself. */
    char *sig = fx_read(in);
    char *body = strstr(sig, "\n\n") + 2;
    body[8] = body[8] == 'A' ? 'B' : 'A';
    put_block(root, "c1", "added_by", "alice@bench.example", K.alice, sig);
    free(sig);
    r = verify(root, "c1");
    assert_int_equal(r.err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    assert_int_equal(r.status, BD_PROV_ST_BAD); /* never downgraded to draft */
    /* Not a signature at all. */
    put_block(root, "c1", "added_by", "alice@bench.example", K.alice, SIG);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
}

static void signature_over_another_cases_digest_is_bad(void **state)
{
    (void)state;
    char root[700];
    new_bench(root, sizeof(root));
    bd_case *c2 = load_case(root, "c2");
    char *m = message_for(root, "c1", BD_ROLE_AUTHOR, c2->case_digest);
    bd_case_free(c2);
    char *sig = sign_msg(K.alice, m);
    put_block(root, "c1", "added_by", "alice@bench.example", K.alice, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    free(sig);
    free(m);
    /* Another case's whole signature block, copied over. */
    assert_int_equal(sign(root, "c2", BD_ROLE_AUTHOR, K.alice), BD_OK);
    c2 = load_case(root, "c2");
    put_block(root, "c3", "added_by", c2->added_by.identity, c2->added_by.fingerprint,
              c2->added_by.signature);
    bd_case_free(c2);
    assert_int_equal(verify(root, "c3").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    assert_int_equal(verify(root, "c2").status, BD_PROV_ST_AWAITING);
}

static void author_signature_replayed_as_reviewer_is_bad(void **state)
{
    (void)state;
    char root[700];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    bd_case *c = load_case(root, "c1");
    put_block(root, "c1", "reviewed_by", c->added_by.identity, c->added_by.fingerprint,
              c->added_by.signature);
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    assert_int_equal(r.err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    assert_int_equal(r.author.err.code, BD_OK);
    /* Claiming to be bob changes nothing: the bytes still say "author". */
    put_block(root, "c1", "reviewed_by", "bob@bench.example", K.bob, c->added_by.signature);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    bd_case_free(c);
}

static void same_signer_twice_is_refused(void **state)
{
    (void)state;
    char root[700];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    char *m = message_for(root, "c1", BD_ROLE_REVIEWER, NULL);
    char *sig = sign_msg(K.alice, m);
    put_block(root, "c1", "reviewed_by", "alice@bench.example", K.alice, sig);
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
    put_block(root, "c1", "added_by", "mallory@bench.example", K.mallory, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_UNTRUSTED);
    free(sig);
    /* carol: trusted, but only as reviewer. */
    sig = sign_msg(K.carol, m);
    put_block(root, "c1", "added_by", "carol@bench.example", K.carol, sig);
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
    bd_case *c = load_case(root, "c2");
    put_block(root, "c2", "added_by", "bob@bench.example", K.bob, c->added_by.signature);
    bd_case_free(c);
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
    put_block(root, "c1", "added_by", "dave@bench.example", K.dave, sig);
    bd_prov_result r = verify(root, "c1");
    assert_int_equal(r.err.code, BD_E_PROVENANCE_KEY_EXPIRED);
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    free(sig);
    /* eve signed before her key was revoked; bench/keys/eve.asc carries the revocation. */
    sig = sign_msg(K.eve, m);
    put_block(root, "c1", "added_by", "eve@bench.example", K.eve, sig);
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
}

static void more_than_one_signature_is_bad(void **state)
{
    (void)state;
    char root[700], extra[256];
    new_bench(root, sizeof(root));
    char *m = message_for(root, "c1", BD_ROLE_AUTHOR, NULL);
    snprintf(extra, sizeof(extra), "-u %s -u %s", K.alice, K.bob);
    char *sig = sign_msg_cli(extra, m);
    put_block(root, "c1", "added_by", "alice@bench.example", K.alice, sig);
    assert_int_equal(verify(root, "c1").err.code, BD_E_PROVENANCE_BAD_SIGNATURE);
    free(sig);
    free(m);
}

static void bad_key_files_are_refused(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_bench(root, sizeof(root));
    assert_int_equal(sign(root, "c1", BD_ROLE_AUTHOR, K.alice), BD_OK);
    snprintf(p, sizeof(p), "%s/bench/keys/zz.asc", root);
    fx_write(p,
             "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n-----END PGP PRIVATE KEY BLOCK-----\n");
    env e;
    open_env(&e, root);
    bd_case *c = load_case(root, "c1");
    bd_prov_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_provenance_verify_case(&r, e.ctx, c, c->case_digest, &err), -1);
    assert_int_equal(err.code, BD_E_GPG_BAD_KEYFILE);
    assert_int_equal(r.status, BD_PROV_ST_BAD);
    close_env(&e);
    fx_write(p, "not a key\n");
    open_env(&e, root);
    assert_int_equal(bd_provenance_verify_case(&r, e.ctx, c, c->case_digest, &err), -1);
    assert_int_equal(err.code, BD_E_GPG_BAD_KEYFILE);
    close_env(&e);
    bd_case_free(c);
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

/* The shipped demo bench: every signature verifies, and every status is visible. */
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
        int count[4] = {0};
        for (size_t i = 0; i < tc->n_cases; i++) {
            bd_case_check chk;
            assert_int_equal(bd_verify_case(&chk, tc, tc->case_ids[i]), 0);
            bd_prov_result r;
            int rc = bd_provenance_verify_case(&r, ctx, chk.loaded, chk.digest, &err);
            if (rc != 0)
                fail_msg("%s/%s: %s: %s", tc->name, tc->case_ids[i], bd_code_str(r.err.code),
                         r.err.msg);
            count[r.status]++;
            bd_case_check_release(&chk);
        }
        assert_in_range(count[BD_PROV_ST_DRAFT], 1, 2);
        assert_in_range(count[BD_PROV_ST_AWAITING], 2, 3);
        assert_true(count[BD_PROV_ST_SIGNED] > count[BD_PROV_ST_AWAITING]);
        assert_int_equal(count[BD_PROV_ST_BAD], 0);
        bd_task_class_free(tc);
    }
    bd_prov_ctx_free(ctx);
    bd_bench_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(message_is_exact),
        cmocka_unit_test(message_refuses_bad_input),
        cmocka_unit_test(set_block_inserts_and_replaces),
        cmocka_unit_test(set_block_refuses_odd_layouts),
        cmocka_unit_test(the_curator_and_reviewer_loop),
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
        cmocka_unit_test(demo_bench_shows_every_status),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
