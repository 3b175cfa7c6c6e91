/*
 * benchdesk run — run a task class's rubric over its cases (docs/formats.md#benchscore,
 * docs/runner.md, docs/benchdesk.1).
 *
 * A thin front end over runner.h: it subscribes to the run's events and shows them as
 * a live progress line (stderr on a terminal), plain lines (stderr otherwise) or the
 * JSON events of docs/runner.md#fan-out-events-cancel (stdout, --json), then prints the summary
 * table. SIGINT/SIGTERM/SIGHUP cancel the run: running cases are killed and their temp dirs
 * removed; exit 130.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "cli.h"
#include "config.h"
#include "exec.h"
#include "history.h"
#include "import.h"
#include "provenance.h"
#include "path.h"
#include "rungate.h"
#include "runsign.h"
#include "runner.h"
#include "shard.h"
#include "stale.h"

static const char help[] =
    "usage: benchdesk run TASK_CLASS [--case ID]... [--jobs N] [--json] [--drafts]\n"
    "                     [--isolation auto|namespaces|subprocess] [--allow-weaker-isolation]\n"
    "                     [--start warm|cold]\n"
    "                     [--shard K/N|auto --run-id ID --out BUNDLE_DIR]\n"
    "                     [--stale] [--junit FILE] [--cost-cap USD] [--operator-key FPR]\n"
    "\n"
    "Run the task class's rubric once per case, up to N at once (default: the number of\n"
    "CPUs). Before anything runs, the history chain, the task class (registration.yaml +\n"
    "rubric.py), every case and cassette are checked against their pins and every\n"
    "signature is verified (a mismatch or a bad signature: exit 1). By default the run\n"
    "scores the signed cases and says how many unsigned ones it skipped; a task class not\n"
    "signed by two people, or an unsigned --case, is refused (exit 3) unless --drafts.\n"
    "A rubric that times out, crashes or prints a bad score fails its case with\n"
    "a harness failure mode; the run goes on. Each finished case is appended to the\n"
    "history (.benchdesk/history) before it is reported.\n"
    "\n"
    "  --case ID                 run only this case (repeatable)\n"
    "  --stale                   run only the cases whose newest score is stale (scored\n"
    "                            on an older case or task-class digest) or that were never\n"
    "                            scored; when there are none, say so and score nothing\n"
    "  --junit FILE              write the run as JUnit XML to FILE when it ends (a shard\n"
    "                            run: its shard), as `benchdesk report RUN --format junit`\n"
    "  --cost-cap USD            stop once the finished cases' cost_usd adds up to USD (a\n"
    "                            decimal >= 0): no case starts, running ones are cancelled,\n"
    "                            the summary names the cases not run; exit 0, not a full\n"
    "                            run. The smallest of this, cost_cap_usd in\n"
    "                            .benchdesk/config.yaml and the registration's run.cost_cap_usd\n"
    "                            applies (a shard run: to its shard); 0 runs nothing\n"
    "  --jobs N                  cases at once (1..1024)\n"
    "  --json                    one JSON event per line on stdout\n"
    "                            (docs/runner.md#fan-out-events-cancel)\n"
    "  --drafts                  include unsigned cases and an unsigned task class; each\n"
    "                            record says whether its case was signed\n"
    "                            (provenance_verified), and promotion counts only those\n"
    "  --isolation CLASS         auto (default: the strongest available), namespaces or\n"
    "                            subprocess; a class that is not available is refused\n"
    "                            (exit 3) unless --allow-weaker-isolation\n"
    "  --allow-weaker-isolation  consent to a weaker class than requested\n"
    "  --start MODE              warm (default where it can serve: each rubric is a fork of a\n"
    "                            jailed interpreter that started once) or cold (the\n"
    "                            interpreter started per case); the summary says which ran\n"
    "                            and why not warm (runner.start in .benchdesk/config.yaml)\n"
    "  --shard K/N               score only shard K (0-based) of N: the cases whose\n"
    "                            BLAKE3(case id) is K mod N (docs/scale.md); `auto` takes\n"
    "                            K and N from a Slurm array (SLURM_ARRAY_TASK_ID/COUNT/MIN)\n"
    "                            or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX,\n"
    "                            BENCHDESK_SHARDS). A shard run writes its records to the\n"
    "                            bundle only, never to this machine's history\n"
    "  --run-id ID               the run id all shards share (default under Slurm:\n"
    "                            SLURM_ARRAY_JOB_ID)\n"
    "  --out BUNDLE_DIR          the shard bundle to write (must not exist yet); merge the\n"
    "                            bundles with `benchdesk history import`. Without --shard:\n"
    "                            the whole run as shard 0/1 (--run-id, else a new id), also\n"
    "                            added to this history; import it on another machine so a\n"
    "                            reviewer there can give verdicts on it\n"
    "  --operator-key FPR        sign the run with this key (default: signing_key of\n"
    "                            .benchdesk/config.yaml): every record carries its\n"
    "                            fingerprint and a run.signed record ends the run\n"
    "                            (docs/formats.md#signed-runs); the key must sign without a\n"
    "                            prompt and the run must not use subprocess isolation (exit 3)\n"
    "\n"
    "The interpreter is BENCHDESK_PYTHON (an absolute path), else `python:` from\n"
    ".benchdesk/config.yaml, else python3 from /usr/bin or /bin; --jobs defaults to\n"
    "`jobs:` there, else the number of CPUs. The summary is written to\n"
    ".benchdesk/runs/<run-id>.json. Ctrl-C cancels: running cases are killed, nothing is\n"
    "left behind, exit status 130.\n";

typedef struct front {
    const bd_cli *cli;
    bool json;
    bool tty;   /* live progress line on stderr */
    bool color; /* on stderr */
    bool line_drawn;
    size_t total, done, passed, failed, running;
    uint64_t t0;
    uv_timer_t tick;
    bool tick_open;
    uv_signal_t sig[3];
    int n_sig;
    int got_signal;
    bd_runner *runner;
    char repair[256]; /* the torn final line the history's next append removed, or "" */
} front;

