/*
 * views/run_view.h — the live run (ui/session.c owns it; this view only draws it).
 */
#ifndef BD_UI_VIEWS_RUN_VIEW_H
#define BD_UI_VIEWS_RUN_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"

extern const bd_view_ops bd_view_run;

/* Start a run of task class `tc_index` over `case_ids` (n > 0) or all its cases (n == 0)
 * (session.h; drafts and weaker: what may run, as its arguments) and open the run view on it; the
 * previous run's views close with it. Refused with a message while another run is going. */
void bd_run_view_start(bd_app *app, size_t tc_index, const char *const *case_ids, size_t n,
                       bool drafts, bool weaker);

/* Show only the cases of run view `v` that concern `what`: the ones reporting failure
 * mode `what`, or (is_key) scoring below 1 on breakdown key `what`; "" shows all (the
 * breakdown panel's Enter). */
void bd_run_view_concern(bd_view *v, const char *what, bool is_key);

#endif
