#!/usr/bin/env bash
# Signed runs (docs/formats.md#signed-runs) with keys made by the test: the run.signed
# record's detail against Python's canonical JSON, its signature checked by gpg itself
# over the message rebuilt here from the detail, verify's checks (an edited count with the
# chain re-linked fails; a key without the operator role leaves an unsigned claim), the
# operator role's exclusivity, and the refusals before any case (subprocess isolation, a
# key that would prompt, require_signed_runs), a cancelled run signed, an empty one not.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
gpg_keys
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state" TMPDIR="$BD_TMP/tmp"
mkdir -p "$HOME" "$TMPDIR"
g() { gpg --batch --no-tty --quiet "$@"; }
fpr_of() { gpg --batch --with-colons --fingerprint "$1" 2>/dev/null | awk -F: '$1=="fpr" {print $10; exit}'; }
# oscar: the operator; lock: an operator key with a passphrase no agent holds
g --pinentry-mode loopback --passphrase '' --quick-gen-key "Oscar <oscar@bench.example>" ed25519 sign 1y
g --pinentry-mode loopback --passphrase 'hunter2' --quick-gen-key "Lock <lock@bench.example>" ed25519 sign 1y
gpgconf --reload gpg-agent # forget any passphrase gpg kept
OSCAR=$(fpr_of "<oscar@bench.example>") LOCK=$(fpr_of "<lock@bench.example>")

tc=vuln-remediation
root="$BD_TMP/bench"
mkdir -p "$root"
cp -a "$BD_SOURCE_DIR/bench" "$root/bench"
g --armor --export "$OSCAR" >"$root/bench/keys/oscar.asc"
g --armor --export "$LOCK" >"$root/bench/keys/lock.asc"
cp "$BD_TMP/k/keys/mallory.asc" "$root/bench/keys/mallory.asc"
signers0=$(cat "$root/bench/trusted-signers.yaml")
cat >>"$root/bench/trusted-signers.yaml" <<YAML
  - {fingerprint: $OSCAR, identity: oscar@bench.example, roles: [operator]}
  - {fingerprint: $LOCK, identity: lock@bench.example, roles: [operator]}
  - {fingerprint: $MALLORY_FPR, identity: mallory@bench.example, roles: [reviewer]}
