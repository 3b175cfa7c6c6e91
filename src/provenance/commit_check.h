/*
 * commit_check.h — which staged cases and task classes may be committed (docs/formats.md
 * #digests, docs/provenance.md).
 *
 * Every case the index holds is digested from the index's own blobs (the bytes that would
 * be committed, not the work tree) through the one case digest loop (case_source.h) and
 * compared with its pin in the staged cases/digests.yaml, read by the bench's strict
 * loader (bd_digests_parse); the task class (registration.yaml + rubric.py) likewise.
 * Git itself is gitops.h's; this room only judges.
 */
#ifndef BD_COMMIT_CHECK_H
#define BD_COMMIT_CHECK_H

#include "err.h"
#include "gitops.h"

/* The pin check of a commit, on its own (bd_git_commit runs it; the stage view may show
 * it early). Returns 0 when every staged case and task class matches its staged pin,
 * -1 otherwise: case.digest_missing, case.digest_mismatch, case.schema_invalid (a case
 * without case.yaml), case.unsupported_entry, case.pin_orphaned (a staged pin naming a
 * case the index does not hold), task_class.digest_missing,
 * task_class.digest_mismatch, the loader's errors for a staged digests.yaml it refuses,
 * git.error, env.out_of_memory. */
int bd_git_check_index(bd_git *g, bd_err *err);

/* Commit the index to the current branch with the pin check: bd_git_commit_with (gitops.h)
 * with bd_git_check_index as its check, so no commit skips it. The CLI's commit and the
 * stage view both commit through this. Refusals, the signing and the branch move as
 * bd_git_commit_with, plus bd_git_check_index's errors. Returns 0 or -1. */
int bd_git_commit(bd_commit_result *out, bd_git *g, const bd_commit_opts *opts, bd_err *err);

#endif
