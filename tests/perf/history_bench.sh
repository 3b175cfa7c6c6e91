#!/usr/bin/env bash
# History at scale (docs/history.md, issue "history at a million records"): generates valid
# histories of 10k, 100k and 1M records in a copy of the demo bench (records of
# vuln-remediation's cases, 90% current, 10% scored on an older case digest, all within
# recommend's 30-day window) through the group-commit batch API, and prints one table,
# an operation per row, wall time and CPU time (user + system: the machine is shared, so
# wall times vary with the load and CPU times much less), with the numbers measured
# before (one file per record, commit a772fda, from the issue) and each one's growth from
# 10k to 1M:
#   append       single appends (one fsync each) and group commit (500 records a batch)
#   verify       `history verify` warm (best of three; every record parsed and checked in
#                full: the memo is believed by the run gate only), cold: the segments
#                evicted from the page cache (posix_fadvise DONTNEED on each: `echo 3 >
#                /proc/sys/vm/drop_caches` when permitted, else that); and the chain's part
#                of `benchdesk verify` when a signed anchor covers all but the last 12,100
#                records (3,100 at 10k) (those under it re-hashed, the rest parsed; the anchor's GnuPG
#                check included)
#   gate         the run gate's bd_history_verify_since: nothing new / one 500-record run
#   index        the derived index built from nothing (the first `history log`), and
#                extended by 500 records
#   log          `benchdesk history log --task-class vuln-remediation --limit 20`
#   recommend    the history's part (the walk that verifies the chain and the anchor and
#                hands it the records; today's signatures taken as verified) and the whole
#                `benchdesk recommend vuln-remediation` (which also checks the task class's
#                and 18 cases' GnuPG signatures), with the anchor above, and the whole
#                command without any anchor (every record parsed)
#   TUI          in tmux: the header's "chain verified" from the start, then the history
#                view's first rows after `h` and a filter (`/` + a case id + Enter), timed
#                from outside by polling the screen every 10 ms
# Not a timed test. Usage: tests/perf/history_bench.sh [MAX] (default 1000000; 10k..MAX).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BD_PERF_BUILD:-$here/build/perf}
max=${1:-1000000}