YAML
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
hs() { python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" "$1" "$hist" "${@:2}"; }
count() { bd history verify --json | pj 'd["count"]'; }

# ---- a signed run ---------------------------------------------------------------------
out=$(bd run $tc --operator-key "$OSCAR" --json 2>"$BD_TMP/err") && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "run --operator-key -> 0" || fail "run -> $rc: $(cat "$BD_TMP/err")"
fin=$(grep '"event":"run.finished"' <<<"$out")
last=$(pj 'd["run_signed_seq"]' <<<"$fin")
[ "$(pj 'd["operator_fingerprint"]' <<<"$fin")" = "$OSCAR" ] && [ "$last" = "$(count)" ] &&
    pass "run.finished names the key and the run.signed record ($last, the head)" ||
    fail "run.finished: $fin"
hs line "$last" >"$BD_TMP/signed.json"
python3 - "$BD_TMP/signed.json" "$hist" "$OSCAR" "$BD_TMP/msg" "$BD_TMP/sig" <<'PY' &&
import json, os, sys
rec = json.load(open(sys.argv[1]))
assert rec["kind"] == "audit" and rec["event"] == "run.signed", rec
assert rec["operator_fingerprint"] == sys.argv[3] and rec["task_class"] == "vuln-remediation"
d = json.loads(rec["detail"])
assert set(d) == {"run_id", "records", "first_seq", "last_record_hash", "signature"}, d
canon = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
assert rec["detail"] == canon, "detail is not canonical JSON"
# every record of the run, in the chain before it
lines = []
segdir = os.path.join(sys.argv[2], "segments")
for n in sorted(os.listdir(segdir)):
    lines += [l for l in open(os.path.join(segdir, n), "rb").read().split(b"\n") if l]
recs = [json.loads(l) for l in lines]
mine = [r for r in recs if r.get("run_id") == d["run_id"]]
assert len(mine) == d["records"] >= 10, (len(mine), d)
assert all(r["operator_fingerprint"] == sys.argv[3] for r in mine)
assert mine[0]["seq"] == d["first_seq"]
assert recs[mine[-1]["seq"]]["prev_hash"] == d["last_record_hash"], "last_record_hash"
msg = "benchdesk-run-v1\nrun_id:%s\nrecords:%d\nfirst_seq:%d\nlast_record_hash:%s\n" % (
    d["run_id"], d["records"], d["first_seq"], d["last_record_hash"])
open(sys.argv[4], "wb").write(msg.encode())
open(sys.argv[5], "w").write(d["signature"])
PY
    pass "run.signed: canonical detail counting the run's records, each with the fingerprint" ||
    fail "run.signed detail"
# the record after the run's last names its hash as prev_hash: the check above relies on
# the run.signed record following the run's last record directly here
gpg --status-fd 1 --verify "$BD_TMP/sig" "$BD_TMP/msg" 2>/dev/null | grep -q "VALIDSIG $OSCAR" &&
    pass "gpg verifies the signature over the rebuilt message" || fail "gpg --verify"
printf 'x' >>"$BD_TMP/msg"
gpg --verify "$BD_TMP/sig" "$BD_TMP/msg" 2>/dev/null && fail "gpg accepts another message" ||
    pass "gpg refuses one byte more"

v=$(bd history verify --json) && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$(pj 'd["runs"]["signed"], len(d["runs"]["unsigned_claims"])' <<<"$v")" = "1 0" ] &&
    pass "history verify: 1 signed run" || fail "verify -> $rc: $v"
out=$(bd history log --limit 3)
grep -q "by ${OSCAR:24} oscar@bench.example" <<<"$out" &&
    pass "history log shows who ran it" || fail "log: $(bd history log --limit 3)"

# ---- a key trusted for another role only: an unsigned claim ---------------------------
bd run $tc --operator-key "$MALLORY_FPR" >/dev/null 2>&1 && pass "run as mallory (reviewer) -> 0" ||
    fail "run as mallory"
v=$(bd history verify --json 2>/dev/null) && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$(pj 'd["runs"]["signed"], len(d["runs"]["unsigned_claims"])' <<<"$v")" = "1 1" ] &&
    pass "a reviewer key's run is an unsigned claim, not a failure" || fail "claim: $rc $v"
out=$(bd history verify 2>&1 >/dev/null)
grep -q "warning: run .*unsigned.*role operator" <<<"$out" &&
    pass "verify warns about the claim" || fail "claim warning"

# ---- an edited count, the chain re-linked ---------------------------------------------
cp -a "$hist" "$BD_TMP/hist.bak"
n=$(python3 -c 'import json,sys; print(json.loads(json.load(open(sys.argv[1]))["detail"])["records"])' "$BD_TMP/signed.json")
hs sub "$last" "\\\"records\\\":$n" "\\\"records\\\":$((n - 1))" && hs relink
v=$(bd history verify --json 2>/dev/null) && rc=0 || rc=$?
# (re-linking changes every later record's hash: later run.signed records fail too)
[ "$rc" = 1 ] && [ "$(pj 'd["ok"], d["runs"]["bad"][0]["reason"]' <<<"$v")" = \
    "false the run.signed record $last of run $(pj 'd["runs"]["bad"][0]["run_id"]' <<<"$v") states $((n - 1)) records from seq 1; the chain holds $n from seq 1" ] &&
    pass "an edited count, re-linked: verify fails (exit 1)" || fail "edited count: $rc $v"
out=$(bd history verify 2>&1) || true
grep -q '^benchdesk: history.run_signed_invalid: the run.signed record' <<<"$out" &&
    pass "verify names the code" || fail "code: $out"
rm -rf "$hist" && cp -a "$BD_TMP/hist.bak" "$hist"

# ---- a signature moved from another run.signed, counts intact, re-linked --------------
bd run $tc --case ghsa-demo-0002-lodash-prototype-pollution --operator-key "$OSCAR" >/dev/null 2>&1 ||
    fail "a second signed run"
cp -a "$hist" "$BD_TMP/hist.bak"
python3 - "$hist" "$last" "$(count)" "$BD_SOURCE_DIR/tests/cli" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[4])
import history_seg as hs
lines = hs.load(sys.argv[1])
a, b = int(sys.argv[2]), int(sys.argv[3])
ra, rb = json.loads(lines[a - 1]), json.loads(lines[b - 1])
da, db = json.loads(ra["detail"]), json.loads(rb["detail"])
da["signature"] = db["signature"]  # oscar's own signature, over other records
canon = lambda o: json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
ra["detail"] = canon(da)
lines[a - 1] = canon(ra).encode()
hs.store(sys.argv[1], lines)
PY
hs relink
v=$(bd history verify --json 2>/dev/null) && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q "does not hold over its run id" <<<"$v" &&
    pass "a signature moved from another run, re-linked: verify fails (exit 1)" ||
    fail "moved signature: $rc $v"
