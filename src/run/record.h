/*
 * record.h — recording a cassette from the live system under test (docs/recording.md).
 *
 * `benchdesk record TC CASE_ID` and the TUI's case view (`R`) share these calls:
 *
 *   bd_record_check     before anything runs: a command SUT, a task class whose pin
 *                       holds and that two people signed (its registration names the
 *                       SUT's argv and the secrets it may see), every sut.env_pass
 *                       variable set, the case loads;
 *   bd_record_network_gate     whether the SUT gets the host network (--unsafe-network,
 *                       or the subprocess class, which always has it) and whether that
 *                       is refused: in CI, without a terminal, or under subprocess
 *                       without --unsafe-network;
 *   bd_record_audit     the host network: the audit event, appended before the SUT runs;
 *   bd_record_capture   the SUT on the case exactly as a run runs it (the runner in its
 *                       record mode: same chokepoint, jail, limits, scrubbed environment
 *                       plus only the env_pass variables); nothing is written;
 *   bd_record_diff      what the take changes (old and new cassette, line by line), for
 *                       the front end to show before it asks;
 *   bd_record_write_pin cassette.json, then cassette_digest in case.yaml (each atomic),
 *                       then the case's new pin (recording is as deliberate as pinning).
 *
 * The new pin supersedes the case's signatures: two people sign it again
 * (bd_record_next_steps says so, the pin report says whose). Nothing here prints or asks:
 * confirmation is the front end's, with bd_record_network_gate deciding whether it may
 * even ask; a front end never replaces a cassette without showing the diff and asking
 * (a terminal), or an explicit yes (--yes).
 */
#ifndef BD_RECORD_H
#define BD_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "digest.h"
#include "err.h"
#include "exec.h"
#include "linediff.h"
#include "pin.h"
#include "provenance.h"
#include "score.h"

typedef struct bd_record_opts {
    bd_isolation isolation; /* the class chosen with bd_isolation_choose */
    const char *python;     /* absolute interpreter (the runner needs it); required */
    const char *helper;     /* exec helper binary; NULL = this executable */
    const char *tmp_root;   /* NULL = $TMPDIR or /tmp */
    bool host_network;      /* bd_record_network_gate said so, and it was consented to */
} bd_record_opts;

/* One recording: what cassette.json holds now and what the SUT printed. */
typedef struct bd_record_take {
    char *old_text; /* cassette.json before (owned), NULL when there was none */
    size_t old_len;
    char *new_text; /* the SUT's stdout: exactly the bytes bd_record_write writes (owned) */
    size_t new_len;
    char old_digest[BD_DIGEST_BUF]; /* "" when there was no cassette */
    char new_digest[BD_DIGEST_BUF];
    bool changed;    /* the bytes differ */
    int64_t wall_ms; /* the SUT's whole time */
    bd_isolation isolation;
} bd_record_take;

void bd_record_take_release(bd_record_take *t);

/* Preflight for recording case `case_id` of `tc` (nothing runs, nothing is written):
 * record.not_command when the SUT is a cassette; the task-class pin (its integrity code)
 * and its two signatures (provenance.missing, exit 3, when not signed by two people; its
 * bad-signature code when a signature is bad) using `prov` (NULL: one is made and freed);
 * env.variable_missing for the first sut.env_pass variable not set in this process's
 * environment; bench.unknown_case / the case's schema code when case.yaml does not load.
 * Returns 0 or -1 with `err`. */
int bd_record_check(const bd_bench *bench, const bd_task_class *tc, const char *case_id,
                    bd_prov_ctx *prov, bd_err *err);

/* May the SUT get the host network? Refused (record.network_refused, exit 3) when the
 * environment variable CI is set (whatever its value) or when `stdin_is_terminal` is
 * false: the operator must be there to confirm. Returns 0 (the front end then asks) or
 * -1 with `err`. */
int bd_record_network_policy(bool stdin_is_terminal, bd_err *err);

