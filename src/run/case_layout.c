/*
 * case_layout.c — a case laid out for its programs (see case_layout.h).
 */
#include "case_layout.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "fsutil.h"
#include "run_report.h"
#include "text.h"

#define CASSETTE_MAX (64u * 1024 * 1024)

bd_exec_limits bd_runner_case_limits(const bd_registration *reg, const bd_case *c)
{
    bd_exec_limits l = BD_EXEC_LIMITS_INIT;
    int wall = c && c->wall_clock_s > 0              ? c->wall_clock_s
               : reg && reg->rubric_wall_clock_s > 0 ? reg->rubric_wall_clock_s
                                                     : BD_RUBRIC_DEFAULT_WALL_S;
    int mem = c && c->memory_mb > 0              ? c->memory_mb
              : reg && reg->rubric_memory_mb > 0 ? reg->rubric_memory_mb
                                                 : BD_RUBRIC_DEFAULT_MEMORY_MB;
    if (wall > BD_RUBRIC_MAX_WALL_S)
        wall = BD_RUBRIC_MAX_WALL_S;
    if (mem > BD_RUBRIC_MAX_MEMORY_MB)
        mem = BD_RUBRIC_MAX_MEMORY_MB;
    l.wall_ms = (int64_t)wall * 1000;
    l.cpu_s = (uint64_t)wall;
    l.as_bytes = (uint64_t)mem * 1024 * 1024;
    l.fsize_bytes = BD_EXEC_FSIZE_DEFAULT;
    l.nofile = BD_EXEC_NOFILE_DEFAULT;
    l.nproc = 0;
    l.stdout_max = BD_EXEC_STDOUT_MAX;
    l.stderr_keep = BD_EXEC_STDERR_KEEP;
    return l;
}

cJSON *bd_layout_parse_json(const char *buf, size_t len, char detail[BD_SCORE_DETAIL_MAX],
                            const char *what)
{
    if (len == 0) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "%s is empty", what);
        return NULL;
    }
    if (!bd_utf8_valid(buf, len)) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "%s is not valid UTF-8", what);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!j) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "%s is not valid JSON (near byte %zu)", what,
                 end ? (size_t)(end - buf) : (size_t)0);
        return NULL;
    }
    while (end && end < buf + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end != buf + len) {
        cJSON_Delete(j);
        snprintf(detail, BD_SCORE_DETAIL_MAX, "%s holds more than one JSON value", what);
        return NULL;
    }
    return j;
}

static char *make_temp(const bd_layout *l, const bd_layout_case *c, const char *suffix, bd_err *err)
{
    char path[PATH_MAX];
    /* The owner tag lets a later benchdesk sweep the dir if this one is SIGKILLed. */
    int n = snprintf(path, sizeof(path), "%s/benchdesk-run-%s-%s%s-XXXXXX", l->dir, l->owner_tag,
                     c->id, suffix);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        bd_err_set(err, BD_E_IO, l->dir, 0, 0, "temp dir path too long");
        return NULL;
    }
    if (!mkdtemp(path)) {
        bd_err_errno(err, BD_E_IO, errno, l->dir, "cannot create a temp dir for case '%s'%s", c->id,
                     l->staged ? " in the warm run's staging directory (free space there, or "
                                 "run with --start cold)"
                               : " (set TMPDIR to a writable directory)");
        return NULL;
    }
    char *p = strdup(path);
    if (!p) {
        rmdir(path);
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
    }
    return p;
}

/* Make a temp dir for the case (make_temp's `suffix`) into *path (caller frees) with an
 * empty case/ in it; *dfd gets the dir open (caller closes, also on failure). Returns 0,
 * or -1 (err set; `what` says what could not be done). */
