#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "commit_check.h"
#include "gitops.h"

static const char commit_help[] =
    "usage: benchdesk commit -m MSG [--sign] [--key FPR] [--json]\n\n"
    "Commit the staged changes to the current branch as the user named by git config\n"
    "(user.name, user.email). Works on a fresh repository (unborn branch) too.\n"
    "Refused when the index holds a case whose staged content does not match its staged\n"
    "pin (the bytes that would be committed are digested, not the work tree), or a\n"
    "rubric off its pin: run `benchdesk pin` and stage the result first.\n\n"
    "  -m MSG     the commit message\n"
    "  --sign     sign the commit with GnuPG (git's gpgsig header; `git verify-commit`\n"
    "             checks it)\n"
    "  --key FPR  the signing key's 40-hex fingerprint (default: signing_key in\n"
    "             .benchdesk/config.yaml, else gpg.conf's default-key, else your first\n"
    "             usable signing key)\n\n"
    "The branch is moved with a compare-and-swap: if another commit lands meanwhile,\n"
    "nothing is overwritten and the command fails with git.ref_moved; run it again.\n"
    "Exit status: 0 committed; 1 a staged case off its pin; 2 bad usage, nothing staged\n"
    "or no git identity; 4 git, GnuPG or a racing update.\n";

int cmd_commit(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(commit_help);
    bd_commit_opts opts = BD_COMMIT_OPTS_INIT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--message") == 0 ||
            strcmp(argv[i], "--key") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "commit", "%s needs a value", argv[i]);
            if (strcmp(argv[i], "--key") == 0)
                opts.sign_opts.key = argv[++i];
            else
                opts.message = argv[++i];
        } else if (strcmp(argv[i], "--sign") == 0 || strcmp(argv[i], "-S") == 0) {
            opts.sign = true;
        } else {
            return cli_usage(cli, "commit", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!opts.message)
        return cli_usage(cli, "commit", "commit needs a message: -m MSG");
    if (opts.sign_opts.key && !opts.sign)
        return cli_usage(cli, "commit", "--key only makes sense with --sign");

    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_git *g = NULL;
    bd_commit_result res;
    bd_config cfg = {0};
    /* --key, else .benchdesk/config.yaml's signing_key, else GnuPG's default. */
    if (opts.sign && !opts.sign_opts.key) {
        if (bd_config_load(&cfg, bench->root, &err) < 0) {
            bd_bench_free(bench);
            return cli_fail(cli, &err);
        }
        opts.sign_opts.key = cfg.signing_key;
    }
    if ((opts.sign && bd_provenance_init(&err) < 0) || bd_git_open(&g, bench->root, &err) < 0 ||
        bd_git_commit(&res, g, &opts, &err) < 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "commit", res.id);
        cJSON_AddStringToObject(o, "branch", res.branch);
        cJSON_AddBoolToObject(o, "initial", res.initial);
        cJSON_AddBoolToObject(o, "signed", res.is_signed);
        if (res.is_signed)
            cJSON_AddStringToObject(o, "signer", res.signer);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        printf("[%s%s %.12s] %.*s\n", res.branch, res.initial ? " (root-commit)" : "", res.id,
               (int)strcspn(opts.message, "\n"), opts.message);
        if (res.is_signed)
            printf("signed with %s\n", res.signer);
    }
out:
    bd_config_release(&cfg);
    bd_git_close(g);
    bd_bench_free(bench);
    return status;
}
