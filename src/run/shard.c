/*
 * shard.c — the stable partition, the shard spec and the shard bundle (docs/scale.md).
 */
#include "shard.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "canon.h"
#include "digest.h"
#include "exec.h"
#include "fsutil.h"
#include "gitops.h"

uint64_t bd_shard_key(const char *case_id)
{
    uint8_t h[32];
    bd_blake3_raw(h, case_id, strlen(case_id));
    uint64_t k = 0;
    for (int i = 0; i < 8; i++)
        k = (k << 8) | h[i];
    return k;
}

uint32_t bd_shard_of(const char *case_id, uint32_t n)
{
    return n ? (uint32_t)(bd_shard_key(case_id) % n) : 0;
}

/* ---- the spec ---------------------------------------------------------------------- */

/* A decimal number 0..max without sign, spaces or leading zeros beyond "0". */
static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s || (s[0] == '0' && s[1]))
        return false;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > max)
            return false;
    }
    *out = v;
    return true;
}

static int spec_fail(bd_err *err, const char *fmt, const char *a, const char *b)
{
    return bd_err_set(err, BD_E_SHARD_SPEC, NULL, 0, 0, fmt, a ? a : "", b ? b : "");
}

/* Read the environment variable `name` as a number 0..max into *v. */
static int env_uint(bd_shard_getenv_fn get, const char *name, uint64_t max, uint64_t *v,
                    bd_err *err)
{
    const char *s = get ? get(name) : NULL;
    if (!s || !*s)
        return spec_fail(err, "--shard auto: %s is not set%s", name,
                         "; run under a Slurm array (sbatch --array=0-N) or a Kubernetes "
                         "Indexed Job with BENCHDESK_SHARDS, or give --shard K/N");
    if (!parse_uint(s, max, v))
        return spec_fail(err, "--shard auto: %s is '%.40s', not a number in range", name, s);
    return 0;
}

static int spec_auto(bd_shard_spec *out, bd_shard_getenv_fn get, const char **sched_run_id,
                     bd_err *err)
{
    uint64_t id, n, min, step = 1;
    const char *slurm = get ? get("SLURM_ARRAY_TASK_ID") : NULL;
    if (slurm && *slurm) {
        if (env_uint(get, "SLURM_ARRAY_TASK_ID", UINT32_MAX, &id, err) != 0 ||
            env_uint(get, "SLURM_ARRAY_TASK_COUNT", BD_SHARDS_MAX, &n, err) != 0 ||
            env_uint(get, "SLURM_ARRAY_TASK_MIN", UINT32_MAX, &min, err) != 0)
            return -1;
        const char *st = get("SLURM_ARRAY_TASK_STEP");
        if (st && *st && env_uint(get, "SLURM_ARRAY_TASK_STEP", UINT32_MAX, &step, err) != 0)
            return -1;
        if (step == 0 || id < min || (id - min) % step != 0)
            return spec_fail(err,
                             "--shard auto: SLURM_ARRAY_TASK_ID %s is not on the array's "
                             "grid from SLURM_ARRAY_TASK_MIN %s",
                             slurm, get("SLURM_ARRAY_TASK_MIN"));
        out->k = (uint32_t)((id - min) / step);
        out->n = (uint32_t)n;
        *sched_run_id = get("SLURM_ARRAY_JOB_ID");
    } else {
        if (env_uint(get, "JOB_COMPLETION_INDEX", UINT32_MAX, &id, err) != 0 ||
            env_uint(get, "BENCHDESK_SHARDS", BD_SHARDS_MAX, &n, err) != 0)
            return -1;
        out->k = (uint32_t)id;
        out->n = (uint32_t)n;
        *sched_run_id = NULL;
    }
    return 0;
}

