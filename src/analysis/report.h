/*
 * report.h — reports of runs for CI and for people (docs/formats.md#reports): JUnit XML,
 * Markdown and one self-contained HTML page, built from the runs of the verified chain
 * only (compare.h's bd_runs_load: a chain that does not verify gives no report).
 *
 * One model, three writers (one file each): report_model.c gathers, for each run reported,
 * its tally, mean and 95% BCa interval, score distribution, failure modes and breakdown
 * means (breakdown.h), the comparison with the previous full run of its task class
 * (compare.h) and the trend of its last full runs (trend.h); report_verdicts.c the
 * verdicts on each record (verdict.h, review.h's rule for "unreviewed"); report_junit.c,
 * report_markdown.c and report_html.c write it. The bytes depend on the records alone (no
 * clock, no locale, no host), so the same records always give the same report.
 *
 * Untrusted text (case ids, failure-mode codes and details, breakdown keys, ids a rubric
 * or bench chose) is first made visible (bd_report_text: control, bidi and format
 * characters and bytes that are not UTF-8 spelled out as \xHH / <U+XXXX>, and the two
 * noncharacters XML forbids) and then escaped by each writer for its format.
 */
#ifndef BD_REPORT_H
#define BD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "breakdown.h"
#include "compare.h"
#include "err.h"
#include "history.h"
#include "review.h"
#include "trend.h"
#include "verdict.h"

#define BD_REPORT_FORMATS(X)                                                                       \
    X(BD_REPORT_HTML, "html")                                                                      \
    X(BD_REPORT_MARKDOWN, "markdown")                                                              \
    X(BD_REPORT_JUNIT, "junit")

typedef enum {
#define BD_X(name, str) name,
    BD_REPORT_FORMATS(BD_X)
#undef BD_X
        BD_REPORT__COUNT
} bd_report_format;

/* The format named `name` ("html", "markdown", "junit") into *out. Returns 0, or -1 with
 * usage.bad_args naming the formats. */
int bd_report_format_parse(bd_report_format *out, const char *name, bd_err *err);

/* Bins of the score distribution: [0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]. */
#define BD_REPORT_BINS 10

/* One run as the report shows it. */
typedef struct bd_report_run {
    const bd_run *run;  /* borrowed from the report's runs */
    const bd_run *prev; /* the previous full run of its task class, or NULL */
    bool have_cmp;      /* cmp holds prev -> run */
    bd_compare cmp;
    char cmp_note[BD_ERR_MSG_MAX]; /* why there is no comparison ("" when have_cmp) */
    const bd_history_record *last; /* its newest record: the chain head when it ended */
    bd_trend_point *trend;         /* the last full runs of its task class up to it, oldest first */
    size_t n_trend;
    bd_bdown bdown;          /* failure modes and breakdown-key means (borrows the records) */
    const bd_score **scores; /* the records' scores, in case-id order (owned array) */
    size_t passed, failed;
    double mean, ci_lo, ci_hi; /* mean score and its 95% BCa interval (have_ci) */
    bool have_ci;
    double cost_usd;
    int64_t wall_ms; /* summed over the cases */
    size_t bins[BD_REPORT_BINS];
    /* verdicts (docs/provenance.md#verdicts): borrowed from the report, NULL vs: none */
    const bd_verdict_set *vs;
    const bd_score_ids *ids;
    size_t *other; /* vs entries naming this run that count for nothing (owned) */
    size_t n_other;
    size_t unreviewed; /* failed records without a counting verdict (bd_review_unreviewed) */
} bd_report_run;

typedef struct bd_report {
    bd_runs runs;     /* owned: the runs of the verified chain */
    bd_report_run *v; /* the runs reported: one, or the latest full run of each task class */
    size_t n;
    const bd_verdict_set *vs; /* borrowed (NULL: no verdicts shown) */
    bd_score_ids ids;         /* owned: the score_ids of the walk's records */
    /* How the run's rubrics were started ("warm", "cold"), when the caller knows it: the
     * history does not record it, so only `run --junit` (the run just done) says it. NULL:
     * not written. Borrowed. */
    const char *start_mode;
} bd_report;

