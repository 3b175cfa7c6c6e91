/*
 * cowfloor.c — what a page copied on write costs on this machine
 * (docs/runner.md#where-a-cases-time-goes-at-scale).
 *
 *   bd_perf_cowfloor [FORKS]
 *
 * A warm case's rubric is a fork of the warm interpreter: every page of the interpreter it
 * writes to (a reference count, a slot in a half-used pool) is copied for it by the kernel.
 * This program measures that copy alone. A parent fills N private anonymous pages; each of
 * FORKS children (default 200) writes one byte to each page: taking one page fault per
 * page (as a rubric does), after asking for all of them at once with
 * madvise(MADV_POPULATE_WRITE) (the kernel copies them without the faults), or after
 * asking for them one call a page (what a warm rubric's learned pages cost when they lie
 * in runs of one page: the difference from one call is the cost of a call), or after
 * one process_madvise(2) call on itself with one iovec a page (Linux 6.13 takes any advice
 * for the calling process: the same ranges, one system call). The child times its own
 * writes and sends the time to the parent.
 *
 * Prints a table: pages, how, microseconds per child, microseconds per page. Exit 0, or 1
 * with a message when a fork, a pipe or the madvise fails (MADV_POPULATE_WRITE needs
 * Linux 5.14); a kernel whose process_madvise refuses the advice prints that row as
 * refused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

enum { BY_FAULT, POPULATE_ONCE, POPULATE_EACH, POPULATE_VECTOR };

/* One process_madvise call on this process, one iovec a page (at most 1024 a call, the
 * kernel's UIO_MAXIOV). 0, or -1 with errno. */
static int populate_vector(char *mem, size_t pages, size_t page)
{
    int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (pidfd < 0)
        return -1;
    struct iovec iov[1024];
    int rc = 0;
    for (size_t done = 0; rc == 0 && done < pages;) {
        size_t n = pages - done < 1024 ? pages - done : 1024;
        for (size_t i = 0; i < n; i++)
            iov[i] = (struct iovec){mem + (done + i) * page, page};
        long got = syscall(SYS_process_madvise, pidfd, iov, n, MADV_POPULATE_WRITE, 0);
        if (got != (long)(n * page))
            rc = -1;
        done += n;
    }
    close(pidfd);
    return rc;
}

/* The mean time a child takes to write one byte to each of `pages` pages of `mem` (after
 * the madvise `how` asks for); -1 with a message on a failure. */
static double child_writes(char *mem, size_t pages, int how, int forks)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    double total = 0;
    for (int r = 0; r < forks; r++) {
        int fd[2];
        if (pipe(fd) != 0) {
            fprintf(stderr, "bd_perf_cowfloor: pipe: %s\n", strerror(errno));
            return -1;
        }
        pid_t c = fork();
        if (c < 0) {
            fprintf(stderr, "bd_perf_cowfloor: fork: %s\n", strerror(errno));
            return -1;
        }
        if (c == 0) {
            double t = now_us();
            if (how == POPULATE_ONCE && madvise(mem, pages * page, MADV_POPULATE_WRITE) != 0)
                _exit(3);
            for (size_t i = 0; how == POPULATE_EACH && i < pages; i++)
                if (madvise(mem + i * page, page, MADV_POPULATE_WRITE) != 0)
                    _exit(3);
            if (how == POPULATE_VECTOR && populate_vector(mem, pages, page) != 0)
                _exit(errno == EINVAL ? 5 : 3);
            for (size_t i = 0; i < pages; i++)
                mem[i * page]++;
            double d = now_us() - t;
            _exit(write(fd[1], &d, sizeof(d)) == (ssize_t)sizeof(d) ? 0 : 4);
        }
        close(fd[1]);
        double d = 0;
        ssize_t n = read(fd[0], &d, sizeof(d));
        close(fd[0]);
        int st = 0;
        waitpid(c, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 5)
            return -2; /* this kernel's process_madvise refuses the advice */
        if (n != (ssize_t)sizeof(d) || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bd_perf_cowfloor: a child failed (%s)\n",
                    WIFEXITED(st) && WEXITSTATUS(st) == 3 ? "madvise MADV_POPULATE_WRITE"
                                                          : "no time reported");
            return -1;
        }
        total += d;
    }
    return total / forks;
}

int main(int argc, char **argv)
{
    int forks = argc > 1 ? atoi(argv[1]) : 200;
    if (forks <= 0) {
        fprintf(stderr, "usage: bd_perf_cowfloor [FORKS]\n");
        return 1;
    }
    /* 96: what a rubric copies of libpython's own data; 344: all it copies (docs/runner.md);
     * 2200: the whole anonymous memory of a warm interpreter. */
    static const size_t sizes[] = {96, 344, 2200};
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    printf("%-8s %-27s %14s %12s\n", "pages", "how", "us a child", "us a page");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t pages = sizes[s];
        char *mem =
            mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            fprintf(stderr, "bd_perf_cowfloor: mmap: %s\n", strerror(errno));
            return 1;
        }
        memset(mem, 1, pages * page);
        static const char *const hows[] = {"a fault per page", "MADV_POPULATE_WRITE",
                                           "POPULATE_WRITE a page", "process_madvise, iov a page"};
        for (int how = BY_FAULT; how <= POPULATE_VECTOR; how++) {
            double us = child_writes(mem, pages, how, forks);
            if (us == -2) {
                printf("%-8zu %-27s %14s %12s\n", pages, hows[how], "refused", "-");
                continue;
            }
            if (us < 0)
                return 1;
            printf("%-8zu %-27s %14.1f %12.2f\n", pages, hows[how], us, us / (double)pages);
        }
        munmap(mem, pages * page);
    }
    return 0;
}
