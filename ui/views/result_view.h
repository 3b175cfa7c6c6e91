/*
 * views/result_view.h — one scored case: score, breakdown, failure modes, stderr, the structural
 * diff.
 */
#ifndef BD_UI_VIEWS_RESULT_VIEW_H
#define BD_UI_VIEWS_RESULT_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_result;

#endif
