#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "sign.h"

static const char sign_help[] =
    "usage: benchdesk sign DIR... --role author|reviewer [--key FPR] [--replace] [--json]\n\n"
    "Sign cases (a case digest: every file of the case but provenance.yaml) or task classes\n"
    "(a task-class digest: registration.yaml + rubric.py) with your own GnuPG key; each DIR\n"
    "is a case directory or a task-class directory of one bench\n"
    "(docs/provenance.md#the-signed-message): a detached, armored signature over exactly\n"
    "these bytes, every line ending in a newline:\n\n"
    "    benchdesk-provenance-v2\n"
    "    role: <author|reviewer>\n"
    "    subject: <case|task-class>\n"
    "    task_class: <task-class name>\n"
    "    case_id: <case id>            (only for a case)\n"
    "    digest: blake3:<hex>\n\n"
    "The key's e-mail, primary fingerprint, the time, the digest signed and the signature\n"
    "are written to the subject's provenance.yaml (author or reviewer block), whole and\n"
    "atomically. Refused before anything is signed: a subject whose digest does not equal\n"
    "its pin (run `benchdesk pin` first), a key not trusted for the role in\n"
    "bench/trusted-signers.yaml, the key that already holds the other role on this\n"
    "subject, a review before the author has signed (this version), and a valid signature\n"
    "already in the role (pass --replace; a superseded one is replaced without asking).\n"
    "With several DIRs each subject is signed or refused on its own, in the order given:\n"
    "a refusal prints its error and the others go on (every DIR is checked to be a case or\n"
    "task class of the same bench before any is signed).\n\n"
    "  --role ROLE   author or reviewer\n"
    "  --key FPR     40-hex primary fingerprint of your secret key (default:\n"
    "                signing_key in .benchdesk/config.yaml, else gpg.conf's default-key,\n"
    "                else your first usable signing key)\n"
    "  --replace     replace a valid signature in the role (it is named)\n"
    "  --json        print each result as JSON, one object a line\n\n"
    "The passphrase is asked by gpg-agent's pinentry.\n"
    "Exit status (with several DIRs, the first refused subject's): 0 signed; 1 the subject\n"
    "or its author signature fails verification, or the key already signed the other role;\n"
    "2 bad usage or no such key; 3 refused (no author signature yet, a valid signature in\n"
    "the role without --replace); 4 GnuPG or I/O.\n";

/* DIR = <root>/bench/<task class>/cases/<case id> or <root>/bench/<task class>: split it.
 * *id is NULL for a task-class dir. */
static int split_subject_dir(const bd_cli *cli, const char *arg, char **root, char **tc, char **id)
{
    bd_err err = BD_ERR_INIT;
    char *real = realpath(arg, NULL);
    *root = *tc = *id = NULL;
    if (!real) {
        bd_err_errno(&err, errno == ENOENT ? BD_E_UNKNOWN_CASE : BD_E_IO, errno, arg,
                     "is not a case or task-class directory");
        return cli_fail(cli, &err);
    }
    char *parts[4] = {NULL};
    int n = 0;
    char *p = real;
    for (; n < 4; n++) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p)
            break;
        parts[n] = slash + 1;
        *slash = '\0';
        /* parts: tc, "bench" -> a task class; id, "cases", tc, "bench" -> a case */
        if (n == 1 && strcmp(parts[1], "bench") == 0)
            break;
    }
    bool is_tc = n == 1 && parts[1] && strcmp(parts[1], "bench") == 0;
    bool is_case = n == 4 && strcmp(parts[1], "cases") == 0 && strcmp(parts[3], "bench") == 0;
    if (!is_tc && !is_case) {
        free(real);
        bd_err_set(&err, BD_E_UNKNOWN_CASE, arg, 0, 0,
                   "is not a case or task-class directory: expected <bench root>/bench/<task "
                   "class>[/cases/<case id>]");
        return cli_fail(cli, &err);
    }
    *tc = strdup(is_case ? parts[2] : parts[0]);
    *id = is_case ? strdup(parts[0]) : NULL;
    *root = real;
    if (!*tc || (is_case && !*id)) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        return cli_fail(cli, &err);
    }
    return 0;
}

/* One signed subject's result: a JSON object a line, or the text lines. */
static void print_signed(const bd_cli *cli, const bd_sign_result *res, const char *tcname,
                         const char *id, int role, bool hint)
{
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "subject", bd_subject_kind_str(res->kind));
        cJSON_AddStringToObject(o, "task_class", tcname);
        if (id)
            cJSON_AddStringToObject(o, "case_id", id);
        else
            cJSON_AddNullToObject(o, "case_id");
        cJSON_AddStringToObject(o, "role", bd_provenance_role_str(role));
        cJSON_AddStringToObject(o, "identity", res->key.identity);
        cJSON_AddStringToObject(o, "fingerprint", res->key.fingerprint);
        cJSON_AddStringToObject(o, "digest", res->digest);
        cJSON_AddStringToObject(o, "provenance_yaml", res->prov_path);
        cJSON_AddStringToObject(o, "message", res->message);
        if (res->replaces[0])
            cJSON_AddStringToObject(o, "replaced", res->replaces);
        else
            cJSON_AddNullToObject(o, "replaced");
        cJSON_AddStringToObject(o, "status", res->other_valid ? "signed" : "awaiting_review");
        cli_print_json(o);
        cJSON_Delete(o);
        return;
    }
    printf("signed %s %s%s%s as %s with %s (%s)\n", id ? "case" : "task class", tcname,
           id ? "/" : "", id ? id : "", bd_provenance_role_str(role), res->key.fingerprint,
           res->key.identity);
    if (res->replaces[0])
        printf("replaced the %s %s signature of %s\n", res->replaces_valid ? "valid" : "superseded",
               bd_provenance_role_str(role), cli_vis(res->replaces));
    if (!hint)
        return;
    if (res->other_valid)
        printf("signed by two people; next: `benchdesk stage` it and `benchdesk commit`\n");
    else
        printf("next: a second person signs it with `benchdesk sign DIR --role %s` and "
               "their own key\n",
               role == BD_ROLE_AUTHOR ? "reviewer" : "author");
}

