#include "cli.h"

/* Placeholder until the runner lands; replaced wholesale by src/cli/cmd_recommend.c's owner. */
int cmd_recommend(bd_cli *cli, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    bd_err err = BD_ERR_INIT;
    bd_err_set(&err, BD_E_USAGE, NULL, 0, 0, "recommend is not available in this build");
    return cli_fail(cli, &err);
}
