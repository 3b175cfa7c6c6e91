/*
 * provenance.c — verifying the two-person provenance of a case or a task class
 * (docs/provenance.md#verification-rules).
 *
 * Verification runs GnuPG (through GPGME) against a private home holding only the
 * bench's own public keys; its gpg.conf turns off agent autostart and key retrieval so
 * verifying starts no daemon and touches no network. Signing is sign.c's, above this.
 */
#include "provenance.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blake3.h>
#include <gpgme.h>

#include "case_stamp.h"
#include "fsutil.h"
#include "gpg_util.h"
#include "openpgp.h"
#include "sigbatch.h"
#include "sigclean.h"
#include "sigmemo.h"
#include "strbuf.h"

#define KEYFILE_MAX    (1024 * 1024)
#define GPG_MIN_ENGINE "2.1.0"

/* ---- init and small helpers -------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static bool init_failed;   /* gpgme older than 1.7.0 */
static bool engine_failed; /* no usable gpg engine */

static void init_gpgme(void)
{
    if (!gpgme_check_version("1.7.0")) {
        init_failed = true;
        return;
    }
    const char *ctype = setlocale(LC_CTYPE, NULL);
    if (ctype)
        gpgme_set_locale(NULL, LC_CTYPE, ctype);
}

/* GPGME learns its engines on the first question about them (gpgme_new included): it runs
 * gpgconf twice for the paths and every engine's --version, five processes before any
 * signature. So that happens here, the first time GnuPG is needed, and a command whose
 * signatures all come from the memo (docs/provenance.md#verifying-many-signatures)
 * starts none of them. */
static void check_engine(void)
{
    if (gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP) != 0)
        engine_failed = true;
}

int bd_provenance_init(bd_err *err)
{
    pthread_once(&init_once, init_gpgme);
    if (init_failed)
        return bd_err_set(err, BD_E_GPG_UNAVAILABLE, NULL, 0, 0,
                          "GPGME is older than 1.7.0; install the Debian package libgpgme11");
    return 0;
}

/* bd_provenance_init, then the gpg engine's check (once a process). Returns 0, or -1 with
 * gpg.unavailable. */
static int gpg_engine_ready(bd_err *err)
{
    if (bd_provenance_init(err) < 0)
        return -1;
    pthread_once(&engine_once, check_engine);
    if (engine_failed)
        return bd_err_set(err, BD_E_GPG_UNAVAILABLE, NULL, 0, 0,
                          "no usable gpg engine (GnuPG 2.1 or later) was found; install the "
                          "Debian package gnupg");
    return 0;
}

void bd_gpg_err_text(gpgme_error_t e, char *buf, size_t cap)
{
    if (gpgme_strerror_r(e, buf, cap) != 0)
        snprintf(buf, cap, "GnuPG error %u", (unsigned)gpgme_err_code(e));
}

int bd_gpg_fail(bd_err *err, bd_code code, gpgme_error_t e, const char *what)
{
    char msg[256];
    bd_gpg_err_text(e, msg, sizeof(msg));
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

const char *bd_subject_kind_str(bd_subject_kind k)
{
    return k == BD_SUBJECT_TASK_CLASS ? "task-class" : "case";
}

int bd_provenance_message(char **out, size_t *len, int role, const bd_subject *s,
                          const char *digest, bd_err *err)
{
    *out = NULL;
    const char *r = bd_provenance_role_str(role);
    if (!r)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "role must be author or reviewer");
    bool is_case = s->kind == BD_SUBJECT_CASE;
    if (!bd_name_valid(s->task_class) || (is_case && !bd_name_valid(s->case_id)))
        return bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                          "the subject's name is not valid; cannot build a provenance message");
    if (!digest || !bd_digest_str_valid(digest)) {
        bd_err_set(err, is_case ? BD_E_DIGEST_MISSING : BD_E_TC_DIGEST_MISSING, NULL, 0, 0,
                   "%s %s has no digest; run ", bd_subject_kind_str(s->kind),
                   is_case ? s->case_id : s->task_class);
        bd_err_advise(err, BD_ACT_PIN, "%s", s->task_class);
        return bd_err_append(err, " before signing");
    }
    /* The message of docs/provenance.md#the-signed-message, joined piece by piece: a warm
     * check builds one per signature of every case. */
    const char *parts[] = {BD_PROV_MAGIC "\nrole: ",
                           r,
                           "\nsubject: ",
                           bd_subject_kind_str(s->kind),
                           "\ntask_class: ",
                           s->task_class,
                           is_case ? "\ncase_id: " : "",
                           is_case ? s->case_id : "",
                           "\ndigest: ",
                           digest,
                           "\n"};
    enum { N_PARTS = sizeof(parts) / sizeof(parts[0]) };
    size_t lens[N_PARTS], n = 0;
    for (size_t i = 0; i < N_PARTS; i++)
        n += lens[i] = strlen(parts[i]);
    char *m = malloc(n + 1);
    if (!m)
        return nomem(err);
    char *at = m;
    for (size_t i = 0; i < N_PARTS; i++) {
        memcpy(at, parts[i], lens[i]);
        at += lens[i];
    }
    *at = '\0';
    *out = m;
    if (len)
        *len = n;
    return 0;
}

/* A GPGME context for OpenPGP, on `home` (NULL: the user's default home). */
int bd_gpg_new(gpgme_ctx_t *out, const char *home, bool armor, bd_err *err)
{
    gpgme_ctx_t g = NULL;
    gpgme_error_t e;
    *out = NULL;
    if (gpg_engine_ready(err) < 0)
        return -1;
    if ((e = gpgme_new(&g)) != 0)
        return bd_gpg_fail(err, BD_E_GPG, e, "cannot start GPGME");
    if ((e = gpgme_set_protocol(g, GPGME_PROTOCOL_OpenPGP)) != 0 ||
        (home && (e = gpgme_ctx_set_engine_info(g, GPGME_PROTOCOL_OpenPGP, NULL, home)) != 0)) {
        gpgme_release(g);
        return bd_gpg_fail(err, BD_E_GPG, e, "cannot set up GnuPG");
    }
    gpgme_set_armor(g, armor ? 1 : 0);
    *out = g;
    return 0;
}

void bd_gpg_key_identity(gpgme_key_t k, char *identity, size_t icap, char *uid, size_t ucap)
{
    gpgme_user_id_t u = k->uids;
    for (gpgme_user_id_t x = k->uids; x; x = x->next)
        if (!x->revoked && !x->invalid) {
            u = x;
            break;
        }
    const char *full = u && u->uid ? u->uid : "";
    if (uid && ucap)
        bd_ydoc_clip(uid, ucap, full);
    if (identity && icap)
        bd_ydoc_clip(identity, icap, u && u->email && u->email[0] ? u->email : full);
}

void bd_gpg_fpr_upper(char out[BD_FPR_LEN + 1], const char *fpr)
{
    size_t i = 0;
    for (; fpr && fpr[i] && i < BD_FPR_LEN; i++)
        out[i] = (fpr[i] >= 'a' && fpr[i] <= 'f') ? (char)(fpr[i] - 'a' + 'A') : fpr[i];
    out[i] = '\0';
}

/* ---- the verification context -------------------------------------------------------- */

#define CTX_POOL 8

/* One (sub)key of the private home, as a key listing reports it. */
typedef struct key_info {
    char fpr[64];                 /* the subkey's fingerprint, as GnuPG spells it */
    char keyid[17];               /* its 16-hex key id */
    char primary[BD_FPR_LEN + 1]; /* the primary key's fingerprint, upper-case */
    bool key_revoked, key_expired, key_disabled, key_invalid;
    bool sub_revoked, sub_expired, sub_disabled, sub_invalid;
    int64_t expires; /* the earlier of the key's and the subkey's expiry, 0: never */
    bool is_primary; /* the key's primary key itself, not a subkey */
    bool can_sign;   /* GnuPG lists it as usable for signing */
    int64_t created; /* its creation time, as GnuPG lists it */
    bool ed25519;    /* its Ed25519 public key is in `point` (openpgp.h) */
    uint8_t point[32];
} key_info;

/* A verdict already reached, compact: a large check keeps one per signature (200,000 for
 * a bench of 100,000 signed cases), and every gpg GPGME starts copies the page tables of
 * the whole process. The rare long key id and the text of a non-signature go to the heap. */
