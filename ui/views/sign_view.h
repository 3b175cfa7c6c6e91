/*
 * views/sign_view.h — the exact message to sign, the key, the role; signs and reopens the case.
 */
#ifndef BD_UI_VIEWS_SIGN_VIEW_H
#define BD_UI_VIEWS_SIGN_VIEW_H

#include "app.h"

extern const bd_view_ops bd_view_sign;

#endif
