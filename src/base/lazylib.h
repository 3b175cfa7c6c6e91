/*
 * lazylib.h — a shared library opened the first time a command needs it, not at start.
 *
 * Every library a binary links is mapped and relocated before main runs, by every
 * command, needed or not; libgit2 and libxml2 bring 20 of benchdesk's 37 (Kerberos,
 * libssh2, mbed TLS, ICU, libstdc++) and made a bare start take about three times what
 * it takes without them (docs/architecture.md#lazy-libraries). The few commands that
 * stage, commit or write an HTML or JUnit report open them here instead, by their
 * soname, and call them through a table of typed pointers.
 */
#ifndef BD_LAZYLIB_H
#define BD_LAZYLIB_H

#include <pthread.h>
#include <stddef.h>

#include "err.h"

typedef struct bd_lazylib {
    const char *soname;       /* dlopen()ed by this name, e.g. "libgit2.so.1.5" */
    const char *package;      /* the Debian package that ships it, for the message */
    const char *const *names; /* the symbols to resolve */
    size_t n;
    void **syms; /* n slots, filled as they resolve */
    /* The caller's typed table: n pointers in the order of names, nothing else (a
     * function pointer has the size and representation of the void * dlsym() returns,
     * as POSIX requires; BD_LAZYLIB_DEFINE checks the size when it compiles). Filled
     * only once every symbol resolved. */
    void *table;
    pthread_mutex_t mu; /* PTHREAD_MUTEX_INITIALIZER */
    int state;          /* 0 not tried, 1 loaded, -1 failed (why says why) */
    char why[320];
} bd_lazylib;

/* One symbol's name, for BD_LAZYLIB_DEFINE's list. */
#define BD_LAZYLIB_NAME(fn) #fn,

/* In a library's own .c file: `tbl` (already declared, of a struct type holding one
 * pointer per entry of FUNCS, in that order) and `int load(bd_err *err)`, which opens
 * `soname` and fills the table once per process (bd_lazylib_load, env.library_missing). */
#define BD_LAZYLIB_DEFINE(tbl, FUNCS, load, soname_, package_)                                     \
    static const char *const tbl##_names[] = {FUNCS(BD_LAZYLIB_NAME)};                             \
    static void *tbl##_syms[sizeof(tbl##_names) / sizeof(tbl##_names[0])];                         \
    _Static_assert(sizeof(tbl) == sizeof(tbl##_syms), #tbl " must hold one pointer per name");     \
    static bd_lazylib tbl##_lib = {                                                                \
        .soname = soname_,                                                                         \
        .package = package_,                                                                       \
        .names = tbl##_names,                                                                      \
        .n = sizeof(tbl##_names) / sizeof(tbl##_names[0]),                                         \
        .syms = tbl##_syms,                                                                        \
        .table = &tbl,                                                                             \
        .mu = PTHREAD_MUTEX_INITIALIZER,                                                           \
    };                                                                                             \
    int load(bd_err *err)                                                                          \
    {                                                                                              \
        return bd_lazylib_load(&tbl##_lib, BD_E_LIBRARY_MISSING, err);                             \
    }

/* Open lib and resolve its symbols, once per process (the outcome is kept: a failure
 * is not retried). Thread-safe. Returns 0, or -1 with err set to `code` naming the
 * soname, the loader's reason and the package to install. The library is never closed. */
int bd_lazylib_load(bd_lazylib *lib, bd_code code, bd_err *err);

#endif
