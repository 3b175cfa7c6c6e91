#!/usr/bin/env bash
# Regenerate the screenshots of docs/user-guide.md from what the program draws: each
# ```text block that follows a `<!-- shot: NAME -->` line is replaced by the pane captured
# at 100x28 on a fresh copy of the demo bench (empty rows left out, the copy's path shown
# as /srv/bench-demo). Review the diff before committing it.
#   tests/tui/guide-shots.sh [BUILD_DIR]      (default: build/test)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build/test}
bin="$build/src/benchdesk"
[ -x "$bin" ] || { echo "guide-shots: no $bin; build first" >&2; exit 2; }
command -v tmux >/dev/null || { echo "guide-shots: tmux is required" >&2; exit 2; }
# A path as long as /srv/bench-demo, so the header keeps its layout when it is replaced.
root=/tmp/bench-demo
[ ! -e "$root" ] || { echo "guide-shots: $root exists; move it away first" >&2; exit 2; }
shots=$(mktemp -d)
sock="bdshots-$$"
cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$root" "$shots"; }
trap cleanup EXIT
mkdir -p "$root"
cp -a "$src/bench" "$root/bench"
"$bin" -C "$root" verify >/dev/null 2>&1 || for tc in distroless-migration incident-triage vuln-remediation; do
    "$bin" -C "$root" pin "$tc" >/dev/null
done

tmux -L "$sock" -f /dev/null new-session -d -x 100 -y 28 \
    "env LANG=C.UTF-8 TERM=screen-256color ASAN_OPTIONS=detect_leaks=0 $bin -C $root; sleep 3600"
tmux -L "$sock" set-option -g status off >/dev/null
keys() { tmux -L "$sock" send-keys "$@"; }
wait_for() { # TEXT: until the pane shows it and no spinner turns
    for _ in $(seq 1 600); do
        local p
        p=$(tmux -L "$sock" capture-pane -p)
        if grep -qF -- "$1" <<<"$p" && ! grep -q '[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]' <<<"$p"; then return 0; fi
        sleep 0.1
    done
    echo "guide-shots: '$1' never appeared" >&2
    tmux -L "$sock" capture-pane -p >&2
    exit 1
}
shot() { # NAME: the pane, empty rows left out
    sleep 0.3
    tmux -L "$sock" capture-pane -p | sed -e "s|$root|/srv/bench-demo|g" -e 's/ *$//' | grep -v '^$' >"$shots/$1"
}

wait_for "✓ ok"
shot tclasses
keys / ; keys -l vuln; wait_for "(of 3)"; shot filter
keys Enter; keys Enter; wait_for "ghsa-demo-0018"; shot cases
keys j j j Enter; wait_for "good signature by a trusted reviewer"; shot case
keys '?'; wait_for "Keys of the case view"; shot help
keys q; keys Escape; sleep 0.3; keys Left; wait_for "TASK CLASS"
keys Escape; sleep 0.3; keys Escape; sleep 0.3; keys Left
keys m; wait_for "Messages, newest first"; shot messages
keys q; keys G Enter; wait_for "ghsa-demo-0018"; keys G r; wait_for "REFUSED"; shot run-refused
keys q; wait_for "CASE"; keys R; wait_for "ETA done"; keys g; shot run-finished
keys b; wait_for "What is dragging"; shot breakdown
keys q; keys n; wait_for "FAILED"; shot result
keys h; wait_for "(end of the history)"; shot history
keys q q q q; keys M; wait_for "recommendation for"; shot recommend
keys q; tmux -L "$sock" resize-window -x 70 -y 20; wait_for "Terminal too small"; shot too-small
tmux -L "$sock" resize-window -x 100 -y 28
keys Q

python3 - "$src/docs/user-guide.md" "$shots" <<'PY'
import os, re, sys
path, shots = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
def repl(m):
    name = m.group(1)
    f = os.path.join(shots, name)
    if not os.path.exists(f):
        return m.group(0)
    return "<!-- shot: %s -->\n```text\n%s```" % (name, open(f, encoding="utf-8").read())
new, n = re.subn(r"<!-- shot: ([a-z-]+) -->\n```text\n.*?```", repl, text, flags=re.S)
open(path, "w", encoding="utf-8").write(new)
print("guide-shots: %d screenshots replaced" % n)
PY
