/*
 * views/stage_view.h — git status of bench/ and audit/: stage, unstage, commit.
 */
#ifndef BD_UI_VIEWS_STAGE_VIEW_H
#define BD_UI_VIEWS_STAGE_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_stage;

#endif