static void clear_line(front *f)
{
    if (f->line_drawn) {
        fputs("\r\033[K", stderr);
        f->line_drawn = false;
    }
}

static void draw_progress(front *f)
{
    if (!f->tty)
        return;
    double elapsed = (double)(uv_hrtime() - f->t0) / 1e9;
    char eta[32] = "--";
    if (f->done > 0 && f->done < f->total)
        snprintf(eta, sizeof(eta), "%.1fs",
                 elapsed / (double)f->done * (double)(f->total - f->done));
    else if (f->done >= f->total)
        snprintf(eta, sizeof(eta), "0.0s");
    fprintf(
        stderr,
        "\r\033[K%zu/%zu done  %s%zu passed%s  %s%zu failed%s  %zu running  %.1fs elapsed  ETA %s",
        f->done, f->total, f->color ? "\033[32m" : "", f->passed, f->color ? "\033[0m" : "",
        f->color && f->failed ? "\033[31m" : "", f->failed, f->color && f->failed ? "\033[0m" : "",
        f->running, elapsed, eta);
    fflush(stderr);
    f->line_drawn = true;
}

static void case_line(front *f, const bd_run_event *ev)
{
    const bd_score *s = &ev->result->score;
    const char *mode = s->n_failure_modes ? s->failure_modes[0].code : "";
    const char *detail =
        s->n_failure_modes && s->failure_modes[0].detail ? s->failure_modes[0].detail : "";
    const char *on = "", *off = "";
    if (f->color) {
        on = s->passed ? "\033[32m" : "\033[31m";
        off = "\033[0m";
    }
    clear_line(f);
    fprintf(stderr, "[%zu/%zu] %s: %s%s%s %.3f (%lld ms)%s%s%s%s\n", f->done, f->total,
            cli_vis(ev->case_id), on, s->passed ? "pass" : "FAIL", off, s->score,
            (long long)ev->result->wall_ms, mode[0] ? " " : "", cli_vis(mode),
            detail[0] ? ": " : "", cli_vis(detail));
}

