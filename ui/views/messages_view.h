/*
 * views/messages_view.h — the last messages (errors, warnings, notices), whole and wrapped.
 */
#ifndef BD_UI_VIEWS_MESSAGES_VIEW_H
#define BD_UI_VIEWS_MESSAGES_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_messages;

#endif
