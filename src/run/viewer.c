/*
 * viewer.c — run $PAGER/$EDITOR on a text in the foreground (viewer.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "viewer.h"

#include "exec.h"

const char *bd_viewer_command(void)
{
    const char *p = getenv("PAGER");
    if (p && p[0])
        return p;
    p = getenv("EDITOR");
    if (p && p[0])
        return p;
    return "less";
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int bd_viewer_run(const char *text, size_t len, const char *name, bd_err *err)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    char clean[64];
    size_t k = 0;
    for (const char *p = name ? name : "text"; *p && k + 1 < sizeof(clean); p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '.' || *p == '_' || *p == '-')
            clean[k++] = *p;
    clean[k] = '\0';
    char path[4200];
    snprintf(path, sizeof(path), "%s/benchdesk-%s-XXXXXX", tmp, k ? clean : "text");
    int fd = mkstemp(path); /* 0600, O_EXCL */
    if (fd < 0)
        return bd_err_errno(err, BD_E_IO, errno, path,
                            "cannot create a temporary file for the pager");
    if (write_all(fd, text, len) < 0) {
        int e = errno;
        close(fd);
        unlink(path);
        return bd_err_errno(err, BD_E_IO, e, path, "cannot write the temporary file for the pager");
    }
    close(fd);

    const char *cmd = bd_viewer_command();
    int status = 0;
    int rc = bd_exec_foreground(cmd, path, &status, err);
    if (rc == 0 && status == 127)
        rc = bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                        "the pager '%s' was not found; set $PAGER (or $EDITOR) to one that is "
                        "installed",
                        cmd);
    unlink(path);
    return rc;
}
