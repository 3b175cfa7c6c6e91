#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "history.h"
#include "stale.h"
#include "text.h"
#include "verify.h"

static const char list_help[] =
    "usage: benchdesk list [TASK_CLASS] [--json]\n\n"
    "Without TASK_CLASS: every task class with its tier, SUT kind, its own signatures\n"
    "(registration.yaml + rubric.py), case count, case provenance (signed / awaiting review /\n"
    "draft, verified against bench/keys) and whether all pins hold.\n"
    "With TASK_CLASS: one row per case: id, disposition, difficulty, pin status (ok, or\n"
    "FAIL with the error code and what to do on the next line), provenance, newest score\n"
    "and title. Pins are checked by hashing each case (BLAKE3, docs/formats.md#digests).\n"
    "Rows fit the terminal (or $COLUMNS): the title is cut with \"…\", an id too long for\n"
    "its column goes on a line of its own. In a pipe nothing is cut and the columns line up.\n";

typedef struct tc_summary {
    size_t prov[4];         /* cases by bd_prov_status */
    bd_prov_status tc_prov; /* the task class's own signatures */
    bool pins_ok;
} tc_summary;

/* What the streamed rows need. */
typedef struct list_out {
    bd_cli *cli;
    bool print;
    size_t rows;                  /* JSON objects printed so far (for the commas) */
    const bd_latest_scores *last; /* each case's newest score, or NULL (no history) */
    size_t n_stale;               /* cases whose newest score is stale */
    int width;                    /* columns a row may take; 0: no limit (a pipe) */
    int case_w;                   /* the CASE column */
} list_out;

/* The case table's columns after CASE (DISP, DIFF, PIN, PROVENANCE, LAST), each wide
 * enough for every value it can hold, and the TITLE column's least useful width. */
#define COL_DISP  9  /* ambiguous */
#define COL_DIFF  6  /* medium */
#define COL_PIN   4  /* ok | FAIL (the code and message follow on their own line) */
#define COL_PROV  15 /* awaiting_review */
#define COL_LAST  6  /* 0.85*, 1.00* */
#define FIXED_W   (COL_DISP + COL_DIFF + COL_PIN + COL_PROV + COL_LAST + 6)
#define TITLE_MIN 12
/* The task-class table's columns after TASK CLASS: TIER 6, SUT 8, SIGS 8, CASES 5,
 * SIGNED 6, AWAIT 5, DRAFT 5, PINS 4, and a space after each but the last. */
#define TC_FIXED_W (6 + 8 + 8 + 5 + 6 + 5 + 5 + 4 + 8)

/* The width rows must fit: the terminal's, else $COLUMNS, else none (a pipe keeps every
 * byte; the columns still line up, CASE being as wide as the longest id). */
static int out_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *c = getenv("COLUMNS");
    long v = c ? strtol(c, NULL, 10) : 0;
    return v > 0 && v < 10000 ? (int)v : 0;
}

/* Lay the case table out for `tc`: CASE as wide as its longest id (ids are never cut in
 * a row), narrowed to leave TITLE_MIN columns for the title within the width; an id
 * longer than that is printed on a line of its own above its row. */
static void layout(list_out *lo, const bd_task_class *tc)
{
    int longest = 4; /* "CASE" */
    for (size_t i = 0; i < tc->n_cases; i++) {
        int w = bd_text_width(cli_vis(tc->case_ids[i]));
        if (w > longest)
            longest = w;
    }
    lo->width = out_width();
    lo->case_w = longest;
    if (lo->width && lo->case_w > lo->width - FIXED_W - TITLE_MIN)
        lo->case_w = lo->width - FIXED_W - TITLE_MIN;
    if (lo->case_w < 4)
        lo->case_w = 4;
}

/* Print `s` padded to `w` columns (display width, not bytes), then a space. */
static void put_col(const char *s, int w)
{
    fputs(s, stdout);
    for (int k = bd_text_width(s); k < w; k++)
        fputc(' ', stdout);
    fputc(' ', stdout);
}

/* Print `s` as the last field, cut to `w` columns when w > 0, then the line end. */
static void put_last(const char *s, int w)
{
    if (w > 0 && bd_text_width(s) > w) {
        char cut[1024];
        bd_text_fit(cut, sizeof(cut), s, w, false);
        fputs(cut, stdout);
    } else {
        fputs(s, stdout);
    }
    fputc('\n', stdout);
}

