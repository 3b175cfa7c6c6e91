/*
 * curate.h — the curator's acts from the TUI (docs/user-guide.md#the-curators-loop-in-the-tui),
 * each the core call its command runs: scaffold a draft case (`A`, `benchdesk case new`),
 * open a file of a case or a task class in $EDITOR (`E`, the TUI suspends and resumes),
 * pin (`I`, `benchdesk pin`: says whose signatures it superseded and warns about an
 * untouched scaffold). What they change on disk is re-read by the watch (watch.h).
 */
#ifndef BD_CURATE_H
#define BD_CURATE_H

#include <stddef.h>

#include "app.h"

/* Ask the new case's id on the prompt line, then scaffold it in task class `tc_index`. */
void bd_curate_new_case(bd_view *v, size_t tc_index);

/* Ask which file (relative to the case, or to the task class when case_id is NULL; the
 * prompt starts with `initial`), then open it in $EDITOR in the foreground. */
void bd_curate_edit(bd_view *v, size_t tc_index, const char *case_id, const char *initial);

/* Pin case `case_id` of task class `tc_index`, or the whole task class when NULL. */
void bd_curate_pin(bd_view *v, size_t tc_index, const char *case_id);

#endif