int bd_shard_spec_parse(bd_shard_spec *out, const char *spec, const char *run_id,
                        bd_shard_getenv_fn get, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *sched_run_id = NULL;
    if (!spec)
        return spec_fail(err, "no shard given%s%s", "", "; use --shard K/N or --shard auto");
    if (strcmp(spec, "auto") == 0) {
        if (spec_auto(out, get, &sched_run_id, err) != 0)
            return -1;
    } else {
        char buf[32];
        const char *slash = strchr(spec, '/');
        uint64_t k, n;
        if (!slash || (size_t)(slash - spec) >= sizeof(buf))
            return spec_fail(err, "--shard '%.40s' is not K/N or auto%s", spec,
                             " (e.g. --shard 0/4 is the first of four shards)");
        memcpy(buf, spec, (size_t)(slash - spec));
        buf[slash - spec] = '\0';
        if (!parse_uint(buf, UINT32_MAX, &k) || !parse_uint(slash + 1, BD_SHARDS_MAX, &n))
            return spec_fail(err, "--shard '%.40s' is not K/N with numbers%s", spec,
                             " (N at most 65536)");
        out->k = (uint32_t)k;
        out->n = (uint32_t)n;
    }
    if (out->n < 1 || out->n > BD_SHARDS_MAX)
        return bd_err_set(err, BD_E_SHARD_SPEC, NULL, 0, 0,
                          "the number of shards is %u; it must be 1..%d", out->n, BD_SHARDS_MAX);
    if (out->k >= out->n)
        return bd_err_set(err, BD_E_SHARD_SPEC, NULL, 0, 0,
                          "shard %u of %u does not exist: shards are numbered 0..%u", out->k,
                          out->n, out->n - 1);
    const char *id = run_id && *run_id ? run_id : sched_run_id;
    if (!id || !*id)
        return spec_fail(err, "a shard run needs the run id every shard shares%s%s",
                         "; give --run-id ID (under a Slurm array SLURM_ARRAY_JOB_ID is used)", "");
    if (!bd_history_run_id_valid(id))
        return spec_fail(err,
                         "run id '%.60s' is not 1..128 of [A-Za-z0-9._:-] starting with a "
                         "letter or digit%s",
                         id, "");
    snprintf(out->run_id, sizeof(out->run_id), "%s", id);
    return 0;
}

/* ---- the manifest ---------------------------------------------------------------- */

void bd_bundle_manifest_release(bd_bundle_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_cases; i++)
        free(m->cases[i].id);
    free(m->cases);
    memset(m, 0, sizeof(*m));
}

static bool version_valid(const char *s)
{
    return bd_history_host_valid(s) && strlen(s) <= 64;
}

enum {
    M_BUNDLE_VERSION,
    M_RUN_ID,
    M_TASK_CLASS,
    M_TASK_CLASS_DIGEST,
    M_SHARD,
    M_SHARDS,
    M_CASES,
    M_BENCH_COMMIT,
    M_ISOLATION_CLASS,
    M_HARNESS_VERSION,
    M_HOST,
    M_STARTED_AT,
    M_FINISHED_AT,
    M_COUNT,
    M_CHAIN_HEAD,
    M_NOT_RUN,  /* optional: the cases a cost cap kept from running (docs/scale.md) */
    M_COST_CAP, /* optional, only with not_run: that cap */
    M__COUNT
};

static const char *const member_names[M__COUNT] = {
    "bundle_version",  "run_id",          "task_class", "task_class_digest",
    "shard",           "shards",          "cases",      "bench_commit",
    "isolation_class", "harness_version", "host",       "started_at",
    "finished_at",     "count",           "chain_head", "not_run",
    "cost_cap_usd",
};

static bool integral(const cJSON *c, double lo, double hi, uint64_t *out)
{
    if (!cJSON_IsNumber(c))
        return false;
    double v = c->valuedouble;
    if (!(v >= lo && v <= hi) || v != (double)(uint64_t)v)
        return false;
    *out = (uint64_t)v;
    return true;
}

static const char *str_of(const cJSON *c)
{
    return cJSON_IsString(c) && c->valuestring ? c->valuestring : NULL;
}

