/*
 * views/recommend_view.h — the tier recommendation for a task class, with its evidence.
 */
#ifndef BD_UI_VIEWS_RECOMMEND_VIEW_H
#define BD_UI_VIEWS_RECOMMEND_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_recommend;

#endif
