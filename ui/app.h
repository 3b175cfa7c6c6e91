/*
 * app.h — the TUI's skeleton (docs/user-guide.md, docs/architecture.md): one libuv loop that owns
 * the terminal, a stack of views (one file each under ui/views/, a tig-style ops table), and the
 * tables that generate key bindings, help text and colour roles.
 *
 * Threading: everything here runs on the loop thread. Work for libuv's thread pool goes
 * through bd_work_queue (work.c); its results come back on the loop thread. No curses
 * call happens anywhere else.
 *
 * Ownership: the app owns the views on its stack, the model and every libuv handle.
 * A view owns its `state`; ops->close frees it.
 */
#ifndef BD_UI_APP_H
#define BD_UI_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curses.h>
#include <uv.h>

#include "bench.h"
#include "config.h"
#include "err.h"
#include "text.h"

/* ---- actions: one table gives the enum, the names, the hints and the help ----------- */

/*      id                    name           hint          help text */
#define BD_UI_ACTIONS(X)                                                                           \
    X(BD_A_NONE, "none", "", "")                                                                   \
    X(BD_A_UP, "up", "", "move the cursor up")                                                     \
    X(BD_A_DOWN, "down", "", "move the cursor down")                                               \
    X(BD_A_PAGE_UP, "page-up", "", "scroll one page up")                                           \
    X(BD_A_PAGE_DOWN, "page-down", "", "scroll one page down")                                     \
    X(BD_A_HOME, "first", "", "jump to the first row")                                             \
    X(BD_A_END, "last", "", "jump to the last row")                                                \
    X(BD_A_OPEN, "open", "open", "open the selected row")                                          \
    X(BD_A_FOCUS, "pane", "pane", "move the cursor between the list and the preview pane")         \
    X(BD_A_FILTER, "filter", "filter", "filter the list: type to narrow, Enter keeps, Esc clears") \
    X(BD_A_SORT, "sort", "sort", "sort by the next column")                                        \
    X(BD_A_SORT_REVERSE, "reverse", "", "reverse the sort order")                                  \
    X(BD_A_RUN, "run", "run", "run the selected task class or case")                               \
    X(BD_A_RUN_ALL, "run-all", "run all", "run every case of this task class")                     \
    X(BD_A_CANCEL, "cancel", "cancel", "cancel the run in progress")                               \
    X(BD_A_NEXT_FAIL, "next-failed", "next fail", "jump to the next failed case")                  \
    X(BD_A_PREV_FAIL, "prev-failed", "prev fail", "jump to the previous failed case")              \
    X(BD_A_FAILED_ONLY, "failed-only", "failed", "show only failed cases, or all again")           \
    X(BD_A_DRAFTS, "drafts", "",                                                                   \
      "run again allowing draft cases (records: provenance unverified)")                           \
    X(BD_A_WEAKER, "weaker", "",                                                                   \
      "run again under a weaker isolation class, when namespaces are unavailable (asks first)")    \
    X(BD_A_HISTORY, "history", "history", "open the chained score history")                        \
    X(BD_A_MARK, "mark", "mark", "mark the selected record's run for a comparison")                \
    X(BD_A_COMPARE, "compare", "compare",                                                          \
      "compare against the marked run (without one: against the previous full run)")               \
    X(BD_A_WIDEN, "all", "all", "show every record, not only this task class or case")             \
    X(BD_A_RECOMMEND, "recommend", "recommend", "recommend a tier from the verified history")      \
    X(BD_A_BREAKDOWN, "breakdown", "breakdown",                                                    \
      "failure modes by count and the mean of each breakdown key; Enter filters the cases")        \
    X(BD_A_EDIT, "pager", "pager", "open all of it, whole, in $PAGER (else $EDITOR, else less)")   \
    X(BD_A_PREV_MATCH, "prev-match", "", "while searching: the previous match (n: the next)")      \
    X(BD_A_MESSAGES, "messages", "", "show the last messages (errors and notices) in full")        \
    X(BD_A_ESCAPE, "escape", "", "cancel the innermost: a prompt, a filter or search, or go back") \
    X(BD_A_SIGN, "sign", "sign", "sign the case (or the task class) as author or reviewer")        \
    X(BD_A_RECORD, "record", "record",                                                             \
      "record the case's cassette from the live SUT: see the diff, then write it")                 \
    X(BD_A_STAGE_VIEW, "stage-view", "git", "git status of bench/ and audit/: stage and commit")   \
    X(BD_A_NEW_CASE, "new-case", "", "scaffold a draft case in this task class (asks its id)")     \
    X(BD_A_EDIT_FILE, "edit-file", "",                                                             \
      "open a file of the case or task class in $EDITOR (asks which)")                             \
    X(BD_A_DIFF, "diff", "diff",                                                                   \
      "the rubric and registration diff against the last signed commit, in $PAGER")                \
    X(BD_A_PIN, "pin", "", "pin: write the digests of the case (or the whole task class)")         \
    X(BD_A_SEARCH, "search", "search",                                                             \
      "search the view: type, Enter keeps it; then n/N the next/previous match, Esc ends it")      \
    X(BD_A_OPEN_CASE, "open-case", "case", "open the case this result scored, in the case view")   \
    X(BD_A_OPEN_RUBRIC, "open-rubric", "rubric", "show the task class's rubric in $PAGER")         \
    X(BD_A_ROLE, "role", "role", "switch the role to sign as: author or reviewer")                 \
    X(BD_A_PINENTRY, "pinentry", "pinentry",                                                       \
      "ask the passphrase in benchdesk (loopback) or through gpg-agent's own pinentry")            \
    X(BD_A_STAGE_TOGGLE, "stage-toggle", "stage/unstage",                                          \
      "stage or unstage the selected path (a heading: every path under it)")                       \
    X(BD_A_COMMIT, "commit", "commit", "write a commit message, then commit (optionally signed)")  \
    X(BD_A_REVIEW, "review", "",                                                                   \
      "the review queue of this task class: unreviewed failures, second reviews, samples")         \
    X(BD_A_VERDICT, "verdict", "verdict",                                                          \
      "give a verdict on the marked records (or this one): choose it, a note, then sign")          \
    X(BD_A_MARK_ROW, "mark-row", "mark", "mark or unmark the record under the cursor")             \
    X(BD_A_MARK_RANGE, "mark-range", "",                                                           \
      "mark every record from the last one marked to the cursor")                                  \
    X(BD_A_ACCEPT, "accept", "accept",                                                             \
      "take the suggested verdict into the verdict prompt (never given by itself)")                \
    X(BD_A_RUNVIEW, "run-view", "run view", "return to the live run view")                         \
    X(BD_A_RELOAD, "reload", "reload", "re-read the bench from disk")                              \
    X(BD_A_REDRAW, "redraw", "", "redraw the whole screen")                                        \
    X(BD_A_HELP, "help", "help", "show the keys of this view")                                     \
    X(BD_A_BACK, "back", "back", "go back (q quits from the first view; Left never quits)")        \
    X(BD_A_QUIT, "quit", "quit", "quit benchdesk (asks first while a run is going)")               \
    X(BD_A_INTERRUPT, "interrupt", "", "quit now, exit status 130 (cancels a run in progress)")    \
    X(BD_A_SUSPEND, "suspend", "", "suspend benchdesk; fg brings it back")