typedef struct memo_entry {
    uint8_t key[32];
    uint8_t verdict;
    bool crypto_good;
    int nsigs;
    char fingerprint[BD_FPR_LEN + 1];
    char key_id[41];
    char *long_key_id; /* the key id when it does not fit key_id, else NULL */
    char *detail;      /* the detail when not empty, else NULL */
    bool expiry_known;
    int64_t expires;
} memo_entry;

struct bd_prov_ctx {
    char *bench_dir;
    char *keys_dir;
    bd_signers *signers;
    pthread_mutex_t mu; /* guards the lazy creation of `home` */
    char *home;         /* the private GnuPG home, once created */
    bool setup_done;
    bd_err setup_err; /* BD_OK, or why the home could not be set up (sticky) */
    int sig_slot;     /* bd_sigclean slot of `home`, or -1 */
    /* GPGME contexts on the home, kept between calls: setting a context's home makes
     * GPGME run `gpg --version`, a process per context, so each is made once. */
    gpgme_ctx_t idle[CTX_POOL];
    size_t n_idle;
    /* Every key of the home, listed once after the import (one gpg process rather than
     * one per signature): the home is private and not written after setup. */
    key_info *keys;
    size_t n_keys;
    /* Verdicts already reached, by BLAKE3(message, signature): the same bytes against the
     * same (immutable) home always give the same verdict, and a TUI checks the task
     * class's two signatures with every chunk of cases. In memory, for this context only;
     * nothing is ever read back from disk. */
    memo_entry *memo; /* memo_n entries, in the order they came */
    size_t memo_n, memo_room;
    uint32_t *memo_slots; /* open addressing over memo: 0 empty, else index + 1 */
    size_t memo_cap;      /* slots, a power of two, at least twice memo_n */
    /* This user's memo across processes (sigmemo.h), keyed also by `context`, a digest of
     * bench/keys/ and trusted-signers.yaml (made once, on first use). */
    bd_sigmemo *user_memo;
    /* The same memo read ahead on a thread of its own (bd_prov_ctx_preload) while the
     * caller lists the bench; taken as user_memo on first use, under mu. */
    pthread_t preload_thread;
    bool preloading;
    bd_sigmemo *preloaded; /* the thread's result, read only after the join */
    bool context_done, context_ok;
    uint8_t context[32];
    /* keeps_cases's answer once known (0 not yet, 1 yes, 2 no): asked three times a case
     * by a warm check's workers, it would otherwise take `mu` each time. */
    atomic_int keeps_cases;
    size_t n_batched; /* signatures settled in batches (sigbatch.h), under mu */
    size_t n_alone;   /* signatures given to GnuPG one at a time, under mu */
    size_t n_inproc;  /* signatures settled by the in-process check (openpgp.h), under mu */
    bool full;        /* every signature to GnuPG: no user memo, no in-process check (under mu) */
};

static bd_sigmemo *take_preloaded(bd_prov_ctx *ctx);

