/*
 * test_history_parse.c — the fast record check (hrecord_internal.h, recscan.h) against
 * the full one (cJSON + schema + canon.h): on valid records of every shape, on every
 * single-byte change, insertion and deletion of some of them, and on numbers, the two
 * agree. The fast check accepts only what the full check accepts, with the same core,
 * and the verdict verify sees (bd_history_record_check) is the full check's, reason
 * included. It must also accept the records append writes, or it saves nothing.
 */
#include "test_history_util.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrecord_internal.h"
#include "recscan.h"
#include "test_locale.h"

#define DIG_A "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DIG_B "blake3:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define FPR   "0123456789ABCDEF0123456789ABCDEF01234567"
#define HASH0 "0000000000000000000000000000000000000000000000000000000000000000"
#define HASH1 "1fe881a7f4a6d25a4ca7980f5d399384dcb1f264af67d3c58b1f4da0fdbf10f5"

/* ---- a small deterministic generator ------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rnd01(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* ---- comparing the two checks ---------------------------------------------------------- */

static size_t n_compared, n_fast;

/* The two checks agree on `buf`: fast acceptance implies full acceptance with the same
 * core, and what verify runs gives the full check's verdict, reason and core. Returns
 * whether the fast check accepted. */
static bool agree(const char *buf, size_t len)
{
    bd_rec_core fast, full, chk;
    memset(&fast, 0xA5, sizeof(fast));
    memset(&full, 0x5A, sizeof(full));
    memset(&chk, 0x3C, sizeof(chk));
    char why_full[256], why_chk[256];
    bool f = bd_history_record_fast(buf, len, &fast);
    bd_chain_reason rf = bd_history_record_full(buf, len, &full, why_full);
    bd_chain_reason rc = bd_history_record_check(buf, len, &chk, why_chk);
    n_compared++;
    if (f && rf != BD_CHAIN_OK)
        fail_msg("fast accepts what the full check refuses (%s: %s): %.*s", bd_chain_reason_str(rf),
                 why_full, (int)len, buf);
    assert_int_equal(rc, rf);
    if (rf == BD_CHAIN_OK) {
        assert_string_equal(why_chk, "");
        assert_int_equal(chk.seq, full.seq);
        assert_int_equal(chk.is_audit, full.is_audit);
        assert_memory_equal(chk.prev, full.prev, 32);
        /* The walk's visitors read the linked bytes in one pass (the fast check filling
         * the record, cJSON when it declines): the same record as the full parse. */
        bd_history_record whole, linked;
        char why[256];
        uint8_t hash[32];
        assert_int_equal(bd_history_record_parse(&whole, buf, len, why), BD_CHAIN_OK);
        assert_int_equal(bd_hash_unhex(hash, whole.hash), 0);
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_history_record_parse_linked(&linked, full.seq, buf, len, hash, &err),
                         0);
        if (!bd_history_record_same(&whole, &linked))
            fail_msg("the linked parse reads another record than the full parse: %.*s", (int)len,
                     buf);
        bd_history_record_release(&whole);
        bd_history_record_release(&linked);
    } else {
        assert_string_equal(why_chk, why_full);
    }
    if (f) {
        n_fast++;
        assert_int_equal(fast.seq, full.seq);
        assert_int_equal(fast.is_audit, full.is_audit);
        assert_memory_equal(fast.prev, full.prev, 32);
    }
    return f;
}

/* Whether the fast check's number reader is meant to take the canonical number text
 * `t` (n bytes, recscan.h): integers of up to 15 digits, decimals of up to 17 significant
 * digits from 1e-4 to below 1e15, "d.ddde-XX" of up to 15 digits down to e-99. */