rm -rf "$hist" && cp -a "$BD_TMP/hist.bak" "$hist"

# ---- the operator role holds no other ------------------------------------------------
cp "$root/bench/trusted-signers.yaml" "$BD_TMP/ts"
{ echo "$signers0"; echo "  - {fingerprint: $OSCAR, identity: o@x, roles: [operator, reviewer]}"; } \
    >"$root/bench/trusted-signers.yaml"
expect 2 signers.schema_invalid -- bd verify
cp "$BD_TMP/ts" "$root/bench/trusted-signers.yaml"
expect 2 usage.bad_args -- bd signer add "$OSCAR" --roles operator,author
out=$(bd signer add "$CAROL_FPR" --roles operator --json) &&
    [ "$(pj 'd["roles"]' <<<"$out")" = '["operator"]' ] &&
    grep "$CAROL_FPR" "$root/bench/trusted-signers.yaml" | grep -q 'roles: \[operator\]}' &&
    bd history verify >/dev/null 2>&1 &&
    pass "signer add --roles operator writes an entry the loader takes" || fail "signer add: $out"
cp "$BD_TMP/ts" "$root/bench/trusted-signers.yaml"

# ---- refusals before any case ---------------------------------------------------------
c0=$(count)
expect 3 run.signing_isolation -- bd run $tc --operator-key "$OSCAR" --isolation subprocess
expect 3 run.operator_key_locked -- bd run $tc --operator-key "$LOCK"
mkdir -p "$root/.benchdesk"
echo "require_signed_runs: true" >"$root/.benchdesk/config.yaml"
expect 3 run.unsigned_refused -- bd run $tc
[ "$(count)" = "$c0" ] && pass "refused runs recorded nothing" || fail "records after refusals"
echo "signing_key: $OSCAR" >>"$root/.benchdesk/config.yaml"
bd run $tc --case ghsa-demo-0001-axios-csrf-token-leak >/dev/null 2>&1 &&
    [ "$(hs line "$(count)" | pj 'd["event"]')" = run.signed ] &&
    pass "signing_key of the config signs (require_signed_runs met)" || fail "config key"
rm "$root/.benchdesk/config.yaml"

# ---- recommend: who ran the evidence, signed runs required ------------------------------
bd run $tc >/dev/null 2>&1 || fail "an unsigned full run"
r=$(bd recommend $tc --json)
[ "$(pj 'd["run"]["signed"], d["run"]["operator"], d["signed_run_records"]' <<<"$r")" = "false unsigned 0" ] &&
    pass "recommend: the latest full run is unsigned, 0 records from signed runs" || fail "recommend: $r"
echo "require_signed_runs: true" >"$root/.benchdesk/config.yaml"
r=$(bd recommend $tc --json)
[ "$(pj 'd["run"]["signed"], d["run"]["operator"], d["signed_run_records"] == d["cases"] > 0, d["excluded_records"]["unsigned_runs"] > 0' <<<"$r")" = \
    "true ${OSCAR:24} oscar@bench.example true true" ] &&
    pass "require_signed_runs: the evidence is the signed run, unsigned runs left out" ||
    fail "recommend, signed required: $r"
bd recommend $tc | grep -q "ran by        ${OSCAR:24} oscar@bench.example" &&
    pass "recommend says who ran its evidence" || fail "recommend text"
rm "$root/.benchdesk/config.yaml"
c=$(bd compare --task-class $tc --json 2>/dev/null | pj 'd["operator_a"], d["operator_b"]') || true
[ -n "$c" ] && pass "compare names both runs' operators ($c)" || fail "compare operators"

# ---- imports: signed by the importing operator ---------------------------------------
other="$BD_TMP/other"
mkdir -p "$other" && cp -a "$BD_SOURCE_DIR/bench" "$other/bench"
"$BD_BIN" -C "$other" run $tc --run-id ci-7 --out "$BD_TMP/bundle" >/dev/null 2>&1 ||
    fail "a bundle made elsewhere"
