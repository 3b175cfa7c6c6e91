/* The tamper matrix: every way of changing a history on disk — a line of a segment
 * edited, removed, moved, inserted, swapped in from another history, a segment renamed,
 * removed or cut — each asserting the exact reason and the exact first bad seq that
 * verify reports (rules: docs/history.md). */
#include "test_history_util.h"

#include "digest.h"

#define N 10

static int setup(void **state)
{
    char *tmp;
    bd_history *h = th_history(&tmp, "case", N);
    th_verified(h);
    void **pair = calloc(2, sizeof(void *));
    pair[0] = h;
    pair[1] = tmp;
    *state = pair;
    return 0;
}

static int teardown(void **state)
{
    void **pair = *state;
    bd_history_free(pair[0]);
    th_rmtree(pair[1]);
    free(pair[1]);
    free(pair);
    return 0;
}

#define H ((bd_history *)((void **)*state)[0])

/* Replace the first occurrence of `from` in record seq's bytes by `to` (same length). */
static void patch(bd_history *h, uint64_t seq, const char *from, const char *to)
{
    size_t len;
    char *b = th_read_seq(h, seq, &len);
    char *at = strstr(b, from);
    assert_non_null(at);
    assert_int_equal(strlen(from), strlen(to));
    memcpy(at, to, strlen(to));
    th_write_seq(h, seq, b, len);
    free(b);
}

static void intact_chain_verifies(void **state)
{
    assert_intact(H, N);
}

/* One byte of content (a digit of the task-class digest) flipped: the record still parses,
 * and its successor no longer links to it. */
static void flip_content_byte(void **state)
{
    patch(H, 4, "\"task_class_digest\":\"blake3:f", "\"task_class_digest\":\"blake3:e");
    assert_tampered(H, BD_CHAIN_EDITED, 4);
}

static void flip_score(void **state)
{
    patch(H, 6, "\"passed\":false", "\"passed\":true,");
    /* "true," breaks the JSON: a flip that breaks syntax is unparseable */
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
}

static void flip_score_value(void **state)
{
    cJSON *j = th_json_seq(H, 6);
    cJSON *s = cJSON_GetObjectItem(j, "score");
    cJSON_ReplaceItemInObject(s, "score", cJSON_CreateNumber(1));
    cJSON_ReplaceItemInObject(s, "passed", cJSON_CreateTrue());
    th_write_json_seq(H, 6, j);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_EDITED, 6);
}

/* An edit of the second-to-last record: the last record vouches for nothing but the
 * verify memo says what the last record's hash was. */
static void edit_second_to_last(void **state)
{
    patch(H, N - 1, "\"case_id\":\"case-", "\"case_id\":\"cate-");
    assert_tampered(H, BD_CHAIN_EDITED, N - 1);
    th_unlink_name(H, "VERIFIED"); /* without the memo the rule still blames N-1 */
    assert_tampered(H, BD_CHAIN_EDITED, N - 1);
}

static void flip_prev_hash_digit(void **state)
{
    cJSON *j = th_json_seq(H, 6);
    char *p = cJSON_GetObjectItem(j, "prev_hash")->valuestring;
    p[10] = p[10] == 'a' ? 'b' : 'a';
    th_write_json_seq(H, 6, j);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_EDITED, 6);
}

static void edit_seq_field(void **state)
{
    cJSON *j = th_json_seq(H, 4);
    cJSON_ReplaceItemInObject(j, "seq", cJSON_CreateNumber(40));
    th_write_json_seq(H, 4, j);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_EDITED, 4);
}

/* The last record's content is covered by nothing inside the chain: only an anchor (or
 * a later record) can catch it. Documented; the anchor tests cover it. */
static void edit_last_record_needs_an_anchor(void **state)
{
    patch(H, N, "\"case_id\":\"case-", "\"case_id\":\"cate-");
    assert_intact(H, N);
}

static void delete_middle_record(void **state)
{
    th_unlink_seq(H, 4);
    assert_tampered(H, BD_CHAIN_MISSING, 4);
}