static bool form_taken(const char *t, size_t n)
{
    if (n && *t == '-') {
        t++;
        n--;
    }
    const char *e = memchr(t, 'e', n);
    size_t digits = 0, lead = 0;
    bool point = false, nonzero = false;
    for (const char *c = t; c < (e ? e : t + n); c++) {
        if (*c == '.') {
            point = true;
            continue;
        }
        if (*c != '0')
            nonzero = true;
        if (nonzero)
            digits++;
        else if (point)
            lead++;
    }
    if (e)
        return e[1] == '-' && atoi(e + 2) <= 99 && digits <= 15;
    if (!point)
        return digits <= 15;
    return digits <= 17 && lead <= 3 && strchr(t, '.') - t <= 15;
}

/* Every number of the record (outside strings) is of a form the fast check takes. */
static bool numbers_taken(const char *buf, size_t len)
{
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        if (in_str) {
            if (buf[i] == '\\')
                i++;
            else if (buf[i] == '"')
                in_str = false;
        } else if (buf[i] == '"') {
            in_str = true;
        } else if (buf[i] == '-' || (buf[i] >= '0' && buf[i] <= '9')) {
            size_t j = i;
            while (j < len && strchr("0123456789.e+-", buf[j]))
                j++;
            if (!form_taken(buf + i, j - i))
                return false;
            i = j - 1;
        }
    }
    return true;
}

/* ---- records of every shape ------------------------------------------------------------ */

typedef struct shape {
    int version;    /* 1 or 2 */
    bool audit;     /* an audit record */
    bool origin;    /* version 2 with an origin */
    int n_bd, n_fm; /* breakdown entries, failure modes */
    bool fm_detail; /* failure modes carry a detail */
    bool nulls;     /* the nullable members null */
    int strings;    /* which set of strings (escapes, unicode) */
    double score, cost, bvalue;
    double wall;
    uint64_t seq;
} shape;

static const char *const detail_strings[] = {
    "plain",
    "quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f",
    "ctl \x01\x02\x1f del \x7f end",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xe2\x80\xa8 \xef\xbf\xbd",
    "",
    "{\"json\":[1,2]} \\u0041 not an escape",
};
#define N_STRINGS (sizeof(detail_strings) / sizeof(detail_strings[0]))

static const char *const bd_keys[] = {
    "cve_delta", "recipe_match", "a", "caf\xc3\xa9", "tab\there", "z\"q", "B", "~tilde",
};
#define N_BD_KEYS (sizeof(bd_keys) / sizeof(bd_keys[0]))

static cJSON *make_score(const shape *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *bd = cJSON_AddObjectToObject(o, "breakdown");
    for (int i = 0; i < s->n_bd; i++)
        cJSON_AddNumberToObject(bd, bd_keys[(i + s->strings) % N_BD_KEYS],
                                i == 0 ? s->bvalue : (double)i / (s->n_bd + 1));
    cJSON_AddNumberToObject(o, "cost_usd", s->cost);
    cJSON *fms = cJSON_AddArrayToObject(o, "failure_modes");
    static const char *const sev[] = {"block", "warn", "info"};
    for (int i = 0; i < s->n_fm; i++) {
        cJSON *fm = cJSON_CreateObject();
        cJSON_AddStringToObject(fm, "code", i % 2 ? "cve.not_removed" : "x");
        if (s->fm_detail)
            cJSON_AddStringToObject(fm, "detail", detail_strings[(s->strings + i) % N_STRINGS]);
        cJSON_AddStringToObject(fm, "severity", sev[i % 3]);
        cJSON_AddItemToArray(fms, fm);
    }
    cJSON_AddBoolToObject(o, "passed", s->score >= 0.5);
    cJSON_AddNumberToObject(o, "score", s->score);
    cJSON_AddNumberToObject(o, "wall_clock_ms", s->wall);
    return o;
}

