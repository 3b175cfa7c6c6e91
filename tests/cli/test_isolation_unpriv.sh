#!/usr/bin/env bash
# The isolation tests again as an unprivileged user (CI runs ctest as root; the jail must
# hold both ways): the jail's unit tests (test_jail) and the probe suite (run_probes.py)
# as nobody, through setpriv; and the chokepoint's unit tests (test_exec), so that
# RLIMIT_NPROC of the `subprocess` class — which the kernel does not apply to root — is
# tested on a root machine too, not skipped (test_nproc_enforced must run and pass). When ctest already runs unprivileged, test_isolation.sh and
# unit.test_jail are that run.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
    echo "note: not root (uid $(id -u)): test_isolation.sh and unit.test_jail already ran unprivileged"
    finish
    exit 0
fi
command -v setpriv >/dev/null || { echo "FAIL: setpriv (util-linux) is required to test as an unprivileged user"; exit 1; }
: "${BD_BUILD_DIR:?run through ctest}"
unit="$BD_BUILD_DIR/tests/test_jail"
[ -x "$unit" ] || { fail "no $unit"; finish; }
nobody=65534
tmp="$BD_TMP/nobody"
mkdir -p "$tmp"
chmod 755 "$BD_TMP"
chown "$nobody:$nobody" "$tmp"
as_nobody() {
    setpriv --reuid=$nobody --regid=$nobody --clear-groups \
        env -i PATH=/usr/bin:/bin HOME=/nonexistent TMPDIR="$tmp" BD_SOURCE_DIR="$BD_SOURCE_DIR" \
        BD_BIN="$BD_BIN" BD_BUILD_DIR="$BD_BUILD_DIR" ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
        UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" BD_REQUIRE_NAMESPACES="${BD_REQUIRE_NAMESPACES:-}" "$@"
}
if as_nobody sh -c 'cd "$TMPDIR" && "$0"' "$unit" >"$BD_TMP/unit.log" 2>&1; then
    pass "test_jail as uid $nobody ($(grep -c '^\[       OK' "$BD_TMP/unit.log") tests ok, $(grep -c '^\[  SKIPPED' "$BD_TMP/unit.log") skipped)"
    grep 'test_jail: skipped' "$BD_TMP/unit.log" || true
else
    fail "test_jail as uid $nobody:"
    cat "$BD_TMP/unit.log"
fi
exec_unit="$BD_BUILD_DIR/tests/test_exec"
if as_nobody sh -c 'cd "$TMPDIR" && "$0"' "$exec_unit" >"$BD_TMP/exec.log" 2>&1; then
    pass "test_exec as uid $nobody ($(grep -c '^\[       OK' "$BD_TMP/exec.log") tests ok)"
else
    fail "test_exec as uid $nobody:"
    cat "$BD_TMP/exec.log"
fi
grep -q '^\[       OK \] test_nproc_enforced' "$BD_TMP/exec.log" &&
    pass "subprocess: RLIMIT_NPROC enforced for an unprivileged user (root exempts itself)" ||
    fail "test_nproc_enforced did not run and pass as uid $nobody"
if as_nobody python3 "$BD_SOURCE_DIR/tests/fixtures/isolation/run_probes.py" >"$BD_TMP/probes.log" 2>&1; then
    pass "isolation probes as uid $nobody"
    sed -n '/^probe /,$p' "$BD_TMP/probes.log"
else
    fail "isolation probes as uid $nobody:"
    cat "$BD_TMP/probes.log"
fi
finish
