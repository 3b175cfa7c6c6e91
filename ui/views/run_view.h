/*
 * views/run_view.h — the live run (ui/session.c owns it; this view only draws it).
 */
#ifndef BD_UI_VIEWS_RUN_VIEW_H
#define BD_UI_VIEWS_RUN_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_run;

/* It hears BD_EV_CONCERN (app.h): the breakdown panel's Enter. A run starts with
 * bd_ui_run_open (session.h). */

#endif
