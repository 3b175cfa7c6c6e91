#include "verify.h"
#include "case_stamp.h"
#include "sigmemo.h"
#include "strbuf.h"

#define BD_PATH_MAX 4096

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

/* The one judge of a present cassette: its digest (out->cassette) against case.yaml's
 * cassette_digest, cassette.digest_mismatch in out->err otherwise. `path` is the
 * cassette's. */
static void judge_cassette(bd_case_check *out, const bd_task_class *tc, const char *path)
{
    const bd_case *c = out->loaded;
    if (!c->has_cassette_digest) {
        bd_err_set(&out->err, BD_E_CASSETTE_DIGEST_MISMATCH, c->path, 0, 0,
                   "cassette_digest is null but cassette.json exists (%s); run ", out->cassette);
        bd_err_advise(&out->err, BD_ACT_PIN, "%s %s", tc->name, out->case_id);
        bd_err_append(&out->err, " to pin it");
    } else if (strcmp(c->cassette_digest, out->cassette) != 0) {
        bd_err_set(&out->err, BD_E_CASSETTE_DIGEST_MISMATCH, path, 0, 0,
                   "cassette.json is %s but case.yaml pins %s; restore the recorded output, "
                   "or re-pin deliberately with ",
                   out->cassette, c->cassette_digest);
        bd_err_advise(&out->err, BD_ACT_PIN, "%s %s", tc->name, out->case_id);
    }
}

