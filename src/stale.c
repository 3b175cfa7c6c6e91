#include "stale.h"

#include <string.h>

unsigned bd_record_stale(const bd_history_record *r, const bd_digests *pins)
{
    if (!r || r->is_audit)
        return BD_STALE_NONE;
    unsigned bits = BD_STALE_NONE;
    const bd_pin *p = pins ? bd_digests_find(pins, r->case_id) : NULL;
    if (!p || !r->case_digest || strcmp(p->digest, r->case_digest) != 0)
        bits |= BD_STALE_CASE;
    /* A version-1 record pinned the rubric alone: it cannot vouch for today's task class. */
    if (!pins || !r->task_class_digest || strcmp(pins->task_class, r->task_class_digest) != 0)
        bits |= BD_STALE_TASK_CLASS;
    return bits;
}

const char *bd_stale_str(unsigned bits)
{
    switch (bits & (BD_STALE_CASE | BD_STALE_TASK_CLASS)) {
    case BD_STALE_CASE:
        return "case changed";
    case BD_STALE_TASK_CLASS:
        return "rubric or registration changed";
    case BD_STALE_CASE | BD_STALE_TASK_CLASS:
        return "case, rubric or registration changed";
    default:
        return "current";
    }
}
