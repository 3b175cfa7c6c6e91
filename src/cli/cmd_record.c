/*
 * benchdesk record TASK_CLASS CASE_ID [--unsafe-network] [--isolation CLASS]
 *                  [--allow-weaker-isolation] [--yes] [--json]
 * (docs/recording.md): run the command SUT on the case as a run would and write its output
 * as the case's cassette. The checks, the audit event and the writing are the core's
 * (record.h); this file parses, asks and prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "rungate.h"
#include "exec.h"
#include "record.h"

static const char help[] =
    "usage: benchdesk record TASK_CLASS CASE_ID [--unsafe-network] [--isolation CLASS]\n"
    "                        [--allow-weaker-isolation] [--yes] [--json]\n"
    "\n"
    "Run the task class's command SUT on the case exactly as a run would (same jail,\n"
    "limits and scrubbed environment, plus only the variables the signed registration\n"
    "names in sut.env_pass), then write its stdout to the case's cassette.json, the\n"
    "new cassette_digest into case.yaml and the case's new pin into digests.yaml. It says\n"
    "whose signatures the new pin superseded: two people sign the case again.\n"
    "A cassette is never replaced silently: the diff between the old and the new one is\n"
    "shown and, on a terminal, confirmed; without a terminal it needs --yes.\n"
    "\n"
    "  --unsafe-network          the SUT keeps the host network (every other protection\n"
    "                            stays); asks for confirmation on the terminal, refused\n"
    "                            when CI is set or stdin is not a terminal; an audit\n"
    "                            event goes to the history first\n"
    "  --isolation CLASS         auto (default), namespaces or subprocess; subprocess\n"
    "                            gives the SUT the host network, so it needs\n"
    "                            --unsafe-network and is refused without it\n"
    "  --allow-weaker-isolation  consent to a weaker class than requested\n"
    "  --yes                     replace the cassette without asking (the diff is still\n"
    "                            shown); needed when stdin is not a terminal\n"
    "  --json                    print the outcome as one JSON object\n"
    "\n"
    "The task class must be signed by two people. Exit: 0 recorded, 2 bad usage or not a\n"
    "command SUT, 3 refused (unsigned task class, network refused or declined), 4 the SUT\n"
    "failed or an environment failure.\n";

/* Ask on the terminal; true only for an explicit yes. */
static bool confirm(const char *question)
{
    fprintf(stderr, "%s [y/N] ", question);
    fflush(stderr);
    char line[16];
    if (!fgets(line, sizeof(line), stdin))
        return false;
    return (line[0] == 'y' || line[0] == 'Y') &&
           (line[1] == '\n' || line[1] == '\0' || strncmp(line + 1, "es", 2) == 0);
}

/* Lines of unchanged context shown around each change of the cassette diff, and the
 * most diff lines shown. */
#define DIFF_CONTEXT   2
#define DIFF_MAX_LINES 400

/* The cassette diff on `out` (stderr with --json), made visible: "-" old, "+" new. */
static void print_diff(const bd_cli *cli, const bd_record_take *take)
{
    FILE *out = cli->json ? stderr : stdout;
    bd_diff_line *d = NULL;
    size_t n = 0, shown = 0, adds = 0, dels = 0;
    char *a = NULL, *b = NULL;
    bd_err e = BD_ERR_INIT;
    if (bd_record_diff(&d, &n, &a, &b, take, &e) < 0) {
        cli_warn("the cassette diff could not be made (out of memory)");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        adds += d[i].op == BD_DIFF_ADD;
        dels += d[i].op == BD_DIFF_DEL;
    }
    fprintf(out, "cassette.json: %zu line%s removed, %zu added\n", dels, dels == 1 ? "" : "s",
            adds);
    bool colour = cli_color(cli, fileno(out));
    for (size_t i = 0; i < n && shown < DIFF_MAX_LINES; i++) {
        bool near = false;
        for (size_t k = i >= DIFF_CONTEXT ? i - DIFF_CONTEXT : 0; k < n && k <= i + DIFF_CONTEXT;
             k++)
            near |= d[k].op != BD_DIFF_SAME;
        if (!near)
            continue;
        char *line = strndup(d[i].text, d[i].len);
        const char *mark = d[i].op == BD_DIFF_ADD ? "+" : d[i].op == BD_DIFF_DEL ? "-" : " ";
        const char *on = !colour || d[i].op == BD_DIFF_SAME ? ""
                         : d[i].op == BD_DIFF_ADD           ? "\033[32m"
                                                            : "\033[31m";
        fprintf(out, "%s%s %s%s\n", on, mark, cli_vis(line), on[0] ? "\033[0m" : "");
        free(line);
        shown++;
    }
    if (shown == DIFF_MAX_LINES)
        fprintf(out, "… (the diff goes on; `git diff` shows it whole once written)\n");
    free(d);
    free(a);
    free(b);
}

/* What was recorded: one JSON object (--json) or two lines, then the next steps when
 * the cassette changed. */
