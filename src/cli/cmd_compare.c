/* benchdesk compare [RUN_A] [RUN_B] — what got worse between two runs, and is it real
 * (docs/compare.md; src/analysis/compare.h). Also the `history log --trend` table
 * (src/analysis/trend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "review.h"
#include "stale.h"
#include "trend.h"

static const char compare_help[] =
    "usage: benchdesk compare [RUN_A] [RUN_B] [--task-class TC] [--json]\n"
    "                         [--fail-on-regression]\n\n"
    "Compares run A (before) with run B (after) from the verified history (a tampered\n"
    "chain is refused). Runs are named by id or a unique prefix of it; one run compares\n"
    "it against the previous full run of its task class; none compares the two latest\n"
    "full runs of --task-class TC (or of the only task class with runs).\n\n"
    "Cases are aligned by id: regressed (passed->failed, or score down), improved,\n"
    "unchanged, new (only in B), removed (only in A), changed (the case's digest differs:\n"
    "not comparable, shown, never counted). A changed task-class digest labels the whole\n"
    "comparison; runs of different isolation classes are refused.\n\n"
    "Statistics over the comparable cases: mean score of A and B, the mean paired delta\n"
    "with a 95% paired BCa bootstrap interval (seeded from the two run ids), the pass-rate\n"
    "change with McNemar's exact test, failure-mode counts A -> B per code.\n\n"
    "  --task-class TC        the task class whose latest full runs to compare\n"
    "  --fail-on-regression   exit 5 when any case regressed (a CI gate)\n"
    "  --json                 one JSON object (docs/compare.md)\n";

/* Untrusted text (failure-mode codes come from a bench's taxonomy) made visible. */
static void put_visible(const char *s, int width)
{
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p >= 0x20 && *p < 0x7f) {
            putchar(*p);
            n++;
        } else {
            n += printf("\\x%02x", *p);
        }
    }
    for (; n < width; n++)
        putchar(' ');
}

static cJSON *num_or_null(bool present, double v)
{
    return present ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *verdicts_json(const bd_verdict_set *vs, const bd_history_record *r);

/* Who ran A and B (docs/formats.md#signed-runs) into their buffers; returns how many of
 * the two runs' records come from signed runs. */
static size_t who_ran(const bd_runs *runs, const bd_compare *c, char wa[320], char wb[320])
{
    bd_runs_report_who(&runs->sig, c->a->run_id, wa, 320);
    bd_runs_report_who(&runs->sig, c->b->run_id, wb, 320);
    return bd_run_signed_records(runs, c->a) + bd_run_signed_records(runs, c->b);
}

static cJSON *compare_json(const bd_compare *c, size_t stale_a, size_t stale_b,
                           const bd_verdict_set *vs, const bd_runs *runs)
{
    cJSON *o = cJSON_CreateObject();
    char wa[320], wb[320];
    size_t signed_recs = who_ran(runs, c, wa, wb);
    cJSON_AddStringToObject(o, "operator_a", wa);
    cJSON_AddStringToObject(o, "operator_b", wb);
    cJSON_AddNumberToObject(o, "signed_run_records", (double)signed_recs);
    cJSON_AddNumberToObject(o, "records", (double)(c->a->n_recs + c->b->n_recs));
    cJSON_AddStringToObject(o, "task_class", c->a->task_class);
    cJSON_AddStringToObject(o, "run_a", c->a->run_id);
    cJSON_AddStringToObject(o, "run_b", c->b->run_id);
    cJSON_AddBoolToObject(o, "task_class_changed", c->task_class_changed);
    cJSON_AddStringToObject(o, "isolation_class", c->isolation_class);
    cJSON *counts = cJSON_AddObjectToObject(o, "counts");
    for (int s = 0; s < BD_CMP__COUNT; s++)
        cJSON_AddNumberToObject(counts, bd_cmp_status_str((bd_cmp_status)s), (double)c->counts[s]);
    cJSON_AddNumberToObject(o, "comparable", (double)c->comparable);
    cJSON_AddItemToObject(o, "mean_a", num_or_null(c->have_stats, c->mean_a));
    cJSON_AddItemToObject(o, "mean_b", num_or_null(c->have_stats, c->mean_b));
    cJSON_AddItemToObject(o, "mean_delta", num_or_null(c->have_stats, c->mean_delta));
    if (c->have_stats) {
        cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(c->ci_lo));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(c->ci_hi));
    } else {
        cJSON_AddNullToObject(o, "ci95");
    }
    cJSON_AddItemToObject(o, "pass_rate_a", num_or_null(c->have_stats, c->pass_rate_a));
    cJSON_AddItemToObject(o, "pass_rate_b", num_or_null(c->have_stats, c->pass_rate_b));
    cJSON *mc = cJSON_AddObjectToObject(o, "mcnemar");
    cJSON_AddNumberToObject(mc, "pass_to_fail", (double)c->pass_to_fail);
    cJSON_AddNumberToObject(mc, "fail_to_pass", (double)c->fail_to_pass);
    cJSON_AddItemToObject(mc, "p_value", num_or_null(c->have_stats, c->p_value));
    cJSON *fm = cJSON_AddObjectToObject(o, "failure_modes");
    for (size_t i = 0; i < c->n_fms; i++) {
        cJSON *pair = cJSON_AddArrayToObject(fm, c->fms[i].code);
        cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)c->fms[i].count_a));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)c->fms[i].count_b));
    }
    cJSON *stale = cJSON_AddObjectToObject(o, "stale_records");
    cJSON_AddNumberToObject(stale, "a", (double)stale_a);
    cJSON_AddNumberToObject(stale, "b", (double)stale_b);
    cJSON *cases = cJSON_AddArrayToObject(o, "cases");
    for (size_t i = 0; i < c->n_cases; i++) {
        const bd_compare_case *cc = &c->cases[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "case_id", cc->case_id);
        cJSON_AddStringToObject(e, "status", bd_cmp_status_str(cc->status));
        if (cc->a)
            cJSON_AddBoolToObject(e, "passed_a", cc->a->score.passed);
        else
            cJSON_AddNullToObject(e, "passed_a");
        if (cc->b)
            cJSON_AddBoolToObject(e, "passed_b", cc->b->score.passed);
        else
            cJSON_AddNullToObject(e, "passed_b");
        cJSON_AddItemToObject(e, "score_a", num_or_null(cc->a, cc->a ? cc->a->score.score : 0));
        cJSON_AddItemToObject(e, "score_b", num_or_null(cc->b, cc->b ? cc->b->score.score : 0));
        cJSON_AddItemToObject(e, "delta", num_or_null(cc->a && cc->b, cc->delta));
        cJSON_AddItemToObject(e, "verdicts", verdicts_json(vs, cc->b));
        cJSON_AddItemToArray(cases, e);
    }
    return o;
}

