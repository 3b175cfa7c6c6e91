#include "trend.h"

#include <stdlib.h>
#include <string.h>

#include "stats.h"

int bd_trend(const bd_runs *runs, const char *task_class, size_t max, bd_trend_point **out,
             size_t *n, bd_err *err)
{
    *out = NULL;
    *n = 0;
    if (!max)
        max = BD_TREND_RUNS;
    size_t k = 0;
    size_t first = runs->n;
    /* Walk back from the newest run until `max` full runs of the task class are found. */
    for (size_t i = runs->n; i-- > 0 && k < max;) {
        if (runs->runs[i].full && strcmp(runs->runs[i].task_class, task_class) == 0) {
            k++;
            first = i;
        }
    }
    if (k == 0)
        return 0;
    bd_trend_point *p = calloc(k, sizeof(*p));
    size_t most = 0;
    for (size_t i = first; i < runs->n; i++)
        if (runs->runs[i].n_recs > most)
            most = runs->runs[i].n_recs;
    double *x = malloc((most ? most : 1) * sizeof(double));
    if (!p || !x) {
        free(p);
        free(x);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory computing a trend");
    }
    size_t w = 0;
    for (size_t i = first; i < runs->n; i++) {
        const bd_run *run = &runs->runs[i];
        if (!run->full || strcmp(run->task_class, task_class) != 0)
            continue;
        bd_trend_point *t = &p[w++];
        t->run = run;
        t->cases = run->n_recs;
        for (size_t c = 0; c < run->n_recs; c++) {
            x[c] = run->recs[c].score.score;
            t->passed += run->recs[c].score.passed;
        }
        t->pass_rate = (double)t->passed / (double)t->cases;
        t->mean = bd_stats_mean(x, t->cases);
        /* Scores in case-id order with the run-summary seed: the interval the run's own
         * summary printed. */
        if (bd_stats_bca(x, t->cases, 0.95, 0, BD_STATS_RUN_SEED, &t->ci_lo, &t->ci_hi, err) != 0) {
            free(p);
            free(x);
            return -1;
        }
    }
    free(x);
    *out = p;
    *n = w;
    return 0;
}

char *bd_trend_sparkline(const bd_trend_point *p, size_t n, bool utf8, char *buf, size_t len)
{
    static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
    size_t used = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        double m = p[i].mean < 0 ? 0 : p[i].mean > 1 ? 1 : p[i].mean;
        const char *cell;
        char digit[2];
        if (utf8) {
            cell = blocks[(int)(m * 7.0 + 0.5)];
        } else {
            digit[0] = (char)('0' + (int)(m * 9.0 + 0.5));
            digit[1] = '\0';
            cell = digit;
        }
        size_t cl = strlen(cell);
        if (used + cl >= len)
            break;
        memcpy(buf + used, cell, cl + 1);
        used += cl;
    }
    return buf;
}
