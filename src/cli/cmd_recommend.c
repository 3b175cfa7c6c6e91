/* benchdesk recommend TASK_CLASS — a tier recommendation from the verified history
 * (docs/history.md#promotion-recommend-never-apply; src/analysis/promote.h). Never applies
 * anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "promote.h"

static const char recommend_help[] =
    "usage: benchdesk recommend TASK_CLASS [--json]\n\n"
    "Recommends a tier for TASK_CLASS from the history, and only if the history and every\n"
    "anchor verify, and only for a task class signed today by an author and a reviewer\n"
    "(otherwise recommended_tier is null, with the reason; exit 0). Evidence: the latest\n"
    "full run of the last 30 days (run_scope full, as many records as it selected cases) of\n"
    "the strongest isolation class among full runs; subset runs (--case, --stale) and\n"
    "cancelled runs are counted, never used. Of that run: current records (stale ones,\n"
    "scored on a case or task class that has changed since, are excluded and counted) of\n"
    "cases signed today (records with provenance_verified false are excluded), less the\n"
    "records two reviewers removed (rubric_bug, case_bug or infra from two trusted\n"
    "reviewers: the case drops out). Lists the run's failures no reviewer has judged, the\n"
    "removed records (who, why), those awaiting a second reviewer and flaky ones (see\n"
    "`benchdesk verdict`). Reports the cases,\n"
    "pass rate, mean score with its 95% BCa bootstrap interval (seeded from the chain\n"
    "head: the same history gives the same numbers), the current tier and the highest\n"
    "tier whose min_cases_for_promotion and promotion_threshold (on the interval's lower\n"
    "bound) are met. Writes .benchdesk/recommendations/<utc>.json with\n"
    "requires_human_approval: true. It never changes a tier: a human edits current_tier\n"
    "in a reviewed commit.\n";

static void print_reviewed(const char *what, const bd_rec_reviewed *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        printf("  %-12s  #%llu %s: %s by %s", i ? "" : what, (unsigned long long)x[i].seq,
               x[i].case_id, bd_verdict_kind_str(x[i].verdict), cli_vis(x[i].reviewer[0]));
        if (x[i].n > 1)
            printf(" and %s", cli_vis(x[i].reviewer[1]));
        for (size_t k = 0; k < x[i].n; k++)
            if (x[i].note[k] && x[i].note[k][0])
                printf(" — \"%s\"", cli_vis(x[i].note[k]));
        printf("\n");
    }
}

/* What reviewers said of the evidence's run (docs/provenance.md#verdicts). */
static void print_verdicts(const bd_recommendation *r)
{
    printf("  unreviewed    %zu failure%s without a verdict", r->n_unreviewed,
           r->n_unreviewed == 1 ? "" : "s");
    for (size_t i = 0; i < r->n_unreviewed && i < 12; i++)
        printf("%s#%llu", i ? " " : ": ", (unsigned long long)r->unreviewed[i]);
    printf("%s\n", r->n_unreviewed > 12 ? " …" : "");
    print_reviewed("removed", r->removed, r->n_removed);
    print_reviewed("awaiting 2nd", r->awaiting, r->n_awaiting);
    print_reviewed("flaky", r->flaky, r->n_flaky);
}

static void print_text(const bd_recommendation *r, const char *path)
{
    printf("recommendation for %s (current tier: %s)\n", r->task_class,
           bd_tier_str(r->current_tier));
    printf("  history       %llu records, head %.16s…, %zu anchor%s verified\n",
           (unsigned long long)r->chain_count, r->chain_head, r->anchors,
           r->anchors == 1 ? "" : "s");
    if (r->run_id[0])
        printf("  evidence      %zu case%s: full run %s (%llu cases), last %d days, signed, "
               "isolation %s\n",
               r->cases, r->cases == 1 ? "" : "s", cli_vis(r->run_id),
               (unsigned long long)r->run_cases, BD_RECOMMEND_WINDOW_DAYS, r->isolation_class);
    else
        printf("  evidence      none: no full run%s in the last %d days\n",
               r->require_signed ? " signed by a trusted operator" : "", BD_RECOMMEND_WINDOW_DAYS);
    if (r->run_id[0])
        printf("  ran by        %s; %zu of %zu evidence record%s from signed runs%s\n",
               cli_vis(r->run_operator), r->signed_records, r->cases, r->cases == 1 ? "" : "s",
               r->require_signed ? " (signed runs required)" : "");
    if (r->excluded_unsigned_runs)
        printf("  unsigned runs %zu record%s of full runs without a valid run.signed, left out\n",
               r->excluded_unsigned_runs, r->excluded_unsigned_runs == 1 ? "" : "s");
    printf("  excluded      %zu stale, %zu unsigned, %zu other isolation, %zu older than %d "
           "days, %zu of removed cases, %zu superseded, %zu of subset runs, %zu of other runs, "
           "%zu removed by two reviewers (records)\n",
           r->excluded_stale, r->excluded_unsigned, r->excluded_isolation,
           r->excluded_outside_window, BD_RECOMMEND_WINDOW_DAYS, r->excluded_unknown_case,
           r->superseded, r->excluded_subset, r->excluded_other_runs, r->excluded_removed);
    print_verdicts(r);
    if (r->cases) {
        printf("  pass rate     %.3f (%zu/%zu)\n", r->pass_rate, r->passed, r->cases);
        printf("  mean score    %.3f, 95%% BCa [%.3f, %.3f] (seed %016llx)\n", r->mean_score,
               r->ci_lo, r->ci_hi, (unsigned long long)r->seed);
    }
    for (int t = 0; t < 3; t++) {
        const bd_tier_eval *te = &r->tiers[t];
        printf("  %-12s  %s: %zu/%d cases %s", t == 0 ? "tiers" : "", bd_tier_str(te->tier),
               r->cases, te->min_cases, te->cases_met ? "met" : "not met");
        if (t != 0)
            printf(", lower bound %s %.2f %s", r->has_ci ? "vs" : "(none) vs", te->threshold,
                   te->threshold_met ? "met" : "not met");
        printf("\n");
    }
    if (!r->tc_signed)
        printf("  recommended   none: %s\n", r->no_tier_reason);
    else if (r->has_recommended)
        printf("  recommended   %s%s\n", bd_tier_str(r->recommended),
               r->recommended == r->current_tier ? " (unchanged)" : "");
    else
        printf("  recommended   none: not even bronze's min_cases is met\n");
    printf("  requires human approval: a tier moves only when a human edits current_tier in\n"
           "  bench/%s/registration.yaml in a reviewed commit\n",
           r->task_class);
    printf("wrote %s\n", path);
}

int cmd_recommend(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(recommend_help);
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage(cli, "recommend", "recommend takes exactly one TASK_CLASS");
    bd_err err = BD_ERR_INIT; /* GnuPG starts inside bd_recommend, beside the chain's verify */
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    bd_recommendation r;
    char *path = NULL;
    memset(&r, 0, sizeof(r));
    int status = cli_open_bench(cli, &bench);
    if (status != 0)
        return status;
    if (bd_task_class_load(&tc, bench, argv[1], &err) != 0 ||
        bd_recommend(&r, bench, tc, time(NULL), &err) != 0 ||
        bd_recommendation_write(&r, bench->root, &path, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *j = bd_recommendation_json(&r);
        if (j) {
            cJSON_AddStringToObject(j, "file", path);
            cli_print_json(j);
        }
        cJSON_Delete(j);
    } else {
        print_text(&r, path);
    }
out:
    free(path);
    bd_recommendation_release(&r);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
