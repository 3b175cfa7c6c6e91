/*
 * serial.h — one background thread that runs jobs one at a time, in submission order,
 * and reports each back on the libuv loop thread, in the same order.
 *
 * The runner appends history records through it (docs/runner.md, docs/history.md): an fsync then
 * slows recording, never the loop that runs the cases, and records keep the order in which their
 * cases finished.
 *
 * Threading: bd_serial_new, bd_serial_submit and bd_serial_close are called on the loop
 * thread. `work` runs on the worker thread and must touch only what its payload owns (and
 * what no other thread writes while the job is queued); `done` runs on the loop thread.
 */
#ifndef BD_SERIAL_H
#define BD_SERIAL_H

#include <stddef.h>

#include <uv.h>

#include "err.h"

typedef struct bd_serial bd_serial;

/* Runs on the worker thread; its return value is handed to `done`. */
typedef int (*bd_serial_work_fn)(void *payload);
/* Runs on the loop thread after `work`, with its return value. */
typedef void (*bd_serial_done_fn)(void *payload, int status);

/* Start a worker reporting on `loop`. Returns 0, or -1 (env.out_of_memory, or io.error
 * when no thread can be made). Close with bd_serial_close. */
int bd_serial_new(bd_serial **out, uv_loop_t *loop, bd_err *err);

/* Queue a job. Returns 0, or -1 when out of memory (nothing queued, `done` never called). */
int bd_serial_submit(bd_serial *w, bd_serial_work_fn work, bd_serial_done_fn done, void *payload);

/* Jobs submitted whose `done` has not run yet. */
size_t bd_serial_pending(const bd_serial *w);

/* Run every queued job to its end, join the thread, and release the worker once the loop
 * has closed its handle (the loop must run on). Every `done` still owed is called first,
 * on this thread, before returning. NULL is a no-op. */
void bd_serial_close(bd_serial *w);

#endif
