/*
 * runner_classify.c — how a finished program maps to a harness failure mode
 * (docs/runner.md#failure-modes: the table and its precedence), for the rubric and for a command
 * SUT; and the one-line rendering of untrusted bytes used in every detail.
 */
#include "runner.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "canon.h"
#include "text.h"

/* Bytes of stderr quoted in a failure detail (docs/runner.md#failure-modes). */
#define STDERR_DETAIL_BYTES 200

void bd_runner_one_line(char *out, size_t max, const char *in, size_t len)
{
    size_t k = 0;
    const unsigned char *s = (const unsigned char *)in;
    if (len > max)
        len = max;
    size_t i = 0;
    while (i < len && k < max) {
        unsigned char c = s[i];
        size_t need = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xE  ? 3
                      : (c >> 3) == 0x1E ? 4
                                         : 0;
        if (need == 1) {
            out[k++] = (c < 0x20 || c == 0x7F) ? ' ' : (char)c;
            i++;
            continue;
        }
        if (need && i + need <= len && bd_utf8_valid(in + i, need)) {
            memcpy(out + k, in + i, need);
            k += need;
            i += need;
            continue;
        }
        out[k++] = '?';
        i++;
    }
    /* Trim trailing blanks left by a final newline. */
    while (k > 0 && out[k - 1] == ' ')
        k--;
    out[k] = '\0';
}

static bool mem_contains(const char *hay, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    return hay && n >= m && memmem(hay, n, needle, m) != NULL;
}

/* "<prefix>: <first bytes of stderr as one line>" into detail. */
static void detail_with_stderr(char detail[BD_SCORE_DETAIL_MAX], const char *prefix,
                               const bd_exec_result *res, size_t max_err)
{
    char line[STDERR_DETAIL_BYTES + 1];
    size_t room = BD_SCORE_DETAIL_MAX - strlen(prefix) - 3;
    if (max_err > room)
        max_err = room;
    if (max_err > STDERR_DETAIL_BYTES)
        max_err = STDERR_DETAIL_BYTES;
    bd_runner_one_line(line, max_err, res->err_head, res->err_head_len);
    if (line[0])
        snprintf(detail, BD_SCORE_DETAIL_MAX, "%s: %s", prefix, line);
    else
        snprintf(detail, BD_SCORE_DETAIL_MAX, "%s (no stderr)", prefix);
}

/* The last checks both classifiers share: killed by a signal, else a failing exit status,
 * else no harness failure. `who` prefixes the detail ("" for the rubric, "SUT "). */
static bd_harness_mode classify_end(const bd_exec_result *res, const char *who,
                                    bd_harness_mode signalled, bd_harness_mode failed,
                                    char detail[BD_SCORE_DETAIL_MAX])
{
    char sig[24];
    char prefix[96];
    if (!res->exited) {
        snprintf(prefix, sizeof(prefix), "%skilled by %s", who,
                 bd_exec_signal_name(res->term_signal, sig));
        detail_with_stderr(detail, prefix, res, 150);
        return signalled;
    }
    if (res->exit_code != 0) {
        snprintf(prefix, sizeof(prefix), "%sexit status %d", who, res->exit_code);
        detail_with_stderr(detail, prefix, res, STDERR_DETAIL_BYTES);
        return failed;
    }
    return BD_HM_NONE;
}

/* How far before the wall-clock limit a CPU limit still counts as reaching it together:
 * a few of the kernel's ticks (4 ms at 250 Hz), which sample CPU time. */
#define CPU_WALL_SLACK_US 20000