typedef enum {
#define BD_X(id, name, hint, help) id,
    BD_UI_ACTIONS(BD_X)
#undef BD_X
        BD_A__COUNT
} bd_action;

/* Key bindings: several keys may map to one action; the first listed is the one shown
 * in hints. Control keys are written as BD_CTRL('x'). */
#define BD_CTRL(c) ((c)&0x1f)
#define BD_UI_KEYS(X)                                                                              \
    X(KEY_UP, BD_A_UP)                                                                             \
    X('k', BD_A_UP)                                                                                \
    X(KEY_DOWN, BD_A_DOWN)                                                                         \
    X('j', BD_A_DOWN)                                                                              \
    X(KEY_PPAGE, BD_A_PAGE_UP)                                                                     \
    X(BD_CTRL('b'), BD_A_PAGE_UP)                                                                  \
    X(KEY_NPAGE, BD_A_PAGE_DOWN)                                                                   \
    X(' ', BD_A_PAGE_DOWN)                                                                         \
    X(BD_CTRL('f'), BD_A_PAGE_DOWN)                                                                \
    X(KEY_HOME, BD_A_HOME)                                                                         \
    X('g', BD_A_HOME)                                                                              \
    X(KEY_END, BD_A_END)                                                                           \
    X('G', BD_A_END)                                                                               \
    X('\r', BD_A_OPEN)                                                                             \
    X('\n', BD_A_OPEN)                                                                             \
    X(KEY_ENTER, BD_A_OPEN)                                                                        \
    X(KEY_RIGHT, BD_A_OPEN)                                                                        \
    X('\t', BD_A_FOCUS)                                                                            \
    X('/', BD_A_FILTER)                                                                            \
    X('/', BD_A_SEARCH)                                                                            \
    X('s', BD_A_SORT)                                                                              \
    X('S', BD_A_SORT_REVERSE)                                                                      \
    X('r', BD_A_RUN)                                                                               \
    X('R', BD_A_RUN_ALL)                                                                           \
    X('R', BD_A_RECORD)                                                                            \
    X('c', BD_A_CANCEL)                                                                            \
    X('c', BD_A_OPEN_CASE)                                                                         \
    X('R', BD_A_OPEN_RUBRIC)                                                                       \
    X('n', BD_A_NEXT_FAIL)                                                                         \
    X('p', BD_A_PREV_FAIL)                                                                         \
    X('f', BD_A_FAILED_ONLY)                                                                       \
    X('d', BD_A_DRAFTS)                                                                            \
    X('W', BD_A_WEAKER)                                                                            \
    X('h', BD_A_HISTORY)                                                                           \
    X('x', BD_A_MARK)                                                                              \
    X('=', BD_A_COMPARE)                                                                           \
    X('a', BD_A_WIDEN)                                                                             \
    X('M', BD_A_RECOMMEND)                                                                         \
    X('m', BD_A_MESSAGES)                                                                          \
    X('e', BD_A_EDIT)                                                                              \
    X('b', BD_A_BREAKDOWN)                                                                         \
    X('N', BD_A_PREV_MATCH)                                                                        \
    X('P', BD_A_SIGN)                                                                              \
    X('w', BD_A_STAGE_VIEW)                                                                        \
    X('A', BD_A_NEW_CASE)                                                                          \
    X('E', BD_A_EDIT_FILE)                                                                         \
    X('I', BD_A_PIN)                                                                               \
    X('D', BD_A_DIFF)                                                                              \
    X('t', BD_A_ROLE)                                                                              \
    X('t', BD_A_REVIEW)                                                                            \
    X('t', BD_A_VERDICT)                                                                           \
    X(' ', BD_A_MARK_ROW)                                                                          \
    X('V', BD_A_MARK_RANGE)                                                                        \
    X('a', BD_A_ACCEPT)                                                                            \
    X('l', BD_A_PINENTRY)                                                                          \
    X('u', BD_A_STAGE_TOGGLE)                                                                      \
    X('C', BD_A_COMMIT)                                                                            \
    X('v', BD_A_RUNVIEW)                                                                           \
    X(BD_CTRL('r'), BD_A_RELOAD)                                                                   \
    X(BD_CTRL('l'), BD_A_REDRAW)                                                                   \
    X('?', BD_A_HELP)                                                                              \
    X(KEY_F(1), BD_A_HELP)                                                                         \
    X('q', BD_A_BACK)                                                                              \
    X(27, BD_A_ESCAPE)                                                                             \
    X(KEY_LEFT, BD_A_BACK)                                                                         \
    X('Q', BD_A_QUIT)                                                                              \
    X(BD_CTRL('c'), BD_A_INTERRUPT)                                                                \
    X(BD_CTRL('z'), BD_A_SUSPEND)

