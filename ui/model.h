/*
 * model.h — what the TUI knows about the bench, filled in lazily on libuv's thread pool.
 *
 * The first screen must appear before anything is hashed (a bench may hold 100,000
 * cases): the task-class names come from bd_bench_open on the loop thread; each task
 * class is then loaded on the pool, its own pin and signatures are checked once, and its
 * cases are checked in chunks, each case read once (bd_verify_cases_check: its digest,
 * its signatures, and the case.yaml parsed from the bytes hashed, which gives the row its
 * metadata). The row the cases view's cursor is on goes first: its chunk's case.yaml
 * files alone are read at once (cheap), then the chunks of checks from there on. Every
 * merge happens on the loop thread and is announced with a BD_EV_MODEL event.
 *
 * Ownership: the model owns every string in it. A bd_task_class is shared read-only with
 * the pool jobs through a reference count, so a reload never frees one a job still reads.
 *
 * For tests: BENCHDESK_MODEL_STATS=<file> makes bd_model_free write how many cases each
 * kind of job read (bd_model_reads, as "name=value" lines); BENCHDESK_MODEL_HOLD=digests
 * starts no chunk of checks, so whatever a row shows came from its metadata read alone;
 * BENCHDESK_MODEL_HOLD=all reads no metadata either, so every row stays loading;
 * BENCHDESK_MODEL_SLOW_MS=<ms> makes each task-class load take at least that long.
 */
#ifndef BD_UI_MODEL_H
#define BD_UI_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "bench.h"
#include "history_model.h"
#include "runs_model.h"
#include "provenance.h"
#include "verify.h"

typedef enum { BD_LOAD_PENDING, BD_LOAD_DONE, BD_LOAD_FAILED } bd_load_state;

/* One case row. */
typedef struct bd_ui_case {
    char *id;
    /* from case.yaml (meta) */
    uint8_t meta;                          /* bd_load_state */
    uint8_t disposition, difficulty, prov; /* bd_disposition, bd_difficulty, bd_prov_claim */
    char *title;
    /* from verification (digest) */
    uint8_t digest; /* bd_load_state: DONE = intact, FAILED = see digest_code */
    bd_code digest_code;
    char *digest_msg; /* when FAILED; also the meta error when meta FAILED */
    char digest_hex[BD_DIGEST_BUF];
    /* provenance verified with GnuPG (in the digest job, for cases that carry a
     * signature): DONE = prov_status valid; FAILED = could not verify (prov_code) */
    uint8_t prov_check;  /* bd_load_state */
    uint8_t prov_status; /* bd_prov_status */
    bd_code prov_code;
    /* from the history: the newest score record of this case */
    bool has_last;
    bool last_passed;
    double last_score;
    char *last_fm; /* first failure mode code, or NULL */
    uint64_t last_seq;
    uint8_t last_stale; /* BD_STALE_* bits of that record against today's pins */
} bd_ui_case;

typedef struct bd_tc_ref {
    bd_task_class *tc;
    int refs;
} bd_tc_ref;

/* One task class row. */
typedef struct bd_ui_tc {
    char *name;
    uint8_t state; /* bd_load_state of registration + digests + case listing */
    bd_err err;    /* when FAILED */
    bd_tc_ref *ref;
    bd_ui_case *cases;
    size_t n_cases;
    size_t meta_done, digest_done; /* cases whose meta / digest result arrived */
    size_t prov[3];                /* by bd_prov_claim, over loaded metas */
    size_t prov_bad;               /* cases whose signatures failed verification */
    size_t pstat[4];               /* verified cases by bd_prov_status */
    size_t prov_checked;           /* cases whose provenance was verified */
    size_t digest_bad;             /* cases whose verification failed */
    size_t orphans;                /* pins naming no case directory */
    uint8_t tc_pin;                /* bd_load_state: DONE = the task-class pin holds */
    bd_code tc_pin_code;
    /* the task class's own two signatures (registration + rubric,
     * docs/provenance.md#the-signed-message) */
    uint8_t tc_prov_check;  /* bd_load_state: DONE = tc_prov_status valid */
    uint8_t tc_prov_status; /* bd_prov_status */
    bd_code tc_prov_code;
    /* the last full run of this task class in the verified chain (runs_model.h) */
    bool has_last_run;
    double last_mean, last_pass_rate;
    size_t last_run_cases;
    char last_partial[64]; /* a newer partial or cancelled run ("partial (4 of 17 cases)") */
    char trend[64];        /* sparkline of the last full runs' means */
    /* scheduling */
    size_t prio_case;    /* case the user looks at: its chunk goes first */
    size_t saved_cursor; /* cursor of the cases view when it was closed */
    size_t saved_top;
    bool cursor_saved;
} bd_ui_tc;

