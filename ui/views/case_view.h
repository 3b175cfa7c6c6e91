/*
 * views/case_view.h — one case: case.yaml rendered, provenance, the files of input/ and expected/.
 */
#ifndef BD_UI_VIEWS_CASE_VIEW_H
#define BD_UI_VIEWS_CASE_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_case;

#endif
