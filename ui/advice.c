/*
 * advice.c — command-line advice in core messages, rewritten to the TUI's keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice.h"

/* A span from `start` to the end of `end` (end "" : start alone) becomes `with`, where a
 * "%s" in `with` is what lay between start and end. The source of each phrase is named. */
static const struct {
    const char *start, *end, *with;
} rules[] = {
    /* rungate.c: an unsigned task class refuses a run */
    {"(`benchdesk sign bench/", "`, then a second person as reviewer)",
     "(P on it in the task classes view, as author, then a second person as reviewer)"},
    /* rungate.c: an unsigned case in a run of chosen cases */
    {"sign it (benchdesk sign)", "", "sign it (P on the case)"},
    /* exec.c: the namespaces class is unavailable */
    {"; pass --allow-weaker-isolation to run under '", "' instead",
     "; W in the run view runs it under '%s' instead"},
    /* record.c: a recording needs a signed registration; a new cassette needs signing */
    {"`benchdesk sign bench/", " --role author`, then --role reviewer",
     "P on it, as author, then a second person as reviewer"},
    /* sign.c: a review before the author's signature */
    {"(`benchdesk sign DIR --role author`)", "", "(as author: t switches the role)"},
    /* gitops.c: a commit refused for what is (not) staged */
    {"stage changes with `benchdesk stage PATH...`", "", "stage changes with u on a path"},
    {"(`benchdesk stage bench/", "`)", "(u on bench/%s in this view)"},
    /* anchor.c */
    {"(--key FPR)", "", "(signing_key in .benchdesk/config.yaml)"},
};

void bd_advice_tui(char *msg, size_t cap)
{
    for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
        char *a = strstr(msg, rules[r].start);
        if (!a)
            continue;
        char *mid = a + strlen(rules[r].start), *b = mid;
        size_t mid_len = 0;
        if (rules[r].end[0]) {
            char *e = strstr(mid, rules[r].end);
            if (!e)
                continue;
            mid_len = (size_t)(e - mid);
            b = e + strlen(rules[r].end);
        }
        char captured[256];
        snprintf(captured, sizeof(captured), "%.*s", (int)mid_len, mid);
        char with[512];
        if (strstr(rules[r].with, "%s"))
            snprintf(with, sizeof(with), rules[r].with, captured);
        else
            snprintf(with, sizeof(with), "%s", rules[r].with);
        size_t head = (size_t)(a - msg), wl = strlen(with), tail = strlen(b);
        if (head + wl + tail + 1 > cap)
            continue; /* would not fit: keep the original words */
        memmove(msg + head + wl, b, tail + 1);
        memcpy(msg + head, with, wl);
    }
}