echo "signing_key: $OSCAR" >"$root/.benchdesk/config.yaml"
bd history import "$BD_TMP/bundle" >/dev/null 2>&1 && pass "import with signing_key -> 0" || fail "import"
rm "$root/.benchdesk/config.yaml"
v=$(bd history verify --json 2>/dev/null)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["ok"] and d["runs"]["signed"] == 3, d' "$v" &&
    [ "$(hs line "$(count)" | pj 'd["event"]')" = run.signed ] &&
    pass "the imported run is signed by the importing operator" || fail "import signed: $v"

# ---- run: {require_signed: true} in the registration ---------------------------------
reg="$BD_TMP/reg"
mini_bench "$reg" alice
printf 'run: {require_signed: true}\n' >>"$reg/bench/tc/registration.yaml"
"$BD_BIN" -C "$reg" pin tc >/dev/null
expect 3 run.unsigned_refused -- "$BD_BIN" -C "$reg" run tc --drafts
cp "$root/bench/keys/oscar.asc" "$reg/bench/keys/"
"$BD_BIN" -C "$reg" run tc --drafts --operator-key "$OSCAR" >/dev/null 2>&1 &&
    pass "require_signed: with an operator key the run goes ahead" || fail "require_signed run"

# ---- cancelled: signed; nothing recorded: nothing signed ------------------------------
slow="$BD_TMP/slow"
mini_bench "$slow" alice
cp "$root/bench/keys/oscar.asc" "$slow/bench/keys/"
echo "  - {fingerprint: $OSCAR, identity: oscar@bench.example, roles: [operator]}" \
    >>"$slow/bench/trusted-signers.yaml"
cat >"$slow/bench/tc/rubric.py" <<'PY'
import json, sys, time
doc = json.load(sys.stdin)
if doc["case"]["case_id"] != "c1":
    time.sleep(60)
print(json.dumps({"schema_version": 1, "passed": True, "score": 1.0, "breakdown": {"a": 1.0},
                  "failure_mode": None, "detail": "ok", "cost_usd": 0.0}))
PY
"$BD_BIN" -C "$slow" pin tc >/dev/null
sh_hist="$slow/.benchdesk/history"
"$BD_BIN" -C "$slow" run tc --drafts --jobs 3 --operator-key "$OSCAR" --json >"$BD_TMP/ev" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '"case.finished"' "$BD_TMP/ev" && break; sleep 0.1; done
kill -INT $pid; wait $pid && rc=0 || rc=$?
last=$(python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" line "$sh_hist" 2)
got=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["event"], json.loads(d["detail"])["records"])' "$last" 2>/dev/null)
[ "$rc" = 130 ] && [ "$got" = "run.signed 1" ] &&
    pass "a cancelled run is signed over the record it made" || fail "cancelled: $rc $last"
c1=$("$BD_BIN" -C "$slow" history verify --json | pj 'd["count"], d["runs"]["signed"]')

# a crash after a record: its fingerprint is an unsigned claim, not a failure
"$BD_BIN" -C "$slow" run tc --drafts --jobs 3 --operator-key "$OSCAR" --json >"$BD_TMP/ev2" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '"case.finished"' "$BD_TMP/ev2" && break; sleep 0.1; done
kill -KILL $pid; wait $pid 2>/dev/null || true
v=$("$BD_BIN" -C "$slow" history verify --json 2>/dev/null) && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$(pj 'len(d["runs"]["unsigned_claims"]), d["runs"]["unsigned_claims"][0]["reason"]' <<<"$v")" = \
    "1 no run.signed covers its records (a crash?)" ] &&
    pass "a crash leaves an unsigned claim (a warning, exit 0)" || fail "crash: $rc $v"
c1=$("$BD_BIN" -C "$slow" history verify --json | pj 'd["count"], d["runs"]["signed"]')
"$BD_BIN" -C "$slow" run tc --drafts --case c2 --operator-key "$OSCAR" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -INT $pid; wait $pid || true
[ "$("$BD_BIN" -C "$slow" history verify --json | pj 'd["count"], d["runs"]["signed"]')" = "$c1" ] &&
    pass "a run that recorded nothing signs nothing" || fail "empty run"
finish
