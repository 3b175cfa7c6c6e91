/*
 * provenance.c — signing and verifying the two-person provenance of a case (§6).
 *
 * Verification runs GnuPG (through GPGME) against a private home holding only the
 * bench's own public keys; its gpg.conf turns off agent autostart and key retrieval so
 * verifying starts no daemon and touches no network. Signing runs against the user's
 * own keyring.
 */
#include "provenance.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpgme.h>

#include "fsutil.h"
#include "verify.h"

#define KEYFILE_MAX    (1024 * 1024)
#define SIGNATURE_MAX  (64 * 1024)
#define CASE_YAML_MAX  (1024 * 1024)
#define GPG_CONF_MAX   (256 * 1024)
#define GPG_MIN_ENGINE "2.1.0"

/* ---- init and small helpers -------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_failed; /* 1: gpgme too old, 2: no usable gpg engine */

static void init_gpgme(void)
{
    if (!gpgme_check_version("1.7.0")) {
        init_failed = 1;
        return;
    }
    const char *ctype = setlocale(LC_CTYPE, NULL);
    if (ctype)
        gpgme_set_locale(NULL, LC_CTYPE, ctype);
    if (gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP) != 0)
        init_failed = 2;
}

int bd_provenance_init(bd_err *err)
{
    pthread_once(&init_once, init_gpgme);
    if (init_failed == 1)
        return bd_err_set(err, BD_E_GPG_UNAVAILABLE, NULL, 0, 0,
                          "GPGME is older than 1.7.0; install the Debian package libgpgme11");
    if (init_failed == 2)
        return bd_err_set(err, BD_E_GPG_UNAVAILABLE, NULL, 0, 0,
                          "no usable gpg engine (GnuPG 2.1 or later) was found; install the "
                          "Debian package gnupg");
    return 0;
}

static void err_text(gpgme_error_t e, char *buf, size_t cap)
{
    if (gpgme_strerror_r(e, buf, cap) != 0)
        snprintf(buf, cap, "GnuPG error %u", (unsigned)gpgme_err_code(e));
}

static int gpg_fail(bd_err *err, bd_code code, gpgme_error_t e, const char *what)
{
    char msg[256];
    err_text(e, msg, sizeof(msg));
    return bd_err_set(err, code, NULL, 0, 0, "%s: %s", what, msg);
}

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

const char *bd_provenance_role_str(int role)
{
    if (role == BD_ROLE_AUTHOR)
        return "author";
    if (role == BD_ROLE_REVIEWER)
        return "reviewer";
    return NULL;
}

int bd_provenance_role_parse(const char *s, int *role)
{
    if (s && strcmp(s, "author") == 0) {
        *role = BD_ROLE_AUTHOR;
        return 0;
    }
    if (s && strcmp(s, "reviewer") == 0) {
        *role = BD_ROLE_REVIEWER;
        return 0;
    }
    return -1;
}

const char *bd_prov_status_str(bd_prov_status s)
{
    switch (s) {
    case BD_PROV_ST_SIGNED:
        return "signed";
    case BD_PROV_ST_AWAITING:
        return "awaiting_review";
    case BD_PROV_ST_BAD:
        return "bad";
    case BD_PROV_ST_DRAFT:
        break;
    }
    return "draft";
}

static bool one_line(const char *s)
{
    return s && s[0] && !strpbrk(s, "\r\n");
}

int bd_provenance_message(char **out, size_t *len, int role, const char *case_id,
                          const char *added_at, const char *case_digest, bd_err *err)
{
    *out = NULL;
    const char *r = bd_provenance_role_str(role);
    if (!r)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "role must be author or reviewer");
    if (!case_id || !bd_name_valid(case_id))
        return bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                          "the case id is not a valid id; cannot build a provenance message");
    if (!one_line(added_at))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "case %s has no one-line added_at; cannot build a provenance message",
                          case_id);
    if (!case_digest || !bd_digest_str_valid(case_digest))
        return bd_err_set(err, BD_E_DIGEST_MISSING, NULL, 0, 0,
                          "case %s has no digest; run `benchdesk pin` before signing", case_id);
    int n =
        snprintf(NULL, 0, BD_PROV_MAGIC "\nrole: %s\ncase_id: %s\nadded_at: %s\ncase_digest: %s\n",
                 r, case_id, added_at, case_digest);
    char *m = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (!m)
        return nomem(err);
    snprintf(m, (size_t)n + 1,
             BD_PROV_MAGIC "\nrole: %s\ncase_id: %s\nadded_at: %s\ncase_digest: %s\n", r, case_id,
             added_at, case_digest);
    *out = m;
    if (len)
        *len = (size_t)n;
    return 0;
}

/* A GPGME context for OpenPGP, on `home` (NULL: the user's default home). */
static int new_gpg(gpgme_ctx_t *out, const char *home, bool armor, bd_err *err)
{
    gpgme_ctx_t g = NULL;
    gpgme_error_t e;
    *out = NULL;
    if (bd_provenance_init(err) < 0)
        return -1;
    if ((e = gpgme_new(&g)) != 0)
        return gpg_fail(err, BD_E_GPG, e, "cannot start GPGME");
    if ((e = gpgme_set_protocol(g, GPGME_PROTOCOL_OpenPGP)) != 0 ||
        (home && (e = gpgme_ctx_set_engine_info(g, GPGME_PROTOCOL_OpenPGP, NULL, home)) != 0)) {
        gpgme_release(g);
        return gpg_fail(err, BD_E_GPG, e, "cannot set up GnuPG");
    }
    gpgme_set_armor(g, armor ? 1 : 0);
    *out = g;
    return 0;
}

static void fpr_upper(char out[BD_FPR_LEN + 1], const char *fpr)
{
    size_t i = 0;
    for (; fpr && fpr[i] && i < BD_FPR_LEN; i++)
        out[i] = (fpr[i] >= 'a' && fpr[i] <= 'f') ? (char)(fpr[i] - 'a' + 'A') : fpr[i];
    out[i] = '\0';
}

static bool fpr_valid(const char *s)
{
    if (!s || strlen(s) != BD_FPR_LEN)
        return false;
    for (size_t i = 0; i < BD_FPR_LEN; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
    }
    return true;
}

/* ---- the verification context -------------------------------------------------------- */

struct bd_prov_ctx {
    char *bench_dir;
    char *keys_dir;
    bd_signers *signers;
    pthread_mutex_t mu; /* guards the lazy creation of `home` */
    char *home;         /* the private GnuPG home, once created */
    bool setup_done;
    bd_err setup_err; /* BD_OK, or why the home could not be set up (sticky) */
};

