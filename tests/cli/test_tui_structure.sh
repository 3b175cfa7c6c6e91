#!/usr/bin/env bash
# The TUI's structure (docs/architecture.md): no dependency cycle among the files of ui/ —
# neither in what they include nor in what their objects link against — and no file
# reading or .git/HEAD parsing in tui.c or the views (the core's fsutil and gitops do it).
. "$(dirname "$0")/lib.sh"
cd "$BD_SOURCE_DIR"
check="$BD_SOURCE_DIR/tests/tui/ui_cycles.py"
lib="$(dirname "$BD_BIN")/../ui/libbenchdesk_ui.a"
[ -f "$lib" ] || { fail "no $lib: build the TUI library first"; finish; }

if out=$(python3 "$check" ui "$lib" 2>&1); then
    pass "no include or link cycle among ui/ files ($(tr '\n' ' ' <<<"$out"))"
else
    fail "ui/ has dependency cycles:
$out"
fi

# The checker can fail: a planted include cycle and a planted link cycle are caught.
mkdir -p "$BD_TMP/ui/views"
printf '#include "b.h"\n' >"$BD_TMP/ui/a.c"
printf '#include "views/b_view.h"\n' >"$BD_TMP/ui/a.h"
printf '#include "a.h"\n' >"$BD_TMP/ui/views/b.c"
: >"$BD_TMP/ui/views/b_view.h"
: >"$BD_TMP/ui/b.h"
if out=$(python3 "$check" "$BD_TMP/ui" 2>&1); then
    fail "the checker missed a planted include cycle: $out"
else
    grep -q 'cycle (includes): a <-> views/b' <<<"$out" && pass "a planted include cycle is caught" ||
        fail "planted include cycle reported wrongly: $out"
fi
if command -v cc >/dev/null; then
    printf 'int g(void); int f(void) { return g(); }\n' >"$BD_TMP/p.c"
    printf 'int f(void); int g(void) { return f(); }\n' >"$BD_TMP/q.c"
    (cd "$BD_TMP" && cc -c p.c q.c && ar rcs libp.a p.o q.o) 2>/dev/null
    # ar names members p.o / q.o; the checker strips ".c.o", so name them as CMake does.
    (cd "$BD_TMP" && mv p.o p.c.o && mv q.o q.c.o && rm -f libp.a && ar rcs libp.a p.c.o q.c.o)
    mkdir -p "$BD_TMP/empty"
    if out=$(python3 "$check" "$BD_TMP/empty" "$BD_TMP/libp.a" 2>&1); then
        fail "the checker missed a planted link cycle: $out"
    else
        grep -q 'cycle (links): p <-> q' <<<"$out" && pass "a planted link cycle is caught" ||
            fail "planted link cycle reported wrongly: $out"
    fi
fi

# tui.c and the views leave reading files and git's HEAD to the core.
hits=$(grep -nE '\b(fopen|opendir|fdopendir|open|openat|read|lstat|fstat)\(|\.git/HEAD' \
       ui/tui.c ui/views/*.c | grep -vE 'fopen\([^)]*"w' | grep -vE 'bd_[a-z_]*open\(|ops->open\(' || true)
[ -z "$hits" ] && pass "no file reading or .git/HEAD parsing in tui.c or the views" ||
    fail "tui.c or a view reads files itself (use fsutil.h / gitops.h):
$hits"
# ... and the scan can fail.
printf 'int x(void) { return open("f", 0); }\n' >"$BD_TMP/probe.c"
grep -qE '\bopen\s*\(' "$BD_TMP/probe.c" && pass "the scan catches a planted open()" || fail "scan is blind"

# Every action an error can carry (err.h) has words on the command line (src/cli/common.c)
# and in the TUI (ui/err_keys.c), and neither table words an action err.h does not have.
if out=$(python3 - src/base/err.h src/cli/common.c ui/err_keys.c <<'PY'
import re, sys
head = open(sys.argv[1], encoding="utf-8").read()
table = head[head.index("#define BD_ERROR_ACTIONS"):]
table = table[:table.index("typedef")]
actions = re.findall(r"X\((BD_ACT_\w+),", table)
bad = []
for f in sys.argv[2:]:
    words = set(re.findall(r"\[(BD_ACT_\w+)\]\s*=", open(f, encoding="utf-8").read()))
    words.discard("BD_ACT__COUNT")
    bad += ["%s: no words for %s" % (f, a) for a in actions if a not in words]
    bad += ["%s: words for unknown %s" % (f, w) for w in sorted(words - set(actions))]
print("%d actions" % len(actions))
if bad:
    print("\n".join(bad))
sys.exit(1 if bad or not actions else 0)
PY
); then
    pass "every action has a CLI rendering and a TUI rendering ($out)"
else
    fail "an action lacks a rendering:
$out"
fi

# No view includes another view's header: views speak through app.h (events, bd_app_open)
# and the models (session.h starts a run), never to each other directly.
cross() { # DIR: "view.c: views/other_view.h" lines
    local c b
    for c in "$1"/views/*.c; do
        b=$(basename "$c" .c)
        grep -oE '#\s*include\s*"views/[a-z_]+_view\.h"' "$c" | grep -oE '[a-z_]+_view\.h' |
            grep -vx "${b}_view.h" | sed "s|^|$b.c: |" || true
    done
}
hits=$(cross ui)
[ -z "$hits" ] && pass "no view includes another view's header" ||
    fail "views include each other (go through app.h or a model):
$hits"
mkdir -p "$BD_TMP/xv/views"
printf '#include "views/b_view.h"\n' >"$BD_TMP/xv/views/a.c"
[ -n "$(cross "$BD_TMP/xv")" ] && pass "a planted cross-view include is caught" ||
    fail "the cross-view scan is blind"

# Every view has one header, and app.c alone implements the bd_app API.
for c in ui/views/*.c; do
    b=$(basename "$c" .c)
    [ -f "ui/views/${b}_view.h" ] || fail "views/$b.c has no header views/${b}_view.h"
done
pass "every view has its header"
impl=$(grep -lE '^[a-z].*\bbd_app_[a-z_]+\(bd_app \*app' ui/*.c ui/views/*.c | sort -u | tr '\n' ' ')
[ "$impl" = "ui/app.c " ] && pass "bd_app_* is implemented in app.c only" ||
    fail "bd_app_* functions are defined in: $impl"
finish
