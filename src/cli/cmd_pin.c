#include <stdio.h>

#include "cli.h"
#include "pin.h"

static const char pin_help[] =
    "usage: benchdesk pin TASK_CLASS [CASE_ID...] [--json]\n\n"
    "The curator's deliberate act: recompute digests and rewrite the pins in\n"
    "cases/digests.yaml. Without CASE_IDs: the task-class pin (registration.yaml +\n"
    "rubric.py) and every case pin, and pins naming no case are dropped. With CASE_IDs:\n"
    "only those cases. A case whose cassette.json changed gets its cassette_digest updated\n"
    "in case.yaml first (the rest of the file is kept byte for byte). Nothing is written\n"
    "unless every case could be digested, and digests.yaml only when a pin changes.\n"
    "Every signature a new pin breaks is named: the subject must then be signed again,\n"
    "by an author and a reviewer.\n"
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
    /* Named cases: the task class is not listed, so pinning one case of 100,000 costs
     * that case and the pin file, not a walk of cases/. */
    int (*load)(bd_task_class **, const bd_bench *, const char *, bd_err *) =
        argc > 2 ? bd_task_class_load_unlisted : bd_task_class_load;
    if (load(&tc, bench, argv[1], &err) != 0 ||
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
            const bd_pin_change *ch = &rep.changes[i];
            cJSON_AddStringToObject(c, "subject", ch->case_id[0] ? "case" : "task-class");
            if (ch->case_id[0])
                cJSON_AddStringToObject(c, "case_id", ch->case_id);
            cJSON_AddStringToObject(c, "before", ch->before);
            cJSON_AddStringToObject(c, "after", ch->after);
            cJSON *broken = cJSON_AddArrayToObject(c, "signatures_broken");
            if (ch->author_broken)
                cJSON_AddItemToArray(broken, cJSON_CreateString("author"));
            if (ch->reviewer_broken)
                cJSON_AddItemToArray(broken, cJSON_CreateString("reviewer"));
            cJSON_AddItemToArray(arr, c);
        }
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        for (size_t i = 0; i < rep.n_changes; i++) {
            const bd_pin_change *c = &rep.changes[i];
            const char *what = c->case_id[0] ? c->case_id : "(task class)";
            if (!c->after[0])
                printf("dropped  %-44s (no such case)\n", what);
            else if (!c->before[0])
                printf("pinned   %-44s %s\n", what, c->after);
            else
                printf("re-pinned %-43s %s (was %s)\n", what, c->after, c->before);
            int broken = (int)c->author_broken + (int)c->reviewer_broken;
            if (broken)
                printf("         %d signature%s no longer hold%s: sign it again %s\n", broken,
                       broken == 1 ? "" : "s", broken == 1 ? "s" : "",
                       c->author_broken && c->reviewer_broken ? "as author, then as reviewer"
                       : c->author_broken                     ? "as author"
                                                              : "as reviewer");
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