int bd_prov_ctx_new(bd_prov_ctx **out, const char *bench_dir, bd_err *err)
{
    int rc = -1;
    char *path = NULL;
    bd_prov_ctx *ctx = calloc(1, sizeof(*ctx));
    *out = NULL;
    if (!ctx)
        return nomem(err);
    pthread_mutex_init(&ctx->mu, NULL);
    ctx->bench_dir = strdup(bench_dir);
    ctx->keys_dir = bd_path_join(bench_dir, "keys");
    path = bd_path_join(bench_dir, "trusted-signers.yaml");
    if (!ctx->bench_dir || !ctx->keys_dir || !path) {
        nomem(err);
        goto out;
    }
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT) {
        /* No file: nobody is trusted yet, so any signature is untrusted. */
        if (!(ctx->signers = calloc(1, sizeof(*ctx->signers)))) {
            nomem(err);
            goto out;
        }
        ctx->signers->schema_version = 1;
    } else if (bd_signers_load(&ctx->signers, path, err) < 0) {
        goto out;
    }
    *out = ctx;
    ctx = NULL;
    rc = 0;
out:
    free(path);
    bd_prov_ctx_free(ctx);
    return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void bd_prov_ctx_free(bd_prov_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->home) {
        /* FTW_PHYS: never follow a link out of the home while deleting it. */
        nftw(ctx->home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(ctx->home);
    }
    pthread_mutex_destroy(&ctx->mu);
    bd_signers_free(ctx->signers);
    free(ctx->keys_dir);
    free(ctx->bench_dir);
    free(ctx);
}

const bd_signers *bd_prov_ctx_signers(const bd_prov_ctx *ctx)
{
    return ctx->signers;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.asc names of keys_dir, sorted. Missing dir: none. */
static int list_keyfiles(char ***out, size_t *n, const char *dir, bd_err *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        return bd_err_errno(err, BD_E_IO, errno, dir, "cannot list the bench's public keys");
    }
    char **names = NULL;
    size_t cap = 0;
    int rc = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 5 || strcmp(de->d_name + l - 4, ".asc") != 0)
            continue;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            char **nn = realloc(names, nc * sizeof(*nn));
            if (!nn) {
                nomem(err);
                goto out;
            }
            names = nn;
            cap = nc;
        }
        if (!(names[*n] = strdup(de->d_name))) {
            nomem(err);
            goto out;
        }
        (*n)++;
    }
    if (*n)
        qsort(names, *n, sizeof(*names), str_cmp);
    *out = names;
    names = NULL;
    rc = 0;
out:
    if (names) {
        for (size_t i = 0; i < *n; i++)
            free(names[i]);
        free(names);
        *n = 0;
    }
    closedir(d);
    return rc;
}

static int import_keyfile(gpgme_ctx_t g, const char *path, bd_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    gpgme_data_t d = NULL;
    gpgme_error_t e;
    int rc = -1;
    if (bd_read_file(&buf, &len, path, KEYFILE_MAX, BD_E_GPG_BAD_KEYFILE, err) < 0)
        goto out;
    /* A secret key has no business in a repository; refuse before GnuPG sees it. */
    if (strstr(buf, "PRIVATE KEY BLOCK")) {
        bd_err_set(err, BD_E_GPG_BAD_KEYFILE, path, 0, 0,
                   "holds a secret key; remove it from the bench now and export only the "
                   "public key (gpg --armor --export FPR)");
        goto out;
    }
    if ((e = gpgme_data_new_from_mem(&d, buf, len, 0)) != 0) {
        gpg_fail(err, BD_E_GPG, e, "cannot hand a key file to GPGME");
        goto out;
    }
    e = gpgme_op_import(g, d);
    gpgme_import_result_t r = e ? NULL : gpgme_op_import_result(g);
    if (e || !r || r->considered == 0 || r->secret_read > 0 || r->imported + r->unchanged == 0) {
        char msg[256] = "no OpenPGP public key in it";
        if (e)
            err_text(e, msg, sizeof(msg));
        else if (r && r->secret_read > 0)
            snprintf(msg, sizeof(msg), "it holds a secret key: remove it from the bench now");
        bd_err_set(err, BD_E_GPG_BAD_KEYFILE, path, 0, 0,
                   "is not a usable armored public key (%s); re-export it with "
                   "`gpg --armor --export FPR`",
                   msg);
        goto out;
    }
    rc = 0;
out:
    gpgme_data_release(d);
    free(buf);
    return rc;
}

/* Create the private home and import bench/keys/<name>.asc, once. Thread-safe. */
static int ensure_home(bd_prov_ctx *ctx, bd_err *err)
{
    pthread_mutex_lock(&ctx->mu);
    if (ctx->setup_done) {
        int rc = ctx->setup_err.code == BD_OK ? 0 : -1;
        if (rc && err)
            *err = ctx->setup_err;
        pthread_mutex_unlock(&ctx->mu);
        return rc;
    }
    bd_err e = BD_ERR_INIT;
    gpgme_ctx_t g = NULL;
    char **names = NULL;
    size_t n = 0;
    char *conf = NULL;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0] || tmp[0] != '/')
        tmp = "/tmp";
    size_t hl = strlen(tmp) + 32;
    char *home = malloc(hl);
    if (!home) {
        nomem(&e);
        goto out;
    }
    snprintf(home, hl, "%s/benchdesk-gnupg-XXXXXX", tmp);
    /* mkdtemp creates it 0700: only this user can read or plant keys in it. */
    if (!mkdtemp(home)) {
        bd_err_errno(&e, BD_E_IO, errno, home,
                     "cannot create a private GnuPG home for verification (set TMPDIR to "
                     "a writable directory)");
        free(home);
        goto out;
    }
    ctx->home = home;
    static const char gpg_conf[] = "# benchdesk: a throwaway home that only verifies.\n"
                                   "no-autostart\n"
                                   "trust-model always\n"
                                   "no-auto-key-retrieve\n"
                                   "no-auto-key-locate\n"
                                   "no-greeting\n"
                                   "no-permission-warning\n";
    if (!(conf = bd_path_join(home, "gpg.conf"))) {
        nomem(&e);
        goto out;
    }
    if (bd_write_file_atomic(conf, gpg_conf, sizeof(gpg_conf) - 1, 0600, &e) < 0)
        goto out;
    if (new_gpg(&g, home, false, &e) < 0)
        goto out;
    gpgme_set_offline(g, 1);
    if (list_keyfiles(&names, &n, ctx->keys_dir, &e) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        char *p = bd_path_join(ctx->keys_dir, names[i]);
        if (!p) {
            nomem(&e);
            goto out;
        }
        int rc = import_keyfile(g, p, &e);
        free(p);
        if (rc < 0)
            goto out;
    }
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(conf);
    if (g)
        gpgme_release(g);
    ctx->setup_done = true;
    ctx->setup_err = e;
    pthread_mutex_unlock(&ctx->mu);
    if (e.code != BD_OK) {
        if (err)
            *err = e;
        return -1;
    }
    return 0;
}

