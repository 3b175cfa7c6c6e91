#!/usr/bin/env bash
# import_bench.sh — what merging a sharded run costs (docs/scale.md), side by side with
# what the peers do, in one run:
#
#   tests/perf/import_bench.sh [SHARDS [RECORDS_PER_SHARD]]     (default 100 x 100)
#
# A bench of SHARDS x RECORDS_PER_SHARD pinned cases (tests/fixtures/rubrics/mkbench.py,
# generated once into ${TMPDIR:-/tmp}/benchdesk-perf-import) and the bundles of one run
# over it, written by the shard writer itself (bd_perf_mkbundles: bd_bundle_create,
# bd_history_append_score, bd_bundle_finish — only the rubric is skipped). Best of 3,
# each on a fresh history:
#   benchdesk history import (all bundles)  verify every bundle and pin, append, summary
#   benchdesk history import (again)        the no-op re-import
#   benchdesk history verify                the merged chain alone
#   one writer appends all records          the append floor (one chain, same fsyncs)
#   cat every bundle's records              a merge that checks nothing (the floor of
#                                           moving the bytes; what concatenating shard
#                                           outputs costs)
# and the partition peers: benchdesk's BLAKE3(case id) mod N against Python's hash() mod N
# (what HELM's Slurm sharding used), each computed in two processes: how many cases land
# in another shard the second time. Not a timed test: it reports, it fails only when an
# import fails. Builds the release flavour into build/perf (or $BD_PERF_BUILD).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
shards=${1:-100}
per=${2:-100}
cases=$((shards * per))
build=${BD_PERF_BUILD:-$src/build/perf}
data=${TMPDIR:-/tmp}/benchdesk-perf-import
die() { echo "import_bench: $*" >&2; exit 1; }
command -v b3sum >/dev/null || die "b3sum is missing (Debian package b3sum)"

cmake -S "$src" -B "$build" -DBD_FLAVOUR=release >/dev/null || die "cannot configure $build"
cmake --build "$build" -j"$(nproc)" --target benchdesk bd_perf_mkbundles >/dev/null ||
    die "release build failed"
BD="$build/src/benchdesk"
MK="$build/tests/bd_perf_mkbundles"

bench="$data/bench-$cases"
if [ ! -f "$bench/.done" ]; then
    echo "generating a bench of $cases cases in $bench (once) ..." >&2
    rm -rf "$bench"
    python3 -s "$src/tests/fixtures/rubrics/mkbench.py" "$bench" --trivial "$cases" \
        --only trivial --python "$(command -v python3)" >/dev/null
    "$BD" -C "$bench" migrate >/dev/null 2>&1 || true
    touch "$bench/.done"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/bd-importbench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$MK" "$bench" trivial "$shards" "$work/bundles" perf || die "writing the bundles failed"
bundles=("$work/bundles"/*)

now() { date +%s.%N; }
# best3 CMD...: best wall time of three runs, each after `reset` (a fresh history).
reset() { rm -rf "$bench/.benchdesk/history" "$bench/.benchdesk/runs"; }
best3() {
    local best="" t0 t1 d i
    for i in 1 2 3; do
        [ "${PREP:-}" = reset ] && reset
        t0=$(now)
        "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; die "failed: $*"; }
        t1=$(now)
        d=$(echo "$t1 - $t0" | bc -l)
        if [ -z "$best" ] || [ "$(echo "$d < $best" | bc -l)" = 1 ]; then best=$d; fi
    done
    printf '%s' "$best"
}

t_import=$(PREP=reset best3 "$BD" -C "$bench" history import "${bundles[@]}")
"$BD" -C "$bench" history import "${bundles[@]}" >/dev/null 2>&1 || true
t_again=$(best3 "$BD" -C "$bench" history import "${bundles[@]}")
t_verify=$(best3 "$BD" -C "$bench" history verify)
n=$("$BD" -C "$bench" history verify | sed -n 's/history intact: \([0-9]*\).*/\1/p')
[ "$n" = "$cases" ] || die "the merged chain has $n records, not $cases"
onechain() { rm -rf "$work/one"; "$MK" "$bench" trivial 1 "$work/one" perf1; }
t_append=$(best3 onechain)
# (a bundle's records are a history: segment files of one line a record)
catall() { cat "$work/bundles"/*/records/segments/*.jsonl >"$work/concat.jsonl"; }
t_cat=$(best3 catall)
reset

row() { printf '%-44s %10.3f s %12.0f rec/s\n' "$1" "$2" "$(echo "$cases / $2" | bc -l)"; }
echo
echo "merge of $shards bundles x $per records ($cases records), best of 3, $(nproc) CPUs"
printf '%-44s %12s %16s\n' "what" "wall" "throughput"
row "benchdesk history import (verify + append)" "$t_import"
row "benchdesk history import again (no-op)" "$t_again"
row "benchdesk history verify (merged chain)" "$t_verify"
row "one writer appends all records (floor)" "$t_append"
row "cat of every bundle's records (no checks)" "$t_cat"

# ---- the partition: stable across processes, or not ---------------------------------
ids="$work/ids.txt"
for b in "${bundles[@]}"; do
    python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["cases"]))' \
        "$b/manifest.json"
done | sort >"$ids"
pyhash() {
    PYTHONHASHSEED=random python3 -c '
import sys
n = int(sys.argv[1])
for line in open(sys.argv[2]):
    i = line.rstrip("\n")
    print(i, hash(i) % n)' "$shards" "$ids"
}
b3part() { # the partition recomputed with b3sum: first 8 bytes big-endian mod N
    local d="$work/b3"; rm -rf "$d"; mkdir -p "$d"
    while read -r i; do printf '%s' "$i" >"$d/$i"; done <"$ids"
    (cd "$d" && b3sum -- *) | python3 -c '
import sys
n = int(sys.argv[1])
for line in sys.stdin:
    h, name = line.split(None, 1)
    print(name.strip(), int(h[:16], 16) % n)' "$shards" | sort
}
moved() { join <(sort "$1") <(sort "$2") | awk '$2 != $3' | wc -l; }
pyhash | sort >"$work/py1"; pyhash | sort >"$work/py2"
b3part >"$work/b3a"; b3part >"$work/b3b"
bdpart="$work/bd"
for b in "${bundles[@]}"; do
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); [print(c, m["shard"]) for c in m["cases"]]' "$b/manifest.json"
done | sort >"$bdpart"
echo
echo "partition of $cases case ids into $shards shards, computed twice in separate processes"
printf '%-44s %16s %16s\n' "partition" "moved 2nd time" "= benchdesk's"
printf '%-44s %16s %16s\n' "benchdesk BLAKE3(id) mod N (bundles)" 0 yes
printf '%-44s %16s %16s\n' "b3sum recomputation of the same rule" "$(moved "$work/b3a" "$work/b3b")" \
    "$([ "$(moved "$work/b3a" "$bdpart")" = 0 ] && echo yes || echo no)"
printf '%-44s %16s %16s\n' "Python hash(id) mod N (HELM-style)" "$(moved "$work/py1" "$work/py2")" \
    "$([ "$(moved "$work/py1" "$bdpart")" = 0 ] && echo yes || echo no)"
