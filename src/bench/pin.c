#include "pin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "strbuf.h"

#define CASE_YAML_MAX (1024 * 1024)

char *bd_yaml_set_top_scalar(const char *text, const char *key, const char *value,
                             const char *label, bd_err *err)
{
    size_t klen = strlen(key);
    int line = 1;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        const char *end = eol ? eol : p + strlen(p);
        if ((size_t)(end - p) > klen && strncmp(p, key, klen) == 0 && p[klen] == ':') {
            const char *v = p + klen + 1;
            if (v < end && *v != ' ' && *v != '\t')
                goto odd;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = v;
            while (ve < end && *ve != ' ' && *ve != '\t' && *ve != '#' && *ve != '\r')
                ve++;
            /* Only single-token scalars (null, a digest, a quoted digest) are ours to
             * rewrite; anything else was written by hand and is left for a human. */
            if (ve == v || *v == '|' || *v == '>' || *v == '{' || *v == '[' || *v == '&' ||
                *v == '*')
                goto odd;
            size_t head = (size_t)(v - text), tail = strlen(ve), vlen = strlen(value);
            char *out = malloc(head + vlen + tail + 1);
            if (!out) {
                bd_err_set(err, BD_E_NOMEM, label, 0, 0, "out of memory");
                return NULL;
            }
            memcpy(out, text, head);
            memcpy(out + head, value, vlen);
            memcpy(out + head + vlen, ve, tail + 1);
            return out;
        odd:
            bd_err_set(err, BD_E_CASE_SCHEMA, label, line, 1,
                       "'%s' must be written on one line as `%s: <value>` for benchdesk to "
                       "rewrite it; fix the line and retry",
                       key, key);
            return NULL;
        }
        if (!eol)
            break;
        p = eol + 1;
        line++;
    }
    bd_err_set(err, BD_E_CASE_SCHEMA, label, 0, 0,
               "has no top-level '%s:' line; add `%s: null` and retry", key, key);
    return NULL;
}

/* What pinning one case will write, computed before anything is written. */
typedef struct pending_case {
    const char *case_id;
    char *dir;
    char *yaml_path;
    char *new_yaml; /* NULL when case.yaml needs no change */
    unsigned mode;
    char digest[BD_DIGEST_BUF];
} pending_case;

static int prepare_case(pending_case *pc, const bd_task_class *tc, const char *case_id, bd_err *err)
{
    int rc = -1;
    bd_case *c = NULL;
    char *text = NULL;
    char *cassette = NULL;
    pc->case_id = case_id;
    pc->dir = bd_path_join(tc->cases_dir, case_id);
    cassette = pc->dir ? bd_path_join(pc->dir, "cassette.json") : NULL;
    pc->yaml_path = pc->dir ? bd_path_join(pc->dir, "case.yaml") : NULL;
    if (!pc->yaml_path || !cassette) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    if (bd_task_class_case(&c, tc, case_id, err) != 0)
        goto out;
    /* A temp file from an interrupted write is never hashed into a pin. */
    if (bd_case_leftover_check(pc->dir, err))
        goto out;
    /* Digest now: refuses unsupported entries before anything is written. */
    if (bd_digest_case_dir(pc->digest, pc->dir, NULL, err) != 0)
        goto out;

    char cassette_digest[BD_DIGEST_BUF] = "null";
    struct stat st;
    if (lstat(cassette, &st) == 0) {
        if (bd_digest_file(cassette_digest, cassette, err) != 0)
            goto out;
    } else if (errno != ENOENT) {
        bd_err_errno(err, BD_E_IO, errno, cassette, "cannot stat the cassette");
        goto out;
    }
    const char *want_cassette = c->has_cassette_digest ? c->cassette_digest : "null";
    if (strcmp(want_cassette, cassette_digest) != 0) {
        /* case.yaml (hashed) records the cassette's digest: pinning takes the new one. */
        size_t len;
        if (bd_read_file(&text, &len, pc->yaml_path, CASE_YAML_MAX, BD_E_YAML_TOO_LARGE, err) != 0)
            goto out;
        if (stat(pc->yaml_path, &st) != 0) {
            bd_err_errno(err, BD_E_IO, errno, pc->yaml_path, "cannot stat");
            goto out;
        }
        pc->mode = st.st_mode & 07777;
        pc->new_yaml =
            bd_yaml_set_top_scalar(text, "cassette_digest", cassette_digest, pc->yaml_path, err);
        if (!pc->new_yaml)
            goto out;
    }
    rc = 0;
out:
    bd_case_free(c);
    free(text);
    free(cassette);
    return rc;
}

