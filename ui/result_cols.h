/*
 * result_cols.h — the result view's three-column tables (what the rubric compared,
 * and expected beside the harness output): a value cut into the pieces its column shows.
 *
 * A string that holds line breaks (a unified diff, a validator's log) is shown as its
 * lines, never \n-escaped, and each line is made terminal-safe on its own (text.h), so a
 * value cannot move the cursor or reorder a line (docs/user-guide.md#result-the-reviewers-walk).
 */
#ifndef BD_UI_VIEWS_RESULT_COLS_H
#define BD_UI_VIEWS_RESULT_COLS_H

#include <stddef.h>

/* Pieces of one column, each a new string; owned, freed with bd_rc_pieces_free. A
 * zeroed struct is empty. */
typedef struct bd_rc_pieces {
    char **p;
    size_t n, cap;
} bd_rc_pieces;

/* `leaf` (compact JSON, or any text) as the text to show: a JSON string that holds a line
 * break is decoded, so it reads as its lines; any other value stays as written. New
 * string (caller frees), NULL when out of memory. */
char *bd_rc_leaf_text(const char *leaf);

/* Append `text` cut into its lines, each sanitized and wrapped at `w` columns (an empty
 * line is one empty piece). Out of memory drops pieces, never crashes. */
void bd_rc_pieces_value(bd_rc_pieces *ps, const char *text, int w);

/* Append a check's name column: `mark` and the name, the name cut by characters into
 * pieces of `w` columns (a name is [a-z0-9_], with no word to wrap at). */
void bd_rc_pieces_name(bd_rc_pieces *ps, const char *mark, const char *name, int w);

/* Free what *ps holds and zero it. */
void bd_rc_pieces_free(bd_rc_pieces *ps);

#endif
