#!/usr/bin/env bash
# `benchdesk record --isolation subprocess` and the host network (docs/recording.md, "The
# network"): under `subprocess` the SUT has the host network, so the recording goes
# through the --unsafe-network gate or is refused. Against a real TCP listener on
# 127.0.0.1 that this test starts and stops by its pid, and a command SUT that connects
# to it: without --unsafe-network the recording is refused (record.network_refused, exit
# 3) in CI, without a terminal and on a terminal alike; with it, CI and a stdin that is
# not a terminal are refused, a terminal asks, "n" declines, "y" records — and only then
# does the listener see the SUT, after the history holds the audit event naming the
# isolation class. Whatever is refused writes nothing and appends nothing.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
gpg_keys
unset CI
root="$BD_TMP/bench"
mini_bench "$root" alice bob carol
bd() { "$BD_BIN" -C "$root" "$@"; }
tc="$root/bench/tc"

# ---- the listener: one line per connection in $BD_TMP/conns ------------------------------
token="hello-$RANDOM$RANDOM"
cat >"$BD_TMP/listener.py" <<'PY'
import os, socket, sys
port_file, conns, token = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    c, _ = s.accept()
    with open(conns, "a") as f:  # the marker: written as the connection arrives
        f.write("connection\n")
    c.settimeout(3)
    try:
        said = c.recv(200).decode("utf-8", "replace").strip()
        c.sendall(token.encode())
    except OSError:
        said = "?"
    c.close()
    with open(conns, "a") as f:
        f.write("said %s\n" % said)
PY
python3 "$BD_TMP/listener.py" "$BD_TMP/port" "$BD_TMP/conns" "$token" 2>"$BD_TMP/listener.log" &
listener_pid=$!
stop_listener() { kill "$listener_pid" 2>/dev/null || true; wait "$listener_pid" 2>/dev/null || true; }
trap 'stop_listener; gpgconf --homedir "$BD_TMP/k/gnupg" --kill all >/dev/null 2>&1 || true; rm -rf "$BD_TMP"' EXIT
for _ in $(seq 100); do [ -s "$BD_TMP/port" ] && break; sleep 0.05; done
if [ ! -s "$BD_TMP/port" ]; then
    echo "FAIL the listener did not start; its log:"; cat "$BD_TMP/listener.log"; exit 1
