/*
 * runs_model.h — the runs of the verified chain as the TUI shows them (docs/history.md,
 * docs/compare.md#in-the-tui): per task class the LAST RUN (the last *full* run's mean, pass rate
 * and cases; a newer partial or cancelled run is marked as such) and the trend sparkline of the
 * last full runs, read on libuv's thread pool with compare.h's bd_runs_load; and the run the user
 * marked (`x`) for a comparison (`=`).
 */
#ifndef BD_UI_RUNS_MODEL_H
#define BD_UI_RUNS_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "trend.h"

#include "app.h"

/* What the chain says of one task class's runs. */
typedef struct bd_tc_runs {
    char *tc;
    bool has_full; /* a full run exists: mean, pass_rate, cases are its */
    double mean, pass_rate;
    size_t cases;
    char partial[64]; /* the kind of a newer non-full run, or "" */
    char trend_utf8[BD_TREND_RUNS * 3 + 1], trend_ascii[BD_TREND_RUNS + 1];
} bd_tc_runs;

typedef struct bd_runs_model bd_runs_model;

/* A runs model of app->bench; `changed(payload)` runs on the loop thread when a read
 * landed. Nothing is read until bd_runs_model_refresh. Returns 0 or -1 (out of memory). */
int bd_runs_model_new(bd_runs_model **out, bd_app *app, void (*changed)(void *payload),
                      void *payload);
/* Free it (the loop has drained its jobs). NULL is a no-op. */
void bd_runs_model_free(bd_runs_model *m);
/* (Re-)read the runs in the background (again after a run). */
void bd_runs_model_refresh(bd_runs_model *m);
/* What was read for task class `task_class` (borrowed until the next change), or NULL. */
const bd_tc_runs *bd_runs_model_get(const bd_runs_model *m, const char *task_class);

/* The run marked for a comparison (NULL: none). Marking copies the id; NULL unmarks. */
void bd_runs_model_mark(const char *run_id);
const char *bd_runs_model_marked(void);

#endif