int bd_prov_ctx_new(bd_prov_ctx **out, const char *bench_dir, bd_err *err)
{
    int rc = -1;
    char *path = NULL;
    bd_prov_ctx *ctx = calloc(1, sizeof(*ctx));
    *out = NULL;
    if (!ctx)
        return nomem(err);
    pthread_mutex_init(&ctx->mu, NULL);
    ctx->sig_slot = -1;
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

void bd_prov_ctx_free(bd_prov_ctx *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->n_idle; i++)
        gpgme_release(ctx->idle[i]);
    free(ctx->keys);
    for (size_t i = 0; i < ctx->memo_n; i++) {
        free(ctx->memo[i].long_key_id);
        free(ctx->memo[i].detail);
    }
    free(ctx->memo);
    free(ctx->memo_slots);
    bd_sigmemo_close(ctx->user_memo);
    bd_sigmemo_close(take_preloaded(ctx));
    if (ctx->home) {
        bd_sigclean_remove(ctx->sig_slot);
        (void)bd_remove_tree(ctx->home, NULL); /* what is left, the next sweep takes */
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
        qsort(names, *n, sizeof(*names), bd_str_ptr_cmp);
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

/* Whether an import error is about the bytes handed over (a bad key file) rather than
 * GnuPG failing to run. */
static bool import_data_error(gpgme_err_code_t c)
{
    return c == GPG_ERR_NO_DATA || c == GPG_ERR_BAD_DATA || c == GPG_ERR_INV_DATA ||
           c == GPG_ERR_INV_PACKET || c == GPG_ERR_CHECKSUM || c == GPG_ERR_UNKNOWN_PACKET ||
           c == GPG_ERR_INV_KEYRING || c == GPG_ERR_BAD_KEY || c == GPG_ERR_BAD_PUBKEY ||
           c == GPG_ERR_INV_ARMOR || c == GPG_ERR_NOT_SUPPORTED ||
           c == GPG_ERR_UNSUPPORTED_ALGORITHM || c == GPG_ERR_NO_PUBKEY || c == GPG_ERR_INV_VALUE;
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
        bd_gpg_fail(err, BD_E_GPG, e, "cannot hand a key file to GPGME");
        goto out;
    }
    e = gpgme_op_import(g, d);
    if (e && !import_data_error(gpgme_err_code(e))) {
        /* GnuPG itself did not run (spawn failure, a broken engine, an unusable home):
         * an environment failure, not a bad key file. */
        char msg[256];
        bd_gpg_err_text(e, msg, sizeof(msg));
        bd_err_set(err, BD_E_GPG, path, 0, 0,
                   "GnuPG could not run to import this key (%s); check that `gpg --version` "
                   "works and that TMPDIR is a writable directory",
                   msg);
        goto out;
    }
    gpgme_import_result_t r = e ? NULL : gpgme_op_import_result(g);
    if (e || !r || r->considered == 0 || r->secret_read > 0 || r->imported + r->unchanged == 0) {
        char msg[256] = "no OpenPGP public key in it";
        if (e)
            bd_gpg_err_text(e, msg, sizeof(msg));
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

/* The Ed25519 public keys of the home's keys, for the in-process check: the home's own
 * export (what GnuPG accepted, one gpg process), each key packet matched to GnuPG's
 * listing by the fingerprint computed from its bytes and by its creation time. A key
 * not matched keeps ed25519 false, and its signatures go to GnuPG. */
static void home_ed25519_points(bd_prov_ctx *ctx, gpgme_ctx_t g)
{
    gpgme_data_t d = NULL;
    bd_pgp_edkey *ks = NULL;
    size_t nk = 0, len = 0;
    if (!ctx->n_keys || gpgme_data_new(&d) != 0)
        return;
    if (gpgme_op_export(g, NULL, 0, d) != 0) {
        gpgme_data_release(d);
        return;
    }
    char *bytes = gpgme_data_release_and_get_mem(d, &len);
    if (bytes && bd_pgp_edkeys(&ks, &nk, (const uint8_t *)bytes, len)) {
        for (size_t i = 0; i < nk; i++) {
            char hex[41];
            for (size_t j = 0; j < 20; j++)
                snprintf(hex + 2 * j, 3, "%02X", ks[i].fpr[j]);
            for (size_t j = 0; j < ctx->n_keys; j++) {
                key_info *ki = &ctx->keys[j];
                if (strcasecmp(ki->fpr, hex) == 0 && ki->created == (int64_t)ks[i].created &&
                    ki->is_primary == ks[i].primary) {
                    ki->ed25519 = true;
                    memcpy(ki->point, ks[i].point, sizeof(ki->point));
                }
            }
        }
    }
    free(ks);
    gpgme_free(bytes);
}

/* List every key of the home once into ctx->keys. A listing that fails leaves the cache
 * empty, and each signature then asks GnuPG for its key (gpgme_get_key) as before. */
static void list_home_keys(bd_prov_ctx *ctx, gpgme_ctx_t g)
{
    size_t cap = 0;
    gpgme_key_t key;
    if (gpgme_op_keylist_start(g, NULL, 0) != 0)
        return;
    while (gpgme_op_keylist_next(g, &key) == 0) {
        for (gpgme_subkey_t sk = key->subkeys; sk && key->subkeys->fpr; sk = sk->next) {
            if (!sk->fpr || strlen(sk->fpr) >= sizeof(((key_info *)0)->fpr))
                continue;
            if (ctx->n_keys == cap) {
                size_t nc = cap ? cap * 2 : 16;
                key_info *nk = realloc(ctx->keys, nc * sizeof(*nk));
                if (!nk)
                    break;
                ctx->keys = nk;
                cap = nc;
            }
            key_info *ki = &ctx->keys[ctx->n_keys++];
            memset(ki, 0, sizeof(*ki));
            snprintf(ki->fpr, sizeof(ki->fpr), "%s", sk->fpr);
            snprintf(ki->keyid, sizeof(ki->keyid), "%s", sk->keyid ? sk->keyid : "");
            bd_gpg_fpr_upper(ki->primary, key->subkeys->fpr);
            ki->key_revoked = key->revoked;
            ki->key_expired = key->expired;
            ki->key_disabled = key->disabled;
            ki->key_invalid = key->invalid;
            ki->sub_revoked = sk->revoked;
            ki->sub_expired = sk->expired;
            ki->sub_disabled = sk->disabled;
            ki->sub_invalid = sk->invalid;
            long pe = key->subkeys->expires, se = sk->expires;
            ki->expires = pe > 0 && (se <= 0 || pe < se) ? pe : se > 0 ? se : 0;
            ki->is_primary = sk == key->subkeys;
            ki->can_sign = sk->can_sign;
            ki->created = sk->timestamp;
        }
        gpgme_key_unref(key);
    }
    gpgme_op_keylist_end(g);
    home_ed25519_points(ctx, g);
}

/* The cached key whose subkey fingerprint (or, for an old signature that names only a
 * key id, key id) is `id`, or NULL: then GnuPG is asked. */
static const key_info *find_key(const bd_prov_ctx *ctx, const char *id)
{
    size_t l = strlen(id);
    for (size_t i = 0; ctx && i < ctx->n_keys; i++) {
        const key_info *ki = &ctx->keys[i];
        if (strcasecmp(ki->fpr, id) == 0 || (l == 16 && strcasecmp(ki->keyid, id) == 0))
            return ki;
    }
    return NULL;
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
    const char *tmp = bd_tmp_root();
    char tag[BD_OWNER_TAG_MAX];
    bd_owner_tag(tag);
    /* Owner-tagged, so a later start sweeps it when this process is SIGKILLed. */
    (void)bd_tmp_sweep(tmp);
    size_t hl = strlen(tmp) + 32 + sizeof(tag);
    char *home = malloc(hl);
    if (!home) {
        nomem(&e);
        goto out;
    }
    snprintf(home, hl, "%s/benchdesk-gnupg-%s-XXXXXX", tmp, tag);
    /* mkdtemp creates it 0700: only this user can read or plant keys in it. */
    if (!mkdtemp(home)) {
        bd_err_errno(&e, BD_E_IO, errno, home,
                     "cannot create a private GnuPG home for verification (set TMPDIR to "
                     "a writable directory)");
        free(home);
        goto out;
    }
    ctx->home = home;
    /* Ctrl-C, SIGTERM or SIGHUP in the middle of a verify must not leave it behind. */
    ctx->sig_slot = bd_sigclean_add(home);
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
    if (bd_gpg_new(&g, home, false, &e) < 0)
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
    list_home_keys(ctx, g);
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

/* The memo key of a (message, signature) pair: lengths included, so no two pairs share
 * a stream. */
static void memo_key(uint8_t key[32], const char *msg, size_t mlen, const char *sig)
{
    blake3_hasher h;
    uint64_t l = mlen;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, &l, sizeof(l));
    blake3_hasher_update(&h, msg, mlen);
    l = strlen(sig);
    blake3_hasher_update(&h, &l, sizeof(l));
    blake3_hasher_update(&h, sig, (size_t)l);
    blake3_hasher_finalize(&h, key, 32);
}

static size_t memo_slot(const uint8_t key[32], size_t cap)
{
    size_t h;
    memcpy(&h, key, sizeof(h));
    return h & (cap - 1);
}

/* The slot of `key` in the memo's table: its entry's, or the empty one it would take.
 * Under ctx->mu, with memo_cap > 0. */
static size_t memo_find(const bd_prov_ctx *ctx, const uint8_t key[32])
{
    size_t i = memo_slot(key, ctx->memo_cap);
    while (ctx->memo_slots[i] && memcmp(ctx->memo[ctx->memo_slots[i] - 1].key, key, 32) != 0)
        i = (i + 1) & (ctx->memo_cap - 1);
    return i;
}

static bool memo_get(bd_prov_ctx *ctx, const uint8_t key[32], bd_prov_detached *out)
{
    bool found = false;
    pthread_mutex_lock(&ctx->mu);
    size_t i = ctx->memo_cap ? memo_find(ctx, key) : 0;
    if (ctx->memo_cap && ctx->memo_slots[i]) {
        const memo_entry *e = &ctx->memo[ctx->memo_slots[i] - 1];
        memset(out, 0, sizeof(*out));
        out->verdict = (bd_prov_det_verdict)e->verdict;
        out->crypto_good = e->crypto_good;
        out->nsigs = e->nsigs;
        memcpy(out->fingerprint, e->fingerprint, sizeof(out->fingerprint));
        snprintf(out->key_id, sizeof(out->key_id), "%s",
                 e->long_key_id ? e->long_key_id : e->key_id);
        snprintf(out->detail, sizeof(out->detail), "%s", e->detail ? e->detail : "");
        out->expiry_known = e->expiry_known;
        out->expires = e->expires;
        found = true;
    }
    pthread_mutex_unlock(&ctx->mu);
    return found;
}

/* `d` packed into *e (its key set by the caller). False when out of memory. */
static bool memo_pack(memo_entry *e, const bd_prov_detached *d)
{
    e->verdict = (uint8_t)d->verdict;
    e->crypto_good = d->crypto_good;
    e->nsigs = d->nsigs;
    e->expiry_known = d->expiry_known;
    e->expires = d->expires;
    memcpy(e->fingerprint, d->fingerprint, sizeof(e->fingerprint));
    size_t kl = strlen(d->key_id);
    e->long_key_id = kl < sizeof(e->key_id) ? NULL : strdup(d->key_id);
    e->detail = d->detail[0] ? strdup(d->detail) : NULL;
    if ((kl >= sizeof(e->key_id) && !e->long_key_id) || (d->detail[0] && !e->detail)) {
        free(e->long_key_id);
        free(e->detail);
        return false;
    }
    memcpy(e->key_id, d->key_id, kl < sizeof(e->key_id) ? kl + 1 : 1);
    if (kl >= sizeof(e->key_id))
        e->key_id[0] = '\0';
    return true;
}

/* Room for one more entry: the table at most half full. Under ctx->mu. */
static bool memo_grow(bd_prov_ctx *ctx)
{
    if (ctx->memo_n == ctx->memo_room) {
        size_t nr = ctx->memo_room ? 2 * ctx->memo_room : 32;
        memo_entry *nm = nr < UINT32_MAX ? realloc(ctx->memo, nr * sizeof(*nm)) : NULL;
        if (!nm)
            return false;
        ctx->memo = nm;
        ctx->memo_room = nr;
    }
    if (2 * (ctx->memo_n + 1) <= ctx->memo_cap)
        return true;
    size_t nc = ctx->memo_cap ? 2 * ctx->memo_cap : 64;
    uint32_t *ns = calloc(nc, sizeof(*ns));
    if (!ns)
        return false;
    free(ctx->memo_slots);
    ctx->memo_slots = ns;
    ctx->memo_cap = nc;
    for (size_t k = 0; k < ctx->memo_n; k++)
        ns[memo_find(ctx, ctx->memo[k].key)] = (uint32_t)(k + 1);
    return true;
}

static void memo_put(bd_prov_ctx *ctx, const uint8_t key[32], const bd_prov_detached *d)
{
    pthread_mutex_lock(&ctx->mu);
    /* Without room the verdict is simply not kept: the next check asks again. */
    if (memo_grow(ctx)) {
        size_t i = memo_find(ctx, key);
        memo_entry e;
        memcpy(e.key, key, 32);
        if (!ctx->memo_slots[i] && memo_pack(&e, d)) {
            ctx->memo[ctx->memo_n++] = e;
            ctx->memo_slots[i] = (uint32_t)ctx->memo_n;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
}

/* The verdict of a cryptographically good signature by the home's key `ki`, from what
 * GnuPG said of it (`sc`: its status, `summary`: its summary bits) and the key listing. */
static void verdict_from_key(bd_prov_detached *out, const key_info *ki, gpgme_err_code_t sc,
                             unsigned summary)
{
    memcpy(out->fingerprint, ki->primary, sizeof(out->fingerprint));
    out->expiry_known = true;
    out->expires = ki->expires;
    if (sc == GPG_ERR_CERT_REVOKED || ki->key_revoked || ki->sub_revoked ||
        (summary & GPGME_SIGSUM_KEY_REVOKED))
        out->verdict = BD_PROV_DET_REVOKED;
    else if (sc == GPG_ERR_KEY_EXPIRED || ki->key_expired || ki->sub_expired ||
             (summary & GPGME_SIGSUM_KEY_EXPIRED))
        out->verdict = BD_PROV_DET_EXPIRED;
    else if (ki->key_disabled || ki->key_invalid || ki->sub_disabled || ki->sub_invalid)
        out->verdict = BD_PROV_DET_UNUSABLE;
    else
        out->verdict = BD_PROV_DET_GOOD;
}

/* Check `sig` over `msg` with `g` (a context on the private home). Returns 0 with *out
 * filled (whatever the verdict), -1 when GnuPG could not run at all. */
static int detached_check_gpg(bd_prov_detached *out, const bd_prov_ctx *ctx, gpgme_ctx_t g,
                              const char *msg, size_t mlen, const char *sig, bd_err *err)
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
        bd_gpg_fail(err, BD_E_GPG, e, "cannot hand a signature to GPGME");
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
            bd_gpg_err_text(e, out->detail, sizeof(out->detail));
        } else {
            bd_gpg_fail(err, BD_E_GPG, e, "GnuPG could not verify a signature");
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
    const key_info *ki = out->key_id[0] ? find_key(ctx, out->key_id) : NULL;
    if (ki) {
        verdict_from_key(out, ki, sc, summary);
        goto out;
    }
    /* An empty pattern would list every key: no reported key is no key. */
    if (!out->key_id[0] || gpgme_get_key(g, out->key_id, &key, 0) != 0 || !key || !key->subkeys ||
        !key->subkeys->fpr) {
        out->verdict = BD_PROV_DET_UNKNOWN_KEY;
        goto out;
    }
    bd_gpg_fpr_upper(out->fingerprint, key->subkeys->fpr);
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

/* BLAKE3 of this program's own bytes (/proc/self/exe), once per process: a case verdict
 * is believed only by the build whose rules reached it, so a benchdesk that judges
 * differently (a new schema rule, a new provenance rule) never takes an older one's. */
static uint8_t build_digest[32];
static bool build_ok;
static pthread_once_t build_once = PTHREAD_ONCE_INIT;

static void hash_own_build(void)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    blake3_hasher h;
    blake3_hasher_init(&h);
    uint8_t *buf = malloc(1 << 16);
    ssize_t n = -1;
    while (buf && (n = read(fd, buf, 1 << 16)) > 0)
        blake3_hasher_update(&h, buf, (size_t)n);
    close(fd);
    free(buf);
    if (n == 0) {
        blake3_hasher_finalize(&h, build_digest, 32);
        build_ok = true;
    }
}

/* This user's memo for this build (sigmemo.h), not yet read. */
static bd_sigmemo *open_user_memo(void)
{
    bd_sigmemo *m = bd_sigmemo_open();
    pthread_once(&build_once, hash_own_build);
    if (build_ok)
        bd_sigmemo_set_build(m, build_digest);
    return m;
}

static void *preload_user_memo(void *arg)
{
    bd_prov_ctx *ctx = arg;
    bd_sigmemo *m = open_user_memo();
    bd_sigmemo_load(m);
    ctx->preloaded = m;
    return NULL;
}

void bd_prov_ctx_preload(bd_prov_ctx *ctx)
{
    if (!ctx)
        return;
    pthread_mutex_lock(&ctx->mu);
    if (!ctx->full && !ctx->preloading && !ctx->context_done)
        ctx->preloading = pthread_create(&ctx->preload_thread, NULL, preload_user_memo, ctx) == 0;
    pthread_mutex_unlock(&ctx->mu);
}

/* The memo read ahead, once its thread is done (NULL when none was started). Under
 * ctx->mu, or where no other thread uses ctx. */
static bd_sigmemo *take_preloaded(bd_prov_ctx *ctx)
{
    if (!ctx->preloading)
        return NULL;
    pthread_join(ctx->preload_thread, NULL);
    ctx->preloading = false;
    bd_sigmemo *m = ctx->preloaded;
    ctx->preloaded = NULL;
    return m;
}

/* The digest of what a verdict depends on besides the message and the signature: every
 * bench/keys/ file (name and bytes, in name order) and trusted-signers.yaml. Under
 * ctx->mu, once; false when a file could not be read (then no user memo is used). */
static bool context_digest(bd_prov_ctx *ctx)
{
    if (ctx->context_done)
        return ctx->context_ok;
    ctx->context_done = true;
    char **names = NULL, *buf = NULL;
    size_t n = 0, len = 0;
    bd_err e = BD_ERR_INIT;
    blake3_hasher h;
    blake3_hasher_init(&h);
    bool ok = list_keyfiles(&names, &n, ctx->keys_dir, &e) == 0;
    for (size_t i = 0; ok && i <= n; i++) {
        char *p = i < n ? bd_path_join(ctx->keys_dir, names[i])
                        : bd_path_join(ctx->bench_dir, "trusted-signers.yaml");
        const char *label = i < n ? names[i] : "";
        ok = p && bd_read_file(&buf, &len, p, KEYFILE_MAX, BD_E_IO, &e) == 0;
        if (!ok && i == n && p && e.code == BD_E_IO && access(p, F_OK) != 0) {
            ok = true; /* no trusted-signers.yaml: nobody is trusted */
            buf = NULL;
            len = 0;
        }
        if (ok) {
            uint64_t l = strlen(label) + 1;
            blake3_hasher_update(&h, &l, sizeof(l));
            blake3_hasher_update(&h, label, l);
            l = len;
            blake3_hasher_update(&h, &l, sizeof(l));
            blake3_hasher_update(&h, buf ? buf : "", len);
        }
        free(buf);
        buf = NULL;
        free(p);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    blake3_hasher_finalize(&h, ctx->context, 32);
    ctx->context_ok = ok;
    if (ok && !ctx->full && !(ctx->user_memo = take_preloaded(ctx)))
        ctx->user_memo = open_user_memo();
    return ok;
}

/* The user memo's key for (msg, sig) in this context; false when none is used. */
static bool user_memo_key(bd_prov_ctx *ctx, uint8_t key[32], const char *msg, size_t mlen,
                          const char *sig)
{
    pthread_mutex_lock(&ctx->mu);
    bool ok = !ctx->full && context_digest(ctx) && ctx->user_memo;
    pthread_mutex_unlock(&ctx->mu);
    if (ok)
        bd_sigmemo_key(key, ctx->context, msg, mlen, sig, strlen(sig));
    return ok;
}

/* A verdict of the user memo back into the form GnuPG's check gives. */
static void detached_from_memo(bd_prov_detached *out, const bd_sigmemo_entry *m)
{
    memset(out, 0, sizeof(*out));
    out->verdict = (bd_prov_det_verdict)m->verdict;
    out->crypto_good = true;
    out->nsigs = 1;
    memcpy(out->fingerprint, m->fingerprint, sizeof(out->fingerprint));
    snprintf(out->key_id, sizeof(out->key_id), "%s", m->key_id);
    out->expiry_known = true;
    out->expires = m->expires;
}

/* Only a good signature by a key GnuPG listed (so its expiry is known) goes to the user
 * memo; anything else is cheap to ask again, or rare. */
static void user_memo_put(bd_prov_ctx *ctx, const uint8_t key[32], const bd_prov_detached *d)
{
    if (!d->crypto_good || d->nsigs != 1 || strlen(d->key_id) > 40)
        return;
    const key_info *ki = find_key(ctx, d->key_id);
    if (!ki)
        return;
    bd_sigmemo_entry e = {.verdict = (int)d->verdict, .expires = ki->expires};
    memcpy(e.fingerprint, d->fingerprint, sizeof(e.fingerprint));
    memcpy(e.key_id, d->key_id, strlen(d->key_id) + 1); /* at most 40: checked above */
    bd_sigmemo_put(ctx->user_memo, key, &e);
}

/* ---- the case memo (sigmemo.h, docs/provenance.md#the-case-memo) ------------------- */

static bool has_digest(const char *d);

/* Whether `ctx` keeps case verdicts: not a full check, its context digest made, a user
 * memo, and this program's own bytes hashed. */
static bool keeps_cases(bd_prov_ctx *ctx)
{
    int known = atomic_load(&ctx->keeps_cases);
    if (known)
        return known == 1;
    pthread_mutex_lock(&ctx->mu);
    bool ok = !ctx->full && context_digest(ctx) && ctx->user_memo;
    pthread_mutex_unlock(&ctx->mu);
    pthread_once(&build_once, hash_own_build);
    ok = ok && build_ok;
    atomic_store(&ctx->keeps_cases, ok ? 1 : 2);
    return ok;
}

bool bd_prov_case_key(bd_prov_ctx *ctx, uint8_t key[32], const bd_subject *sj, int sut_kind,
                      const char *prov, size_t prov_len)
{
    if (!ctx || sj->kind != BD_SUBJECT_CASE || !has_digest(sj->current) ||
        !has_digest(sj->pinned) || !keeps_cases(ctx))
        return false;
    bd_casememo_subject cs = {ctx->context, build_digest, sj->task_class, sj->case_id, sj->current,
                              sj->pinned,   sut_kind,     prov,           prov_len};
    bd_casememo_key(key, &cs);
    return true;
}

/* One block of a recalled verdict: as verify_block leaves a valid one. */
static void recall_block(bd_prov_sig *out, bool present, const char *fpr, const char *digest,
                         int64_t expires)
{
    memset(out, 0, sizeof(*out));
    out->present = present;
    if (!present)
        return;
    snprintf(out->digest, sizeof(out->digest), "%s", digest);
    memcpy(out->fingerprint, fpr, sizeof(out->fingerprint));
    out->expiry_known = true;
    out->expires = expires;
}

bool bd_prov_case_recall(bd_prov_ctx *ctx, const uint8_t key[32], const bd_subject *sj,
                         bd_prov_result *out)
{
    bd_casememo_entry e;
    if (!ctx || !bd_casememo_get(ctx->user_memo, key, time(NULL), &e))
        return false;
    memset(out, 0, sizeof(*out));
    out->status = out->pin_status = (bd_prov_status)e.status;
    recall_block(&out->author, e.author, e.author_fpr, sj->current, e.expires);
    recall_block(&out->reviewer, e.reviewer, e.reviewer_fpr, sj->current, e.expires);
    return true;
}

/* A block of a clean verdict: absent, or valid for the pin with its key's expiry known.
 * Lowers *expires to that key's expiry. */
static bool clean_block(const bd_prov_sig *b, int64_t *expires)
{
    if (!b->present)
        return true;
    if (b->superseded || b->pin_ok || b->err.code != BD_OK || !b->expiry_known || b->expires < 0 ||
        !bd_fpr_valid(b->fingerprint))
        return false;
    if (b->expires && (*expires == 0 || b->expires < *expires))
        *expires = b->expires;
    return true;
}

bool bd_prov_case_remember(bd_prov_ctx *ctx, const uint8_t key[32], const bd_prov_result *res)
{
    int64_t expires = 0;
    if (!ctx || res->err.code != BD_OK || res->status != res->pin_status ||
        !(res->status == BD_PROV_ST_DRAFT || res->status == BD_PROV_ST_AWAITING ||
          res->status == BD_PROV_ST_SIGNED) ||
        !clean_block(&res->author, &expires) || !clean_block(&res->reviewer, &expires))
        return false;
    bd_casememo_entry e = {.status = (int)res->status,
                           .author = res->author.present,
                           .reviewer = res->reviewer.present,
                           .expires = expires};
    if (e.author)
        memcpy(e.author_fpr, res->author.fingerprint, sizeof(e.author_fpr));
    if (e.reviewer)
        memcpy(e.reviewer_fpr, res->reviewer.fingerprint, sizeof(e.reviewer_fpr));
    bd_casememo_put(ctx->user_memo, key, &e);
    return true;
}

bool bd_prov_stamp_key(bd_prov_ctx *ctx, uint8_t key[32], const bd_subject *sj, int sut_kind,
                       const uint8_t stamps[32])
{
    if (!ctx || sj->kind != BD_SUBJECT_CASE || !has_digest(sj->pinned) || !keeps_cases(ctx))
        return false;
    bd_stampmemo_subject ss = {ctx->context, build_digest, sj->task_class, sj->case_id,
                               sj->pinned,   sut_kind,     stamps};
    bd_stampmemo_key(key, &ss);
    return true;
}

bool bd_prov_stamp_recall(bd_prov_ctx *ctx, const uint8_t key[32], const bd_subject *sj,
                          bd_prov_result *out, char cassette[BD_DIGEST_BUF])
{
    bd_stampmemo_entry e;
    if (!ctx || !bd_stampmemo_get(ctx->user_memo, key, &e) ||
        !bd_prov_case_recall(ctx, e.case_key, sj, out))
        return false;
    cassette[0] = '\0';
    if (e.cassette)
        snprintf(cassette, BD_DIGEST_BUF, "%s%s", BD_DIGEST_PREFIX, e.cassette_hex);
    return true;
}

void bd_prov_stamp_remember(bd_prov_ctx *ctx, const uint8_t key[32], const uint8_t case_key[32],
                            const char *cassette, const bd_shapememo_subject *whose,
                            const char *shape, size_t shape_len)
{
    if (!ctx || !ctx->user_memo || (cassette && !bd_digest_str_valid(cassette)))
        return;
    bd_stampmemo_entry e = {.cassette = cassette != NULL};
    memcpy(e.case_key, case_key, sizeof(e.case_key));
    if (cassette)
        memcpy(e.cassette_hex, cassette + strlen(BD_DIGEST_PREFIX), 64);
    char known[BD_STAMP_SHAPE_MAX];
    size_t known_len = 0;
    if (!bd_shapememo_get(ctx->user_memo, whose, known, sizeof(known), &known_len) ||
        known_len != shape_len || memcmp(known, shape, shape_len) != 0)
        bd_shapememo_put(ctx->user_memo, whose, shape, shape_len);
    /* The same entry already believed (the shape alone was lost): nothing to add. */
    bd_stampmemo_entry had;
    if (!bd_stampmemo_get(ctx->user_memo, key, &had) || memcmp(&had, &e, sizeof(e)) != 0)
        bd_stampmemo_put(ctx->user_memo, key, &e);
}

bool bd_prov_shape_recall(bd_prov_ctx *ctx, const bd_shapememo_subject *whose, char *out,
                          size_t cap, size_t *len)
{
    return ctx && keeps_cases(ctx) && bd_shapememo_get(ctx->user_memo, whose, out, cap, len);
}

void bd_prov_ctx_flush(bd_prov_ctx *ctx)
{
    if (ctx)
        bd_sigmemo_flush(ctx->user_memo);
}

void bd_prov_ctx_full(bd_prov_ctx *ctx)
{
    pthread_mutex_lock(&ctx->mu);
    ctx->full = true;
    atomic_store(&ctx->keeps_cases, 2);
    bd_sigmemo *unused = take_preloaded(ctx);
    pthread_mutex_unlock(&ctx->mu);
    bd_sigmemo_close(unused);
}

/* ---- the in-process check (openpgp.h) ------------------------------------------------ */

static bool is_full(bd_prov_ctx *ctx)
{
    pthread_mutex_lock(&ctx->mu);
    bool full = ctx->full;
    pthread_mutex_unlock(&ctx->mu);
    return full;
}

/* Settle `sig` over `msg` without GnuPG when it is the plain Ed25519 shape
 * (bd_pgp_eddsa_sig_parse) made by the primary key of a home key that GnuPG lists as
 * usable for signing — not revoked, expired, disabled or invalid — created no later than
 * the signature, with neither in the future, and it verifies. Then *out is the verdict
 * GnuPG's own check gives such a signature (good) and true is returned; for anything
 * else, false and *out untouched: GnuPG decides. Never under a full check. */
static bool inproc_check(bd_prov_detached *out, bd_prov_ctx *ctx, const char *msg, size_t mlen,
                         const char *sig)
{
    uint8_t *pkt = NULL;
    size_t plen = 0;
    bd_pgp_eddsa_sig s;
    bool ok = false;
    if (is_full(ctx) || !bd_pgp_dearmor(&pkt, &plen, sig))
        return false;
    if (bd_pgp_eddsa_sig_parse(&s, pkt, plen) && ensure_home(ctx, NULL) == 0) {
        char hex[41];
        for (size_t j = 0; j < 20; j++)
            snprintf(hex + 2 * j, 3, "%02X", s.issuer_fpr[j]);
        const key_info *ki = find_key(ctx, hex);
        int64_t now = time(NULL), created = s.created;
        if (ki && ki->ed25519 && ki->is_primary && ki->can_sign && !ki->key_revoked &&
            !ki->key_expired && !ki->key_disabled && !ki->key_invalid && !ki->sub_revoked &&
            !ki->sub_expired && !ki->sub_disabled && !ki->sub_invalid &&
            (ki->expires == 0 || ki->expires > now) && ki->created <= created && created <= now &&
            bd_pgp_eddsa_verify(&s, ki->point, msg, mlen)) {
            bd_prov_detached d;
            memset(&d, 0, sizeof(d));
            d.crypto_good = true;
            d.nsigs = 1;
            snprintf(d.key_id, sizeof(d.key_id), "%s", ki->fpr);
            verdict_from_key(&d, ki, GPG_ERR_NO_ERROR, 0);
            if ((ok = d.verdict == BD_PROV_DET_GOOD))
                *out = d;
        }
    }
    free(pkt);
    return ok;
}

/* Keep a verdict of the in-process check in the context's memo and, with `ukey`, in
 * this user's, and count it. */
static void inproc_keep(bd_prov_ctx *ctx, const uint8_t key[32], const uint8_t *ukey,
                        const bd_prov_detached *d)
{
    memo_put(ctx, key, d);
    if (ukey)
        user_memo_put(ctx, ukey, d);
    pthread_mutex_lock(&ctx->mu);
    ctx->n_inproc++;
    pthread_mutex_unlock(&ctx->mu);
}

/* A GPGME context on the context's private home (created on first use), offline: an idle
 * one when there is one. Give it back with home_gpg_put. */
static int home_gpg(gpgme_ctx_t *g, bd_prov_ctx *ctx, bd_err *err)
{
    *g = NULL;
    if (ensure_home(ctx, err) < 0)
        return -1;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->n_idle)
        *g = ctx->idle[--ctx->n_idle];
    pthread_mutex_unlock(&ctx->mu);
    if (*g)
        return 0;
    if (bd_gpg_new(g, ctx->home, false, err) < 0)
        return -1;
    gpgme_set_offline(*g, 1);
    return 0;
}

static void home_gpg_put(bd_prov_ctx *ctx, gpgme_ctx_t g)
{
    if (!g)
        return;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->n_idle < CTX_POOL) {
        ctx->idle[ctx->n_idle++] = g;
        g = NULL;
    }
    pthread_mutex_unlock(&ctx->mu);
    if (g)
        gpgme_release(g);
}

int bd_prov_verify_detached(bd_prov_detached *out, bd_prov_ctx *ctx, const char *msg, size_t len,
                            const char *armored_sig, bd_err *err)
{
    gpgme_ctx_t g = NULL;
    uint8_t key[32], ukey[32];
    bd_sigmemo_entry ue;
    memset(out, 0, sizeof(*out));
    out->verdict = BD_PROV_DET_NOT_SIGNATURE;
    /* This context's verdicts, then this user's, then GnuPG (a failure is never kept). */
    memo_key(key, msg, len, armored_sig);
    if (memo_get(ctx, key, out))
        return 0;
    bool use_user = user_memo_key(ctx, ukey, msg, len, armored_sig);
    if (use_user && bd_sigmemo_get(ctx->user_memo, ukey, time(NULL), &ue)) {
        detached_from_memo(out, &ue);
        memo_put(ctx, key, out);
        return 0;
    }
    if (inproc_check(out, ctx, msg, len, armored_sig)) {
        inproc_keep(ctx, key, use_user ? ukey : NULL, out);
        return 0;
    }
    if (home_gpg(&g, ctx, err) < 0)
        return -1;
    pthread_mutex_lock(&ctx->mu);
    ctx->n_alone++;
    pthread_mutex_unlock(&ctx->mu);
    int rc = detached_check_gpg(out, ctx, g, msg, len, armored_sig, err);
    home_gpg_put(ctx, g);
    if (rc < 0)
        return -1;
    memo_put(ctx, key, out);
    if (use_user)
        user_memo_put(ctx, ukey, out);
    return 0;
}

/* ---- many signatures at once (sigbatch.h) ------------------------------------------ */

/* Fewer than this many unsettled signatures are not worth a batch: one gpg each costs
 * the same. */
#define BATCH_MIN 2

static void collect_add(bd_prov_reqs *r, const char *msg, size_t mlen, const char *sig)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? 2 * r->cap : 16;
        bd_prov_req *nv = realloc(r->v, nc * sizeof(*nv));
        if (!nv)
            return; /* left out: bd_provenance_verify checks it alone */
        r->v = nv;
        r->cap = nc;
    }
    char *m = malloc(mlen + 1);
    if (!m)
        return;
    memcpy(m, msg, mlen);
    m[mlen] = '\0';
    r->v[r->n++] = (bd_prov_req){m, mlen, sig};
}

/* bd_prov_verify_detached, or (with `coll`) the dry pass of bd_provenance_collect: a
 * check the context cannot answer yet is gathered and answered as good, so that the
 * pass goes on exactly as a good signature would take it (and asks for nothing more). */
static int check_detached(bd_prov_detached *d, bd_prov_ctx *ctx, const char *msg, size_t mlen,
                          const char *sig, bd_prov_reqs *coll, bd_err *err)
{
    if (!coll)
        return bd_prov_verify_detached(d, ctx, msg, mlen, sig, err);
    uint8_t key[32];
    memo_key(key, msg, mlen, sig);
    if (memo_get(ctx, key, d))
        return 0;
    collect_add(coll, msg, mlen, sig);
    memset(d, 0, sizeof(*d));
    d->verdict = BD_PROV_DET_GOOD;
    d->crypto_good = true;
    d->nsigs = 1;
    return 0;
}

void bd_prov_reqs_release(bd_prov_reqs *reqs)
{
    for (size_t i = 0; i < reqs->n; i++)
        free(reqs->v[i].msg);
    free(reqs->v);
    *reqs = (bd_prov_reqs)BD_PROV_REQS_INIT;
}

/* One of the context's counters, read under its lock. */
static size_t counter_read(const bd_prov_ctx *ctx, const size_t *counter)
{
    bd_prov_ctx *c = (bd_prov_ctx *)ctx; /* the lock only */
    pthread_mutex_lock(&c->mu);
    size_t n = *counter;
    pthread_mutex_unlock(&c->mu);
    return n;
}

size_t bd_prov_ctx_batched(const bd_prov_ctx *ctx)
{
    return counter_read(ctx, &ctx->n_batched);
}

size_t bd_prov_ctx_alone(const bd_prov_ctx *ctx)
{
    return counter_read(ctx, &ctx->n_alone);
}

size_t bd_prov_ctx_inproc(const bd_prov_ctx *ctx)
{
    return counter_read(ctx, &ctx->n_inproc);
}

/* The gpg GPGME runs for OpenPGP, or NULL (none usable: the caller's fallback through
 * bd_gpg_new then says why). */
static const char *gpg_engine_path(void)
{
    gpgme_engine_info_t info = NULL;
    bd_err ignored = BD_ERR_INIT;
    if (gpg_engine_ready(&ignored) != 0 || gpgme_get_engine_info(&info) != 0)
        return NULL;
    for (; info; info = info->next)
        if (info->protocol == GPGME_PROTOCOL_OpenPGP)
            return info->file_name;
    return NULL;
}

/* One signature of a batch: its request, its memo keys, its file. */
typedef struct batch_item {
    const bd_prov_req *req;
    uint8_t key[32], ukey[32];
    bool use_user;
    char *path;
} batch_item;

/* Write each item's signed message into a fresh directory of the private home. Returns
 * the directory (caller removes it and frees), or NULL. Items whose file could not be
 * written keep path NULL and are left out. */
static char *batch_files(bd_prov_ctx *ctx, batch_item *it, size_t n)
{
    size_t dl = strlen(ctx->home) + 32;
    char *dir = malloc(dl);
    if (!dir)
        return NULL;
    snprintf(dir, dl, "%s/batch-XXXXXX", ctx->home);
    if (!mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t *bytes = NULL;
        size_t len = 0;
        char *path = malloc(dl + 24);
        if (!path ||
            !bd_sigbatch_wrap(&bytes, &len, it[i].req->sig, it[i].req->msg, it[i].req->len)) {
            free(path);
            continue;
        }
        snprintf(path, dl + 24, "%s/%zu.gpg", dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        bool ok = fd >= 0 && write(fd, bytes, len) == (ssize_t)len;
        if (fd >= 0 && close(fd) != 0)
            ok = false;
        free(bytes);
        if (ok)
            it[i].path = path;
        else
            free(path);
    }
    return dir;
}

/* Run one gpg over the written items and keep what it settles. */
static void batch_check(bd_prov_ctx *ctx, batch_item *it, size_t n)
{
    const char **paths = calloc(n, sizeof(*paths));
    batch_item **of = calloc(n, sizeof(*of));
    bd_sigbatch_result *res = calloc(n, sizeof(*res));
    const char *gpg = gpg_engine_path();
    char *status = NULL;
    size_t slen = 0, m = 0;
    for (size_t i = 0; paths && of && i < n; i++)
        if (it[i].path) {
            paths[m] = it[i].path;
            of[m++] = &it[i];
        }
    if (paths && of && res && gpg && m >= BATCH_MIN &&
        bd_sigbatch_run(&status, &slen, gpg, ctx->home, paths, m) == 0) {
        bd_sigbatch_parse(res, paths, m, status, slen);
        for (size_t j = 0; j < m; j++) {
            const key_info *ki = res[j].settled ? find_key(ctx, res[j].fpr) : NULL;
            if (!ki)
                continue; /* bd_prov_verify_detached asks GnuPG about the key */
            bd_prov_detached d;
            memset(&d, 0, sizeof(d));
            d.crypto_good = true;
            d.nsigs = 1;
            snprintf(d.key_id, sizeof(d.key_id), "%s", res[j].fpr);
            verdict_from_key(&d, ki, GPG_ERR_NO_ERROR, 0);
            memo_put(ctx, of[j]->key, &d);
            if (of[j]->use_user)
                user_memo_put(ctx, of[j]->ukey, &d);
            pthread_mutex_lock(&ctx->mu);
            ctx->n_batched++;
            pthread_mutex_unlock(&ctx->mu);
        }
    }
    free(status);
    free(res);
    free(of);
    free(paths);
}

size_t bd_prov_prefetch(bd_prov_ctx *ctx, const bd_prov_reqs *reqs)
{
    if (!ctx || !reqs->n)
        return 0;
    batch_item *it = calloc(reqs->n, sizeof(*it));
    if (!it)
        return reqs->n;
    size_t n = 0;       /* left for GnuPG (a batch, else one at a time) */
    size_t unknown = 0; /* what neither memo knew */
    /* What either memo already knows is not asked again (the user memo's verdicts go
     * into the context's, as bd_prov_verify_detached would put them). */
    for (size_t i = 0; i < reqs->n; i++) {
        const bd_prov_req *r = &reqs->v[i];
        batch_item *b = &it[n];
        bd_prov_detached d;
        bd_sigmemo_entry ue;
        memo_key(b->key, r->msg, r->len, r->sig);
        if (memo_get(ctx, b->key, &d))
            continue;
        b->use_user = user_memo_key(ctx, b->ukey, r->msg, r->len, r->sig);
        if (b->use_user && bd_sigmemo_get(ctx->user_memo, b->ukey, time(NULL), &ue)) {
            detached_from_memo(&d, &ue);
            memo_put(ctx, b->key, &d);
            continue;
        }
        unknown++;
        if (inproc_check(&d, ctx, r->msg, r->len, r->sig)) {
            inproc_keep(ctx, b->key, b->use_user ? b->ukey : NULL, &d);
            continue;
        }
        b->req = r;
        n++;
    }
    char *dir = n >= BATCH_MIN && ensure_home(ctx, NULL) == 0 ? batch_files(ctx, it, n) : NULL;
    if (dir) {
        batch_check(ctx, it, n);
        (void)bd_remove_tree(dir, NULL);
        free(dir);
    }
    for (size_t i = 0; i < n; i++)
        free(it[i].path);
    free(it);
    return unknown;
}

static void set_identity(bd_prov_sig *out, const char *identity)
{
    bd_ydoc_clip(out->identity, sizeof(out->identity), identity ? identity : "");
}

static bool has_digest(const char *d)
{
    return d && bd_digest_str_valid(d);
}

/* Names for the messages of one block. */
typedef struct block_names {
    const char *rname, *path, *kind, *name;
} block_names;

/* What the key behind a cryptographically checked signature `d` makes of the block:
 * unknown, revoked, expired or unusable keys, a fingerprint other than the block's, a
 * signer not trusted for the role. Sets out->err (BD_OK when the key may sign). */
static void judge_key(bd_prov_sig *out, const bd_prov_ctx *ctx, const bd_prov_detached *d,
                      const bd_signature_block *b, int role, const block_names *nm,
                      const char *digest)
{
    const char *rname = nm->rname, *path = nm->path, *kind = nm->kind, *name = nm->name;
    const bd_signer *s = NULL;
    memcpy(out->fingerprint, d->fingerprint, sizeof(out->fingerprint));
    out->expiry_known = d->expiry_known;
    out->expires = d->expires;
    switch (d->verdict) {
    case BD_PROV_DET_UNKNOWN_KEY:
        bd_err_set(&out->err, BD_E_PROVENANCE_UNTRUSTED, path, b->line, 0,
                   "the %s signature of %s %s was made by key %s, which is not in "
                   "bench/keys/; only the bench's own keys are trusted",
                   rname, kind, name, d->key_id);
        break;
    case BD_PROV_DET_SEVERAL:
        bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, path, b->line, 0,
                   "the %s block of %s %s holds %d signatures; exactly one is allowed", rname, kind,
                   name, d->nsigs);
        break;
    case BD_PROV_DET_NOT_SIGNATURE:
        bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, path, b->line, 0,
                   "the %s block of %s %s is not a valid OpenPGP signature (%s); sign it again",
                   rname, kind, name, d->detail[0] ? d->detail : "no signature found");
        break;
    case BD_PROV_DET_BAD:
        if (b->digest[0])
            bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, path, b->line, 0,
                       "the %s signature of %s %s does not verify over the digest its block "
                       "names (%s): it is forged or altered, or made for another subject or "
                       "role; sign it again",
                       rname, kind, name, b->digest);
        else
            bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, path, b->line, 0,
                       "the %s signature of %s %s verifies over neither its digest %s nor its "
                       "pin: it is forged, altered, made for another subject or role, or the pin "
                       "was rewritten since; sign it again",
                       rname, kind, name, digest);
        break;
    case BD_PROV_DET_REVOKED:
        bd_err_set(&out->err, BD_E_PROVENANCE_KEY_REVOKED, path, b->line, 0,
                   "the %s signature of %s %s was made by key %s, which is revoked; a trusted "
                   "signer must sign again with a current key",
                   rname, kind, name, out->fingerprint);
        break;
    case BD_PROV_DET_EXPIRED:
        bd_err_set(&out->err, BD_E_PROVENANCE_KEY_EXPIRED, path, b->line, 0,
                   "the %s signature of %s %s was made by key %s, which has expired; extend "
                   "the key's expiry and re-export it to bench/keys/, or sign again",
                   rname, kind, name, out->fingerprint);
        break;
    case BD_PROV_DET_UNUSABLE:
        bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, path, b->line, 0,
                   "the %s signature of %s %s was made by key %s, which GnuPG reports unusable",
                   rname, kind, name, out->fingerprint);
        break;
    case BD_PROV_DET_GOOD:
        if (strcasecmp(out->fingerprint, b->fingerprint) != 0)
            bd_err_set(&out->err, BD_E_PROVENANCE_BAD_SIGNATURE, path, b->line, 0,
                       "the %s block of %s %s names fingerprint %s but was signed by %s; sign "
                       "it again",
                       rname, kind, name, b->fingerprint, out->fingerprint);
        else if (!(s = bd_signers_find(ctx->signers, out->fingerprint)))
            bd_err_set(&out->err, BD_E_PROVENANCE_UNTRUSTED, path, b->line, 0,
                       "the %s signature of %s %s was made by %s, which is not in "
                       "bench/trusted-signers.yaml",
                       rname, kind, name, out->fingerprint);
        else if (!(s->roles & role))
            bd_err_set(&out->err, BD_E_PROVENANCE_UNTRUSTED, path, b->line, 0,
                       "the %s signature of %s %s was made by %s (%s), who is not trusted as "
                       "%s in bench/trusted-signers.yaml",
                       rname, kind, name, out->fingerprint, s->identity ? s->identity : "", rname);
        break;
    }
}

