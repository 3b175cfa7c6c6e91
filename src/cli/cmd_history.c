/* benchdesk history verify | log — the chained score history (docs/history.md, docs/benchdesk.1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "text.h"
#include "history.h"
#include "path.h"
#include "runsigned.h"
#include "stale.h"

static const char history_help[] =
    "usage: benchdesk history verify [--full] [--json]\n"
    "       benchdesk history import BUNDLE_DIR... [--partial] [--json]\n"
    "       benchdesk history log [--task-class TC] [--case ID] [--run RUN_ID]\n"
    "                             [--failure-mode CODE] [--failed] [--stale]\n"
    "                             [--verdict V | --unreviewed]\n"
    "                             [--limit N] [--before SEQ] [--json]\n"
    "       benchdesk history log --trend --task-class TC [--json]\n\n"
    "verify  walks the chain in .benchdesk/history from record 1: every segment line a\n"
    "        record, numbered without a gap, its prev_hash equal to the previous record's\n"
    "        hash, every record parseable, schema-valid and canonical. Records up to the\n"
    "        head an earlier verify found intact are re-hashed, not re-parsed (their bytes\n"
    "        are proven unchanged); --full parses every record again. Exit 0 when intact\n"
    "        (prints the record count and the chain head, and a torn final line left by a\n"
    "        crash, which is not a record); exit 1 with chain.tampered naming the first\n"
    "        bad record and why: edited, missing, reordered, inserted, spliced,\n"
    "        unparseable or schema_invalid. A truncated tail is invisible to the chain\n"
    "        alone: `benchdesk anchor verify` catches it.\n"
    "log     lists records newest first (a page of --limit, default 20; --before SEQ for\n"
    "        the page below SEQ), optionally only those of one task class, case or run,\n"
    "        with a failure mode, that failed, or that are stale (scored on a case or task\n"
    "        class that has changed since: marked STALE). It reads only the records it\n"
    "        needs and does not verify the chain. --verdict V: records with a counting\n"
    "        verdict V (docs/provenance.md#verdicts); --unreviewed: failures without one\n"
    "        (these two check the verdict files and walk the verified chain).\n"
    "        --trend: the mean score over the last 20 full runs of TC from the verified\n"
    "        chain (run id, time, cases, pass rate, mean, ci95) and its sparkline.\n"
    "import  merges shard bundles into the chain (benchdesk history import --help).\n";

/* The signed runs' part of verify (docs/formats.md#signed-runs) into the JSON object `o`
 * (NULL: as text): the unsigned claims as warnings, a run.signed that does not hold as an
 * error. Returns the exit status it adds (0, or 1 for a bad run.signed). */
static int say_runs(const bd_cli *cli, const bd_runs_report *rr, cJSON *o)
{
    cJSON *claims = o ? cJSON_CreateArray() : NULL, *bad = o ? cJSON_CreateArray() : NULL;
    for (size_t i = 0; i < rr->n; i++) {
        const bd_runsig *g = &rr->runs[i];
        if (g->state == BD_RUNSIG_SIGNED)
            continue;
        if (o) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "run_id", g->run_id);
            cJSON_AddStringToObject(e, "fingerprint", g->fingerprint);
            cJSON_AddNumberToObject(e, "records", (double)g->records);
            cJSON_AddStringToObject(e, "reason", g->why);
            cJSON_AddItemToArray(g->state == BD_RUNSIG_BAD ? bad : claims, e);
        } else if (g->state == BD_RUNSIG_CLAIM) {
            fprintf(stderr,
                    "benchdesk: warning: run %s: %llu record%s claim operator %s but the run "
                    "is unsigned: %s\n",
                    cli_vis(g->run_id), (unsigned long long)g->records, g->records == 1 ? "" : "s",
                    g->fingerprint, cli_vis(g->why));
        } else {
            cli_err_line(BD_E_RUN_SIGNED_INVALID, g->why);
        }
    }
    if (o) {
        cJSON *r = cJSON_AddObjectToObject(o, "runs");
        cJSON_AddNumberToObject(r, "signed", (double)rr->n_signed);
        cJSON_AddItemToObject(r, "unsigned_claims", claims);
        cJSON_AddItemToObject(r, "bad", bad);
    } else if (rr->n) {
        printf("signed runs: %zu signed, %zu unsigned claim%s, %zu bad\n", rr->n_signed,
               rr->n_claims, rr->n_claims == 1 ? "" : "s", rr->n_bad);
    }
    (void)cli;
    return rr->n_bad ? bd_code_exit(BD_E_RUN_SIGNED_INVALID) : 0;
}

