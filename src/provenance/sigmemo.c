/*
 * sigmemo.c — this user's memo of verified signatures (sigmemo.h,
 * docs/provenance.md#verifying-many-signatures).
 *
 * Two files in the memo directory (mode 0700): `key`, 32 random bytes (0600), and
 * `entries`, fixed-size records appended in batches of whole records:
 *
 *   [0,8)     "bdsm0001"
 *   [8,40)    the memo key (bd_sigmemo_key)
 *   [40,44)   verdict, little-endian
 *   [44,48)   zero
 *   [48,56)   expires, little-endian (0: never)
 *   [56,96)   signer's primary fingerprint (40 hex)
 *   [96,136)  the key id GnuPG reported, NUL-padded
 *   [136,144) zero
 *   [144,176) BLAKE3 keyed with `key` over [0,144)
 *
 * A case verdict (docs/provenance.md#the-case-memo) is a record of the same length and
 * file, told apart by its magic:
 *
 *   [0,8)     "bdcm0001"
 *   [8,40)    the memo key (bd_casememo_key)
 *   [40]      status (a bd_prov_status: 0 draft, 1 awaiting review, 2 signed)
 *   [41]      1: an author block, [42] 1: a reviewer block
 *   [43,48)   zero
 *   [48,56)   the earliest expiry of the keys that signed, little-endian (0: never)
 *   [56,96)   the author's primary fingerprint (40 hex), zero when no author block
 *   [96,136)  the reviewer's, zero when no reviewer block
 *   [136,144) zero
 *   [144,176) BLAKE3 keyed with `key` over [0,144)
 *
 * An unchanged case (docs/provenance.md#unchanged-cases): its stamps stand for the case key
 * its bytes gave when they were read, and its cassette's digest:
 *
 *   [0,8)     "bdcu0001"
 *   [8,40)    the memo key (bd_stampmemo_key)
 *   [40,72)   the case memo key (bd_casememo_key) the read bytes gave
 *   [72]      1: a cassette, [73,80) zero
 *   [80,144)  the cassette's BLAKE3, 64 lower-case hex (zero when no cassette)
 *   [144,176) BLAKE3 keyed with `key` over [0,144)
 *
 * A case's shape (case_stamp.h), in up to SHAPE_PARTS records of SHAPE_PART bytes:
 *
 *   [0,8)     "bdcs0001"
 *   [8,40)    the memo key (bd_shapememo_key, of this part)
 *   [40]      this part's number, [41] how many parts
 *   [42,44)   bytes of the shape in this part, little-endian
 *   [44,144)  those bytes, zero after them
 *   [144,176) BLAKE3 keyed with `key` over [0,144)
 *
 * Only signature and case records expire ([48,56)); a stamp or a shape record stands as
 * long as what its key covers.
 *
 * A record whose tag does not hold (written by anyone without the key, torn, or from an
 * older layout) is ignored.
 */
#include "sigmemo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blake3.h>

#include "err.h"
#include "fsutil.h"
#include "path.h"

#define REC_LEN  176
#define REC_BODY 144
/* Past this many bytes the file starts over (about 1,500,000 records: the signatures,
 * verdicts, stamps and shapes of about 300,000 signed cases). */
#define MEMO_MAX_BYTES (256u << 20)
#define PENDING_MAX    256
#define SHAPE_PART     100
#define SHAPE_PARTS    8
static const char rec_magic[8] = {'b', 'd', 's', 'm', '0', '0', '0', '1'};
static const char case_magic[8] = {'b', 'd', 'c', 'm', '0', '0', '0', '1'};
static const char stamp_magic[8] = {'b', 'd', 'c', 'u', '0', '0', '0', '1'};
static const char shape_magic[8] = {'b', 'd', 'c', 's', '0', '0', '0', '1'};

/* The records are kept as read (and as appended since), each authenticated only when a
 * lookup lands on it: opening a memo of a few hundred thousand entries costs one read and
 * an index of 4 bytes a slot, not a tag check and a decoded entry per record. */
