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
 *   [0,8)     "bdcm0002"
 *   [8,40)    the memo key (bd_casememo_key)
 *   [40]      status (a bd_prov_status: 0 draft, 1 awaiting review, 2 signed)
 *   [41]      1: an author block, [42] 1: a reviewer block
 *   [43,48)   zero
 *   [48,56)   the earliest expiry of the keys that signed, little-endian (0: never)
 *   [56,96)   the author's primary fingerprint (40 hex), zero when no author block
 *   [96,136)  the reviewer's, zero when no reviewer block
 *   [136,144) the build tag: the first 8 bytes of the build in the key
 *   [144,176) BLAKE3 keyed with `key` over [0,144)
 *
 * An unchanged case (docs/provenance.md#unchanged-cases): its stamps stand for the case key
 * its bytes gave when they were read, and its cassette's digest:
 *
 *   [0,8)     "bdcu0002"
 *   [8,40)    the memo key (bd_stampmemo_key)
 *   [40,72)   the case memo key (bd_casememo_key) the read bytes gave
 *   [72,80)   the build tag, as above
 *   [80,144)  the cassette's BLAKE3, 64 lower-case hex; all zero when there is no cassette
 *   [144,176) BLAKE3 keyed with `key` over [0,144)
 *
 * Their layouts before the build tag ("bdcm0001", "bdcu0001") are never read, and are
 * dropped when the file is next rewritten (below).
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
 * Case and stamp records are believed only by the build that wrote them (the build is in
 * their keys). A process that knows its build (bd_sigmemo_set_build) loads no other
 * build's, and when it closes a file in which the records of older builds — every build
 * but its own and the one that wrote last before it, and the layouts above — are at least
 * a quarter of the records (and COMPACT_MIN or more), it rewrites the file without them,
 * in place, under an exclusive flock that every append also takes: what another process
 * appends meanwhile waits for the rewrite and lands after it. An append that would take
 * the file past MEMO_MAX_BYTES makes the same rewrite first, and starts the file over
 * only when that leaves no room (docs/provenance.md#the-memo-file).
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
#include <sys/file.h>
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
/* Older builds' records fewer than this are never worth a rewrite of the file. */
#define COMPACT_MIN 256
static const char rec_magic[8] = {'b', 'd', 's', 'm', '0', '0', '0', '1'};
static const char case_magic[8] = {'b', 'd', 'c', 'm', '0', '0', '0', '2'};
static const char stamp_magic[8] = {'b', 'd', 'c', 'u', '0', '0', '0', '2'};
static const char shape_magic[8] = {'b', 'd', 'c', 's', '0', '0', '0', '1'};
/* The case and stamp layouts before the build tag. */
static const char case_magic_v1[8] = {'b', 'd', 'c', 'm', '0', '0', '0', '1'};
static const char stamp_magic_v1[8] = {'b', 'd', 'c', 'u', '0', '0', '0', '1'};
#define BUILD_TAG_LEN 8

/* Where a record of a build-scoped layout keeps its build tag, or 0 for any other. */
static size_t build_tag_at(const uint8_t *rec)
{
    if (memcmp(rec, case_magic, 8) == 0)
        return 136;
    if (memcmp(rec, stamp_magic, 8) == 0)
        return 72;
    return 0;
}

/* A record of a layout this program still reads. */
static bool layout_known(const uint8_t *rec)
{
    return memcmp(rec, rec_magic, 8) == 0 || memcmp(rec, case_magic, 8) == 0 ||
           memcmp(rec, stamp_magic, 8) == 0 || memcmp(rec, shape_magic, 8) == 0;
}

/* A record with benchdesk's magic ("bd", two letters, four digits): of a layout this
 * program knows, an older one, or a newer benchdesk's. */
static bool layout_ours(const uint8_t *rec)
{
    if (rec[0] != 'b' || rec[1] != 'd')
        return false;
    for (int i = 4; i < 8; i++)
        if (rec[i] < '0' || rec[i] > '9')
            return false;
    return true;
}

static bool layout_obsolete(const uint8_t *rec)
{
    return memcmp(rec, case_magic_v1, 8) == 0 || memcmp(rec, stamp_magic_v1, 8) == 0;
}

/* Another build's records as the load counted them: how many, and the last one's number
 * in the file (which of the others wrote last). */
typedef struct other_build {
    uint8_t tag[BUILD_TAG_LEN];
    size_t count, last;
} other_build;

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
    /* The build whose case and stamp records this process reads and writes. */
    bool has_build;
    uint8_t build[BUILD_TAG_LEN];
    /* What the load passed over, for the rewrite on close: records of the old layouts,
     * and each other build's. */
    size_t n_file, n_obsolete;
    other_build *others;
    size_t n_others, cap_others;
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

void bd_sigmemo_set_build(bd_sigmemo *m, const uint8_t build[32])
{
    if (!m)
        return;
    pthread_rwlock_wrlock(&m->mu);
    if (!m->loaded) {
        memcpy(m->build, build, BUILD_TAG_LEN);
        m->has_build = true;
    }
    pthread_rwlock_unlock(&m->mu);
}

static void compact_if_worth(struct bd_sigmemo *m);

void bd_sigmemo_close(bd_sigmemo *m)
{
    if (!m)
        return;
    bd_sigmemo_flush(m);
    /* The records in memory go before a rewrite reads the file again. */
    free(m->recs);
    free(m->idx);
    m->recs = NULL;
    m->idx = NULL;
    compact_if_worth(m);
    free(m->others);
    pthread_rwlock_destroy(&m->mu);
    if (m->append_fd >= 0)
        close(m->append_fd);
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

/* An unchanged case's entry into a record's [40,144) (its build tag aside). */
static void stamp_fill(uint8_t rec[REC_LEN], const void *entry)
{
    const bd_stampmemo_entry *e = entry;
    memcpy(rec + 40, e->case_key, 32);
    if (e->cassette)
        memcpy(rec + 80, e->cassette_hex, 64);
}

/* The fields of an authentic unchanged-case record, when well formed: [80,144) all zero
 * (no cassette) or 64 lower-case hex. */
static bool stamp_decode(const uint8_t *rec, void *out)
{
    bd_stampmemo_entry *e = out;
    memset(e, 0, sizeof(*e));
    memcpy(e->case_key, rec + 40, 32);
    uint8_t any = 0;
    for (int i = 80; i < 144; i++)
        any |= rec[i];
    e->cassette = any != 0;
    if (!e->cassette)
        return true;
    memcpy(e->cassette_hex, rec + 80, 64);
    return bd_hex_lower(e->cassette_hex, 64);
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

/* pread (or pwrite, when `writing`) of len bytes at `off`, again after a short count or a
 * signal: the bytes done, fewer only on an error or at the end of the file. */
static size_t io_at(int fd, uint8_t *buf, size_t len, off_t off, bool writing)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = writing ? pwrite(fd, buf + done, len - done, off + (off_t)done)
                            : pread(fd, buf + done, len - done, off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    return done;
}

/* Under m->mu held alone: one more record of another build, the `nth` of the file. */
static void count_other(struct bd_sigmemo *m, const uint8_t *tag, size_t nth)
{
    for (size_t i = 0; i < m->n_others; i++)
        if (memcmp(m->others[i].tag, tag, BUILD_TAG_LEN) == 0) {
            m->others[i].count++;
            m->others[i].last = nth;
            return;
        }
    if (m->n_others == m->cap_others) {
        size_t nc = m->cap_others ? 2 * m->cap_others : 8;
        other_build *grown = realloc(m->others, nc * sizeof(*grown));
        if (!grown)
            return; /* not counted: at worst the file is not rewritten */
        m->others = grown;
        m->cap_others = nc;
    }
    other_build *o = &m->others[m->n_others++];
    memcpy(o->tag, tag, BUILD_TAG_LEN);
    o->count = 1;
    o->last = nth;
}

/* Under m->mu held alone: the secret and this build's records (and every other build's
 * when it is not known), once (indexed, not yet authenticated). */
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
        size_t len = (size_t)st.st_size - (size_t)st.st_size % REC_LEN;
        uint8_t *buf = malloc(len);
        size_t got = buf ? io_at(fd, buf, len, 0, false) : 0, kept = 0;
        /* A record of another layout, or another build's, is never a candidate. */
        m->n_file = got / REC_LEN;
        for (size_t off = 0; off + REC_LEN <= got; off += REC_LEN) {
            if (!layout_known(buf + off)) {
                m->n_obsolete += layout_obsolete(buf + off);
                continue;
            }
            size_t at = build_tag_at(buf + off);
            if (m->has_build && at && memcmp(buf + off + at, m->build, BUILD_TAG_LEN) != 0) {
                count_other(m, buf + off + at, off / REC_LEN);
                continue;
            }
            if (off != kept * REC_LEN)
                memmove(buf + kept * REC_LEN, buf + off, REC_LEN);
            kept++;
        }
        /* Indexed for what was kept: other builds' records give their room back. */
        uint8_t *fit =
            buf && kept < len / REC_LEN / 2 ? realloc(buf, (kept ? kept : 1) * REC_LEN) : NULL;
        m->recs = fit ? fit : buf;
        m->cap_recs = !m->recs ? 0 : fit ? (kept ? kept : 1) : len / REC_LEN;
        size_t cap = 1024;
        while (cap < 2 * (kept + 1))
            cap *= 2;
        if (m->recs && (m->idx = calloc(cap, sizeof(*m->idx)))) {
            m->cap = cap;
            while (m->n_recs < kept && idx_add(m, m->n_recs))
                m->n_recs++;
        }
    }
    m->n_loaded = m->n_recs;
    close(fd);
}

void bd_sigmemo_load(bd_sigmemo *m)
{
    if (!m)
        return;
    pthread_rwlock_wrlock(&m->mu);
    ensure_loaded(m);
    pthread_rwlock_unlock(&m->mu);
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

/* flock(fd, op), again when a signal interrupts it: true when held. */
static bool lock_file(int fd, int op)
{
    int rc;
    while ((rc = flock(fd, op)) != 0 && errno == EINTR)
        ;
    return rc == 0;
}

/* ---- rewriting the file (docs/provenance.md#the-memo-file) -------------------------- */

/* The records of older builds the load passed over: the old layouts, and every other
 * build's but the one that wrote last. */
static size_t older_builds(const struct bd_sigmemo *m)
{
    size_t n = m->n_obsolete, keep = 0, last = 0;
    for (size_t i = 0; i < m->n_others; i++) {
        n += m->others[i].count;
        if (keep == 0 || m->others[i].last > last) {
            keep = m->others[i].count;
            last = m->others[i].last;
        }
    }
    return n - keep;
}

/* Whether `rec`, of a layout this program reads, is authentic. */
static bool known_authentic(const struct bd_sigmemo *m, const uint8_t *rec)
{
    static const char *const magics[] = {rec_magic, case_magic, stamp_magic, shape_magic};
    for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
        if (memcmp(rec, magics[i], 8) == 0)
            return rec_authentic(m, rec, magics[i]);
    return false;
}

/* The file's records (`n` of them, in buf) that stay: this build's, the other build's
 * that wrote last (every build's when this one is not known), the signatures and shapes —
 * each authentic — and any record of a layout this program does not know with
 * benchdesk's magic (a newer benchdesk's), as it is. Moved to the front; returns how
 * many. */
static size_t keep_current(const struct bd_sigmemo *m, uint8_t *buf, size_t n)
{
    /* The other build that wrote last, in this very read (by an authentic record: a torn
     * one at the end names no build). */
    const uint8_t *latest = NULL;
    for (size_t r = n; r-- > 0 && !latest;) {
        const uint8_t *rec = buf + r * REC_LEN;
        size_t at = build_tag_at(rec);
        if (at && memcmp(rec + at, m->build, BUILD_TAG_LEN) != 0 && known_authentic(m, rec))
            latest = rec + at;
    }
    uint8_t latest_tag[BUILD_TAG_LEN];
    if (latest)
        memcpy(latest_tag, latest, BUILD_TAG_LEN);
    size_t kept = 0;
    for (size_t r = 0; r < n; r++) {
        uint8_t *rec = buf + r * REC_LEN;
        size_t at = build_tag_at(rec);
        bool stays;
        if (layout_obsolete(rec) || !layout_ours(rec))
            stays = false;
        else if (!layout_known(rec))
            stays = true;
        else
            stays = (!at || !m->has_build || memcmp(rec + at, m->build, BUILD_TAG_LEN) == 0 ||
                     (latest && memcmp(rec + at, latest_tag, BUILD_TAG_LEN) == 0)) &&
                    known_authentic(m, rec);
        if (stays && kept != r)
            memmove(buf + kept * REC_LEN, rec, REC_LEN);
        kept += stays;
    }
    return kept;
}

/* Under the file's exclusive lock, `fd` open for reading and writing (not appending): the
 * file read again (so nothing another process appended since this one loaded it is lost)
 * and rewritten in place with keep_current's records — a crash part way leaves them
 * followed by older ones, every record whole and in step, and a process appending to the
 * file it opened keeps appending to it. Returns the file's new size, or -1 when it was
 * left as it was. */
static off_t rewrite_locked(const struct bd_sigmemo *m, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size > 2 * (uint64_t)MEMO_MAX_BYTES)
        return -1;
    size_t n = (size_t)st.st_size / REC_LEN;
    uint8_t *buf = malloc(n ? n * REC_LEN : 1);
    if (!buf)
        return -1;
    if (io_at(fd, buf, n * REC_LEN, 0, false) < n * REC_LEN) {
        free(buf);
        return -1;
    }
    size_t len = keep_current(m, buf, n) * REC_LEN;
    bool written = io_at(fd, buf, len, 0, true) == len;
    free(buf);
    return written && ftruncate(fd, (off_t)len) == 0 ? (off_t)len : -1;
}

/* The rewrite when a flush would take the file past MEMO_MAX_BYTES, on the descriptor
 * the flush appends with and whose lock it holds: O_APPEND set aside meanwhile (it would
 * send every pwrite to the end). */
static off_t rewrite_appending(const struct bd_sigmemo *m, int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_APPEND) != 0)
        return -1;
    off_t now = rewrite_locked(m, fd);
    (void)fcntl(fd, F_SETFL, flags);
    return now;
}

