#include "editor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

const char *bd_editor_command(void)
{
    const char *v = getenv("VISUAL");
    if (v && v[0])
        return v;
    v = getenv("EDITOR");
    return v && v[0] ? v : "vi";
}

int bd_editor_path(char *out, size_t cap, const char *base, const char *rel, bd_err *err)
{
    if (!rel || !rel[0] || rel[0] == '/')
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                          "give a path inside the folder (e.g. case.yaml, input/prompt.txt)");
    for (const char *p = rel; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "the path holds a control character");
    for (const char *c = rel; c && *c;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 2 && strncmp(c, "..", 2) == 0))
            return bd_err_set(err, BD_E_USAGE, NULL, 0, 0,
                              "'%s' leaves the folder: give a path inside it", rel);
        c += n;
        if (*c == '/')
            c++;
    }
    if ((size_t)snprintf(out, cap, "%s/%s", base, rel) >= cap)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "the path is too long");
    return 0;
}

int bd_editor_run(const char *path, bd_err *err)
{
    const char *cmd = bd_editor_command();
    int status = 0;
    if (bd_exec_foreground(cmd, path, &status, err) < 0)
        return -1;
    if (status == 127)
        return bd_err_set(err, BD_E_SPAWN, NULL, 0, 0,
                          "the editor '%s' was not found; set $EDITOR (or $VISUAL) to one that "
                          "is installed",
                          cmd);
    return 0;
}
