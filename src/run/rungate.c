#include "rungate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "runsign.h"
#include "verify.h"
#include "strbuf.h"

void bd_run_plan_release(bd_run_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_verified; i++)
        free(p->verified_ids[i]);
    free(p->verified_ids);
    for (size_t i = 0; i < p->n_shard_ids; i++)
        free(p->shard_ids[i]);
    free(p->shard_ids);
    memset(p, 0, sizeof(*p));
}

bool bd_run_plan_note(const bd_run_plan *p, const char *task_class, bd_err *note)
{
    bd_err_clear(note);
    if (!p || !p->n_unselected_problems)
        return false;
    bd_err_set(note, BD_OK, NULL, 0, 0,
               "%zu case%s of %s not in this run %s problems and %s left out (first: %s: %s); "
               "to see them: ",
               p->n_unselected_problems, p->n_unselected_problems == 1 ? "" : "s", task_class,
               p->n_unselected_problems == 1 ? "has" : "have",
               p->n_unselected_problems == 1 ? "was" : "were",
               bd_code_str(p->unselected_first.code), p->unselected_first.msg);
    bd_err_advise(note, BD_ACT_VERIFY_TASK_CLASS, "%s", task_class);
    return true;
}

bool bd_run_plan_verified(const bd_run_plan *p, const char *id)
{
    return p && bd_str_sorted_has((const char *const *)p->verified_ids, p->n_verified, id);
}

/* Free space the history must have before a run starts: a few records with room. */
#define HISTORY_MIN_FREE (4u * 1024u * 1024u)

/* docs/runner.md#how-one-case-runs: the history's writability is known before the first spawn — a
 * read-only or full file system, or a directory benchdesk may not write, refuses the run with exit
 * 4 instead of failing the first append after a rubric ran. A probe file is created and removed
 * (access() would not see a read-only mount or a quota). */
static int history_writable(const bd_history *h, bd_err *err)
{
    const char *dir = bd_history_dir(h);
    char probe[4096];
    snprintf(probe, sizeof(probe), "%s/.write-probe-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return bd_err_errno(err, BD_E_IO, errno, dir,
                            "the history cannot be written, so no case was run; make the "
                            "directory writable");
    close(fd);
    unlink(probe);
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0 &&
        (unsigned long long)vfs.f_bavail * vfs.f_frsize < HISTORY_MIN_FREE)
        return bd_err_set(err, BD_E_IO, dir, 0, 0,
                          "less than %u MiB free for the history, so no case was run; free "
                          "some space",
                          HISTORY_MIN_FREE / (1024u * 1024u));
    return 0;
}

static bool stop_now(const bd_run_gate_opts *o)
{
    return o->stop && o->stop(o->stop_payload);
}

/* A shard run keeps the cases of its shard (in place) and lists them in the plan. */
static int keep_shard(bd_run_plan *plan, const char **keep, size_t *n_keep, const bd_shard_spec *sh,
                      bd_err *err)
{
    size_t u = 0;
    for (size_t i = 0; i < *n_keep; i++)
        if (bd_shard_of(keep[i], sh->n) == sh->k)
            keep[u++] = keep[i];
    *n_keep = u;
    plan->shard_ids = calloc(u ? u : 1, sizeof(char *));
    if (!plan->shard_ids)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < u; i++) {
        if (!(plan->shard_ids[i] = strdup(keep[i])))
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        plan->n_shard_ids++;
    }
    qsort(plan->shard_ids, u, sizeof(char *), bd_str_ptr_cmp);
    return 0;
}

/* Step 2 of bd_run_gate, per case as the check streams by (bd_verify: one
 * case alive at a time, whatever the size of the task class): the first failure, the
 * first unsigned case of a subset, and the ids to keep (owned copies). */
