# Shared by warm_bench.sh and signed_e2e_bench.sh (source it; it defines functions only).
#
# release_build TARGET...: configures $src/build/release when it is not yet and builds the
# targets there; dies when that fails. Needs $src and a function die.
release_build() {
    local rel="$src/build/release"
    [ -f "$rel/CMakeCache.txt" ] || cmake -S "$src" -B "$rel" -DBD_FLAVOUR=release >/dev/null
    cmake --build "$rel" -j"$(nproc)" --target "$@" >/dev/null || die "release build of $* failed"
}

# warm_bins: sets $BD_BIN — as given, else the release build in $src/build/release,
# configured and built here (benchdesk and benchdesk-warm) — and $PY (BENCHDESK_PYTHON,
# else /usr/bin/python3); dies unless both binaries and the python are there. Needs $src
# and a function die.
warm_bins() {
    PY=${BENCHDESK_PYTHON:-/usr/bin/python3}
    [ -x "$PY" ] || die "no python at $PY (set BENCHDESK_PYTHON)"
    if [ -z "${BD_BIN:-}" ]; then
        release_build benchdesk benchdesk-warm
        BD_BIN="$src/build/release/src/benchdesk"
    fi
    [ -x "$BD_BIN" ] || die "no benchdesk binary at $BD_BIN"
    [ -x "$BD_BIN-warm" ] || die "no $BD_BIN-warm (build it: libpython3.11-dev)"
}
