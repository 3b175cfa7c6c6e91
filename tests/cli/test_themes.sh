#!/usr/bin/env bash
# Every theme in themes/ keeps the cursor row apart from the column headings: the
# selection role differs from the title role (the light theme once drew both white on
# blue, so the cursor on the first row looked like a second heading).
. "$(dirname "$0")/lib.sh"

for f in "$BD_SOURCE_DIR"/themes/*.yaml; do
    name=$(basename "$f" .yaml)
    if out=$(python3 - "$f" <<'PY'
import sys, yaml
roles = yaml.safe_load(open(sys.argv[1]))["roles"]
def look(r):
    v = roles.get(r, {})
    return (v.get("fg"), v.get("bg"), "reverse" in v.get("attrs", []))  # colours, not bold
sel = look("selection")
same = [r for r in ("title",) if r in roles and look(r) == sel]
print(",".join(same))
sys.exit(1 if same else 0)
PY
    ); then
        pass "$name: the selection differs from the title (column headings)"
    else
        fail "$name: the selection looks like $out"
    fi
done
finish
