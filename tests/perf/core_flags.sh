# Compiler and linker flags for a benchmark's own driver against the core library, which
# is one static library per domain (src/CMakeLists.txt). Source it.
#   bd_core_cflags SOURCE_DIR BUILD_DIR   the domains' include folders, the generated one
#   bd_core_libs BUILD_DIR                the domains' archives, top first, then BLAKE3
bd_core_domains="base bench provenance history run analysis"
bd_core_cflags() {
    local d
    for d in $bd_core_domains; do printf -- '-I%s/src/%s ' "$1" "$d"; done
    printf -- '-I%s/generated' "$2"
}
bd_core_libs() {
    local d out=""
    for d in $bd_core_domains; do out="$1/src/libbd_$d.a $out"; done
    printf '%s %s' "$out" "$1/libbd_blake3.a"
}
