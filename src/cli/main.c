/*
 * benchdesk — the terminal workstation for an evaluation bench. With a subcommand it runs
 * headless (this file dispatches); the TUI lands in ui/.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "text.h"
#include "tui.h"
#include "version.h"

/*      name         function        one-line summary */
#define BD_COMMANDS(X)                                                                             \
    X("list", cmd_list, "task classes, or the cases of one, with their status")                    \
    X("verify", cmd_verify, "check pins, cassettes, signatures, the history chain and anchors")    \
    X("digest", cmd_digest, "print the BLAKE3 digest of a case directory or a file")               \
    X("pin", cmd_pin, "rewrite a task class's pins after a deliberate change")                     \
    X("migrate", cmd_migrate, "convert a format-v1 bench to format v2")                            \
    X("case", cmd_case, "case new: scaffold a draft case; case check: lint cases before pinning")  \
    X("run", cmd_run, "run a task class's rubric over its cases")                                  \
    X("compare", cmd_compare, "what got worse between two runs, and is it real")                   \
    X("report", cmd_report, "a run as JUnit XML, Markdown or one HTML page, for CI and people")    \
    X("record", cmd_record, "record a case's cassette from the live SUT (re-pins; sign after)")    \
    X("history", cmd_history, "history verify | history log: the chained score history")           \
    X("anchor", cmd_anchor, "anchor publish | anchor verify: signed chain-head anchors")           \
    X("recommend", cmd_recommend, "recommend a tier for a task class (never applies it)")          \
    X("promote", cmd_promote, "always refuses: tiers move only by a reviewed human edit")          \
    X("sign", cmd_sign, "sign a case's provenance as author or reviewer (GnuPG)")                  \
    X("signer", cmd_signer, "signer add KEY --roles R: propose a new trusted signer")              \
    X("status", cmd_status, "git status of bench/ and audit/")                                     \
    X("stage", cmd_stage, "stage paths under bench/ and audit/ for commit")                        \
    X("commit", cmd_commit, "commit the staged changes (optionally signed)")                       \
    X("verdict", cmd_verdict, "sign your verdict on score records (confirmed, rubric_bug, ...)")   \
    X("review", cmd_review, "the review queue: unreviewed failures, second reviews, a sample")     \
    X("calibrate", cmd_calibrate, "how the rubric agrees with its reviewers (2x2, kappa)")         \
    X("help", cmd_help, "help [COMMAND]: this list, or a command's help")

static int cmd_help(bd_cli *cli, int argc, char **argv);

typedef struct command {
    const char *name;
    bd_cmd_fn fn;
    const char *summary;
} command;

static const command commands[] = {
#define BD_X(name, fn, summary) {name, fn, summary},
    BD_COMMANDS(BD_X)
#undef BD_X
};

/* Short spellings of long options (getopt_long conventions, docs/benchdesk.1). */
static const struct {
    const char *shrt, *lng;
} short_opts[] = {{"-j", "--jobs"}};

/* The command's arguments in getopt_long's accepted spellings, rewritten to the one the
 * commands parse: "--opt=value" becomes "--opt" "value", and "-j 2" / "-j2" become
 * "--jobs" "2". The value after -m/--message (a commit message) and everything after
 * "--" are left alone. Returns a new NULL-terminated vector (strings borrowed from argv or
 * static; the "=" is cut in place), or NULL when out of memory. */
static char **normalize_args(int argc, char **argv, int *out_argc)
{
    char **v = calloc((size_t)argc * 2 + 1, sizeof(char *));
    if (!v)
        return NULL;
    int n = 0;
    bool rest = false;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (i == 0 || rest) {
            v[n++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            rest = true;
            v[n++] = a;
            continue;
        }
        if ((strcmp(a, "-m") == 0 || strcmp(a, "--message") == 0) && i + 1 < argc) {
            v[n++] = a;
            v[n++] = argv[++i];
            continue;
        }
        char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        if (eq) {
            *eq = '\0';
            v[n++] = a;
            v[n++] = eq + 1;
            continue;
        }
        bool done = false;
        for (size_t k = 0; k < sizeof(short_opts) / sizeof(short_opts[0]) && !done; k++) {
            size_t sl = strlen(short_opts[k].shrt);
            if (strncmp(a, short_opts[k].shrt, sl) == 0) {
                v[n++] = (char *)short_opts[k].lng;
                if (a[sl])
                    v[n++] = a + sl;
                done = true;
            }
        }
        if (!done)
            v[n++] = a;
    }
    v[n] = NULL;
    *out_argc = n;
    return v;
}

