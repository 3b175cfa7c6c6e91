/*
 * sut_env.h — the environment of a command SUT (docs/recording.md, the seeds' ADR-0012
 * rule): the scrubbed four keys of exec.h plus exactly the variables the signed
 * registration names in sut.env_pass, taken from benchdesk's own environment. A rubric
 * never gets any of them. One function, used by the runner (runs and recordings) and by
 * the record preflight, so the rule is written once.
 */
#ifndef BD_SUT_ENV_H
#define BD_SUT_ENV_H

#include "bench.h"
#include "err.h"

/* The extra "NAME=value" entries for `reg`'s SUT, NULL-terminated, in env_pass order
 * (an empty list when env_pass is empty or the SUT is a cassette). A named variable that
 * is not set in this process's environment is env.variable_missing (exit 4) naming it
 * and registration.yaml at `reg_path` (may be NULL); a value with a newline or a NUL
 * cannot occur (getenv). Returns 0 with *out (free with bd_sut_env_free), or -1. */
int bd_sut_env_build(char ***out, const bd_registration *reg, const char *reg_path, bd_err *err);

void bd_sut_env_free(char **env);

#endif