/* The content moved after the signed pin: the signature holds for the pin, the subject
 * is no longer what the pin says. */
static void set_moved(bd_prov_sig *out, const bd_signature_block *b, const block_names *nm,
                      const char *pinned, const char *current)
{
    out->pin_ok = true;
    bd_err_set(&out->err, BD_E_PROVENANCE_STALE, nm->path, b->line, 0,
               "the %s signature of %s %s holds for its pinned digest %s, but the %s is now %s: "
               "it changed after it was signed; review the change, pin it and sign it again",
               nm->rname, nm->kind, nm->name, pinned, nm->kind, current);
}

/* A block that names the digest it signed (docs/provenance.md#editing-is-not-tampering):
 * genuine when the signature verifies over the message with that digest; then valid when
 * the digest is the pin (and the content still matches it), superseded otherwise. */
static int verify_block_named(bd_prov_sig *out, bd_prov_ctx *ctx, const bd_subject *sj,
                              const bd_signature_block *b, int role, const block_names *nm,
                              bd_prov_reqs *coll, bd_err *err)
{
    char *msg = NULL;
    size_t mlen = 0;
    bd_prov_detached d;
    memcpy(out->digest, b->digest, sizeof(b->digest));
    if (bd_provenance_message(&msg, &mlen, role, sj, b->digest, &out->err) < 0)
        return 0;
    int rc = check_detached(&d, ctx, msg, mlen, b->signature, coll, err);
    free(msg);
    if (rc < 0)
        return -1;
    bool genuine = d.crypto_good && d.nsigs == 1 && d.verdict != BD_PROV_DET_UNKNOWN_KEY &&
                   strcasecmp(d.fingerprint, b->fingerprint) == 0;
    if (genuine && !(has_digest(sj->pinned) && strcmp(sj->pinned, b->digest) == 0)) {
        /* It signed an earlier version: shown, counts for nothing. */
        memcpy(out->fingerprint, d.fingerprint, sizeof(out->fingerprint));
        out->superseded = true;
        return 0;
    }
    judge_key(out, ctx, &d, b, role, nm, b->digest);
    if (out->err.code == BD_OK && has_digest(sj->current) && strcmp(sj->current, b->digest) != 0)
        set_moved(out, b, nm, b->digest, sj->current);
    return 0;
}

