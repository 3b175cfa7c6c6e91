/*
 * gitops.h — staging and committing the bench through libgit2
 * (docs/provenance.md#staging-and-committing).
 *
 * Only changes under the bench root's bench/ and audit/ folders are shown, staged or
 * unstaged. A commit is written as the user from git config (user.name, user.email),
 * handles an unborn HEAD, may be signed with GPGME, and moves the branch with a
 * compare-and-swap: if the branch moved while the commit was being made (another
 * process committed), nothing is overwritten and git.ref_moved says so.
 *
 * Before committing, the index's cases and task classes are checked against their staged
 * pins (commit_check.h, whose bd_git_commit is the commit every front end makes); any
 * mismatch refuses the commit. The index and git trees are
 * case sources (case_source.h) for that check and for the case as it was.
 *
 * Threads: a bd_git may be used by one thread at a time (libuv's thread pool is fine);
 * open one per thread for parallel work. Nothing here prints or spawns.
 */
#ifndef BD_GITOPS_H
#define BD_GITOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "case_source.h"
#include "err.h"
#include "sign.h"

typedef struct bd_git bd_git;

/* Open the git work tree holding the bench root `bench_root` (which may be a
 * sub-directory of the work tree). git.not_a_repository when there is none or it is
 * bare; git.error for libgit2 failures. Free with bd_git_close. */
int bd_git_open(bd_git **out, const char *bench_root, bd_err *err);
void bd_git_close(bd_git *g);

/* Borrowed: the bench root's path inside the work tree, "" or "sub/dir/". */
const char *bd_git_prefix(const bd_git *g);

/* The current branch's short name ("main") into `out` (`cap` bytes); *unborn is true
 * when it has no commit yet. git.detached_head when HEAD is detached. */
int bd_git_branch(bd_git *g, char *out, size_t cap, bool *unborn, bd_err *err);

/* What the TUI's header shows for the work tree holding `root`, read from .git/HEAD
 * without libgit2 (cheap on the start-up path; a linked worktree's "gitdir:" file is
 * followed): the branch ("main"), or for a detached HEAD its short commit
 * ("1a2b3c4 (detached)"). "" when `root` is in no git work tree or HEAD cannot be read;
 * never fails. */
void bd_git_head_label(const char *root, char *out, size_t cap);

/* The commit HEAD points at, as 40 hex digits, into `out`; "" when HEAD is unborn.
 * Works on a detached HEAD too. Returns 0 or -1 (git.error). */
int bd_git_head_commit(bd_git *g, char out[41], bd_err *err);

/* One changed path. A path may be both staged and unstaged. Kinds are git's letters:
 * 'A' added, 'M' modified, 'D' deleted, 'T' type changed, 0 for none. */
typedef struct bd_git_entry {
    char *path;      /* relative to the bench root, e.g. "bench/tc/cases/c1/case.yaml" */
    char staged;     /* HEAD -> index */
    char unstaged;   /* index -> work tree */
    bool untracked;  /* not in the index (then staged == unstaged == 0) */
    bool conflicted; /* an unresolved merge conflict */
    bool trust;      /* bench/trusted-signers.yaml or under bench/keys/: changes who may sign */
} bd_git_entry;

/* True for a path (relative to the bench root) that decides who may sign:
 * bench/trusted-signers.yaml and everything under bench/keys/. */
bool bd_git_path_is_trust(const char *path);

typedef struct bd_git_status {
    bd_git_entry *entries; /* sorted by path */
    size_t n;
    size_t n_staged, n_unstaged, n_untracked;
    size_t n_trust;   /* entries with `trust`, listed first */
    char branch[256]; /* short name, "" when detached */
    bool unborn;
} bd_git_status;

/* Changes under bench/ and audit/ (untracked folders listed file by file, ignored files
 * left out), sorted by path except that changes to who may sign (`trust`) come first.
 * Release with bd_git_status_release. Returns 0 or -1. */
int bd_git_status_get(bd_git_status *out, bd_git *g, bd_err *err);
void bd_git_status_release(bd_git_status *s);

/* Stage `paths` (absolute, or relative to the bench root): every change at or below
 * each path — new and modified files are added (git_index_add_bypath), deleted ones
 * removed (git_index_remove_bypath) — then the index is written. A path outside the
 * bench root's bench/ and audit/ is git.path_outside; one that is neither in the work
 * tree nor in the index is git.path_unknown; nothing is staged unless every path is
 * acceptable. *n_changed (may be NULL) gets the number of index entries changed.
 * Returns 0 or -1. */
int bd_git_stage(bd_git *g, const char *const *paths, size_t n, size_t *n_changed, bd_err *err);

/* Undo staging of `paths` (same rules): their index entries go back to HEAD's (or are
 * removed on an unborn branch). Returns 0 or -1. */
int bd_git_unstage(bd_git *g, const char *const *paths, size_t n, bd_err *err);

/* The pin check a commit makes (which staged cases and task classes match their staged
 * pins) is policy, not git: commit_check.h (bd_git_check_index), whose bd_git_commit is
 * the one way to commit (it runs bd_git_commit_with with that check). */

/* ---- the index, read for a check -------------------------------------------------- */

typedef struct bd_git_index bd_git_index;

/* Read the index of `g` (git.error). Close with bd_git_index_close. */
int bd_git_index_open(bd_git_index **out, bd_git *g, bd_err *err);
void bd_git_index_close(bd_git_index *ix);
size_t bd_git_index_count(const bd_git_index *ix);
/* Borrowed: the work-tree path of entry `i` (sorted bytewise, '/' separated, the bench
 * root's prefix included); *exec (may be NULL) gets whether it is staged as 100755. */
