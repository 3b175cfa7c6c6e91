/*
 * views/review_view.h — the review queue of a task class, and giving signed verdicts.
 */
#ifndef BD_UI_VIEWS_REVIEW_VIEW_H
#define BD_UI_VIEWS_REVIEW_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_review;

#endif
