/*
 * migrate.h — converting a bench from format v1 to format v2 (docs/formats.md).
 *
 * Format v1 kept the signatures inside case.yaml (provenance.added_by / reviewed_by), a
 * `case_digest` field, and pinned the rubric alone. Format v2 hashes every byte of
 * case.yaml, moves the signatures to provenance.yaml and pins the task class
 * (registration.yaml + rubric.py). No v1 signature covered case.yaml, so none carries
 * over: after a migration every case and every task class must be signed again.
 *
 * The conversion is a text edit that keeps comments and key order:
 *   registration.yaml  schema_version 1 -> 2;
 *   case.yaml          schema_version 1 -> 2, the `provenance:` block becomes `origin:`
 *                      holding source, source_ref and added_at (added_by, reviewed_by
 *                      and last_validated_at leave it), the case_digest line goes;
 *                      last_validated_at moves to the case's provenance.yaml;
 *   digests.yaml       rewritten by `pin` (format v2) for every task class.
 * Every converted file is proven to load as v2 before anything is written; then files
 * are written atomically, task class by task class.
 */
#ifndef BD_MIGRATE_H
#define BD_MIGRATE_H

#include <stddef.h>

#include "err.h"

typedef struct bd_migrate_report {
    size_t task_classes;       /* task classes converted */
    size_t cases;              /* case.yaml files converted */
    size_t already_v2;         /* task classes that were already format v2 */
    size_t signatures_dropped; /* v1 signature blocks that no longer count */
} bd_migrate_report;

/* Convert the bench at `root` (holding bench/) to format v2. A task class already in
 * format v2 is left alone. Returns 0 and fills *out, or -1 with `err`: the v1 file that
 * cannot be converted (case.schema_invalid naming the file and line: e.g. a provenance
 * block in flow style), what the converted text fails to load as, or io.error. A
 * failure in one task class leaves the task classes before it converted and itself
 * untouched (each is converted all or nothing). */
int bd_migrate_bench(bd_migrate_report *out, const char *root, bd_err *err);

/* The v2 text of the v1 case.yaml `text` (exposed for tests). *last_validated (may be
 * NULL) receives a new copy of provenance.last_validated_at or NULL, *dropped the number
 * of signature blocks removed. New string (caller frees), or NULL with `err`
 * (case.schema_invalid naming `label` and the line). */
char *bd_migrate_case_text(const char *text, const char *label, char **last_validated,
                           size_t *dropped, bd_err *err);

#endif
