#!/usr/bin/env bash
# test_digest_kat.sh — `benchdesk digest` against the independent reference.
#
# Builds the KAT fixture trees (tests/kat/make_fixtures.py, plus seeded random trees),
# then requires, byte for byte (format v2):
#   - `benchdesk digest DIR`  == tests/kat/case_digest.py DIR   (python stream + b3sum;
#     the case digest, or the task-class digest for a dir holding registration.yaml)
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
[ "$checked" -ge 8 ] || fail "only $checked fixture trees were checked"

# The hard-coded known answers of tests/unit/test_digest.c agree with the reference too.
for pair in \
    empty:8c22b023d07bae20bcec56f47028dce525afd8fee39f10da3e6ac4a4ad89a9bc \
    basic:da9980035bf1720a31fec4d8d4179b2b55b768e9511d7b52d9bbdb0cf1447584 \
    sort:3ffbcc0d2b83ec3c172ffa73f23aa1049205e330dc18d6893f73cb1466d2573b \
    unicode:527ca60d8edd0e95af2ba10098e62cc6507cae43331c6315a8e29b08c30811fb \
    big:ddc6801c7e8ac18fc502927277d9ed40b265480cf4360afc98f5b2b80abc21a8 \
    tclass:4c20f553fd4d32a3fd88702f7d5dbd94bb6a57071b1c3ba75325794081eb5622; do
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
done < <({ find "$tmp/fx/basic" "$tmp/fx/big" "$tmp/fx/unicode" -type f -print0
           find "$tmp/fx/random-1" -type f -print0 | head -z -n 40; })
[ "$files" -ge 20 ] || fail "only $files files were checked"

# The demo bench, format v2: every case and task-class digest recomputed by the reference
# equals `benchdesk digest` and the pin in digests.yaml.
demo=0
for tcdir in "$src"/bench/*/; do
    tcdir=${tcdir%/}
    [ -f "$tcdir/registration.yaml" ] || continue
    pins="$tcdir/cases/digests.yaml"
    want=$(python3 "$kat/case_digest.py" "$tcdir")
    got=$(bd_digest "$tcdir")
    pin=$(awk '$1 == "task_class:" {print $2}' "$pins")
    [ "$got" = "$want" ] && [ "$pin" = "$want" ] ||
        fail "task class ${tcdir##*/}: benchdesk $got, pin $pin, reference $want"
    for cdir in "$tcdir"/cases/*/; do
        cdir=${cdir%/}
        id=${cdir##*/}
        want=$(python3 "$kat/case_digest.py" "$cdir")
        got=$(bd_digest "$cdir")
        pin=$(awk -v id="$id" '$1 == id":" {print $2}' "$pins")
        [ "$got" = "$want" ] && [ "$pin" = "$want" ] ||
            fail "case ${tcdir##*/}/$id: benchdesk $got, pin $pin, reference $want"
        demo=$((demo + 1))
    done
done
[ "$demo" -ge 45 ] || fail "only $demo demo cases were checked"
echo "ok: $demo demo cases and their task classes match the reference and their pins"

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
