#!/usr/bin/env bash
# Regenerate the TUI's expected screen dumps (tests/tui/expected/*.txt) on purpose, after
# a change to what a view shows. Review the diff before committing it.
#   tests/tui/refresh-dumps.sh [BUILD_DIR]      (default: build/test)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build/test}
bin="$build/src/benchdesk"
[ -x "$bin" ] || { echo "refresh-dumps: no $bin; build first (./scripts/test builds build/test)" >&2; exit 2; }
export BD_SOURCE_DIR="$src" BD_BUILD_DIR="$build" BD_BIN="$bin" BD_TUI_REFRESH=1
for t in "$src"/tests/cli/test_tui_*.sh; do
    echo "== $(basename "$t")"
    bash "$t" | grep -E '^(FAIL|ok   dump)' || true
done
git -C "$src" status --short -- tests/tui/expected || true
