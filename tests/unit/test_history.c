/* Unit tests of the history: record format, hashing, append, head, log, refusals. */
#include "test_history_util.h"

#include "compare.h"

#include <math.h>
#include <openssl/sha.h>
#include <sys/resource.h>
#include <signal.h>

#include "digest.h"

static const char *const score_keys[] = {"case_digest",
                                         "case_id",
                                         "cassette_digest",
                                         "finished_at",
                                         "harness_version",
                                         "isolation_class",
                                         "operator_fingerprint",
                                         "prev_hash",
                                         "provenance_verified",
                                         "run_cases",
                                         "run_id",
                                         "run_scope",
                                         "schema_version",
                                         "score",
                                         "seq",
                                         "started_at",
                                         "task_class",
                                         "task_class_digest"};

static void record_has_exactly_the_design_fields(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 2);
    cJSON *j = th_json_seq(h, 1);
    size_t n = 0;
    for (cJSON *c = j->child; c; c = c->next, n++) {
        assert_true(n < sizeof(score_keys) / sizeof(score_keys[0]));
        assert_string_equal(c->string, score_keys[n]); /* canonical: sorted */
    }
    assert_int_equal(n, sizeof(score_keys) / sizeof(score_keys[0]));
    assert_int_equal(cJSON_GetObjectItem(j, "seq")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(j, "schema_version")->valueint, 2);
    assert_string_equal(cJSON_GetObjectItem(j, "prev_hash")->valuestring,
                        "0000000000000000000000000000000000000000000000000000000000000000");
    assert_string_equal(cJSON_GetObjectItem(j, "cassette_digest")->valuestring, TH_DIGEST_A);
    cJSON *s = cJSON_GetObjectItem(j, "score");
    assert_non_null(cJSON_GetObjectItem(s, "breakdown"));
    assert_non_null(cJSON_GetObjectItem(s, "failure_modes"));
    cJSON_Delete(j);

    /* A segment of mode 0600; each line the canonical bytes of one record. */
    char p[1024];
    th_path(p, sizeof(p), h, 2);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    size_t seglen;
    char *seg = th_read(p, &seglen);
    assert_true(seglen > 0 && seg[seglen - 1] == '\n');
    free(seg);
    size_t len;
    char *b = th_read_seq(h, 2, &len);
    cJSON *k = cJSON_ParseWithLength(b, len);
    size_t clen;
    char *c = bd_canon_json(k, &clen);
    assert_int_equal(clen, len);
    assert_memory_equal(c, b, len);
    assert_true(b[len - 1] == '}');
    free(c);
    cJSON_Delete(k);
    free(b);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* record_hash = SHA-256("benchdesk-chain-v1\0" || unhex(prev) || BLAKE3(bytes)),
 * recomputed here from the pieces, independently of bd_history_record_hash. */
static void record_hash_follows_the_formula(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, BD_VERIFY_KEEP_HASHES, &r, &err), 0);
    assert_int_equal(r.count, 3);
    uint8_t prev[32] = {0};
    for (uint64_t seq = 1; seq <= 3; seq++) {
        size_t len;
        char *b = th_read_seq(h, seq, &len);
        uint8_t msg[19 + 64];
        memcpy(msg, "benchdesk-chain-v1", 18);
        msg[18] = 0;
        memcpy(msg + 19, prev, 32);
        bd_blake3_raw(msg + 51, b, len);
        uint8_t want[32];
        SHA256(msg, sizeof(msg), want);
        assert_memory_equal(r.hashes[seq - 1], want, 32);
        /* the next record's prev_hash is this hash */
        if (seq < 3) {
            cJSON *j = th_json_seq(h, seq + 1);
            char hex[65];
            bd_hex(hex, want, 32);
            assert_string_equal(cJSON_GetObjectItem(j, "prev_hash")->valuestring, hex);
            cJSON_Delete(j);
        }
        memcpy(prev, want, 32);
        free(b);
    }
    char hex[65];
    bd_hex(hex, prev, 32);
    assert_string_equal(r.head, hex);
    bd_history_verify_result_release(&r);

    /* the head is what append returned, and what bd_history_head says */
    uint64_t seq;
    char head[BD_HASH_BUF];
    assert_int_equal(bd_history_head(h, &seq, head, &err), 0);
    assert_int_equal(seq, 3);
    assert_string_equal(head, hex);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

