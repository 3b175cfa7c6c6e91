/*
 * warm.h — warm starts (docs/runner.md, "Warm starts"): the embedded Python of the warm
 * interpreter, `benchdesk-warm`, a binary of its own (built from exec_warm.c, which holds
 * its processes, and warm_py.c, which holds its Python) so that benchdesk itself never
 * links libpython.
 *
 * The warm interpreter initialises the interpreter the run names (the one this binary
 * embeds: BD_WARM_PYTHON) as `<python> -s rubric.py` would — the same sys.argv,
 * sys.orig_argv, sys.executable, sys.flags, hash seed and environment — imports json,
 * compiles the verified rubric once and imports the modules of the fixed allowlist
 * BD_WARM_ALLOWLIST its code names. Each case's rubric
 * process is a fork of it, jailed before any of this runs (exec_server.c's prepared_rubric,
 * or program_child when the spares are forks); bd_warm_case_main then restores what a cold
 * start gives and runs the rubric.
 *
 * Only the warm binary uses these functions; they are single-threaded.
 */
#ifndef BD_WARM_H
#define BD_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The standard-library modules a warm interpreter may import before a case: a fixed list,
 * never a module outside it, whatever a rubric names (some run code on import). The first,
 * json (every rubric's document), at its start; each other one once the compiled rubric's
 * code names it. A module no case uses would cost every case the copy of its pages, at
 * fork and at exit (docs/runner.md#the-allowlist-a-rubric-names). */
#define BD_WARM_ALLOWLIST                                                                          \
    "json", "re", "math", "statistics", "collections", "itertools", "functools", "difflib",        \
        "hashlib", "pathlib", "typing", "dataclasses", "datetime", "string", "textwrap",           \
        "unicodedata", "base64"

/* How many host uids a run's warm jails get when benchdesk is root: uid 0 of every warm
 * jail of the run is the first, each running case one of the others — slot s of n warm
 * interpreters uses 1 + s, 1 + s + n, ... only (exec_warm.c), so no two cases share one.
 * The blocks start at BD_WARM_HOST_BASE, after the cold cases' range (jail.h), one block
 * per live benchdesk pid (one warm run per process at a time as root, exec.c). */
#define BD_WARM_UIDS      512u
#define BD_WARM_HOST_BASE 1883242496u

/* At most this many warm interpreters per run (one per worker slot; each is a ~40 MB
 * Python): more jobs than that share them. As root a run then has at most
 * BD_WARM_JOBS_ROOT cases at once (each slot's share of the block, less its uid 0). */
#define BD_WARM_SLOTS_MAX 8u
#define BD_WARM_JOBS_ROOT ((BD_WARM_UIDS - 1u) / BD_WARM_SLOTS_MAX * BD_WARM_SLOTS_MAX)

/* Initialise the embedded interpreter as `interp -s rubric.py` and import json. Returns 0, or
 * -1 with a one-line reason in `why`. */
int bd_warm_py_init(const char *interp, char *why, size_t whylen);

/* Compile `src` (the rubric's verified bytes) unless the same bytes are compiled already;
 * a source that does not compile is left to each case (which prints the same error a
 * cold start prints). What the compiler warns is recorded, and each case shows it again
 * on its own stderr. Once compiled, the modules of BD_WARM_ALLOWLIST its code names are
 * imported. Returns true when what a fork inherits changed. */
bool bd_warm_py_compile(const char *src, size_t len);

/* Around every fork of the warm server (Python's own at-fork protocol). */
void bd_warm_py_before_fork(void);
void bd_warm_py_after_fork_parent(void);

/* The pages a case writes (docs/runner.md, "Pages a case writes, asked for at once"): in
 * a fork of the warm server, bd_warm_py_learn_child runs a stand-in for a rubric through a
 * case's own steps, writes the runs of the server's pages it wrote to `fd` and exits;
 * the server gives that fd to bd_warm_py_learn_read, which keeps at most
 * BD_WARM_LEARN_PAGES pages of them for every later case's rubric process to ask for at
 * once (bd_warm_case_main). Returns the pages kept (0: none, cases fault as before). */
#define BD_WARM_LEARN_PAGES 4096u
void bd_warm_py_learn_child(int fd) __attribute__((noreturn));
size_t bd_warm_py_learn_read(int fd);

/* In a case's rubric process, before its case comes (no Python runs): ask for the learned
 * pages at once (bd_warm_py_learn_read), so that the copies are made while the case before
 * runs, not on this case's path. Once per process; bd_warm_case_main asks when it was not
 * called. */
void bd_warm_py_populate(void);

/* In a case's rubric process (PID 2 of its jail, limits and seccomp filter in place): ask
 * for the learned pages at once unless bd_warm_py_populate did, run Python's after-fork hooks
 * (random is reseeded), restore what a cold start gives — sys.argv from `argv` (argv[2..]),
 * __main__, sys.path[0], fresh sys.std* on fds 0..2, Python's signal dispositions and an
 * empty mask, the process name — close every other descriptor (`status_fd` too, after
 * reporting a setup failure on it), run the rubric as __main__ and exit as
 * `python -s rubric.py` would. Never returns. */
void bd_warm_case_main(char **argv, int status_fd) __attribute__((noreturn));

#endif