/* The canonical bytes of a record of shape `s` (caller frees). */
static char *make_record(const shape *s, size_t *len)
{
    cJSON *r = cJSON_CreateObject();
    const char *harness = s->strings % 2 ? "0.1.0-rc\"1\\x" : "0.1.0";
    cJSON_AddNumberToObject(r, "schema_version", s->version);
    cJSON_AddNumberToObject(r, "seq", (double)s->seq);
    cJSON_AddStringToObject(r, "harness_version", harness);
    if (s->nulls)
        cJSON_AddNullToObject(r, "operator_fingerprint");
    else
        cJSON_AddStringToObject(r, "operator_fingerprint", FPR);
    cJSON_AddStringToObject(r, "prev_hash", s->seq == 1 ? HASH0 : HASH1);
    if (s->audit) {
        if (s->nulls)
            cJSON_AddNullToObject(r, "task_class");
        else
            cJSON_AddStringToObject(r, "task_class", "vuln-remediation");
        cJSON_AddStringToObject(r, "kind", "audit");
        cJSON_AddStringToObject(r, "event", s->strings % 2 ? "promote.refused" : "x");
        cJSON_AddStringToObject(r, "detail", detail_strings[s->strings % N_STRINGS]);
        cJSON_AddStringToObject(r, "at", "2026-05-12T14:00:00.123456789Z");
    } else {
        cJSON_AddStringToObject(r, "task_class", "vuln-remediation");
        cJSON_AddStringToObject(r, "run_id", s->strings % 2 ? "20260512T140000Z-ab12" : "r");
        cJSON_AddStringToObject(r, "case_id", "ghsa-demo-0002-lodash");
        cJSON_AddStringToObject(r, "case_digest", DIG_A);
        if (s->nulls)
            cJSON_AddNullToObject(r, "cassette_digest");
        else
            cJSON_AddStringToObject(r, "cassette_digest", DIG_B);
        cJSON_AddStringToObject(r, "isolation_class", s->seq % 2 ? "namespaces" : "subprocess");
        cJSON_AddBoolToObject(r, "provenance_verified", s->seq % 3 != 0);
        cJSON_AddStringToObject(r, "started_at", "2026-05-12T14:00:00Z");
        cJSON_AddStringToObject(r, "finished_at", "2024-02-29T23:59:60.5Z");
        cJSON_AddItemToObject(r, "score", make_score(s));
        if (s->version == 1) {
            cJSON_AddStringToObject(r, "rubric_digest", DIG_B);
        } else {
            cJSON_AddStringToObject(r, "task_class_digest", DIG_B);
            cJSON_AddStringToObject(r, "run_scope", s->seq % 2 ? "full" : "subset");
            cJSON_AddNumberToObject(r, "run_cases", (double)(s->seq % 50 + 1));
        }
        if (s->origin) {
            cJSON *o = cJSON_AddObjectToObject(r, "origin");
            cJSON_AddStringToObject(o, "bundle_record_hash", HASH1);
            cJSON_AddStringToObject(o, "host", "node-7.example");
            cJSON_AddStringToObject(o, "run_id", "20260512T140000Z-ab12");
            cJSON_AddNumberToObject(o, "shard", (double)(s->seq % 4));
            cJSON_AddNumberToObject(o, "shards", 4);
        }
    }
    char *out = bd_canon_json(r, len);
    cJSON_Delete(r);
    assert_non_null(out);
    return out;
}

static const double plain_numbers[] = {
    0,
    1,
    0.5,
    0.1,
    0.25,
    0.01,
    0.0125,
    0.81730769230769229,
    1.0 / 3.0,
    2.0 / 3.0,
    0.1 + 0.2,
    0.0001,
    0.00012345678901234567,
    0.9999999999999999,
    0.30000000000000004,
    0.123456789012345,
    0.1234567890123456,
    0.12345678901234568,
};
#define N_PLAIN (sizeof(plain_numbers) / sizeof(plain_numbers[0]))

