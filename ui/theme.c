/*
 * theme.c — colour roles (app.h's BD_UI_ROLES) mapped by the files in themes/.
 *
 *   schema_version: 1
 *   name: default
 *   description: ...
 *   roles:
 *     title: {fg: white, bg: blue, attrs: [bold]}
 *
 * Colours: default, black, red, green, yellow, blue, magenta, cyan, white. Attributes:
 * bold, dim, reverse, underline. Anything else is refused with its line, so a theme
 * can never name a role the code does not have.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "ydoc.h"

#ifndef BD_THEMES_DIR
#define BD_THEMES_DIR "themes"
#endif

static const char *const role_names[] = {
#define BD_X(id, name, fg, bg, attrs) name,
    BD_UI_ROLES(BD_X)
#undef BD_X
};

static const bd_role_spec role_defaults[] = {
#define BD_X(id, name, fg, bg, attrs) {fg, bg, attrs},
    BD_UI_ROLES(BD_X)
#undef BD_X
};

static attr_t role_attrs[BD_R__COUNT];

const char *bd_role_name(bd_role r)
{
    return r < BD_R__COUNT ? role_names[r] : "";
}

static const struct {
    const char *name;
    short colour;
} colours[] = {{"default", -1},
               {"black", COLOR_BLACK},
               {"red", COLOR_RED},
               {"green", COLOR_GREEN},
               {"yellow", COLOR_YELLOW},
               {"blue", COLOR_BLUE},
               {"magenta", COLOR_MAGENTA},
               {"cyan", COLOR_CYAN},
               {"white", COLOR_WHITE}};

static const struct {
    const char *name;
    attr_t attr;
} attr_names[] = {
    {"bold", A_BOLD}, {"dim", A_DIM}, {"reverse", A_REVERSE}, {"underline", A_UNDERLINE}};

static int bad(bd_err *err, const char *path, const bd_ynode *n, const char *what)
{
    return bd_err_set(err, BD_E_CONFIG_SCHEMA, path, n ? n->line : 0, n ? n->col : 0,
                      "%s; fix the theme file (roles, colours and attributes are listed in "
                      "docs/user-guide.md)",
                      what);
}

static int parse_colour(short *out, const bd_ynode *n, const char *path, bd_err *err)
{
    if (n->kind == BD_Y_SCALAR)
        for (size_t i = 0; i < sizeof(colours) / sizeof(colours[0]); i++)
            if (strcmp(n->str, colours[i].name) == 0) {
                *out = colours[i].colour;
                return 0;
            }
    char clip[64], msg[160];
    bd_ydoc_clip(clip, sizeof(clip), n->kind == BD_Y_SCALAR ? n->str : "(not a scalar)");
    snprintf(msg, sizeof(msg),
             "unknown colour '%s' (default, black, red, green, yellow, blue, magenta, cyan, "
             "white)",
             clip);
    return bad(err, path, n, msg);
}

static int parse_role(bd_role_spec *spec, const bd_ynode *v, const char *path, bd_err *err)
{
    if (v->kind != BD_Y_MAP)
        return bad(err, path, v, "a role must be a mapping {fg, bg, attrs}");
    for (size_t i = 0; i < v->n; i++) {
        const char *k = v->pairs[i].key->str;
        const bd_ynode *val = v->pairs[i].value;
        if (strcmp(k, "fg") == 0) {
            if (parse_colour(&spec->fg, val, path, err) < 0)
                return -1;
        } else if (strcmp(k, "bg") == 0) {
            if (parse_colour(&spec->bg, val, path, err) < 0)
                return -1;
        } else if (strcmp(k, "attrs") == 0) {
            if (val->kind != BD_Y_SEQ)
                return bad(err, path, val, "attrs must be a list");
            spec->attrs = 0;
            for (size_t a = 0; a < val->n; a++) {
                const bd_ynode *it = val->items[a];
                size_t x = 0;
                for (; it->kind == BD_Y_SCALAR && x < sizeof(attr_names) / sizeof(attr_names[0]);
                     x++)
                    if (strcmp(it->str, attr_names[x].name) == 0)
                        break;
                if (it->kind != BD_Y_SCALAR || x == sizeof(attr_names) / sizeof(attr_names[0]))
                    return bad(err, path, it, "unknown attribute (bold, dim, reverse, underline)");
                spec->attrs |= attr_names[x].attr;
            }
        } else {
            char clip[64], msg[128];
            bd_ydoc_clip(clip, sizeof(clip), k);
            snprintf(msg, sizeof(msg), "unknown key '%s' in a role (fg, bg, attrs)", clip);
            return bad(err, path, v->pairs[i].key, msg);
        }
    }
    return 0;
}

static int parse_theme(bd_theme *t, const bd_ydoc *doc, const char *path, bd_err *err)
{
    const bd_ynode *root = doc->root;
    if (!root || root->kind != BD_Y_MAP)
        return bad(err, path, root, "a theme is a mapping with schema_version, name, roles");
    bool have_version = false;
    for (size_t i = 0; i < root->n; i++) {
        const char *k = root->pairs[i].key->str;
        const bd_ynode *v = root->pairs[i].value;
        if (strcmp(k, "schema_version") == 0) {
            if (v->kind != BD_Y_SCALAR || strcmp(v->str, "1") != 0)
                return bad(err, path, v, "schema_version must be 1");
            have_version = true;
        } else if (strcmp(k, "name") == 0) {
            if (v->kind != BD_Y_SCALAR)
                return bad(err, path, v, "name must be a string");
            bd_ydoc_clip(t->name, sizeof(t->name), v->str);
        } else if (strcmp(k, "description") == 0) {
            if (v->kind != BD_Y_SCALAR)
                return bad(err, path, v, "description must be a string");
        } else if (strcmp(k, "roles") == 0) {
            if (v->kind != BD_Y_MAP)
                return bad(err, path, v, "roles must be a mapping of role names");
            for (size_t r = 0; r < v->n; r++) {
                const char *rn = v->pairs[r].key->str;
                size_t id = 0;
                while (id < BD_R__COUNT && strcmp(role_names[id], rn) != 0)
                    id++;
                if (id == BD_R__COUNT) {
                    char clip[64], msg[160];
                    bd_ydoc_clip(clip, sizeof(clip), rn);
                    snprintf(msg, sizeof(msg), "unknown role '%s'", clip);
                    return bad(err, path, v->pairs[r].key, msg);
                }
                if (parse_role(&t->roles[id], v->pairs[r].value, path, err) < 0)
                    return -1;
            }
        } else {
            char clip[64], msg[160];
            bd_ydoc_clip(clip, sizeof(clip), k);
            snprintf(msg, sizeof(msg),
                     "unknown key '%s' (schema_version, name, description, roles)", clip);
            return bad(err, path, root->pairs[i].key, msg);
        }
    }
    if (!have_version)
        return bad(err, path, root, "schema_version is missing");
    return 0;
}

/* The theme names found in `dir`, comma separated, into out. */
static void list_themes(const char *dir, char *out, size_t cap)
{
    size_t len = strlen(out);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || strcmp(e->d_name + n - 5, ".yaml") != 0)
            continue;
        int w = snprintf(out + len, cap - len, "%s%.*s", len ? ", " : "", (int)(n - 5), e->d_name);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
    closedir(d);
}

