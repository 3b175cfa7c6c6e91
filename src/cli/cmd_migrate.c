#include <stdio.h>

#include "cli.h"
#include "migrate.h"

static const char migrate_help[] =
    "usage: benchdesk migrate [--json]\n\n"
    "Convert a bench in format v1 to format v2\n"
    "(docs/formats.md#converting-a-v1-bench-benchdesk-migrate): registration.yaml and\n"
    "case.yaml get schema_version 2, case.yaml's provenance block becomes `origin:` (its\n"
    "signature blocks and case_digest go; last_validated_at moves to provenance.yaml),\n"
    "and every task class is pinned anew (cases/digests.yaml in format v2). Comments and key\n"
    "order are kept. Every converted file is proven to load before anything is written.\n\n"
    "No v1 signature covered case.yaml, so none carries over: afterwards every task class\n"
    "and every case must be signed again, as author and as reviewer\n"
    "(`benchdesk sign DIR --role author|reviewer`). A bench already in v2 is left alone.\n";

int cmd_migrate(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(migrate_help);
    if (argc > 1)
        return cli_usage(cli, "migrate", "migrate takes no arguments (use -C DIR for the bench)");
    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_migrate_report rep;
    if (bd_migrate_bench(&rep, bench->root, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "task_classes", (double)rep.task_classes);
        cJSON_AddNumberToObject(o, "cases", (double)rep.cases);
        cJSON_AddNumberToObject(o, "already_v2", (double)rep.already_v2);
        cJSON_AddNumberToObject(o, "signatures_dropped", (double)rep.signatures_dropped);
        cli_print_json(o);
        cJSON_Delete(o);
    } else if (rep.task_classes == 0) {
        printf("the bench is already in format v2; nothing to do\n");
    } else {
        printf("converted %zu task class%s and %zu case%s to format v2 and pinned them anew\n",
               rep.task_classes, rep.task_classes == 1 ? "" : "es", rep.cases,
               rep.cases == 1 ? "" : "s");
        printf("%zu v1 signature%s no longer count: sign every task class and every case "
               "again, as author and as reviewer (benchdesk sign DIR --role author|reviewer)\n",
               rep.signatures_dropped, rep.signatures_dropped == 1 ? "" : "s");
    }
out:
    bd_bench_free(bench);
    return status;
}
