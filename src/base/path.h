/*
 * path.h — joining path parts, and the one rule for a name that becomes a path step
 * (a task class, a case id, a run id): docs/formats.md.
 *
 * Pure string work: no file is opened. Reentrant, no state.
 */
#ifndef BD_PATH_H
#define BD_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* True when `name` matches ^[a-z0-9][a-z0-9._-]{0,127}$ and holds no ".." (so it is
 * never a path step: no '/', no leading dot, no "..", at most 128 bytes). NULL: false. */
bool bd_name_valid(const char *name);

/* Join two path parts with '/'. New string or NULL on out-of-memory. */
char *bd_path_join(const char *a, const char *b);

/* This user's benchdesk state directory joined with `sub` ("index-seals", "sig-memo"):
 * $XDG_STATE_HOME/benchdesk/<sub> when XDG_STATE_HOME is absolute, else
 * $HOME/.local/state/benchdesk/<sub> (docs/security.md). Returns the length written into
 * buf, or 0 when the user has no state directory or it does not fit (nothing is
 * created). Reads the environment only. */
size_t bd_user_state_path(char *buf, size_t size, const char *sub);

#endif
