/*
 * lazylib.c — opening a library on first use (lazylib.h).
 */
#include "lazylib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void load_locked(bd_lazylib *lib)
{
    void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(lib->why, sizeof(lib->why), "%s", e ? e : "not found");
        lib->state = -1;
        return;
    }
    for (size_t i = 0; i < lib->n; i++) {
        (void)dlerror();
        void *s = dlsym(h, lib->names[i]);
        if (!s) {
            snprintf(lib->why, sizeof(lib->why), "it has no symbol %s (another version?)",
                     lib->names[i]);
            lib->state = -1;
            return; /* h stays open: a half-bound library is never used, never unmapped */
        }
        lib->syms[i] = s;
    }
    memcpy(lib->table, lib->syms, lib->n * sizeof(void *));
    lib->state = 1;
}

int bd_lazylib_load(bd_lazylib *lib, bd_code code, bd_err *err)
{
    pthread_mutex_lock(&lib->mu);
    if (lib->state == 0)
        load_locked(lib);
    int state = lib->state;
    pthread_mutex_unlock(&lib->mu);
    if (state > 0)
        return 0;
    return bd_err_set(err, code, NULL, 0, 0, "cannot load %s: %s; install the Debian package %s",
                      lib->soname, lib->why, lib->package);
}
