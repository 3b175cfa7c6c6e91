/*
 * views/tclasses_view.h — the task classes (the first view): tier, signatures, pins, last full run.
 */
#ifndef BD_UI_VIEWS_TCLASSES_VIEW_H
#define BD_UI_VIEWS_TCLASSES_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_tclasses;

#endif