static shape base_shape(int i)
{
    shape s = {0};
    s.version = i % 5 == 0 ? 1 : 2;
    s.audit = i % 7 == 3;
    s.origin = s.version == 2 && i % 3 == 1;
    s.n_bd = i % 4;
    s.n_fm = i % 3;
    s.fm_detail = i % 2 == 0;
    s.nulls = i % 4 == 1;
    s.strings = i % (int)N_STRINGS;
    s.score = plain_numbers[i % N_PLAIN];
    s.bvalue = plain_numbers[(i * 7 + 3) % N_PLAIN];
    s.cost = i % 6 == 0   ? 1e9
             : i % 6 == 1 ? 123.456
             : i % 6 == 2 ? 12.5
                          : plain_numbers[i % N_PLAIN];
    s.wall = i % 4 == 0 ? 0 : i % 4 == 1 ? 1234 : i % 4 == 2 ? 999999999999999 : 86400000;
    s.seq = i % 5 == 0 ? 1 : i % 5 == 1 ? 9999999999ull : (uint64_t)i + 2;
    return s;
}

/* Every shape is valid, in both checks, and the fast one takes it unless a number is
 * written with an exponent. */
static void valid_records_agree(void **state)
{
    (void)state;
    size_t declined = 0;
    for (int i = 0; i < 420; i++) {
        shape s = base_shape(i);
        size_t len;
        char *rec = make_record(&s, &len);
        bd_rec_core core;
        char why[256];
        if (bd_history_record_full(rec, len, &core, why) != BD_CHAIN_OK)
            fail_msg("shape %d invalid: %s: %s", i, why, rec);
        if (!agree(rec, len)) {
            declined++;
            if (numbers_taken(rec, len))
                fail_msg("the fast check declines a plain record: %s", rec);
        }
        free(rec);
    }
    assert_true(declined == 0);
}

/* Numbers from everywhere in a score: exponents ("1e-07", "1e+20"), denormals, the caps,
 * random doubles. */
static void numbers_in_records_agree(void **state)
{
    (void)state;
    static const double special[] = {
        1e-7,
        1e-5,
        0.00001,
        0.000099999999999999991,
        1e9,
        1e9 + 0.5,
        1e15,
        1e16,
        1e20,
        9007199254740991.0,
        9007199254740992.0,
        5e-324,
        2.2250738585072014e-308,
        1e300,
        -0.5,
        -1,
        -0.0,
        1.0000000000000002,
        0.99999999999999989,
        123456789012345.6,
        999999999999999.9,
        4503599627370495.5,
        0.1e-3,
        3.0e-4,
    };
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
        for (int where = 0; where < 3; where++) {
            shape s = base_shape(2);
            s.n_bd = 2;
            if (where == 0)
                s.score = special[i];
            else if (where == 1)
                s.cost = special[i];
            else
                s.bvalue = special[i];
            size_t len;
            char *rec = make_record(&s, &len);
            bool f = agree(rec, len);
            if (!f && numbers_taken(rec, len) && special[i] >= 0 && special[i] <= 1)
                fail_msg("declined: %s", rec);
            free(rec);
        }
    }
    for (int i = 0; i < 5000; i++) {
        shape s = base_shape(i);
        s.audit = false;
        uint64_t r = rnd();
        s.score = r % 3 == 0 ? rnd01() : r % 3 == 1 ? (double)(rnd() % 1000) / 1000 : rnd01() / 7;
        s.cost =
            i % 2 ? rnd01() * pow(10, (double)(rnd() % 24) - 8) : (double)(rnd() % 100000) / 100;
        s.bvalue = (double)(rnd() % 1000000) / 999983.0;
        s.n_bd = 1 + i % 3;
        size_t len;
        char *rec = make_record(&s, &len);
        bool f = agree(rec, len);
        if (!f && numbers_taken(rec, len) && s.cost <= 1e9)
            fail_msg("declined: %s", rec);
        free(rec);
    }
}

/* The canonical text of d (canon.c) in buf. */
static void canon_number(char buf[64], double d)
{
    cJSON *n = cJSON_CreateNumber(d);
    size_t len;
    char *t = bd_canon_json(n, &len);
    cJSON_Delete(n);
    assert_non_null(t);
    assert_true(len < 64);
    memcpy(buf, t, len + 1);
    free(t);
}

