/*
 * views/breakdown_view.h — the run view's breakdown panel: failure modes by count, breakdown key
 * means.
 */
#ifndef BD_UI_VIEWS_BREAKDOWN_VIEW_H
#define BD_UI_VIEWS_BREAKDOWN_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_breakdown;

#endif