typedef struct gate_sink {
    bd_run_plan *plan;
    bd_runner *runner; /* takes each kept case's check (bd_runner_take_check) */
    const bd_run_gate_opts *o;
    const bd_task_class *tc;
    bool subset;
    bd_prov_status tc_prov;
    bool have_first; /* first failure: task class, then cases in order, then orphans */
    bd_err first;
    bool have_refuse; /* a case of a subset that is not signed (and drafts not allowed) */
    bd_err refuse;
    const char *hint;
    char **keep; /* owned */
    size_t n_keep, cap_keep;
    size_t cap_verified; /* of plan->verified_ids */
    bool nomem;
} gate_sink;

static void gate_task_class(const bd_verify_report *r, void *payload)
{
    gate_sink *g = payload;
    const bd_err *e = bd_verify_tc_failure(r);
    if (e) {
        g->first = *e;
        g->have_first = true;
    }
    g->tc_prov = r->tc_prov.status;
    g->plan->tc_signed = g->tc_prov == BD_PROV_ST_SIGNED;
}

/* A problem the run does not select: one line, never a refusal. */
static void note_unselected(gate_sink *g, const bd_err *e)
{
    if (!g->plan->n_unselected_problems++)
        g->plan->unselected_first = *e;
}

/* Whether the run selects case `k` (bd_run_gate's contract, step 2). */
static bool case_selected(const gate_sink *g, const bd_case_check *k)
{
    if (g->subset)
        return true;
    if (g->o->drafts)
        return k->pinned[0] != '\0';
    return k->prov_checked &&
           (k->prov.pin_status == BD_PROV_ST_SIGNED || k->prov.pin_status == BD_PROV_ST_BAD);
}

static void gate_case(bd_case_check *k, void *payload)
{
    gate_sink *g = payload;
    const bd_err *e = bd_case_check_failure(k);
    if (g->have_first || g->nomem)
        return;
    if (!case_selected(g, k)) {
        if (e)
            note_unselected(g, e);
        if (!g->o->drafts && k->prov_checked && k->prov.pin_status == BD_PROV_ST_AWAITING)
            g->plan->skipped_awaiting++;
        else if (!g->o->drafts)
            g->plan->skipped_draft++;
        return;
    }
    if (e) {
        g->first = *e;
        g->have_first = true;
        return;
    }
    bool is_signed = k->prov.status == BD_PROV_ST_SIGNED;
    if (!is_signed && !g->o->drafts) {
        if (g->subset) {
            if (!g->have_refuse) {
                /* A verdict from the case memo comes without its file: named here. */
                char prov_path[4096];
                snprintf(prov_path, sizeof(prov_path), "%s/%s/%s", g->tc->cases_dir, k->case_id,
                         BD_PROVENANCE_FILE);
                bd_err_set(&g->refuse, BD_E_PROVENANCE_MISSING,
                           k->prov_file ? k->prov_file->path : prov_path, 0, 0,
                           "case '%s' is %s, not signed by an author and a reviewer; sign it ",
                           k->case_id, bd_prov_status_str(k->prov.status));
                bd_err_advise(&g->refuse, BD_ACT_SIGN_CASE, NULL);
                bd_err_append(&g->refuse, ", or %s", g->hint);
            }
            g->have_refuse = true;
        } else if (k->prov.status == BD_PROV_ST_AWAITING) {
            g->plan->skipped_awaiting++;
        } else {
            g->plan->skipped_draft++;
        }
        return;
    }
    if (g->n_keep == g->cap_keep) {
        size_t nc = g->cap_keep ? g->cap_keep * 2 : 64;
        char **nk = realloc(g->keep, nc * sizeof(*nk));
        if (!nk) {
            g->nomem = true;
            return;
        }
        g->keep = nk;
        g->cap_keep = nc;
    }
    if (!(g->keep[g->n_keep] = strdup(k->case_id))) {
        g->nomem = true;
        return;
    }
    g->n_keep++;
    bd_runner_take_check(g->runner, k);
    if (is_signed && g->plan->tc_signed) {
        if (g->plan->n_verified == g->cap_verified) {
            size_t nc = g->cap_verified ? g->cap_verified * 2 : 64;
            char **nv = realloc(g->plan->verified_ids, nc * sizeof(*nv));
            if (!nv) {
                g->nomem = true;
                return;
            }
            g->plan->verified_ids = nv;
            g->cap_verified = nc;
        }
        if (!(g->plan->verified_ids[g->plan->n_verified] = strdup(k->case_id))) {
            g->nomem = true;
            return;
        }
        g->plan->n_verified++;
    }
}

