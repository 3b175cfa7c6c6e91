#!/usr/bin/env bash
# warm_check_ab.sh — the warm checks of a signed bench (a filled signature memo: no gpg
# runs), two or more benchdesk binaries taking turns, so a change is measured against what
# it changes on the same machine at the same load
# (docs/runner.md#a-signed-bench-end-to-end).
#
#   tests/perf/warm_check_ab.sh BENCH STATE BIN... [-- ROUNDS]
#
# BENCH is a signed bench (tests/perf/make_big_bench.sh, e.g. /tmp/bd-e2e100k/n25000) with
# one task class `bulk`; STATE an XDG_STATE_HOME whose memo holds its signatures (one
# `benchdesk verify` with it fills it: tests/perf/signed_e2e_bench.sh's BD_E2E_STATE). Each
# round runs, for each BIN in turn:
#   verify   `benchdesk verify`, the bench's .benchdesk as it was at the start
#   gate     `benchdesk run bulk --cost-cap 0 --start cold --isolation namespaces --jobs 1`
#            from no .benchdesk (the chain made anew), stopped by the cost cap before the
#            first case
# and checks that every BIN printed the same `verify` output and the same run summary
# (run ids, times and durations aside). The table: the median over ROUNDS (default 3) of wall, CPU
# (user + sys of the command: with the memo filled it starts no process whose time it
# would not reap) and peak RSS, with the load average before each row. The bench's
# .benchdesk is put back as it was at the end.
set -euo pipefail

[ $# -ge 3 ] || {
    echo "usage: $0 BENCH STATE BIN... [-- ROUNDS]" >&2
    exit 2
}
bench=$1 state=$2
shift 2
bins=() rounds=3
while [ $# -gt 0 ]; do
    if [ "$1" = "--" ]; then
        rounds=$2
        break
    fi
    bins+=("$(realpath "$1")")
    shift
done
if [ ! -d "$bench/bench" ] || [ ! -d "$state" ]; then
    echo "$0: no bench at $bench or no state at $state" >&2
    exit 2
fi
command -v /usr/bin/time >/dev/null || {
    echo "$0: /usr/bin/time is missing (Debian package 'time')" >&2
    exit 2
}

work=$(mktemp -d /tmp/bd-warm-ab.XXXXXX)
trap 'rm -rf "$bench/.benchdesk"; [ -d "$work/saved" ] && mv "$work/saved" "$bench/.benchdesk"; rm -rf "$work"' EXIT
[ -d "$bench/.benchdesk" ] && cp -a "$bench/.benchdesk" "$work/saved"

# one ROW BIN I: run the row's command once; appends "wall cpu rss" to $work/<row>.<i>.
one() {
    local row=$1 bin=$2 i=$3
    local out=$work/$row.$i.out
    rm -rf "$bench/.benchdesk"
    if [ "$row" = verify ]; then
        [ -d "$work/saved" ] && cp -a "$work/saved" "$bench/.benchdesk"
        set -- "$bin" -C "$bench" verify
    else
        set -- "$bin" -C "$bench" run bulk --cost-cap 0 --start cold --isolation namespaces --jobs 1
    fi
    XDG_STATE_HOME=$state /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >"$out" 2>"$work/err" || {
        echo "$0: $row with $bin failed:" >&2
        cat "$work/err" >&2
        exit 1
    }
    if [ "$row" = gate ]; then
        cat "$bench"/.benchdesk/runs/*.json >>"$out"
        sed -i -E 's/[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}/RUN/g; s/"(started|finished)_at": *"[^"]*"//g;
            s/"wall_ms": *[0-9]+//; s/^( *wall time).*/\1/' "$out"
    fi
    awk '{printf "%s %.2f %d\n", $1, $2 + $3, $4}' "$work/t" >>"$work/$row.$i"
}

for _ in $(seq "$rounds"); do
    for row in verify gate; do
        for i in "${!bins[@]}"; do
            echo "load $(cut -d' ' -f1 /proc/loadavg)" >>"$work/$row.$i.load"
            one "$row" "${bins[$i]}" "$i"
        done
    done
done

for row in verify gate; do
    for i in "${!bins[@]}"; do
        cmp -s "$work/$row.0.out" "$work/$row.$i.out" || {
            echo "$0: ${bins[$i]} printed another $row output than ${bins[0]}" >&2
            exit 1
        }
    done
done

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf '%-7s %-44s %8s %8s %9s  %s\n' row binary "wall s" "CPU s" "RSS MB" "loads"
for row in verify gate; do
    for i in "${!bins[@]}"; do
        f=$work/$row.$i b=${bins[$i]}
        [ ${#b} -le 44 ] || b=...${b: -41}
        printf '%-7s %-44s %8s %8s %9s  %s\n' "$row" "$b" \
            "$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f2 "$f" | median)" \
            "$(cut -d' ' -f3 "$f" | median | awk '{printf "%.0f", $1 / 1024}')" \
            "$(cut -d' ' -f2 "$f.load" | paste -sd' ')"
    done
done
echo "outputs: identical across the binaries (verify's; the run's and its summary but for ids, times and durations)"