/* Verify one role's block of subject `sj`. Returns 0 (verdict in out->err), -1 when GnuPG
 * failed (err). */
static int verify_block(bd_prov_sig *out, bd_prov_ctx *ctx, const bd_subject *sj,
                        const bd_signature_block *b, int role, bd_prov_reqs *coll, bd_err *err)
{
    block_names nm = {bd_provenance_role_str(role),
                      sj->prov && sj->prov->path ? sj->prov->path : BD_PROVENANCE_FILE,
                      bd_subject_kind_str(sj->kind),
                      sj->kind == BD_SUBJECT_CASE ? sj->case_id : sj->task_class};
    /* The digest the signature must be over: the subject's as it is now, else its pin
     * (when the content cannot be hashed, no staleness is judged). */
    const char *current = has_digest(sj->current) ? sj->current : sj->pinned;
    char *msg = NULL, *msg_pin = NULL;
    size_t mlen = 0, plen = 0;
    bd_prov_detached d, d_pin;
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->present = b->present;
    set_identity(out, b->identity);
    if (!b->present)
        return 0;
    if (b->digest[0])
        return verify_block_named(out, ctx, sj, b, role, &nm, coll, err);
    /* A block without `digest` is judged against the pin. */
    if (!has_digest(current) ||
        bd_provenance_message(&msg, &mlen, role, sj, current, &out->err) < 0) {
        /* An unpinned subject cannot carry a valid signature: its digest is unknown. */
        bd_err_set(&out->err, BD_E_PROVENANCE_STALE, nm.path, b->line, 0,
                   "the %s signature of %s %s cannot be checked: it has no digest; run ", nm.rname,
                   nm.kind, nm.name);
        bd_err_advise(&out->err, BD_ACT_PIN, "%s", sj->task_class);
        bd_err_append(&out->err, ", then sign it again");
        rc = 0;
        goto out;
    }
    if (check_detached(&d, ctx, msg, mlen, b->signature, coll, err) < 0)
        goto out;
    snprintf(out->digest, sizeof(out->digest), "%s", current);
    /* Good over the pinned digest but not the current one: the subject changed after it
     * was signed. Good over neither: bad_signature below. */
    if (!d.crypto_good && d.nsigs == 1 && has_digest(sj->pinned) &&
        strcmp(sj->pinned, current) != 0 &&
        bd_provenance_message(&msg_pin, &plen, role, sj, sj->pinned, NULL) == 0) {
        if (check_detached(&d_pin, ctx, msg_pin, plen, b->signature, coll, err) < 0)
            goto out;
        if (d_pin.crypto_good) {
            snprintf(out->digest, sizeof(out->digest), "%s", sj->pinned);
            set_moved(out, b, &nm, sj->pinned, current);
            rc = 0;
            goto out;
        }
    }
    judge_key(out, ctx, &d, b, role, &nm, current);
    rc = 0;
out:
    free(msg);
    free(msg_pin);
    return rc;
}