/* The number reader alone: it accepts a text only when canon.c would print that text
 * for the double strtod reads, and then returns that double. */
static void check_number_text(const char *text, bool expect_accept)
{
    bd_rscan s = {text, text + strlen(text)};
    double v;
    bool ok = bd_rs_number(&s, &v);
    if (ok) {
        if (s.p != s.end)
            return; /* took a prefix: the record's next byte decides */
        double d = strtod(text, NULL);
        char c[64];
        canon_number(c, d);
        if (strcmp(c, text) != 0 || memcmp(&v, &d, sizeof(d)) != 0)
            fail_msg("accepted \"%s\": canonical \"%s\", value %.17g vs %.17g", text, c, v, d);
    } else if (expect_accept) {
        fail_msg("declined the canonical \"%s\"", text);
    }
}

static void number_reader(void **state)
{
    (void)state;
    char buf[96];
    /* canonical texts of random doubles: accepted when plain and in range */
    for (int i = 0; i < 100000; i++) {
        double d;
        switch (i % 5) {
        case 0:
            d = rnd01();
            break;
        case 1:
            d = rnd01() * pow(10, (double)(rnd() % 22) - 5);
            break;
        case 2: {
            uint64_t bits = rnd();
            memcpy(&d, &bits, sizeof(d));
            if (!isfinite(d))
                d = 0.5;
            break;
        }
        case 3:
            d = (double)(rnd() % 100000000) / pow(10, (double)(rnd() % 12));
            break;
        default:
            d = nextafter(rnd01(), i % 2 ? 2.0 : -1.0);
            break;
        }
        canon_number(buf, d);
        double a = fabs(d);
        check_number_text(buf, form_taken(buf, strlen(buf)) && (a == trunc(a) || a < 1e15));
        /* longer spellings of the same double are never canonical */
        char alt[96];
        for (int p = 15; p <= 17; p++) {
            snprintf(alt, sizeof(alt), "%.*g", p, d);
            if (strcmp(alt, buf) != 0)
                check_number_text(alt, false);
        }
        snprintf(alt, sizeof(alt), "%.17f", d);
        check_number_text(alt, false);
    }
    /* random digit strings: whatever is accepted is canonical */
    for (int i = 0; i < 150000; i++) {
        int n = 1 + (int)(rnd() % 18), point = (int)(rnd() % (unsigned)(n + 4)), o = 0;
        if (rnd() % 4 == 0)
            buf[o++] = '-';
        if (point >= n) { /* 0.000ddd */
            buf[o++] = '0';
            buf[o++] = '.';
            for (int z = 0; z < point - n; z++)
                buf[o++] = '0';
            point = 0;
        }
        for (int k = 0; k < n; k++) {
            if (k == point && k > 0)
                buf[o++] = '.';
            buf[o++] = (char)('0' + (k == 0 && n > 1 && point != 0 ? 1 + rnd() % 9 : rnd() % 10));
        }
        buf[o] = '\0';
        check_number_text(buf, false);
    }
    /* the reader's own edges */
    static const char *const yes[] = {"0",
                                      "1",
                                      "-1",
                                      "999999999999999",
                                      "0.5",
                                      "0.0001",
                                      "0.8173076923076923",
                                      "0.30000000000000004",
                                      "0.12345678901234568",
                                      "0.1",
                                      "-0.1",
                                      "123.456",
                                      "0.00012345678901234567",
                                      "348471824397655.2",
                                      "348471824397655.25",
                                      "1e-07",
                                      "1.5e-05",
                                      "-2.5e-10",
                                      "1.23456789012345e-22",
                                      "-9.13048979943743e-15",
                                      "1e-99"};
    static const char *const no[] = {"-0",
                                     "0.81730769230769229",
                                     "1e-100",
                                     "1.5e-5",
                                     "1.5e-005",
                                     "1.50e-05",
                                     "15e-06",
                                     "1e+20",
                                     "1E-07",
                                     "0.1e-05",
                                     "1.234567890123456e-05",
                                     "01",
                                     "1.0",
                                     "1.",
                                     ".5",
                                     "0.00001",
                                     "1e9",
                                     "1E9",
                                     "1000000000000000",
                                     "0.10",
                                     "0.1000000000000000055511151231257827",
                                     "0.29999999999999999",
                                     "-",
                                     "",
                                     "+1",
                                     "0x1"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        check_number_text(yes[i], true);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        bd_rscan s = {no[i], no[i] + strlen(no[i])};
        double v;
        if (bd_rs_number(&s, &v) && s.p == s.end)
            fail_msg("accepted \"%s\"", no[i]);
    }
}

