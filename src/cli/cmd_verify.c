#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "anchor.h"
#include "verify.h"

static const char verify_help[] =
    "usage: benchdesk verify [TASK_CLASS...] [--full] [--json]\n\n"
    "Checks, for every task class (or the ones named): registration.yaml is valid; the\n"
    "task-class digest (registration.yaml + rubric.py) equals its pin; every case's digest\n"
    "(all of its files but provenance.yaml) equals its pin in digests.yaml; every cassette\n"
    "equals its cassette_digest; no pin names a missing case; every present signature of\n"
    "the task class and of each case verifies against bench/keys and\n"
    "bench/trusted-signers.yaml only (docs/provenance.md#verification-rules; drafts and\n"
    "subjects awaiting review are listed, not failures); the history chain verifies and\n"
    "every signed anchor under audit/anchors/bench/ matches it. Every failure is reported,\n"
    "one line each, not just the first. Every history record is parsed and checked in\n"
    "full except those under an anchor whose signature holds (re-hashed: they were checked\n"
    "when it was published); --full parses those too (docs/history.md) and checks every\n"
    "signature with GnuPG, believing neither this user's signature memo nor benchdesk's own\n"
    "check of plain Ed25519 signatures (docs/provenance.md#verifying-many-signatures).\n"
    "Every verdict file under audit/verdicts/ is checked (docs/provenance.md#verdicts): a\n"
    "forged, misnamed or replayed one fails; one by a key without the reviewer role is\n"
    "shown, never a failure.\n\n"
    "Exit status: 0 all verified; 1 an integrity failure; 2 invalid input.\n";

/* Exit status of a set of failures: the first failure's status decides. */
static void note(int *status, const bd_err *e)
{
    if (*status == 0)
        *status = bd_code_exit(e->code);
}

static void add_failure(cJSON *arr, const bd_err *e, const char *case_id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "code", bd_code_str(e->code));
    cJSON_AddStringToObject(o, "message", cli_err_text(e));
    if (case_id)
        cJSON_AddStringToObject(o, "case_id", case_id);
    if (e->file[0])
        cJSON_AddStringToObject(o, "file", e->file);
    if (e->line > 0)
        cJSON_AddNumberToObject(o, "line", e->line);
    cJSON_AddItemToArray(arr, o);
}

static void report_failure(bd_cli *cli, cJSON *arr, const bd_err *e, const char *case_id,
                           int *status)
{
    note(status, e);
    if (cli->json)
        add_failure(arr, e, case_id);
    else
        cli_err_line(e->code, cli_err_text(e));
}

/* Streaming output of one task class: each failure is printed as it is found and
 * nothing per case is kept, so memory does not grow with the number of cases. In JSON
 * the document is written piece by piece in the shape it always had. */
typedef struct verify_out {
    bd_cli *cli;
    int *status;
    size_t n_json;     /* failures printed in the current "failures" array */
    cJSON *superseded; /* --json: the task class's superseded signatures */
    size_t n_sup;      /* superseded signatures seen in the task class */
} verify_out;

/* Lines of superseded signatures the text output shows per task class (--json: all). */
#define SUPERSEDED_LINES 20

/* A genuine signature over an earlier version: shown, counts for nothing. */
static void note_superseded(verify_out *vo, const bd_prov_result *pr, const char *case_id)
{
    const bd_prov_sig *sigs[2] = {&pr->author, &pr->reviewer};
    for (int k = 0; k < 2; k++) {
        const bd_prov_sig *s = sigs[k];
        if (!s->present || !s->superseded)
            continue;
        const char *role = k == 0 ? "author" : "reviewer";
        if (vo->cli->json) {
            cJSON *e = cJSON_CreateObject();
            if (case_id)
                cJSON_AddStringToObject(e, "case_id", case_id);
            else
                cJSON_AddNullToObject(e, "case_id");
            cJSON_AddStringToObject(e, "role", role);
            cJSON_AddStringToObject(e, "identity", s->identity);
            cJSON_AddStringToObject(e, "fingerprint", s->fingerprint);
            cJSON_AddStringToObject(e, "digest", s->digest);
            cJSON_AddItemToArray(vo->superseded, e);
        } else if (vo->n_sup < SUPERSEDED_LINES) {
            printf("  %s %s: %s signature by %s over %.19s…, superseded (sign it again)\n",
                   case_id ? "case" : "task class", case_id ? cli_vis(case_id) : "", role,
                   cli_vis(s->identity), s->digest);
        }
        vo->n_sup++;
    }
}

