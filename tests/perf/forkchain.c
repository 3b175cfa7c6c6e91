/*
 * forkchain.c — what one more copy of the warm interpreter costs a case on this machine
 * (docs/runner.md#where-a-cases-time-goes-at-scale).
 *
 *   bd_perf_forkchain [CHAINS]
 *
 * A warm case is three processes made from the warm interpreter: its supervisor (a fork of
 * the warm server), the case's init (a clone of the supervisor) and the rubric (a fork of
 * the init). Each fork copies the page-table entries of the interpreter's anonymous memory
 * and each exit frees them again. This program times that chain, without namespaces or
 * Python, in a parent shaped like a warm interpreter (8.7 MB of written anonymous memory in
 * 85 mappings, docs/runner.md), the rubric writing 340 of its pages as a rubric does:
 *
 *   three copies   the init is a fork of the supervisor (as benchdesk does it);
 *   two copies     the init shares the supervisor's memory (CLONE_VM) and forks the rubric,
 *                  so only the supervisor and the rubric copy the interpreter.
 *
 * The difference is what a case would save if one of its processes were not a copy.
 * Prints a table: how, chains, ms of wall time and ms of CPU (all processes) a chain.
 * Exit 0, or 1 with a message when a mapping, a fork or a clone fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAPPINGS      85
#define RUBRIC_WRITES 340

static char *region[MAPPINGS];
static size_t region_len[MAPPINGS];
/* The init's stack when it shares the supervisor's memory; the rubric forked from it runs
 * on it too (it only writes its pages). */
static char init_stack[256 * 1024] __attribute__((aligned(64)));

static void __attribute__((noreturn)) rubric(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int k = 0;
    for (int i = 0; i < MAPPINGS && k < RUBRIC_WRITES; i++)
        for (size_t off = i % 2 ? page : 0; off < region_len[i] && k < RUBRIC_WRITES;
             off += 6 * page, k++)
            region[i][off]++; /* past the read-only first page of every other mapping */
    _exit(0);
}

/* Fork the rubric and wait for it; exit 0, or 2 when the fork fails. */
static int init_main(void *unused)
{
    (void)unused;
    pid_t r = fork();
    if (r == 0)
        rubric();
    if (r < 0)
        _exit(2);
    int st = 0;
    while (waitpid(r, &st, 0) < 0 && errno == EINTR)
        ;
    _exit(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 5);
}

static void __attribute__((noreturn)) supervisor(int share)
{
    pid_t i = share ? clone(init_main, init_stack + sizeof(init_stack), CLONE_VM | SIGCHLD, NULL)
                    : fork();
    if (i == 0)
        init_main(NULL);
    if (i < 0)
        _exit(3);
    int st = 0;
    while (waitpid(i, &st, 0) < 0 && errno == EINTR)
        ;
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 4);
}

static double cpu_ms(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Run `chains` chains; print a row; 0, or -1 with a message. */
static int run(int share, int chains)
{
    double cpu0 = cpu_ms(RUSAGE_CHILDREN) + cpu_ms(RUSAGE_SELF), t0 = now_ms();
    for (int k = 0; k < chains; k++) {
        pid_t s = fork();
        if (s < 0) {
            fprintf(stderr, "bd_perf_forkchain: fork: %s\n", strerror(errno));
            return -1;
        }
        if (s == 0)
            supervisor(share);
        int st = 0;
        while (waitpid(s, &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bd_perf_forkchain: a chain failed (%s)\n",
                    !WIFEXITED(st)         ? "the supervisor was killed"
                    : WEXITSTATUS(st) == 2 ? "the rubric's fork"
                    : WEXITSTATUS(st) == 3 ? "the init's clone or fork"
                                           : "the rubric did not exit 0");
            return -1;
        }
    }
    double wall = now_ms() - t0, cpu = cpu_ms(RUSAGE_CHILDREN) + cpu_ms(RUSAGE_SELF) - cpu0;
    printf("%-40s %8d %10.3f %10.3f\n",
           share ? "two copies (the init shares memory)" : "three copies (the init is a fork)",
           chains, wall / chains, cpu / chains);
    return 0;
}

int main(int argc, char **argv)
{
    int chains = argc > 1 ? atoi(argv[1]) : 2000;
    if (chains <= 0) {
        fprintf(stderr, "usage: bd_perf_forkchain [CHAINS]\n");
        return 1;
    }
    /* 3 x 2 MiB (the arenas, the C heap, libpython's data and the like) and 82 small ones:
     * about the warm interpreter's 8.7 MB in 85 mappings. Every other mapping starts with
     * a read-only page, so that the kernel does not merge neighbours into one. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0;
    for (int i = 0; i < MAPPINGS; i++) {
        region_len[i] = i < 3 ? (size_t)2 << 20 : 8 * page;
        region[i] =
            mmap(NULL, region_len[i], PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region[i] == MAP_FAILED) {
            fprintf(stderr, "bd_perf_forkchain: mmap: %s\n", strerror(errno));
            return 1;
        }
        memset(region[i], 1, region_len[i]);
        if (i % 2 && mprotect(region[i], page, PROT_READ) != 0) {
            fprintf(stderr, "bd_perf_forkchain: mprotect: %s\n", strerror(errno));
            return 1;
        }
        total += region_len[i];
    }
    printf("parent: %.1f MB of written anonymous memory in %d mappings; the rubric writes %d "
           "pages\n",
           (double)total / 1048576.0, MAPPINGS, RUBRIC_WRITES);
    printf("%-40s %8s %10s %10s\n", "how", "chains", "wall ms", "cpu ms");
    for (int round = 0; round < 2; round++)
        if (run(0, chains) != 0 || run(1, chains) != 0)
            return 1;
    return 0;
}
