/*
 * compare.h — comparing two runs of a task class from the verified chain (docs/compare.md).
 *
 * The history is read whole and verified first (a tampered chain is refused, never
 * compared); its score records are grouped by run_id into runs. A run is **full** when its
 * records are run_scope "full" and number run_cases (docs/history.md); a cancelled or subset
 * run is partial. Run summaries are never read: they are not chained.
 *
 * Two runs of one task class are aligned by case id. Each case is
 *   regressed  passed -> failed, or (pass/fail unchanged) score down
 *   improved   failed -> passed, or (pass/fail unchanged) score up
 *   unchanged  same pass/fail and score
 *   new        only in run B;  removed  only in run A
 *   changed    its case_digest differs between the two records: not comparable, shown,
 *              never counted in the statistics
 * A task_class_digest that differs between the runs labels the whole comparison
 * (task_class_changed); runs whose records carry different isolation classes are refused.
 *
 * Statistics over the comparable cases (in both runs, same case digest), in case-id order:
 * the mean of each side, the mean paired delta (B - A) with the 95% BCa interval of the
 * mean of the per-case deltas (stats.h; a paired bootstrap resamples cases, so the pair
 * stays together), seeded by bd_compare_seed(run_a, run_b); the pass-rate change with
 * McNemar's exact test over the discordant pairs; failure-mode counts A -> B per code
 * (every code of a record counts, not only the first).
 */
#ifndef BD_COMPARE_H
#define BD_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "runsigned.h"
#include "verdict.h"

/* ---- runs of the verified chain ------------------------------------------------------ */

typedef struct bd_run {
    char *run_id;     /* borrowed from recs[0] */
    char *task_class; /* borrowed from recs[0] */
    bool full_scope;  /* run_scope "full" (version-1 records: false) */
    uint64_t run_cases;
    bool full;               /* full_scope and one record for each of run_cases cases */
    bool mixed_iso;          /* its records carry more than one isolation class */
    uint64_t last_seq;       /* seq of its newest record: runs are ordered by it */
    const char *started_at;  /* earliest started_at of its records (borrowed) */
    const char *finished_at; /* latest finished_at (borrowed) */
    bd_history_record *recs; /* owned; sorted by case id, one per case (a repeated case
                                keeps its newest record) */
    size_t n_recs;
    bool stopped_cost_cap; /* a run.stopped audit record says the cost cap stopped it */
    double cost_cap_usd;   /* that cap */
} bd_run;

typedef struct bd_runs {
    bd_run *runs; /* oldest first (by last_seq) */
    size_t n;
    uint64_t count;         /* records in the verified chain */
    char head[BD_HASH_BUF]; /* its head */
    /* Signed runs (runsigned.h): gathered in the same walk, judged by bd_runs_judge_signed
     * (until then `sig` is empty: every run shows as unsigned). */
    bd_runsig_walk *sig_walk;
    bd_runs_report sig;
} bd_runs;

/* Verify the whole chain of `h` and group its score records into runs. Returns 0 and
 * fills *out (release with bd_runs_release), or -1: chain.tampered (the chain does not
 * verify: nothing is compared on it), io.error, env.out_of_memory. */
int bd_runs_load(bd_runs *out, bd_history *h, bd_err *err);

/* bd_runs_load that asks `stop` every few thousand records and, when it says true, ends
 * the walk with -1 and run.cancelled (a front end closing while the runs are read). */
int bd_runs_load_until(bd_runs *out, bd_history *h, bool (*stop)(void), bd_err *err);

/* A visitor of one's own wrapped around `inner` for the same walk (review.h's score ids). */
typedef void (*bd_visit_wrap)(bd_history_visit *out, void *ctx, const bd_history_visit *inner);

/* bd_runs_load, matching the subjects of the verdict set `vs` (bd_verdict_set_load; may
 * be NULL) in the same walk and settling it, so each record's verdicts can be shown
 * (bd_verdict_set_on, bd_verdict_badge); `wrap` (may be NULL) adds a visitor of the
 * caller's to the walk. */
int bd_runs_load_verdicts(bd_runs *out, bd_history *h, bd_verdict_set *vs, bd_visit_wrap wrap,
                          void *wrap_ctx, bd_err *err);

void bd_runs_release(bd_runs *r);

/* Judge the signed runs the walk gathered against the bench's keys (`bench_dir`, its
 * bench/ folder) into r->sig: who ran each run (bd_runs_report_who). Returns 0, or -1
 * when GnuPG could not run (err). */
int bd_runs_judge_signed(bd_runs *r, const char *bench_dir, bd_err *err);

/* Records of `run` that come from a signed run: all of them or none. */
size_t bd_run_signed_records(const bd_runs *r, const bd_run *run);

/* The run whose id is `id`, or the only one whose id starts with it. Returns it, or NULL
 * with compare.unknown_run (naming the nearest ids) or compare.ambiguous_run (listing
 * the candidates). */
