/*
 * hindex.c — the history's derived index in SQLite (hindex.h).
 *
 * Crash safety is SQLite's: rows and the head they lead to are committed in one
 * transaction (rollback journal, synchronous=NORMAL), so a crash leaves the index as it
 * was before, and a file SQLite cannot read is removed and built again.
 */
#include "hindex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

/* Bump when the schema changes: an index of another version is rebuilt. */
#define HX_SCHEMA "benchdesk-history-index-3"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS str(id INTEGER PRIMARY KEY, s TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS rec(seq INTEGER PRIMARY KEY, off INTEGER NOT NULL,"
    " len INTEGER NOT NULL, flags INTEGER NOT NULL, tc INTEGER, kase INTEGER, run INTEGER,"
    " cd INTEGER, tcd INTEGER, iso INTEGER, fin INTEGER);"
    "CREATE TABLE IF NOT EXISTS fm(code INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " PRIMARY KEY(code, seq)) WITHOUT ROWID;"
    /* The newest score record of each (task class, case): stale marks, the TUI. */
    "CREATE TABLE IF NOT EXISTS latest(tc INTEGER NOT NULL, kase INTEGER NOT NULL,"
    " seq INTEGER NOT NULL, PRIMARY KEY(tc, kase)) WITHOUT ROWID;"
    /* The newest score record of each (run, case): compare's runs. */
    "CREATE TABLE IF NOT EXISTS runcase(run INTEGER NOT NULL, kase INTEGER NOT NULL,"
    " seq INTEGER NOT NULL, PRIMARY KEY(run, kase)) WITHOUT ROWID;"
    /* recommend's groups (bd_hindex_groups) per UTC day of finished_at (-1: unreadable):
     * counts and newest seq; the ids are 0 where the record has no such string. */
    "CREATE TABLE IF NOT EXISTS agg(tc INTEGER NOT NULL, kase INTEGER NOT NULL,"
    " cd INTEGER NOT NULL, tcd INTEGER NOT NULL, iso INTEGER NOT NULL, pv INTEGER NOT NULL,"
    " day INTEGER NOT NULL, n INTEGER NOT NULL, top INTEGER NOT NULL,"
    " PRIMARY KEY(tc, day, kase, cd, tcd, iso, pv)) WITHOUT ROWID;";

/* The secondary indexes: created at the end of a rebuild (sorting once is much faster
 * than keeping them up to date row by row), kept up to date by an extension. */
static const char index_sql[] = "CREATE INDEX IF NOT EXISTS rec_tc ON rec(tc);"
                                "CREATE INDEX IF NOT EXISTS rec_case ON rec(kase);"
                                "CREATE INDEX IF NOT EXISTS rec_run ON rec(run);"
                                "CREATE INDEX IF NOT EXISTS rec_fin ON rec(tc, fin);";

/* Interned strings of the current transaction: string -> id, open addressing. */
typedef struct intern {
    char **s;
    int64_t *id;
    size_t cap, n;
} intern;

/* The newest seq of each (task class, case) added in the current transaction, written to
 * `latest` at commit (one upsert per case, not per record). */
typedef struct latest_map {
    uint64_t *key; /* tc << 32 | case; 0: empty */
    int64_t *seq;
    size_t cap, n;
} latest_map;

/* The agg rows of the current transaction, written at commit. */
typedef struct agg_key {
    int64_t tc, kase, cd, tcd, iso, pv, day;
} agg_key;

typedef struct agg_map {
    agg_key *key;
    int64_t *n, *top;
    bool *used;
    size_t cap, cnt;
} agg_map;

static void agg_clear(agg_map *m)
{
    free(m->key);
    free(m->n);
    free(m->top);
    free(m->used);
    memset(m, 0, sizeof(*m));
}

static size_t agg_hash(const agg_key *k, size_t cap)
{
    uint64_t h = 1469598103934665603ull;
    const int64_t *w = &k->tc;
    for (int i = 0; i < 7; i++)
        h = (h ^ (uint64_t)w[i]) * 1099511628211ull;
    return (size_t)(h ^ h >> 29) & (cap - 1);
}