static void delete_first_record(void **state)
{
    th_unlink_seq(H, 1);
    assert_tampered(H, BD_CHAIN_MISSING, 1);
}

/* Two lines removed: the file then holds record 6 where 4 was. */
static void delete_two_records(void **state)
{
    th_unlink_seq(H, 4);
    th_unlink_seq(H, 4);
    assert_tampered(H, BD_CHAIN_MISSING, 4);
}

/* Truncating the tail at a line boundary is invisible to the chain alone (the anchor
 * catches it). */
static void truncate_tail_needs_an_anchor(void **state)
{
    th_unlink_seq(H, N);
    th_unlink_seq(H, N - 1);
    assert_intact(H, N - 2);
}

static void swap_two_records(void **state)
{
    th_swap_seq(H, 3, 7);
    assert_tampered(H, BD_CHAIN_REORDERED, 3);
}

static void swap_adjacent_records(void **state)
{
    th_swap_seq(H, 5, 6);
    assert_tampered(H, BD_CHAIN_REORDERED, 5);
}

/* A forged record X with seq 5 and the correct-looking prev_hash (record 4's hash) is
 * put at 5; the genuine 5..N move up one file, untouched. */
static void insert_forged_record(void **state)
{
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(H, 0, &r, &err), 0);
    char h4[BD_HASH_BUF];
    {
        bd_history_record rec;
        assert_int_equal(bd_history_read(H, 4, &rec, &err), 0);
        memcpy(h4, rec.hash, BD_HASH_BUF);
        bd_history_record_release(&rec);
    }
    cJSON *x = th_json_seq(H, 5);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(x, "score"), "score", cJSON_CreateNumber(1));
    cJSON_ReplaceItemInObject(x, "prev_hash", cJSON_CreateString(h4));
    size_t len;
    char *c = bd_canon_json(x, &len);
    assert_non_null(c);
    th_insert_seq(H, 5, c, len);
    free(c);
    cJSON_Delete(x);
    bd_history_verify_result_release(&r);
    /* X itself parses and links; the record after it links past it, to record 4. */
    assert_tampered(H, BD_CHAIN_INSERTED, 5);
}

/* Same, but the forger also rewrites the seq fields of the shifted records. */
static void insert_forged_record_and_renumber(void **state)
{
    bd_err err = BD_ERR_INIT;
    bd_history_record rec;
    assert_int_equal(bd_history_read(H, 4, &rec, &err), 0);
    cJSON *x = th_json_seq(H, 5);
    cJSON_ReplaceItemInObject(x, "case_id", cJSON_CreateString("forged"));
    cJSON_ReplaceItemInObject(x, "prev_hash", cJSON_CreateString(rec.hash));
    bd_history_record_release(&rec);
    for (uint64_t s = N; s >= 5; s--) {
        cJSON *j = th_json_seq(H, s);
        cJSON_ReplaceItemInObject(j, "seq", cJSON_CreateNumber((double)(s + 1)));
        th_write_json_seq(H, s, j);
        cJSON_Delete(j);
    }
    size_t len;
    char *c = bd_canon_json(x, &len);
    assert_non_null(c);
    th_insert_seq(H, 5, c, len);
    free(c);
    cJSON_Delete(x);
    assert_tampered(H, BD_CHAIN_INSERTED, 5);
}

/* A copy of an earlier record appended as if new. */
static void duplicate_record_appended(void **state)
{
    size_t len;
    char *b = th_read_seq(H, 3, &len);
    th_write_seq(H, N + 1, b, len);
    free(b);
    assert_tampered(H, BD_CHAIN_INSERTED, N + 1);
}

/* A copy of record 1 put before it: the first line still links to the genesis, the
 * second is the copy of record 1. */
static void first_record_duplicated_in_front(void **state)
{
    size_t len;
    char *b = th_read_seq(H, 1, &len);
    th_write_seq(H, 0, b, len);
    free(b);
    assert_tampered(H, BD_CHAIN_INSERTED, 2);
}

