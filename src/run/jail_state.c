/*
 * jail_state.c — the state of this process's one `namespaces` jail (jail_state.h), what
 * every step reads and writes, and the few helpers all the jail's files use: the failure
 * with its errno kept, and closing what the jail holds.
 */
#include "jail.h"
#include "jail_state.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* ---- state of this process's one jail --------------------------------------------- */

bd_jail_state bd_jail = {.sync_rd = -1,
                         .sync_wr = -1,
                         .report_rd = -1,
                         .report_wr = -1,
                         .cwd_fd = -1,
                         .tree_fd = {-1, -1}};

static int last_errno;

int bd_jail_errno(void)
{
    return last_errno;
}

void bd_jail_errno_clear(void)
{
    last_errno = 0;
}

int bd_jail_fail(bd_err *err, const char *fmt, ...)
{
    int e = errno;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    last_errno = e;
    bd_err_set(err, BD_E_ISOLATION_UNAVAILABLE, NULL, 0, 0, "%s", what);
    errno = e;
    return -1;
}

void bd_jail_close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void bd_jail_close_shown(void)
{
    for (int i = 0; i < bd_jail.n_shown; i++)
        bd_jail_close_fd(&bd_jail.shown_fd[i]);
}

void bd_jail_release_all(void)
{
    bd_jail_close_fd(&bd_jail.sync_rd);
    bd_jail_close_fd(&bd_jail.sync_wr);
    bd_jail_close_fd(&bd_jail.report_rd);
    bd_jail_close_fd(&bd_jail.report_wr);
    bd_jail_close_fd(&bd_jail.cwd_fd);
    bd_jail_close_shown();
    bd_jail_close_fd(&bd_jail.tree_fd[0]);
    bd_jail_close_fd(&bd_jail.tree_fd[1]);
    bd_jail.ready = false;
    bd_jail.built = false;
}
