#!/usr/bin/env bash
# The rooms of docs/architecture.md, enforced: the core library (src/*.c, src/*.h) never prints
# and never includes curses; only the front ends (src/cli/, ui/) talk to the terminal.
. "$(dirname "$0")/lib.sh"
cd "$BD_SOURCE_DIR"

core=$(find src -path src/cli -prune -o -type f \( -name "*.c" -o -name "*.h" \) -print)
hits=$(grep -nE '\b(printf|vprintf|puts|putchar|perror|fputs|fputc|fprintf|vfprintf|fwrite)\s*\(' $core \
       | grep -vE '^\S+:[0-9]+:\s*(//|/?\*)' | grep -vE '\b(snprintf|vsnprintf)\s*\(' || true)
[ -z "$hits" ] && pass "core never prints" || fail "core prints:
$hits"

hits=$(grep -nE '#\s*include\s*[<"](n?curses|ncursesw/|term\.h|panel\.h)' $core || true)
[ -z "$hits" ] && pass "core never includes curses" || fail "core includes curses:
$hits"

# The scan itself must be able to fail: a planted line is caught.
probe="$BD_TMP/probe.c"
printf 'void f(void) { printf("x"); }\n' >"$probe"
grep -qE '\bprintf\s*\(' "$probe" && pass "scan catches a planted printf" || fail "scan is blind"

# No BLAKE3 sources are vendored.
vend=$(git ls-files 2>/dev/null | grep -iE '(^|/)blake3[^/]*\.(c|S|asm)$' || true)
[ -z "$vend" ] && pass "BLAKE3 not vendored" || fail "BLAKE3 sources committed: $vend"
# Every C file follows the committed .clang-format.
unformatted=$(for f in $(git ls-files '*.c' '*.h'); do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
[ -z "$unformatted" ] && pass "clang-format clean" || fail "not clang-formatted (run clang-format -i): $unformatted"
finish