static void append_returns_seq_and_hash(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 0);
    bd_history_score_fields f;
    char cid[32];
    bd_score s;
    th_fields(&f, cid, "x", 1);
    th_score(&s, 1);
    bd_err err = BD_ERR_INIT;
    uint64_t seq = 0;
    char hash[BD_HASH_BUF];
    for (uint64_t want = 1; want <= 3; want++) {
        assert_int_equal(bd_history_append_score(h, &f, &s, &seq, hash, &err), 0);
        assert_int_equal(seq, want);
        bd_history_verify_result r;
        assert_int_equal(bd_history_verify(h, 0, &r, &err), 0);
        assert_string_equal(r.head, hash);
        assert_int_equal(r.count, want);
    }
    bd_score_free(&s);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

static void empty_and_absent_histories_verify(void **state)
{
    (void)state;
    char *tmp = th_tmpdir();
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/nope", tmp);
    bd_history *h = NULL;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_open_dir(&h, dir, BD_HISTORY_READ, &err), 0);
    bd_history_verify_result r;
    assert_int_equal(bd_history_verify(h, 0, &r, &err), 0);
    assert_int_equal(r.count, 0);
    assert_string_equal(r.head, "0000000000000000000000000000000000000000000000000000000000000000");
    uint64_t seq = 99;
    assert_int_equal(bd_history_head(h, &seq, NULL, &err), 0);
    assert_int_equal(seq, 0);
    bd_history_record *recs;
    size_t n;
    assert_int_equal(bd_history_log(h, NULL, &recs, &n, NULL, &err), 0);
    assert_int_equal(n, 0);
    bd_history_records_free(recs, n);
    /* appending through a read handle creates the directory, 0700 */
    th_append(h, "c", 1);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    bd_history_free(h);

    /* a bench root: <root>/.benchdesk/history */
    assert_int_equal(bd_history_open(&h, tmp, BD_HISTORY_CREATE, &err), 0);
    char want[1100];
    snprintf(want, sizeof(want), "%s/.benchdesk/history", tmp);
    assert_string_equal(bd_history_dir(h), want);
    assert_int_equal(stat(want, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    bd_history_free(h);

    /* a symlink in place of the directory is refused */
    char link[1100];
    snprintf(link, sizeof(link), "%s/linked", tmp);
    assert_int_equal(symlink(dir, link), 0);
    assert_int_equal(bd_history_open_dir(&h, link, BD_HISTORY_READ, &err), -1);
    assert_int_equal(err.code, BD_E_IO);
    assert_null(h);
    th_rmtree(tmp);
    free(tmp);
}

static void audit_records_chain_and_verify(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 2);
    bd_history_audit_fields a = {.event = "promotion.refused",
                                 .task_class = "vuln-remediation",
                                 .detail = "promote vuln-remediation to gold: refused",
                                 .operator_fingerprint = NULL,
                                 .harness_version = NULL,
                                 .at = "2026-05-12T15:00:00Z"};
    bd_err err = BD_ERR_INIT;
    uint64_t seq;
    char hash[BD_HASH_BUF];
    assert_int_equal(bd_history_append_audit(h, &a, &seq, hash, &err), 0);
    assert_int_equal(seq, 3);
    th_append(h, "case", 4);
    assert_intact(h, 4);
    cJSON *j = th_json_seq(h, 3);
    const char *keys[] = {
        "at",        "detail",         "event", "harness_version", "kind", "operator_fingerprint",
        "prev_hash", "schema_version", "seq",   "task_class"};
    size_t n = 0;
    for (cJSON *c = j->child; c; c = c->next, n++)
        assert_string_equal(c->string, keys[n]);
    assert_int_equal(n, 10);
    assert_string_equal(cJSON_GetObjectItem(j, "kind")->valuestring, "audit");
    assert_string_equal(cJSON_GetObjectItem(j, "harness_version")->valuestring, BD_VERSION);
    cJSON_Delete(j);
    bd_history_record rec;
    assert_int_equal(bd_history_read(h, 3, &rec, &err), 0);
    assert_true(rec.is_audit);
    assert_string_equal(rec.event, "promotion.refused");
    assert_string_equal(rec.hash, hash);
    assert_null(rec.case_id);
    bd_history_record_release(&rec);

    /* an audit record without a task class (null), and a defaulted time */
    a.task_class = NULL;
    a.at = NULL;
    a.detail = NULL;
    assert_int_equal(bd_history_append_audit(h, &a, &seq, hash, &err), 0);
    assert_int_equal(bd_history_read(h, seq, &rec, &err), 0);
    assert_null(rec.task_class);
    assert_string_equal(rec.detail, "");
    assert_int_equal(strlen(rec.at), 20);
    bd_history_record_release(&rec);
    assert_intact(h, 5);

    /* a kind other than "audit" is schema-invalid */
    j = th_json_seq(h, 3);
    cJSON_ReplaceItemInObject(j, "kind", cJSON_CreateString("score"));
    th_write_json_seq(h, 3, j);
    cJSON_Delete(j);
    assert_tampered(h, BD_CHAIN_SCHEMA_INVALID, 3);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* Each bad field is refused before anything is written, naming the field. */
static void append_refuses_bad_fields(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 1);
    struct {
        const char *name;
        size_t off;
        const char *bad;
    } cases[] = {
        {"run_id", offsetof(bd_history_score_fields, run_id), "has space"},
        {"run_id", offsetof(bd_history_score_fields, run_id), NULL},
        {"task_class", offsetof(bd_history_score_fields, task_class), "../etc"},
        {"case_id", offsetof(bd_history_score_fields, case_id), "Upper"},
        {"case_digest", offsetof(bd_history_score_fields, case_digest), "blake3:abc"},
        {"task_class_digest", offsetof(bd_history_score_fields, task_class_digest), NULL},
        {"cassette_digest", offsetof(bd_history_score_fields, cassette_digest), "sha256:00"},
        {"harness_version", offsetof(bd_history_score_fields, harness_version), "1 0"},
        {"isolation_class", offsetof(bd_history_score_fields, isolation_class), "none"},
        {"operator_fingerprint", offsetof(bd_history_score_fields, operator_fingerprint),
         "0123456789abcdef0123456789abcdef01234567"},
        {"started_at", offsetof(bd_history_score_fields, started_at), "2026-02-30T00:00:00Z"},
        {"finished_at", offsetof(bd_history_score_fields, finished_at), "2026-05-12 14:00:00"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bd_history_score_fields f;
        char cid[32];
        bd_score s;
        th_fields(&f, cid, "x", 1);
        th_score(&s, 1);
        *(const char **)((char *)&f + cases[i].off) = cases[i].bad;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_history_append_score(h, &f, &s, NULL, NULL, &err), -1);
        assert_int_equal(err.code, BD_E_HISTORY_RECORD_INVALID);
        assert_non_null(strstr(err.msg, cases[i].name));
        bd_score_free(&s);
    }
    /* scores verify would reject: NaN, out of range, negative cost, bad UTF-8 */
    for (int i = 0; i < 5; i++) {
        bd_history_score_fields f;
        char cid[32];
        bd_score s;
        th_fields(&f, cid, "x", 1);
        th_score(&s, 1);
        if (i == 0)
            s.score = NAN;
        else if (i == 1)
            s.score = 1.5;
        else if (i == 2)
            s.cost_usd = -1;
        else if (i == 3)
            s.failure_modes[0].detail[0] = (char)0xff;
        else
            s.wall_clock_ms = -5;
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_history_append_score(h, &f, &s, NULL, NULL, &err), -1);
        assert_int_equal(err.code, BD_E_HISTORY_RECORD_INVALID);
        bd_score_free(&s);
    }
    bd_err err = BD_ERR_INIT;
    bd_history_audit_fields a = {.event = "Bad Event"};
    assert_int_equal(bd_history_append_audit(h, &a, NULL, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_HISTORY_RECORD_INVALID);
    assert_non_null(strstr(err.msg, "event"));
    /* nothing was written, no temp file left */
    assert_intact(h, 1);
    assert_false(th_exists_name(h, "0000000002.json"));
    assert_false(th_exists_name(h, "0000000002.json.tmp"));
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* history/VERIFIED (the head a verify saw) is only a memo: garbage, a forged hash or a
 * head beyond the chain never make verify accept or reject anything it would not
 * otherwise, and appends never read it. */
static void verify_memo_is_only_a_hint(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    th_verified(h);
    char p[1024];
    snprintf(p, sizeof(p), "%s/VERIFIED", bd_history_dir(h));
    size_t len;
    char *memo = th_read(p, &len);
    assert_int_equal(len, 89);
    assert_memory_equal(memo, "0000000003 ", 11);
    th_write(p, "garbage", 7);
    th_append(h, "case", 4);
    assert_intact(h, 4);
    /* a forged hash: the fast path cannot reach it, so every record is parsed again */
    char forged[100];
    snprintf(forged, sizeof(forged), "0000000004 %064d 000000000000\n", 0);
    th_write(p, forged, 89);
    assert_intact(h, 4);
    /* a memo beyond the chain */
    snprintf(forged, sizeof(forged), "0000000099 %.64s 000000000000\n", memo + 11);
    th_write(p, forged, 89);
    assert_intact(h, 4);
    /* a tampered record under a valid memo is still found */
    th_verified(h);
    th_write_seq(h, 2, "{}", 2);
    assert_tampered(h, BD_CHAIN_SCHEMA_INVALID, 2);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify_since(h, &r, &err), -1);
    assert_int_equal(r.bad_seq, 2);
    bd_history_verify_result_release(&r);
    free(memo);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* Under a trusted head (an anchor's), verify recomputes every record's hash from its own
 * prev_hash, 64 records at a time on every thread, instead of parsing: at every window
 * size it reaches the head without starting over, and a record edited below the head is
 * still caught (the hashes no longer arrive there: everything is parsed). */
static int verify_trusting(bd_history *h, uint64_t count, const char *head,
                           bd_history_verify_result *r, bd_err *err)
{
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.trusted_count = count;
    assert_int_equal(bd_hash_unhex(o.trusted_head, head), 0);
    return bd_history_verify_with(h, &o, r, err);
}

static void fast_verify_hashes_are_the_chain(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 1);
    for (int i = 2; i <= 700; i++)
        th_append(h, "case", i);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, 0, &r, &err), 0);
    assert_int_equal(r.parsed_from, 1);
    char head[BD_HASH_BUF];
    memcpy(head, r.head, sizeof(head));
    bd_history_verify_result_release(&r);
    const size_t windows[] = {0, 1, 63, 64, 65, 200};
    for (size_t w = 0; w < sizeof(windows) / sizeof(*windows); w++) {
        bd_history_test_verify_window(windows[w]);
        unsigned before = bd_history_test_fast_fallbacks();
        assert_int_equal(verify_trusting(h, 700, head, &r, &err), 0);
        assert_int_equal(r.count, 700);
        assert_int_equal(r.parsed_from, 701);
        assert_string_equal(r.head, head);
        bd_history_verify_result_release(&r);
        assert_int_equal(bd_history_test_fast_fallbacks(), before);
    }
    bd_history_test_verify_window(0);
    /* Only part of the chain under the head: the rest is parsed. */
    assert_int_equal(bd_history_verify(h, BD_VERIFY_KEEP_HASHES, &r, &err), 0);
    char mid[BD_HASH_BUF];
    bd_hex(mid, r.hashes[399], 32);
    bd_history_verify_result_release(&r);
    assert_int_equal(verify_trusting(h, 400, mid, &r, &err), 0);
    assert_int_equal(r.parsed_from, 401);
    bd_history_verify_result_release(&r);
    /* A record edited under the head is caught, and the memo is never believed. */
    unsigned before = bd_history_test_fast_fallbacks();
    th_write_seq(h, 333, "{}", 2);
    assert_int_equal(verify_trusting(h, 700, head, &r, &err), -1);
    assert_int_equal(r.reason, BD_CHAIN_SCHEMA_INVALID);
    assert_int_equal(r.bad_seq, 333);
    bd_history_verify_result_release(&r);
    assert_int_equal(bd_history_test_fast_fallbacks(), before + 1);
    assert_tampered(h, BD_CHAIN_SCHEMA_INVALID, 333);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* The visitor sees each record of the verified chain once, in order, with the hash the
 * chain has for it; after a fallback from a trusted head that does not hold it is reset
 * and sees them again; a visitor that stops stops the walk. */