static int make_case_dir(const bd_layout *l, const bd_layout_case *c, const char *suffix,
                         const char *what, char **path, int *dfd, bd_err *err)
{
    *path = make_temp(l, c, suffix, err);
    if (!*path)
        return -1;
    *dfd = open(*path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dfd < 0 || mkdirat(*dfd, "case", 0700) != 0) {
        bd_err_errno(err, BD_E_IO, errno, *path, "%s", what);
        return -1;
    }
    return 0;
}

/* Use-time integrity (docs/runner.md#use-time-integrity-and-leftovers): copy the case's `tops` into
 * `casefd` while hashing the whole case in the same pass, and compare with the pin now, before any
 * program sees the copy. A case changed since the run started is case.digest_mismatch: the run
 * aborts and nothing is recorded for it. *loaded is case.yaml parsed from the bytes that pass
 * hashed (bd_case_free), so the stdin document says what the pin covers. */
static int copy_verified(const bd_layout *l, const bd_layout_case *c, int casefd,
                         const char *const *tops, bd_case **loaded, bd_err *err)
{
    char now[BD_DIGEST_BUF];
    char path[PATH_MAX];
    bd_scanned_case kept = {.yaml_max = BD_YAML_MAX_BYTES};
    int rc_ = -1;
    *loaded = NULL;
    if (bd_digest_case_copy(now, c->dir, casefd, tops, &kept, err) != 0)
        goto out;
    if (!l->unpinned && strcmp(now, c->digest) != 0) {
        bd_err_set(err, BD_E_DIGEST_MISMATCH, c->dir, 0, 0,
                   "case '%s' changed during the run (now %s, pinned %s): it was not run; "
                   "restore it, or re-pin with ",
                   c->id, now, c->digest);
        bd_err_advise(err, BD_ACT_PIN_ALL, NULL);
        bd_err_append(err, " and sign again");
        goto out;
    }
    snprintf(path, sizeof(path), "%s/case.yaml", c->dir);
    if (kept.case_yaml) {
        rc_ = bd_case_parse(loaded, kept.case_yaml, kept.case_yaml_len, path, c->id, err);
        goto out;
    }
    /* No case.yaml among the hashed bytes (only a record run gets here: a pinned case has
     * one): the loader words why, and a file that appeared since is not taken. */
    if (bd_case_load(loaded, path, c->id, err) == 0) {
        bd_case_free(*loaded);
        *loaded = NULL;
        bd_err_set(err, BD_E_DIGEST_MISMATCH, path, 0, 0,
                   "case '%s' changed during the run: it was not run; run it again", c->id);
    }
out:
    bd_case_scan_release(&kept);
    return rc_;
}

/* The case's temp dir (make_case_dir) with the verified copy of `tops` in its case/, made
 * read-only, and case.yaml as that copy read it in *cy (bd_case_free); *dfd open on the
 * dir (caller closes, also on failure). Returns 0 or -1 (err). */
