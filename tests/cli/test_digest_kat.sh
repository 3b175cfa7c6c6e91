#!/usr/bin/env bash
# test_digest_kat.sh — `benchdesk digest` against the independent reference.
#
# Builds the KAT fixture trees (tests/kat/make_fixtures.py, plus seeded random trees),
# then requires, byte for byte:
#   - `benchdesk digest DIR`  == tests/kat/case_digest.py DIR   (python stream + b3sum)
#   - `benchdesk digest FILE` == "blake3:" + `b3sum --no-names FILE`, for every file
#   - stdout is exactly "blake3:<64 hex>\n", nothing on stderr, exit 0
# and refusals: a symlink or FIFO in a case exits 1 with case.unsupported_entry.
set -euo pipefail

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

: "${BD_BIN:?BD_BIN must name the benchdesk binary}"
src="${BD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
kat="$src/tests/kat"
[ -x "$BD_BIN" ] || fail "benchdesk binary not found at $BD_BIN"
command -v python3 >/dev/null || fail "python3 is needed for the reference digests"
command -v b3sum >/dev/null || fail "b3sum is needed for the reference digests (Debian package b3sum)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bd-digest-kat.XXXXXX")
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# Exact stdout, empty stderr, exit 0; echoes the digest.
bd_digest() {
    local path=$1 rc=0
    "$BD_BIN" digest "$path" >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 0 ] || fail "benchdesk digest $path exited $rc: $(cat "$tmp/err")"
    [ ! -s "$tmp/err" ] || fail "benchdesk digest $path wrote to stderr: $(cat "$tmp/err")"
    local got
    got=$(cat "$tmp/out")
    [[ "$got" =~ ^blake3:[0-9a-f]{64}$ ]] || fail "benchdesk digest $path printed '$got'"
    printf '%s\n' "$got" | cmp -s - "$tmp/out" ||
        fail "benchdesk digest $path: output is not exactly one line 'blake3:<hex>\\n'"
    printf '%s' "$got"
}

checked=0
python3 "$kat/make_fixtures.py" --random 1 "$tmp/fx" >/dev/null
python3 "$kat/make_fixtures.py" --random 2 "$tmp/fx" >/dev/null
for dir in "$tmp"/fx/*/; do
    dir=${dir%/}
    want=$(python3 "$kat/case_digest.py" "$dir") || fail "reference failed on $dir"
    got=$(bd_digest "$dir")
    [ "$got" = "$want" ] || fail "case digest of ${dir##*/}: benchdesk $got, reference $want"
    # trailing slash: same digest
    got=$(bd_digest "$dir/")
    [ "$got" = "$want" ] || fail "case digest of ${dir##*/}/ (trailing slash) differs: $got"
    checked=$((checked + 1))
done
[ "$checked" -ge 7 ] || fail "only $checked fixture trees were checked"

# The hard-coded known answers of tests/unit/test_digest.c agree with the reference too.
for pair in \
    empty:c3f16f21bb7b2c4f830ad7b8c8b8cb140a3d810cf76cea3e74333c5755bd8108 \
    basic:85d6471c1c72f1b4551829ffbc51f5003acc193aa4206e7a91a3f89b06a7711a \
    sort:388c57686b9b88f765384f59b1eefccc1c80295fd432c75badffa787cf5b7e7d \
    unicode:da38e1135fe55887211d54f6abbca943b066d5ecd4a2c8b01641ffd63912a96d \
    big:56ef7d649bbd86b8c3dbf5c8522d29b00e5dce24f6030d610bc0adf307ab3df8; do
    name=${pair%%:*}
    got=$(bd_digest "$tmp/fx/$name")
    [ "$got" = "blake3:${pair#*:}" ] || fail "KAT $name: got $got, want blake3:${pair#*:}"
done

files=0
while IFS= read -r -d '' f; do
    want="blake3:$(b3sum --no-names "$f")"
    got=$(bd_digest "$f")
    [ "$got" = "$want" ] || fail "file digest of $f: benchdesk $got, b3sum $want"
    files=$((files + 1))
done < <(find "$tmp/fx/basic" "$tmp/fx/big" "$tmp/fx/unicode" "$tmp/fx/random-1" -type f -print0)
[ "$files" -ge 20 ] || fail "only $files files were checked"

# Refusals: exit status 1, stable code, the entry named; nothing on stdout.
expect_refusal() {
    local path=$1 needle=$2 rc=0
    "$BD_BIN" digest "$path" >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "benchdesk digest $path: exit $rc, want 1 ($(cat "$tmp/err"))"
    grep -q "case.unsupported_entry" "$tmp/err" || fail "no case.unsupported_entry: $(cat "$tmp/err")"
    grep -qF -- "$needle" "$tmp/err" || fail "error does not name '$needle': $(cat "$tmp/err")"
    [ ! -s "$tmp/out" ] || fail "benchdesk digest $path printed on stdout when refusing"
}
cp -a "$tmp/fx/basic" "$tmp/bad1"
ln -s prompt.txt "$tmp/bad1/input/link"
expect_refusal "$tmp/bad1" "input/link"
cp -a "$tmp/fx/basic" "$tmp/bad2"
mkfifo "$tmp/bad2/nested/deep/pipe"
expect_refusal "$tmp/bad2" "nested/deep/pipe"
ln -s "$tmp/fx/basic" "$tmp/caselink"
expect_refusal "$tmp/caselink" "symbolic link"
expect_refusal "$tmp/caselink/" "symbolic link"
expect_refusal "$tmp/bad1/input/link" "symbolic link"

echo "ok: $checked case trees and $files files match the reference; refusals checked"
