/*
 * sign.c — signing a case or a task class (docs/provenance.md): the curator's own keyring
 * through GPGME, refusals before signing, provenance.yaml written whole and atomically.
 */
#include "sign.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpgme.h>

#include "fsutil.h"
#include "gpg_util.h"
#include "strbuf.h"

#define SIGNATURE_MAX (64 * 1024)
#define GPG_CONF_MAX  (256 * 1024)

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

/* ---- the curator's keys ------------------------------------------------------------ */

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
    bd_gpg_fpr_upper(out->fingerprint, k->subkeys->fpr);
    bd_gpg_key_identity(k, out->identity, sizeof(out->identity), out->uid, sizeof(out->uid));
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

int bd_sign_list_keys(bd_sign_key **out, size_t *n, const char *gnupg_home, bd_err *err)
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
    if (bd_gpg_new(&g, gnupg_home, false, err) < 0)
        return -1;
    if ((e = gpgme_op_keylist_start(g, NULL, 1)) != 0) {
        bd_gpg_fail(err, BD_E_GPG, e, "cannot list your secret keys");
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
        bd_gpg_fail(err, BD_E_GPG, e, "cannot list your secret keys");
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
        bd_gpg_fpr_upper(want, v);
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

int bd_sign_resolve_key(bd_sign_key *out, const bd_sign_opts *opts, bd_err *err)
{
    bd_sign_key *keys = NULL;
    size_t n = 0;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    char want[BD_FPR_LEN + 1] = "";
    if (opts && opts->key) /* either case: compared in upper case */
        bd_gpg_fpr_upper(want, opts->key);
    if (opts && opts->key && (strlen(opts->key) != BD_FPR_LEN || !bd_fpr_valid(want)))
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "--key needs a 40-hex-digit primary key fingerprint, not '%s'; see "
                          "`gpg --list-secret-keys --with-colons`",
                          opts->key);
    if (bd_sign_list_keys(&keys, &n, opts ? opts->gnupg_home : NULL, err) < 0)
        return -1;
    if (opts && opts->key) {
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

int bd_sign_bytes(char **sig, const bd_sign_key *key, const bd_sign_opts *opts, const void *data,
                  size_t len, bd_err *err)
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
    if (bd_gpg_new(&g, opts ? opts->gnupg_home : NULL, true, err) < 0)
        return -1;
    gpgme_set_textmode(g, 0);
    if (opts && opts->passphrase) {
        /* The caller draws its own prompt: gpg-agent must ask us, not a pinentry. */
        if ((e = gpgme_set_pinentry_mode(g, GPGME_PINENTRY_MODE_LOOPBACK)) != 0) {
            bd_gpg_fail(err, BD_E_GPG, e, "cannot ask for the passphrase in benchdesk");
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
        bd_gpg_fail(err, BD_E_GPG, e, "cannot prepare to sign");
        goto out;
    }
    if ((e = gpgme_op_sign(g, din, dout, GPGME_SIG_MODE_DETACH)) != 0) {
        gpgme_err_code_t c = gpgme_err_code(e);
        char m[256];
        bd_gpg_err_text(e, m, sizeof(m));
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

/* ---- provenance.yaml ------------------------------------------------------------------ */

/* A YAML double-quoted scalar: backslash, quote and every control byte escaped. */
static void sb_quoted(bd_strbuf *b, const char *s)
{
    bd_strbuf_str(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p, esc[2] = '\0';
            bd_strbuf_str(b, esc);
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", *p);
            bd_strbuf_str(b, esc);
        } else {
            bd_strbuf_add(b, (const char *)p, 1);
        }
    }
    bd_strbuf_str(b, "\"");
}

/* The armored signature as a literal block under a 2-space key: lines indented by 4,
 * exactly one final newline (what `|` gives back). */
static void sb_literal(bd_strbuf *b, const char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    bd_strbuf_str(b, "|\n");
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && s[e] != '\n')
            e++;
        size_t le = e;
        if (le > i && s[le - 1] == '\r')
            le--;
        if (le > i) {
            bd_strbuf_str(b, "    ");
            bd_strbuf_add(b, s + i, le - i);
        }
        bd_strbuf_str(b, "\n");
        i = e + 1;
    }
}

static void sb_block(bd_strbuf *b, const char *role, const bd_signature_block *blk)
{
    if (!blk->present)
        return;
    bd_strbuf_str(b, role);
    bd_strbuf_str(b, ":\n  identity: ");
    sb_quoted(b, blk->identity ? blk->identity : "");
    bd_strbuf_str(b, "\n  fingerprint: ");
    bd_strbuf_str(b, blk->fingerprint);
    bd_strbuf_str(b, "\n  signed_at: \"");
    bd_strbuf_str(b, blk->signed_at ? blk->signed_at : "");
    if (blk->digest[0]) {
        bd_strbuf_str(b, "\"\n  digest: \"");
        bd_strbuf_str(b, blk->digest);
    }
    bd_strbuf_str(b, "\"\n  signature: ");
    sb_literal(b, blk->signature ? blk->signature : "");
}

char *bd_provfile_format(const bd_provfile *p)
{
    bd_strbuf b = BD_STRBUF_INIT;
    bd_strbuf_str(&b, "# Signatures over this subject's digest "
                      "(docs/provenance.md#the-signed-message), written by `benchdesk sign`.\n"
                      "schema_version: 2\n");
    sb_block(&b, "author", &p->author);
    sb_block(&b, "reviewer", &p->reviewer);
    if (p->last_validated_at) {
        bd_strbuf_str(&b, "last_validated_at: \"");
        bd_strbuf_str(&b, p->last_validated_at);
        bd_strbuf_str(&b, "\"\n");
    }
    return bd_strbuf_take(&b);
}

/* ---- signing a subject ---------------------------------------------------------------- */

void bd_sign_result_release(bd_sign_result *r)
{
    if (!r)
        return;
    free(r->message);
    free(r->signature);
    free(r->prov_path);
    r->message = r->signature = r->prov_path = NULL;
}

/* The subject's digest now and its pin; refuses an unpinned or changed subject. Loads
 * its provenance.yaml into *prov. */
static int subject_state(char digest[BD_DIGEST_BUF], bd_provfile **prov, const bd_task_class *tc,
                         const char *case_id, bd_err *err)
{
    *prov = NULL;
    const char *pin = NULL;
    bool is_case = case_id != NULL;
    if (is_case) {
        bd_case *c = NULL;
        if (bd_task_class_case(&c, tc, case_id, err) < 0) /* it must load before it is signed */
            return -1;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/%s", tc->cases_dir, case_id);
        int rc = bd_digest_case_dir(digest, dir, NULL, err);
        bd_case_free(c);
        if (rc < 0)
            return -1;
        const bd_pin *p = bd_digests_find(tc->digests, case_id);
        pin = p ? p->digest : NULL;
    } else {
        if (bd_digest_task_class_dir(digest, tc->dir, err) < 0)
            return -1;
        pin = tc->digests ? tc->digests->task_class : NULL;
    }
    const char *what = is_case ? "case" : "task class";
    const char *name = is_case ? case_id : tc->name;
    if (!pin || !pin[0]) {
        bd_err_set(err, is_case ? BD_E_DIGEST_MISSING : BD_E_TC_DIGEST_MISSING, NULL, 0, 0,
                   "%s %s is not pinned; pin it first (", what, name);
        bd_err_advise(err, BD_ACT_PIN, "%s", tc->name);
        return bd_err_append(err, "), then sign");
    }
    if (strcmp(pin, digest) != 0) {
        bd_err_set(err, is_case ? BD_E_DIGEST_MISMATCH : BD_E_TC_DIGEST_MISMATCH, NULL, 0, 0,
                   "%s %s is %s but its pin is %s; a signature must cover the pinned content: "
                   "review the change, pin it (",
                   what, name, digest, pin);
        bd_err_advise(err, BD_ACT_PIN, "%s", tc->name);
        return bd_err_append(err, "), then sign");
    }
    if (is_case)
        return bd_task_class_case_prov(prov, tc, case_id, err);
    return bd_provfile_load(prov, tc->prov_path, err);
}

/* A signature block counts when it is present, not superseded and verified. */
static bool sig_valid(const bd_prov_sig *s)
{
    return s->present && !s->superseded && s->err.code == BD_OK;
}

/* The rules between the role being signed and the blocks already there (bd_sign_prepare's
 * contract): two people, no silent replacement, the author first. */
static int check_roles(bd_sign_result *out, const bd_prov_result *pr, const bd_provfile *pf,
                       const bd_sign_opts *opts, bd_err *err)
{
    int role = out->role;
    const char *rname = bd_provenance_role_str(role);
    const char *what = out->kind == BD_SUBJECT_CASE ? "case" : "task class";
    const bd_signature_block *mine_b = role == BD_ROLE_AUTHOR ? &pf->author : &pf->reviewer;
    const bd_signature_block *other_b = role == BD_ROLE_AUTHOR ? &pf->reviewer : &pf->author;
    const bd_prov_sig *mine = role == BD_ROLE_AUTHOR ? &pr->author : &pr->reviewer;
    const bd_prov_sig *other = role == BD_ROLE_AUTHOR ? &pr->reviewer : &pr->author;
    out->other_valid = sig_valid(other);
    if (other_b->present && !other->superseded &&
        strcasecmp(other_b->fingerprint, out->key.fingerprint) == 0)
        return bd_err_set(err, BD_E_PROVENANCE_SAME_SIGNER, pf->path, other_b->line, 0,
                          "key %s already signed this %s as %s; the two signatures must come "
                          "from two people: the other person signs as %s with their own key",
                          out->key.fingerprint, what,
                          role == BD_ROLE_AUTHOR ? "reviewer" : "author", rname);
    if (mine_b->present) {
        snprintf(out->replaces, sizeof(out->replaces), "%s (%s)",
                 mine_b->identity ? mine_b->identity : "", mine_b->fingerprint);
        out->replaces_valid = sig_valid(mine);
        if (out->replaces_valid && !(opts && opts->replace))
            return bd_err_set(err, BD_E_PROVENANCE_SIGNED_ALREADY, pf->path, mine_b->line, 0,
                              "this %s already holds a valid %s signature by %s; signing would "
                              "replace it: pass --replace to do so, or sign as the role still "
                              "missing",
                              what, rname, out->replaces);
    }
    if (role != BD_ROLE_REVIEWER)
        return 0;
    if (!pf->author.present || pr->author.superseded) {
        bd_err_set(err, BD_E_PROVENANCE_MISSING, pf->path, 0, 0,
                   pf->author.present ? "its author signature is superseded (it signed an "
                                        "earlier version); the author signs again first "
                                      : "has no author signature yet; the author signs first ");
        bd_err_advise(err, BD_ACT_SIGN_AUTHOR_FIRST, NULL);
        return bd_err_append(err, ", then a second person reviews");
    }
    /* Countersign only what verifies. */
    if (pr->author.err.code != BD_OK) {
        if (err)
            *err = pr->author.err;
        return -1;
    }
    return 0;
}

int bd_sign_prepare(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                    const char *case_id, int role, const bd_sign_opts *opts, bd_err *err)
{
    bd_provfile *pf = NULL;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->role = role;
    out->kind = case_id ? BD_SUBJECT_CASE : BD_SUBJECT_TASK_CLASS;
    snprintf(out->task_class, sizeof(out->task_class), "%s", tc->name);
    snprintf(out->case_id, sizeof(out->case_id), "%s", case_id ? case_id : "");
    const char *rname = bd_provenance_role_str(role);
    if (!rname)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "--role must be author or reviewer");
    if (subject_state(out->digest, &pf, tc, case_id, err) < 0)
        goto out;
    if (!(out->prov_path = strdup(pf->path))) {
        nomem(err);
        goto out;
    }
    if (bd_sign_resolve_key(&out->key, opts, err) < 0)
        goto out;
    const bd_signer *s = bd_signers_find(bd_prov_ctx_signers(ctx), out->key.fingerprint);
    if (!s || !(s->roles & role)) {
        bd_err_set(err, BD_E_PROVENANCE_UNTRUSTED, NULL, 0, 0,
                   "key %s (%s) is not trusted as %s in bench/trusted-signers.yaml, so its "
                   "signature would not verify; ask the bench's maintainers to add it (with "
                   "its public key in bench/keys/) or choose another key",
                   out->key.fingerprint, out->key.identity, rname);
        goto out;
    }
    bd_subject sj = {out->kind, tc->name, case_id, out->digest, out->digest, pf};
    bd_prov_result pr;
    if (bd_provenance_verify(&pr, ctx, &sj, err) < 0)
        goto out;
    if (check_roles(out, &pr, pf, opts, err) < 0)
        goto out;
    if (bd_provenance_message(&out->message, NULL, role, &sj, out->digest, err) < 0)
        goto out;
    rc = 0;
out:
    bd_provfile_free(pf);
    return rc;
}

