/*
 * view_util.h — small pieces the list views share.
 */
#ifndef BD_UI_VIEW_UTIL_H
#define BD_UI_VIEW_UTIL_H

#include <stddef.h>

#include "app.h"
#include "history.h"
#include "score.h"
#include "view_args.h"

/* "3/18", or "3/5 (of 18)" while a filter hides rows; "empty" for no rows. */
void bd_view_list_position(const bd_list *l, char *out, size_t cap);

/* While the list is filtered, show "/<filter>" at the right of the body's last line. */
void bd_view_draw_filter_note(bd_view *v, WINDOW *w, const bd_list *l);

/* Queue a view's background job `w` (NULL: allocating the job failed); when it cannot start,
 * post an error naming it `what` ("git work"). Returns true when queued (the spinner starts);
 * false when not, and the caller still owns its job and frees it. */
bool bd_view_queue_work(bd_app *app, bd_work *w, const char *what);

/* Open the `/` prompt over `l->filter` for view `v`: while typing and on Enter the text becomes
 * the filter, Esc clears it, and `rebuild(v)` follows each change. There is one prompt (the
 * app's), so the one list it edits is remembered here until the next call. */
void bd_view_filter_prompt(bd_view *v, bd_list *l, void (*rebuild)(bd_view *v));

/* Append " <code>" for every failure mode of `s` (NULL: nothing) to the string in `buf`
 * (cap bytes, cut to fit): list filters match any of a score's codes, not only the first. */
void bd_fm_codes_append(char *buf, size_t cap, const bd_score *s);

/* Scroll a view of `n` lines whose first shown line is *top by a movement action (up,
 * down, page up/down of `page` lines, home, end; the draw clamps *top to the last page).
 * Returns true when `a` was one of them. */
bool bd_view_scroll(size_t *top, size_t n, bd_action a, size_t page);

/* The status-line position of such a view: "line <top+1>/<n>" ("line 0/0" when empty). */
void bd_view_line_position(char *out, size_t cap, size_t top, size_t n);

/* A history record as a result (view_args.h): every field of *out borrowed from `r`.
 * False for an audit record (no result; *out untouched). */
bool bd_result_src_of_record(bd_result_src *out, const bd_history_record *r);

/* Human size: "532 B", "1.2 KiB", "3.4 MiB". */
void bd_human_size(char *out, size_t cap, unsigned long long bytes);

/* Format a duration in ms: "850 ms", "12.3 s", "4m05s", "1h02m". */
void bd_human_ms(char *out, size_t cap, long long ms);

#endif
