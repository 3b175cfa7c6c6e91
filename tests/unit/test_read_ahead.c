/*
 * test_read_ahead.c — bd_read_ahead_tree (fsutil.h), the hint the runner gives for the
 * cases about to start (docs/runner.md#cases-read-ahead): the regular files under a case
 * directory come into the page cache; a file reached only through a symlink does not; a
 * pipe, a file below the depth limit, and a missing or unreadable path are passed over
 * without blocking or failing; nothing is changed.
 *
 * Residency is read with mincore(2) after the files' pages were dropped with
 * POSIX_FADV_DONTNEED. Where the file system keeps its pages anyway (tmpfs), the test
 * cannot tell a read from none: it says so and is skipped (exit 77).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"

#define FILE_BYTES (256 * 1024)

static char base[PATH_MAX - 64];

static void write_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    static char buf[FILE_BYTES];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    assert_int_equal(fsync(fd), 0);
    close(fd);
}

/* Pages of `path` in the page cache, of FILE_BYTES / page size. */
static size_t resident(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    void *m = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(m != MAP_FAILED);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = FILE_BYTES / page, in = 0;
    unsigned char vec[FILE_BYTES / 4096];
    assert_int_equal(mincore(m, FILE_BYTES, vec), 0);
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    munmap(m, FILE_BYTES);
    close(fd);
    return in;
}

static void drop(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
}

/* The read ahead is asynchronous: wait up to 5 s for every page of `path`. */
static bool becomes_resident(const char *path)
{
    size_t all = FILE_BYTES / (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < 500; i++) {
        if (resident(path) == all)
            return true;
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return false;
}

static void path_of(char *out, const char *rel)
{
    snprintf(out, PATH_MAX, "%s/%s", base, rel);
}

static void test_reads_the_tree_and_follows_no_link(void **st)
{
    (void)st;
    char p[PATH_MAX], q[PATH_MAX];
    const char *dirs[] = {"case", "case/input", "case/a", "case/a/b", "case/a/b/c", "outside"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        path_of(p, dirs[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    const char *files[] = {"case/case.yaml", "case/input/prompt.txt", "case/a/b/c/deep.txt",
                           "outside/secret.txt", "outside/linked-dir-file.txt"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        path_of(p, files[i]);
        write_file(p);
    }
    /* A symlink to a file and one to a directory outside, and a pipe nobody writes. */
    path_of(p, "outside/secret.txt");
    path_of(q, "case/link.txt");
    assert_int_equal(symlink(p, q), 0);
    path_of(p, "outside");
    path_of(q, "case/linkdir");
    assert_int_equal(symlink(p, q), 0);
    path_of(q, "case/pipe");
    assert_int_equal(mkfifo(q, 0600), 0);

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        path_of(p, files[i]);
        drop(p);
    }
    struct stat before;
    path_of(p, "case/case.yaml");
    assert_int_equal(stat(p, &before), 0);

    path_of(p, "case");
    bd_read_ahead_tree(p, 2); /* case/, a/ and a/b/ are listed; a/b/c/ is below the limit */

    path_of(p, "case/case.yaml");
    assert_true(becomes_resident(p));
    path_of(p, "case/input/prompt.txt");
    assert_true(becomes_resident(p));
    /* Given time to be read had they been asked for: none of these was. */
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
    path_of(p, "outside/secret.txt");
    assert_int_equal(resident(p), 0);
    path_of(p, "outside/linked-dir-file.txt");
    assert_int_equal(resident(p), 0);
    path_of(p, "case/a/b/c/deep.txt");
    assert_int_equal(resident(p), 0);
    /* Nothing changed. */
    struct stat after;
    path_of(p, "case/case.yaml");
    assert_int_equal(stat(p, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);

    /* With the depth for it, the deep file is read too. */
    path_of(p, "case");
    bd_read_ahead_tree(p, 3);
    path_of(p, "case/a/b/c/deep.txt");
    assert_true(becomes_resident(p));
}

static void test_missing_and_unreadable_paths_are_passed_over(void **st)
{
    (void)st;
    char p[PATH_MAX];
    path_of(p, "no-such-dir");
    bd_read_ahead_tree(p, 4);
    path_of(p, "case/case.yaml"); /* not a directory */
    bd_read_ahead_tree(p, 4);
    path_of(p, "case/linkdir"); /* a symlink to a directory: not followed */
    bd_read_ahead_tree(p, 4);
    bd_read_ahead_tree("", 4);
    path_of(p, "locked");
    assert_int_equal(mkdir(p, 0), 0);
    bd_read_ahead_tree(p, 4);
    chmod(p, 0700);
}

static int teardown(void **st)
{
    (void)st;
    bd_err e = BD_ERR_INIT;
    return bd_remove_tree(base, &e);
}

int main(void)
{
    /* On a disk (/var/tmp; /tmp may be a tmpfs), not in RAM. */
    snprintf(base, sizeof(base), "%s/bd-test-read-ahead-XXXXXX",
             getenv("BD_READ_AHEAD_DIR") ? getenv("BD_READ_AHEAD_DIR") : "/var/tmp");
    if (!mkdtemp(base)) {
        perror("test_read_ahead: mkdtemp");
        return 1;
    }
    /* Can this file system drop a file's pages? Else a read cannot be seen. */
    char probe[PATH_MAX];
    path_of(probe, "probe");
    write_file(probe);
    drop(probe);
    if (resident(probe) != 0) {
        fprintf(stderr,
                "test_read_ahead: skipped, %s keeps a file's pages after "
                "POSIX_FADV_DONTNEED (tmpfs?): a read ahead cannot be told from none\n",
                base);
        teardown(NULL);
        return 77;
    }
    unlink(probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_the_tree_and_follows_no_link),
        cmocka_unit_test(test_missing_and_unreadable_paths_are_passed_over),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