/* The action bound to key `key` (a curses key code or a character), or BD_A_NONE. A key
 * bound to several actions means, in a view, the one in that view's `actions` (may be
 * NULL), else the first binding. */
bd_action bd_action_for_key(int key, const bd_action *view_actions);
const char *bd_action_name(bd_action a);
const char *bd_action_hint(bd_action a);
const char *bd_action_help(bd_action a);
/* Every key bound to `a`, written for people ("Up, k"), into `out` (cap bytes). */
void bd_action_keys(bd_action a, char *out, size_t cap);
/* The first key bound to `a` ("Enter"), into `out`. */
void bd_action_first_key(bd_action a, char *out, size_t cap);

/* Actions that every view answers (help lists them under "Everywhere"). */
extern const bd_action bd_global_actions[];

/* ---- colour roles: names are the contract with the theme files in themes/ ---------- */

/*      id                  name              default (dark) fg, bg, attrs */
#define BD_UI_ROLES(X)                                                                             \
    X(BD_R_TITLE, "title", COLOR_WHITE, COLOR_BLUE, A_BOLD)                                        \
    X(BD_R_HEADER, "header", COLOR_WHITE, COLOR_BLUE, 0)                                           \
    X(BD_R_STATUS, "status", COLOR_BLACK, COLOR_WHITE, 0)                                          \
    X(BD_R_SELECTION, "selection", COLOR_BLACK, COLOR_CYAN, 0)                                     \
    X(BD_R_OK, "ok", COLOR_GREEN, -1, 0)                                                           \
    X(BD_R_FAIL, "fail", COLOR_RED, -1, A_BOLD)                                                    \
    X(BD_R_WARN, "warn", COLOR_YELLOW, -1, 0)                                                      \
    X(BD_R_MUTED, "muted", -1, -1, A_DIM)                                                          \
    X(BD_R_BADGE_SIGNED, "badge_signed", COLOR_BLACK, COLOR_GREEN, 0)                              \
    X(BD_R_BADGE_AWAITING, "badge_awaiting", COLOR_BLACK, COLOR_YELLOW, 0)                         \
    X(BD_R_BADGE_DRAFT, "badge_draft", COLOR_WHITE, -1, A_DIM)                                     \
    X(BD_R_BADGE_BAD, "badge_bad", COLOR_WHITE, COLOR_RED, A_BOLD)                                 \
    X(BD_R_BAR_FILL, "bar_fill", COLOR_GREEN, -1, 0)                                               \
    X(BD_R_BAR_EMPTY, "bar_empty", -1, -1, A_DIM)                                                  \
    X(BD_R_DIFF_ADD, "diff_add", COLOR_GREEN, -1, 0)                                               \
    X(BD_R_DIFF_DEL, "diff_del", COLOR_RED, -1, 0)                                                 \
    X(BD_R_DIFF_CTX, "diff_ctx", -1, -1, 0)

