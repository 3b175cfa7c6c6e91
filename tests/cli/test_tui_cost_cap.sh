#!/usr/bin/env bash
# The TUI's run view under a cost cap (docs/user-guide.md#budgeting-a-run): the budget is
# shown beside the cost while the run goes, and when the cap stops the run the view says
# so and marks the cases that did not run.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

export TMPDIR="$BD_TMP/tmp"
mkdir -p "$TMPDIR"
root=$(demo_pinned)

# A task class of four cases (tests/tui/lib.sh's slow class), each sleeping 0.4 s, whose
# rubric passes each at $0.40; one case at a time and a $1.00 cap in the config: three
# cases run ($1.20), the fourth does not.
add_slow_class "$root" costly 4 0.4
cat >"$root/bench/costly/rubric.py" <<'EOF'
import json, sys, time
doc = json.load(sys.stdin)
time.sleep(float(doc["expected"]["sleep"]))
print(json.dumps({"passed": True, "score": 1.0, "breakdown": {"answer": 1.0},
                  "failure_modes": [], "cost_usd": 0.40, "wall_clock_ms": 0}))
EOF
"$BD_BIN" -C "$root" pin costly >/dev/null 2>&1
mkdir -p "$root/.benchdesk"
printf 'jobs: 1\ncost_cap_usd: 1.00\n' >"$root/.benchdesk/config.yaml"

tui_start 110 30
tui_open -C "$root"
expect_screen "costly" "the task classes view lists the costly task class"
tui_keys /
tui_type costly
tui_keys Enter
tui_keys r
tui_allow_drafts "REFUSED|running [1-9]|finished|ABORTED|stopped" 60 || true
expect_screen_re 'cost \$0\.[0-9]+ of \$1\.00' "the run view shows the cost beside the budget while it runs"
expect_screen "stopped: cost cap" "the title says the cost cap stopped the run"
expect_screen 'cost $1.20 of $1.00' "the cost of the three cases that ran, beside the budget"
expect_screen "the cost cap stopped the run: 1 case not run" "the footer says how many cases did not run"
expect_screen_re "passed 3 +failed 0 +running 0 +queued 0" "three cases ran"
expect_screen "not run" "the fourth case is marked not run"
tui_keys m
expect_screen "stopped by the cost cap: 3 passed, 0 failed" "the message log says the cost cap stopped it"
tui_keys q q
tui_keys q
tui_expect_exit 0 "quit after a capped run"
tui_stop
finish
