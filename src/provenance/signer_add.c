#include "signer_add.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "gpg_util.h"
#include "strbuf.h"

#define SIGNERS_MAX (1024u * 1024u)

int bd_signer_roles_parse(int *roles, const char *s, bd_err *err)
{
    *roles = 0;
    const char *p = s ? s : "";
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t n = strcspn(p, ", ");
        if (n == 6 && strncmp(p, "author", 6) == 0)
            *roles |= BD_ROLE_AUTHOR;
        else if (n == 8 && strncmp(p, "reviewer", 8) == 0)
            *roles |= BD_ROLE_REVIEWER;
        else if (n == 8 && strncmp(p, "operator", 8) == 0)
            *roles |= BD_ROLE_OPERATOR;
        else if (n)
            return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                              "--roles takes author, reviewer, author,reviewer or operator, "
                              "not '%.*s'",
                              (int)n, p);
        p += n;
    }
    if (!*roles)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "--roles needs author, reviewer, author,reviewer or operator");
    if ((*roles & BD_ROLE_OPERATOR) && *roles != BD_ROLE_OPERATOR)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "an operator key holds no other role (a rubric could reach it): "
                          "give --roles operator alone, with a key of its own");
    return 0;
}

const char *bd_signer_roles_str(int roles)
{
    switch (roles) {
    case BD_ROLE_AUTHOR:
        return "author";
    case BD_ROLE_REVIEWER:
        return "reviewer";
    case BD_ROLE_AUTHOR | BD_ROLE_REVIEWER:
        return "author, reviewer";
    case BD_ROLE_OPERATOR:
        return "operator";
    default:
        return "";
    }
}

static bool key_usable(gpgme_key_t k)
{
    return k->subkeys && k->subkeys->fpr && !k->revoked && !k->expired && !k->disabled &&
           !k->invalid && k->can_sign;
}

/* The one usable key `pattern` names in `g`'s keyring (*out: gpgme_key_unref). */
static int find_key(gpgme_key_t *out, gpgme_ctx_t g, const char *pattern, bd_err *err)
{
    *out = NULL;
    gpgme_error_t e = gpgme_op_keylist_start(g, pattern, 0);
    if (e)
        return bd_gpg_fail(err, BD_E_GPG, e, "listing your keys");
    gpgme_key_t k = NULL;
    size_t found = 0, unusable = 0;
    while (gpgme_op_keylist_next(g, &k) == 0) {
        if (!key_usable(k)) {
            unusable++;
            gpgme_key_unref(k);
            continue;
        }
        if (found++)
            gpgme_key_unref(k);
        else
            *out = k;
    }
    gpgme_op_keylist_end(g);
    if (found == 1)
        return 0;
    if (*out)
        gpgme_key_unref(*out);
    *out = NULL;
    if (found > 1)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "'%s' names %zu keys of your keyring; give the primary fingerprint",
                          pattern, found);
    return bd_err_set(err, BD_E_GPG_KEY_NOT_FOUND, NULL, 0, 0,
                      "no usable key '%s' in your keyring%s; see `gpg --list-keys`", pattern,
                      unusable ? " (one is expired, revoked or cannot sign)" : "");
}

/* The armored public key `fpr` exported from `g`. *out (caller frees), *len. */
static int export_key(char **out, size_t *len, gpgme_ctx_t g, const char *fpr, bd_err *err)
{
    gpgme_data_t d = NULL;
    gpgme_error_t e = gpgme_data_new(&d);
    if (!e)
        e = gpgme_op_export(g, fpr, 0, d);
    if (e) {
        gpgme_data_release(d);
        return bd_gpg_fail(err, BD_E_GPG, e, "exporting the public key");
    }
    size_t n = 0;
    char *mem = gpgme_data_release_and_get_mem(d, &n);
    if (!mem || !n) {
        gpgme_free(mem);
        return bd_err_set(err, BD_E_GPG, NULL, 0, 0, "GnuPG exported nothing for key %s", fpr);
    }
    *out = malloc(n + 1);
    if (*out) {
        memcpy(*out, mem, n);
        (*out)[n] = '\0';
        *len = n;
    }
    gpgme_free(mem);
    return *out ? 0 : bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

/* bench/keys/<name>.asc for `identity`: its local part made safe; another name when a
 * file with other bytes holds it. Writes the key there (or keeps an identical one). */
static int write_key_file(bd_signer_added *out, const char *bench_dir, const char *armored,
                          size_t len, bd_err *err)
{
    char name[64];
    size_t k = 0;
    for (const char *p = out->identity; *p && *p != '@' && k < 40; p++) {
        unsigned char c = (unsigned char)tolower((unsigned char)*p);
        if (isalnum(c) || c == '-' || c == '_' || c == '.')
            name[k++] = (char)c;
    }
    name[k] = '\0';
    if (!k || name[0] == '.')
        snprintf(name, sizeof(name), "%s", out->fingerprint);
    char dir[3900];
    if ((size_t)snprintf(dir, sizeof(dir), "%s/keys", bench_dir) >= sizeof(dir))
        return bd_err_set(err, BD_E_IO, bench_dir, 0, 0, "the bench path is too long");
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return bd_err_errno(err, BD_E_IO, errno, dir, "cannot create the keys folder");
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt)
            snprintf(out->key_path, sizeof(out->key_path), "%s/%s-%s.asc", dir, name,
                     out->fingerprint + BD_FPR_LEN - 8);
        else
            snprintf(out->key_path, sizeof(out->key_path), "%s/%s.asc", dir, name);
        char *old = NULL;
        size_t olen = 0;
        if (bd_read_file(&old, &olen, out->key_path, SIGNERS_MAX, BD_E_IO, NULL) == 0) {
            bool same = olen == len && memcmp(old, armored, len) == 0;
            free(old);
            if (same) {
                out->key_file_new = false;
                return 0;
            }
            continue;
        }
        out->key_file_new = true;
        return bd_write_file_atomic(out->key_path, armored, len, 0644, err);
    }
    return bd_err_set(err, BD_E_USAGE, out->key_path, 0, 0,
                      "exists with another key; name the file yourself (gpg --armor --export)");
}