typedef enum {
#define BD_X(id, name, fg, bg, attrs) id,
    BD_UI_ROLES(BD_X)
#undef BD_X
        BD_R__COUNT
} bd_role;

typedef struct bd_role_spec {
    short fg, bg; /* curses colour numbers; -1 is the terminal's default */
    attr_t attrs; /* A_BOLD | A_DIM | A_REVERSE | A_UNDERLINE */
} bd_role_spec;

typedef struct bd_theme {
    char name[64];
    bd_role_spec roles[BD_R__COUNT];
    bool colour; /* false: attributes only (monochrome, or a terminal without colour) */
} bd_theme;

const char *bd_role_name(bd_role r);

/* Load theme `name_or_path`: a path when it contains '/', else <dir>/<name>.yaml for the
 * first of $BENCHDESK_THEMES_DIR and the built-in themes directory that has it. Roles the
 * file leaves out keep the built-in default. Returns 0 or -1 with config.schema_invalid
 * (unknown role, colour or attribute, naming the line), yaml.* or io.error (no such
 * theme: the message lists where it looked). */
int bd_theme_load(bd_theme *out, const char *name_or_path, bd_err *err);

/* Set up colour pairs for `t` after initscr. Turns colour off when the terminal has none. */
void bd_theme_apply(bd_theme *t);

/* The curses attributes of role `r` under the applied theme. */
attr_t bd_role_attr(bd_role r);

/* ---- glyphs: UTF-8 line drawing with an ASCII fallback ------------------------------ */

typedef struct bd_glyphs {
    const char *ok, *bad, *pending, *hline, *vline, *bar_full, *bar_empty, *ellipsis, *arrow, *up,
        *down, *branch;
    const char *const *spinner;
    int n_spinner;
} bd_glyphs;

/* The glyph set for the locale: UTF-8 when the codeset is UTF-8, else ASCII. */
const bd_glyphs *bd_glyphs_pick(void);
extern const bd_glyphs *bd_gl;

/* ---- drawing helpers (draw.c) ------------------------------------------------------- */

/* Draw `s` at (y, x) in at most `width` columns with `attr`: invalid UTF-8 and control
 * characters become '?', so untrusted text can never send escape sequences; text too
 * wide ends in the ellipsis glyph. With `pad`, the rest of `width` is filled with spaces
 * in `attr`. Returns the columns used (including padding). */
int bd_draw_text(WINDOW *w, int y, int x, int width, const char *s, attr_t attr, bool pad);

/* Same for at most `len` bytes of `s`. */
int bd_draw_textn(WINDOW *w, int y, int x, int width, const char *s, size_t len, attr_t attr,
                  bool pad);

/* Word wrap: the number of bytes of `s` (len bytes) that fit in `width` columns,
 * breaking after the last space that fits when there is one. At least one character
 * is taken so wrapping always progresses. */
size_t bd_wrap_next(const char *s, size_t len, int width);

/* The lines `s` takes word-wrapped to `width` columns, as drawn (controls made visible). */
int bd_wrap_count(const char *s, int width);

/* Draw `s` word-wrapped to `width` columns from row y down, at most `max_lines` lines
 * (bd_wrap_count says how many it needs: size the space so nothing is cut). Untrusted
 * text is made visible first. Returns the lines drawn. */
int bd_draw_wrapped(WINDOW *w, int y, int x, int width, int max_lines, const char *s, attr_t attr);

/* Draw `s` right-aligned so it ends at column x_end (exclusive). Returns its start. */
int bd_draw_right(WINDOW *w, int y, int x_end, const char *s, attr_t attr);

/* A horizontal bar of `width` columns filled to `frac` (0..1). */
void bd_draw_bar(WINDOW *w, int y, int x, int width, double frac, bd_role fill, bd_role empty);

/* A horizontal rule across the window at row y with an optional title. */
void bd_draw_rule(WINDOW *w, int y, const char *title, attr_t attr);

