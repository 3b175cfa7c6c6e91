/*
 * tui_internal.h — the calls between the loop owner (tui.c), the app (app.c) and the
 * views that are not part of the view contract in app.h.
 */
#ifndef BD_UI_TUI_INTERNAL_H
#define BD_UI_TUI_INTERNAL_H

#include <stdbool.h>

#include "app.h"

/* A key read from the terminal: a curses key code (is_code) or a character. */
void bd_app_key(bd_app *app, int key, bool is_code);
/* Close every view (teardown). */
void bd_app_close_all(bd_app *app);
/* Draw the header / status line windows (no refresh). */
void bd_app_draw_header(bd_app *app);
void bd_app_draw_status(bd_app *app);
/* Give the terminal back, stop (like SIGTSTP), and take it again when continued. */
void bd_tui_suspend(bd_app *app);
/* Show `text` (terminal-safe, `len` bytes) in the user's pager in the foreground: the
 * terminal is given back to it (as for Ctrl-Z) and taken again after, however it ends.
 * The loop does not run meanwhile; a run's children go on and are caught up after.
 * Returns 0, or -1 with `err` (viewer.h). */
int bd_tui_foreground_viewer(bd_app *app, const char *text, size_t len, const char *name,
                             bd_err *err);
/* Forget what the terminal shows and draw everything again (Ctrl-L, after a resize). */
void bd_tui_redraw_all(bd_app *app);
/* Re-read the bench (Ctrl-R): back to the first view, then rebuild the model. */
void bd_app_reload(bd_app *app);
/* Open the history view, filtered to a task class and/or case (both may be NULL). */
void bd_app_open_history(bd_app *app, const char *task_class, const char *case_id);
/* Quitting while a run goes on: cancel it first. Returns true when the quit is deferred
 * until the run has stopped (the run then calls bd_app_quit again). */
bool bd_app_run_quit_hook(bd_app *app, int status);
/* Open the recommendation for task class `tc_index` (computed and written on the pool). */
void bd_app_open_recommend(bd_app *app, size_t tc_index);
/* Return to the live run view (v), or say there is no run. */
void bd_app_open_run_view(bd_app *app);

#endif
