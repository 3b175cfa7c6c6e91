/*
 * shard.h — one run split into shards that an existing scheduler runs (docs/scale.md):
 * the stable partition of a run's cases, the shard spec (`--shard K/N`, `--shard auto`
 * from Slurm or Kubernetes variables), and the shard bundle a shard run writes instead
 * of the local history.
 *
 * A bundle is a directory:
 *   manifest.json        canonical JSON {"bundle_version":1, "run_id", "task_class",
 *                        "task_class_digest", "shard", "shards", "cases":{id: digest},
 *                        "bench_commit", "isolation_class", "harness_version", "host",
 *                        "started_at", "finished_at", "count", "chain_head"}
 *   records/<seq>.json   a chain of its own from a zero genesis, its records as in
 *                        docs/history.md#records
 * The manifest is written last, atomically: a bundle without one is a shard that did
 * not finish. bd_bundle_load checks a bundle on its own (its manifest against its chain);
 * import.h checks it against the local bench.
 */
#ifndef BD_SHARD_H
#define BD_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "runner.h"

#define BD_BUNDLE_VERSION  1
#define BD_BUNDLE_MANIFEST "manifest.json"
#define BD_BUNDLE_RECORDS  "records"
/* The largest manifest read (a run of ~100,000 cases fits). */
#define BD_BUNDLE_MANIFEST_MAX (64u * 1024u * 1024u)

/* The partition key of a case: the first 8 bytes of BLAKE3(case_id), big-endian. */
uint64_t bd_shard_key(const char *case_id);

/* The shard (0..n-1) of `case_id` among `n` shards (n >= 1). */
uint32_t bd_shard_of(const char *case_id, uint32_t n);

/* Where a shard run's K, N and run id come from. */
typedef struct bd_shard_spec {
    uint32_t k, n;
    char run_id[129];
} bd_shard_spec;

/* Environment lookup (getenv in the program, a table in tests). */
typedef const char *(*bd_shard_getenv_fn)(const char *name);

/* Parse `spec`, "K/N" (0 <= K < N <= BD_SHARDS_MAX, decimal) or "auto":
 *   Slurm:      K = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP
 *               (step 1 when unset), N = SLURM_ARRAY_TASK_COUNT; run id SLURM_ARRAY_JOB_ID;
 *   Kubernetes: K = JOB_COMPLETION_INDEX, N = BENCHDESK_SHARDS.
 * `run_id` (--run-id, may be NULL) wins over the scheduler's. Returns 0, or -1 with
 * shard.bad_spec (exit 2) naming what is missing or out of range, and how to give it. */
int bd_shard_spec_parse(bd_shard_spec *out, const char *spec, const char *run_id,
                        bd_shard_getenv_fn get, bd_err *err);

/* ---- the manifest ---------------------------------------------------------------- */

typedef struct bd_bundle_case {
    char *id;
    char digest[72];
    bool not_run; /* the cost cap stopped the shard before this case ran: no record */
} bd_bundle_case;

typedef struct bd_bundle_manifest {
    char run_id[129];
    char task_class[129];
    char task_class_digest[72];
    uint32_t shard, shards;
    bd_bundle_case *cases; /* sorted by id */
    size_t n_cases;
    size_t n_not_run; /* cases marked not_run (the optional member "not_run") */
    /* The cost cap that stopped the shard (the optional member "cost_cap_usd", only
     * beside "not_run"; 0..BD_COST_CAP_MAX_USD): has_cost_cap false when absent. */
    bool has_cost_cap;
    double cost_cap_usd;
    char bench_commit[41]; /* "" for null */
    char isolation_class[16];
    char harness_version[65];
    char host[256];
    char started_at[40], finished_at[40];
    uint64_t count;
    char chain_head[BD_HASH_BUF];
} bd_bundle_manifest;

void bd_bundle_manifest_release(bd_bundle_manifest *m);

/* Parse the bytes of a manifest strictly: one canonical JSON object with exactly the
 * members above, each in format (ids and digests as in history.h, shard < shards <=
 * BD_SHARDS_MAX, cases sorted and unique by construction of JSON objects). Returns 0
 * and fills *out (release it), or -1 with bundle.invalid naming the member (`name` is
 * the file, for the message). Never crashes on any input (fuzzed). */
int bd_bundle_manifest_parse(bd_bundle_manifest *out, const char *buf, size_t len, const char *name,
                             bd_err *err);

/* The manifest's canonical bytes (new string, caller frees; *len its length), or NULL
 * when out of memory or a field is out of format. */
char *bd_bundle_manifest_json(const bd_bundle_manifest *m, size_t *len);

/* ---- writing a bundle -------------------------------------------------------------- */

typedef struct bd_bundle_writer {
    char *dir;
    bd_history *records; /* the bundle's own chain, records/ */
} bd_bundle_writer;

/* Create the bundle directory `dir` (mode 0755; it must not exist: bundle.exists) and
 * its records/ chain. Returns 0 with w->records open for appends (bd_run_prepare makes a
 * shard run's runner record there), or -1 (bundle.exists, io.error). */
int bd_bundle_create(bd_bundle_writer *w, const char *dir, bd_err *err);

/* Fill host (sanitised gethostname), harness_version and bench_commit (the git HEAD
 * holding `bench_root`, "" when there is none) of `m`. */
void bd_bundle_manifest_fill_env(bd_bundle_manifest *m, const char *bench_root);

/* Seal the bundle: verify its records chain, set m->count and m->chain_head from it, and
 * write manifest.json atomically. Returns 0 or -1 (bundle.tampered, io.error). */
int bd_bundle_finish(bd_bundle_writer *w, bd_bundle_manifest *m, bd_err *err);

/* Seal the bundle of a finished shard run: the manifest of run `s` (run id, task class,
 * task-class digest as run, isolation class, times), shard `sp`, the cases `ids` (the
 * shard's selection; their digests are tc's pins, which the run checked before and while
 * it ran; those in s->not_run marked not run, with the cap in cost_cap_usd: the cost cap
 * stopped the shard),
 * host/version/commit (bd_bundle_manifest_fill_env), then bd_bundle_finish.
 * Returns 0 or -1 (case.digest_missing for an id without a pin, bd_bundle_finish's). */
int bd_bundle_seal(bd_bundle_writer *w, const bd_shard_spec *sp, const bd_task_class *tc,
                   const bd_run_summary *s, const char *const *ids, size_t n,
                   const char *bench_root, bd_err *err);

void bd_bundle_writer_release(bd_bundle_writer *w);

/* ---- reading a bundle -------------------------------------------------------------- */

typedef struct bd_bundle {
    char *dir;
    bd_bundle_manifest m;
    bd_history_record *records; /* seq 1..count, verified */
    size_t n_records;
} bd_bundle;

/* Load and check the bundle at `dir` on its own: the manifest parses
 * (bundle.invalid; a missing manifest is a shard that did not finish), its records chain
 * verifies and ends at manifest count/chain_head (bundle.tampered), and every record is a
 * version-2 score record of this run, task class, task-class digest and isolation class,
 * without an origin, for exactly one of the manifest's cases with its digest, each case
 * once (bundle.tampered), and every case belongs to shard K of N (bundle.partition_mismatch).
 * Returns 0 and fills *out (bd_bundle_release), or -1 with `err`. */
int bd_bundle_load(bd_bundle *out, const char *dir, bd_err *err);

void bd_bundle_release(bd_bundle *b);

#endif
