#!/usr/bin/env bash
# `benchdesk record` (docs/recording.md) end to end, against a real HTTP server on 127.0.0.1
# that this test starts and stops by its pid: the SUT's environment is the scrubbed one
# plus exactly the signed registration's env_pass (an unnamed secret never arrives, a
# named one does, a missing one stops everything before it runs); the SUT is offline by
# default and reaches the server only with --unsafe-network, which is refused in CI and
# without a terminal, asks, and is audited in the history first; the cassette and
# cassette_digest are written, and pin and sign then work as usual.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
gpg_keys
unset CI
root="$BD_TMP/bench"
mini_bench "$root" alice bob carol
bd() { "$BD_BIN" -C "$root" "$@"; }
tc="$root/bench/tc"

# ---- the local server ---------------------------------------------------------------
token="served-$RANDOM$RANDOM"
mkdir -p "$BD_TMP/www"
printf '%s' "$token" >"$BD_TMP/www/token.txt"
cat >"$BD_TMP/server.py" <<'PY'
import http.server, socketserver, sys, os
os.chdir(sys.argv[1])
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        sys.stderr.write("served %s\n" % (a,))
with socketserver.TCPServer(("127.0.0.1", 0), H) as s:
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(str(s.server_address[1]))
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    s.serve_forever()
PY
python3 "$BD_TMP/server.py" "$BD_TMP/www" "$BD_TMP/port" 2>"$BD_TMP/server.log" &
server_pid=$!
stop_server() { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
trap 'stop_server; gpgconf --homedir "$BD_TMP/k/gnupg" --kill all >/dev/null 2>&1 || true; rm -rf "$BD_TMP"' EXIT
for _ in $(seq 100); do [ -s "$BD_TMP/port" ] && break; sleep 0.05; done
if [ ! -s "$BD_TMP/port" ]; then
    echo "FAIL the HTTP server did not start; its log:"; cat "$BD_TMP/server.log"; exit 1
fi
port=$(cat "$BD_TMP/port")
curl_ok=$(python3 -c "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:$port/token.txt',timeout=5).read().decode())")
[ "$curl_ok" = "$token" ] && pass "server on 127.0.0.1:$port" || { fail "server answers '$curl_ok'"; cat "$BD_TMP/server.log"; }

# ---- a task class with a command SUT ---------------------------------------------------
# The SUT prints its environment's names, the two secrets it may or may not see, and
# (for every case but c1) what fetching the server gave it.
cat >"$tc/registration.yaml" <<'YAML'
schema_version: 2
name: tc
description: Test task class with a live SUT.
current_tier: bronze
min_cases_for_promotion: {bronze: 1, silver: 2, gold: 3}
promotion_threshold: {silver: 0.80, gold: 0.90}
breakdown_keys: [a]
failure_modes:
  - {code: x.wrong, severity: block, description: Wrong}
rubric: {wall_clock_seconds: 10, memory_mb: 256}
sut:
  kind: command
  wall_clock_seconds: 20
  env_pass: [BD_REC_SECRET, BD_REC_URL]
  argv:
    - /usr/bin/python3
    - -s
    - -c
    - |
      import json, os, sys, urllib.request
      doc = json.load(sys.stdin)
      got = None
      if doc["case"]["case_id"] != "c1":
          got = urllib.request.urlopen(os.environ["BD_REC_URL"], timeout=3).read().decode()
      if os.environ.get("BD_REC_FAIL"):
          sys.exit(3)
      print(json.dumps({"env": sorted(os.environ), "secret": os.environ.get("BD_REC_SECRET"),
                        "unnamed": os.environ.get("BD_REC_UNNAMED"), "fetched": got,
                        "case": doc["case"]["case_id"], "input": open("case/input/prompt.txt").read()}))
YAML
bd pin tc >/dev/null
cas="$tc/cases/c1/cassette.json"
before=$(b3sum --no-names "$cas")

# Unsigned task class: refused before anything runs.
export BD_REC_SECRET="s3cret-$RANDOM" BD_REC_URL="http://127.0.0.1:$port/token.txt" BD_REC_UNNAMED="leak-$RANDOM"
expect 3 provenance.missing -- bd record tc c1
bd sign "$tc" --role author --key "$ALICE_FPR" >/dev/null
bd sign "$tc" --role reviewer --key "$BOB_FPR" >/dev/null

expect 2 usage.bad_args -- bd record tc
expect 2 usage.bad_args -- bd record tc c1 --bogus
expect 2 bench.unknown_case -- bd record tc nope

# A named variable that is not set: nothing runs, nothing is written.
expect 4 env.variable_missing -- env -u BD_REC_SECRET "$BD_BIN" -C "$root" record tc c1
[ "$(b3sum --no-names "$cas")" = "$before" ] && pass "nothing written without BD_REC_SECRET" ||
    fail "cassette changed although a variable was missing"

# Without a terminal and without --yes: refused before anything runs.
expect 3 record.declined -- bd record tc c1 </dev/null
[ "$(b3sum --no-names "$cas")" = "$before" ] && pass "nothing written without --yes" ||
    fail "cassette changed without --yes"

# The SUT sees exactly the scrubbed keys + env_pass.
out=$(bd record tc c1 --json --yes 2>"$BD_TMP/rec.err") && pass "record tc c1" || fail "record tc c1: $out"
grep -q '^cassette.json: [0-9]* lines\? removed, [0-9]* added$' "$BD_TMP/rec.err" && grep -q '^- ' "$BD_TMP/rec.err" &&
    grep -q '^+ ' "$BD_TMP/rec.err" && pass "the cassette diff is shown (--yes still shows it)" ||
    fail "no diff: $(cat "$BD_TMP/rec.err")"
python3 - "$cas" "$BD_REC_SECRET" <<'PY' && pass "offline record: env and network as designed" || fail "offline record: $(cat "$cas")"
import json, sys
c = json.load(open(sys.argv[1]))
want = sorted(["PATH", "LANG", "PYTHONHASHSEED", "PYTHONIOENCODING", "BD_REC_SECRET", "BD_REC_URL"])
assert c["env"] == want, c["env"]
assert c["secret"] == sys.argv[2], c["secret"]
assert c["unnamed"] is None, c["unnamed"]
assert c["fetched"] is None, c["fetched"]
assert c["case"] == "c1" and c["input"].startswith("input of c1"), c
PY
dg="blake3:$(b3sum --no-names "$cas")"
grep -q "^cassette_digest: $dg" "$tc/cases/c1/case.yaml" && pass "cassette_digest written" ||
    fail "case.yaml: $(grep cassette_digest "$tc/cases/c1/case.yaml")"
grep -q '"changed":true' <<<"$out" && grep -q "\"cassette_digest\":\"$dg\"" <<<"$out" &&
    pass "--json says changed and the new digest" || fail "json: $out"
grep -q "$BD_REC_SECRET" "$BD_TMP"/*.log 2>/dev/null && fail "secret in a log" || true

# record re-pinned the case it recorded; signing works as usual.
grep -q "\"pin\":\"$(awk '$1 == "c1:" {print $2}' "$tc/cases/digests.yaml")\"" <<<"$out" &&
    pass "record re-pinned the case" || fail "pin after record: $out"
expect 0 - -- bd verify
bd sign "$tc/cases/c1" --role author --key "$ALICE_FPR" >/dev/null
bd sign "$tc/cases/c1" --role reviewer --key "$BOB_FPR" >/dev/null
expect 0 - -- bd verify

# Offline by default: a SUT that opens an internet socket dies (seccomp), nothing is written,
# and the server saw nothing.
c2before=$(b3sum --no-names "$tc/cases/c2/cassette.json")
served=$(grep -c token.txt "$BD_TMP/server.log" || true)
out=$(bd record tc c2 --yes 2>&1 >/dev/null) && fail "an offline SUT reached the network" || true
grep -q '^benchdesk: record.sut_failed: .*SIGSYS' <<<"$out" && pass "offline: the SUT cannot open a socket" ||
    fail "offline c2: $out"
[ "$(b3sum --no-names "$tc/cases/c2/cassette.json")" = "$c2before" ] &&
    [ "$(grep -c token.txt "$BD_TMP/server.log" || true)" = "$served" ] &&
    pass "offline: nothing written, nothing served" || fail "offline c2 wrote or fetched: $(cat "$BD_TMP/server.log")"

# --unsafe-network: refused in CI, refused without a terminal; no audit record then.
expect 3 record.network_refused -- env CI=true "$BD_BIN" -C "$root" record tc c2 --unsafe-network
expect 3 record.network_refused -- bd record tc c2 --unsafe-network </dev/null
audit_lines() { cat "$root"/.benchdesk/history/segments/*.jsonl 2>/dev/null | grep '"event":"record.unsafe_network"' || true; }
audits() { audit_lines | grep -c . || true; }
[ "$(audits)" = 0 ] && pass "no audit event for refused recordings" || fail "audit events: $(audits)"

# On a terminal (script(1) gives it one): "n" declines, "y" records with the network.
tty_record() { printf "$1" | script -qec "$BD_BIN -C $root record tc c2 --unsafe-network" /dev/null; }
rc=0; out=$(tty_record 'n\n' 2>&1) || rc=$?
grep -q 'record.declined' <<<"$out" && [ "$(b3sum --no-names "$tc/cases/c2/cassette.json")" = "$c2before" ] &&
    pass "declined on the terminal: nothing written" || fail "decline: rc=$rc $out"
rc=0; out=$(tty_record 'y\ny\n' 2>&1) || rc=$?
grep -q 'replace the cassette with this one' <<<"$out" && grep -q 'cassette.json: 1 line removed' <<<"$out" &&
    pass "on a terminal the diff is shown and confirmed" || fail "no diff question: $out"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); assert c['fetched']==sys.argv[2], c['fetched']" \
    "$tc/cases/c2/cassette.json" "$token" && pass "--unsafe-network reached 127.0.0.1:$port" ||
    fail "network record: rc=$rc $out $(cat "$tc/cases/c2/cassette.json"); server log: $(cat "$BD_TMP/server.log")"
[ "$(audits)" = 1 ] && pass "one audit event" || fail "audit events: $(audits)"
a=$(audit_lines)
grep -q '\\"case_id\\":\\"c2\\"' <<<"$a" && grep -q '/usr/bin/python3' <<<"$a" && grep -q '\\"user\\"' <<<"$a" &&
    grep -q '\\"isolation\\":\\"namespaces\\"' <<<"$a" &&
    pass "the audit names the case, the isolation class, the argv and the user" || fail "audit record: $a"
expect 0 - -- bd history verify

# A SUT that fails: nothing written, the harness mode in the message.
c3before=$(b3sum --no-names "$tc/cases/c3/cassette.json")
export BD_REC_FAIL=1
sed -i 's/env_pass: \[BD_REC_SECRET, BD_REC_URL\]/env_pass: [BD_REC_SECRET, BD_REC_URL, BD_REC_FAIL]/' "$tc/registration.yaml"
bd pin tc >/dev/null
# The registration changed: its signatures are superseded until two people sign again.
expect 3 provenance.missing -- bd record tc c3 --yes
bd sign "$tc" --role author --key "$ALICE_FPR" >/dev/null
bd sign "$tc" --role reviewer --key "$BOB_FPR" >/dev/null
out=$(bd record tc c3 --yes 2>&1 >/dev/null) && fail "a failing SUT recorded" || true
grep -q '^benchdesk: record.sut_failed: .*sut.exception' <<<"$out" && pass "failing SUT: record.sut_failed" ||
    fail "failing SUT: $out"
[ "$(b3sum --no-names "$tc/cases/c3/cassette.json")" = "$c3before" ] && pass "nothing written for a failed SUT" ||
    fail "cassette changed by a failed SUT"
unset BD_REC_FAIL

# A cassette SUT has nothing to record.
demo=$(demo_copy)
expect 2 record.not_command -- "$BD_BIN" -C "$demo" record vuln-remediation ghsa-demo-0001-axios-csrf-token-leak

finish
