#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "case_lint.h"
#include "pin.h"

static const char case_help[] =
    "usage: benchdesk case new TASK_CLASS CASE_ID [--json]\n"
    "       benchdesk case check TASK_CLASS [CASE_ID...] [--json]\n\n"
    "Scaffolds a draft case: cases/CASE_ID/ with case.yaml (title, disposition,\n"
    "difficulty, provenance with added_at = now, expected: {}), empty input/ and\n"
    "expected/ folders, and an empty cassette.json for cassette task classes.\n"
    "The case is left unpinned and unsigned: fill it in, then\n"
    "`benchdesk pin TASK_CLASS CASE_ID`. CASE_ID must match ^[a-z0-9][a-z0-9._-]{0,127}$.\n\n"
    "`case check` lints cases before they are pinned (every case without CASE_IDs):\n"
    "case.yaml by the schema, scaffold leftovers (expected: {}, an empty input/, a\n"
    "cassette.json of {}, the title still the id) and a cassette that does not fit the\n"
    "SUT kind. Each finding is one line; exit 1 when there is any, 0 when none.\n";

/* `case check TC [CASE...]`: every finding, one line each (or a JSON list). */
static int case_check(bd_cli *cli, const bd_bench *bench, int argc, char **argv)
{
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = NULL;
    bd_lint *l = NULL;
    size_t n = 0, cap = 0;
    int status = 0;
    if (bd_task_class_load(&tc, bench, argv[2], &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    const char *const *ids =
        argc > 3 ? (const char *const *)argv + 3 : (const char *const *)tc->case_ids;
    size_t n_ids = argc > 3 ? (size_t)(argc - 3) : tc->n_cases;
    for (size_t i = 0; i < n_ids; i++)
        if (bd_case_lint(&l, &n, &cap, tc, ids[i], &err) < 0) {
            status = cli_fail(cli, &err);
            goto out;
        }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "task_class", tc->name);
        cJSON_AddNumberToObject(o, "cases", (double)n_ids);
        cJSON *arr = cJSON_AddArrayToObject(o, "findings");
        for (size_t i = 0; i < n; i++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "case_id", l[i].case_id);
            cJSON_AddStringToObject(f, "code", bd_code_str(l[i].err.code));
            cJSON_AddBoolToObject(f, "scaffold", l[i].scaffold);
            cJSON_AddStringToObject(f, "message", cli_err_text(&l[i].err));
            cJSON_AddItemToArray(arr, f);
        }
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%s: %s: %s\n", cli_vis(l[i].case_id), bd_code_str(l[i].err.code),
                   cli_err_text(&l[i].err));
        printf("%s: %zu case%s checked, %zu finding%s\n", tc->name, n_ids, n_ids == 1 ? "" : "s", n,
               n == 1 ? "" : "s");
    }
    status = n ? 1 : 0;
out:
    free(l);
    bd_task_class_free(tc);
    return status;
}

int cmd_case(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(case_help);
    bool check = argc >= 2 && strcmp(argv[1], "check") == 0;
    if (argc < 2 || (strcmp(argv[1], "new") != 0 && !check))
        return cli_usage(cli, "case", "the case subcommands are `case new` and `case check`");
    if (check && argc < 3)
        return cli_usage(cli, "case", "case check needs a TASK_CLASS");
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-')
            return cli_usage(cli, "case", "unknown option '%s'", argv[i]);
    if (!check && argc != 4)
        return cli_usage(cli, "case", "case new needs TASK_CLASS and CASE_ID");

    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    if (check) {
        status = case_check(cli, bench, argc, argv);
        bd_bench_free(bench);
        return status;
    }
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
               "      benchdesk case check %s %s && benchdesk pin %s %s\n",
               dir, tc->name, argv[3], tc->name, argv[3]);
    }
out:
    free(dir);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
