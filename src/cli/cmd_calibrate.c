/* benchdesk calibrate TASK_CLASS [--json] — the rubric measured against its reviewers
 * (docs/provenance.md#calibration; src/analysis/calibrate.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "cli.h"

static const char calibrate_help[] =
    "usage: benchdesk calibrate TASK_CLASS [--json]\n\n"
    "How the rubric of TASK_CLASS agrees with the people who review it, over the current\n"
    "score records of this history that trusted reviewers gave verdicts on (each record\n"
    "once, with the verdict they agree on; a record they disagree on is listed apart as\n"
    "disputed): per failure-mode code how many records with it were confirmed and how many\n"
    "judged rubric_bug (overturned most first); passes judged rubric_bug (false passes);\n"
    "and the agreement of the rubric's pass/fail with the reviewers' (a confirmed record's\n"
    "is the rubric's, a rubric_bug record's the opposite): the 2x2 counts, the rate, and\n"
    "Cohen's kappa with a 95% percentile bootstrap interval seeded from the chain head.\n";

static void print_text(const bd_calibration *c)
{
    printf("calibration of %s: %zu reviewed record%s\n", c->task_class, c->records,
           c->records == 1 ? "" : "s");
    printf("  %-28s %12s %12s\n", "", "reviewer pass", "reviewer fail");
    printf("  %-28s %12zu %12zu\n", "rubric pass", c->both_pass, c->rubric_pass_reviewer_fail);
    printf("  %-28s %12zu %12zu\n", "rubric fail", c->rubric_fail_reviewer_pass, c->both_fail);
    if (c->has_rate)
        printf("  agreement rate %.3f", c->rate);
    else
        printf("  agreement rate -");
    if (c->has_kappa)
        printf(", kappa %.3f", c->kappa);
    if (c->has_ci)
        printf(" (95%% bootstrap [%.3f, %.3f], seed %016llx)", c->ci_lo, c->ci_hi,
               (unsigned long long)c->seed);
    printf("\n  false passes %zu\n", c->false_passes);
    if (c->n_fms)
        printf("  %-32s %9s %10s\n", "failure mode", "confirmed", "rubric_bug");
    for (size_t i = 0; i < c->n_fms; i++)
        printf("  %-32s %9zu %10zu\n", cli_vis(c->fms[i].code), c->fms[i].confirmed,
               c->fms[i].rubric_bug);
    if (c->n_disputed) {
        printf("  disputed (reviewers disagree, not counted):");
        for (size_t i = 0; i < c->n_disputed; i++)
            printf(" #%llu", (unsigned long long)c->disputed[i]);
        printf("\n");
    }
}

int cmd_calibrate(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(calibrate_help);
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage(cli, "calibrate", "calibrate takes one task class");
    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = NULL;
    bd_prov_ctx *prov = NULL;
    bd_calibration c;
    memset(&c, 0, sizeof(c));
    if (bd_task_class_load(&tc, bench, argv[1], &err) != 0 || bd_provenance_init(&err) != 0 ||
        bd_prov_ctx_new(&prov, bench->bench_dir, &err) != 0 ||
        bd_calibrate(&c, bench->root, tc, prov, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *j = bd_calibration_json(&c);
        cli_print_json(j);
        cJSON_Delete(j);
    } else {
        print_text(&c);
    }
out:
    bd_calibration_release(&c);
    bd_prov_ctx_free(prov);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