static void side(const bd_history_record *r)
{
    if (r)
        printf("%6.3f %-4s", r->score.score, r->score.passed ? "pass" : "FAIL");
    else
        printf("%6s %-4s", "-", "");
}

static void compare_text(const bd_compare *c, size_t stale_a, size_t stale_b, unsigned bits_a,
                         unsigned bits_b, const bd_verdict_set *vs, const bd_runs *runs)
{
    char ka[64], kb[64], wa[320], wb[320];
    size_t signed_recs = who_ran(runs, c, wa, wb);
    printf("compare %s\n", c->a->task_class);
    printf("  A  %s  %s  %s\n", c->a->run_id, c->a->finished_at, bd_run_kind(c->a, ka, sizeof(ka)));
    printf("  B  %s  %s  %s\n", c->b->run_id, c->b->finished_at, bd_run_kind(c->b, kb, sizeof(kb)));
    printf("  ran by  A: %s; B: %s (%zu of %zu records from signed runs)\n", cli_vis(wa),
           cli_vis(wb), signed_recs, c->a->n_recs + c->b->n_recs);
    printf("  isolation %s\n", c->isolation_class);
    if (c->task_class_changed)
        printf("  NOTE: rubric or registration changed between runs\n");
    if (stale_a)
        printf("  stale: %zu of %zu records of A (%s since)\n", stale_a, c->a->n_recs,
               bd_stale_str(bits_a));
    if (stale_b)
        printf("  stale: %zu of %zu records of B (%s since)\n", stale_b, c->b->n_recs,
               bd_stale_str(bits_b));
    printf("  %zu regressed, %zu improved, %zu unchanged, %zu new, %zu removed, %zu changed "
           "(not comparable)\n",
           c->counts[BD_CMP_REGRESSED], c->counts[BD_CMP_IMPROVED], c->counts[BD_CMP_UNCHANGED],
           c->counts[BD_CMP_NEW], c->counts[BD_CMP_REMOVED], c->counts[BD_CMP_CHANGED]);
    if (c->have_stats) {
        printf("  %zu comparable: mean %.3f -> %.3f, delta %+.3f, 95%% paired BCa [%+.3f, "
               "%+.3f]\n",
               c->comparable, c->mean_a, c->mean_b, c->mean_delta, c->ci_lo, c->ci_hi);
        printf("  pass rate %.1f%% -> %.1f%%; McNemar exact p = %.4g (%zu pass->fail, %zu "
               "fail->pass)\n",
               100 * c->pass_rate_a, 100 * c->pass_rate_b, c->p_value, c->pass_to_fail,
               c->fail_to_pass);
    } else {
        printf("  no comparable cases: no statistics\n");
    }
    if (c->n_fms) {
        printf("  failure modes (A -> B):\n");
        for (size_t i = 0; i < c->n_fms; i++) {
            printf("    ");
            put_visible(c->fms[i].code, 32);
            printf(" %4zu -> %zu\n", c->fms[i].count_a, c->fms[i].count_b);
        }
    }
    if (!c->n_cases)
        return;
    /* The CASE column as wide as the longest id: ids are never cut and the columns after
     * it stay in line. */
    int wc = (int)strlen("CASE");
    for (size_t i = 0; i < c->n_cases; i++)
        if ((int)strlen(c->cases[i].case_id) > wc)
            wc = (int)strlen(c->cases[i].case_id);
    printf("\n%-10s  %-*s  %-11s  %-11s  %s\n", "STATUS", wc, "CASE", "A", "B", "DELTA");
    for (size_t i = 0; i < c->n_cases; i++) {
        const bd_compare_case *cc = &c->cases[i];
        printf("%-10s  %-*s  ", bd_cmp_status_str(cc->status), wc, cli_vis(cc->case_id));
        side(cc->a);
        printf("  ");
        side(cc->b);
        if (cc->a && cc->b)
            printf("  %+.3f", cc->delta);
        char badge[512];
        if (cc->b && bd_verdict_badge(badge, sizeof(badge), vs, cc->b->seq)[0])
            printf("  [%s]", cli_vis(badge));
        printf("\n");
    }
}

