# Shared helpers for the TUI tests: drive `benchdesk` in a private tmux server, poll the
# pane until what we expect appears (never fixed long sleeps), compare masked screen dumps
# with tests/tui/expected/, and check the terminal was restored.
#
# Source it after tests/cli/lib.sh. Every test calls tui_start, then tui_stop (also run
# from the EXIT trap, so a failing test never leaves a tmux server behind).
#
#   BD_TUI_REFRESH=1   write the dumps instead of comparing (tests/tui/refresh-dumps.sh)
#   BD_TUI_TIMEOUT=S   how long to wait for the screen (default 30 s; ASan is slow)

: "${BD_TUI_TIMEOUT:=30}"
TUI_SOCK=""
TUI_EXPECTED="$BD_SOURCE_DIR/tests/tui/expected"
TUI_LAST=""

if ! command -v tmux >/dev/null; then
    echo "SKIP: tmux is not installed (Debian package tmux); the TUI tests need it"
    exit 77 # ctest reports it skipped (SKIP_RETURN_CODE), never passed
fi

_tui_cleanup() {
    [ -n "$TUI_SOCK" ] && tmux -L "$TUI_SOCK" kill-server 2>/dev/null
    rm -rf "$BD_TMP"
}
trap _tui_cleanup EXIT

# tui_start COLS ROWS [LANG]: a tmux server with one pane running a plain sh.
tui_start() {
    local cols=$1 rows=$2 lang=${3:-C.UTF-8}
    TUI_SOCK="bdtui-$$-$RANDOM"
    # The server's environment is ours (ASAN_OPTIONS, BD_*); the pane gets LANG and a
    # fixed prompt. No user tmux config.
    LANG=$lang tmux -L "$TUI_SOCK" -f /dev/null new-session -d -x "$cols" -y "$rows" \
        "env LANG=$lang LC_ALL= PS1='$ ' TERM=screen-256color sh"
    tmux -L "$TUI_SOCK" set-option -g status off >/dev/null
    tui_wait_re '^\$' 10 >/dev/null || { fail "tmux shell did not start"; return 1; }
}

tui_stop() {
    [ -n "$TUI_SOCK" ] && tmux -L "$TUI_SOCK" kill-server 2>/dev/null
    TUI_SOCK=""
}

# tui_keys KEY...: tmux key names (Enter, Escape, C-c, Down, ...) or literal strings.
tui_keys() {
    tmux -L "$TUI_SOCK" send-keys "$@"
}

# tui_type TEXT: literal text, no key-name interpretation.
tui_type() {
    tmux -L "$TUI_SOCK" send-keys -l "$1"
}

tui_cap() {
    tmux -L "$TUI_SOCK" capture-pane -p
}

# tui_open ARGS...: start benchdesk ARGS from the pane's shell, recording the terminal's
# settings before and after and the exit status (as "EXIT=<n>" on the primary screen).
# TUI_ENV (e.g. "NO_COLOR=1") is put in benchdesk's environment.
# Each start gets its own marker (EXIT1=, EXIT2=, ...) so an earlier exit line on the
# screen is never mistaken for this one.
TUI_ENV=""
TUI_N=0
tui_open() {
    local q=""
    TUI_N=$((TUI_N + 1))
    for a in "$@"; do q+=" '$a'"; done
    tui_type "clear; stty -g >$BD_TMP/stty.before; ${TUI_ENV:+env $TUI_ENV }$BD_BIN$q 2>$BD_TMP/stderr; echo EXIT$TUI_N=\$?; stty -g >$BD_TMP/stty.after"
    tui_keys Enter
}

# tui_open_cases TASK_CLASS: from the task classes view just opened, filter to TASK_CLASS
# and open its cases view.
tui_open_cases() {
    expect_screen "TASK CLASS" "the task classes view opens"
    tui_keys /
    tui_type "$1"
    tui_keys Enter Enter
    expect_screen "CASE▲" "the cases view opens"
}

# pane_has_joined PANE TEXT: whether TEXT is in the capture PANE read as one line (rows
# joined by a space, runs of spaces squeezed), for text the TUI wraps.
pane_has_joined() { tr '\n' ' ' <<<"$1" | tr -s ' ' | grep -qF -- "$2"; }