/* The network gate of a recording, the one rule every front end applies (after the
 * isolation class `iso` is chosen, before anything runs). `unsafe_network`: the operator
 * asked for the host network (--unsafe-network, the TUI's N). The SUT gets the host
 * network when it was asked for, and always under BD_ISO_SUBPROCESS, which has no
 * network namespace. Refused (record.network_refused, exit 3):
 *   - under subprocess without `unsafe_network`: the host network is never given
 *     without the operator asking for it;
 *   - whenever the SUT would get the host network, bd_record_network_policy's refusals
 *     (CI set, stdin not a terminal).
 * Returns 0 with *host_network (false: offline, nothing to ask; true: the front end asks
 * with bd_record_network_question and, on yes, appends bd_record_audit before the SUT
 * starts), or -1 with `err`. */
int bd_record_network_gate(bd_isolation iso, bool unsafe_network, bool stdin_is_terminal,
                           bool *host_network, bd_err *err);

/* The question a front end asks before a recording with the host network under `iso`
 * (one line, no newline; written into buf). */
void bd_record_network_question(char *buf, size_t cap, const bd_task_class *tc, const char *case_id,
                                bd_isolation iso);

/* Append the audit event "record.unsafe_network" for case `case_id` of `tc` to the
 * bench's history: who (the OS user and uid; the configured signing key as the
 * operator fingerprint when one is set), when, the task class, the case, the isolation
 * class `iso` the SUT runs under and the SUT's argv. Called before the SUT starts, so a
 * recording that crashes is still on record. Returns 0 with *seq_out (may be NULL) and,
 * in repair_out (may be NULL), what the append repaired — a torn final line a crash left,
 * for the front end to say (docs/history.md) — or ""; or -1 with the history's error. */
int bd_record_audit(const bd_bench *bench, const bd_task_class *tc, const char *case_id,
                    bd_isolation iso, uint64_t *seq_out, char repair_out[256], bd_err *err);

/* Run the SUT on the case once (see above) and fill *out (release with
 * bd_record_take_release). Errors: the runner's (isolation.unavailable, exec.not_allowed,
 * env.variable_missing, io.error, ...), record.sut_failed (exit 4) when the SUT timed
 * out, exited non-zero, was killed or printed something that is not one JSON value —
 * with the harness failure mode and its detail in the message. Returns 0 or -1. */
int bd_record_capture(bd_record_take *out, const bd_bench *bench, const bd_task_class *tc,
                      const char *case_id, const bd_record_opts *opts, bd_err *err);

/* Write the take: cassette.json (atomically, 0644), then cassette_digest in case.yaml
 * (edited in place byte for byte except that value, atomically). When the take did not
 * change the bytes, only case.yaml is brought in line. Returns 0 or -1 (io.error,
 * case.schema_invalid). */
int bd_record_write(const bd_task_class *tc, const char *case_id, const bd_record_take *t,
                    bd_err *err);

/* bd_record_write, then the case's new pin (repin.h: bd_repin of the one case, with `prov`
 * or a context made when a legacy signature block needs one). *rep says whose signatures
 * the pin superseded (bd_pin_report_release). Returns 0 or -1 (a failed pin leaves the
 * new cassette written and the case off its pin: `benchdesk pin` then). */
int bd_record_write_pin(bd_pin_report *rep, const bd_bench *bench, const bd_task_class *tc,
                        const char *case_id, const bd_record_take *t, bd_prov_ctx *prov,
                        bd_err *err);

/* `text` as pretty JSON (indented with spaces) when it is one JSON value, else a copy of
 * its bytes; "" for NULL.
 * New string (caller frees), NULL when out of memory. */
char *bd_record_pretty(const char *text, size_t len);

/* The line diff of the take's old and new cassette (each bd_record_pretty'd, returned in
 * *old_pretty / *new_pretty, which the lines point into: free them after *out). Returns 0
 * or -1 (env.out_of_memory). */
int bd_record_diff(bd_diff_line **out, size_t *n, char **old_pretty, char **new_pretty,
                   const bd_record_take *t, bd_err *err);

/* What the curator does next (into `out`, code BD_OK: a notice, not an error): two
 * signatures, the signing as its action (err.h) for the front end to word. */
void bd_record_next_steps(bd_err *out, const bd_task_class *tc, const char *case_id);

#endif
