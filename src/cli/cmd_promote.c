/* benchdesk promote TASK_CLASS TIER — exists only to refuse
 * (docs/history.md#promotion-recommend-never-apply): a tier moves only when a human edits
 * current_tier in a reviewed commit. Every refusal is appended to the history as an audit record,
 * so an attempt is itself evidence. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "hash.h"
#include "history.h"

static const char promote_help[] =
    "usage: benchdesk promote TASK_CLASS TIER [--json]\n\n"
    "Always refuses, with exit status 3 and promotion.requires_human: benchdesk only\n"
    "recommends (`benchdesk recommend TASK_CLASS`). A task class's tier moves when a human\n"
    "edits current_tier in bench/TASK_CLASS/registration.yaml and the change is reviewed\n"
    "and committed. The refused attempt is recorded in the history as an audit record\n"
    "(event promotion.refused).\n";

int cmd_promote(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(promote_help);
    if (argc != 3)
        return cli_usage(cli, "promote", "promote takes TASK_CLASS and TIER");
    const char *name = argv[1], *tier = argv[2];
    if (strcmp(tier, "bronze") != 0 && strcmp(tier, "silver") != 0 && strcmp(tier, "gold") != 0)
        return cli_usage(cli, "promote", "TIER is bronze, silver or gold, not '%s'", tier);
    bd_err err = BD_ERR_INIT;
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    bd_history *h = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status != 0)
        return status;
    if (bd_task_class_load(&tc, bench, name, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }

    char detail[512];
    snprintf(detail, sizeof(detail),
             "promote %s from %s to %s refused: tiers move only by a reviewed human edit of "
             "current_tier",
             name, bd_tier_str(tc->reg->current_tier), tier);
    /* Who tried: the configured signing key, when there is a well-formed one. */
    bd_config cfg;
    bd_err cfg_err = BD_ERR_INIT;
    const char *who = NULL;
    if (bd_config_load(&cfg, bench->root, &cfg_err) == 0 && bd_fpr_valid(cfg.signing_key))
        who = cfg.signing_key;
    bd_history_audit_fields a = {.event = "promotion.refused",
                                 .task_class = name,
                                 .detail = detail,
                                 .operator_fingerprint = who};
    uint64_t seq = 0;
    char hash[BD_HASH_BUF] = "";
    bd_err rec_err = BD_ERR_INIT;
    bool recorded = bd_history_open(&h, bench->root, BD_HISTORY_CREATE, &rec_err) == 0 &&
                    bd_history_append_audit(h, &a, &seq, hash, &rec_err) == 0;
    bd_config_release(&cfg);
    /* The append removed a torn final line a crash had left: say so (docs/history.md). */
    const char *repair = h ? bd_history_repair_note(h) : NULL;
    if (repair)
        fprintf(stderr, "benchdesk: warning: %s\n", cli_vis(repair));

    bd_err_set(&err, BD_E_PROMOTION_REQUIRES_HUMAN, NULL, 0, 0,
               "benchdesk never promotes: to move %s from %s to %s, edit current_tier in "
               "bench/%s/registration.yaml and have the change reviewed and committed (see "
               "`benchdesk recommend %s`)",
               name, bd_tier_str(tc->reg->current_tier), tier, name, name);
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "code", bd_code_str(err.code));
        cJSON_AddStringToObject(e, "message", cli_err_text(&err));
        cJSON *r = cJSON_AddObjectToObject(o, "audit_record");
        cJSON_AddBoolToObject(r, "recorded", recorded);
        if (recorded) {
            cJSON_AddNumberToObject(r, "seq", (double)seq);
            cJSON_AddStringToObject(r, "record_hash", hash);
        } else {
            cJSON_AddStringToObject(r, "code", bd_code_str(rec_err.code));
            cJSON_AddStringToObject(r, "message", cli_err_text(&rec_err));
        }
        if (repair)
            cJSON_AddStringToObject(o, "history_repaired", repair);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        cli_err_line(err.code, cli_err_text(&err));
        if (recorded)
            fprintf(stderr, "benchdesk: the refusal is recorded as history record %llu\n",
                    (unsigned long long)seq);
        else
            fprintf(stderr, "benchdesk: %s: the refusal could not be recorded in the history: %s\n",
                    bd_code_str(rec_err.code), cli_vis(cli_err_text(&rec_err)));
    }
    /* Refused by policy (exit 3); but an attempt that could not be put on record is an
     * environment failure first (exit 4, the history's error): the evidence was lost. */
    status = recorded ? bd_code_exit(BD_E_PROMOTION_REQUIRES_HUMAN) : bd_code_exit(rec_err.code);
out:
    bd_history_free(h);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