/* Open the history of `bench` and load its verified runs. Prints the error and returns
 * the exit status on failure, 0 on success. */
/* `vs` (may be NULL): the verdict files, loaded and matched too. */
static int load_runs(bd_cli *cli, const bd_bench *bench, bd_runs *runs, bd_verdict_set *vs)
{
    bd_err err = BD_ERR_INIT;
    bd_history *h = NULL;
    bd_prov_ctx *prov = NULL;
    memset(runs, 0, sizeof(*runs));
    if (vs)
        memset(vs, 0, sizeof(*vs));
    /* the verdicts on each record (docs/provenance.md#verdicts), matched in the same walk */
    int rc = 0;
    if (vs && (rc = bd_provenance_init(&err)) == 0)
        rc = bd_prov_ctx_new(&prov, bench->bench_dir, &err);
    if (vs && rc == 0)
        rc = bd_verdict_set_load(vs, bench->root, NULL, prov, &err);
    if (rc == 0)
        rc = bd_history_open(&h, bench->root, BD_HISTORY_READ, &err);
    if (rc == 0)
        rc = bd_runs_load_verdicts(runs, h, vs, NULL, NULL, &err);
    if (rc == 0) /* who ran each run: the signed runs against bench/keys */
        rc = bd_runs_judge_signed(runs, bench->bench_dir, &err);
    bd_history_free(h);
    bd_prov_ctx_free(prov);
    return rc == 0 ? 0 : cli_fail(cli, &err);
}

/* The verdicts on record `r` (NULL: none) as JSON {"reviewer", "verdict", "at"}. */
static cJSON *verdicts_json(const bd_verdict_set *vs, const bd_history_record *r)
{
    return r ? bd_review_verdicts_json(vs, r->seq) : cJSON_CreateArray();
}