typedef struct seen {
    uint64_t n, last, resets, stop_at;
    bool in_order;
    uint8_t (*hashes)[32];
} seen;

static int see(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *ctx)
{
    seen *s = ctx;
    (void)rec;
    (void)len;
    if (seq != s->last + 1)
        s->in_order = false;
    if (memcmp(hash, s->hashes[seq - 1], 32) != 0)
        s->in_order = false;
    s->last = seq;
    s->n++;
    return s->stop_at && seq == s->stop_at;
}

static void see_reset(void *ctx)
{
    seen *s = ctx;
    s->resets++;
    s->n = s->last = 0;
}

static void visitor_sees_the_verified_chain(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 1);
    for (int i = 2; i <= 150; i++)
        th_append(h, i % 2 ? "odd" : "even", i);
    bd_history_verify_result all;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, BD_VERIFY_KEEP_HASHES, &all, &err), 0);
    seen s = {0, 0, 0, 0, true, all.hashes};
    bd_history_visit vis = {.fn = see, .reset = see_reset, .ctx = &s};
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.visit = &vis;
    uint64_t want[2] = {150, 7};
    o.want = want;
    o.n_want = 2;
    bd_history_verify_result r;
    bd_history_test_verify_window(64);
    assert_int_equal(bd_history_verify_with(h, &o, &r, &err), 0);
    assert_true(s.in_order);
    assert_int_equal(s.n, 150);
    assert_memory_equal(r.want_hashes[0], all.hashes[149], 32);
    assert_memory_equal(r.want_hashes[1], all.hashes[6], 32);
    bd_history_verify_result_release(&r);
    /* a trusted head the bytes do not reach: reset, then every record again */
    memset(&s, 0, sizeof(s));
    s.in_order = true;
    s.hashes = all.hashes;
    o.trusted_count = 100;
    memset(o.trusted_head, 0xab, 32);
    assert_int_equal(bd_history_verify_with(h, &o, &r, &err), 0);
    assert_int_equal(s.resets, 1);
    assert_int_equal(s.n, 150);
    assert_true(s.in_order);
    assert_int_equal(r.parsed_from, 1);
    bd_history_verify_result_release(&r);
    /* a stop */
    memset(&s, 0, sizeof(s));
    s.in_order = true;
    s.hashes = all.hashes;
    s.stop_at = 42;
    o.trusted_count = 0;
    assert_int_equal(bd_history_verify_with(h, &o, &r, &err), -1);
    assert_int_equal(s.n, 42);
    bd_history_verify_result_release(&r);
    bd_history_test_verify_window(0);
    bd_history_verify_result_release(&all);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A visitor whose per-record step runs on the hashing threads (visit->pre) sees exactly
 * what a plain visitor sees: the same records holding the needle, in order, each with its
 * chain hash and a digest of its bytes; in the fast mode under a trusted head too. */