static void print_recorded(const bd_cli *cli, const bd_task_class *tc, const char *case_id,
                           const bd_record_take *take, bool host_network, const bd_pin_report *rep)
{
    const bd_pin_change *ch = rep->n_changes ? &rep->changes[0] : NULL;
    char who[600] = "";
    if (ch && ch->author_broken)
        snprintf(who, sizeof(who), "%s (author)", ch->author_by);
    if (ch && ch->reviewer_broken)
        snprintf(who + strlen(who), sizeof(who) - strlen(who), "%s%s (reviewer)",
                 who[0] ? ", " : "", ch->reviewer_by);
    bd_err steps = BD_ERR_INIT;
    bd_record_next_steps(&steps, tc, case_id);
    const char *next = cli_err_text(&steps);
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "task_class", tc->name);
        cJSON_AddStringToObject(o, "case_id", case_id);
        cJSON_AddBoolToObject(o, "changed", take->changed);
        if (take->old_digest[0])
            cJSON_AddStringToObject(o, "old_cassette_digest", take->old_digest);
        else
            cJSON_AddNullToObject(o, "old_cassette_digest");
        cJSON_AddStringToObject(o, "cassette_digest", take->new_digest);
        cJSON_AddStringToObject(o, "isolation", bd_isolation_str(take->isolation));
        cJSON_AddBoolToObject(o, "network", host_network);
        cJSON_AddNumberToObject(o, "wall_ms", (double)take->wall_ms);
        cJSON_AddStringToObject(o, "next", next);
        if (ch)
            cJSON_AddStringToObject(o, "pin", ch->after);
        cJSON_AddStringToObject(o, "superseded", who);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        printf("recorded %s/%s in %lld ms (%s%s): cassette %s\n", tc->name, case_id,
               (long long)take->wall_ms, bd_isolation_str(take->isolation),
               host_network ? ", host network" : "", take->changed ? "changed" : "unchanged");
        printf("  cassette_digest %s\n", take->new_digest);
        if (ch)
            printf("  pinned %s\n", ch->after);
        if (who[0])
            printf("  superseded the signatures of %s\n", cli_vis(who));
        if (ch)
            printf("next: %s\n", next);
    }
}

int cmd_record(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(help);
    const char *tc_name = NULL, *case_id = NULL, *isolation = "auto";
    bool unsafe_network = false, allow_weaker = false, yes = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--unsafe-network") == 0) {
            unsafe_network = true;
        } else if (strcmp(a, "--yes") == 0) {
            yes = true;
        } else if (strcmp(a, "--allow-weaker-isolation") == 0) {
            allow_weaker = true;
        } else if (strcmp(a, "--isolation") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "record", "--isolation needs a value");
            isolation = argv[++i];
        } else if (a[0] == '-') {
            return cli_usage(cli, "record", "unknown option '%s'", a);
        } else if (!tc_name) {
            tc_name = a;
        } else if (!case_id) {
            case_id = a;
        } else {
            return cli_usage(cli, "record", "one case at a time ('%s' is extra)", a);
        }
    }
    if (!tc_name || !case_id)
        return cli_usage(cli, "record", "which task class and case? (benchdesk list shows them)");

    bd_err err = BD_ERR_INIT;
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    bd_config config = {0};
    bd_run_env env = {0};
    bd_record_take take = {0};
    bd_pin_report rep = {0};
    int status = 0;
    bool terminal = isatty(STDIN_FILENO) == 1;
    if ((status = cli_open_bench(cli, &bench)) != 0)
        return status;
    if (bd_task_class_load(&tc, bench, tc_name, &err) != 0 ||
        bd_config_load(&config, bench->root, &err) != 0 ||
        /* The interpreter and the isolation class, as for `benchdesk run`. */
        bd_run_env_resolve(&env, &config, isolation, allow_weaker, 1, &err) != 0 ||
        bd_record_check(bench, tc, case_id, NULL, &err) != 0)
        goto fail;
    /* The host network (asked for, or the subprocess class's): refused, or asked for here. */
    bool host_network = false;
    if (bd_record_network_gate(env.isolation, unsafe_network, terminal, &host_network, &err) != 0)
        goto fail;
    /* A cassette is never replaced silently: asked on a terminal, else --yes. */
    if (!terminal && !yes) {
        bd_err_set(&err, BD_E_RECORD_DECLINED, NULL, 0, 0,
                   "no terminal to confirm the new cassette on, so nothing ran: pass --yes to "
                   "write it without asking (the diff is still shown)");
        goto fail;
    }
    if (host_network) {
        char q[1024];
        bd_record_network_question(q, sizeof(q), tc, case_id, env.isolation);
        if (!confirm(q)) {
            bd_err_set(&err, BD_E_RECORD_DECLINED, NULL, 0, 0,
                       "not confirmed: nothing ran and nothing was written");
            goto fail;
        }
        /* On record before the SUT can reach anything. */
        char repair[256];
        if (bd_record_audit(bench, tc, case_id, env.isolation, NULL, repair, &err) != 0)
            goto fail;
        if (repair[0])
            cli_warn(repair);
    }
    bd_record_opts ro = {
        .isolation = env.isolation, .python = env.python, .host_network = host_network};
    if (bd_record_capture(&take, bench, tc, case_id, &ro, &err) != 0)
        goto fail;
    if (take.changed && take.old_text) {
        print_diff(cli, &take);
        if (!yes && !confirm("replace the cassette with this one and re-pin the case?")) {
            bd_err_set(&err, BD_E_RECORD_DECLINED, NULL, 0, 0,
                       "not confirmed: the cassette and the pin are as they were");
            goto fail;
        }
    }
    if (bd_record_write_pin(&rep, bench, tc, case_id, &take, NULL, &err) != 0)
        goto fail;

    print_recorded(cli, tc, case_id, &take, host_network, &rep);
    goto out;
fail:
    status = cli_fail(cli, &err);
out:
    bd_record_take_release(&take);
    bd_pin_report_release(&rep);
    bd_run_env_release(&env);
    bd_config_release(&config);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