static void gate_orphan(const bd_err *e, void *payload)
{
    note_unselected(payload, e); /* a pin naming no case is nothing the run selects */
}

/* Step 3: what the streamed checks decide, in the order of the checks themselves. */
static int decide(bd_run_plan *plan, const char ***keep, size_t *n_keep, gate_sink *g,
                  const bd_task_class *tc, const bd_run_gate_opts *o, bd_err *err)
{
    if (g->nomem)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    if (g->have_first) {
        *err = g->first;
        return -1;
    }
    if (!plan->tc_signed && !o->drafts) {
        bd_err_set(err, BD_E_PROVENANCE_MISSING, tc->prov_path, 0, 0,
                   "task class '%s' is %s, not signed by an author and a reviewer, so its "
                   "rubric and registration are not vouched for; sign it ",
                   tc->name, bd_prov_status_str(g->tc_prov));
        bd_err_advise(err, BD_ACT_SIGN_TASK_CLASS, "%s", tc->name);
        return bd_err_append(err, ", or %s", g->hint);
    }
    if (g->have_refuse) {
        *err = g->refuse;
        return -1;
    }
    *keep = calloc(g->n_keep ? g->n_keep : 1, sizeof(**keep));
    if (!*keep)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < g->n_keep; i++)
        (*keep)[i] = g->keep[i];
    *n_keep = g->n_keep;
    if (*n_keep == 0)
        return bd_err_set(err, BD_E_PROVENANCE_MISSING, tc->cases_dir, 0, 0,
                          "task class '%s' has no signed case to run (%zu drafts, %zu awaiting "
                          "review); sign them, or %s",
                          tc->name, plan->skipped_draft, plan->skipped_awaiting, g->hint);
    /* bd_run_plan_verified searches them: sorted whatever order the ids were given in. */
    if (plan->n_verified > 1)
        qsort(plan->verified_ids, plan->n_verified, sizeof(char *), bd_str_ptr_cmp);
    plan->run_cases = *n_keep;
    plan->full = !g->subset;
    return o->shard ? keep_shard(plan, *keep, n_keep, o->shard, err) : 0;
}

static int open_verified(bd_history **h, bd_runner *runner, const bd_bench *bench, bd_err *err)
{
    if (bd_history_open(h, bench->root, BD_HISTORY_CREATE, err) != 0)
        return -1;
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    /* What was appended since the last full verify is checked, plus the head that
     * verify saw (docs/history.md). */
    int v = bd_history_verify_since(*h, &vr, err);
    if (v == 0 && vr.count > 0)
        bd_runner_set_chain_head(runner, vr.head);
    bd_history_verify_result_release(&vr);
    return v;
}

