/*
 * err.h — the one table of stable error codes, and the caller-owned error struct.
 *
 * Every failure a user can cause has a code here. The code string is stable (scripts
 * match on it); the exit status is the one the CLI returns for it (docs/benchdesk.1):
 *   1 integrity/verification, 2 bad usage or invalid input, 3 refused by policy,
 *   4 environment or I/O.
 *
 * Convention (libgit2-style): functions return 0 on success or -1 on failure and fill a
 * caller-owned bd_err. A NULL bd_err is allowed and means "don't care".
 */
#ifndef BD_ERR_H
#define BD_ERR_H

#include <stddef.h>

/*      enum name                    code string                   exit */
#define BD_ERROR_CODES(X)                                                                          \
    X(BD_OK, "ok", 0)                                                                              \
    X(BD_E_USAGE, "usage.bad_args", 2)                                                             \
    X(BD_E_UNKNOWN_COMMAND, "usage.unknown_command", 2)                                            \
    X(BD_E_BENCH_NOT_FOUND, "bench.not_found", 2)                                                  \
    X(BD_E_UNKNOWN_TASK_CLASS, "bench.unknown_task_class", 2)                                      \
    X(BD_E_UNKNOWN_CASE, "bench.unknown_case", 2)                                                  \
    X(BD_E_YAML_SYNTAX, "yaml.syntax", 2)                                                          \
    X(BD_E_YAML_TOO_LARGE, "yaml.too_large", 2)                                                    \
    X(BD_E_YAML_TOO_DEEP, "yaml.too_deep", 2)                                                      \
    X(BD_E_YAML_ALIAS, "yaml.alias_refused", 2)                                                    \
    X(BD_E_YAML_DUPLICATE_KEY, "yaml.duplicate_key", 2)                                            \
    X(BD_E_YAML_ENCODING, "yaml.not_utf8", 2)                                                      \
    X(BD_E_CASE_SCHEMA, "case.schema_invalid", 2)                                                  \
    X(BD_E_REGISTRATION_SCHEMA, "registration.schema_invalid", 2)                                  \
    X(BD_E_DIGESTS_SCHEMA, "digests.schema_invalid", 2)                                            \
    X(BD_E_SIGNERS_SCHEMA, "signers.schema_invalid", 2)                                            \
    X(BD_E_CONFIG_SCHEMA, "config.schema_invalid", 2)                                              \
    X(BD_E_BAD_ID, "case.bad_id", 2)                                                               \
    X(BD_E_CASE_EXISTS, "case.exists", 2)                                                          \
    X(BD_E_CASE_LINT, "case.lint", 1)                                                              \
    X(BD_E_UNSUPPORTED_ENTRY, "case.unsupported_entry", 1)                                         \
    X(BD_E_DIGEST_MISMATCH, "case.digest_mismatch", 1)                                             \
    X(BD_E_DIGEST_MISSING, "case.digest_missing", 1)                                               \
    X(BD_E_PIN_ORPHAN, "case.pin_orphaned", 1)                                                     \
    X(BD_E_LEFTOVER_TEMP, "case.leftover_temp", 1)                                                 \
    X(BD_E_CASE_ID_MISMATCH, "case.id_mismatch", 1)                                                \
    X(BD_E_RUBRIC_DIGEST_MISMATCH, "rubric.digest_mismatch", 1)                                    \
    X(BD_E_TC_DIGEST_MISMATCH, "task_class.digest_mismatch", 1)                                    \
    X(BD_E_TC_DIGEST_MISSING, "task_class.digest_missing", 1)                                      \
    X(BD_E_FORMAT_V1, "bench.format_v1", 2)                                                        \
    X(BD_E_PROVENANCE_SCHEMA, "provenance.schema_invalid", 2)                                      \
    X(BD_E_RUBRIC_MISSING, "rubric.missing", 1)                                                    \
    X(BD_E_CASSETTE_DIGEST_MISMATCH, "cassette.digest_mismatch", 1)                                \
    X(BD_E_CASSETTE_MISSING, "cassette.missing", 1)                                                \
    X(BD_E_CHAIN_TAMPERED, "chain.tampered", 1)                                                    \
    X(BD_E_ANCHOR_MISMATCH, "anchor.mismatch", 1)                                                  \
    X(BD_E_PROVENANCE_MISSING, "provenance.missing", 3)                                            \
    X(BD_E_PROVENANCE_BAD_SIGNATURE, "provenance.bad_signature", 1)                                \
    X(BD_E_PROVENANCE_UNTRUSTED, "provenance.untrusted_signer", 1)                                 \
    X(BD_E_PROVENANCE_SAME_SIGNER, "provenance.same_signer", 1)                                    \
    X(BD_E_PROVENANCE_STALE, "provenance.stale_digest", 1)                                         \
    X(BD_E_PROVENANCE_SIGNED_ALREADY, "provenance.signature_exists", 3)                            \
    X(BD_E_PROMOTION_REQUIRES_HUMAN, "promotion.requires_human", 3)                                \
    X(BD_E_ISOLATION_UNAVAILABLE, "isolation.unavailable", 3)                                      \
    X(BD_E_SCORE_INVALID, "score.invalid", 2)                                                      \
    X(BD_E_INTERPRETER, "env.interpreter_missing", 4)                                              \
    X(BD_E_SPAWN, "env.spawn_failed", 4)                                                           \
    X(BD_E_EXEC_REFUSED, "exec.not_allowed", 4)                                                    \
    X(BD_E_RUN_CANCELLED, "run.cancelled", 4)                                                      \
    X(BD_E_IO, "io.error", 4)                                                                      \
    X(BD_E_NOMEM, "env.out_of_memory", 4)                                                          \
    X(BD_E_HISTORY_RECORD_INVALID, "history.record_invalid", 2)                                    \
    X(BD_E_HISTORY_NEWER, "history.newer_version", 4)                                              \
    X(BD_E_ANCHOR_BAD_SIGNATURE, "anchor.bad_signature", 1)                                        \
    X(BD_E_ANCHOR_UNTRUSTED, "anchor.untrusted_signer", 1)                                         \
    X(BD_E_PROVENANCE_KEY_EXPIRED, "provenance.key_expired", 1)                                    \
    X(BD_E_PROVENANCE_KEY_REVOKED, "provenance.key_revoked", 1)                                    \
    X(BD_E_GPG, "gpg.error", 4)                                                                    \
    X(BD_E_GPG_UNAVAILABLE, "gpg.unavailable", 4)                                                  \
    X(BD_E_GPG_KEY_NOT_FOUND, "gpg.key_not_found", 2)                                              \
    X(BD_E_GPG_SIGN_FAILED, "gpg.sign_failed", 4)                                                  \
    X(BD_E_GPG_BAD_KEYFILE, "gpg.bad_keyfile", 2)                                                  \
    X(BD_E_GIT, "git.error", 4)                                                                    \
    X(BD_E_GIT_NOT_REPO, "git.not_a_repository", 2)                                                \
    X(BD_E_GIT_NO_IDENTITY, "git.no_identity", 2)                                                  \
    X(BD_E_GIT_PATH_OUTSIDE, "git.path_outside", 2)                                                \
    X(BD_E_GIT_PATH_UNKNOWN, "git.path_unknown", 2)                                                \
    X(BD_E_GIT_NOTHING_TO_COMMIT, "git.nothing_to_commit", 2)                                      \
    X(BD_E_GIT_DETACHED_HEAD, "git.detached_head", 2)                                              \
    X(BD_E_GIT_INDEX_CONFLICT, "git.index_conflict", 2)                                            \
    X(BD_E_GIT_REF_MOVED, "git.ref_moved", 4)                                                      \
    X(BD_E_COMPARE_UNKNOWN_RUN, "compare.unknown_run", 2)                                          \
    X(BD_E_COMPARE_AMBIGUOUS_RUN, "compare.ambiguous_run", 2)                                      \
    X(BD_E_COMPARE_NO_RUNS, "compare.no_runs", 2)                                                  \
    X(BD_E_COMPARE_SAME_RUN, "compare.same_run", 2)                                                \
    X(BD_E_COMPARE_TASK_CLASS_MISMATCH, "compare.task_class_mismatch", 2)                          \
    X(BD_E_COMPARE_ISOLATION_MISMATCH, "compare.isolation_mismatch", 3)                            \
    X(BD_E_REPORT_NO_RUNS, "report.no_runs", 2)                                                    \
    X(BD_E_RECORD_NOT_COMMAND, "record.not_command", 2)                                            \
    X(BD_E_RECORD_NETWORK_REFUSED, "record.network_refused", 3)                                    \
    X(BD_E_RECORD_DECLINED, "record.declined", 3)                                                  \
    X(BD_E_RECORD_SUT_FAILED, "record.sut_failed", 4)                                              \
    X(BD_E_ENV_VARIABLE_MISSING, "env.variable_missing", 4)                                        \
    X(BD_E_LIBRARY_MISSING, "env.library_missing", 4)                                              \
    X(BD_E_SHARD_SPEC, "shard.bad_spec", 2)                                                        \
    X(BD_E_BUNDLE_EXISTS, "bundle.exists", 2)                                                      \
    X(BD_E_BUNDLE_INVALID, "bundle.invalid", 2)                                                    \
    X(BD_E_BUNDLE_TAMPERED, "bundle.tampered", 1)                                                  \
    X(BD_E_BUNDLE_PIN_MISMATCH, "bundle.pin_mismatch", 1)                                          \
    X(BD_E_BUNDLE_TASK_CLASS, "bundle.task_class_mismatch", 1)                                     \
    X(BD_E_BUNDLE_PARTITION, "bundle.partition_mismatch", 1)                                       \
    X(BD_E_BUNDLE_MIXED, "bundle.mixed_runs", 2)                                                   \
    X(BD_E_BUNDLE_DUPLICATE, "bundle.duplicate_shard", 2)                                          \
    X(BD_E_BUNDLE_MISSING, "bundle.missing_shard", 2)                                              \
    X(BD_E_BUNDLE_CONFLICT, "bundle.conflict", 1)                                                  \
    X(BD_E_VERDICT_INVALID, "verdict.invalid", 1)                                                  \
    X(BD_E_VERDICT_REPLAYED, "verdict.replayed", 1)                                                \
    X(BD_E_VERDICT_NOT_REVIEWER, "verdict.not_reviewer", 3)                                        \
    X(BD_E_VERDICT_DUPLICATE, "verdict.duplicate", 3)                                              \
    X(BD_E_RUN_UNSIGNED_REFUSED, "run.unsigned_refused", 3)                                        \
    X(BD_E_RUN_SIGNING_ISOLATION, "run.signing_isolation", 3)                                      \
    X(BD_E_RUN_KEY_LOCKED, "run.operator_key_locked", 3)                                           \
    X(BD_E_RUN_KEY_UNUSABLE, "run.operator_key_unusable", 3)                                       \
    X(BD_E_RUN_SIGNED_INVALID, "history.run_signed_invalid", 1)                                    \
    X(BD_E_INTERNAL, "internal.bug", 4)

