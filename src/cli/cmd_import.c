/* benchdesk history import — merge shard bundles into the local chain (docs/scale.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "import.h"
#include "runsign.h"

static const char import_help[] =
    "usage: benchdesk history import BUNDLE_DIR... [--partial] [--json]\n\n"
    "Merge the shard bundles of one run (written by `benchdesk run --shard K/N --out DIR`)\n"
    "into .benchdesk/history. Before anything is appended, each bundle's records chain and\n"
    "manifest are verified, its task-class digest and every case digest must equal the\n"
    "local pins (bundle.task_class_mismatch, bundle.pin_mismatch), each shard's cases must\n"
    "be the ones its K/N selects, and all N shards must be given, each once\n"
    "(bundle.missing_shard, bundle.duplicate_shard). The records are then appended in a\n"
    "fixed order (shard 0..N-1, then the bundle's seq), each with its origin, so the chain\n"
    "does not depend on the order of the arguments, and the run summary is written to\n"
    ".benchdesk/runs/<run-id>.json. Importing the same run again, or some of its shards,\n"
    "changes nothing and says \"already imported\"; shards already imported need not be\n"
    "given again. Shards are numbered as in --shard K/N, from 0 (\"shard 1 of 3\" is K=1).\n"
    "Cases of today's bench that a full run did not score (added since it ran) are listed.\n\n"
    "  --partial  accept a subset of the shards and name the missing ones\n";

/* The result of an import as one JSON object on stdout (--json). */
static void print_import_json(const bd_import_result *res)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "run_id", res->run_id);
    cJSON_AddStringToObject(j, "task_class", res->task_class);
    cJSON_AddNumberToObject(j, "shards", res->shards);
    cJSON_AddNumberToObject(j, "bundles", (double)res->bundles);
    cJSON *m = cJSON_AddArrayToObject(j, "missing_shards");
    for (size_t i = 0; m && i < res->n_missing; i++)
        cJSON_AddItemToArray(m, cJSON_CreateNumber(res->missing[i]));
    cJSON_AddBoolToObject(j, "complete", res->complete);
    cJSON *u = cJSON_AddArrayToObject(j, "uncovered_cases");
    for (size_t i = 0; u && i < res->n_uncovered; i++)
        cJSON_AddItemToArray(u, cJSON_CreateString(res->uncovered[i]));
    cJSON_AddNumberToObject(j, "appended", (double)res->appended);
    cJSON_AddNumberToObject(j, "already", (double)res->already);
    if (res->history_repaired[0])
        cJSON_AddStringToObject(j, "history_repaired", res->history_repaired);
    cJSON_AddStringToObject(j, "chain_head", res->chain_head);
    if (res->has_summary) {
        cJSON_AddItemToObject(j, "summary", bd_run_summary_json(&res->summary));
        cJSON_AddStringToObject(j, "summary_path", res->summary_path);
    } else {
        cJSON_AddNullToObject(j, "summary");
    }
    cli_print_json(j);
    cJSON_Delete(j);
}

/* The result of an import for a person: what was appended (or why nothing was), the
 * local cases the run did not score, and a warning on stderr when shards are missing. */
static void print_import(const bd_import_result *res)
{
    char missing[256] = "";
    if (res->n_missing)
        bd_import_shard_words(missing, sizeof(missing), res->missing, res->n_missing, res->shards);
    if (res->appended == 0) {
        if (res->already)
            printf("run %s is already imported (the %llu record%s of the %zu bundle%s given "
                   "%s in the history); nothing changed\n",
                   res->run_id, (unsigned long long)res->already, res->already == 1 ? "" : "s",
                   res->bundles, res->bundles == 1 ? "" : "s", res->already == 1 ? "is" : "are");
        else
            printf("run %s: the %zu bundle%s given %s no records (%s selected no case); "
                   "nothing changed\n",
                   res->run_id, res->bundles, res->bundles == 1 ? "" : "s",
                   res->bundles == 1 ? "holds" : "hold",
                   res->bundles == 1 ? "its shard" : "their shards");
    } else {
        const bd_run_summary *s = &res->summary;
        printf("imported run %s  %s  %zu of %u shard%s, %llu record%s appended%s%s\n", res->run_id,
               res->task_class, res->bundles, res->shards, res->shards == 1 ? "" : "s",
               (unsigned long long)res->appended, res->appended == 1 ? "" : "s",
               res->already ? " (the rest were already in)" : "",
               res->complete && res->bundles < res->shards
                   ? "; the run is now complete in the history"
                   : "");
        printf("  %-14s %zu of %zu\n", "cases", s->cases, s->cases_selected);
        printf("  %-14s %zu\n  %-14s %zu\n", "passed", s->passed, "failed", s->failed);
        if (s->has_ci)
            printf("  %-14s %.3f  (95%% BCa interval %.3f .. %.3f)\n", "mean score", s->mean_score,
                   s->ci_lo, s->ci_hi);
        else if (s->has_mean)
            printf("  %-14s %.3f\n", "mean score", s->mean_score);
        printf("  %-14s %s\n  %-14s %s\n", "chain head", res->chain_head, "summary",
               res->summary_path);
    }
    if (res->n_uncovered) {
        /* The run is full for the bench it ran on, not for today's (docs/scale.md). */
        printf("  %-14s %zu local case%s the run did not score (added since it ran?):",
               "not covered", res->n_uncovered, res->n_uncovered == 1 ? "" : "s");
        for (size_t i = 0; i < res->n_uncovered && i < 20; i++)
            printf(" %s", cli_vis(res->uncovered[i]));
        if (res->n_uncovered > 20)
            printf(" and %zu more (--json lists them all)", res->n_uncovered - 20);
        printf("\n");
    }
    if (res->n_missing)
        fprintf(stderr,
                "benchdesk: warning: run %s is partial: %s not imported yet; import %s when "
                "%s done\n",
                res->run_id, missing, res->n_missing == 1 ? "its bundle" : "their bundles",
                res->n_missing == 1 ? "it is" : "they are");
}

int cmd_history_import(bd_cli *cli, int argc, char **argv)
{
    /* argv[0] is "import". */
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(import_help);
    const char **dirs = calloc((size_t)argc + 1, sizeof(char *));
    size_t n = 0;
    bd_import_opts o = {0};
    int status = 0;
    bd_bench *bench = NULL;
    bd_import_result res;
    memset(&res, 0, sizeof(res));
    bd_err err = BD_ERR_INIT;
    if (!dirs) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        return cli_fail(cli, &err);
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--partial") == 0)
            o.partial = true;
        else if (argv[i][0] == '-') {
            free(dirs);
            return cli_usage(cli, "history", "unknown option '%s' for history import", argv[i]);
        } else
            dirs[n++] = argv[i];
    }
    if (n == 0) {
        free(dirs);
        return cli_usage(cli, "history", "history import needs the bundle directories");
    }
    if ((status = cli_open_bench(cli, &bench)) != 0)
        goto out;
    bd_sign_key op;
    bool signs = false;
    if (bd_run_operator_for_import(&op, &signs, bench->root, NULL, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    o.operator_key = signs ? &op : NULL;
    int rc = bd_import_run(&res, bench, dirs, n, &o, &err);
    /* The first append removed a torn final line a crash had left: say so
     * (docs/history.md), whether or not the import went on to succeed. */
    if (res.history_repaired[0])
        fprintf(stderr, "benchdesk: warning: %s\n", cli_vis(res.history_repaired));
    if (rc != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json)
        print_import_json(&res);
    else
        print_import(&res);
out:
    bd_import_result_release(&res);
    bd_bench_free(bench);
    free(dirs);
    return status;
}