int bd_run_gate(bd_run_plan *plan, bd_runner *runner, const bd_bench *bench,
                const bd_task_class *tc, const char *const *ids, size_t n,
                const bd_run_gate_opts *opts, bd_err *err)
{
    static const bd_run_gate_opts defaults = {0};
    const bd_run_gate_opts *o = opts ? opts : &defaults;
    memset(plan, 0, sizeof(*plan));
    bd_history *h = NULL;
    bd_prov_ctx *own = NULL;
    bd_verify_report rep;
    memset(&rep, 0, sizeof(rep));
    const char **keep = NULL;
    size_t n_keep = 0;
    gate_sink gs;
    memset(&gs, 0, sizeof(gs));
    int rc = -1;

    /* A run never appends to a broken chain, nor starts a rubric when the history cannot
     * be written; a shard run does not touch it (docs/scale.md#what-a-shard-writes). */
    if (!o->shard && (open_verified(&h, runner, bench, err) != 0 || history_writable(h, err) != 0))
        goto out;
    if (stop_now(o)) {
        bd_err_set(err, BD_E_RUN_CANCELLED, NULL, 0, 0, "the run was cancelled before it started");
        goto out;
    }
    bd_prov_ctx *ctx = o->prov;
    if (!ctx) {
        if (bd_provenance_init(err) != 0 || bd_prov_ctx_new(&own, bench->bench_dir, err) != 0)
            goto out;
        ctx = own;
    }
    gs.plan = plan;
    gs.runner = runner;
    gs.o = o;
    gs.tc = tc;
    gs.subset = n > 0;
    gs.hint = o->drafts_hint ? o->drafts_hint : "allow drafts";
    bd_verify_sink sink = {gate_task_class, gate_case, gate_orphan, &gs};
    /* The task class alone first: a run its own check or its signatures refuse is refused
     * before any case is hashed, however many there are. */
    bd_verify_sink tc_sink = {gate_task_class, NULL, NULL, &gs};
    bd_verify_opts topt = {.prov = ctx, .no_cases = true};
    if (bd_verify(&rep, tc, &topt, &tc_sink, err) < 0)
        goto out;
    bd_verify_report_release(&rep);
    memset(&rep, 0, sizeof(rep));
    bool refused_early = gs.have_first || (!plan->tc_signed && !o->drafts);
    /* The first failure of the task class or of a selected case refuses the run; the
     * others are noted (bd_verify's stop_early would stop at an unselected one). */
    /* A case the case memo knows to pass is not parsed or judged again: the runner takes
     * its digests alone (docs/provenance.md#the-case-memo). */
    bd_verify_opts vopt = {
        .case_ids = ids, .n_case_ids = n, .prov = ctx, .no_cases = false, .case_memo = true};
    if (!refused_early && bd_verify(&rep, tc, &vopt, &sink, err) < 0)
        goto out;
    if (stop_now(o)) {
        bd_err_set(err, BD_E_RUN_CANCELLED, NULL, 0, 0, "the run was cancelled before it started");
        goto out;
    }
    if (decide(plan, &keep, &n_keep, &gs, tc, o, err) != 0)
        goto out;
    if (bd_runner_select(runner, keep, n_keep, err) != 0 || bd_runner_prepare(runner, err) != 0)
        goto out;
    bd_runner_set_skipped(runner, plan->skipped_draft, plan->skipped_awaiting);
    /* The runner records every finished case before it reports it
     * (docs/runner.md#fan-out-events-cancel). */
    bd_runner_recording rec = {.history = h,
                               .own = true,
                               .run_full = plan->full,
                               .run_cases = plan->run_cases,
                               .verified_ids = (const char *const *)plan->verified_ids,
                               .n_verified = plan->n_verified};
    h = NULL; /* the runner's now, whatever happens */
    if (!o->shard && bd_runner_set_recording(runner, &rec, err) != 0)
        goto out;
    rc = 0;
out:
    if (rc != 0)
        bd_run_plan_release(plan);
    free(keep);
    for (size_t i = 0; i < gs.n_keep; i++)
        free(gs.keep[i]);
    free(gs.keep);
    bd_verify_report_release(&rep);
    bd_prov_ctx_free(own);
    bd_history_free(h);
    return rc;
}

int bd_run_env_resolve(bd_run_env *out, const bd_config *cfg, const char *isolation,
                       bool allow_weaker, int jobs, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (bd_isolation_choose(&out->isolation, NULL, isolation, allow_weaker, err) != 0 ||
        bd_config_find_python(&out->python, cfg, err) != 0)
        return -1;
    out->jobs = jobs > 0 ? jobs : cfg ? cfg->jobs : 0;
    return 0;
}

void bd_run_env_release(bd_run_env *e)
{
    if (e) {
        free(e->python);
        e->python = NULL;
    }
}

double bd_run_cost_cap(const bd_run_request *req, const bd_config *cfg)
{
    double cap = req->tc ? req->tc->reg->run_cost_cap_usd : -1.0;
    if (cfg && cfg->has_cost_cap && (cap < 0 || cfg->cost_cap_usd < cap))
        cap = cfg->cost_cap_usd;
    if (req->has_cost_cap && (cap < 0 || req->cost_cap_usd < cap))
        cap = req->cost_cap_usd;
    return cap;
}

