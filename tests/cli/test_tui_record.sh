#!/usr/bin/env bash
# Recording a cassette from the TUI (docs/recording.md), through tmux: `R` in the case view
# of the demo's incident-triage (a command SUT) asks offline or network, runs the SUT in
# the jail, shows the diff between the old and the new cassette, and writes nothing
# until `y`; `n` discards. With CI set the network choice is refused. A cassette SUT has
# nothing to record.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"

root=$(demo_pinned)
case_id=k8s-node-disk-pressure
cdir="$root/bench/incident-triage/cases/$case_id"
before=$(b3sum --no-names "$cdir/cassette.json")
TUI_ENV="CI=true"

open_case() { # task-class filter, case filter
    tui_keys / C-u
    tui_type "$1"
    tui_keys Enter Enter
    expect_screen "CASE" "the cases of $1"
    tui_keys / C-u
    tui_type "$2"
    tui_keys Enter Enter
    expect_screen "Provenance" "the case view of $2"
}

tui_start 120 40
tui_open -C "$root"
expect_screen "TASK CLASS" "the task classes view opens"
open_case incident "$case_id"
tui_keys R
expect_screen "o  offline" "R asks how to record"
tui_keys N
expect_screen "record.network_refused" "with CI set the host network is refused"
tui_keys o
tui_wait "cassette changes" 120 && pass "the SUT ran and the diff is shown" ||
    fail "no diff: $TUI_LAST"
expect_screen '-   "sut": "triage-assistant 2.1.0"' "the old cassette's lines are marked -"
expect_screen '+   "sut": "benchdesk-demo-triage 1.0"' "the new cassette's lines are marked +"
[ "$(b3sum --no-names "$cdir/cassette.json")" = "$before" ] && pass "nothing written before y" ||
    fail "the cassette changed before y"
tui_keys n
expect_screen "discarded: nothing was written" "n discards"
[ "$(b3sum --no-names "$cdir/cassette.json")" = "$before" ] && pass "n wrote nothing" ||
    fail "the cassette changed after n"

tui_keys R o
tui_wait "cassette changes" 120 || fail "second recording: $TUI_LAST"
tui_keys y
expect_screen "written: cassette_digest" "y writes the cassette"
new="blake3:$(b3sum --no-names "$cdir/cassette.json")"
[ "blake3:$before" != "$new" ] && grep -q "^cassette_digest: $new" "$cdir/case.yaml" &&
    pass "cassette.json and cassette_digest written" || fail "after y: $(grep cassette_digest "$cdir/case.yaml")"
grep -q '"sut": "benchdesk-demo-triage 1.0"' "$cdir/cassette.json" && pass "the SUT's answer is the cassette" ||
    fail "cassette: $(cat "$cdir/cassette.json")"
expect_screen "pinned again" "the next steps: the case is re-pinned, two people sign it"

# A cassette SUT: R says there is nothing to record.
tui_keys q q q
expect_screen "TASK CLASS" "back to the task classes"
open_case vuln ghsa-demo-0001
tui_keys R
expect_screen "replays cassettes" "R on a cassette SUT explains why nothing records"
tui_stop
finish
