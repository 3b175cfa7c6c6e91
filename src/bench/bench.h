/*
 * bench.h — the bench on disk in format v2 (docs/formats.md): finding it, and typed, strict
 * loaders for registration.yaml, case.yaml, provenance.yaml, digests.yaml and
 * trusted-signers.yaml. A format-v1 file (registration, case or digests with
 * schema_version 1, a case.yaml with `provenance:` or `case_digest`, a digests.yaml
 * pinning `rubric`) is bench.format_v1, naming `benchdesk migrate`.
 *
 * Every loader refuses unknown keys (naming the key and its line), wrong types, missing
 * required keys and out-of-range values with the file's own *.schema_invalid code, and
 * passes through the YAML limits of ydoc.h. Names are checked with bd_name_valid before
 * any file is opened (case.bad_id).
 *
 * Ownership: every bd_*_load returns a new object the caller frees with its bd_*_free.
 * Strings inside are owned by the object. Objects are immutable after load and may be
 * read from several threads.
 */
#ifndef BD_BENCH_H
#define BD_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "path.h"
#include "ydoc.h"

#define BD_DIGEST_STR_LEN 71 /* "blake3:" + 64 hex */
#define BD_FPR_LEN        40

/* Hard caps and defaults of a rubric's limits (docs/runner.md#limits). */
#define BD_RUBRIC_MAX_WALL_S        300
#define BD_RUBRIC_MAX_MEMORY_MB     4096
#define BD_RUBRIC_DEFAULT_WALL_S    60
#define BD_RUBRIC_DEFAULT_MEMORY_MB 1024
/* The largest cost cap a registration, the config or `run --cost-cap` may give, in USD. */
#define BD_COST_CAP_MAX_USD 1e9

/* Size limits by kind of file (docs/formats.md, "Large benches"). The two files that grow
 * with the bench have their own: digests.yaml holds one line per case (at most 204 bytes:
 * a 128-byte id and a digest), so 64 MiB is room for over 300,000 cases with the longest
 * ids; trusted-signers.yaml one entry per signer. Every other YAML file (registration,
 * case, provenance, config, themes) keeps ydoc's 1 MiB: none of them grows with the
 * number of cases. Writers check their output against the same limits before writing. */
#define BD_DIGESTS_MAX_BYTES ((size_t)64 * 1024 * 1024)
#define BD_SIGNERS_MAX_BYTES ((size_t)16 * 1024 * 1024)

typedef enum { BD_YKIND_OTHER, BD_YKIND_DIGESTS, BD_YKIND_SIGNERS } bd_ykind_limit;

/* The byte limit for a YAML file of `kind`. */
size_t bd_yaml_max_bytes(bd_ykind_limit kind);

/* True when `s` is an environment variable name ^[A-Z_][A-Z0-9_]{0,127}$ other than the
 * four keys of the scrubbed environment (docs/runner.md#the-environment), which are never passed
 * through. */
bool bd_env_name_valid(const char *s);

/* ---- registration.yaml ------------------------------------------------------------ */

typedef enum { BD_TIER_BRONZE, BD_TIER_SILVER, BD_TIER_GOLD } bd_tier;
typedef enum { BD_SEV_BLOCK, BD_SEV_WARN, BD_SEV_INFO } bd_severity;
typedef enum { BD_SUT_CASSETTE, BD_SUT_COMMAND } bd_sut_kind;

const char *bd_tier_str(bd_tier t);         /* "bronze" ... */
const char *bd_severity_str(bd_severity s); /* "block" | "warn" | "info" */
const char *bd_sut_kind_str(bd_sut_kind k); /* "cassette" | "command" */
/* Parse "block"/"warn"/"info"; returns 0 or -1. */
int bd_severity_parse(const char *s, bd_severity *out);

typedef struct bd_failure_mode_def {
    char *code; /* dotted lower-case, e.g. "cve.not_removed" */
    bd_severity severity;
    char *description;
} bd_failure_mode_def;