static int history_verify(bd_cli *cli, const bd_bench *bench, bool full)
{
    bd_err err = BD_ERR_INIT;
    bd_history *h = NULL;
    bd_history_verify_result r;
    bd_runs_report rr;
    memset(&r, 0, sizeof(r));
    memset(&rr, 0, sizeof(rr));
    int status = 0;
    if (bd_history_open(&h, bench->root, BD_HISTORY_READ, &err) != 0)
        return cli_fail(cli, &err);
    int rc = bd_history_verify_runs(&rr, &r, h, bench->bench_dir, full ? BD_VERIFY_FULL : 0, &err);
    if (rc != 0 && err.code != BD_E_CHAIN_TAMPERED) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (cli->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "ok", rc == 0 && rr.n_bad == 0);
        cJSON_AddNumberToObject(o, "count", (double)r.count);
        cJSON_AddStringToObject(o, "head", r.head);
        cJSON_AddBoolToObject(o, "torn_tail", r.torn_tail);
        if (rc != 0) {
            cJSON *e = cJSON_AddObjectToObject(o, "error");
            cJSON_AddStringToObject(e, "code", bd_code_str(err.code));
            cJSON_AddStringToObject(e, "message", cli_err_text(&err));
            if (err.file[0])
                cJSON_AddStringToObject(e, "file", err.file);
            cJSON_AddNumberToObject(e, "seq", (double)r.bad_seq);
            cJSON_AddStringToObject(e, "reason", bd_chain_reason_str(r.reason));
        }
        int rs = rc == 0 ? say_runs(cli, &rr, o) : 0;
        cli_print_json(o);
        cJSON_Delete(o);
        status = rc == 0 ? rs : bd_code_exit(err.code);
    } else if (rc == 0) {
        printf("history intact: %llu record%s, head %s\n", (unsigned long long)r.count,
               r.count == 1 ? "" : "s", r.head);
        if (r.torn_tail)
            printf("torn tail (a crash during an append): the last segment ends in a partial "
                   "line, which is not a record; the next append removes it\n");
        status = say_runs(cli, &rr, NULL);
    } else {
        cli_err_line(err.code, cli_err_text(&err));
        fprintf(stderr,
                "benchdesk: first bad record: seq %llu, reason %s; %llu record%s "
                "before it intact\n",
                (unsigned long long)r.bad_seq, bd_chain_reason_str(r.reason),
                (unsigned long long)r.count, r.count == 1 ? "" : "s");
        status = bd_code_exit(err.code);
    }
out:
    bd_history_verify_result_release(&r);
    bd_runs_report_release(&rr);
    bd_history_free(h);
    return status;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Today's pins per task class, loaded once each, for stale marks and --stale. */
typedef struct pins_cache {
    const bd_bench *bench;
    bd_task_class *tcs[32];
    char *names[32];
    bool absent[32];
    size_t n;
} pins_cache;

/* The stale bits of `r` against today's pins of its task class (a task class that no
 * longer loads has no pins: every record of it is stale). */
static unsigned stale_bits(pins_cache *pc, const bd_history_record *r)
{
    if (r->is_audit)
        return BD_STALE_NONE;
    size_t i = 0;
    for (; i < pc->n; i++)
        if (strcmp(pc->names[i], r->task_class) == 0)
            break;
    if (i == pc->n) {
        bd_task_class *tc = NULL;
        bd_err err = BD_ERR_INIT;
        if (bd_task_class_load(&tc, pc->bench, r->task_class, &err) != 0)
            tc = NULL;
        if (pc->n == 32) { /* the cache is full: use and drop */
            unsigned bits = bd_record_stale(r, tc ? tc->digests : NULL);
            bd_task_class_free(tc);
            return bits;
        }
        pc->tcs[i] = tc;
        pc->names[i] = strdup(r->task_class);
        if (!pc->names[i]) {
            bd_task_class_free(tc);
            return bd_record_stale(r, NULL);
        }
        pc->n++;
    }
    return bd_record_stale(r, pc->tcs[i] ? pc->tcs[i]->digests : NULL);
}

static bool keep_stale(const bd_history_record *r, void *ctx)
{
    return stale_bits(ctx, r) != BD_STALE_NONE;
}

static void pins_cache_release(pins_cache *pc)
{
    for (size_t i = 0; i < pc->n; i++) {
        bd_task_class_free(pc->tcs[i]);
        free(pc->names[i]);
    }
}

/* The widths of the variable columns of a page of records: each as wide as its longest
 * entry (ids are never cut), at least as wide as its heading. */
typedef struct log_widths {
    int tc, what, iso;
} log_widths;

/* The CASE column of `r`: its case id, or "audit: EVENT" (made visible). */
static const char *record_what(const bd_history_record *r)
{
    static char what[300];
    if (!r->is_audit)
        return r->case_id;
    snprintf(what, sizeof(what), "audit: %s", cli_vis(r->event));
    return what;
}

static int widest(int w, const char *s)
{
    int n = (int)strlen(s);
    return n > w ? n : w;
}