typedef struct pre_seen {
    uint64_t n, last;
    bool in_order;
    uint64_t seqs[200];
    uint8_t digests[200][32];
} pre_seen;

static int see_bytes(uint64_t seq, const char *rec, size_t len, const uint8_t hash[32], void *ctx)
{
    pre_seen *s = ctx;
    (void)hash;
    if (s->n < 200) {
        s->seqs[s->n] = seq;
        bd_blake3_raw(s->digests[s->n], rec, len);
    }
    s->n++;
    return 0;
}

static void pre_digest(const char *rec, size_t len, void *out, const void *ctx)
{
    (void)ctx;
    bd_blake3_raw(out, rec, len);
}

static int take_digest(uint64_t seq, const void *pre, const uint8_t hash[32], void *ctx)
{
    pre_seen *s = ctx;
    (void)hash;
    if (s->n >= 200 || s->seqs[s->n] != seq || memcmp(s->digests[s->n], pre, 32) != 0 ||
        seq <= s->last)
        s->in_order = false;
    s->last = seq;
    s->n++;
    return 0;
}

static void visitor_pre_step_sees_what_fn_sees(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 1);
    for (int i = 2; i <= 150; i++)
        th_append(h, i % 3 ? "odd" : "even", i);
    bd_history_verify_result all, r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, BD_VERIFY_KEEP_HASHES, &all, &err), 0);
    pre_seen *plain = calloc(1, sizeof(*plain)), *pre = calloc(1, sizeof(*pre));
    bd_history_visit vis = {.needle = "\"even-", .fn = see_bytes, .ctx = plain};
    bd_history_verify_opts o = BD_HISTORY_VERIFY_OPTS_INIT;
    o.visit = &vis;
    bd_history_test_verify_window(32);
    assert_int_equal(bd_history_verify_with(h, &o, &r, &err), 0);
    bd_history_verify_result_release(&r);
    assert_int_equal(plain->n, 50);
    for (int mode = 0; mode < 2; mode++) {
        bd_history_visit pv = {.needle = "\"even-",
                               .ctx = pre,
                               .pre_size = 32,
                               .pre = pre_digest,
                               .fn_pre = take_digest};
        memcpy(pre->seqs, plain->seqs, sizeof(pre->seqs));
        memcpy(pre->digests, plain->digests, sizeof(pre->digests));
        pre->n = pre->last = 0;
        pre->in_order = true;
        o.visit = &pv;
        /* mode 1: records 1..120 under a trusted head that holds (re-hashed, not parsed) */
        o.trusted_count = mode ? 120 : 0;
        if (mode)
            memcpy(o.trusted_head, all.hashes[119], 32);
        assert_int_equal(bd_history_verify_with(h, &o, &r, &err), 0);
        assert_int_equal(r.parsed_from, mode ? 121 : 1);
        bd_history_verify_result_release(&r);
        assert_true(pre->in_order);
        assert_int_equal(pre->n, 50);
    }
    bd_history_test_verify_window(0);
    bd_history_verify_result_release(&all);
    free(plain);
    free(pre);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

