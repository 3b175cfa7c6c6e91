#!/usr/bin/env bash
# The TUI and the terminal (docs/user-guide.md, docs/architecture.md): themes (--theme, config.yaml, NO_COLOR ->
# monochrome), the ASCII fallback outside UTF-8 locales, mouse clicks, and the terminal
# restored on every exit path: q, Ctrl-C, SIGTERM, a crash signal.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)

# ---- without a terminal: the settings are checked, then a terminal is required ---------
expect 2 usage.bad_args -- "$BD_BIN" -C "$root"
out=$("$BD_BIN" -C "$root" </dev/null 2>&1 >/dev/null || true)
grep -q "needs a terminal" <<<"$out" && pass "no terminal: says the TUI needs one" ||
    fail "no terminal: $out"
expect 2 usage.bad_args -- "$BD_BIN" -C "$root" --theme no-such-theme
out=$("$BD_BIN" -C "$root" --theme no-such-theme 2>&1 >/dev/null || true)
grep -q "available: .*default" <<<"$out" && pass "an unknown theme lists the available ones" ||
    fail "unknown theme: $out"
expect 2 usage.bad_args -- "$BD_BIN" -C "$root" --theme 'Not A Name'
expect 4 io.error -- "$BD_BIN" -C "$root" --theme "$BD_TMP/no-such-file.yaml"
bad="$BD_TMP/bad-theme.yaml"
printf 'schema_version: 1\nname: bad\nroles:\n  titel: {fg: red}\n' >"$bad"
expect 2 config.schema_invalid -- "$BD_BIN" -C "$root" --theme "$bad"
out=$("$BD_BIN" -C "$root" --theme "$bad" 2>&1 >/dev/null || true)
grep -q "bad-theme.yaml:4:.*unknown role 'titel'" <<<"$out" &&
    pass "a theme naming an unknown role is refused with its line" || fail "bad role: $out"
printf 'schema_version: 1\nroles:\n  ok: {fg: purple}\n' >"$bad"
expect 2 config.schema_invalid -- "$BD_BIN" -C "$root" --theme "$bad"
cfgroot=$(demo_copy)
mkdir -p "$cfgroot/.benchdesk"
printf 'jobs: lots\n' >"$cfgroot/.benchdesk/config.yaml"
expect 2 config.schema_invalid -- "$BD_BIN" -C "$cfgroot"
printf 'theme: [a, b]\n' >"$cfgroot/.benchdesk/config.yaml"
expect 2 config.schema_invalid -- "$BD_BIN" -C "$cfgroot"

# colours_on: the pane (with attributes) carries colour escapes.
colours_on() {
    tmux -L "$TUI_SOCK" capture-pane -p -e | grep -qE $'\e''\[([0-9;]*;)?(3[0-7]|4[0-7]|38;|48;)[0-9;]*m'
}

# ---- themes ----------------------------------------------------------------------------
tui_start 100 30
tui_open -C "$root"
expect_screen "TASK CLASS" "default theme: the TUI opens"
colours_on && pass "the default theme draws in colour" || fail "no colour with the default theme"
tui_keys q
tui_expect_exit 0 "default theme"

TUI_ENV="NO_COLOR=1"
tui_open -C "$root"
TUI_ENV=""
expect_screen "TASK CLASS" "NO_COLOR: the TUI opens"
colours_on && fail "NO_COLOR still draws colours" || pass "NO_COLOR selects monochrome: no colour"
tui_keys q
tui_expect_exit 0 "NO_COLOR"

for theme in light high-contrast monochrome; do
    tui_open -C "$root" --theme "$theme"
    expect_screen "TASK CLASS" "--theme $theme opens"
    tui_keys q
    tui_expect_exit 0 "--theme $theme"
done

mkdir -p "$root/.benchdesk"
printf 'theme: monochrome\n' >"$root/.benchdesk/config.yaml"
tui_open -C "$root"
expect_screen "TASK CLASS" "config theme: the TUI opens"
colours_on && fail "config.yaml theme: monochrome still draws colours" ||
    pass "config.yaml theme: monochrome is used"
tui_keys q
tui_expect_exit 0 "config theme"
tui_open -C "$root" --theme default
expect_screen "TASK CLASS" "--theme over config: the TUI opens"
colours_on && pass "--theme wins over config.yaml" || fail "--theme default did not draw colour"
tui_keys q
tui_expect_exit 0 "--theme over config"
rm "$root/.benchdesk/config.yaml"

