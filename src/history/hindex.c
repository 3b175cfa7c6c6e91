/*
 * hindex.c — the history's derived index in SQLite (hindex.h).
 *
 * Crash safety is SQLite's: rows and the head they lead to are committed in one
 * transaction (rollback journal, synchronous=NORMAL), so a crash leaves the index as it
 * was before, and a file SQLite cannot read is removed and built again.
 */
#include "hindex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "digest.h"
#include "fsutil.h"
#include "path.h"
#include "text.h"

/* Bump when the schema changes: an index of another version is rebuilt. */
#define HX_SCHEMA "benchdesk-history-index-5"

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
    " seq INTEGER NOT NULL, PRIMARY KEY(tc, kase)) WITHOUT ROWID;";

/* The secondary indexes: created at the end of a rebuild (sorting once is much faster
 * than keeping them up to date row by row), kept up to date by an extension. */
static const char index_sql[] = "CREATE INDEX IF NOT EXISTS rec_tc ON rec(tc);"
                                "CREATE INDEX IF NOT EXISTS rec_case ON rec(kase);"
                                "CREATE INDEX IF NOT EXISTS rec_run ON rec(run);";

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

struct bd_hindex {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *ins_rec, *ins_fm, *get_str, *ins_str;
    intern in;
    uint64_t bad_added; /* BD_HX_BAD rows of the open transaction */
    latest_map lm;      /* (task class, case) -> newest seq */
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
    /* What the history holds stays the owner's. Only when it is not so already: a chmod
     * moves the change time, which the seal holds. */
    struct stat st0;
    if (stat(ix->path, &st0) == 0 && (st0.st_mode & 0777) != 0600)
        chmod(ix->path, 0600);
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
    if (lm_flush(ix, &ix->lm, "latest", "tc") != 0)
        goto fail;
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
             f->run_id ? " AND run = ?4" : "",
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

/* ---- the seal: was the file last written by this user's benchdesk? -------------------- */

/* $XDG_STATE_HOME/benchdesk/index-seals/<32 hex of BLAKE3(the index file's path)>, or
 * ~/.local/state/...; NULL when the user has no state directory (or out of memory). */
static char *seal_path(const char *path)
{
    char base[PATH_MAX];
    if (!bd_user_state_path(base, sizeof(base), "index-seals"))
        return NULL;
    char abs[PATH_MAX];
    if (!realpath(path, abs))
        return NULL;
    uint8_t h[32];
    char hex[65];
    bd_blake3_raw(h, abs, strlen(abs));
    bd_hex(hex, h, 16);
    size_t n = strlen(base) + sizeof(hex) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", base, hex);
    return out;
}

/* What the seal holds of the file: identity, size and both times. The change time cannot
 * be set by a user: any write, rename or replacement of the file moves it. */
static int seal_line(char *buf, size_t size, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    snprintf(buf, size, "benchdesk-index-seal-1 %llu %llu %lld %lld.%09ld %lld.%09ld\n",
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
             st.st_ctim.tv_nsec);
    return 0;
}

int bd_hindex_seal(const char *path)
{
    char line[256];
    char *sp = seal_path(path);
    bd_err e = BD_ERR_INIT;
    int rc = -1;
    if (!sp || seal_line(line, sizeof(line), path) != 0)
        goto out;
    char *slash = strrchr(sp, '/');
    *slash = '\0';
    int mk = bd_mkdir_p(sp, 0700, &e);
    *slash = '/';
    if (mk == 0 && bd_write_file_atomic(sp, line, strlen(line), 0600, &e) == 0)
        rc = 0;
out:
    free(sp);
    return rc;
}

void bd_hindex_unseal(const char *path)
{
    char *sp = seal_path(path);
    if (sp)
        unlink(sp);
    free(sp);
}

bd_hindex_seal_state bd_hindex_sealed(const char *path)
{
    char line[256], want[256], j[PATH_MAX + 16];
    struct stat st;
    char *sp = seal_path(path);
    bd_hindex_seal_state r = BD_HX_SEAL_NONE;
    if (!sp)
        return r;
    int fd = open(sp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    free(sp);
    if (fd < 0)
        return r;
    ssize_t n = read(fd, want, sizeof(want) - 1);
    close(fd);
    if (n <= 0)
        return r;
    want[n] = '\0';
    r = BD_HX_SEAL_BROKEN;
    /* A journal beside it would be played back into the file when SQLite opens it. */
    snprintf(j, sizeof(j), "%s-journal", path);
    if (lstat(j, &st) == 0 || seal_line(line, sizeof(line), path) != 0)
        return r;
    return strcmp(line, want) == 0 ? BD_HX_SEAL_OK : r;
}