static void on_event(const bd_run_event *ev, void *payload)
{
    front *f = payload;
    f->running = ev->running;
    f->done = ev->done;
    if (f->json) {
        cJSON *j = bd_run_event_json(ev);
        if (j && ev->kind == BD_RUN_EV_STARTED && f->repair[0])
            cJSON_AddStringToObject(j, "history_repaired", f->repair);
        if (j) {
            cli_print_json(j);
            cJSON_Delete(j);
        }
    }
    switch (ev->kind) {
    case BD_RUN_EV_STARTED:
        f->total = ev->summary->cases_selected;
        if (!f->json && !f->tty)
            fprintf(stderr, "run %s: %s, %zu case(s), isolation %s, %s start\n",
                    ev->summary->run_id, ev->summary->task_class, f->total,
                    bd_isolation_str(ev->summary->isolation), ev->summary->start);
        draw_progress(f);
        break;
    case BD_RUN_EV_CASE_FINISHED:
        if (ev->result->score.passed)
            f->passed++;
        else
            f->failed++;
        /* Failures always get their own line; passes only when there is no live line. */
        if (!f->json && (!f->tty || !ev->result->score.passed))
            case_line(f, ev);
        draw_progress(f);
        break;
    case BD_RUN_EV_CASE_NOT_RECORDED:
        /* Scored, but its record could not be appended: never shown as finished. */
        if (!f->json) {
            clear_line(f);
            fprintf(stderr, "%s: NOT RECORDED (%s): its score is not in the history\n",
                    cli_vis(ev->case_id), ev->error ? bd_code_str(ev->error->code) : "?");
        }
        draw_progress(f);
        break;
    case BD_RUN_EV_FINISHED:
        clear_line(f);
        if (f->tick_open)
            uv_timer_stop(&f->tick);
        break;
    default:
        draw_progress(f);
        break;
    }
}

static void on_tick(uv_timer_t *t)
{
    draw_progress(t->data);
}

static void on_signal(uv_signal_t *s, int signum)
{
    front *f = s->data;
    if (!f->got_signal)
        f->got_signal = signum;
    bd_runner_cancel(f->runner);
}

/* The cost line, with the cap that applied and, when it stopped the run, the cases not run. */
static void print_cost(const bd_run_summary *s)
{
    char cost[128];
    printf("  %-14s %s%s\n", "cost", bd_run_cost_text(cost, sizeof(cost), s),
           s->has_cost_cap ? " (cost cap)" : "");
    if (s->stopped_cost_cap)
        printf("  %-14s %zu case%s: the cost cap stopped the run%s\n", "not run", s->n_not_run,
               s->n_not_run == 1 ? "" : "s",
               s->cases ? "" : " before any case started; nothing was recorded");
}