/* ---- the list widget (list.c): cursor, scrolling, filter, sort ---------------------- */

typedef struct bd_list {
    size_t n;    /* rows in the model */
    size_t *vis; /* model row of each visible line (filter and sort applied) */
    size_t n_vis, cap_vis;
    size_t cursor;    /* index into vis */
    size_t top;       /* first visible line */
    int height;       /* lines the view gave the list at its last draw */
    char filter[128]; /* "" = no filter */
} bd_list;

/* Row text used by the filter (case-insensitive substring over every field the row shows).
 * Returns a string valid until the next call, or NULL to hide the row whatever the
 * filter. */
typedef const char *(*bd_list_text_fn)(size_t row, void *payload);
/* Sort comparison of two model rows (0 = keep model order). */
typedef int (*bd_list_cmp_fn)(size_t a, size_t b, void *payload);

void bd_list_init(bd_list *l);
void bd_list_release(bd_list *l);
/* Rebuild the visible rows for `n` model rows with the current filter and `cmp` (may be
 * NULL), keeping the cursor on the same model row when it is still visible. Returns 0 or
 * -1 on out-of-memory (the list is then empty). */
int bd_list_rebuild(bd_list *l, size_t n, bd_list_text_fn text, bd_list_cmp_fn cmp, void *payload);
/* Handle a movement action; true when it was one. */
bool bd_list_move(bd_list *l, bd_action a);
/* Put the cursor on model row `row` if visible; returns true when it is. */
bool bd_list_select_row(bd_list *l, size_t row);
/* Adjust `top` so the cursor is visible in `height` lines. */
void bd_list_scroll(bd_list *l, int height);
/* Model row under the cursor, or SIZE_MAX when the list is empty. */
size_t bd_list_selected(const bd_list *l);
/* Handle a mouse event at body line `line` (relative to the list's first line): a click
 * selects, the wheel scrolls. Returns true for a click on the row that was already
 * selected (the caller opens it). */
bool bd_list_mouse(bd_list *l, const MEVENT *ev, int line);

/* ---- the app ------------------------------------------------------------------------ */

typedef struct bd_app bd_app;
typedef struct bd_view bd_view;
typedef struct bd_model bd_model;
typedef struct bd_ui_run bd_ui_run;

/* What views hear about, besides keys. */
typedef enum {
    BD_EV_MODEL,   /* task class summaries or case rows changed (ev->tc_index) */
    BD_EV_HISTORY, /* chain status or last scores changed */
    BD_EV_RUN,     /* the live run changed (ev->case_index, or SIZE_MAX for the run) */
    BD_EV_TICK,    /* 10 Hz while something animates; sent to the top view only */
    BD_EV_LOADED,  /* a view finished loading rows (bd_app_notify; not to views) */
    BD_EV_CONCERN, /* to one view, from the view above it: show only the rows concerning
                      ev->what (a failure mode, or with ev->is_key a breakdown key scoring
                      below 1; "" shows all) — the breakdown panel's Enter on the run */
} bd_ev_kind;

typedef struct bd_event {
    bd_ev_kind kind;
    size_t tc_index;
    size_t case_index;
    const char *what; /* BD_EV_CONCERN */
    bool is_key;
} bd_event;

/* Screen regions a view may ask to redraw. */
enum { BD_DIRTY_HEADER = 1, BD_DIRTY_BODY = 2, BD_DIRTY_STATUS = 4, BD_DIRTY_ALL = 7 };

/* What a view shows and where its cursor is, by name (ops->where). "" / 0: unused. */
typedef struct bd_view_where {
    char tc[129];              /* the task class it shows (cases, case, sign, recommend, history) */
    char case_id[256];         /* the case it shows (case, sign, history scope) */
    char run_a[64], run_b[64]; /* the runs it compares */
    char cursor[256];          /* the row under the cursor: a task class or a case id */
    uint64_t cursor_seq;       /* or a history record */
} bd_view_where;