const char *bd_git_index_path(const bd_git_index *ix, size_t i, bool *exec);
/* The staged bytes of entry `i`, NUL-terminated and owned (free). Returns 0 or -1
 * (git.error "cannot read the staged <path>", env.out_of_memory). */
int bd_git_index_bytes(const bd_git_index *ix, size_t i, char **out, size_t *len, bd_err *err);

/* The index entries [from, to) as a case source (case_source.h), every one below the
 * same case dir whose path, with its trailing '/', is the first `base_len` bytes of
 * theirs. Bytes are the staged blobs; an entry staged as a symlink or a submodule is
 * refused (case.unsupported_entry naming it). `ix` must outlive the source. Returns 0 or
 * -1 (env.out_of_memory); free with bd_git_index_source_free. */
int bd_git_index_source(bd_case_source **out, bd_git_index *ix, size_t from, size_t to,
                        size_t base_len, bd_err *err);
void bd_git_index_source_free(bd_case_source *src);

typedef struct bd_commit_opts {
    const char *message;    /* required; cleaned up like git does (trailing newline) */
    bool sign;              /* sign with GPGME (sign_opts picks the key) */
    bd_sign_opts sign_opts; /* key, passphrase callback, GnuPG home */
    /* Called after the commit object is written and before the branch is moved; a test
     * hook for racing updates, or a last chance to cancel (non-zero return: nothing is
     * moved, git.error). May be NULL. */
    int (*before_ref_update)(void *payload);
    void *payload;
} bd_commit_opts;

#define BD_COMMIT_OPTS_INIT                                                                        \
    {                                                                                              \
        NULL, false, BD_SIGN_OPTS_INIT, NULL, NULL                                                 \
    }

typedef struct bd_commit_result {
    char id[41];      /* the new commit */
    char branch[256]; /* short name of the branch moved */
    bool initial;     /* the branch was unborn */
    bool is_signed;
    char signer[BD_FPR_LEN + 1]; /* primary fingerprint, "" when unsigned */
} bd_commit_result;

/* Commit the index to the current branch, after `check` (non-NULL: the pin check,
 * commit_check.h), which runs once the index is read and has no conflicts, before anything
 * is written; its refusal (-1, err set) is the commit's. Front ends call bd_git_commit
 * (commit_check.h), never this. Refuses: an index with conflicts (git.index_conflict),
 * whatever `check` refuses (a case or rubric off its pin), no user.name or user.email
 * (git.no_identity), a detached HEAD (git.detached_head), nothing staged
 * (git.nothing_to_commit), an empty message (usage.bad_args). With `sign`: a detached
 * armored OpenPGP signature over the commit object in its gpgsig header (errors of
 * bd_sign_bytes). The branch is then moved only if it still points where it
 * did when the commit was built (or, unborn, still does not exist): git.ref_moved
 * otherwise — the commit object stays in the object database, the index is untouched,
 * and committing again is safe. Returns 0 or -1. */
int bd_git_commit_with(bd_commit_result *out, bd_git *g, const bd_commit_opts *opts,
                       int (*check)(bd_git *g, bd_err *err), bd_err *err);

/* ---- the case as it was -------------------------------------------------------------- */

/* Commits searched back from HEAD, at most. */
#define BD_GIT_CASE_SEARCH_MAX 5000

/* A past version of a case found in git. */
typedef struct bd_git_case_version {
    bool found;
    char commit[41];   /* the newest commit holding the case with that digest */
    int64_t when;      /* its author time (Unix seconds) */
    char summary[256]; /* its subject line */
    char *case_yaml;   /* case.yaml as it was (owned, NUL-terminated; untrusted text) */
    size_t case_yaml_len;
} bd_git_case_version;

/* The case `case_id` of `task_class` as it was when its case digest was `digest`
 * (docs/history.md: the result view of a stale record shows the case it was scored on):
 * walks the commits reachable from HEAD (newest first, at most BD_GIT_CASE_SEARCH_MAX),
 * hashing bench/<tc>/cases/<id>/ of each distinct tree exactly as docs/formats.md#digests, and
 * returns the first match. Returns 1 and fills *out (release with bd_git_case_version_release), 0
 * when no commit has it (never committed, or beyond the search), -1 with git.error or
 * env.out_of_memory. Reads only; safe on a worker thread with its own bd_git. */
int bd_git_case_at_digest(bd_git_case_version *out, bd_git *g, const char *task_class,
                          const char *case_id, const char *digest, bd_err *err);
void bd_git_case_version_release(bd_git_case_version *v);

/* A task class's registration.yaml and rubric.py as of the last commit reachable from
 * HEAD that changed its provenance.yaml (the last signing that was committed): what the
 * sign view diffs the current files against. */
typedef struct bd_signed_texts {
    char commit[41];    /* that commit's id */
    char *registration; /* its bytes (NUL-terminated), NULL when it had none */
    size_t registration_len;
    char *rubric;
    size_t rubric_len;
} bd_signed_texts;

/* Fill *out (bd_signed_texts_release) for `task_class` of the bench `g` opened. Returns 0,
 * 1 when no commit (within the last 20,000) changed its provenance.yaml, or -1 (out of
 * memory). */
int bd_git_last_signed(bd_git *g, const char *task_class, bd_signed_texts *out, bd_err *err);
void bd_signed_texts_release(bd_signed_texts *t);

#endif