static void print_table(const bd_cli *cli, const bd_runner *r)
{
    const bd_run_summary *s = bd_runner_summary(r);
    bool color = cli_color(cli, 1);
    printf("run %s  %s  isolation: %s%s\n", s->run_id, s->task_class,
           bd_isolation_str(s->isolation),
           s->cancelled          ? "  (cancelled)"
           : s->stopped_cost_cap ? "  (stopped by the cost cap)"
                                 : "");
    printf("  %-14s %s%s%s\n", "start", s->start, s->start_why[0] ? ": " : "",
           s->start_why[0] ? cli_vis(s->start_why) : "");
    printf("  %-14s %zu of %zu\n", "cases", s->cases, s->cases_selected);
    if (s->signed_seq)
        printf("  %-14s %s (run.signed record %llu)\n", "signed by", s->operator_fingerprint,
               (unsigned long long)s->signed_seq);
    printf("  %-14s %s%zu%s\n", "passed", color ? "\033[32m" : "", s->passed,
           color ? "\033[0m" : "");
    printf("  %-14s %s%zu%s\n", "failed", color && s->failed ? "\033[31m" : "", s->failed,
           color && s->failed ? "\033[0m" : "");
    if (s->has_mean) {
        printf("  %-14s %.1f%%\n", "pass rate", s->pass_rate * 100.0);
        if (s->has_ci)
            printf("  %-14s %.3f  (95%% BCa interval %.3f .. %.3f)\n", "mean score", s->mean_score,
                   s->ci_lo, s->ci_hi);
        else
            printf("  %-14s %.3f\n", "mean score", s->mean_score);
    } else {
        printf("  %-14s -\n", "mean score");
    }
    if (s->not_recorded)
        printf("  %-14s %zu (scored, but the history append failed: not counted)\n", "not recorded",
               s->not_recorded);
    print_cost(s);
    printf("  %-14s %.1f s\n", "wall time", (double)s->wall_ms / 1000.0);
    if (s->n_failure_modes) {
        printf("  failure modes\n");
        for (size_t i = 0; i < s->n_failure_modes; i++)
            printf("    %-32s %zu\n", cli_vis(s->failure_modes[i].code), s->failure_modes[i].count);
    }
    size_t n = 0;
    const bd_case_result *const *res = bd_runner_results(r, &n);
    /* The id column as wide as the longest failed case's id (ids are ASCII,
     * docs/formats.md): ids are never cut and the scores stay in line. */
    int wc = 0;
    for (size_t i = 0; i < n; i++)
        if (!res[i]->score.passed && (int)strlen(res[i]->case_id) > wc)
            wc = (int)strlen(res[i]->case_id);
    bool header = false;
    for (size_t i = 0; i < n; i++) {
        if (res[i]->score.passed)
            continue;
        if (!header) {
            printf("  failed cases\n");
            header = true;
        }
        const bd_score *sc = &res[i]->score;
        printf("    %-*s  %.3f  %s\n", wc, cli_vis(res[i]->case_id), sc->score,
               sc->n_failure_modes ? cli_vis(sc->failure_modes[0].code) : "(no failure mode)");
    }
    if (s->has_summary_path)
        printf("  %-14s %s\n", "summary", s->summary_path);
    fflush(stdout);
}

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

/* Write the shard bundle's manifest once every case of the shard is recorded (or, when
 * the cost cap stopped it, did not run: the manifest names those). */
static int seal_bundle(const bd_cli *cli, bd_bundle_writer *w, const bd_shard_spec *sp,
                       const bd_task_class *tc, const bd_runner *r, const bd_run_plan *plan,
                       const bd_bench *bench)
{
    bd_err err = BD_ERR_INIT;
    if (bd_bundle_seal(w, sp, tc, bd_runner_summary(r), (const char *const *)plan->shard_ids,
                       plan->n_shard_ids, bench->root, &err) != 0)
        return cli_fail(cli, &err);
    if (!cli->json)
        printf("  %-14s %s (shard %u of %u, %zu case%s of the run's %zu)\n", "bundle", w->dir,
               sp->k, sp->n, plan->n_shard_ids, plan->n_shard_ids == 1 ? "" : "s", plan->run_cases);
    return 0;
}

static void close_noop(uv_handle_t *h)
{
    (void)h;
}

/* The command line of `benchdesk run`. */
typedef struct run_args {
    const char *tc_name;
    const char **case_ids; /* owned (free it; the strings are argv's, or the task class's) */
    size_t n_cases;
    int jobs;
    bool drafts, allow_weaker;
    bool stale;        /* --stale: case_ids are filled from the history (select_stale) */
    const char *junit; /* --junit FILE, or NULL */
    const char *isolation;
    bool start_set;    /* --start given */
    bool has_cost_cap; /* --cost-cap given */
    double cost_cap;
    bd_start_mode start;
    const char *shard_arg, *run_id, *out_dir;
    const char *operator_key; /* --operator-key, or NULL */
    bd_shard_spec spec;       /* set when shard_arg */
    bool out_local;           /* --out without --shard: shard 0/1, then imported here too */
    char new_id[BD_RUN_ID_MAX];
} run_args;