static void quoted(bd_strbuf *b, const char *s)
{
    bd_strbuf_str(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            bd_strbuf_add(b, "\\", 1);
        if (*p >= 0x20 && *p != 0x7f)
            bd_strbuf_add(b, (const char *)p, 1);
    }
    bd_strbuf_str(b, "\"");
}

static void entry(bd_strbuf *b, const char *fpr, const char *identity, int roles)
{
    bd_strbuf_str(b, "  - {fingerprint: ");
    bd_strbuf_str(b, fpr);
    bd_strbuf_str(b, ", identity: ");
    quoted(b, identity ? identity : "");
    bd_strbuf_str(b, ", roles: [");
    bd_strbuf_str(b, bd_signer_roles_str(roles));
    bd_strbuf_str(b, "]}\n");
}

/* The new trusted-signers.yaml text: `old` with the entry appended, or (when that would
 * not load back with the new signer) every signer written anew. */
static char *signers_text(const char *old, const bd_signers *had, const bd_signer_added *a,
                          const char *path)
{
    bd_strbuf b = BD_STRBUF_INIT;
    if (old && had) {
        bd_strbuf_str(&b, old);
        if (old[0] && old[strlen(old) - 1] != '\n')
            bd_strbuf_str(&b, "\n");
        entry(&b, a->fingerprint, a->identity, a->roles);
        char *t = bd_strbuf_take(&b);
        bd_signers *back = NULL;
        bool ok = t && bd_signers_parse(&back, t, strlen(t), path, NULL) == 0 &&
                  back->n == had->n + 1 && bd_signers_find(back, a->fingerprint);
        bd_signers_free(back);
        if (ok)
            return t;
        free(t);
    }
    bd_strbuf_str(&b, "# Who may sign this bench's cases and task classes, and in which roles.\n"
                      "# Each signer's armored public key goes in bench/keys/.\n"
                      "schema_version: 1\nsigners:\n");
    for (size_t i = 0; had && i < had->n; i++)
        entry(&b, had->signers[i].fingerprint, had->signers[i].identity, had->signers[i].roles);
    entry(&b, a->fingerprint, a->identity, a->roles);
    return bd_strbuf_take(&b);
}

static int add_entry(const bd_signer_added *a, const char *bench_dir, bd_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/trusted-signers.yaml", bench_dir);
    char *old = NULL, *text = NULL;
    size_t olen = 0;
    bd_signers *had = NULL, *back = NULL;
    int rc = -1;
    bool exists = bd_read_file(&old, &olen, path, SIGNERS_MAX, BD_E_YAML_TOO_LARGE, NULL) == 0;
    if (exists && bd_signers_parse(&had, old, olen, path, err) < 0)
        goto out;
    if (had && bd_signers_find(had, a->fingerprint)) {
        bd_err_set(err, BD_E_USAGE, path, 0, 0,
                   "already lists %s; change its roles by editing the file (a reviewed change)",
                   a->fingerprint);
        goto out;
    }
    if (!(text = signers_text(exists ? old : NULL, had, a, path))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    if (bd_signers_parse(&back, text, strlen(text), path, err) < 0)
        goto out;
    rc = bd_write_file_atomic(path, text, strlen(text), 0644, err);
out:
    free(old);
    free(text);
    bd_signers_free(had);
    bd_signers_free(back);
    return rc;
}

int bd_signer_add(bd_signer_added *out, const char *bench_dir, const char *key, int roles,
                  const char *gnupg_home, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    out->roles = roles;
    gpgme_ctx_t g = NULL;
    gpgme_key_t k = NULL;
    char *armored = NULL;
    size_t len = 0;
    int rc = -1;
    if (!key || !key[0])
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "which key? a fingerprint or an e-mail");
    if (bd_gpg_new(&g, gnupg_home, true, err) < 0 || find_key(&k, g, key, err) < 0)
        goto out;
    bd_gpg_fpr_upper(out->fingerprint, k->subkeys->fpr);
    bd_gpg_key_identity(k, out->identity, sizeof(out->identity), NULL, 0);
    /* Listed already: refused before anything is written. */
    bd_signer_added probe = *out;
    bd_err le = BD_ERR_INIT;
    char path[4096];
    snprintf(path, sizeof(path), "%s/trusted-signers.yaml", bench_dir);
    bd_signers *had = NULL;
    if (bd_signers_load(&had, path, &le) == 0 && bd_signers_find(had, probe.fingerprint)) {
        bd_signers_free(had);
        bd_err_set(err, BD_E_USAGE, path, 0, 0,
                   "already lists %s; change its roles by editing the file (a reviewed change)",
                   probe.fingerprint);
        goto out;
    }
    bd_signers_free(had);
    if (export_key(&armored, &len, g, out->fingerprint, err) < 0 ||
        write_key_file(out, bench_dir, armored, len, err) < 0 || add_entry(out, bench_dir, err) < 0)
        goto out;
    rc = 0;
out:
    free(armored);
    if (k)
        gpgme_key_unref(k);
    if (g)
        gpgme_release(g);
    return rc;
}
