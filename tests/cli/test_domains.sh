#!/usr/bin/env bash
# The core's domains (src/<domain>/, docs/architecture.md#domains), bottom to top: base,
# bench, provenance, history, run, analysis. A file may include headers of its own domain
# and of the domains below it, never of one above (the build enforces it too: each
# domain's library sees only those include folders). Every domain has its README, and no
# C file is left in src/ itself.
. "$(dirname "$0")/lib.sh"
cd "$BD_SOURCE_DIR"
order="base bench provenance history run analysis"
# check SRC_DIR: one line per include that reaches upward, or into no known header
check() {
    python3 - "$1" "$order" <<'PY'
import os, re, sys
src, order = sys.argv[1], sys.argv[2].split()
rank = {d: i for i, d in enumerate(order)}
home = {}
for d in order:
    for f in os.listdir(os.path.join(src, d)) if os.path.isdir(os.path.join(src, d)) else []:
        if f.endswith(".h"):
            home[f] = d
bad = 0
for d in order:
    p = os.path.join(src, d)
    for f in sorted(os.listdir(p)) if os.path.isdir(p) else []:
        if not f.endswith((".c", ".h")):
            continue
        for n, line in enumerate(open(os.path.join(p, f), encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
            if not m:
                continue
            h = os.path.basename(m.group(1))
            if h in home and rank[home[h]] > rank[d]:
                print("%s/%s:%d includes %s of %s, a domain above %s" % (d, f, n, h, home[h], d))
                bad += 1
sys.exit(1 if bad else 0)
PY
}
if out=$(check src); then
    pass "no domain includes one above it ($order)"
else
    fail "upward includes:
$out"
fi
for d in $order; do
    [ -s "src/$d/README.md" ] && pass "src/$d has its README" || fail "src/$d/README.md missing"
done
loose=$(find src -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) | tr '\n' ' ')
[ -z "$loose" ] && pass "no C file outside a domain folder" || fail "files in src/ itself: $loose"
# The scan can fail: a planted upward include is caught.
mkdir -p "$BD_TMP/s/base" "$BD_TMP/s/run"
: >"$BD_TMP/s/run/runner.h"
printf '#include "runner.h"\n' >"$BD_TMP/s/base/x.c"
if out=$(check "$BD_TMP/s"); then
    fail "a planted upward include was missed"
else
    grep -q 'base/x.c:1 includes runner.h of run' <<<"$out" && pass "a planted upward include is caught" ||
        fail "planted include reported wrongly: $out"
fi
finish
