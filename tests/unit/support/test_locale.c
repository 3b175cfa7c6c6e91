#include "test_locale.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int bd_test_comma_locale(const char *tag)
{
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "nl_NL.UTF-8"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (setlocale(LC_NUMERIC, names[i]))
            return 0;
    const char *bdir = getenv("BD_BUILD_DIR");
    if (!bdir)
        return -1;
    char dir[1024], cmd[2300];
    snprintf(dir, sizeof(dir), "%s/test-locale-%s", bdir, tag);
    mkdir(dir, 0700);
    snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1", dir);
    if (system(cmd) != 0)
        return -1;
    setenv("LOCPATH", dir, 1);
    return setlocale(LC_NUMERIC, "de_DE.UTF-8") ? 0 : -1;
}
