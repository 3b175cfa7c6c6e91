#include "record.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "fsutil.h"
#include "hash.h"
#include "history.h"
#include "pin.h"
#include "repin.h"
#include "runner.h"
#include "sut_env.h"
#include "verify.h"

/* Largest cassette.json read back for the diff (the SUT's stdout is capped at 1 MiB). */
#define CASSETTE_READ_MAX (2u * 1024u * 1024u)

void bd_record_take_release(bd_record_take *t)
{
    if (!t)
        return;
    free(t->old_text);
    free(t->new_text);
    memset(t, 0, sizeof(*t));
}

static void reg_path(char *buf, size_t cap, const bd_task_class *tc)
{
    snprintf(buf, cap, "%s/registration.yaml", tc->dir);
}

int bd_record_check(const bd_bench *bench, const bd_task_class *tc, const char *case_id,
                    bd_prov_ctx *prov, bd_err *err)
{
    char rp[4200];
    reg_path(rp, sizeof(rp), tc);
    if (tc->reg->sut_kind != BD_SUT_COMMAND)
        return bd_err_set(err, BD_E_RECORD_NOT_COMMAND, rp, 0, 0,
                          "%s replays cassettes (sut: {kind: cassette}): there is no live system "
                          "to record; declare a command SUT in sut: {kind: command, argv: [...]}",
                          tc->name);
    bd_prov_ctx *own = NULL;
    if (!prov) {
        if (bd_prov_ctx_new(&own, bench->bench_dir, err) != 0)
            return -1;
        prov = own;
    }
    bd_verify_report rep;
    const char *ids[] = {case_id};
    int rc = -1;
    bd_verify_opts vopt = {.case_ids = ids, .n_case_ids = 1, .prov = prov, .collect = true};
    int vrc = bd_verify(&rep, tc, &vopt, NULL, err);
    if (vrc < 0)
        goto out;
    /* The registration names the SUT's argv and the secrets it sees: it must be the
     * signed one, byte for byte. The case itself is about to change, so its own pin and
     * signatures are not asked for. */
    const bd_err *tcf = bd_verify_tc_failure(&rep);
    if (tcf) {
        *err = *tcf;
    } else if (!rep.tc_prov_checked || rep.tc_prov.status != BD_PROV_ST_SIGNED) {
        bd_err_set(err, BD_E_PROVENANCE_MISSING, rp, 0, 0,
                   "%s is not signed by two people (%s): recording runs its SUT with the "
                   "secrets its registration names, so the registration must be signed; ",
                   tc->name,
                   rep.tc_prov_checked ? bd_prov_status_str(rep.tc_prov.status) : "draft");
        bd_err_advise(err, BD_ACT_SIGN_TWO, "%s", tc->name);
    } else if (rep.n_cases != 1 || !rep.cases[0].loaded) {
        if (rep.n_cases == 1 && rep.cases[0].err.code != BD_OK) {
            *err = rep.cases[0].err;
        } else {
            bd_err_set(err, BD_E_UNKNOWN_CASE, tc->cases_dir, 0, 0, "%s has no case %s: ", tc->name,
                       case_id);
            bd_err_advise(err, BD_ACT_LIST_CASES, "%s", tc->name);
            bd_err_append(err, " shows its cases");
        }
    } else {
        char **env = NULL;
        if (bd_sut_env_build(&env, tc->reg, rp, err) == 0) {
            bd_sut_env_free(env);
            rc = 0;
        }
    }
    bd_verify_report_release(&rep);
out:
    bd_prov_ctx_free(own);
    return rc;
}

int bd_record_network_policy(bool stdin_is_terminal, bd_err *err)
{
    if (getenv("CI"))
        return bd_err_set(err, BD_E_RECORD_NETWORK_REFUSED, NULL, 0, 0,
                          "--unsafe-network is never allowed in CI (CI is set): record with the "
                          "network on an operator's terminal, then commit the cassette");
    if (!stdin_is_terminal)
        return bd_err_set(err, BD_E_RECORD_NETWORK_REFUSED, NULL, 0, 0,
                          "--unsafe-network needs an operator to confirm on a terminal, and "
                          "stdin is not one: run it interactively");
    return 0;
}

int bd_record_network_gate(bd_isolation iso, bool unsafe_network, bool stdin_is_terminal,
                           bool *host_network, bd_err *err)
{
    *host_network = false;
    /* subprocess has no network namespace: its SUT always has the host network. */
    if (iso == BD_ISO_SUBPROCESS && !unsafe_network)
        return bd_err_set(err, BD_E_RECORD_NETWORK_REFUSED, NULL, 0, 0,
                          "under the subprocess isolation class the SUT has the host network: "
                          "pass --unsafe-network on an operator's terminal to record with it, "
                          "or record offline with --isolation namespaces");
    if (!unsafe_network)
        return 0;
    if (bd_record_network_policy(stdin_is_terminal, err) != 0)
        return -1;
    *host_network = true;
    return 0;
}

