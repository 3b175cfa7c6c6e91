/*
 * test_sanitizers.c — the test flavour's sanitizers are on and say where (CMakeLists.txt,
 * docs/architecture.md#tests): a child that overflows a signed integer, and one that reads
 * past a heap block, each stop at once with a report naming this file. UBSan traps under
 * GCC (cmake/sanitizer_options.c makes ASan report the trap, even with an empty
 * environment) or reports through its runtime (BD_UBSAN_RUNTIME=ON, clang); either report
 * must name the line. And the start-up cut of cmake/sanitizer_options.c holds: the
 * sanitizer runtime's zero-filled .bss is in huge pages where the kernel can make them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

#ifdef BD_ASAN /* the checks below: a release-flavour tree has no sanitizer to check */
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

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HUGE_PAGE ((uintptr_t)2 << 20)

/* The first whole 2 MiB stretch of a loaded object's zero-filled .bss, or 0. */
static int first_bss_stretch(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t *found = data;
    for (int i = 0; i < info->dlpi_phnum && !*found; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
        uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        uintptr_t huge_start = (start + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        if (huge_start + HUGE_PAGE <= end)
            *found = huge_start;
    }
    return *found != 0;
}

/* AnonHugePages (kB) of the mapping holding `addr`, from /proc/self/smaps; -1 if none. */
static long anon_huge_kb(uintptr_t addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[512];
    bool inside = false;
    long kb = -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = lo <= addr && addr < hi;
        else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

/* Why the huge-page check cannot run here (a reason in `why`), or NULL when it can. */
static const char *huge_pages_unavailable(uintptr_t *stretch, char *why, size_t cap)
{
    *stretch = 0;
    dl_iterate_phdr(first_bss_stretch, stretch);
    if (!*stretch)
        return "no loaded object has a .bss holding a whole 2 MiB page";
    /* Can this kernel collapse at all? A scratch region says (Linux 6.1 and later). */
    size_t len = 2 * HUGE_PAGE;
    char *scratch = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch == MAP_FAILED)
        return "cannot map a scratch region";
    char *aligned = (char *)(((uintptr_t)scratch + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
    aligned[0] = 1;
    int can = madvise(aligned, HUGE_PAGE, MADV_COLLAPSE);
    int err = errno;
    munmap(scratch, len);
    if (can == 0)
        return NULL;
    snprintf(why, cap,
             "this process cannot collapse pages into a huge page (%s; Linux 6.1 or later, with "
             "transparent huge pages not disabled)",
             strerror(err));
    return why;
}

static uintptr_t bss_stretch;

static void test_sanitizer_bss_is_in_huge_pages(void **state)
{
    (void)state;
    long kb = anon_huge_kb(bss_stretch);
    if (kb < 2048)
        fail_msg("the .bss at %#lx is in %ld kB of huge pages, not 2048 or more: "
                 "cmake/sanitizer_options.c did not collapse it at start",
                 (unsigned long)bss_stretch, kb);
}
#endif /* BD_ASAN */

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
        cmocka_unit_test(test_sanitizer_bss_is_in_huge_pages),
    };
    char why[160];
    const char *unavailable = huge_pages_unavailable(&bss_stretch, why, sizeof(why));
    /* Without huge pages the last check is left out, and the test shows as skipped. */
    size_t n = sizeof(tests) / sizeof(tests[0]) - (unavailable ? 1 : 0);
    int failed = _cmocka_run_group_tests("test_sanitizers", tests, n, NULL, NULL);
    if (failed || !unavailable)
        return failed;
    printf("SKIP: the huge-page check: %s\n", unavailable);
    return 77;
#endif
}
