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
# Every C file follows the committed .clang-format: one clang-format over all of them (a
# start per file took a minute here), each file it objects to named once. A failure that
# names no file (a bad .clang-format, a crash) is a failure too, with what it said.
unformatted_among() { # FILE... (NUL-separated on stdin) -> the files not formatted; 1 when clang-format failed otherwise
    local out rc=0
    out=$(xargs -0 clang-format --style=file:"$BD_SOURCE_DIR/.clang-format" --dry-run -Werror 2>&1 >/dev/null) || rc=$?
    local named
    named=$(sed -nE 's/^(.+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
    if [ "$rc" != 0 ] && [ -z "$named" ]; then
        echo "clang-format failed (exit $rc): $(head -3 <<<"$out")"
        return 1
    fi
    printf '%s' "$named"
}
if unformatted=$(git ls-files -z '*.c' '*.h' | unformatted_among); then
    [ -z "$unformatted" ] && pass "clang-format clean" || fail "not clang-formatted (run clang-format -i): $unformatted"
else
    fail "$unformatted"
fi
# The same scan must be able to fail: a planted file out of format is named.
printf 'int  x ;\n' >"$BD_TMP/planted.c"
planted=$(printf '%s\0%s\0' "$BD_SOURCE_DIR/src/run/exec.h" "$BD_TMP/planted.c" | unformatted_among || true)
[ "$planted" = "$BD_TMP/planted.c" ] && pass "format scan names a planted file and only it" ||
    fail "format scan missed a planted file: '$planted'"
finish