/* ---- verifying one signature ------------------------------------------------------- */

/* Check `sig` over `msg` with `g` (a context on the private home). Returns 0 with *out
 * filled (whatever the verdict), -1 when GnuPG could not run at all. */
static int detached_check(bd_prov_detached *out, gpgme_ctx_t g, const char *msg, size_t mlen,
                          const char *sig, bd_err *err)
{
    gpgme_data_t ds = NULL, dm = NULL;
    gpgme_key_t key = NULL;
    gpgme_error_t e, status = 0;
    unsigned summary = 0;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->verdict = BD_PROV_DET_NOT_SIGNATURE;
    if ((e = gpgme_data_new_from_mem(&ds, sig, strlen(sig), 0)) != 0 ||
        (e = gpgme_data_new_from_mem(&dm, msg, mlen, 0)) != 0) {
        gpg_fail(err, BD_E_GPG, e, "cannot hand a signature to GPGME");
        goto out;
    }
    e = gpgme_op_verify(g, ds, dm, NULL);
    gpgme_verify_result_t r = gpgme_op_verify_result(g);
    for (gpgme_signature_t s = r ? r->signatures : NULL; s; s = s->next) {
        if (out->nsigs++ == 0) {
            status = s->status;
            summary = (unsigned)s->summary;
            snprintf(out->key_id, sizeof(out->key_id), "%s", s->fpr ? s->fpr : "");
        }
    }
    if (e) {
        gpgme_err_code_t c = gpgme_err_code(e);
        /* Garbage, truncated or altered armor: not a signature, a verdict not a failure. */
        if (c == GPG_ERR_NO_DATA || c == GPG_ERR_BAD_DATA || c == GPG_ERR_INV_DATA ||
            c == GPG_ERR_BAD_SIGNATURE || c == GPG_ERR_INV_PACKET || c == GPG_ERR_CHECKSUM ||
            c == GPG_ERR_UNKNOWN_PACKET || c == GPG_ERR_NOT_SUPPORTED || c == GPG_ERR_UNEXPECTED ||
            c == GPG_ERR_INV_VALUE || out->nsigs) {
            out->nsigs = 0;
            err_text(e, out->detail, sizeof(out->detail));
        } else {
            gpg_fail(err, BD_E_GPG, e, "GnuPG could not verify a signature");
            goto out;
        }
    }
    /* gpg reports EXPKEYSIG/REVKEYSIG only for otherwise good signatures. */
    gpgme_err_code_t sc = gpgme_err_code(status);
    out->crypto_good = out->nsigs == 1 && (sc == GPG_ERR_NO_ERROR || sc == GPG_ERR_KEY_EXPIRED ||
                                           sc == GPG_ERR_CERT_REVOKED);
    rc = 0;
    if (!out->crypto_good) {
        out->verdict = out->nsigs == 0           ? BD_PROV_DET_NOT_SIGNATURE
                       : out->nsigs > 1          ? BD_PROV_DET_SEVERAL
                       : sc == GPG_ERR_NO_PUBKEY ? BD_PROV_DET_UNKNOWN_KEY
                                                 : BD_PROV_DET_BAD;
        goto out;
    }
    /* An empty pattern would list every key: no reported key is no key. */
    if (!out->key_id[0] || gpgme_get_key(g, out->key_id, &key, 0) != 0 || !key || !key->subkeys ||
        !key->subkeys->fpr) {
        out->verdict = BD_PROV_DET_UNKNOWN_KEY;
        goto out;
    }
    fpr_upper(out->fingerprint, key->subkeys->fpr);
    gpgme_subkey_t used = NULL;
    for (gpgme_subkey_t sk = key->subkeys; sk; sk = sk->next)
        if (sk->fpr && strcasecmp(sk->fpr, out->key_id) == 0)
            used = sk;
    if (sc == GPG_ERR_CERT_REVOKED || key->revoked || (used && used->revoked) ||
        (summary & GPGME_SIGSUM_KEY_REVOKED))
        out->verdict = BD_PROV_DET_REVOKED;
    else if (sc == GPG_ERR_KEY_EXPIRED || key->expired || (used && used->expired) ||
             (summary & GPGME_SIGSUM_KEY_EXPIRED))
        out->verdict = BD_PROV_DET_EXPIRED;
    else if (key->disabled || key->invalid || (used && (used->disabled || used->invalid)))
        out->verdict = BD_PROV_DET_UNUSABLE;
    else
        out->verdict = BD_PROV_DET_GOOD;
out:
    if (key)
        gpgme_key_unref(key);
    gpgme_data_release(ds);
    gpgme_data_release(dm);
    return rc;
}

/* A GPGME context on the context's private home (created on first use), offline. */
static int home_gpg(gpgme_ctx_t *g, bd_prov_ctx *ctx, bd_err *err)
{
    *g = NULL;
    if (ensure_home(ctx, err) < 0 || new_gpg(g, ctx->home, false, err) < 0)
        return -1;
    gpgme_set_offline(*g, 1);
    return 0;
}

int bd_prov_verify_detached(bd_prov_detached *out, bd_prov_ctx *ctx, const char *msg, size_t len,
                            const char *armored_sig, bd_err *err)
{
    gpgme_ctx_t g = NULL;
    memset(out, 0, sizeof(*out));
    out->verdict = BD_PROV_DET_NOT_SIGNATURE;
    if (home_gpg(&g, ctx, err) < 0)
        return -1;
    int rc = detached_check(out, g, msg, len, armored_sig, err);
    gpgme_release(g);
    return rc;
}

static void set_identity(bd_prov_sig *out, const char *identity)
{
    bd_ydoc_clip(out->identity, sizeof(out->identity), identity ? identity : "");
}

