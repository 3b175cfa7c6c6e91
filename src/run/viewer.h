/*
 * viewer.h — show a long text in the user's pager or editor, in the foreground (the
 * result view's `e`, docs/user-guide.md). The core runs the program; the front end gives the
 * terminal up before the call and takes it back after (the core knows nothing of curses).
 */
#ifndef BD_VIEWER_H
#define BD_VIEWER_H

#include <stddef.h>

#include "err.h"

/* The command that will be run: $PAGER, else $EDITOR, else "less", each word-split by
 * /bin/sh. Borrowed from the environment or static. */
const char *bd_viewer_command(void);

/* Write `text` (`len` bytes; the caller has made it terminal-safe, text.h) to a private
 * temporary file named after `name` (only [A-Za-z0-9._-] kept), run the viewer on it with
 * the terminal as its stdin/stdout/stderr through the process chokepoint
 * (bd_exec_foreground, exec.h), wait for it, and remove the file. Returns 0, or -1 with `err`:
 * BD_E_IO (temp file), BD_E_SPAWN (fork/exec, or the viewer failed with its status). */
int bd_viewer_run(const char *text, size_t len, const char *name, bd_err *err);

#endif
