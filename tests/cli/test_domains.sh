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
# No function over 150 lines (CONTRIBUTING.md): a function body runs from a "{" alone at
# the start of a line to the next "}" alone there, as clang-format lays every function out.
longest() {
    python3 - "$@" <<'PY'
import pathlib, re, sys
over = []
for root in sys.argv[1:]:
    for f in sorted(pathlib.Path(root).rglob("*.c")):
        lines = f.read_text(errors="replace").split("\n")
        i = 0
        while i < len(lines):
            if lines[i] == "{" and i:
                j = i - 1
                while j > 0 and "(" not in lines[j]:
                    j -= 1
                m = re.search(r"([A-Za-z_]\w*)\s*\(", lines[j])
                k = i + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                if k - i + 1 > 150:
                    over.append("%s:%d: %s is %d lines" % (f, i + 1, m.group(1) if m else "?", k - i + 1))
                i = k
            i += 1
print("\n".join(over))
sys.exit(1 if over else 0)
PY
}
out=$(longest src ui) && pass "no function in src/ or ui/ is over 150 lines" || fail "functions over 150 lines:
$out"
mkdir -p "$BD_TMP/long"
{ printf 'int f(void)\n{\n'; for i in $(seq 150); do printf '    (void)0;\n'; done; printf '}\n'; } >"$BD_TMP/long/x.c"
out=$(longest "$BD_TMP/long") && fail "a 152-line function was missed" ||
    { grep -q 'x.c:2: f is 152 lines' <<<"$out" && pass "a planted long function is caught" || fail "long function reported wrongly: $out"; }
finish
