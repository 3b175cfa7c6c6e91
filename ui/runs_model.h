/*
 * runs_model.h — the runs of the verified chain as the TUI shows them (DESIGN.md §5,
 * §13): per task class the LAST RUN (the last *full* run's mean, pass rate and cases; a
 * newer partial or cancelled run is marked as such) and the trend sparkline of the last
 * full runs, read on libuv's thread pool with compare.h's bd_runs_load; and the run the
 * user marked (`x`) for a comparison (`=`).
 */
#ifndef BD_UI_RUNS_MODEL_H
#define BD_UI_RUNS_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

/* Start reading the runs of m->app->bench in the background (again, after a run). */
void bd_runs_model_start(bd_model *m);
/* Forget everything read. */
void bd_runs_model_free(bd_model *m);
/* Copy what was read into task class row `tc_index` (has_last_run, last_*, trend). */
void bd_runs_model_apply(bd_model *m, size_t tc_index);

/* The run marked for a comparison (NULL: none). Marking copies the id; NULL unmarks. */
void bd_runs_model_mark(const char *run_id);
const char *bd_runs_model_marked(void);

#endif
