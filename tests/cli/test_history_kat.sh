#!/usr/bin/env bash
# Known answer for the history written by the command line: the independent checker
# (tests/kat/chain_check.py: hashlib + b3sum) and a plain shell pipeline (printf, b3sum
# --raw, sha256sum) recompute every record hash and must agree with benchdesk.
. "$(dirname "$0")/lib.sh"
# pj EXPR [FILE]: evaluate the Python expression EXPR over the JSON document d (stdin, or
# FILE); strings print raw, other values as JSON, the items of a tuple space-separated.

root=$(demo_copy)
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
seg="$hist/segments/0000000001.jsonl"

for tc in vuln-remediation incident-triage distroless-migration; do
    bd promote "$tc" silver >/dev/null 2>&1 || true
done
# Score records from a real run: every finished case lands in the chain.
rc=0
bd run vuln-remediation --drafts --jobs 2 >"$BD_TMP/run.out" 2>&1 || rc=$?
bd promote vuln-remediation gold >/dev/null 2>&1 || true
scores=$(grep -vc '"kind":"audit"' "$seg")
ncases=$(ls "$root/bench/vuln-remediation/cases" | grep -vc digests.yaml)
[ "$rc" = 0 ] && [ "$scores" = "$ncases" ] && pass "run appended $scores score records" \
    || fail "run (exit $rc) appended $scores score records for $ncases cases: $(tail -3 "$BD_TMP/run.out")"

count=$(wc -l <"$seg")
[ "$count" -ge 4 ] && pass "$count records" || fail "only $count records"

bdjson=$(bd history verify --json)
py=$(python3 "$BD_SOURCE_DIR/tests/kat/chain_check.py" "$hist" --json) || fail "checker failed: $py"
[ "$(pj 'd["ok"]' <<<"$py")" = true ] && pass "checker: chain intact" || fail "checker: $py"
[ "$(pj 'd["count"]' <<<"$py")" = "$(pj 'd["count"]' <<<"$bdjson")" ] && pass "same count" \
    || fail "count: $py / $bdjson"
[ "$(pj 'd["head"]' <<<"$py")" = "$(pj 'd["head"]' <<<"$bdjson")" ] && pass "same chain head" \
    || fail "head: $py / $bdjson"
# every record hash: the checker's against benchdesk's log
want=$(pj '"\n".join("%d %s" % (r["seq"], r["record_hash"]) for r in d["records"])' <<<"$py" |
    sort -n)
got=$(bd history log --limit 1000000 --json |
    pj '"\n".join("%d %s" % (r["seq"], r["record_hash"]) for r in d["records"])' |
    sort -n)
[ "$want" = "$got" ] && pass "every record hash agrees" || fail "hashes differ"

# the same with nothing but printf, b3sum and sha256sum: the one-liner of docs/history.md
# over the segments (each line a record; a torn final line has no newline and is skipped)
prev=$(printf '0%.0s' $(seq 64))
ok=1
while IFS= read -r line; do
    p=$(printf '%s' "$line" | pj 'd["prev_hash"]')
    [ "$p" = "$prev" ] || { ok=0; fail "prev_hash does not link"; break; }
    prev=$({ printf 'benchdesk-chain-v1\0'; printf "$(sed 's/../\\x&/g' <<<"$p")"; \
        printf '%s' "$line" | b3sum --raw; } | sha256sum | cut -d' ' -f1)
done < <(cat "$hist"/segments/*.jsonl)
[ "$ok" = 1 ] && [ "$prev" = "$(pj 'd["head"]' <<<"$bdjson")" ] &&
    pass "sha256sum + b3sum recompute the head" || fail "shell head $prev"

# and the checker disagrees with a tampered chain exactly where benchdesk does
python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" sub "$hist" 2 '"task_class":"incident-triage"' \
    '"task_class":"incident-triagf"'
py=$(python3 "$BD_SOURCE_DIR/tests/kat/chain_check.py" "$hist" --json) && rc=0 || rc=$?
bdjson=$(bd history verify --json) || true
[ "$rc" = 1 ] && [ "$(pj 'd["seq"]' <<<"$py")" = 3 ] && [ "$(pj 'd["error"]["seq"]' <<<"$bdjson")" = 2 ] &&
    [ "$(pj 'd["error"]["reason"]' <<<"$bdjson")" = edited ] &&
    pass "both see the edit (checker at the broken link 3, benchdesk names record 2)" ||
    fail "tamper: $py / $bdjson"

finish
