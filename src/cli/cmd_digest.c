#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"
#include "digest.h"

static const char digest_help[] =
    "usage: benchdesk digest PATH [--json]\n\n"
    "Prints the digest of PATH as blake3:<64 hex> (docs/formats.md#digests). For a\n"
    "task-class directory (one holding registration.yaml) this is the task-class digest over\n"
    "registration.yaml and rubric.py; for any other directory, the case digest (every\n"
    "regular file except the top-level provenance.yaml, sorted, with type, path and size\n"
    "framing); for a file, the BLAKE3 of its bytes.\n"
    "Symbolic links and special files are refused, never followed.\n";

int cmd_digest(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(digest_help);
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage(cli, "digest", "digest takes exactly one PATH");
    const char *path = argv[1];
    bd_err err = BD_ERR_INIT;
    struct stat st;
    if (lstat(path, &st) != 0) {
        bd_err_errno(&err, errno == ENOENT ? BD_E_USAGE : BD_E_IO, errno, path, "cannot digest");
        return cli_fail(cli, &err);
    }
    char out[BD_DIGEST_BUF];
    int rc;
    const char *kind = "file";
    if (S_ISDIR(st.st_mode)) {
        char reg[4200];
        struct stat rs;
        snprintf(reg, sizeof(reg), "%s/registration.yaml", path);
        kind = lstat(reg, &rs) == 0 ? "task-class" : "case";
    }
    if (kind[0] == 't')
        rc = bd_digest_task_class_dir(out, path, &err);
    else if (kind[0] == 'c')
        rc = bd_digest_case_dir(out, path, NULL, &err);
    else
        rc = bd_digest_file(out, path, &err);
    if (rc != 0)
        return cli_fail(cli, &err);
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", path);
        cJSON_AddStringToObject(o, "kind", kind);
        cJSON_AddStringToObject(o, "digest", out);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        printf("%s\n", out);
    }
    return 0;
}