bd_harness_mode bd_runner_classify(const bd_exec_result *res, const bd_exec_limits *lim,
                                   char detail[BD_SCORE_DETAIL_MAX])
{
    detail[0] = '\0';
    bool sigxcpu = res->term_signal == SIGXCPU;
    /* A SIGKILL neither the supervisor (deadline) nor we (cap, cancel) sent: the CPU
     * hard limit or the kernel's OOM killer. */
    bool foreign_kill =
        res->term_signal == SIGKILL && !res->killed && !res->timed_out && !res->supervisor_lost;

    /* Wall clock: the deadline fired, or the CPU limit fired once the wall-clock limit
     * had passed, or within CPU_WALL_SLACK_US of it (one busy thread reaches both
     * together, the CPU limit at the kernel's next tick; docs/runner.md#failure-modes ranks
     * timeout first). */
    if (res->timed_out ||
        (sigxcpu && res->run_wall_us + CPU_WALL_SLACK_US >= lim->wall_ms * 1000)) {
        snprintf(detail, BD_SCORE_DETAIL_MAX,
                 "wall clock past the %lld ms limit; killed after %lld ms", (long long)lim->wall_ms,
                 (long long)res->wall_ms);
        return BD_HM_TIMEOUT;
    }
    /* wait4's CPU time is tick-sampled and may read up to ~20% below the clock the
     * kernel's CPU limit uses: allow for it. */
    if (sigxcpu || (foreign_kill && lim->cpu_s && res->cpu_us >= (int64_t)lim->cpu_s * 800000)) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "CPU limit of %llu s reached (%lld ms of CPU)",
                 (unsigned long long)lim->cpu_s, (long long)(res->cpu_us / 1000));
        return BD_HM_CPU_LIMIT;
    }
    bool memory_error = mem_contains(res->err, res->err_len, "MemoryError") ||
                        mem_contains(res->err, res->err_len, "Cannot allocate memory");
    bool failed = res->exited ? res->exit_code != 0 : true;
    long long mb = lim->as_bytes ? (long long)(lim->as_bytes / (1024 * 1024)) : 0;
    if (memory_error && failed) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "memory limit of %lld MB reached (MemoryError)", mb);
        return BD_HM_KILLED_OOM;
    }
    if (foreign_kill &&
        (lim->as_bytes == 0 || (uint64_t)res->maxrss_kb * 1024 >= lim->as_bytes / 2)) {
        snprintf(detail, BD_SCORE_DETAIL_MAX,
                 "killed by SIGKILL at %lld MB resident (memory limit %lld MB)",
                 (long long)(res->maxrss_kb / 1024), mb);
        return BD_HM_KILLED_OOM;
    }
    if (res->output_limit) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "stdout exceeded %zu bytes; killed at the cap",
                 lim->stdout_max ? lim->stdout_max : (size_t)BD_EXEC_STDOUT_MAX);
        return BD_HM_OUTPUT_LIMIT;
    }
    if (res->term_signal == SIGSYS) {
        snprintf(detail, BD_SCORE_DETAIL_MAX,
                 "killed by SIGSYS: a system call the sandbox forbids");
        return BD_HM_SANDBOX_VIOLATION;
    }
    if (res->supervisor_lost) {
        snprintf(detail, BD_SCORE_DETAIL_MAX,
                 "the rubric's supervisor was killed before it could report");
        return BD_HM_CRASHED;
    }
    return classify_end(res, "", BD_HM_CRASHED, BD_HM_MALFORMED, detail);
}

bd_harness_mode bd_runner_classify_sut(const bd_exec_result *res, char detail[BD_SCORE_DETAIL_MAX])
{
    detail[0] = '\0';
    if (!res->started) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "cannot start the SUT: %.180s",
                 res->setup_error[0] ? res->setup_error : "unknown reason");
        return BD_HM_SUT_EXCEPTION;
    }
    if (res->timed_out) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "SUT wall clock past its limit; killed after %lld ms",
                 (long long)res->wall_ms);
        return BD_HM_SUT_TIMEOUT;
    }
    if (res->output_limit) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "SUT stdout exceeded %u bytes; killed at the cap",
                 (unsigned)BD_EXEC_STDOUT_MAX);
        return BD_HM_SUT_MALFORMED;
    }
    if (res->supervisor_lost) {
        snprintf(detail, BD_SCORE_DETAIL_MAX, "the SUT's supervisor was killed");
        return BD_HM_SUT_EXCEPTION;
    }
    return classify_end(res, "SUT ", BD_HM_SUT_EXCEPTION, BD_HM_SUT_EXCEPTION, detail);
}
