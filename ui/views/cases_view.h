/*
 * views/cases_view.h — the cases of one task class: digest, provenance, last score; filter and
 * sort.
 */
#ifndef BD_UI_VIEWS_CASES_VIEW_H
#define BD_UI_VIEWS_CASES_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_cases;

#endif
