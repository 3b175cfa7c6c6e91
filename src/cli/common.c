#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "canon.h"
#include "cli.h"
#include "text.h"

#define VIS_RING 16
static char *vis_ring[VIS_RING];
static size_t vis_next;

/* Keep `s` (owned) in the ring, freeing the oldest entry. */
static const char *ring_keep(char *s)
{
    size_t k = vis_next++ % VIS_RING;
    free(vis_ring[k]);
    vis_ring[k] = s;
    return s ? s : "";
}

const char *cli_vis(const char *s)
{
    return ring_keep(bd_text_vis(s, 0));
}

/* The command line's words for each action (err.h): the command to type. "%s" stands for
 * the action's argument. tests/cli/test_tui_structure.sh checks every action has an entry
 * here and in the TUI's table (ui/err_keys.c). */
const char *const cli_action_words[BD_ACT__COUNT] = {
    [BD_ACT_NONE] = "",
    [BD_ACT_SIGN_TASK_CLASS] =
        "(`benchdesk sign bench/%s --role author`, then a second person as reviewer)",
    [BD_ACT_SIGN_CASE] = "(benchdesk sign)",
    [BD_ACT_SIGN_TWO] = "`benchdesk sign bench/%s --role author`, then --role reviewer",
    [BD_ACT_SIGN_AUTHOR_FIRST] = "(`benchdesk sign DIR --role author`)",
    [BD_ACT_ALLOW_WEAKER] = "; pass --allow-weaker-isolation to run under '%s' instead",
    [BD_ACT_STAGE] = "`benchdesk stage PATH...`",
    [BD_ACT_STAGE_PATH] = "(`benchdesk stage bench/%s`)",
    [BD_ACT_SET_KEY] = "(--key FPR)",
    [BD_ACT_PIN] = "`benchdesk pin %s`",
    [BD_ACT_PIN_ALL] = "`benchdesk pin`",
    [BD_ACT_MIGRATE] = "`benchdesk migrate`",
    [BD_ACT_LIST_TASK_CLASSES] = "`benchdesk list`",
    [BD_ACT_LIST_CASES] = "`benchdesk list %s`",
    [BD_ACT_CASE_NEW] = "`benchdesk case new %s CASE_ID`",
    [BD_ACT_RUN] = "`benchdesk run TASK_CLASS`",
    [BD_ACT_RUN_SHARD] = "`benchdesk run --shard %s`",
    [BD_ACT_RECORD_NETWORK] = "`benchdesk record --unsafe-network`",
    [BD_ACT_RECORD] = "`benchdesk record %s`",
    [BD_ACT_HISTORY_LOG] = "`benchdesk history log`",
    [BD_ACT_HISTORY_VERIFY] = "`benchdesk history verify`",
    [BD_ACT_VERIFY_TASK_CLASS] = "`benchdesk verify %s`",
    [BD_ACT_COMMIT] = "run `benchdesk commit`",
};

const char *cli_err_text(const bd_err *err)
{
    char *out = malloc(BD_ERR_MSG_MAX + 2 * BD_ERR_ARG_MAX);
    if (out)
        bd_err_render(err, cli_action_words, out, BD_ERR_MSG_MAX + 2 * BD_ERR_ARG_MAX);
    return ring_keep(out);
}

void cli_err_line(bd_code code, const char *msg)
{
    fflush(stdout);
    char *v = bd_text_vis(msg, 0);
    fprintf(stderr, "benchdesk: %s: %s\n", bd_code_str(code), v ? v : "(out of memory)");
    free(v);
}

void cli_warn(const char *msg)
{
    if (!msg)
        return;
    fflush(stdout);
    char *v = bd_text_vis(msg, 0);
    fprintf(stderr, "benchdesk: warning: %s\n", v ? v : "(out of memory)");
    free(v);
}

int cli_fail(const bd_cli *cli, const bd_err *err)
{
    if (cli && cli->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(root, "error");
        cJSON_AddStringToObject(e, "code", bd_code_str(err->code));
        cJSON_AddStringToObject(e, "message", cli_err_text(err));
        if (err->action != BD_ACT_NONE) {
            cJSON *a = cJSON_AddObjectToObject(e, "action");
            cJSON_AddStringToObject(a, "kind", bd_action_kind(err->action));
            cJSON_AddStringToObject(a, "arg", err->action_arg);
        }
        if (err->file[0])
            cJSON_AddStringToObject(e, "file", err->file);
        if (err->line > 0)
            cJSON_AddNumberToObject(e, "line", err->line);
        if (err->col > 0)
            cJSON_AddNumberToObject(e, "column", err->col);
        cli_print_json(root);
        cJSON_Delete(root);
    } else {
        cli_err_line(err->code, cli_err_text(err));
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

char *cli_json_text(const cJSON *json)
{
    /* Numbers in the shortest form that reads back as the same double (canon.h). */
    char *raw = bd_json_print(json, NULL);
    char *s = raw ? bd_text_json_safe(raw) : NULL;
    free(raw);
    return s;
}

void cli_print_json(const cJSON *json)
{
    char *s = cli_json_text(json);
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