/* A valid record from another history (same position) replaces record 5. */
static void splice_from_another_history(void **state)
{
    char *tmp2;
    bd_history *other = th_history(&tmp2, "elsewhere", N);
    size_t len;
    char *b = th_read_seq(other, 5, &len);
    th_write_seq(H, 5, b, len);
    free(b);
    assert_tampered(H, BD_CHAIN_SPLICED, 5);
    /* a foreign record numbered differently (7) at position 5 */
    b = th_read_seq(other, 3, &len);
    th_write_seq(H, 5, b, len);
    free(b);
    assert_tampered(H, BD_CHAIN_SPLICED, 5);
    /* a foreign genesis record at position 1 links to the genesis like the one it
     * replaced: the chain sees an edit of record 1 */
    b = th_read_seq(other, 1, &len);
    th_write_seq(H, 1, b, len);
    free(b);
    assert_tampered(H, BD_CHAIN_EDITED, 1);
    bd_history_free(other);
    th_rmtree(tmp2);
    free(tmp2);
}

/* A foreign record as the last record: the verify memo tells splice from edit. */
static void splice_at_the_head(void **state)
{
    char *tmp2;
    bd_history *other = th_history(&tmp2, "elsewhere", N);
    size_t len;
    char *b = th_read_seq(other, N, &len);
    th_write_seq(H, N, b, len);
    free(b);
    assert_tampered(H, BD_CHAIN_SPLICED, N);
    bd_history_free(other);
    th_rmtree(tmp2);
    free(tmp2);
}

static void unparseable_records(void **state)
{
    th_write_seq(H, 6, "{\"seq\":", 7);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
    th_write_seq(H, 6, "", 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
    th_write_seq(H, 6, "{\"a\":\"\xc3\x28\"}", 10);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
    /* an empty line in the middle, a line of spaces */
    th_write_seq(H, 6, "   ", 3);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
    th_insert_seq(H, 3, "", 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 3);
}

/* The segment file itself replaced by a symlink to a copy, a directory, a FIFO. */
static void segment_not_a_file(void **state)
{
    char p[1024], q[1100];
    th_path(p, sizeof(p), H, 1);
    snprintf(q, sizeof(q), "%s.copy", p);
    assert_int_equal(rename(p, q), 0);
    assert_int_equal(symlink(q, p), 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 1);
    unlink(p);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 1);
    rmdir(p);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 1);
    unlink(p);
    assert_int_equal(rename(q, p), 0);
    assert_intact(H, N);
}

/* A segment renamed off the grid (every segment starts at 1 + a multiple of 65,536). */
static void segment_renamed(void **state)
{
    char p[1024], q[1024];
    th_path(p, sizeof(p), H, 1);
    snprintf(q, sizeof(q), "%s/segments/0000000002.jsonl", bd_history_dir(H));
    assert_int_equal(rename(p, q), 0);
    assert_tampered(H, BD_CHAIN_INSERTED, 2);
}

/* The only segment removed: an empty chain, which only an anchor can tell from a new
 * bench; a planted segment after a gap is a missing range. */
static void segment_removed(void **state)
{
    char p[1024], q[1024];
    th_path(p, sizeof(p), H, 1);
    snprintf(q, sizeof(q), "%s/segments/0000065537.jsonl", bd_history_dir(H));
    assert_int_equal(rename(p, q), 0);
    assert_tampered(H, BD_CHAIN_MISSING, 1);
    unlink(q);
    assert_intact(H, 0);
}

/* A torn final line (a crash mid-append) is not a record and not tampering; the same
 * bytes followed by a newline are an unparseable record. */