static void append_refuses_a_broken_head(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    th_write_seq(h, 3, "{broken", 7);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(th_append_err(h, &err), -1);
    assert_int_equal(err.code, BD_E_CHAIN_TAMPERED);
    assert_int_equal(err.action, BD_ACT_HISTORY_VERIFY); /* "run `benchdesk history verify`" */
    assert_false(th_exists_name(h, "0000000004.json"));
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A write error (here: the file-size limit) aborts the append with io.error, leaves no
 * record and no temp file, and the next append works. */
static void write_error_aborts_cleanly(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 2);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 100; /* a record is several hundred bytes */
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    bd_history_score_fields f;
    char cid[32];
    bd_score s;
    th_fields(&f, cid, "x", 3);
    th_score(&s, 3);
    bd_err err = BD_ERR_INIT;
    int rc = bd_history_append_score(h, &f, &s, NULL, NULL, &err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, BD_E_IO);
    assert_non_null(strstr(err.msg, "nothing was appended"));
    assert_false(th_exists_name(h, "0000000003.json"));
    assert_false(th_exists_name(h, "0000000003.json.tmp"));
    assert_intact(h, 2);
    uint64_t seq;
    assert_int_equal(bd_history_append_score(h, &f, &s, &seq, NULL, &err), 0);
    assert_int_equal(seq, 3);
    assert_intact(h, 3);
    bd_score_free(&s);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

static void read_returns_the_score(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 3);
    bd_history_record r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_read(h, 3, &r, &err), 0);
    assert_false(r.is_audit);
    assert_int_equal(r.seq, 3);
    assert_string_equal(r.case_id, "case-003");
    assert_string_equal(r.task_class, "vuln-remediation");
    assert_string_equal(r.cassette_digest, TH_DIGEST_A);
    assert_string_equal(r.isolation_class, "namespaces");
    assert_true(r.provenance_verified);
    assert_null(r.operator_fingerprint); /* 3 % 3 == 0 */
    assert_true(r.score.passed == false);
    assert_true(r.score.score == 3 / 8.0);
    assert_int_equal(r.score.n_breakdown, 2);
    assert_string_equal(r.score.breakdown[1].key, "recipe_match");
    assert_int_equal(r.score.n_failure_modes, 1);
    assert_string_equal(r.score.failure_modes[0].detail,
                        "still reachable via \"axios\" \xc3\xa9\n");
    assert_int_equal(r.score.wall_clock_ms, 1003);
    assert_non_null(r.json);
    bd_history_record_release(&r);
    assert_int_equal(bd_history_read(h, 4, &r, &err), -1);
    assert_int_equal(err.code, BD_E_CHAIN_TAMPERED);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