/* Verify one block. Returns 0 (verdict in out->err), -1 when GnuPG failed (err). */
static int verify_block(bd_prov_sig *out, bd_prov_ctx *ctx, gpgme_ctx_t g, const bd_case *c,
                        const bd_signature_block *b, int role, const char *current, bd_err *err)
{
    const char *what = role == BD_ROLE_AUTHOR ? "provenance.added_by" : "provenance.reviewed_by";
    const char *rname = bd_provenance_role_str(role);
    char *msg = NULL, *msg_rec = NULL;
    size_t mlen = 0, rlen = 0;
    bd_prov_detached d, d_rec;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->present = b->present;
    set_identity(out, b->identity);
    if (!b->present)
        return 0;
    if (bd_provenance_message(&msg, &mlen, role, c->case_id, c->added_at, current, &out->err) < 0) {
        /* An unpinned case cannot carry a valid signature: its digest is unknown. */
        bd_err_set(&out->err, BD_E_PROVENANCE_STALE, c->path, b->line, 0,
                   "%s cannot be checked: the case has no digest; run `benchdesk pin`, then "
                   "sign again",
                   what);
        rc = 0;
        goto out;
    }
    if (detached_check(&d, g, msg, mlen, b->signature, err) < 0)
        goto out;
    /* Good over the recorded case_digest but not the current one: the case changed after
     * it was signed. */
    if (!d.crypto_good && d.nsigs == 1 && c->has_case_digest &&
        strcmp(c->case_digest, current) != 0 &&
        bd_provenance_message(&msg_rec, &rlen, role, c->case_id, c->added_at, c->case_digest,
                              NULL) == 0) {
        if (detached_check(&d_rec, g, msg_rec, rlen, b->signature, err) < 0)
            goto out;
        if (d_rec.crypto_good) {
            bd_err_set(&out->err, BD_E_PROVENANCE_STALE, c->path, b->line, 0,
                       "%s was signed over case_digest %s but the case's digest is now "
                       "%s: the case changed after signing; review the change, pin it "
                       "and sign again",
                       what, c->case_digest, current);
            rc = 0;
            goto out;
        }
    }
    memcpy(out->fingerprint, d.fingerprint, sizeof(out->fingerprint));
    const bd_signer *s = NULL;
    switch (d.verdict) {
    case BD_PROV_DET_UNKNOWN_KEY:
        bd_err_set(&out->err, BD_E_PROVENANCE_UNTRUSTED, c->path, b->line, 0,
                   "%s was made by key %s, which is not in bench/keys/; only the "
                   "bench's own keys are trusted",
                   what, d.key_id);
        break;
    case BD_PROV_DET_SEVERAL:
        bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, c->path, b->line, 0,
                   "%s holds %d signatures; exactly one is allowed", what, d.nsigs);
        break;
    case BD_PROV_DET_NOT_SIGNATURE:
        bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, c->path, b->line, 0,
                   "%s is not a valid OpenPGP signature (%s); sign the case again", what,
                   d.detail[0] ? d.detail : "no signature found");
        break;
    case BD_PROV_DET_BAD:
        bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, c->path, b->line, 0,
                   "%s does not verify over this case's %s message (role %s, case %s, "
                   "digest %s): it is forged, altered, or made for another case or "
                   "role; sign the case again",
                   what, rname, rname, c->case_id, current);
        break;
    case BD_PROV_DET_REVOKED:
        bd_err_set(&out->err, BD_E_PROVENANCE_KEY_REVOKED, c->path, b->line, 0,
                   "%s was made by key %s, which is revoked; a trusted signer must sign "
                   "again with a current key",
                   what, out->fingerprint);
        break;
    case BD_PROV_DET_EXPIRED:
        bd_err_set(&out->err, BD_E_PROVENANCE_KEY_EXPIRED, c->path, b->line, 0,
                   "%s was made by key %s, which has expired; extend the key's expiry and "
                   "re-export it to bench/keys/, or sign again with a current key",
                   what, out->fingerprint);
        break;
    case BD_PROV_DET_UNUSABLE:
        bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, c->path, b->line, 0,
                   "%s was made by key %s, which GnuPG reports unusable", what, out->fingerprint);
        break;
    case BD_PROV_DET_GOOD:
        if (strcasecmp(out->fingerprint, b->fingerprint) != 0)
            bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, c->path, b->line, 0,
                       "%s names fingerprint %s but was signed by %s; sign the case again", what,
                       b->fingerprint, out->fingerprint);
        else if (!(s = bd_signers_find(ctx->signers, out->fingerprint)))
            bd_err_set(&out->err, BD_E_PROVENANCE_UNTRUSTED, c->path, b->line, 0,
                       "%s was signed by %s, which is not in bench/trusted-signers.yaml", what,
                       out->fingerprint);
        else if (!(s->roles & role))
            bd_err_set(&out->err, BD_E_PROVENANCE_UNTRUSTED, c->path, b->line, 0,
                       "%s was signed by %s (%s), who is not trusted as %s in "
                       "bench/trusted-signers.yaml",
                       what, out->fingerprint, s->identity ? s->identity : "", rname);
        break;
    }
    rc = 0;
out:
    free(msg);
    free(msg_rec);
    return rc;
}

int bd_provenance_verify_case(bd_prov_result *out, bd_prov_ctx *ctx, const bd_case *c,
                              const char *current_digest, bd_err *err)
{
    gpgme_ctx_t g = NULL;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->status = BD_PROV_ST_BAD;
    out->author.present = c->added_by.present;
    out->reviewer.present = c->reviewed_by.present;
    const char *current = current_digest && current_digest[0] ? current_digest : c->case_digest;
    if (!c->added_by.present && !c->reviewed_by.present) {
        out->status = BD_PROV_ST_DRAFT;
        return 0;
    }
    if (home_gpg(&g, ctx, &out->err) < 0) {
        if (err)
            *err = out->err;
        return -1;
    }
    if (verify_block(&out->author, ctx, g, c, &c->added_by, BD_ROLE_AUTHOR, current, &out->err) <
            0 ||
        verify_block(&out->reviewer, ctx, g, c, &c->reviewed_by, BD_ROLE_REVIEWER, current,
                     &out->err) < 0) {
        if (err)
            *err = out->err;
        goto out;
    }
    if (out->author.err.code != BD_OK) {
        out->err = out->author.err;
    } else if (out->reviewer.err.code != BD_OK) {
        out->err = out->reviewer.err;
    } else if (!c->added_by.present) {
        bd_err_set(&out->err, BD_E_PROVENANCE_MISSING, c->path, c->reviewed_by.line, 0,
                   "provenance.reviewed_by is present without provenance.added_by: the author "
                   "signs first, then a second person reviews");
        out->reviewer.err = out->err;
    } else if (c->reviewed_by.present &&
               strcmp(out->author.fingerprint, out->reviewer.fingerprint) == 0) {
        bd_err_set(&out->err, BD_E_PROVENANCE_SAME_SIGNER, c->path, c->reviewed_by.line, 0,
                   "author and reviewer are the same key %s; a second person must review "
                   "with their own key",
                   out->author.fingerprint);
        out->reviewer.err = out->err;
    } else {
        out->status = c->reviewed_by.present ? BD_PROV_ST_SIGNED : BD_PROV_ST_AWAITING;
    }
    rc = out->status == BD_PROV_ST_BAD ? 1 : 0;
out:
    if (g)
        gpgme_release(g);
    return rc;
}

/* ---- signing ----------------------------------------------------------------------- */

static bool key_usable(gpgme_key_t k)
{
    if (!k || k->revoked || k->expired || k->disabled || k->invalid || !k->can_sign ||
        !k->subkeys || !k->subkeys->fpr)
        return false;
    for (gpgme_subkey_t sk = k->subkeys; sk; sk = sk->next)
        if (sk->can_sign && sk->secret && !sk->revoked && !sk->expired && !sk->disabled &&
            !sk->invalid)
            return true;
    return false;
}

