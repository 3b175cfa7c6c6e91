/*
 * history_model.h — what the TUI reads from the chained history (DESIGN.md §5), on
 * libuv's thread pool: the chain status for the header (verify from seq 1) and, per
 * case, the newest score record (the cases view's "last score" and first failure mode),
 * per task class, the last full run (through runs_model.h).
 */
#ifndef BD_UI_HISTORY_MODEL_H
#define BD_UI_HISTORY_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

/* Start reading the history of m->app->bench in the background. */
void bd_history_model_start(bd_model *m);
/* Forget everything read (the model is going away or reloading). */
void bd_history_model_free(bd_model *m);
/* Copy the last scores already read into the cases of task class `tc_index` (called when
 * the task class finishes loading). */
void bd_history_model_apply(bd_model *m, size_t tc_index);
/* A history read is going on. */
bool bd_history_model_busy(const bd_model *m);

#endif
