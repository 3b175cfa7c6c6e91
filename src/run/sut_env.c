#include "sut_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bd_sut_env_build(char ***out, const bd_registration *reg, const char *reg_path, bd_err *err)
{
    *out = NULL;
    size_t n = reg->sut_kind == BD_SUT_COMMAND ? reg->n_sut_env_pass : 0;
    char **env = calloc(n + 1, sizeof(*env));
    if (!env)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *name = reg->sut_env_pass[i];
        const char *value = getenv(name);
        if (!value) {
            bd_sut_env_free(env);
            return bd_err_set(err, BD_E_ENV_VARIABLE_MISSING, reg_path, 0, 0,
                              "sut.env_pass names %s, which is not set in benchdesk's environment: "
                              "export it before running, or take it out of env_pass (the task "
                              "class must then be signed again)",
                              name);
        }
        size_t len = strlen(name) + 1 + strlen(value) + 1;
        if (!(env[i] = malloc(len))) {
            bd_sut_env_free(env);
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        }
        snprintf(env[i], len, "%s=%s", name, value);
    }
    *out = env;
    return 0;
}

void bd_sut_env_free(char **env)
{
    if (!env)
        return;
    for (char **p = env; *p; p++) {
        /* Secrets: do not leave them in freed heap memory. */
        volatile char *c = *p;
        while (*c)
            *c++ = 0;
        free(*p);
    }
    free(env);
}
