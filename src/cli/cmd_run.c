#include "cli.h"

/* Placeholder until the runner lands; replaced wholesale by src/cli/cmd_run.c's owner. */
int cmd_run(bd_cli *cli, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    bd_err err = BD_ERR_INIT;
    bd_err_set(&err, BD_E_USAGE, NULL, 0, 0, "run is not available in this build");
    return cli_fail(cli, &err);
}