/* Copy `s` into `dst` (cap bytes) when it passes `ok`. */
static bool take(char *dst, size_t cap, const char *s, bool ok)
{
    if (!s || !ok || strlen(s) >= cap)
        return false;
    memcpy(dst, s, strlen(s) + 1);
    return true;
}

static int bad(bd_err *err, const char *name, const char *what)
{
    return bd_err_set(err, BD_E_BUNDLE_INVALID, name, 0, 0,
                      "%s; this is not a shard bundle manifest that benchdesk wrote (re-run "
                      "the shard, or give the right directory)",
                      what);
}

static int parse_cases(bd_bundle_manifest *m, const cJSON *cases, const char *name, bd_err *err)
{
    size_t n = (size_t)cJSON_GetArraySize(cases);
    m->cases = calloc(n ? n : 1, sizeof(*m->cases));
    if (!m->cases)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    for (const cJSON *e = cases->child; e; e = e->next) {
        const char *d = str_of(e);
        if (!e->string || !bd_name_valid(e->string) || !d || !bd_digest_str_valid(d))
            return bad(err, name, "cases: a member is not a case id with a blake3 digest");
        bd_bundle_case *c = &m->cases[m->n_cases];
        if (!(c->id = strdup(e->string)))
            return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        snprintf(c->digest, sizeof(c->digest), "%s", d);
        m->n_cases++;
    }
    return 0;
}

static int cmp_case(const void *a, const void *b);

/* "not_run": a non-empty list of case ids of "cases", sorted and unique. */
static int parse_not_run(bd_bundle_manifest *m, const cJSON *nr, const char *name, bd_err *err)
{
    const char *prev = NULL;
    if (!cJSON_IsArray(nr) || !nr->child)
        return bad(err, name, "not_run is not a non-empty list of case ids");
    for (const cJSON *e = nr->child; e; e = e->next) {
        const char *id = str_of(e);
        bd_bundle_case key = {.id = (char *)id};
        bd_bundle_case *c =
            id ? bsearch(&key, m->cases, m->n_cases, sizeof(*m->cases), cmp_case) : NULL;
        if (!c || (prev && strcmp(prev, id) >= 0))
            return bad(err, name, "not_run is not a sorted list of ids of the manifest's cases");
        c->not_run = true;
        m->n_not_run++;
        prev = id;
    }
    return 0;
}

/* "cost_cap_usd": the cap that stopped the shard, a number 0..BD_COST_CAP_MAX_USD, only
 * beside "not_run" (absent: fine). */
static int parse_cost_cap(bd_bundle_manifest *m, const cJSON *cap, const char *name, bd_err *err)
{
    if (!cap)
        return 0;
    if (!m->n_not_run)
        return bad(err, name, "cost_cap_usd is given without not_run");
    if (!cJSON_IsNumber(cap) || !(cap->valuedouble >= 0 && cap->valuedouble <= BD_COST_CAP_MAX_USD))
        return bad(err, name, "cost_cap_usd is not a number of dollars from 0 to 1e9");
    m->has_cost_cap = true;
    m->cost_cap_usd = cap->valuedouble;
    return 0;
}

