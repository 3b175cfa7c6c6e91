/*
 * lg2.c — the libgit2 table (lg2.h).
 */
#define BD_LG2_TABLE_ONLY
#include "lg2.h"

#include "lazylib.h"

#ifndef BD_LIBGIT2_SONAME
#error "the build sets BD_LIBGIT2_SONAME (cmake/lazylibs.cmake)"
#endif

bd_lg2_table bd_lg2;

BD_LAZYLIB_DEFINE(bd_lg2, BD_LG2_FUNCS, bd_lg2_load, BD_LIBGIT2_SONAME, BD_LIBGIT2_PACKAGE)
