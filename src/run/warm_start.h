/*
 * warm_start.h — whether a run starts its rubrics warm or cold (docs/runner.md, "Warm
 * starts"), and starting the warm interpreter when it can serve.
 */
#ifndef BD_WARM_START_H
#define BD_WARM_START_H

#include <stdbool.h>
#include <stddef.h>

#include "exec.h"

/* `run --start`, `runner.start` of .benchdesk/config.yaml. */
typedef enum {
    BD_START_DEFAULT, /* not chosen: warm where it can serve, else cold */
    BD_START_WARM,    /* the same, asked for by name */
    BD_START_COLD,    /* exec of the interpreter per case */
} bd_start_mode;

/* "warm" / "cold" into *out. Returns 0, or -1 for any other text. */
int bd_start_mode_parse(const char *s, bd_start_mode *out);

/* What the run is, for the decision. */
typedef struct bd_warm_req {
    bd_start_mode mode;
    bd_isolation isolation;
    const char *python;    /* the run's interpreter, absolute */
    bool sut_command;      /* the task class's SUT is a command (it runs cold) */
    int jobs;              /* cases at once (one warm interpreter per slot, at most 8) */
    const char *tmp_root;  /* where the run makes its temp dirs */
    const char *owner_tag; /* the run's owner tag (fsutil.h) */
} bd_warm_req;

/* Start `ctx`'s warm interpreter when the run can use one: not asked to be cold,
 * namespaces, a cassette SUT, the interpreter benchdesk-warm embeds, temp dirs under
 * /tmp, benchdesk-warm installed next to this executable and starting. Returns true with
 * *staging (caller frees and, after the run's temp dirs in it, removes) — the directory the
 * run's case dirs go in: in RAM where it can (the temp root when it is a tmpfs, else
 * /dev/shm; docs/runner.md#the-staging-directory), else in the temp root; false with a
 * one-line reason in `why` ("" when cold was asked for) and the context left cold. */
bool bd_warm_start_try(bd_exec_ctx *ctx, const bd_warm_req *req, char **staging, char *why,
                       size_t whylen);

#endif