static void key_info(bd_sign_key *out, gpgme_key_t k)
{
    memset(out, 0, sizeof(*out));
    fpr_upper(out->fingerprint, k->subkeys->fpr);
    gpgme_user_id_t u = k->uids;
    for (gpgme_user_id_t x = k->uids; x; x = x->next)
        if (!x->revoked && !x->invalid) {
            u = x;
            break;
        }
    if (u) {
        bd_ydoc_clip(out->uid, sizeof(out->uid), u->uid ? u->uid : "");
        bd_ydoc_clip(out->identity, sizeof(out->identity),
                     u->email && u->email[0] ? u->email : (u->uid ? u->uid : ""));
    }
}

/* The `default-key` values of gpg.conf in `home`, in order. Returns a new array of
 * strings (NULL-terminated), or NULL when there are none or on any read failure. */
static char **gpg_conf_default_keys(const char *home)
{
    char *path = home ? bd_path_join(home, "gpg.conf") : NULL;
    char *buf = NULL, **keys = NULL;
    size_t len = 0, n = 0;
    if (!path || bd_read_file(&buf, &len, path, GPG_CONF_MAX, BD_E_IO, NULL) < 0)
        goto out;
    for (char *line = buf; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        char *p = line + strspn(line, " \t");
        if (strncmp(p, "default-key", 11) == 0 && (p[11] == ' ' || p[11] == '\t')) {
            p += 11 + strspn(p + 11, " \t");
            size_t l = strcspn(p, " \t\r#");
            char **nk = realloc(keys, (n + 2) * sizeof(*nk));
            if (!nk)
                goto out;
            keys = nk;
            if (!(keys[n] = strndup(p, l)))
                goto out;
            keys[++n] = NULL;
        }
        line = eol ? eol + 1 : NULL;
    }
out:
    free(buf);
    free(path);
    return keys;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static const char *home_of(const char *gnupg_home)
{
    return gnupg_home ? gnupg_home : gpgme_get_dirinfo("homedir");
}

int bd_provenance_list_keys(bd_sign_key **out, size_t *n, const char *gnupg_home, bd_err *err)
{
    gpgme_ctx_t g = NULL;
    gpgme_key_t k = NULL;
    gpgme_error_t e;
    bd_sign_key *keys = NULL;
    size_t cnt = 0, cap = 0;
    char **defaults = NULL;
    int rc = -1;
    *out = NULL;
    *n = 0;
    if (new_gpg(&g, gnupg_home, false, err) < 0)
        return -1;
    if ((e = gpgme_op_keylist_start(g, NULL, 1)) != 0) {
        gpg_fail(err, BD_E_GPG, e, "cannot list your secret keys");
        goto out;
    }
    while ((e = gpgme_op_keylist_next(g, &k)) == 0) {
        if (key_usable(k)) {
            if (cnt == cap) {
                size_t nc = cap ? cap * 2 : 8;
                bd_sign_key *nk = realloc(keys, nc * sizeof(*nk));
                if (!nk) {
                    gpgme_key_unref(k);
                    nomem(err);
                    goto out;
                }
                keys = nk;
                cap = nc;
            }
            key_info(&keys[cnt++], k);
        }
        gpgme_key_unref(k);
    }
    if (gpgme_err_code(e) != GPG_ERR_EOF) {
        gpg_fail(err, BD_E_GPG, e, "cannot list your secret keys");
        goto out;
    }
    /* The default: gpg.conf's first usable default-key, else the first usable key. */
    size_t def = 0;
    defaults = gpg_conf_default_keys(home_of(gnupg_home));
    for (size_t d = 0; defaults && defaults[d]; d++) {
        char want[BD_FPR_LEN + 1];
        const char *v = defaults[d];
        if (strncmp(v, "0x", 2) == 0 || strncmp(v, "0X", 2) == 0)
            v += 2;
        fpr_upper(want, v);
        size_t wl = strlen(want);
        bool found = false;
        for (size_t i = 0; i < cnt && !found && wl >= 8; i++) {
            /* A fingerprint, or a long/short key id: its tail. */
            if (strcmp(keys[i].fingerprint + BD_FPR_LEN - wl, want) == 0 ||
                strcasecmp(keys[i].identity, defaults[d]) == 0) {
                def = i;
                found = true;
            }
        }
        if (found)
            break;
    }
    if (cnt) {
        keys[def].is_default = true;
        if (def) {
            bd_sign_key t = keys[def];
            memmove(&keys[1], &keys[0], def * sizeof(*keys));
            keys[0] = t;
        }
    }
    *out = keys;
    *n = cnt;
    keys = NULL;
    rc = 0;
out:
    free_strv(defaults);
    free(keys);
    gpgme_release(g);
    return rc;
}

int bd_provenance_resolve_key(bd_sign_key *out, const bd_sign_opts *opts, bd_err *err)
{
    bd_sign_key *keys = NULL;
    size_t n = 0;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    if (opts && opts->key && !fpr_valid(opts->key))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "--key needs a 40-hex-digit primary key fingerprint, not '%s'; see "
                          "`gpg --list-secret-keys --with-colons`",
                          opts->key);
    if (bd_provenance_list_keys(&keys, &n, opts ? opts->gnupg_home : NULL, err) < 0)
        return -1;
    if (opts && opts->key) {
        char want[BD_FPR_LEN + 1];
        fpr_upper(want, opts->key);
        for (size_t i = 0; i < n; i++)
            if (strcmp(keys[i].fingerprint, want) == 0) {
                *out = keys[i];
                rc = 0;
            }
        if (rc < 0)
            bd_err_set(err, BD_E_GPG_KEY_NOT_FOUND, NULL, 0, 0,
                       "no usable secret key %s in your keyring (missing, expired, revoked or "
                       "unable to sign); see `gpg --list-secret-keys`",
                       want);
    } else if (n) {
        *out = keys[0];
        rc = 0;
    } else {
        bd_err_set(err, BD_E_GPG_KEY_NOT_FOUND, NULL, 0, 0,
                   "no usable secret signing key in your keyring; create one with "
                   "`gpg --quick-gen-key 'Name <you@example.org>' ed25519 sign 2y`");
    }
    free(keys);
    return rc;
}

typedef struct pass_hook {
    const bd_sign_opts *opts;
} pass_hook;

static gpgme_error_t pass_cb(void *hook, const char *uid_hint, const char *info, int bad, int fd)
{
    (void)info;
    pass_hook *h = hook;
    char buf[1024];
    memset(buf, 0, sizeof(buf));
    gpgme_error_t rc = 0;
    if (h->opts->passphrase(buf, sizeof(buf), uid_hint ? uid_hint : "", bad != 0,
                            h->opts->payload) != 0) {
        rc = gpgme_error(GPG_ERR_CANCELED);
    } else {
        buf[sizeof(buf) - 1] = '\0';
        size_t l = strlen(buf);
        if (gpgme_io_writen(fd, buf, l) != 0 || gpgme_io_writen(fd, "\n", 1) != 0)
            rc = gpgme_error_from_syserror();
    }
    /* Don't leave the passphrase on the stack. */
    explicit_bzero(buf, sizeof(buf));
    return rc;
}