# ---- an unknown terminal type is an error before anything is drawn -------------------
TUI_ENV="TERM=no-such-terminal"
tui_open -C "$root"
TUI_ENV=""
tui_expect_exit 4 "an unknown TERM"
grep -q "cannot drive terminal type 'no-such-terminal'" "$BD_TMP/stderr" &&
    pass "an unknown TERM says what to set" || fail "unknown TERM: $(cat "$BD_TMP/stderr")"

# ---- mouse: a click selects a row, a second click on it opens it -------------------------
tui_open -C "$root"
expect_screen "[task classes]" "mouse: the TUI opens"
expect_screen "1/3" "mouse: the cursor starts on the first row"
click() { # column row (0-based) as an xterm X10 mouse press + release
    tui_type $'\e[M '"$(printf "\\x$(printf %x $((33 + $1)))\\x$(printf %x $((33 + $2)))")"
    tui_type $'\e[M#'"$(printf "\\x$(printf %x $((33 + $1)))\\x$(printf %x $((33 + $2)))")"
}
click 10 4
expect_screen "3/3" "a click selects the third task class"
click 10 4
expect_screen "CASE▲" "a second click on it opens it"
tui_keys q q
tui_expect_exit 0 "mouse"

# ---- signals and crashes: the terminal comes back every time ---------------------------
tui_open -C "$root"
expect_screen "[task classes]" "Ctrl-C: the TUI opens"
tui_keys C-c
tui_expect_exit 130 "Ctrl-C"

tui_open -C "$root"
expect_screen "[task classes]" "SIGINT: the TUI opens"
kill -INT "$(tui_pid)"
tui_expect_exit 130 "SIGINT (kill -INT)"

# Ctrl-Z suspends (the shell gets its terminal back), fg resumes where it was.
tui_open -C "$root"
expect_screen "[task classes]" "Ctrl-Z: the TUI opens"
tui_keys Down
expect_screen "2/3" "Ctrl-Z: the cursor moved"
tui_keys C-z
# The shell goes on with its command line while the job is stopped: the exit line says
# 128 + SIGSTOP, and the terminal is checked while benchdesk is stopped.
tui_expect_exit 147 "Ctrl-Z (stopped)"
tui_type "fg; echo FG=\$?; stty -g >$BD_TMP/stty.after"
tui_keys Enter
expect_screen "2/3" "fg brings the TUI back where it was"
tui_keys Q
expect_screen "FG=0" "after a suspend, q quits normally"
i=0
while [ ! -s "$BD_TMP/stty.after" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
cmp -s "$BD_TMP/stty.before" "$BD_TMP/stty.after" && pass "after a suspend: terminal settings restored" ||
    fail "after a suspend: terminal settings differ"
rm -f "$BD_TMP/stty.after"

tui_open -C "$root"
expect_screen "[task classes]" "SIGTERM: the TUI opens"
kill -TERM "$(tui_pid)"
tui_expect_exit 143 "SIGTERM"

tui_open -C "$root"
expect_screen "[task classes]" "SIGABRT: the TUI opens"
kill -ABRT "$(tui_pid)"
tui_expect_exit 134 "a crash (SIGABRT)"

tui_open -C "$root"
expect_screen "[task classes]" "SIGSEGV: the TUI opens"
kill -SEGV "$(tui_pid)"
# Dies of it (139), or a sanitizer's handler reports it and exits 1.
tui_expect_exit "139|1" "a crash (SIGSEGV)"
tui_stop

# ---- ASCII fallback outside a UTF-8 locale ---------------------------------------------
tui_start 100 30 C
tui_open -C "$root"
expect_screen "[task classes]" "LANG=C: the TUI opens"
expect_screen_re "vuln-remediation .*\\+ ok" "LANG=C: ASCII ticks"
if tui_cap | LC_ALL=C grep -q $'[\x80-\xff]'; then
    fail "LANG=C: non-ASCII bytes on the screen:
$(tui_cap)"
else
    pass "LANG=C: only ASCII is drawn"
fi
tui_keys Enter
expect_screen "CASE^" "LANG=C: the sort mark is ASCII too"
tui_keys q q
tui_expect_exit 0 "LANG=C"
tui_expect_clean_stderr "LANG=C"
tui_stop
finish