typedef enum {
#define BD_X(name, str, exitcode) name,
    BD_ERROR_CODES(BD_X)
#undef BD_X
        BD_E__COUNT
} bd_code;

/*
 * What to do about an error, as data. The core's message says what went wrong and where;
 * the action says what the user should do next, and each front end words it its own way:
 * the CLI as the command to type (src/cli/common.c), the TUI as the key that does it
 * (ui/err_keys.c). `arg` is the one value the words need (a path under bench/, a task
 * class, an isolation class), or "" when they need none. The kind string is stable: it is
 * the `"action": {"kind": ...}` of a --json error. docs/architecture.md#errors-what-to-do-is-data.
 *
 *      enum name                   kind (stable)          arg */
#define BD_ERROR_ACTIONS(X)                                                                        \
    X(BD_ACT_NONE, "none")                       /* -                                        */    \
    X(BD_ACT_SIGN_TASK_CLASS, "sign_task_class") /* task class                               */    \
    X(BD_ACT_SIGN_CASE, "sign_case")             /* -                                        */    \
    X(BD_ACT_SIGN_TWO, "sign_two")               /* path under bench/                        */    \
    X(BD_ACT_SIGN_AUTHOR_FIRST, "sign_author_first") /* -                                    */    \
    X(BD_ACT_ALLOW_WEAKER, "allow_weaker_isolation") /* the weaker isolation class           */    \
    X(BD_ACT_STAGE, "stage")             /* -                                        */            \
    X(BD_ACT_STAGE_PATH, "stage_path")   /* path under bench/                        */            \
    X(BD_ACT_SET_KEY, "set_signing_key") /* -                                        */            \
    X(BD_ACT_PIN, "pin")                 /* task class [case]                        */            \
    X(BD_ACT_PIN_ALL, "pin_all")         /* - */                                                   \
    X(BD_ACT_MIGRATE, "migrate")         /* - */                                                   \
    X(BD_ACT_LIST_TASK_CLASSES, "list_task_classes") /* - */                                       \
    X(BD_ACT_LIST_CASES, "list_cases")               /* task class */                              \
    X(BD_ACT_CASE_NEW, "case_new")                   /* task class */                              \
    X(BD_ACT_RUN, "run")                             /* - */                                       \
    X(BD_ACT_RUN_SHARD, "run_shard")                 /* shard K/N */                               \
    X(BD_ACT_RECORD_NETWORK, "record_with_network")  /* - */                                       \
    X(BD_ACT_RECORD, "record")                       /* task class and case id */                  \
    X(BD_ACT_HISTORY_LOG, "history_log")             /* - */                                       \
    X(BD_ACT_HISTORY_VERIFY, "history_verify")       /* - */                                       \
    X(BD_ACT_VERIFY_TASK_CLASS, "verify_task_class") /* task class */                              \
    X(BD_ACT_COMMIT, "commit")                       /* - */

