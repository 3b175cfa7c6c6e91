/*
 * import.c — shard bundles into the local chain (docs/scale.md); see import.h.
 */
#include "import.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "canon.h"
#include "exec.h"
#include "fsutil.h"
#include "runsign.h"
#include "shard.h"

typedef struct imp {
    bd_bundle *b; /* sorted by shard */
    size_t nb;
    bd_task_class *tc;
    bd_history *h;
    bd_history_record *prev; /* records of this run already in the local chain */
    size_t n_prev;
    size_t *skip;               /* per bundle: its first skip[i] records are already in the chain */
    char (*local)[BD_HASH_BUF]; /* per appended record, its local hash (flattened) */
    const bd_sign_key *op;      /* the importing operator's key, or NULL */
    uint64_t first_new;         /* seq of the first record appended here */
    char last_new[BD_HASH_BUF]; /* hash of the last one */
    bool has_stop;              /* the chain holds this run's run.stopped record already */
} imp;

static int nomem(bd_err *err)
{
    return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

static int cmp_shard(const void *a, const void *b)
{
    uint32_t x = ((const bd_bundle *)a)->m.shard, y = ((const bd_bundle *)b)->m.shard;
    return x < y ? -1 : x > y;
}

/* The bundles against each other: one run, each shard once. The shards not given are
 * listed in res->missing; whether that refuses the import is settle_missing's. */
static int check_set(imp *im, bd_import_result *res, bd_err *err)
{
    const bd_bundle_manifest *m0 = &im->b[0].m;
    const bd_history_record *first = NULL;
    if (strlen(m0->run_id) >= BD_RUN_ID_MAX)
        return bd_err_set(err, BD_E_BUNDLE_INVALID, im->b[0].dir, 0, 0,
                          "run id '%.64s...' is longer than a run's %d characters; no shard run "
                          "writes it",
                          m0->run_id, BD_RUN_ID_MAX - 1);
    for (size_t i = 0; i < im->nb; i++) {
        const bd_bundle *b = &im->b[i];
        if (strcmp(b->m.run_id, m0->run_id) != 0 || strcmp(b->m.task_class, m0->task_class) != 0 ||
            strcmp(b->m.task_class_digest, m0->task_class_digest) != 0 ||
            b->m.shards != m0->shards || strcmp(b->m.isolation_class, m0->isolation_class) != 0)
            return bd_err_set(err, BD_E_BUNDLE_MIXED, b->dir, 0, 0,
                              "this bundle is of run '%s' (%s, %u shards, %s), the bundle %s of "
                              "run '%s' (%s, %u shards, %s): import one run at a time, all "
                              "shards run with the same bench and isolation class",
                              b->m.run_id, b->m.task_class, b->m.shards, b->m.isolation_class,
                              im->b[0].dir, m0->run_id, m0->task_class, m0->shards,
                              m0->isolation_class);
        if (i > 0 && b->m.shard == im->b[i - 1].m.shard)
            return bd_err_set(err, BD_E_BUNDLE_DUPLICATE, b->dir, 0, 0,
                              "shard %u of run '%s' is given twice (also %s); give each shard's "
                              "bundle once",
                              b->m.shard, b->m.run_id, im->b[i - 1].dir);
        for (size_t k = 0; k < b->n_records; k++) {
            const bd_history_record *r = &b->records[k];
            if (!first)
                first = r;
            else if (r->run_cases != first->run_cases || strcmp(r->run_scope, first->run_scope))
                return bd_err_set(err, BD_E_BUNDLE_MIXED, b->dir, 0, 0,
                                  "its records say the run scored %llu cases (%s), another "
                                  "bundle's %llu (%s): the shards were not run with the same "
                                  "selection",
                                  (unsigned long long)r->run_cases, r->run_scope,
                                  (unsigned long long)first->run_cases, first->run_scope);
        }
    }
    res->shards = m0->shards;
    snprintf(res->run_id, sizeof(res->run_id), "%s", m0->run_id);
    snprintf(res->task_class, sizeof(res->task_class), "%s", m0->task_class);
    /* The shards not given; which of them the chain already holds is settled once it is
     * read (settle_missing). */
    res->missing = calloc((size_t)m0->shards - im->nb + 1, sizeof(uint32_t));
    if (!res->missing)
        return nomem(err);
    size_t j = 0;
    for (uint32_t s = 0; s < m0->shards; s++) {
        if (j < im->nb && im->b[j].m.shard == s)
            j++;
        else
            res->missing[res->n_missing++] = s;
    }
    /* A run scores at least one case; its full set of shards holds exactly run_cases. */
    size_t total = 0;
    for (size_t i = 0; i < im->nb; i++)
        total += im->b[i].m.n_cases;
    if ((!first && !res->n_missing) ||
        (first && (total > first->run_cases || (!res->n_missing && total != first->run_cases))))
        return bd_err_set(err, BD_E_BUNDLE_PARTITION, im->b[0].dir, 0, 0,
                          "the shards of run '%s' hold %zu cases, the run selected %llu: a "
                          "shard's case set is not what its K/N selects (a bundle was edited, "
                          "or the shards ran different selections)",
                          m0->run_id, total, first ? (unsigned long long)first->run_cases : 0ull);
    return 0;
}

/* The bundles against the local bench: the task-class pin and every case pin. */
static int check_pins(imp *im, const bd_bench *bench, bd_err *err)
{
    const bd_bundle_manifest *m0 = &im->b[0].m;
    if (bd_task_class_load(&im->tc, bench, m0->task_class, err) != 0)
        return -1;
    const bd_digests *d = im->tc->digests;
    if (!d || strcmp(d->task_class, m0->task_class_digest) != 0)
        return bd_err_set(err, BD_E_BUNDLE_TASK_CLASS, im->b[0].dir, 0, 0,
                          "the run scored task class '%s' at %s, the local pin is %s: the "
                          "bundles were made with another rubric or registration (bench "
                          "commit %s); check out that bench state, or run the shards again",
                          m0->task_class, m0->task_class_digest, d ? d->task_class : "(none)",
                          m0->bench_commit[0] ? m0->bench_commit : "unknown");
    for (size_t i = 0; i < im->nb; i++) {
        const bd_bundle_manifest *m = &im->b[i].m;
        for (size_t k = 0; k < m->n_cases; k++) {
            const bd_pin *p = bd_digests_find(d, m->cases[k].id);
            if (!p || strcmp(p->digest, m->cases[k].digest) != 0)
                return bd_err_set(err, BD_E_BUNDLE_PIN_MISMATCH, im->b[i].dir, 0, 0,
                                  "case '%s' was scored at %s, the local pin is %s: the bundle "
                                  "is from another bench state (commit %s); check out that "
                                  "state, or run the shards again",
                                  m->cases[k].id, m->cases[k].digest, p ? p->digest : "(none)",
                                  m->bench_commit[0] ? m->bench_commit : "unknown");
        }
    }
    return 0;
}

static int cmp_hash(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The records of this run already in the chain, and how many of each bundle they cover. */
static int find_imported(imp *im, const char *run_id, uint64_t head, bd_err *err)
{
    bd_history_log_opts lo = BD_HISTORY_LOG_OPTS_INIT;
    lo.task_class = im->b[0].m.task_class;
    lo.limit = head ? (size_t)head : 1;
    bd_history_record *recs = NULL;
    size_t n = 0;
    if (head && bd_history_log(im->h, &lo, &recs, &n, NULL, err) != 0)
        return -1;
    im->prev = calloc(n ? n : 1, sizeof(*im->prev));
    im->skip = calloc(im->nb, sizeof(size_t));
    const char **hashes = calloc(n ? n : 1, sizeof(char *));
    int rc = -1;
    if (!im->prev || !im->skip || !hashes) {
        nomem(err);
        goto out;
    }
    /* newest first from the log: keep chain order */
    for (size_t i = n; i-- > 0;) {
        bd_history_record *r = &recs[i];
        char sid[BD_RUN_ID_MAX];
        double cap;
        if (r->is_audit && r->event && strcmp(r->event, BD_RUN_STOPPED_EVENT) == 0 &&
            bd_run_stop_parse(r->detail, sid, &cap) == 0 && strcmp(sid, run_id) == 0)
            im->has_stop = true;
        if (r->is_audit || !r->run_id || strcmp(r->run_id, run_id) != 0)
            continue;
        if (!r->origin.present || r->origin.shards != im->b[0].m.shards) {
            bd_err_set(err, BD_E_BUNDLE_CONFLICT, bd_history_dir(im->h), 0, 0,
                       "record %llu of the local chain already belongs to run '%s' and was not "
                       "imported from these shards: import under another run id (run the "
                       "shards with another --run-id)",
                       (unsigned long long)r->seq, run_id);
            goto out;
        }
        im->prev[im->n_prev++] = *r;
        memset(r, 0, sizeof(*r));
    }
    for (size_t i = 0; i < im->nb; i++) {
        const bd_bundle *b = &im->b[i];
        size_t c = 0;
        for (size_t k = 0; k < im->n_prev; k++)
            if (im->prev[k].origin.shard == b->m.shard)
                hashes[c++] = im->prev[k].origin.bundle_record_hash;
        qsort(hashes, c, sizeof(char *), cmp_hash);
        bool same = c <= b->n_records;
        for (size_t k = 0; same && k < c; k++)
            same = bsearch(&(const char *){b->records[k].hash}, hashes, c, sizeof(char *),
                           cmp_hash) != NULL;
        if (!same) {
            bd_err_set(err, BD_E_BUNDLE_CONFLICT, b->dir, 0, 0,
                       "shard %u of run '%s' is already in the local chain from another bundle "
                       "(the shard was run twice?); its records are not appended again",
                       b->m.shard, run_id);
            goto out;
        }
        im->skip[i] = c;
    }
    rc = 0;
out:
    free(hashes);
    bd_history_records_free(recs, n);
    return rc;
}

void bd_import_shard_words(char *buf, size_t cap, const uint32_t *shards, size_t n, uint32_t of)
{
    if (cap == 0)
        return;
    size_t used = (size_t)snprintf(buf, cap, "shard%s ", n == 1 ? "" : "s");
    /* Runs of three or more consecutive shards as "a-b"; the last item joined by "and". */
    size_t items = 0;
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k + 1 < n && shards[k + 1] == shards[k] + 1)
            k++;
        size_t take = k - i + 1 >= 3 ? k - i + 1 : 1;
        bool last = i + take >= n;
        char item[32];
        if (take > 1)
            snprintf(item, sizeof(item), "%u-%u", shards[i], shards[k]);
        else
            snprintf(item, sizeof(item), "%u", shards[i]);
        const char *sep = items == 0 ? "" : last ? " and " : ", ";
        /* Keep room for ", ... and N more of M". */
        if (used + strlen(sep) + strlen(item) + 48 >= cap) {
            snprintf(buf + used, cap - used, " and %zu more of %u", n - i, of);
            return;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", sep, item);
        items++;
        i += take;
    }
    snprintf(buf + used, cap - used, " of %u", of);
}

/* Once the chain is read, which shards are missing. A shard not given whose records the
 * chain already holds (an earlier import) is not. When the chain will hold every record
 * of the run (run_cases) the run is complete, and no shard is missing either — a shard
 * that selected no case has no record to recognise it by — provided part of the run was
 * imported before (or partial): a first import still needs all N bundles, empty ones
 * included. Without partial, anything still missing refuses the import. */
static int settle_missing(imp *im, bd_import_result *res, const bd_import_opts *o, bd_err *err)
{
    const bd_history_record *any = NULL;
    uint64_t after = im->n_prev;
    for (size_t i = 0; i < im->nb; i++) {
        after += im->b[i].n_records - im->skip[i];
        if (!any && im->b[i].n_records)
            any = &im->b[i].records[0];
    }
    if (!any && im->n_prev)
        any = &im->prev[0];
    res->complete = any && any->run_cases > 0 && after == any->run_cases;
    /* Cases a cost cap kept from running (docs/scale.md) have no record to wait for. */
    uint64_t not_run = 0;
    for (size_t i = 0; i < im->nb; i++)
        not_run += im->b[i].m.n_not_run;
    bool accounted = any && any->run_cases > 0 && after + not_run == any->run_cases;
    bool whole = accounted && (o->partial || im->n_prev > 0);
    size_t kept = 0;
    for (size_t i = 0; i < res->n_missing; i++) {
        bool in_chain = whole;
        for (size_t k = 0; !in_chain && k < im->n_prev; k++)
            in_chain = im->prev[k].origin.shard == res->missing[i];
        if (!in_chain)
            res->missing[kept++] = res->missing[i];
    }
    res->n_missing = kept;
    if (o->partial || (!res->n_missing && (accounted || !any)))
        return 0;
    const char *run = im->b[0].m.run_id;
    if (res->n_missing) {
        char words[256];
        bd_import_shard_words(words, sizeof(words), res->missing, res->n_missing, res->shards);
        return bd_err_set(err, BD_E_BUNDLE_MISSING, NULL, 0, 0,
                          "run '%s': %s %s neither given nor already imported; give every "
                          "shard's bundle, or --partial to import these now",
                          run, words, res->n_missing == 1 ? "is" : "are");
    }
    return bd_err_set(err, BD_E_BUNDLE_MISSING, NULL, 0, 0,
                      "run '%s': the history and these bundles hold %llu of its %llu records "
                      "(an earlier import of a shard did not finish); give every shard's "
                      "bundle, or --partial to import these now",
                      run, (unsigned long long)after, (unsigned long long)any->run_cases);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The local cases a full run does not cover (docs/scale.md): the run is full for the
 * bench it ran on (its own case list: the manifests' cases, and those of its records
 * already in the chain), not for today's, which may have gained cases since. While
 * shards are missing, only a case whose shard is in can be said to be uncovered. */
static int find_uncovered(imp *im, bd_import_result *res, bd_err *err)
{
    const bd_history_record *any = NULL;
    size_t n_covered = im->n_prev;
    for (size_t i = 0; i < im->nb; i++) {
        n_covered += im->b[i].m.n_cases;
        if (!any && im->b[i].n_records)
            any = &im->b[i].records[0];
    }
    if (!any && im->n_prev)
        any = &im->prev[0];
    if (!any || !any->run_scope || strcmp(any->run_scope, "full") != 0 || im->tc->n_cases == 0)
        return 0;
    const char **covered = calloc(n_covered ? n_covered : 1, sizeof(char *));
    bool *in = calloc(res->shards, sizeof(bool));
    int rc = -1;
    if (!covered || !in || !(res->uncovered = calloc(im->tc->n_cases, sizeof(*res->uncovered)))) {
        nomem(err);
        goto out;
    }
    size_t c = 0;
    for (size_t i = 0; i < im->nb; i++) {
        in[im->b[i].m.shard] = true;
        for (size_t k = 0; k < im->b[i].m.n_cases; k++)
            covered[c++] = im->b[i].m.cases[k].id;
    }
    for (size_t k = 0; k < im->n_prev; k++) {
        covered[c++] = im->prev[k].case_id;
        if (im->prev[k].origin.shard < res->shards)
            in[im->prev[k].origin.shard] = true;
    }
    qsort(covered, c, sizeof(char *), cmp_str);
    for (size_t i = 0; i < im->tc->n_cases; i++) {
        const char *id = im->tc->case_ids[i];
        if (bsearch(&id, covered, c, sizeof(char *), cmp_str))
            continue;
        if (!res->complete && !in[bd_shard_of(id, res->shards)])
            continue;
        if (!(res->uncovered[res->n_uncovered] = strdup(id))) {
            nomem(err);
            goto out;
        }
        res->n_uncovered++;
    }
    rc = 0;
out:
    free(covered);
    free(in);
    return rc;
}

/* One import at a time per bench: two imports of the same run must not both find it
 * absent and both append it. (The history's own lock serialises single appends.) Returns
 * the locked descriptor (closing it unlocks), or -1 with io.error. */
static int import_lock(const bd_bench *bench, bd_err *err)
{
    char *dir = bd_path_join(bench->root, ".benchdesk");
    char *path = dir ? bd_path_join(dir, "import.lock") : NULL;
    int fd = -1;
    if (!path) {
        nomem(err);
        goto out;
    }
    if (bd_mkdir_p(dir, 0700, err) != 0)
        goto out;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        bd_err_set(err, BD_E_IO, path, 0, 0, "cannot lock it: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
out:
    free(path);
    free(dir);
    return fd;
}

/* Sign the run as the chain now holds it (runsign.h): its records carrying the importing
 * operator's fingerprint, those of an earlier import by the same key included. */
static int sign_import(imp *im, bd_import_result *res, bd_err *err)
{
    uint64_t count = res->appended, first = im->first_new;
    for (size_t k = 0; k < im->n_prev; k++) {
        const char *fp = im->prev[k].operator_fingerprint;
        if (fp && strcmp(fp, im->op->fingerprint) == 0) {
            count++;
            if (im->prev[k].seq < first)
                first = im->prev[k].seq;
        }
    }
    return bd_run_operator_sign(im->h, im->op, NULL, im->tc ? im->tc->name : res->task_class,
                                res->run_id, count, first, im->last_new, &res->signed_seq, err);
}

/* Append every record not yet in the chain, shard by shard, in bundle seq order. */
static int append_all(imp *im, bd_import_result *res, bd_err *err)
{
    size_t total = 0;
    for (size_t i = 0; i < im->nb; i++)
        total += im->b[i].n_records;
    im->local = calloc(total ? total : 1, sizeof(*im->local));
    if (!im->local)
        return nomem(err);
    size_t at = 0;
    for (size_t i = 0; i < im->nb; i++) {
        const bd_bundle *b = &im->b[i];
        res->already += im->skip[i];
        for (size_t k = 0; k < b->n_records; k++, at++) {
            if (k < im->skip[i])
                continue;
            const bd_history_record *r = &b->records[k];
            bd_history_score_fields f;
            if (bd_history_score_fields_of(&f, r) != 0)
                return bd_err_set(err, BD_E_INTERNAL, b->dir, 0, 0, "a checked record is not v2");
            bd_history_origin origin = {.present = true,
                                        .shard = b->m.shard,
                                        .shards = b->m.shards,
                                        .run_id = (char *)b->m.run_id,
                                        .host = (char *)b->m.host};
            snprintf(origin.bundle_record_hash, sizeof(origin.bundle_record_hash), "%s", r->hash);
            f.origin = &origin;
            /* The importing operator vouches for a bundle that is not signed itself. */
            f.operator_fingerprint = im->op ? im->op->fingerprint : NULL;
            uint64_t seq = 0;
            int ok = bd_history_append_score(im->h, &f, &r->score, &seq, im->local[at], err);
            /* The first append removes a torn final line a crash left: keep its note. */
            if (bd_history_repair_note(im->h))
                snprintf(res->history_repaired, sizeof(res->history_repaired), "%s",
                         bd_history_repair_note(im->h));
            if (ok != 0)
                return -1;
            if (!im->first_new)
                im->first_new = seq;
            memcpy(im->last_new, im->local[at], BD_HASH_BUF);
            res->appended++;
        }
    }
    return 0;
}

static int cmp_result(const void *a, const void *b)
{
    return strcmp((*(const bd_case_result *const *)a)->case_id,
                  (*(const bd_case_result *const *)b)->case_id);
}

static time_t parse_utc(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return timegm(&tm);
}

static void fill_result(bd_case_result *c, const bd_history_record *r, const char *local_hash)
{
    c->case_id = r->case_id;
    c->score = r->score; /* borrowed: never released through c */
    c->wall_ms = (int64_t)(parse_utc(r->finished_at) - parse_utc(r->started_at)) * 1000;
    snprintf(c->started_at, sizeof(c->started_at), "%.19sZ", r->started_at);
    snprintf(c->finished_at, sizeof(c->finished_at), "%.19sZ", r->finished_at);
    snprintf(c->case_digest, sizeof(c->case_digest), "%s", r->case_digest);
    snprintf(c->cassette_digest, sizeof(c->cassette_digest), "%s",
             r->cassette_digest ? r->cassette_digest : "");
    snprintf(c->record_hash, sizeof(c->record_hash), "%s", local_hash);
}

/* The run summary of every record of the run now in the chain, written as a local run's. */
/* A run merged from shards the cost cap stopped (a manifest with not_run and
 * cost_cap_usd; docs/scale.md): its summary says so — the cap (the largest of the
 * shards'), the cases not run (s->not_run: one block holding the pointers and the ids,
 * which bd_run_summary_release frees) — and, once per run, the chain gets the run.stopped
 * record a local capped run leaves (bd_run_stop_append), after the run's records; then
 * res->chain_head is its hash. Returns 0, or -1 with `err`. */
static int stop_merged(imp *im, bd_import_result *res, bd_err *err)
{
    bd_run_summary *s = &res->summary;
    size_t n = 0, bytes = 0;
    bool capped = false;
    for (size_t i = 0; i < im->nb; i++) {
        const bd_bundle_manifest *m = &im->b[i].m;
        if (!m->n_not_run || !m->has_cost_cap)
            continue;
        if (!capped || m->cost_cap_usd > s->cost_cap_usd)
            s->cost_cap_usd = m->cost_cap_usd;
        capped = true;
        for (size_t k = 0; k < m->n_cases; k++)
            if (m->cases[k].not_run) {
                n++;
                bytes += strlen(m->cases[k].id) + 1;
            }
    }
    if (!capped)
        return 0; /* no shard says a cap stopped it */
    const char **ids = malloc(n * sizeof(*ids) + bytes);
    if (!ids)
        return nomem(err);
    char *at = (char *)(ids + n);
    size_t u = 0;
    for (size_t i = 0; i < im->nb; i++) {
        const bd_bundle_manifest *m = &im->b[i].m;
        for (size_t k = 0; m->has_cost_cap && k < m->n_cases; k++)
            if (m->cases[k].not_run) {
                size_t l = strlen(m->cases[k].id) + 1;
                ids[u++] = memcpy(at, m->cases[k].id, l);
                at += l;
            }
    }
    qsort(ids, u, sizeof(*ids), cmp_str);
    free(s->not_run);
    s->not_run = ids;
    s->n_not_run = u;
    s->has_cost_cap = s->stopped_cost_cap = true;
    if (im->has_stop)
        return 0;
    uint64_t seq = 0;
    if (bd_run_stop_append(im->h, s, &seq, res->chain_head, err) != 0)
        return -1;
    im->has_stop = true;
    return 0;
}

static int write_summary(imp *im, bd_import_result *res, const bd_bench *bench, bd_err *err)
{
    size_t n = im->n_prev + res->appended, at = 0, u = 0;
    bd_case_result *cr = calloc(n ? n : 1, sizeof(*cr));
    const bd_case_result **p = calloc(n ? n : 1, sizeof(*p));
    cJSON *o = NULL;
    char *dir = NULL;
    int rc = -1;
    if (!cr || !p) {
        nomem(err);
        goto out;
    }
    for (size_t k = 0; k < im->n_prev; k++, u++)
        fill_result(&cr[u], &im->prev[k], im->prev[k].hash);
    for (size_t i = 0; i < im->nb; i++)
        for (size_t k = 0; k < im->b[i].n_records; k++, at++)
            if (k >= im->skip[i])
                fill_result(&cr[u++], &im->b[i].records[k], im->local[at]);
    time_t t0 = 0, t1 = 0;
    for (size_t k = 0; k < u; k++) {
        p[k] = &cr[k];
        time_t a = parse_utc(cr[k].started_at), b = parse_utc(cr[k].finished_at);
        if (k == 0 || a < t0)
            t0 = a;
        if (k == 0 || b > t1)
            t1 = b;
    }
    qsort(p, u, sizeof(*p), cmp_result);
    bd_run_summary *s = &res->summary;
    const bd_bundle_manifest *m0 = &im->b[0].m;
    snprintf(s->run_id, sizeof(s->run_id), "%.*s", BD_RUN_ID_MAX - 1, m0->run_id);
    snprintf(s->task_class, sizeof(s->task_class), "%s", m0->task_class);
    snprintf(s->task_class_digest, sizeof(s->task_class_digest), "%s", m0->task_class_digest);
    if (bd_isolation_parse(m0->isolation_class, &s->isolation) != 0)
        s->isolation = BD_ISO_SUBPROCESS;
    s->cases_selected = u;
    for (size_t i = 0; i < im->nb; i++)
        if (im->b[i].n_records)
            s->cases_selected = (size_t)im->b[i].records[0].run_cases;
    bd_run_summary_tally(s, p, u);
    s->wall_ms = (int64_t)(t1 - t0) * 1000;
    struct tm tm;
    gmtime_r(&t0, &tm);
    strftime(s->started_at, sizeof(s->started_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    gmtime_r(&t1, &tm);
    strftime(s->finished_at, sizeof(s->finished_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (stop_merged(im, res, err) != 0)
        goto out;
    s->has_chain_head = true;
    snprintf(s->chain_head, sizeof(s->chain_head), "%s", res->chain_head);
    o = bd_run_summary_file_head(s, p, u);
    cJSON *org = o ? cJSON_AddObjectToObject(o, "origin") : NULL;
    cJSON *miss = org ? cJSON_AddArrayToObject(org, "missing_shards") : NULL;
    if (!miss || !cJSON_AddNumberToObject(org, "shards", m0->shards)) {
        nomem(err);
        goto out;
    }
    for (size_t i = 0; i < res->n_missing; i++)
        cJSON_AddItemToArray(miss, cJSON_CreateNumber(res->missing[i]));
    dir = bd_path_join(bench->root, BD_RUNS_DIR);
    if (!dir) {
        nomem(err);
        goto out;
    }
    snprintf(res->summary_path, sizeof(res->summary_path), "%s/%s.json", dir, m0->run_id);
    if (bd_mkdir_p(dir, 0700, err) != 0)
        goto out;
    int wrote = bd_run_summary_stream(res->summary_path, o, p, u, err);
    if (wrote == 1)
        bd_err_set(err, BD_E_BUNDLE_INVALID, res->summary_path, 0, 0,
                   "the merged run summary has no canonical JSON text (a bundle's string that "
                   "is not UTF-8); nothing was written");
    if (wrote != 0)
        goto out;
    res->has_summary = true;
    rc = 0;
out:
    cJSON_Delete(o);
    free(dir);
    free(p);
    free(cr);
    return rc;
}

int bd_import_run(bd_import_result *res, const bd_bench *bench, const char *const *dirs, size_t n,
                  const bd_import_opts *opts, bd_err *err)
{
    static const bd_import_opts defaults = {0};
    const bd_import_opts *o = opts ? opts : &defaults;
    memset(res, 0, sizeof(*res));
    imp im;
    memset(&im, 0, sizeof(im));
    im.op = o->operator_key;
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    int rc = -1, lock = -1;
    if (n == 0)
        return bd_err_set(err, BD_E_USAGE, NULL, 0, 0, "no bundle given");
    if (!(im.b = calloc(n, sizeof(*im.b))))
        return nomem(err);
    for (; im.nb < n; im.nb++)
        if (bd_bundle_load(&im.b[im.nb], dirs[im.nb], err) != 0)
            goto out;
    qsort(im.b, im.nb, sizeof(*im.b), cmp_shard);
    if (check_set(&im, res, err) != 0 || check_pins(&im, bench, err) != 0)
        goto out;
    res->bundles = im.nb;
    /* Everything below runs on a verified chain, one import at a time. */
    if ((lock = import_lock(bench, err)) < 0)
        goto out;
    if (bd_history_open(&im.h, bench->root, BD_HISTORY_CREATE, err) != 0 ||
        bd_history_verify(im.h, 0, &vr, err) != 0)
        goto out;
    if (find_imported(&im, res->run_id, vr.count, err) != 0 ||
        settle_missing(&im, res, o, err) != 0 || find_uncovered(&im, res, err) != 0 ||
        append_all(&im, res, err) != 0)
        goto out;
    if (im.op && res->appended && sign_import(&im, res, err) != 0)
        goto out;
    uint64_t seq = 0;
    if (bd_history_head(im.h, &seq, res->chain_head, err) != 0)
        goto out;
    if (res->appended && write_summary(&im, res, bench, err) != 0)
        goto out;
    rc = 0;
out:
    bd_history_verify_result_release(&vr);
    for (size_t i = 0; i < im.nb; i++)
        bd_bundle_release(&im.b[i]);
    free(im.b);
    bd_history_records_free(im.prev, im.n_prev);
    free(im.skip);
    free(im.local);
    bd_task_class_free(im.tc);
    bd_history_free(im.h);
    if (lock >= 0)
        close(lock);
    if (rc != 0) {
        char repaired[sizeof(res->history_repaired)];
        memcpy(repaired, res->history_repaired, sizeof(repaired));
        bd_import_result_release(res);
        memcpy(res->history_repaired, repaired, sizeof(repaired));
    }
    return rc;
}

void bd_import_result_release(bd_import_result *r)
{
    if (!r)
        return;
    free(r->missing);
    for (size_t i = 0; i < r->n_uncovered; i++)
        free(r->uncovered[i]);
    free(r->uncovered);
    bd_run_summary_release(&r->summary);
    memset(r, 0, sizeof(*r));
}
