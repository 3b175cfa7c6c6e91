#include "rungate.h"

#include <stdio.h>
#include <string.h>

static int check_signatures(bd_prov_ctx *ctx, const bd_task_class *tc, const char *const *ids,
                            size_t n, const bd_run_gate_opts *o, bd_err *err)
{
    size_t count = n ? n : tc->n_cases;
    for (size_t i = 0; i < count; i++) {
        if (o->stop && o->stop(o->stop_payload))
            return bd_err_set(err, BD_E_RUN_CANCELLED, NULL, 0, 0,
                              "the run was cancelled before it started");
        const char *id = n ? ids[i] : tc->case_ids[i];
        bd_case *c = NULL;
        if (bd_task_class_case(&c, tc, id, err) != 0)
            return -1;
        bd_prov_result pr;
        int v = bd_provenance_verify_case(&pr, ctx, c, c->case_digest, err);
        bd_case_free(c);
        if (v < 0)
            return -1;
        if (pr.status == BD_PROV_ST_SIGNED)
            continue;
        if (pr.status == BD_PROV_ST_BAD) {
            *err = pr.err;
            return -1;
        }
        return bd_err_set(err, BD_E_PROVENANCE_MISSING, NULL, 0, 0,
                          "case '%s' is %s, not signed by an author and a reviewer; sign it "
                          "(benchdesk sign), or %s",
                          id, bd_prov_status_str(pr.status),
                          o->drafts_hint ? o->drafts_hint : "allow drafts");
    }
    return 0;
}

int bd_run_gate(bd_history **hist, bd_runner *runner, const bd_bench *bench,
                const bd_task_class *tc, const char *const *ids, size_t n,
                const bd_run_gate_opts *opts, bd_err *err)
{
    static const bd_run_gate_opts defaults = {0};
    const bd_run_gate_opts *o = opts ? opts : &defaults;
    *hist = NULL;
    bd_history *h = NULL;
    bd_prov_ctx *own = NULL;
    int rc = -1;

    /* A run never appends to a broken chain. */
    if (bd_history_open(&h, bench->root, BD_HISTORY_CREATE, err) != 0)
        goto out;
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    int v = bd_history_verify(h, 0, &vr, err);
    if (v == 0 && vr.count > 0)
        bd_runner_set_chain_head(runner, vr.head);
    bd_history_verify_result_release(&vr);
    if (v != 0)
        goto out;
    if (bd_runner_prepare(runner, err) != 0)
        goto out;
    if (!o->drafts) {
        bd_prov_ctx *ctx = o->prov;
        if (!ctx) {
            if (bd_provenance_init(err) != 0 || bd_prov_ctx_new(&own, bench->bench_dir, err) != 0)
                goto out;
            ctx = own;
        }
        if (check_signatures(ctx, tc, ids, n, o, err) != 0)
            goto out;
    }
    *hist = h;
    h = NULL;
    rc = 0;
out:
    bd_prov_ctx_free(own);
    bd_history_free(h);
    return rc;
}

int bd_run_record(bd_case_result *res, const bd_run_summary *s, void *payload, bd_err *err)
{
    bd_run_recorder *rec = payload;
    if (!rec || !rec->hist)
        return bd_err_set(err, BD_E_INTERNAL, NULL, 0, 0, "the history is not open");
    bd_history_score_fields f = {0};
    f.run_id = s->run_id;
    f.task_class = s->task_class;
    f.case_id = res->case_id;
    f.case_digest = res->case_digest;
    f.rubric_digest = s->rubric_digest;
    f.cassette_digest = res->cassette_digest[0] ? res->cassette_digest : NULL;
    f.isolation_class = bd_isolation_str(s->isolation);
    f.provenance_verified = rec->provenance_verified;
    f.started_at = res->started_at;
    f.finished_at = res->finished_at;
    char hash[BD_HASH_BUF];
    uint64_t seq = 0;
    if (bd_history_append_score(rec->hist, &f, &res->score, &seq, hash, err) != 0)
        return -1;
    snprintf(res->record_hash, sizeof(res->record_hash), "%s", hash);
    rec->last_seq = seq;
    bd_runner_set_chain_head(rec->runner, hash);
    return 0;
}
