#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_fail(const bd_cli *cli, const bd_err *err)
{
    if (cli && cli->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(root, "error");
        cJSON_AddStringToObject(e, "code", bd_code_str(err->code));
        cJSON_AddStringToObject(e, "message", err->msg);
        if (err->file[0])
            cJSON_AddStringToObject(e, "file", err->file);
        if (err->line > 0)
            cJSON_AddNumberToObject(e, "line", err->line);
        if (err->col > 0)
            cJSON_AddNumberToObject(e, "column", err->col);
        cli_print_json(root);
        cJSON_Delete(root);
    } else {
        fflush(stdout);
        fprintf(stderr, "benchdesk: %s: %s\n", bd_code_str(err->code), err->msg);
    }
    int status = bd_code_exit(err->code);
    return status ? status : 4;
}

int cli_usage(const bd_cli *cli, const char *cmd, const char *fmt, ...)
{
    bd_err err = BD_ERR_INIT;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    bd_err_set(&err, BD_E_USAGE, NULL, 0, 0, "%s; see `benchdesk %s --help`", msg, cmd ? cmd : "");
    if (!cmd)
        bd_err_set(&err, BD_E_USAGE, NULL, 0, 0, "%s; see `benchdesk --help`", msg);
    return cli_fail(cli, &err);
}

int cli_open_bench(const bd_cli *cli, bd_bench **out)
{
    bd_err err = BD_ERR_INIT;
    char *root = NULL;
    char *cwd = NULL;
    *out = NULL;
    const char *start = cli->dir;
    if (!start) {
        cwd = getcwd(NULL, 0);
        if (!cwd) {
            bd_err_set(&err, BD_E_IO, NULL, 0, 0, "cannot read the working directory");
            return cli_fail(cli, &err);
        }
        start = cwd;
    }
    int rc = bd_bench_find_root(&root, start, cli->dir != NULL, &err);
    free(cwd);
    if (rc != 0)
        return cli_fail(cli, &err);
    rc = bd_bench_open(out, root, &err);
    free(root);
    if (rc != 0)
        return cli_fail(cli, &err);
    return 0;
}

void cli_print_json(const cJSON *json)
{
    char *s = cJSON_PrintUnformatted(json);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
    fflush(stdout);
}

bool cli_common_opts(bd_cli *cli, int *argc, char **argv)
{
    bool help = false;
    int w = 0;
    for (int i = 0; i < *argc; i++) {
        if (i > 0 && strcmp(argv[i], "--json") == 0) {
            cli->json = true;
            continue;
        }
        if (i > 0 && (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0))
            help = true;
        argv[w++] = argv[i];
    }
    *argc = w;
    argv[w] = NULL;
    return help;
}

int cli_help(const char *help)
{
    fputs(help, stdout);
    return 0;
}

bool cli_color(const bd_cli *cli, int fd)
{
    return !cli->no_color && isatty(fd);
}