typedef struct bd_view_ops {
    const char *name;         /* shown in the header and help ("cases") */
    const bd_action *actions; /* the view's own actions, BD_A_NONE-terminated, help order */
    /* Set up v->state from `arg`. Returns 0, or -1 with a message already posted. */
    int (*open)(bd_view *v, void *arg);
    /* Draw the body window (its size is the body's). */
    void (*draw)(bd_view *v, WINDOW *w);
    /* Handle an action (ch is the raw key). Returns true when handled. */
    bool (*key)(bd_view *v, bd_action a, int ch);
    /* A model, history or run event (may be NULL). */
    void (*event)(bd_view *v, const bd_event *ev);
    /* The body changed size (may be NULL). */
    void (*resize)(bd_view *v, int rows, int cols);
    /* A mouse event at body-relative (y, x) (may be NULL). */
    void (*mouse)(bd_view *v, const MEVENT *ev, int y, int x);
    /* Position text for the status line ("12/300"), into out (may be NULL). */
    void (*position)(bd_view *v, char *out, size_t cap);
    /* Free v->state. */
    void (*close)(bd_view *v);
    /* By name, what the view shows and where its cursor is, so a reload (Ctrl-R), which
     * renumbers the model, can open the same view again (may be NULL: nothing to keep). */
    void (*where)(bd_view *v, bd_view_where *out);
    /* Put the cursor back on the row `w->cursor` / `w->cursor_seq` names. Returns 1 when
     * it is there, 0 while the rows are still loading (ask again on the next event), -1
     * when no such row exists (may be NULL). */
    int (*reveal)(bd_view *v, const bd_view_where *w);
} bd_view_ops;

struct bd_view {
    const bd_view_ops *ops;
    bd_app *app;
    void *state;
    char title[256]; /* the header's view part: "vuln-remediation › cases" */
    bd_view *below;
    /* The list whose filter the `/` prompt last edited in this view, and how to rebuild
     * it (view_util.c), so Esc can drop a kept filter. NULL when none. */
    struct bd_list *filter_list;
    void (*filter_rebuild)(bd_view *v);
};

typedef enum { BD_MSG_INFO, BD_MSG_WARN, BD_MSG_ERROR } bd_msg_level;

/* The line editor of `/`, shown in the status line. */
typedef struct bd_prompt {
    bool active;
    char buf[128];
    size_t len;
    bd_view *owner;
    void (*changed)(bd_view *v, const char *text);
    void (*done)(bd_view *v, const char *text, bool accepted);
} bd_prompt;

/* ---- views (ui/views/): opened by id, so no view links to another ----------------- */

/* Every view has one header (ui/views/<name>.h) declaring its ops table; desk.c, the one
 * file that includes them all, fills app->views at start-up. Views and the app open each
 * other through these ids, so the dependency graph of ui/ has no cycle
 * (tests/cli/test_tui_structure.sh checks it). The arguments views take are in
 * view_args.h. */
#define BD_UI_VIEWS(X)                                                                             \
    X(BD_VIEW_TCLASSES)  /* task classes, the first view; arg NULL */                              \
    X(BD_VIEW_CASES)     /* arg: size_t * task-class index */                                      \
    X(BD_VIEW_CASE)      /* arg: bd_case_ref * */                                                  \
    X(BD_VIEW_HELP)      /* arg: the view whose keys to show */                                    \
    X(BD_VIEW_MESSAGES)  /* arg: NULL */                                                           \
    X(BD_VIEW_SIGN)      /* arg: bd_case_ref * */                                                  \
    X(BD_VIEW_STAGE)     /* arg: NULL */                                                           \
    X(BD_VIEW_RECORD)    /* arg: bd_case_ref * */                                                  \
    X(BD_VIEW_RUN)       /* arg: NULL (the app's session) */                                       \
    X(BD_VIEW_BREAKDOWN) /* arg: the run view */                                                   \
    X(BD_VIEW_RESULT)    /* arg: bd_result_arg * */                                                \
    X(BD_VIEW_HISTORY)   /* arg: bd_history_scope * */                                             \
    X(BD_VIEW_COMPARE)   /* arg: bd_compare_arg * */                                               \
    X(BD_VIEW_RECOMMEND) /* arg: size_t * task-class index */                                      \
    X(BD_VIEW_REVIEW)    /* arg: bd_review_arg * */

typedef enum {
#define BD_X(id) id,
    BD_UI_VIEWS(BD_X)
#undef BD_X
        BD_VIEW__COUNT
} bd_view_id;

typedef struct bd_case_ref {
    size_t tc_index;
    size_t case_index;
} bd_case_ref;

/* BD_VIEW_HISTORY's scope, either may be NULL (bd_app_open_history copies them); the
 * other views' arguments are in view_args.h. */
typedef struct bd_history_scope {
    const char *tc, *case_id;
} bd_history_scope;

/* What the app asks of the layers around it. The terminal half is tui.c's (the loop, the
 * screen, the timers); the session half is desk.c's (what sits above the views: the live
 * run, reloading, the global keys that open views). Both fill this table at start-up, so
 * app.c, the one implementation of the bd_app API, depends on neither. */