/* The task class's header: JSON opens the object and its "cases" array, so each case is
 * printed and released as it comes (memory does not grow with the number of cases). */
static void on_task_class(const bd_verify_report *r, void *payload)
{
    list_out *lo = payload;
    if (!lo->print)
        return;
    if (!lo->cli->json) {
        put_col("CASE", lo->case_w);
        put_col("DISP", COL_DISP);
        put_col("DIFF", COL_DIFF);
        put_col("PIN", COL_PIN);
        put_col("PROVENANCE", COL_PROV);
        put_col("LAST", COL_LAST);
        put_last("TITLE", lo->width ? lo->width - FIXED_W - lo->case_w : 0);
        return;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "task_class", r->task_class);
    cJSON_AddStringToObject(root, "task_class_status",
                            r->tc_err.code == BD_OK ? "ok" : bd_code_str(r->tc_err.code));
    cJSON_AddStringToObject(root, "task_class_digest", r->tc_digest);
    cJSON_AddStringToObject(
        root, "task_class_provenance",
        bd_prov_status_str(r->tc_prov_checked ? r->tc_prov.status : BD_PROV_ST_BAD));
    char *s = cli_json_text(root);
    cJSON_Delete(root);
    if (s) {
        s[strlen(s) - 1] = '\0'; /* drop the closing brace: the cases follow */
        fputs(s, stdout);
        free(s);
    }
    fputs(",\"cases\":[", stdout);
}

static void on_case(bd_case_check *chk, void *payload)
{
    list_out *lo = payload;
    if (!lo->print)
        return;
    const bd_case *c = chk->loaded;
    bd_prov_status prov = chk->prov_checked ? chk->prov.status : BD_PROV_ST_BAD;
    const bd_err *fail = bd_case_check_failure(chk);
    const char *pin = !fail ? "ok" : bd_code_str(fail->code);
    /* The newest score: "0.85", "0.85*" when stale (docs/formats.md#history-records-format-v2:
     * earned on content or by a rubric that changed since), "-" when never scored. */
    const bd_latest_score *ls = bd_latest_scores_find(lo->last, chk->case_id);
    char last[32] = "-";
    if (ls)
        snprintf(last, sizeof(last), "%.2f%s", ls->score, ls->stale ? "*" : "");
    lo->n_stale += ls && ls->stale;
    if (!lo->cli->json) {
        const char *id = cli_vis(chk->case_id);
        if (bd_text_width(id) > lo->case_w) {
            /* Too long for its column: on its own line (cut only past the width). */
            put_last(id, lo->width);
            id = "";
        }
        put_col(id, lo->case_w);
        put_col(c ? bd_disposition_str(c->disposition) : "?", COL_DISP);
        put_col(c ? bd_difficulty_str(c->difficulty) : "?", COL_DIFF);
        put_col(fail ? "FAIL" : "ok", COL_PIN);
        put_col(bd_prov_status_str(prov), COL_PROV);
        put_col(last, COL_LAST);
        put_last(c ? cli_vis(c->title) : "", lo->width ? lo->width - FIXED_W - lo->case_w : 0);
        if (fail) {
            /* The failure in full below its row: "  <code>: <what to do>". */
            char *line = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&line, &len);
            if (m) {
                fprintf(m, "  %s: %s", bd_code_str(fail->code), cli_vis(cli_err_text(fail)));
                fclose(m);
                put_last(line, lo->width);
                free(line);
            }
        }
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "case_id", chk->case_id);
    if (c) {
        cJSON_AddStringToObject(o, "title", c->title);
        cJSON_AddStringToObject(o, "disposition", bd_disposition_str(c->disposition));
        cJSON_AddStringToObject(o, "difficulty", bd_difficulty_str(c->difficulty));
    }
    cJSON_AddStringToObject(o, "status", pin);
    if (fail)
        cJSON_AddStringToObject(o, "message", cli_err_text(fail));
    cJSON_AddStringToObject(o, "digest", chk->digest);
    cJSON_AddStringToObject(o, "pinned", chk->pinned);
    cJSON_AddStringToObject(o, "provenance", bd_prov_status_str(prov));
    if (ls) {
        cJSON *l = cJSON_AddObjectToObject(o, "last_score");
        cJSON_AddNumberToObject(l, "seq", (double)ls->seq);
        cJSON_AddNumberToObject(l, "score", ls->score);
        cJSON_AddBoolToObject(l, "passed", ls->passed);
        cJSON_AddBoolToObject(l, "stale", ls->stale != 0);
        if (ls->stale)
            cJSON_AddStringToObject(l, "stale_reason", bd_stale_str(ls->stale));
    } else {
        cJSON_AddNullToObject(o, "last_score");
    }
    char *s = cli_json_text(o);
    cJSON_Delete(o);
    if (s) {
        if (lo->rows++)
            fputc(',', stdout);
        fputs(s, stdout);
        free(s);
    }
}