static int check_members(bd_bundle_manifest *m, const cJSON *const *v, const char *name,
                         bd_err *err)
{
    uint64_t u;
    if (!integral(v[M_BUNDLE_VERSION], 1, 1, &u))
        return bad(err, name, "bundle_version is not 1");
    if (!take(m->run_id, sizeof(m->run_id), str_of(v[M_RUN_ID]),
              bd_history_run_id_valid(str_of(v[M_RUN_ID]))))
        return bad(err, name, "run_id is not a run id");
    const char *tc = str_of(v[M_TASK_CLASS]);
    if (!take(m->task_class, sizeof(m->task_class), tc, tc && bd_name_valid(tc)))
        return bad(err, name, "task_class is not a task class name");
    const char *tcd = str_of(v[M_TASK_CLASS_DIGEST]);
    if (!take(m->task_class_digest, sizeof(m->task_class_digest), tcd,
              tcd && bd_digest_str_valid(tcd)))
        return bad(err, name, "task_class_digest is not a blake3 digest");
    uint64_t shards;
    if (!integral(v[M_SHARDS], 1, BD_SHARDS_MAX, &shards) ||
        !integral(v[M_SHARD], 0, (double)shards - 1, &u))
        return bad(err, name, "shard/shards are not integers with 0 <= shard < shards <= 65536");
    m->shard = (uint32_t)u;
    m->shards = (uint32_t)shards;
    if (!cJSON_IsObject(v[M_CASES]))
        return bad(err, name, "cases is not an object");
    if (!cJSON_IsNull(v[M_BENCH_COMMIT])) {
        const char *bc = str_of(v[M_BENCH_COMMIT]);
        if (!take(m->bench_commit, sizeof(m->bench_commit), bc, bc && bd_hex_lower_str(bc, 40)))
            return bad(err, name, "bench_commit is neither null nor a 40-hex commit id");
    }
    bd_isolation iso;
    const char *ic = str_of(v[M_ISOLATION_CLASS]);
    if (!take(m->isolation_class, sizeof(m->isolation_class), ic,
              ic && bd_isolation_parse(ic, &iso) == 0))
        return bad(err, name, "isolation_class is not namespaces or subprocess");
    const char *hv = str_of(v[M_HARNESS_VERSION]);
    if (!take(m->harness_version, sizeof(m->harness_version), hv, hv && version_valid(hv)))
        return bad(err, name, "harness_version is not 1..64 printable characters");
    const char *host = str_of(v[M_HOST]);
    if (!take(m->host, sizeof(m->host), host, bd_history_host_valid(host)))
        return bad(err, name, "host is not 1..255 printable characters without spaces");
    const char *sa = str_of(v[M_STARTED_AT]), *fa = str_of(v[M_FINISHED_AT]);
    if (!take(m->started_at, sizeof(m->started_at), sa, bd_history_time_valid(sa)) ||
        !take(m->finished_at, sizeof(m->finished_at), fa, bd_history_time_valid(fa)))
        return bad(err, name, "started_at/finished_at are not UTC timestamps");
    if (!integral(v[M_COUNT], 0, (double)BD_HISTORY_SEQ_MAX, &m->count))
        return bad(err, name, "count is not a record count");
    const char *ch = str_of(v[M_CHAIN_HEAD]);
    if (!take(m->chain_head, sizeof(m->chain_head), ch,
              ch && bd_hex_lower_str(ch, BD_HASH_HEX_LEN)))
        return bad(err, name, "chain_head is not 64 lower-case hex digits");
    if (parse_cases(m, v[M_CASES], name, err) != 0)
        return -1;
    if (v[M_NOT_RUN] && parse_not_run(m, v[M_NOT_RUN], name, err) != 0)
        return -1;
    return parse_cost_cap(m, v[M_COST_CAP], name, err);
}

int bd_bundle_manifest_parse(bd_bundle_manifest *out, const char *buf, size_t len, const char *name,
                             bd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!name)
        name = BD_BUNDLE_MANIFEST;
    if (len == 0 || memchr(buf, '\0', len))
        return bad(err, name, "the manifest is empty or holds a NUL byte");
    cJSON *root = cJSON_ParseWithLength(buf, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return bad(err, name, "the manifest is not one JSON object");
    }
    /* The stored bytes must be the canonical form: anything else was edited by hand (and
     * a duplicate key makes bd_canon_json refuse). */
    size_t clen = 0;
    char *canon = bd_canon_json(root, &clen);
    int rc = -1;
    if (!canon || clen != len || memcmp(canon, buf, len) != 0) {
        bad(err, name, "the manifest is not in canonical JSON form (edited after it was written)");
        goto out;
    }
    const cJSON *v[M__COUNT] = {0};
    for (const cJSON *e = root->child; e; e = e->next) {
        int f = -1;
        for (int i = 0; i < M__COUNT && f < 0; i++)
            if (strcmp(e->string, member_names[i]) == 0)
                f = i;
        if (f < 0) {
            char what[160];
            snprintf(what, sizeof(what), "unexpected member \"%.64s\"", e->string);
            bad(err, name, what);
            goto out;
        }
        v[f] = e;
    }
    for (int i = 0; i < M__COUNT; i++)
        if (!v[i] && i != M_NOT_RUN && i != M_COST_CAP) {
            char what[160];
            snprintf(what, sizeof(what), "member \"%s\" is missing", member_names[i]);
            bad(err, name, what);
            goto out;
        }
    rc = check_members(out, v, name, err);