# _tui_poll HOW TEXT [TIMEOUT]: poll the pane until it matches TEXT, HOW being "fixed" (a
# fixed string on it), "re" (an extended regular expression), "joined" (a fixed string in
# the pane read as one line: pane_has_joined), "gone" (a fixed string no longer on it) or
# "changed" (the pane differs from TEXT, an earlier capture). Leaves the last capture in
# TUI_LAST; returns 1 on timeout.
_tui_poll() {
    local how=$1 want=$2 t=${3:-$BD_TUI_TIMEOUT} i=0
    local tries=$((t * 20))
    while [ $i -lt $tries ]; do
        TUI_LAST=$(tui_cap)
        case $how in
        fixed) grep -qF -- "$want" <<<"$TUI_LAST" && return 0 ;;
        re) grep -qE -- "$want" <<<"$TUI_LAST" && return 0 ;;
        joined) pane_has_joined "$TUI_LAST" "$want" && return 0 ;;
        gone) grep -qF -- "$want" <<<"$TUI_LAST" || return 0 ;;
        changed) [ "$TUI_LAST" != "$want" ] && return 0 ;;
        esac
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# tui_allow_drafts REGEX [TIMEOUT]: after `r` in a run view, wait for REGEX (the run's
# start, its end or a refusal); when the provenance gate refused it, wait for the footer
# that offers drafts and press d. The footer is drawn after the title: one capture can
# fall between the two (a repaint reaches tmux in more than one piece), so REFUSED alone
# is not yet the answer. Returns 0 when d was pressed, 1 when the run was not refused
# for provenance, 2 when REGEX never appeared.
tui_allow_drafts() {
    tui_wait_re "$1" "${2:-$BD_TUI_TIMEOUT}" || return 2
    grep -q "REFUSED" <<<"$TUI_LAST" || return 1
    tui_wait "d runs with drafts" 10 || return 1
    tui_keys d
}

# tui_wait TEXT [TIMEOUT]: poll until the pane shows TEXT (fixed string). Prints nothing;
# returns 1 on timeout (the caller reports).
tui_wait() { _tui_poll fixed "$@"; }

# tui_wait_re REGEX [TIMEOUT]: the same with an extended regular expression.
tui_wait_re() { _tui_poll re "$@"; }

# tui_wait_joined TEXT [TIMEOUT]: the same for TEXT wrapped over rows or not.
tui_wait_joined() { _tui_poll joined "$@"; }

# expect_joined TEXT WHAT: wait for TEXT, wrapped over rows or not; pass or fail.
expect_joined() {
    if tui_wait_joined "$1"; then
        pass "$2"
    else
        fail "$2: '$1' never appeared (rows joined); the pane was:
$TUI_LAST"
        tui_stacks
    fi
}

# tui_gone TEXT [TIMEOUT]: poll until TEXT is no longer on the pane.
tui_gone() { _tui_poll gone "$@"; }

# tui_changed BEFORE [TIMEOUT]: poll until the pane differs from BEFORE (a tui_cap taken
# before a key); returns 1 when it never does (the key moved nothing).
tui_changed() { _tui_poll changed "$@"; }

# expect_screen TEXT WHAT: wait for TEXT, pass or fail with the pane shown.
# tui_stacks: once per test, after the first failed wait, what benchdesk was doing: its
# process tree and every thread's stack (gdb, when installed), so a hang seen once in CI
# can be read from the log instead of guessed at.
TUI_STACKS_DONE=0
tui_stacks() {
    [ "$TUI_STACKS_DONE" = 0 ] || return 0
    TUI_STACKS_DONE=1
    local pid
    pid=$(tui_pid 2>/dev/null) || return 0
    [ -n "$pid" ] || return 0
    echo "---- benchdesk (pid $pid) at the first failed wait: processes"
    ps -o pid,ppid,stat,etime,wchan:24,args --ppid "$pid" -p "$pid" 2>&1 | cut -c1-160
    if command -v gdb >/dev/null; then
        echo "---- its threads' stacks"
        timeout 60 gdb -p "$pid" -batch -nx -ex 'set pagination off' -ex 'thread apply all bt 25' 2>&1 |
            grep -E '^(Thread|#)' | cut -c1-200 | head -300
    fi
    echo "---- end of the stacks"
}

expect_screen() {
    if tui_wait "$1"; then
        pass "$2"
    else
        fail "$2: '$1' never appeared; the pane was:
$TUI_LAST"
        tui_stacks
    fi
}

expect_screen_re() {
    if tui_wait_re "$1"; then
        pass "$2"
    else
        fail "$2: /$1/ never appeared; the pane was:
$TUI_LAST"
        tui_stacks
    fi
}

