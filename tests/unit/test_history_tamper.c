/* The tamper matrix: every way of changing a history on disk, each asserting the exact
 * reason and the exact first bad seq that verify reports (rules: docs/history.md). */
#include "test_history_util.h"

#include "digest.h"

#define N 10

static int setup(void **state)
{
    char *tmp;
    bd_history *h = th_history(&tmp, "case", N);
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
 * HEAD hint says what the last record's hash was. */
static void edit_second_to_last(void **state)
{
    patch(H, N - 1, "\"case_id\":\"case-", "\"case_id\":\"cate-");
    assert_tampered(H, BD_CHAIN_EDITED, N - 1);
    th_unlink_name(H, "HEAD"); /* without the hint the rule still blames N-1 */
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
    th_unlink_name(H, "0000000004.json");
    assert_tampered(H, BD_CHAIN_MISSING, 4);
}

static void delete_first_record(void **state)
{
    th_unlink_name(H, "0000000001.json");
    assert_tampered(H, BD_CHAIN_MISSING, 1);
}

/* Delete record 4 and renumber the later files down to close the gap. */
static void delete_and_renumber(void **state)
{
    th_unlink_name(H, "0000000004.json");
    for (uint64_t s = 5; s <= N; s++)
        th_rename_seq(H, s, s - 1);
    assert_tampered(H, BD_CHAIN_MISSING, 4);
}

/* Delete the first record and renumber: record 1 no longer links to the genesis. */
static void delete_first_and_renumber(void **state)
{
    th_unlink_name(H, "0000000001.json");
    for (uint64_t s = 2; s <= N; s++)
        th_rename_seq(H, s, s - 1);
    assert_tampered(H, BD_CHAIN_MISSING, 1);
}

/* Truncating the tail is invisible to the chain alone (the anchor catches it). */
static void truncate_tail_needs_an_anchor(void **state)
{
    th_unlink_name(H, "0000000010.json");
    th_unlink_name(H, "0000000009.json");
    assert_intact(H, N - 2);
}

static void swap_two_records(void **state)
{
    th_rename_seq(H, 3, 99);
    th_rename_seq(H, 7, 3);
    th_rename_seq(H, 99, 7);
    assert_tampered(H, BD_CHAIN_REORDERED, 3);
}

static void swap_adjacent_records(void **state)
{
    th_rename_seq(H, 5, 99);
    th_rename_seq(H, 6, 5);
    th_rename_seq(H, 99, 6);
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
    for (uint64_t s = N; s >= 5; s--)
        th_rename_seq(H, s, s + 1);
    th_write_json_seq(H, 5, x);
    cJSON_Delete(x);
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
        th_write_json_seq(H, s + 1, j);
        cJSON_Delete(j);
    }
    th_write_json_seq(H, 5, x);
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

static void record_zero_inserted(void **state)
{
    size_t len;
    char *b = th_read_seq(H, 1, &len);
    th_write_seq(H, 0, b, len);
    free(b);
    assert_tampered(H, BD_CHAIN_INSERTED, 0);
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

/* A foreign record as the last record: the HEAD hint tells splice from edit. */
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
    /* a symlink to a valid record, a directory, a FIFO */
    char p6[1024], p5[1024];
    th_path(p6, sizeof(p6), H, 6);
    th_path(p5, sizeof(p5), H, 5);
    unlink(p6);
    assert_int_equal(symlink(p5, p6), 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
    unlink(p6);
    assert_int_equal(mkdir(p6, 0700), 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
    rmdir(p6);
    assert_int_equal(mkfifo(p6, 0600), 0);
    assert_tampered(H, BD_CHAIN_UNPARSEABLE, 6);
    unlink(p6);
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
    /* pretty-printed (not canonical) */
    j = th_json_seq(H, 1);
    char *pretty = cJSON_Print(j);
    th_write_seq(H, 1, pretty, strlen(pretty));
    free(pretty);
    cJSON_Delete(j);
    assert_tampered(H, BD_CHAIN_SCHEMA_INVALID, 1);
}

static void stray_tmp_files_are_ignored_and_cleaned(void **state)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/0000000011.json.tmp", bd_history_dir(H));
    th_write(p, "{\"half\":", 8);
    snprintf(p, sizeof(p), "%s/0000000003.json.tmp", bd_history_dir(H));
    th_write(p, "junk", 4);
    snprintf(p, sizeof(p), "%s/HEAD.tmp", bd_history_dir(H));
    th_write(p, "junk", 4);
    assert_intact(H, N);
    th_append(H, "case", N + 1);
    assert_false(th_exists_name(H, "0000000011.json.tmp"));
    assert_intact(H, N + 1);
    /* a directory scan (stale HEAD) removes every stray temp record */
    th_unlink_name(H, "HEAD");
    th_append(H, "case", N + 2);
    assert_false(th_exists_name(H, "0000000003.json.tmp"));
    assert_intact(H, N + 2);
}

/* Other files in the directory are not records and do not matter. */
static void unrelated_files_are_ignored(void **state)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/README", bd_history_dir(H));
    th_write(p, "x", 1);
    snprintf(p, sizeof(p), "%s/12.json", bd_history_dir(H));
    th_write(p, "x", 1);
    assert_intact(H, N);
}

/* The error message names the file, the seq and the reason. */
static void message_names_file_seq_and_reason(void **state)
{
    th_unlink_name(H, "0000000004.json");
    bd_history_verify_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_history_verify(H, 0, &r, &err), -1);
    assert_non_null(strstr(err.file, "0000000004.json"));
    assert_non_null(strstr(err.msg, "record 4"));
    assert_non_null(strstr(err.msg, "(missing)"));
    assert_int_equal(r.count, 3);
    bd_history_record rec;
    assert_int_equal(bd_history_read(H, 3, &rec, &err), 0);
    assert_string_equal(r.head, rec.hash);
    bd_history_record_release(&rec);
    bd_history_verify_result_release(&r);
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
    th_unlink_name(h, "0000000199.json");
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
        T(delete_and_renumber),
        T(delete_first_and_renumber),
        T(truncate_tail_needs_an_anchor),
        T(swap_two_records),
        T(swap_adjacent_records),
        T(insert_forged_record),
        T(insert_forged_record_and_renumber),
        T(duplicate_record_appended),
        T(record_zero_inserted),
        T(splice_from_another_history),
        T(splice_at_the_head),
        T(unparseable_records),
        T(schema_invalid_records),
        T(stray_tmp_files_are_ignored_and_cleaned),
        T(unrelated_files_are_ignored),
        T(message_names_file_seq_and_reason),
        cmocka_unit_test(parallel_windows_find_the_same_first_bad_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
