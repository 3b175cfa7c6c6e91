/*
 * hlog.c — reading records (bd_history_read) and the history log, newest first, through
 * the derived index when a filter can use it, else from the records (docs/history.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history_internal.h"

#include "hindex.h"

/* ---- reading ------------------------------------------------------------------------ */

static int read_src(bd_history *h, src *sr, uint64_t seq, bd_history_record *out, bd_err *err)
{
    size_t len;
    const char *p;
    char why[256], path[PATH_MAX + 32];
    memset(out, 0, sizeof(*out));
    hist_record_path(path, sizeof(path), h, seq);
    int r = hist_get_rec(h, sr, seq, &p, &len, why, err);
    if (r == RD_ERROR)
        return -1;
    if (r == RD_ABSENT) {
        bd_err_set(err, BD_E_CHAIN_TAMPERED, path, rec_line(h, seq), 0,
                   "history record %llu does not exist; run ", (unsigned long long)seq);
        return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
    }
    if (r == RD_OK) {
        rec_core core;
        bd_chain_reason reason = parse_record(p, len, &core, out, why);
        if (reason == BD_CHAIN_OK && core.seq != seq) {
            bd_history_record_release(out);
            /* Not where a window read from the end put it: read the whole segment, which
             * places every record by its line, and look again. */
            if (sr->newest_first) {
                hist_src_whole(sr);
                return read_src(h, sr, seq, out, err);
            }
            snprintf(why, sizeof(why), "its place holds record %llu", (unsigned long long)core.seq);
            reason = BD_CHAIN_SCHEMA_INVALID;
        }
        if (reason == BD_CHAIN_OK)
            return 0;
        if (strcmp(why, "out of memory") == 0)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    }
    bd_err_set(err, BD_E_CHAIN_TAMPERED, path, rec_line(h, seq), 0,
               "history record %llu is not a valid record (%s); run ", (unsigned long long)seq,
               why);
    return bd_err_advise(err, BD_ACT_HISTORY_VERIFY, NULL);
}

int bd_history_read(bd_history *h, uint64_t seq, bd_history_record *out, bd_err *err)
{
    src sr = {0};
    memset(out, 0, sizeof(*out));
    int rc = hist_open_dirfd(h, false, err);
    if (rc == 0)
        rc = read_src(h, &sr, seq, out, err);
    hist_src_release(&sr);
    return rc;
}

/* Whether record `r` belongs to run `run_id`: a score record of it, or an audit record
 * whose detail names it (bd_history_audit_run). */
static bool of_run(const bd_history_record *r, const char *run_id)
{
    if (!r->is_audit)
        return strcmp(run_id, r->run_id) == 0;
    char id[BD_HISTORY_AUDIT_RUN_BUF];
    return bd_history_audit_run(r->detail, id) && strcmp(id, run_id) == 0;
}

static bool log_match(const bd_history_log_opts *o, const bd_history_record *r)
{
    if (o->task_class && (!r->task_class || strcmp(o->task_class, r->task_class) != 0))
        return false;
    if (o->case_id && (!r->case_id || strcmp(o->case_id, r->case_id) != 0))
        return false;
    if ((o->failure_mode || o->failed_only) && r->is_audit)
        return false;
    if (o->run_id && !of_run(r, o->run_id))
        return false;
    if (o->failed_only && r->score.passed)
        return false;
    if (o->failure_mode) {
        bool any = false;
        for (size_t i = 0; i < r->score.n_failure_modes && !any; i++)
            any = strcmp(r->score.failure_modes[i].code, o->failure_mode) == 0;
        if (!any)
            return false;
    }
    if (o->keep && !o->keep(r, o->keep_ctx))
        return false;
    return true;
}

/* history log through the index: 0 / -1 as bd_history_log, 1 when the index does not
 * match the segments (the caller reads them instead). */