/* The value of --case, --jobs, --isolation or --start into *a. Returns 0 or the usage
 * status. */
static int take_value(bd_cli *cli, run_args *a, const char *opt, const char *v)
{
    if (strcmp(opt, "--cost-cap") == 0) {
        if (bd_cost_cap_parse(v, &a->cost_cap) != 0)
            return cli_usage(cli, "run",
                             "--cost-cap wants a number of US dollars from 0 to 1000000000 "
                             "(digits and one '.', e.g. 2.50), not '%s'",
                             v);
        a->has_cost_cap = true;
    } else if (strcmp(opt, "--start") == 0) {
        if (bd_start_mode_parse(v, &a->start) != 0)
            return cli_usage(cli, "run", "--start wants warm or cold, not '%s'", v);
        a->start_set = true;
    } else if (opt[2] == 'c') {
        a->case_ids[a->n_cases++] = v;
    } else if (opt[2] == 'j') {
        char *end = NULL;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || !end || *end || n < 1 || n > 1024)
            return cli_usage(cli, "run", "--jobs wants a number from 1 to 1024, not '%s'", v);
        a->jobs = (int)n;
    } else {
        a->isolation = v;
    }
    return 0;
}

/* Parse argv (after the common options) into *a. Returns 0, or the exit status of the
 * usage error or failure it reported; a->case_ids is the caller's to free either way. */
static int parse_args(bd_cli *cli, int argc, char **argv, run_args *a)
{
    a->isolation = "auto";
    a->case_ids = calloc((size_t)argc + 1, sizeof(char *));
    if (!a->case_ids) {
        bd_err err = BD_ERR_INIT;
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        return cli_fail(cli, &err);
    }
    int status;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--shard") == 0 || strcmp(o, "--run-id") == 0 || strcmp(o, "--out") == 0 ||
            strcmp(o, "--junit") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "run", "%s needs a value", o);
            const char **slot = o[2] == 's'   ? &a->shard_arg
                                : o[2] == 'r' ? &a->run_id
                                : o[2] == 'j' ? &a->junit
                                              : &a->out_dir;
            *slot = argv[++i];
        } else if (strcmp(o, "--case") == 0 || strcmp(o, "--jobs") == 0 ||
                   strcmp(o, "--isolation") == 0 || strcmp(o, "--start") == 0 ||
                   strcmp(o, "--cost-cap") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "run", "%s needs a value", o);
            if ((status = take_value(cli, a, o, argv[++i])) != 0)
                return status;
        } else if (strcmp(o, "--operator-key") == 0) {
            if (i + 1 >= argc)
                return cli_usage(cli, "run", "%s needs a value", o);
            a->operator_key = argv[++i];
        } else if (strcmp(o, "--drafts") == 0) {
            a->drafts = true;
        } else if (strcmp(o, "--stale") == 0) {
            a->stale = true;
        } else if (strcmp(o, "--allow-weaker-isolation") == 0) {
            a->allow_weaker = true;
        } else if (o[0] == '-') {
            return cli_usage(cli, "run", "unknown option '%s'", o);
        } else if (!a->tc_name) {
            a->tc_name = o;
        } else {
            return cli_usage(cli, "run", "one task class at a time ('%s' is extra)", o);
        }
    }
    if (!a->tc_name)
        return cli_usage(cli, "run", "which task class? (benchdesk list shows them)");
    if (a->stale && (a->n_cases || a->shard_arg))
        return cli_usage(cli, "run",
                         "--stale picks the cases itself from this machine's history: not with "
                         "--case or --shard");
    if (!a->shard_arg && a->out_dir) {
        /* any run as a bundle another machine imports (docs/provenance.md#verdicts) */
        a->shard_arg = "0/1";
        a->out_local = true;
        if (!a->run_id) {
            bd_run_id_new(a->new_id);
            a->run_id = a->new_id;
        }
    }
    if (!a->shard_arg && a->run_id)
        return cli_usage(cli, "run", "--run-id belongs to a run that writes a bundle: add --out");
    if (a->shard_arg) {
        if (!a->out_dir)
            return cli_usage(cli, "run", "a shard run writes a bundle: give --out BUNDLE_DIR");
        bd_err err = BD_ERR_INIT;
        if (bd_shard_spec_parse(&a->spec, a->shard_arg, a->run_id, env_lookup, &err) != 0)
            return cli_fail(cli, &err);
    }
    return 0;
}

