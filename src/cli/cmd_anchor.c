/* benchdesk anchor publish [--key FPR] | anchor verify — signed chain-head anchors
 * (docs/history.md; src/history/anchor.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anchor.h"
#include "cli.h"
#include "config.h"

static const char anchor_help[] =
    "usage: benchdesk anchor publish [--key FPR] [--json]\n"
    "       benchdesk anchor verify [--json]\n\n"
    "publish  verifies the history and the existing anchors, then signs\n"
    "         \"benchdesk-anchor-v1\\ndate: D\\ncount: N\\nchain_head: H\\n\" (today's UTC date,\n"
    "         the number of records and the last record's hash) with your GnuPG key (the\n"
    "         key: --key FPR, else signing_key in .benchdesk/config.yaml, else GnuPG's\n"
    "         default key; it must be in bench/trusted-signers.yaml and its\n"
    "         public key in bench/keys/) and writes audit/anchors/bench/<date>.json.\n"
    "         Stage and commit it: the anchor's worth is in the repository's history.\n"
    "verify   checks every anchor against bench/keys/ and bench/trusted-signers.yaml only\n"
    "         (a private temporary GnuPG home, never your keyring), and that the local\n"
    "         history verifies and its record `count` has hash `chain_head`. Truncating\n"
    "         the history below an anchor, or rewriting it, is anchor.mismatch (exit 1).\n";

static cJSON *check_json(const bd_anchor_check *ck)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", ck->path);
    if (ck->anchor.signature) {
        cJSON_AddStringToObject(o, "date", ck->anchor.date);
        cJSON_AddNumberToObject(o, "count", (double)ck->anchor.count);
        cJSON_AddStringToObject(o, "chain_head", ck->anchor.chain_head);
        cJSON_AddStringToObject(o, "signer", ck->anchor.signer);
        if (ck->identity[0])
            cJSON_AddStringToObject(o, "identity", ck->identity);
    }
    cJSON_AddBoolToObject(o, "ok", ck->err.code == BD_OK);
    if (ck->err.code != BD_OK) {
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "code", bd_code_str(ck->err.code));
        cJSON_AddStringToObject(e, "message", cli_err_text(&ck->err));
    }
    return o;
}

static int anchor_verify(bd_cli *cli, const bd_bench *bench)
{
    bd_err err = BD_ERR_INIT;
    bd_anchor_report rep;
    int rc = bd_anchor_verify(&rep, bench->root, &err);
    int status = 0;
    if (rc < 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    const bd_err *first = bd_anchor_report_first_failure(&rep);
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "ok", rc == 0);
        cJSON *ch = cJSON_AddObjectToObject(o, "chain");
        cJSON_AddNumberToObject(ch, "count", (double)rep.chain_count);
        cJSON_AddStringToObject(ch, "head", rep.chain_head);
        cJSON *arr = cJSON_AddArrayToObject(o, "anchors");
        for (size_t i = 0; i < rep.n; i++)
            cJSON_AddItemToArray(arr, check_json(&rep.checks[i]));
        if (first) {
            cJSON *e = cJSON_AddObjectToObject(o, "error");
            cJSON_AddStringToObject(e, "code", bd_code_str(first->code));
            cJSON_AddStringToObject(e, "message", cli_err_text(first));
        }
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        for (size_t i = 0; i < rep.n; i++) {
            const bd_anchor_check *ck = &rep.checks[i];
            if (ck->err.code == BD_OK)
                printf("anchor %s: %llu records, signed by %s%s%s%s: ok\n", ck->anchor.date,
                       (unsigned long long)ck->anchor.count, ck->anchor.signer,
                       ck->identity[0] ? " (" : "", ck->identity, ck->identity[0] ? ")" : "");
        }
        printf("history: %llu record%s, head %s; %zu anchor%s, %zu failed\n",
               (unsigned long long)rep.chain_count, rep.chain_count == 1 ? "" : "s", rep.chain_head,
               rep.n, rep.n == 1 ? "" : "s", rep.n_failed);
        fflush(stdout);
        for (size_t i = 0; i < rep.n; i++)
            if (rep.checks[i].err.code != BD_OK)
                cli_err_line(rep.checks[i].err.code, cli_err_text(&rep.checks[i].err));
    }
    status = first ? bd_code_exit(first->code) : 0;
out:
    bd_anchor_report_release(&rep);
    return status;
}

static int anchor_publish(bd_cli *cli, const bd_bench *bench, const char *key)
{
    bd_err err = BD_ERR_INIT;
    bd_anchor a;
    bd_config cfg;
    char *path = NULL;
    bd_anchor_publish_opts o = BD_ANCHOR_PUBLISH_OPTS_INIT;
    if (bd_config_load(&cfg, bench->root, &err) != 0) {
        bd_config_release(&cfg);
        return cli_fail(cli, &err);
    }
    /* --key, else .benchdesk/config.yaml's signing_key, else GnuPG's default key */
    o.sign.key = key ? key : cfg.signing_key;
    int rc = bd_anchor_publish(&a, &path, bench->root, &o, &err);
    bd_config_release(&cfg);
    if (rc != 0)
        return cli_fail(cli, &err);
    if (cli->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "file", path);
        cJSON_AddStringToObject(j, "date", a.date);
        cJSON_AddNumberToObject(j, "count", (double)a.count);
        cJSON_AddStringToObject(j, "chain_head", a.chain_head);
        cJSON_AddStringToObject(j, "signer", a.signer);
        cli_print_json(j);
        cJSON_Delete(j);
    } else {
        printf("anchor %s: %llu records, head %s, signed by %s\nwrote %s\n"
               "stage and commit it: benchdesk stage %s && benchdesk commit -m 'anchor %s'\n",
               a.date, (unsigned long long)a.count, a.chain_head, a.signer, path, BD_ANCHOR_DIR,
               a.date);
    }
    bd_anchor_release(&a);
    free(path);
    return 0;
}

int cmd_anchor(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(anchor_help);
    if (argc < 2)
        return cli_usage(cli, "anchor", "anchor needs a subcommand: publish or verify");
    const char *sub = argv[1], *key = NULL;
    if (strcmp(sub, "publish") == 0) {
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--key") == 0 && i + 1 < argc && !key)
                key = argv[++i];
            else
                return cli_usage(cli, "anchor", "unknown or incomplete option '%s'", argv[i]);
        }
    } else if (strcmp(sub, "verify") == 0) {
        if (argc != 2)
            return cli_usage(cli, "anchor", "anchor verify takes no arguments");
    } else {
        return cli_usage(cli, "anchor", "unknown anchor subcommand '%s'", sub);
    }
    bd_err err = BD_ERR_INIT;
    if (bd_provenance_init(&err) != 0)
        return cli_fail(cli, &err);
    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status != 0)
        return status;
    status =
        strcmp(sub, "verify") == 0 ? anchor_verify(cli, bench) : anchor_publish(cli, bench, key);
    bd_bench_free(bench);
    return status;
}