const bd_run *bd_runs_find(const bd_runs *r, const char *id, bd_err *err);

/* The newest full run of `task_class` older than `before` (NULL: the newest overall),
 * or NULL when there is none. */
const bd_run *bd_runs_prev_full(const bd_runs *r, const char *task_class, const bd_run *before);

/* The newest full run of `task_class` (NULL when none) and the newest run of it of any
 * kind (NULL when none): the task classes view's LAST RUN and its "partial" mark. */
const bd_run *bd_runs_last(const bd_runs *r, const char *task_class, bool full_only);

/* "full", "partial (k of n cases)" or "subset (k of n cases)" into buf, with ", stopped
 * by the cost cap" inside the parentheses for a run the cap stopped. Returns buf. */
const char *bd_run_kind(const bd_run *run, char *buf, size_t len);

/* Which two runs `compare` means (docs/compare.md): id_a and id_b given, those (by id or
 * unique prefix); only id_a given, that run as B against the previous full run of its
 * task class as A; neither, the two latest full runs of `task_class` (NULL: of the only
 * task class with runs in the history). A `task_class` that a named run does not belong
 * to is compare.task_class_mismatch. Returns 0 with *a and *b set, or -1:
 * compare.unknown_run, compare.ambiguous_run, compare.no_runs (fewer than two full runs
 * to choose from, or several task classes and none named), compare.task_class_mismatch. */
int bd_compare_pick(const bd_runs *r, const char *task_class, const char *id_a, const char *id_b,
                    const bd_run **a, const bd_run **b, bd_err *err);

/* How many records of `run` are stale against `pins` (stale.h; NULL pins: all), and the
 * union of their stale bits in *bits (may be NULL). */
size_t bd_run_stale_count(const bd_run *run, const bd_digests *pins, unsigned *bits);

/* ---- comparing ----------------------------------------------------------------------- */

#define BD_CMP_STATUSES(X)                                                                         \
    X(BD_CMP_REGRESSED, "regressed")                                                               \
    X(BD_CMP_IMPROVED, "improved")                                                                 \
    X(BD_CMP_UNCHANGED, "unchanged")                                                               \
    X(BD_CMP_NEW, "new")                                                                           \
    X(BD_CMP_REMOVED, "removed")                                                                   \
    X(BD_CMP_CHANGED, "changed")

typedef enum {
#define BD_X(name, str) name,
    BD_CMP_STATUSES(BD_X)
#undef BD_X
        BD_CMP__COUNT
} bd_cmp_status;

/* "regressed", ... Never NULL. */
const char *bd_cmp_status_str(bd_cmp_status s);

typedef struct bd_compare_case {
    const char *case_id; /* borrowed from a or b */
    bd_cmp_status status;
    const bd_history_record *a; /* NULL when only in run B (borrowed from the runs) */
    const bd_history_record *b; /* NULL when only in run A */
    double delta;               /* b.score - a.score when both are present, else 0 */
} bd_compare_case;

typedef struct bd_compare_fm {
    char *code; /* owned */
    size_t count_a, count_b;
} bd_compare_fm;

typedef struct bd_compare {
    const bd_run *a, *b; /* borrowed from the bd_runs passed in */
    const char *isolation_class;
    bool task_class_changed;
    size_t counts[BD_CMP__COUNT];
    size_t comparable;
    bool have_stats; /* comparable > 0: the fields below are set */
    double mean_a, mean_b, mean_delta, ci_lo, ci_hi;
    double pass_rate_a, pass_rate_b;
    size_t pass_to_fail, fail_to_pass;
    double p_value;
    bd_compare_fm *fms; /* sorted by code */
    size_t n_fms;
    bd_compare_case *cases; /* regressions first (largest drop first), then improved,
                               changed, removed, new, unchanged; ties by case id */
    size_t n_cases;
} bd_compare;

/* The resampling seed of a comparison: bd_stats_seed_from over the bytes
 * run_a || "\0" || run_b (so `compare A B` and `compare B A` resample differently but
 * each is reproducible by anyone with b3sum). */
uint64_t bd_compare_seed(const char *run_a, const char *run_b);

/* Compare run `a` (before) with run `b` (after). Returns 0 and fills *out (release with
 * bd_compare_release; it borrows from the runs, which must outlive it), or -1:
 * compare.same_run, compare.task_class_mismatch (runs of two task classes),
 * compare.isolation_mismatch (records of different isolation classes: refused),
 * env.out_of_memory. An empty overlap is not an error: comparable is 0 and have_stats
 * false. */
int bd_compare_runs(bd_compare *out, const bd_run *a, const bd_run *b, bd_err *err);

void bd_compare_release(bd_compare *c);

/* Count of `code` among the failure modes of `r` (0 for NULL). */
size_t bd_record_fm_count(const bd_history_record *r, const char *code);

#endif
