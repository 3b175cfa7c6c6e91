#!/usr/bin/env bash
# exec_start.sh — what executing a small static program costs here, by the C library it is
# built against (docs/runner.md#the-supervisor-program-on-a-small-c-library). A warm case
# executes benchdesk-supervisor twice (its supervisor and its init), so a program's start
# is paid twice a case.
#
#   tests/perf/exec_start.sh [N] [SUPERVISOR...]
#
# Builds, in a temp dir, one program that only returns from main three ways — static
# against glibc, static against musl (musl-gcc; the row is left out without it), and with
# no C library at all (its _start makes the exit system call) — and times N (default
# 3000) posix_spawn + waitpid of each, and of each SUPERVISOR given (default: this
# checkout's build/release/src/benchdesk-supervisor; run without arguments it exits 2 at
# once, so its row is its start and exit). Prints wall and CPU time (the children's, from
# RUSAGE_CHILDREN) per execution, and glibc's start over musl's.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-3000}
shift || true
sups=("$@")
[ ${#sups[@]} -gt 0 ] || sups=("$src/build/release/src/benchdesk-supervisor")
work=$(mktemp -d "${TMPDIR:-/tmp}/benchdesk-perf-exec.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo 'int main(void) { return 0; }' >"$work/empty.c"
printf '%s\n' 'void _start(void) { __asm__ volatile("mov $60, %eax; xor %edi, %edi; syscall"); }' \
    >"$work/nolibc.c"
cat >"$work/spawn.c" <<'C'
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
extern char **environ;
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        pid_t p;
        char *args[] = {argv[2], NULL};
        if (posix_spawn(&p, argv[2], NULL, NULL, args, environ) != 0 || waitpid(p, NULL, 0) != p)
            return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double wall = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / n;
    double cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
                 ru.ru_stime.tv_usec;
    printf("%.1f %.1f\n", wall, cpu / n);
    return 0;
}
C
gcc -O2 -o "$work/spawn" "$work/spawn.c"
gcc -O2 -static -o "$work/glibc" "$work/empty.c"
gcc -O2 -static -nostdlib -o "$work/nolibc" "$work/nolibc.c"
rows=("static, glibc=$work/glibc")
if command -v musl-gcc >/dev/null; then
    musl-gcc -O2 -static -o "$work/musl" "$work/empty.c"
    rows+=("static, musl=$work/musl")
else
    echo "exec_start: no musl-gcc (Debian: musl-tools); the musl row is left out" >&2
fi
rows+=("no C library=$work/nolibc")
for s in "${sups[@]}"; do
    [ -x "$s" ] || { echo "exec_start: no program at $s" >&2; exit 2; }
    rows+=("$(basename "$s") ($(grep -qa GLIBC_TUNABLES "$s" && echo glibc || echo musl))=$s")
done

echo "exec_start: $n executions each, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %12s %12s\n' "program" "wall us" "cpu us"
declare -A cpu
for r in "${rows[@]}"; do
    name=${r%%=*} path=${r#*=}
    read -r w c < <("$work/spawn" "$n" "$path")
    cpu[$name]=$c
    printf '%-44s %12s %12s\n' "$name" "$w" "$c"
done
if [ -n "${cpu[static, musl]:-}" ]; then
    awk -v g="${cpu[static, glibc]}" -v m="${cpu[static, musl]}" 'BEGIN {
        printf "glibc'"'"'s start costs %.0f us of CPU more than musl'"'"'s a program: %.0f us a warm case (two executions)\n", g - m, 2 * (g - m) }'
fi
