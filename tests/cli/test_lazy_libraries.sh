#!/usr/bin/env bash
# Libraries opened on first use (docs/architecture.md#lazy-libraries): benchdesk links
# neither libgit2 nor libxml2; a command that needs neither never opens them; `status`
# opens libgit2 and `report --format junit` libxml2 when they run; and when the library is
# not a library, or lacks a function, that command alone fails with env.library_missing
# (exit 4), naming the soname, the reason and the package, while the others still work.
. "$(dirname "$0")/lib.sh"
command -v gcc >/dev/null || { echo "SKIP: needs gcc to build the stand-in libraries"; exit 77; }
PY=$(command -v /usr/bin/python3 || command -v python3)
FX="$BD_TMP/fx"
"$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --trivial 2 --only trivial \
    --python "$PY" >/dev/null
mkdir -p "$BD_TMP/runtmp"

# ---- not linked -------------------------------------------------------------------------
linked=$(ldd "$BD_BIN")
for lib in libgit2 libxml2; do
    grep -q "$lib" <<<"$linked" && fail "benchdesk links $lib: $(grep "$lib" <<<"$linked")" ||
        pass "benchdesk does not link $lib"
done
# What the build opens instead, and the package it names (cmake/lazylibs.cmake).
git_so=$(grep -ao 'libgit2\.so\.[0-9.]*' "$BD_BIN" | head -1)
xml_so=$(grep -ao 'libxml2\.so\.[0-9.]*' "$BD_BIN" | head -1)
[ -n "$git_so" ] && [ -n "$xml_so" ] && pass "sonames in the binary: $git_so, $xml_so" ||
    fail "no soname of libgit2 or libxml2 in the binary"

# opened CMD...: the libraries the dynamic loader loaded while CMD ran (LD_DEBUG=files).
opened() {
    LD_DEBUG=files LD_DEBUG_OUTPUT="$BD_TMP/ld" "$@" >/dev/null 2>&1 || true
    cat "$BD_TMP"/ld.* 2>/dev/null | sed -n 's/.*file=\([^ ;]*\).*/\1/p' | sort -u
    rm -f "$BD_TMP"/ld.*
}

# ---- a command that needs neither opens neither -------------------------------------------
TMPDIR="$BD_TMP/runtmp" "$BD_BIN" -C "$FX" run trivial --isolation subprocess --drafts \
    >/dev/null 2>"$BD_TMP/run.err" || fail "a run to report on: $(cat "$BD_TMP/run.err")"
libs=$(opened "$BD_BIN" -C "$FX" list)
grep -qE "libgit2|libxml2" <<<"$libs" && fail "list opened: $(grep -E 'libgit2|libxml2' <<<"$libs")" ||
    pass "list opens neither libgit2 nor libxml2"
libs=$(opened "$BD_BIN" -C "$FX" report --format markdown)
grep -qE "libgit2|libxml2" <<<"$libs" && fail "report --format markdown opened a lazy library" ||
    pass "report --format markdown opens neither"

# ---- the commands that need them open them --------------------------------------------------
git -C "$FX" init -q 2>/dev/null
libs=$(opened "$BD_BIN" -C "$FX" status)
grep -q "$git_so" <<<"$libs" && pass "status opens $git_so" || fail "status did not open $git_so: $libs"
expect 0 - -- "$BD_BIN" -C "$FX" status
libs=$(opened "$BD_BIN" -C "$FX" report --format junit)
grep -q "$xml_so" <<<"$libs" && pass "report --format junit opens $xml_so" ||
    fail "report --format junit did not open $xml_so: $libs"
"$BD_BIN" -C "$FX" report --format junit >"$BD_TMP/junit.xml" 2>/dev/null &&
    grep -q "<testsuite" "$BD_TMP/junit.xml" && pass "the JUnit report is written" ||
    fail "no JUnit report"

# ---- a stand-in that is no library, and one that lacks every function ---------------------
fake="$BD_TMP/fake"
mkdir -p "$fake"
printf 'not an ELF file\n' >"$fake/$xml_so"
echo 'int bd_stand_in(void) { return 0; }' >"$BD_TMP/stub.c"
gcc -shared -fPIC -Wl,-soname,"$git_so" -o "$fake/$git_so" "$BD_TMP/stub.c" ||
    fail "building the stand-in $git_so"

out=$(LD_LIBRARY_PATH="$fake" "$BD_BIN" -C "$FX" status 2>&1 >/dev/null) && rc=0 || rc=$?
[ "$rc" = 4 ] && pass "status without libgit2's functions -> exit 4" || fail "status -> $rc: $out"
grep -q "^benchdesk: env.library_missing: cannot load $git_so: it has no symbol git_" <<<"$out" &&
    grep -q "install the Debian package libgit2" <<<"$out" &&
    pass "the message names the soname, the missing function and the package" ||
    fail "message: $out"
[ "$(wc -l <<<"$out")" = 1 ] && pass "one line" || fail "more than one line: $out"

out=$(LD_LIBRARY_PATH="$fake" "$BD_BIN" -C "$FX" report --format junit 2>&1 >/dev/null) && rc=0 || rc=$?
[ "$rc" = 4 ] && pass "report --format junit with no real libxml2 -> exit 4" ||
    fail "report junit -> $rc: $out"
grep -q "^benchdesk: env.library_missing: cannot load $xml_so: .*install the Debian package libxml2" <<<"$out" &&
    pass "the message names the soname, the loader's reason and the package" || fail "message: $out"

# The commands that need neither still work with both stand-ins in the way.
expect 0 - -- env LD_LIBRARY_PATH="$fake" "$BD_BIN" -C "$FX" list
expect 0 - -- env LD_LIBRARY_PATH="$fake" "$BD_BIN" -C "$FX" report --format markdown
finish