cmake -S "$here" -B "$build" -DBD_FLAVOUR=release >/dev/null
cmake --build "$build" -j2 --target benchdesk >/dev/null
bd=$build/src/benchdesk
[ -x "$bd" ] || bd=$(find "$build" -name benchdesk -type f -perm -u+x | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/bd-histbench-XXXXXX")
# BD_PERF_KEEP=1 keeps the generated bench (its path printed at the end) for profiling.
cleanup_work() { if [ "${BD_PERF_KEEP:-0}" = 1 ]; then echo "kept: $work" >&2; else rm -rf "$work"; fi; }
trap cleanup_work EXIT
mkdir -p "$work/b"
cp -r "$here/bench" "$work/b/bench"

cat >"$work/driver.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anchor.h"
#include "bench.h"
#include "history.h"
#include "promote.h"
#include "provenance.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const bd_err *e)
{
    fprintf(stderr, "history_bench: %s: %s\n", bd_code_str(e->code), e->msg);
    exit(1);
}

/* driver ROOT gen N BATCH | single K | verify [full] | anchored | gate | recommend */
int main(int argc, char **argv)
{
    const char *root = argv[1], *mode = argv[2];
    bd_err e = BD_ERR_INIT;
    bd_bench *bench;
    bd_task_class *tc;
    bd_history *h;
    if (bd_provenance_init(&e) != 0 || bd_bench_open(&bench, root, &e) != 0 ||
        bd_task_class_load(&tc, bench, "vuln-remediation", &e) != 0 ||
        bd_history_open(&h, root, BD_HISTORY_CREATE, &e) != 0)
        die(&e);
    if (strcmp(mode, "recommend") == 0) {
        /* The history's part of recommend: verify + anchors + the streamed selection,
         * with every signature taken as verified (GnuPG's part is timed by the CLI). */
        bool *all = calloc(tc->n_cases, sizeof(bool));
        for (size_t i = 0; i < tc->n_cases; i++)
            all[i] = true;
        bd_signed_today st = {true, "signed", all};
        bd_recommendation r;
        double t0 = now();
        if (bd_recommend_given(&r, bench, tc, time(NULL), &st, &e) != 0)
            die(&e);
        printf("%.4f %zu\n", now() - t0, r.cases);
        bd_recommendation_release(&r);
        free(all);
        return 0;
    }
    if (strcmp(mode, "anchored") == 0) {
        bd_anchor_report rep;
        double t0 = now();
        int rc = bd_anchor_verify_visit(&rep, root, 0, NULL, &e);
        if (rc != 0)
            die(rc > 0 ? bd_anchor_report_first_failure(&rep) : &e);
        printf("%.4f %llu %llu\n", now() - t0, (unsigned long long)rep.chain_count,
               (unsigned long long)rep.parsed_from);
        bd_anchor_report_release(&rep);
        return 0;
    }
    if (strcmp(mode, "verify") == 0 || strcmp(mode, "gate") == 0) {
        bd_history_verify_result r;
        double t0 = now();
        int rc = strcmp(mode, "gate") == 0 ? bd_history_verify_since(h, &r, &e)
                                           : bd_history_verify(h, argc > 3 ? BD_VERIFY_FULL : 0,
                                                               &r, &e);
        if (rc != 0)
            die(&e);
        printf("%.4f %llu\n", now() - t0, (unsigned long long)r.count);
        bd_history_verify_result_release(&r);
        return 0;
    }
    long n = atol(argv[3]);
    long batch = strcmp(mode, "single") == 0 ? 1 : atol(argv[4]);
    bd_score_breakdown bd[2] = {{"cve_delta", 0.5}, {"recipe_match", 1.0}};
    bd_score_fm fm = {"cve.not_removed", BD_SEV_BLOCK, "the CVE is still reachable via axios"};
    const char *old = "blake3:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    bd_history_score_fields *f = calloc((size_t)batch, sizeof(*f));
    bd_score *s = calloc((size_t)batch, sizeof(*s));
    const bd_score **sp = calloc((size_t)batch, sizeof(*sp));
    char (*times)[32] = calloc((size_t)batch, 32);
    uint64_t head;
    if (bd_history_head(h, &head, NULL, &e) != 0)
        die(&e);
    time_t t = time(NULL);
    double t0 = now();
    for (long done = 0; done < n;) {
        long k = n - done < batch ? n - done : batch;
        for (long i = 0; i < k; i++) {
            uint64_t seq = head + (uint64_t)done + (uint64_t)i + 1;
            size_t ci = seq % tc->n_cases;
            const bd_pin *pin = bd_digests_find(tc->digests, tc->case_ids[ci]);
            time_t ft = t - (time_t)(seq % 20) * 86400;
            struct tm tm;
            gmtime_r(&ft, &tm);
            strftime(times[i], 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
            f[i] = (bd_history_score_fields){0};
            f[i].run_id = "20260512T140000Z-ab12";
            f[i].run_full = true;
            f[i].run_cases = tc->n_cases;
            f[i].task_class = tc->name;
            f[i].case_id = tc->case_ids[ci];
            f[i].case_digest = seq % 10 == 0 || !pin ? old : pin->digest;
            f[i].task_class_digest = tc->digests->task_class;
            f[i].harness_version = "0.1.0";
            f[i].isolation_class = "namespaces";
            f[i].provenance_verified = true;
            f[i].operator_fingerprint = "0123456789ABCDEF0123456789ABCDEF01234567";
            f[i].started_at = times[i];
            f[i].finished_at = times[i];
            s[i] = (bd_score){.passed = seq % 3 != 0,
                              .score = (double)(seq % 100) / 100.0,
                              .breakdown = bd,
                              .n_breakdown = 2,
                              .failure_modes = &fm,
                              .n_failure_modes = 1,
                              .cost_usd = 0.0125,
                              .wall_clock_ms = 1234};
            sp[i] = &s[i];
        }
        int rc = batch == 1 ? bd_history_append_score(h, &f[0], &s[0], NULL, NULL, &e)
                            : bd_history_append_batch(h, f, sp, (size_t)k, NULL, NULL, &e);
        if (rc != 0)
            die(&e);
        done += k;
    }
    printf("%.0f\n", (double)n / (now() - t0));
    bd_history_free(h);
    bd_task_class_free(tc);
    bd_bench_free(bench);
    return 0;
}
C

# shellcheck disable=SC2046
. "$here/tests/perf/core_flags.sh"
# shellcheck disable=SC2046
cc -O2 -std=c11 -D_GNU_SOURCE $(bd_core_cflags "$here" "$build") "$work/driver.c" -o "$work/driver" \
    $(bd_core_libs "$build") \
    $(pkg-config --libs libcjson libcrypto libuv yaml-0.1 libgit2 gpgme libseccomp sqlite3) -lm -lpthread

drv() { "$work/driver" "$work/b" "$@"; }
# m NAME CMD...: run CMD, keep "wall cpu rss" (seconds, seconds, MB) of it in r[NAME@N].
# A driver mode prints its own wall time of the operation first (no process start, no
# bench loading); the CPU time and peak RSS are the whole process's.
declare -A r
m() {
    local name=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >"$work/o" 2>"$work/err" ||
        { cat "$work/err" >&2; r[$name@$n]="fail"; return; }
    local own=""
    [ "$1" = "$work/driver" ] && own=$(awk 'NR==1 {print $1}' "$work/o")
    r[$name@$n]=$(awk -v own="$own" '{w = own != "" ? own : $1; printf "%s %.3f %d", w, $2 + $3, $4 / 1024}' "$work/t")
}
bdc() { "$bd" -C "$work/b" "$@"; }
evict() { # the segments out of the page cache
    if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
        cold_how="drop_caches"
    else
        cold_how="fadvise"
        python3 - "$work/b/.benchdesk/history/segments" <<'PY'
import os, sys
d = sys.argv[1]
for f in os.listdir(d):
    fd = os.open(os.path.join(d, f), os.O_RDONLY)
    os.fsync(fd) if False else None
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
    fi
}
sock="bdhist-$$"
tui_cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; }
ms_now() { date +%s%N | cut -c1-13; }
# wait_for TEXT TIMEOUT_S: poll the pane every 10 ms; print the ms waited, or "timeout".
wait_for() {
    local t0 end
    t0=$(ms_now)
    end=$((t0 + $2 * 1000))
    while :; do
        if tmux -L "$sock" capture-pane -p 2>/dev/null | grep -qF -- "$1"; then
            echo $(($(ms_now) - t0))
            return
        fi
        [ "$(ms_now)" -lt "$end" ] || { echo timeout; return; }
        sleep 0.01
    done
}
wait_idle() { # until no spinner shows on three polls in a row (the pool is idle)
    local quiet=0 end=$(($(ms_now) + $1 * 1000))
    while [ "$quiet" -lt 3 ] && [ "$(ms_now)" -lt "$end" ]; do
        if tmux -L "$sock" capture-pane -p 2>/dev/null | grep -q '[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]'; then
            quiet=0
        else
            quiet=$((quiet + 1))
        fi
        sleep 0.1
    done
}
tui() { # header verified / history first rows / a filter, in ms
    tui_cleanup
    local t0 hdr rows filt
    t0=$(ms_now)
    tmux -L "$sock" new-session -d -x 180 -y 45 "$bd -C $work/b"
    hdr=$(wait_for "verified (" 600)
    [ "$hdr" = timeout ] || hdr=$(($(ms_now) - t0))
    # Let the start-up work (pins, signatures, runs) finish: the history is timed alone.
    wait_idle 600
    tmux -L "$sock" send-keys /
    tmux -L "$sock" send-keys -l vuln
    tmux -L "$sock" send-keys Enter
    wait_for "1/1 (of 3)" 10 >/dev/null
    tmux -L "$sock" send-keys h
    rows=$(wait_for "#$top " 600)
    wait_idle 600
    tmux -L "$sock" send-keys /
    sleep 0.2
    tmux -L "$sock" send-keys -l ghsa-demo-0007
    tmux -L "$sock" send-keys Enter
    filt=$(wait_for "(of " 600)
    tui_cleanup
    r[tui_hdr@$n]="$hdr"
    r[tui_rows@$n]="$rows"
    r[tui_filter@$n]="$filt"
}
trap 'tui_cleanup; cleanup_work' EXIT

# A signing key of the bench's own, trusted, for the anchors (thrown away at the end).
export GNUPGHOME="$work/gnupg"
mkdir -p -m 700 "$GNUPGHOME"
gpg --batch --pinentry-mode loopback --passphrase '' --quick-gen-key \
    'Perf Anchor <perf@bench.invalid>' ed25519 sign never 2>/dev/null
fpr=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" {print $10; exit}')
gpg --batch --armor --export "$fpr" >"$work/b/bench/keys/perf-anchor.asc"
printf '  - {fingerprint: %s, identity: perf@bench.example, roles: [reviewer]}\n' "$fpr" \
    >>"$work/b/bench/trusted-signers.yaml"
anchor_over() { # publish today's anchor over the chain as it is (replaces the last one)
    "$bd" -C "$work/b" anchor publish --key "$fpr" >/dev/null
}

sizes=()
have=0
for n in 10000 100000 1000000; do
    [ "$n" -le "$max" ] || break
    sizes+=("$n")
    tail=$((n >= 100000 ? 10000 : n / 10)) # records after the anchor (plus 2,100 below)
    drv gen $((n - have - 2100 - tail)) 1000 >/dev/null
    anchor_over
    drv gen "$tail" 1000 >/dev/null
    m append1 "$work/driver" "$work/b" single 100
    m append500 "$work/driver" "$work/b" gen 2000 500
    have=$n
    top=$n
    rm -rf "$work/b/.benchdesk/index"
    m index_build "$bd" -C "$work/b" history log --task-class vuln-remediation --limit 20
    m log "$bd" -C "$work/b" history log --task-class vuln-remediation --limit 20
    m verify_anchor "$work/driver" "$work/b" anchored
    best=""
    for _ in 1 2 3; do
        m verify "$work/driver" "$work/b" verify
        if [ -z "$best" ] || awk -v a="${r[verify@$n]%% *}" -v b="${best%% *}" 'BEGIN {exit !(a < b)}'; then
            best=${r[verify@$n]}
        fi
    done
    r[verify@$n]=$best
    evict
    m verify_cold "$work/driver" "$work/b" verify
    m gate "$work/driver" "$work/b" gate
    drv gen 500 500 >/dev/null
    have=$((have + 500))
    top=$have
    m gate500 "$work/driver" "$work/b" gate
    m index_extend "$bd" -C "$work/b" history log --task-class vuln-remediation --limit 20
    m rec_hist "$work/driver" "$work/b" recommend
    m rec_all "$bd" -C "$work/b" recommend vuln-remediation --json
    mv "$work/b/audit/anchors" "$work/anchors.aside"
    m rec_noanchor "$bd" -C "$work/b" recommend vuln-remediation --json
    mv "$work/anchors.aside" "$work/b/audit/anchors"
    tui
done

# ---- the table -------------------------------------------------------------------------
rate() { # records/s of an append measurement
    awk '{print $1}' <<<"$1"
}
cell() { # "wall s / cpu s, rss MB" of r[$1@$2]
    local v=${r[$1@$2]:-}
    case "$1" in
    append1 | append500) printf '%s/s' "$(rate "$v")" ;;
    tui_*) [ "$v" = timeout ] && printf 'timeout' || printf '%s ms' "$v" ;;
    *) [ "$v" = fail ] && printf 'fail' || awk '{w=$1; u=$2; if (w < 1) printf "%.0f ms", w*1000; else printf "%.2f s", w; if (u < 1) printf " / %.0f ms", u*1000; else printf " / %.2f s", u; printf ", %d MB", $3}' <<<"$v" ;;
    esac
}
growth() { # 1M / 10k of the first number
    local a=${r[$1@10000]:-} b=${r[$1@1000000]:-}
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" != timeout ] && [ "$b" != timeout ] && [ "$a" != fail ] && [ "$b" != fail ] || { echo "-"; return; }
    awk -v a="${a%% *}" -v b="${b%% *}" 'BEGIN {if (a > 0) printf "x%.1f", b / a; else print "-"}'
}
declare -A label=([append1]="append, one fsync each" [append500]="append, group commit (500)"
    [verify]="history verify (all parsed)" [verify_anchor]="verify, anchored but 12.1k" [verify_cold]="history verify, cold"
    [gate]="run gate, nothing new" [gate500]="run gate, after 500 records" [index_build]="index build (first log)"
    [index_extend]="index extend (+500)" [log]="log --task-class --limit 20" [rec_hist]="recommend, history part"
    [rec_all]="recommend (whole command)" [rec_noanchor]="recommend, no anchor" [tui_hdr]="TUI header verified" [tui_rows]="TUI history first rows"
    [tui_filter]="TUI history filter")
