/*
 * seccomp_load.c — what loading the `namespaces` jail's seccomp filter costs a case
 * (docs/isolation.md, step 5; docs/runner.md#the-seccomp-filter-and-the-commit-window).
 *
 *   bd_perf_seccompload [LOADS]
 *
 * Every case's rubric process loads the filter once, last thing before the rubric runs.
 * When a filter is loaded, the kernel runs it for every system call number to cache the
 * calls it always allows, so a filter's layout costs at load time. This program compiles
 * the jail's filter (bd_jail_build_filter_laid_out) as libseccomp's plain list and as a
 * binary tree of call numbers, and, for comparison, a filter of one instruction that
 * allows everything (the floor: the allocation and the JIT). Each of LOADS children
 * (default 300) per layout, taking turns, times its own seccomp(SECCOMP_SET_MODE_FILTER)
 * call and sends the time to the parent.
 *
 * Prints a table: layout, instructions, mean and median microseconds a load. Exit 0, or 1
 * with a message when the filter cannot be compiled or a fork, a pipe or a load fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jail.h"
#include "jail_state.h"

enum { LAYOUTS = 3 };

typedef struct layout {
    const char *name;
    struct sock_filter insns[BD_JAIL_BPF_MAX];
    unsigned short len;
    double *us;
} layout;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One child loads the filter and reports the microseconds its call took; -1 when the
 * load or the fork fails. */
static double time_one_load(const layout *l)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        struct sock_fprog prog = {l->len, (struct sock_filter *)l->insns};
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double us =
            rc != 0 ? -1
                    : (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
        ssize_t w = write(p[1], &us, sizeof(us));
        _exit(w == (ssize_t)sizeof(us) ? 0 : 1);
    }
    close(p[1]);
    double us = -1;
    if (read(p[0], &us, sizeof(us)) != (ssize_t)sizeof(us))
        us = -1;
    close(p[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return us;
}

int main(int argc, char **argv)
{
    int loads = argc > 1 ? atoi(argv[1]) : 300;
    if (loads < 1) {
        fprintf(stderr, "usage: bd_perf_seccompload [LOADS]\n");
        return 2;
    }
    static layout ls[LAYOUTS] = {{.name = "list (libseccomp's default)"},
                                 {.name = "binary tree (what the jail loads)"},
                                 {.name = "one instruction: allow (floor)"}};
    for (int t = 0; t < 2; t++) {
        bd_err err = BD_ERR_INIT;
        if (bd_jail_build_filter_laid_out(t == 1, &err) != 0) {
            fprintf(stderr, "bd_perf_seccompload: %s\n", err.msg);
            return 1;
        }
        memcpy(ls[t].insns, bd_jail.bpf, bd_jail.bpf_len * sizeof(bd_jail.bpf[0]));
        ls[t].len = bd_jail.bpf_len;
    }
    ls[2].insns[0] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    ls[2].len = 1;
    /* Unprivileged loads need no_new_privs; the children inherit it. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("bd_perf_seccompload: no_new_privs");
        return 1;
    }
    for (int i = 0; i < LAYOUTS; i++)
        if (!(ls[i].us = calloc((size_t)loads, sizeof(double)))) {
            fprintf(stderr, "bd_perf_seccompload: out of memory\n");
            return 1;
        }
    for (int k = 0; k < loads; k++)
        for (int i = 0; i < LAYOUTS; i++) /* taking turns: the same load for each */
            if ((ls[i].us[k] = time_one_load(&ls[i])) < 0) {
                fprintf(stderr, "bd_perf_seccompload: a load of the %s failed\n", ls[i].name);
                return 1;
            }
    printf("%-36s %12s %10s %10s\n", "filter", "instructions", "mean us", "median us");
    for (int i = 0; i < LAYOUTS; i++) {
        double sum = 0;
        for (int k = 0; k < loads; k++)
            sum += ls[i].us[k];
        qsort(ls[i].us, (size_t)loads, sizeof(double), cmp_double);
        printf("%-36s %12u %10.1f %10.1f\n", ls[i].name, ls[i].len, sum / loads,
               ls[i].us[loads / 2]);
        free(ls[i].us);
    }
    return 0;
}