typedef enum {
#define BD_X(name, kind) name,
    BD_ERROR_ACTIONS(BD_X)
#undef BD_X
        BD_ACT__COUNT
} bd_err_action;

#define BD_ERR_MSG_MAX  1024
#define BD_ERR_FILE_MAX 512
#define BD_ERR_ARG_MAX  256

/* Caller-owned error. `file` is empty, `line`/`col` are 0 when unknown. `msg` is one
 * line: what went wrong and where. `action` (BD_ACT_NONE when there is nothing to add) is
 * what to do; a front end splices its words for it into `msg` at byte `action_at`, which
 * is the end of the message unless text was appended after the advice (bd_err_append). */
typedef struct bd_err {
    bd_code code;
    char file[BD_ERR_FILE_MAX];
    int line;
    int col;
    char msg[BD_ERR_MSG_MAX];
    bd_err_action action;
    char action_arg[BD_ERR_ARG_MAX];
    size_t action_at;
} bd_err;

#define BD_ERR_INIT                                                                                \
    {                                                                                              \
        BD_OK, "", 0, 0, "", BD_ACT_NONE, "", 0                                                    \
    }

/* Stable code string, e.g. "case.digest_mismatch". Never NULL. */
const char *bd_code_str(bd_code code);

/* Exit status the CLI uses for `code` (0..4). */
int bd_code_exit(bd_code code);