declare -A before=([append1]="-" [append500]="~2,100/s" [verify]="9.75 s (--full)" [verify_anchor]="-" [verify_cold]="47 s"
    [gate]="8-47 s" [gate500]="8-47 s" [index_build]="(none)" [index_extend]="(none)" [log]="-"
    [rec_hist]="-" [rec_all]="0.65 s, 125 MB (trusting the index)" [rec_noanchor]="-" [tui_hdr]="~20 s+" [tui_rows]="-" [tui_filter]="-")
declare -A aim=([append500]=">= 5,000/s" [verify]="<= 3 s" [verify_anchor]="<= 1 s" [gate]="<= 50 ms" [gate500]="<= 50 ms"
    [rec_all]="<= 1 s, 100 MB" [rec_hist]="<= 1 s, 100 MB" [tui_rows]="<= 100 ms" [tui_filter]="<= 300 ms")
echo "benchdesk history at scale — $(nproc) cores, $(df -PT "$work" | awk 'NR==2 {print $2}'), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cells: wall / CPU (user+sys), peak RSS; cold = segments evicted with $cold_how"
hdr=$(printf '%-30s' operation)
for n in "${sizes[@]}"; do hdr+=$(printf ' | %-28s' "$n records"); done
hdr+=$(printf ' | %-9s | %-28s | %s' "10k->1M" "before at 1M (a772fda)" "aim at 1M")
echo "$hdr"
for k in append1 append500 verify verify_anchor verify_cold gate gate500 index_build index_extend log rec_hist rec_all rec_noanchor tui_hdr tui_rows tui_filter; do
    line=$(printf '%-30s' "${label[$k]}")
    for n in "${sizes[@]}"; do line+=$(printf ' | %-28s' "$(cell "$k" "$n")"); done
    line+=$(printf ' | %-9s | %-28s | %s' "$(growth "$k")" "${before[$k]}" "${aim[$k]:-}")
    echo "$line"
done
# recommend's floor: its walk is the anchored verify's (the chain re-hashed under the
# anchor); on top it reads each record of the task class for the evidence.
big=${sizes[-1]}
if [ -n "${r[verify_anchor@$big]:-}" ] && [ -n "${r[rec_hist@$big]:-}" ] &&
    [ "${r[verify_anchor@$big]}" != fail ] && [ "${r[rec_hist@$big]}" != fail ]; then
    read -r aw ac _ <<<"${r[verify_anchor@$big]}"
    read -r rw rc _ <<<"${r[rec_hist@$big]}"
    awk -v aw="$aw" -v ac="$ac" -v rw="$rw" -v rc="$rc" -v n="$big" -v cores="$(nproc)" 'BEGIN {
        printf "recommend at %d records: the walk alone (verify, anchored) %.2f s wall / %.2f s CPU is its floor; ", n, aw, ac
        printf "reading each record for the evidence adds %.2f s CPU (%.2f us a record), %.2f s wall on %d cores\n", rc - ac, (rc - ac) * 1e6 / n, rw - aw, cores }'
fi
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared)."