int bd_run_prepare(bd_runner **out, bd_run_plan *plan, const bd_run_request *req, bd_err *err)
{
    *out = NULL;
    memset(plan, 0, sizeof(*plan));
    bd_config own = {0};
    bd_run_env env = {0};
    bd_runner *r = NULL;
    bd_prov_ctx *prov = NULL;
    int rc = -1;
    const bd_config *cfg = req->config;
    const bd_shard_spec *shard = req->gate.shard;
    if (shard && (!req->bundle || !req->bundle_dir)) {
        bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                   "a shard run writes a bundle: give --out BUNDLE_DIR");
        goto out;
    }
    if (!cfg) {
        if (bd_config_load(&own, req->bench->root, err) != 0)
            goto out;
        cfg = &own;
    }
    if (bd_run_env_resolve(&env, cfg, req->isolation, req->allow_weaker, req->jobs, err) != 0)
        goto out;
    /* The gate's signature memo is read on a thread of its own while the runner takes its
     * cases (docs/provenance.md#the-memo-file) — only now: the isolation probe above clones
     * this process, which it refuses to do once a thread runs. A context that cannot be
     * made here is left to the gate, which reports why in its own order. */
    bd_run_gate_opts gate = req->gate;
    if (!gate.prov) {
        bd_err ignored = BD_ERR_INIT;
        if (bd_provenance_init(&ignored) == 0 &&
            bd_prov_ctx_new(&prov, req->bench->bench_dir, &ignored) == 0) {
            bd_prov_ctx_preload(prov);
            gate.prov = prov;
        }
    }
    /* The operator's key, checked before anything runs, so a run never ends unsigned for
     * want of a passphrase. A shard's records go to its bundle unsigned: the operator who
     * imports it signs them (`run --out` here: the same key). */
    bd_sign_key op_key;
    bool op_signs = false;
    bd_run_operator_req op = {.key = req->operator_key ? req->operator_key : cfg->signing_key,
                              .require_config = cfg->require_signed_runs,
                              .require_tc = req->tc->run_require_signed,
                              .task_class = req->tc->name,
                              .isolation = env.isolation};
    if (bd_run_operator_check(&op_key, &op_signs, &op, err) != 0)
        goto out;
    bd_runner_opts opts = BD_RUNNER_OPTS_INIT;
    opts.jobs = env.jobs;
    opts.isolation = env.isolation;
    opts.python = env.python;
    opts.drafts = req->gate.drafts;
    if (shard) {
        opts.run_id = shard->run_id;
        opts.write_files = false; /* a shard leaves nothing on its machine but the bundle */
    }
    if (bd_runner_new(&r, req->bench, req->tc, req->case_ids, req->n_case_ids, &opts, err) != 0)
        goto out;
    bd_runner_set_cost_cap(r, bd_run_cost_cap(req, cfg));
    /* A shard's bundle exists only once its gate passed; its records go there. */
    if (bd_run_gate(plan, r, req->bench, req->tc, req->case_ids, req->n_case_ids, &gate, err) != 0)
        goto out;
    if (op_signs && !shard)
        bd_runner_set_operator(r, &op_key);
    if (shard) {
        if (bd_bundle_create(req->bundle, req->bundle_dir, err) != 0)
            goto out;
        bd_runner_recording rec = {.history = req->bundle->records,
                                   .scores_only = true,
                                   .run_full = plan->full,
                                   .run_cases = plan->run_cases,
                                   .verified_ids = (const char *const *)plan->verified_ids,
                                   .n_verified = plan->n_verified};
        if (bd_runner_set_recording(r, &rec, err) != 0)
            goto out;
    }
    *out = r;
    r = NULL;
    rc = 0;
out:
    if (rc != 0)
        bd_run_plan_release(plan);
    bd_runner_free(r);
    bd_prov_ctx_free(prov);
    bd_run_env_release(&env);
    bd_config_release(&own);
    return rc;
}
