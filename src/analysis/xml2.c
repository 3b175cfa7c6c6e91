/*
 * xml2.c — the libxml2 table (xml2.h).
 */
#define BD_XML2_TABLE_ONLY
#include "xml2.h"

#include "lazylib.h"

#ifndef BD_LIBXML2_SONAME
#error "the build sets BD_LIBXML2_SONAME (cmake/lazylibs.cmake)"
#endif

bd_xml2_table bd_xml2;

BD_LAZYLIB_DEFINE(bd_xml2, BD_XML2_FUNCS, bd_xml2_load, BD_LIBXML2_SONAME, BD_LIBXML2_PACKAGE)
