/*
 * sigbatch.c — many detached signatures checked by one gpg process
 * (docs/provenance.md#verifying-many-signatures). See sigbatch.h for why the wrapping
 * cannot change a verdict: only the plain shape is wrapped, and only a lone good
 * signature with nothing else reported is settled here.
 */
#include "sigbatch.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gpgme.h>

#include "openpgp.h"

bool bd_sigbatch_wrap(uint8_t **out, size_t *out_len, const char *armored_sig, const char *msg,
                      size_t mlen)
{
    uint8_t *sig = NULL;
    size_t slen = 0;
    *out = NULL;
    *out_len = 0;
    if (!armored_sig || !bd_pgp_dearmor(&sig, &slen, armored_sig))
        return false;
    if (!bd_pgp_one_binary_v4_signature(sig, slen) || mlen > UINT32_MAX - 6) {
        free(sig);
        return false;
    }
    /* A literal data packet (tag 11, new format): mode 'b', no file name, time 0, then
     * the message. A v4 signature hashes only the message of it. */
    size_t body = 6 + mlen;
    uint8_t hdr[6];
    size_t hl;
    hdr[0] = 0xC0 | 11;
    if (body < 192) {
        hdr[1] = (uint8_t)body;
        hl = 2;
    } else if (body < 8384) {
        hdr[1] = (uint8_t)(((body - 192) >> 8) + 192);
        hdr[2] = (uint8_t)((body - 192) & 0xff);
        hl = 3;
    } else {
        hdr[1] = 255;
        for (int i = 0; i < 4; i++)
            hdr[2 + i] = (uint8_t)(body >> (24 - 8 * i));
        hl = 6;
    }
    uint8_t *m = malloc(slen + hl + body);
    if (!m) {
        free(sig);
        return false;
    }
    memcpy(m, sig, slen);
    memcpy(m + slen, hdr, hl);
    memcpy(m + slen + hl, "b\0\0\0\0\0", 6);
    memcpy(m + slen + hl + 6, msg, mlen);
    free(sig);
    *out = m;
    *out_len = slen + hl + body;
    return true;
}

/* ---- gpg's status lines -------------------------------------------------------------- */

typedef struct file_status {
    int newsig, goodsig, validsig;
    bool other; /* a line that may carry a verdict */
    char keyid[41], fpr[41];
} file_status;

