/* benchdesk review [TC] [--run ID] [--sample N] [--key FPR] [--json] — the review queue
 * (docs/provenance.md#the-review-queue; src/analysis/review.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "review.h"

static const char review_help[] =
    "usage: benchdesk review [TASK_CLASS] [--run ID] [--sample N] [--key FPR] [--json]\n\n"
    "What to review next: for each task class (or the one named), the failed records of its\n"
    "latest full run (or of run ID) that no trusted reviewer has judged, then those with one\n"
    "rubric_bug, case_bug or infra verdict awaiting a second reviewer (not shown to their\n"
    "author: --key FPR, else signing_key in .benchdesk/config.yaml), then N passing records\n"
    "of the run (--sample N), drawn with a seed derived from the run id. A record that is\n"
    "the same failure (case and task-class digests, failure modes) as one with a verdict\n"
    "gets that verdict as a suggestion; give it with `benchdesk verdict SEQ --verdict V`.\n"
    "Says so when a verdict names a run this history lacks (import its bundle).\n";

static void print_text(const bd_review_queue *q, const bd_verdict_set *vs)
{
    if (q->n == 0)
        printf("nothing to review\n");
    for (size_t i = 0; i < q->n; i++) {
        const bd_review_item *it = &q->items[i];
        printf("#%-7llu %-40s %-4s %-15s", (unsigned long long)it->r->seq, cli_vis(it->r->case_id),
               it->r->score.passed ? "pass" : "FAIL", bd_review_why_str(it->why));
        for (size_t k = 0; k < it->r->score.n_failure_modes; k++)
            printf(" %s", cli_vis(it->r->score.failure_modes[k].code));
        char badge[512];
        if (bd_verdict_badge(badge, sizeof(badge), vs, it->r->seq)[0])
            printf("  [%s]", cli_vis(badge));
        if (it->has_suggestion)
            printf("  (same as #%llu: %s, %s)", (unsigned long long)it->suggestion_seq,
                   bd_verdict_kind_str(it->suggestion), cli_vis(it->suggestion_reviewer));
        printf("\n");
    }
    for (size_t i = 0; i < q->n_missing; i++)
        printf("note: verdicts name run %s, which this history lacks: import its bundle "
               "(`benchdesk history import DIR`; `run --out DIR` writes one)\n",
               cli_vis(q->missing_runs[i]));
}

int cmd_review(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(review_help);
    bd_review_opts o = {0};
    const char *sample = NULL, *key = NULL;
    for (int i = 1; i < argc; i++) {
        const char **slot = strcmp(argv[i], "--run") == 0      ? &o.run_id
                            : strcmp(argv[i], "--sample") == 0 ? &sample
                            : strcmp(argv[i], "--key") == 0    ? &key
                                                               : NULL;
        if (slot) {
            if (i + 1 >= argc || *slot)
                return cli_usage(cli, "review", "%s needs one value", argv[i]);
            *slot = argv[++i];
        } else if (argv[i][0] == '-' || o.task_class) {
            return cli_usage(cli, "review", "unexpected argument '%s'", cli_vis(argv[i]));
        } else {
            o.task_class = argv[i];
        }
    }
    if (sample) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(sample, &end, 10);
        if (errno || *end || sample[0] < '0' || sample[0] > '9' || v > 100000)
            return cli_usage(cli, "review", "--sample takes a number of records (0..100000)");
        o.sample = (size_t)v;
    }
    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_config cfg;
    bd_review_session rs;
    memset(&cfg, 0, sizeof(cfg));
    memset(&rs, 0, sizeof(rs));
    if (o.task_class && !bd_name_valid(o.task_class)) {
        bd_err_set(&err, BD_E_BAD_ID, NULL, 0, 0, "'%s' is not a valid task-class name",
                   o.task_class);
        goto fail;
    }
    if (bd_config_load(&cfg, bench->root, &err) != 0 || bd_provenance_init(&err) != 0)
        goto fail;
    o.reviewer = key ? key : cfg.signing_key;
    if (bd_review_load(&rs, bench->root, &o, &err) != 0)
        goto fail;
    if (cli->json) {
        cJSON *j = bd_review_queue_json(&rs.q, &rs.vs);
        cli_print_json(j);
        cJSON_Delete(j);
    } else {
        print_text(&rs.q, &rs.vs);
    }
    goto out;
fail:
    status = cli_fail(cli, &err);
out:
    bd_review_session_release(&rs);
    bd_config_release(&cfg);
    bd_bench_free(bench);
    return status;
}
