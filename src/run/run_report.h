/*
 * run_report.h — what a run reports (docs/runner.md "Fan-out, events, cancel" and "The run
 * summary"): the run summary (counts, mean, the 95% BCa interval, failure modes), the summary file
 * .benchdesk/runs/<run-id>.json, and the JSON of each event line that `run --json` prints.
 * It builds and writes; it runs nothing (the runner, runner.h, fills the structures).
 */
#ifndef BD_RUN_REPORT_H
#define BD_RUN_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "exec.h"
#include "history.h"
#include "score.h"

#define BD_RUN_ID_MAX 64
#define BD_RUNS_DIR   ".benchdesk/runs"

/* One failure-mode code and the number of finished cases whose score carries it. */
typedef struct bd_fm_count {
    char *code;
    size_t count;
} bd_fm_count;

typedef struct bd_run_summary {
    char run_id[BD_RUN_ID_MAX];
    char task_class[129];
    bd_isolation isolation;
    char start[8];              /* "warm" or "cold": how the rubrics were started */
    char start_why[256];        /* why cold when warm was not refused by the operator, or "" */
    char task_class_digest[72]; /* registration.yaml + rubric.py as run (docs/formats.md#digests) */
    size_t cases_selected;      /* cases in the run */
    size_t skipped_draft;       /* unsigned cases the run gate left out (bd_runner_set_skipped) */
    size_t skipped_awaiting;
    size_t cases; /* cases with a result */
    size_t passed, failed;
    double pass_rate;  /* passed / cases; 0 when cases == 0 */
    bool has_mean;     /* cases > 0 */
    double mean_score; /* mean of the scores */
    bool has_ci;
    double ci_lo, ci_hi;        /* 95% BCa, BD_STATS_RESAMPLES, BD_STATS_RUN_SEED, id order */
    bd_fm_count *failure_modes; /* sorted by code */
    size_t n_failure_modes;
    double cost_usd;
    int64_t wall_ms;
    bool cancelled; /* stopped by bd_runner_cancel or an abort */
    /* The cost cap (docs/runner.md#the-cost-cap): the one that applied, and whether it
     * stopped the run with cases left; not_run then names them (borrowed ids, id order;
     * the array is freed by bd_run_summary_release). */
    bool has_cost_cap;
    double cost_cap_usd;
    bool stopped_cost_cap;
    const char **not_run;
    size_t n_not_run;
    size_t not_recorded;           /* finished cases whose record could not be appended */
    size_t records;                /* records appended by this run */
    size_t appends;                /* history appends (fsyncs) they took: group commit */
    char operator_fingerprint[41]; /* the operator key that signs the run, or "" */
    uint64_t signed_seq;           /* seq of its run.signed record, 0 when not signed */
    bool has_chain_head;
    char chain_head[65];
    char started_at[21], finished_at[21];
    bool has_summary_path;
    char summary_path[4352]; /* where the summary was written */
} bd_run_summary;

/* One finished case. */
typedef struct bd_case_result {
    const char *case_id;
    size_t index; /* position in the run (cases sorted by id) */
    bd_score score;
    int64_t wall_ms; /* the case's whole time: SUT, setup, rubric, cleanup */
    char started_at[21], finished_at[21];
    char case_digest[72];
    char cassette_digest[72]; /* "" when none */
    /* The rubric's last 64 KiB of stderr (raw bytes), during the case's case.finished or
     * case.not_recorded event only: the runner frees it after (a subscriber that wants it
     * copies it; with write_files it is also <runs>/<run>/<case>.stderr). NULL, 0 after. */
    const char *stderr_tail;
    size_t stderr_len;
    char record_hash[65];     /* the case's record (once appended); "" when none */
    uint64_t record_seq;      /* the record's seq; 0 when none */
    bool provenance_verified; /* the record's provenance_verified */
    const char *sut_output;   /* record mode: the SUT's stdout (one JSON value), else NULL */
    size_t sut_output_len;
} bd_case_result;

typedef enum {
    BD_RUN_EV_STARTED,
    BD_RUN_EV_CASE_QUEUED,
    BD_RUN_EV_CASE_STARTED,
    BD_RUN_EV_CASE_FINISHED,
    BD_RUN_EV_FINISHED,
    BD_RUN_EV_CASE_NOT_RECORDED, /* a finished case whose record could not be appended */
} bd_run_event_kind;

/* "run.started", "case.queued", ... */
const char *bd_run_event_name(bd_run_event_kind k);

typedef struct bd_run_event {
    bd_run_event_kind kind;
    const bd_run_summary *summary; /* every event: run id, class, isolation, counts so far */
    const char *case_id;           /* case events */
    size_t case_index;
    const bd_case_result *result; /* case.finished, case.not_recorded */
    const bd_err *error;          /* case.not_recorded: why (the run's abort error) */
    size_t running;               /* cases running after this event */
    size_t done;                  /* cases finished so far */
} bd_run_event;