/* The directories a theme name is looked up in, most specific first:
 *   $BENCHDESK_THEMES_DIR                      an explicit override;
 *   $XDG_CONFIG_HOME/benchdesk/themes          the user's own themes (~/.config when unset);
 *   <binary>/../share/benchdesk/themes         an installed tree, found from the running
 *                                              binary so an unpacked or relocated install works;
 *   BD_THEMES_DIR                              the source tree, for a binary run from its build.
 * Returns how many were written into dirs (unset or unresolvable ones are left out). */
#define BD_THEME_DIRS 4
static size_t theme_dirs(char dirs[BD_THEME_DIRS][4096])
{
    size_t n = 0;
    const char *env = getenv("BENCHDESK_THEMES_DIR");
    if (env && env[0])
        snprintf(dirs[n++], 4096, "%s", env);
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(dirs[n++], 4096, "%s/benchdesk/themes", xdg);
    else if (home && home[0] == '/')
        snprintf(dirs[n++], 4096, "%s/.config/benchdesk/themes", home);
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(dirs[n++], 4096, "%s/../share/benchdesk/themes", exe);
        }
    }
    snprintf(dirs[n++], 4096, "%s", BD_THEMES_DIR);
    return n;
}

int bd_theme_load(bd_theme *out, const char *name_or_path, bd_err *err)
{
    int rc = -1;
    char path[4096] = "";
    bd_ydoc *doc = NULL;
    memset(out, 0, sizeof(*out));
    memcpy(out->roles, role_defaults, sizeof(role_defaults));

    if (strchr(name_or_path, '/')) {
        snprintf(path, sizeof(path), "%s", name_or_path);
    } else {
        if (!bd_name_valid(name_or_path)) {
            char clip[64];
            bd_ydoc_clip(clip, sizeof(clip), name_or_path);
            return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                              "'%s' is not a theme name; use one of themes/*.yaml or a path", clip);
        }
        char dirs[BD_THEME_DIRS][4096];
        size_t nd = theme_dirs(dirs);
        for (size_t i = 0; i < nd && !path[0]; i++) {
            char cand[4200];
            struct stat st;
            snprintf(cand, sizeof(cand), "%s/%s.yaml", dirs[i], name_or_path);
            if (lstat(cand, &st) == 0)
                snprintf(path, sizeof(path), "%s", cand);
        }
        if (!path[0]) {
            char avail[512] = "", looked[1024] = "";
            for (size_t i = 0; i < nd; i++) {
                list_themes(dirs[i], avail, sizeof(avail));
                size_t l = strlen(looked);
                snprintf(looked + l, sizeof(looked) - l, "%s%s", l ? ", " : "", dirs[i]);
            }
            return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                              "no theme '%s' (looked in %s); available: %s", name_or_path, looked,
                              avail[0] ? avail : "none found");
        }
    }
    if (bd_ydoc_load(&doc, path, err) < 0)
        goto out;
    snprintf(out->name, sizeof(out->name), "%s", name_or_path);
    if (parse_theme(out, doc, path, err) < 0)
        goto out;
    out->colour = false;
    for (size_t i = 0; i < BD_R__COUNT; i++)
        if (out->roles[i].fg != -1 || out->roles[i].bg != -1)
            out->colour = true;
    rc = 0;
out:
    bd_ydoc_free(doc);
    return rc;
}

void bd_theme_apply(bd_theme *t)
{
    if (t->colour && has_colors()) {
        start_color();
        use_default_colors();
        for (size_t i = 0; i < BD_R__COUNT; i++)
            init_pair((short)(i + 1), t->roles[i].fg, t->roles[i].bg);
    } else {
        t->colour = false;
    }
    for (size_t i = 0; i < BD_R__COUNT; i++)
        role_attrs[i] = t->roles[i].attrs | (t->colour ? COLOR_PAIR((int)(i + 1)) : 0);
}

attr_t bd_role_attr(bd_role r)
{
    return r < BD_R__COUNT ? role_attrs[r] : A_NORMAL;
}
