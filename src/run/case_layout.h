/*
 * case_layout.h — a case laid out for its programs: its temp dir (in a warm run's staging
 * directory, else the temp root), the verified copy of its files with its case.yaml parsed
 * from the bytes that copy hashed (docs/runner.md#use-time-integrity-and-leftovers), the
 * stdin documents of its rubric and its SUT (docs/formats.md#benchscore), its limits, and
 * its cassette held against its pin. The runner (runner.c) decides when; this file how.
 */
#ifndef BD_CASE_LAYOUT_H
#define BD_CASE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "err.h"
#include "exec.h"
#include "score.h"

/* What a run lays every case out with (borrowed; it outlives the calls). */
typedef struct bd_layout {
    const char *dir;       /* where case dirs are made: the staging dir, else the temp root */
    bool staged;           /* `dir` is a warm run's staging directory (for messages) */
    const char *owner_tag; /* the run's (fsutil.h): a SIGKILLed run's dirs are swept */
    const char *rubric;    /* the task class's verified rubric.py */
    size_t rubric_len;
    const bd_registration *reg;
    bool unpinned; /* a record run: the case is about to change; its pin is not held */
} bd_layout;

/* One case, as the run knows it (borrowed). */
typedef struct bd_layout_case {
    const char *id;
    const char *dir;             /* <cases_dir>/<id> */
    const char *digest;          /* its pin, which its files are held against */
    const char *cassette_digest; /* its cassette's pin ("" when none) */
} bd_layout_case;

/* The case's limits, per docs/runner.md#limits: wall clock = case override, else the
 * registration's default, capped at 300 s; memory likewise (cap 4096 MB); CPU seconds =
 * wall clock. `reg` and `c` may be NULL (the defaults). */
bd_exec_limits bd_runner_case_limits(const bd_registration *reg, const bd_case *c);

/* Exactly one JSON value (any type) in strict UTF-8, nothing but whitespace after it; NULL
 * with `detail` saying why (`what` names the text). The caller frees the tree. */
cJSON *bd_layout_parse_json(const char *buf, size_t len, char detail[BD_SCORE_DETAIL_MAX],
                            const char *what);

/* The rubric's cwd into *tmp (case/ with the verified input/ and expected/, rubric.py;
 * caller removes and frees) and its stdin document into *doc, *doc_len (caller frees) with
 * `harness` (may be NULL) as harness_output, both from case.yaml as the verifying copy read
 * it, as are *lim. Returns 0, or -1 with err (io.error and the like; case.digest_mismatch
 * when the case changed since the gate). On failure *tmp may still name a dir to remove. */
int bd_layout_rubric(const bd_layout *l, const bd_layout_case *c, const cJSON *harness, char **tmp,
                     char **doc, size_t *doc_len, bd_exec_limits *lim, bd_err *err);

/* The SUT's cwd into *tmp (case/ with the verified input/ only: never the ground truth)
 * and its stdin document into *doc, *doc_len. Returns 0 or -1 with err, as above. */
int bd_layout_sut(const bd_layout *l, const bd_layout_case *c, char **tmp, char **doc,
                  size_t *doc_len, bd_err *err);

/* The case's cassette.json read, held against c->cassette_digest
 * (cassette.digest_mismatch; cassette.missing when it disappeared: -1 with err) and
 * parsed into *harness (caller frees): 1; 0 when it is not one JSON value (`detail`). */
int bd_layout_cassette(const bd_layout_case *c, cJSON **harness, char detail[BD_SCORE_DETAIL_MAX],
                       bd_err *err);

#endif