out:
    free(canon);
    cJSON_Delete(root);
    if (rc != 0)
        bd_bundle_manifest_release(out);
    return rc;
}

char *bd_bundle_manifest_json(const bd_bundle_manifest *m, size_t *len)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    bool ok = cJSON_AddNumberToObject(o, "bundle_version", BD_BUNDLE_VERSION) &&
              cJSON_AddStringToObject(o, "run_id", m->run_id) &&
              cJSON_AddStringToObject(o, "task_class", m->task_class) &&
              cJSON_AddStringToObject(o, "task_class_digest", m->task_class_digest) &&
              cJSON_AddNumberToObject(o, "shard", m->shard) &&
              cJSON_AddNumberToObject(o, "shards", m->shards) &&
              cJSON_AddStringToObject(o, "isolation_class", m->isolation_class) &&
              cJSON_AddStringToObject(o, "harness_version", m->harness_version) &&
              cJSON_AddStringToObject(o, "host", m->host) &&
              cJSON_AddStringToObject(o, "started_at", m->started_at) &&
              cJSON_AddStringToObject(o, "finished_at", m->finished_at) &&
              cJSON_AddNumberToObject(o, "count", (double)m->count) &&
              cJSON_AddStringToObject(o, "chain_head", m->chain_head);
    if (ok)
        ok = m->bench_commit[0]
                 ? cJSON_AddStringToObject(o, "bench_commit", m->bench_commit) != NULL
                 : cJSON_AddNullToObject(o, "bench_commit") != NULL;
    cJSON *cases = ok ? cJSON_AddObjectToObject(o, "cases") : NULL;
    cJSON *nr = cases && m->n_not_run ? cJSON_AddArrayToObject(o, "not_run") : NULL;
    if (nr && m->has_cost_cap && !cJSON_AddNumberToObject(o, "cost_cap_usd", m->cost_cap_usd))
        cases = NULL;
    for (size_t i = 0; cases && i < m->n_cases; i++)
        if (!cJSON_AddStringToObject(cases, m->cases[i].id, m->cases[i].digest) ||
            (m->cases[i].not_run &&
             (!nr || !cJSON_AddItemToArray(nr, cJSON_CreateString(m->cases[i].id)))))
            cases = NULL;
    char *text = cases ? bd_canon_json(o, len) : NULL;
    cJSON_Delete(o);
    if (!text)
        return NULL;
    /* Only what bd_bundle_manifest_parse accepts is ever written. */
    bd_bundle_manifest check;
    if (bd_bundle_manifest_parse(&check, text, *len, NULL, NULL) != 0) {
        free(text);
        return NULL;
    }
    bd_bundle_manifest_release(&check);
    return text;
}

/* ---- writing ----------------------------------------------------------------------- */

static int cmp_case(const void *a, const void *b)
{
    return strcmp(((const bd_bundle_case *)a)->id, ((const bd_bundle_case *)b)->id);
}