void bd_record_network_question(char *buf, size_t cap, const bd_task_class *tc, const char *case_id,
                                bd_isolation iso)
{
    const char *argv0 = tc->reg->sut_argv && tc->reg->sut_argv[0] ? tc->reg->sut_argv[0] : "?";
    if (iso == BD_ISO_SUBPROCESS)
        snprintf(buf, cap,
                 "The SUT of %s (%s) runs under the subprocess isolation class while recording "
                 "%s: it gets the host network and none of the jail's protections; the history "
                 "records who asked. Record with the network?",
                 tc->name, argv0, case_id);
    else
        snprintf(buf, cap,
                 "The SUT of %s (%s) gets the host network while recording %s; every other "
                 "protection stays and the history records who asked. Record with the network?",
                 tc->name, argv0, case_id);
}

int bd_record_audit(const bd_bench *bench, const bd_task_class *tc, const char *case_id,
                    bd_isolation iso, uint64_t *seq_out, char repair_out[256], bd_err *err)
{
    /* Who: the OS account, and the configured signing key when there is one. */
    uid_t uid = getuid();
    struct passwd pw, *pwp = NULL;
    char pwbuf[1024];
    const char *user =
        getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp ? pwp->pw_name : "?";
    bd_config cfg;
    bd_err cfg_err = BD_ERR_INIT;
    bool have_cfg = bd_config_load(&cfg, bench->root, &cfg_err) == 0;
    const char *who = NULL;
    if (have_cfg && bd_fpr_valid(cfg.signing_key))
        who = cfg.signing_key;

    cJSON *d = cJSON_CreateObject();
    cJSON *argv = d ? cJSON_AddArrayToObject(d, "argv") : NULL;
    char *detail = NULL;
    int rc = -1;
    if (!argv)
        goto oom;
    cJSON_AddStringToObject(d, "case_id", case_id);
    cJSON_AddStringToObject(d, "isolation", bd_isolation_str(iso));
    cJSON_AddStringToObject(d, "user", user);
    cJSON_AddNumberToObject(d, "uid", (double)uid);
    for (size_t i = 0; tc->reg->sut_argv && tc->reg->sut_argv[i]; i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(tc->reg->sut_argv[i]));
    detail = cJSON_PrintUnformatted(d);
    if (!detail)
        goto oom;
    if (strlen(detail) > 4096) {
        /* The argv is long (an inline program): keep the record within its limit. */
        cJSON_DeleteItemFromObject(d, "argv");
        cJSON_AddStringToObject(d, "argv0", tc->reg->sut_argv[0]);
        cJSON_AddNumberToObject(d, "argc", (double)tc->reg->sut_argc);
        free(detail);
        if (!(detail = cJSON_PrintUnformatted(d)))
            goto oom;
    }
    bd_history_audit_fields a = {.event = "record.unsafe_network",
                                 .task_class = tc->name,
                                 .detail = detail,
                                 .operator_fingerprint = who};
    bd_history *h = NULL;
    char hash[BD_HASH_BUF] = "";
    uint64_t seq = 0;
    if (bd_history_open(&h, bench->root, BD_HISTORY_CREATE, err) == 0 &&
        bd_history_append_audit(h, &a, &seq, hash, err) == 0) {
        if (seq_out)
            *seq_out = seq;
        if (repair_out)
            snprintf(repair_out, 256, "%s",
                     bd_history_repair_note(h) ? bd_history_repair_note(h) : "");
        rc = 0;
    }
    bd_history_free(h);
    goto out;
oom:
    bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
out:
    free(detail);
    cJSON_Delete(d);
    if (have_cfg)
        bd_config_release(&cfg);
    return rc;
}

/* cassette.json as it is now: 1 read, 0 absent, -1 error. */
static int read_cassette(char **out, size_t *len, const char *path, bd_err *err)
{
    *out = NULL;
    *len = 0;
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT)
        return 0;
    return bd_read_file(out, len, path, CASSETTE_READ_MAX, BD_E_IO, err) == 0 ? 1 : -1;
}

