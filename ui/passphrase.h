/*
 * passphrase.h — a passphrase asked by benchdesk itself (GnuPG's loopback pinentry) for
 * a signing job on libuv's thread pool (docs/provenance.md, docs/user-guide.md).
 *
 * GPGME calls the passphrase callback on the signing thread, where no curses call may
 * happen. The bridge carries the question to the loop thread (uv_async), where the view
 * draws a masked input line, and carries the answer back (mutex + condition variable).
 * The waiting thread gives up (cancel) when the view goes away or the TUI quits, so a job
 * never hangs the loop's teardown.
 *
 * Ownership: one bridge per job, created on the loop thread before the job is queued,
 * freed with bd_pass_free from the job's done callback (the memory goes when libuv has
 * closed the async handle).
 */
#ifndef BD_UI_PASSPHRASE_H
#define BD_UI_PASSPHRASE_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"

typedef struct bd_pass bd_pass;

/* Called on the loop thread when the job wants a passphrase for `hint`; the owner shows
 * its prompt and later calls bd_pass_answer. `bad_before`: the last one was wrong. */
typedef void (*bd_pass_ask_fn)(void *owner, const char *hint, bool bad_before);

/* A bridge on app->loop for `owner`. Returns 0, or -1 (out of memory or libuv refused the
 * handle; nothing to free). */
int bd_pass_new(bd_pass **out, bd_app *app, bd_pass_ask_fn ask, void *owner);

/* The bd_passphrase_cb of provenance.h (payload: the bridge). Runs on the job's thread:
 * waits for the answer. Returns 0 with the passphrase in buf, or 1 (cancelled). */
int bd_pass_cb(char *buf, size_t cap, const char *uid_hint, bool bad_before, void *payload);

/* Loop thread: answer the pending question with `pass`, or cancel with NULL. */
void bd_pass_answer(bd_pass *p, const char *pass);

/* Loop thread: the owner is gone; a pending or later question is cancelled. */
void bd_pass_detach(bd_pass *p);

/* Loop thread, after the job has finished: detach and release. NULL is fine. */
void bd_pass_free(bd_pass *p);

/* ---- a small line editor (the passphrase line, the commit message) ------------------ */

typedef enum { BD_EDIT_IGNORED, BD_EDIT_CHANGED, BD_EDIT_ACCEPT, BD_EDIT_CANCEL } bd_edit_result;

/* Apply key `ch` (as bd_app_key hands it to a view) to the UTF-8 text `buf` of *len bytes
 * (`cap` bytes, kept NUL-terminated): printable characters append, Backspace drops one
 * character, Ctrl-U clears, Enter accepts, Esc cancels; anything else is ignored. */
bd_edit_result bd_edit_key(char *buf, size_t cap, size_t *len, int ch);

/* Draw the masked passphrase line at row y of `w`: the question, then one '*' per
 * character of the `len`-byte UTF-8 passphrase `pass`, never the characters. */
void bd_pass_draw(WINDOW *w, int y, const char *hint, bool bad_before, const char *pass,
                  size_t len);

/* ---- the masked line a view shows while its signing job waits on the bridge -------- */

typedef struct bd_pass_line {
    bool asking;     /* shown, and taking the view's keys */
    bool bad_before; /* the last passphrase was wrong */
    char hint[256];
    char pass[512];
    size_t len;
} bd_pass_line;

/* Show the line, empty, for `hint` (the bridge asked: a bd_pass_ask_fn calls it). */
void bd_pass_line_ask(bd_pass_line *l, const char *hint, bool bad_before);
/* Hide the line and wipe what was typed. */
void bd_pass_line_close(bd_pass_line *l);
/* A key while the line is shown: edits it; Enter answers `bridge` with the passphrase and
 * Esc cancels the question (`bridge` NULL: no one to answer), and either closes the line.
 * Returns true when the line closed. */
bool bd_pass_line_key(bd_pass_line *l, bd_pass *bridge, int ch);
/* Draw the line at row y of `w` (bd_pass_draw). */
void bd_pass_line_draw(const bd_pass_line *l, WINDOW *w, int y);

/* Overwrite `n` bytes at `p` with zeros in a way the compiler keeps (secrets, notes). */
void bd_wipe(void *p, size_t n);

#endif
