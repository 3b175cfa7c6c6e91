/* benchdesk report [RUN] — a run as JUnit XML, Markdown or one HTML page, from the verified
 * history (docs/formats.md#reports; src/analysis/report.h). Also what `run --junit FILE`
 * writes for the run it just did (cli_report_write). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fsutil.h"
#include "history.h"
#include "provenance.h"
#include "report.h"

static const char report_help[] =
    "usage: benchdesk report [RUN] [--format html|markdown|junit] [-o FILE]\n\n"
    "A report of run RUN (a run id or a unique prefix of one), or, without RUN, of the\n"
    "latest full run of each task class, read from the verified history only: a chain\n"
    "that does not verify gives no report (exit 1). The same records always give the\n"
    "same bytes, so reports can be diffed and cached. Reviewers' verdicts show beside\n"
    "their cases, checked as `review` checks them; one by a key without the reviewer role\n"
    "or a file that does not verify is shown as counting for nothing.\n\n"
    "  --format markdown   (default) the summary, the comparison with the previous full\n"
    "                      run, failure-mode counts, the unreviewed failures (no verdict\n"
    "                      counts on them) and the cases with verdicts: for a CI\n"
    "                      job summary ($GITHUB_STEP_SUMMARY) or a pull-request comment\n"
    "  --format junit      JUnit XML for a CI's test view: a testsuite per run, a\n"
    "                      testcase per case, a failure per failed case (with its\n"
    "                      verdicts)\n"
    "  --format html       one self-contained page (inline CSS and SVG, no script, no\n"
    "                      external resource): summary, charts, comparison, trend,\n"
    "                      every case and the failed cases' details\n"
    "  -o, --output FILE   write the report to FILE (atomically) instead of stdout\n\n"
    "Formats: docs/formats.md#reports.\n";

int cli_report_write(const bd_cli *cli, const bd_bench *bench, bd_history *h, const char *run_id,
                     const char *start_mode, bd_report_format fmt, const char *path)
{
    bd_err err = BD_ERR_INIT;
    bd_report r;
    bd_verdict_set vs;
    bd_prov_ctx *prov = NULL;
    char *text = NULL;
    size_t len = 0;
    memset(&vs, 0, sizeof(vs));
    /* the verdicts on each record, checked and counted as `review` does
     * (docs/provenance.md#verdicts) */
    int rc = bd_provenance_init(&err) != 0 || bd_prov_ctx_new(&prov, bench->bench_dir, &err) != 0 ||
                     bd_verdict_set_load(&vs, bench->root, NULL, prov, &err) != 0 ||
                     bd_report_load(&r, h, &vs, run_id, &err) != 0
                 ? -1
                 : 0;
    bd_prov_ctx_free(prov);
    if (rc != 0) {
        bd_verdict_set_release(&vs);
        return cli_fail(cli, &err);
    }
    r.start_mode = start_mode;
    rc = bd_report_write(&r, fmt, &text, &len, &err);
    bd_report_release(&r);
    bd_verdict_set_release(&vs);
    if (rc == 0 && path)
        rc = bd_write_file_atomic(path, text, len, 0644, &err);
    if (rc == 0 && !path) {
        /* Every record string in it is made visible already (report.h): no control
         * character reaches the terminal. */
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
    free(text);
    return rc == 0 ? 0 : cli_fail(cli, &err);
}

int cmd_report(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(report_help);
    const char *run_id = NULL, *format = "markdown", *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--format") == 0 || strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "report", "%s needs a value", a);
            *(a[1] == 'o' || a[2] == 'o' ? &path : &format) = argv[++i];
        } else if (a[0] == '-') {
            return cli_usage(cli, "report", "unknown option '%s'", a);
        } else if (!run_id) {
            run_id = a;
        } else {
            return cli_usage(cli, "report", "one run at a time ('%s' is extra)", a);
        }
    }
    bd_err err = BD_ERR_INIT;
    bd_report_format fmt;
    if (bd_report_format_parse(&fmt, format, &err) != 0)
        return cli_usage(cli, "report", "%s", err.msg);
    bd_bench *bench = NULL;
    bd_history *h = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status != 0)
        return status;
    if (bd_history_open(&h, bench->root, BD_HISTORY_READ, &err) != 0)
        status = cli_fail(cli, &err);
    else
        status = cli_report_write(cli, bench, h, run_id, NULL, fmt, path);
    bd_history_free(h);
    bd_bench_free(bench);
    return status;
}