int bd_bundle_create(bd_bundle_writer *w, const char *dir, bd_err *err)
{
    memset(w, 0, sizeof(*w));
    char *parent = strdup(dir);
    if (!parent)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    char *slash = strrchr(parent, '/');
    int rc = 0;
    if (slash && slash != parent) {
        *slash = '\0';
        rc = bd_mkdir_p(parent, 0755, err);
    }
    free(parent);
    if (rc != 0)
        return -1;
    if (mkdir(dir, 0755) != 0) {
        if (errno == EEXIST)
            return bd_err_set(err, BD_E_BUNDLE_EXISTS, dir, 0, 0,
                              "the bundle directory already exists; a shard writes a new "
                              "bundle: give --out a path that does not exist yet");
        return bd_err_set(err, BD_E_IO, dir, 0, 0, "cannot create the bundle directory: %s",
                          strerror(errno));
    }
    w->dir = strdup(dir);
    char *rec = w->dir ? bd_path_join(dir, BD_BUNDLE_RECORDS) : NULL;
    if (!rec) {
        bd_bundle_writer_release(w);
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    rc = bd_history_open_dir(&w->records, rec, BD_HISTORY_CREATE, err);
    free(rec);
    if (rc != 0)
        bd_bundle_writer_release(w);
    return rc;
}

void bd_bundle_manifest_fill_env(bd_bundle_manifest *m, const char *bench_root)
{
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    host[sizeof(host) - 1] = '\0';
    for (char *p = host; *p; p++)
        if (*p <= ' ' || *p > '~')
            *p = '_';
    snprintf(m->host, sizeof(m->host), "%s", host[0] ? host : "unknown");
    snprintf(m->harness_version, sizeof(m->harness_version), "%s", BD_VERSION);
    m->bench_commit[0] = '\0';
    bd_git *g = NULL;
    if (bench_root && bd_git_open(&g, bench_root, NULL) == 0) {
        if (bd_git_head_commit(g, m->bench_commit, NULL) != 0)
            m->bench_commit[0] = '\0';
        bd_git_close(g);
    }
}

int bd_bundle_finish(bd_bundle_writer *w, bd_bundle_manifest *m, bd_err *err)
{
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    int rc = bd_history_verify(w->records, 0, &vr, err);
    if (rc == 0) {
        m->count = vr.count;
        snprintf(m->chain_head, sizeof(m->chain_head), "%s", vr.head);
    } else if (err && err->code == BD_E_CHAIN_TAMPERED) {
        err->code = BD_E_BUNDLE_TAMPERED;
    }
    bd_history_verify_result_release(&vr);
    if (rc != 0)
        return -1;
    size_t len = 0;
    char *text = bd_bundle_manifest_json(m, &len);
    if (!text)
        return bd_err_set(err, BD_E_INTERNAL, w->dir, 0, 0,
                          "the manifest could not be written: a field is out of format");
    char *path = bd_path_join(w->dir, BD_BUNDLE_MANIFEST);
    rc = path ? bd_write_file_atomic(path, text, len, 0644, err)
              : bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    free(path);
    free(text);
    return rc;
}

int bd_bundle_seal(bd_bundle_writer *w, const bd_shard_spec *sp, const bd_task_class *tc,
                   const bd_run_summary *s, const char *const *ids, size_t n,
                   const char *bench_root, bd_err *err)
{
    bd_bundle_manifest m;
    memset(&m, 0, sizeof(m));
    snprintf(m.run_id, sizeof(m.run_id), "%s", sp->run_id);
    snprintf(m.task_class, sizeof(m.task_class), "%s", tc->name);
    snprintf(m.task_class_digest, sizeof(m.task_class_digest), "%s", s->task_class_digest);
    m.shard = sp->k;
    m.shards = sp->n;
    snprintf(m.isolation_class, sizeof(m.isolation_class), "%s", bd_isolation_str(s->isolation));
    snprintf(m.started_at, sizeof(m.started_at), "%s", s->started_at);
    snprintf(m.finished_at, sizeof(m.finished_at), "%s", s->finished_at);
    bd_bundle_manifest_fill_env(&m, bench_root);
    int rc = -1;
    m.cases = calloc(n ? n : 1, sizeof(*m.cases));
    if (!m.cases) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const bd_pin *p = tc->digests ? bd_digests_find(tc->digests, ids[i]) : NULL;
        if (!p) {
            bd_err_set(err, BD_E_DIGEST_MISSING, tc->cases_dir, 0, 0, "case '%s' has no pin; run ",
                       ids[i]);
            bd_err_advise(err, BD_ACT_PIN, "%s", tc->name);
            goto out;
        }
        if (!(m.cases[i].id = strdup(ids[i]))) {
            bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
            goto out;
        }
        snprintf(m.cases[i].digest, sizeof(m.cases[i].digest), "%s", p->digest);
        m.n_cases++;
    }
    qsort(m.cases, m.n_cases, sizeof(*m.cases), cmp_case);
    for (size_t i = 0; i < s->n_not_run; i++) { /* the cost cap stopped the shard */
        bd_bundle_case key = {.id = (char *)s->not_run[i]};
        bd_bundle_case *c = bsearch(&key, m.cases, m.n_cases, sizeof(*m.cases), cmp_case);
        if (c && !c->not_run) {
            c->not_run = true;
            m.n_not_run++;
        }
    }
    m.has_cost_cap = m.n_not_run && s->has_cost_cap;
    m.cost_cap_usd = m.has_cost_cap ? s->cost_cap_usd : 0;
    rc = bd_bundle_finish(w, &m, err);
out:
    bd_bundle_manifest_release(&m);
    return rc;
}