/* On close: the file rewritten without the records of older builds, when the load found
 * them at least a quarter of the file and COMPACT_MIN or more. The lock is taken without
 * waiting: another process rewriting or appending, and the next close tries again. Best
 * effort, as every write of the memo. */
static void compact_if_worth(struct bd_sigmemo *m)
{
    size_t older = older_builds(m);
    if (!m->has_build || !m->usable || older < COMPACT_MIN || 4 * older < m->n_file)
        return;
    int fd = open_own(m, "entries", O_RDWR);
    if (fd < 0)
        return;
    if (lock_file(fd, LOCK_EX | LOCK_NB))
        (void)rewrite_locked(m, fd);
    close(fd); /* and the lock with it */
}

/* Under m->mu held alone: the pending records appended to the file (best effort: what is
 * not written is still kept in memory for this process). */
static void flush_pending(struct bd_sigmemo *m)
{
    if (m->n_pending == 0)
        return;
    if (!m->append_tried) {
        m->append_tried = true;
        m->append_fd = open_own(m, "entries", O_RDWR | O_APPEND | O_CREAT);
    }
    int fd = m->append_fd;
    size_t len = m->n_pending * REC_LEN;
    struct stat st;
    m->n_pending = 0;
    if (fd < 0)
        return;
    /* Held from the size read to the last byte written: a rewrite by another process
     * (compact_if_worth) waits for this append, and this append for it. A file system
     * that refuses the lock still gets the append. */
    bool locked = lock_file(fd, LOCK_EX);
    const uint8_t *from = m->pending;
    if (fstat(fd, &st) != 0) {
        len = 0;
    } else if ((uint64_t)st.st_size + len > MEMO_MAX_BYTES &&
               (st.st_size = rewrite_appending(m, fd)) >= 0 &&
               (uint64_t)st.st_size + len <= MEMO_MAX_BYTES) {
        /* Full, and room made by dropping older builds' records: append. */
    } else if ((uint64_t)st.st_size + len > MEMO_MAX_BYTES) {
        /* Still full (or the rewrite failed: st_size -1): start over, with what this
         * process put (the newest that fit). Starting from nothing would drop what this
         * very check learned, and the next check would be cold again. */
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
    if (locked)
        (void)flock(fd, LOCK_UN);
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
        size_t at = build_tag_at(rec);
        if (at)
            memcpy(rec + at, m->build, BUILD_TAG_LEN);
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
