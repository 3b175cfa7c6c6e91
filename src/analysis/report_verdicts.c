/*
 * report_verdicts.c — the verdicts a report shows beside each record (report.h,
 * docs/formats.md#reports): those that count, as the verdict set settled them
 * (docs/provenance.md#verdicts), and the files naming a record that count for nothing,
 * shown as such. Which failures are unreviewed is the review queue's rule
 * (bd_review_unreviewed), never a second one.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

int bd_report_gather_verdicts(bd_report_run *rr, bd_err *err)
{
    const bd_run *run = rr->run;
    for (size_t i = 0; i < run->n_recs; i++)
        rr->unreviewed += bd_review_unreviewed(rr->vs, &run->recs[i]);
    if (!rr->vs)
        return 0;
    for (size_t i = 0; i < rr->vs->n; i++) {
        const bd_verdict_entry *e = &rr->vs->e[i];
        if ((e->state != BD_VST_UNTRUSTED && e->state != BD_VST_BAD) ||
            strcmp(e->v.run_id, run->run_id) != 0 || strcmp(e->v.task_class, run->task_class))
            continue;
        size_t *p = realloc(rr->other, (rr->n_other + 1) * sizeof(*p));
        if (!p)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory building a report");
        rr->other = p;
        rr->other[rr->n_other++] = i;
    }
    return 0;
}

size_t bd_report_verdicts(const bd_report_run *rr, const bd_history_record *rec,
                          bd_report_verdict *out, size_t cap)
{
    if (!rr->vs)
        return 0;
    const bd_verdict_entry *on[64];
    size_t n = bd_verdict_set_on(rr->vs, rec->seq, on, 64), k = 0;
    for (size_t i = 0; i < n && i < 64 && k < cap; i++)
        out[k++] = (bd_report_verdict){on[i], true};
    char sid[BD_HASH_BUF];
    if (rr->n_other == 0 || !rr->ids || bd_score_ids_find(sid, rr->ids, rec->seq) != 0)
        return k;
    for (size_t i = 0; i < rr->n_other && k < cap; i++) {
        const bd_verdict_entry *e = &rr->vs->e[rr->other[i]];
        if (strcmp(e->v.score_id, sid) == 0 && strcmp(e->v.case_id, rec->case_id) == 0)
            out[k++] = (bd_report_verdict){e, false};
    }
    return k;
}

char *bd_report_verdict_who(const bd_report_verdict *v)
{
    const bd_verdict_entry *e = v->e;
    bd_strbuf b = BD_STRBUF_INIT;
    if (e->identity[0]) {
        bd_strbuf_str(&b, e->identity);
        bd_strbuf_str(&b, " (");
    }
    bd_strbuf_str(&b, e->v.reviewer);
    bd_strbuf_str(&b, e->identity[0] ? ")" : "");
    return bd_strbuf_take(&b);
}

const char *bd_report_verdict_why(const bd_report_verdict *v, char *buf, size_t cap)
{
    const bd_verdict_entry *e = v->e;
    if (v->counts)
        snprintf(buf, cap, "%s", "");
    else if (e->state == BD_VST_BAD)
        snprintf(buf, cap, "invalid: %s", e->err.msg);
    else
        snprintf(buf, cap, "untrusted: %s", e->why[0] ? e->why : "no reviewer role");
    return buf;
}

char *bd_report_verdict_line(const bd_report_verdict *v)
{
    char *who = bd_report_verdict_who(v), why[BD_ERR_MSG_MAX + 32];
    bd_strbuf b = BD_STRBUF_INIT;
    bd_strbuf_str(&b, bd_verdict_kind_str(v->e->v.verdict));
    bd_strbuf_str(&b, " by ");
    bd_strbuf_str(&b, who ? who : "?");
    bd_strbuf_str(&b, " at ");
    bd_strbuf_str(&b, v->e->v.at);
    if (!v->counts) {
        bd_strbuf_str(&b, ", counts for nothing (");
        bd_strbuf_str(&b, bd_report_verdict_why(v, why, sizeof(why)));
        bd_strbuf_str(&b, ")");
    }
    if (v->e->v.note && v->e->v.note[0]) {
        bd_strbuf_str(&b, ": ");
        bd_strbuf_str(&b, v->e->v.note);
    }
    free(who);
    if (b.oom || !who) {
        free(bd_strbuf_take(&b));
        return NULL;
    }
    return bd_strbuf_take(&b);
}
