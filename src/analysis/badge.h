/*
 * badge.h — the short badge of a record's verdicts, for the TUI's result, history, run
 * and compare views (docs/provenance.md#verdict-badges): one word or two, from the
 * verdicts that count on the record (verdict.h's settled set), never from the view.
 */
#ifndef BD_BADGE_H
#define BD_BADGE_H

#include <stddef.h>
#include <stdint.h>

#include "verdict.h"

/* What the badge says, for its colour. */
typedef enum {
    BD_BADGE_NONE,      /* no counting verdict: "" */
    BD_BADGE_CONFIRMED, /* every counting verdict is confirmed: "confirmed" */
    BD_BADGE_AWAITING,  /* one removing verdict, no second: "rubric_bug 1/2" */
    BD_BADGE_REMOVED,   /* two reviewers removed it from the evidence: "removed" */
    BD_BADGE_FLAKY,     /* some reviewer said flaky (and nothing removes it): "flaky" */
    BD_BADGE_MIXED,     /* anything else reviewers said: "reviewed" */
} bd_badge_kind;

/* The badge of record `seq` into buf (`cap` bytes; at most 16 characters, ASCII, so it
 * needs no sanitizing): "" (none), "confirmed", "<verdict> 1/2" (rubric_bug, case_bug or
 * infra awaiting a second reviewer), "removed", "flaky", "reviewed". `s` NULL: none.
 * Returns what it says. */
bd_badge_kind bd_badge_of(char *buf, size_t cap, const bd_verdict_set *s, uint64_t seq);

#endif
