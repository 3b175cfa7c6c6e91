/*
 * views/compare_view.h — two runs side by side, regressions first (docs/compare.md).
 */
#ifndef BD_UI_VIEWS_COMPARE_VIEW_H
#define BD_UI_VIEWS_COMPARE_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_compare;

#endif