typedef struct bd_app_ops {
    /* terminal (tui.c) */
    void (*schedule_render)(bd_app *app);   /* app->dirty has bits: draw soon */
    void (*animate)(bd_app *app);           /* tick the spinner at 10 Hz */
    void (*leave)(bd_app *app, int status); /* restore the terminal, leave the loop */
    void (*suspend)(bd_app *app);
    int (*foreground_editor)(bd_app *app, const char *path, bd_err *err);
    int (*foreground_viewer)(bd_app *app, const char *text, size_t len, const char *name,
                             bd_err *err);
    void (*redraw_all)(bd_app *app);
    /* session (desk.c) */
    bool (*busy)(const bd_app *app);            /* a run is being prepared or running */
    bool (*quit_hook)(bd_app *app, int status); /* true: the quit waits for the run */
    /* Ctrl-R and the watch (watch.h): re-read the bench and open the same views again;
     * `done`, when not NULL, is what the status line says once they are open (NULL: it
     * keeps what it says, as after the TUI's own act). */
    void (*reload)(bd_app *app, const char *done);
    bool (*global)(bd_app *app, bd_action a);       /* v: true when handled */
    void (*event)(bd_app *app, const bd_event *ev); /* after each broadcast, and notify */
    /* Asked first of every key but Ctrl-C and Ctrl-Z: true when the session keeps it for
     * later (typed while the views open again after a reload: it is handed back through
     * bd_app_key once they are, so it reaches the view it was typed at). */
    bool (*hold_key)(bd_app *app, int key, bool is_code);
} bd_app_ops;

/* The app (app.c). */
struct bd_app {
    bd_app_ops ops;
    const bd_view_ops *views[BD_VIEW__COUNT];
    uv_loop_t *loop;
    bd_bench *bench;
    bd_model *model;
    bd_theme theme;
    bd_view *top;
    bd_ui_run *run; /* the live run, or NULL */
    WINDOW *header, *body, *status, *input;
    int rows, cols;
    bool too_small;
    unsigned dirty;
    bool quitting;
    /* Keys arriving before this time (bd_app_now_ms) are discarded: typed while a GnuPG
     * operation was pending (a passphrase typed for an agent that did not ask), never
     * taken as commands. 0: none. */
    uint64_t discard_keys_until_ms;
    void *watch; /* watch.h: changes made outside the TUI (NULL: not watched) */
    /* A pin is being written on the pool (curate.c): no run starts and no second pin
     * until it is done, so a run never reads pins half rewritten. */
    bool pinning;
    int exit_status;
    char branch[128];
    bd_config config; /* .benchdesk/config.yaml: theme, jobs, python */
    char msg[1024];
    bd_msg_level msg_level;
    /* The last messages, oldest first, kept whole for the `m` view (ring of BD_MSG_LOG). */
    struct {
        char text[1024];
        bd_msg_level level;
        uint64_t at_ms;
    } log[32];
    size_t log_next, log_count;
    /* A yes/no question on the status line (quit during a run, reload over open views):
     * `y` runs `yes`, any other key drops it. */
    struct {
        bool active;
        char text[256];
        void (*yes)(bd_app *app);
    } confirm;
    bd_prompt prompt; /* the line editor of `/` */
    uint64_t start_ns;
    unsigned spin; /* spinner frame */
    void *priv;    /* tui.c's loop state */
};

/* Push a new view of `ops` opened with `arg`. Returns 0, or -1 (message posted). */
int bd_app_push(bd_app *app, const bd_view_ops *ops, void *arg);
/* Pop and close the top view; popping the last one quits. */
void bd_app_pop(bd_app *app);
/* Ask for a redraw of `what` (BD_DIRTY_*), coalesced to at most ~60 frames a second. */
void bd_app_invalidate(bd_app *app, unsigned what);
/* Discard the keys typed so far and those arriving in the next `ms` milliseconds (a
 * GnuPG operation just ended: what was typed meanwhile was meant for it). */