static int agg_put(agg_map *m, const agg_key *k, int64_t seq)
{
    if ((m->cnt + 1) * 2 > m->cap) {
        agg_map g = {0};
        g.cap = m->cap ? m->cap * 2 : 256;
        g.key = calloc(g.cap, sizeof(*g.key));
        g.n = calloc(g.cap, sizeof(*g.n));
        g.top = calloc(g.cap, sizeof(*g.top));
        g.used = calloc(g.cap, sizeof(*g.used));
        if (!g.key || !g.n || !g.top || !g.used) {
            agg_clear(&g);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->used[i])
                continue;
            size_t j = agg_hash(&m->key[i], g.cap);
            while (g.used[j])
                j = (j + 1) & (g.cap - 1);
            g.used[j] = true;
            g.key[j] = m->key[i];
            g.n[j] = m->n[i];
            g.top[j] = m->top[i];
        }
        g.cnt = m->cnt;
        agg_clear(m);
        *m = g;
    }
    size_t j = agg_hash(k, m->cap);
    while (m->used[j] && memcmp(&m->key[j], k, sizeof(*k)) != 0)
        j = (j + 1) & (m->cap - 1);
    if (!m->used[j]) {
        m->used[j] = true;
        m->key[j] = *k;
        m->cnt++;
    }
    m->n[j]++;
    if (seq > m->top[j])
        m->top[j] = seq;
    return 0;
}

struct bd_hindex {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *ins_rec, *ins_fm, *get_str, *ins_str;
    intern in;
    uint64_t bad_added; /* BD_HX_BAD rows of the open transaction */
    latest_map lm;      /* (task class, case) -> newest seq */
    latest_map rm;      /* (run, case) -> newest seq */
    agg_map am;
};

static void lm_clear(latest_map *m)
{
    free(m->key);
    free(m->seq);
    memset(m, 0, sizeof(*m));
}

static int lm_put(latest_map *m, uint64_t key, int64_t seq)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        uint64_t *k = calloc(cap, sizeof(*k));
        int64_t *v = calloc(cap, sizeof(*v));
        if (!k || !v) {
            free(k);
            free(v);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->key[i])
                continue;
            size_t j = (m->key[i] * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (k[j])
                j = (j + 1) & (cap - 1);
            k[j] = m->key[i];
            v[j] = m->seq[i];
        }
        free(m->key);
        free(m->seq);
        m->key = k;
        m->seq = v;
        m->cap = cap;
    }
    size_t j = (key * 0x9E3779B97F4A7C15ull >> 20) & (m->cap - 1);
    while (m->key[j] && m->key[j] != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->key[j]) {
        m->key[j] = key;
        m->n++;
    }
    if (seq > m->seq[j])
        m->seq[j] = seq;
    return 0;
}