static bool hex_word(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F') ||
              (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Copy the first word of `args` (l bytes) into out (cap) when it is hex of length 16 or
 * 40; else leave out empty. */
static void take_hex(char *out, size_t cap, const char *args, size_t l)
{
    size_t w = 0;
    while (w < l && args[w] != ' ')
        w++;
    out[0] = '\0';
    if ((w == 16 || w == 40) && w < cap && hex_word(args, w)) {
        memcpy(out, args, w);
        out[w] = '\0';
    }
}

static bool is_kw(const char *kw, size_t kl, const char *want)
{
    return kl == strlen(want) && memcmp(kw, want, kl) == 0;
}

/* One status line inside a file's block. */
static void file_line(file_status *st, const char *kw, size_t kl, const char *args, size_t al)
{
    if (is_kw(kw, kl, "NEWSIG")) {
        st->newsig++;
    } else if (is_kw(kw, kl, "GOODSIG")) {
        st->goodsig++;
        take_hex(st->keyid, sizeof(st->keyid), args, al);
    } else if (is_kw(kw, kl, "VALIDSIG")) {
        st->validsig++;
        take_hex(st->fpr, sizeof(st->fpr), args, al);
        if (strlen(st->fpr) != 40)
            st->other = true;
    } else if (is_kw(kw, kl, "TRUST_UNDEFINED") || is_kw(kw, kl, "TRUST_MARGINAL") ||
               is_kw(kw, kl, "TRUST_FULLY") || is_kw(kw, kl, "TRUST_ULTIMATE")) {
        /* A trust line with a reason code would change GPGME's summary. */
        if (!(al == 0 || (args[0] == '0' && (al == 1 || args[1] == ' '))))
            st->other = true;
    } else if (!is_kw(kw, kl, "KEY_CONSIDERED") && !is_kw(kw, kl, "SIG_ID") &&
               !is_kw(kw, kl, "VERIFICATION_COMPLIANCE_MODE")) {
        st->other = true;
    }
}

static bool file_settled(const file_status *st)
{
    size_t kl = strlen(st->keyid);
    return st->newsig == 1 && st->goodsig == 1 && st->validsig == 1 && !st->other && kl &&
           strlen(st->fpr) == 40 && strcasecmp(st->fpr + 40 - kl, st->keyid) == 0;
}

void bd_sigbatch_parse(bd_sigbatch_result *res, const char *const *paths, size_t n,
                       const char *status, size_t len)
{
    static const char prefix[] = "[GNUPG:] ";
    const size_t pl = sizeof(prefix) - 1;
    memset(res, 0, n * sizeof(*res));
    size_t k = 0;
    bool in = false;
    file_status st;
    const char *p = status, *end = status + len;
    while (p < end && k < n) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* a line cut short: gpg stopped in the middle */
        const char *line = p;
        size_t ll = (size_t)(nl - p);
        p = nl + 1;
        if (ll < pl || memcmp(line, prefix, pl) != 0)
            break;
        const char *kw = line + pl, *sp = memchr(kw, ' ', ll - pl);
        size_t kl = sp ? (size_t)(sp - kw) : ll - pl;
        const char *args = sp ? sp + 1 : kw + kl;
        size_t al = (size_t)(line + ll - args);
        if (!in) {
            size_t want = strlen(paths[k]);
            if (!is_kw(kw, kl, "FILE_START") || al != 2 + want || memcmp(args, "1 ", 2) != 0 ||
                memcmp(args + 2, paths[k], want) != 0)
                break;
            memset(&st, 0, sizeof(st));
            in = true;
        } else if (is_kw(kw, kl, "FILE_DONE")) {
            res[k].settled = file_settled(&st);
            if (res[k].settled)
                memcpy(res[k].fpr, st.fpr, sizeof(res[k].fpr));
            k++;
            in = false;
        } else if (is_kw(kw, kl, "FILE_START")) {
            break;
        } else {
            file_line(&st, kw, kl, args, al);
        }
    }
}

/* ---- running gpg --------------------------------------------------------------------- */

int bd_sigbatch_run(char **status, size_t *slen, const char *gpg_path, const char *home,
                    const char *const *paths, size_t n)
{
    static const char *const head[] = {"gpg",         "--homedir",         NULL,          "--batch",
                                       "--no-tty",    "--disable-dirmngr", "--status-fd", "1",
                                       "--multifile", "--verify",          "--"};
    const size_t nh = sizeof(head) / sizeof(head[0]);
    gpgme_ctx_t g = NULL;
    gpgme_data_t out = NULL;
    const char **argv = calloc(nh + n + 1, sizeof(*argv));
    int rc = -1;
    *status = NULL;
    *slen = 0;
    if (!argv || gpgme_new(&g) != 0 || gpgme_set_protocol(g, GPGME_PROTOCOL_SPAWN) != 0 ||
        gpgme_data_new(&out) != 0)
        goto done;
    for (size_t i = 0; i < nh; i++)
        argv[i] = head[i] ? head[i] : home;
    for (size_t i = 0; i < n; i++)
        argv[nh + i] = paths[i];
    if (gpgme_op_spawn(g, gpg_path, argv, NULL, out, NULL, 0) != 0)
        goto done;
    size_t l = 0;
    char *mem = gpgme_data_release_and_get_mem(out, &l);
    out = NULL;
    char *copy = malloc(l + 1);
    if (copy) {
        if (l)
            memcpy(copy, mem, l);
        copy[l] = '\0';
        *status = copy;
        *slen = l;
        rc = 0;
    }
    gpgme_free(mem);
done:
    if (out)
        gpgme_data_release(out);
    if (g)
        gpgme_release(g);
    free(argv);
    return rc;
}
