/*
 * xml2.h — libxml2, opened when a command first writes an HTML or JUnit report
 * (lazylib.h).
 *
 * report_html.c and report_junit.c include this instead of libxml2's headers: each
 * libxml2 function they call is a pointer in bd_xml2, filled by bd_xml2_load(), which
 * bd_report_html() and bd_report_junit() call before anything else. xmlFree is a variable of
 * libxml2's (a function pointer): the table holds its address. A call to a function not listed
 * fails to build.
 */
#ifndef BD_XML2_H
#define BD_XML2_H

#include <libxml/HTMLtree.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>

#include "err.h"

/* Every libxml2 function the report writers call. */
#define BD_XML2_FUNCS(X)                                                                           \
    X(htmlDocDumpMemoryFormat)                                                                     \
    X(htmlNewDocNoDtD)                                                                             \
    X(xmlAddChild)                                                                                 \
    X(xmlBufferContent)                                                                            \
    X(xmlBufferCreate)                                                                             \
    X(xmlBufferFree)                                                                               \
    X(xmlBufferLength)                                                                             \
    X(xmlCreateIntSubset)                                                                          \
    X(xmlDocSetRootElement)                                                                        \
    X(xmlFreeDoc)                                                                                  \
    X(xmlFreeNode)                                                                                 \
    X(xmlFree)                                                                                     \
    X(xmlFreeTextWriter)                                                                           \
    X(xmlNewChild)                                                                                 \
    X(xmlNewDocNode)                                                                               \
    X(xmlNewDocText)                                                                               \
    X(xmlNewProp)                                                                                  \
    X(xmlNewTextWriterMemory)                                                                      \
    X(xmlTextWriterEndDocument)                                                                    \
    X(xmlTextWriterEndElement)                                                                     \
    X(xmlTextWriterSetIndent)                                                                      \
    X(xmlTextWriterSetIndentString)                                                                \
    X(xmlTextWriterStartDocument)                                                                  \
    X(xmlTextWriterStartElement)                                                                   \
    X(xmlTextWriterWriteAttribute)                                                                 \
    X(xmlTextWriterWriteFormatAttribute)                                                           \
    X(xmlTextWriterWriteString)

typedef struct bd_xml2_table {
#define BD_XML2_SLOT(fn) __typeof__(fn) *fn;
    BD_XML2_FUNCS(BD_XML2_SLOT)
#undef BD_XML2_SLOT
} bd_xml2_table;

/* Filled by bd_xml2_load(); read only after it returned 0. */
extern bd_xml2_table bd_xml2;

/* Open libxml2 (BD_LIBXML2_SONAME, from the build) and bind every function above, once
 * per process. Returns 0, or -1 with err set (env.library_missing). */
int bd_xml2_load(bd_err *err);

/* From here on, a call to one of the functions is a call through the table (xml2.c, which
 * names the functions to bind them, defines BD_XML2_TABLE_ONLY). */
#ifndef BD_XML2_TABLE_ONLY
#define htmlDocDumpMemoryFormat           (bd_xml2.htmlDocDumpMemoryFormat)
#define htmlNewDocNoDtD                   (bd_xml2.htmlNewDocNoDtD)
#define xmlAddChild                       (bd_xml2.xmlAddChild)
#define xmlBufferContent                  (bd_xml2.xmlBufferContent)
#define xmlBufferCreate                   (bd_xml2.xmlBufferCreate)
#define xmlBufferFree                     (bd_xml2.xmlBufferFree)
#define xmlBufferLength                   (bd_xml2.xmlBufferLength)
#define xmlCreateIntSubset                (bd_xml2.xmlCreateIntSubset)
#define xmlDocSetRootElement              (bd_xml2.xmlDocSetRootElement)
#define xmlFreeDoc                        (bd_xml2.xmlFreeDoc)
#define xmlFreeNode                       (bd_xml2.xmlFreeNode)
#define xmlFree                           (*bd_xml2.xmlFree) /* a variable: the table holds its address */
#define xmlFreeTextWriter                 (bd_xml2.xmlFreeTextWriter)
#define xmlNewChild                       (bd_xml2.xmlNewChild)
#define xmlNewDocNode                     (bd_xml2.xmlNewDocNode)
#define xmlNewDocText                     (bd_xml2.xmlNewDocText)
#define xmlNewProp                        (bd_xml2.xmlNewProp)
#define xmlNewTextWriterMemory            (bd_xml2.xmlNewTextWriterMemory)
#define xmlTextWriterEndDocument          (bd_xml2.xmlTextWriterEndDocument)
#define xmlTextWriterEndElement           (bd_xml2.xmlTextWriterEndElement)
#define xmlTextWriterSetIndent            (bd_xml2.xmlTextWriterSetIndent)
#define xmlTextWriterSetIndentString      (bd_xml2.xmlTextWriterSetIndentString)
#define xmlTextWriterStartDocument        (bd_xml2.xmlTextWriterStartDocument)
#define xmlTextWriterStartElement         (bd_xml2.xmlTextWriterStartElement)
#define xmlTextWriterWriteAttribute       (bd_xml2.xmlTextWriterWriteAttribute)
#define xmlTextWriterWriteFormatAttribute (bd_xml2.xmlTextWriterWriteFormatAttribute)
#define xmlTextWriterWriteString          (bd_xml2.xmlTextWriterWriteString)
#endif

#endif
