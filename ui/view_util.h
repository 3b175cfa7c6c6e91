/*
 * view_util.h — small pieces the list views share.
 */
#ifndef BD_UI_VIEW_UTIL_H
#define BD_UI_VIEW_UTIL_H

#include <stddef.h>

#include "app.h"

/* "3/18", or "3/5 (of 18)" while a filter hides rows; "empty" for no rows. */
void bd_view_list_position(const bd_list *l, char *out, size_t cap);

/* While the list is filtered, show "/<filter>" at the right of the body's last line. */
void bd_view_draw_filter_note(bd_view *v, WINDOW *w, const bd_list *l);

/* Human size: "532 B", "1.2 KiB", "3.4 MiB". */
void bd_human_size(char *out, size_t cap, unsigned long long bytes);

/* Format a duration in ms: "850 ms", "12.3 s", "4m05s", "1h02m". */
void bd_human_ms(char *out, size_t cap, long long ms);

#endif
