#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "case_lint.h"
#include "repin.h"

static const char pin_help[] =
    "usage: benchdesk pin TASK_CLASS [CASE_ID...] [--json]\n\n"
    "The curator's deliberate act: recompute digests and rewrite the pins in\n"
    "cases/digests.yaml. Without CASE_IDs: the task-class pin (registration.yaml +\n"
    "rubric.py) and every case pin, and pins naming no case are dropped. With CASE_IDs:\n"
    "only those cases. A case whose cassette.json changed gets its cassette_digest updated\n"
    "in case.yaml first (the rest of the file is kept byte for byte). Nothing is written\n"
    "unless every case could be digested, and digests.yaml only when a pin changes.\n"
    "A new pin supersedes the signatures made over the old content: each is named, and\n"
    "the subject is a draft again (it blocks nothing but itself) until an author and a\n"
    "reviewer sign it again.\n"
    "Review the change with `git diff` before committing it.\n";

/* Whose signatures a change superseded, one line, and what to do. */
static void print_superseded(const bd_pin_change *c)
{
    if (!c->author_broken && !c->reviewer_broken)
        return;
    char who[600] = "";
    if (c->author_broken)
        snprintf(who, sizeof(who), "%s (author)", cli_vis(c->author_by));
    if (c->reviewer_broken)
        snprintf(who + strlen(who), sizeof(who) - strlen(who), "%s%s (reviewer)",
                 who[0] ? ", " : "", cli_vis(c->reviewer_by));
    printf("         superseded the signatures of %s: it is a draft until two people sign it "
           "again\n",
           who);
    if ((c->author_broken && c->author_legacy) || (c->reviewer_broken && c->reviewer_legacy))
        printf("         a signature that names no digest did not verify over the old pin: it "
               "shows as bad until it is signed again\n");
}

/* A warning per newly pinned case that still looks like an untouched scaffold. */
static void warn_scaffolds(const bd_cli *cli, const bd_task_class *tc, const bd_pin_report *rep)
{
    size_t n = 0;
    bd_lint *l = NULL;
    if (!cli->json && bd_case_lint_pinned(&l, &n, tc, rep, NULL) == 0) {
        for (size_t i = 0; i < n; i++) {
            size_t first = i;
            while (i + 1 < n && strcmp(l[i + 1].case_id, l[first].case_id) == 0)
                i++;
            char line[1400];
            snprintf(line, sizeof(line),
                     "%s looks like an untouched scaffold: %s%s (benchdesk case check %s %s)",
                     l[first].case_id, cli_err_text(&l[first].err), i > first ? ", and more" : "",
                     tc->name, l[first].case_id);
            cli_warn(line);
        }
    }
    free(l);
}

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
        bd_repin(&rep, bench, tc, (const char *const *)argv + 2, (size_t)(argc - 2), NULL, &err) !=
            0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    warn_scaffolds(cli, tc, &rep);
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
            cJSON *sup = cJSON_AddArrayToObject(c, "superseded");
            const char *roles[2] = {"author", "reviewer"};
            const bool br[2] = {ch->author_broken, ch->reviewer_broken};
            const bool lg[2] = {ch->author_legacy, ch->reviewer_legacy};
            const char *by[2] = {ch->author_by, ch->reviewer_by};
            for (int k = 0; k < 2; k++) {
                if (!br[k])
                    continue;
                cJSON_AddItemToArray(broken, cJSON_CreateString(roles[k]));
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "role", roles[k]);
                cJSON_AddStringToObject(e, "identity", by[k]);
                cJSON_AddBoolToObject(e, "verified", !lg[k]);
                cJSON_AddItemToArray(sup, e);
            }
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
            print_superseded(c);
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
