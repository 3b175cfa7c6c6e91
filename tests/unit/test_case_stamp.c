/* A case's stamps (case_stamp.h, docs/provenance.md#unchanged-cases): the stamps the scan
 * takes are exactly those bd_case_restamp takes again from the scan's shape, without a
 * listing; every change a writer can make to a case (bytes, mode, names, a link swapped
 * in) changes them, even with its modification time put back; only old enough times are
 * settled; a shape that is not one the walk could have made is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "case_stamp.h"
#include "digest.h"
#include "err.h"

typedef struct fixture {
    char cases[64];
    int cases_fd;
    bd_case_scanner *sc;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    bd_err err = BD_ERR_INIT;
    if (!f)
        return -1;
    strcpy(f->cases, "/tmp/bd-case-stamp-XXXXXX");
    if (!mkdtemp(f->cases))
        return -1;
    f->cases_fd = open(f->cases, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (f->cases_fd < 0 || bd_case_scanner_new(&f->sc, &err) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    close(f->cases_fd);
    bd_case_scanner_free(f->sc);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->cases);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* ---- helpers ----------------------------------------------------------------------- */

static void put_file(const fixture *f, const char *rel, const char *text, mode_t mode)
{
    int fd = openat(f->cases_fd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
    assert_int_equal(fchmodat(f->cases_fd, rel, mode, 0), 0); /* whatever the umask */
}

static void put_dir(const fixture *f, const char *rel)
{
    assert_int_equal(mkdirat(f->cases_fd, rel, 0755), 0);
}

/* A case as a bench holds one, with an empty directory and a top-level file that sorts
 * between a directory's name and its entries ("input.txt" before "input/"). */
static void make_case(const fixture *f, const char *id)
{
    char p[128];
#define AT(rel) (snprintf(p, sizeof(p), "%s/%s", id, rel), p)
    put_dir(f, id);
    put_file(f, AT("case.yaml"), "schema_version: 2\ncase_id: c\n", 0644);
    put_file(f, AT("cassette.json"), "{\"output\": 42}\n", 0644);
    put_file(f, AT("provenance.yaml"), "schema_version: 2\n", 0644);
    put_file(f, AT("input.txt"), "notes\n", 0644);
    put_dir(f, AT("input"));
    put_file(f, AT("input/prompt.txt"), "what is six times seven?\n", 0644);
    put_dir(f, AT("expected"));
    put_file(f, AT("expected/answer.txt"), "42\n", 0644);
    put_dir(f, AT("empty"));
#undef AT
}

/* The walk's order: the case directory, provenance.yaml (stamped as the case directory is
 * listed, before any entry is visited), then each entry in bytewise path order, a
 * directory before its entries. */
static const char make_case_shape[] = "provenance.yaml\0"
                                      "case.yaml\0"
                                      "cassette.json\0"
                                      "empty/\0"
                                      "expected/\0"
                                      "expected/answer.txt\0"
                                      "input.txt\0"
                                      "input/\0"
                                      "input/prompt.txt\0";

/* bd_case_scan of case `id` with its stamps into *s; returns the scan's result. */
static int scan(const fixture *f, const char *id, bd_case_stamps *s, char digest[BD_DIGEST_BUF])
{
    bd_err err = BD_ERR_INIT;
    bd_scanned_case r = {.yaml_max = 1u << 20, .stamps = s};
    int rc = bd_case_scan(f->sc, &r, f->cases_fd, f->cases, id, &err);
    if (digest)
        memcpy(digest, r.digest, BD_DIGEST_BUF);
    bd_case_scan_release(&r);
    return rc;
}

/* bd_case_stamp_dir then bd_case_restamp of case `id` from `shape`. */
static int restamp(const fixture *f, const char *id, const char *shape, size_t len,
                   bd_case_stamps *s)
{
    struct stat dst;
    if (bd_case_stamp_dir(f->cases_fd, id, &dst) != 0)
        return -1;
    return bd_case_restamp(s, f->cases_fd, id, &dst, shape, len);
}

static void sleep_ms(long ms)
{
    struct timespec t = {0, ms * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* The file system's present: the change time a write outside the cases sets. */
static struct timespec fs_now(const fixture *f)
{
    struct stat st;
    int fd = openat(f->cases_fd, "tick", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(futimens(fd, NULL), 0);
    assert_int_equal(fstat(fd, &st), 0);
    close(fd);
    return st.st_ctim;
}

/* Wait until the file system's clock has moved past every time already stamped, so that
 * the change that follows sets times of its own (a tick is milliseconds here, a second or
 * two on a coarse file system). */
static void wait_fs_tick(const fixture *f)
{
    struct timespec t0 = fs_now(f), t;
    do {
        sleep_ms(5);
        t = fs_now(f);
    } while (t.tv_sec == t0.tv_sec && t.tv_nsec == t0.tv_nsec);
}

/* ---- the scan's stamps are the restamp's ------------------------------------------- */

static void the_scan_and_the_restamp_take_the_same_stamps(void **state)
{
    fixture *f = *state;
    make_case(f, "c1");
    bd_case_stamps s, again;
    char digest[BD_DIGEST_BUF];
    assert_int_equal(scan(f, "c1", &s, digest), 0);
    assert_true(s.ok);
    assert_true(strncmp(digest, "blake3:", 7) == 0); /* the digest is made as ever */
    struct stat dst;
    assert_int_equal(bd_case_stamp_dir(f->cases_fd, "c1", &dst), 0);
    assert_int_equal(s.dir_dev, (uint64_t)dst.st_dev);
    assert_int_equal(s.dir_ino, (uint64_t)dst.st_ino);

    memset(&again, 0xa5, sizeof(again));
    assert_int_equal(bd_case_restamp(&again, f->cases_fd, "c1", &dst, s.shape, s.shape_len), 0);
    assert_true(again.ok);
    assert_int_equal(again.dir_dev, s.dir_dev);
    assert_int_equal(again.dir_ino, s.dir_ino);
    assert_int_equal(again.shape_len, s.shape_len);
    assert_memory_equal(again.shape, s.shape, s.shape_len);
    assert_memory_equal(again.digest, s.digest, sizeof(s.digest));

    /* A second scan of the unchanged case: the same stamps again. */
    bd_case_stamps s2;
    assert_int_equal(scan(f, "c1", &s2, NULL), 0);
    assert_memory_equal(s2.digest, s.digest, sizeof(s.digest));

    /* Another case's stamps are not these, though its bytes are the same. */
    make_case(f, "c2");
    bd_case_stamps other;
    assert_int_equal(scan(f, "c2", &other, NULL), 0);
    assert_memory_not_equal(other.digest, s.digest, sizeof(s.digest));
}

static void the_shape_is_every_path_in_walk_order(void **state)
{
    fixture *f = *state;
    make_case(f, "c1");
    bd_case_stamps s;
    assert_int_equal(scan(f, "c1", &s, NULL), 0);
    assert_true(s.ok);
    assert_int_equal(s.shape_len, sizeof(make_case_shape) - 1);
    assert_memory_equal(s.shape, make_case_shape, sizeof(make_case_shape) - 1);
    /* A case without provenance.yaml: nothing of it in the shape. */
    assert_int_equal(unlinkat(f->cases_fd, "c1/provenance.yaml", 0), 0);
    assert_int_equal(scan(f, "c1", &s, NULL), 0);
    size_t skip = sizeof("provenance.yaml");
    assert_int_equal(s.shape_len, sizeof(make_case_shape) - 1 - skip);
    assert_memory_equal(s.shape, make_case_shape + skip, s.shape_len);
}

/* ---- every change changes the stamps ------------------------------------------------ */

/* Rewrite `rel` with the bytes it holds, then put its access and modification times
 * back: only its change time tells. */
static void rewrite_same_bytes_keep_mtime(const fixture *f, const char *rel)
{
    struct stat before, after;
    char buf[256];
    int fd = openat(f->cases_fd, rel, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(fstat(fd, &before), 0);
    close(fd);
    wait_fs_tick(f);
    fd = openat(f->cases_fd, rel, O_WRONLY | O_TRUNC | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, (size_t)n), n);
    close(fd);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(f->cases_fd, rel, times, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(fstatat(f->cases_fd, rel, &after, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_size, before.st_size);
    assert_int_equal(after.st_mode, before.st_mode);
    assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    assert_true(after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
                after.st_ctim.tv_nsec != before.st_ctim.tv_nsec);
}

enum change {
    CH_REWRITE_KEEP_MTIME,
    CH_CHMOD_X,
    CH_NEW_FILE,
    CH_REMOVE,
    CH_RENAME_AND_BACK,
    CH_DIR_TO_LINK,
    CH_COUNT
};

static const char *const change_name[CH_COUNT] = {
    "rewrite, mtime restored", "chmod +x",
    "new file in input/",      "file removed",
    "renamed away and back",   "input/ replaced by a link to a copy"};

static void apply_change(const fixture *f, const char *id, enum change c)
{
    char p[128], q[128];
    wait_fs_tick(f);
    switch (c) {
    case CH_REWRITE_KEEP_MTIME:
        snprintf(p, sizeof(p), "%s/input/prompt.txt", id);
        rewrite_same_bytes_keep_mtime(f, p);
        break;
    case CH_CHMOD_X:
        snprintf(p, sizeof(p), "%s/expected/answer.txt", id);
        assert_int_equal(fchmodat(f->cases_fd, p, 0755, 0), 0);
        break;
    case CH_NEW_FILE:
        snprintf(p, sizeof(p), "%s/input/extra.txt", id);
        put_file(f, p, "more\n", 0644);
        break;
    case CH_REMOVE:
        snprintf(p, sizeof(p), "%s/expected/answer.txt", id);
        assert_int_equal(unlinkat(f->cases_fd, p, 0), 0);
        break;
    case CH_RENAME_AND_BACK:
        snprintf(p, sizeof(p), "%s/input/prompt.txt", id);
        snprintf(q, sizeof(q), "%s/input/prompt.txt.away", id);
        assert_int_equal(renameat(f->cases_fd, p, f->cases_fd, q), 0);
        assert_int_equal(renameat(f->cases_fd, q, f->cases_fd, p), 0);
        break;
    case CH_DIR_TO_LINK:
        /* input/ moved out of the case, a link to it in its place: the same names, the
         * same files (the same inodes even) below "input/". */
        snprintf(p, sizeof(p), "%s/input", id);
        snprintf(q, sizeof(q), "%s-input", id);
        assert_int_equal(renameat(f->cases_fd, p, f->cases_fd, q), 0);
        snprintf(q, sizeof(q), "../%s-input", id);
        assert_int_equal(symlinkat(q, f->cases_fd, p), 0);
        snprintf(p, sizeof(p), "%s/input/prompt.txt", id);
        assert_int_equal(faccessat(f->cases_fd, p, R_OK, 0), 0); /* reached through it */
        break;
    case CH_COUNT:
        break;
    }
}

static void every_change_changes_the_stamps(void **state)
{
    fixture *f = *state;
    /* 0: restamped with another digest; -1: refused (an entry of the shape is gone or is
     * no longer what it was). */
    static const int want_rc[CH_COUNT] = {0, 0, 0, -1, 0, -1};
    int missed = 0; /* every change is tried, each one missed is told */
    for (int c = 0; c < CH_COUNT; c++) {
        char id[16];
        snprintf(id, sizeof(id), "m%d", c);
        make_case(f, id);
        bd_case_stamps s, again;
        assert_int_equal(scan(f, id, &s, NULL), 0);
        assert_true(s.ok);
        /* Unchanged, the restamp agrees: what follows is the change's doing. */
        assert_int_equal(restamp(f, id, s.shape, s.shape_len, &again), 0);
        assert_memory_equal(again.digest, s.digest, sizeof(s.digest));
        apply_change(f, id, (enum change)c);
        int rc = restamp(f, id, s.shape, s.shape_len, &again);
        bool same = rc == 0 && memcmp(again.digest, s.digest, 32) == 0;
        if (rc != want_rc[c] || same) {
            print_error("%s: restamp %d (want %d), digest %s\n", change_name[c], rc, want_rc[c],
                        same ? "unchanged" : "changed");
            missed++;
        }
    }
    assert_int_equal(missed, 0);
}

/* ---- settled ------------------------------------------------------------------------ */

static void a_case_written_just_now_is_not_settled(void **state)
{
    fixture *f = *state;
    make_case(f, "c1");
    bd_case_stamps s;
    assert_int_equal(scan(f, "c1", &s, NULL), 0);
    assert_true(s.ok);
    assert_false(s.settled);
}

/* The stamps of a directory and one file in it, their times as given, taken at `now`. */
static bd_case_stamps stamps_at(time_t now, time_t dir_m, time_t dir_c, time_t file_m,
                                time_t file_c)
{
    bd_case_stamps s;
    struct stat d, fl;
    memset(&d, 0, sizeof(d));
    memset(&fl, 0, sizeof(fl));
    d.st_mode = S_IFDIR | 0755;
    d.st_ino = 10;
    d.st_mtim.tv_sec = dir_m;
    d.st_ctim.tv_sec = dir_c;
    fl.st_mode = S_IFREG | 0644;
    fl.st_ino = 11;
    fl.st_size = 3;
    fl.st_mtim.tv_sec = file_m;
    fl.st_ctim.tv_sec = file_c;
    bd_case_stamps_begin(&s, now);
    bd_case_stamps_add(&s, "", 0, &d);
    bd_case_stamps_add(&s, "case.yaml", 9, &fl);
    bd_case_stamps_end(&s);
    assert_true(s.ok);
    return s;
}

static void only_times_old_enough_are_settled(void **state)
{
    (void)state;
    time_t now = time(NULL);
    time_t old = now - BD_STAMP_SETTLE_SECONDS - 1, recent = now - 1, future = now + 3600;
    assert_true(stamps_at(now, old, old, old, old).settled);
    /* Exactly BD_STAMP_SETTLE_SECONDS older than the walk: settled. */
    time_t edge = now - BD_STAMP_SETTLE_SECONDS;
    assert_true(stamps_at(now, edge, edge, edge, edge).settled);
    /* Any one time recent, of the file or of the directory: not settled. */
    assert_false(stamps_at(now, old, old, old, recent).settled);
    assert_false(stamps_at(now, old, old, recent, old).settled);
    assert_false(stamps_at(now, old, recent, old, old).settled);
    assert_false(stamps_at(now, recent, old, old, old).settled);
    assert_false(stamps_at(now, recent, recent, recent, recent).settled);
    /* A time after the walk (a clock set back since the write): not settled. */
    assert_false(stamps_at(now, old, old, future, future).settled);
    assert_false(stamps_at(now, old, old, old, future).settled);
    /* Settled or not, the digest is of the times themselves. */
    bd_case_stamps a = stamps_at(now, old, old, old, old);
    bd_case_stamps b = stamps_at(now, old, old, old, old - 1);
    assert_memory_not_equal(a.digest, b.digest, sizeof(a.digest));
}

/* ---- malformed shapes --------------------------------------------------------------- */

static void a_malformed_shape_is_refused(void **state)
{
    fixture *f = *state;
    make_case(f, "c1");
    bd_case_stamps s;
    /* Well formed, and naming entries that are there: accepted. */
    static const char good[] = "case.yaml\0input/\0input/prompt.txt\0";
    assert_int_equal(restamp(f, "c1", good, sizeof(good) - 1, &s), 0);
    assert_true(s.ok);
    assert_int_equal(s.shape_len, sizeof(good) - 1);
    assert_memory_equal(s.shape, good, sizeof(good) - 1);

    static const struct {
        const char *shape;
        size_t len;
        const char *why;
    } bad[] = {
#define SHAPE(lit, why) {lit, sizeof(lit) - 1, why}
        {"", 0, "empty"},
        {"case.yaml", 9, "not NUL-terminated"},
        {"case.yaml\0input/", 16, "its last path not NUL-terminated"},
        SHAPE("/etc/passwd\0", "absolute"),
        SHAPE("..\0", "the parent"),
        SHAPE("../\0", "the parent, as a directory"),
        SHAPE("../c1/case.yaml\0", "through the parent, to an entry that is there"),
        SHAPE("input/../x\0", "a \"..\" part"),
        SHAPE("input/../case.yaml\0", "a \"..\" part, to an entry that is there"),
        SHAPE("a//b\0", "an empty part"),
        SHAPE("input//prompt.txt\0", "an empty part, to an entry that is there"),
        SHAPE("./x\0", "a \".\" part"),
        SHAPE("./case.yaml\0", "a \".\" part, to an entry that is there"),
        SHAPE("input/./prompt.txt\0", "a \".\" part inside"),
        SHAPE("case.yaml\0\0", "an empty path"),
        SHAPE("input//\0", "a directory with an empty part"),
        SHAPE("missing.txt\0", "a file that is not there"),
        SHAPE("case.yaml\0input/missing.txt\0", "a later file that is not there"),
        SHAPE("input\0", "a directory named as a file"),
        SHAPE("case.yaml/\0", "a file named as a directory"),
#undef SHAPE
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (restamp(f, "c1", bad[i].shape, bad[i].len, &s) != -1)
            fail_msg("a shape with %s was not refused", bad[i].why);
    }
}

/* ---- the shape's limit -------------------------------------------------------------- */

/* Case `id` with case.yaml and files whose names are the lengths in `names` (0-ended). */
static void make_long_case(const fixture *f, const char *id, const size_t *names)
{
    char p[512];
    put_dir(f, id);
    snprintf(p, sizeof(p), "%s/case.yaml", id);
    put_file(f, p, "schema_version: 2\n", 0644);
    for (int i = 0; names[i]; i++) {
        int n = snprintf(p, sizeof(p), "%s/%c", id, 'a' + i);
        memset(p + n, 'x', names[i] - 1);
        p[n + names[i] - 1] = '\0';
        put_file(f, p, "x\n", 0644);
    }
}

static void a_shape_over_the_limit_is_not_kept(void **state)
{
    fixture *f = *state;
    /* "case.yaml\0" (10) + 3 × 201 + 187: exactly BD_STAMP_SHAPE_MAX. */
    static const size_t fits[] = {200, 200, 200, 186, 0};
    static const size_t over[] = {200, 200, 200, 187, 0};
    assert_int_equal(10 + 3 * 201 + 187, BD_STAMP_SHAPE_MAX);
    make_long_case(f, "fits", fits);
    make_long_case(f, "over", over);
    bd_case_stamps s, again;
    char digest[BD_DIGEST_BUF];
    assert_int_equal(scan(f, "fits", &s, digest), 0);
    assert_true(s.ok);
    assert_int_equal(s.shape_len, BD_STAMP_SHAPE_MAX);
    assert_int_equal(restamp(f, "fits", s.shape, s.shape_len, &again), 0);
    assert_memory_equal(again.digest, s.digest, sizeof(s.digest));

    assert_int_equal(scan(f, "over", &s, digest), 0);
    assert_false(s.ok);
    assert_true(strncmp(digest, "blake3:", 7) == 0); /* hashed all the same */

    /* Many long names: far over. */
    static const size_t many[] = {250, 250, 250, 250, 250, 250, 250, 250, 0};
    make_long_case(f, "many", many);
    assert_int_equal(scan(f, "many", &s, digest), 0);
    assert_false(s.ok);
    assert_true(strncmp(digest, "blake3:", 7) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_scan_and_the_restamp_take_the_same_stamps, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_shape_is_every_path_in_walk_order, setup, teardown),
        cmocka_unit_test_setup_teardown(every_change_changes_the_stamps, setup, teardown),
        cmocka_unit_test_setup_teardown(a_case_written_just_now_is_not_settled, setup, teardown),
        cmocka_unit_test(only_times_old_enough_are_settled),
        cmocka_unit_test_setup_teardown(a_malformed_shape_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_shape_over_the_limit_is_not_kept, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