static int log_indexed(bd_history *h, bd_hindex *ix, const bd_history_log_opts *o, uint64_t head,
                       bd_history_record **out, size_t *n, uint64_t *next, bd_err *err)
{
    size_t limit = o->limit ? o->limit : BD_HISTORY_LOG_DEFAULT;
    size_t page = limit + 16 < 1024 ? limit + 16 : 1024;
    bd_hindex_filter f = {o->task_class, o->case_id, o->run_id, o->failure_mode, o->failed_only};
    bd_history_log_opts ix_only = *o; /* what the index filtered on */
    ix_only.keep = NULL;
    bd_hindex_hit *hits = malloc(page * sizeof(*hits));
    bd_history_record *recs = NULL;
    size_t cnt = 0, cap = 0;
    uint64_t cursor = head + 1, last = 0;
    int rc = 0;
    if (o->before && o->before - 1 < head)
        cursor = o->before;
    if (!hits)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
    while (cnt < limit && rc == 0) {
        long got = bd_hindex_find(ix, &f, cursor, hits, page);
        if (got < 0) {
            rc = 1;
            break;
        }
        for (long i = 0; i < got && cnt < limit && rc == 0; i++) {
            bd_history_record r;
            rc = bd_history_read_at(h, &hits[i], &r, err);
            if (rc != 0)
                break;
            cursor = hits[i].seq;
            /* A record the index named for this filter that does not match it: the index
             * is not this chain's. Read the segments instead and have it rebuilt. */
            if (!log_match(&ix_only, &r)) {
                bd_history_record_release(&r);
                bd_history_index_distrust(h);
                rc = 1;
                break;
            }
            if (!log_match(o, &r)) {
                bd_history_record_release(&r);
                continue;
            }
            if (cnt == cap) {
                size_t nc = cap ? cap * 2 : (limit < 64 ? limit : 64);
                bd_history_record *g = realloc(recs, nc * sizeof(*g));
                if (!g) {
                    bd_history_record_release(&r);
                    rc = bd_err_set(err, BD_E_NOMEM, NULL, 0, 0,
                                    "out of memory reading the history");
                    break;
                }
                recs = g;
                cap = nc;
            }
            recs[cnt++] = r;
            last = r.seq;
        }
        if ((size_t)got < page)
            break;
    }
    free(hits);
    if (rc != 0) {
        bd_history_records_free(recs, cnt);
        return rc;
    }
    *out = recs;
    *n = cnt;
    /* As the walk from the head says it: the next page starts below the last record. */
    *next = cnt == limit && last > 1 ? last : 0;
    return 0;
}

int bd_history_log(bd_history *h, const bd_history_log_opts *o, bd_history_record **out, size_t *n,
                   uint64_t *next_before, bd_err *err)
{
    static const bd_history_log_opts defaults = BD_HISTORY_LOG_OPTS_INIT;
    bd_history_record *recs = NULL;
    size_t cnt = 0;
    uint64_t head = 0, next = 0;
    int rc = -1;
    src sr = {0};
    *out = NULL;
    *n = 0;
    if (!o)
        o = &defaults;
    size_t limit = o->limit ? o->limit : BD_HISTORY_LOG_DEFAULT;
    if (bd_history_head(h, &head, NULL, err) != 0)
        goto out;
    /* A filter: the index says where the matching records are, when it can. */
    if (o->task_class || o->case_id || o->run_id || o->failure_mode || o->failed_only) {
        bd_hindex *ix = bd_history_index(h);
        int ir = 1;
        if (ix && !bd_hindex_has_bad(ix))
            ir = log_indexed(h, ix, o, head, &recs, &cnt, &next, err);
        bd_hindex_close(ix);
        if (ir <= 0) {
            rc = ir;
            goto out;
        }
    }
    uint64_t seq = head;
    if (o->before && o->before - 1 < seq)
        seq = o->before - 1;
    sr.newest_first = true; /* a page needs the end of a segment, not all of it */
    size_t cap = limit < 64 ? limit : 64;
    for (; seq >= 1 && cnt < limit; seq--) {
        bd_history_record r;
        if (read_src(h, &sr, seq, &r, err) != 0)
            goto out;
        if (!log_match(o, &r)) {
            bd_history_record_release(&r);
            continue;
        }
        if (!recs || cnt == cap) {
            size_t ncap = recs ? cap * 2 : cap;
            bd_history_record *p = realloc(recs, ncap * sizeof(*p));
            if (!p) {
                bd_history_record_release(&r);
                bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory reading the history");
                goto out;
            }
            recs = p;
            cap = ncap;
        }
        recs[cnt++] = r;
    }
    /* More records below the page? `seq` is the next one to look at. */
    next = cnt == limit && seq >= 1 ? seq + 1 : 0;
    rc = 0;
out:
    if (rc != 0) {
        bd_history_records_free(recs, cnt);
        recs = NULL;
        cnt = 0;
    }
    hist_src_release(&sr);
    *out = recs;
    *n = cnt;
    if (next_before)
        *next_before = next;
    return rc;
}
