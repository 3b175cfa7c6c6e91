#include "repin.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fsutil.h"
#include "sign.h"

typedef struct repin_state {
    const bd_bench *bench;
    bd_prov_ctx *ctx; /* borrowed, or `own` */
    bd_prov_ctx *own;
} repin_state;

/* Name `digest` in legacy block `b` (role `role`) of subject `sj` when its signature
 * verifies over it. Returns 1 named, 0 not, -1 GnuPG failed. */
static int name_block(bd_signature_block *b, int role, const bd_subject *sj, const char *digest,
                      bd_prov_ctx *ctx, bd_err *err)
{
    char *msg = NULL;
    size_t len = 0;
    bd_prov_detached d;
    if (!b->present || b->digest[0] ||
        bd_provenance_message(&msg, &len, role, sj, digest, NULL) < 0)
        return 0;
    int rc = bd_prov_verify_detached(&d, ctx, msg, len, b->signature, err);
    free(msg);
    if (rc < 0)
        return -1;
    if (!d.crypto_good || d.nsigs != 1 || strcasecmp(d.fingerprint, b->fingerprint) != 0)
        return 0;
    snprintf(b->digest, sizeof(b->digest), "%s", digest);
    return 1;
}

static int name_change(bd_pin_change *ch, const bd_task_class *tc, repin_state *st, bd_err *err)
{
    char path[PATH_MAX];
    bool is_case = ch->case_id[0] != '\0';
    if (is_case)
        snprintf(path, sizeof(path), "%s/%s/" BD_PROVENANCE_FILE, tc->cases_dir, ch->case_id);
    else
        snprintf(path, sizeof(path), "%s", tc->prov_path);
    if (!st->ctx) {
        if (bd_provenance_init(err) < 0 || bd_prov_ctx_new(&st->own, st->bench->bench_dir, err) < 0)
            return -1;
        st->ctx = st->own;
    }
    bd_provfile *pf = NULL;
    bd_err le = BD_ERR_INIT;
    if (bd_provfile_load(&pf, path, &le) < 0)
        return 0; /* verify reports a broken file */
    bd_subject sj = {is_case ? BD_SUBJECT_CASE : BD_SUBJECT_TASK_CLASS,
                     tc->name,
                     is_case ? ch->case_id : NULL,
                     ch->before,
                     ch->before,
                     pf};
    int a = ch->author_legacy
                ? name_block(&pf->author, BD_ROLE_AUTHOR, &sj, ch->before, st->ctx, err)
                : 0;
    int r = a >= 0 && ch->reviewer_legacy
                ? name_block(&pf->reviewer, BD_ROLE_REVIEWER, &sj, ch->before, st->ctx, err)
                : 0;
    int rc = a < 0 || r < 0 ? -1 : 0;
    if (rc == 0 && (a > 0 || r > 0)) {
        char *text = bd_provfile_format(pf);
        if (!text)
            rc = bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        else
            rc = bd_write_file_atomic_in(path, is_case ? tc->cases_dir : NULL, text, strlen(text),
                                         0644, err);
        free(text);
    }
    if (rc == 0) {
        ch->author_legacy = ch->author_legacy && a == 0;
        ch->reviewer_legacy = ch->reviewer_legacy && r == 0;
    }
    bd_provfile_free(pf);
    return rc;
}

static int before_write(bd_pin_report *rep, const bd_task_class *tc, void *payload, bd_err *err)
{
    repin_state *st = payload;
    for (size_t i = 0; i < rep->n_changes; i++) {
        bd_pin_change *ch = &rep->changes[i];
        bool legacy = (ch->author_broken && ch->author_legacy) ||
                      (ch->reviewer_broken && ch->reviewer_legacy);
        if (legacy && bd_digest_str_valid(ch->before) && ch->after[0] &&
            name_change(ch, tc, st, err) < 0)
            return -1;
    }
    return 0;
}

int bd_repin(bd_pin_report *out, const bd_bench *bench, const bd_task_class *tc,
             const char *const *case_ids, size_t n_case_ids, bd_prov_ctx *ctx, bd_err *err)
{
    repin_state st = {bench, ctx, NULL};
    int rc = bd_pin_task_class_hook(out, tc, case_ids, n_case_ids, before_write, &st, err);
    bd_prov_ctx_free(st.own);
    return rc;
}
