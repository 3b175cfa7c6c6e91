#!/usr/bin/env bash
# Untrusted text never reaches the terminal raw (docs/benchdesk.1): a case title holding
# ESC[2J, OSC 52 (clipboard write), OSC 8 (hyperlink), a C1 CSI, DEL and U+202E, a hostile
# task-class name, case id and command name, shown by `list` (plain and --json), the error
# lines, and the TUI's cases view (tmux capture-pane -e: the bytes the terminal got).
. "$(dirname "$0")/lib.sh"

root=$(demo_copy)
tc=vuln-remediation
case_id=$(ls "$root/bench/$tc/cases" | grep -v digests.yaml | head -1)
yaml="$root/bench/$tc/cases/$case_id/case.yaml"
python3 - "$yaml" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p, encoding="utf-8").read()
evil = r'EVIL \e[2J \e]52;c;cHduZWQ=\a \e]8;;http://x\e\\link\e]8;;\e\\ \x9b31m \x7f \u202eRTL \u200b \ufeff END'
s = re.sub(r'^title: .*$', lambda m: 'title: "%s"' % evil, s, count=1, flags=re.M)
open(p, "w", encoding="utf-8").write(s)
PY
"$BD_BIN" -C "$root" pin "$tc" >/dev/null 2>&1 || true

# raw_check FILE WHAT: no ESC, no C1 (as UTF-8), no DEL, no bidi/format character.
raw_check() {
    if python3 - "$1" <<'PY'; then pass "$2: nothing raw"; else fail "$2: raw control or bidi bytes reached the output: $(head -c 400 "$1" | od -c | head -5)"; fi
import sys
b = open(sys.argv[1], "rb").read()
bad = [0x1b, 0x07, 0x7f] + [c for c in range(0, 0x20) if c not in (0x0a,)]
if any(x in b for x in bytes(bad)):
    sys.exit(1)
t = b.decode("utf-8", "replace")
for ch in t:
    o = ord(ch)
    if 0x80 <= o <= 0x9f or o in (0x061c, 0xfeff) or 0x200b <= o <= 0x200f or 0x202a <= o <= 0x202e or 0x2060 <= o <= 0x2069:
        sys.exit(1)
PY
}

"$BD_BIN" -C "$root" list "$tc" >"$BD_TMP/list.out" 2>"$BD_TMP/list.err" || true
raw_check "$BD_TMP/list.out" "list $tc (plain) stdout"
raw_check "$BD_TMP/list.err" "list $tc (plain) stderr"
grep -qF 'EVIL \x1b[2J \x1b]52;c;cHduZWQ=\x07' "$BD_TMP/list.out" &&
    pass "list shows ESC sequences as \\x1b text" || fail "list did not show the title visibly: $(grep EVIL "$BD_TMP/list.out")"
grep -qF '<U+009B>31m \x7f <U+202E>RTL <U+200B> <U+FEFF> END' "$BD_TMP/list.out" &&
    pass "list shows C1, DEL, bidi and format characters as <U+XXXX>" || fail "list: $(grep EVIL "$BD_TMP/list.out")"

"$BD_BIN" -C "$root" list "$tc" --json >"$BD_TMP/list.json" 2>"$BD_TMP/list.jerr" || true
raw_check "$BD_TMP/list.json" "list $tc --json stdout"
python3 - "$BD_TMP/list.json" "$case_id" <<'PY' && pass "--json escapes them as \\u and the title round-trips" || fail "--json title wrong: $(head -c 600 "$BD_TMP/list.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
t = [c for c in doc["cases"] if c["case_id"] == sys.argv[2]][0]["title"]
assert "\x1b[2J" in t and "\u202e" in t and "\x9b" in t and "\x7f" in t, t
raw = open(sys.argv[1]).read()
assert "\\u001b" in raw and "\\u202e" in raw and "\\u009b" in raw and "\\u007f" in raw
PY

# Hostile names in error messages: the error line stays one visible line.
"$BD_BIN" -C "$root" $'li\e]52;c;eA==\ast' >/dev/null 2>"$BD_TMP/cmd.err" || true
raw_check "$BD_TMP/cmd.err" "unknown command error"
[ "$(wc -l <"$BD_TMP/cmd.err")" = 1 ] && pass "one error line" || fail "error is not one line: $(cat -v "$BD_TMP/cmd.err")"
"$BD_BIN" -C "$root" list $'vuln\e[2J\u202e' >/dev/null 2>"$BD_TMP/tc.err" || true
raw_check "$BD_TMP/tc.err" "unknown task class error"
grep -qE "^benchdesk: (bench.unknown_task_class|case.bad_id): " "$BD_TMP/tc.err" && pass "the error line has its code" || fail "$(cat -v "$BD_TMP/tc.err")"
"$BD_BIN" -C "$root" list $'vuln\e[2J\u202e' --json >"$BD_TMP/tc.json" 2>&1 || true
raw_check "$BD_TMP/tc.json" "unknown task class --json error"
"$BD_BIN" -C "$root" run "$tc" --case $'x\e]8;;http://e\e\\\xc2\x9b' >/dev/null 2>"$BD_TMP/case.err" || true
raw_check "$BD_TMP/case.err" "bad case id error"

# The TUI: the cases view of the task class, captured with the escape sequences the
# terminal received (-e): only colour and attribute SGR sequences may be there.
if command -v tmux >/dev/null; then
    . "$BD_SOURCE_DIR/tests/tui/lib.sh"
    tui_start 160 30
    tui_open -C "$root"
    expect_screen "TASK CLASS" "the TUI opens"
    tui_keys /
    tui_type vuln
    tui_keys Enter Enter
    expect_screen "CASE" "the cases view opens"
    tui_keys Enter
    expect_screen 'EVIL \x1b[2J' "the case view shows the hostile title as text"
    tmux -L "$TUI_SOCK" capture-pane -p -e >"$BD_TMP/pane.e"
    if python3 - "$BD_TMP/pane.e" <<'PY'; then pass "TUI: nothing but SGR reached the terminal"; else fail "TUI: raw bytes on the screen: $(grep -a EVIL "$BD_TMP/pane.e" | cat -v | head -3)"; fi
import re, sys
t = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
t = re.sub(r"\x1b\[[0-9;:]*m", "", t)       # colours and attributes: capture-pane's own
if "\x1b" in t or "\x07" in t:
    sys.exit(1)
for ch in t:
    o = ord(ch)
    if 0x80 <= o <= 0x9f or 0x202a <= o <= 0x202e or 0x200b <= o <= 0x200f or o == 0xfeff:
        sys.exit(1)
PY
    grep -qF '<U+202E>RTL' <<<"$TUI_LAST" && pass "TUI shows U+202E as <U+202E>" || fail "TUI: $(grep EVIL <<<"$TUI_LAST")"
    title=$(tmux -L "$TUI_SOCK" display-message -p '#{pane_title}')
    [ "$title" != pwned ] && pass "the pane title was not changed" || fail "title changed"
    tui_keys Q
    tui_expect_exit 0 "Q quits"
    [ -s "$BD_TMP/stderr" ] && cp "$BD_TMP/stderr" "${BD_KEEP_STDERR:-/dev/null}" || true
    tui_stop
else
    echo "SKIP: tmux is not installed; the TUI half of this test did not run"
fi
finish