static void torn_tail_versus_tamper(void **state)
{
    char p[1024];
    th_path(p, sizeof(p), H, 1);
    FILE *f = fopen(p, "ab");
    assert_non_null(f);
    fputs("{\"case_digest\":\"blake3:01", f);
    fclose(f);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(th_verify(H, &r, &err), 0);
    assert_int_equal(r.count, N);
    assert_true(r.torn_tail);
    bd_history_verify_result_release(&r);
    f = fopen(p, "ab");
    assert_non_null(f);
    fputs("\n", f);
    fclose(f);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, N + 1);
}

static void schema_invalid_records(void **state)
{
    /* an extra member, written canonically */
    cJSON *j = th_json_seq(H, 6);
    cJSON_AddStringToObject(j, "note", "hi");
    th_write_json_seq(H, 6, j);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_SCHEMA_INVALID, 6);
    /* a missing member */
    j = th_json_seq(H, 5);
    cJSON_DeleteItemFromObject(j, "run_id");
    th_write_json_seq(H, 5, j);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_SCHEMA_INVALID, 5);
    /* a mistyped member */
    j = th_json_seq(H, 4);
    cJSON_ReplaceItemInObject(j, "seq", cJSON_CreateString("4"));
    th_write_json_seq(H, 4, j);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_SCHEMA_INVALID, 4);
    /* a score out of range */
    j = th_json_seq(H, 3);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "score"), "score", cJSON_CreateNumber(2));
    th_write_json_seq(H, 3, j);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_SCHEMA_INVALID, 3);
    /* a duplicate member: two readers could see two values */
    size_t len;
    char *b = th_read_seq(H, 2, &len);
    char *dup = malloc(len + 32);
    int n = snprintf(dup, len + 32, "{\"case_id\":\"x\",%s", b + 1);
    th_write_seq(H, 2, dup, (size_t)n);
    free(dup);
    free(b);
    assert_tampered(H, BD_CHAIN_SCHEMA_INVALID, 2);
    /* whitespace (not canonical) */
    b = th_read_seq(H, 1, &len);
    char *spaced = malloc(len + 2);
    spaced[0] = '{';
    spaced[1] = ' ';
    memcpy(spaced + 2, b + 1, len - 1);
    th_write_seq(H, 1, spaced, len + 1);
    free(spaced);
    free(b);
    assert_tampered(H, BD_CHAIN_SCHEMA_INVALID, 1);
}

/* What a crashed conversion or append leaves besides the segments is ignored. */
static void stray_files_are_ignored(void **state)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/segments.tmp", bd_history_dir(H));
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/segments.tmp/0000000001.jsonl", bd_history_dir(H));
    th_write(p, "{\"half\":", 8);
    snprintf(p, sizeof(p), "%s/segments/README", bd_history_dir(H));
    th_write(p, "junk", 4);
    assert_intact(H, N);
    th_append(H, "case", N + 1);
    assert_intact(H, N + 1);
}

/* Other files in the directory are not records and do not matter. */
static void unrelated_files_are_ignored(void **state)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/README", bd_history_dir(H));
    th_write(p, "x", 1);
    snprintf(p, sizeof(p), "%s/12.json", bd_history_dir(H));
    th_write(p, "x", 1);
    snprintf(p, sizeof(p), "%s/0000000001.json", bd_history_dir(H));
    th_write(p, "x", 1); /* a version-1 name: ignored once segments exist */
    assert_intact(H, N);
}

/* The error message names the file, the seq and the reason. */
static void message_names_file_seq_and_reason(void **state)
{
    th_unlink_seq(H, 4);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(H, 0, &r, &err), -1);
    assert_non_null(strstr(err.file, "segments/0000000001.jsonl"));
    assert_int_equal(err.line, 4);
    assert_non_null(strstr(err.msg, "record 4"));
    assert_non_null(strstr(err.msg, "(missing)"));
    assert_int_equal(r.count, 3);
    bd_history_record rec;
    assert_int_equal(bd_history_read(H, 3, &rec, &err), 0);
    assert_string_equal(r.head, rec.hash);
    bd_history_record_release(&rec);
    bd_history_verify_result_release(&r);
}

