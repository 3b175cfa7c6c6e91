#!/usr/bin/env bash
# The result view names who ran a record (docs/user-guide.md#signing-your-runs): a run
# signed with an operator key, opened from the TUI's history, shows the key's short
# fingerprint and its identity in trusted-signers.yaml; an unsigned record says so.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"
export GNUPGHOME="$BD_TMP/gnupg" HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state"
mkdir -m 700 -p "$GNUPGHOME" "$HOME"
trap 'gpgconf --homedir "$GNUPGHOME" --kill all >/dev/null 2>&1 || true; _tui_cleanup' EXIT
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
    --quick-gen-key "Oscar <oscar@bench.example>" ed25519 sign 1y 2>/dev/null
OSCAR=$(gpg --batch --with-colons --fingerprint oscar@bench.example | awk -F: '$1=="fpr" {print $10; exit}')

root=$(demo_pinned)
gpg --batch --armor --export "$OSCAR" >"$root/bench/keys/oscar.asc"
echo "  - {fingerprint: $OSCAR, identity: oscar@bench.example, roles: [operator]}" \
    >>"$root/bench/trusted-signers.yaml"
case1=$("$BD_BIN" -C "$root" list vuln-remediation --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["cases"][0]["case_id"])')
"$BD_BIN" -C "$root" run vuln-remediation --drafts --case "$case1" --operator-key "$OSCAR" \
    >/dev/null 2>"$BD_TMP/run.err" || fail "signed run: $(head -c 600 "$BD_TMP/run.err")"

tui_start 120 40
tui_open -C "$root"
tui_open_cases vuln
tui_keys h
expect_screen "$case1" "the history lists the signed run's record"
expect_screen "chain verified: 2 records" "the history has verified the chain"
# the newest row is the run.signed audit record: filter down to the case's record
tui_keys /
tui_type "$case1"
tui_keys Enter
expect_screen "1/1 (of 2)" "the filter keeps the case's record"
tui_keys Enter
expect_screen "operator" "the result view has an operator line"
expect_screen "${OSCAR:24} oscar@bench.example" "it names the key and its trusted identity"
tui_keys q q q Q
tui_stop

# The header checks the chain as `benchdesk verify` does: under a signed anchor, and when
# the chain is then broken, it still names the first bad record, as `history verify` does.
"$BD_BIN" -C "$root" anchor publish --key "$OSCAR" >/dev/null 2>"$BD_TMP/anchor.err" ||
    fail "anchor publish: $(cat "$BD_TMP/anchor.err")"
tui_start 120 40
tui_open -C "$root"
tui_open_cases vuln
tui_keys h
expect_screen "chain verified: 2 records" "under an anchor, the header verifies the chain"
tui_keys Q
tui_stop
python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" sub "$root/.benchdesk/history" 1 \
    "\"case_id\":\"$case1\"" "\"case_id\":\"${case1}x\""
bad=$("$BD_BIN" -C "$root" history verify --json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["message"])' | grep -o 'record [0-9]*' | head -1) || true
bad=${bad#record }
[ -n "$bad" ] || fail "history verify names no bad record"
tui_start 120 40
tui_open -C "$root"
tui_open_cases vuln
tui_keys h
expect_screen "chain TAMPERED at #$bad" "an anchored chain broken under the anchor: the header names record $bad"
tui_keys Q
tui_stop
finish
