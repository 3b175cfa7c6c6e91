/*
 * watch.h — noticing changes made outside the TUI (docs/user-guide.md#changes-made-outside):
 * libuv fs events on bench/, on each task-class folder, on each task class's cases/ folder
 * and on the folder of the case in view — not one watch per case, which would exhaust
 * inotify at 100,000 cases — and, where a watch cannot be had (inotify's limits), a
 * periodic rescan of those folders' times. A change is re-read (the Ctrl-R reload, which
 * keeps the view stack) once nothing is in progress: no run, no GnuPG or other work, no
 * prompt or question, not in the sign, record or stage view.
 */
#ifndef BD_WATCH_H
#define BD_WATCH_H

#include "app.h"

typedef struct bd_watch bd_watch;

/* Start watching the app's bench on its loop (the model must exist). Returns the watch,
 * or NULL (out of memory: nothing is watched, Ctrl-R still re-reads). */
bd_watch *bd_watch_start(bd_app *app);

/* Close every handle (the loop ends once they are closed) and free the watch when the
 * last one is. NULL is fine. */
void bd_watch_stop(bd_watch *w);

/* Say that the bench changed (the TUI itself wrote it: a pin, a scaffold, an edit): it
 * is re-read like an outside change. NULL is fine. */
void bd_watch_touch(void *w);

/* Changes seen since the watch started (for tests and the help view). */
unsigned long bd_watch_reloads(const bd_watch *w);

#endif