typedef struct bd_registration {
    int schema_version; /* 2 */
    char *name;         /* equals the task-class directory name */
    char *description;
    bd_tier current_tier;
    int min_cases[3];      /* indexed by bd_tier */
    double threshold[3];   /* indexed by bd_tier; [BRONZE] is 0 */
    char **breakdown_keys; /* n_breakdown_keys entries */
    size_t n_breakdown_keys;
    bd_failure_mode_def *failure_modes;
    size_t n_failure_modes;
    int rubric_wall_clock_s; /* default 60, 1..300 */
    int rubric_memory_mb;    /* default 1024, 16..4096 */
    bd_sut_kind sut_kind;
    char **sut_argv; /* BD_SUT_COMMAND: argv, argv[0] absolute; NULL-terminated */
    size_t sut_argc;
    int sut_wall_clock_s; /* BD_SUT_COMMAND: default 120, 1..300 */
    char **sut_env_pass;  /* BD_SUT_COMMAND: variables passed to the SUT; may be NULL
                             (docs/recording.md#secrets-only-what-the-signed-registration-names) */
    size_t n_sut_env_pass;
    double run_cost_cap_usd; /* run.cost_cap_usd: the run's cost cap in USD; negative = none */
    bool run_require_signed; /* run.require_signed: unsigned runs refuse; default false */
} bd_registration;

/* Load `path`. `expect_name` (may be NULL) must equal the `name` key.
 * Required keys: schema_version (integer 2), name (a valid name, else case.bad_id),
 * description (string, may be empty), current_tier, min_cases_for_promotion {bronze,
 * silver, gold: integers >= 1}, promotion_threshold {silver, gold: numbers in [0,1]},
 * breakdown_keys (unique, ^[a-z0-9_]+$), failure_modes (list of {code, severity,
 * description?}; codes unique, dotted lower case, never rubric.* / sut.*), sut.
 * Optional: rubric {wall_clock_seconds 1..300, memory_mb 16..4096}; for a command SUT
 * sut.wall_clock_seconds, sut.network (only false) and sut.env_pass (variable names,
 * bd_env_name_valid, unique, at most 64); run {cost_cap_usd: a number from 0 to
 * BD_COST_CAP_MAX_USD, require_signed: a boolean} (absent: no cap, false). Anything else, or a
 * value of the wrong type or range, is registration.schema_invalid at its line. */
int bd_registration_load(bd_registration **out, const char *path, const char *expect_name,
                         bd_err *err);
/* The same over a buffer; `name` is used in messages. */
int bd_registration_parse(bd_registration **out, const char *buf, size_t len, const char *name,
                          const char *expect_name, bd_err *err);
void bd_registration_free(bd_registration *reg);
/* Borrowed taxonomy entry for `code`, or NULL. */
const bd_failure_mode_def *bd_registration_failure_mode(const bd_registration *reg,
                                                        const char *code);
bool bd_registration_has_breakdown_key(const bd_registration *reg, const char *key);

/* ---- case.yaml --------------------------------------------------------------------- */

typedef enum { BD_DISP_POSITIVE, BD_DISP_NEGATIVE, BD_DISP_AMBIGUOUS } bd_disposition;
typedef enum { BD_DIFF_EASY, BD_DIFF_MEDIUM, BD_DIFF_HARD } bd_difficulty;
const char *bd_disposition_str(bd_disposition d);
const char *bd_difficulty_str(bd_difficulty d);

typedef struct bd_case {
    int schema_version; /* 2 */
    char *case_id;
    char *title;
    bd_disposition disposition;
    bd_difficulty difficulty;
    char *source; /* origin.source: curated | outcome-ledger-derived | regression-converted */
    char *source_ref_type; /* ghsa | ledger | commit | synthetic */
    char *source_ref_value;
    char *added_at;   /* RFC 3339 UTC "YYYY-MM-DDTHH:MM:SSZ" */
    int wall_clock_s; /* rubric_limits override, 0 when absent */
    int memory_mb;    /* rubric_limits override, 0 when absent */
    bool has_cassette_digest;
    char cassette_digest[BD_DIGEST_STR_LEN + 1]; /* "" when null */
    char *path;                                  /* path of case.yaml */
    bd_ydoc *doc;       /* the parsed file, kept for `expected` and JSON export */
    bd_ynode *expected; /* borrowed from doc: a mapping */
} bd_case;