static int usage(FILE *to)
{
    fprintf(to, "usage: benchdesk [-C DIR] [--theme NAME] <command> [options]\n\n"
                "Commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(to, "\nGlobal options:\n"
                "  -C DIR        use the bench rooted at DIR (default: nearest ancestor of\n"
                "                the working directory holding a bench/ folder)\n"
                "  --theme NAME  TUI colour theme (default, light, high-contrast, monochrome)\n"
                "  --version     print the version\n"
                "  -h, --help    this help; `benchdesk <command> --help` for a command\n\n"
                "Exit status: 0 done, 1 integrity or verification failure, 2 bad usage or\n"
                "invalid input, 3 refused by policy, 4 environment or I/O failure, 5 compare\n"
                "--fail-on-regression found a regression.\n");
    return to == stdout ? 0 : 2;
}

/* The command named `name`, or NULL. */
static const command *find_command(const char *name)
{
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        if (strcmp(name, commands[k].name) == 0)
            return &commands[k];
    return NULL;
}

/* `name` is not a command: the one-line error with the nearest names. */
static int unknown_command(bd_cli *cli, const char *name)
{
    bd_err err = BD_ERR_INIT;
    const char *names[sizeof(commands) / sizeof(commands[0])];
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        names[k] = commands[k].name;
    char hint[192];
    bd_text_did_you_mean(hint, sizeof(hint), name, names, sizeof(names) / sizeof(names[0]));
    bd_err_set(&err, BD_E_UNKNOWN_COMMAND, NULL, 0, 0,
               "'%s' is not a benchdesk command;%s see `benchdesk --help`", name, hint);
    return cli_fail(cli, &err);
}

static const char help_help[] =
    "usage: benchdesk help [COMMAND]      (the same as: benchdesk COMMAND --help)\n\n"
    "Without COMMAND, the list of commands (benchdesk --help); with one, exactly what\n"
    "`benchdesk COMMAND --help` prints.\n";

/* `benchdesk help [CMD]`: the command list, or exactly what `CMD --help` prints. */
static int cmd_help(bd_cli *cli, int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return cli_help(help_help);
    if (argc > 2)
        return cli_usage(cli, "help", "help takes one command ('%s' is extra)", argv[2]);
    if (argc < 2 || strcmp(argv[1], "help") == 0)
        return argc < 2 ? usage(stdout) : cli_help(help_help);
    const command *c = find_command(argv[1]);
    if (!c)
        return unknown_command(cli, argv[1]);
    char *args[] = {(char *)c->name, "--help", NULL};
    return c->fn(cli, 2, args);
}

int main(int argc, char **argv)
{
    /* A rubric closing its stdin must never kill benchdesk. */
    signal(SIGPIPE, SIG_IGN);

    bd_cli cli = {0};
    const char *nc = getenv("NO_COLOR");
    cli.no_color = nc && nc[0];

    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-C") == 0) {
            if (i + 1 >= argc)
                return cli_usage(&cli, NULL, "-C needs a directory");
            cli.dir = argv[++i];
        } else if (strcmp(a, "--theme") == 0) {
            if (i + 1 >= argc)
                return cli_usage(&cli, NULL, "--theme needs a name");
            cli.theme = argv[++i];
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return usage(stdout);
        } else if (strcmp(a, "--version") == 0) {
            printf("benchdesk %s\n", BD_VERSION);
            return 0;
        } else if (a[0] == '-') {
            return cli_usage(&cli, NULL, "unknown option '%s'", a);
        } else {
            break;
        }
    }
    if (i >= argc) {
        bd_tui_opts opts = {cli.dir, cli.theme, cli.no_color};
        return bd_tui_main(&opts);
    }
    const command *c = find_command(argv[i]);
    if (!c)
        return unknown_command(&cli, argv[i]);
    int n = 0;
    char **args = normalize_args(argc - i, argv + i, &n);
    if (!args) {
        bd_err err = BD_ERR_INIT;
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory; free memory and retry");
        return cli_fail(&cli, &err);
    }
    int status = c->fn(&cli, n, args);
    free(args);
    return status;
}