/* Relative label "<task-class>/cases/<id>/..." keeps messages short and copy-pastable. */
static void check_cassette(bd_case_check *out, const bd_task_class *tc, const char *case_dir)
{
    const bd_case *c = out->loaded;
    char *path = bd_path_join(case_dir, "cassette.json");
    if (!path) {
        bd_err_set(&out->err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        return;
    }
    struct stat st;
    bool present = lstat(path, &st) == 0;
    if (!present && errno != ENOENT) {
        bd_err_errno(&out->err, BD_E_IO, errno, path, "cannot stat the cassette");
        goto out;
    }
    if (!present) {
        if (tc->reg->sut_kind == BD_SUT_CASSETTE) {
            bd_err_set(&out->err, BD_E_CASSETTE_MISSING, path, 0, 0,
                       "cassette.json is missing but task class '%s' replays cassettes; "
                       "record the system's output there, then run ",
                       tc->name);
            bd_err_advise(&out->err, BD_ACT_PIN, "%s %s", tc->name, out->case_id);
        } else if (c->has_cassette_digest)
            bd_err_set(&out->err, BD_E_CASSETTE_MISSING, c->path, 0, 0,
                       "cassette_digest is set but cassette.json is missing; restore it or "
                       "set cassette_digest: null");
        goto out;
    }
    bd_err ferr = BD_ERR_INIT;
    if (bd_digest_file(out->cassette, path, &ferr) != 0) {
        out->err = ferr;
        goto out;
    }
    judge_cassette(out, tc, path);
out:
    free(path);
}

/* The case's pin against its computed digest (out->digest): out->pinned set, and
 * case.digest_missing or case.digest_mismatch in out->err. Returns 0 when they agree. */
static int judge_pin(bd_case_check *out, const bd_task_class *tc, const char *case_dir)
{
    const char *case_id = out->case_id;
    const bd_pin *pin = tc->digests ? bd_digests_find(tc->digests, case_id) : NULL;
    if (!pin) {
        bd_err_set(&out->err, BD_E_DIGEST_MISSING, case_dir, 0, 0,
                   "case '%s' has no pin in %s/cases/digests.yaml; review it, then run ", case_id,
                   tc->name);
        return bd_err_advise(&out->err, BD_ACT_PIN, "%s %s", tc->name, case_id);
    }
    snprintf(out->pinned, sizeof(out->pinned), "%s", pin->digest);
    if (strcmp(pin->digest, out->digest) != 0) {
        bd_err_set(&out->err, BD_E_DIGEST_MISMATCH, case_dir, 0, 0,
                   "content is %s but digests.yaml:%d pins %s; restore the case, or re-pin "
                   "deliberately with ",
                   out->digest, pin->line, pin->digest);
        bd_err_advise(&out->err, BD_ACT_PIN, "%s %s", tc->name, case_id);
        return bd_err_append(&out->err, " (its signatures must then be made again)");
    }
    return 0;
}

/* The path-based check: every file looked up by name, each loader judging its own file.
 * The fast path below hands every case it does not fully judge itself to this one, so
 * every error (a link, a leftover temp file, a schema error, an I/O error) is reported
 * exactly as the loaders word it. */
static int verify_case_slow(bd_case_check *out, const bd_task_class *tc, const char *case_id)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->case_id, sizeof(out->case_id), "%s", case_id);
    char *case_dir = NULL;

    /* The signatures are read even when the case is broken: list shows what it claims. */
    bd_err perr = BD_ERR_INIT;
    if (bd_task_class_case_prov(&out->prov_file, tc, case_id, &perr) != 0) {
        out->err = perr;
        goto out;
    }
    if (bd_task_class_case(&out->loaded, tc, case_id, &out->err) != 0)
        goto out;
    case_dir = bd_path_join(tc->cases_dir, case_id);
    if (!case_dir) {
        bd_err_set(&out->err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    /* A temp file from an interrupted write is reported as what it is, never hashed
     * (it would only show up as a digest mismatch with no hint why). */
    if (bd_case_leftover_check(case_dir, &out->err))
        goto out;
    if (bd_digest_case_dir(out->digest, case_dir, NULL, &out->err) != 0) {
        out->digest[0] = '\0';
        goto out;
    }
    if (judge_pin(out, tc, case_dir) != 0)
        goto out;
    check_cassette(out, tc, case_dir);
out:
    free(case_dir);
    return out->err.code == BD_OK ? 0 : -1;
}

/* The pin and the cassette of a case whose digest and case.yaml are known. */
static void check_pins(bd_case_check *out, const bd_task_class *tc, const char *case_dir,
                       const bd_scanned_case *sc)
{
    if (judge_pin(out, tc, case_dir) != 0)
        return;
    if (!sc->cassette_present) {
        /* Absent, or not a regular file: the path-based check says which. */
        check_cassette(out, tc, case_dir);
        return;
    }
    memcpy(out->cassette, sc->cassette, sizeof(out->cassette));
    char path[BD_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/cassette.json", case_dir);
    judge_cassette(out, tc, path);
}

/* "<a>/<b>" into buf (`size` bytes), as snprintf's "%s/%s" would write it: returns its
 * length, or -1 when it does not fit. A check joins a few paths for every case. */
static int join_path(char *buf, size_t size, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + 1 + lb >= size)
        return -1;
    memcpy(buf, a, la);
    buf[la] = '/';
    memcpy(buf + la + 1, b, lb + 1);
    return (int)(la + 1 + lb);
}

static bool has_case(const bd_task_class *tc, const char *id)
{
    return tc->n_cases && bsearch(&id, tc->case_ids, tc->n_cases, sizeof(char *), bd_str_ptr_cmp);
}

/* One case's dealings with the case memo (docs/provenance.md#the-case-memo) and its
 * stamps (#unchanged-cases). */
typedef struct case_memo_io {
    bd_prov_ctx *ctx; /* NULL: no memo */
    uint8_t key[32];  /* the case's memo key, when keyed */
    bool keyed;       /* key is over the very bytes the fast path judged */
    bool hit;         /* the memo answered: the verdict is in the check already */
    bool stamped;     /* the scan's stamps, settled, are below: remember them with a pass */
    uint8_t stamp_key[32];
    bd_shapememo_subject whose; /* task_class and case_id point into the check */
    char shape[BD_STAMP_SHAPE_MAX];
    size_t shape_len;
} case_memo_io;

/* A case check answered from the memo: its digest the pin, the cassette as given. */
static void fill_recalled(bd_case_check *out, const char *digest, const char *cassette,
                          case_memo_io *memo)
{
    snprintf(out->digest, sizeof(out->digest), "%s", digest);
    snprintf(out->pinned, sizeof(out->pinned), "%s", digest);
    snprintf(out->cassette, sizeof(out->cassette), "%s", cassette);
    out->prov_checked = true;
    memo->hit = true;
}

/* The memo's answer for a case none of whose entries changed since a passing check read
 * it: its directory stat'ed, its shape recalled, every entry of the shape stat'ed again
 * (no listing, no byte read), and the stamps' entry recalled. True with out filled as
 * recall_case fills it; false when anything differs or is not known. */
static bool recall_unchanged(bd_case_check *out, const bd_task_class *tc, int cases_fd,
                             bd_case_stamps *st, case_memo_io *memo)
{
    const bd_pin *pin = tc->digests ? bd_digests_find(tc->digests, out->case_id) : NULL;
    struct stat dst;
    if (!pin || bd_case_stamp_dir(cases_fd, out->case_id, &dst) != 0)
        return false;
    bd_shapememo_subject whose = {(uint64_t)dst.st_dev, (uint64_t)dst.st_ino, tc->name,
                                  out->case_id};
    char shape[BD_STAMP_SHAPE_MAX], cassette[BD_DIGEST_BUF];
    size_t len;
    uint8_t key[32];
    bd_subject sj = {BD_SUBJECT_CASE, tc->name, out->case_id, pin->digest, pin->digest, NULL};
    if (!bd_prov_shape_recall(memo->ctx, &whose, shape, sizeof(shape), &len) ||
        bd_case_restamp(st, cases_fd, out->case_id, &dst, shape, len) != 0 ||
        !bd_prov_stamp_key(memo->ctx, key, &sj, (int)tc->reg->sut_kind, st->digest) ||
        !bd_prov_stamp_recall(memo->ctx, key, &sj, &out->prov, cassette))
        return false;
    fill_recalled(out, pin->digest, cassette, memo);
    return true;
}

/* Keep the scan's stamps of a case to remember with its passing verdict, when they are
 * whole and settled and it has a pin. */
static void keep_stamps(const bd_case_check *out, const bd_task_class *tc, const bd_case_stamps *st,
                        case_memo_io *memo)
{
    const bd_pin *pin = tc->digests ? bd_digests_find(tc->digests, out->case_id) : NULL;
    memo->stamped = false;
    if (!pin || !st->ok || !st->settled || st->shape_len == 0)
        return;
    bd_subject sj = {BD_SUBJECT_CASE, tc->name, out->case_id, pin->digest, pin->digest, NULL};
    if (!bd_prov_stamp_key(memo->ctx, memo->stamp_key, &sj, (int)tc->reg->sut_kind, st->digest))
        return;
    memo->whose = (bd_shapememo_subject){st->dir_dev, st->dir_ino, tc->name, out->case_id};
    memcpy(memo->shape, st->shape, st->shape_len);
    memo->shape_len = st->shape_len;
    memo->stamped = true;
}

/* Remember a passing case's kept stamps, for the case key its bytes gave. */
static void remember_stamps(const bd_case_check *k, case_memo_io *memo)
{
    if (memo->stamped && memo->keyed)
        bd_prov_stamp_remember(memo->ctx, memo->stamp_key, memo->key,
                               k->cassette[0] ? k->cassette : NULL, &memo->whose, memo->shape,
                               memo->shape_len);
}

/* The case memo's answer for a case whose files were just scanned (`sc`): true when it
 * recalls a passing verdict (out filled as a passing check, without loaded and
 * prov_file), false when it does not (memo->key then set when keyed, to remember the
 * verdict the check reaches). */
static bool recall_case(bd_case_check *out, const bd_task_class *tc, const bd_scanned_case *sc,
                        case_memo_io *memo)
{
    const bd_pin *pin = tc->digests ? bd_digests_find(tc->digests, out->case_id) : NULL;
    if (!pin || strcmp(pin->digest, sc->digest) != 0)
        return false; /* it fails its pin: the check says how */
    bd_subject sj = {BD_SUBJECT_CASE, tc->name, out->case_id, sc->digest, pin->digest, NULL};
    memo->keyed = bd_prov_case_key(memo->ctx, memo->key, &sj, (int)tc->reg->sut_kind,
                                   sc->prov_present ? sc->prov_yaml : NULL,
                                   sc->prov_present ? sc->prov_len : 0);
    if (!memo->keyed || !bd_prov_case_recall(memo->ctx, memo->key, &sj, &out->prov))
        return false;
    fill_recalled(out, sc->digest, sc->cassette_present ? sc->cassette : "", memo);
    return true;
}

/* The check of one case in one pass (bd_case_scan: each file opened relative to the
 * cases/ descriptor and read once; case.yaml parsed from the very bytes that were
 * hashed). Anything it does not judge itself goes to verify_case_slow. With a case memo
 * a case it knows to pass is answered from it (recall_case) once its bytes are read. */
static int verify_case_fast(bd_case_check *out, const bd_task_class *tc, int cases_fd,
                            bd_case_scanner *scanner, const char *case_id, case_memo_io *memo)
{
    memo->keyed = memo->hit = memo->stamped = false;
    if (cases_fd < 0 || !scanner || !bd_name_valid(case_id) || !has_case(tc, case_id))
        return verify_case_slow(out, tc, case_id);
    char case_dir[BD_PATH_MAX], path[BD_PATH_MAX + 32];
    if (join_path(case_dir, sizeof(case_dir), tc->cases_dir, case_id) < 0)
        return verify_case_slow(out, tc, case_id);
    memset(out, 0, sizeof(*out));
    size_t id_len = strlen(case_id); /* a valid name: at most 128 bytes */
    if (id_len >= sizeof(out->case_id))
        return verify_case_slow(out, tc, case_id);
    memcpy(out->case_id, case_id, id_len + 1);
    bd_case_stamps stamps;
    if (memo->ctx && recall_unchanged(out, tc, cases_fd, &stamps, memo))
        return 0;
    bd_scanned_case sc = {.yaml_max = BD_YAML_MAX_BYTES, .stamps = memo->ctx ? &stamps : NULL};
    bd_err e = BD_ERR_INIT;
    if (bd_case_scan(scanner, &sc, cases_fd, tc->cases_dir, case_id, &e) != 0 || sc.unusual ||
        !sc.case_yaml)
        goto slow;
    if (memo->ctx)
        keep_stamps(out, tc, &stamps, memo);
    if (memo->ctx && recall_case(out, tc, &sc, memo)) {
        remember_stamps(out, memo);
        bd_case_scan_release(&sc);
        return 0;
    }
    join_path(path, sizeof(path), case_dir, BD_PROVENANCE_FILE); /* fits: path is 32 longer */
    if (sc.prov_present) {
        if (bd_provfile_parse(&out->prov_file, sc.prov_yaml, sc.prov_len, path, &e) != 0)
            goto slow;
    } else {
        /* No file: signed in neither role (bd_provfile_load's empty file). */
        if (!(out->prov_file = calloc(1, sizeof(*out->prov_file))) ||
            !(out->prov_file->path = strdup(path)))
            goto slow;
        out->prov_file->schema_version = 2;
    }
    join_path(path, sizeof(path), case_dir, "case.yaml");
    if (bd_case_parse(&out->loaded, sc.case_yaml, sc.case_yaml_len, path, case_id, &e) != 0)
        goto slow;
    memcpy(out->digest, sc.digest, sizeof(out->digest));
    check_pins(out, tc, case_dir, &sc);
    bd_case_scan_release(&sc);
    return out->err.code == BD_OK ? 0 : -1;
slow:
    memo->keyed = memo->hit = memo->stamped = false; /* the path-based check reads again */
    bd_case_scan_release(&sc);
    bd_case_check_release(out);
    return verify_case_slow(out, tc, case_id);
}

void bd_case_check_release(bd_case_check *c)
{
    if (!c)
        return;
    bd_case_free(c->loaded);
    c->loaded = NULL;
    bd_provfile_free(c->prov_file);
    c->prov_file = NULL;
}

static void check_task_class(bd_verify_report *r, const bd_task_class *tc)
{
    bd_err *e = &r->tc_err;
    if (bd_digest_task_class_dir(r->tc_digest, tc->dir, e) != 0) {
        r->tc_digest[0] = '\0';
        return;
    }
    if (tc->digests)
        snprintf(r->tc_pinned, sizeof(r->tc_pinned), "%s", tc->digests->task_class);
    if (!tc->digests) {
        bd_err_set(e, BD_E_TC_DIGEST_MISSING, tc->cases_dir, 0, 0,
                   "digests.yaml is missing, so nothing is pinned; run ");
        bd_err_advise(e, BD_ACT_PIN, "%s", tc->name);
        return;
    }
    if (strcmp(tc->digests->task_class, r->tc_digest) != 0) {
        bd_err_set(e, BD_E_TC_DIGEST_MISMATCH, tc->dir, 0, 0,
                   "registration.yaml + rubric.py are %s but digests.yaml pins %s; restore "
                   "them, or re-pin deliberately with ",
                   r->tc_digest, tc->digests->task_class);
        bd_err_advise(e, BD_ACT_PIN, "%s", tc->name);
        bd_err_append(e, " (the task class's signatures must then be made again)");
    }
}

/* Fill `e` with the case.pin_orphaned error of pin `p`. */
static void orphan_err(bd_err *e, const bd_task_class *tc, const bd_pin *p)
{
    char *path = bd_path_join(tc->cases_dir, "digests.yaml");
    bd_err_set(e, BD_E_PIN_ORPHAN, path ? path : "digests.yaml", p->line, 0,
               "pin for '%s' names no case directory; restore the case or run ", p->case_id);
    bd_err_advise(e, BD_ACT_PIN, "%s", tc->name);
    bd_err_append(e, " to drop the pin");
    free(path);
}

/* ---- many cases on a few threads ---------------------------------------------------- */

/* A worker runs at most POOL_WINDOW cases ahead of the hand-over: memory stays bounded
 * by the window, not the task class. Eight workers with signatures, more than the cores:
 * a case read from a cold page cache waits on the disk, and the others keep the cores
 * busy meanwhile (a cold check of 100,000 signed cases read from disk: 45.9 s with four,
 * 41.4 s with eight, docs/runner.md#a-signed-bench-end-to-end). */
#define POOL_THREADS 8
#define POOL_WINDOW  256
#define POOL_CHUNK   16

typedef struct pool_slot {
    bd_case_check chk;
    bool failed; /* the case's integrity failed */
    int prov_v;  /* bd_provenance_verify: 0, 1 (bad) or -1 (GnuPG failed: gerr) */
    bd_err gerr;
    case_memo_io memo;
    bool done;
} pool_slot;

typedef struct case_pool {
    const bd_task_class *tc;
    const char *const *ids;
    size_t n;
    bd_prov_ctx *ctx;
    int cases_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv_free; /* a slot was handed over */
    pthread_cond_t cv_done; /* a slot was filled */
    size_t next;            /* next index a worker claims */
    size_t consumed;        /* indexes below this are handed over */
    bool stop;
    atomic_bool gather; /* gather each run's unknown signatures into a batch (check_run) */
    size_t window;      /* slots: POOL_WINDOW, or fewer for a few cases (a check is ~10 KB) */
    bool case_memo;     /* opts.case_memo */
    pool_slot *slots;
} case_pool;

/* Case `i`'s files (its slot's check), without its signatures. */
static void scan_one(case_pool *p, bd_case_scanner *scanner, size_t i)
{
    pool_slot *s = &p->slots[i % p->window];
    s->memo.ctx = p->case_memo ? p->ctx : NULL;
    s->failed = verify_case_fast(&s->chk, p->tc, p->cases_fd, scanner, p->ids[i], &s->memo) != 0;
    s->prov_v = 0;
}

static bd_subject case_subject(const case_pool *p, const bd_case_check *k)
{
    return (bd_subject){BD_SUBJECT_CASE, p->tc->name, k->case_id,
                        k->digest,       k->pinned,   k->prov_file};
}

/* Case `i`'s signatures, once scan_one has run. */
static void sign_one(case_pool *p, size_t i)
{
    pool_slot *s = &p->slots[i % p->window];
    bd_case_check *k = &s->chk;
    if (p->ctx && k->prov_file) {
        bd_subject sj = case_subject(p, k);
        s->gerr = (bd_err)BD_ERR_INIT;
        s->prov_v = bd_provenance_verify(&k->prov, p->ctx, &sj, &s->gerr);
        k->prov_checked = s->prov_v >= 0;
        /* Only the verdict of a case whose whole check passed, reached on the bytes the
         * key covers (the fast path's). */
        if (s->memo.keyed && !s->failed && s->prov_v == 0 && k->err.code == BD_OK &&
            bd_prov_case_remember(p->ctx, s->memo.key, &k->prov))
            remember_stamps(k, &s->memo);
    }
}

static void check_one(case_pool *p, bd_case_scanner *scanner, size_t i)
{
    scan_one(p, scanner, i);
    sign_one(p, i);
}

/* Cases first..last-1: their files, then the signatures the context does not know yet
 * in one batch (bd_prov_prefetch: a gpg process for the run, not one per signature),
 * then each case's signatures judged in order. Gathering stops while the memos answer
 * everything (a warm check would only pay for it) and starts again as soon as a
 * signature goes to GnuPG alone. */
static void check_run(case_pool *p, bd_case_scanner *scanner, size_t first, size_t last)
{
    for (size_t i = first; i < last; i++)
        scan_one(p, scanner, i);
    bool gather = p->ctx && atomic_load(&p->gather);
    if (gather) {
        bd_prov_reqs reqs = BD_PROV_REQS_INIT;
        for (size_t i = first; i < last; i++) {
            const bd_case_check *k = &p->slots[i % p->window].chk;
            if (k->prov_file) {
                bd_subject sj = case_subject(p, k);
                bd_provenance_collect(&reqs, p->ctx, &sj);
            }
        }
        if (reqs.n && bd_prov_prefetch(p->ctx, &reqs) == 0)
            atomic_store(&p->gather, false);
        bd_prov_reqs_release(&reqs);
    }
    size_t alone = p->ctx ? bd_prov_ctx_alone(p->ctx) : 0;
    for (size_t i = first; i < last; i++)
        sign_one(p, i);
    if (p->ctx && !gather && bd_prov_ctx_alone(p->ctx) != alone)
        atomic_store(&p->gather, true);
}

static void *pool_worker(void *arg)
{
    case_pool *p = arg;
    bd_case_scanner *scanner = NULL;
    (void)bd_case_scanner_new(&scanner, NULL); /* without one, the path-based check runs */
    pthread_mutex_lock(&p->mu);
    for (;;) {
        /* A run of POOL_CHUNK cases per claim: one lock and one wake-up per run, not
         * per case. */
        while (!p->stop && p->next < p->n && p->next + POOL_CHUNK > p->consumed + p->window)
            pthread_cond_wait(&p->cv_free, &p->mu);
        if (p->stop || p->next >= p->n)
            break;
        size_t first = p->next, last = first + POOL_CHUNK;
        if (last > p->n)
            last = p->n;
        p->next = last;
        pthread_mutex_unlock(&p->mu);
        check_run(p, scanner, first, last);
        pthread_mutex_lock(&p->mu);
        for (size_t i = first; i < last; i++)
            p->slots[i % p->window].done = true;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    bd_case_scanner_free(scanner);
    return NULL;
}

/* A few dozen cases are not worth starting threads: the run gate of one case. With
 * signatures a case may wait on GnuPG processes (about 10 ms each, mostly spent starting
 * gpg) or on the disk, so two cases are already worth it, and more workers than cores
 * keep the cores busy while others wait. `scan`: threads for the scanning alone too; the TUI's
 * chunks (opts.scan_here) pass false, its own pool already spreads them over the cores. */
static size_t pool_threads(size_t n, bool signatures, bool scan)
{
    if (signatures && n >= 2)
        return n < POOL_THREADS ? n : POOL_THREADS;
    return scan ? bd_case_scan_threads(n, 64) : 1;
}

/* A pool over `n` cases (ids) with its workers started (*nth of them; none: the caller
 * checks each case itself), or NULL when out of memory. */
static case_pool *pool_start(const bd_task_class *tc, const char *const *ids, size_t n,
                             const bd_verify_opts *o, pthread_t th[POOL_THREADS], size_t *nth)
{
    case_pool *p = calloc(1, sizeof(*p));
    size_t want = pool_threads(n, o->prov != NULL, !o->scan_here);
    /* A worker claims POOL_CHUNK slots at once; without workers one slot is in use. */
    size_t window = want <= 1 ? POOL_CHUNK : n < POOL_WINDOW ? n : POOL_WINDOW;
    if (window < POOL_CHUNK)
        window = POOL_CHUNK;
    if (!p || !(p->slots = calloc(window, sizeof(*p->slots)))) {
        free(p);
        return NULL;
    }
    p->window = window;
    p->tc = tc;
    p->ids = ids;
    p->n = n;
    p->ctx = o->prov;
    p->case_memo = o->case_memo;
    atomic_init(&p->gather, true);
    p->cases_fd = open(tc->cases_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_free, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    for (*nth = 0; want > 1 && *nth < want; (*nth)++)
        if (pthread_create(&th[*nth], NULL, pool_worker, p) != 0)
            break;
    return p;
}

/* Stop and join the workers, release the checks they finished that were not handed over,
 * and free the pool. */
static void pool_finish(case_pool *p, pthread_t th[POOL_THREADS], size_t nth)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv_free);
    pthread_mutex_unlock(&p->mu);
    for (size_t t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    for (size_t j = 0; j < p->window; j++)
        if (p->slots[j].done)
            bd_case_check_release(&p->slots[j].chk);
    if (p->cases_fd >= 0)
        close(p->cases_fd);
    pthread_cond_destroy(&p->cv_free);
    pthread_cond_destroy(&p->cv_done);
    pthread_mutex_destroy(&p->mu);
    free(p->slots);
    free(p);
}

/* Case `i`, counted into `r`, to the sink on the calling thread: kept in r->cases with
 * opts.collect, else released after the call. Returns whether the case failed. */
static bool hand_over(bd_verify_report *r, pool_slot *s, size_t i, const bd_verify_opts *o,
                      const bd_verify_sink *sink)
{
    bd_case_check *k = &s->chk;
    bool failed = s->failed || (s->prov_v == 1 && k->err.code == BD_OK);
    r->n_cases++;
    if (failed)
        r->n_failed++;
    r->n_prov[k->prov_checked ? k->prov.status : BD_PROV_ST_BAD]++;
    if (o->collect) {
        r->cases[i] = *k;
        k = &r->cases[i];
    }
    if (sink->on_case)
        sink->on_case(k, sink->payload);
    if (!o->collect)
        bd_case_check_release(k);
    return failed;
}

/* Check `n` cases (ids), with their signatures when opts->prov is set, counting into `r`
 * and handing each check over in order. Cases are checked by up to POOL_THREADS workers
 * (each with its own scanner; GnuPG contexts are per call) and handed over on the calling
 * thread strictly in order, so output stays byte-identical and streaming; a worker runs
 * at most the window ahead of the hand-over. Returns 0, or -1 with `err` when out of
 * memory or GnuPG failed (the checks not yet handed over are released). */
static int run_cases(bd_verify_report *r, const bd_task_class *tc, const char *const *ids, size_t n,
                     const bd_verify_opts *o, const bd_verify_sink *sink, bd_err *err)
{
    pthread_t th[POOL_THREADS];
    size_t nth = 0;
    case_pool *p = pool_start(tc, ids, n, o, th, &nth);
    if (!p)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    bd_case_scanner *own = NULL;
    if (nth == 0)
        (void)bd_case_scanner_new(&own, NULL);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        pool_slot *s = &p->slots[i % p->window];
        if (nth == 0) {
            check_one(p, own, i); /* no threads: here, one at a time */
        } else {
            pthread_mutex_lock(&p->mu);
            while (!s->done)
                pthread_cond_wait(&p->cv_done, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (s->prov_v < 0) {
            if (err)
                *err = s->gerr;
            bd_case_check_release(&s->chk);
            s->done = false; /* pool_finish releases what the workers finished */
            rc = -1;
            break;
        }
        bool failed = hand_over(r, s, i, o, sink);
        if (nth > 0) {
            pthread_mutex_lock(&p->mu);
            s->done = false;
            p->consumed = i + 1;
            if ((i + 1) % POOL_CHUNK == 0) /* room for another run */
                pthread_cond_broadcast(&p->cv_free);
            pthread_mutex_unlock(&p->mu);
        }
        if (failed && o->stop_early)
            break;
    }
    bd_case_scanner_free(own);
    pool_finish(p, th, nth);
    bd_prov_ctx_flush(o->prov);
    return rc;
}

/* Pins naming no case directory: counted into `r`, kept with opts.collect, each handed to
 * sink->on_orphan. Returns 0, or -1 with `err` when out of memory. */
static int check_orphans(bd_verify_report *r, const bd_task_class *tc, const bd_verify_opts *o,
                         const bd_verify_sink *sink, bd_err *err)
{
    if (!tc->digests || !tc->digests->n_pins)
        return 0;
    /* At most one orphan per pin: one allocation, whatever the count. */
    if (o->collect && !(r->orphans = calloc(tc->digests->n_pins, sizeof(*r->orphans))))
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < tc->digests->n_pins; i++) {
        const bd_pin *p = &tc->digests->pins[i];
        if (has_case(tc, p->case_id))
            continue;
        bd_err e;
        orphan_err(&e, tc, p);
        const bd_err *kept = &e;
        if (o->collect) {
            r->orphans[r->n_orphans] = e;
            kept = &r->orphans[r->n_orphans];
        }
        r->n_orphans++;
        r->n_failed++;
        if (sink->on_orphan)
            sink->on_orphan(kept, sink->payload);
        if (o->stop_early)
            break;
    }
    return 0;
}

void bd_verify_report_release(bd_verify_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->cases && i < r->n_cases; i++)
        bd_case_check_release(&r->cases[i]);
    free(r->cases);
    free(r->orphans);
    memset(r, 0, sizeof(*r));
}

/* The task class's own signatures into `r`. 0, or -1 when GnuPG failed. */
static int verify_tc_prov(bd_verify_report *r, const bd_task_class *tc, bd_prov_ctx *ctx,
                          bd_err *err)
{
    bd_subject tsj = {BD_SUBJECT_TASK_CLASS, tc->name, NULL, r->tc_digest, r->tc_pinned, tc->prov};
    int v = bd_provenance_verify(&r->tc_prov, ctx, &tsj, err);
    if (v < 0)
        return -1;
    r->tc_prov_checked = true;
    if (v == 1 && r->tc_err.code == BD_OK)
        r->n_failed++;
    return 0;
}

int bd_verify(bd_verify_report *out, const bd_task_class *tc, const bd_verify_opts *opts,
              const bd_verify_sink *sink, bd_err *err)
{
    static const bd_verify_opts defaults = {0};
    static const bd_verify_sink quiet = {0};
    const bd_verify_opts *o = opts ? opts : &defaults;
    if (!sink)
        sink = &quiet;
    memset(out, 0, sizeof(*out));
    snprintf(out->task_class, sizeof(out->task_class), "%s", tc->name);
    if (!o->no_task_class) {
        check_task_class(out, tc);
        if (out->tc_err.code != BD_OK)
            out->n_failed++;
        if (o->prov && verify_tc_prov(out, tc, o->prov, err) < 0)
            return -1;
        if (sink->on_task_class)
            sink->on_task_class(out, sink->payload);
    }
    if (o->no_cases || (o->stop_early && out->n_failed))
        return out->n_failed ? 1 : 0;

    bool all = o->n_case_ids == 0;
    const char *const *ids = all ? (const char *const *)tc->case_ids : o->case_ids;
    size_t n = all ? tc->n_cases : o->n_case_ids;
    if (o->collect && n && !(out->cases = calloc(n, sizeof(*out->cases))))
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    if (n && run_cases(out, tc, ids, n, o, sink, err) < 0)
        return -1;
    if (all && !o->no_task_class && !(o->stop_early && out->n_failed) &&
        check_orphans(out, tc, o, sink, err) < 0)
        return -1;
    return out->n_failed ? 1 : 0;
}

const bd_err *bd_case_check_failure(const bd_case_check *c)
{
    if (c->err.code != BD_OK)
        return &c->err;
    if (c->prov_checked && c->prov.status == BD_PROV_ST_BAD)
        return &c->prov.err;
    return NULL;
}

const bd_err *bd_verify_tc_failure(const bd_verify_report *r)
{
    if (r->tc_err.code != BD_OK)
        return &r->tc_err;
    if (r->tc_prov_checked && r->tc_prov.status == BD_PROV_ST_BAD)
        return &r->tc_prov.err;
    return NULL;
}

const bd_err *bd_verify_first_failure(const bd_verify_report *r)
{
    const bd_err *e = bd_verify_tc_failure(r);
    if (e)
        return e;
    for (size_t i = 0; i < r->n_cases; i++)
        if ((e = bd_case_check_failure(&r->cases[i])))
            return e;
    if (r->n_orphans)
        return &r->orphans[0];
    return NULL;
}

bd_prov_claim bd_prov_claim_of(const bd_provfile *p)
{
    if (!p)
        return BD_PROV_DRAFT;
    if (p->author.present && p->reviewer.present)
        return BD_PROV_COUNTERSIGNED;
    if (p->author.present || p->reviewer.present)
        return BD_PROV_AUTHORED;
    return BD_PROV_DRAFT;
}

const char *bd_prov_claim_str(bd_prov_claim p)
{
    switch (p) {
    case BD_PROV_COUNTERSIGNED:
        return "signed";
    case BD_PROV_AUTHORED:
        return "awaiting_review";
    case BD_PROV_DRAFT:
        break;
    }
    return "draft";
}
