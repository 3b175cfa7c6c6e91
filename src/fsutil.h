/*
 * fsutil.h — small, careful file helpers shared by the core.
 */
#ifndef BD_FSUTIL_H
#define BD_FSUTIL_H

#include <stddef.h>

#include "err.h"

/* Read the regular file `path` (O_NOFOLLOW) into a new NUL-terminated buffer (caller
 * frees); *len gets its size. Files over `max` bytes are refused with `too_big_code`.
 * Returns 0, or -1 with `err` (io.error, case.unsupported_entry for a non-regular file). */
int bd_read_file(char **out, size_t *len, const char *path, size_t max, bd_code too_big_code,
                 bd_err *err);

/* Write `len` bytes to `path` atomically: a sibling temp file created O_EXCL|O_NOFOLLOW
 * with `mode`, fsync, rename over `path`, fsync of the directory. On any failure the
 * temp file is removed and `path` is untouched. Returns 0 or -1 (io.error). */
int bd_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode,
                         bd_err *err);

/* mkdir -p with `mode` for each created component. Returns 0 or -1 (io.error). */
int bd_mkdir_p(const char *path, unsigned mode, bd_err *err);

/* Current UTC time as "YYYY-MM-DDTHH:MM:SSZ" into `out` (21 bytes). */
void bd_utc_now(char out[21]);

#endif
