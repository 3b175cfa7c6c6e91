#!/usr/bin/env bash
# Benchmark: the TUI on a generated bench of 10,000 cases (CONTRIBUTING.md). Prints a table;
# not a timed test (aims: first full screen <= 500 ms, peak RSS <= 64 MB, keys answered
# while a run goes on; at 100,000 cases: first screen <= 100 ms, fully loaded <= 5 s in
# <= 100 MB).
#
#   tests/perf/tui_start.sh [BENCHDESK_BINARY]     (default: build/release/src/benchdesk)
#   CASES=10000 REPEAT=5 tests/perf/tui_start.sh
#   ROOT=DIR    use the bench at DIR (a make_big_bench.sh bench with task class "bulk";
#               the slow task class is added next to it) instead of generating one
#   ONLY_START=1  measure the first screen and the full load only (no key latencies)
#
# How it measures: benchdesk runs in a private tmux server (it needs a terminal) with
# BENCHDESK_TUI_STATS=<file>, which makes it write, when it exits, the time from its
# start to its first complete frame on the terminal (after doupdate), its peak RSS
# (getrusage), its frame count and the latency of every key (from the moment the key is
# readable on stdin to the end of the redraw it caused). BENCHDESK_TUI_EXIT_AFTER=
# first-draw|loaded makes it quit after the first frame, or once every case is read and
# hashed. The process's whole life (exec to exit) is also timed from outside.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${BD_BIN:-$src/build/release/src/benchdesk}}
cases=${CASES:-10000}
repeat=${REPEAT:-5}
[ -x "$bin" ] || { echo "tui_start: no benchmark binary $bin (./scripts/setup --build makes it)" >&2; exit 2; }
command -v tmux >/dev/null || { echo "tui_start: needs tmux" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bd-tuiperf.XXXXXX")
sock="bdperf-$$-$RANDOM"
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
root="$work/bench-root"

# ---- a bench of $cases small cases in one task class, pinned and signed --------------
# (format v2, tests/perf/make_big_bench.sh: the task class and SIGNED cases signed by two
# people, the rest drafts). ROOT=DIR reuses a bench made before (generating 100,000 cases
# takes minutes).
if [ -n "${ROOT:-}" ]; then
    root=$ROOT
else
    SIGNED=${SIGNED:-20} "$src/tests/perf/make_big_bench.sh" "$root" "$cases" "$bin" >/dev/null
fi
cases=$(find "$root/bench/bulk/cases" -mindepth 1 -maxdepth 1 -type d | wc -l)
t0=$(date +%s%N)
"$bin" -C "$root" pin bulk >/dev/null
t1=$(date +%s%N)
pin_ms=$(((t1 - t0) / 1000000))

# A small slow task class next to it, to measure keys while a run goes on.
slowd="$root/bench/slow"
[ "${ONLY_START:-0}" = 1 ] || {
mkdir -p "$slowd/cases"
cat >"$slowd/registration.yaml" <<'EOF'
schema_version: 2
name: slow
description: "Cases that take 0.3 s each (benchmark fixture)."
current_tier: bronze
min_cases_for_promotion: {bronze: 10, silver: 30, gold: 100}
promotion_threshold: {silver: 0.80, gold: 0.90}
breakdown_keys: [answer]
failure_modes:
  - {code: answer.wrong, severity: block, description: "Wrong answer"}
rubric: {wall_clock_seconds: 60, memory_mb: 512}
sut: {kind: cassette}
EOF
cat >"$slowd/rubric.py" <<'EOF'
import json, sys, time
json.load(sys.stdin)
time.sleep(0.3)
print(json.dumps({"passed": True, "score": 1.0, "breakdown": {"answer": 1.0},
                  "failure_modes": [], "cost_usd": 0.0, "wall_clock_ms": 0}))
EOF
for i in $(seq -w 1 40); do
    d="$slowd/cases/slow-$i"
    mkdir -p "$d/input" "$d/expected"
    echo "q" >"$d/input/q.txt"
    echo "a" >"$d/expected/a.txt"
    echo '{}' >"$d/cassette.json"
    printf 'schema_version: 2\ncase_id: slow-%s\ntitle: "Slow %s"\ndisposition: positive\ndifficulty: easy\norigin:\n  source: curated\n  source_ref: {type: synthetic, value: "s%s"}\n  added_at: "2026-11-01T00:00:00Z"\nexpected: {}\ncassette_digest: null\n' "$i" "$i" "$i" >"$d/case.yaml"
done
"$bin" -C "$root" pin slow >/dev/null
}

tmux -L "$sock" -f /dev/null new-session -d -x 120 -y 40 "env LANG=C.UTF-8 PS1='$ ' sh"
tmux -L "$sock" set-option -g status off >/dev/null

cap() { tmux -L "$sock" capture-pane -p; }
wait_for() { # TEXT TIMEOUT_S
    local i=0
    while [ $i -lt $(($2 * 20)) ]; do
        cap | grep -qF -- "$1" && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}
stat_of() { grep "^$1=" "$2" | cut -d= -f2; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "n/a"; else if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# run_once EXIT_AFTER N: start benchdesk N in the pane; wait for it to exit by itself.
run_once() {
    local after=$1 n=$2 st="$work/stats.$1.$2" wall="$work/wall.$1.$2"
    rm -f "$st" "$wall"
    tmux -L "$sock" send-keys -l "clear; s=\$(date +%s%N); BENCHDESK_TUI_STATS=$st BENCHDESK_TUI_EXIT_AFTER=$after $bin -C $root 2>$work/err; e=\$(date +%s%N); echo \$(((e-s)/1000000)) >$wall"
    tmux -L "$sock" send-keys Enter
    local i=0
    while [ ! -s "$wall" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
    [ -s "$st" ] || { echo "tui_start: no stats from run $after/$n: $(cat "$work/err")" >&2; exit 1; }
}

for k in $(seq 1 "$repeat"); do run_once first-draw "$k"; done
first_in=$(for k in $(seq 1 "$repeat"); do stat_of first_draw_ms "$work/stats.first-draw.$k"; done | median)
first_wall=$(for k in $(seq 1 "$repeat"); do cat "$work/wall.first-draw.$k"; done | median)
first_rss=$(for k in $(seq 1 "$repeat"); do stat_of max_rss_kb "$work/stats.first-draw.$k"; done | median)

for k in $(seq 1 "$repeat"); do run_once loaded "$k"; done
load_ms=$(for k in $(seq 1 "$repeat"); do stat_of total_ms "$work/stats.loaded.$k"; done | median)
load_rss=$(for k in $(seq 1 "$repeat"); do stat_of max_rss_kb "$work/stats.loaded.$k"; done | median)
if [ "${ONLY_START:-0}" = 1 ]; then
    # One line for bench_scale.sh: first screen ms, its RSS KB, full load ms, its RSS KB.
    echo "tui_start: first_ms=$first_in first_rss_kb=$first_rss loaded_ms=$load_ms loaded_rss_kb=$load_rss"
    exit 0
fi

# Keys: open the 10,000-case list, then walk it while it is being hashed.
st="$work/stats.keys"
tmux -L "$sock" send-keys -l "clear; BENCHDESK_TUI_STATS=$st $bin -C $root 2>$work/err; echo DONE"
tmux -L "$sock" send-keys Enter
wait_for "TASK CLASS" 30 || { echo "tui_start: the TUI did not start" >&2; exit 1; }
tmux -L "$sock" send-keys Enter
wait_for "1/$cases" 30 || { echo "tui_start: the case list did not open" >&2; exit 1; }
for i in $(seq 1 100); do tmux -L "$sock" send-keys j; sleep 0.02; done
tmux -L "$sock" send-keys End
sleep 0.2
tmux -L "$sock" send-keys q Q
wait_for DONE 60 || true
browse_p50=$(stat_of key_latency_p50_ms "$st")
browse_p95=$(stat_of key_latency_p95_ms "$st")
browse_max=$(stat_of key_latency_max_ms "$st")

# Keys while a run is going (40 cases x 0.3 s): walk the run view up and down.
st="$work/stats.run"
tmux -L "$sock" send-keys -l "clear; BENCHDESK_TUI_STATS=$st $bin -C $root 2>$work/err; echo DONE2"
tmux -L "$sock" send-keys Enter
wait_for "TASK CLASS" 30 || { echo "tui_start: the TUI did not start" >&2; exit 1; }
tmux -L "$sock" send-keys j r
run_p50=n/a run_p95=n/a run_max=n/a fps=n/a
i=0
while [ $i -lt 600 ]; do
    c=$(cap)
    if grep -q "d runs with drafts" <<<"$c"; then tmux -L "$sock" send-keys d; fi
    grep -qE "running [1-9]" <<<"$c" && break
    grep -qE "ABORTED|REFUSED" <<<"$c" && ! grep -q "d runs with drafts" <<<"$c" && break
    sleep 0.05
    i=$((i + 1))
done
if grep -qE "running [1-9]" <<<"$(cap)"; then
    f0=$(date +%s%N)
    for i in $(seq 1 100); do tmux -L "$sock" send-keys j; sleep 0.02; tmux -L "$sock" send-keys k; sleep 0.02; done
    f1=$(date +%s%N)
    tmux -L "$sock" send-keys C-c
    wait_for DONE2 60 || true
    run_p50=$(stat_of key_latency_p50_ms "$st")
    run_p95=$(stat_of key_latency_p95_ms "$st")
    run_max=$(stat_of key_latency_max_ms "$st")
    frames=$(stat_of frames "$st")
    total=$(stat_of total_ms "$st")
    fps=$(awk -v f="$frames" -v t="$total" 'BEGIN {printf "%.0f", f / (t / 1000)}')
else
    echo "tui_start: the run did not start (is the exec helper wired?): $(cap | tail -3)" >&2
    tmux -L "$sock" send-keys Q
fi

printf '\nbenchdesk TUI on a generated bench: %d cases in one task class (+40 slow ones)\n' "$cases"
printf 'binary: %s   repeats: %d (medians)\n\n' "$bin" "$repeat"
printf '%-52s %12s %10s\n' "measure" "value" "aim"
printf '%-52s %12s %10s\n' "----------------------------------------------------" "------------" "----------"
printf '%-52s %9s ms %10s\n' "pin the bench (benchdesk pin, for reference)" "$pin_ms" ""
printf '%-52s %9s ms %10s\n' "start -> first full screen (in process)" "$first_in" "<= 500 ms"
printf '%-52s %9s ms %10s\n' "exec -> exit after first screen (outside)" "$first_wall" ""
printf '%-52s %9s MB %10s\n' "peak RSS at first screen" "$(awk -v k="$first_rss" 'BEGIN{printf "%.1f", k/1024}')" "<= 64 MB"
printf '%-52s %9s ms %10s\n' "start -> every case read, verified, shown" "$load_ms" ""
printf '%-52s %9s MB %10s\n' "peak RSS with every case loaded" "$(awk -v k="$load_rss" 'BEGIN{printf "%.1f", k/1024}')" "<= 64 MB"
printf '%-52s %9s ms %10s\n' "key -> redraw, 10k list while hashing (p50)" "$browse_p50" ""
printf '%-52s %9s ms %10s\n' "key -> redraw, 10k list while hashing (p95)" "$browse_p95" ""
printf '%-52s %9s ms %10s\n' "key -> redraw, 10k list while hashing (max)" "$browse_max" ""
printf '%-52s %9s ms %10s\n' "key -> redraw during a run (p50)" "$run_p50" ""
printf '%-52s %9s ms %10s\n' "key -> redraw during a run (p95)" "$run_p95" ""
printf '%-52s %9s ms %10s\n' "key -> redraw during a run (max)" "$run_max" ""
printf '%-52s %8s /s %10s\n' "frames drawn during the run session" "$fps" ">= 10 /s"