# tui_mask: the volatile parts of a screen replaced by placeholders (stdin -> stdout):
# the bench root, the clock, spinners, run ids, timestamps, durations, hashes.
tui_mask() {
    local root=${1:-/nonexistent}
    python3 -c '
import re, sys
root = sys.argv[1]
out = []
for n, line in enumerate(sys.stdin.read().split("\n")):
    line = line.replace(root, "<ROOT>")
    line = re.sub(r"[\u2800-\u28ff]", "*", line)                      # braille spinners
    line = re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{8}", "<RUN>", line)
    line = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?", "<TIME>", line)
    line = re.sub(r"\b\d+(\.\d+)? ?(ms|s)\b|\b\d+m\d\ds\b|\b\d+h\d\dm\b", "<DUR>", line)
    line = re.sub(r"(blake3:)?[0-9a-f]{10,64}(\u2026|~)?", "<HASH>", line)
    line = re.sub(r"\b(namespaces|subprocess)\b", "<ISO>", line)      # the machine decides
    line = re.sub(r"\[95% [-+]?[0-9.]+, [-+]?[0-9.]+\]", "[95% <CI>]", line)  # seeded by run ids
    if n == 0:
        # The header: its root is cut to fit and the clock moves; keep the rest.
        line = re.sub(r"(\* )?\d\d:\d\d\s*$", "HH:MM", line)
        line = re.sub(r"\S*<ROOT>|\u2026\S+", "<ROOT>", line, count=1)
        line = re.sub(r" {2,}", "  ", line)
    # What follows a placeholder moved with it: one space after each.
    line = re.sub(r"(<DUR>|<HASH>|<RUN>|<TIME>|<ROOT>|HH:MM|\*)( +)", lambda m: m.group(1) + " ", line)
    out.append(line.rstrip())
while out and not out[-1]:
    out.pop()
print("\n".join(out))
' "$root"
}

# tui_dump NAME [ROOT]: wait for the screen to settle, mask it and compare it with
# tests/tui/expected/NAME.txt (or write that file when BD_TUI_REFRESH=1).
tui_dump() {
    local name=$1 root=${2:-/nonexistent}
    local prev="" cur="" i=0
    # Settled: no spinner turning, and two captures 200 ms apart that mask the same.
    while [ $i -lt $((BD_TUI_TIMEOUT * 5)) ]; do
        local raw
        raw=$(tui_cap)
        cur=$(tui_mask "$root" <<<"$raw")
        [ -n "$prev" ] && [ "$cur" = "$prev" ] && ! grep -q '[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]' <<<"$raw" && break
        prev=$cur
        sleep 0.2
        i=$((i + 1))
    done
    local want="$TUI_EXPECTED/$name.txt"
    if [ "${BD_TUI_REFRESH:-}" = 1 ]; then
        mkdir -p "$TUI_EXPECTED"
        printf '%s\n' "$cur" >"$want"
        pass "dump $name written"
        return
    fi
    if [ ! -f "$want" ]; then
        fail "dump $name: no $want (run tests/tui/refresh-dumps.sh to create it)"
        return
    fi
    local d
    if d=$(diff -u "$want" <(printf '%s\n' "$cur")); then
        pass "dump $name matches"
    else
        fail "dump $name differs from $want (if intended: tests/tui/refresh-dumps.sh):
$d"
    fi
}