/* The string reader: exactly canon.c's escapes. */
static void string_reader(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool ok;
    } cases[] = {
        {"\"\"", true},
        {"\"a/b\"", true},
        {"\"\\\"\\\\\\b\\f\\n\\r\\t\"", true},
        {"\"\\u0001\\u001f\\u000b\"", true},
        {"\"\x7f\xc3\xa9\xf0\x9f\x98\x80\"", true},
        {"\"\\/\"", false},
        {"\"\\u0000\"", false},
        {"\"\\u0008\"", false},
        {"\"\\u000a\"", false},
        {"\"\\u001F\"", false},
        {"\"\\u0020\"", false},
        {"\"\\u00e9\"", false},
        {"\"\\ud83d\\ude00\"", false},
        {"\"\x01\"", false},
        {"\"\t\"", false},
        {"\"\xc3\"", false},
        {"\"\xc0\xaf\"", false},
        {"\"\xed\xa0\x80\"", false},
        {"\"\xf4\x90\x80\x80\"", false},
        {"\"abc", false},
        {"\"abc\\", false},
        {"\"\\u00", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char dec[64];
        size_t n;
        bd_rscan s = {cases[i].text, cases[i].text + strlen(cases[i].text)};
        bool ok = bd_rs_string(&s, dec, sizeof(dec), &n);
        if (ok != cases[i].ok)
            fail_msg("string %zu (%s): %d", i, cases[i].text, ok);
        if (!ok)
            continue;
        assert_ptr_equal(s.p, s.end);
        /* what canon.c writes for the decoded bytes is the text */
        cJSON *str = cJSON_CreateString(dec);
        size_t len;
        char *c = bd_canon_json(str, &len);
        cJSON_Delete(str);
        assert_non_null(c);
        assert_string_equal(c, cases[i].text);
        free(c);
    }
    /* every 8-byte window position of a special byte in a long plain run */
    static const char specials[] = {'"', '\\', 0x01, 0x1f, (char)0x80, (char)0xff};
    for (size_t k = 0; k < sizeof(specials); k++) {
        for (int at = 0; at < 24; at++) {
            char text[40], dec[64];
            text[0] = '"';
            for (int j = 1; j < 31; j++)
                text[j] = j - 1 == at ? specials[k] : 'a';
            text[31] = '"';
            size_t n;
            bd_rscan s = {text, text + 32};
            bool ok = bd_rs_string(&s, dec, sizeof(dec), &n);
            /* '"' ends the string early (then the rest is not a record), the others are
             * never canonical raw */
            if (specials[k] == '"')
                assert_true(ok && n == (size_t)at);
            else
                assert_false(ok && s.p == text + 32);
        }
    }
    /* a string longer than the room: declined */
    char dec[8];
    size_t n;
    const char *t = "\"abcdefghij\"";
    bd_rscan s = {t, t + strlen(t)};
    assert_false(bd_rs_string(&s, dec, sizeof(dec), &n));
}

/* Bytes tried in place of every byte (and each byte + 1 and - 1), and inserted before
 * every byte. */
