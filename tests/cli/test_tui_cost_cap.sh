#!/usr/bin/env bash
# The TUI's run view under a cost cap (docs/user-guide.md#budgeting-a-run): the budget is
# shown beside the cost while the run goes, and when the cap stops the run the view says
# so and marks the cases that did not run.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

export TMPDIR="$BD_TMP/tmp"
mkdir -p "$TMPDIR"
root=$(demo_pinned)

# A task class of four cases, each sleeping 0.4 s and costing $0.40; one case at a time
# and a $1.00 cap in the config: three cases run ($1.20), the fourth does not.
dir="$root/bench/costly"
mkdir -p "$dir/cases"
cat >"$dir/registration.yaml" <<EOF
schema_version: 2
name: costly
description: "Cases that cost money (a TUI test fixture)."
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
print(json.dumps({"passed": True, "score": 1.0, "breakdown": {"answer": 1.0},
                  "failure_modes": [], "cost_usd": float(doc["expected"]["cost"]),
                  "wall_clock_ms": 0}))
EOF
for i in 1 2 3 4; do
    id="paid-0$i"
    mkdir -p "$dir/cases/$id/input" "$dir/cases/$id/expected"
    printf 'question %d\n' "$i" >"$dir/cases/$id/input/question.txt"
    printf 'yes\n' >"$dir/cases/$id/expected/answer.txt"
    printf '{"answer": "yes"}\n' >"$dir/cases/$id/cassette.json"
    cat >"$dir/cases/$id/case.yaml" <<EOF
schema_version: 2
case_id: $id
title: "Paid case $i"
disposition: positive
difficulty: easy
origin:
  source: curated
  source_ref: {type: synthetic, value: "paid-$i"}
  added_at: "2026-11-01T00:00:00Z"
expected: {answer: "yes", sleep: 0.4, cost: 0.40}
cassette_digest: null
EOF
done
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
if tui_wait_re "REFUSED|running [1-9]|finished|ABORTED|stopped" 60 && grep -q "d runs with drafts" <<<"$TUI_LAST"; then
    tui_keys d
fi
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