static log_widths log_widths_of(const bd_history_record *recs, size_t n)
{
    log_widths w = {(int)strlen("TASK CLASS"), (int)strlen("CASE"), (int)strlen("ISOLATION")};
    for (size_t i = 0; i < n; i++) {
        w.tc = widest(w.tc, recs[i].task_class ? recs[i].task_class : "-");
        w.what = widest(w.what, record_what(&recs[i]));
        w.iso = widest(w.iso, recs[i].is_audit ? "-" : recs[i].isolation_class);
    }
    return w;
}

/* "  by <who>" for a score record ("by unsigned" when it names no operator) and an audit
 * record that names one (runsigned.h); else "". */
static const char *record_by(const bd_history_record *r, const bd_signers *signers)
{
    static char by[400];
    by[0] = '\0';
    if (r->operator_fingerprint || !r->is_audit) {
        char who[320];
        bd_run_operator_words(signers, r->operator_fingerprint, who, sizeof(who));
        snprintf(by, sizeof(by), "  by %s", cli_vis(who));
    }
    return by;
}

static void print_record_line(const bd_history_record *r, unsigned stale, const log_widths *w,
                              const bd_signers *signers)
{
    char hash12[13];
    memcpy(hash12, r->hash, 12);
    hash12[12] = '\0';
    if (r->is_audit) {
        printf("%10llu  %-20.20s  %-*s  %-*s  %5s  %-4s  %-*s  %s%s\n", (unsigned long long)r->seq,
               r->at, w->tc, r->task_class ? r->task_class : "-", w->what, record_what(r), "-", "",
               w->iso, "-", hash12, record_by(r, signers));
        return;
    }
    printf("%10llu  %-20.20s  %-*s  %-*s  %5.3f  %-4s  %-*s  %s%s%s%s\n",
           (unsigned long long)r->seq, r->finished_at, w->tc, r->task_class, w->what, r->case_id,
           r->score.score, r->score.passed ? "pass" : "FAIL", w->iso, r->isolation_class, hash12,
           stale ? "  STALE: " : "", stale ? bd_stale_str(stale) : "", record_by(r, signers));
}