struct bd_sigmemo {
    /* Lookups share it (a check's workers look up three records a case); a put or the
     * first load holds it alone. */
    pthread_rwlock_t mu;
    char dir[PATH_MAX];
    bool loaded, usable;
    uint8_t secret[32];
    uint8_t *recs; /* n_recs records of REC_LEN bytes, in file order */
    size_t n_recs, cap_recs;
    size_t n_loaded; /* of them, read from the file; the rest this process put */
    uint32_t *idx;   /* open addressing by key: 1 + a record's number, 0 empty */
    size_t cap;
    /* `entries`, opened for appending on the first flush and kept open: a check that
     * remembers 500,000 records makes no path lookup each. */
    int append_fd; /* -1 until then, or when it could not be opened */
    bool append_tried;
    /* Records put and not yet written: written PENDING_MAX at a time (bd_sigmemo_flush,
     * and on close), one write each, not a write and an fstat under the lock per record
     * while the check's other workers wait to look up. */
    uint8_t *pending;
    size_t n_pending;
};

bd_sigmemo *bd_sigmemo_open_at(const char *dir)
{
    bd_sigmemo *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    if (strlen(dir) >= sizeof(m->dir)) {
        free(m);
        return NULL;
    }
    strcpy(m->dir, dir);
    m->append_fd = -1;
    pthread_rwlock_init(&m->mu, NULL);
    return m;
}

bd_sigmemo *bd_sigmemo_open(void)
{
    char dir[PATH_MAX];
    if (!bd_user_state_path(dir, sizeof(dir), "sig-memo"))
        return NULL;
    return bd_sigmemo_open_at(dir);
}

void bd_sigmemo_close(bd_sigmemo *m)
{
    if (!m)
        return;
    bd_sigmemo_flush(m);
    pthread_rwlock_destroy(&m->mu);
    if (m->append_fd >= 0)
        close(m->append_fd);
    free(m->recs);
    free(m->idx);
    free(m->pending);
    explicit_bzero(m->secret, sizeof(m->secret));
    free(m);
}

/* A file of the memo directory, opened without following a link; only a regular file
 * of this user's that nobody else can write is used. */
static int open_own(const struct bd_sigmemo *m, const char *name, int flags)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof(p), "%s/%s", m->dir, name);
    int fd = open(p, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The secret key: read, or made on first use (O_EXCL: two processes agree on one). */
static bool load_secret(struct bd_sigmemo *m)
{
    bd_err e = BD_ERR_INIT;
    struct stat st;
    if (bd_mkdir_p(m->dir, 0700, &e) != 0 || lstat(m->dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 022))
        return false;
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open_own(m, "key", O_RDONLY);
        if (fd >= 0) {
            ssize_t r = read(fd, m->secret, sizeof(m->secret));
            close(fd);
            return r == (ssize_t)sizeof(m->secret);
        }
        char p[PATH_MAX + 16];
        snprintf(p, sizeof(p), "%s/key.%ld", m->dir, (long)getpid());
        fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return false;
        uint8_t k[32];
        bool ok = getrandom(k, sizeof(k), 0) == (ssize_t)sizeof(k) &&
                  write(fd, k, sizeof(k)) == (ssize_t)sizeof(k) && fsync(fd) == 0;
        close(fd);
        char final[PATH_MAX + 16];
        snprintf(final, sizeof(final), "%s/key", m->dir);
        /* link() fails when another process made the key first: read theirs. */
        if (ok)
            (void)link(p, final);
        unlink(p);
        explicit_bzero(k, sizeof(k));
        if (!ok)
            return false;
    }
    return false;
}

static size_t slot_of(const uint8_t key[32], size_t cap)
{
    size_t h;
    memcpy(&h, key, sizeof(h));
    return h & (cap - 1);
}

static const uint8_t *rec_at(const struct bd_sigmemo *m, uint32_t slot_value)
{
    return m->recs + (size_t)(slot_value - 1) * REC_LEN;
}

/* Index record number `r` (its key at [8,40)); false when out of memory (it is then not
 * found, as if never remembered). Every record is indexed, the same key's too: a lookup
 * takes the newest whose tag holds. */
