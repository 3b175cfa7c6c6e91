#!/usr/bin/env bash
# digest_throughput.sh — case-digest throughput of `benchdesk digest` against b3sum.
#
#   tests/perf/digest_throughput.sh [DATA_DIR]
#
# Generates (once, then reuses) a ~1 GiB case directory in DATA_DIR (default
# $TMPDIR/benchdesk-perf-digest): 3 files of 256 MiB and 16384 small files of 1–31 KiB
# in 64 directories. Writes, once, the exact docs/formats.md#digests byte stream of that case to
# stream.bin (tests/kat/case_digest.py, which also checks benchdesk's digest of the 1 GiB
# case against the reference). Then, warm cache, best of 3 runs each, prints a table:
#   benchdesk digest CASE              the thing measured (single thread, read + BLAKE3)
#   b3sum --num-threads 1 stream.bin   the same bytes in one file: the yardstick
#   b3sum --num-threads 1 FILES...     the case's files one by one (per-file cost)
#   b3sum (all threads) stream.bin     for context only
# Target: benchdesk >= 0.7x single-thread b3sum. Not a timed test: it reports, it does
# not fail on speed (it fails only if a digest is wrong or a tool is missing).
#
# Uses BD_BIN if set, else the release build in build/release (configured and built here
# with -DBD_FLAVOUR=release when needed).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
data=${1:-${TMPDIR:-/tmp}/benchdesk-perf-digest}
case_dir="$data/case"
stream="$data/stream.bin"
stamp="$data/layout-v1.done"
runs=3

die() {
    echo "digest_throughput: $*" >&2
    exit 1
}
command -v b3sum >/dev/null || die "b3sum is missing (Debian package b3sum)"
command -v python3 >/dev/null || die "python3 is missing"
mkdir -p "$data"

# ---- the binary: release flavour -----------------------------------------------------
if [ -z "${BD_BIN:-}" ]; then
    rel="$src/build/release"
    if [ ! -f "$rel/CMakeCache.txt" ]; then
        cmake -S "$src" -B "$rel" -DBD_FLAVOUR=release >/dev/null || die "cannot configure $rel"
    fi
    if ! cmake --build "$rel" -j"$(nproc)" --target benchdesk >"$data/build.log" 2>&1; then
        [ -x "$rel/src/benchdesk" ] || die "release build failed, see $data/build.log"
        echo "warning: release rebuild failed (see $data/build.log); using the existing binary" >&2
    else
        rm -f "$data/build.log"
    fi
    BD_BIN="$rel/src/benchdesk"
fi
[ -x "$BD_BIN" ] || die "no benchdesk binary at $BD_BIN"
grep -q -- "-fsanitize" "$(dirname "$BD_BIN")/../CMakeCache.txt" 2>/dev/null &&
    echo "warning: $BD_BIN looks like a sanitizer build; numbers will be low" >&2

# ---- the data, generated once ----------------------------------------------------------
if [ ! -f "$stamp" ]; then
    echo "generating ~1 GiB case in $case_dir (once) ..." >&2
    rm -rf "$case_dir" "$stream"
    mkdir -p "$case_dir"
    python3 - "$case_dir" <<'EOF'
import os, random, sys
top = sys.argv[1]
rng = random.Random(42)
block = os.urandom(1 << 20)
for i in range(3):  # large files: 256 MiB each
    with open(os.path.join(top, "large-%d.bin" % i), "wb") as f:
        for _ in range(256):
            f.write(os.urandom(1 << 20))
for d in range(64):  # 16384 small files, 1..31 KiB, ~256 MiB in all
    sub = os.path.join(top, "inputs", "d%02d" % d)
    os.makedirs(sub)
    for k in range(256):
        size = rng.randint(1024, 31 * 1024)
        off = rng.randint(0, len(block) - size)
        with open(os.path.join(sub, "f%03d.txt" % k), "wb") as f:
            f.write(block[off:off + size])
        if k % 7 == 0:
            os.chmod(os.path.join(sub, "f%03d.txt" % k), 0o755)
with open(os.path.join(top, "case.yaml"), "w") as f:
    f.write("schema_version: 1\ncase_id: perf\n")
EOF
    touch "$stamp"
fi
if [ ! -f "$stream" ] || [ "$stream" -ot "$stamp" ]; then
    echo "writing the digest entry stream (docs/formats.md#digests) to $stream (once) ..." >&2
    python3 "$src/tests/kat/case_digest.py" --stream "$stream" "$case_dir" >"$data/reference.txt"