/* Segments read in small chunks, each read ahead on its own thread while the one before is
 * checked (a chunk smaller than a record too): the same chain, the same head, and the
 * first bad record found in a later chunk is still the exact one. */
static void chunks_read_ahead_find_the_same_first_bad_record(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 300);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, 0, &r, &err), 0);
    char head[BD_HASH_BUF];
    memcpy(head, r.head, sizeof(head));
    bd_history_verify_result_release(&r);
    const size_t chunks[] = {97, 1000, 4096, 65536};
    for (size_t c = 0; c < sizeof(chunks) / sizeof(*chunks); c++) {
        bd_history_test_stream_chunk(chunks[c]);
        assert_int_equal(bd_history_verify(h, 0, &r, &err), 0);
        assert_int_equal(r.count, 300);
        assert_string_equal(r.head, head);
        bd_history_verify_result_release(&r);
    }
    bd_history_test_stream_chunk(1000);
    patch(h, 250, "\"case_id\":\"case-", "\"case_id\":\"cate-");
    assert_tampered(h, BD_CHAIN_EDITED, 250);
    th_unlink_seq(h, 199);
    assert_tampered(h, BD_CHAIN_MISSING, 199);
    bd_history_test_stream_chunk(97);
    assert_tampered(h, BD_CHAIN_MISSING, 199);
    bd_history_test_stream_chunk(0);
    assert_tampered(h, BD_CHAIN_MISSING, 199);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* A longer history through the parallel path: several windows, several threads, and a
 * failure found in a later window still names the exact record. */
static void parallel_windows_find_the_same_first_bad_record(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "case", 300);
    bd_history_test_verify_window(100);
    assert_intact(h, 300);
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(h, BD_VERIFY_KEEP_HASHES, &r, &err), 0);
    bd_history_record rec;
    assert_int_equal(bd_history_read(h, 300, &rec, &err), 0);
    assert_string_equal(r.head, rec.hash);
    bd_history_record_release(&rec);
    assert_int_equal(bd_history_read(h, 150, &rec, &err), 0);
    char hex[BD_HASH_BUF];
    bd_hex(hex, r.hashes[149], 32);
    assert_string_equal(hex, rec.hash);
    bd_history_record_release(&rec);
    bd_history_verify_result_release(&r);
    patch(h, 250, "\"case_id\":\"case-", "\"case_id\":\"cate-");
    assert_tampered(h, BD_CHAIN_EDITED, 250);
    th_unlink_seq(h, 199);
    assert_tampered(h, BD_CHAIN_MISSING, 199);
    th_write_seq(h, 101, "{}", 2);
    assert_tampered(h, BD_CHAIN_SCHEMA_INVALID, 101);
    bd_history_test_verify_window(0);
    assert_tampered(h, BD_CHAIN_SCHEMA_INVALID, 101);
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(intact_chain_verifies),
        T(flip_content_byte),
        T(flip_score),
        T(flip_score_value),
        T(edit_second_to_last),
        T(flip_prev_hash_digit),
        T(edit_seq_field),
        T(edit_last_record_needs_an_anchor),
        T(delete_middle_record),
        T(delete_first_record),
        T(delete_two_records),
        T(truncate_tail_needs_an_anchor),
        T(swap_two_records),
        T(swap_adjacent_records),
        T(insert_forged_record),
        T(insert_forged_record_and_renumber),
        T(duplicate_record_appended),
        T(first_record_duplicated_in_front),
        T(splice_from_another_history),
        T(splice_at_the_head),
        T(unparseable_records),
        T(schema_invalid_records),
        T(segment_not_a_file),
        T(segment_renamed),
        T(segment_removed),
        T(torn_tail_versus_tamper),
        T(stray_files_are_ignored),
        T(unrelated_files_are_ignored),
        T(message_names_file_seq_and_reason),
        cmocka_unit_test(parallel_windows_find_the_same_first_bad_record),
        cmocka_unit_test(chunks_read_ahead_find_the_same_first_bad_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
