#!/usr/bin/env bash
# Benchmark: benches of 1k, 10k and 100k cases (CONTRIBUTING.md; issue "A bench of 100,000
# cases"). Prints one table: wall time, CPU time (user + system, every thread and child
# process: the machine may be shared, so wall time alone says little) and peak RSS of
# `list`, `list TC --json`, `verify`, `pin` of every case with every pin changing, `pin`
# of one case, the run gate with one case, and the TUI's first screen and full load
# (tests/perf/tui_start.sh, in tmux), for this build ("after") and, side by side, a build
# of the code before the change ("before", when given), plus a peer that reads and hashes
# every file of the cases: `b3sum` (a process per batch of files, no listing of its own;
# no floor: verify beats it — the floor of a full check is tests/perf/walkfloor.c, printed
# by tests/perf/signed_e2e_bench.sh). Then the growth from the smallest to the largest
# bench and the load average during the run. Not a timed test.
#
#   tests/perf/bench_scale.sh [AFTER_BINARY] [BEFORE_BINARY]
#       (default after: build/release/src/benchdesk; before: build/before/src/benchdesk
#        when it exists — build main there to compare; it must read format v2)
#   SIZES="1000 10000 100000"   bench sizes
#   WORK=DIR                    where the benches are generated (kept, and reused when
#                               present: generating 100k cases takes minutes)
#   SIGNED=20                   cases signed in each bench (make_big_bench.sh)
#   TUI=0                       skip the TUI rows (they need tmux)
#   TUI_BEFORE_MAX=10000        largest bench the "before" TUI is timed on (it took
#                               40 s at 10k cases; minutes at 100k)
#
# Every bench is made by tests/perf/make_big_bench.sh: task class "bulk", pinned, its task
# class signed by two people, SIGNED cases signed by two people, the rest drafts.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
after=${1:-$src/build/release/src/benchdesk}
before=${2:-$src/build/before/src/benchdesk}
sizes=${SIZES:-1000 10000 100000}
work=${WORK:-${TMPDIR:-/tmp}/bd-scale}
[ -x "$after" ] || { echo "bench_scale: no benchmark binary $after" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_scale: needs /usr/bin/time (Debian: time)" >&2; exit 2; }
[ -x "$before" ] || before=""
mkdir -p "$work"
export TMPDIR="$work/tmp"
mkdir -p "$TMPDIR"

# measure CMD...: run CMD once (stdout dropped), print "seconds cpu-seconds MB exit".
measure() {
    local t="$work/time.$$" rc=0
    /usr/bin/time -f '%e %U %S %M' -o "$t" "$@" >/dev/null 2>"$work/stderr.$$" || rc=$?
    local e u s m
    # The last line: time writes "Command exited with non-zero status N" above it.
    read -r e u s m < <(tail -n 1 "$t")
    printf '%s %s %s %s\n' "$e" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')" \
        "$((m / 1024))" "$rc"
}

# A cell: "1.23 s (cpu 2.10) 45 MB", or the error code the command stopped with.
cell() {
    local e=$1 c=$2 m=$3 rc=$4
    if [ "$rc" != 0 ]; then
        local code
        code=$(grep -o 'benchdesk: [a-z_]*\.[a-z_]*' "$work/stderr.$$" | head -n 1 | cut -d' ' -f2 || true)
        printf '%s' "exit $rc ${code:-}"
    else
        printf '%s s (cpu %s) %s MB' "$e" "$c" "$m"
    fi
}

# tui BINARY ROOT: the TUI's first screen and full load on ROOT, as two cells "first|load".
tui() {
    local out
    if ! out=$(ROOT=$2 ONLY_START=1 REPEAT=1 "$src/tests/perf/tui_start.sh" "$1" 2>&1 | grep '^tui_start: first_ms='); then
        printf 'failed|failed'
        return
    fi
    local f fr l lr
    f=$(sed -E 's/.*first_ms=([0-9.]+).*/\1/' <<<"$out")
    fr=$(sed -E 's/.*first_rss_kb=([0-9]+).*/\1/' <<<"$out")
    l=$(sed -E 's/.*loaded_ms=([0-9.]+).*/\1/' <<<"$out")
    lr=$(sed -E 's/.*loaded_rss_kb=([0-9]+).*/\1/' <<<"$out")
    printf '%s ms %s MB|%s s %s MB' "$f" "$((fr / 1024))" \
        "$(awk -v l="$l" 'BEGIN { printf "%.2f", l / 1000 }')" "$((lr / 1024))"
}

# Every case pin set to a digest no case has, so the next `pin` changes all of them.
spoil_pins() {
    sed -i -E 's/^(  [a-z0-9._-]+: )blake3:[0-9a-f]{64}$/\1blake3:0000000000000000000000000000000000000000000000000000000000000000/' \
        "$1/bench/bulk/cases/digests.yaml"
}

declare -A res load
for n in $sizes; do
    root="$work/b$n"
    if [ ! -f "$root/bench/bulk/cases/digests.yaml" ]; then
        rm -rf "$root"
        echo "generating $n cases in $root ..." >&2
        SIGNED=${SIGNED:-20} "$src/tests/perf/make_big_bench.sh" "$root" "$n" "$after" >&2
    fi
    one=$(ls "$root/bench/bulk/cases" | grep -v '^digests.yaml$' | sed -n 1p)
    for who in after before; do
        bin=${!who}
        [ -n "$bin" ] || continue
        # Pin first so this binary starts from its own, correct pins.
        "$bin" -C "$root" pin bulk >/dev/null 2>&1 || true
        res[$who,$n,list]=$(cell $(measure "$bin" -C "$root" list))
        res[$who,$n,listtc]=$(cell $(measure "$bin" -C "$root" list bulk --json))
        res[$who,$n,verify]=$(cell $(measure "$bin" -C "$root" verify))
        spoil_pins "$root"
        res[$who,$n,pinall]=$(cell $(measure "$bin" -C "$root" pin bulk))
        res[$who,$n,pinone]=$(cell $(measure "$bin" -C "$root" pin bulk "$one"))
        res[$who,$n,gate]=$(cell $(measure "$bin" -C "$root" run bulk --case "$one" \
            --isolation subprocess --allow-weaker-isolation --jobs 1))
        "$after" -C "$root" pin bulk >/dev/null 2>&1 || true
        if [ "${TUI:-1}" = 1 ] && command -v tmux >/dev/null &&
            { [ "$who" = after ] || [ "$n" -le "${TUI_BEFORE_MAX:-10000}" ]; }; then
            t=$(tui "$bin" "$root")
            res[$who,$n,tuifirst]=${t%%|*}
            res[$who,$n,tuiload]=${t##*|}
        else
            res[$who,$n,tuifirst]="not measured"
            res[$who,$n,tuiload]="not measured"
        fi
    done
    res[peer,$n,b3sum]=$(cell $(measure sh -c "find '$root/bench/bulk/cases' -type f -print0 | xargs -0 b3sum"))
    load[$n]=$(cut -d' ' -f1-3 /proc/loadavg)
done

ops="list listtc verify pinall pinone gate tuifirst tuiload"
declare -A label=([list]="list" [listtc]="list bulk --json" [verify]="verify"
    [pinall]="pin (all change)" [pinone]="pin (one case)" [gate]="run gate + 1 case"
    [tuifirst]="TUI first screen" [tuiload]="TUI fully loaded")
printf '\n%-20s %-8s' "operation" "build"
for n in $sizes; do printf ' %-30s' "$n cases"; done
printf '\n'
for op in $ops; do
    for who in after before; do
        [ "$who" = before ] && [ -z "$before" ] && continue
        printf '%-20s %-8s' "${label[$op]}" "$who"
        for n in $sizes; do printf ' %-30s' "${res[$who,$n,$op]}"; done
        printf '\n'
    done
done
printf '%-20s %-8s' "b3sum every file" "peer"
for n in $sizes; do printf ' %-30s' "${res[peer,$n,b3sum]}"; done
printf '\n%-20s %-8s' "load average" ""
for n in $sizes; do printf ' %-30s' "${load[$n]}"; done
printf '\n'

# Growth from the smallest to the largest bench, this build.
set -- $sizes
first=$1
last=${!#}
printf '\ngrowth %s -> %s cases (after): ' "$first" "$last"
for op in $ops; do
    a=${res[after,$first,$op]} b=${res[after,$last,$op]}
    ta=${a%% *} tb=${b%% *} ma=$(awk '{print $(NF-1)}' <<<"$a") mb=$(awk '{print $(NF-1)}' <<<"$b")
    if [[ $ta =~ ^[0-9.]+$ && $tb =~ ^[0-9.]+$ && $ma =~ ^[0-9]+$ && $mb =~ ^[0-9]+$ ]]; then
        printf '%s: time x%s, RSS %s -> %s MB; ' "${label[$op]}" \
            "$(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.0f", (a > 0.005 ? b / a : b / 0.005) }')" "$ma" "$mb"
    fi
done
printf '\n'
rm -f "$work/time.$$" "$work/stderr.$$"
