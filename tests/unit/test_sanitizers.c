/*
 * test_sanitizers.c — the test flavour's sanitizers are on and say where (CMakeLists.txt,
 * docs/architecture.md#tests): a child that overflows a signed integer, and one that reads
 * past a heap block, each stop at once with a report naming this file. UBSan traps under
 * GCC (cmake/sanitizer_options.c makes ASan report the trap, even with an empty
 * environment) or reports through its runtime (BD_UBSAN_RUNTIME=ON, clang); either report
 * must name the line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define BD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BD_ASAN 1
#endif
#endif

/* Values the compiler cannot fold. */
static volatile int big = INT_MAX;
static volatile size_t past = 16;

static void signed_overflow(void)
{
    int v = big;
    printf("%d\n", v + 1);
}

static void heap_overflow(void)
{
    /* A size the compiler cannot see, so UBSan's object-size check leaves it to ASan. */
    char *p = malloc(past);
    if (!p)
        _exit(3);
    memset(p, 0, past);
    printf("%d\n", p[past]);
    free(p);
}

/* Run this program again as `--fault NAME`, with an empty environment (as a scrubbed
 * process has) and the default signal handlers (cmocka's own catch the faults in this
 * process); its stderr into `out` (NUL-terminated). Returns its wait status. */
static int run_child(const char *fault, char *out, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        char *const argv[] = {"test_sanitizers", "--fault", (char *)fault, NULL};
        char *const envp[] = {NULL};
        execve("/proc/self/exe", argv, envp);
        _exit(126);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fds[0], out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void expect_report(const char *fault, const char *kind_a, const char *kind_b)
{
    static char out[65536];
    int st = run_child(fault, out, sizeof(out));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 126)
        fail_msg("cannot run /proc/self/exe again");
    if (!(WIFEXITED(st) && WEXITSTATUS(st) != 0) && !WIFSIGNALED(st))
        fail_msg("the child ran on past the fault (status %d); stderr:\n%s", st, out);
    if (!strstr(out, kind_a) && !(kind_b && strstr(out, kind_b)))
        fail_msg("no '%s'%s%s%s report; stderr:\n%s", kind_a, kind_b ? " or '" : "",
                 kind_b ? kind_b : "", kind_b ? "'" : "", out);
    if (!strstr(out, "test_sanitizers.c:"))
        fail_msg("the report does not name the file and line; stderr:\n%s", out);
}

static void test_undefined_behaviour_stops_and_names_the_line(void **state)
{
    (void)state;
    expect_report("ub", "AddressSanitizer: ILL", "runtime error: signed integer overflow");
}

static void test_heap_overflow_stops_and_names_the_line(void **state)
{
    (void)state;
    expect_report("heap", "AddressSanitizer: heap-buffer-overflow", NULL);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--fault") == 0) {
        if (strcmp(argv[2], "ub") == 0)
            signed_overflow();
        else if (strcmp(argv[2], "heap") == 0)
            heap_overflow();
        return 0; /* the sanitizer did not stop it */
    }
#ifndef BD_ASAN
    printf("SKIP: not a sanitizer build (BD_FLAVOUR=test builds one)\n");
    return 77;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_undefined_behaviour_stops_and_names_the_line),
        cmocka_unit_test(test_heap_overflow_stops_and_names_the_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
