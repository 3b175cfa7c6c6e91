/*
 * tui.h — the entry point of the TUI (`benchdesk` with no subcommand).
 */
#ifndef BD_TUI_H
#define BD_TUI_H

#include <stdbool.h>

typedef struct bd_tui_opts {
    const char *dir;   /* -C DIR, or NULL: find the bench from the working directory */
    const char *theme; /* --theme NAME, or NULL: config, then NO_COLOR, then "default" */
    bool no_color;     /* NO_COLOR was set */
} bd_tui_opts;

/* Run the TUI until the user quits. The terminal is restored on every exit path.
 * Returns the process exit status (0 on a normal quit; errors that prevent starting
 * are printed as the one-line benchdesk error and give their status). */
int bd_tui_main(const bd_tui_opts *opts);

#endif