/* A block that counts: present, not superseded, and (`pin_view`: or only moved off its
 * pin) without an error. */
static bool block_valid(const bd_prov_sig *s, bool pin_view)
{
    if (!s->present || s->superseded)
        return false;
    return s->err.code == BD_OK || (pin_view && s->pin_ok);
}

/* The status the blocks give; `pin_view` judges them against the pin alone. Sets
 * out->err (and the block's err) for the two-block rules. */
static bd_prov_status aggregate(bd_prov_result *out, const bd_provfile *pf, bool pin_view,
                                const char *path)
{
    const bd_prov_sig *a = &out->author, *r = &out->reviewer;
    bool a_bad = a->present && !a->superseded && !block_valid(a, pin_view);
    bool r_bad = r->present && !r->superseded && !block_valid(r, pin_view);
    if (a_bad || r_bad) {
        if (!pin_view)
            out->err = a_bad ? a->err : r->err;
        return BD_PROV_ST_BAD;
    }
    bool av = block_valid(a, pin_view), rv = block_valid(r, pin_view);
    if (rv && !pf->author.present) {
        if (!pin_view) {
            bd_err_set(&out->err, BD_E_PROVENANCE_MISSING, path, pf->reviewer.line, 0,
                       "a reviewer signature is present without an author signature: the "
                       "author signs first, then a second person reviews");
            out->reviewer.err = out->err;
        }
        return BD_PROV_ST_BAD;
    }
    if (av && rv && strcmp(a->fingerprint, r->fingerprint) == 0) {
        if (!pin_view) {
            bd_err_set(&out->err, BD_E_PROVENANCE_SAME_SIGNER, path, pf->reviewer.line, 0,
                       "author and reviewer are the same key %s; a second person must review "
                       "with their own key",
                       a->fingerprint);
            out->reviewer.err = out->err;
        }
        return BD_PROV_ST_BAD;
    }
    if (av && rv)
        return BD_PROV_ST_SIGNED;
    return av || rv ? BD_PROV_ST_AWAITING : BD_PROV_ST_DRAFT;
}

