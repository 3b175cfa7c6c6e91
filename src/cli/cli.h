/*
 * cli.h — shared plumbing of the headless commands (docs/benchdesk.1). The commands are thin:
 * parse arguments, call the core, print. Errors are one line on stderr,
 * "benchdesk: <code>: <message>", or {"error":{"code":...,"message":...}} on stdout
 * with --json; the exit status comes from the error table (err.h).
 */
#ifndef BD_CLI_H
#define BD_CLI_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "err.h"
#include "history.h"
#include "report.h"

typedef struct bd_cli {
    const char *dir; /* -C DIR, or NULL */
    const char *theme;
    bool json;     /* --json given to the command */
    bool no_color; /* NO_COLOR set, or not a terminal */
} bd_cli;

/* One command: argv[0] is the command's own name. Returns the process exit status. */
typedef int (*bd_cmd_fn)(bd_cli *cli, int argc, char **argv);

/* Print `err` as the one-line error (or JSON) and return its exit status. The message
 * is shown through the untrusted-text sanitizer (it may quote bench or rubric text). */
int cli_fail(const bd_cli *cli, const bd_err *err);

/* Report bad usage (usage.bad_args, exit 2) with a printf message; returns 2. */
int cli_usage(const bd_cli *cli, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Find and open the bench from -C or the working directory. On failure prints the
 * error and returns its exit status (> 0); returns 0 and sets *out on success. */
int cli_open_bench(const bd_cli *cli, bd_bench **out);

/* Print one error line to stderr, "benchdesk: <code>: <msg>", with `msg` made visible
 * (text.h): the only way a command writes an error line without returning. */
void cli_err_line(bd_code code, const char *msg);

/* The message of `err` with the command line's words for its action spliced in (the
 * one-line text cli_fail prints). Valid until 16 more cli_vis/cli_err_text calls. */
const char *cli_err_text(const bd_err *err);

/* The command line's words for each action, indexed by bd_err_action (common.c). */
extern const char *const cli_action_words[BD_ACT__COUNT];

/* "benchdesk: warning: <msg>" on stderr, made visible (nothing when msg is NULL). */
void cli_warn(const char *msg);

/* `s` made safe for a terminal (text.h, bd_text_vis), for printf arguments that hold
 * text a bench, a rubric or a SUT wrote. The result is owned by a ring of 16 buffers: it
 * stays valid until 16 further calls. Never NULL ("" when `s` is NULL or out of memory). */
const char *cli_vis(const char *s);

/* Print `json` compactly on one line to stdout, with every control, DEL, C1 and bidi or
 * format character inside its strings escaped as \u (text.h, bd_text_json_safe). */
void cli_print_json(const cJSON *json);

/* `json` printed compactly and made terminal-safe as cli_print_json does, for output
 * streamed in pieces. Returns a new string the caller frees, or NULL (out of memory). */
char *cli_json_text(const cJSON *json);

/* Scan argv for the options every command shares: --json, --help/-h. Removes --json
 * from argv (setting cli->json) and returns true when help was asked for. Other
 * arguments keep their order; *argc is updated. */
bool cli_common_opts(bd_cli *cli, int *argc, char **argv);

/* Print `help` (the command's usage text) to stdout and return 0. */
int cli_help(const char *help);

/* True when colour may be used on `fd`. */
bool cli_color(const bd_cli *cli, int fd);

/* The commands. */
int cmd_list(bd_cli *cli, int argc, char **argv);
int cmd_verify(bd_cli *cli, int argc, char **argv);
int cmd_digest(bd_cli *cli, int argc, char **argv);
int cmd_pin(bd_cli *cli, int argc, char **argv);
int cmd_migrate(bd_cli *cli, int argc, char **argv);
int cmd_case(bd_cli *cli, int argc, char **argv);
int cmd_run(bd_cli *cli, int argc, char **argv);
int cmd_record(bd_cli *cli, int argc, char **argv);
int cmd_history(bd_cli *cli, int argc, char **argv);
/* `history import` (cmd_import.c); argv[0] is "import". */
int cmd_history_import(bd_cli *cli, int argc, char **argv);
int cmd_anchor(bd_cli *cli, int argc, char **argv);
int cmd_recommend(bd_cli *cli, int argc, char **argv);
int cmd_promote(bd_cli *cli, int argc, char **argv);
int cmd_sign(bd_cli *cli, int argc, char **argv);
int cmd_signer(bd_cli *cli, int argc, char **argv);
int cmd_status(bd_cli *cli, int argc, char **argv);
int cmd_stage(bd_cli *cli, int argc, char **argv);
int cmd_commit(bd_cli *cli, int argc, char **argv);
int cmd_compare(bd_cli *cli, int argc, char **argv);
int cmd_report(bd_cli *cli, int argc, char **argv);

/* Write the report of run `run_id` (NULL: the latest full run of each task class) of the
 * verified chain `h`, with the verdicts of `bench` beside its records, in format `fmt` to
 * `path` (atomically), or to stdout when `path` is NULL (cmd_report.c; `run --junit` uses
 * it too, with `start_mode`, how the run just done started its rubrics; NULL elsewhere:
 * the history does not record it). Returns 0, or the exit status of the error it printed. */
int cli_report_write(const bd_cli *cli, const bd_bench *bench, bd_history *h, const char *run_id,
                     const char *start_mode, bd_report_format fmt, const char *path);
int cmd_verdict(bd_cli *cli, int argc, char **argv);
int cmd_review(bd_cli *cli, int argc, char **argv);
int cmd_calibrate(bd_cli *cli, int argc, char **argv);

/* verify's check of every verdict file (cmd_verdict.c): bad files are failures (counted
 * into *failed, the first sets *status), untrusted ones and those whose subject is not in
 * this history are listed; JSON under root's "verdicts". `prov`: verify's context.
 * Returns 0, or -1 when the check could not be made (reported, counted as a failure). */
struct bd_prov_ctx;
struct bd_history_log_opts;
/* `history log --verdict V | --unreviewed` (cmd_verdict.c): checks the verdict files
 * (signatures, and their subjects in a verified walk) and puts a filter in front of
 * o->keep: records with a counting verdict V, or failed score records without a counting
 * verdict. *state (new; cli_log_verdicts_close) holds what the filter reads. Returns 0, or
 * the exit status after printing the error. */
int cli_log_verdicts_open(void **state, bd_cli *cli, const bd_bench *bench, const char *verdict,
                          bool unreviewed, struct bd_history_log_opts *o);
void cli_log_verdicts_close(void *state);
int cli_verify_verdicts(bd_cli *cli, const bd_bench *bench, struct bd_prov_ctx *prov, cJSON *root,
                        size_t *failed, int *status);

/* `history log --trend --task-class TC` (cmd_compare.c): the mean score over the last
 * full runs as a table, or JSON. Returns the exit status. */
int cli_history_trend(bd_cli *cli, const bd_bench *bench, const char *task_class);

#endif