void bd_bundle_writer_release(bd_bundle_writer *w)
{
    if (!w)
        return;
    bd_history_free(w->records);
    free(w->dir);
    memset(w, 0, sizeof(*w));
}

/* ---- reading ----------------------------------------------------------------------- */

void bd_bundle_release(bd_bundle *b)
{
    if (!b)
        return;
    bd_history_records_free(b->records, b->n_records);
    bd_bundle_manifest_release(&b->m);
    free(b->dir);
    memset(b, 0, sizeof(*b));
}

static int tampered(bd_err *err, const char *dir, uint64_t seq, const char *what)
{
    return bd_err_set(err, BD_E_BUNDLE_TAMPERED, dir, 0, 0,
                      "record %llu: %s; the bundle was changed after its shard wrote it: run "
                      "that shard again",
                      (unsigned long long)seq, what);
}

/* Every record of `b` against its manifest. */
static int check_records(bd_bundle *b, bd_err *err)
{
    const bd_bundle_manifest *m = &b->m;
    bool *seen = calloc(m->n_cases ? m->n_cases : 1, sizeof(bool));
    if (!seen)
        return bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    int rc = -1;
    for (size_t i = 0; i < b->n_records; i++) {
        const bd_history_record *r = &b->records[i];
        uint64_t seq = r->seq;
        if (r->is_audit || r->schema_version != 2 || r->origin.present) {
            tampered(err, b->dir, seq, "not a version-2 score record of a shard");
            goto out;
        }
        if (strcmp(r->run_id, m->run_id) != 0 || strcmp(r->task_class, m->task_class) != 0 ||
            strcmp(r->task_class_digest, m->task_class_digest) != 0 ||
            strcmp(r->isolation_class, m->isolation_class) != 0) {
            tampered(err, b->dir, seq,
                     "its run id, task class, task-class digest or isolation class differs "
                     "from the manifest's");
            goto out;
        }
        bd_bundle_case key = {.id = r->case_id};
        const bd_bundle_case *c = bsearch(&key, m->cases, m->n_cases, sizeof(*c), cmp_case);
        if (!c || strcmp(c->digest, r->case_digest) != 0 || seen[c - m->cases] || c->not_run) {
            tampered(err, b->dir, seq,
                     "its case is not in the manifest, has another digest there, was "
                     "scored twice, or is named not run");
            goto out;
        }
        seen[c - m->cases] = true;
        if (r->run_cases != b->records[0].run_cases ||
            strcmp(r->run_scope, b->records[0].run_scope) != 0) {
            tampered(err, b->dir, seq, "its run_scope/run_cases differ from the bundle's first");
            goto out;
        }
    }
    if (b->n_records != m->n_cases - m->n_not_run) {
        tampered(err, b->dir, b->n_records,
                 "the manifest names more cases than the chain has records");
        goto out;
    }
    for (size_t i = 0; i < m->n_cases; i++)
        if (bd_shard_of(m->cases[i].id, m->shards) != m->shard) {
            bd_err_set(err, BD_E_BUNDLE_PARTITION, b->dir, 0, 0,
                       "case '%s' belongs to shard %u of %u, not to this bundle's shard %u; "
                       "the bundle was not written by ",
                       m->cases[i].id, bd_shard_of(m->cases[i].id, m->shards), m->shards, m->shard);
            bd_err_advise(err, BD_ACT_RUN_SHARD, "%u/%u", m->shard, m->shards);
            goto out;
        }
    rc = 0;
out:
    free(seen);
    return rc;
}

