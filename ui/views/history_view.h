/*
 * views/history_view.h — the chained history, newest first, scoped to a task class or case.
 */
#ifndef BD_UI_VIEWS_HISTORY_VIEW_H
#define BD_UI_VIEWS_HISTORY_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_history;

#endif
