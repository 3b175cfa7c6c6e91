#include "warm_start.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <uv.h>

#include "fsutil.h"
#include "warm.h"

int bd_start_mode_parse(const char *s, bd_start_mode *out)
{
    if (s && strcmp(s, "warm") == 0)
        *out = BD_START_WARM;
    else if (s && strcmp(s, "cold") == 0)
        *out = BD_START_COLD;
    else
        return -1;
    return 0;
}

/* benchdesk-warm next to this executable (a build tree) or in ../libexec/benchdesk/ (an
 * installation), into buf. */
static bool warm_helper_path(char *buf, size_t cap)
{
    char exe[PATH_MAX];
    size_t len = sizeof(exe);
    if (uv_exepath(exe, &len) != 0)
        return false;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    if (snprintf(buf, cap, "%s/benchdesk-warm", exe) < (int)cap && access(buf, X_OK) == 0)
        return true;
    return snprintf(buf, cap, "%s/../libexec/benchdesk/benchdesk-warm", exe) < (int)cap;
}

/* Why `req` cannot start warm (before anything is made), or NULL. */
static const char *refusal(const bd_warm_req *req, char *why, size_t whylen)
{
#ifndef BD_WARM_PYTHON
    (void)req;
    snprintf(why, whylen, "this build has no warm interpreter (build it with libpython3.11-dev)");
    return why;
#else
    if (req->isolation != BD_ISO_NAMESPACES)
        snprintf(why, whylen, "warm starts need the namespaces isolation class");
    else if (req->sut_command)
        snprintf(why, whylen, "the task class's SUT is a command");
    else if (geteuid() == 0 && req->jobs > (int)BD_WARM_JOBS_ROOT)
        snprintf(why, whylen, "warm interpreters run at most %u cases at once as root",
                 BD_WARM_JOBS_ROOT);
    else if (strcmp(req->python, BD_WARM_PYTHON) != 0)
        snprintf(why, whylen, "the interpreter is %.200s; the warm interpreter embeds %s",
                 req->python, BD_WARM_PYTHON);
    else if (strncmp(req->tmp_root, "/tmp", 4) != 0 ||
             (req->tmp_root[4] != '\0' && req->tmp_root[4] != '/'))
        snprintf(why, whylen, "warm starts need the temp dirs under /tmp (TMPDIR is %.200s)",
                 req->tmp_root);
    else
        return NULL;
    return why;
#endif
}

/* The free space /dev/shm needs to take the staging dir: a case's bytes are there while
 * it runs (one case a slot), and a small /dev/shm (64 MiB in some containers) is left to
 * what else uses it. */
#define SHM_STAGING_FREE_MIN (256ull << 20)

/* Where the run's staging dir goes (docs/runner.md#the-staging-directory): in RAM where it
 * can. The temp root itself when it is a tmpfs; else /dev/shm when it is a tmpfs directory
 * owned by root, open to every user with the sticky bit (as /tmp is), writable here and
 * with SHM_STAGING_FREE_MIN free; else the temp root. */
static const char *staging_parent(const char *tmp_root)
{
    struct statfs fs;
    if (statfs(tmp_root, &fs) == 0 && fs.f_type == TMPFS_MAGIC)
        return tmp_root;
    struct stat st;
    if (statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
        (unsigned long long)fs.f_bavail * (unsigned long long)fs.f_bsize >= SHM_STAGING_FREE_MIN &&
        lstat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
        (st.st_mode & 01777) == 01777 && access("/dev/shm", W_OK | X_OK) == 0)
        return "/dev/shm";
    return tmp_root;
}

bool bd_warm_start_try(bd_exec_ctx *ctx, const bd_warm_req *req, char **staging, char *why,
                       size_t whylen)
{
    *staging = NULL;
    why[0] = '\0';
    if (req->mode == BD_START_COLD || refusal(req, why, whylen))
        return false;
    char helper[PATH_MAX];
    if (!warm_helper_path(helper, sizeof(helper))) {
        snprintf(why, whylen, "cannot find benchdesk's own executable");
        return false;
    }
    const char *parent = staging_parent(req->tmp_root);
    /* The run sweeps its temp root's leftovers of dead runs; /dev/shm's are swept here. */
    if (parent != req->tmp_root)
        (void)bd_tmp_sweep(parent);
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/benchdesk-run-%s-warm-XXXXXX", parent, req->owner_tag) >=
            (int)sizeof(path) ||
        !mkdtemp(path)) {
        snprintf(why, whylen, "cannot create the warm staging directory: %s", strerror(errno));
        return false;
    }
    bd_err e = BD_ERR_INIT;
    if (bd_exec_ctx_set_warm(ctx, helper, req->python, path, req->tmp_root, req->jobs, &e) != 0) {
        snprintf(why, whylen, "%s", e.msg);
        bd_err rm = BD_ERR_INIT;
        (void)bd_remove_tree(path, &rm);
        return false;
    }
    *staging = strdup(path);
    if (!*staging) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    return true;
}
