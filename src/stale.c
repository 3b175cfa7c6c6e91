#include "stale.h"

#include <string.h>

unsigned bd_stale_bits(const char *case_id, const char *case_digest, const char *task_class_digest,
                       const bd_digests *pins)
{
    unsigned bits = BD_STALE_NONE;
    const bd_pin *p = pins && case_id ? bd_digests_find(pins, case_id) : NULL;
    if (!p || !case_digest || strcmp(p->digest, case_digest) != 0)
        bits |= BD_STALE_CASE;
    /* A version-1 record pinned the rubric alone: it cannot vouch for today's task class. */
    if (!pins || !task_class_digest || strcmp(pins->task_class, task_class_digest) != 0)
        bits |= BD_STALE_TASK_CLASS;
    return bits;
}

unsigned bd_record_stale(const bd_history_record *r, const bd_digests *pins)
{
    if (!r || r->is_audit)
        return BD_STALE_NONE;
    return bd_stale_bits(r->case_id, r->case_digest, r->task_class_digest, pins);
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