static const unsigned char replace_bytes[] = {
    '"', '\\', ',', ':', '{', '}',  '0',  '1',  '9',  '.',  'e',
    '-', 'a',  'u', 'n', ' ', 0x00, 0x1f, 0x7f, 0x80, 0xc3,
};
static const unsigned char insert_bytes[] = {'"', '\\', ',', '0', '.', 'e', ' ', 0x80};

static void mutate_all(const char *rec, size_t len)
{
    char *buf = malloc(len + 2);
    assert_non_null(buf);
    size_t nr = sizeof(replace_bytes);
    for (size_t i = 0; i <= len; i++) {
        if (i < len) {
            /* deletion of byte i */
            memcpy(buf, rec, i);
            memcpy(buf + i, rec + i + 1, len - i - 1);
            agree(buf, len - 1);
            /* replacement of byte i */
            for (size_t k = 0; k < nr + 2; k++) {
                unsigned char b = k < nr    ? replace_bytes[k]
                                  : k == nr ? (unsigned char)(rec[i] + 1)
                                            : (unsigned char)(rec[i] - 1);
                if ((unsigned char)rec[i] == b)
                    continue;
                memcpy(buf, rec, len);
                buf[i] = (char)b;
                agree(buf, len);
            }
        }
        /* insertion before byte i */
        for (size_t k = 0; k < sizeof(insert_bytes); k++) {
            memcpy(buf, rec, i);
            buf[i] = (char)insert_bytes[k];
            memcpy(buf + i + 1, rec + i, len - i);
            agree(buf, len + 1);
        }
    }
    free(buf);
}

static void single_byte_mutations_agree(void **state)
{
    (void)state;
    /* a score record (v2 with breakdown, failure modes, escapes), a v1 one, an audit
     * record, one with an origin and unicode */
    static const int shapes[] = {2, 5, 3, 4, 13};
    for (size_t j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++) {
        shape s = base_shape(shapes[j]);
        s.n_bd = s.audit ? 0 : 2;
        s.n_fm = s.audit ? 0 : 2;
        s.fm_detail = true;
        size_t len;
        char *rec = make_record(&s, &len);
        size_t before = n_fast;
        assert_true(agree(rec, len));
        mutate_all(rec, len);
        assert_true(n_fast > before);
        free(rec);
    }
}

/* The i-th item (depth first, root excluded) of `j`, counting down *i; its parent in
 * *parent. */
static cJSON *nth_item(cJSON *j, int *i, cJSON **parent)
{
    for (cJSON *c = j->child; c; c = c->next) {
        if ((*i)-- == 0) {
            *parent = j;
            return c;
        }
        cJSON *in = nth_item(c, i, parent);
        if (in)
            return in;
    }
    return NULL;
}

/* A value of another type or range in place of item `c` (mutation k), or NULL. */
static cJSON *replacement(int k)
{
    switch (k) {
    case 0:
        return cJSON_CreateNull();
    case 1:
        return cJSON_CreateTrue();
    case 2:
        return cJSON_CreateNumber(0);
    case 3:
        return cJSON_CreateNumber(-1);
    case 4:
        return cJSON_CreateNumber(1.5);
    case 5:
        return cJSON_CreateNumber(2);
    case 6:
        return cJSON_CreateNumber(1e10);
    case 7:
        return cJSON_CreateNumber(65536);
    case 8:
        return cJSON_CreateString("x");
    case 9:
        return cJSON_CreateString("");
    case 10:
        return cJSON_CreateString("llm_confidence");
    case 11:
        return cJSON_CreateObject();
    case 12:
        return cJSON_CreateArray();
    case 13:
        return cJSON_CreateString(HASH1);
    case 14:
        return cJSON_CreateString(DIG_A);
    case 15:
        return cJSON_CreateString("2026-02-30T00:00:00Z");
    default:
        return NULL;
    }
}
#define N_REPLACEMENTS 16