/* Verify `tc` once, streaming its cases; summarize it, and print its case table when
 * `print`. */
static int list_cases(bd_cli *cli, const bd_bench *bench, const bd_task_class *tc,
                      bd_prov_ctx *pctx, tc_summary *sum, bool print, bd_err *err)
{
    bd_verify_report rep;
    list_out lo = {cli, print, 0, NULL, 0, 0, 44};
    /* The newest score of each case, from the history when there is one (read only). */
    bd_latest_scores last = {0};
    bd_history *h = NULL;
    bd_err herr = BD_ERR_INIT;
    if (print && bd_history_open(&h, bench->root, 0, &herr) == 0 &&
        bd_latest_scores_load(&last, h, tc, &herr) == 0)
        lo.last = &last;
    if (h)
        cli_warn(bd_history_index_note(h));
    bd_history_free(h);
    if (print && !cli->json)
        layout(&lo, tc);
    bd_verify_sink sink = {on_task_class, on_case, NULL, &lo};
    bd_verify_opts vopt = {.prov = pctx};
    if (bd_verify(&rep, tc, &vopt, &sink, err) < 0) {
        if (print && cli->json)
            fputs("]}\n", stdout); /* the error follows on its own line */
        bd_verify_report_release(&rep);
        bd_latest_scores_release(&last);
        return -1;
    }
    sum->pins_ok = rep.n_failed == 0;
    sum->tc_prov = rep.tc_prov_checked ? rep.tc_prov.status : BD_PROV_ST_BAD;
    memcpy(sum->prov, rep.n_prov, sizeof(sum->prov));
    if (print && !cli->json) {
        const bd_err *tf = bd_verify_tc_failure(&rep);
        char line[1024];
        snprintf(line, sizeof(line), "task class %s (registration.yaml + rubric.py): %s, %s",
                 tc->name, rep.tc_err.code == BD_OK ? "pin ok" : bd_code_str(rep.tc_err.code),
                 bd_prov_status_str(sum->tc_prov));
        put_last(line, lo.width);
        if (tf) {
            snprintf(line, sizeof(line), "  %s: %s", bd_code_str(tf->code),
                     cli_vis(cli_err_text(tf)));
            put_last(line, lo.width);
        }
        if (lo.n_stale) {
            snprintf(line, sizeof(line),
                     "* %zu %s stale: scored on a case, rubric or registration that has "
                     "changed since (benchdesk history log --stale)",
                     lo.n_stale,
                     lo.n_stale == 1 ? "case's newest score is" : "cases' newest scores are");
            put_last(line, lo.width);
        }
    }
    if (print && cli->json) {
        fputs("]}\n", stdout);
        fflush(stdout);
    }
    bd_verify_report_release(&rep);
    bd_latest_scores_release(&last);
    return 0;
}

/* One task class's row: an object added to `arr` (--json), else a line of the table with
 * the name in a column `name_w` wide (on a line of its own above when longer). */
