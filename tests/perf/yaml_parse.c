/*
 * yaml_parse.c — how long one YAML file takes to read into a tree, with libyaml and with
 * the plain-subset scanner (src/base/yfast.c), side by side. Prints a table. Not a test.
 *
 *   bd_perf_yaml FILE...
 *   e.g. bd_perf_yaml tests/fuzz/corpus/yfast/generated_case.yaml (make_big_bench.sh's
 *   case.yaml) bench/vuln-remediation/registration.yaml
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ydoc.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Microseconds per parse of `text` in `mode`, or -1 when it does not parse that way. */
static double per_parse(const char *text, size_t len, bd_ydoc_mode mode)
{
    const int rounds = 20000;
    double t0 = now();
    for (int i = 0; i < rounds; i++) {
        bd_ydoc *doc = NULL;
        bd_err err = BD_ERR_INIT;
        if (bd_ydoc_parse_mode(&doc, text, len, "bench.yaml", BD_YAML_MAX_BYTES, NULL, mode,
                               &err) != 0)
            return -1;
        bd_ydoc_free(doc);
    }
    return (now() - t0) / rounds * 1e6;
}

static void row(const char *label, const char *text, size_t len)
{
    double lib = per_parse(text, len, BD_YDOC_LIBYAML);
    double fast = per_parse(text, len, BD_YDOC_FAST);
    if (fast < 0)
        printf("%-44s %7zu %12.2f %12s %8s\n", label, len, lib, "declined", "-");
    else
        printf("%-44s %7zu %12.2f %12.2f %7.1fx\n", label, len, lib, fast, lib / fast);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bd_perf_yaml FILE...\n");
        return 2;
    }
    printf("%-44s %7s %12s %12s %8s\n", "file", "bytes", "libyaml us", "yfast us", "faster");
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "bd_perf_yaml: cannot open %s\n", argv[i]);
            return 2;
        }
        static char buf[BD_YAML_MAX_BYTES + 1];
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        const char *base = strrchr(argv[i], '/');
        char label[64];
        snprintf(label, sizeof(label), "%s", base && strlen(argv[i]) > 44 ? base + 1 : argv[i]);
        row(label, buf, n);
    }
    return 0;
}