static bool same_block(const bd_signature_block *a, const bd_signature_block *b)
{
    if (a->present != b->present)
        return false;
    if (!a->present)
        return true;
    return strcmp(a->fingerprint, b->fingerprint) == 0 && strcmp(a->identity, b->identity) == 0 &&
           strcmp(a->signed_at, b->signed_at) == 0 && strcmp(a->digest, b->digest) == 0 &&
           strcmp(a->signature, b->signature) == 0;
}

int bd_sign_prepared(bd_sign_result *prep, const bd_task_class *tc, const bd_sign_opts *opts,
                     bd_err *err)
{
    bd_provfile *pf = NULL, *back = NULL;
    char *text = NULL, *sig_norm = NULL;
    char now[21], digest[BD_DIGEST_BUF];
    int rc = -1;
    const char *case_id = prep->kind == BD_SUBJECT_CASE ? prep->case_id : NULL;
    if (!prep->message)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "sign called without prepare");
    free(prep->signature);
    prep->signature = NULL;
    if (bd_sign_bytes(&prep->signature, &prep->key, opts, prep->message, strlen(prep->message),
                      err) < 0)
        goto out;
    /* The subject must still be what was signed. */
    if (subject_state(digest, &pf, tc, case_id, err) < 0)
        goto out;
    if (strcmp(digest, prep->digest) != 0) {
        bd_err_set(err, case_id ? BD_E_DIGEST_MISMATCH : BD_E_TC_DIGEST_MISMATCH, pf->path, 0, 0,
                   "the subject changed while it was being signed (digest %s, signed %s); "
                   "nothing was written: sign again",
                   digest, prep->digest);
        goto out;
    }
    bd_signature_block *mine = prep->role == BD_ROLE_AUTHOR ? &pf->author : &pf->reviewer;
    bd_utc_now(now);
    free(mine->identity);
    free(mine->signed_at);
    free(mine->signature);
    size_t sl = strlen(prep->signature);
    while (sl > 0 && (prep->signature[sl - 1] == '\n' || prep->signature[sl - 1] == '\r'))
        sl--;
    sig_norm = malloc(sl + 2);
    mine->identity = strdup(prep->key.identity);
    mine->signed_at = strdup(now);
    mine->signature = sig_norm ? strdup("") : NULL;
    if (!sig_norm || !mine->identity || !mine->signed_at || !mine->signature) {
        nomem(err);
        goto out;
    }
    free(mine->signature);
    memcpy(sig_norm, prep->signature, sl);
    memcpy(sig_norm + sl, "\n", 2);
    mine->signature = sig_norm;
    sig_norm = NULL;
    mine->present = true;
    memcpy(mine->fingerprint, prep->key.fingerprint, sizeof(mine->fingerprint));
    snprintf(mine->digest, sizeof(mine->digest), "%s", prep->digest);
    if (!(text = bd_provfile_format(pf))) {
        nomem(err);
        goto out;
    }
    bd_err le = BD_ERR_INIT;
    if (bd_provfile_parse(&back, text, strlen(text), pf->path, &le) < 0 ||
        !same_block(&back->author, &pf->author) || !same_block(&back->reviewer, &pf->reviewer)) {
        bd_err_set(err, BD_E_INTERNAL, pf->path, 0, 0,
                   "the new provenance.yaml would not give back exactly the signature written "
                   "(%s); nothing was written: please report this bug",
                   le.code == BD_OK ? "the values differ" : le.msg);
        goto out;
    }
    /* A case's provenance.yaml lives inside the case dir, a hashed scope: the temp file
     * goes to cases/ so a crash leaves nothing that the case digest would take in. */
    if (bd_write_file_atomic_in(pf->path, case_id ? tc->cases_dir : NULL, text, strlen(text), 0644,
                                err) < 0)
        goto out;
    rc = 0;
out:
    bd_provfile_free(pf);
    bd_provfile_free(back);
    free(text);
    free(sig_norm);
    return rc;
}

int bd_sign_subject(bd_sign_result *out, bd_prov_ctx *ctx, const bd_task_class *tc,
                    const char *case_id, int role, const bd_sign_opts *opts, bd_err *err)
{
    if (bd_sign_prepare(out, ctx, tc, case_id, role, opts, err) < 0)
        return -1;
    return bd_sign_prepared(out, tc, opts, err);
}