static void emit_failure(verify_out *vo, const bd_err *e, const char *case_id)
{
    if (!vo->cli->json) {
        report_failure(vo->cli, NULL, e, case_id, vo->status);
        return;
    }
    note(vo->status, e);
    cJSON *arr = cJSON_CreateArray();
    add_failure(arr, e, case_id);
    char *s = cJSON_PrintUnformatted(cJSON_GetArrayItem(arr, 0));
    cJSON_Delete(arr);
    if (s) {
        if (vo->n_json++)
            fputc(',', stdout);
        fputs(s, stdout);
        free(s);
    }
}

static void on_tc(const bd_verify_report *r, void *payload)
{
    const bd_err *tf = bd_verify_tc_failure(r);
    if (tf)
        emit_failure(payload, tf, NULL);
    if (r->tc_prov_checked)
        note_superseded(payload, &r->tc_prov, NULL);
}

static void on_case(bd_case_check *c, void *payload)
{
    const bd_err *cf = bd_case_check_failure(c);
    if (cf)
        emit_failure(payload, cf, c->case_id);
    /* A case off its pin whose signatures still hold over the pin: say so too
     * (provenance.stale_digest, docs/provenance.md#stale_digest-or-bad_signature: pin it and
     * sign it again), not only the integrity code. */
    if (cf && cf == &c->err && c->prov_checked && c->prov.status == BD_PROV_ST_BAD &&
        c->prov.err.code == BD_E_PROVENANCE_STALE)
        emit_failure(payload, &c->prov.err, c->case_id);
    if (c->prov_checked)
        note_superseded(payload, &c->prov, c->case_id);
}

static void on_orphan(const bd_err *e, void *payload)
{
    emit_failure(payload, e, NULL);
}

/* Print the members of object `o` after what is already printed (",k:v,...}"). */
static void json_tail(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    if (s) {
        if (s[1] != '}')
            fputc(',', stdout);
        fputs(s + 1, stdout);
        free(s);
    }
}

/* Totals over the task classes verified. */
typedef struct verify_totals {
    size_t cases, failed;
    size_t prov[4];
} verify_totals;

/* Open the JSON object of task class `name` (the `i`-th) up to its "failures" array. */
static void json_tc_head(const char *name, size_t i)
{
    cJSON *head = cJSON_CreateObject();
    cJSON_AddStringToObject(head, "name", name);
    char *h = cJSON_PrintUnformatted(head);
    cJSON_Delete(head);
    if (i)
        fputc(',', stdout);
    if (h) {
        h[strlen(h) - 1] = '\0';
        fputs(h, stdout);
        free(h);
    }
    fputs(",\"failures\":[", stdout);
}

/* The summary of one verified task class: its JSON members into `o`, or its line. */
static void tc_summary(bd_cli *cli, cJSON *o, const bd_task_class *tc, const bd_verify_report *rep)
{
    bd_prov_status tcp = rep->tc_prov_checked ? rep->tc_prov.status : BD_PROV_ST_BAD;
    cJSON *pj = cJSON_AddObjectToObject(o, "provenance");
    for (int k = 0; k < 4; k++)
        cJSON_AddNumberToObject(pj, bd_prov_status_str((bd_prov_status)k), (double)rep->n_prov[k]);
    cJSON_AddNumberToObject(o, "cases", (double)rep->n_cases);
    cJSON_AddStringToObject(o, "task_class_digest", rep->tc_digest);
    cJSON_AddStringToObject(o, "task_class_provenance", bd_prov_status_str(tcp));
    cJSON_AddBoolToObject(o, "ok", rep->n_failed == 0);
    if (!cli->json)
        printf("%-24s %4zu cases  %-8s  task class %s; cases signed %zu, awaiting review "
               "%zu, draft %zu\n",
               tc->name, rep->n_cases, rep->n_failed ? "FAILED" : "verified",
               bd_prov_status_str(tcp), rep->n_prov[BD_PROV_ST_SIGNED],
               rep->n_prov[BD_PROV_ST_AWAITING], rep->n_prov[BD_PROV_ST_DRAFT]);
}