/* prepare_case in one pass (bd_case_scan: each file read once, case.yaml parsed from the
 * hashed bytes) for the usual case: it loads, nothing is left over, and its
 * cassette_digest is already right. Anything else (an error to word, a case.yaml to
 * edit) is prepare_case's. */
static int prepare_case_fast(pending_case *pc, const bd_task_class *tc, int cases_fd,
                             bd_case_scanner *scanner, const char *case_id, bd_err *err)
{
    bd_scanned_case sc = {.yaml_max = CASE_YAML_MAX};
    bd_case *c = NULL;
    bd_err e = BD_ERR_INIT;
    char path[4200];
    int n = snprintf(path, sizeof(path), "%s/%s/case.yaml", tc->cases_dir, case_id);
    bool fast = cases_fd >= 0 && scanner && !tc->cases_unlisted && n > 0 &&
                (size_t)n < sizeof(path) && bd_name_valid(case_id) &&
                bsearch(&case_id, tc->case_ids, tc->n_cases, sizeof(char *), bd_str_ptr_cmp) &&
                bd_case_scan(scanner, &sc, cases_fd, tc->cases_dir, case_id, &e) == 0 &&
                !sc.unusual && sc.case_yaml && sc.cassette_present &&
                bd_case_parse(&c, sc.case_yaml, sc.case_yaml_len, path, case_id, &e) == 0 &&
                c->has_cassette_digest && strcmp(c->cassette_digest, sc.cassette) == 0;
    if (fast) {
        pc->case_id = case_id;
        memcpy(pc->digest, sc.digest, sizeof(pc->digest));
    }
    bd_case_free(c);
    bd_case_scan_release(&sc);
    return fast ? 0 : prepare_case(pc, tc, case_id, err);
}

/* Phase 1 over many cases, on up to PREP_THREADS threads (each with its own scanner):
 * hashing 100,000 cases is file-system work that two cores do in half the time. Each
 * pending_case is written by one thread only; the first failure in id order is the one
 * reported, as a one-thread pass would. */
#define PREP_THREADS 4
#define PREP_CHUNK   64

typedef struct prep_job {
    pending_case *pend;
    size_t n;
    const bd_task_class *tc;
    const char *const *ids;
    int cases_fd;
    pthread_mutex_t mu;
    size_t next;
    size_t first_bad; /* lowest failing index so far (n: none); claims stop past it */
    bd_err bad_err;   /* its error */
    bool nomem;       /* a worker could not start: nothing it would have done is done */
} prep_job;

static void *prep_worker(void *arg)
{
    prep_job *j = arg;
    bd_case_scanner *scanner = NULL;
    bd_err *e = malloc(sizeof(*e));            /* ~1.5 KB: one per thread, not one per case */
    (void)bd_case_scanner_new(&scanner, NULL); /* without one, prepare_case does it all */
    if (!e) {
        pthread_mutex_lock(&j->mu);
        j->nomem = true;
        pthread_mutex_unlock(&j->mu);
    }
    for (; e;) {
        pthread_mutex_lock(&j->mu);
        size_t first = j->next, last = first + PREP_CHUNK;
        bool stop = first >= j->n || first > j->first_bad;
        if (!stop)
            j->next = last > j->n ? j->n : last;
        pthread_mutex_unlock(&j->mu);
        if (stop)
            break;
        if (last > j->n)
            last = j->n;
        for (size_t i = first; i < last; i++) {
            *e = (bd_err)BD_ERR_INIT;
            if (prepare_case_fast(&j->pend[i], j->tc, j->cases_fd, scanner, j->ids[i], e) == 0)
                continue;
            pthread_mutex_lock(&j->mu);
            if (i < j->first_bad) {
                j->first_bad = i;
                j->bad_err = *e;
            }
            pthread_mutex_unlock(&j->mu);
            break; /* the rest of this run comes after a failure */
        }
    }
    free(e);
    bd_case_scanner_free(scanner);
    return NULL;
}

/* Every case before the first failing one is prepared (claims go in id order, and a run
 * is finished up to its failure), so the failure reported is the one a one-thread pass
 * would report. */
