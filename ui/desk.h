/*
 * desk.h — what sits above the views and below the terminal: it builds the model and the
 * first view, registers every view (app->views), fills the session half of app->ops (the
 * live run's quit and busy hooks, Ctrl-R, the global `v`), draws the header line, and
 * re-opens the view stack after a reload.
 */
#ifndef BD_UI_DESK_H
#define BD_UI_DESK_H

#include <stdbool.h>

#include "app.h"

/* Register the views and the session hooks in `app` (before anything is opened). */
void bd_desk_install(bd_app *app);

/* Build the model for app->bench and open the first view. Returns 0 or -1 with `err`. */
int bd_desk_start(bd_app *app, bd_err *err);

/* Close every view, free the run and the model (teardown, after the loop stopped taking
 * keys; the loop must still be there for the runner's handles). */
void bd_desk_close(bd_app *app);

/* Something loads or runs (the header's spinner, the 10 Hz tick). */
bool bd_desk_busy(const bd_app *app);

/* Leaving now (SIGTERM, a lost terminal): cancel a run in progress without waiting. */
void bd_desk_abandon_run(bd_app *app);

/* Draw the header line window (no refresh): bench root, git branch, chain status. */
void bd_desk_draw_header(bd_app *app);

#endif