int bd_record_capture(bd_record_take *out, const bd_bench *bench, const bd_task_class *tc,
                      const char *case_id, const bd_record_opts *opts, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s/cassette.json", tc->cases_dir, case_id);
    int have = read_cassette(&out->old_text, &out->old_len, path, err);
    if (have < 0)
        return -1;
    if (have)
        bd_digest_bytes(out->old_digest, out->old_text, out->old_len);

    bd_runner_opts ro = BD_RUNNER_OPTS_INIT;
    ro.jobs = 1;
    ro.isolation = opts->isolation;
    ro.python = opts->python;
    ro.helper = opts->helper;
    ro.tmp_root = opts->tmp_root;
    ro.drafts = true;
    ro.write_files = false;
    ro.record_sut = true;
    ro.sut_host_network = opts->host_network;
    bd_runner *r = NULL;
    const char *ids[] = {case_id};
    int rc = -1;
    if (bd_runner_new(&r, bench, tc, ids, 1, &ro, err) != 0 || bd_runner_run(r, err) != 0)
        goto out;
    size_t n = 0;
    const bd_case_result *const *res = bd_runner_results(r, &n);
    if (n != 1) {
        bd_err_set(err, BD_E_RUN_CANCELLED, NULL, 0, 0, "the recording was cancelled");
        goto out;
    }
    const bd_case_result *cr = res[0];
    out->wall_ms = cr->wall_ms;
    out->isolation = bd_runner_summary(r)->isolation;
    if (!cr->sut_output) {
        const bd_score_fm *fm = cr->score.n_failure_modes ? &cr->score.failure_modes[0] : NULL;
        bd_err_set(err, BD_E_RECORD_SUT_FAILED, path, 0, 0,
                   "the SUT did not produce a cassette (%s: %.600s); nothing was written",
                   fm ? fm->code : "sut.exception", fm && fm->detail ? fm->detail : "");
        goto out;
    }
    if (!(out->new_text = malloc(cr->sut_output_len + 1))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    memcpy(out->new_text, cr->sut_output, cr->sut_output_len);
    out->new_text[cr->sut_output_len] = '\0';
    out->new_len = cr->sut_output_len;
    bd_digest_bytes(out->new_digest, out->new_text, out->new_len);
    out->changed = strcmp(out->old_digest, out->new_digest) != 0;
    rc = 0;
out:
    bd_runner_free(r);
    if (rc != 0)
        bd_record_take_release(out);
    return rc;
}

int bd_record_write(const bd_task_class *tc, const char *case_id, const bd_record_take *t,
                    bd_err *err)
{
    /* Temp files go to cases/: never inside the case, whose digest would take them in. */
    char dir[4400], path[4500];
    snprintf(dir, sizeof(dir), "%s/%s", tc->cases_dir, case_id);
    if (t->changed) {
        snprintf(path, sizeof(path), "%s/cassette.json", dir);
        if (bd_write_file_atomic_in(path, tc->cases_dir, t->new_text, t->new_len, 0644, err) != 0)
            return -1;
    }
    /* Then case.yaml: the one value, every other byte as it was. */
    snprintf(path, sizeof(path), "%s/case.yaml", dir);
    char *text = NULL;
    size_t len = 0;
    if (bd_read_file(&text, &len, path, CASSETTE_READ_MAX, BD_E_YAML_TOO_LARGE, err) != 0)
        return -1;
    char *edited = bd_yaml_set_top_scalar(text, "cassette_digest", t->new_digest, path, err);
    free(text);
    if (!edited)
        return -1;
    int rc = bd_write_file_atomic_in(path, tc->cases_dir, edited, strlen(edited), 0644, err);
    free(edited);
    return rc;
}

int bd_record_write_pin(bd_pin_report *rep, const bd_bench *bench, const bd_task_class *tc,
                        const char *case_id, const bd_record_take *t, bd_prov_ctx *prov,
                        bd_err *err)
{
    memset(rep, 0, sizeof(*rep));
    if (bd_record_write(tc, case_id, t, err) != 0)
        return -1;
    const char *ids[1] = {case_id};
    return bd_repin(rep, bench, tc, ids, 1, prov, err);
}

char *bd_record_pretty(const char *text, size_t len)
{
    if (!text)
        return strdup("");
    cJSON *j = cJSON_ParseWithLength(text, len);
    char *p = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!p)
        return strndup(text, len);
    /* cJSON indents with tabs (two spaces each here) and puts one after each colon (one
     * space): no terminal then shows a control. */
    size_t tabs = 0, n = strlen(p);
    for (size_t i = 0; i < n; i++)
        tabs += p[i] == '\t';
    char *o = malloc(n + tabs + 1);
    for (size_t i = 0, k = 0; o && i <= n; i++) {
        if (p[i] == '\t') {
            o[k++] = ' ';
            if (i == 0 || p[i - 1] != ':')
                o[k++] = ' ';
        } else {
            o[k++] = p[i];
        }
    }
    free(p);
    return o;
}

int bd_record_diff(bd_diff_line **out, size_t *n, char **old_pretty, char **new_pretty,
                   const bd_record_take *t, bd_err *err)
{
    *out = NULL;
    *n = 0;
    *old_pretty = bd_record_pretty(t->old_text, t->old_len);
    *new_pretty = bd_record_pretty(t->new_text, t->new_len);
    if (!*old_pretty || !*new_pretty) {
        free(*old_pretty);
        free(*new_pretty);
        *old_pretty = *new_pretty = NULL;
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    return bd_line_diff(out, n, *old_pretty, strlen(*old_pretty), *new_pretty, strlen(*new_pretty),
                        err);
}

void bd_record_next_steps(bd_err *out, const bd_task_class *tc, const char *case_id)
{
    bd_err_set(out, BD_OK, NULL, 0, 0, "%s changed and is pinned again: two people sign it (",
               case_id);
    bd_err_advise(out, BD_ACT_SIGN_TWO, "%s/cases/%s", tc->name, case_id);
    bd_err_append(out, ")");
}
