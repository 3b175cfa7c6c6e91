/*
 * yfast.h — a scanner for the plain subset of YAML that bench files are written in
 * (docs/formats.md, "YAML rules"), for ydoc.c only.
 *
 * It emits the events libyaml would emit, marks included, for: block mappings and block
 * sequences laid out by indentation; one-line plain, single-quoted and double-quoted
 * scalars without escapes; one-line flow mappings and sequences; literal block scalars
 * (`|`, no indicator) as the value of a mapping key, as provenance.yaml holds its
 * signatures; comments and blank lines; all of it printable ASCII. Why: libyaml spends
 * most of a 300-byte case.yaml setting up and tearing down its queues, and at 100,000
 * cases that was a third of `list` (and provenance.yaml's libyaml parse a quarter of a
 * warm `verify`).
 *
 * It never refuses anything: input outside that subset is declined and parsed again, from
 * the start, by libyaml, which has the last word on every error. And it never accepts
 * what libyaml refuses (docs/security.md, "One meaning for every YAML reader"): whatever
 * libyaml might refuse or read otherwise is outside the subset, e.g. a simple key whose
 * ':' lies more than 1024 characters from the key's start.
 */
#ifndef BD_YFAST_H
#define BD_YFAST_H

#include <stddef.h>

#include <yaml.h>

/* Receives each event; returns 0 to go on, -1 to stop (the scan then returns -1). The
 * event and its scalar value are valid only during the call: a value points into the
 * input, or into a buffer of the scan's (a literal block scalar's text, its indentation
 * taken out). An emitter that keeps a value copies it. */
typedef int (*bd_yfast_emit)(void *ctx, const yaml_event_t *ev);

/* Scan `len` bytes of `buf`, emitting DOCUMENT-START, the document's node events and
 * STREAM-END. Returns 1 when the whole input was in the subset and every event was taken;
 * 0 when it was declined (some events may already have been emitted: the caller discards
 * what it built); -1 when `emit` stopped it. */
int bd_yfast_scan(const char *buf, size_t len, bd_yfast_emit emit, void *ctx);

#endif