static bool idx_add(struct bd_sigmemo *m, size_t r)
{
    if (2 * (r + 1) > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        while (2 * (r + 1) > nc)
            nc *= 2;
        uint32_t *ni = calloc(nc, sizeof(*ni));
        if (!ni)
            return false;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->idx[i])
                continue;
            size_t j = slot_of(rec_at(m, m->idx[i]) + 8, nc);
            while (ni[j])
                j = (j + 1) & (nc - 1);
            ni[j] = m->idx[i];
        }
        free(m->idx);
        m->idx = ni;
        m->cap = nc;
    }
    size_t j = slot_of(m->recs + r * REC_LEN + 8, m->cap);
    while (m->idx[j])
        j = (j + 1) & (m->cap - 1);
    m->idx[j] = (uint32_t)(r + 1);
    return true;
}

static void le_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void rec_tag(const struct bd_sigmemo *m, const uint8_t *rec, uint8_t out[32])
{
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, m->secret);
    blake3_hasher_update(&h, rec, REC_BODY);
    blake3_hasher_finalize(&h, out, 32);
}

/* Whether `rec` is a record of the layout `magic` whose tag holds. */
static bool rec_authentic(const struct bd_sigmemo *m, const uint8_t *rec, const char magic[8])
{
    uint8_t tag[32];
    if (memcmp(rec, magic, 8) != 0)
        return false;
    rec_tag(m, rec, tag);
    uint8_t diff = 0;
    for (int i = 0; i < 32; i++)
        diff |= (uint8_t)(tag[i] ^ rec[REC_BODY + i]);
    return diff == 0;
}

/* A signature entry into a record's [40,144). */
static void rec_fill(uint8_t rec[REC_LEN], const void *entry)
{
    const bd_sigmemo_entry *e = entry;
    le_put(rec + 40, (uint32_t)e->verdict, 4);
    le_put(rec + 48, (uint64_t)e->expires, 8);
    memcpy(rec + 56, e->fingerprint, strnlen(e->fingerprint, 40));
    memcpy(rec + 96, e->key_id, strnlen(e->key_id, 40));
}

/* The fields of an authentic signature record, when well formed. */
static bool rec_decode(const uint8_t *rec, void *out)
{
    bd_sigmemo_entry *e = out;
    memset(e, 0, sizeof(*e));
    e->verdict = (int)le_get(rec + 40, 4);
    e->expires = (int64_t)le_get(rec + 48, 8);
    memcpy(e->fingerprint, rec + 56, 40);
    memcpy(e->key_id, rec + 96, 40);
    e->key_id[40] = '\0';
    return bd_fpr_valid(e->fingerprint);
}

/* A case entry into a record's [40,144). */
static void case_fill(uint8_t rec[REC_LEN], const void *entry)
{
    const bd_casememo_entry *e = entry;
    rec[40] = (uint8_t)e->status;
    rec[41] = e->author;
    rec[42] = e->reviewer;
    le_put(rec + 48, (uint64_t)e->expires, 8);
    if (e->author)
        memcpy(rec + 56, e->author_fpr, 40);
    if (e->reviewer)
        memcpy(rec + 96, e->reviewer_fpr, 40);
}

/* The fields of an authentic case record, when well formed: a status a passing case can
 * have, and a fingerprint for exactly the blocks present. */
static bool case_decode(const uint8_t *rec, void *out)
{
    bd_casememo_entry *e = out;
    memset(e, 0, sizeof(*e));
    e->status = rec[40];
    e->author = rec[41] == 1;
    e->reviewer = rec[42] == 1;
    e->expires = (int64_t)le_get(rec + 48, 8);
    if (rec[40] > 2 || rec[41] > 1 || rec[42] > 1 || e->expires < 0)
        return false;
    if (e->author)
        memcpy(e->author_fpr, rec + 56, 40);
    if (e->reviewer)
        memcpy(e->reviewer_fpr, rec + 96, 40);
    return (!e->author || bd_fpr_valid(e->author_fpr)) &&
           (!e->reviewer || bd_fpr_valid(e->reviewer_fpr));
}

