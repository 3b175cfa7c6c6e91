/*
 * pin.h — the curator's deliberate acts on a task class: rewriting pins
 * (`benchdesk pin`) and scaffolding a draft case (`benchdesk case new`).
 *
 * Writes are atomic: a temp file, fsync, rename over the original, fsync of the
 * directory; for files inside a case dir the temp file is made in cases/, outside every
 * hashed scope (fsutil.h). case.yaml is edited in place, byte for byte except the value of
 * cassette_digest, so comments and key order survive. The new digests.yaml is checked
 * against its size limit and by the loader's line reader before it is written
 * (yaml.too_large when the task class has outgrown it): pin never writes a file the loader
 * would refuse. digests.yaml is written only when a pin changes; pinning named cases of a
 * file laid out as pin writes it puts the changed lines into the file's bytes (the same
 * bytes a full rewrite gives) instead of serialising every pin again.
 */
#ifndef BD_PIN_H
#define BD_PIN_H

#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "digest.h"
#include "err.h"

typedef struct bd_pin_change {
    char case_id[129];          /* "" for the task class (registration.yaml + rubric.py) */
    char before[BD_DIGEST_BUF]; /* previous pin, "" if none */
    char after[BD_DIGEST_BUF];  /* new pin; "" when the pin was dropped (orphan) */
    bool author_broken;         /* a signature in that role no longer counts (it was over */
    bool reviewer_broken;       /* another digest) and must be made again */
    char author_by[256];        /* the identity of that signature, "" when not broken */
    char reviewer_by[256];
    bool author_legacy; /* that block names no digest (written before blocks did) */
    bool reviewer_legacy;
} bd_pin_change;

typedef struct bd_pin_report {
    bd_pin_change *changes; /* only entries whose pin changed */
    size_t n_changes;
    size_t n_pinned; /* cases pinned (changed or not) */
} bd_pin_report;

/* Pin `tc`. With n_case_ids == 0: the task class (registration.yaml + rubric.py) and every
 * case, dropping pins that name no case. Otherwise only the listed cases (each must
 * exist: bench.unknown_case). For each case: set cassette_digest in case.yaml to the
 * BLAKE3 of cassette.json (null when there is none) when it differs, then compute its
 * digest (refusing unsupported entries, and case.leftover_temp while a temp file of an
 * interrupted write is in the case dir). Then write cases/digests.yaml (format v2) when
 * its bytes change. A case named twice is pinned once. No file is written unless every
 * listed case could be digested and loaded first. Each change says which signatures it
 * breaks: every present block but one that names the new pin as its digest. tc->digests' kept bytes
 * (raw) may be written over while the new file is written, and are as loaded again when this
 * returns: not for a `tc` another thread reads meanwhile. Returns 0, or -1 with `err`. Release *out
 * with bd_pin_report_release. */
int bd_pin_task_class(bd_pin_report *out, const bd_task_class *tc, const char *const *case_ids,
                      size_t n_case_ids, bd_err *err);

/* Called by bd_pin_task_class_hook once the changes are known and before digests.yaml is
 * written (the old pins still on disk): it may edit the changes' signature fields and
 * the subjects' provenance.yaml (never hashed). Non-zero (with `err`) writes no pin. */
typedef int (*bd_pin_hook)(bd_pin_report *rep, const bd_task_class *tc, void *payload, bd_err *err);

/* bd_pin_task_class with `before_write` (may be NULL) called as bd_pin_hook says. */
int bd_pin_task_class_hook(bd_pin_report *out, const bd_task_class *tc, const char *const *case_ids,
                           size_t n_case_ids, bd_pin_hook before_write, void *payload, bd_err *err);
void bd_pin_report_release(bd_pin_report *r);

/* Replace the value of the top-level key `key` in the YAML text `text` (which must
 * hold the key on its own line as `key: value [# comment]`) with `value`. Returns a new
 * string (caller frees) or NULL with `err` (case.schema_invalid naming `label`, line). */
char *bd_yaml_set_top_scalar(const char *text, const char *key, const char *value,
                             const char *label, bd_err *err);

/* Scaffold a draft case `case_id` in `tc`: cases/<id>/case.yaml (title from the id,
 * added_at = now in UTC, expected: {}, no signatures, digests null), empty input/ and
 * expected/ folders, and cassette.json `{}` for cassette SUTs. Refuses a bad id
 * (case.bad_id) or an existing directory (case.exists). The new case is unpinned on
 * purpose: the curator fills it in, then pins it. *out_dir (may be NULL) receives the
 * new directory (caller frees). */
int bd_case_scaffold(char **out_dir, const bd_task_class *tc, const char *case_id, bd_err *err);

#endif
