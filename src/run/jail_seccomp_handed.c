/*
 * jail_seccomp_handed.c — the seccomp filter in the supervisor program
 * (exec_supervisor.c): it compiles none. Its warm server compiled the filter once
 * (jail_seccomp.c) and hands it over on the command line (bd_jail_filter_from_hex), so
 * the program links no libseccomp and can be built against a small C library whose start
 * costs less (docs/runner.md#the-supervisor-program-on-a-small-c-library).
 */
#include "jail.h"
#include "jail_state.h"

#include <errno.h>

int bd_jail_build_filter(bd_err *err)
{
    return bd_jail_build_filter_laid_out(true, err);
}

int bd_jail_build_filter_laid_out(bool tree, bd_err *err)
{
    (void)tree;
    errno = ENOSYS;
    return bd_jail_fail(err, "the supervisor program was handed no seccomp filter by its "
                             "warm server (it compiles none itself)");
}

void bd_jail_server_init(void)
{
    /* The filter, when there is one, came with the command line. */
}