/* An unchanged case's entry into a record's [40,144). */
static void stamp_fill(uint8_t rec[REC_LEN], const void *entry)
{
    const bd_stampmemo_entry *e = entry;
    memcpy(rec + 40, e->case_key, 32);
    rec[72] = e->cassette;
    if (e->cassette)
        memcpy(rec + 80, e->cassette_hex, 64);
}

/* The fields of an authentic unchanged-case record, when well formed. */
static bool stamp_decode(const uint8_t *rec, void *out)
{
    bd_stampmemo_entry *e = out;
    memset(e, 0, sizeof(*e));
    memcpy(e->case_key, rec + 40, 32);
    e->cassette = rec[72] == 1;
    if (rec[72] > 1)
        return false;
    if (e->cassette) {
        memcpy(e->cassette_hex, rec + 80, 64);
        return bd_hex_lower(e->cassette_hex, 64);
    }
    return true;
}

/* One part of a shape, as its record holds it. */
typedef struct shape_part {
    unsigned part, parts;
    size_t len;
    uint8_t bytes[SHAPE_PART];
} shape_part;

static void shape_fill(uint8_t rec[REC_LEN], const void *entry)
{
    const shape_part *p = entry;
    rec[40] = (uint8_t)p->part;
    rec[41] = (uint8_t)p->parts;
    le_put(rec + 42, p->len, 2);
    memcpy(rec + 44, p->bytes, p->len);
}

/* A shape part is well formed when it is one of at most SHAPE_PARTS parts, every part but
 * the last full. */
static bool shape_decode(const uint8_t *rec, void *out)
{
    shape_part *p = out;
    p->part = rec[40];
    p->parts = rec[41];
    p->len = (size_t)le_get(rec + 42, 2);
    if (p->parts == 0 || p->parts > SHAPE_PARTS || p->part >= p->parts || p->len == 0 ||
        p->len > SHAPE_PART || (p->part + 1 < p->parts && p->len != SHAPE_PART))
        return false;
    memcpy(p->bytes, rec + 44, p->len);
    return true;
}