/* Verify the whole chain of `h` (bd_runs_load_verdicts) and gather the report of run
 * `run_id` (a run id or a unique prefix), or, when it is NULL, of the latest full run of
 * each task class (in task-class order). `vs` (may be NULL: no verdicts shown) is a
 * verdict set fresh from bd_verdict_set_load: its subjects are matched and settled in the
 * same walk, and the report borrows it (it must outlive the report). Returns 0 and fills
 * *out (release with bd_report_release), or -1: chain.tampered (nothing is reported from
 * a chain that does not verify), compare.unknown_run, compare.ambiguous_run,
 * report.no_runs (no run id given and no full run in the history), io.error,
 * env.out_of_memory. */
int bd_report_load(bd_report *out, bd_history *h, bd_verdict_set *vs, const char *run_id,
                   bd_err *err);

void bd_report_release(bd_report *r);

/* Write report `r` in `fmt` into a new buffer *out of *len bytes (NUL-terminated; the
 * caller frees it with free()). Returns 0, or -1 with env.out_of_memory. */
int bd_report_write(const bd_report *r, bd_report_format fmt, char **out, size_t *len, bd_err *err);

/* ---- shared by the writers (report_*.c) ------------------------------------------- */

/* `s` (NULL reads as "") made visible for a report: bd_text_vis, and U+FFFE / U+FFFF
 * (which XML 1.0 cannot carry) as <U+FFFE> / <U+FFFF>. A new string the caller frees, or
 * NULL when out of memory. */
char *bd_report_text(const char *s);

/* The first failure mode's code of `s`, or "failed" when it has none. Borrowed. */
const char *bd_report_first_code(const bd_score *s);

/* Fill rr->other (the entries of rr->vs naming rr->run that count for nothing) and
 * rr->unreviewed. Returns 0, or -1 (env.out_of_memory). */
int bd_report_gather_verdicts(bd_report_run *rr, bd_err *err);

/* One verdict shown beside a record. */
typedef struct bd_report_verdict {
    const bd_verdict_entry *e; /* borrowed from the report's verdict set */
    bool counts;               /* it counts (docs/provenance.md#verdicts) */
} bd_report_verdict;

/* The verdicts shown on record `rec` of run `rr`: first those that count
 * (bd_verdict_set_on), then the files that name it (its score_id, task class, run and
 * case) and count for nothing: a key without the reviewer role today, a signature that
 * does not verify. At most `cap` into out; returns how many. */
size_t bd_report_verdicts(const bd_report_run *rr, const bd_history_record *rec,
                          bd_report_verdict *out, size_t cap);

/* The reviewer of `v` as shown: "identity (fingerprint)", or the fingerprint alone when
 * trusted-signers.yaml names no identity. Raw bench text: a new string the caller makes
 * visible and frees (NULL: out of memory). */
char *bd_report_verdict_who(const bd_report_verdict *v);

/* Why `v` counts for nothing ("" when it counts): "untrusted: <why>" or "invalid: <error>".
 * Raw text into buf; returns buf. */
const char *bd_report_verdict_why(const bd_report_verdict *v, char *buf, size_t cap);

/* One line for `v`, raw (the caller makes it visible): "<verdict> by <who> at <at>[, counts
 * for nothing (<why>)][: <note>]". New string or NULL (out of memory). */
char *bd_report_verdict_line(const bd_report_verdict *v);

/* The writers: each returns 0 with a new NUL-terminated buffer, or -1 (out of memory). */
int bd_report_junit(const bd_report *r, char **out, size_t *len, bd_err *err);
int bd_report_markdown(const bd_report *r, char **out, size_t *len, bd_err *err);
int bd_report_html(const bd_report *r, char **out, size_t *len, bd_err *err);

#endif
