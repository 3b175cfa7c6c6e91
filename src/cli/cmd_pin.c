#include <stdio.h>

#include "cli.h"
#include "pin.h"

static const char pin_help[] =
    "usage: benchdesk pin TASK_CLASS [CASE_ID...] [--json]\n\n"
    "The curator's deliberate act: recompute digests and rewrite the pins.\n"
    "Without CASE_IDs: the rubric pin and every case pin, and pins naming no case are\n"
    "dropped. With CASE_IDs: only those cases. Each pinned case's case.yaml gets its\n"
    "case_digest (and cassette_digest) updated in place; the rest of the file is kept\n"
    "byte for byte. Nothing is written unless every case could be digested.\n"
    "Review the change with `git diff` before committing it.\n";

int cmd_pin(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(pin_help);
    if (argc < 2)
        return cli_usage(cli, "pin", "pin needs a TASK_CLASS");
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-')
            return cli_usage(cli, "pin", "unknown option '%s'", argv[i]);

    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = NULL;
    bd_pin_report rep = {0};
    if (bd_task_class_load(&tc, bench, argv[1], &err) != 0 ||
        bd_pin_task_class(&rep, tc, (const char *const *)argv + 2, (size_t)(argc - 2), &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "task_class", tc->name);
        cJSON_AddNumberToObject(o, "pinned", (double)rep.n_pinned);
        cJSON *arr = cJSON_AddArrayToObject(o, "changes");
        for (size_t i = 0; i < rep.n_changes; i++) {
            cJSON *c = cJSON_CreateObject();
            if (rep.changes[i].case_id[0])
                cJSON_AddStringToObject(c, "case_id", rep.changes[i].case_id);
            else
                cJSON_AddStringToObject(c, "rubric", "rubric.py");
            cJSON_AddStringToObject(c, "before", rep.changes[i].before);
            cJSON_AddStringToObject(c, "after", rep.changes[i].after);
            cJSON_AddItemToArray(arr, c);
        }
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        for (size_t i = 0; i < rep.n_changes; i++) {
            const bd_pin_change *c = &rep.changes[i];
            const char *what = c->case_id[0] ? c->case_id : "rubric.py";
            if (!c->after[0])
                printf("dropped  %-44s (no such case)\n", what);
            else if (!c->before[0])
                printf("pinned   %-44s %s\n", what, c->after);
            else
                printf("re-pinned %-43s %s (was %s)\n", what, c->after, c->before);
        }
        printf("%s: %zu case%s pinned, %zu pin%s changed\n", tc->name, rep.n_pinned,
               rep.n_pinned == 1 ? "" : "s", rep.n_changes, rep.n_changes == 1 ? "" : "s");
    }
out:
    bd_pin_report_release(&rep);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
