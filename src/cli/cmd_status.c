#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gitops.h"

static const char status_help[] =
    "usage: benchdesk status [--json]\n\n"
    "Git status of the bench's bench/ and audit/ folders (new cases, edited case.yaml,\n"
    "changed pins, anchors): one line per path, `XY path` relative to the bench root,\n"
    "X the staged change and Y the unstaged one (A added, M modified, D deleted,\n"
    "T type changed), `??` untracked, `UU` conflicted. Changes to who may sign\n"
    "(bench/trusted-signers.yaml, bench/keys/) are listed first and marked `!! changes who\n"
    "may sign`: review them as carefully as code. Stage with `benchdesk stage`.\n\n"
    "Exit status: 0 listed; 2 not a git work tree; 4 git failure.\n";

static void add_list(cJSON *arr, const bd_git_entry *e, char kind)
{
    cJSON *o = cJSON_CreateObject();
    char k[2] = {kind, '\0'};
    cJSON_AddStringToObject(o, "path", e->path);
    cJSON_AddBoolToObject(o, "changes_who_may_sign", e->trust);
    if (kind)
        cJSON_AddStringToObject(o, "change", k);
    cJSON_AddItemToArray(arr, o);
}

int cmd_status(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(status_help);
    for (int i = 1; i < argc; i++)
        return cli_usage(cli, "status", "unexpected argument '%s'", argv[i]);

    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_git *g = NULL;
    bd_git_status st;
    if (bd_git_open(&g, bench->root, &err) < 0 || bd_git_status_get(&st, g, &err) < 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "branch", st.branch);
        cJSON_AddBoolToObject(o, "unborn", st.unborn);
        cJSON *staged = cJSON_AddArrayToObject(o, "staged");
        cJSON *unstaged = cJSON_AddArrayToObject(o, "unstaged");
        cJSON *untracked = cJSON_AddArrayToObject(o, "untracked");
        cJSON *conflicted = cJSON_AddArrayToObject(o, "conflicted");
        for (size_t i = 0; i < st.n; i++) {
            const bd_git_entry *e = &st.entries[i];
            if (e->conflicted)
                add_list(conflicted, e, 0);
            else if (e->untracked)
                add_list(untracked, e, 0);
            if (e->staged && !e->conflicted)
                add_list(staged, e, e->staged);
            if (e->unstaged && !e->conflicted)
                add_list(unstaged, e, e->unstaged);
        }
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        if (st.branch[0])
            printf("## %s%s\n", st.branch, st.unborn ? " (no commits yet)" : "");
        else
            printf("## HEAD (detached)\n");
        for (size_t i = 0; i < st.n; i++) {
            const bd_git_entry *e = &st.entries[i];
            const char *flag = e->trust ? "   !! changes who may sign" : "";
            if (e->conflicted)
                printf("UU %s%s\n", e->path, flag);
            else if (e->untracked)
                printf("?? %s%s\n", e->path, flag);
            else
                printf("%c%c %s%s\n", e->staged ? e->staged : ' ', e->unstaged ? e->unstaged : ' ',
                       e->path, flag);
        }
        if (st.n == 0)
            printf("nothing changed under bench/ or audit/\n");
    }
    bd_git_status_release(&st);
out:
    bd_git_close(g);
    bd_bench_free(bench);
    return status;
}