/* Fill `err` (may be NULL) with code, location and a printf-formatted message, and no
 * action (bd_err_advise adds one). When
 * `file` is non-NULL the message is prefixed "file:line:col: " (line/col left out when
 * 0). The message is then made one printable line, whatever the arguments held: every
 * character text.h calls unsafe (a newline, ESC, a bidi control, a byte that is not
 * UTF-8) is written visibly as bd_text_vis writes it (`\x0a`, `\x1b`, `<U+202E>`), so no
 * front end can be handed a raw line break or escape sequence. Returns -1 so callers can
 * `return bd_err_set(...)`. */
int bd_err_set(bd_err *err, bd_code code, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Same, from errno: appends ": <strerror(errnum)>" (and is made one line the same way).
 * Code is BD_E_IO unless given. */
int bd_err_errno(bd_err *err, bd_code code, int errnum, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Stable kind string of `action`, e.g. "sign_task_class". Never NULL. */
const char *bd_action_kind(bd_err_action action);

/* Say what to do about `err` (may be NULL): set its action, and its argument from the
 * printf-formatted `fmt` (NULL for none; made one printable line as messages are). The
 * advice goes at the current end of the message; text bd_err_append adds comes after it.
 * Returns -1, like bd_err_set. */
int bd_err_advise(bd_err *err, bd_err_action action, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append printf-formatted text to the message of `err` (may be NULL), after any advice.
 * Returns -1. */
int bd_err_append(bd_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Re-word `err` (may be NULL) as a `code` error about `file` (may be NULL) whose message
 * is `before`, its old message and `after`: the advice it carried stays where it was in
 * the old text (a bundle's broken chain still says what to run). Returns -1. */
int bd_err_wrap(bd_err *err, bd_code code, const char *file, const char *before, const char *after);

/* Write the message of `err` into `out` (`cap` bytes, NUL-terminated, cut to fit) with the
 * words for its action spliced in at action_at. `words` is a front end's table, indexed by
 * action: each "%s" in an entry stands for the action's argument. Returns `out`. */
const char *bd_err_render(const bd_err *err, const char *const words[BD_ACT__COUNT], char *out,
                          size_t cap);

/* Reset to BD_OK. */
void bd_err_clear(bd_err *err);

#endif