/* Every member and element of some records replaced by values of every type, removed,
 * or joined by an unknown member: both checks give the same verdict (most are invalid,
 * and the fast check must refuse exactly those). */
static void schema_mutations_agree(void **state)
{
    (void)state;
    static const int shapes[] = {2, 5, 3, 4, 13, 22};
    for (size_t j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++) {
        shape s = base_shape(shapes[j]);
        s.n_bd = s.audit ? 0 : 2;
        s.n_fm = s.audit ? 0 : 2;
        s.fm_detail = true;
        size_t len;
        char *rec = make_record(&s, &len);
        cJSON *base = cJSON_ParseWithLength(rec, len);
        assert_non_null(base);
        free(rec);
        for (int i = 0;; i++) {
            int at = i;
            cJSON *parent;
            if (!nth_item(base, &at, &parent))
                break;
            for (int k = 0; k <= N_REPLACEMENTS + 1; k++) {
                cJSON *t = cJSON_Duplicate(base, 1);
                at = i;
                cJSON *c = nth_item(t, &at, &parent);
                if (k < N_REPLACEMENTS) {
                    cJSON *r = replacement(k);
                    if (c->string) {
                        r->string = strdup(c->string);
                        assert_non_null(r->string);
                    }
                    assert_true(cJSON_ReplaceItemViaPointer(parent, c, r));
                } else if (k == N_REPLACEMENTS) {
                    cJSON_Delete(cJSON_DetachItemViaPointer(parent, c));
                } else if (cJSON_IsObject(c)) {
                    cJSON_AddNumberToObject(c, "zzz", 1);
                }
                char *b = bd_canon_json(t, &len);
                if (b) {
                    agree(b, len);
                    free(b);
                }
                cJSON_Delete(t);
            }
        }
        cJSON_Delete(base);
    }
}

/* Records as append writes them, read back from a history: all taken by the fast check. */
static void appended_records_are_fast(void **state)
{
    (void)state;
    char *tmp;
    bd_history *h = th_history(&tmp, "app", 60);
    for (int i = 0; i < 6; i++) {
        bd_history_audit_fields a = {i % 2 ? "promote.refused" : "x",
                                     i % 3 ? "vuln" : NULL,
                                     detail_strings[i % N_STRINGS],
                                     i % 2 ? FPR : NULL,
                                     "0.1.0",
                                     "2026-05-12T14:00:00Z"};
        bd_err err = BD_ERR_INIT;
        assert_int_equal(bd_history_append_audit(h, &a, NULL, NULL, &err), 0);
    }
    for (uint64_t seq = 1; seq <= 66; seq++) {
        size_t len;
        char *rec = th_read_seq(h, seq, &len);
        if (!agree(rec, len))
            fail_msg("record %llu declined: %.*s", (unsigned long long)seq, (int)len, rec);
        free(rec);
    }
    bd_history_free(h);
    th_rmtree(tmp);
    free(tmp);
}

/* The verdicts do not depend on the process locale (cJSON reads numbers with the
 * locale's decimal point). */
static void comma_locale_agrees(void **state)
{
    (void)state;
    if (bd_test_comma_locale("history_parse") != 0) {
        skip();
        return;
    }
    for (int i = 0; i < 200; i++) {
        shape s = base_shape(i);
        size_t len;
        char *rec = make_record(&s, &len);
        assert_true(agree(rec, len) || !numbers_taken(rec, len));
        free(rec);
    }
    setlocale(LC_ALL, "C");
}

static int report(void **state)
{
    (void)state;
    printf("# compared %zu inputs, the fast check took %zu\n", n_compared, n_fast);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_records_agree),
        cmocka_unit_test(numbers_in_records_agree),
        cmocka_unit_test(number_reader),
        cmocka_unit_test(string_reader),
        cmocka_unit_test(single_byte_mutations_agree),
        cmocka_unit_test(schema_mutations_agree),
        cmocka_unit_test(appended_records_are_fast),
        cmocka_unit_test(comma_locale_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, report);
}