void bd_app_discard_keys(bd_app *app, uint64_t ms);
/* Post a message on the status line (until the next key). */
void bd_app_message(bd_app *app, bd_msg_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Rows of the body the message panel takes (0: the message fits the status line, or is
 * a notice), and drawing it over the bottom of the body (after the view drew). */
int bd_app_message_panel_rows(const bd_app *app);
void bd_app_draw_message_panel(bd_app *app);
/* Post `err` as an error message: "<code>: <message>". */
void bd_app_error(bd_app *app, const bd_err *err);
/* Keep `err` in the message log (`m`) only, when the view on top shows it whole already. */
void bd_app_log_error(bd_app *app, const bd_err *err);
/* Deliver `ev` to every view on the stack, top first, then to app->ops.event. */
void bd_app_broadcast(bd_app *app, const bd_event *ev);
/* Tell the layers above the views (app->ops.event) only: a view loaded rows (BD_EV_LOADED). */
void bd_app_notify(bd_app *app, const bd_event *ev);
/* Start the `/` line editor for `v`, seeded with `initial`. */
void bd_app_prompt(bd_app *app, bd_view *v, const char *initial,
                   void (*changed)(bd_view *v, const char *text),
                   void (*done)(bd_view *v, const char *text, bool accepted));
/* Ask `text` on the status line; `y` calls `yes(app)`, any other key cancels. */
void bd_app_confirm(bd_app *app, const char *text, void (*yes)(bd_app *app));
/* The i-th kept message, oldest first (i < app->log_count), or NULL. */
const char *bd_app_log_at(const bd_app *app, size_t i, bd_msg_level *level, uint64_t *at_ms);
/* Quit: cancels a run in progress first, then leaves the loop with `status`. */
void bd_app_quit(bd_app *app, int status);
/* Something in the background is moving (a run, loading): keep the spinner ticking. */
void bd_app_animate(bd_app *app);
/* Current spinner frame (advances with the 10 Hz tick while something animates). */
const char *bd_app_spinner(const bd_app *app);
/* Monotonic milliseconds since the TUI started. */
uint64_t bd_app_now_ms(const bd_app *app);
/* Monotonic nanoseconds (the clock bd_app_now_ms counts from app->start_ns). */
uint64_t bd_app_clock_ns(void);
/* A key read from the terminal: a curses key code (is_code) or a character. */
void bd_app_key(bd_app *app, int key, bool is_code);
/* Close every view (teardown). */
void bd_app_close_all(bd_app *app);
/* Draw the status line window (no refresh). The header is desk.c's (bd_desk_draw_header). */
void bd_app_draw_status(bd_app *app);
/* Give the terminal back, stop (like SIGTSTP), and take it again when continued. */
void bd_app_suspend(bd_app *app);
/* Show `text` (terminal-safe, `len` bytes) in the user's pager in the foreground: the
 * terminal is given back to it (as for Ctrl-Z) and taken again after, however it ends.
 * The loop does not run meanwhile; a run's children go on and are caught up after.
 * Returns 0, or -1 with `err` (viewer.h). */
/* Open `path` in the user's editor in the foreground (editor.h), the terminal given up
 * and taken back as for the pager. Returns 0, or -1 with `err`. */
int bd_app_foreground_editor(bd_app *app, const char *path, bd_err *err);
int bd_app_foreground_viewer(bd_app *app, const char *text, size_t len, const char *name,
                             bd_err *err);
/* Forget what the terminal shows and draw everything again (Ctrl-L, after a resize). */
void bd_app_redraw_all(bd_app *app);
/* Open the history view scoped to a task class and/or case (both may be NULL, and may be
 * borrowed from a view that closes meanwhile: they are copied first). `h` on a history
 * view replaces it. */
void bd_app_open_history(bd_app *app, const char *task_class, const char *case_id);

/* ---- thread-pool work (work.c) ------------------------------------------------------ */

typedef struct bd_work bd_work;
typedef void (*bd_work_fn)(bd_work *w);                /* on a pool thread: no curses */
typedef void (*bd_work_done_fn)(bd_work *w, bool ran); /* on the loop; ran=false: cancelled */

struct bd_work {
    uv_work_t req;
    bd_app *app;
    bd_work_fn run;
    bd_work_done_fn done;
    void *data;
    bd_work *prev, *next; /* the app's in-flight list */
};

/* Queue `w` (caller-allocated, filled with run/done/data) on libuv's thread pool. `done`
 * always runs exactly once on the loop (it frees w if it owns it). Returns 0 or -1 (then
 * nothing was queued and `done` will not run). */
int bd_work_queue(bd_app *app, bd_work *w);
/* Cancel every queued job that has not started (their done callbacks see ran=false) and
 * set the stop flag that running jobs poll. */
void bd_work_cancel_all(bd_app *app);
/* True once bd_work_cancel_all was called: long jobs check it between steps. Safe from
 * any thread. */
bool bd_work_stopping(void);
/* Jobs queued and not yet finished. */
size_t bd_work_pending(void);

/* Open view `id` with `arg` on top of the stack. Returns 0, or -1 (message posted). */
int bd_app_open(bd_app *app, bd_view_id id, void *arg);
/* Open view `id`; when the top view already is one (and is not the first view), it is
 * replaced instead of stacked. */
int bd_app_open_replacing(bd_app *app, bd_view_id id, void *arg);
/* Whether view `v` is a view of `id`. */
bool bd_view_is(const bd_view *v, bd_view_id id);
/* The topmost view of `id` on the stack, or NULL. */
bd_view *bd_app_find(bd_app *app, bd_view_id id);
/* Close every view of `id` except the first view (they show something going away). */
void bd_app_drop(bd_app *app, bd_view_id id);
/* The id of view `v` (BD_VIEW__COUNT when not registered). */
bd_view_id bd_view_id_of(const bd_view *v);

#endif
