/*
 * advice.h — the TUI's own keys in place of command-line advice.
 *
 * The core's messages say what to do in the words of the command line (`benchdesk sign
 * bench/X --role author`, `--allow-weaker-isolation`, `benchdesk stage PATH...`), since
 * that works everywhere. The TUI cannot type commands, so before a message reaches its
 * screen or its message log the advice it can act on itself is replaced by the key that
 * does it. The phrases are one table (advice.c); tests/cli/test_tui_structure.sh checks
 * each still occurs in the core, so a reworded core message cannot slip past it.
 */
#ifndef BD_UI_ADVICE_H
#define BD_UI_ADVICE_H

#include <stddef.h>

/* Rewrite the command-line advice in `msg` (NUL-terminated, `cap` bytes) in place. */
void bd_advice_tui(char *msg, size_t cap);

#endif
