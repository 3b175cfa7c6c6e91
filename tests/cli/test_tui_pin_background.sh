#!/usr/bin/env bash
# `I` pins on the thread pool (docs/user-guide.md, the curator's loop): while the 8,000
# cases of a task class are hashed, the TUI keeps answering keys — `?` opens the help
# before the pin has written digests.yaml — a run is refused until the pin is done, and
# the pin's one-line report comes when it is.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

command -v b3sum >/dev/null || { echo "SKIP: b3sum is not installed; this test needs it"; exit 77; }
root="$BD_TMP/big"
NO_PIN=1 bash "$BD_SOURCE_DIR/tests/perf/make_big_bench.sh" "$root" 8000 "$BD_BIN" >/dev/null 2>&1 ||
    { fail "cannot make the 8,000-case bench"; finish; }
pins="$root/bench/bulk/cases/digests.yaml"
[ ! -e "$pins" ] && pass "8,000 cases, not pinned yet" || fail "the bench came pinned: $pins"

tui_start 100 30
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
expect_screen_re "^ . bulk " "the task class is listed"
tui_keys I
expect_screen "pinning bulk (every case)" "I starts the pin and says so"
tui_keys r
expect_screen "a pin is being written" "a run waits for the pin"
tui_keys ?
expect_screen "Keys of" "? opens the help while the pin is going"
if [ ! -e "$pins" ]; then
    pass "the keys were answered before the pin was written"
else
    fail "digests.yaml was written before the help opened: the pin held the keys"
fi
tui_keys q
tui_wait_joined "pinned bulk (every case) (8001 pins changed)" 180 &&
    pass "the pin's report comes when it is done" || fail "no report of the pin: $TUI_LAST"
[ "$(grep -c '^  [a-z0-9]' "$pins" 2>/dev/null || echo 0)" = 8000 ] &&
    pass "digests.yaml holds 8,000 case pins" || fail "digests.yaml: $(grep -c '^  ' "$pins" 2>/dev/null) pins"
tui_keys Q
tui_expect_exit 0 "Q"
tui_expect_clean_stderr "pin in the background"
tui_stop
finish