static void intern_clear(intern *in)
{
    for (size_t i = 0; i < in->cap; i++)
        free(in->s ? in->s[i] : NULL);
    free(in->s);
    free(in->id);
    memset(in, 0, sizeof(*in));
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int intern_grow(intern *in)
{
    size_t cap = in->cap ? in->cap * 2 : 256;
    char **s = calloc(cap, sizeof(*s));
    int64_t *id = calloc(cap, sizeof(*id));
    if (!s || !id) {
        free(s);
        free(id);
        return -1;
    }
    for (size_t i = 0; i < in->cap; i++) {
        if (!in->s[i])
            continue;
        size_t j = fnv(in->s[i]) & (cap - 1);
        while (s[j])
            j = (j + 1) & (cap - 1);
        s[j] = in->s[i];
        id[j] = in->id[i];
    }
    free(in->s);
    free(in->id);
    in->s = s;
    in->id = id;
    in->cap = cap;
    return 0;
}

/* The id of `s` (NULL -> 0, meaning SQL NULL), inserting it when new; -1 on failure. */
static int64_t str_id(bd_hindex *ix, const char *s)
{
    if (!s)
        return 0;
    intern *in = &ix->in;
    if ((in->n + 1) * 2 > in->cap && intern_grow(in) != 0)
        return -1;
    size_t j = fnv(s) & (in->cap - 1);
    while (in->s[j]) {
        if (strcmp(in->s[j], s) == 0)
            return in->id[j];
        j = (j + 1) & (in->cap - 1);
    }
    int64_t id = -1;
    sqlite3_reset(ix->get_str);
    sqlite3_bind_text(ix->get_str, 1, s, -1, SQLITE_STATIC);
    int rc = sqlite3_step(ix->get_str);
    if (rc == SQLITE_ROW) {
        id = sqlite3_column_int64(ix->get_str, 0);
    } else if (rc == SQLITE_DONE) {
        sqlite3_reset(ix->ins_str);
        sqlite3_bind_text(ix->ins_str, 1, s, -1, SQLITE_STATIC);
        if (sqlite3_step(ix->ins_str) == SQLITE_DONE)
            id = sqlite3_last_insert_rowid(ix->db);
    }
    sqlite3_reset(ix->get_str);
    sqlite3_reset(ix->ins_str);
    if (id < 0)
        return -1;
    if (!(in->s[j] = strdup(s)))
        return -1;
    in->id[j] = id;
    in->n++;
    return id;
}

/* The id of `s` if it is interned, 0 when it is not (nothing can match it), -1 on error. */
static int64_t str_find(bd_hindex *ix, const char *s)
{
    sqlite3_stmt *st = NULL;
    int64_t id = -1;
    if (sqlite3_prepare_v2(ix->db, "SELECT id FROM str WHERE s=?", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, s, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : rc == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return id;
}

static void finalize_all(bd_hindex *ix)
{
    sqlite3_stmt **all[] = {&ix->ins_rec, &ix->ins_fm, &ix->get_str, &ix->ins_str};
    for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
}

static void remove_files(const char *path)
{
    char j[4096];
    unlink(path);
    snprintf(j, sizeof(j), "%s-journal", path);
    unlink(j);
}

/* Open the file and check it is an index of this schema. 0, or -1 (not usable). */
static int try_open(bd_hindex *ix)
{
    if (sqlite3_open_v2(ix->path, &ix->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                        NULL) != SQLITE_OK)
        return -1;
    /* Another process writing it: wait a little, then the caller reads the segments. */
    sqlite3_busy_timeout(ix->db, 3000);
    chmod(ix->path, 0600); /* what the history holds stays the owner's */
    if (sqlite3_exec(ix->db,
                     "PRAGMA journal_mode=DELETE; PRAGMA synchronous=NORMAL;"
                     "PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(ix->db, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    sqlite3_stmt *st = NULL;
    int ok = -1;
    if (sqlite3_prepare_v2(ix->db, "SELECT v FROM meta WHERE k='schema'", -1, &st, NULL) ==
        SQLITE_OK) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            ok = 0; /* a new file */
        else if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT &&
                 strcmp((const char *)sqlite3_column_text(st, 0), HX_SCHEMA) == 0)
            ok = 0;
    }
    sqlite3_finalize(st);
    if (ok != 0)
        return -1;
    if (sqlite3_prepare_v2(ix->db,
                           "INSERT INTO rec(seq,off,len,flags,tc,kase,run,cd,tcd,iso,fin)"
                           " VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &ix->ins_rec, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(ix->db, "INSERT OR IGNORE INTO fm(code,seq) VALUES(?,?)", -1,
                           &ix->ins_fm, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(ix->db, "SELECT id FROM str WHERE s=?", -1, &ix->get_str, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(ix->db, "INSERT INTO str(s) VALUES(?)", -1, &ix->ins_str, NULL) !=
            SQLITE_OK)
        return -1;
    return 0;
}

static void close_db(bd_hindex *ix)
{
    finalize_all(ix);
    intern_clear(&ix->in);
    lm_clear(&ix->lm);
    lm_clear(&ix->rm);
    agg_clear(&ix->am);
    if (ix->db)
        sqlite3_close(ix->db);
    ix->db = NULL;
}

int bd_hindex_open(bd_hindex **out, const char *path, bd_err *err)
{
    *out = NULL;
    bd_hindex *ix = calloc(1, sizeof(*ix));
    if (!ix || !(ix->path = strdup(path))) {
        free(ix);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory opening the index");
    }
    if (try_open(ix) != 0) {
        /* Not an index we can use (corrupt, a crash mid-build of an older version, another
         * schema): it is derived, so start it again. */
        close_db(ix);
        remove_files(path);
        if (try_open(ix) != 0) {
            bd_err_set(err, BD_E_IO, path, 0, 0,
                       "cannot create the history index (%s); queries read the segments",
                       ix->db ? sqlite3_errmsg(ix->db) : "cannot open");
            close_db(ix);
            free(ix->path);
            free(ix);
            return -1;
        }
    }
    *out = ix;
    return 0;
}

void bd_hindex_close(bd_hindex *ix)
{
    if (!ix)
        return;
    close_db(ix);
    free(ix->path);
    free(ix);
}

int bd_hindex_get_head(bd_hindex *ix, bd_hindex_head *head)
{
    memset(head, 0, sizeof(*head));
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(ix->db,
                           "SELECT (SELECT v FROM meta WHERE k='head_seq'),"
                           " (SELECT v FROM meta WHERE k='head_hash'),"
                           " (SELECT v FROM meta WHERE k='head_off'),"
                           " (SELECT v FROM meta WHERE k='head_len')",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
            rc = 0; /* empty */
        } else if (sqlite3_column_type(st, 1) == SQLITE_BLOB && sqlite3_column_bytes(st, 1) == 32) {
            head->seq = (uint64_t)sqlite3_column_int64(st, 0);
            memcpy(head->hash, sqlite3_column_blob(st, 1), 32);
            head->off = (uint64_t)sqlite3_column_int64(st, 2);
            head->len = (uint32_t)sqlite3_column_int64(st, 3);
            rc = 0;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int bd_hindex_reset(bd_hindex *ix)
{
    /* A new file rather than DELETE: emptying a million rows would journal them all. A
     * reader that has the old file open keeps reading it; the old journal goes with it. */
    close_db(ix);
    remove_files(ix->path);
    if (try_open(ix) == 0)
        return 0;
    close_db(ix);
    return -1;
}

int bd_hindex_reopen(bd_hindex *ix)
{
    close_db(ix);
    if (try_open(ix) == 0)
        return 0;
    return bd_hindex_reset(ix);
}

int bd_hindex_begin(bd_hindex *ix)
{
    intern_clear(&ix->in);
    lm_clear(&ix->lm);
    lm_clear(&ix->rm);
    agg_clear(&ix->am);
    ix->bad_added = 0;
    return sqlite3_exec(ix->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static void bind_id(sqlite3_stmt *st, int col, int64_t id)
{
    if (id > 0)
        sqlite3_bind_int64(st, col, id);
    else
        sqlite3_bind_null(st, col);
}

int bd_hindex_add(bd_hindex *ix, const bd_hindex_row *r)
{
    int64_t tc = str_id(ix, r->task_class), kase = str_id(ix, r->case_id),
            run = str_id(ix, r->run_id), cd = str_id(ix, r->case_digest),
            tcd = str_id(ix, r->tc_digest), iso = str_id(ix, r->isolation);
    if (tc < 0 || kase < 0 || run < 0 || cd < 0 || tcd < 0 || iso < 0)
        return -1;
    sqlite3_stmt *st = ix->ins_rec;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)r->seq);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)r->off);
    sqlite3_bind_int64(st, 3, r->len);
    sqlite3_bind_int(st, 4, (int)r->flags);
    bind_id(st, 5, tc);
    bind_id(st, 6, kase);
    bind_id(st, 7, run);
    bind_id(st, 8, cd);
    bind_id(st, 9, tcd);
    bind_id(st, 10, iso);
    sqlite3_bind_int64(st, 11, r->finished);
    if (step_done(st) != 0)
        return -1;
    if (r->flags & BD_HX_BAD)
        ix->bad_added++;
    for (size_t i = 0; i < r->n_fm; i++) {
        int64_t code = str_id(ix, r->fm_codes[i]);
        if (code <= 0)
            return -1;
        sqlite3_bind_int64(ix->ins_fm, 1, code);
        sqlite3_bind_int64(ix->ins_fm, 2, (sqlite3_int64)r->seq);
        if (step_done(ix->ins_fm) != 0)
            return -1;
    }
    if (!(r->flags & (BD_HX_AUDIT | BD_HX_BAD)) && tc > 0 && kase > 0 &&
        lm_put(&ix->lm, (uint64_t)tc << 32 | (uint64_t)kase, (int64_t)r->seq) != 0)
        return -1;
    if (!(r->flags & (BD_HX_AUDIT | BD_HX_BAD)) && run > 0 && kase > 0 &&
        lm_put(&ix->rm, (uint64_t)run << 32 | (uint64_t)kase, (int64_t)r->seq) != 0)
        return -1;
    if (!(r->flags & (BD_HX_AUDIT | BD_HX_BAD)) && tc > 0) {
        agg_key k = {tc,
                     kase,
                     cd,
                     tcd,
                     iso,
                     (r->flags & BD_HX_PROV) != 0,
                     r->finished < 0 ? -1 : r->finished / 86400};
        if (agg_put(&ix->am, &k, (int64_t)r->seq) != 0)
            return -1;
    }
    return 0;
}

/* Write a pair map into `table` (its first key column `col`, then kase, seq). */
static int lm_flush(bd_hindex *ix, const latest_map *m, const char *table, const char *col)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO %s(%s,kase,seq) VALUES(?,?,?) ON CONFLICT DO UPDATE SET"
             " seq=excluded.seq WHERE excluded.seq>seq",
             table, col);
    sqlite3_stmt *st = NULL;
    if (m->n == 0)
        return 0;
    if (sqlite3_prepare_v2(ix->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < m->cap && rc == 0; i++) {
        if (!m->key[i])
            continue;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)(m->key[i] >> 32));
        sqlite3_bind_int64(st, 2, (sqlite3_int64)(m->key[i] & 0xffffffffu));
        sqlite3_bind_int64(st, 3, m->seq[i]);
        rc = step_done(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int bd_hindex_commit(bd_hindex *ix, const bd_hindex_head *head)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (lm_flush(ix, &ix->lm, "latest", "tc") != 0 || lm_flush(ix, &ix->rm, "runcase", "run") != 0)
        goto fail;
    if (ix->am.cnt > 0) {
        sqlite3_stmt *ins = NULL;
        if (sqlite3_prepare_v2(ix->db,
                               "INSERT INTO agg(tc,kase,cd,tcd,iso,pv,day,n,top)"
                               " VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT DO UPDATE SET"
                               " n = n + excluded.n, top = max(top, excluded.top)",
                               -1, &ins, NULL) != SQLITE_OK)
            goto fail;
        for (size_t i = 0; i < ix->am.cap; i++) {
            if (!ix->am.used[i])
                continue;
            const int64_t *w = &ix->am.key[i].tc;
            for (int c = 0; c < 7; c++)
                sqlite3_bind_int64(ins, c + 1, w[c]);
            sqlite3_bind_int64(ins, 8, ix->am.n[i]);
            sqlite3_bind_int64(ins, 9, ix->am.top[i]);
            if (step_done(ins) != 0) {
                sqlite3_finalize(ins);
                goto fail;
            }
        }
        sqlite3_finalize(ins);
    }
    if (sqlite3_exec(ix->db, index_sql, NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    if (sqlite3_prepare_v2(ix->db,
                           "INSERT OR REPLACE INTO meta(k,v) VALUES('schema',?1),('head_seq',?2),"
                           "('head_hash',?3),('head_off',?4),('head_len',?5),('bad',"
                           " coalesce((SELECT v FROM meta WHERE k='bad'),0)+?6)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, HX_SCHEMA, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)head->seq);
        sqlite3_bind_blob(st, 3, head->hash, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)head->off);
        sqlite3_bind_int64(st, 5, head->len);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)ix->bad_added);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
        lm_clear(&ix->lm);
        agg_clear(&ix->am);
        return 0;
    }
fail:
    bd_hindex_rollback(ix);
    return -1;
}

void bd_hindex_rollback(bd_hindex *ix)
{
    sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
    intern_clear(&ix->in);
    lm_clear(&ix->lm);
    lm_clear(&ix->rm);
    agg_clear(&ix->am);
}

bool bd_hindex_has_bad(bd_hindex *ix)
{
    sqlite3_stmt *st = NULL;
    bool bad = true; /* when in doubt, the slow path */
    if (sqlite3_prepare_v2(ix->db, "SELECT coalesce((SELECT v FROM meta WHERE k='bad'),0)", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        bad = sqlite3_column_int64(st, 0) != 0;
    sqlite3_finalize(st);
    return bad;
}

static void hit_of(sqlite3_stmt *st, int col, bd_hindex_hit *h)
{
    h->seq = (uint64_t)sqlite3_column_int64(st, col);
    h->off = (uint64_t)sqlite3_column_int64(st, col + 1);
    h->len = (uint32_t)sqlite3_column_int64(st, col + 2);
}

long bd_hindex_find(bd_hindex *ix, const bd_hindex_filter *f, uint64_t before, bd_hindex_hit *hits,
                    size_t max)
{
    const char *names[4] = {f->task_class, f->case_id, f->run_id, f->failure_mode};
    int64_t ids[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        if (!names[i])
            continue;
        if ((ids[i] = str_find(ix, names[i])) < 0)
            return -1;
        if (ids[i] == 0)
            return 0; /* never seen: nothing matches */
    }
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT seq, off, len FROM rec WHERE seq < ?1%s%s%s%s%s ORDER BY seq DESC LIMIT ?6",
             f->task_class ? " AND tc = ?2" : "", f->case_id ? " AND kase = ?3" : "",
             f->run_id ? " AND run = ?4 AND (flags & 1) = 0" : "",
             f->failure_mode ? " AND seq IN (SELECT seq FROM fm WHERE code = ?5)" : "",
             f->failed_only ? " AND (flags & 3) = 0" : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(ix->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, before > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)before);
    for (int i = 0; i < 4; i++)
        if (names[i])
            sqlite3_bind_int64(st, 2 + i, ids[i]);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)max);
    long n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && (size_t)n < max)
        hit_of(st, 0, &hits[n++]);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? n : -1;
}

static const char *col_text(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NULL
                                                       : (const char *)sqlite3_column_text(st, col);
}

int bd_hindex_latest(bd_hindex *ix, const char *task_class,
                     int (*fn)(const char *tc, const char *case_id, const bd_hindex_hit *hit,
                               void *ctx),
                     void *ctx)
{
    int64_t tc = 0;
    if (task_class && (tc = str_find(ix, task_class)) <= 0)
        return tc < 0 ? -1 : 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(ix->db,
                           "SELECT t.s, k.s, r.seq, r.off, r.len FROM latest l"
                           " JOIN str t ON t.id = l.tc JOIN str k ON k.id = l.kase"
                           " JOIN rec r ON r.seq = l.seq WHERE ?1 = 0 OR l.tc = ?1"
                           " ORDER BY t.s, k.s",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, tc);
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bd_hindex_hit hit;
        hit_of(st, 2, &hit);
        out = fn(col_text(st, 0), col_text(st, 1), &hit, ctx);
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = -1;
    sqlite3_finalize(st);
    return out;
}

/* Run one groups statement (columns: kase, cd, tcd, iso, pv, win, n, seq, off, len). */
static int groups_run(sqlite3_stmt *st, int (*fn)(const bd_hindex_group *g, void *ctx), void *ctx)
{
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bd_hindex_group g;
        g.case_id = col_text(st, 0);
        g.case_digest = col_text(st, 1);
        g.tc_digest = col_text(st, 2);
        g.isolation = col_text(st, 3);
        g.provenance_verified = sqlite3_column_int(st, 4) != 0;
        g.in_window = sqlite3_column_int(st, 5) != 0;
        g.count = (uint64_t)sqlite3_column_int64(st, 6);
        hit_of(st, 7, &g.newest);
        out = fn(&g, ctx);
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = -1;
    return out;
}

int bd_hindex_groups(bd_hindex *ix, const char *task_class, int64_t since,
                     int (*fn)(const bd_hindex_group *g, void *ctx), void *ctx)
{
    int64_t tc = str_find(ix, task_class);
    if (tc <= 0)
        return tc < 0 ? -1 : 0;
    /* Whole days before and after since's day from agg; since's own day record by
     * record (rec_fin), so the window is exact to the second. */
    static const char *const sql[2] = {
        "SELECT (SELECT s FROM str WHERE id = g.kase), (SELECT s FROM str WHERE id = g.cd),"
        " (SELECT s FROM str WHERE id = g.tcd), (SELECT s FROM str WHERE id = g.iso),"
        " g.pv, g.win, g.n, r.seq, r.off, r.len FROM"
        " (SELECT kase, cd, tcd, iso, pv, day > ?2 AS win, sum(n) AS n, max(top) AS top"
        "  FROM agg WHERE tc = ?1 AND day != ?2 GROUP BY kase, cd, tcd, iso, pv, win) g"
        " JOIN rec r ON r.seq = g.top",
        "SELECT (SELECT s FROM str WHERE id = g.kase), (SELECT s FROM str WHERE id = g.cd),"
        " (SELECT s FROM str WHERE id = g.tcd), (SELECT s FROM str WHERE id = g.iso),"
        " g.pv, g.win, g.n, r.seq, r.off, r.len FROM"
        " (SELECT kase, cd, tcd, iso, (flags & 8) != 0 AS pv, fin >= ?3 AS win,"
        "  count(*) AS n, max(seq) AS top FROM rec"
        "  WHERE tc = ?1 AND fin BETWEEN ?2 * 86400 AND ?2 * 86400 + 86399"
        "  AND (flags & 5) = 0 GROUP BY kase, cd, tcd, iso, pv, win) g"
        " JOIN rec r ON r.seq = g.top"};
    int64_t day = since < 0 ? -1 : since / 86400;
    int out = 0;
    for (int q = 0; q < 2 && out == 0; q++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(ix->db, sql[q], -1, &st, NULL) != SQLITE_OK)
            return -1;
        sqlite3_bind_int64(st, 1, tc);
        sqlite3_bind_int64(st, 2, day);
        sqlite3_bind_int64(st, 3, since);
        out = groups_run(st, fn, ctx);
        sqlite3_finalize(st);
    }
    return out;
}

int bd_hindex_run_cases(bd_hindex *ix, int (*fn)(const bd_hindex_hit *hit, void *ctx), void *ctx)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(ix->db,
                           "SELECT r.seq, r.off, r.len FROM runcase g"
                           " JOIN rec r ON r.seq = g.seq ORDER BY r.seq",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        bd_hindex_hit hit;
        hit_of(st, 0, &hit);
        out = fn(&hit, ctx);
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = -1;
    sqlite3_finalize(st);
    return out;
}