/* The "summary" object of run.finished (docs/runner.md#the-run-summary): cases, passed, failed,
 * mean_score, ci95, failure_modes, cost_usd, wall_ms, chain_head; cost_cap_usd when a cap applied,
 * and "stopped": "cost_cap" with not_run when it stopped the run. New tree or NULL (out of
 * memory). */
cJSON *bd_run_summary_json(const bd_run_summary *s);

/* Count `n` finished cases (in id order) into `s`: cases, passed, failed, pass_rate,
 * mean_score, the 95% BCa interval (BD_STATS_RUN_SEED, id order), failure_modes (each
 * code once per case, sorted), cost_usd. Other fields are left as they are. A local run
 * and a run merged from shard bundles (import.h) share it, so their summaries agree. */
void bd_run_summary_tally(bd_run_summary *s, const bd_case_result *const *res, size_t n);

/* The run's cost as every front end words it: "$0.53", or with a cap "$0.53 of $1.00"
 * (whole cents with two decimals, else four), into `buf` (`cap` bytes). Returns buf. */
char *bd_run_cost_text(char *buf, size_t cap, const bd_run_summary *s);

/* The audit record a run stopped by the cost cap leaves in the history
 * (docs/history.md#audit-records): its event name and its detail, canonical JSON
 * {"cost_cap_usd", "cost_usd", "not_run": <count>, "run_id", "stopped": "cost_cap"} (new
 * string, the caller frees; NULL when out of memory). */
#define BD_RUN_STOPPED_EVENT "run.stopped"
char *bd_run_stop_detail(const bd_run_summary *s);

/* Append that audit record of run `s` (stopped by the cost cap) to `h`: event
 * BD_RUN_STOPPED_EVENT, s->task_class, bd_run_stop_detail(s), at s->finished_at. What a
 * local run and a run merged from capped shards (import.h) leave, from one place.
 * Returns 0 with *seq and `hash` (the record's; BD_HASH_BUF bytes), or -1 with
 * env.out_of_memory or bd_history_append_audit's error. */
int bd_run_stop_append(bd_history *h, const bd_run_summary *s, uint64_t *seq,
                       char hash[BD_HASH_BUF], bd_err *err);

/* Read such a detail: 0 with run_id (BD_RUN_ID_MAX bytes) and *cap_usd when it is one
 * of the cost cap, else -1. */
int bd_run_stop_parse(const char *detail, char run_id[BD_RUN_ID_MAX], double *cap_usd);

/* Free what bd_run_summary_tally allocated in `s` (its failure_modes) and the not_run
 * array. */
void bd_run_summary_release(bd_run_summary *s);

/* The summary file's tree without its entries: everything bd_run_summary_file_json gives
 * (`res` counts for provenance_verified) but an empty "results" array. New tree or NULL
 * (out of memory). */
cJSON *bd_run_summary_file_head(const bd_run_summary *s, const bd_case_result *const *res,
                                size_t n);

/* Write the summary file `path` (0600, atomically) as the canonical text of `head` (from
 * bd_run_summary_file_head, members may be added) with one entry per result in its
 * "results", made and written one at a time: the bytes bd_canon_json gives for the whole
 * tree, never holding it. Returns 0; -1 with err set (out of memory, I/O); or 1, nothing
 * written, when the tree has no canonical text (bd_canon_json's NULL: a string that is
 * not UTF-8, say). */
int bd_run_summary_stream(const char *path, const cJSON *head, const bd_case_result *const *res,
                          size_t n, bd_err *err);

/* The summary file .benchdesk/runs/<run-id>.json: run.finished's summary plus the run's identity
 * (docs/runner.md#the-run-summary), the CI method and one entry per result. New tree or NULL (out
 * of memory). */
cJSON *bd_run_summary_file_json(const bd_run_summary *s, const bd_case_result *const *res,
                                size_t n);

/* One --json event line (docs/runner.md#fan-out-events-cancel) as JSON (run.started, case.started,
 * case.finished, run.finished), or NULL for events --json does not print (case.queued) or out of
 * memory. */
cJSON *bd_run_event_json(const bd_run_event *ev);

/* The run summary file <runs_dir>/<run-id>.json (bd_run_summary_file_json, canonical JSON,
 * mode 0600; `runs_dir` made 0700 when missing), streamed (bd_run_summary_stream); when it
 * has no canonical text, cJSON's compact form (bd_run_json_text). On success sets s->summary_path
 * and s->has_summary_path and returns 0; -1 with err set (out of memory, or the I/O error). */
int bd_run_summary_write(bd_run_summary *s, const char *runs_dir, const bd_case_result *const *res,
                         size_t n, bd_err *err);

/* `doc` as text: canonical JSON (canon.h), or cJSON's compact form when it cannot be
 * canonicalised; *len gets its length. New string (the caller frees) or NULL. */
char *bd_run_json_text(const cJSON *doc, size_t *len);

#endif
