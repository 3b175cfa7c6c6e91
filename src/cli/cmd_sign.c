#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "provenance.h"

static const char sign_help[] =
    "usage: benchdesk sign CASE_DIR --role author|reviewer [--key FPR] [--json]\n\n"
    "Sign a case's provenance with your own GnuPG key (DESIGN.md §6): a detached,\n"
    "armored signature over exactly these bytes, every line ending in a newline:\n\n"
    "    benchdesk-provenance-v1\n"
    "    role: <author|reviewer>\n"
    "    case_id: <case_id>\n"
    "    added_at: <added_at>\n"
    "    case_digest: blake3:<hex>\n\n"
    "The key's e-mail, primary fingerprint and the signature are written into\n"
    "case.yaml's provenance.added_by (author) or provenance.reviewed_by (reviewer);\n"
    "the rest of the file is left as it was. Refused: a case whose digest does not match\n"
    "its pin (run `benchdesk pin` first), a key not trusted for the role in\n"
    "bench/trusted-signers.yaml, a review before the author has signed, a review with\n"
    "the author's own key.\n\n"
    "  --role ROLE   author or reviewer\n"
    "  --key FPR     40-hex primary fingerprint of your secret key (default:\n"
    "                signing_key in .benchdesk/config.yaml, else gpg.conf's default-key,\n"
    "                else your first usable signing key)\n"
    "  --json        print the result as JSON\n\n"
    "The passphrase is asked by gpg-agent's pinentry.\n"
    "Exit status: 0 signed; 1 the case or its author signature fails verification;\n"
    "2 bad usage or no such key; 3 refused (no author signature yet); 4 GnuPG or I/O.\n";

/* CASE_DIR = <root>/bench/<task class>/cases/<case id>: split it. */
static int split_case_dir(const bd_cli *cli, const char *arg, char **root, char **tc, char **id)
{
    bd_err err = BD_ERR_INIT;
    char *real = realpath(arg, NULL);
    *root = *tc = *id = NULL;
    if (!real) {
        bd_err_errno(&err, errno == ENOENT ? BD_E_UNKNOWN_CASE : BD_E_IO, errno, arg,
                     "is not a case directory");
        return cli_fail(cli, &err);
    }
    char *parts[4] = {NULL};
    char *p = real;
    for (int i = 0; i < 4; i++) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) {
            free(real);
            bd_err_set(&err, BD_E_UNKNOWN_CASE, arg, 0, 0,
                       "is not a case directory: expected <bench root>/bench/<task "
                       "class>/cases/<case id>");
            return cli_fail(cli, &err);
        }
        parts[i] = slash + 1;
        *slash = '\0';
    }
    /* parts: id, "cases", task class, "bench"; real is now the bench root. */
    if (strcmp(parts[1], "cases") != 0 || strcmp(parts[3], "bench") != 0) {
        free(real);
        bd_err_set(&err, BD_E_UNKNOWN_CASE, arg, 0, 0,
                   "is not a case directory: expected <bench root>/bench/<task "
                   "class>/cases/<case id>");
        return cli_fail(cli, &err);
    }
    *id = strdup(parts[0]);
    *tc = strdup(parts[2]);
    *root = real;
    if (!*id || !*tc) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        return cli_fail(cli, &err);
    }
    return 0;
}

int cmd_sign(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(sign_help);
    const char *dir = NULL, *role_s = NULL;
    bd_sign_opts opts = BD_SIGN_OPTS_INIT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--role") == 0 || strcmp(argv[i], "--key") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "sign", "%s needs a value", argv[i]);
            if (argv[i][2] == 'r')
                role_s = argv[++i];
            else
                opts.key = argv[++i];
        } else if (argv[i][0] == '-') {
            return cli_usage(cli, "sign", "unknown option '%s'", argv[i]);
        } else if (dir) {
            return cli_usage(cli, "sign", "sign takes one CASE_DIR");
        } else {
            dir = argv[i];
        }
    }
    int role = 0;
    if (!dir)
        return cli_usage(cli, "sign", "sign needs a CASE_DIR");
    if (!role_s)
        return cli_usage(cli, "sign", "sign needs --role author or --role reviewer");
    if (bd_provenance_role_parse(role_s, &role) < 0)
        return cli_usage(cli, "sign", "--role must be author or reviewer, not '%s'", role_s);

    char *root = NULL, *tcname = NULL, *id = NULL;
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    bd_prov_ctx *ctx = NULL;
    bd_sign_result res = {0};
    bd_err err = BD_ERR_INIT;
    bd_config cfg = {0};
    int status = split_case_dir(cli, dir, &root, &tcname, &id);
    if (status)
        goto out;
    /* --key, else .benchdesk/config.yaml's signing_key, else GnuPG's default. */
    if (bd_config_load(&cfg, root, &err) < 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (!opts.key)
        opts.key = cfg.signing_key;
    if (bd_provenance_init(&err) < 0 || bd_bench_open(&bench, root, &err) < 0 ||
        bd_task_class_load(&tc, bench, tcname, &err) < 0 ||
        bd_prov_ctx_new(&ctx, bench->bench_dir, &err) < 0 ||
        bd_provenance_sign_case(&res, ctx, tc, id, role, &opts, &err) < 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "task_class", tc->name);
        cJSON_AddStringToObject(o, "case_id", id);
        cJSON_AddStringToObject(o, "role", bd_provenance_role_str(role));
        cJSON_AddStringToObject(o, "identity", res.key.identity);
        cJSON_AddStringToObject(o, "fingerprint", res.key.fingerprint);
        cJSON_AddStringToObject(o, "case_digest", res.case_digest);
        cJSON_AddStringToObject(o, "case_yaml", res.case_yaml);
        cJSON_AddStringToObject(o, "message", res.message);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        printf("signed %s/%s as %s with %s (%s)\n", tc->name, id, bd_provenance_role_str(role),
               res.key.fingerprint, res.key.identity);
        printf("%s\n", role == BD_ROLE_AUTHOR
                           ? "next: a second person reviews it with `benchdesk sign CASE_DIR "
                             "--role reviewer`"
                           : "next: `benchdesk stage` the case and `benchdesk commit`");
    }
out:
    bd_config_release(&cfg);
    bd_sign_result_release(&res);
    bd_prov_ctx_free(ctx);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    free(root);
    free(tcname);
    free(id);
    return status;
}
