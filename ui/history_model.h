/*
 * history_model.h — what the TUI reads from the chained history (docs/history.md), on
 * libuv's thread pool: the chain status for the header (verify from seq 1) and, per
 * case, the newest score record (the cases view's "last score", first failure mode and
 * stale mark). One object, owned by the model (model.h), which copies the scores into
 * its case rows when told they changed.
 */
#ifndef BD_UI_HISTORY_MODEL_H
#define BD_UI_HISTORY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "badge.h"

/* One record's verdict badge (badge.h). */
typedef struct bd_badge_entry {
    uint64_t seq;
    uint8_t kind; /* bd_badge_kind */
    char text[24];
} bd_badge_entry;

/* Chain status for the header. */
typedef enum {
    BD_CHAIN_UNKNOWN,
    BD_CHAIN_VERIFYING,
    BD_CHAIN_VERIFIED,
    BD_CHAIN_BROKEN,
    BD_CHAIN_UNREADABLE,
    BD_CHAIN_NONE
} bd_chain_state;

typedef struct bd_chain_status {
    bd_chain_state state;
    uint64_t count;   /* records verified */
    char head[65];    /* hash of record `count` (the verified prefix) */
    uint64_t bad_seq; /* BROKEN: the first record that does not verify */
    char reason[32];  /* BROKEN: bd_chain_reason_str */
    char msg[256];    /* BROKEN / UNREADABLE: why */
} bd_chain_status;

/* The newest score record of one case. */
typedef struct bd_last_score {
    char *tc, *case_id, *fm, *run_id; /* fm: the first failure mode, or NULL */
    char *case_digest, *tc_digest;    /* what the record was scored on (stale marks:
                                         docs/formats.md#history-records-format-v2) */
    bool passed;
    double score;
    uint64_t seq;
} bd_last_score;

typedef struct bd_history_model bd_history_model;

/* A history model of app->bench; `changed(payload)` runs on the loop thread whenever
 * the chain status or the scores changed, before BD_EV_HISTORY is broadcast. Nothing is
 * read until bd_history_model_refresh. Returns 0 or -1 (out of memory). */
int bd_history_model_new(bd_history_model **out, bd_app *app, void (*changed)(void *payload),
                         void *payload);
/* Free it (the loop has drained its jobs). NULL is a no-op. */
void bd_history_model_free(bd_history_model *m);

/* (Re-)read the chain status and the last scores in the background; answers of an
 * earlier read that arrive later are dropped. */
void bd_history_model_refresh(bd_history_model *m);

/* A history read is going on. */
bool bd_history_model_busy(const bd_history_model *m);

/* The newest score of each case read so far (borrowed until the next change), sorted by
 * task class then case id. */
const bd_last_score *bd_history_model_scores(const bd_history_model *m, size_t *n);

/* The verdict badge of record `seq` as the views show it (docs/provenance.md#verdict-badges),
 * from the verdict files matched in the last verified read, into buf: "✓confirmed" (the
 * ok glyph), "rubric_bug 1/2" (awaiting a second reviewer), "removed", "flaky",
 * "reviewed"; "" for none. *role: its colour. Terminal-safe (ASCII and a glyph).
 * Returns buf. */
const char *bd_history_model_badge(const bd_history_model *m, uint64_t seq, char *buf, size_t cap,
                                   bd_role *role);

/* The chain status (a copy). */
bd_chain_status bd_history_model_chain(const bd_history_model *m);

#endif