/* Under m->mu held alone: the secret and every record, once (indexed, not yet authenticated). */
static void ensure_loaded(struct bd_sigmemo *m)
{
    if (m->loaded)
        return;
    m->loaded = true;
    if (!load_secret(m))
        return;
    m->usable = true;
    int fd = open_own(m, "entries", O_RDONLY);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && st.st_size >= REC_LEN && (uint64_t)st.st_size <= MEMO_MAX_BYTES) {
        size_t len = (size_t)st.st_size - (size_t)st.st_size % REC_LEN, got = 0;
        uint8_t *buf = malloc(len);
        while (buf && got < len) {
            ssize_t r = read(fd, buf + got, len - got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        size_t cap = 1024;
        while (cap < 2 * (len / REC_LEN + 1))
            cap *= 2;
        if (buf && (m->idx = calloc(cap, sizeof(*m->idx)))) {
            m->cap = cap;
            m->recs = buf;
            m->cap_recs = len / REC_LEN;
            /* A record of another layout is never a candidate. */
            for (size_t off = 0; off + REC_LEN <= got; off += REC_LEN) {
                if (memcmp(buf + off, rec_magic, 8) != 0 && memcmp(buf + off, case_magic, 8) != 0 &&
                    memcmp(buf + off, stamp_magic, 8) != 0 &&
                    memcmp(buf + off, shape_magic, 8) != 0)
                    continue;
                if (off != m->n_recs * REC_LEN)
                    memmove(buf + m->n_recs * REC_LEN, buf + off, REC_LEN);
                if (!idx_add(m, m->n_recs))
                    break;
                m->n_recs++;
            }
        } else {
            free(buf);
        }
    }
    m->n_loaded = m->n_recs;
    close(fd);
}

typedef bool (*rec_decoder)(const uint8_t *rec, void *out);

/* Under m->mu: the newest record of `key` of layout `magic` that is authentic and that
 * `decode` finds well formed, or NULL. */
static const uint8_t *find_newest(struct bd_sigmemo *m, const uint8_t key[32], const char magic[8],
                                  rec_decoder decode)
{
    union {
        bd_sigmemo_entry sig;
        bd_casememo_entry cas;
        bd_stampmemo_entry stamp;
        shape_part shape;
    } scratch;
    size_t best = 0; /* 1 + the record's number of the newest tried so far, 0 none */
    for (;;) {
        /* The newest record of `key` older than `best` (the same key's records are few:
         * usually one). */
        size_t cand = 0;
        for (size_t j = m->cap ? slot_of(key, m->cap) : 0; m->cap && m->idx[j];
             j = (j + 1) & (m->cap - 1)) {
            uint32_t v = m->idx[j];
            if ((best == 0 || v < best) && v > cand && memcmp(rec_at(m, v) + 8, key, 32) == 0)
                cand = v;
        }
        if (!cand)
            return NULL;
        const uint8_t *rec = rec_at(m, (uint32_t)cand);
        if (rec_authentic(m, rec, magic) && decode(rec, &scratch))
            return rec;
        best = cand;
    }
}

/* The newest believable record of `key` and layout `magic`, decoded into *out, when it
 * still holds at `now` (an expiring layout's expiry, [48,56), not reached). */
static bool memo_get(struct bd_sigmemo *m, const uint8_t key[32], time_t now, const char magic[8],
                     rec_decoder decode, void *out)
{
    bool expiring = magic == rec_magic || magic == case_magic;
    bool found = false;
    if (!m)
        return false;
    pthread_rwlock_rdlock(&m->mu);
    if (!m->loaded) {
        pthread_rwlock_unlock(&m->mu);
        pthread_rwlock_wrlock(&m->mu);
        ensure_loaded(m);
        pthread_rwlock_unlock(&m->mu);
        pthread_rwlock_rdlock(&m->mu);
    }
    const uint8_t *rec = m->usable ? find_newest(m, key, magic, decode) : NULL;
    if (rec) {
        int64_t expires = expiring ? (int64_t)le_get(rec + 48, 8) : 0;
        found = expires == 0 || (int64_t)now < expires;
        if (found)
            decode(rec, out);
    }
    pthread_rwlock_unlock(&m->mu);
    return found;
}

bool bd_sigmemo_get(bd_sigmemo *m, const uint8_t key[32], time_t now, bd_sigmemo_entry *out)
{
    return memo_get(m, key, now, rec_magic, rec_decode, out);
}

bool bd_casememo_get(bd_sigmemo *m, const uint8_t key[32], time_t now, bd_casememo_entry *out)
{
    return memo_get(m, key, now, case_magic, case_decode, out);
}

/* Under m->mu held alone: record `rec` kept in memory too (best effort, as the file). */
static void keep_record(struct bd_sigmemo *m, const uint8_t rec[REC_LEN])
{
    if (m->n_recs == m->cap_recs) {
        size_t nc = m->cap_recs ? m->cap_recs * 2 : 64;
        uint8_t *nr = realloc(m->recs, nc * REC_LEN);
        if (!nr)
            return;
        m->recs = nr;
        m->cap_recs = nc;
    }
    memcpy(m->recs + m->n_recs * REC_LEN, rec, REC_LEN);
    if (idx_add(m, m->n_recs))
        m->n_recs++;
}

/* Under m->mu held alone: the pending records appended to the file (best effort: what is
 * not written is still kept in memory for this process). */
static void flush_pending(struct bd_sigmemo *m)
{
    if (m->n_pending == 0)
        return;
    if (!m->append_tried) {
        m->append_tried = true;
        m->append_fd = open_own(m, "entries", O_WRONLY | O_APPEND | O_CREAT);
    }
    int fd = m->append_fd;
    size_t len = m->n_pending * REC_LEN;
    struct stat st;
    m->n_pending = 0;
    if (fd < 0 || fstat(fd, &st) != 0)
        return;
    const uint8_t *from = m->pending;
    if ((uint64_t)st.st_size + len > MEMO_MAX_BYTES) {
        /* Full: start over, with what this process put (the newest that fit). Starting
         * from nothing would drop what this very check learned, and the next check would
         * be cold again. */
        size_t own = m->n_recs - m->n_loaded, fit = MEMO_MAX_BYTES / REC_LEN;
        from = m->recs + (m->n_loaded + (own > fit ? own - fit : 0)) * REC_LEN;
        len = (own > fit ? fit : own) * REC_LEN;
        (void)ftruncate(fd, 0);
    } else if (st.st_size % REC_LEN) {
        /* A torn record at the end: cut it, or every later record would be read out of
         * step. */
        (void)ftruncate(fd, st.st_size - st.st_size % REC_LEN);
    }
    /* Writes of whole records: one torn by a crash fails its tag and is ignored. */
    while (len > 0) {
        ssize_t w = write(fd, from, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* best effort, as above */
        from += w;
        len -= (size_t)w;
    }
}

/* Under m->mu held alone, the memo loaded and usable: `rec` kept, and appended to the file
 * with the next flush. */
static void append_record(struct bd_sigmemo *m, const uint8_t rec[REC_LEN])
{
    keep_record(m, rec);
    if (!m->pending && !(m->pending = malloc(PENDING_MAX * REC_LEN)))
        return;
    memcpy(m->pending + m->n_pending * REC_LEN, rec, REC_LEN);
    if (++m->n_pending == PENDING_MAX)
        flush_pending(m);
}

void bd_sigmemo_flush(bd_sigmemo *m)
{
    if (!m)
        return;
    pthread_rwlock_wrlock(&m->mu);
    flush_pending(m);
    pthread_rwlock_unlock(&m->mu);
}

/* Remember an entry under `key` as a record of layout `magic` whose fields `fill` writes. */
static void memo_put(struct bd_sigmemo *m, const uint8_t key[32], const char magic[8],
                     void (*fill)(uint8_t rec[REC_LEN], const void *entry), const void *entry)
{
    if (!m)
        return;
    pthread_rwlock_wrlock(&m->mu);
    ensure_loaded(m);
    if (m->usable) {
        uint8_t rec[REC_LEN];
        memset(rec, 0, REC_LEN);
        memcpy(rec, magic, 8);
        memcpy(rec + 8, key, 32);
        fill(rec, entry);
        rec_tag(m, rec, rec + REC_BODY);
        append_record(m, rec);
    }
    pthread_rwlock_unlock(&m->mu);
}

void bd_sigmemo_put(bd_sigmemo *m, const uint8_t key[32], const bd_sigmemo_entry *e)
{
    memo_put(m, key, rec_magic, rec_fill, e);
}

void bd_casememo_put(bd_sigmemo *m, const uint8_t key[32], const bd_casememo_entry *e)
{
    memo_put(m, key, case_magic, case_fill, e);
}

bool bd_stampmemo_get(bd_sigmemo *m, const uint8_t key[32], bd_stampmemo_entry *out)
{
    return memo_get(m, key, 0, stamp_magic, stamp_decode, out);
}

void bd_stampmemo_put(bd_sigmemo *m, const uint8_t key[32], const bd_stampmemo_entry *e)
{
    memo_put(m, key, stamp_magic, stamp_fill, e);
}

bool bd_shapememo_get(bd_sigmemo *m, const bd_shapememo_subject *s, char *out, size_t cap,
                      size_t *len)
{
    size_t got = 0;
    unsigned parts = 1;
    for (unsigned i = 0; i < parts; i++) {
        uint8_t key[32];
        shape_part p;
        bd_shapememo_key(key, s, i);
        if (!memo_get(m, key, 0, shape_magic, shape_decode, &p) || p.part != i ||
            (i > 0 && p.parts != parts) || got + p.len > cap)
            return false;
        parts = p.parts;
        memcpy(out + got, p.bytes, p.len);
        got += p.len;
    }
    *len = got;
    return true;
}

void bd_shapememo_put(bd_sigmemo *m, const bd_shapememo_subject *s, const char *shape, size_t len)
{
    unsigned parts = (unsigned)((len + SHAPE_PART - 1) / SHAPE_PART);
    if (len == 0 || parts > SHAPE_PARTS)
        return;
    for (unsigned i = 0; i < parts; i++) {
        uint8_t key[32];
        shape_part p = {.part = i, .parts = parts};
        p.len = i + 1 < parts ? SHAPE_PART : len - (size_t)i * SHAPE_PART;
        memcpy(p.bytes, shape + (size_t)i * SHAPE_PART, p.len);
        bd_shapememo_key(key, s, i);
        memo_put(m, key, shape_magic, shape_fill, &p);
    }
}

/* A part of a memo key: len ‖ bytes (an 8-byte little-endian length). */
static void key_part(blake3_hasher *h, const void *p, size_t len)
{
    uint8_t l[8];
    le_put(l, len, 8);
    blake3_hasher_update(h, l, sizeof(l));
    blake3_hasher_update(h, p, len);
}

void bd_sigmemo_key(uint8_t out[32], const uint8_t context[32], const char *msg, size_t mlen,
                    const char *sig, size_t slen)
{
    static const char tag[] = "benchdesk-sigmemo-1";
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, tag, sizeof(tag));
    blake3_hasher_update(&h, context, 32);
    key_part(&h, msg, mlen);
    key_part(&h, sig, slen);
    blake3_hasher_finalize(&h, out, 32);
}

/* A string part of a memo key (key_part of its bytes). */
static void key_str(blake3_hasher *h, const char *s)
{
    key_part(h, s, strlen(s));
}

/* A number part of a memo key: 8 bytes, little-endian. */
static void key_u64(blake3_hasher *h, uint64_t v)
{
    uint8_t b[8];
    le_put(b, v, 8);
    blake3_hasher_update(h, b, sizeof(b));
}

/* What the keys of a case's verdict and of its stamps start with: the tag (its NUL too),
 * the context, the build, the task class and the case id. */
static void case_key_start(blake3_hasher *h, const char *tag, size_t tag_size,
                           const uint8_t *context, const uint8_t *build, const char *task_class,
                           const char *case_id)
{
    blake3_hasher_init(h);
    blake3_hasher_update(h, tag, tag_size);
    blake3_hasher_update(h, context, 32);
    blake3_hasher_update(h, build, 32);
    key_str(h, task_class);
    key_str(h, case_id);
}

void bd_casememo_key(uint8_t out[32], const bd_casememo_subject *s)
{
    static const char tag[] = "benchdesk-casememo-1";
    blake3_hasher h;
    case_key_start(&h, tag, sizeof(tag), s->context, s->build, s->task_class, s->case_id);
    key_str(&h, s->digest);
    key_str(&h, s->pinned);
    key_u64(&h, (uint64_t)s->sut_kind);
    uint8_t present = s->prov != NULL;
    blake3_hasher_update(&h, &present, 1);
    key_part(&h, s->prov ? s->prov : "", s->prov ? s->prov_len : 0);
    blake3_hasher_finalize(&h, out, 32);
}

void bd_stampmemo_key(uint8_t out[32], const bd_stampmemo_subject *s)
{
    static const char tag[] = "benchdesk-stampmemo-1";
    blake3_hasher h;
    case_key_start(&h, tag, sizeof(tag), s->context, s->build, s->task_class, s->case_id);
    key_str(&h, s->pinned);
    key_u64(&h, (uint64_t)s->sut_kind);
    blake3_hasher_update(&h, s->stamps, 32);
    blake3_hasher_finalize(&h, out, 32);
}

void bd_shapememo_key(uint8_t out[32], const bd_shapememo_subject *s, unsigned part)
{
    static const char tag[] = "benchdesk-shapememo-1";
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, tag, sizeof(tag));
    key_u64(&h, s->dir_dev);
    key_u64(&h, s->dir_ino);
    key_str(&h, s->task_class);
    key_str(&h, s->case_id);
    uint8_t pb = (uint8_t)part;
    blake3_hasher_update(&h, &pb, 1);
    blake3_hasher_finalize(&h, out, 32);
}