static int history_log(bd_cli *cli, const bd_bench *bench, bd_history_log_opts *o, bool stale,
                       const char *verdict, bool unreviewed)
{
    bd_err err = BD_ERR_INIT;
    pins_cache pc = {.bench = bench};
    void *vf = NULL;
    if (stale) {
        o->keep = keep_stale;
        o->keep_ctx = &pc;
    }
    if (verdict || unreviewed) {
        int st = cli_log_verdicts_open(&vf, cli, bench, verdict, unreviewed, o);
        if (st != 0)
            return st;
    }
    bd_history *h = NULL;
    bd_history_record *recs = NULL;
    bd_signers *signers = NULL;
    size_t n = 0;
    uint64_t next = 0;
    int status = 0;
    if (bd_history_open(&h, bench->root, BD_HISTORY_READ, &err) != 0 ||
        bd_history_log(h, o, &recs, &n, &next, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    cli_warn(bd_history_index_note(h));
    /* Who each record names as its operator, by trusted-signers.yaml (a file that does
     * not load names no one: every key is shown as not trusted). */
    char *ts = bd_path_join(bench->bench_dir, "trusted-signers.yaml");
    bd_err serr = BD_ERR_INIT;
    if (!ts || bd_signers_load(&signers, ts, &serr) != 0)
        signers = NULL;
    free(ts);
    if (cli->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(root, "records");
        for (size_t i = 0; i < n; i++) {
            cJSON *rec = cJSON_Duplicate(recs[i].json, 1);
            if (!rec)
                continue;
            cJSON_AddStringToObject(rec, "record_hash", recs[i].hash);
            if (recs[i].operator_fingerprint || !recs[i].is_audit) {
                char who[320];
                bd_run_operator_words(signers, recs[i].operator_fingerprint, who, sizeof(who));
                cJSON_AddStringToObject(rec, "operator", who);
            }
            if (!recs[i].is_audit) {
                unsigned st = stale_bits(&pc, &recs[i]);
                cJSON_AddBoolToObject(rec, "stale", st != BD_STALE_NONE);
                if (st)
                    cJSON_AddStringToObject(rec, "stale_reason", bd_stale_str(st));
            }
            cJSON_AddItemToArray(arr, rec);
        }
        if (next)
            cJSON_AddNumberToObject(root, "next_before", (double)next);
        else
            cJSON_AddNullToObject(root, "next_before");
        cli_print_json(root);
        cJSON_Delete(root);
        goto out;
    }
    if (n == 0) {
        bool filtered = o->task_class || o->case_id || o->run_id || o->failure_mode ||
                        o->failed_only || stale || vf;
        printf("no history records%s\n", filtered ? " match" : " yet");
        goto out;
    }
    log_widths w = log_widths_of(recs, n);
    printf("%10s  %-20s  %-*s  %-*s  %5s  %-4s  %-*s  %s\n", "SEQ", "FINISHED", w.tc, "TASK CLASS",
           w.what, "CASE", "SCORE", "", w.iso, "ISOLATION", "HASH");
    for (size_t i = 0; i < n; i++)
        print_record_line(&recs[i], stale_bits(&pc, &recs[i]), &w, signers);
    if (next)
        printf("(older records: --before %llu)\n", (unsigned long long)next);
out:
    bd_signers_free(signers);
    cli_log_verdicts_close(vf);
    pins_cache_release(&pc);
    bd_history_records_free(recs, n);
    bd_history_free(h);
    return status;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cmd_history(bd_cli *cli, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "import") == 0)
        return cmd_history_import(cli, argc - 1, argv + 1);
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(history_help);
    if (argc < 2)
        return cli_usage(cli, "history", "history needs a subcommand: verify, log or import");
    const char *sub = argv[1];
    bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
    bool full = false, stale = false, trend = false, unreviewed = false;
    const char *verdict = NULL;
    if (strcmp(sub, "verify") == 0) {
        if (argc == 3 && strcmp(argv[2], "--full") == 0)
            full = true;
        else if (argc != 2)
            return cli_usage(cli, "history", "history verify takes only --full");
    } else if (strcmp(sub, "log") == 0) {
        for (int i = 2; i < argc; i += 2) {
            const char *a = argv[i];
            const char *v = i + 1 < argc ? argv[i + 1] : NULL;
            uint64_t num;
            /* The flags take no value: step back so the loop steps over the flag alone. */
            if (strcmp(a, "--failed") == 0) {
                o.failed_only = true;
                i--;
            } else if (strcmp(a, "--stale") == 0) {
                stale = true;
                i--;
            } else if (strcmp(a, "--unreviewed") == 0) {
                unreviewed = true;
                i--;
            } else if (strcmp(a, "--verdict") == 0 && v) {
                verdict = v;
            } else if (strcmp(a, "--trend") == 0) {
                trend = true;
                i--;
            } else if (strcmp(a, "--run") == 0 && v) {
                o.run_id = v;
            } else if (strcmp(a, "--failure-mode") == 0 && v) {
                o.failure_mode = v;
            } else if (strcmp(a, "--task-class") == 0 && v) {
                o.task_class = v;
            } else if (strcmp(a, "--case") == 0 && v) {
                o.case_id = v;
            } else if (strcmp(a, "--limit") == 0 && v) {
                if (parse_u64(v, 1000000, &num) != 0)
                    return cli_usage(cli, "history", "--limit takes a number from 1 to 1000000");
                o.limit = (size_t)num;
            } else if (strcmp(a, "--before") == 0 && v) {
                if (parse_u64(v, BD_HISTORY_SEQ_MAX + 1, &num) != 0)
                    return cli_usage(cli, "history", "--before takes a record seq (1 or more)");
                o.before = num;
            } else {
                return cli_usage(cli, "history", "unknown or incomplete option '%s'", a);
            }
        }
        const char *names[2] = {o.task_class, o.case_id};
        for (int i = 0; i < 2; i++) {
            if (names[i] && !bd_name_valid(names[i])) {
                bd_err err = BD_ERR_INIT;
                bd_err_set(&err, BD_E_BAD_ID, NULL, 0, 0,
                           "'%s' is not a valid %s name (^[a-z0-9][a-z0-9._-]{0,127}$)", names[i],
                           i ? "case" : "task-class");
                return cli_fail(cli, &err);
            }
        }
    } else {
        return cli_usage(cli, "history", "unknown history subcommand '%s'", sub);
    }
    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status != 0)
        return status;
    if (o.task_class && !bsearch(&o.task_class, bench->task_classes, bench->n_task_classes,
                                 sizeof(char *), name_cmp)) {
        /* A misspelt task class would list nothing and look like an empty history. */
        bd_err err = BD_ERR_INIT;
        char hint[192];
        bd_text_did_you_mean(hint, sizeof(hint), o.task_class,
                             (const char *const *)bench->task_classes, bench->n_task_classes);
        bd_err_set(&err, BD_E_UNKNOWN_TASK_CLASS, NULL, 0, 0,
                   "no task class '%s' in this bench;%s `benchdesk list` shows the task classes",
                   o.task_class, hint);
        bd_bench_free(bench);
        return cli_fail(cli, &err);
    }
    status = strcmp(sub, "verify") == 0 ? history_verify(cli, bench, full)
             : trend                    ? cli_history_trend(cli, bench, o.task_class)
                                        : history_log(cli, bench, &o, stale, verdict, unreviewed);
    bd_bench_free(bench);
    return status;
}
