#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pin.h"

static const char case_help[] =
    "usage: benchdesk case new TASK_CLASS CASE_ID [--json]\n\n"
    "Scaffolds a draft case: cases/CASE_ID/ with case.yaml (title, disposition,\n"
    "difficulty, provenance with added_at = now, expected: {}), empty input/ and\n"
    "expected/ folders, and an empty cassette.json for cassette task classes.\n"
    "The case is left unpinned and unsigned: fill it in, then\n"
    "`benchdesk pin TASK_CLASS CASE_ID`. CASE_ID must match ^[a-z0-9][a-z0-9._-]{0,127}$.\n";

int cmd_case(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(case_help);
    if (argc < 2 || strcmp(argv[1], "new") != 0)
        return cli_usage(cli, "case", "the only case subcommand is `case new`");
    if (argc != 4)
        return cli_usage(cli, "case", "case new needs TASK_CLASS and CASE_ID");

    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = NULL;
    char *dir = NULL;
    if (bd_task_class_load(&tc, bench, argv[2], &err) != 0 ||
        bd_case_scaffold(&dir, tc, argv[3], &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "task_class", tc->name);
        cJSON_AddStringToObject(o, "case_id", argv[3]);
        cJSON_AddStringToObject(o, "dir", dir);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        printf("created draft case %s\n"
               "next: fill in case.yaml (title, disposition, difficulty, expected), add\n"
               "      input/ and expected/ files and the recorded cassette.json, then\n"
               "      benchdesk pin %s %s\n",
               dir, tc->name, argv[3]);
    }
out:
    free(dir);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