struct bd_model {
    bd_app *app;
    bd_ui_tc *tcs;
    size_t n_tcs;
    size_t jobs_in_flight;
    /* the chained history: chain status and last scores, and the runs (owned) */
    bd_history_model *history;
    bd_runs_model *runs;
    /* provenance: NULL when GnuPG or trusted-signers.yaml is unusable (prov_err says
     * why); then only what case.yaml claims is shown */
    bd_prov_ctx *prov;
    bd_err prov_err;
};

/* Build the model for app->bench (names only; nothing is read yet) and start loading.
 * Returns 0 or -1 (env.out_of_memory). */
int bd_model_new(bd_model **out, bd_app *app, bd_err *err);
void bd_model_free(bd_model *m);

/* Re-read everything from disk (task classes, cases, history). */
int bd_model_reload(bd_model *m, bd_err *err);

/* Ask the chunk scheduler to prefer the chunk holding `case_index` of task class
 * `tc_index` (the cases view calls this when its cursor moves). */
void bd_model_prioritize(bd_model *m, size_t tc_index, size_t case_index);

/* Borrow the loaded task class of row `tc_index` (NULL while loading or failed). */
const bd_task_class *bd_model_tc(const bd_model *m, size_t tc_index);

/* A counted reference to the loaded task class of row `tc_index` for a pool job (NULL
 * while loading or failed); release it with bd_model_tc_release on the loop thread. */
bd_tc_ref *bd_model_tc_hold(bd_model *m, size_t tc_index);
void bd_model_tc_release(bd_tc_ref *ref);

/* Index of case `id` in task class `tc_index`, or SIZE_MAX. */
size_t bd_model_find_case(const bd_model *m, size_t tc_index, const char *id);
/* Index of task class `name`, or SIZE_MAX. */
size_t bd_model_find_tc(const bd_model *m, const char *name);

/* Loading still going on (for the header spinner). */
bool bd_model_busy(const bd_model *m);

/* Re-read the chain status, the last scores and the runs from the history (after a run). */
void bd_model_refresh_history(bd_model *m);

/* The chain status for the header (a copy). */
bd_chain_status bd_model_chain(const bd_model *m);

/* Record a finished case score as the case's last score (the run view calls this as
 * results arrive, before the history is re-read). */
void bd_model_set_last(bd_model *m, size_t tc_index, size_t case_index, bool passed, double score,
                       const char *first_fm);

/* What the model's jobs read since it was made (reloads included). */
typedef struct bd_model_reads {
    size_t meta_reads;  /* case.yaml files read for a row's metadata alone (cursor chunks) */
    size_t case_checks; /* cases checked (read once: digest, signatures, metadata) */
    size_t tc_checks;   /* task classes whose own pin and signatures were checked */
} bd_model_reads;

/* Chunk sizes (cases per pool job); a metadata chunk lies inside one chunk of checks. */
#define BD_MODEL_META_CHUNK   256
#define BD_MODEL_DIGEST_CHUNK 512
/* Chunks of checks the model keeps in flight at once: one per core of the 2-core machine
 * it is measured on (the loop thread merges and draws between them). libuv's pool has 4
 * threads: 2 for these, one more for the cursor's metadata (it never waits behind a
 * chunk of checks), one for the views' own jobs. */
#define BD_MODEL_MAX_JOBS 2

#endif
