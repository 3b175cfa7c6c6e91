/*
 * jail_probe.c — whether the `namespaces` jail can be built on this machine: the probe
 * child builds the whole jail and loads the real filter; its parent words why not, with
 * the kernel setting that explains a refusal.
 */
#include "jail.h"
#include "jail_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>
#include <sys/wait.h>

int bd_jail_probe_child(void)
{
    bd_err e = BD_ERR_INIT;
    int code = 0;
    if (bd_jail_child(&e) != 0) {
        code = 1;
    } else {
        /* The real filter: proves the kernel takes it. */
        if (bd_jail_lockdown(&e) != 0)
            code = 2;
    }
    if (code != 0 && bd_jail.report_wr >= 0) {
        char line[sizeof(e.msg) + 16];
        int n = snprintf(line, sizeof(line), "%d %s", bd_jail_errno(), e.msg);
        if (n > 0) {
            ssize_t w =
                write(bd_jail.report_wr, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
            (void)w;
        }
    }
    return code;
}

/* -1 when unreadable. */
static long read_knob(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

/* The kernel knobs that explain a refusal, as one hint ("" when none applies). */
static void knob_hint(char *hint, size_t len)
{
    hint[0] = '\0';
    if (read_knob("/proc/sys/user/max_user_namespaces") == 0)
        snprintf(hint, len, "; user namespaces are disabled (sysctl user.max_user_namespaces=0)");
    else if (geteuid() != 0 && read_knob("/proc/sys/kernel/unprivileged_userns_clone") == 0)
        snprintf(hint, len,
                 "; unprivileged user namespaces are disabled (sysctl "
                 "kernel.unprivileged_userns_clone=0; set it to 1)");
    else if (read_knob("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
        snprintf(hint, len,
                 "; AppArmor restricts unprivileged user namespaces (sysctl "
                 "kernel.apparmor_restrict_unprivileged_userns=1): give benchdesk an AppArmor "
                 "profile with 'userns,' or set the sysctl to 0");
}

bool bd_jail_probe_finish(pid_t child, int clone_errno, char *why, size_t whylen)
{
    char hint[256];
    knob_hint(hint, sizeof(hint));
    bool ok = false;
    if (child < 0) {
        snprintf(why, whylen,
                 "namespaces isolation is unavailable on this machine: the kernel refused new "
                 "user/PID/mount/network namespaces (%s)%s",
                 strerror(clone_errno), hint);
        bd_jail_release_all();
        return false;
    }
    bd_err e = BD_ERR_INIT;
    if (bd_jail_parent(child, &e) != 0) {
        snprintf(why, whylen, "namespaces isolation is unavailable on this machine: %s (%s)%s",
                 e.msg, strerror(bd_jail_errno()), hint);
        kill(child, SIGKILL);
    }
    int status = 0;
    pid_t w;
    while ((w = waitpid(child, &status, 0)) < 0 && errno == EINTR)
        ;
    if (e.code != BD_OK)
        goto out;
    if (w == child && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ok = true;
        goto out;
    }
    char report[512] = "";
    if (bd_jail.report_rd >= 0) {
        int fl = fcntl(bd_jail.report_rd, F_GETFL);
        fcntl(bd_jail.report_rd, F_SETFL, fl | O_NONBLOCK);
        ssize_t n = read(bd_jail.report_rd, report, sizeof(report) - 1);
        report[n > 0 ? n : 0] = '\0';
    }
    int err_no = 0;
    char *what = report;
    if (report[0]) {
        err_no = (int)strtol(report, &what, 10);
        while (*what == ' ')
            what++;
    }
    if (what[0]) {
        const char *extra = "";
        if (strstr(what, "/proc") && err_no == EPERM)
            extra = "; the host's /proc has masked or covered paths (inside a container?): "
                    "the kernel refuses a fresh /proc there";
        snprintf(why, whylen, "namespaces isolation is unavailable on this machine: %s (%s)%s%s",
                 what, strerror(err_no), extra, hint);
    } else if (w == child && WIFSIGNALED(status)) {
        snprintf(why, whylen,
                 "namespaces isolation is unavailable on this machine: the probe died of "
                 "signal %d%s",
                 WTERMSIG(status), hint);
    } else {
        snprintf(why, whylen,
                 "namespaces isolation is unavailable on this machine: the probe failed%s", hint);
    }
out:
    bd_jail_release_all();
    return ok;
}