static void log_pages_newest_first_with_filters(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 0);
    for (int i = 1; i <= 25; i++)
        th_append(h, i % 5 == 0 ? "other" : "case", i);
    bd_history_audit_fields a = {.event = "promotion.refused", .task_class = "incident-triage"};
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_append_audit(h, &a, NULL, NULL, &err), 0);

    bd_history_record *recs;
    size_t n;
    uint64_t next;
    bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
    assert_int_equal(bd_history_log(h, &o, &recs, &n, &next, &err), 0);
    assert_int_equal(n, BD_HISTORY_LOG_DEFAULT);
    assert_int_equal(recs[0].seq, 26);
    assert_true(recs[0].is_audit);
    assert_int_equal(recs[19].seq, 7);
    assert_int_equal(next, 7);
    bd_history_records_free(recs, n);

    o.before = next;
    assert_int_equal(bd_history_log(h, &o, &recs, &n, &next, &err), 0);
    assert_int_equal(n, 6);
    assert_int_equal(recs[0].seq, 6);
    assert_int_equal(recs[5].seq, 1);
    assert_int_equal(next, 0);
    bd_history_records_free(recs, n);

    o.before = 0;
    o.limit = 3;
    o.task_class = "incident-triage";
    assert_int_equal(bd_history_log(h, &o, &recs, &n, &next, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(recs[0].seq, 26);
    bd_history_records_free(recs, n);

    o.task_class = "vuln-remediation";
    o.case_id = "other-015";
    assert_int_equal(bd_history_log(h, &o, &recs, &n, &next, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(recs[0].seq, 15);
    bd_history_records_free(recs, n);

    /* the newest page does not read old records: a broken record 1 does not matter */
    th_write_seq(h, 1, "junk", 4);
    o = (bd_history_log_opts)BD_HISTORY_LOG_OPTS_INIT;
    o.limit = 5;
    assert_int_equal(bd_history_log(h, &o, &recs, &n, &next, &err), 0);
    assert_int_equal(n, 5);
    bd_history_records_free(recs, n);
    /* ... but a page that reaches it reports it */
    o.limit = 100;
    assert_int_equal(bd_history_log(h, &o, &recs, &n, &next, &err), -1);
    assert_int_equal(err.code, BD_E_CHAIN_TAMPERED);
    assert_null(recs);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* Every page of the unfiltered log, `limit` records at a time, as "seq:hash " words (or
 * "error <code>" where a page fails). The caller frees. */
static char *log_all_pages(bd_history *h, size_t limit)
{
    size_t cap = 1 << 16, used = 0;
    char *out = calloc(cap, 1);
    assert_non_null(out);
    bd_history_log_opts o = BD_HISTORY_LOG_OPTS_INIT;
    o.limit = limit;
    for (;;) {
        bd_history_record *recs;
        size_t n;
        uint64_t next;
        bd_err err = BD_ERR_INIT;
        if (bd_history_log(h, &o, &recs, &n, &next, &err) != 0) {
            used += (size_t)snprintf(out + used, cap - used, "error %s", bd_code_str(err.code));
            break;
        }
        for (size_t i = 0; i < n; i++) {
            assert_true(used + 128 < cap);
            used += (size_t)snprintf(out + used, cap - used, "%llu:%.12s ",
                                     (unsigned long long)recs[i].seq, recs[i].hash);
        }
        bd_history_records_free(recs, n);
        if (!next)
            break;
        o.before = next;
    }
    return out;
}

/* The log read from the segment's end in small windows gives what reading whole segments
 * gives, page by page, on an intact chain and on each kind of damage. */
static void log_tail_windows_match_whole_segments(void **state)
{
    (void)state;
    size_t windows[] = {1, 300, 700, 5000};
    for (int damage = 0; damage < 5; damage++) {
        char *tmp;
        bd_history *h = th_history(&tmp, "case", 40);
        if (damage == 1)
            th_swap_seq(h, 20, 21); /* two records trade places */
        if (damage == 2)
            th_write_seq(h, 40, "junk", 4); /* the last whole line is no record */
        if (damage == 3)
            th_unlink_seq(h, 12); /* a record is gone: the lines after it move up */
        if (damage == 4) {
            char segdir[1024], path[1100];
            th_segdir(segdir, sizeof(segdir), h);
            snprintf(path, sizeof(path), "%s/0000000001.jsonl", segdir);
            int fd = open(path, O_WRONLY | O_APPEND);
            assert_true(fd >= 0);
            assert_int_equal(write(fd, "{\"case_digest\":", 15), 15); /* a torn tail */
            close(fd);
        }
        bd_history_test_tail_window(SIZE_MAX);
        char *whole = log_all_pages(h, 7);
        for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
            bd_history_test_tail_window(windows[w]);
            char *tail = log_all_pages(h, 7);
            if (damage == 0 || damage == 4)
                assert_null(strstr(tail, "error"));
            if (damage == 3) {
                /* both refuse the chain: whole segments at record 40, which has no line;
                 * the windows as soon as a record is not where its place says */
                assert_non_null(strstr(whole, "error chain.tampered"));
                assert_non_null(strstr(tail, "error chain.tampered"));
            } else {
                assert_string_equal(tail, whole);
            }
            free(tail);
        }
        bd_history_test_tail_window(0);
        free(whole);
        bd_history_free(h);
        th_rmtree(tmp);
        free(tmp);
    }
}

static bool stop_now(void)
{
    return true;
}

static bool never_stop(void)
{
    return false;
}

/* The runs of the chain are read from the bytes the walk linked, with the hash it worked
 * out (the same as reading each record on its own gives), and a front end that closes
 * ends the walk. */
static void runs_load_reads_linked_records_and_stops(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 12);
    bd_runs runs;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_runs_load_until(&runs, h, never_stop, &err), 0);
    assert_int_equal(runs.count, 12);
    assert_int_equal(runs.n, 1);
    assert_int_equal(runs.runs[0].n_recs, 12);
    for (size_t i = 0; i < runs.runs[0].n_recs; i++) {
        const bd_history_record *got = &runs.runs[0].recs[i];
        bd_history_record r;
        assert_int_equal(bd_history_read(h, got->seq, &r, &err), 0);
        assert_string_equal(got->hash, r.hash);
        assert_string_equal(got->case_id, r.case_id);
        assert_string_equal(got->finished_at, r.finished_at);
        assert_true(got->score.score == r.score.score);
        assert_int_equal(got->score.n_failure_modes, r.score.n_failure_modes);
        assert_null(got->json); /* not kept: the runs hold a record per case */
        bd_history_record_release(&r);
    }
    bd_runs_release(&runs);
    assert_int_equal(bd_runs_load_until(&runs, h, stop_now, &err), -1);
    assert_int_equal(err.code, BD_E_RUN_CANCELLED);
    assert_int_equal(runs.n, 0);
    bd_runs_release(&runs);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* The parser on its own: rejects, with the right class, what verify must reject. */
static void parser_classifies_bad_bytes(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 1);
    size_t len;
    char *good = th_read_seq(h, 1, &len);
    char why[256];
    bd_history_record r;
    assert_int_equal(bd_history_record_parse(&r, good, len, why), BD_CHAIN_OK);
    bd_history_record_release(&r);
    assert_int_equal(bd_history_record_parse(NULL, good, len, why), BD_CHAIN_OK);

    struct {
        const char *bytes;
        bd_chain_reason want;
    } cases[] = {
        {"", BD_CHAIN_UNPARSEABLE},
        {"{", BD_CHAIN_UNPARSEABLE},
        {"[]", BD_CHAIN_UNPARSEABLE},
        {"{} x", BD_CHAIN_UNPARSEABLE},
        {"\xff{}", BD_CHAIN_UNPARSEABLE},
        {"{}", BD_CHAIN_SCHEMA_INVALID},
        {"{\"seq\":1}", BD_CHAIN_SCHEMA_INVALID},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(bd_history_record_parse(&r, cases[i].bytes, strlen(cases[i].bytes), why),
                         cases[i].want);
        assert_true(why[0] != '\0');
        assert_null(r.json);
    }
    /* a NUL byte inside */
    char nul[] = {'{', '}', '\0'};
    assert_int_equal(bd_history_record_parse(NULL, nul, 3, why), BD_CHAIN_UNPARSEABLE);
    /* whitespace makes it non-canonical */
    char *sp = malloc(len + 2);
    sp[0] = ' ';
    memcpy(sp + 1, good, len);
    assert_int_equal(bd_history_record_parse(NULL, sp, len + 1, why), BD_CHAIN_SCHEMA_INVALID);
    assert_non_null(strstr(why, "canonical"));
    free(sp);
    free(good);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_has_exactly_the_design_fields),
        cmocka_unit_test(record_hash_follows_the_formula),
        cmocka_unit_test(append_returns_seq_and_hash),
        cmocka_unit_test(empty_and_absent_histories_verify),
        cmocka_unit_test(audit_records_chain_and_verify),
        cmocka_unit_test(append_refuses_bad_fields),
        cmocka_unit_test(verify_memo_is_only_a_hint),
        cmocka_unit_test(fast_verify_hashes_are_the_chain),
        cmocka_unit_test(visitor_sees_the_verified_chain),
        cmocka_unit_test(visitor_pre_step_sees_what_fn_sees),
        cmocka_unit_test(append_refuses_a_broken_head),
        cmocka_unit_test(write_error_aborts_cleanly),
        cmocka_unit_test(read_returns_the_score),
        cmocka_unit_test(log_pages_newest_first_with_filters),
        cmocka_unit_test(log_tail_windows_match_whole_segments),
        cmocka_unit_test(runs_load_reads_linked_records_and_stops),
        cmocka_unit_test(parser_classifies_bad_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