/* Verify task class `name` (the `i`-th), streaming its failures, into `t` and *status.
 * Returns 0, or -1 with `err` when the check could not run (the JSON document is closed;
 * the error follows). */
static int verify_one(bd_cli *cli, const bd_bench *bench, bd_prov_ctx *pctx, const char *name,
                      size_t i, verify_totals *t, int *status, bd_err *err)
{
    bd_task_class *tc = NULL;
    verify_out vo = {cli, status, 0, NULL, 0};
    if (cli->json)
        json_tc_head(name, i);
    cJSON *o = cJSON_CreateObject();
    vo.superseded = cJSON_AddArrayToObject(o, "superseded");
    bd_verify_report rep;
    memset(&rep, 0, sizeof(rep));
    int rc = 0;
    if (bd_task_class_load(&tc, bench, name, err) != 0) {
        emit_failure(&vo, err, NULL);
        t->failed++;
    } else {
        bd_verify_sink sink = {on_tc, on_case, on_orphan, &vo};
        /* Nothing but the verdicts is shown: a case the case memo knows to pass is not
         * judged again (docs/provenance.md#the-case-memo). */
        bd_verify_opts vopt = {.prov = pctx, .case_memo = true};
        if (bd_verify(&rep, tc, &vopt, &sink, err) < 0) {
            if (cli->json)
                fputs("]}]}\n", stdout); /* close what was open; the error follows */
            rc = -1;
            goto out;
        }
        for (size_t k = 0; k < 4; k++)
            t->prov[k] += rep.n_prov[k];
        if (!cli->json && vo.n_sup > SUPERSEDED_LINES)
            printf("  … and %zu more superseded signatures (--json lists them all)\n",
                   vo.n_sup - SUPERSEDED_LINES);
        tc_summary(cli, o, tc, &rep);
        t->cases += rep.n_cases;
        t->failed += rep.n_failed;
    }
    if (cli->json) {
        fputc(']', stdout);
        json_tail(o);
    }
out:
    cJSON_Delete(o);
    bd_verify_report_release(&rep);
    bd_task_class_free(tc);
    return rc;
}

/* The chain, then every anchor against it (docs/history.md): bench-wide, whatever task
 * classes were named. Its JSON into `root`, its failures into *status and t->failed. */