int cmd_compare(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(compare_help);
    const char *ids[2] = {NULL, NULL}, *tc_name = NULL;
    size_t n_ids = 0;
    bool fail_on_regression = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--task-class") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "compare", "--task-class needs a task class");
            tc_name = argv[++i];
        } else if (strncmp(a, "--task-class=", 13) == 0) {
            tc_name = a + 13;
        } else if (strcmp(a, "--fail-on-regression") == 0) {
            fail_on_regression = true;
        } else if (a[0] == '-') {
            return cli_usage(cli, "compare", "unknown option '%s'", a);
        } else if (n_ids < 2) {
            ids[n_ids++] = a;
        } else {
            return cli_usage(cli, "compare", "compare takes at most two runs");
        }
    }
    bd_err err = BD_ERR_INIT;
    if (tc_name && !bd_name_valid(tc_name)) {
        bd_err_set(&err, BD_E_BAD_ID, NULL, 0, 0,
                   "'%s' is not a valid task-class name (^[a-z0-9][a-z0-9._-]{0,127}$)", tc_name);
        return cli_fail(cli, &err);
    }
    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status != 0)
        return status;
    bd_runs runs;
    bd_verdict_set vs;
    bd_compare c;
    memset(&c, 0, sizeof(c));
    bd_task_class *tc = NULL;
    status = load_runs(cli, bench, &runs, &vs);
    if (status != 0)
        goto out;
    const bd_run *a, *b;
    if (bd_compare_pick(&runs, tc_name, ids[0], ids[1], &a, &b, &err) != 0 ||
        bd_compare_runs(&c, a, b, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    /* Stale against today's pins; a task class since removed leaves every record stale. */
    bd_err ignored = BD_ERR_INIT;
    if (bd_task_class_load(&tc, bench, a->task_class, &ignored) != 0)
        tc = NULL;
    unsigned bits_a = 0, bits_b = 0;
    size_t stale_a = bd_run_stale_count(a, tc ? tc->digests : NULL, &bits_a);
    size_t stale_b = bd_run_stale_count(b, tc ? tc->digests : NULL, &bits_b);
    if (cli->json) {
        cJSON *o = compare_json(&c, stale_a, stale_b, &vs, &runs);
        cli_print_json(o);
        cJSON_Delete(o);
    } else {
        compare_text(&c, stale_a, stale_b, bits_a, bits_b, &vs, &runs);
    }
    if (fail_on_regression && c.counts[BD_CMP_REGRESSED] > 0) {
        if (!cli->json)
            fprintf(stderr, "benchdesk: compare: %zu case%s regressed (--fail-on-regression)\n",
                    c.counts[BD_CMP_REGRESSED], c.counts[BD_CMP_REGRESSED] == 1 ? "" : "s");
        status = 5;
    }
out:
    bd_compare_release(&c);
    bd_task_class_free(tc);
    bd_runs_release(&runs);
    bd_verdict_set_release(&vs);
    bd_bench_free(bench);
    return status;
}

int cli_history_trend(bd_cli *cli, const bd_bench *bench, const char *task_class)
{
    bd_err err = BD_ERR_INIT;
    if (!task_class) {
        bd_err_set(&err, BD_E_USAGE, NULL, 0, 0,
                   "history log --trend needs --task-class TC; see `benchdesk history --help`");
        return cli_fail(cli, &err);
    }
    bd_runs runs;
    int status = load_runs(cli, bench, &runs, NULL); /* the trend shows no verdicts */
    if (status != 0)
        return status;
    bd_trend_point *p = NULL;
    size_t n = 0;
    if (bd_trend(&runs, task_class, 0, &p, &n, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    char spark[BD_TREND_RUNS * 4 + 1];
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "task_class", task_class);
        cJSON *arr = cJSON_AddArrayToObject(o, "runs");
        for (size_t i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "run_id", p[i].run->run_id);
            cJSON_AddStringToObject(e, "finished_at", p[i].run->finished_at);
            cJSON_AddNumberToObject(e, "cases", (double)p[i].cases);
            cJSON_AddNumberToObject(e, "pass_rate", p[i].pass_rate);
            cJSON_AddNumberToObject(e, "mean", p[i].mean);
            cJSON *ci = cJSON_AddArrayToObject(e, "ci95");
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(p[i].ci_lo));
            cJSON_AddItemToArray(ci, cJSON_CreateNumber(p[i].ci_hi));
            cJSON_AddItemToArray(arr, e);
        }
        cli_print_json(o);
        cJSON_Delete(o);
        goto out;
    }
    if (n == 0) {
        printf("no full runs of %s in the verified history\n", task_class);
        goto out;
    }
    const char *lang = getenv("LC_ALL");
    if (!lang || !*lang)
        lang = getenv("LC_CTYPE");
    if (!lang || !*lang)
        lang = getenv("LANG");
    bool utf8 = lang && (strstr(lang, "UTF-8") || strstr(lang, "utf8") || strstr(lang, "UTF8"));
    printf("%s: mean over the last %zu full run%s  %s\n", task_class, n, n == 1 ? "" : "s",
           bd_trend_sparkline(p, n, utf8, spark, sizeof(spark)));
    int wr = (int)strlen("RUN");
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(p[i].run->run_id) > wr)
            wr = (int)strlen(p[i].run->run_id);
    printf("%-*s  %-24s  %5s  %9s  %6s  %s\n", wr, "RUN", "FINISHED", "CASES", "PASS RATE", "MEAN",
           "CI95");
    for (size_t i = 0; i < n; i++)
        printf("%-*s  %-24s  %5zu  %8.1f%%  %6.3f  [%.3f, %.3f]\n", wr, p[i].run->run_id,
               p[i].run->finished_at, p[i].cases, 100 * p[i].pass_rate, p[i].mean, p[i].ci_lo,
               p[i].ci_hi);
out:
    free(p);
    bd_runs_release(&runs);
    return status;
}