int bd_bundle_load(bd_bundle *out, const char *dir, bd_err *err)
{
    memset(out, 0, sizeof(*out));
    bd_history *h = NULL;
    bd_history_verify_result vr;
    memset(&vr, 0, sizeof(vr));
    char *mpath = bd_path_join(dir, BD_BUNDLE_MANIFEST),
         *rpath = bd_path_join(dir, BD_BUNDLE_RECORDS);
    char *buf = NULL;
    size_t len = 0;
    int rc = -1;
    out->dir = strdup(dir);
    if (!mpath || !rpath || !out->dir) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        bd_err_set(err, BD_E_BUNDLE_INVALID, dir, 0, 0,
                   "not a directory; give the bundle directories a shard run wrote (--out)");
        goto out;
    }
    if (lstat(mpath, &st) != 0) {
        bd_err_set(err, BD_E_BUNDLE_INVALID, dir, 0, 0,
                   "no %s: the shard did not finish (or this is not a bundle); run that "
                   "shard again",
                   BD_BUNDLE_MANIFEST);
        goto out;
    }
    if (bd_read_file(&buf, &len, mpath, BD_BUNDLE_MANIFEST_MAX, BD_E_BUNDLE_INVALID, err) != 0)
        goto out;
    if (bd_bundle_manifest_parse(&out->m, buf, len, mpath, err) != 0)
        goto out;
    if (bd_history_open_dir(&h, rpath, BD_HISTORY_READ, err) != 0)
        goto out;
    if (bd_history_verify(h, 0, &vr, err) != 0) {
        /* The inner advice names this machine's history, not the bundle's. */
        if (err && err->code == BD_E_CHAIN_TAMPERED) {
            err->action = BD_ACT_NONE;
            bd_err_wrap(err, BD_E_BUNDLE_TAMPERED, rpath, "the bundle's records chain is broken (",
                        "); run that shard again");
        }
        goto out;
    }
    if (vr.count != out->m.count || strcmp(vr.head, out->m.chain_head) != 0) {
        bd_err_set(err, BD_E_BUNDLE_TAMPERED, dir, 0, 0,
                   "the records chain has %llu records ending in %.16s..., the manifest says "
                   "%llu ending in %.16s... (a truncated chain or an edited manifest); run "
                   "that shard again",
                   (unsigned long long)vr.count, vr.head, (unsigned long long)out->m.count,
                   out->m.chain_head);
        goto out;
    }
    if (vr.count > SIZE_MAX / sizeof(bd_history_record) ||
        !(out->records = calloc(vr.count ? vr.count : 1, sizeof(bd_history_record)))) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    for (uint64_t s = 1; s <= vr.count; s++) {
        if (bd_history_read(h, s, &out->records[s - 1], err) != 0) {
            if (err && err->code == BD_E_CHAIN_TAMPERED)
                err->code = BD_E_BUNDLE_TAMPERED;
            goto out;
        }
        out->n_records++;
    }
    rc = check_records(out, err);
out:
    bd_history_verify_result_release(&vr);
    bd_history_free(h);
    free(buf);
    free(mpath);
    free(rpath);
    if (rc != 0)
        bd_bundle_release(out);
    return rc;
}
