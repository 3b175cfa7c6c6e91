/*
 * import.h — merge the shard bundles of one run into the local chain (docs/scale.md).
 *
 * `benchdesk history import BUNDLE_DIR...` and any other front end call bd_import_run.
 * It checks everything before it appends anything: each bundle on its own (shard.h), the
 * bundles against each other (one run, one task class and digest, one N, each shard
 * once, all N shards unless partial), and against the local bench (the task-class pin
 * and every case pin equal the bundle's; each shard's cases are exactly what K/N selects
 * from the union; a full run has all run_cases cases). It then appends, under the
 * history's lock, shard 0..N-1 and within a shard the bundle's seq order, each record
 * with `origin`, through bd_history_append_score — so the chain's bytes do not depend on
 * the order the bundles were given in — and writes the run summary as a local run does
 * (bd_run_summary_tally). Imports take turns on <root>/.benchdesk/import.lock (flock).
 * Records of the run already in the chain (an earlier import, or
 * one interrupted part-way) are recognised by their origin and not appended again.
 *
 * A shard not given is missing only when the chain does not hold it either: bundles of
 * a run already imported (all of them or some) import as "already imported", appending
 * nothing, and the last shards of a run imported with --partial complete it without
 * --partial. The local cases a full run does not cover — cases added to the bench since
 * the run — are listed, never refused: the run is judged against its own case list (the
 * manifests' cases), not today's bench. Shards are named by their K of `--shard K/N`,
 * from 0 (bd_import_shard_words: "shard 1 of 3").
 */
#ifndef BD_IMPORT_H
#define BD_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "runner.h"
#include "sign.h"

typedef struct bd_import_opts {
    bool partial; /* accept a subset of the shards (the result names the missing ones) */
    /* The importing operator's key, checked (bd_run_operator_check), or NULL: each record
     * appended carries its fingerprint and the run is signed after them (run.signed over
     * the run's records with that fingerprint, earlier imports' included). */
    const bd_sign_key *operator_key;
} bd_import_opts;

typedef struct bd_import_result {
    char run_id[129];
    char task_class[129];
    uint32_t shards;   /* N */
    size_t bundles;    /* bundles given */
    uint32_t *missing; /* shards neither given nor in the chain (partial), sorted K */
    size_t n_missing;
    bool complete;    /* the chain now holds every record of the run (run_cases) */
    char **uncovered; /* a full run: local cases it did not score, sorted (see above) */
    size_t n_uncovered;
    /* The first append removed a torn final line a crash had left (bd_history_repair_note),
     * or "". Set on failure too: the front end says so either way. */
    char history_repaired[256];
    uint64_t appended;   /* records added to the local chain by this call */
    uint64_t already;    /* records of the given bundles that were already in it */
    uint64_t signed_seq; /* the run.signed record this import appended, or 0 */
    char chain_head[BD_HASH_BUF];
    bd_run_summary summary; /* of every record of the run now in the chain */
    bool has_summary;       /* written (false when nothing was appended) */
    char summary_path[4352];
} bd_import_result;

/* Import the bundles in `dirs` (n >= 1) into the history of `bench`. Returns 0 with
 * *res filled (release it; appended == 0 with already > 0 means the given shards were
 * already imported and nothing changed), or -1 with `err` and nothing appended (and
 * *res empty but for history_repaired):
 *   bundle.invalid, bundle.tampered, bundle.partition_mismatch (a bundle on its own);
 *   bundle.mixed_runs (another run id, task class, digest or N than the first bundle),
 *   bundle.duplicate_shard, bundle.missing_shard (without partial: a shard neither given
 *   nor already in the chain, and the run not complete);
 *   bench.unknown_task_class; bundle.task_class_mismatch (the local task-class pin
 *   differs); bundle.pin_mismatch (a case pin differs, or the case is not in the bench);
 *   bundle.partition_mismatch (a full run's shards do not hold run_cases cases);
 *   chain.tampered (the local chain); bundle.conflict (the chain already holds records
 *   of this run that these bundles do not have: a local run of the same id, or a shard
 *   imported from another bundle); io.error, env.out_of_memory.
 * An I/O failure while appending leaves the records appended so far (each whole); the
 * same import run again completes it. */
int bd_import_run(bd_import_result *res, const bd_bench *bench, const char *const *dirs, size_t n,
                  const bd_import_opts *opts, bd_err *err);

void bd_import_result_release(bd_import_result *r);

/* The shards `shards[0..n)` (sorted, n >= 1) of a run of `of` in plain words, numbered as
 * `--shard K/N` numbers them (K from 0): "shard 1 of 3", "shards 0 and 2 of 3", "shards
 * 4, 7 and 60-99 of 100" (three or more in a row as a range; cut with "and N more" when
 * `cap` is short). Always NUL-terminated. */
void bd_import_shard_words(char *buf, size_t cap, const uint32_t *shards, size_t n, uint32_t of);

#endif
