/*
 * benchdesk signer add KEY --roles author[,reviewer] [--json]
 * (docs/provenance.md#adding-a-signer): the core (signer_add.h) exports the public key
 * into bench/keys/ and adds the trusted-signers.yaml entry; this file parses and prints.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "provenance.h"
#include "signer_add.h"

static const char help[] =
    "usage: benchdesk signer add KEY --roles author|reviewer|author,reviewer|operator [--json]\n\n"
    "Propose a new signer for this bench: KEY (a fingerprint, key id or e-mail naming one\n"
    "usable key of your GnuPG keyring) has its public key exported to\n"
    "bench/keys/<name>.asc and an entry added to bench/trusted-signers.yaml with the\n"
    "roles given. An operator key (it signs runs) holds no other role.\n"
    "Nothing else is trusted until that change is reviewed and committed:\n"
    "it decides who may sign, so `benchdesk status` flags both files.\n"
    "Never a secret key is written. Exit: 0 added, 2 bad usage, no such key or already\n"
    "listed, 4 GnuPG or I/O.\n";

int cmd_signer(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(help);
    if (argc < 2 || strcmp(argv[1], "add") != 0)
        return cli_usage(cli, "signer", "the only signer subcommand is `signer add`");
    const char *key = NULL, *roles_s = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--roles") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "signer", "--roles needs a value");
            roles_s = argv[++i];
        } else if (argv[i][0] == '-') {
            return cli_usage(cli, "signer", "unknown option '%s'", argv[i]);
        } else if (key) {
            return cli_usage(cli, "signer", "one KEY at a time ('%s' is extra)", argv[i]);
        } else {
            key = argv[i];
        }
    }
    if (!key)
        return cli_usage(cli, "signer", "signer add needs a KEY (gpg --list-keys shows yours)");
    int roles = 0;
    bd_err err = BD_ERR_INIT;
    if (bd_signer_roles_parse(&roles, roles_s, &err) < 0)
        return cli_usage(cli, "signer", "%s", err.msg);
    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_signer_added a;
    if (bd_provenance_init(&err) < 0 ||
        bd_signer_add(&a, bench->bench_dir, key, roles, NULL, &err) < 0) {
        status = cli_fail(cli, &err);
        bd_bench_free(bench);
        return status;
    }
    const char *rs = bd_signer_roles_str(roles);
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "fingerprint", a.fingerprint);
        cJSON_AddStringToObject(o, "identity", a.identity);
        cJSON_AddStringToObject(o, "key_file", a.key_path);
        cJSON_AddBoolToObject(o, "key_file_written", a.key_file_new);
        cJSON *r = cJSON_AddArrayToObject(o, "roles");
        if (roles & BD_ROLE_AUTHOR)
            cJSON_AddItemToArray(r, cJSON_CreateString("author"));
        if (roles & BD_ROLE_REVIEWER)
            cJSON_AddItemToArray(r, cJSON_CreateString("reviewer"));
        if (roles & BD_ROLE_OPERATOR)
            cJSON_AddItemToArray(r, cJSON_CreateString("operator"));
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        printf("added %s (%s) as %s\n", a.fingerprint, cli_vis(a.identity), rs);
        printf("  public key %s%s\n", cli_vis(a.key_path),
               a.key_file_new ? "" : " (already there)");
        printf("  entry in bench/trusted-signers.yaml\n");
        printf("this changes who may sign: stage both files (benchdesk stage bench/keys "
               "bench/trusted-signers.yaml) and have the change reviewed before it counts\n");
    }
    bd_bench_free(bench);
    return 0;
}