/* A torn final line a crash left in the history is removed by the next append, and
 * said (docs/history.md): remove it now, under the history's lock, so the warning
 * comes before the run rather than being lost inside the runner (kept in f->repair for
 * the JSON started event). A failure here is left to the startup gate, which reports
 * it. */
static void repair_history(const bd_bench *bench, front *f)
{
    bd_history *h = NULL;
    bd_err rerr = BD_ERR_INIT;
    if (bd_history_open(&h, bench->root, BD_HISTORY_READ, &rerr) == 0 &&
        bd_history_repair_tail(h, &rerr) == 0 && bd_history_repair_note(h)) {
        snprintf(f->repair, sizeof(f->repair), "%s", bd_history_repair_note(h));
        fprintf(stderr, "benchdesk: warning: %s\n", cli_vis(f->repair));
    }
    bd_history_free(h);
}

/* The request for bd_run_prepare; it borrows from `a`, `bench`, `tc` and `bundle`. */
static bd_run_request build_request(const run_args *a, const bd_bench *bench,
                                    const bd_task_class *tc, bd_bundle_writer *bundle)
{
    bd_run_request req = {.bench = bench,
                          .tc = tc,
                          .case_ids = (const char *const *)a->case_ids,
                          .n_case_ids = a->n_cases,
                          .isolation = a->isolation,
                          .allow_weaker = a->allow_weaker,
                          .jobs = a->jobs,
                          .has_cost_cap = a->has_cost_cap,
                          .cost_cap_usd = a->cost_cap,
                          .gate = {.drafts = a->drafts, .drafts_hint = "run with --drafts"},
                          .bundle = a->shard_arg ? bundle : NULL,
                          .bundle_dir = a->out_dir,
                          .operator_key = a->operator_key};
    req.gate.shard = a->shard_arg ? &a->spec : NULL;
    return req;
}

/* Say how many unsigned cases the default selection left out (not with --json). */
static void say_skipped(const bd_cli *cli, const bd_run_plan *plan, const bd_task_class *tc)
{
    size_t skipped = plan->skipped_draft + plan->skipped_awaiting;
    if (skipped && !cli->json)
        fprintf(stderr,
                "benchdesk: skipping %zu unsigned case%s of %s (%zu draft%s, %zu awaiting "
                "review); run with --drafts to include them (their records say "
                "provenance_verified: false)\n",
                skipped, skipped == 1 ? "" : "s", tc->name, plan->skipped_draft,
                plan->skipped_draft == 1 ? "" : "s", plan->skipped_awaiting);
    bd_err note = BD_ERR_INIT;
    if (bd_run_plan_note(plan, tc->name, &note))
        cli_warn(cli_err_text(&note));
}

/* Run `runner` on `loop` (initialised by the caller) to the end: the signals that cancel
 * it, the progress tick on a terminal. The handles opened are recorded in *f for
 * close_loop. Returns 0, or the status of the failure it reported. */
static int drive(bd_cli *cli, front *f, bd_runner *runner, uv_loop_t *loop)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        uv_signal_init(loop, &f->sig[i]);
        f->sig[i].data = f;
        uv_signal_start(&f->sig[i], on_signal, sigs[i]);
        f->n_sig++;
    }
    if (f->tty) {
        uv_timer_init(loop, &f->tick);
        f->tick.data = f;
        f->tick_open = true;
        uv_timer_start(&f->tick, on_tick, 250, 250);
    }
    f->t0 = uv_hrtime();
    bd_err err = BD_ERR_INIT;
    if (bd_runner_start(runner, loop, &err) != 0)
        return cli_fail(cli, &err);
    while (!bd_runner_finished(runner))
        uv_run(loop, UV_RUN_ONCE);
    return 0;
}

