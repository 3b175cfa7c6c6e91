/*
 * calibrate.h — the rubric measured against the people who review it
 * (docs/provenance.md#calibration): per failure-mode code how often reviewers confirmed or
 * overturned it, false passes, and the agreement between the rubric's pass/fail and the
 * reviewers' (2x2 counts, rate, Cohen's kappa with a 95% percentile bootstrap interval).
 *
 * Over the current (not stale) score records of the task class in the verified local
 * chain that have counting verdicts (verdict.h). Each record counts once, with the verdict
 * its trusted reviewers agree on (each one's latest); a record on which they disagree is
 * listed apart (disputed), not counted. A `confirmed` record's reviewed pass/fail is the
 * rubric's, a `rubric_bug` record's the opposite; other verdicts are not in the agreement
 * table. The bootstrap's seed is bd_stats_seed_from over the chain head's 64 hex.
 */
#ifndef BD_CALIBRATE_H
#define BD_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "err.h"
#include "verdict.h"

typedef struct bd_calib_fm {
    char *code; /* owned */
    size_t confirmed, rubric_bug;
} bd_calib_fm;

typedef struct bd_calibration {
    char task_class[129];
    size_t records; /* records counted (agreed verdicts, current) */
    size_t both_pass, both_fail, rubric_pass_reviewer_fail, rubric_fail_reviewer_pass;
    bool has_rate, has_kappa, has_ci;
    double rate, kappa, ci_lo, ci_hi;
    uint64_t seed;
    bd_calib_fm *fms; /* overturned most first, then by code */
    size_t n_fms;
    size_t false_passes;
    uint64_t *disputed; /* seqs */
    size_t n_disputed;
} bd_calibration;

/* Calibrate `tc` of the bench at `bench_root` from the verified chain and the verdict
 * files checked in `prov`. Returns 0 and fills *out (bd_calibration_release), or -1:
 * chain.tampered, io.error, gpg.*, env.out_of_memory. */
int bd_calibrate(bd_calibration *out, const char *bench_root, const bd_task_class *tc,
                 bd_prov_ctx *prov, bd_err *err);

void bd_calibration_release(bd_calibration *c);

/* {"task_class", "records", "agreement": {"both_pass", "both_fail",
 * "rubric_pass_reviewer_fail", "rubric_fail_reviewer_pass", "rate", "kappa", "kappa_ci95":
 * [lo, hi]}, "failure_modes": {code: {"confirmed", "rubric_bug"}}, "false_passes",
 * "disputed": [seq...]} (null for what is undefined). New tree or NULL. */
cJSON *bd_calibration_json(const bd_calibration *c);

#endif
