/*
 * repin.h — pinning a task class (`benchdesk pin`, `record`, the TUI's pin) and what the
 * new pins do to its signatures (docs/provenance.md#editing-is-not-tampering).
 *
 * A new pin supersedes every signature over another digest: the subject becomes a draft
 * (or awaiting review when one signature already names the new pin), it does not turn
 * bad. A block written before blocks named their digest is judged against the pin, so a
 * new pin would make it bad; before the pin is written, each such block whose signature
 * verifies over the old pin gets that pin written into it as its `digest` (the signature
 * is untouched; verification judges it over exactly that digest), and so it is superseded
 * like any other. Nothing here prints.
 */
#ifndef BD_REPIN_H
#define BD_REPIN_H

#include <stddef.h>

#include "bench.h"
#include "err.h"
#include "pin.h"
#include "provenance.h"

/* bd_pin_task_class over `tc` of `bench`, naming the old pin in the legacy blocks of
 * every subject whose pin changes (as above; `ctx` NULL: a verification context is made
 * when one is needed). After it, each change's *_broken / *_by say whose signatures the
 * pin superseded; *_legacy stays true for a block that could not be verified over the old
 * pin (it shows as bad until it is signed again). Returns 0 or -1 (bd_pin_task_class's
 * errors, GnuPG failures, io.error writing a provenance.yaml; no pin is then written).
 * Release *out with bd_pin_report_release. */
int bd_repin(bd_pin_report *out, const bd_bench *bench, const bd_task_class *tc,
             const char *const *case_ids, size_t n_case_ids, bd_prov_ctx *ctx, bd_err *err);

#endif
