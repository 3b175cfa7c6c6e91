#!/usr/bin/env bash
# benchdesk history verify | log and benchdesk promote, end to end on a copy of the demo
# bench: exit statuses, error codes, the JSON shapes, and tampering named by seq + reason.
. "$(dirname "$0")/lib.sh"
# pj EXPR [FILE]: evaluate the Python expression EXPR over the JSON document d (stdin, or
# FILE); strings print raw, other values as JSON, the items of a tuple space-separated.

root=$(demo_copy)
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
seg="$root/.benchdesk/history/segments/0000000001.jsonl"
hs() { python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" "$1" "$hist" "${@:2}"; }

# an empty history verifies
out=$(bd history verify --json)
[ "$(pj 'd["ok"], d["count"]' <<<"$out")" = "true 0" ] && pass "empty history verifies" \
    || fail "empty history: $out"

# promote always refuses with exit 3, and records an audit record each time
expect 3 promotion.requires_human -- bd promote vuln-remediation silver
expect 3 promotion.requires_human -- bd promote vuln-remediation gold
out=$(bd promote vuln-remediation gold --json) && rc=0 || rc=$?
[ "$rc" = 3 ] && [ "$(pj 'd["error"]["code"]' <<<"$out")" = promotion.requires_human ] &&
    [ "$(pj 'd["audit_record"]["seq"]' <<<"$out")" = 3 ] && pass "promote --json refuses, seq 3" \
    || fail "promote --json: rc=$rc $out"
expect 2 usage.bad_args -- bd promote vuln-remediation platinum
expect 2 case.bad_id -- bd promote ../etc gold
expect 2 bench.unknown_task_class -- bd promote no-such-class gold
[ "$(wc -l <"$seg")" = 3 ] && pass "only the 3 refusals were recorded, one line each" \
    || fail "records: $(wc -l <"$seg")"
mode=$(stat -c %a "$seg")
[ "$mode" = 600 ] && pass "segment mode 0600" || fail "segment mode $mode"

out=$(bd history verify)
grep -q "^history intact: 3 records, head [0-9a-f]\{64\}$" <<<"$out" && pass "verify text" \
    || fail "verify text: $out"
head=$(bd history verify --json | pj 'd["head"]')

# log: newest first, JSON records carry their hash; filters; paging
out=$(bd history log --json)
[ "$(pj '",".join(str(r["seq"]) for r in d["records"])' <<<"$out")" = "3,2,1" ] && pass "log newest first" \
    || fail "log order: $out"
[ "$(pj 'd["records"][0]["record_hash"]' <<<"$out")" = "$head" ] && pass "log hash = verify head" \
    || fail "log hash"
[ "$(pj 'd["records"][0]["kind"], d["records"][0]["event"]' <<<"$out")" = "audit promotion.refused" ] &&
    pass "audit record fields" || fail "audit fields: $out"
out=$(bd history log --limit 2 --json)
[ "$(pj '",".join(str(r["seq"]) for r in d["records"]), d["next_before"]' <<<"$out")" = "3,2 2" ] &&
    pass "log --limit 2 pages" || fail "log limit: $out"
out=$(bd history log --before 2 --json)
[ "$(pj '",".join(str(r["seq"]) for r in d["records"])' <<<"$out")" = "1" ] && pass "log --before" \
    || fail "log before: $out"
out=$(bd history log --task-class incident-triage --json)
[ "$(pj 'len(d["records"])' <<<"$out")" = 0 ] && pass "log filter" || fail "log filter: $out"
out=$(bd history log)
grep -q "audit: promotion.refused" <<<"$out" && pass "log text" || fail "log text: $out"
expect 2 case.bad_id -- bd history log --case 'Bad/Id'
expect 2 usage.bad_args -- bd history log --limit 0
expect 2 usage.bad_args -- bd history log --bogus
expect 2 usage.bad_args -- bd history frobnicate
expect 2 usage.bad_args -- bd history
"$BD_BIN" history --help | grep -q "usage: benchdesk history verify" && pass "history --help" \
    || fail "history --help"

# tampering: exit 1, chain.tampered, and --json names seq and reason
for i in 4 5 6; do bd promote incident-triage gold >/dev/null 2>&1 || true; done
tamper() { # name expected-seq expected-reason
    local out rc=0
    out=$(bd history verify --json) || rc=$?
    local got
    got=$(pj 'd["ok"], d["error"]["code"], d["error"]["seq"], d["error"]["reason"]' <<<"$out")
    if [ "$rc" = 1 ] && [ "$got" = "false chain.tampered $2 $3" ]; then
        pass "$1 -> seq $2 $3"
    else
        fail "$1 -> rc=$rc $got"
    fi
}
cp -a "$hist" "$BD_TMP/pristine"
restore() { rm -rf "$hist"; cp -a "$BD_TMP/pristine" "$hist"; }

bd history verify >/dev/null # leaves the memo of the head it saw (VERIFIED)
cp -a "$hist" "$BD_TMP/pristine"
hs sub 2 '"detail":"promote' '"detail":"Promote'
tamper "edit record 2" 2 edited
expect 1 chain.tampered -- bd history verify
err=$(bd history verify 2>&1 >/dev/null || true)
grep -q "segments/0000000001.jsonl:2" <<<"$err" && grep -q "seq 2, reason edited" <<<"$err" &&
    pass "text error names the segment, line, seq and reason" || fail "text error: $err"
restore
hs del 3
tamper "delete record 3" 3 missing
restore
hs swap 2 4
tamper "swap records 2 and 4" 2 reordered
restore
hs set 5 '{"not":"a record"'
tamper "garbage record 5" 5 unparseable
restore
hs set 4 "$(hs line 4 | python3 -c 'import json,sys; o=json.load(sys.stdin); o["extra"]=1; print(json.dumps(o, sort_keys=True, separators=(",", ":")))')"
tamper "extra member in record 4" 4 schema_invalid
restore
mv "$seg" "$hist/segments/0000000002.jsonl"
tamper "segment renamed" 2 inserted
restore
# a torn final line (a crash during an append) is reported, not taken for a record
printf '{"case_digest":"bla' >>"$seg"
out=$(bd history verify --json)
[ "$(pj 'd["ok"], d["count"], d["torn_tail"]' <<<"$out")" = "true 6 true" ] &&
    pass "a torn tail is reported, not counted" || fail "torn: $out"
bd history verify | grep -q "torn tail (a crash during an append)" && pass "torn tail text" ||
    fail "torn tail text"
bd promote incident-triage gold >/dev/null 2>&1 || true
[ "$(wc -l <"$seg")" = 7 ] && ! grep -q 'bla$' "$seg" &&
    pass "the next append removes the torn line" || fail "torn not removed"
bd history verify >/dev/null && pass "chain intact after the append" || fail "chain after torn"
out=$(bd history verify --full --json)
[ "$(pj 'd["ok"], d["count"]' <<<"$out")" = "true 7" ] && pass "verify --full" || fail "full: $out"
expect 2 usage.bad_args -- bd history verify --fast

# recommend: reads the verified history, writes a recommendation, never applies it
restore
out=$(bd recommend vuln-remediation --json)
[ "$(pj 'd["requires_human_approval"], d["current_tier"], d["chain"]["count"]' <<<"$out")" = \
    "true bronze 6" ] && pass "recommend --json" || fail "recommend: $out"
file=$(pj 'd["file"]' <<<"$out")
[ -f "$file" ] && [ "$(pj 'd["requires_human_approval"]' "$file")" = true ] &&
    [ "$(stat -c %a "$file")" = 600 ] && pass "recommendation file written (0600)" ||
    fail "recommendation file $file"
grep -q "^current_tier: bronze" "$root/bench/vuln-remediation/registration.yaml" &&
    pass "the tier is untouched" || fail "registration changed"
bd recommend vuln-remediation | grep -q "requires human approval" && pass "recommend text" ||
    fail "recommend text"
expect 2 bench.unknown_task_class -- bd recommend no-such-class
expect 2 usage.bad_args -- bd recommend
hs del 2
expect 1 chain.tampered -- bd recommend vuln-remediation
restore

# the configured signing key is recorded as the operator of a refused promotion
mkdir -p "$root/.benchdesk"
echo "signing_key: 0123456789ABCDEF0123456789ABCDEF01234567" >"$root/.benchdesk/config.yaml"
out=$(bd promote vuln-remediation gold --json) || true
seq=$(pj 'd["audit_record"]["seq"]' <<<"$out")
[ "$(hs line "$seq" | pj 'd["operator_fingerprint"]')" = \
    0123456789ABCDEF0123456789ABCDEF01234567 ] && pass "operator fingerprint recorded" ||
    fail "operator: $out"
rm "$root/.benchdesk/config.yaml"

# log reads only the newest page: a broken old record does not stop it
restore
hs set 1 junk
out=$(bd history log --limit 3 --json) && pass "log of the newest page ignores old damage" \
    || fail "log newest: $out"
expect 1 chain.tampered -- bd history log --limit 10

finish