static void verify_history(bd_cli *cli, const bd_bench *bench, bool full, cJSON *root,
                           verify_totals *t, int *status)
{
    bd_anchor_report arep;
    bd_err aerr = BD_ERR_INIT;
    int av = bd_anchor_verify_visit(&arep, bench->root, full ? BD_VERIFY_FULL : 0, NULL, &aerr);
    cJSON *hist = cJSON_AddObjectToObject(root, "history");
    cJSON *afails = cJSON_AddArrayToObject(hist, "failures");
    if (av < 0) {
        report_failure(cli, afails, &aerr, NULL, status);
        t->failed++;
    } else {
        for (size_t k = 0; k < arep.n; k++)
            if (arep.checks[k].err.code != BD_OK) {
                report_failure(cli, afails, &arep.checks[k].err, NULL, status);
                t->failed++;
            }
        cJSON_AddNumberToObject(hist, "records", (double)arep.chain_count);
        cJSON_AddStringToObject(hist, "chain_head", arep.chain_head);
        cJSON_AddNumberToObject(hist, "anchors", (double)arep.n);
        /* Records before it lie under a signed anchor: re-hashed, not parsed again. */
        cJSON_AddNumberToObject(hist, "parsed_from", (double)arep.parsed_from);
        if (!cli->json)
            printf("%-24s %4llu records  %-8s  %zu anchor%s%s\n", "history",
                   (unsigned long long)arep.chain_count, "verified", arep.n, arep.n == 1 ? "" : "s",
                   arep.n_failed ? " (some FAILED)" : " verified");
    }
    cJSON_AddBoolToObject(hist, "ok", av == 0);
    /* A folder every user may write to lets any of them append to, reorder or truncate
     * the history below what anchors cover: say so, even when the chain verifies. */
    cJSON *warns = cJSON_AddArrayToObject(hist, "warnings");
    const char *const state_dirs[] = {".benchdesk", ".benchdesk/history"};
    for (size_t k = 0; k < 2; k++) {
        char *p = bd_path_join(bench->root, state_dirs[k]);
        struct stat st;
        if (p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH)) {
            char w[1200];
            snprintf(w, sizeof(w),
                     "%s is writable by every user (mode %03o): anyone on this machine can "
                     "append to or remove history records; run `chmod o-w %s`",
                     p, (unsigned)(st.st_mode & 0777), p);
            if (cli->json)
                cJSON_AddItemToArray(warns, cJSON_CreateString(w));
            else
                fprintf(stderr, "benchdesk: warning: %s\n", w);
        }
        free(p);
    }
    bd_anchor_report_release(&arep);
}

int cmd_verify(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(verify_help);
    bool full = false;
    int named = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--full") == 0)
            full = true;
        else if (argv[i][0] == '-')
            return cli_usage(cli, "verify", "unknown option '%s'", argv[i]);
        else
            argv[named++] = argv[i];
    }
    argc = named;

    bd_bench *bench = NULL;
    int status = cli_open_bench(cli, &bench);
    if (status)
        return status;

    size_t n = argc > 1 ? (size_t)(argc - 1) : bench->n_task_classes;
    const char *const *names =
        argc > 1 ? (const char *const *)argv + 1 : (const char *const *)bench->task_classes;
    bd_err perr = BD_ERR_INIT;
    bd_prov_ctx *pctx = NULL;
    if (bd_provenance_init(&perr) != 0 || bd_prov_ctx_new(&pctx, bench->bench_dir, &perr) != 0) {
        bd_bench_free(bench);
        return cli_fail(cli, &perr);
    }
    if (full)
        bd_prov_ctx_full(pctx);
    else
        bd_prov_ctx_preload(pctx);
    if (cli->json)
        fputs("{\"task_classes\":[", stdout);
    verify_totals t = {0};
    for (size_t i = 0; i < n; i++) {
        bd_err err = BD_ERR_INIT;
        if (verify_one(cli, bench, pctx, names[i], i, &t, &status, &err) < 0) {
            bd_prov_ctx_free(pctx);
            bd_bench_free(bench);
            return cli_fail(cli, &err);
        }
    }
    if (cli->json)
        fputc(']', stdout);
    cJSON *root = cJSON_CreateObject();
    verify_history(cli, bench, full, root, &t, &status);
    cli_verify_verdicts(cli, bench, pctx, root, &t.failed, &status);
    cJSON_AddBoolToObject(root, "ok", status == 0);
    if (cli->json) {
        json_tail(root);
        fputc('\n', stdout);
        fflush(stdout);
    } else if (status == 0)
        printf("verified: %zu task classes, %zu cases: pins, cassettes and signatures hold "
               "(cases: %zu signed, %zu awaiting review, %zu draft)\n",
               n, t.cases, t.prov[BD_PROV_ST_SIGNED], t.prov[BD_PROV_ST_AWAITING],
               t.prov[BD_PROV_ST_DRAFT]);
    else
        printf("verification failed: %zu problem%s (see above)\n", t.failed,
               t.failed == 1 ? "" : "s");
    cJSON_Delete(root);
    bd_prov_ctx_free(pctx);
    bd_bench_free(bench);
    return status;
}
