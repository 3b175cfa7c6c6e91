/*
 * err_keys.h — what to do about an error, in the TUI's keys.
 *
 * A core error carries what to do as data (err.h: bd_err_action). The CLI words it as a
 * command to type; the TUI cannot type commands, so it words it as the key that does it,
 * from its own table (err_keys.c). Every view that shows an error's message shows it
 * through bd_tui_err_text. tests/cli/test_tui_structure.sh checks every action has words
 * here and on the command line. docs/architecture.md#errors-what-to-do-is-data.
 */
#ifndef BD_UI_ERR_KEYS_H
#define BD_UI_ERR_KEYS_H

#include "err.h"

/* The TUI's words for each action, indexed by bd_err_action; "%s" is the argument. */
extern const char *const bd_tui_action_words[BD_ACT__COUNT];

/* The message of `err` with the TUI's words for its action spliced in. The text lives in
 * a ring of 8 static buffers: use it before 8 more calls (UI thread only). */
const char *bd_tui_err_text(const bd_err *err);

#endif