static void list_row(const bd_task_class *tc, const tc_summary *sum, cJSON *arr, int name_w)
{
    bool pins_ok = sum->pins_ok;
    const char *sut = tc->reg->sut_kind == BD_SUT_CASSETTE ? "cassette" : "command";
    if (arr) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", tc->name);
        cJSON_AddStringToObject(o, "description", tc->reg->description);
        cJSON_AddStringToObject(o, "tier", bd_tier_str(tc->reg->current_tier));
        cJSON_AddStringToObject(o, "sut", sut);
        cJSON_AddStringToObject(o, "provenance", bd_prov_status_str(sum->tc_prov));
        cJSON_AddNumberToObject(o, "cases", (double)tc->n_cases);
        cJSON_AddNumberToObject(o, "signed", (double)sum->prov[BD_PROV_ST_SIGNED]);
        cJSON_AddNumberToObject(o, "awaiting_review", (double)sum->prov[BD_PROV_ST_AWAITING]);
        cJSON_AddNumberToObject(o, "draft", (double)sum->prov[BD_PROV_ST_DRAFT]);
        cJSON_AddNumberToObject(o, "bad", (double)sum->prov[BD_PROV_ST_BAD]);
        cJSON_AddBoolToObject(o, "pins_ok", pins_ok);
        cJSON_AddItemToArray(arr, o);
    } else {
        const char *name = cli_vis(tc->name);
        bool own_line = bd_text_width(name) > name_w;
        if (own_line)
            printf("%s\n", name);
        put_col(own_line ? "" : name, name_w);
        /* "awaiting_review" shortened so the row fits 80 columns (JSON keeps it whole). */
        const char *sigs =
            sum->tc_prov == BD_PROV_ST_AWAITING ? "awaiting" : bd_prov_status_str(sum->tc_prov);
        printf("%-6s %-8s %-8s %5zu %6zu %5zu %5zu %s\n", bd_tier_str(tc->reg->current_tier), sut,
               sigs, tc->n_cases, sum->prov[BD_PROV_ST_SIGNED], sum->prov[BD_PROV_ST_AWAITING],
               sum->prov[BD_PROV_ST_DRAFT], pins_ok ? "ok" : "FAIL");
        if (!pins_ok)
            /* The name is on the line above: a fixed advice line never overflows. */
            printf("  pins failing: `benchdesk verify TASK_CLASS` names each failure\n");
    }
}

int cmd_list(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(list_help);
    if (argc > 2)
        return cli_usage(cli, "list", "list takes at most one task class");
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-')
            return cli_usage(cli, "list", "unknown option '%s'", argv[i]);

    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;
    bd_err err = BD_ERR_INIT;
    bd_task_class *tc = NULL;
    bd_prov_ctx *pctx = NULL;
    if (bd_provenance_init(&err) != 0 || bd_prov_ctx_new(&pctx, bench->bench_dir, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }

    if (argc == 2) {
        if (bd_task_class_load(&tc, bench, argv[1], &err) != 0) {
            status = cli_fail(cli, &err);
            goto out;
        }
        tc_summary sum = {0};
        if (list_cases(cli, bench, tc, pctx, &sum, true, &err) != 0)
            status = cli_fail(cli, &err);
        goto out;
    }

    cJSON *arr = cli->json ? cJSON_CreateArray() : NULL;
    /* TASK CLASS as wide as the longest name, narrowed to fit the width; a longer name
     * goes on a line of its own above its row (names are never cut). */
    int name_w = 10;
    for (size_t i = 0; i < bench->n_task_classes; i++) {
        int w = bd_text_width(cli_vis(bench->task_classes[i]));
        if (w > name_w)
            name_w = w;
    }
    int width = out_width();
    if (width && name_w > width - TC_FIXED_W)
        name_w = width - TC_FIXED_W > 10 ? width - TC_FIXED_W : 10;
    if (!cli->json) {
        put_col("TASK CLASS", name_w);
        printf("%-6s %-8s %-8s %5s %6s %5s %5s %s\n", "TIER", "SUT", "SIGS", "CASES", "SIGNED",
               "AWAIT", "DRAFT", "PINS");
    }
    for (size_t i = 0; i < bench->n_task_classes; i++) {
        if (bd_task_class_load(&tc, bench, bench->task_classes[i], &err) != 0) {
            cJSON_Delete(arr);
            status = cli_fail(cli, &err);
            goto out;
        }
        tc_summary sum = {0};
        if (list_cases(cli, bench, tc, pctx, &sum, false, &err) != 0) {
            cJSON_Delete(arr);
            status = cli_fail(cli, &err);
            goto out;
        }
        list_row(tc, &sum, arr, name_w);
        bd_task_class_free(tc);
        tc = NULL;
    }
    if (arr) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "bench_root", bench->root);
        cJSON_AddItemToObject(root, "task_classes", arr);
        cli_print_json(root);
        cJSON_Delete(root);
    }
out:
    bd_prov_ctx_free(pctx);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return status;
}
