/*
 * views/record_view.h — recording a case's cassette from the live SUT, then its diff
 * (docs/recording.md).
 */
#ifndef BD_UI_VIEWS_RECORD_VIEW_H
#define BD_UI_VIEWS_RECORD_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_record;

#endif