fi

# ---- correctness first ------------------------------------------------------------------
want=$(cat "$data/reference.txt")
got=$("$BD_BIN" digest "$case_dir")
[ "$got" = "$want" ] || die "benchdesk digest $got differs from the reference $want"
want_stream="blake3:$(b3sum --no-names --num-threads 1 "$stream")"
[ "$want_stream" = "$want" ] || die "stream file digest $want_stream differs from $want"

mapfile -d '' files < <(find "$case_dir" -type f ! -path "$case_dir/case.yaml" -print0 | sort -z)
stream_bytes=$(stat -c %s "$stream")
file_bytes=$(find "$case_dir" -type f ! -path "$case_dir/case.yaml" -printf '%s\n' |
    awk '{s += $1} END {print s}')

# ---- timing: warm once, best of $runs -------------------------------------------------
load=$(cut -d' ' -f1 /proc/loadavg) # before our own runs add to it
b3_files() { printf '%s\0' "${files[@]}" | xargs -0 b3sum --num-threads 1 --no-names; }
tools=(bd b3 b3f b3mt)
run_tool() {
    case $1 in
    bd) "$BD_BIN" digest "$case_dir" ;;
    b3) b3sum --num-threads 1 --no-names "$stream" ;;
    b3f) b3_files ;;
    b3mt) b3sum --no-names "$stream" ;;
    esac >/dev/null
}
declare -A best best_cpu
for t in "${tools[@]}"; do run_tool "$t"; done # warm the cache
# Rounds interleave the tools so a burst of outside load hits them alike. Wall and CPU
# (user + sys, children included) seconds, best of the rounds for each.
TIMEFORMAT='%3R %3U %3S'
for _ in $(seq "$runs"); do
    for t in "${tools[@]}"; do
        { time run_tool "$t"; } 2>"$data/time.txt"
        read -r wall usr sys <"$data/time.txt"
        cpu=$(awk -v u="$usr" -v s="$sys" 'BEGIN {printf "%.3f", u + s}')
        if [ -z "${best[$t]:-}" ] || awk -v a="$wall" -v b="${best[$t]}" 'BEGIN {exit !(a < b)}'; then
            best[$t]=$wall
        fi
        if [ -z "${best_cpu[$t]:-}" ] || awk -v a="$cpu" -v b="${best_cpu[$t]}" 'BEGIN {exit !(a < b)}'; then
            best_cpu[$t]=$cpu
        fi
    done
done
rm -f "$data/time.txt"

row() { # name bytes tool
    awk -v name="$1" -v bytes="$2" -v s="${best[$3]}" -v c="${best_cpu[$3]}" \
        -v ref_s="${best[b3]}" -v ref_c="${best_cpu[b3]}" -v ref_bytes="$stream_bytes" 'BEGIN {
        mbs = bytes / 1e6 / s; ref = ref_bytes / 1e6 / ref_s;
        printf "%-38s %8.3f %8.0f %8.2fx %8.3f %8.2fx\n", name, s, mbs, mbs / ref, c,
               (bytes / c) / (ref_bytes / ref_c) }'
}
echo
awk -v l="$load" -v c="$(nproc)" 'BEGIN { if (l + 0 > c / 2)
    printf "warning: load average %s on %d CPUs: other work is competing, wall times are noisy (the CPU columns less so)\n", l, c }' >&2
echo "digest throughput: $(awk -v b="$stream_bytes" 'BEGIN {printf "%.0f", b/1e6}') MB stream," \
    "${#files[@]} files, best of $runs, warm cache, $(nproc) CPUs, load $load"
printf '%-38s %8s %8s %9s %8s %9s\n' "tool" "seconds" "MB/s" "vs b3sum" "cpu s" "cpu vs"
row "benchdesk digest CASE" "$stream_bytes" bd
row "b3sum --num-threads 1 stream.bin" "$stream_bytes" b3
row "b3sum --num-threads 1 FILES (xargs)" "$file_bytes" b3f
row "b3sum (all threads) stream.bin" "$stream_bytes" b3mt
awk -v a="${best[bd]}" -v b="${best[b3]}" -v ac="${best_cpu[bd]}" -v bc="${best_cpu[b3]}" 'BEGIN {
    r = b / a; printf "\nbenchdesk / b3sum single-thread = %.2fx wall, %.2fx cpu (target >= 0.70x): %s\n",
    r, bc / ac, (r >= 0.7 ? "met" : "NOT met") }'
