#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "exec.h"
#include "hash.h"
#include "warm_start.h"
#include "ydoc.h"

static int schema(bd_err *err, const char *path, const bd_ynode *n, const char *what)
{
    return bd_err_set(err, BD_E_CONFIG_SCHEMA, path, n ? n->line : 0, n ? n->col : 0,
                      "%s; fix .benchdesk/config.yaml", what);
}

static int take_string(char **out, const bd_ynode *v, const char *path, const char *key,
                       bd_err *err)
{
    if (v->kind != BD_Y_SCALAR || bd_ynode_is_null(v) || !v->str[0]) {
        char msg[96];
        snprintf(msg, sizeof(msg), "'%s' must be a non-empty string", key);
        return schema(err, path, v, msg);
    }
    *out = strdup(v->str);
    return *out ? 0 : bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
}

/* A plain true or false. */
static int take_bool(bool *out, const bd_ynode *v, const char *path, const char *key, bd_err *err)
{
    bool t = v->kind == BD_Y_SCALAR && v->plain && strcmp(v->str, "true") == 0;
    if (!t && !(v->kind == BD_Y_SCALAR && v->plain && strcmp(v->str, "false") == 0)) {
        char msg[96];
        snprintf(msg, sizeof(msg), "'%s' must be true or false", key);
        return schema(err, path, v, msg);
    }
    *out = t;
    return 0;
}

/* runner: {start: warm|cold} */
static int take_runner(bd_config *out, const bd_ynode *v, const char *path, bd_err *err)
{
    if (v->kind != BD_Y_MAP)
        return schema(err, path, v, "'runner' must be a mapping (runner: {start: warm})");
    for (size_t i = 0; i < v->n; i++) {
        const bd_ynode *k = v->pairs[i].key, *x = v->pairs[i].value;
        if (strcmp(k->str, "start") != 0)
            return schema(err, path, k, "unknown setting under 'runner' (known: start)");
        if (x->kind != BD_Y_SCALAR || bd_start_mode_parse(x->str, &out->start) != 0)
            return schema(err, path, x, "'runner.start' must be warm or cold");
    }
    return 0;
}

int bd_cost_cap_parse(const char *s, double *out)
{
    size_t digits = 0, dots = 0;
    for (const char *p = s; p && *p; p++) {
        if (*p == '.')
            dots++;
        else if (*p >= '0' && *p <= '9')
            digits++;
        else
            return -1;
    }
    if (!s || digits == 0 || dots > 1 || strlen(s) > 32)
        return -1;
    double v = strtod(s, NULL);
    if (!(v >= 0 && v <= BD_COST_CAP_MAX_USD))
        return -1;
    *out = v;
    return 0;
}

int bd_config_load(bd_config *out, const char *root, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    char *dir = bd_path_join(root, ".benchdesk");
    char *path = dir ? bd_path_join(dir, "config.yaml") : NULL;
    bd_ydoc *doc = NULL;
    int rc = -1;
    if (!path) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) {
            rc = 0;
            goto out;
        }
        int e = errno;
        /* EACCES/ENOTDIR come from .benchdesk itself when it is unreadable or not a
         * directory: name the folder, not a config.yaml that may not exist. */
        struct stat dst;
        if (e == EACCES || e == ENOTDIR) {
            if (lstat(dir, &dst) == 0 && !S_ISDIR(dst.st_mode))
                bd_err_set(err, BD_E_IO, dir, 0, 0,
                           "is not a directory; benchdesk keeps its local state there: move "
                           "it away");
            else
                bd_err_errno(err, BD_E_IO, e, dir,
                             "cannot look inside benchdesk's local state folder (fix its "
                             "permissions, e.g. chmod u+rwx)");
        } else {
            bd_err_errno(err, BD_E_IO, e, path, "cannot read the settings");
        }
        goto out;
    }
    if (bd_ydoc_load(&doc, path, err) != 0)
        goto out;
    const bd_ynode *r = doc->root;
    if (!r || bd_ynode_is_null(r)) {
        rc = 0;
        goto out;
    }
    if (r->kind != BD_Y_MAP) {
        schema(err, path, r, "the file must be a mapping of settings");
        goto out;
    }
    for (size_t i = 0; i < r->n; i++) {
        const char *k = r->pairs[i].key->str;
        const bd_ynode *v = r->pairs[i].value;
        if (strcmp(k, "theme") == 0) {
            if (take_string(&out->theme, v, path, k, err))
                goto out;
        } else if (strcmp(k, "python") == 0) {
            if (take_string(&out->python, v, path, k, err))
                goto out;
            if (out->python[0] != '/') {
                schema(err, path, v, "'python' must be an absolute path");
                goto out;
            }
        } else if (strcmp(k, "signing_key") == 0) {
            if (take_string(&out->signing_key, v, path, k, err))
                goto out;
            /* Either case is taken; it is kept in upper case. */
            for (char *c = out->signing_key; *c; c++)
                *c = (char)toupper((unsigned char)*c);
            if (!bd_fpr_valid(out->signing_key)) {
                schema(err, path, v, "'signing_key' must be a 40-hex-digit fingerprint");
                goto out;
            }
        } else if (strcmp(k, "require_signed_runs") == 0) {
            if (take_bool(&out->require_signed_runs, v, path, k, err))
                goto out;
        } else if (strcmp(k, "jobs") == 0) {
            char *end = NULL;
            long j = v->kind == BD_Y_SCALAR && v->plain ? strtol(v->str, &end, 10) : 0;
            if (!end || *end || j < 1 || j > 256) {
                schema(err, path, v, "'jobs' must be an integer from 1 to 256");
                goto out;
            }
            out->jobs = (int)j;
        } else if (strcmp(k, "runner") == 0) {
            if (take_runner(out, v, path, err) != 0)
                goto out;
        } else if (strcmp(k, "cost_cap_usd") == 0) {
            if (v->kind != BD_Y_SCALAR || !v->plain ||
                bd_cost_cap_parse(v->str, &out->cost_cap_usd) != 0) {
                schema(err, path, v,
                       "'cost_cap_usd' must be a number of US dollars from 0 to 1000000000 "
                       "(digits and one '.', e.g. 2.50)");
                goto out;
            }
            out->has_cost_cap = true;
        } else {
            char msg[192];
            snprintf(msg, sizeof(msg),
                     "unknown setting '%.64s' (known: theme, jobs, signing_key, "
                     "require_signed_runs, python, runner, cost_cap_usd)",
                     k);
            schema(err, path, r->pairs[i].key, msg);
            goto out;
        }
    }
    rc = 0;
out:
    if (rc != 0)
        bd_config_release(out);
    bd_ydoc_free(doc);
    free(dir);
    free(path);
    return rc;
}

void bd_config_release(bd_config *c)
{
    if (!c)
        return;
    free(c->theme);
    free(c->signing_key);
    free(c->python);
    memset(c, 0, sizeof(*c));
}

int bd_config_find_python(char **out, const bd_config *cfg, bd_err *err)
{
    const char *want = getenv("BENCHDESK_PYTHON");
    if (!want || !want[0])
        want = cfg && cfg->python ? cfg->python : "python3";
    return bd_exec_find_program(out, want, err);
}