fi
port=$(cat "$BD_TMP/port")
got=$(python3 -c "
import socket, sys
s = socket.create_connection(('127.0.0.1', $port), timeout=5)
s.sendall(b'probe\n')
print(s.recv(200).decode())")
[ "$got" = "$token" ] && pass "listener on 127.0.0.1:$port" || { fail "the listener answers '$got'"; cat "$BD_TMP/listener.log"; }
for _ in $(seq 100); do grep -q '^said probe' "$BD_TMP/conns" 2>/dev/null && break; sleep 0.05; done
# Connections from anything but the probe above.
sut_conns() { grep -c '^connection' "$BD_TMP/conns" | awk '{print $1 - 1}'; }
[ "$(sut_conns)" = 0 ] && pass "the listener counts connections" || fail "connections: $(cat "$BD_TMP/conns")"

# ---- a task class whose SUT connects to it ---------------------------------------------
cat >"$tc/registration.yaml" <<'YAML'
schema_version: 2
name: tc
description: Test task class whose live SUT opens a TCP connection.
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
  env_pass: [BD_NET_PORT]
  argv:
    - /usr/bin/python3
    - -s
    - -c
    - |
      import json, os, socket, sys
      doc = json.load(sys.stdin)
      s = socket.create_connection(("127.0.0.1", int(os.environ["BD_NET_PORT"])), timeout=3)
      s.sendall(("sut " + doc["case"]["case_id"] + "\n").encode())
      print(json.dumps({"case": doc["case"]["case_id"], "reply": s.recv(200).decode()}))
YAML
bd pin tc >/dev/null
bd sign "$tc" --role author --key "$ALICE_FPR" >/dev/null
bd sign "$tc" --role reviewer --key "$BOB_FPR" >/dev/null
export BD_NET_PORT=$port
cas="$tc/cases/c1/cassette.json"
before=$(b3sum --no-names "$cas")
audit_lines() { cat "$root"/.benchdesk/history/segments/*.jsonl 2>/dev/null | grep '"event":"record.unsafe_network"' || true; }
audits() { audit_lines | grep -c . || true; }
# unchanged WHAT: no SUT connection, the cassette as it was, no audit event.
unchanged() {
    [ "$(sut_conns)" = 0 ] && pass "$1: the listener saw no SUT" || fail "$1: the SUT connected: $(cat "$BD_TMP/conns")"
    [ "$(b3sum --no-names "$cas")" = "$before" ] && pass "$1: cassette unchanged" || fail "$1: the cassette changed: $(cat "$cas")"
    [ "$(audits)" = 0 ] && pass "$1: no audit event" || fail "$1: audit events: $(audit_lines)"
}

# Without --unsafe-network, subprocess is refused: in CI, without a terminal, on a terminal.
out=$(CI=1 "$BD_BIN" -C "$root" record tc c1 --isolation subprocess 2>&1 </dev/null) && rc=0 || rc=$?
[ "$rc" = 3 ] && grep -q '^benchdesk: record.network_refused: ' <<<"$out" &&
    pass "CI, no terminal, subprocess: exit 3 record.network_refused" || fail "CI subprocess: exit $rc: $out"
[ "$(grep -c . <<<"$out")" = 1 ] && grep -q -- '--unsafe-network' <<<"$out" && grep -q 'namespaces' <<<"$out" &&
    pass "one line naming --unsafe-network and namespaces" || fail "the message: $out"
unchanged "CI subprocess"
expect 3 record.network_refused -- bd record tc c1 --isolation subprocess </dev/null
unchanged "no terminal, subprocess"
rc=0; out=$(script -qec "$BD_BIN -C $root record tc c1 --isolation subprocess" /dev/null </dev/null 2>&1) || rc=$?
[ "$rc" = 3 ] && grep -q 'record.network_refused: .*--unsafe-network' <<<"$out" &&
    pass "a terminal without --unsafe-network: refused" || fail "terminal, no --unsafe-network: exit $rc: $out"
unchanged "terminal, no --unsafe-network"

# With --unsafe-network: the same refusals as under namespaces.
expect 3 record.network_refused -- env CI=1 "$BD_BIN" -C "$root" record tc c1 --isolation subprocess --unsafe-network
expect 3 record.network_refused -- bd record tc c1 --isolation subprocess --unsafe-network </dev/null
unchanged "--unsafe-network in CI or without a terminal"

# On a terminal (script(1) gives it one): the question names the class; "n" declines.
# (--yes: the cassette is replaced without a second question; the network one is asked.)
tty_record() { printf '%s\n' "$1" | script -qec "$BD_BIN -C $root record tc c1 --isolation subprocess --unsafe-network --yes" /dev/null; }
rc=0; out=$(tty_record n 2>&1) || rc=$?
grep -q 'record.declined' <<<"$out" && pass "declined on the terminal" || fail "decline: rc=$rc $out"
grep -q 'subprocess' <<<"$out" && pass "the question names the subprocess class" || fail "question: $out"
unchanged "declined"

# "y": the audit event, then the SUT reaches the listener and its answer is the cassette.
rc=0; out=$(tty_record y 2>&1) || rc=$?
[ "$rc" = 0 ] && grep -q 'recorded tc/c1 .*(subprocess' <<<"$out" && pass "consented: recorded under subprocess" ||
    fail "consent: rc=$rc $out"
[ "$(sut_conns)" = 1 ] && grep -q '^said sut c1' "$BD_TMP/conns" && pass "the SUT reached 127.0.0.1:$port" ||
    fail "connections: $(cat "$BD_TMP/conns")"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); assert c=={'case':'c1','reply':sys.argv[2]}, c" \
    "$cas" "$token" && pass "the SUT's answer is the cassette" || fail "cassette: $(cat "$cas")"
[ "$(audits)" = 1 ] && pass "one audit event" || fail "audit events: $(audit_lines)"
a=$(audit_lines)
grep -q '\\"isolation\\":\\"subprocess\\"' <<<"$a" && grep -q '\\"case_id\\":\\"c1\\"' <<<"$a" &&
    grep -q '/usr/bin/python3' <<<"$a" && grep -q '\\"user\\"' <<<"$a" && grep -q '"task_class":"tc"' <<<"$a" &&
    pass "the audit names the isolation class, the case, the argv and the user" || fail "audit record: $a"
expect 0 - -- bd history verify

# A weaker class taken with consent is gated the same way: where the jail cannot be
# built (no user namespaces left), namespaces falls back to subprocess only with
# --allow-weaker-isolation, and then the network gate applies.
if unshare -Ur true 2>/dev/null; then
    before=$(b3sum --no-names "$cas")
    n=$(grep -c '^connection' "$BD_TMP/conns")
    out=$(unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces &&
          exec "$0" -C "$1" record tc c1 --allow-weaker-isolation' "$BD_BIN" "$root" 2>&1 </dev/null) && rc=0 || rc=$?
    [ "$rc" = 3 ] && grep -q '^benchdesk: record.network_refused: ' <<<"$out" &&
        pass "a fallback to subprocess is gated too" || fail "fallback: exit $rc: $out"
    [ "$(grep -c '^connection' "$BD_TMP/conns")" = "$n" ] && [ "$(b3sum --no-names "$cas")" = "$before" ] &&
        [ "$(audits)" = 1 ] && pass "fallback: nothing connected, written or audited" ||
        fail "fallback: $(cat "$BD_TMP/conns")"
else
    echo "skip the fallback check: unshare -Ur is not allowed here"
fi

finish