/* bd_provenance_verify, or with `coll` bd_provenance_collect's dry pass: the checks it
 * would make go to `coll`, each answered as good, and *out means nothing. */
static int verify_subject(bd_prov_result *out, bd_prov_ctx *ctx, const bd_subject *sj,
                          bd_prov_reqs *coll, bd_err *err)
{
    int rc = -1;
    static const bd_provfile none = {0};
    const bd_provfile *pf = sj->prov ? sj->prov : &none;
    const char *path = pf->path ? pf->path : BD_PROVENANCE_FILE;
    memset(out, 0, sizeof(*out));
    out->status = out->pin_status = BD_PROV_ST_BAD;
    out->author.present = pf->author.present;
    out->reviewer.present = pf->reviewer.present;
    if (!pf->author.present && !pf->reviewer.present) {
        out->status = out->pin_status = BD_PROV_ST_DRAFT;
        return 0;
    }
    if (verify_block(&out->author, ctx, sj, &pf->author, BD_ROLE_AUTHOR, coll, &out->err) < 0 ||
        verify_block(&out->reviewer, ctx, sj, &pf->reviewer, BD_ROLE_REVIEWER, coll, &out->err) <
            0) {
        if (err)
            *err = out->err;
        goto out;
    }
    out->pin_status = aggregate(out, pf, true, path);
    out->status = aggregate(out, pf, false, path);
    rc = out->status == BD_PROV_ST_BAD ? 1 : 0;
out:
    return rc;
}

int bd_provenance_verify(bd_prov_result *out, bd_prov_ctx *ctx, const bd_subject *sj, bd_err *err)
{
    return verify_subject(out, ctx, sj, NULL, err);
}

void bd_provenance_collect(bd_prov_reqs *reqs, bd_prov_ctx *ctx, const bd_subject *sj)
{
    bd_prov_result scratch;
    (void)verify_subject(&scratch, ctx, sj, reqs, NULL);
}