int bd_provenance_sign_bytes(char **sig, const bd_sign_key *key, const bd_sign_opts *opts,
                             const void *data, size_t len, bd_err *err)
{
    gpgme_ctx_t g = NULL;
    gpgme_key_t k = NULL;
    gpgme_data_t din = NULL, dout = NULL;
    gpgme_error_t e;
    pass_hook hook = {opts};
    char *mem = NULL;
    size_t mlen = 0;
    int rc = -1;
    *sig = NULL;
    if (new_gpg(&g, opts ? opts->gnupg_home : NULL, true, err) < 0)
        return -1;
    gpgme_set_textmode(g, 0);
    if (opts && opts->passphrase) {
        /* The caller draws its own prompt: gpg-agent must ask us, not a pinentry. */
        if ((e = gpgme_set_pinentry_mode(g, GPGME_PINENTRY_MODE_LOOPBACK)) != 0) {
            gpg_fail(err, BD_E_GPG, e, "cannot ask for the passphrase in benchdesk");
            goto out;
        }
        gpgme_set_passphrase_cb(g, pass_cb, &hook);
    }
    if ((e = gpgme_get_key(g, key->fingerprint, &k, 1)) != 0) {
        bd_err_set(err, BD_E_GPG_KEY_NOT_FOUND, NULL, 0, 0,
                   "secret key %s is not in your keyring; see `gpg --list-secret-keys`",
                   key->fingerprint);
        goto out;
    }
    if ((e = gpgme_signers_add(g, k)) != 0 ||
        (e = gpgme_data_new_from_mem(&din, data, len, 0)) != 0 ||
        (e = gpgme_data_new(&dout)) != 0) {
        gpg_fail(err, BD_E_GPG, e, "cannot prepare to sign");
        goto out;
    }
    if ((e = gpgme_op_sign(g, din, dout, GPGME_SIG_MODE_DETACH)) != 0) {
        gpgme_err_code_t c = gpgme_err_code(e);
        char m[256];
        err_text(e, m, sizeof(m));
        bd_err_set(err, BD_E_GPG_SIGN_FAILED, NULL, 0, 0, "GnuPG could not sign with %s (%s)%s",
                   key->fingerprint, m,
                   c == GPG_ERR_CANCELED         ? ": the passphrase prompt was cancelled"
                   : c == GPG_ERR_BAD_PASSPHRASE ? ": wrong passphrase, try again"
                   : c == GPG_ERR_NO_PIN_ENTRY || c == GPG_ERR_NO_PASSPHRASE
                       ? ": gpg-agent could not ask for the passphrase; run from a terminal "
                         "or set a pinentry program"
                       : "; check `gpg --list-secret-keys` and gpg-agent");
        goto out;
    }
    gpgme_sign_result_t r = gpgme_op_sign_result(g);
    int nsig = 0;
    for (gpgme_new_signature_t s = r ? r->signatures : NULL; s; s = s->next)
        nsig++;
    if (!r || r->invalid_signers || nsig != 1) {
        bd_err_set(err, BD_E_GPG_SIGN_FAILED, NULL, 0, 0,
                   "GnuPG did not make exactly one signature with %s; check the key with "
                   "`gpg --list-secret-keys`",
                   key->fingerprint);
        goto out;
    }
    mem = gpgme_data_release_and_get_mem(dout, &mlen);
    dout = NULL;
    if (!mem || mlen == 0 || mlen > SIGNATURE_MAX) {
        bd_err_set(err, BD_E_GPG_SIGN_FAILED, NULL, 0, 0, "GnuPG returned no signature");
        goto out;
    }
    char *s = malloc(mlen + 2);
    if (!s) {
        nomem(err);
        goto out;
    }
    memcpy(s, mem, mlen);
    if (s[mlen - 1] != '\n')
        s[mlen++] = '\n';
    s[mlen] = '\0';
    *sig = s;
    rc = 0;
out:
    if (mem)
        gpgme_free(mem);
    gpgme_data_release(dout);
    gpgme_data_release(din);
    if (k)
        gpgme_key_unref(k);
    gpgme_release(g);
    return rc;
}

/* ---- editing case.yaml -------------------------------------------------------------- */

typedef struct line {
    size_t start, end; /* [start, end): the text without its line break */
    size_t next;       /* offset of the following line */
    int indent;        /* leading spaces */
    bool blank;        /* only whitespace */
    bool comment;      /* first non-space character is '#' */
} line;

static void read_line(line *l, const char *t, size_t at)
{
    const char *eol = strchr(t + at, '\n');
    l->start = at;
    l->next = eol ? (size_t)(eol - t) + 1 : strlen(t);
    l->end = eol ? (size_t)(eol - t) : l->next;
    if (l->end > l->start && t[l->end - 1] == '\r')
        l->end--;
    size_t i = at;
    while (i < l->end && t[i] == ' ')
        i++;
    l->indent = (int)(i - at);
    size_t j = i;
    while (j < l->end && (t[j] == ' ' || t[j] == '\t'))
        j++;
    l->blank = j == l->end;
    l->comment = !l->blank && t[j] == '#';
}

/* True when line `l` is `<indent spaces>key:` followed by a space, a comment or EOL;
 * *rest gets the offset after the colon. */
static bool is_key_line(const char *t, const line *l, int indent, const char *key, size_t *rest)
{
    size_t kl = strlen(key);
    if (l->blank || l->comment || l->indent != indent)
        return false;
    size_t p = l->start + (size_t)indent;
    if (l->end - p < kl + 1 || strncmp(t + p, key, kl) != 0)
        return false;
    p += kl;
    while (p < l->end && (t[p] == ' ' || t[p] == '\t'))
        p++;
    if (p >= l->end || t[p] != ':')
        return false;
    p++;
    if (p < l->end && t[p] != ' ' && t[p] != '\t')
        return false;
    if (rest)
        *rest = p;
    return true;
}

/* End offset (after the line break) of the entry starting at line `at` whose key sits at
 * `indent`: the key line plus every following line indented deeper (blank lines in
 * between belong to it only when deeper lines follow). */
static size_t entry_end(const char *t, size_t at, int indent)
{
    line l;
    read_line(&l, t, at);
    size_t end = l.next;
    for (size_t p = l.next; t[p];) {
        read_line(&l, t, p);
        if (!l.blank) {
            if (l.indent <= indent)
                break;
            end = l.next;
        }
        p = l.next;
    }
    return end;
}

