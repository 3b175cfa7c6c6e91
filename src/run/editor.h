/*
 * editor.h — opening one file of the bench in the user's editor, in the foreground (the
 * TUI's `E`, docs/user-guide.md#the-curators-loop-in-the-tui). The core runs the program
 * through the process chokepoint (bd_exec_foreground); the front end gives the terminal
 * up before the call and takes it back after.
 */
#ifndef BD_EDITOR_H
#define BD_EDITOR_H

#include "err.h"

/* The command that will be run: $VISUAL, else $EDITOR, else "vi", word-split by /bin/sh.
 * Borrowed from the environment or static. */
const char *bd_editor_command(void);

/* `rel` (a path relative to `base`) made into base/rel in `out` (`cap` bytes), refusing
 * an absolute path, a `..` component, an empty one, and a control character
 * (usage.bad_args): the file edited is always inside the case or task class. Returns 0
 * or -1. */
int bd_editor_path(char *out, size_t cap, const char *base, const char *rel, bd_err *err);

/* Run the editor on `path` on the inherited terminal and wait for it. Returns 0, or -1
 * with BD_E_SPAWN (not found: 127, or it could not start). */
int bd_editor_run(const char *path, bd_err *err);

#endif
