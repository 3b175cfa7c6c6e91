/*
 * badge.c — the short badge of a record's verdicts (docs/provenance.md#verdict-badges).
 */
#include <stdio.h>

#include "badge.h"

bd_badge_kind bd_badge_of(char *buf, size_t cap, const bd_verdict_set *s, uint64_t seq)
{
    bd_verdict_summary sm;
    if (cap)
        buf[0] = '\0';
    if (!s || !cap || !seq)
        return BD_BADGE_NONE;
    bd_verdict_summarize(&sm, s, seq);
    if (sm.n == 0)
        return BD_BADGE_NONE;
    if (sm.removed) {
        snprintf(buf, cap, "removed");
        return BD_BADGE_REMOVED;
    }
    if (sm.awaiting_second) {
        const bd_verdict_entry *on[16];
        size_t n = bd_verdict_set_on(s, seq, on, 16);
        for (size_t i = 0; i < n && i < 16; i++)
            if (bd_verdict_kind_removes(on[i]->v.verdict)) {
                snprintf(buf, cap, "%s 1/2", bd_verdict_kind_str(on[i]->v.verdict));
                return BD_BADGE_AWAITING;
            }
    }
    if (sm.flaky) {
        snprintf(buf, cap, "flaky");
        return BD_BADGE_FLAKY;
    }
    if (sm.agreed && sm.agreed_on == BD_VERDICT_CONFIRMED) {
        snprintf(buf, cap, "confirmed");
        return BD_BADGE_CONFIRMED;
    }
    snprintf(buf, cap, "reviewed");
    return BD_BADGE_MIXED;
}