/* Append the YAML double-quoted form of `s` (refusing control characters). */
static int put_quoted(char **w, const char *s)
{
    *(*w)++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return -1;
        if (*p == '"' || *p == '\\')
            *(*w)++ = '\\';
        *(*w)++ = (char)*p;
    }
    *(*w)++ = '"';
    return 0;
}

static char *render_block(const char *key, int indent, const char *identity,
                          const char *fingerprint, const char *signature)
{
    size_t nlines = 1;
    for (const char *p = signature; *p; p++)
        nlines += *p == '\n';
    size_t cap = 5 * (size_t)indent + strlen(key) + 2 * strlen(identity) + strlen(fingerprint) +
                 strlen(signature) + nlines * ((size_t)indent + 5) + 128;
    char *out = malloc(cap), *w = out;
    if (!out)
        return NULL;
    w += sprintf(w, "%*s%s:\n%*sidentity: ", indent, "", key, indent + 2, "");
    if (put_quoted(&w, identity) < 0)
        goto bad;
    w += sprintf(w, "\n%*sfingerprint: \"%s\"\n%*ssignature: |\n", indent + 2, "", fingerprint,
                 indent + 2, "");
    for (const char *p = signature; *p;) {
        const char *eol = strchr(p, '\n');
        size_t l = eol ? (size_t)(eol - p) : strlen(p);
        for (size_t i = 0; i < l; i++)
            if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
                goto bad;
        if (l) {
            w += sprintf(w, "%*s", indent + 4, "");
            memcpy(w, p, l);
            w += l;
        }
        *w++ = '\n';
        p = eol ? eol + 1 : p + l;
    }
    *w = '\0';
    return out;
bad:
    free(out);
    return NULL;
}

char *bd_provenance_set_block(const char *text, const char *key, const char *identity,
                              const char *fingerprint, const char *signature, const char *label,
                              bd_err *err)
{
    line l;
    size_t p = 0, rest = 0;
    int lineno = 1;
    bool found = false;
    /* The top-level `provenance:` line, in block style. */
    while (text[p]) {
        read_line(&l, text, p);
        if (is_key_line(text, &l, 0, "provenance", &rest)) {
            found = true;
            break;
        }
        p = l.next;
        lineno++;
    }
    if (!found) {
        bd_err_set(err, BD_E_CASE_SCHEMA, label, 0, 0,
                   "has no top-level `provenance:` line; add the provenance mapping and retry");
        return NULL;
    }
    size_t q = rest;
    while (q < l.end && (text[q] == ' ' || text[q] == '\t'))
        q++;
    if (q < l.end && text[q] != '#') {
        bd_err_set(err, BD_E_CASE_SCHEMA, label, lineno, 1,
                   "provenance must be written as a block mapping (one key per line) for "
                   "benchdesk to add a signature; rewrite it that way and retry");
        return NULL;
    }
    /* Its children: indented lines up to the next top-level content line. */
    int child = -1;
    size_t block_end = l.next, last_child_end = l.next;
    size_t at_added_at = SIZE_MAX, at_added_by = SIZE_MAX, at_self = SIZE_MAX;
    for (size_t r = l.next; text[r];) {
        line c;
        read_line(&c, text, r);
        if (!c.blank && !c.comment && c.indent == 0)
            break;
        if (!c.blank && !c.comment) {
            if (child < 0)
                child = c.indent;
            last_child_end = c.next;
            if (is_key_line(text, &c, child, "added_at", NULL))
                at_added_at = r;
            if (is_key_line(text, &c, child, "added_by", NULL))
                at_added_by = r;
            if (is_key_line(text, &c, child, key, NULL))
                at_self = r;
        }
        r = c.next;
        block_end = r;
    }
    (void)block_end;
    if (child <= 0) {
        bd_err_set(err, BD_E_CASE_SCHEMA, label, lineno, 1,
                   "provenance has no indented keys; it needs at least source, source_ref and "
                   "added_at");
        return NULL;
    }
    char *blk = render_block(key, child, identity, fingerprint, signature);
    if (!blk) {
        bd_err_set(err, BD_E_CASE_SCHEMA, label, 0, 0,
                   "the identity or signature holds control characters; cannot write it");
        return NULL;
    }
    size_t cut_from, cut_to;
    if (at_self != SIZE_MAX) {
        cut_from = at_self;
        cut_to = entry_end(text, at_self, child);
    } else {
        size_t after = strcmp(key, "reviewed_by") == 0 && at_added_by != SIZE_MAX
                           ? entry_end(text, at_added_by, child)
                       : strcmp(key, "added_by") == 0 && at_added_at != SIZE_MAX
                           ? entry_end(text, at_added_at, child)
                           : last_child_end;
        cut_from = cut_to = after;
    }
    /* A file ending without a newline just before our insertion point needs one. */
    bool need_nl = cut_from > 0 && text[cut_from - 1] != '\n';
    size_t tl = strlen(text), bl = strlen(blk);
    char *out = malloc(tl - (cut_to - cut_from) + bl + 2);
    if (!out) {
        free(blk);
        nomem(err);
        return NULL;
    }
    char *w = out;
    memcpy(w, text, cut_from);
    w += cut_from;
    if (need_nl)
        *w++ = '\n';
    memcpy(w, blk, bl);
    w += bl;
    memcpy(w, text + cut_to, tl - cut_to + 1);
    free(blk);
    return out;
}

/* ---- signing a case ------------------------------------------------------------------ */

void bd_sign_result_release(bd_sign_result *r)
{
    if (!r)
        return;
    free(r->message);
    free(r->signature);
    free(r->case_yaml);
    r->message = r->signature = r->case_yaml = NULL;
}