# tui_expect_exit CODE WHAT: benchdesk left with CODE (a number, or alternatives "1|139"),
# the terminal settings are the ones it started with, and the alternate screen is gone
# (nothing of the TUI on the pane).
tui_expect_exit() {
    local code=$1 what=$2
    if ! tui_wait_re "^EXIT$TUI_N=[0-9]+" 60; then
        fail "$what: benchdesk did not exit; the pane was:
$TUI_LAST"
        return
    fi
    local got
    got=$(grep -oE "^EXIT$TUI_N=[0-9]+" <<<"$TUI_LAST" | tail -1)
    if grep -qxE "EXIT$TUI_N=($code)" <<<"$got"; then
        pass "$what: exit status ${got#*=}"
    else
        fail "$what: exit status ${got#*=}, wanted $code"
    fi
    # stty.after is written by the shell right after; wait for it.
    local i=0
    while [ ! -s "$BD_TMP/stty.after" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    if cmp -s "$BD_TMP/stty.before" "$BD_TMP/stty.after"; then
        pass "$what: terminal settings restored"
    else
        fail "$what: terminal settings differ (before: $(cat "$BD_TMP/stty.before"), after: $(cat "$BD_TMP/stty.after" 2>/dev/null))"
    fi
    if grep -qE 'TASK CLASS|\[task classes\]|benchdesk +/|chain (verified|:)' <<<"$TUI_LAST"; then
        fail "$what: the TUI is still on the screen after exit:
$TUI_LAST"
    else
        pass "$what: alternate screen left, no TUI remnants"
    fi
    rm -f "$BD_TMP/stty.after"
}

# tui_expect_clean_stderr WHAT: nothing on benchdesk's stderr.
tui_expect_clean_stderr() {
    if [ -s "$BD_TMP/stderr" ]; then
        fail "$1: stderr was not empty:
$(head -c 3000 "$BD_TMP/stderr")"
    else
        pass "$1: nothing on stderr"
    fi
}

# tui_pid: the pid of benchdesk running in the pane (the shell's child).
tui_pid() {
    local sh
    sh=$(tmux -L "$TUI_SOCK" display-message -p '#{pane_pid}')
    pgrep -P "$sh" | head -1
}

# demo_pinned: a copy of the demo bench whose pins hold (pinned on the copy if they do not:
# these tests are about the TUI, not about the demo's pins, which test_cli_* check).
demo_pinned() {
    local d
    d=$(demo_copy)
    if ! "$BD_BIN" -C "$d" verify >/dev/null 2>&1; then
        for tc in $("$BD_BIN" -C "$d" list --json | python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)["task_classes"]))'); do
            "$BD_BIN" -C "$d" pin "$tc" >/dev/null
        done
    fi
    printf '%s\n' "$d"
}

# add_slow_class ROOT NAME N SECONDS: a task class whose rubric sleeps SECONDS per case,
# with N cases (odd ones pass, even ones fail with answer.wrong and a line on stderr),
# pinned, so runs last long enough to resize and cancel in the middle.
add_slow_class() {
    local root=$1 name=$2 n=$3 secs=$4
    local dir="$root/bench/$name"
    mkdir -p "$dir/cases"
    cat >"$dir/registration.yaml" <<EOF
schema_version: 2
name: $name
description: "Cases that take their time (a TUI test fixture)."
current_tier: bronze
min_cases_for_promotion: {bronze: 10, silver: 30, gold: 100}
promotion_threshold: {silver: 0.80, gold: 0.90}
breakdown_keys: [answer]
failure_modes:
  - {code: answer.wrong, severity: block, description: "The answer is not the expected one"}
rubric: {wall_clock_seconds: 60, memory_mb: 512}
sut: {kind: cassette}
EOF
    cat >"$dir/rubric.py" <<'EOF'
import json, sys, time
doc = json.load(sys.stdin)
time.sleep(float(doc["expected"]["sleep"]))
got = doc["harness_output"].get("answer")
ok = got == doc["expected"]["answer"]
if not ok:
    # Hostile bytes on stderr: clear-screen, a window-title change, a bell. The TUI must
    # show them as text, never send them to the terminal.
    sys.stderr.write("case %s: expected %s, got %s \x1b[2J\x1b]0;pwned\x07 EVIL\n"
                     % (doc["case"]["case_id"], doc["expected"]["answer"], got))
print(json.dumps({"passed": ok, "score": 1.0 if ok else 0.0,
                  "breakdown": {"answer": 1.0 if ok else 0.0},
                  "failure_modes": [] if ok else [{"code": "answer.wrong", "severity": "block",
                                                   "detail": "answered %s" % got}],
                  "cost_usd": 0.0, "wall_clock_ms": 0}))
EOF
    local i id ans
    for i in $(seq 1 "$n"); do
        id=$(printf 'slow-%02d' "$i")
        ans=yes
        [ $((i % 2)) = 0 ] && ans=no
        mkdir -p "$dir/cases/$id/input" "$dir/cases/$id/expected"
        printf 'question %d\n' "$i" >"$dir/cases/$id/input/question.txt"
        printf 'yes\n' >"$dir/cases/$id/expected/answer.txt"
        printf '{"answer": "%s"}\n' "$ans" >"$dir/cases/$id/cassette.json"
        cat >"$dir/cases/$id/case.yaml" <<EOF
schema_version: 2
case_id: $id
title: "Slow case $i"
disposition: positive
difficulty: easy
origin:
  source: curated
  source_ref: {type: synthetic, value: "slow-$i"}
  added_at: "2026-11-01T00:00:00Z"
expected: {answer: "yes", sleep: $secs}
cassette_digest: null
EOF
    done
    "$BD_BIN" -C "$root" pin "$name" >/dev/null
}