/* Load case.yaml at `path`. `expect_id` (may be NULL) must equal `case_id`
 * (else case.id_mismatch). Required: schema_version (2), case_id (a valid name, else
 * case.bad_id), title, disposition, difficulty, origin {source, source_ref {type,
 * value}, added_at}, expected (a mapping). Optional: rubric_limits {wall_clock_seconds
 * 1..300, memory_mb 16..4096}, cassette_digest (a digest, or null). Timestamps are
 * exactly "YYYY-MM-DDTHH:MM:SSZ" with a real date. Violations: case.schema_invalid at
 * the line; v1 members (provenance, case_digest) or schema_version 1: bench.format_v1. */
int bd_case_load(bd_case **out, const char *path, const char *expect_id, bd_err *err);
/* The same over a buffer of `len` bytes; `name` becomes `path` and is used in messages.
 * Used by bd_case_load and by the fuzz target. */
int bd_case_parse(bd_case **out, const char *buf, size_t len, const char *name,
                  const char *expect_id, bd_err *err);
void bd_case_free(bd_case *c);

/* The case as JSON for the rubric's stdin: every case.yaml key. YAML plain scalars map to JSON by
 * the YAML 1.2 core schema (null, true/false, integers, floats); quoted scalars are strings.
 * Returns a new cJSON tree (caller frees with cJSON_Delete) or NULL on out-of-memory. */
cJSON *bd_case_to_json(const bd_case *c);

/* A YAML node as JSON, by the same rules: plain null/~/empty -> null; true/True/TRUE,
 * false/... -> booleans; decimal, 0o and 0x integers -> numbers; floats -> numbers. What
 * JSON cannot carry exactly stays the scalar's text as a string: .inf/.nan, floats that
 * overflow, integers beyond +-2^53. Keys are the key scalars' text, in document order.
 * A NULL node is JSON null. New tree (cJSON_Delete) or NULL on out-of-memory. */
cJSON *bd_ynode_to_json(const bd_ynode *node);

/* ---- digests.yaml ------------------------------------------------------------------ */

typedef struct bd_pin {
    char *case_id;
    char digest[BD_DIGEST_STR_LEN + 1];
    int line;
    unsigned off; /* byte offset of the pin's line in `raw` (when kept; the file is < 4 GiB) */
} bd_pin;

typedef struct bd_digests {
    int schema_version;                     /* 2 */
    char task_class[BD_DIGEST_STR_LEN + 1]; /* the task-class digest (docs/formats.md#digests) */
    bd_pin *pins;                           /* sorted by case_id */
    size_t n_pins;
    /* bd_digests_load of a file exactly as `pin` writes it keeps its bytes here, so that
     * `pin` of a few cases can tell "nothing changed" and splice the changed lines in
     * without writing 100,000 others anew; NULL otherwise (another layout, or parsed
     * from a caller's buffer). */
    char *raw;
    size_t raw_len;
    char *ids; /* one block holding every case_id (line reader); NULL: each its own */
} bd_digests;

/* Required: schema_version (2), task_class (a digest), cases (a mapping case id -> digest,
 * or null when empty). A case id that is not a valid name is case.bad_id at its line; a
 * repeated one yaml.duplicate_key; everything else digests.schema_invalid. */
int bd_digests_load(bd_digests **out, const char *path, bd_err *err);
int bd_digests_parse(bd_digests **out, const char *buf, size_t len, const char *name, bd_err *err);
/* The file exactly as `pin` writes it (comment lines, schema_version 2, task_class,
 * "cases:" and one "  <id>: <digest>" line per case in increasing id order) is read by a
 * strict line reader, in milliseconds for 100,000 pins; any other text goes through the
 * YAML parser (bd_digests_parse_yaml), and both give the same result for the same bytes. */