/* A subject named on the command line: the DIR given, its bench root, task class and case
 * id (NULL for the task class itself). */
typedef struct subject {
    const char *arg;
    char *root, *tc, *id;
} subject;

int cmd_sign(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(sign_help);
    const char *role_s = NULL;
    subject *subs = calloc((size_t)argc, sizeof(*subs));
    size_t ndirs = 0;
    bd_sign_opts opts = BD_SIGN_OPTS_INIT;
    bd_err err = BD_ERR_INIT;
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    bd_prov_ctx *ctx = NULL;
    bd_config cfg = {0};
    int status = 0;
    if (!subs) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        status = cli_fail(cli, &err);
        goto out;
    }
    for (int i = 1; i < argc && !status; i++) {
        if (strcmp(argv[i], "--role") == 0 || strcmp(argv[i], "--key") == 0) {
            if (i + 1 >= argc)
                status = cli_usage(cli, "sign", "%s needs a value", argv[i]);
            else if (argv[i][2] == 'r')
                role_s = argv[++i];
            else
                opts.key = argv[++i];
        } else if (strcmp(argv[i], "--replace") == 0) {
            opts.replace = true;
        } else if (argv[i][0] == '-') {
            status = cli_usage(cli, "sign", "unknown option '%s'", argv[i]);
        } else {
            subs[ndirs++].arg = argv[i];
        }
    }
    int role = 0;
    if (status)
        goto out;
    if (!ndirs) {
        status = cli_usage(cli, "sign", "sign needs a CASE_DIR or TASK_CLASS_DIR");
        goto out;
    }
    if (!role_s) {
        status = cli_usage(cli, "sign", "sign needs --role author or --role reviewer");
        goto out;
    }
    if (bd_provenance_role_parse(role_s, &role) < 0) {
        status = cli_usage(cli, "sign", "--role must be author or reviewer, not '%s'", role_s);
        goto out;
    }
    /* Every subject is known, and of one bench, before any is signed. */
    for (size_t k = 0; k < ndirs && !status; k++) {
        status = split_subject_dir(cli, subs[k].arg, &subs[k].root, &subs[k].tc, &subs[k].id);
        if (!status && strcmp(subs[k].root, subs[0].root) != 0)
            status = cli_usage(cli, "sign",
                               "'%s' is in the bench at %s, '%s' in the one at %s: "
                               "sign each bench's subjects with their own command",
                               cli_vis(subs[0].arg), cli_vis(subs[0].root), cli_vis(subs[k].arg),
                               cli_vis(subs[k].root));
    }
    if (status)
        goto out;

    /* --key, else .benchdesk/config.yaml's signing_key, else GnuPG's default. */
    if (bd_config_load(&cfg, subs[0].root, &err) < 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (!opts.key)
        opts.key = cfg.signing_key;
    if (bd_provenance_init(&err) < 0 || bd_bench_open(&bench, subs[0].root, &err) < 0 ||
        bd_prov_ctx_new(&ctx, bench->bench_dir, &err) < 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    size_t signed_n = 0;
    for (size_t k = 0; k < ndirs; k++) {
        bd_sign_result res = {0};
        bd_err serr = BD_ERR_INIT;
        if (!tc || strcmp(tc->name, subs[k].tc) != 0) {
            bd_task_class_free(tc);
            tc = NULL;
        }
        if ((!tc && bd_task_class_load(&tc, bench, subs[k].tc, &serr) < 0) ||
            bd_sign_subject(&res, ctx, tc, subs[k].id, role, &opts, &serr) < 0) {
            int st = cli_fail(cli, &serr);
            if (!status)
                status = st;
        } else {
            print_signed(cli, &res, tc->name, subs[k].id, role, ndirs == 1);
            signed_n++;
        }
        bd_sign_result_release(&res);
    }
    if (ndirs > 1 && !cli->json)
        printf("signed %zu of %zu subjects as %s; next: %s\n", signed_n, ndirs,
               bd_provenance_role_str(role),
               role == BD_ROLE_AUTHOR
                   ? "a second person signs them with `benchdesk sign DIR... --role reviewer`"
                   : "`benchdesk stage` the cases signed by two people and `benchdesk commit`");
out:
    bd_config_release(&cfg);
    bd_prov_ctx_free(ctx);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    for (size_t k = 0; subs && k < ndirs; k++) {
        free(subs[k].root);
        free(subs[k].tc);
        free(subs[k].id);
    }
    free(subs);
    return status;
}