/* Close the handles drive opened, free the runner (which drains the loop if the run is
 * still going; *runner becomes NULL) and close the loop. */
static void close_loop(uv_loop_t *loop, front *f, bd_runner **runner)
{
    for (int i = 0; i < f->n_sig; i++)
        uv_close((uv_handle_t *)&f->sig[i], close_noop);
    if (f->tick_open)
        uv_close((uv_handle_t *)&f->tick, close_noop);
    bd_runner_free(*runner);
    *runner = NULL;
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
}

/* `run --out` without --shard: the run's bundle goes into this machine's history too. */
static int import_here(bd_cli *cli, const run_args *a, const bd_bench *bench)
{
    bd_import_result res;
    bd_err err = BD_ERR_INIT;
    const char *dirs[1] = {a->out_dir};
    memset(&res, 0, sizeof(res));
    bd_sign_key op;
    bool signs = false;
    bd_import_opts o = {0};
    if (bd_run_operator_for_import(&op, &signs, bench->root, a->operator_key, &err) != 0)
        return cli_fail(cli, &err);
    o.operator_key = signs ? &op : NULL;
    if (bd_import_run(&res, bench, dirs, 1, &o, &err) != 0) {
        bd_import_result_release(&res);
        return cli_fail(cli, &err);
    }
    if (!cli->json)
        printf("  %-14s %llu records of run %s added to this history\n", "history",
               (unsigned long long)res.appended, res.run_id);
    bd_import_result_release(&res);
    return 0;
}

/* The exit status once the run ended: the runner's fatal error, 130 when a signal
 * cancelled it, else a shard run's sealed bundle (after the summary table). */
static int finish(bd_cli *cli, const front *f, const bd_runner *runner, run_args *a,
                  bd_bundle_writer *bundle, const bd_task_class *tc, const bd_run_plan *plan,
                  const bd_bench *bench)
{
    if (!cli->json)
        print_table(cli, runner);
    const bd_err *fatal = bd_runner_error(runner);
    if (fatal)
        return cli_fail(cli, fatal);
    if (f->got_signal)
        return 130;
    if (!a->shard_arg)
        return 0;
    int st = seal_bundle(cli, bundle, &a->spec, tc, runner, plan, bench);
    return st == 0 && a->out_local ? import_here(cli, a, bench) : st;
}

/* --stale: the cases of `tc` whose newest score is stale or missing, from the verified
 * history (stale.h), into a->case_ids. Returns 0 (a->n_cases may be 0: nothing to score),
 * or the status of the error it printed. */
static int select_stale(bd_cli *cli, run_args *a, const bd_bench *bench, const bd_task_class *tc)
{
    bd_err err = BD_ERR_INIT;
    bd_history *h = NULL;
    const char **ids = NULL;
    size_t n = 0, n_unsigned = 0;
    int rc = bd_history_open(&h, bench->root, BD_HISTORY_READ, &err);
    if (rc == 0)
        rc = bd_stale_select(&ids, &n, &n_unsigned, h, tc, !a->drafts, &err);
    bd_history_free(h);
    if (rc != 0)
        return cli_fail(cli, &err);
    free(a->case_ids);
    a->case_ids = ids;
    a->n_cases = n;
    if (n_unsigned && !cli->json)
        fprintf(stderr,
                "benchdesk: --stale: leaving out %zu unsigned case%s that need%s a score; run "
                "with --drafts to include them\n",
                n_unsigned, n_unsigned == 1 ? "" : "s", n_unsigned == 1 ? "s" : "");
    if (n == 0 && cli->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "event", "run.nothing_stale");
        cJSON_AddStringToObject(j, "task_class", tc->name);
        cli_print_json(j);
        cJSON_Delete(j);
    } else if (n == 0) {
        printf("nothing to score: every case of %s has a current score (none is stale or "
               "unscored)\n",
               tc->name);
    } else if (!cli->json) {
        fprintf(stderr,
                "benchdesk: --stale: scoring %zu case%s of %s whose newest score is stale "
                "or missing\n",
                n, n == 1 ? "" : "s", tc->name);
    }
    return 0;
}