static int prepare_all(pending_case *pend, size_t n, const bd_task_class *tc,
                       const char *const *ids, bd_err *err)
{
    prep_job *j = calloc(1, sizeof(*j));
    if (!j)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    j->pend = pend;
    j->n = n;
    j->tc = tc;
    j->ids = ids;
    j->first_bad = n;
    j->cases_fd = open(tc->cases_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    pthread_mutex_init(&j->mu, NULL);
    size_t want = bd_case_scan_threads(n, 2 * PREP_CHUNK);
    pthread_t th[PREP_THREADS];
    size_t nth = 0;
    for (; want > 1 && nth < want; nth++)
        if (pthread_create(&th[nth], NULL, prep_worker, j) != 0)
            break;
    if (nth == 0)
        prep_worker(j);
    for (size_t t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    int rc = 0;
    if (j->nomem) {
        rc = bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    } else if (j->first_bad < n) {
        if (err)
            *err = j->bad_err;
        rc = -1;
    }
    pthread_mutex_destroy(&j->mu);
    if (j->cases_fd >= 0)
        close(j->cases_fd);
    free(j);
    return rc;
}

/* Whether block `b` stops counting under the new pin `after`, and whose it is. */
static bool block_broken(const bd_signature_block *b, const char *after, char by[256], bool *legacy)
{
    *legacy = b->present && !b->digest[0];
    if (!b->present || strcmp(b->digest, after) == 0)
        return false;
    snprintf(by, 256, "%s", b->identity ? b->identity : "");
    return true;
}

/* Signatures of the subject whose provenance.yaml is at `prov_path` that a new pin breaks:
 * every present block but one already over the new digest. */
static void count_broken(bd_pin_change *ch, const char *prov_path)
{
    bd_provfile *pf = NULL;
    bd_err e = BD_ERR_INIT;
    if (bd_provfile_load(&pf, prov_path, &e) != 0)
        return; /* verify reports a broken file; pin only counts */
    ch->author_broken = block_broken(&pf->author, ch->after, ch->author_by, &ch->author_legacy);
    ch->reviewer_broken =
        block_broken(&pf->reviewer, ch->after, ch->reviewer_by, &ch->reviewer_legacy);
    bd_provfile_free(pf);
}

static int add_change(bd_pin_report *r, size_t *cap, const bd_task_class *tc, const char *case_id,
                      const char *before, const char *after, bd_err *err)
{
    if (r->n_changes == *cap) {
        /* Doubling: a pin of 100,000 changing cases is not 100,000 reallocs. */
        size_t ncap = *cap ? *cap * 2 : 16;
        bd_pin_change *grown = realloc(r->changes, ncap * sizeof(*grown));
        if (!grown)
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        r->changes = grown;
        *cap = ncap;
    }
    bd_pin_change *ch = &r->changes[r->n_changes++];
    snprintf(ch->case_id, sizeof(ch->case_id), "%s", case_id);
    snprintf(ch->before, sizeof(ch->before), "%s", before);
    snprintf(ch->after, sizeof(ch->after), "%s", after);
    ch->author_broken = ch->reviewer_broken = ch->author_legacy = ch->reviewer_legacy = false;
    ch->author_by[0] = ch->reviewer_by[0] = '\0';
    if (after[0]) {
        /* A new pin: any signature present was made over another digest. */
        char path[4096];
        if (case_id[0])
            snprintf(path, sizeof(path), "%s/%s/provenance.yaml", tc->cases_dir, case_id);
        else
            snprintf(path, sizeof(path), "%s", tc->prov_path);
        count_broken(ch, path);
    }
    return 0;
}

/* One pin line of the new digests.yaml. */
typedef struct out_pin {
    const char *case_id;
    const char *digest;
} out_pin;

static int cmp_out_pin(const void *a, const void *b)
{
    return strcmp(((const out_pin *)a)->case_id, ((const out_pin *)b)->case_id);
}

/* The lines of digests.yaml before the pins, with the task-class digest `tcd`, into `buf`
 * (at least DIGESTS_HEAD_MAX bytes). Returns its length. */
#define DIGESTS_HEAD_MAX 512
static size_t digests_head(char *buf, const char *tcd, bool no_pins)
{
    return (size_t)snprintf(buf, DIGESTS_HEAD_MAX,
                            "# Pins written by `benchdesk pin`: the task-class digest "
                            "(registration.yaml + rubric.py) and each case's digest "
                            "(docs/formats.md#digests).\n"
                            "schema_version: 2\ntask_class: %s\ncases:%s\n",
                            tcd, no_pins ? " {}" : "");
}

/* "  <id>: <digest>\n" at `at`, copied (no printf per line: 100,000 lines). Returns the
 * bytes written. */
static size_t put_pin_line(char *at, const out_pin *p)
{
    size_t il = strlen(p->case_id), dl = strlen(p->digest);
    memcpy(at, "  ", 2);
    memcpy(at + 2, p->case_id, il);
    memcpy(at + 2 + il, ": ", 2);
    memcpy(at + 4 + il, p->digest, dl);
    at[4 + il + dl] = '\n';
    return 5 + il + dl;
}

/* The whole digests.yaml for the `np` pins (sorted by id): a new buffer (caller frees), its
 * length in *len; NULL when out of memory. */
static char *digests_serialise(size_t *len, const char *tcd, const out_pin *pins, size_t np)
{
    char *yaml = malloc(DIGESTS_HEAD_MAX + np * (BD_DIGEST_BUF + 140));
    if (!yaml)
        return NULL;
    size_t off = digests_head(yaml, tcd, np == 0);
    for (size_t i = 0; i < np; i++)
        off += put_pin_line(yaml + off, &pins[i]);
    *len = off;
    return yaml;
}

/* Whether `old` (as loaded) is byte for byte what digests_serialise writes for its own
 * pins and task-class digest: its bytes were kept (the line reader took them: only pin
 * lines after the head, in order) and its head is the one pin writes. Then replacing a
 * pin's line, or inserting one in order, gives the very bytes a full rewrite would. */
static bool digests_spliceable(const bd_digests *old)
{
    if (!old || !old->raw || old->n_pins == 0)
        return false;
    char head[DIGESTS_HEAD_MAX];
    size_t hl = digests_head(head, old->task_class, false);
    return old->pins[0].off == hl && memcmp(old->raw, head, hl) == 0;
}

/* The first pin of `d` whose id is not below `id` (d->n_pins when none). */
static size_t pin_lower_bound(const bd_digests *d, const char *id)
{
    size_t lo = 0, hi = d->n_pins;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(d->pins[mid].case_id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The new digests.yaml as the bytes of `old` (digests_spliceable) with the `n` pins of
 * `upd` (sorted by id, unique) put in: a pin already there has its digest replaced, a new
 * one gets its line inserted in order. The unchanged lines are copied as byte ranges, not
 * serialised again. A new buffer (caller frees), its length in *len; NULL when out of
 * memory. */
static char *digests_splice(size_t *len, const bd_digests *old, const out_pin *upd, size_t n)
{
    size_t total = old->raw_len;
    for (size_t i = 0; i < n; i++) {
        const bd_pin *at = bd_digests_find(old, upd[i].case_id);
        if (!at)
            total += 5 + strlen(upd[i].case_id) + strlen(upd[i].digest);
        else
            total += strlen(upd[i].digest) - BD_DIGEST_STR_LEN;
    }
    char *out = malloc(total ? total : 1);
    if (!out)
        return NULL;
    size_t from = 0, o = 0; /* next byte of old->raw to copy; bytes of out written */
    for (size_t i = 0; i < n; i++) {
        size_t k = pin_lower_bound(old, upd[i].case_id);
        bool there = k < old->n_pins && strcmp(old->pins[k].case_id, upd[i].case_id) == 0;
        /* Up to the old digest ("  <id>: "), or up to the line the new one goes before. */
        size_t upto = k == old->n_pins
                          ? old->raw_len
                          : old->pins[k].off + (there ? 4 + strlen(upd[i].case_id) : 0);
        memcpy(out + o, old->raw + from, upto - from);
        o += upto - from;
        if (there) {
            size_t dl = strlen(upd[i].digest);
            memcpy(out + o, upd[i].digest, dl);
            o += dl;
            from = upto + BD_DIGEST_STR_LEN;
        } else {
            o += put_pin_line(out + o, &upd[i]);
            from = upto;
        }
    }
    memcpy(out + o, old->raw + from, old->raw_len - from);
    o += old->raw_len - from;
    *len = o;
    return out;
}

/* Overwrite in the bytes `d` keeps (digests_spliceable) the digest of each of the `n` pins
 * of `upd`, every one of them already in `d`: with the new digest (`put`), or with the one
 * `d` holds for it, as loaded (!put), which restores the bytes as they were. */
static void digests_patch(bd_digests *d, const out_pin *upd, size_t n, bool put)
{
    for (size_t i = 0; i < n; i++) {
        const bd_pin *p = bd_digests_find(d, upd[i].case_id);
        memcpy(d->raw + p->off + 4 + strlen(p->case_id), put ? upd[i].digest : p->digest,
               BD_DIGEST_STR_LEN);
    }
}

/* `ids` without repeats, in the order given (the first of each), into a new array (caller
 * frees) and *n_out; *sorted_out gets them sorted (caller frees). -1 when out of memory. */
static int unique_ids(const char ***out, const char ***sorted_out, size_t *n_out,
                      const char *const *ids, size_t n)
{
    const char **sorted = malloc((n ? n : 1) * sizeof(*sorted));
    const char **uniq = malloc((n ? n : 1) * sizeof(*uniq));
    bool *taken = calloc(n ? n : 1, sizeof(*taken));
    if (!sorted || !uniq || !taken) {
        free(sorted);
        free(uniq);
        free(taken);
        return -1;
    }
    memcpy(sorted, ids, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), bd_str_ptr_cmp);
    size_t ns = 0;
    for (size_t i = 0; i < n; i++)
        if (ns == 0 || strcmp(sorted[ns - 1], sorted[i]) != 0)
            sorted[ns++] = sorted[i];
    size_t nu = 0;
    for (size_t i = 0; i < n; i++) {
        const char *const *at = bsearch(&ids[i], sorted, ns, sizeof(*sorted), bd_str_ptr_cmp);
        size_t k = (size_t)(at - sorted);
        if (!taken[k]) {
            taken[k] = true;
            uniq[nu++] = ids[i];
        }
    }
    free(taken);
    *out = uniq;
    *sorted_out = sorted;
    *n_out = nu;
    return 0;
}

/* One pin of a task class under way: what bd_pin_task_class's steps share. */
typedef struct pin_job {
    const bd_task_class *tc;
    bd_pin_report *out;
    size_t n_named;          /* cases named (unique); 0: the whole task class */
    const char **uniq;       /* the named cases, in the order given */
    const char **sorted_ids; /* the same, sorted */
    size_t n;                /* cases pinned: n_named, or every case */
    pending_case *pend;      /* n of them */
    char tcd[BD_DIGEST_BUF]; /* the new task-class digest */
    const char *old_tcd;     /* its pin, "" when none */
    out_pin *pins;           /* the pin lines to write (or to splice in) */
    size_t np, n_old, n_case_changes, n_new, changes_cap;
    char *yaml;          /* a new digests.yaml built here, or NULL */
    const char *bytes;   /* the new digests.yaml: `yaml`, or the loaded bytes patched */
    size_t len, n_lines; /* its length and its pin lines */
    bool patched;        /* tc->digests->raw holds the new digests (put back at the end) */
} pin_job;

/* Phase 1: compute everything (the task-class digest, each case's new case.yaml and
 * digest); write nothing unless all of it succeeds. Returns 0 or -1 with `err`. */
static int pin_compute(pin_job *j, bd_err *err)
{
    const bd_task_class *tc = j->tc;
    if (!(j->pend = calloc(j->n ? j->n : 1, sizeof(*j->pend))))
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    j->old_tcd = tc->digests ? tc->digests->task_class : "";
    if (j->n_named == 0 || !tc->digests) {
        if (bd_digest_task_class_dir(j->tcd, tc->dir, err) != 0)
            return -1;
    } else {
        snprintf(j->tcd, sizeof(j->tcd), "%s", j->old_tcd);
    }
    const char *const *ids = j->n_named ? j->uniq : (const char *const *)tc->case_ids;
    return prepare_all(j->pend, j->n, tc, ids, err);
}

/* Phase 2a: case.yaml edits (cassette_digest), then the final digests of those cases.
 * A crash here leaves edited cases that verify flags until they are pinned. All of them
 * written, one sync, then the renames (bd_atomic_batch): thousands of edited case.yaml
 * files cost one syncfs, not one fsync each. Returns 0 or -1 with `err`. */
static int pin_edit_cases(pin_job *j, bd_err *err)
{
    bd_atomic_batch *batch = NULL;
    int rc = -1;
    if (bd_atomic_batch_new(&batch, err) != 0)
        return -1;
    for (size_t i = 0; i < j->n; i++)
        if (j->pend[i].new_yaml &&
            bd_atomic_batch_add(batch, j->pend[i].yaml_path, j->tc->cases_dir, j->pend[i].new_yaml,
                                strlen(j->pend[i].new_yaml), j->pend[i].mode, err) != 0)
            goto out;
    if (bd_atomic_batch_commit(batch, err) != 0)
        goto out;
    for (size_t i = 0; i < j->n; i++)
        if (j->pend[i].new_yaml &&
            bd_digest_case_dir(j->pend[i].digest, j->pend[i].dir, NULL, err) != 0)
            goto out;
    rc = 0;
out:
    bd_atomic_batch_free(batch);
    return rc;
}

/* The pins that change: cases whose digest differs from their pin (or have none), the
 * pins naming no case (a full pin drops them), the task class. Each goes into the report;
 * j->pins gets the lines to write (a pin of a few cases: only the changed ones). Returns
 * 0 or -1 with `err`. */
static int pin_collect_changes(pin_job *j, bd_err *err)
{
    const bd_task_class *tc = j->tc;
    j->n_old = tc->digests ? tc->digests->n_pins : 0;
    size_t cap = j->n + (j->n_named ? j->n_old : 0);
    if (!(j->pins = calloc(cap ? cap : 1, sizeof(*j->pins))))
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (size_t i = 0; i < j->n; i++) {
        const pending_case *pc = &j->pend[i];
        const bd_pin *old = tc->digests ? bd_digests_find(tc->digests, pc->case_id) : NULL;
        bool changed = !old || strcmp(old->digest, pc->digest) != 0;
        if (!changed && j->n_named)
            continue; /* a pin of a few cases carries only what changes */
        j->pins[j->np++] = (out_pin){pc->case_id, pc->digest};
        if (changed) {
            j->n_case_changes++;
            j->n_new += !old;
            if (add_change(j->out, &j->changes_cap, tc, pc->case_id, old ? old->digest : "",
                           pc->digest, err))
                return -1;
        }
    }
    if (!j->n_named)
        for (size_t i = 0; i < j->n_old; i++) {
            const bd_pin *p = &tc->digests->pins[i];
            if (!bd_str_sorted_has((const char *const *)tc->case_ids, tc->n_cases, p->case_id) &&
                add_change(j->out, &j->changes_cap, tc, p->case_id, p->digest, "", err))
                return -1;
        }
    if (strcmp(j->old_tcd, j->tcd) != 0 &&
        add_change(j->out, &j->changes_cap, tc, "", j->old_tcd, j->tcd, err))
        return -1;
    j->out->n_pinned = j->n;
    return 0;
}

/* A few cases of a file as pin writes it (digests_spliceable): the task-class pin is
 * kept, and the file as it is already holds every unchanged pin. Returns 0 with j->bytes
 * (NULL when out of memory), 1 when nothing changes, -1 with `err`. */
static int pin_build_spliced(pin_job *j, bd_err *err)
{
    bd_digests *d = j->tc->digests;
    if (j->n_case_changes == 0)
        return 1; /* nothing changes: nothing is written, not even the same bytes */
    j->n_lines = j->n_old + j->n_new;
    if (j->n_new > 0) {
        j->bytes = j->yaml = digests_splice(&j->len, d, j->pins, j->np);
        return 0;
    }
    /* Only digests change, in place and at the same length: the loaded bytes are the new
     * file once they are written over (no copy of 100,000 lines), and are put back as they
     * were before returning. The line reader took those bytes when they were loaded; with
     * valid digests in place of valid digests it takes them again, so only the new digests
     * need judging. */
    for (size_t i = 0; i < j->np; i++)
        if (!bd_digest_str_valid(j->pins[i].digest))
            return bd_err_set(err, BD_E_INTERNAL, j->tc->cases_dir, 0, 0,
                              "the new pin of case '%s' is not a digest; nothing was "
                              "written: please report this bug",
                              j->pins[i].case_id);
    digests_patch(d, j->pins, j->np, true);
    j->patched = true;
    j->bytes = d->raw;
    j->len = d->raw_len;
    return 0;
}

/* The whole new digests.yaml, every pin serialised. Returns 0 with j->bytes (NULL when
 * out of memory), 1 when its bytes are the file's as loaded (the file stays as it is: its
 * inode, its mtime). */
static int pin_build_whole(pin_job *j)
{
    const bd_digests *d = j->tc->digests;
    if (j->n_named) {
        /* The other pins, kept: with the changed ones above they make the new set. */
        for (size_t i = 0; i < j->n; i++) {
            const bd_pin *old = d ? bd_digests_find(d, j->pend[i].case_id) : NULL;
            if (old && strcmp(old->digest, j->pend[i].digest) == 0)
                j->pins[j->np++] = (out_pin){old->case_id, old->digest};
        }
        for (size_t i = 0; i < j->n_old; i++) {
            const bd_pin *p = &d->pins[i];
            if (!bd_str_sorted_has(j->sorted_ids, j->n_named, p->case_id))
                j->pins[j->np++] = (out_pin){p->case_id, p->digest};
        }
        qsort(j->pins, j->np, sizeof(*j->pins), cmp_out_pin);
        j->n_lines = j->np;
    }
    j->bytes = j->yaml = digests_serialise(&j->len, j->tcd, j->pins, j->np);
    if (j->yaml && d && d->raw && d->raw_len == j->len && memcmp(d->raw, j->yaml, j->len) == 0)
        return 1;
    return 0;
}

/* Phase 2b: the bytes of the new digests.yaml. Returns 0 with j->bytes, 1 when nothing is
 * to be written, -1 with `err`. */
static int pin_build_file(pin_job *j, bd_err *err)
{
    /* Usually in order already (the cases are listed sorted). */
    bool sorted = true;
    for (size_t i = 1; i < j->np && sorted; i++)
        sorted = strcmp(j->pins[i - 1].case_id, j->pins[i].case_id) < 0;
    if (!sorted)
        qsort(j->pins, j->np, sizeof(*j->pins), cmp_out_pin);
    j->n_lines = j->np;
    int rc = j->n_named && digests_spliceable(j->tc->digests) ? pin_build_spliced(j, err)
                                                              : pin_build_whole(j);
    if (rc == 0 && !j->bytes)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    return rc;
}

/* Write j->bytes as cases/digests.yaml, atomically, after checking that the loader would
 * take them back. Returns 0 or -1 with `err`. */
static int pin_write_file(pin_job *j, bd_err *err)
{
    char *path = bd_path_join(j->tc->cases_dir, "digests.yaml");
    bd_digests *check = NULL;
    int rc = -1;
    if (!path)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    /* Never write a file the loader would refuse: that would brick the task class for
     * every command, pin included. Over the limit is refused here, before writing. */
    if (j->len > BD_DIGESTS_MAX_BYTES) {
        bd_err_set(err, BD_E_YAML_TOO_LARGE, path, 0, 0,
                   "the new digests.yaml would be %zu bytes, over the %zu-byte limit for "
                   "digests.yaml files (%zu pins; docs/formats.md, \"Large benches\"); nothing "
                   "was written: split the task class in two",
                   j->len, BD_DIGESTS_MAX_BYTES, j->n_lines);
        goto out;
    }
    /* What pin writes is read by the line reader; judging that needs no copy of 100,000
     * pins. Anything else would be a bug, and is given to the full loader to word. */
    bd_err cerr = BD_ERR_INIT;
    if (!j->patched && !bd_digests_canonical_ok(j->bytes, j->len) &&
        bd_digests_parse(&check, j->bytes, j->len, path, &cerr) != 0) {
        bd_err_set(err, BD_E_INTERNAL, path, 0, 0,
                   "the new digests.yaml would not load back (%s: %s); nothing was written: "
                   "please report this bug",
                   bd_code_str(cerr.code), cerr.msg);
        goto out;
    }
    rc = bd_write_file_atomic(path, j->bytes, j->len, 0644, err);
out:
    bd_digests_free(check);
    free(path);
    return rc;
}

/* Put back what the job changed in tc's kept bytes and free what it holds. */
static void pin_job_end(pin_job *j)
{
    if (j->patched)
        digests_patch(j->tc->digests, j->pins, j->np, false);
    for (size_t i = 0; j->pend && i < j->n; i++) {
        free(j->pend[i].dir);
        free(j->pend[i].yaml_path);
        free(j->pend[i].new_yaml);
    }
    free(j->pend);
    free(j->uniq);
    free(j->sorted_ids);
    free(j->pins);
    free(j->yaml);
}

int bd_pin_task_class(bd_pin_report *out, const bd_task_class *tc, const char *const *case_ids,
                      size_t n_case_ids, bd_err *err)
{
    return bd_pin_task_class_hook(out, tc, case_ids, n_case_ids, NULL, NULL, err);
}

int bd_pin_task_class_hook(bd_pin_report *out, const bd_task_class *tc, const char *const *case_ids,
                           size_t n_case_ids, bd_pin_hook before_write, void *payload, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    pin_job j = {.tc = tc, .out = out, .n_named = n_case_ids};
    /* A case named twice is pinned once (twice would be two lines with one key). */
    if (n_case_ids && unique_ids(&j.uniq, &j.sorted_ids, &j.n_named, case_ids, n_case_ids) != 0)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    j.n = j.n_named ? j.n_named : tc->n_cases;
    int rc = -1;
    if (pin_compute(&j, err) == 0 && pin_edit_cases(&j, err) == 0 &&
        pin_collect_changes(&j, err) == 0 &&
        (!before_write || before_write(out, tc, payload, err) == 0)) {
        rc = pin_build_file(&j, err);
        if (rc == 0)
            rc = pin_write_file(&j, err);
        else if (rc > 0)
            rc = 0; /* nothing to write */
    }
    pin_job_end(&j);
    if (rc != 0)
        bd_pin_report_release(out);
    return rc;
}

void bd_pin_report_release(bd_pin_report *r)
{
    if (!r)
        return;
    free(r->changes);
    memset(r, 0, sizeof(*r));
}

int bd_case_scaffold(char **out_dir, const bd_task_class *tc, const char *case_id, bd_err *err)
{
    if (out_dir)
        *out_dir = NULL;
    if (!bd_name_valid(case_id))
        return bd_err_set(err, BD_E_BAD_ID, NULL, 0, 0,
                          "'%s' is not a valid case id: use 1-128 of a-z 0-9 . _ - "
                          "starting with a letter or digit",
                          case_id);
    int rc = -1;
    char *dir = bd_path_join(tc->cases_dir, case_id);
    char *sub = NULL, *file = NULL;
    if (!dir)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    if (bd_mkdir_p(tc->cases_dir, 0755, err) != 0)
        goto out;
    if (mkdir(dir, 0755) != 0) {
        if (errno == EEXIST)
            bd_err_set(err, BD_E_CASE_EXISTS, dir, 0, 0,
                       "already exists; pick another id or edit that case");
        else
            bd_err_errno(err, BD_E_IO, errno, dir, "cannot create the case directory");
        goto out;
    }
    const char *subs[] = {"input", "expected"};
    for (size_t i = 0; i < 2; i++) {
        sub = bd_path_join(dir, subs[i]);
        if (!sub || mkdir(sub, 0755) != 0) {
            bd_err_errno(err, BD_E_IO, sub ? errno : ENOMEM, sub ? sub : dir,
                         "cannot create the folder");
            goto out;
        }
        free(sub);
        sub = NULL;
    }
    char cassette_digest[BD_DIGEST_BUF] = "null";
    if (tc->reg->sut_kind == BD_SUT_CASSETTE) {
        file = bd_path_join(dir, "cassette.json");
        if (!file || bd_write_file_atomic_in(file, tc->cases_dir, "{}\n", 3, 0644, err) != 0)
            goto out;
        bd_digest_bytes(cassette_digest, "{}\n", 3);
        free(file);
        file = NULL;
    }
    char now[21];
    bd_utc_now(now);
    char yaml[2048];
    int len = snprintf(yaml, sizeof(yaml),
                       "schema_version: 2\n"
                       "case_id: %s\n"
                       "title: \"%s\"  # one line a curator recognizes\n"
                       "disposition: positive  # positive | negative | ambiguous\n"
                       "difficulty: medium  # easy | medium | hard\n"
                       "origin:\n"
                       "  source: curated  # curated | outcome-ledger-derived | "
                       "regression-converted\n"
                       "  source_ref: {type: synthetic, value: \"%s\"}\n"
                       "  added_at: \"%s\"\n"
                       "expected: {}  # the ground truth the rubric receives\n"
                       "# Every byte of this file is hashed: after editing, `benchdesk pin %s %s`, "
                       "then two signatures.\n"
                       "cassette_digest: %s\n",
                       case_id, case_id, case_id, now, tc->name, case_id, cassette_digest);
    file = bd_path_join(dir, "case.yaml");
    if (!file || bd_write_file_atomic_in(file, tc->cases_dir, yaml, (size_t)len, 0644, err) != 0)
        goto out;
    if (out_dir) {
        *out_dir = dir;
        dir = NULL;
    }
    rc = 0;
out:
    free(dir);
    free(sub);
    free(file);
    return rc;
}