int bd_digests_parse_yaml(bd_digests **out, const char *buf, size_t len, const char *name,
                          bd_err *err);
/* Whether bd_digests_load/parse would take `buf` with the line reader above (the layout
 * pin writes, within the size limit): then it loads, with no YAML parser and no
 * allocation needed to tell. */
bool bd_digests_canonical_ok(const char *buf, size_t len);
void bd_digests_free(bd_digests *d);
/* Borrowed pin for `case_id`, or NULL. */
const bd_pin *bd_digests_find(const bd_digests *d, const char *case_id);

/* ---- provenance.yaml --------------------------------------------------------------- */

/* One role's signature as provenance.yaml holds it. */
typedef struct bd_signature_block {
    bool present;
    char *identity;
    char fingerprint[BD_FPR_LEN + 1];   /* 40 upper-case hex */
    char *signed_at;                    /* "YYYY-MM-DDTHH:MM:SSZ" */
    char digest[BD_DIGEST_STR_LEN + 1]; /* the digest it signed, "" when the block has none */
    char *signature;                    /* armored, as written */
    int line;                           /* line of the block */
} bd_signature_block;

/* The signatures of one subject (a case or a task class). Never hashed: docs/formats.md#digests */
typedef struct bd_provfile {
    int schema_version; /* 2 */
    bd_signature_block author;
    bd_signature_block reviewer;
    char *last_validated_at; /* or NULL */
    char *path;              /* where it was (or would be) read */
} bd_provfile;

/* Load provenance.yaml at `path`. An absent file is a valid empty one (signed in
 * neither role). Required when present: schema_version (2). Optional: author and
 * reviewer (null, or {identity, fingerprint (40 hex), signed_at, digest (optional: the
 * "blake3:<hex>" the signature covers), signature}),
 * last_validated_at. Violations: provenance.schema_invalid at the line; a link or special
 * file: case.unsupported_entry. Returns 0 with *out (bd_provfile_free), or -1. */
int bd_provfile_load(bd_provfile **out, const char *path, bd_err *err);
int bd_provfile_parse(bd_provfile **out, const char *buf, size_t len, const char *name,
                      bd_err *err);
void bd_provfile_free(bd_provfile *p);

/* ---- trusted-signers.yaml ---------------------------------------------------------- */

/* author and reviewer sign provenance (and reviewers verdicts); operator signs runs and
 * holds no other role. */
enum { BD_ROLE_AUTHOR = 1, BD_ROLE_REVIEWER = 2, BD_ROLE_OPERATOR = 4 };

typedef struct bd_signer {
    char fingerprint[BD_FPR_LEN + 1]; /* upper-case hex */
    char *identity;
    int roles; /* BD_ROLE_* bits */
} bd_signer;

typedef struct bd_signers {
    int schema_version;
    bd_signer *signers;
    size_t n;
} bd_signers;

/* Required: schema_version (1), signers (a list, may be empty) of {fingerprint (40 hex,
 * stored upper-case, unique), identity, roles (non-empty list of author | reviewer |
 * operator, no repeats; operator only alone)}. Violations: signers.schema_invalid at the line. */
int bd_signers_load(bd_signers **out, const char *path, bd_err *err);
int bd_signers_parse(bd_signers **out, const char *buf, size_t len, const char *name, bd_err *err);
void bd_signers_free(bd_signers *s);
/* Borrowed signer whose fingerprint equals `fingerprint` (40 hex, any case), or NULL. */
const bd_signer *bd_signers_find(const bd_signers *s, const char *fingerprint);

/* ---- the bench --------------------------------------------------------------------- */

typedef struct bd_bench {
    char *root;          /* absolute bench root (holds bench/) */
    char *bench_dir;     /* root + "/bench" */
    char **task_classes; /* sorted names of bench/<name>/ holding registration.yaml */
    size_t n_task_classes;
} bd_bench;

/* Find the bench root: `dir` itself when `explicit` (-C DIR; must hold bench/), else
 * the nearest ancestor of `dir` that holds a bench/ folder. bench.not_found otherwise.
 * *out is a new malloc'd absolute path. */
