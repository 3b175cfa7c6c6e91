#!/usr/bin/env bash
# `pin TC CASE` killed (SIGKILL) at any instant: digests.yaml is the old file or the new
# one, whole — never a mix, never missing — no temporary name is ever inside a case
# directory, and the next `pin` completes. Then `pin` with nothing changing leaves the
# file alone (same inode, same modification time), with one pin changing writes exactly
# what a full `pin` writes, and with a new case inserts its line in order.
. "$(dirname "$0")/lib.sh"
command -v b3sum >/dev/null || { echo "SKIP: needs b3sum (tests/perf/make_big_bench.sh)"; exit 77; }
bd() { "$BD_BIN" "$@"; }
root="$BD_TMP/b"
NO_PIN=1 bash "$BD_SOURCE_DIR/tests/perf/make_big_bench.sh" "$root" 4000 "$BD_BIN" >/dev/null 2>&1 ||
    fail "generating a 4,000-case bench"
tc="$root/bench/bulk"
dig="$tc/cases/digests.yaml"
expect 0 - -- bd -C "$root" pin bulk
one=case-002000
cp "$dig" "$BD_TMP/good"
# spoil: the case's pin set to a digest no case has (its line changes, nothing else).
spoil() {
    python3 - "$dig" "$one" <<'PY'
import sys
path, case = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
key = ("\n  %s: blake3:" % case).encode()
i = data.index(key) + len(key)
open(path, "wb").write(data[:i] + b"0" * 64 + data[i + 64:])
PY
}
spoil
cp "$dig" "$BD_TMP/spoiled"
cmp -s "$BD_TMP/good" "$BD_TMP/spoiled" && fail "spoiling changed nothing"

# ---- SIGKILL at instants spread over the command's life ------------------------------------
# How long one run takes here (the test build is slow), to spread the kills over it.
start=$(date +%s%N)
bd -C "$root" pin bulk "$one" >/dev/null
took_us=$((($(date +%s%N) - start) / 1000))
cmp -s "$dig" "$BD_TMP/good" && pass "pin of $one writes the right file ($took_us us)" ||
    fail "pin of $one wrote something else"
old=0 new=0 bad=0
for i in $(seq 0 39); do
    cp "$BD_TMP/spoiled" "$dig"
    delay=$(awk -v t="$took_us" -v i="$i" 'BEGIN { printf "%.6f", t * i / 36 / 1e6 }')
    "$BD_BIN" -C "$root" pin bulk "$one" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if cmp -s "$dig" "$BD_TMP/spoiled"; then
        old=$((old + 1))
    elif cmp -s "$dig" "$BD_TMP/good"; then
        new=$((new + 1))
    else
        bad=$((bad + 1))
        fail "killed after ${delay}s: digests.yaml is neither the old nor the new file"
    fi
    inside=$(find "$tc/cases" -mindepth 2 \( -name '.benchdesk-tmp.*' -o -name '*.tmp' \))
    [ -z "$inside" ] || fail "killed after ${delay}s: a temporary file inside a case: $inside"
    # A leftover in cases/ is outside every case: harmless, removed here so the next round
    # starts clean.
    rm -f "$tc/cases"/.benchdesk-tmp.*
done
[ "$bad" = 0 ] && pass "40 kills: digests.yaml old $old times, new $new times, never anything else" ||
    fail "$bad kills left a broken digests.yaml"
expect 0 - -- bd -C "$root" pin bulk "$one"
cmp -s "$dig" "$BD_TMP/good" && pass "after the kills, pin completes" || fail "pin after the kills"

# ---- nothing changing: not written; one changing: a full pin's bytes -------------------------
before=$(stat -c '%i %Y.%y %Z' "$dig")
expect 0 - -- bd -C "$root" pin bulk "$one" case-000001 "$one"
expect 0 - -- bd -C "$root" pin bulk
[ "$(stat -c '%i %Y.%y %Z' "$dig")" = "$before" ] &&
    pass "no pin changing: digests.yaml not written (same inode, same times)" ||
    fail "digests.yaml was written with no pin changing"
out=$(bd -C "$root" pin bulk "$one" 2>&1)
grep -q "0 pins changed" <<<"$out" && pass "pin says no pin changed" || fail "pin said: $out"

echo "edited" >"$tc/cases/$one/input/prompt.txt"
expect 0 - -- bd -C "$root" pin bulk "$one"
cp "$dig" "$BD_TMP/one"
rm "$dig"
expect 0 - -- bd -C "$root" pin bulk
cmp -s "$dig" "$BD_TMP/one" && pass "one pin changing: the bytes a full pin writes" ||
    fail "pin of one case wrote other bytes than a full pin: $(diff "$BD_TMP/one" "$dig" | head -5)"

# ---- a new case: its line inserted in id order ------------------------------------------------
expect 0 - -- bd -C "$root" case new bulk case-001999a
expect 0 - -- bd -C "$root" pin bulk case-001999a
cp "$dig" "$BD_TMP/ins"
rm "$dig"
expect 0 - -- bd -C "$root" pin bulk
cmp -s "$dig" "$BD_TMP/ins" && pass "a new case: its line where a full pin puts it" ||
    fail "a new case: other bytes than a full pin: $(diff "$BD_TMP/ins" "$dig" | head -5)"
finish
