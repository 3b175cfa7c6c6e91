#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gitops.h"

static const char stage_help[] =
    "usage: benchdesk stage [--unstage] PATH... [--json]\n\n"
    "Stage every change at or below each PATH for the next `benchdesk commit`: new and\n"
    "modified files are added, deleted ones removed from the index. Only paths inside\n"
    "the bench's bench/ and audit/ folders are accepted; nothing is staged unless every\n"
    "PATH is. Relative PATHs are taken from the working directory, or from DIR when\n"
    "`-C DIR` is given (as with git -C).\n\n"
    "  --unstage   take PATHs out of the index again (back to the last commit)\n\n"
    "Exit status: 0 done; 2 a path outside bench/ and audit/, or unknown; 4 git failure.\n";

int cmd_stage(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(stage_help);
    bool unstage = false;
    const char **paths = calloc((size_t)argc, sizeof(*paths));
    char **owned = calloc((size_t)argc, sizeof(*owned));
    size_t n = 0;
    int status = 0;
    bd_bench *bench = NULL;
    bd_git *g = NULL;
    char *cwd = NULL;
    bd_err err = BD_ERR_INIT;
    if (!paths || !owned) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        status = cli_fail(cli, &err);
        goto out;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--unstage") == 0) {
            unstage = true;
        } else if (strcmp(argv[i], "--") == 0) {
            for (i++; i < argc; i++)
                paths[n++] = argv[i];
        } else if (argv[i][0] == '-') {
            status = cli_usage(cli, "stage", "unknown option '%s'", argv[i]);
            goto out;
        } else {
            paths[n++] = argv[i];
        }
    }
    if (n == 0) {
        status = cli_usage(cli, "stage", "stage needs at least one PATH");
        goto out;
    }
    if ((status = cli_open_bench(cli, &bench)))
        goto out;
    /* Without -C, relative paths are the shell's: make them absolute from here. */
    if (!cli->dir) {
        if (!(cwd = getcwd(NULL, 0))) {
            bd_err_set(&err, BD_E_IO, NULL, 0, 0, "cannot read the working directory");
            status = cli_fail(cli, &err);
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            if (paths[i][0] != '/') {
                if (!(owned[i] = bd_path_join(cwd, paths[i]))) {
                    bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
                    status = cli_fail(cli, &err);
                    goto out;
                }
                paths[i] = owned[i];
            }
    }
    size_t changed = 0;
    if (bd_git_open(&g, bench->root, &err) < 0 ||
        (unstage ? bd_git_unstage(g, paths, n, &err) : bd_git_stage(g, paths, n, &changed, &err)) <
            0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "action", unstage ? "unstaged" : "staged");
        if (!unstage)
            cJSON_AddNumberToObject(o, "changed", (double)changed);
        cli_print_json(o);
        cJSON_Delete(o);
    } else if (unstage) {
        printf("unstaged %zu path%s\n", n, n == 1 ? "" : "s");
    } else {
        printf("staged %zu change%s%s\n", changed, changed == 1 ? "" : "s",
               changed ? "; commit with `benchdesk commit -m MSG`" : " (nothing new to stage)");
    }
out:
    for (size_t i = 0; owned && i < (size_t)argc; i++)
        free(owned[i]);
    free(owned);
    free(paths);
    free(cwd);
    bd_git_close(g);
    bd_bench_free(bench);
    return status;
}