int bd_bench_find_root(char **out, const char *dir, bool explicit_dir, bd_err *err);

/* Open the bench at `root` and list its task classes: the subdirectories of bench/
 * holding a registration.yaml, sorted, `keys` skipped. Other entries are not task classes
 * and are ignored, except that a task-class directory with an invalid name is case.bad_id
 * and a symlink to one is case.unsupported_entry. bench.not_found when bench/ can't be
 * opened. */
int bd_bench_open(bd_bench **out, const char *root, bd_err *err);
void bd_bench_free(bd_bench *b);

typedef struct bd_task_class {
    char *name;
    char *dir;       /* <bench_dir>/<name> */
    char *cases_dir; /* <dir>/cases */
    char *rubric_path;
    char *prov_path; /* <dir>/provenance.yaml */
    bd_registration *reg;
    bd_digests *digests; /* NULL when cases/digests.yaml does not exist yet */
    bd_provfile *prov;   /* the task class's signatures (empty when the file is absent) */
    char **case_ids;     /* sorted names of the directories under cases/ */
    size_t n_cases;
    bool cases_unlisted; /* bd_task_class_load_unlisted: case_ids was not read */
    /* The registration's run policy, copied from reg->run_* when loaded: */
    double run_cost_cap_usd; /* run.cost_cap_usd; negative = none */
    bool run_require_signed; /* run.require_signed */
} bd_task_class;

/* Load task class `name`: case.bad_id for a bad name, bench.unknown_task_class when
 * absent, then registration.yaml, provenance.yaml and digests.yaml (if present), and
 * list cases/.
 * A directory under cases/ whose name is not a valid id is case.bad_id; a symlink or
 * special file there is case.unsupported_entry; regular files are not cases. */
int bd_task_class_load(bd_task_class **out, const bd_bench *bench, const char *name, bd_err *err);
void bd_task_class_free(bd_task_class *tc);

/* bd_task_class_load without listing cases/ (case_ids NULL, n_cases 0, cases_unlisted):
 * for a command that names its cases (`pin TC CASE`), whose cost then does not grow with
 * the task class. bd_task_class_case looks each named case up on disk instead. */
int bd_task_class_load_unlisted(bd_task_class **out, const bd_bench *bench, const char *name,
                                bd_err *err);

/* The sorted names of the case directories under `cases_dir` (a missing folder: none).
 * A directory with an invalid id is case.bad_id; a link or special file is
 * case.unsupported_entry; regular files are not cases. *ids is a new array of new
 * strings (caller frees each and the array). Returns 0 or -1. */
int bd_list_case_dirs(char ***ids, size_t *n, const char *cases_dir, bd_err *err);

/* Load the case `case_id` of `tc` (case.bad_id, bench.unknown_case, then case.yaml). */
int bd_task_class_case(bd_case **out, const bd_task_class *tc, const char *case_id, bd_err *err);

/* The index of `case_id` in tc->case_ids (sorted), or -1 when the task class has no such
 * case. */
int bd_task_class_case_index(const bd_task_class *tc, const char *case_id);

/* Load the provenance.yaml of case `case_id` of `tc` (bd_provfile_load's contract; the
 * id is checked first: case.bad_id). */
int bd_task_class_case_prov(bd_provfile **out, const bd_task_class *tc, const char *case_id,
                            bd_err *err);

/* Look in the top of the case directory `case_dir` for a temp file an interrupted write
 * left behind (bd_tmp_is_leftover: an older benchdesk wrote case.yaml and provenance.yaml
 * through a sibling temp file). Such a file is not part of the case, yet its digest would
 * take it in, so pin and verify refuse to hash the case until it is gone. Returns 1 with
 * `err` set to case.leftover_temp (naming the file and what to do), 0 when there is none
 * (or the directory cannot be listed: the digest then reports why), -1 never. */
int bd_case_leftover_check(const char *case_dir, bd_err *err);

#endif