static int lay_out(const bd_layout *l, const bd_layout_case *c, const char *suffix,
                   const char *what, const char *const *tops, char **tmp, int *dfd, bd_case **cy,
                   bd_err *err)
{
    *cy = NULL;
    if (make_case_dir(l, c, suffix, what, tmp, dfd, err) != 0)
        return -1;
    int casefd = openat(*dfd, "case", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (casefd < 0)
        return bd_err_errno(err, BD_E_IO, errno, *tmp, "cannot open case/");
    int rc = copy_verified(l, c, casefd, tops, cy, err);
    if (rc == 0 && fchmod(casefd, 0555) != 0)
        rc = bd_err_errno(err, BD_E_IO, errno, *tmp, "cannot make case/ read-only");
    close(casefd);
    return rc;
}

/* `doc` as the stdin text into *out, *len (caller frees); `doc` is deleted. 0 or -1. */
static int doc_text(cJSON *doc, char **out, size_t *len, bd_err *err)
{
    *out = doc ? bd_run_json_text(doc, len) : NULL;
    cJSON_Delete(doc);
    return *out ? 0 : bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
}

int bd_layout_rubric(const bd_layout *l, const bd_layout_case *c, const cJSON *harness, char **tmp,
                     char **doc_out, size_t *doc_len, bd_exec_limits *lim, bd_err *err)
{
    int dfd = -1, rc = -1;
    bd_case *cy = NULL;
    static const char *const rubric_tops[] = {"input", "expected", NULL};
    if (lay_out(l, c, "", "cannot lay out the temp dir", rubric_tops, tmp, &dfd, &cy, err) != 0)
        goto out;
    *lim = bd_runner_case_limits(l->reg, cy);
    if (bd_write_file_at(dfd, "rubric.py", l->rubric, l->rubric_len, 0400, err) != 0)
        goto out;
    cJSON *doc = cJSON_CreateObject();
    cJSON *cj = bd_case_to_json(cy);
    cJSON *ex = cy->expected ? bd_ynode_to_json(cy->expected) : cJSON_CreateNull();
    if (!doc || !cj || !ex) {
        cJSON_Delete(doc);
        cJSON_Delete(cj);
        cJSON_Delete(ex);
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    cJSON_AddItemToObject(doc, "case", cj);
    cJSON_AddItemToObject(doc, "expected", ex);
    /* The harness output is the caller's: referenced, not moved into the document. */
    if (harness)
        cJSON_AddItemReferenceToObject(doc, "harness_output", (cJSON *)harness);
    else
        cJSON_AddItemToObject(doc, "harness_output", cJSON_CreateNull());
    cJSON_AddStringToObject(doc, "case_dir", "case");
    rc = doc_text(doc, doc_out, doc_len, err);
out:
    bd_case_free(cy);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

int bd_layout_sut(const bd_layout *l, const bd_layout_case *c, char **tmp, char **doc_out,
                  size_t *doc_len, bd_err *err)
{
    int dfd = -1, rc = -1;
    bd_case *cy = NULL;
    /* The system under test sees the input, never the ground truth. */
    static const char *const sut_tops[] = {"input", NULL};
    if (lay_out(l, c, "-sut", "cannot lay out the SUT's temp dir", sut_tops, tmp, &dfd, &cy, err) !=
        0)
        goto out;
    cJSON *doc = cJSON_CreateObject();
    cJSON *cj = bd_case_to_json(cy);
    if (!doc || !cj) {
        cJSON_Delete(doc);
        cJSON_Delete(cj);
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cj, "expected");
    cJSON_AddItemToObject(doc, "case", cj);
    cJSON_AddStringToObject(doc, "case_dir", "case");
    rc = doc_text(doc, doc_out, doc_len, err);
out:
    bd_case_free(cy);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

int bd_layout_cassette(const bd_layout_case *c, cJSON **harness, char detail[BD_SCORE_DETAIL_MAX],
                       bd_err *err)
{
    char *path = bd_path_join(c->dir, "cassette.json");
    char *buf = NULL;
    size_t len = 0;
    int rc_ = -1;
    *harness = NULL;
    if (!path) {
        bd_err_set(err, BD_E_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    if (bd_read_file(&buf, &len, path, CASSETTE_MAX, BD_E_IO, err) != 0) {
        if (err && err->code == BD_E_IO && access(path, F_OK) != 0)
            bd_err_set(err, BD_E_CASSETTE_MISSING, path, 0, 0,
                       "cassette.json disappeared during the run");
        goto out;
    }
    char dg[BD_DIGEST_BUF];
    bd_digest_bytes(dg, buf, len);
    if (strcmp(dg, c->cassette_digest) != 0) {
        bd_err_set(err, BD_E_CASSETTE_DIGEST_MISMATCH, path, 0, 0,
                   "cassette.json changed during the run (now %s, pinned %s)", dg,
                   c->cassette_digest);
        goto out;
    }
    *harness = bd_layout_parse_json(buf, len, detail, "cassette.json");
    rc_ = *harness ? 1 : 0;
out:
    free(buf);
    free(path);
    return rc_;
}