int bd_provenance_prepare(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                          const char *case_id, int role, const bd_sign_opts *opts, bd_err *err)
{
    bd_case_check chk;
    bd_prov_result pr;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->role = role;
    if (!bd_provenance_role_str(role))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "--role must be author or reviewer");
    if (bd_verify_case(&chk, tc, case_id) < 0) {
        if (err)
            *err = chk.err;
        goto out;
    }
    const bd_case *c = chk.loaded;
    out->case_yaml = strdup(c->path);
    if (!out->case_yaml) {
        nomem(err);
        goto out;
    }
    snprintf(out->case_digest, sizeof(out->case_digest), "%s", chk.digest);
    if (bd_provenance_resolve_key(&out->key, opts, err) < 0)
        goto out;
    const bd_signer *s = bd_signers_find(ctx->signers, out->key.fingerprint);
    if (!s || !(s->roles & role)) {
        bd_err_set(err, BD_E_PROVENANCE_UNTRUSTED, NULL, 0, 0,
                   "key %s (%s) is not trusted as %s in bench/trusted-signers.yaml, so its "
                   "signature would not verify; ask the bench's maintainers to add it (with "
                   "its public key in bench/keys/) or choose another key with --key",
                   out->key.fingerprint, out->key.identity, bd_provenance_role_str(role));
        goto out;
    }
    if (role == BD_ROLE_REVIEWER) {
        if (!c->added_by.present) {
            bd_err_set(err, BD_E_PROVENANCE_MISSING, c->path, 0, 0,
                       "has no author signature yet; the author signs first "
                       "(`benchdesk sign CASE_DIR --role author`), then a second person "
                       "reviews");
            goto out;
        }
        if (strcasecmp(c->added_by.fingerprint, out->key.fingerprint) == 0) {
            bd_err_set(err, BD_E_PROVENANCE_SAME_SIGNER, c->path, c->added_by.line, 0,
                       "was authored with key %s; the review must come from a second "
                       "person's key (pass --key)",
                       out->key.fingerprint);
            goto out;
        }
        /* Countersign only what verifies: check the author signature first. */
        int v = bd_provenance_verify_case(&pr, ctx, c, chk.digest, err);
        if (v < 0)
            goto out;
        if (pr.author.err.code != BD_OK) {
            if (err)
                *err = pr.author.err;
            goto out;
        }
    }
    if (bd_provenance_message(&out->message, NULL, role, c->case_id, c->added_at, chk.digest, err) <
        0)
        goto out;
    rc = 0;
out:
    bd_case_check_release(&chk);
    return rc;
}

/* Load `text` as case.yaml (through a private temporary file, so the real file is only
 * replaced once the new text is proven). */
static int load_text(bd_case **out, const char *text, const char *case_id, bd_err *err)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    char dir[PATH_MAX];
    char file[PATH_MAX + 16];
    *out = NULL;
    if (snprintf(dir, sizeof(dir), "%s/benchdesk-sign-XXXXXX", tmp) >= (int)sizeof(dir))
        return bd_err_set(err, BD_E_IO, NULL, 0, 0, "TMPDIR is too long");
    if (!mkdtemp(dir))
        return bd_err_errno(err, BD_E_IO, errno, dir, "cannot create a temporary directory");
    snprintf(file, sizeof(file), "%s/case.yaml", dir);
    int rc = bd_write_file_atomic(file, text, strlen(text), 0600, err);
    if (rc == 0)
        rc = bd_case_load(out, file, case_id, err);
    unlink(file);
    rmdir(dir);
    return rc;
}

static bool same_block(const bd_signature_block *a, const bd_signature_block *b)
{
    if (a->present != b->present)
        return false;
    if (!a->present)
        return true;
    return strcmp(a->fingerprint, b->fingerprint) == 0 && strcmp(a->identity, b->identity) == 0 &&
           strcmp(a->signature, b->signature) == 0;
}

static bool carries(const bd_case *c, int role, const bd_sign_key *key, const char *signature,
                    const bd_case *before)
{
    const bd_signature_block *mine = role == BD_ROLE_AUTHOR ? &c->added_by : &c->reviewed_by;
    const bd_signature_block *other = role == BD_ROLE_AUTHOR ? &c->reviewed_by : &c->added_by;
    const bd_signature_block *other0 =
        role == BD_ROLE_AUTHOR ? &before->reviewed_by : &before->added_by;
    return mine->present && strcmp(mine->identity, key->identity) == 0 &&
           strcmp(mine->fingerprint, key->fingerprint) == 0 &&
           strcmp(mine->signature, signature) == 0 && same_block(other, other0) &&
           strcmp(c->case_digest, before->case_digest) == 0 &&
           strcmp(c->added_at, before->added_at) == 0;
}

int bd_provenance_sign_prepared(bd_sign_result *prep, const bd_task_class *tc, const char *case_id,
                                const bd_sign_opts *opts, bd_err *err)
{
    bd_case_check chk;
    bd_case *edited = NULL, *reread = NULL;
    char *text = NULL, *next = NULL;
    size_t len = 0;
    int rc = -1;
    bool have_chk = false;
    const char *key = prep->role == BD_ROLE_AUTHOR ? "added_by" : "reviewed_by";
    if (!prep->message)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "sign called without prepare");
    free(prep->signature);
    prep->signature = NULL;
    if (bd_provenance_sign_bytes(&prep->signature, &prep->key, opts, prep->message,
                                 strlen(prep->message), err) < 0)
        goto out;
    /* The case must still be what was signed. */
    have_chk = true;
    if (bd_verify_case(&chk, tc, case_id) < 0) {
        if (err)
            *err = chk.err;
        goto out;
    }
    if (strcmp(chk.digest, prep->case_digest) != 0) {
        bd_err_set(err, BD_E_DIGEST_MISMATCH, chk.loaded->path, 0, 0,
                   "the case changed while it was being signed (digest %s, signed %s); "
                   "nothing was written: sign again",
                   chk.digest, prep->case_digest);
        goto out;
    }
    const char *path = chk.loaded->path;
    struct stat st;
    if (lstat(path, &st) != 0) {
        bd_err_errno(err, BD_E_IO, errno, path, "cannot stat");
        goto out;
    }
    if (bd_read_file(&text, &len, path, CASE_YAML_MAX, BD_E_YAML_TOO_LARGE, err) < 0)
        goto out;
    if (!(next = bd_provenance_set_block(text, key, prep->key.identity, prep->key.fingerprint,
                                         prep->signature, path, err)))
        goto out;
    bd_err le = BD_ERR_INIT;
    if (load_text(&edited, next, case_id, &le) < 0 ||
        !carries(edited, prep->role, &prep->key, prep->signature, chk.loaded)) {
        bd_err_set(err, BD_E_CASE_SCHEMA, path, 0, 0,
                   "adding provenance.%s would not give back exactly the signature written "
                   "(%s); nothing was written: check the file's provenance layout",
                   key, le.code == BD_OK ? "the values differ" : le.msg);
        goto out;
    }
    if (bd_write_file_atomic(path, next, strlen(next), st.st_mode & 07777, err) < 0)
        goto out;
    if (bd_case_load(&reread, path, case_id, err) < 0)
        goto out;
    if (!carries(reread, prep->role, &prep->key, prep->signature, chk.loaded)) {
        bd_err_set(err, BD_E_IO, path, 0, 0,
                   "was changed by someone else while signing; check it and sign again");
        goto out;
    }
    rc = 0;
out:
    if (have_chk)
        bd_case_check_release(&chk);
    bd_case_free(edited);
    bd_case_free(reread);
    free(text);
    free(next);
    return rc;
}

int bd_provenance_sign_case(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                            const char *case_id, int role, const bd_sign_opts *opts, bd_err *err)
{
    if (bd_provenance_prepare(out, ctx, tc, case_id, role, opts, err) < 0)
        return -1;
    return bd_provenance_sign_prepared(out, tc, case_id, opts, err);
}
