/*
 * promote.h — promotion that only recommends (docs/history.md#promotion-recommend-never-apply).
 *
 * A recommendation reads only a verified history: the chain and every anchor must verify
 * (bd_anchor_verify), else it refuses with their error. A task class that is not signed
 * today (author and reviewer signatures verify, bd_verify) recommends nothing:
 * recommended tier null with the reason (the evidence is still reported). From the score
 * records of the task class, streamed from the chain, it takes the evidence evidence.h
 * chooses: the latest full run within the last 30 days (before `now`, or after it: a clock
 * ahead is not a reason to drop evidence), of the strongest isolation class among full
 * runs; of it, the current records (bd_record_stale) of cases that exist and are signed
 * today, run with provenance_verified true, the run's latest per case, less the records
 * two trusted reviewers removed (verdict.h). Everything else is counted as excluded.
 * It reports the cases, pass rate, mean score and its 95% BCa interval (stats.h,
 * BD_STATS_RESAMPLES resamples, scores in case-id order, seed = bd_stats_seed_from(the
 * 64 hex characters of the chain head)), the current tier, and the highest tier whose
 * min_cases_for_promotion is met and — for silver and gold — whose promotion_threshold is
 * at most the interval's lower bound. Nothing is ever applied: the recommendation file
 * says requires_human_approval: true, and the tier moves only when a human edits
 * current_tier in a reviewed commit. `benchdesk promote` refuses (cmd_promote.c).
 */
#ifndef BD_PROMOTE_H
#define BD_PROMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "verdict.h"

#define BD_RECOMMEND_WINDOW_DAYS 30
#define BD_RECOMMENDATIONS_DIR   ".benchdesk/recommendations"

/* One case's evidence: its latest eligible record. */
typedef struct bd_rec_evidence {
    char *case_id;
    uint64_t seq;
    char record_hash[BD_HASH_BUF];
    char finished_at[40];
    double score;
    bool passed;
} bd_rec_evidence;

/* A record of the evidence's run that reviewers spoke about (evidence.h): removed by two,
 * awaiting a second reviewer, or marked flaky. */
typedef struct bd_rec_reviewed {
    uint64_t seq;
    char case_id[129];
    bd_verdict_kind verdict;
    size_t n;              /* reviewers below: 2 for removed, else 1 */
    char reviewer[2][256]; /* trusted-signers.yaml identity */
    char fingerprint[2][BD_FPR_HEX_LEN + 1];
    char *note[2]; /* owned */
} bd_rec_reviewed;

typedef struct bd_tier_eval {
    bd_tier tier;
    int min_cases;
    double threshold; /* 0 for bronze */
    bool cases_met;
    bool threshold_met; /* always true for bronze */
    bool met;
} bd_tier_eval;

typedef struct bd_recommendation {
    char task_class[129];
    char generated_at[21];
    bd_tier current_tier;
    bool has_recommended; /* false when not even bronze's min_cases is met */
    bd_tier recommended;
    char isolation_class[16]; /* "" when no eligible record */
    size_t cases;             /* = n_evidence */
    size_t passed;
    double pass_rate;
    double mean_score;
    bool has_ci;
    double ci_lo, ci_hi;
    uint64_t seed;
    uint64_t chain_count;
    char chain_head[BD_HASH_BUF];
    size_t anchors;           /* anchors that verified */
    bool tc_signed;           /* the task class's two signatures verify today */
    char no_tier_reason[320]; /* why nothing is recommended when !tc_signed, else "" */
    size_t excluded_outside_window, excluded_unknown_case, excluded_stale, excluded_unsigned,
        excluded_isolation, superseded; /* records (superseded: older records of a case) */
    bd_tier_eval tiers[3];
    bd_rec_evidence *evidence; /* sorted by case id */
    size_t n_evidence;
    /* The run the evidence comes from, and what verdicts say of it (evidence.h). */
    char run_id[129]; /* "" when there is no full run in the window */
    uint64_t run_cases;
    size_t full_runs; /* full runs in the window, either class */
    size_t excluded_subset, excluded_other_runs, excluded_removed; /* records */
    bd_rec_reviewed *removed, *awaiting, *flaky;
    size_t n_removed, n_awaiting, n_flaky;
    uint64_t *unreviewed; /* failures of the run without a counting verdict, by seq */
    size_t n_unreviewed;
    /* Who ran it (docs/formats.md#signed-runs): the run is signed when a run.signed that
     * holds, by a key trusted as operator, covers it. With signed runs required (the
     * registration's run.require_signed, or require_signed_runs of the config) only signed
     * full runs are evidence; the others' records are excluded_unsigned_runs. */
    bool require_signed;
    bool run_signed;
    char run_operator[320];        /* "<16 hex> <identity>" or "unsigned" ("" without a run) */
    size_t signed_records;         /* evidence records from signed runs */
    size_t excluded_unsigned_runs; /* records of unsigned full runs, when required */
} bd_recommendation;

/* Recommend a tier for `tc` of `bench` as of `now` (UTC seconds). Returns 0 and fills
 * *out (release with bd_recommendation_release), or -1: chain.tampered, anchor.* (the
 * history or an anchor does not verify: refused), io.error, gpg.*, env.out_of_memory. */
int bd_recommend(bd_recommendation *out, const bd_bench *bench, const bd_task_class *tc, time_t now,
                 bd_err *err);

/* What is signed today, as bd_recommend finds it with bd_verify. */
typedef struct bd_signed_today {
    bool tc_signed;     /* both task-class signatures verify */
    char tc_status[96]; /* why not, e.g. "awaiting_review" or "bad: provenance.bad_signature" */
    bool *case_signed;  /* per tc->case_ids[i]: both case signatures verify (may be NULL: none) */
} bd_signed_today;

/* bd_recommend with the signature state given instead of checked (the selection and the
 * statistics alone; tests). Same contract. */
int bd_recommend_given(bd_recommendation *out, const bd_bench *bench, const bd_task_class *tc,
                       time_t now, const bd_signed_today *st, bd_err *err);

void bd_recommendation_release(bd_recommendation *r);

/* The recommendation as JSON (what `recommend --json` prints and the file holds, with
 * requires_human_approval: true). New tree or NULL (out of memory). */
cJSON *bd_recommendation_json(const bd_recommendation *r);

/* Write <root>/.benchdesk/recommendations/<YYYYMMDDTHHMMSSZ>[-N].json (mode 0600, the
 * directory 0700; never replacing an existing file). *path_out (may be NULL) gets the
 * new path (caller frees). Returns 0 or -1 (io.error, env.out_of_memory). */
int bd_recommendation_write(const bd_recommendation *r, const char *bench_root, char **path_out,
                            bd_err *err);

#endif
