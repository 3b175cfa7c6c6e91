/*
 * config.h — local settings in <bench root>/.benchdesk/config.yaml (docs/formats.md):
 *
 *   theme: default            # TUI theme name (themes/<name>.yaml) or a path
 *   jobs: 4                   # default --jobs for run (1..256)
 *   signing_key: <40 hex>     # default key for sign / anchor publish / commit --sign,
 *                             # and the operator key that signs runs (runsign.h)
 *   require_signed_runs: true # refuse a run without an operator key
 *   python: /usr/bin/python3  # the rubric interpreter (an absolute path)
 *   runner:
 *     start: warm             # warm (the default: where it can serve) or cold
 *   cost_cap_usd: 2.50        # stop a run once its cases cost this much (a decimal >= 0)
 *
 * Every key is optional; unknown keys are refused (config.schema_invalid with the line),
 * so a typo never silently falls back to a default. A missing file is all defaults.
 */
#ifndef BD_CONFIG_H
#define BD_CONFIG_H

#include <stdbool.h>

#include "err.h"
#include "warm_start.h"

typedef struct bd_config {
    char *theme;              /* NULL when unset */
    int jobs;                 /* 0 when unset */
    char *signing_key;        /* NULL when unset; upper-case hex */
    bool require_signed_runs; /* false when unset */
    char *python;             /* NULL when unset; absolute path */
    bd_start_mode start;      /* runner.start; BD_START_DEFAULT when unset */
    bool has_cost_cap;        /* cost_cap_usd is set */
    double cost_cap_usd;      /* the run's cost cap in USD (docs/runner.md#the-cost-cap) */
} bd_config;

/* A cost cap as written on the command line and in the config: a decimal number of USD,
 * digits with at most one '.' (no sign, exponent or '$'), at most BD_COST_CAP_MAX_USD.
 * Returns 0 with *out, or -1 (nothing set). */
int bd_cost_cap_parse(const char *s, double *out);

/* Load <root>/.benchdesk/config.yaml into *out (zeroed first). Returns 0 (also when the
 * file does not exist) or -1 with `err` (YAML errors, config.schema_invalid). Release
 * with bd_config_release. */
int bd_config_load(bd_config *out, const char *root, bd_err *err);
void bd_config_release(bd_config *c);

/* The rubric interpreter every front end uses: BENCHDESK_PYTHON (an absolute path) when
 * set and non-empty, else `python:` of `cfg` (may be NULL), else python3 from /usr/bin or
 * /bin — resolved with bd_exec_find_program. Returns 0 with *out (caller frees) or -1
 * (env.interpreter_missing). */
int bd_config_find_python(char **out, const bd_config *cfg, bd_err *err);

#endif
