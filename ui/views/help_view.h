/*
 * views/help_view.h — the keys of the view it was opened from, then the keys that work everywhere.
 */
#ifndef BD_UI_VIEWS_HELP_VIEW_H
#define BD_UI_VIEWS_HELP_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_help;

#endif