/* --junit FILE: the run just done as JUnit XML, from the verified chain it was recorded in
 * (the history, or a shard's bundle). Returns 0 or the status of the error it printed. */
static int write_junit(bd_cli *cli, const run_args *a, const bd_runner *runner,
                       const bd_bench *bench)
{
    bd_err err = BD_ERR_INIT;
    bd_history *h = NULL;
    char *records = a->shard_arg ? bd_path_join(a->out_dir, "records") : NULL;
    int rc = records ? bd_history_open_dir(&h, records, BD_HISTORY_READ, &err)
                     : bd_history_open(&h, bench->root, BD_HISTORY_READ, &err);
    free(records);
    const bd_run_summary *sum = bd_runner_summary(runner);
    int status =
        rc == 0 ? cli_report_write(cli, bench, h, sum->run_id, sum->start[0] ? sum->start : NULL,
                                   BD_REPORT_JUNIT, a->junit)
                : cli_fail(cli, &err);
    bd_history_free(h);
    if (status == 0 && !cli->json)
        printf("  %-14s %s\n", "junit", a->junit);
    return status;
}

int cmd_run(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(help);
    run_args a = {0};
    bd_bench *bench = NULL;
    bd_task_class *tc = NULL;
    bd_runner *runner = NULL;
    bd_err err = BD_ERR_INIT;
    bd_run_plan plan = {0};
    bd_bundle_writer bundle = {0};
    uv_loop_t loop;
    bool loop_ok = false;
    front f;
    memset(&f, 0, sizeof(f));

    int status = parse_args(cli, argc, argv, &a);
    if (status != 0 || (status = cli_open_bench(cli, &bench)) != 0)
        goto out;
    if (bd_task_class_load(&tc, bench, a.tc_name, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (!a.shard_arg) /* shard runs leave the local history alone */
        repair_history(bench, &f);
    if (a.stale && ((status = select_stale(cli, &a, bench, tc)) != 0 || a.n_cases == 0))
        goto out;
    /* Everything before the first spawn, as the TUI does it: the interpreter, the
     * isolation class, the default --jobs (.benchdesk/config.yaml), then startup integrity
     * (docs/formats.md#digests: the history chain, every pin and signature) and what gets run
     * (docs/runner.md). The runner records each finished case (to the history, or a shard's
     * bundle). */
    bd_run_request req = build_request(&a, bench, tc, &bundle);
    if (bd_run_prepare(&runner, &plan, &req, &err) != 0) {
        status = cli_fail(cli, &err);
        goto out;
    }
    if (a.start_set)
        bd_runner_set_start(runner, a.start);
    f.cli = cli;
    f.json = cli->json;
    f.tty = isatty(2) != 0;
    f.color = f.tty && cli_color(cli, 2);
    f.runner = runner;
    if (bd_runner_subscribe(runner, on_event, &f) != 0) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        status = cli_fail(cli, &err);
        goto out;
    }
    say_skipped(cli, &plan, tc);
    if (uv_loop_init(&loop) != 0) {
        bd_err_set(&err, BD_E_NOMEM, NULL, 0, 0, "cannot create an event loop");
        status = cli_fail(cli, &err);
        goto out;
    }
    loop_ok = true;
    if ((status = drive(cli, &f, runner, &loop)) == 0)
        status = finish(cli, &f, runner, &a, &bundle, tc, &plan, bench);
    if (status == 0 && a.junit)
        status = write_junit(cli, &a, runner, bench);
out:
    if (loop_ok)
        close_loop(&loop, &f, &runner);
    bd_runner_free(runner);
    bd_bundle_writer_release(&bundle);
    bd_run_plan_release(&plan);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    free(a.case_ids);
    return status;
}
